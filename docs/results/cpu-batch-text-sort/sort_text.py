import os, sys, time, resource
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import numpy as np
from PySide6.QtCore import Qt
from workbench.bench.gui.window_driver import application
from workbench.batch.results import BatchResults, DONE
from workbench.batch.records import BatchPrompt
from workbench.ui.batch_table import BatchTableModel, COLUMNS
app = application()
n, length = int(sys.argv[1]), int(sys.argv[2])
results = BatchResults(capacity=n)
rng = np.random.default_rng(1)
for i in range(n):
    row = results.append(BatchPrompt(i + 1, prompt=f"p{i}"))
    results.texts[row] = f"{rng.integers(1 << 30):010d}" + "x" * length
model = BatchTableModel(results) if BatchTableModel.__init__.__code__.co_argcount > 1 else BatchTableModel()
if model.results is not results: model.set_results(results)
column = [k for k, _ in COLUMNS].index("text")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter(); model.sort(column, Qt.AscendingOrder)
print(f"sort by output, {n:,} rows of {length:,} chars: {time.perf_counter() - t:.2f} s, peak RSS +{(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024:.0f} MB")
first = model.results_row(0); print("first:", results.texts[first][:10])
