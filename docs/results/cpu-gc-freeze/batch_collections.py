"""Python's cycle collections in the engine-client process while a batch runs through the window, with what the
client held once its engine was ready left out of them (as the app runs) and with those objects let back in (as it
ran before): how many full collections, the longest, their sum, and the batch's time and slowest request.

    WORKBENCH_DATA_DIR=$(mktemp -d) QT_QPA_PLATFORM=offscreen python docs/results/cpu-gc-freeze/batch_collections.py 20000
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TIMEOUT_S = 3600.0


def main(count: int) -> int:
    from workbench.app import collect_garbage_on_gui_thread, demo_engine_config, leave_startup_objects_uncollected
    from workbench.bench.client_bench import collections_seen, watch_collections
    from workbench.bench.gui.gui_stall import started_window
    from workbench.bench.gui.screenshot import process_events_until

    collector = collect_garbage_on_gui_thread()  # noqa: F841 (as the app: Python's collector on the GUI thread)
    window, engine = started_window(demo_engine_config())
    leave_startup_objects_uncollected()
    path = Path(tempfile.mkdtemp()) / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"Question {i}: what does a paged KV cache keep?"}) + "\n"
                            for i in range(count)))
    pane = window.batch
    pane.settings.sampling.max_tokens.setValue(4)
    pane.confirm = lambda *question: True  # the run before leaves the pane (it stays under Runs)
    for all_tracked in (True, False, True, False):
        pane.open_file(str(path), "jsonl")
        process_events_until(lambda: pane.loading is None and pane.loader.done, TIMEOUT_S)
        engine.host.call(watch_collections, all_tracked)
        started = time.perf_counter()
        run = pane.start_run()
        process_events_until(lambda: run.state == "finished", TIMEOUT_S)
        took = time.perf_counter() - started
        seen = engine.host.call(collections_seen)
        full = [ms for generation, ms in seen if generation == 2]
        e2e = run.results.column("e2e_s").astype(float) * 1e3
        label = "all tracked (before)" if all_tracked else "start's objects left out (now)"
        print(f"{label:32}: {count:,} requests in {took:6.1f} s; the client's full collections {len(full):3}, longest "
              f"{max(full, default=0):6.1f} ms, together {sum(full):7.1f} ms; of all collections the longest "
              f"{max((ms for _, ms in seen), default=0):6.1f} ms ({len(seen):,}); a request's E2E p99 "
              f"{np.percentile(e2e, 99):6.1f} ms, most {e2e.max():7.1f} ms", flush=True)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
