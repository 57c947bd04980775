"""``bench session-export``: a large session kept through the app's storage, then exported (no engine, no Qt).

The session is made as the app makes it: a batch run's rows finished with figures (the storage thread
writes each as the app's does) and the plots' series handed to ``Storage.record_stats`` as the window
hands them (a published series of 0.25 s points, taken in 5 s chunks). Printed and written to
``OUT/session-export.json``: the time the storage thread took to write, the database's bytes per
stored point, the export's time and its files' sizes (the pictures, which the window renders, left out).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

import numpy as np

from workbench.batch.formats import BatchPrompt
from workbench.batch.results import BatchResults
from workbench.batch.run import RunSettings
from workbench.engine.backend import StreamEvent
from workbench.engine.events import EngineState, StateChanged
from workbench.engine.metrics import RequestFigures
from workbench.engine.ring_buffer import Series
from workbench.engine.spec import EngineConfig
from workbench.engine.stats import BIN_S, CAPACITY, COLUMNS, StatsSeries, StatsTotals
from workbench.export.session_export import export_session
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.storage.store import Storage


def add_parser(sub) -> None:
    bench = sub.add_parser("session-export", help="a large session stored and exported (no engine, no Qt)")
    bench.add_argument("--requests", type=int, default=100_000)
    bench.add_argument("--hours", type=float, default=2.0, help="hours of plotted points (4 a second)")
    bench.add_argument("--out", default="bench-out/session-export")


def _series(first_t: float, num: int, rng: np.random.Generator) -> StatsSeries:
    columns = {name: rng.random(num) * 100 for name in COLUMNS}
    columns["t"] = first_t + BIN_S * np.arange(num)
    return StatsSeries(Series(num, MappingProxyType(columns)), StatsTotals(), start_id=1)  # the engine start below


def _store(storage: Storage, model: AppModel, num_requests: int, num_points: int) -> None:
    rng = np.random.default_rng(0)
    for event in (StateChanged(EngineState.STARTING, "starting", 1), StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    results = BatchResults(capacity=num_requests)
    for line_no in range(1, num_requests + 1):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}: what is a paged KV cache?"))
    EngineCommands(model, lambda command: None)  # no engine: the rows' answers are played in below
    run = model.new_batch_run(results, RunSettings(max_in_flight=num_requests),
                              source=("bench.jsonl", "jsonl"))
    run.start()
    for row in range(num_requests):
        run.text_arrived(f"{run.run_id}-{row}", "a paged KV cache keeps blocks of keys and values " * 2)
        run.request_finished(StreamEvent(f"{run.run_id}-{row}", "", True, "length", RequestFigures(
            int(rng.integers(10, 500)), 0, 64, float(rng.random()), 100.0, queue_s=0.001, e2e_s=float(rng.random()))))
    # The window hands over the latest published series (a ring of CAPACITY points) a few times a second.
    start = time.monotonic() - num_points * BIN_S
    for end in range(CAPACITY, num_points + CAPACITY, CAPACITY):
        first = max(0, min(end, num_points) - CAPACITY)
        storage.series._pending_since = -1e9  # a chunk each time: the 5 s clock is not waited for here
        storage.record_stats(_series(start + first * BIN_S, min(end, num_points) - first, rng))


def measure(num_requests: int, hours: float, out: Path) -> int:
    num_points = int(hours * 3600 / BIN_S)
    with tempfile.TemporaryDirectory(prefix="bench-session-export-") as folder:
        path = Path(folder) / "workbench.db"
        storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
        storage.restore_into(model)
        storage.start(model, {"app_version": "bench"})
        began = time.perf_counter()
        _store(storage, model, num_requests, num_points)
        assert storage.flush(600), storage.problem
        write_s = time.perf_counter() - began
        session_id = storage.session_id
        storage.close()
        chunks_bytes = _series_bytes(path)
        began = time.perf_counter()
        steps = list(export_session(path, session_id, Path(folder) / "export"))
        export_s = time.perf_counter() - began
        sizes = {p.name: p.stat().st_size for p in sorted((Path(folder) / "export").iterdir())}
        sizes["export.zip"] = (Path(folder) / "export.zip").stat().st_size
        figures = {"requests": num_requests, "points": num_points, "store_s": round(write_s, 2),
                   "series_bytes_per_point": round(chunks_bytes / num_points, 1),
                   "database_bytes": path.stat().st_size, "export_s": round(export_s, 2),
                   "progress_steps": len(steps), "files_bytes": sizes, "cpus": os.cpu_count()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "session-export.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))
    return 0


def _series_bytes(path: Path) -> int:
    import sqlite3

    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT sum(length(points)) FROM series_chunks").fetchone()[0] or 0
    finally:
        connection.close()


def cmd_session_export(args) -> int:
    return measure(args.requests, args.hours, Path(args.out))
