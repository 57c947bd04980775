"""Side panels that scroll instead of holding the window wide: a form's natural width becomes what it
shows when there is room, not a minimum the window must keep."""
from __future__ import annotations

from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


def scrolling(widget: QWidget) -> QScrollArea:
    area = QScrollArea(widgetResizable=True, frameShape=QFrame.NoFrame)
    area.setWidget(widget)
    return area
