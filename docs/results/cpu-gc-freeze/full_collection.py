"""How long a full collection of Python's cycle collector holds the window's GUI thread, before and after the app
leaves the objects made at its start out of later collections (``app.leave_startup_objects_uncollected``).

The window is built as ``vllm-workbench`` builds it (the demo model's engine started, the engine client in its
process), shown, then: the objects the collector tracks, and five full collections (``gc.collect()``, as the
collector's one-second timer runs one when its counts say so) timed before and after; then again with a file of
100,000 prompts read into the batch pane (each prompt an object the collector tracks). In the engine-client
process (vLLM's client loop), between steps: five full collections as it runs (what it held once its engine was
ready left out) and with those objects let back in.

    WORKBENCH_DATA_DIR=$(mktemp -d) QT_QPA_PLATFORM=offscreen python docs/results/cpu-gc-freeze/full_collection.py
"""
from __future__ import annotations

import gc
import statistics
import time


def timed_collections(label: str, count: int = 5) -> None:
    took = []
    for _ in range(count):
        start = time.perf_counter()
        gc.collect()
        took.append((time.perf_counter() - start) * 1e3)
    print(f"{label}: {len(gc.get_objects()):,} objects tracked, {gc.get_freeze_count():,} left out; a full collection "
          f"{statistics.median(took):.1f} ms median of {count} ({min(took):.1f}-{max(took):.1f} ms)")


def _spread(took: list[float]) -> str:
    return f"{min(took):.1f}-{max(took):.1f} ms"


def main() -> int:
    from workbench.app import collect_garbage_on_gui_thread, demo_engine_config, leave_startup_objects_uncollected
    from workbench.bench.client_bench import full_collections
    from workbench.bench.gui.gui_stall import started_window

    collector = collect_garbage_on_gui_thread()  # noqa: F841 (as the app: Python's collector on the GUI thread)
    window, engine = started_window(demo_engine_config())
    client = engine.host.call(full_collections)
    print(f"engine client: {client['all_tracked']:,} objects tracked; a full collection "
          f"{statistics.median(client['all_in_ms']):.1f} ms median of 5 ({_spread(client['all_in_ms'])}); with the "
          f"{client['left_out']:,} made before its engine was ready left out ({client['tracked']:,} tracked): "
          f"{statistics.median(client['as_it_runs_ms']):.1f} ms ({_spread(client['as_it_runs_ms'])})")
    timed_collections("the window started")
    leave_startup_objects_uncollected()
    timed_collections("after leaving the start's objects out")
    _read_prompts(window, 100_000)
    timed_collections("100,000 prompts read into the batch pane")
    window.close()
    return 0


def _read_prompts(window, count: int) -> None:
    import json
    import tempfile
    from pathlib import Path

    from workbench.bench.gui.screenshot import process_events_until

    path = Path(tempfile.mkdtemp()) / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"Question {i}: what does a paged KV cache keep?"}) + "\n"
                            for i in range(count)))
    pane = window.batch
    pane.open_file(str(path), "jsonl")
    process_events_until(lambda: pane.loading is None and pane.loader.done, 600)
    print(pane.loader.summary())


if __name__ == "__main__":
    raise SystemExit(main())
