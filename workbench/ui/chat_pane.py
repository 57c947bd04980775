"""The chat pane: conversations, streaming Markdown replies, Stop / Regenerate and sampling settings."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFrame, QHBoxLayout, QLabel, QListWidget, QPushButton, QScrollArea, QSplitter, QStackedWidget,
    QVBoxLayout, QWidget, QPlainTextEdit,
)

from workbench.conversation import Conversation, Turn
from workbench.engine.backend import ChatRequest
from workbench.ui.sampling_panel import SamplingPanel


def figures_text(turn: Turn) -> str:
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
        parts.append(f"cached {f.cached_prompt_tokens} tok ({f.cache_hit_fraction:.0%})")
    if turn.status == "stopped":
        parts.append("stopped")
    elif turn.status == "streaming":
        parts.append("generating…")
    return " · ".join(parts)


class MessageView(QFrame):
    """One turn; only the streaming one is re-rendered as text arrives."""

    def __init__(self, turn: Turn):
        super().__init__()
        self.turn = turn
        self.setFrameShape(QFrame.StyledPanel)
        self.setObjectName("userMessage" if turn.role == "user" else "assistantMessage")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        header = QLabel("<b>You</b>" if turn.role == "user" else "<b>Assistant</b>")
        self.body = QLabel()
        self.body.setTextFormat(Qt.MarkdownText)
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.LinksAccessibleByMouse)
        self.stats = QLabel()
        self.stats.setObjectName("messageStats")
        self.stats.setStyleSheet("color: #666; font-size: 11px;")
        self.stats.setWordWrap(True)
        for widget in (header, self.body, self.stats):
            layout.addWidget(widget)
        self.render()

    def render(self) -> None:
        self.render_text()
        self.stats.setText(figures_text(self.turn))
        self.stats.setVisible(bool(self.stats.text()))

    def render_text(self) -> None:
        """The reply's text only: what changes while it streams."""
        self.body.setText(self.turn.text or ("…" if self.turn.status == "streaming" else ""))


class TranscriptView(QScrollArea):
    def __init__(self, conversation: Conversation):
        super().__init__()
        self.conversation = conversation
        self.setWidgetResizable(True)
        inner = QWidget()
        self.column = QVBoxLayout(inner)
        self.column.addStretch(1)
        self.setWidget(inner)
        self.views: dict[int, MessageView] = {}

    def sync(self) -> None:
        """Adds views for new turns, drops views of removed ones (Regenerate)."""
        alive = {id(t) for t in self.conversation.turns}
        for key in [k for k in self.views if k not in alive]:
            self.views.pop(key).deleteLater()
        for turn in self.conversation.turns:
            if id(turn) not in self.views:
                view = MessageView(turn)
                self.views[id(turn)] = view
                self.column.insertWidget(self.column.count() - 1, view)
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def render_turn(self, turn: Turn, text_only: bool = False) -> None:
        view = self.views.get(id(turn))
        if view is not None:
            view.render_text() if text_only else view.render()


