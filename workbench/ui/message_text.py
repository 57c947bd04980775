"""A turn's text in the transcript: Markdown, as tall as its text at the transcript's width, never wider.

A QLabel asks for the width of its longest unbroken word: one long identifier, path or URL in a reply
(``choose_num_num_num…``) made the whole transcript wider than its view, every line cut at the right edge
behind a horizontal scroll bar. This read-only text view wraps at word boundaries, and inside a word only
where the word alone is wider than the view; its height follows its text."""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QPalette, QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser

OPENED_SCHEMES = ("http", "https")  # a link in a reply opens in the browser; no other kind of link is followed


class MessageText(QTextBrowser):
    def __init__(self):
        super().__init__()
        self._markdown = ""
        self.setFrameShape(QFrame.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.setMinimumWidth(40)
        self.setFocusPolicy(Qt.ClickFocus)  # selectable with the mouse, as a label is; Tab goes past the turns
        palette = self.palette()  # the turn's own panel shows through, as under a label (a palette: a style
        palette.setColor(QPalette.Base, Qt.transparent)  # sheet per view took 0.1 ms of each view's build)
        self.setPalette(palette)
        self.document().setDocumentMargin(0)
        self.setOpenLinks(False)
        self.anchorClicked.connect(open_link)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)

    def text(self) -> str:
        """The Markdown last set (as ``QLabel.text()`` gives it)."""
        return self._markdown

    def setText(self, markdown: str) -> None:
        if markdown != self._markdown:
            self._markdown = markdown
            self.setMarkdown(markdown)
            self._fit_height()

    def _fit_height(self, *_size) -> None:
        height = round(self.document().size().height()) + 2 * self.frameWidth()
        if height != self.height():
            self.setFixedHeight(height)

    def sizeHint(self) -> QSize:
        return QSize(self.minimumWidth(), self.height())

    def wheelEvent(self, event) -> None:
        event.ignore()  # the transcript scrolls: this view is as tall as its text and has nothing to scroll


def open_link(url: QUrl) -> None:
    if url.scheme() in OPENED_SCHEMES:
        QDesktopServices.openUrl(url)
