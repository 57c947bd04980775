"""Thumbnails of images: the small picture a pending attachment or a sent message shows, with the image's
name and size on hover and on a click.

A thumbnail is made once per content (the image's SHA-256) and kept; one made off the GUI thread while
an attachment was read (a ``QImage``, which any thread may make) is there already when its message is
drawn, so only a restored conversation's images are read here, at a reduced size where the format allows.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QImage, QImageReader, QPixmap
from PySide6.QtWidgets import QLabel, QToolTip

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


def thumbnail_of(ref: ImageRef, images_dir: Path | None = None) -> QImage:
    """The thumbnail of a kept image (a null image when the store no longer has it)."""
    made = _made.get(ref.sha256)
    if made is None:
        reader = QImageReader(str(image_store.path_of(ref, images_dir)))
        size = reader.size()
        if size.isValid() and max(size.width(), size.height()) > THUMB_PX:
            reader.setScaledSize(size.scaled(QSize(THUMB_PX, THUMB_PX), Qt.KeepAspectRatio))
        made = scaled_thumbnail(reader.read())
        if not made.isNull():
            remember(ref, made)
    return made


def size_text(num_bytes: int) -> str:
    if num_bytes >= 1 << 20:
        return f"{num_bytes / (1 << 20):.1f} MB"
    return f"{max(1, round(num_bytes / 1024))} KB"


def tooltip_of(ref: ImageRef) -> str:
    """"cat.png · 640 × 480 PNG · 212 KB": the tooltip of its thumbnail."""
    kind = ref.mime.split("/")[-1].upper()
    return f"{ref.name} · {ref.width} × {ref.height} {kind} · {size_text(ref.num_bytes)}"


class ImageThumb(QLabel):
    """An image's thumbnail; hovering or clicking it names the image and its size."""

    clicked = Signal()

    def __init__(self, ref: ImageRef, thumbnail: QImage, note: str = ""):
        super().__init__()
        self.ref = ref
        self.setObjectName("imageThumb")
        self.setFixedSize(THUMB_PX + 4, THUMB_PX + 4)
        self.setAlignment(Qt.AlignCenter)
        self.setStyleSheet("QLabel#imageThumb { border: 1px solid #bbb; background: #f4f4f4; }")
        if thumbnail.isNull():
            self.setText("image\nmissing")
            note = note or "no longer in the data folder: attach it again to send it"
        else:
            self.setPixmap(QPixmap.fromImage(thumbnail))
        self.setToolTip(tooltip_of(ref) + (f"\n{note}" if note else ""))
        self.setCursor(Qt.PointingHandCursor)

    def mousePressEvent(self, event) -> None:
        QToolTip.showText(event.globalPosition().toPoint(), self.toolTip(), self)
        self.clicked.emit()
        super().mousePressEvent(event)
