"""A conversation's transcript: its messages as Markdown, the streaming reply drawn at a pacer's pace,
the view following the end unless the user has scrolled up."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QToolButton, QVBoxLayout, QWidget,
)

from workbench.model.conversations import OPEN_STATUSES, ChatMessage, Conversation
from workbench.ui.image_thumbs import thumbnails
from workbench.ui.message_text import MessageText
from workbench.ui.render_pacer import RenderPacer


def figures_text(turn: ChatMessage, waiting: str = "") -> str:
    """The line under a turn: vLLM's figures, or what the reply is doing (``waiting``: what a reply
    that waits for the engine waits for)."""
    if turn.status == "error":
        return f"⚠ {turn.error}"
    f = turn.figures
    parts = []
    if f is not None:
        if f.ttft_s is not None:
            parts.append(f"TTFT {f.ttft_s * 1e3:.0f} ms")
        if f.decode_tokens_per_s is not None:
            parts.append(f"{f.decode_tokens_per_s:.1f} tok/s")
        parts.append(f"{f.output_tokens} output tok")
        parts.append(f"prompt {f.prompt_tokens} tok")
        if f.num_image_tokens:
            parts.append(f"{f.num_image_tokens} image tok")
        if f.cached_prompt_tokens is None:
            parts.append("cached: not available")
        else:
            parts.append(f"cached {f.cached_prompt_tokens} tok ({f.cache_hit_fraction:.0%})")
    if turn.status == "stopped":
        parts.append(f"stopped: {turn.error}" if turn.error else "stopped")  # e.g. cut off by a crash
    elif turn.status == "streaming":
        parts.append("generating…")
    elif turn.status == "waiting":
        parts.append(waiting)  # words only: a glyph the font lacks draws as an empty box
    return " · ".join(parts)


COPIED_SHOWN_MS = 1500  # how long Copy says "Copied"
EDIT_TIP = ("Edit this question and ask it again: Send replaces it and its reply (↑ in an empty input does the "
            "same; Esc or Cancel keeps them)")


def header_button(name: str, text: str) -> QToolButton:
    """A flat button in a turn's header, no taller than its name's line (the turn stays as tall as before)."""
    button = QToolButton(objectName=name, text=text, autoRaise=True)
    button.setMaximumHeight(button.fontMetrics().height() + 2)
    return button


class MessageView(QFrame):
    """One turn; only the streaming one is re-rendered as text arrives."""

    def __init__(self, turn: ChatMessage, waiting_note: Callable[[], str] = str, images_dir: Path | None = None):
        super().__init__()
        self.turn = turn
        self.waiting_note = waiting_note
        self.setFrameShape(QFrame.StyledPanel)
        self.setObjectName("userMessage" if turn.role == "user" else "assistantMessage")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(QLabel("<b>You</b>" if turn.role == "user" else "<b>Assistant</b>"))
        header.addStretch(1)
        self.copy_button = header_button("copyTurnButton", "Copy")
        self.copy_button.setToolTip("Copy this turn's text (as Markdown) to the clipboard")
        self.copy_button.clicked.connect(self.copy_text)
        header.addWidget(self.copy_button)
        self.edit_button: QToolButton | None = None  # a question's: shown on the last one (TranscriptView)
        if turn.role == "user":
            self.edit_button = header_button("editQuestionButton", "Edit")
            self.edit_button.setToolTip(EDIT_TIP)
            self.edit_button.hide()
            header.addWidget(self.edit_button)
        self.body = MessageText()  # wraps a word wider than the view, where a label widened the transcript
        self.stats = QLabel()
        self.stats.setObjectName("messageStats")
        self.stats.setStyleSheet("color: #666; font-size: 11px;")
        self.stats.setWordWrap(True)
        layout.addLayout(header)
        self.thumbs = [thumbnails.thumb_for(ref, images_dir) for ref in turn.images]
        if self.thumbs:  # a question's images, above its text (the order they are sent in)
            row = QHBoxLayout()
            row.setContentsMargins(0, 0, 0, 0)
            for thumb in self.thumbs:
                row.addWidget(thumb)
            row.addStretch(1)
            layout.addLayout(row)
        for widget in (self.body, self.stats):
            layout.addWidget(widget)
        self.render()

    def copy_text(self) -> None:
        """The turn's text as written (Markdown) to the clipboard; the button says so for a moment."""
        QGuiApplication.clipboard().setText(self.turn.text)
        self.copy_button.setText("Copied")
        QTimer.singleShot(COPIED_SHOWN_MS, self.copy_button, lambda: self.copy_button.setText("Copy"))

    def render(self) -> None:
        self.copy_button.setEnabled(bool(self.turn.text))
        self.render_text()
        self.stats.setText(figures_text(self.turn, self.waiting_note() if self.turn.status == "waiting" else ""))
        self.stats.setVisible(bool(self.stats.text()))

    def render_text(self) -> None:
        """The reply's text only: what changes while it streams."""
        self.body.setText(self.turn.text or ("…" if self.turn.status in OPEN_STATUSES else ""))


