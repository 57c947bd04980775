"""The heatmap's text: its summary and follow lines (fixed height, repainted, never re-laid out) and
its legend (a word-wrapped label that goes onto more lines in a narrow view, never cut)."""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from workbench.engine.heatmap_image import STATE_COLOURS
from workbench.engine.image_blocks import IMAGE_MARK_COLOUR
from workbench.engine.kv_snapshot import BLOCK_STATE_FREE, BLOCK_STATE_NAMES


class ElidedLines(QWidget):
    """Up to ``num_lines`` lines of text (split at newlines), each cut with "…" to the width, in a
    fixed height. New text repaints the widget and asks the window for no new layout: the summary
    changes with every frame."""

    def __init__(self, num_lines: int, text: str = "", objectName: str = ""):
        super().__init__(objectName=objectName)
        self.num_lines = num_lines
        self._text = text
        self._lines = text.split("\n")
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self._fix_height()

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        if text != self._text:
            self._text, self._lines = text, text.split("\n")
            self.update()

    def _fix_height(self) -> None:
        self.setFixedHeight(self.num_lines * self.fontMetrics().lineSpacing())

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._fix_height()

    def sizeHint(self) -> QSize:
        return QSize(20 * self.fontMetrics().averageCharWidth(), self.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.height())

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        metrics = self.fontMetrics()
        painter.setPen(self.palette().color(QPalette.WindowText))
        for i, line in enumerate(self._lines[: self.num_lines]):
            elided = metrics.elidedText(line, Qt.ElideRight, self.width())
            painter.drawText(0, i * metrics.lineSpacing() + metrics.ascent(), elided)
        painter.end()


def legend_label() -> QLabel:
    """The states' legend as one word-wrapped label: each entry stays whole and the entries flow
    onto as many lines as the width needs (:func:`legend_text` gives its text)."""
    label = QLabel(objectName="kvLegend")
    label.setTextFormat(Qt.RichText)
    label.setWordWrap(True)
    label.setToolTip("Block states (vLLM's BlockPool): null is the null block; free has no data; cached holds "
                     "a prefix no request uses (evictable); in use has ref_cnt 1, shared more. No block: "
                     "the grid's cells past the pool's end. Hatched: the block holds an image's tokens. A brighter "
                     "shade: changed since the frame before.")
    return label


def legend_text(no_block: QColor, frame: QColor) -> str:
    """A swatch and name for each state and for no block, the image tokens' hatch, then that bright means
    changed. Each swatch is a ■ on a ``frame`` coloured box, so that light ones (free, no block) show on a
    light window; the hatch's ▨ is drawn on the free state's colour, as it is seen over the pool."""
    colours = [QColor(*rgb) for rgb in STATE_COLOURS] + [no_block]
    names = list(BLOCK_STATE_NAMES) + ["no block"]
    entries = [f"<span style='background-color:{frame.name()};color:{colour.name()}'>&#9632;</span>&nbsp;"
               f"{name.replace(' ', '&nbsp;')}" for name, colour in zip(names, colours)]
    hatch, under = QColor(*IMAGE_MARK_COLOUR).name(), QColor(*STATE_COLOURS[BLOCK_STATE_FREE]).name()
    image = f"<span style='background-color:{under};color:{hatch}'>&#9640;</span>&nbsp;image&nbsp;tokens"
    return " &nbsp; ".join(entries + [image, "(bright:&nbsp;changed)"])
