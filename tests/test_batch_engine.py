"""The batch pane through the real window and the real vLLM CPU engine: each input format, a chat
reply during a batch, pause, cancel, malformed lines skipped, exports checked against the engine; a new
file asks before a run leaves the pane and past runs come back from the Runs picker; the ETA."""
from __future__ import annotations

import csv
import json
import math

import pytest
from PySide6.QtCore import Qt

from batch_files import openai_line, write_each_format
from chat_driver import HANG_TIMEOUT_MS, SnapshotRecorder, type_and_send
from workbench.batch.results import CANCELLED, DONE, ERROR, QUEUED, RUNNING
from workbench.engine.events import RequestFinished, TextFlushed

pytestmark = pytest.mark.slow  # the real engine, shared with the other slow tests

RUN_TIMEOUT_MS = 120_000


def open_and_wait(pane, qtbot, path, fmt, column=None):
    assert pane.open_file(str(path), fmt, column)
    qtbot.waitUntil(lambda: pane.loading is None and (pane.loader.done or pane.problem_box is not None),
                    timeout=HANG_TIMEOUT_MS)  # read on a worker thread, then shown
    return pane.loader


def skip_malformed(pane, qtbot, first: str) -> list[str]:
    """Answers the question the first malformed line (``first``: "Line 2") asks with Skip, waits for the
    reading to end, and returns the problems listed."""
    assert pane.problem_box is not None and first in pane.problem_box.text()
    skip = next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip"))
    qtbot.mouseClick(skip, Qt.LeftButton)
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=HANG_TIMEOUT_MS)
    return [pane.problems.item(i).text() for i in range(pane.problems.count())]


def run_and_wait(pane, qtbot, max_tokens=8, max_in_flight=None, wait=True, ignore_eos=True):
    pane.settings.sampling.max_tokens.setValue(max_tokens)
    pane.settings.sampling.ignore_eos.setChecked(ignore_eos)  # a raw completion may otherwise end at once
    if max_in_flight is not None:
        pane.settings.max_in_flight.setValue(max_in_flight)
    qtbot.waitUntil(pane.run_button.isEnabled, timeout=HANG_TIMEOUT_MS)
    qtbot.mouseClick(pane.run_button, Qt.LeftButton)
    run = pane.run
    if wait:
        qtbot.waitUntil(lambda: run.state == "finished", timeout=RUN_TIMEOUT_MS)
    return run


def test_a_short_run_from_each_input_format(window, qtbot, tmp_path):
    pane = window.batch
    window.panes.setCurrentWidget(pane)
    for fmt, (path, column) in write_each_format(tmp_path).items():
        loader = open_and_wait(pane, qtbot, path, fmt, column)
        assert loader.problems == [] and loader.results.num_rows == 3, (fmt, loader.problems)
        results = run_and_wait(pane, qtbot).results
        assert list(results.column("status")) == [DONE] * 3, fmt
        assert all(results.texts), (fmt, results.texts)
        assert min(results.column("output_tokens")) >= 1 and min(results.column("prompt_tokens")) >= 2
        assert not any(math.isnan(v) for v in results.column("ttft_s")), fmt
        assert all(e >= t for e, t in zip(results.column("e2e_s"), results.column("ttft_s")))
        qtbot.waitUntil(lambda: pane.progress.value() == 3, timeout=HANG_TIMEOUT_MS)
        assert pane.progress_label.text().startswith("3 done · ") and "finished" in pane.progress_label.text()
        assert pane.table_model.rowCount() == 3 and pane.table_model.display(0, "status") == "done"
        if fmt == "openai":  # the line's own max_tokens (req-2: 5) goes over the run's 8
            assert results.value("output_tokens", 1) <= 5 < results.value("output_tokens", 0)


