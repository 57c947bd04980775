"""The application model: what the window shows and what will be stored. No Qt.

One writer, the GUI thread: updates from the engine loop arrive as messages
(``workbench.engine.events``) and :meth:`AppModel.apply` applies them; what an earlier session stored
is put back by :meth:`AppModel.restore` before the window is built, and the storage thread is fed
from the model's signals. Widgets observe its signals (psygnal, Qt-free) and hold no state that
others read.
"""
