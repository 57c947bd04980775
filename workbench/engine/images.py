"""Images as the workbench passes them around: a reference without the bytes, and the bytes for the engine.

No Qt and no vLLM here: the chat, the batch loader, storage and the engine session all use these values.

- :class:`ImageRef` is what a message, a batch row or a stored record holds: the content's SHA-256
  (the key of the data folder's copy, see :mod:`workbench.engine.image_store`), a name the user knows,
  the format and the size. It never holds the bytes, so a conversation of many images costs nothing
  to keep in memory.
- :class:`ImageInput` is what crosses to the engine: the reference and the file's own bytes, decoded
  by the engine session into the picture the model's processor takes.
- :func:`read_image` checks bytes the way a user would want them checked before anything is sent:
  a file that is not an image, or one cut short, is refused with a message naming the cause and the
  fix (:class:`ImageProblem`).
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

# The formats the chat and the batch take; a GIF is read as its first frame.
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
SUFFIXES = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}


class ImageProblem(ValueError):
    """An image that cannot be used; the message names the image, the cause and the fix."""


@dataclass(frozen=True)
class ImageRef:
    """An image by reference: enough to show it, store it and find its bytes again."""

    sha256: str  # of the file's bytes, as given: the data folder's copy is named by it
    name: str  # what the user knows it by: "cat.png", "line 7, image 2"
    mime: str  # "image/png", "image/jpeg", "image/webp", "image/gif"
    width: int
    height: int
    num_bytes: int

    @property
    def suffix(self) -> str:
        return SUFFIXES.get(self.mime, ".img")

    def describe(self) -> str:
        """"cat.png (640 × 480 PNG)": for tooltips and messages."""
        kind = self.mime.split("/")[-1].upper().replace("JPEG", "JPEG")
        return f"{self.name} ({self.width} × {self.height} {kind})"


@dataclass(frozen=True)
class ImageInput:
    """An image with its bytes: what a request to the engine carries (pickled to the engine client)."""

    ref: ImageRef
    data: bytes


def read_image(data: bytes, name: str) -> ImageInput:
    """Checks ``data`` as an image named ``name`` and returns it with its reference.

    Raises :class:`ImageProblem` for bytes that no supported format reads, for a format the engine
    does not take, and for a file cut short (its pixels cannot all be decoded)."""
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise ImageProblem(f"{name} is empty (0 bytes): choose the image file again, or one that is not empty.")
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt = image.format or ""
            width, height = image.size
            if fmt not in FORMATS:
                raise ImageProblem(f"{name} is a {fmt or 'file of an unknown'} image; the engine takes PNG, "
                                   "JPEG, WebP and GIF. Save it as PNG or JPEG and attach that.")
            image.load()  # decodes the pixels: a truncated file fails here, not in the engine
    except UnidentifiedImageError:
        raise ImageProblem(f"{name} is not an image (no PNG, JPEG, WebP or GIF header in its "
                           f"{len(data):,} bytes). Attach the picture itself, not a document or archive.") from None
    except (OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, ImageProblem):
            raise
        raise ImageProblem(f"{name} is damaged or truncated ({exc}): its file ends before the image does. "
                           "Save or download it again.") from None
    ref = ImageRef(hashlib.sha256(data).hexdigest(), name, FORMATS[fmt], width, height, len(data))
    return ImageInput(ref, bytes(data))


def to_rgb(image: ImageInput):
    """The picture a model's processor takes: a PIL image in RGB (a GIF's first frame)."""
    from PIL import Image

    with Image.open(io.BytesIO(image.data)) as opened:
        opened.seek(0)
        return opened.convert("RGB")


@dataclass(frozen=True)
class ImageSpan:
    """Where one image's tokens sit in a request's prompt, as vLLM's processor placed them."""

    index: int  # the image's place among the request's images, from 0 (the order of ``ChatRequest`` messages)
    offset: int  # first token of the image's placeholder range in the prompt
    length: int  # tokens of that range (image tokens and the model's markers around them)
    mm_hash: str = ""  # vLLM's hash of the image: the same picture has the same hash (prefix cache keys)

    def blocks(self, block_size: int) -> range:
        """Indexes into the request's block table of the blocks this image's tokens are in."""
        return range(self.offset // block_size, (self.offset + self.length - 1) // block_size + 1)
