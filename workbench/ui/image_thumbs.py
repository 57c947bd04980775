"""Thumbnails of images: the small picture a pending attachment or a sent message shows, with the image's
name and size on hover and on a click.

A thumbnail is made once per content (the image's SHA-256) and kept; one made off the GUI thread while
an attachment was read (a ``QImage``, which any thread may make) is there already when its message is
drawn. A restored conversation's images are read from the data folder by :class:`ThumbnailReader`, on a
worker thread (at a reduced size where the format allows), and shown as they come: a window opening
on many photos opens at once.
"""
from __future__ import annotations

from pathlib import Path

import shiboken6
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QImage, QImageReader, QPixmap
from PySide6.QtWidgets import QLabel, QToolTip
from superqt.utils import create_worker

from workbench.engine import image_store
from workbench.engine.images import ImageRef

THUMB_PX = 64  # the longest edge of a thumbnail
_made: dict[str, QImage] = {}  # sha256 -> thumbnail


def scaled_thumbnail(image: QImage, edge_px: int = THUMB_PX) -> QImage:
    """``image`` shrunk to fit ``edge_px`` (never enlarged); safe off the GUI thread."""
    if image.isNull() or max(image.width(), image.height()) <= edge_px:
        return image
    return image.scaled(edge_px, edge_px, Qt.KeepAspectRatio, Qt.SmoothTransformation)


def remember(ref: ImageRef, thumbnail: QImage) -> None:
    _made[ref.sha256] = thumbnail


def cached_thumbnail(ref: ImageRef) -> QImage | None:
    return _made.get(ref.sha256)


def read_thumbnail(path: Path) -> QImage:
    """The picture at ``path`` read at the thumbnail's size (a null image when it cannot be read); safe
    off the GUI thread."""
    reader = QImageReader(str(path))
    size = reader.size()
    if size.isValid() and max(size.width(), size.height()) > THUMB_PX:
        reader.setScaledSize(size.scaled(QSize(THUMB_PX, THUMB_PX), Qt.KeepAspectRatio))
    return scaled_thumbnail(reader.read())


def read_thumbnails(todo: list[tuple[str, Path]]):
    """Yields (sha256, thumbnail) for each; a generator worker's body."""
    for sha256, path in todo:
        yield sha256, read_thumbnail(path)


def size_text(num_bytes: int) -> str:
    if num_bytes >= 1 << 20:
        return f"{num_bytes / (1 << 20):.1f} MB"
    return f"{max(1, round(num_bytes / 1024))} KB"


def tooltip_of(ref: ImageRef) -> str:
    """"cat.png · 640 × 480 PNG · 212 KB": the tooltip of its thumbnail."""
    kind = ref.mime.split("/")[-1].upper()
    return f"{ref.name} · {ref.width} × {ref.height} {kind} · {size_text(ref.num_bytes)}"


class ImageThumb(QLabel):
    """An image's thumbnail; hovering or clicking it names the image and its size. Without a thumbnail
    yet it says so until :meth:`show_thumbnail`."""

    clicked = Signal()

    def __init__(self, ref: ImageRef, thumbnail: QImage | None, note: str = ""):
        super().__init__()
        self.ref, self.note = ref, note
        self.setObjectName("imageThumb")
        self.setFixedSize(THUMB_PX + 4, THUMB_PX + 4)
        self.setAlignment(Qt.AlignCenter)
        self.setStyleSheet("QLabel#imageThumb { border: 1px solid #bbb; background: #f4f4f4; color: #666; }")
        self.setCursor(Qt.PointingHandCursor)
        if thumbnail is None:
            self.setText("…")
            self.setToolTip(tooltip_of(ref))
        else:
            self.show_thumbnail(thumbnail)

    def show_thumbnail(self, thumbnail: QImage) -> None:
        note = self.note
        if thumbnail.isNull():
            self.setText("image\nmissing")
            note = note or "no longer in the data folder: attach it again to send it"
        else:
            self.setPixmap(QPixmap.fromImage(thumbnail))
        self.setToolTip(tooltip_of(self.ref) + (f"\n{note}" if note else ""))

    def mousePressEvent(self, event) -> None:
        QToolTip.showText(event.globalPosition().toPoint(), self.toolTip(), self)
        self.clicked.emit()
        super().mousePressEvent(event)


class ThumbnailReader:
    """Reads the thumbnails of kept images on a worker thread, one read at a time, and hands each to the
    thumbs waiting for it (those deleted meanwhile are skipped)."""

    def __init__(self):
        self._waiting: dict[str, list[ImageThumb]] = {}
        self._todo: list[tuple[str, Path]] = []
        self.worker = None  # the read going on (None: idle)

    def thumb_for(self, ref: ImageRef, images_dir: Path | None = None) -> ImageThumb:
        """A thumb showing the image, now where its thumbnail is made, else once it is read."""
        made = cached_thumbnail(ref)
        thumb = ImageThumb(ref, made)
        if made is None:
            if ref.sha256 not in self._waiting:
                self._todo.append((ref.sha256, image_store.path_of(ref, images_dir)))
            self._waiting.setdefault(ref.sha256, []).append(thumb)
            self._read_next()
        return thumb

    @property
    def reading(self) -> bool:
        return self.worker is not None or bool(self._todo)

    def _read_next(self) -> None:
        if self.worker is not None or not self._todo:
            return
        todo, self._todo = self._todo, []
        self.worker = create_worker(read_thumbnails, todo, _start_thread=False)
        self.worker.yielded.connect(self._on_worker_yielded)
        self.worker.finished.connect(self._on_worker_finished)
        self.worker.start()

    def _on_worker_yielded(self, read: tuple[str, QImage]) -> None:
        sha256, thumbnail = read
        if not thumbnail.isNull():
            _made[sha256] = thumbnail
        for thumb in self._waiting.pop(sha256, []):
            if shiboken6.isValid(thumb):
                thumb.show_thumbnail(thumbnail)

    def _on_worker_finished(self) -> None:
        self.worker = None
        self._read_next()


thumbnails = ThumbnailReader()  # the window's one reader of kept images' thumbnails
