"""The data folder's copies of the images a user attached: one file per content, named by its SHA-256.

Why a copy and a hash rather than the bytes in the database: an attached photo is megabytes, and the
database's writer commits every 0.5 s in the window's own process (a WAL growing by each image would
slow every commit and the restore of every conversation); the same image attached twice, or to a
regenerated reply, is kept once; and a conversation stays whole when the user moves or deletes the file
they attached from. The database keeps the :class:`~workbench.engine.images.ImageRef` (hash, name,
format, size); exports copy the files next to the conversation.

A copy is written to a temporary name and renamed, so a kill mid-write leaves no half image under a
hash's name. No Qt, no vLLM.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from workbench.engine.images import ImageInput, ImageProblem, ImageRef
from workbench.paths import data_dir


def images_dir() -> Path:
    return data_dir() / "images"


def path_of(ref: ImageRef, folder: Path | None = None) -> Path:
    return (folder or images_dir()) / f"{ref.sha256}{ref.suffix}"


def keep(image: ImageInput, folder: Path | None = None) -> Path:
    """Copies the image into the store (nothing is written when that content is already there)."""
    path = path_of(image.ref, folder)
    if path.exists() and path.stat().st_size == image.ref.num_bytes:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".part-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(image.data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load(ref: ImageRef, folder: Path | None = None) -> ImageInput:
    """The stored image's bytes; :class:`ImageProblem` naming the file when it is gone."""
    path = path_of(ref, folder)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageProblem(f"{ref.name} is no longer in the data folder ({path}: {exc.strerror}). "
                           "Attach it again.") from None
    return ImageInput(ref, data)
