"""The images a question will carry, before it is sent: read and checked off the GUI thread, shown as
removable thumbnails above the chat's input, a bad one named beside the input with its fix.

Images come from the Attach image… dialog, from files or images dropped on the input or the pane, and
from the clipboard (an image, or copied image files). Nothing the user gave is dropped silently: an
image that cannot be used is named with the cause, and the text and the other images stay.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from PySide6.QtCore import QBuffer, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QFileDialog, QHBoxLayout, QLabel, QPlainTextEdit, QScrollArea, QToolButton, QVBoxLayout, QWidget,
)
from superqt.utils import create_worker

from workbench.engine import image_store
from workbench.engine.image_sources import image_from_source
from workbench.engine.images import ImageInput, ImageProblem, ImageRef, read_image
from workbench.model.conversations import Conversation
from workbench.model.engine_status import EngineStatus
from workbench.ui.image_thumbs import THUMB_PX, ImageThumb, remember, scaled_thumbnail

FILE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.gif);;All files (*)"
PROBLEM_STYLE = "color: #a40000;"
TEXT_ONLY = "the model reads text only: pick demo-vl or a vision model"
ATTACH_TIP = "Attach PNG, JPEG, WebP or GIF images to the question (or drop or paste them on the input)"


def choose_image_files(parent: QWidget) -> list[str]:
    files, _ = QFileDialog.getOpenFileNames(parent, "Attach images", "", FILE_FILTER)
    return files


def text_only(status: EngineStatus) -> bool:
    """A running engine that takes no images (one not yet ready may: its question waits for it)."""
    return status.ready and status.info is not None and status.info.vision is None


def images_refusal(status: EngineStatus, conversation: Conversation, images: tuple, reading: bool,
                   replacing: str = "") -> str:
    """Why a question cannot go now with ``images`` ("" : it can); it then stays in the input, whole.
    ``replacing``: the question it is an edit of, whose images do not go with it."""
    if reading:
        return "An image is still being read: send once its thumbnail shows (your text stays here)."
    if not images:
        return ""
    if text_only(status):
        return (f"Not sent: {TEXT_ONLY} (Model menu or the Presets tab), then send again; "
                "your text and images stay here.")
    vision = status.info.vision if status.ready and status.info is not None else None
    kept = conversation.messages
    if replacing:
        kept = kept[:next((i for i, m in enumerate(kept) if m.message_id == replacing), len(kept))]
    earlier = sum(len(message.images) for message in kept)
    if vision is not None and earlier + len(images) > vision.max_images_per_prompt:
        return (f"Not sent: with this chat's {earlier} earlier images it would send {earlier + len(images)}, and "
                f"the engine takes at most {vision.max_images_per_prompt} a prompt. Remove some, or start a new chat.")
    return ""


@dataclass(frozen=True)
class ReadOutcome:
    """One source read off the GUI thread: the image and its thumbnail, or what is wrong with it."""

    image: ImageInput | None
    thumbnail: QImage | None
    problem: str = ""


def source_name(source: str) -> str:
    """What a dropped or chosen path or URL is called: its file name."""
    if "://" in source:
        return unquote(Path(urlsplit(source).path).name) or source
    return Path(source).name or source


@dataclass(frozen=True)
class StoredImage:
    """An image of a question already asked, from the data folder's store (``folder``; None: the data folder's),
    attached again when the question is edited."""

    ref: ImageRef
    folder: Path | None = None


def read_one(source: str | QImage | StoredImage, number: int) -> ReadOutcome:
    """Reads a path or URL (or encodes a pasted picture as PNG, or loads a stored image) and checks it; runs off
    the GUI thread."""
    try:
        if isinstance(source, StoredImage):
            image = image_store.load(source.ref, source.folder)
        elif isinstance(source, QImage):
            image = read_image(png_bytes(source), f"pasted image {number}.png")
        elif "://" in source or source[:5].lower() == "data:":  # a URL dropped from a browser, say
            image = image_from_source(source, Path.home(), source_name(source))
        else:
            image = read_image(file_bytes(Path(source)), Path(source).name)
    except ImageProblem as problem:
        return ReadOutcome(None, None, str(problem))
    return ReadOutcome(image, scaled_thumbnail(QImage.fromData(image.data)))


def file_bytes(path: Path) -> bytes:
    """A chosen or dropped file's bytes; :class:`ImageProblem` naming it, the cause and the fix."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ImageProblem(f"{path.name} is no longer at {path.parent} (moved, renamed or deleted): "
                           "attach it again from where it is now.") from None
    except IsADirectoryError:
        raise ImageProblem(f"{path.name} is a folder, not an image: attach the image files inside it.") from None
    except OSError as error:
        raise ImageProblem(f"{path.name} cannot be read ({error.strerror or error}): check that you may read it, "
                           "or copy it somewhere you can, and attach it again.") from None


def png_bytes(picture: QImage) -> bytes:
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    picture.save(buffer, "PNG")
    return bytes(buffer.data())


