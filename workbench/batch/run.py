"""One batch run: its rows through the chat's engine, a bounded number at a time.

The run keeps at most ``max_in_flight`` of its requests in the engine, each at a lower priority
than the chat's (vLLM's priority scheduling, where the engine has it): a chat request always finds
a free place and goes ahead of waiting batch work. Pause stops sending (requests in the engine
finish); cancel aborts the requests in the engine and keeps every finished result. No Qt: the
window and the headless benchmark drive the same run; the engine loop's messages reach it through
the application model, on one thread.

A row with images has them read when it is sent, off that thread (:class:`RowImageReader`): it counts as in
the engine meanwhile, and goes once :meth:`BatchRun.poll` (the window's timer) or the next event finds its
images read; a row whose images cannot be read fails with the reason.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from workbench.batch.eta import CompletionRate
from workbench.batch.formats import BatchPrompt
from workbench.batch.results import CANCELLED, DONE, ERROR, QUEUED, RUNNING, BatchResults
from workbench.batch.row_images import RowImageReader
from workbench.engine.backend import ChatRequest, Message, StreamEvent
from workbench.engine.images import ImageInput, ImageProblem
from workbench.engine.requests import Owner, RequestRegistry
from workbench.engine.sampling import SamplingSettings

BATCH_PRIORITY = 1  # vLLM runs lower values first; the chat's requests have 0
DEFAULT_MAX_IN_FLIGHT = 32
CHAT_RESERVE = 4  # places of the engine's max_num_seqs that the default bound leaves to the chat


def default_max_in_flight(max_num_seqs: int) -> int:
    """The bound that leaves the chat room: the engine's running places less a few."""
    return max(1, max_num_seqs - CHAT_RESERVE)


@dataclass(frozen=True)
class RunSettings:
    sampling: SamplingSettings = SamplingSettings()
    chat_template: str | None = None  # for rows with messages; None: the model's own
    system_prompt: str = ""  # put before each plain prompt sent as chat
    prompts_as_chat: bool = True  # plain prompts as one user message through the template; False: raw text
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT


@dataclass(frozen=True)
class BatchProgress:
    state: str  # "ready", "running", "paused", "cancelled", "finished"
    num_rows: int
    num_finished: int  # done, error or cancelled
    num_failed: int
    num_in_flight: int
    num_output_tokens: int
    elapsed_s: float  # running time, pauses left out
    message: str = ""
    num_cancelled: int = 0
    eta_s: float | None = None  # None while the rate is still being measured; 0 once the run has ended

    @property
    def num_done(self) -> int:
        return self.num_finished - self.num_failed - self.num_cancelled

    @property
    def tokens_per_s(self) -> float:
        return self.num_output_tokens / self.elapsed_s if self.elapsed_s > 0 else 0.0


class RunEngine(Protocol):
    """Where a run's requests go: the one owner of engine commands (``model.engine_commands``)."""

    def submit(self, request: ChatRequest) -> None: ...

    def abort(self, request_id: str) -> None: ...


