"""The chat pane: conversations, streaming Markdown replies, Stop / Regenerate, the last question edited
and asked again, images attached to a question (Attach image…, dropped or pasted), and each conversation's
settings in a drawer beside the transcript (a one-line summary of them always shown)."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout, QListWidget, QListWidgetItem, QMessageBox, QPushButton, QStackedWidget, QVBoxLayout,
    QWidget,
)

from workbench.engine.images import ImageProblem

from workbench.model.app_model import AppModel
from workbench.model.conversations import Conversation
from workbench.model.engine_commands import EngineCommands, waiting_note
from workbench.model.engine_status import EngineStatus
from workbench.ui.edit_bar import EditBar
from workbench.ui.image_attachments import (
    ATTACH_TIP, TEXT_ONLY, AttachmentStrip, ChatInput, StoredImage, choose_image_files, images_refusal, sources_in,
    text_only,
)
from workbench.ui.sampling_panel import SamplingPanel
from workbench.ui.settings_drawer import TOGGLE_SHORTCUT, DrawerSplitter, SettingsDrawer, SummaryBar
# the transcript's parts, where the tests and benchmarks have always found them
from workbench.ui.transcript_view import (  # noqa: F401
    FOLLOW_SLACK_PX, SYNC_AFTER_MS, MessageView, TranscriptView, figures_text,
)

LIST_PX = 120  # the conversation list's width at first (it folds away to 0 when its handle is dragged)
DRAFT_KEPT_AFTER_MS = 1000  # a draft is kept (stored) this long after the typing stops


def ask_to_confirm(parent: QWidget, title: str, text: str) -> bool:
    """Yes or no, the safe answer (No) the default."""
    answer = QMessageBox.question(parent, title, text, QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
    return answer == QMessageBox.Yes


class ChatPane(QWidget):
    """Shows the model's conversations; questions, Regenerate and Stop go to the engine's one owner
    of commands (which keeps a question until the engine can take it). Holds no state of its own."""

    def __init__(self, model: AppModel, commands: EngineCommands):
        super().__init__()
        self.model = model
        self.commands = commands
        self.order: list[str] = []  # conversation ids, as listed
        # what was typed and attached, not sent, in each conversation while another is shown: (text, images,
        # the problem named beside them), put back when it is shown again
        self._drafts: dict[str, tuple[str, list, str]] = {}
        # a conversation whose last question is being edited: (that question's id, the draft it put aside),
        # the draft put back once the edit is sent or cancelled
        self._editing: dict[str, tuple[str, tuple[str, list, str]]] = {}
        self._shown: str | None = None  # the conversation whose draft the input holds
        self.transcripts: dict[str, TranscriptView] = {}
        self.sampling = SamplingPanel(model.system_prompt)
        self.sampling.edited.connect(self._on_sampling_edited)
        self._showing_settings = False  # the panel is being set from the model: not an edit
        self.confirm = ask_to_confirm  # (parent, title, text) -> bool; deleting asks through it
        self.choose_images = choose_image_files  # (parent) -> paths; Attach image… asks through it
        self._build()
        model.conversation_added.connect(self._on_model_conversation_added)
        model.messages_changed.connect(self._on_model_messages_changed)
        model.message_changed.connect(self._on_model_message_changed)
        model.requests_taken.connect(self._on_model_requests_taken)
        model.conversation_removed.connect(self._on_model_conversation_removed)
        model.conversation_changed.connect(self._on_model_conversation_changed)
        model.conversation_selected.connect(self._on_model_conversation_selected)
        model.engine_changed.connect(self._on_model_waiting_changed)
        model.waiting_changed.connect(self._on_model_waiting_changed)
        model.engine_changed.connect(self._on_model_engine_changed)
        for conversation_id in model.conversations:
            self._on_model_conversation_added(conversation_id)
        if not model.conversations:
            model.new_conversation()

    def _build_list_column(self) -> QWidget:
        """The conversations: New chat above the list, Delete and Clear all below."""
        self.conversation_list = QListWidget(objectName="conversationList")
        self.conversation_list.setToolTip("Double-click a conversation (or press F2) to rename it.")
        self.conversation_list.setEditTriggers(QListWidget.DoubleClicked | QListWidget.EditKeyPressed)
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # long titles elide
        self.conversation_list.setTextElideMode(Qt.ElideRight)
        self.conversation_list.currentRowChanged.connect(self._on_conversation_list_changed)
        self.conversation_list.itemChanged.connect(self._on_conversation_item_edited)
        new_chat = QPushButton("New chat", objectName="newChatButton")
        new_chat.clicked.connect(self.new_conversation)
        new_chat.setShortcut(QKeySequence.New)  # Ctrl+N, as in every chat app
        new_chat.setToolTip(f"A new conversation ({new_chat.shortcut().toString(QKeySequence.NativeText)})")
        delete = QPushButton("Delete", objectName="deleteChatButton")
        delete.clicked.connect(self.delete_current)
        clear_all = QPushButton("Clear all", objectName="clearChatsButton")
        clear_all.clicked.connect(self.clear_all)
        left = QWidget(objectName="conversationColumn")
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(new_chat)
        left_layout.addWidget(self.conversation_list, 1)
        for button in (delete, clear_all):  # one above the other: the column stays narrow
            left_layout.addWidget(button)
        return left

    def _build(self) -> None:
        left = self._build_list_column()

        self.stack = QStackedWidget(objectName="chatTranscript")
        self.input = ChatInput(objectName="chatInput")
        self.input.setPlaceholderText("Type a message… (Enter sends, Shift+Enter starts a new line; drop or paste "
                                      "images to attach them)")
        self.input.setMaximumHeight(120)
        self.attachments = AttachmentStrip()
        self.input.images_given.connect(self.attachments.add_sources)
        self._draft_timer = QTimer(self, singleShot=True, interval=DRAFT_KEPT_AFTER_MS)
        self._draft_timer.timeout.connect(self.keep_draft)
        self.input.textChanged.connect(self._draft_timer.start)
        self.attachments.changed.connect(self._draft_timer.start)
        self.attachments.read_elsewhere.connect(self._on_image_read_elsewhere)
        self.input.edit_last_asked.connect(self.edit_last_question)
        self.input.escape_pressed.connect(self.cancel_edit)
        self.edit_bar = EditBar()
        self.cancel_edit_button = self.edit_bar.cancel_button
        self.cancel_edit_button.clicked.connect(self.cancel_edit)
        self.attach_button = QPushButton("Attach image…", objectName="attachImageButton")
        self.attach_button.clicked.connect(self.attach_images)
        self.setAcceptDrops(True)
        self.send_button = QPushButton("Send", objectName="sendButton")
        self.stop_button = QPushButton("Stop", objectName="stopButton")
        self.regenerate_button = QPushButton("Regenerate", objectName="regenerateButton")
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(self.stop)
        self.regenerate_button.clicked.connect(self.regenerate)
        self.send_button.setShortcut("Ctrl+Return")  # as before Enter sent: from anywhere in the pane
        self.input.send_asked.connect(self.send_button.click)  # nothing while Send is greyed (a reply streams)
        buttons = QVBoxLayout()
        for b in (self.send_button, self.stop_button, self.regenerate_button, self.attach_button):
            buttons.addWidget(b)
        input_row = QHBoxLayout()
        input_row.addWidget(self.input, 1)
        input_row.addLayout(buttons)
        self.summary_bar = SummaryBar()
        self.summary = self.summary_bar.label
        self.drawer_button = self.summary_bar.button
        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.addWidget(self.summary_bar)
        center_layout.addWidget(self.stack, 1)
        center_layout.addWidget(self.edit_bar)
        center_layout.addWidget(self.attachments)
        center_layout.addLayout(input_row)

        self.drawer = SettingsDrawer(self.sampling)
        # named: its sizes, the drawer's width among them (0: closed), are remembered with the layout
        self.splitter = DrawerSplitter(self.drawer_button, "chatSplitter")
        self.splitter.addWidget(left)
        self.splitter.addWidget(center)
        self.splitter.addWidget(self.drawer)
        self.splitter.setStretchFactor(1, 1)  # a wider pane widens the transcript
        self.splitter.setSizes([LIST_PX, 500, 0])
        self.drawer.close_asked.connect(self.close_drawer)
        self.splitter.drawer_toggled.connect(self._on_splitter_drawer_toggled)
        QShortcut(QKeySequence(TOGGLE_SHORTCUT), self, self.splitter.toggle_drawer)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)
        self._update_buttons()
        self._on_model_engine_changed(self.model.engine)

    # -------------------------------------------------------------- the settings drawer
    def drawer_open(self) -> bool:
        return self.splitter.drawer_open()

    @Slot()
    def open_drawer(self) -> None:
        self.splitter.set_drawer_open(True)

    @Slot()
    def close_drawer(self) -> None:
        self.splitter.set_drawer_open(False)

    @Slot(bool)
    def _on_splitter_drawer_toggled(self, opened: bool) -> None:
        (self.sampling.system if opened else self.input).setFocus()

    def _show_summary(self) -> None:
        self.summary_bar.show_summary(self.sampling.summary())

    @Slot()
    def _on_sampling_edited(self) -> None:
        """An edit in the drawer is the conversation's at once (kept, and stored), sent or not."""
        if not self._showing_settings and self.order:
            conversation_id = self.current.conversation_id
            self.model.set_system_prompt(conversation_id, self.sampling.system_prompt())
            self.model.set_sampling(conversation_id, self.sampling.settings())
        self._show_summary()

    def _show_settings(self, conversation: Conversation) -> None:
        """The drawer shows ``conversation``'s own system prompt and settings."""
        self._showing_settings = True
        try:
            if self.sampling.system_prompt() != conversation.system_prompt:
                self.sampling.system.setPlainText(conversation.system_prompt)
            self.sampling.form.set_settings(conversation.sampling)
        finally:
            self._showing_settings = False
        self._show_summary()

    # -------------------------------------------------------------- conversations
    @Slot()
    def new_conversation(self) -> Conversation:
        return self.model.new_conversation()

    def _on_model_conversation_added(self, conversation_id: str) -> None:
        conversation = self.model.conversations[conversation_id]
        view = TranscriptView(conversation, self._waiting_note, self.model.images_dir)
        view.edit_asked.connect(self.edit_question)
        self.transcripts[conversation_id] = view
        self.order.append(conversation_id)
        self.stack.addWidget(view)
        view.sync()
        item = QListWidgetItem(conversation.title)
        item.setFlags(item.flags() | Qt.ItemIsEditable)
        self.conversation_list.addItem(item)
        self.conversation_list.setCurrentRow(len(self.order) - 1)

    def rename(self, conversation_id: str, title: str) -> bool:
        """The user's title for a conversation (a blank one is refused, the old title kept)."""
        renamed = self.model.rename_conversation(conversation_id, title)
        if not renamed:  # the list shows the title the model kept
            self._on_model_conversation_changed(conversation_id)
        return renamed

    @Slot(QListWidgetItem)
    def _on_conversation_item_edited(self, item: QListWidgetItem) -> None:
        row = self.conversation_list.row(item)
        if 0 <= row < len(self.order) and item.text() != self.model.conversations[self.order[row]].title:
            self.rename(self.order[row], item.text())

    def _on_model_conversation_changed(self, conversation_id: str) -> None:
        if conversation_id not in self.order:
            return
        conversation = self.model.conversations[conversation_id]
        item = self.conversation_list.item(self.order.index(conversation_id))
        if item.text() != conversation.title:
            blocked = self.conversation_list.blockSignals(True)
            item.setText(conversation.title)
            self.conversation_list.blockSignals(blocked)
        shown = (self.sampling.system_prompt(), self.sampling.settings())
        if conversation_id == self.current.conversation_id and shown != (conversation.system_prompt,
                                                                          conversation.sampling):
            self._show_settings(conversation)

    def _on_model_conversation_selected(self, conversation_id: str) -> None:
        """A selection made elsewhere moves the list (and so the transcript and the drawer)."""
        if conversation_id in self.order and self.conversation_list.currentRow() != self.order.index(conversation_id):
            self.conversation_list.setCurrentRow(self.order.index(conversation_id))

    @Slot()
    def delete_current(self) -> bool:
        """Deletes the conversation shown, once the user has said yes; a streaming reply is stopped."""
        conversation = self.current
        if not self.confirm(self, "Delete conversation",
                            f"Delete \u201c{conversation.title}\u201d and its {len(conversation.messages)} messages? "
                            "This cannot be undone."):
            return False
        self._stop_streaming([conversation])
        self.model.delete_conversation(conversation.conversation_id)
        return True

    @Slot()
    def clear_all(self) -> bool:
        """Deletes every conversation, after asking twice."""
        count = len(self.model.conversations)
        if not self.confirm(self, "Clear all conversations", f"Delete all {count} conversations?"):
            return False
        if not self.confirm(self, "Clear all conversations",
                            f"Really delete all {count} conversations and every message in them? "
                            "They cannot be brought back."):
            return False
        self._stop_streaming(list(self.model.conversations.values()))
        self.model.clear_conversations()
        return True

    def _stop_streaming(self, conversations: list[Conversation]) -> None:
        for conversation in conversations:
            reply = conversation.streaming_message()
            if reply is not None:
                self.commands.abort(reply.request_id)

    def _on_model_conversation_removed(self, conversation_id: str) -> None:
        removed = [conversation_id] if conversation_id else list(self.order)
        for key in removed:
            row = self.order.index(key)
            self.order.pop(row)
            self.conversation_list.takeItem(row)
            self.transcripts.pop(key).deleteLater()
        if not self.model.conversations:
            self.model.new_conversation()
        elif self._shown in removed:  # the list's current row may keep its number: no signal said it changed
            self._on_conversation_list_changed(self.conversation_list.currentRow())
        for key in removed:  # a deleted conversation's draft goes with it
            _text, images, _problem = self._drafts.pop(key, ("", [], ""))
            _question, (_text, put_aside, _problem) = self._editing.pop(key, ("", ("", [], "")))
            for pending in images + put_aside:
                pending.deleteLater()
        self._update_buttons()

    @property
    def current(self) -> Conversation:
        return self.model.conversations[self.order[max(0, self.conversation_list.currentRow())]]

    @Slot(int)
    def _on_conversation_list_changed(self, row: int) -> None:
        if 0 <= row < len(self.order):
            self._show_draft_of(self.order[row])
            self.stack.setCurrentWidget(self.transcripts[self.order[row]])
            self._show_settings(self.current)  # each conversation's own settings and system prompt
            self.model.select_conversation(self.order[row])
            self._update_buttons()
            self.edit_bar.setVisible(self.order[row] in self._editing)

    def _show_draft_of(self, conversation_id: str) -> None:
        """The input and the pending images become ``conversation_id``'s draft; the one shown is kept for its
        own conversation, so a question typed for one is never sent to another."""
        if conversation_id == self._shown:
            return
        if self._shown is not None:
            if not self.attachments.reading:  # else kept as its images come (_on_image_read_elsewhere)
                self._keep(self._shown, self.input.toPlainText(), self.attachments.images())
            self._drafts[self._shown] = (self.input.toPlainText(), *self.attachments.take())
        self.attachments.owner = conversation_id
        if conversation_id in self._drafts:
            self._put_in_input(self._drafts.pop(conversation_id))
        else:  # first shown since the start: the draft the model kept, its images read from the store
            kept = self.model.conversations[conversation_id]
            self._put_in_input((kept.draft, [], ""))
            self.attachments.add_sources([StoredImage(ref, self.model.images_dir) for ref in kept.draft_images])
        self._shown = conversation_id

    @Slot()
    def keep_draft(self) -> None:
        """What the shown conversation's input and attachments hold, kept in the model (and so stored): a
        restart or a crash loses none of it. While the last question is edited, the draft put aside is kept
        with the edit. Not while images are still being read (it is tried again once they are)."""
        if self._shown is None:
            return
        if self.attachments.reading:
            self._draft_timer.start()
            return
        self._draft_timer.stop()
        self._keep(self._shown, self.input.toPlainText(), self.attachments.images())

    def _keep(self, conversation_id: str, text: str, images: tuple) -> None:
        """``conversation_id``'s draft, its input's ``text`` and ``images``, kept in the model (with the draft an
        edit put aside)."""
        if conversation_id not in self.model.conversations:
            return
        texts, images = [text], list(images)
        if conversation_id in self._editing:
            question_id, (aside_text, aside_images, _problem) = self._editing[conversation_id]
            question = self.model.conversations[conversation_id].message(question_id)
            if question is not None and (question.text, question.images) == (text, tuple(i.ref for i in images)):
                texts, images = [], []  # the edit not begun: the question is kept in the conversation already
            texts.insert(0, aside_text)
            images[:0] = [pending.image for pending in aside_images]
        self.model.keep_draft(conversation_id, "\n\n".join(t for t in texts if t.strip()), tuple(images))

    def _on_image_read_elsewhere(self, conversation_id: str, pending, problem: str) -> None:
        """An image read after its conversation's draft was put away (another conversation shown): into that
        draft, never the one shown."""
        if conversation_id not in self._drafts:  # the conversation is gone
            if pending is not None:
                pending.deleteLater()
            return
        text, images, shown_problem = self._drafts[conversation_id]
        if pending is not None:
            pending.hide()
            images.append(pending)
        if problem:
            shown_problem = f"{shown_problem}\n{problem}" if shown_problem else problem
        self._drafts[conversation_id] = (text, images, shown_problem)
        self._keep(conversation_id, text, tuple(p.image for p in images))

    def _put_in_input(self, draft: tuple[str, list, str]) -> None:
        text, images, problem = draft
        self.input.setPlainText(text)
        self.input.moveCursor(QTextCursor.End)
        self.attachments.put_back(images, problem)

    # -------------------------------------------------------------- actions
    @Slot()
    def send(self) -> None:
        """Asks the question with its images; one that cannot go now stays in the input, text and images,
        with the reason beside it."""
        text, images = self.input.toPlainText().strip(), self.attachments.images()
        if not text and not images:
            return
        conversation = self.current
        edited, put_aside = self._editing.get(conversation.conversation_id, ("", None))
        refusal = images_refusal(self.model.engine, conversation, images, self.attachments.reading, edited)
        if refusal:
            self.attachments.show_problem(refusal)
            return
        before = conversation.messages[-1].message_id if conversation.messages else ""
        try:
            self.commands.ask(conversation.conversation_id, text, self.sampling.settings(),
                              self.sampling.system_prompt(), images, replacing=edited)
        except ImageProblem as problem:  # an image that could not be kept in the data folder
            self.attachments.show_problem(str(problem))
            return
        if conversation.messages and conversation.messages[-1].message_id != before:
            # asked (its reply may have failed at once, saying why)
            self.input.clear()
            self.attachments.clear()
            if put_aside is not None:
                del self._editing[conversation.conversation_id]
                self.transcripts[conversation.conversation_id].mark_editable(editing="")
                self.edit_bar.hide()
                self._put_in_input(put_aside)
            self.keep_draft()  # the question sent is no draft any more
            self._update_buttons()

    # -------------------------------------------------------------- editing the last question
    @Slot()
    def edit_last_question(self) -> None:
        """↑ in the empty input: the conversation's last question to edit, when it has one."""
        if self.order and self.current.last_question_id():
            self.edit_question(self.current.last_question_id())

    @Slot(str)
    def edit_question(self, message_id: str) -> None:
        """The last question's text and images go into the input to be edited, what was there put aside; Send
        asks the edit in its place (its reply goes, as Regenerate's does), Cancel edit or Esc keeps both.
        Nothing changes in the conversation until the edit is sent."""
        conversation = self.current
        if conversation.streaming_message() is not None or message_id != conversation.last_question_id():
            return
        question = conversation.message(message_id)
        if conversation.conversation_id not in self._editing:
            self._editing[conversation.conversation_id] = (message_id,
                                                           (self.input.toPlainText(), *self.attachments.take()))
        else:  # asked again while editing: the question as it was, the edit so far dropped
            self.attachments.clear()
        self._put_in_input((question.text, [], ""))
        self.attachments.add_sources([StoredImage(ref, self.model.images_dir) for ref in question.images])
        self.transcripts[conversation.conversation_id].mark_editable(editing=message_id)
        self.edit_bar.show()
        self._update_buttons()
        self.input.setFocus()

    @Slot()
    def cancel_edit(self) -> None:
        """The edit dropped: the input holds again what it held before Edit."""
        found = self._editing.pop(self.current.conversation_id, None) if self.order else None
        if found is None:
            return
        self.attachments.clear()
        self._put_in_input(found[1])
        self.transcripts[self.current.conversation_id].mark_editable(editing="")
        self.edit_bar.hide()
        self._update_buttons()
        self.input.setFocus()

    @Slot()
    def attach_images(self) -> None:
        """Attach image…: the chosen files are read and checked off the GUI thread."""
        self.attachments.add_sources(self.choose_images(self))

    def dragEnterEvent(self, event) -> None:
        if sources_in(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.attachments.add_sources(sources_in(event.mimeData()))
        event.acceptProposedAction()

    @Slot()
    def regenerate(self) -> None:
        request = self.commands.regenerate(self.current.conversation_id, self.sampling.settings(),
                                           self.sampling.system_prompt())
        if request is not None:
            self._update_buttons()

    @Slot()
    def stop(self) -> None:
        reply = self.current.streaming_message()
        if reply is not None:
            self.commands.abort(reply.request_id)

    def _update_buttons(self) -> None:
        streaming = bool(self.order) and self.current.streaming_message() is not None
        editing = bool(self.order) and self.current.conversation_id in self._editing
        self.stop_button.setEnabled(streaming)
        self.send_button.setEnabled(not streaming)
        asked = bool(self.order) and bool(self.current.last_question_id())
        # nothing to ask again before a first question; while editing, it would ask the question being edited
        self.regenerate_button.setEnabled(asked and not streaming and not editing)

    # -------------------------------------------------------------- what the model reports
    def _on_model_messages_changed(self, conversation_id: str) -> None:
        self.transcripts[conversation_id].sync_soon()
        self._update_buttons()

    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        """Attach image… is offered where the engine can take images (or is not running yet)."""
        refused = text_only(status)
        self.attach_button.setEnabled(not refused)
        self.attach_button.setToolTip(TEXT_ONLY if refused else ATTACH_TIP)
        vision = status.info.vision if status.info is not None else None
        self.attachments.set_max_pixels(vision.max_pixels if vision is not None else None)

    def _waiting_note(self) -> str:
        model = self.model
        return waiting_note(model.engine, model.latest_start_id > model.engine.start_id, model.engine_hold)

    def _on_model_waiting_changed(self, *_status) -> None:
        if self.model.waiting_chat_requests():
            for view in self.transcripts.values():
                view.render_waiting()

    def _on_model_requests_taken(self, conversation_ids: tuple[str, ...]) -> None:
        for conversation_id in conversation_ids:
            if (view := self.transcripts.get(conversation_id)) is not None:
                view.sync_now()

    def _on_model_message_changed(self, conversation_id: str, message_id: str, text_only: bool) -> None:
        self.transcripts[conversation_id].render_message(message_id, text_only)
        if not text_only:
            self._update_buttons()