def test_a_chat_reply_completes_while_a_batch_runs_and_cancel_keeps_results(window, qtbot, tmp_path):
    pane = window.batch
    path = tmp_path / "many.txt"
    path.write_text("".join(f"Batch item {i}: what is a block?\n" for i in range(300)))
    open_and_wait(pane, qtbot, path, "text")
    bound = 8
    run = run_and_wait(pane, qtbot, max_tokens=64, max_in_flight=bound, wait=False)
    recorder = SnapshotRecorder(window)
    most_in_flight = []

    def batch_running() -> bool:
        recorder.poll()
        most_in_flight.append(run.progress().num_in_flight)
        return run.progress().num_finished >= 3

    qtbot.waitUntil(batch_running, timeout=RUN_TIMEOUT_MS)
    _, reply = type_and_send(window, qtbot, "Hello!")
    recorder.wait_until(qtbot, lambda: reply.status != "streaming")
    assert reply.status == "done" and reply.text, reply.error
    assert run.state == "running", "the chat's reply should come back while the batch still runs"
    assert max(most_in_flight) <= bound
    batch_ids = {f"{run.run_id}-{row}" for row in range(300)}
    seen = [s for s in recorder.snapshots if batch_ids & set(s.tables)]
    assert seen, "no snapshot caught batch rows in the engine"
    request_id = sorted(batch_ids & set(seen[-1].tables))[0]
    assert window.heatmap.owner_name(request_id).startswith("Batch row "), "the heatmap names batch rows"

    qtbot.mouseClick(pane.pause_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: run.progress().num_in_flight == 0, timeout=RUN_TIMEOUT_MS)
    paused_at = run.progress().num_finished
    qtbot.wait(300)
    assert run.progress().num_finished == paused_at and run.state == "paused"
    qtbot.mouseClick(pane.pause_button, Qt.LeftButton)  # Resume
    qtbot.waitUntil(lambda: run.progress().num_finished > paused_at + bound, timeout=RUN_TIMEOUT_MS)

    qtbot.mouseClick(pane.cancel_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: run.progress().num_in_flight == 0, timeout=HANG_TIMEOUT_MS)
    status = run.results.column("status")
    done = [row for row in range(300) if status[row] == DONE]
    assert len(done) > paused_at and all(run.results.texts[row] for row in done), "finished results are kept"
    assert not set(status) & {QUEUED, RUNNING} and CANCELLED in set(status)
    num_done, num_cancelled = run.results.count(DONE), run.results.count(CANCELLED)
    said = f"{num_done:,} done · {num_cancelled:,} cancelled · "
    qtbot.waitUntil(lambda: pane.progress_label.text().startswith(said), timeout=HANG_TIMEOUT_MS)
    assert "300 / 300" not in pane.progress_label.text() and pane.progress.value() == num_done
    recorder.wait_until(qtbot, lambda: not batch_ids & set(recorder.snapshots[-1].tables), timeout=HANG_TIMEOUT_MS)


def test_malformed_lines_are_listed_and_the_valid_lines_run(window, qtbot, tmp_path):
    pane = window.batch
    path = tmp_path / "mixed.jsonl"
    lines = [openai_line("a", "What is a KV cache?"), '{"custom_id": "b", "method": "POST"',
             openai_line("c", "Hello!"), openai_line("a", "a repeated custom_id"),
             openai_line("d", "embed me", url="/v1/embeddings"), openai_line("e", "What is prefix caching?")]
    path.write_text("\n".join(lines) + "\n")
    open_and_wait(pane, qtbot, path, "openai")
    listed = skip_malformed(pane, qtbot, "Line 2")
    assert [text.split(":")[0] for text in listed] == ["line 2", "line 4", "line 5"], listed
    assert "repeats line 1" in listed[1] and "/v1/embeddings" in listed[2]
    results = run_and_wait(pane, qtbot).results
    assert [p.custom_id for p in results.prompts] == ["a", "c", "e"]
    assert list(results.column("status")) == [DONE] * 3