class ChatPane(QWidget):
    request_submitted = Signal(object)  # ChatRequest
    abort_requested = Signal(str)  # request id

    def __init__(self, default_system_prompt: str = ""):
        super().__init__()
        self.conversations: list[Conversation] = []
        self.transcripts: dict[int, TranscriptView] = {}
        self.pending: dict[str, tuple[Conversation, Turn]] = {}
        self.sampling = SamplingPanel(default_system_prompt)
        self._build()
        self.new_conversation()

    def _build(self) -> None:
        self.conversation_list = QListWidget(objectName="conversationList")
        self.conversation_list.currentRowChanged.connect(self._on_conversation_list_changed)
        new_chat = QPushButton("New chat", objectName="newChatButton")
        new_chat.clicked.connect(self.new_conversation)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(new_chat)
        left_layout.addWidget(self.conversation_list)

        self.stack = QStackedWidget(objectName="chatTranscript")
        self.input = QPlainTextEdit(objectName="chatInput")
        self.input.setPlaceholderText("Type a message… (Ctrl+Enter sends)")
        self.input.setMaximumHeight(90)
        self.send_button = QPushButton("Send", objectName="sendButton")
        self.stop_button = QPushButton("Stop", objectName="stopButton")
        self.regenerate_button = QPushButton("Regenerate", objectName="regenerateButton")
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(self.stop)
        self.regenerate_button.clicked.connect(self.regenerate)
        self.send_button.setShortcut("Ctrl+Return")
        buttons = QVBoxLayout()
        for b in (self.send_button, self.stop_button, self.regenerate_button):
            buttons.addWidget(b)
        input_row = QHBoxLayout()
        input_row.addWidget(self.input, 1)
        input_row.addLayout(buttons)
        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.addWidget(self.stack, 1)
        center_layout.addLayout(input_row)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(center)
        splitter.addWidget(self.sampling)
        splitter.setSizes([140, 520, 240])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self._update_buttons()

    # -------------------------------------------------------------- conversations
    @Slot()
    def new_conversation(self) -> Conversation:
        conversation = Conversation(len(self.conversations) + 1, f"Chat {len(self.conversations) + 1}")
        self.conversations.append(conversation)
        view = TranscriptView(conversation)
        self.transcripts[conversation.conversation_id] = view
        self.stack.addWidget(view)
        self.conversation_list.addItem(conversation.title)
        self.conversation_list.setCurrentRow(len(self.conversations) - 1)
        return conversation

    @property
    def current(self) -> Conversation:
        return self.conversations[max(0, self.conversation_list.currentRow())]

    @Slot(int)
    def _on_conversation_list_changed(self, row: int) -> None:
        if 0 <= row < len(self.conversations):
            self.stack.setCurrentWidget(self.transcripts[self.conversations[row].conversation_id])
            self._update_buttons()

    def owner_of(self, request_id: str) -> str:
        """The conversation a request belongs to (for the heatmap's tooltip)."""
        for conversation in self.conversations:
            if any(t.request_id == request_id for t in conversation.turns):
                return conversation.title
        return request_id

    # -------------------------------------------------------------- actions
    @Slot()
    def send(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or self.current.streaming_turn() is not None:
            return
        self.input.clear()
        request, reply = self.current.ask(text, self.sampling.system_prompt(), self.sampling.settings())
        self._dispatch(self.current, request, reply)

    @Slot()
    def regenerate(self) -> None:
        if self.current.streaming_turn() is not None:
            return
        asked = self.current.regenerate(self.sampling.system_prompt(), self.sampling.settings())
        if asked is not None:
            self._dispatch(self.current, *asked)

    @Slot()
    def stop(self) -> None:
        turn = self.current.streaming_turn()
        if turn is not None:
            self.abort_requested.emit(turn.request_id)

    def _dispatch(self, conversation: Conversation, request: ChatRequest, reply: Turn) -> None:
        self.pending[request.request_id] = (conversation, reply)
        self.transcripts[conversation.conversation_id].sync()
        self._update_buttons()
        self.request_submitted.emit(request)

    def _update_buttons(self) -> None:
        streaming = bool(self.conversations) and self.current.streaming_turn() is not None
        self.stop_button.setEnabled(streaming)
        self.send_button.setEnabled(not streaming)
        self.regenerate_button.setEnabled(not streaming)

    # -------------------------------------------------------------- results from the engine
    @Slot(object)
    def on_worker_text_flushed(self, chunks: dict) -> None:
        for request_id, text in chunks.items():
            found = self.pending.get(request_id)
            if found is not None:
                conversation, turn = found
                turn.text += text
                self.transcripts[conversation.conversation_id].render_turn(turn, text_only=True)

    @Slot(object)
    def on_worker_request_finished(self, event) -> None:
        found = self.pending.pop(event.request_id, None)
        if found is None:
            return
        conversation, turn = found
        turn.status = "stopped" if event.finish_reason == "aborted" else "done"
        turn.figures = event.figures
        self.transcripts[conversation.conversation_id].render_turn(turn)
        self._update_buttons()

    @Slot(str, str)
    def on_worker_request_failed(self, request_id: str, message: str) -> None:
        found = self.pending.pop(request_id, None)
        if found is None:
            return
        conversation, turn = found
        turn.status, turn.error = "error", message
        self.transcripts[conversation.conversation_id].render_turn(turn)
        self._update_buttons()
