"""The application model: what the window shows and what will be stored. No Qt.

One writer, the GUI thread: updates from the engine loop (and later the storage thread) arrive as
messages (``workbench.engine.events``) and :meth:`AppModel.apply` applies them. Widgets observe its
signals (psygnal, Qt-free) and hold no state that others read.
"""