def test_exports_match_what_the_engine_reported(window, qtbot, tmp_path):
    from vllm.entrypoints.openai.completion.protocol import CompletionResponse
    try:  # vLLM 0.32 and later
        from vllm.entrypoints.launchers.run_batch import BatchRequestOutput
    except ImportError:  # vLLM 0.26
        from vllm.entrypoints.openai.run_batch import BatchRequestOutput

    pane = window.batch
    path = tmp_path / "export-me.jsonl"
    too_long = "word " * 3000  # over max_model_len: the engine refuses it, and the row keeps why
    path.write_text("\n".join([openai_line("chat-1", "What is a KV cache?"),
                               openai_line("done-2", "Once upon a time", url="/v1/completions"),
                               openai_line("long-3", too_long)]) + "\n")
    reported, texts = {}, {}

    def on_event(event):
        if isinstance(event, RequestFinished):
            reported[event.event.request_id] = event.event
        elif isinstance(event, TextFlushed):
            for request_id, text in event.chunks.items():
                texts[request_id] = texts.get(request_id, "") + text

    window.engine.host.event_emitted.connect(on_event)
    try:
        open_and_wait(pane, qtbot, path, "openai")
        run = run_and_wait(pane, qtbot, max_tokens=12)
    finally:
        window.engine.host.event_emitted.disconnect(on_event)
    assert list(run.results.column("status")) == [DONE, DONE, ERROR]
    for kind in ("jsonl", "csv"):
        pane.export_to(str(tmp_path / f"out.{kind}"), kind)
        qtbot.waitUntil(lambda: pane.exporting is None, timeout=HANG_TIMEOUT_MS)
    outputs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    rows = list(csv.DictReader((tmp_path / "out.csv").open(newline="", encoding="utf-8-sig")))
    assert [o["custom_id"] for o in outputs] == ["chat-1", "done-2", "long-3"]
    for row, (output, record) in enumerate(zip(outputs[:2], rows)):
        if row == 0:
            BatchRequestOutput.model_validate(output)  # vLLM's own schema of run-batch's output lines
        else:  # run-batch itself runs chat completions only; a completion's body is vLLM's CompletionResponse
            CompletionResponse.model_validate(output["response"]["body"])
        event = reported[f"{run.run_id}-{row}"]
        body, figures = output["response"]["body"], event.figures
        assert output["response"]["status_code"] == 200 and output["error"] is None
        choice = body["choices"][0]
        text = choice["message"]["content"] if row == 0 else choice["text"]
        assert body["object"] == ("chat.completion" if row == 0 else "text_completion")
        assert text == texts[event.request_id] == record["text"]
        assert choice["finish_reason"] == event.finish_reason == record["finish_reason"]
        usage = body["usage"]
        assert usage["prompt_tokens"] == figures.prompt_tokens == int(record["prompt_tokens"])
        assert usage["completion_tokens"] == figures.output_tokens == int(record["output_tokens"])
        assert usage["total_tokens"] == figures.prompt_tokens + figures.output_tokens
        assert usage["prompt_tokens_details"]["cached_tokens"] == figures.cached_prompt_tokens
        assert int(record["cached_prompt_tokens"]) == figures.cached_prompt_tokens
        assert float(record["ttft_s"]) == pytest.approx(figures.ttft_s)
        assert float(record["e2e_s"]) == pytest.approx(figures.e2e_s)
        assert float(record["queue_s"]) == pytest.approx(figures.queue_s)
        assert float(record["itl_s"]) == pytest.approx(figures.itl_s)
        assert record["status"] == "done" and record["custom_id"] == output["custom_id"]
    failed = outputs[2]
    BatchRequestOutput.model_validate(failed)
    assert failed["response"]["status_code"] == 400 and failed["response"]["body"] is None
    assert "max_model_len" in failed["error"] and rows[2]["status"] == "error" and rows[2]["error"] == failed["error"]


def test_a_batch_pauses_when_the_engine_stops_and_resumes_after_a_restart(window, qtbot, tmp_path):
    from chat_driver import ENGINE_START_TIMEOUT_MS

    pane = window.batch
    path = tmp_path / "through-a-restart.txt"
    path.write_text("".join(f"Item {i}: what is a block?\n" for i in range(200)))
    open_and_wait(pane, qtbot, path, "text")
    run = run_and_wait(pane, qtbot, max_tokens=48, max_in_flight=8, wait=False)
    qtbot.waitUntil(lambda: run.progress().num_finished >= 8, timeout=RUN_TIMEOUT_MS)
    window.stop_engine()
    qtbot.waitUntil(lambda: run.state == "paused", timeout=HANG_TIMEOUT_MS)
    assert run.progress().num_in_flight == 0 and run.message.startswith("Paused: ")
    status = run.results.column("status")
    assert RUNNING not in set(status) and ERROR not in set(status), "requests in the engine go back to the queue"
    start_id = window.restart_engine()
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    qtbot.mouseClick(pane.pause_button, Qt.LeftButton)  # Resume
    qtbot.waitUntil(lambda: run.state == "finished", timeout=RUN_TIMEOUT_MS)
    assert list(run.results.column("status")) == [DONE] * 200 and all(run.results.texts)


