"""A kept run of N rows read back as a start reads it (each prompt's stored JSON, read when first asked for),
then sorted by its Prompt column as a click on the header does. Prints how long the click's call took on the
GUI thread, the longest the event loop went unserved until the rows were sorted (a 5 ms timer's gaps), and
the time until sorted."""
import os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import numpy as np
from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from workbench.bench.gui.window_driver import application
from workbench.batch.results import BatchResults
from workbench.batch.records import BatchPrompt
from workbench.batch.stored_prompts import StoredPrompts
from workbench.storage.codec import prompt_from_json, to_json
from workbench.ui.batch_table import BatchTableModel, COLUMNS
app = application()
n = int(sys.argv[1])
rng = np.random.default_rng(1)
texts = [to_json(BatchPrompt(i + 1, prompt=f"Question {rng.integers(1 << 30):010d}: " + "word " * 60,
                             sampling=(("max_tokens", 128),))) for i in range(n)]
results = BatchResults(capacity=n)
results.append_stored(StoredPrompts(texts, prompt_from_json), np.arange(1, n + 1), 0, 0)
model = BatchTableModel(results)
column = [k for k, _ in COLUMNS].index("prompt")
gaps, clock = [], QElapsedTimer()
timer = QTimer(interval=5)
timer.timeout.connect(lambda: (gaps.append(clock.restart())))
clock.start(); timer.start()
start = time.perf_counter()
model.sort(column, Qt.AscendingOrder)
call = time.perf_counter() - start
while model.sort_key != (column, Qt.AscendingOrder) or getattr(model, "sorting", False):
    app.processEvents()
    time.sleep(0.001)
done = time.perf_counter() - start
app.processEvents(); timer.stop()
print(f"sort by prompt, {n:,} kept rows: the click's call {call * 1e3:.0f} ms on the GUI thread; "
      f"the longest the event loop went unserved {max(gaps)} ms; sorted after {done:.2f} s")
print("first:", results.prompts[model.results_row(0)].prompt[:20], "| read:", results.prompts.num_read)
