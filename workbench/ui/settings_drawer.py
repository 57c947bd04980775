"""The chat's settings drawer: a conversation's system prompt, sampling and template, folded away at
the right of the transcript until asked for, and the one-line summary that stands in for it.

The drawer is the last child of a named splitter (its sizes are remembered with the window's layout):
closed is a width of 0, so a restored layout brings the drawer back open or closed as it was left.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSplitter, QVBoxLayout, QWidget
from superqt import QElidingLabel

from workbench.ui.sampling_panel import SamplingPanel
from workbench.ui.scrolling import scrolling

DRAWER_PX = 240  # the drawer's width where the pane has room
MIN_DRAWER_PX = 180  # and where it has not: labels above their fields
MIN_TRANSCRIPT_PX = 300  # what an open drawer leaves the transcript at the least
TOGGLE_SHORTCUT = "Ctrl+Shift+S"


def open_sizes(sizes: list[int], total: int) -> list[int]:
    """Splitter sizes (list, transcript, drawer) with the drawer open in ``total`` pixels: as wide as
    ``DRAWER_PX`` where the transcript keeps more than ``MIN_TRANSCRIPT_PX``, never under
    ``MIN_DRAWER_PX``; where even that is too much the list gives way, then the transcript."""
    listed = sizes[0]
    drawer = max(MIN_DRAWER_PX, min(DRAWER_PX, total - listed - MIN_TRANSCRIPT_PX))
    listed = max(0, min(listed, total - drawer - MIN_TRANSCRIPT_PX))
    return [listed, max(0, total - listed - drawer), drawer]


def closed_sizes(sizes: list[int]) -> list[int]:
    """The drawer's width goes back to the transcript."""
    return [sizes[0], sizes[1] + sizes[2], 0]


class SettingsDrawer(QWidget):
    """The panel in the drawer, a title and a Close button; Esc inside it closes it."""

    close_asked = Signal()

    def __init__(self, panel: SamplingPanel):
        super().__init__(objectName="settingsDrawer")
        title = QElidingLabel("This conversation's settings")  # elided: a narrow drawer stays narrow
        title.setStyleSheet("font-weight: bold;")
        close = QPushButton("Close", objectName="settingsDrawerCloseButton")
        close.setToolTip("Close the settings (Esc)")
        close.clicked.connect(self.close_asked)
        top = QHBoxLayout()
        top.addWidget(title, 1)
        top.addWidget(close)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 0, 0, 0)
        layout.addLayout(top)
        area = scrolling(panel)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # the panel narrows to fit instead
        layout.addWidget(area, 1)
        escape = QShortcut(QKeySequence(Qt.Key_Escape), self, context=Qt.WidgetWithChildrenShortcut)
        escape.activated.connect(self.close_asked)


class SummaryBar(QWidget):
    """Above the transcript: what the conversation is asked with, in one line (elided; the whole line
    in its tooltip), and the button that opens the drawer."""

    def __init__(self):
        super().__init__(objectName="samplingSummaryBar")
        self.label = QElidingLabel(objectName="samplingSummary")
        self.label.setStyleSheet("color: #555;")
        self.button = QPushButton("Settings", objectName="settingsDrawerButton", checkable=True)
        self.button.setToolTip(f"This conversation's system prompt, sampling and template ({TOGGLE_SHORTCUT})")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)

    def show_summary(self, text: str) -> None:
        self.label.setText(text)
        self.label.setToolTip(text)


class DrawerSplitter(QSplitter):
    """List, transcript and drawer; opens and closes the drawer and keeps the button in step, whether
    the button, the shortcut, Esc, a dragged handle or a restored layout moved it."""

    drawer_toggled = Signal(bool)  # opened (True) or closed by set_drawer_open

    def __init__(self, button: QPushButton, object_name: str):
        super().__init__(objectName=object_name)
        self.button = button
        self.setChildrenCollapsible(True)
        button.toggled.connect(self.set_drawer_open)
        self.splitterMoved.connect(self._on_splitter_moved)

    def drawer_open(self) -> bool:
        return self.count() == 3 and self.sizes()[2] > 0

    @Slot(bool)
    def set_drawer_open(self, wanted: bool) -> None:
        if wanted != self.drawer_open():
            sizes = self.sizes()
            total = sum(sizes) or self.width()
            self.setSizes(open_sizes(sizes, total) if wanted else closed_sizes(sizes))
            self._show_state()
            self.drawer_toggled.emit(wanted)
        self._show_state()

    @Slot()
    def toggle_drawer(self) -> None:
        self.set_drawer_open(not self.drawer_open())

    def restoreState(self, state) -> bool:
        restored = super().restoreState(state)
        self._show_state()
        return restored

    @Slot(int, int)
    def _on_splitter_moved(self, _pos: int, _index: int) -> None:
        self._show_state()

    def _show_state(self) -> None:
        blocked = self.button.blockSignals(True)
        self.button.setChecked(self.drawer_open())
        self.button.blockSignals(blocked)