class Answers:
    """Stands in for the user before the pane's questions: records each question, answers in turn."""

    def __init__(self, pane):
        self.asked: list[str] = []
        self.answers: list[bool] = []
        pane.confirm = self

    def __call__(self, _parent, _title: str, text: str) -> bool:
        self.asked.append(text)
        return self.answers.pop(0)


def lines_file(path, count: int, what: str = "what is a block?"):
    path.write_text("".join(f"Item {i}: {what}\n" for i in range(count)))
    return path


def test_a_file_that_cannot_open_leaves_the_run_going_and_says_what_is_still_shown(window, qtbot, tmp_path):
    """The pane asked whether a going run could be cancelled before it had opened the new file: a file that then
    could not open (a folder that is no dataset) had cost the run. Now the file opens first, then the pane asks."""
    pane = window.batch
    open_and_wait(pane, qtbot, lines_file(tmp_path / "going.txt", 40), "text")
    run = run_and_wait(pane, qtbot, max_tokens=48, max_in_flight=4, wait=False)
    pane.toggle_pause()
    qtbot.waitUntil(lambda: run.state == "paused", timeout=HANG_TIMEOUT_MS)
    answers = Answers(pane)  # no answer given: a question asked fails the test
    (tmp_path / "not-a-dataset").mkdir()
    assert not pane.open_file(str(tmp_path / "not-a-dataset"), "jsonl")
    assert answers.asked == [] and run.state == "paused" and pane.run is run
    assert pane.file_label.text().startswith("Could not open not-a-dataset: ")
    assert pane.file_label.text().endswith("Still shown: going.txt."), pane.file_label.text()
    pane.cancel_run()
    qtbot.waitUntil(lambda: run.state in ("cancelled", "finished"), timeout=HANG_TIMEOUT_MS)


def test_a_new_file_asks_first_and_the_finished_run_comes_back_from_the_runs_picker(window, qtbot, tmp_path):
    pane = window.batch
    open_and_wait(pane, qtbot, lines_file(tmp_path / "first.txt", 6), "text")
    run = run_and_wait(pane, qtbot)
    qtbot.waitUntil(lambda: "finished" in pane.progress_label.text(), timeout=HANG_TIMEOUT_MS)
    pane.table.selectRow(2)
    detail, progress_line = pane.detail.toPlainText(), pane.progress_label.text()
    assert "Item 2" in detail
    answers = Answers(pane)
    answers.answers = [False]
    assert not pane.open_file(str(lines_file(tmp_path / "second.txt", 4)), "text")
    assert f"Run {run.run_no} · first.txt" in answers.asked[0] and "6 results" in answers.asked[0]
    assert pane.run is run and pane.table_model.rowCount() == 6, "No keeps everything as it was"
    assert pane.detail.toPlainText() == detail and pane.progress_label.text() == progress_line

    answers.answers = [True]
    open_and_wait(pane, qtbot, tmp_path / "second.txt", "text")
    assert run.run_id in window.model.batch_runs, "the finished run stays in the model"
    assert pane.table_model.rowCount() == 4 and pane.detail.toPlainText() == ""
    assert pane.progress_label.text() == "" and pane.progress.value() == 0, "the progress line starts afresh"
    titles = pane.runs.titles()
    assert f"Run {run.run_no} · first.txt · 6 done" in titles and pane.runs.isVisibleTo(pane), titles
    pane.runs.combo.activated.emit(titles.index(f"Run {run.run_no} · first.txt · 6 done"))
    assert pane.run is run and pane.table_model.rowCount() == 6 and pane.export_button.isEnabled()
    qtbot.waitUntil(lambda: pane.progress_label.text().startswith("6 done · "), timeout=HANG_TIMEOUT_MS)
    pane.export_to(str(tmp_path / "first.jsonl"), "jsonl")
    qtbot.waitUntil(lambda: pane.exporting is None, timeout=HANG_TIMEOUT_MS)
    exported = [json.loads(line) for line in (tmp_path / "first.jsonl").read_text().splitlines()]
    assert [e["text"] for e in exported] == run.results.texts and all(run.results.texts)

    pane.runs.combo.activated.emit(pane.runs.titles().index("second.txt · 4 prompts · not run yet"))
    second = run_and_wait(pane, qtbot)
    assert second is not run and pane.run is second and not answers.answers
    assert [t.split(" · ")[0] for t in pane.runs.titles()][-2:] == [f"Run {run.run_no}", f"Run {second.run_no}"]


