"""The Tune tab against the real search (``TuneRun``), no engine: a search that cannot run is refused with each
message beside the field it is about, nothing typed lost and no engine command posted; a stored session
listed as a workload (through the sessions layer, off the GUI thread), its search started and stopped; a search the
app did not finish (closed or killed during it: its study kept without an end) is offered at the next
start, as an unfinished download is: a notice above the regions naming it, and the tab's Resume beside it; one
that ended is listed beside Open, and opened shows as it ended, its serve line on the model it ran on."""
from __future__ import annotations

import json
import re
from dataclasses import replace

from chat_driver import HANG_TIMEOUT_MS

from workbench.engine.commands import StartEngine
from workbench.engine.events import EngineState, StateChanged
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.storage.store import Storage
from workbench.tune.run import TuneRun
from workbench.tune.space import default_space
from workbench.tune.study import SearchStudy
from workbench.tune.values import Goal, TrialFigures, TrialResult, TuneSpec, WorkloadSpec
from workbench.ui.tune_actions import stored_sessions
from workbench.ui.tune_pane import TunePane

SHUTDOWN_TIMEOUT_S = 120


def test_a_refused_search_names_each_cause_beside_its_field(tmp_path, qtbot):
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted = []
    search = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune")
    search.last_start_s = 41.0  # the last engine start, as the search measured it
    pane = TunePane(search, default_space("0.32.0", "cpu"))
    qtbot.addWidget(pane)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "one"}) + "\n{not json\n")
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("file"))
    form.file_path.setText(str(prompts))
    form.budget.setValue(0.5)
    pane.space.set_range_text("block_size", "16, 32")
    assert pane.start()  # checked on a worker thread: vLLM's view of the space from the presets' checking process
    qtbot.waitUntil(lambda: pane.buttons["start"].isEnabled(), timeout=300_000)
    assert "shorter than one engine start here (41 s" in form.problems["budget"].text()
    assert "prompts.jsonl: line 2" in form.problems["workload"].text()
    assert "block_size = 16: on CPU vLLM needs a multiple of 32" in pane.space.problem.text()
    assert "multiple of 32" in pane.space.table.item(pane.space.row_of("block_size"), 2).toolTip()
    assert not form.problems["general"].isVisible(), form.problems["general"].text()
    assert posted == [] and not search.running and pane.buttons["start"].isEnabled()
    assert form.file_path.text() == str(prompts) and pane.space.table.item(pane.space.row_of("block_size"), 2).text() \
        == "16, 32"  # what the user typed stays


def test_a_stored_session_is_offered_as_the_workload_and_its_search_stops_keeping_the_user_engine(tmp_path, qtbot):
    from test_session_storage import FACTS, ran_batch

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo", max_model_len=512), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    for event in (StateChanged(EngineState.STARTING, "starting", 1), StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    ran_batch(model)  # two rows finished with vLLM's figures, one aborted before it ran
    assert storage.flush()
    posted = []
    search = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", path)
    pane = TunePane(search, default_space("0.32.0", "cpu"), lambda: stored_sessions(path))
    qtbot.addWidget(pane)
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("session"))  # the list is read then
    qtbot.waitUntil(lambda: form.session.count() == 1, timeout=HANG_TIMEOUT_MS)
    assert form.session.currentData() == storage.session_id and "demo · 2 requests" in form.session.currentText()
    assert pane.start()
    qtbot.waitUntil(lambda: pane.running or pane.buttons["start"].isEnabled(), timeout=300_000)
    assert pane.running, pane.message.text()
    assert search.workload.num_requests == 2  # the session's requests that ran, replayed
    summary = pane.summary.text()  # the session as the list names it, not by its id
    assert re.search(r": the 2 requests of the session begun \d{4}-\d\d-\d\d \d\d:\d\d · ", summary), summary
    assert storage.session_id not in pane.summary.text()
    assert [type(c) for c in posted] == [StartEngine]  # trial 0's engine, through the one owner
    pane.stop()
    qtbot.waitUntil(lambda: not pane.running, timeout=HANG_TIMEOUT_MS)
    assert pane.progress.format() == "Stopped" and pane.buttons["start"].isEnabled()
    assert posted[-1].config == model.config  # the user's engine started again
    storage.close()


