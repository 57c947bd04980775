"""The real window on a data folder holding two kept batch runs of 100,000 rows: Batch tab, the latest run
shown, a click on the Prompt header; a grab while it sorts and one after."""
import os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv)
from workbench.app import build_window, demo_engine_config
from workbench.ui.pg_setup import configure_pyqtgraph
from workbench.ui.batch_table import COLUMNS
configure_pyqtgraph()
t = time.perf_counter()
window, _ = build_window(demo_engine_config(), start_engine=False, keep=True, client="thread")
window.resize(1280, 720); window.show()
for _ in range(50): app.processEvents()
print("window shown", round(time.perf_counter() - t, 2), "s")
window.panes.setCurrentWidget(window.batch)
for _ in range(20): app.processEvents()
pane = window.batch
print("rows shown", pane.table_model.rowCount())
header = pane.table.horizontalHeader()
column = [k for k, _ in COLUMNS].index("prompt")
pos = header.sectionViewportPosition(column) + 10
from PySide6.QtTest import QTest
from PySide6.QtCore import QPoint
t = time.perf_counter()
QTest.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(pos, header.height() // 2))
print("click returned after", round((time.perf_counter() - t) * 1e3), "ms; sorting", pane.table_model.sorting)
shot = False
while pane.table_model.sorting:
    app.processEvents(); time.sleep(0.005)
    if not shot and pane.sort_progress.isVisible() and pane.sort_progress.value() > 20_000:
        window.grab().save(sys.argv[1]); shot = True
print("sorted after", round(time.perf_counter() - t, 2), "s; first prompt:", pane.table_model.display(pane.table_model.results_row(0), "prompt")[:40])
for _ in range(20): app.processEvents()
window.grab().save(sys.argv[2])
window.close()