def test_a_run_still_going_is_cancelled_only_when_the_user_says_so(window, qtbot, tmp_path):
    pane = window.batch
    open_and_wait(pane, qtbot, lines_file(tmp_path / "long.txt", 300), "text")
    run = run_and_wait(pane, qtbot, max_tokens=64, max_in_flight=8, wait=False)
    qtbot.waitUntil(lambda: run.progress().num_finished >= 3, timeout=RUN_TIMEOUT_MS)
    answers = Answers(pane)
    answers.answers = [False]
    assert pane.open_button.isEnabled(), "a run going does not keep the user from asking for another file"
    assert not pane.open_file(str(lines_file(tmp_path / "next.txt", 3)), "text")
    assert "still going" in answers.asked[0] and f"Run {run.run_no} · long.txt" in answers.asked[0]
    assert run.state == "running" and pane.run is run
    answers.answers = [True]
    open_and_wait(pane, qtbot, tmp_path / "next.txt", "text")
    assert run.state == "cancelled" and pane.table_model.rowCount() == 3
    qtbot.waitUntil(lambda: run.progress().num_in_flight == 0, timeout=HANG_TIMEOUT_MS)
    pane.show_entry(run.run_id)
    num_done, num_cancelled = run.results.count(DONE), run.results.count(CANCELLED)
    assert num_done >= 3 and num_cancelled >= 200 and num_done + num_cancelled == 300
    assert pane.progress_label.text().startswith(f"{num_done:,} done · {num_cancelled:,} cancelled · ")
    assert f"Run {run.run_no} · long.txt · {num_done:,} done · {num_cancelled:,} cancelled" in pane.runs.titles()


def test_the_first_eta_is_measured_and_not_far_from_the_runs_real_length(window, qtbot, tmp_path):
    """The ETA once came from the first row to finish (299 × its latency: minutes for a run of
    seconds); it must wait for a measured rate and then be near what the run really takes."""
    import time

    pane = window.batch
    open_and_wait(pane, qtbot, lines_file(tmp_path / "eta.txt", 300), "text")
    run = run_and_wait(pane, qtbot, max_tokens=64, wait=False)
    started, first, texts = time.monotonic(), [], set()

    def ended() -> bool:
        texts.add(pane.progress_label.text().split(" · ")[1] if " · " in pane.progress_label.text() else "")
        progress = run.progress()
        if not first and progress.eta_s is not None and run.state == "running":
            first.append((time.monotonic(), progress.eta_s, progress.num_finished))
        return run.state == "finished"

    qtbot.waitUntil(ended, timeout=RUN_TIMEOUT_MS)
    finished_at = time.monotonic()
    assert first, f"no ETA in a run of {finished_at - started:.1f} s"
    shown_at, eta_s, num_finished = first[0]
    really_left_s = finished_at - shown_at
    assert eta_s <= 2.5 * really_left_s + 2.0, (eta_s, really_left_s, finished_at - started)
    assert eta_s >= really_left_s / 4 - 2.0, (eta_s, really_left_s)
    assert num_finished >= min(300, run.settings.max_in_flight), "an ETA before a wave's worth of rows ended"
    assert "ETA: measuring…" in texts, texts