def test_resume_reads_the_search_off_the_gui_thread_then_carries_it_on(tmp_path, qtbot):
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted = []
    spec = TuneSpec(WorkloadSpec(num_requests=4), Goal(), default_space("0.32.0", "cpu"), name="cut-short")
    SearchStudy.create(tmp_path / "tune", spec, model.config)  # what the app leaves when it ends mid-search
    SearchStudy.create(tmp_path / "tune", replace(spec, name="elsewhere"),
                       EngineConfig(model="/models/other", max_model_len=512))
    SearchStudy.create(tmp_path / "tune", replace(spec, name="kept-before"))  # an earlier version's: no model noted
    search = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune")
    pane = TunePane(search, default_space("0.32.0", "cpu"))
    asked = []
    pane.confirm_unknown_model = lambda name, on: asked.append((name, on)) or len(asked) > 1  # no, then yes
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: pane.resumable.count() == 3, timeout=HANG_TIMEOUT_MS)
    assert pane.resume("elsewhere")  # read on a worker: the buttons wait, the window says so, a busy bar moves
    assert pane.checking and pane.phase.text() == "Reading elsewhere…" and not pane.buttons["start"].isEnabled()
    assert pane.busy.isVisible()
    qtbot.waitUntil(lambda: not pane.checking, timeout=HANG_TIMEOUT_MS)
    assert not pane.running and posted == [] and pane.buttons["start"].isEnabled() and not pane.busy.isVisible()
    assert pane.message.text().startswith("elsewhere cannot be resumed: The search ran on /models/other")
    assert asked == []  # a search that noted its model is checked, not asked about
    assert pane.resume("kept-before")  # the user is asked whether it ran on this model: No
    qtbot.waitUntil(lambda: not pane.checking, timeout=HANG_TIMEOUT_MS)
    assert asked == [("kept-before", "demo")] and not pane.running and posted == []
    assert pane.message.text() == "The search “kept-before” was not resumed; its trials are kept."
    assert pane.resume("cut-short")
    qtbot.waitUntil(lambda: pane.running, timeout=HANG_TIMEOUT_MS)
    assert search.study.spec.name == "cut-short" and [type(c) for c in posted] == [StartEngine]  # trial 0's engine
    assert pane.phase.text() != "Reading cut-short…" and pane.buttons["stop"].isEnabled()
    assert pane.summary.text().startswith("cut-short: ")  # the line standing for the setup names it
    pane.stop()
    qtbot.waitUntil(lambda: not pane.running, timeout=HANG_TIMEOUT_MS)
    assert pane.resume("kept-before")  # Yes: it runs on the engine's model
    qtbot.waitUntil(lambda: pane.running, timeout=HANG_TIMEOUT_MS)
    assert len(asked) == 2 and search.study.spec.name == "kept-before" and pane.summary.text().startswith("kept-before")
    pane.stop()
    qtbot.waitUntil(lambda: not pane.running, timeout=HANG_TIMEOUT_MS)