def read_sources(sources: list, first_number: int):
    """Yields a :class:`ReadOutcome` for each source, in order (a generator worker's body)."""
    for offset, source in enumerate(sources):
        yield read_one(source, first_number + offset)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")


def sources_in(mime: QMimeData) -> list:
    """The images a drop or a paste holds: copied or dropped files (each one, to be checked as an image)
    and links ending in an image's suffix, else a picture itself unless the paste is text too (a
    spreadsheet's cells come with a picture of them). Nothing: the text goes into the input as always."""
    if mime.hasUrls():
        urls = [url for url in mime.urls() if url.isValid()]
        found = [url.toLocalFile() if url.isLocalFile() else url.toString() for url in urls
                 if url.isLocalFile() or url.path().lower().endswith(IMAGE_SUFFIXES)]
        if found:
            return found
    if mime.hasImage() and not mime.hasText():
        picture = QImage(mime.imageData())
        return [picture] if not picture.isNull() else []
    return []


class ChatInput(QPlainTextEdit):
    """The question's text box: images pasted or dropped on it go to the attachments, text as always. Enter
    asks for the question to be sent, as in the chat apps people know; Shift+Enter starts a new line."""

    images_given = Signal(list)  # the sources, as ``sources_in`` finds them
    send_asked = Signal()
    edit_last_asked = Signal()  # ↑ in an empty input: the last question to edit, as in the chat apps people know
    escape_pressed = Signal()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key_Up and event.modifiers() == Qt.NoModifier and not self.toPlainText():
            self.edit_last_asked.emit()
            event.accept()
            return
        if event.key() == Qt.Key_Escape:
            self.escape_pressed.emit()
        if event.key() in (Qt.Key_Return, Qt.Key_Enter):
            held = event.modifiers() & ~Qt.KeypadModifier
            if held == Qt.NoModifier:
                self.send_asked.emit()
                event.accept()
                return
            if held == Qt.ShiftModifier:
                self.insertPlainText("\n")  # a new line, where Shift+Enter would give a line separator
                event.accept()
                return
        super().keyPressEvent(event)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return bool(sources_in(source)) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        found = sources_in(source)
        if found:
            self.images_given.emit(found)
        else:
            super().insertFromMimeData(source)


