"""A run of N rows streaming into RUNNING rows at once, its table sorted by Output as a header click does: each
tick adds a token to every running row (a few end, the next ones start), then calls the table model's
refresh, as the pane's 4 Hz timer does. Prints how long refresh took on the GUI thread, per tick."""
import os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import numpy as np
from PySide6.QtCore import Qt
from workbench.bench.gui.window_driver import application
from workbench.batch.results import BatchResults, DONE, RUNNING as RUN
from workbench.batch.records import BatchPrompt
from workbench.ui.batch_table import BatchTableModel, COLUMNS
app = application()
n, running, ticks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sort_by = sys.argv[4] if len(sys.argv) > 4 else "text"
rng = np.random.default_rng(1)
words = [f"w{i} " for i in range(500)]
results = BatchResults(capacity=n)
for i in range(n):
    results.append(BatchPrompt(i + 1, prompt=f"p{i}"))
done = n // 2  # half the run done: outputs of 60 words
for row in range(done):
    results.add_text(row, "".join(rng.choice(words, 60)))
    results.finish(row, DONE, "length", None)
live = list(range(done, done + running))
model = BatchTableModel(results)
model.sort([k for k, _ in COLUMNS].index(sort_by), Qt.AscendingOrder)
times = []
for tick in range(ticks):
    for row in live:
        results.add_text(row, words[int(rng.integers(500))])
    for _ in range(running // 16):  # a few end, the next start
        results.finish(live.pop(0), DONE, "length", None)
        live.append(live[-1] + 1); results.set_status(live[-1], RUN)
    start = time.perf_counter(); model.refresh(); times.append((time.perf_counter() - start) * 1e3)
    app.processEvents()
assert sort_by != "text" or list(model.order) == sorted(range(n), key=results.texts.__getitem__), "the order is Python's sort"
print(f"sorted by {sort_by}, {n:,} rows, {running} streaming: refresh took median {np.median(times):.1f} ms, "
      f"max {max(times):.1f} ms over {ticks} ticks (first {times[0]:.1f} ms)")