def test_an_unfinished_search_is_offered_at_the_next_start(tmp_path, monkeypatch, qtbot):
    from workbench.app import build_window, demo_engine_config

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    spec = TuneSpec(WorkloadSpec(num_requests=4), Goal(), default_space("0.32.0", "cpu"), name="search-cut-short")
    SearchStudy.create(tmp_path / "tune", spec)  # what the app leaves when it ends mid-search
    done = SearchStudy.create(tmp_path / "tune", replace(spec, name="search-stopped"),
                              EngineConfig(model="/models/tuned-on", max_model_len=1024))
    trial, _ = done.ask()
    done.tell_complete(trial, TrialResult(0, {}, "complete", TrialFigures(80.0, num_requests_done=4),
                                          goal_value=80.0))
    done.end("stopped")  # and one it stopped: not offered to resume, but listed to open
    window, _ = build_window(demo_engine_config(), start_engine=False, storage=Storage.open(tmp_path / "workbench.db"))
    window.show()
    try:
        notice = window.tune.notice
        qtbot.waitUntil(notice.isVisible, timeout=HANG_TIMEOUT_MS)  # read off the GUI thread
        assert "search-cut-short did not finish" in notice.text() and "Resume it" in notice.text()
        notice.linkActivated.emit("dismiss")
        assert not notice.isVisible() and window.tune.pane is None  # "Not now": nothing opened
        pane = window.tune.show_tab()
        qtbot.waitUntil(lambda: pane.resumable.count() == 1, timeout=HANG_TIMEOUT_MS)
        assert pane.resumable.currentText() == "search-cut-short"
        assert not pane.buttons["resume"].isHidden() and pane.buttons["start"].isEnabled()
        assert [pane.past.itemText(i) for i in range(pane.past.count())] == ["search-stopped"]
        assert pane.open_past()  # read off the GUI thread
        qtbot.waitUntil(lambda: pane.trials.rowCount() == 1, timeout=HANG_TIMEOUT_MS)
        assert not pane.running
        assert [t.number for t in pane.trials.trials] == [0] and pane.progress.format() == "Stopped"
        assert pane.message.text() == "Stopped before its verdict: 1 trial kept."
        assert pane.copy_serve_line().startswith("vllm serve /models/tuned-on")  # where it ran, not the demo
    finally:
        window.close()
        assert window.shutdown.wait(SHUTDOWN_TIMEOUT_S)


def test_a_damaged_store_of_searches_is_named_with_its_path_and_the_fix(tmp_path, qtbot):
    folder = tmp_path / "tune"
    folder.mkdir()
    (folder / "searches.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 3000)  # a file cut short, damaged
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    pane = TunePane(TuneRun(model, EngineCommands(model, lambda command: None), folder), default_space("0.32.0", "cpu"))
    qtbot.addWidget(pane)
    qtbot.waitUntil(lambda: "could not be read" in pane.message.text(), timeout=HANG_TIMEOUT_MS)
    text = pane.message.text()
    assert text.startswith(f"The stored searches could not be read ({folder / 'searches.db'}): "), text
    assert text.endswith("Move that file aside (or restore it from a backup): the next search starts a new one.")
    assert pane.buttons["start"].isEnabled() and not pane.buttons["open"].isVisible()
    qtbot.waitUntil(lambda: not pane.workers, timeout=HANG_TIMEOUT_MS)
    assert pane.start()  # a search asked for all the same is refused with the same words, nothing started
    qtbot.waitUntil(lambda: not pane.checking, timeout=HANG_TIMEOUT_MS)  # the check's own pace, on a busy machine too
    assert pane.message.text() == "The search did not start: " + text and not pane.running


def test_a_damaged_store_of_searches_is_said_in_the_notice_at_the_apps_start(tmp_path, monkeypatch, qtbot):
    from workbench.app import build_window, demo_engine_config

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "searches.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 3000)
    window, _ = build_window(demo_engine_config(), start_engine=False, storage=Storage.open(tmp_path / "workbench.db"))
    window.show()
    try:
        notice = window.tune.notice
        qtbot.waitUntil(notice.isVisible, timeout=HANG_TIMEOUT_MS)  # read off the GUI thread
        assert notice.text().startswith("The stored searches could not be read ("), notice.text()
        assert "Move that file aside" in notice.text()
        notice.linkActivated.emit("dismiss")
        assert not notice.isVisible()
    finally:
        window.close()
        assert window.shutdown.wait(SHUTDOWN_TIMEOUT_S)
