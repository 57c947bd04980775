"""The window's minimum size and its panes', built offscreen with no engine (run from the checkout: PYTHONPATH=. python docs/results/cpu-window-min-size/min_size.py)."""
import os; os.environ.setdefault("QT_QPA_PLATFORM","offscreen")
from PySide6.QtWidgets import QApplication
app = QApplication([])
from workbench.app import build_window, demo_engine_config
w,_ = build_window(demo_engine_config(), start_engine=False, keep=False, client="thread")
print("screen", w.screen().availableGeometry())
print("window min hint", w.minimumSizeHint(), "central", w.centralWidget().minimumSizeHint())
for name in ("panes","heatmap","plots","memory","status"):
    print(name, getattr(w,name).minimumSizeHint())
print("chat", w.chat.minimumSizeHint(), "sampling", w.chat.sampling.minimumSizeHint())
print("preset dock", w.preset_dock.minimumSizeHint(), "server dock", w.server.dock.minimumSizeHint())
w.close()
