"""A search the app did not finish (closed or killed during it: its study kept without an end) is offered at
the next start, as an unfinished download is: a notice above the regions naming it, and the Tune tab's
Resume beside it. No engine: the window is built idle."""
from __future__ import annotations

from workbench.storage.store import Storage
from workbench.tune.space import default_space
from workbench.tune.study import SearchStudy
from workbench.tune.values import Goal, TuneSpec, WorkloadSpec

SHUTDOWN_TIMEOUT_S = 120


def test_an_unfinished_search_is_offered_at_the_next_start(tmp_path, monkeypatch, qtbot):
    from workbench.app import build_window, demo_engine_config

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    spec = TuneSpec(WorkloadSpec(num_requests=4), Goal(), default_space("0.32.0", "cpu"), name="search-cut-short")
    SearchStudy.create(tmp_path / "tune", spec)  # what the app leaves when it ends mid-search
    window, _ = build_window(demo_engine_config(), start_engine=False, storage=Storage.open(tmp_path / "workbench.db"))
    window.show()
    try:
        notice = window.tune.notice
        qtbot.waitUntil(notice.isVisible)  # read off the GUI thread
        assert "search-cut-short did not finish" in notice.text() and "Resume it" in notice.text()
        notice.linkActivated.emit("dismiss")
        assert not notice.isVisible() and window.tune.pane is None  # "Not now": nothing opened
        pane = window.tune.show_tab()
        qtbot.waitUntil(lambda: pane.resumable.count() == 1)
        assert pane.resumable.currentText() == "search-cut-short"
        assert not pane.buttons["resume"].isHidden() and pane.buttons["start"].isEnabled()
    finally:
        window.close()
        assert window.shutdown.wait(SHUTDOWN_TIMEOUT_S)