class BatchRun:
    """Sends the rows of ``results`` to ``engine``; a restored run gets its engine from the model."""

    def __init__(self, run_no: int, results: BatchResults, settings: RunSettings, engine: RunEngine | None = None,
                 owners: RequestRegistry | None = None, clock: Callable[[], float] = time.monotonic,
                 source: tuple[str, str] = ("", "")):
        self.run_no, self.run_id, self.source = run_no, f"batch{run_no}", source
        self.results, self.settings, self.engine = results, settings, engine
        self.owners = owners if owners is not None else RequestRegistry()
        self.clock = clock
        self.state = "ready"
        self.message = ""
        self._next_row = 0
        self._retry: deque[int] = deque()  # rows taken back from an engine that went away
        self._in_flight: dict[str, int] = {}  # request id -> row
        self._images = RowImageReader()  # rows whose images are being read before they are sent
        self._num_finished = self._num_failed = self._num_cancelled = self._num_output_tokens = 0
        self._elapsed_s, self._resumed_at = 0.0, 0.0
        self._rate = CompletionRate(settings.max_in_flight)

    @classmethod
    def restored(cls, run_no: int, results: BatchResults, settings: RunSettings, owners: RequestRegistry,
                 source: tuple[str, str] = ("", ""), elapsed_s: float = 0.0) -> BatchRun:
        """A run stored by an earlier session: finished rows kept; rows that had not ended wait to be
        sent again (paused), so Resume finishes the run. It has no engine until the model gives it one.
        ``elapsed_s``: how long it had requests in the engine (``metrics.generating_time_s`` of its rows), its "ran" and tok/s."""
        run = cls(run_no, results, settings, None, owners, source=source)
        run._elapsed_s = elapsed_s
        unfinished = [row for row in range(results.num_rows) if results.status(row) in (QUEUED, RUNNING)]
        for row in unfinished:
            results.set_status(row, QUEUED)
        run._retry.extend(unfinished)
        run._next_row = results.num_rows
        run._num_finished = results.num_rows - len(unfinished)
        run._num_failed = results.count(ERROR)
        run._num_cancelled = results.count(CANCELLED)
        run._num_output_tokens = results.num_output_tokens()
        run.state = "paused" if unfinished else "finished"
        if unfinished:
            run.message = f"Restored: {len(unfinished):,} rows had not finished; Resume sends them."
        return run

    # ------------------------------------------------------------------ the user's commands
    def start(self) -> None:
        if self.state == "ready":
            self._set_running()
            self.top_up()

    def pause(self) -> None:
        if self.state == "running":
            self._elapsed_s += self.clock() - self._resumed_at
            self.state = "paused"

    def resume(self) -> None:
        if self.state == "paused":
            self._set_running()
            self.top_up()

    def cancel(self) -> None:
        """Aborts the requests in the engine; rows never sent are marked cancelled, finished ones kept."""
        if self.state not in ("ready", "running", "paused"):
            return
        self.pause()
        self.state = "cancelled"
        for request_id in list(self._in_flight):
            self.engine.abort(request_id)  # each comes back finished, "aborted"
        for row in [*self._images.drop_all(), *self._retry, *range(self._next_row, self.results.num_rows)]:
            self.results.finish(row, CANCELLED, None, None)
            self._num_finished += 1
            self._num_cancelled += 1
        self._retry.clear()
        self._next_row = self.results.num_rows
        self._images.close()

    def _set_running(self) -> None:
        self.state, self.message, self._resumed_at = "running", "", self.clock()
        rows_left = self.results.num_rows - self._num_finished
        self._rate.restart(self._elapsed_s, min(max(1, self.settings.max_in_flight), rows_left))

    # ------------------------------------------------------------------ sending
    def top_up(self) -> None:
        """Sends rows until the bound is reached, the rows run out or the run is not running."""
        self._send_read_rows()
        bound = max(1, self.settings.max_in_flight)
        while self.state == "running" and len(self._in_flight) + self._images.num_reading < bound:
            row = self._take_row()
            if row is None:
                break
            self._send(row)
        self._check_finished()

    def poll(self) -> None:
        """Sends the rows whose images have been read since (the window calls this on its timer)."""
        if self._images.has_ready():
            self.top_up()

    def _take_row(self) -> int | None:
        if self._retry:
            return self._retry.popleft()
        if self._next_row < self.results.num_rows:
            self._next_row += 1
            return self._next_row - 1
        return None

    def _send(self, row: int, images: tuple[ImageInput, ...] = ()) -> None:
        prompt = self.results.prompts[row]
        self.results.set_status(row, RUNNING)
        if prompt.images and not images:
            self._images.start(row, prompt.images)  # sent from _send_read_rows once read
            return
        request_id = f"{self.run_id}-{row}"
        self._in_flight[request_id] = row
        names = tuple(image.name for image in prompt.images)
        self.owners.add(request_id, Owner("batch", self.run_id, str(row), self.row_label(row), names))
        self.engine.submit(self.request_for(prompt, request_id, images))

    def _send_read_rows(self) -> None:
        """Rows whose images have been read: sent, failed with the reason, or back in the queue (paused)."""
        for row, images in self._images.take_ready():
            if isinstance(images, ImageProblem):
                self._num_finished += 1
                self._num_failed += 1
                self._rate.row_finished(self.running_s())
                self.results.finish(row, ERROR, "error", None, str(images))
            elif self.state == "running":
                self._send(row, images)
            else:  # paused meanwhile: read again when resumed
                self.results.set_status(row, QUEUED)
                self._retry.append(row)

    def row_label(self, row: int) -> str:
        """What the heatmap calls the row's request: "Batch row 17 (line 18)"."""
        return f"Batch row {row + 1} (line {self.results.prompts[row].line_no})"

    def request_id_row(self, request_id: str) -> int | None:
        """The row of one of this run's request ids, sent or ended; None for another's."""
        run_id, _, row = request_id.rpartition("-")
        return int(row) if run_id == self.run_id and row.isdigit() and int(row) < self.results.num_rows else None

    def request_for(self, prompt: BatchPrompt, request_id: str, images: tuple[ImageInput, ...] = ()) -> ChatRequest:
        """The engine request for one prompt: the run's sampling with the line's own settings over it;
        ``images``: the prompt's images read, each attached to its turn (a plain prompt's to its message,
        which then goes through the chat template, as images need)."""
        settings = self.settings
        sampling = replace(settings.sampling, **dict(prompt.sampling)) if prompt.sampling else settings.sampling
        if prompt.messages is not None:
            return ChatRequest(request_id, with_turn_images(prompt, prompt.messages, images), sampling,
                               chat_template=settings.chat_template, priority=BATCH_PRIORITY)
        if not images and (prompt.url is not None or not settings.prompts_as_chat):  # a completion: text as is
            return ChatRequest(request_id, (), sampling, prompt=prompt.prompt, priority=BATCH_PRIORITY)
        system = (Message("system", settings.system_prompt),) if settings.system_prompt.strip() else ()
        (user,) = with_turn_images(prompt, (Message("user", prompt.prompt),), images)
        return ChatRequest(request_id, (*system, user), sampling, chat_template=settings.chat_template,
                           priority=BATCH_PRIORITY)

    # ------------------------------------------------------------------ what the engine reports
    def owns(self, request_id: str) -> bool:
        return request_id in self._in_flight

    def text_arrived(self, request_id: str, text: str) -> None:
        row = self._in_flight.get(request_id)
        if row is not None:
            self.results.add_text(row, text)

    def request_finished(self, event: StreamEvent) -> None:
        row = self._end(event.request_id)
        if row is None:
            return
        status = CANCELLED if event.finish_reason == "aborted" else DONE
        if status == CANCELLED:
            self._num_cancelled += 1
        else:
            self._rate.row_finished(self.running_s())
        self.results.finish(row, status, event.finish_reason, event.figures)
        if event.figures is not None:
            self._num_output_tokens += event.figures.output_tokens
        self.top_up()

    def request_failed(self, request_id: str, message: str) -> None:
        row = self._end(request_id)
        if row is None:
            return
        self._num_failed += 1
        self._rate.row_finished(self.running_s())
        self.results.finish(row, ERROR, "error", None, message)
        self.top_up()

    def _end(self, request_id: str) -> int | None:
        row = self._in_flight.pop(request_id, None)
        if row is not None:
            self._num_finished += 1
            self.owners.discard(request_id)  # the results hold its figures; the registry stays small
        return row

    def engine_lost(self, message: str) -> None:
        """The engine stopped: rows still in it go back to the queue, and the run pauses."""
        for request_id, row in list(self._in_flight.items()):
            self.owners.discard(request_id)
            self.results.set_status(row, QUEUED)
            self._retry.append(row)
        self._in_flight.clear()
        if self.state == "running":
            self.pause()
            self.message = f"Paused: {message.splitlines()[0] if message else 'the engine stopped.'}"

    def _check_finished(self) -> None:
        rows_left = bool(self._retry) or self._next_row < self.results.num_rows
        if self.state == "running" and not self._in_flight and not self._images.num_reading and not rows_left:
            self._elapsed_s += self.clock() - self._resumed_at
            self.state = "finished"
            self._images.close()

    # ------------------------------------------------------------------ progress
    def running_s(self) -> float:
        """Seconds the run has been running, pauses left out."""
        return self._elapsed_s + (self.clock() - self._resumed_at if self.state == "running" else 0.0)

    def progress(self) -> BatchProgress:
        elapsed = self.running_s()
        rows_left = self.results.num_rows - self._num_finished
        eta = self._rate.eta_s(elapsed, rows_left) if self.state in ("running", "paused") else 0.0
        return BatchProgress(self.state, self.results.num_rows, self._num_finished, self._num_failed,
                             len(self._in_flight) + self._images.num_reading, self._num_output_tokens, elapsed,
                             self.message, self._num_cancelled, eta)


def with_turn_images(prompt: BatchPrompt, messages: tuple[Message, ...],
                     images: tuple[ImageInput, ...]) -> tuple[Message, ...]:
    """``messages`` with each of ``images`` (read from ``prompt.images``, in order) on its turn."""
    if not images:
        return messages
    turns: dict[int, list[ImageInput]] = {}
    for image, read in zip(prompt.images, images):
        turns.setdefault(image.turn, []).append(read)
    return tuple(replace(message, images=tuple(turns[turn])) if turn in turns else message
                 for turn, message in enumerate(messages))