class PendingImage(QWidget):
    """A pending attachment: its thumbnail, a remove button, and a note where the processor resizes it."""

    def __init__(self, image: ImageInput, thumbnail: QImage, on_remove):
        super().__init__()
        self.image = image
        self.setObjectName("pendingImage")
        self.thumb = ImageThumb(image.ref, thumbnail)
        self.remove_button = QToolButton(text="×", objectName="removeImageButton")
        self.remove_button.setToolTip(f"Remove {image.ref.name} from this question")
        self.remove_button.clicked.connect(lambda: on_remove(self))
        self.note = QLabel(objectName="pendingImageNote")
        self.note.setWordWrap(True)
        self.note.setFixedWidth(THUMB_PX + 28)
        self.note.setStyleSheet("color: #666; font-size: 10px;")
        self.note.hide()
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.setSpacing(2)
        top.addWidget(self.thumb)
        top.addWidget(self.remove_button, 0, Qt.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        layout.addLayout(top)
        layout.addWidget(self.note)
        layout.addStretch(1)  # the strip is as tall as its tallest: the others keep their note by the picture

    def set_max_pixels(self, max_pixels: int | None) -> None:
        """Says so beside the thumbnail when the model's processor shrinks this image."""
        ref = self.image.ref
        resized = max_pixels is not None and ref.width * ref.height > max_pixels
        self.note.setText("the processor resizes it" if resized else "")
        self.note.setVisible(resized)
        self.note.setToolTip(f"{ref.width} × {ref.height} = {ref.width * ref.height:,} pixels: the model's processor "
                             f"resizes it to at most {max_pixels:,} pixels" if resized else "")


class AttachmentStrip(QWidget):
    """The pending images above the input (hidden while there are none) and the line that names a
    problem beside it. ``images()`` is what Send takes; ``clear()`` once the question is asked."""

    changed = Signal()  # images added or removed
    read_done = Signal()  # every source given so far is read
    # an image read for an owner no longer shown: (that owner, its PendingImage or None, the problem found or "")
    read_elsewhere = Signal(str, object, str)

    def __init__(self):
        super().__init__()
        self._pending: list[PendingImage] = []
        self._queue: list[tuple[str, list]] = []  # (owner, sources) waiting for the reader, in the order given
        self.owner = ""  # whose images the strip shows now (a conversation's id): what is read goes to its owner
        self._reader_owner = ""  # whom the reader reads for
        self._number = 0  # pasted pictures are numbered: "pasted image 3.png"
        self.max_pixels: int | None = None
        self.reader = None  # the worker reading now (None: idle)
        self._dropped_reader = None  # a worker whose images were cleared before it finished
        self.row = QHBoxLayout()
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.addStretch(1)
        inner = QWidget()
        inner.setLayout(self.row)
        self.scroll = QScrollArea(objectName="pendingImages")
        self.scroll.setWidget(inner)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.NoFrame)
        self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.scroll.hide()
        self.problem = QLabel(objectName="attachmentProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(PROBLEM_STYLE)
        self.problem.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.problem.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.scroll)
        layout.addWidget(self.problem)

    # -------------------------------------------------------------- what the question carries
    def images(self) -> tuple[ImageInput, ...]:
        return tuple(pending.image for pending in self._pending)

    @property
    def reading(self) -> bool:
        return self.reader is not None

    def clear(self) -> None:
        """No images, and none still to come: sources given and not yet read are dropped."""
        self._queue = [(owner, sources) for owner, sources in self._queue if owner != self.owner]
        if self._reader_owner == self.owner:
            self._dropped_reader = self.reader  # what it still yields is not shown
        for pending in self._pending:
            self._drop(pending)
        self._pending.clear()
        self.show_problem("")
        self._laid_out()

    def remove(self, pending: PendingImage) -> None:
        if pending in self._pending:
            self._pending.remove(pending)
            self._drop(pending)
            self._laid_out()

    def take(self) -> tuple[list[PendingImage], str]:
        """The pending images and the problem named, out of the strip but kept: a conversation's draft,
        put back with :meth:`put_back` when it is shown again."""
        taken, problem = list(self._pending), self.problem.text()
        for pending in taken:
            self.row.removeWidget(pending)
            pending.hide()
        self._pending.clear()
        self.show_problem("")
        self._laid_out()
        return taken, problem

    def put_back(self, taken: list[PendingImage], problem: str) -> None:
        for pending in taken:
            self._add(pending)  # its size note for the engine now: it may have changed meanwhile
            pending.show()
        self.show_problem(problem)
        self._laid_out()

    def _drop(self, pending: PendingImage) -> None:
        """Out of the strip at once (a deferred delete waits for the event loop's next turn)."""
        self.row.removeWidget(pending)
        pending.hide()
        pending.deleteLater()

    def show_problem(self, text: str) -> None:
        """Names what is wrong beside the input ("" hides it)."""
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def set_max_pixels(self, max_pixels: int | None) -> None:
        self.max_pixels = max_pixels
        for pending in self._pending:
            pending.set_max_pixels(max_pixels)

    # -------------------------------------------------------------- reading, off the GUI thread
    def add_sources(self, sources: list) -> None:
        """Reads and checks paths, URLs or pictures on a worker thread; each shows once read."""
        if sources:
            self.show_problem("")
            self._queue.append((self.owner, list(sources)))
            self._read_next()

    def _read_next(self) -> None:
        if self.reader is not None or not self._queue:
            return
        self._reader_owner, sources = self._queue.pop(0)
        self.reader = create_worker(read_sources, sources, self._number + 1, _start_thread=False,
                                    _connect={"errored": self._on_reader_errored})
        self._number += sum(isinstance(source, QImage) for source in sources)
        self.reader.yielded.connect(self._on_reader_yielded)
        self.reader.finished.connect(self._on_reader_finished)
        self.reader.start()

    def _on_reader_yielded(self, outcome: ReadOutcome) -> None:
        if self.reader is not None and self.reader is self._dropped_reader:
            return
        if self._reader_owner != self.owner:  # attached before another owner's images were shown: its own
            pending = None if outcome.image is None else PendingImage(outcome.image, outcome.thumbnail, self.remove)
            if pending is not None:
                remember(outcome.image.ref, outcome.thumbnail)
            self.read_elsewhere.emit(self._reader_owner, pending, outcome.problem)
            return
        if outcome.image is None:
            shown = self.problem.text()
            self.show_problem(f"{shown}\n{outcome.problem}" if shown else outcome.problem)
            return
        remember(outcome.image.ref, outcome.thumbnail)
        self._add(PendingImage(outcome.image, outcome.thumbnail, self.remove))
        self._laid_out()

    def _add(self, pending: PendingImage) -> None:
        """At the end of the strip, before its stretch, with the engine's size limit noted."""
        pending.set_max_pixels(self.max_pixels)
        self._pending.append(pending)
        self.row.insertWidget(self.row.count() - 1, pending)

    def _on_reader_errored(self, error: Exception) -> None:
        self.show_problem(f"The images could not be read ({error}). Attach them again.")

    def _on_reader_finished(self) -> None:
        self.reader = self._dropped_reader = None
        self._read_next()
        if self.reader is None:
            self.read_done.emit()

    def _laid_out(self) -> None:
        self.scroll.setVisible(bool(self._pending))
        if self._pending:
            height = max(p.sizeHint().height() for p in self._pending)
            self.scroll.setFixedHeight(height + self.scroll.horizontalScrollBar().sizeHint().height() + 2)
        self.changed.emit()