SYNC_AFTER_MS = 50  # a new question is drawn this soon at the latest, whatever the engine says


FOLLOW_SLACK_PX = 24  # within this of the end, the transcript follows the reply as it grows

# A conversation opened builds the views of its last FIRST_BUILT turns at once and those before in chunks of
# OLDER_CHUNK, each in its own turn of the event loop: 200 turns built at once held the window 177 ms.
FIRST_BUILT, OLDER_CHUNK = 24, 24


class TranscriptView(QScrollArea):
    """A conversation's messages. It follows the end as a reply grows, unless the user has scrolled
    up: then a "New text below" button brings them back down. The last question offers Edit (``edit_asked``)
    while no reply is open."""

    edit_asked = Signal(str)  # the id of the question whose Edit was clicked

    def __init__(self, conversation: Conversation, waiting_note: Callable[[], str] = str,
                 images_dir: Path | None = None):
        super().__init__()
        self.conversation = conversation
        self.waiting_note = waiting_note
        self.images_dir = images_dir  # where the messages' images are kept (None: the data folder's store)
        self.setWidgetResizable(True)
        inner = QWidget()
        self.column = QVBoxLayout(inner)
        self.column.addStretch(1)
        self.setWidget(inner)
        self.following = True  # the view sits at the end and stays there as the content grows
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_scrollbar_range_changed)
        bar.valueChanged.connect(self._on_scrollbar_value_changed)
        self.new_text_button = QPushButton("New text below ↓", self, objectName="newTextBelowButton")
        self.new_text_button.clicked.connect(self.scroll_to_end)
        self.new_text_button.hide()
        self.views: dict[str, MessageView] = {}  # message id -> its view
        self.editing = ""  # the question being edited in the input, if any
        # Streaming text is drawn at the pacer's pace: a long reply's draws would otherwise fill the GUI thread.
        self.pacer = RenderPacer()
        self._pending: set[str] = set()  # messages whose new text waits for the next draw
        self._draw_timer = QTimer(self, singleShot=True)
        self._draw_timer.timeout.connect(self._draw_pending)
        self._settling = False  # a draw's layout and paint are still to run
        self._sync_due = False  # new or removed messages wait for the views' sync
        self._older: list[ChatMessage] = []  # a long conversation's first turns, their views still to build
        self.num_text_draws = 0  # the tests read it

    def sync_soon(self) -> None:
        """``sync`` once the engine has taken the request just asked (``sync_now``, on the model's
        ``requests_taken``), or when its reply first changes, or after ``SYNC_AFTER_MS`` at the latest.
        Building and drawing a question's views takes the window 5-25 ms of CPU; on a machine whose
        spare cores are few, that work slows the engine's intake of the very request (vLLM's
        ``add_request``, in the engine-client process), which is what its first token waits for."""
        if not self._sync_due:
            self._sync_due = True
            QTimer.singleShot(SYNC_AFTER_MS, self, self.sync_now)

    def sync_now(self) -> None:
        """The sync that ``sync_soon`` put off, if one is due."""
        if self._sync_due:
            self.sync()

    def view_of(self, message_id: str) -> MessageView | None:
        """A message's view, built now if it is not yet (a conversation not shown, or one of a long one's older
        turns)."""
        if self._sync_due or message_id not in self.views:
            self.sync(shown_or_not=True)
        if message_id not in self.views and any(m.message_id == message_id for m in self._older):
            self._build_older(all_of_them=True)
        return self.views.get(message_id)

    def sync(self, shown_or_not: bool = False) -> None:
        """Adds views for new messages, drops views of removed ones (Regenerate). A conversation not shown (a
        hidden page of the chat's stack, or the chat behind another tab) is synced when it is shown, unless
        ``shown_or_not``: the app starting with a hundred kept conversations builds the views of the one it
        shows, not of all."""
        if not shown_or_not and self._hidden_page():
            self._sync_due = True
            return
        self._sync_due = False
        messages = self.conversation.messages
        alive = {m.message_id for m in messages}
        for key in [k for k in self.views if k not in alive]:
            self.views.pop(key).deleteLater()
        self._older = [m for m in self._older if m.message_id in alive]
        if not self.views and not self._older and len(messages) > FIRST_BUILT:
            # a long conversation opened: its end at once, the turns before it a chunk at a time, newest first
            self._older = messages[:-FIRST_BUILT]
            QTimer.singleShot(0, self, self._build_older)
        older = {m.message_id for m in self._older}
        for message in messages:
            if message.message_id not in self.views and message.message_id not in older:
                self._add_view(message, self.column.count() - 1)
        self.mark_editable()
        self.scroll_to_end()  # a question just asked, or a conversation opened: its end is what matters

    def _add_view(self, message: ChatMessage, index: int) -> None:
        view = MessageView(message, self.waiting_note, self.images_dir)
        self.views[message.message_id] = view
        if view.edit_button is not None:
            view.edit_button.clicked.connect(lambda: self.edit_asked.emit(message.message_id))
        self.column.insertWidget(index, view)

    def _build_older(self, all_of_them: bool = False) -> None:
        """The next chunk of the turns before those shown, put above them (all that are left: ``all_of_them``)."""
        while self._older:
            chunk, self._older = self._older[-OLDER_CHUNK:], self._older[:-OLDER_CHUNK]
            for message in reversed(chunk):
                self._add_view(message, 0)
            if not all_of_them:
                break
        if self._older:
            QTimer.singleShot(0, self, self._build_older)

    def mark_editable(self, editing: str | None = None) -> None:
        """Edit shows on the last question only, and can be clicked while no reply is open; the question being
        edited (``editing``: its id, "" for none, None: as before) says so instead."""
        if editing is not None:
            self.editing = editing
        last, open_reply = self.conversation.last_question_id(), self.conversation.streaming_message() is not None
        for message_id, view in self.views.items():
            if view.edit_button is not None:
                view.edit_button.setVisible(message_id == last)
                view.edit_button.setEnabled(not open_reply and message_id != self.editing)
                view.edit_button.setText("Editing below" if message_id == self.editing else "Edit")

    def _hidden_page(self) -> bool:
        return self.parentWidget() is not None and not self.isVisibleTo(self.window())

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.sync_now()  # the views of a conversation opened now

    def render_waiting(self) -> None:
        """Redraws what the replies waiting for the engine say (its start's progress, its state)."""
        for view in self.views.values():
            if view.turn.status == "waiting":
                view.render()

    # -------------------------------------------------------------- following the end
    @Slot()
    def scroll_to_end(self) -> None:
        self.following = True
        self.new_text_button.hide()
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    @Slot(int, int)
    def _on_scrollbar_range_changed(self, _minimum: int, maximum: int) -> None:
        if self.following:
            self.verticalScrollBar().setValue(maximum)
        elif self.isVisible():  # the content grew below what the user is reading
            self._place_new_text_button()
            self.new_text_button.show()
            self.new_text_button.raise_()

    @Slot(int)
    def _on_scrollbar_value_changed(self, value: int) -> None:
        self.following = value >= self.verticalScrollBar().maximum() - FOLLOW_SLACK_PX
        if self.following:
            self.new_text_button.hide()

    def _place_new_text_button(self) -> None:
        self.new_text_button.adjustSize()
        viewport = self.viewport().geometry()
        size = self.new_text_button.size()
        self.new_text_button.move(viewport.center().x() - size.width() // 2, viewport.bottom() - size.height() - 8)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.new_text_button.isVisible():
            self._place_new_text_button()

    def render_message(self, message_id: str, text_only: bool = False) -> None:
        """A whole message (its end, its figures) is drawn at once; new streaming text at the pacer's pace."""
        self.sync_now()
        view = self.views.get(message_id)
        if view is None:
            return
        if not text_only:
            self._pending.discard(message_id)
            view.render()
            self.mark_editable()  # a reply ended (or began)
            return
        self._pending.add(message_id)
        self._schedule_draw()

    def _schedule_draw(self) -> None:
        if self._pending and not self._draw_timer.isActive() and not self._settling:
            self._draw_timer.start(round(self.pacer.delay_s(time.monotonic()) * 1e3))

    def _draw_pending(self) -> None:
        at, started = time.monotonic(), time.perf_counter()
        for message_id in self._pending:
            if (view := self.views.get(message_id)) is not None:
                view.render_text()
        self._pending.clear()
        self.num_text_draws += 1
        # Qt lays the labels out and paints them in the events this posted: the draw's cost is known
        # once they have run, which a zero timer posted now waits for.
        self._settling = True
        QTimer.singleShot(0, self, lambda: self._draw_settled(at, started))

    def _draw_settled(self, at: float, started: float) -> None:
        self.pacer.drawn(at, time.perf_counter() - started)
        self._settling = False
        self._schedule_draw()
