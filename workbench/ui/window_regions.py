"""The window's two regions, the work at the left and the engine at the right, with one splitter
between them; either can be given the whole window (View menu, Ctrl+1 and Ctrl+2; again, or
Ctrl+0, shows both)."""
from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QSplitter, QWidget

WORK_SHARE = 0.5  # of a first window's width, the work region's


class WindowRegions(QSplitter):
    """``work`` and ``engine`` side by side; :meth:`give_whole_window` hides one, :meth:`show_both`
    brings it back at the width it had."""

    def __init__(self, work: QWidget, engine: QWidget):
        super().__init__(objectName="regionsSplitter")  # named: its sizes are remembered
        self.work, self.engine = work, engine
        self.addWidget(work)
        self.addWidget(engine)
        self.setChildrenCollapsible(False)
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 1)

    def share_width(self, width: int) -> None:
        """A first window's split: half each."""
        work = round(width * WORK_SHARE)
        self.setSizes([work, max(1, width - work)])

    @property
    def whole_window(self) -> QWidget | None:
        """The region that has the whole window, if one has."""
        if self.work.isHidden() != self.engine.isHidden():
            return self.engine if self.work.isHidden() else self.work
        return None

    def give_whole_window(self, region: QWidget) -> None:
        """``region`` alone; asked again for the same region, both come back."""
        if self.whole_window is region:
            self.show_both()
            return
        other = self.engine if region is self.work else self.work
        region.show()
        other.hide()

    def show_both(self) -> None:
        self.work.show()
        self.engine.show()

    def add_actions(self, menu: QMenu) -> None:
        """The View menu's entries and their keys."""
        for text, key, slot in (("Work region, whole window", "Ctrl+1", lambda: self.give_whole_window(self.work)),
                                ("Engine region, whole window", "Ctrl+2", lambda: self.give_whole_window(self.engine)),
                                ("Both regions", "Ctrl+0", self.show_both)):
            action = QAction(text, menu)
            action.setShortcut(QKeySequence(key))
            action.triggered.connect(slot)
            menu.addAction(action)
