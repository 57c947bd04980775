"""A batch file's images checked as its records are read, so that a missing or broken image is named with
its line before the run, and the rest run.

Only references are kept (:class:`~workbench.batch.record_images.BatchImage`: the source and its
:class:`~workbench.engine.images.ImageRef`): the bytes are read again when the row is sent, so a file of
100,000 image rows holds no image in memory. A file that many rows name is read once. An image given
inside the record (a ``data:`` URL, a table's image bytes) is copied into the data folder's image store,
which the row then points at. An http(s) URL is not fetched here: it is fetched when its row is sent, and
the row fails with the reason if it cannot be.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from workbench.batch.record_images import BatchImage, abridged
from workbench.engine import image_store
from workbench.engine.image_sources import image_from_source, source_path
from workbench.engine.images import ImageProblem, ImageRef, read_image


class ImageChecker:
    """Checks the images of one file's records; ``base_dir``: where relative paths are read from."""

    def __init__(self, base_dir: str | Path, unit: str = "line", store: Path | None = None):
        self.base_dir, self.unit, self.store = Path(base_dir), unit, store
        self._seen: dict[str, tuple[ImageRef, str]] = {}  # a path as written -> its reference, the file

    def check_all(self, placed, line_no: int) -> tuple[BatchImage, ...]:
        """Each (turn, source) of a record as a checked image; ImageProblem names the image that is not."""
        images = []
        for number, (turn, source) in enumerate(placed, 1):
            name = f"{self.unit} {line_no}, image {number}"
            try:
                images.append(self.check(source, turn, name))
            except ImageProblem as exc:
                reason = str(exc).removeprefix(f"{name}: ")
                raise ImageProblem(f"image {number} ({_shown(source)}): {reason}") from None
        return tuple(images)

    def check(self, source, turn: int, name: str) -> BatchImage:
        """One image: read and checked (a local file once), or left to be fetched when sent (a URL)."""
        if isinstance(source, bytes):
            return self._kept(read_image(source, name), abridged(source), turn)
        scheme = urlsplit(source).scheme.lower() if "://" in source or source[:5].lower() == "data:" else ""
        if scheme in ("http", "https"):
            if not urlsplit(source).netloc:
                raise ImageProblem(f"{source} has no host: write the whole address, https://host/path/image.png")
            return BatchImage(source, turn, None, source)
        if scheme == "data":
            return self._kept(image_from_source(source, self.base_dir, name), abridged(source), turn)
        return self._local(source, turn)

    def _local(self, source: str, turn: int) -> BatchImage:
        """A path or file:// URL: read and checked once for all the rows of the file that name it."""
        seen = self._seen.get(source)
        if seen is None:
            path = source_path(source, self.base_dir)
            try:
                ref = image_from_source(source, self.base_dir, path.name).ref
            except ImageProblem as exc:  # check_all names the image: its own name is not repeated
                raise ImageProblem(str(exc).removeprefix(f"{path.name}: ")) from None
            seen = self._seen[source] = (ref, str(path))
        return BatchImage(source, turn, *seen)

    def _kept(self, image, source: str, turn: int) -> BatchImage:
        """An image given inside the record: a copy in the data folder, which the row reads when sent."""
        try:
            path = image_store.keep(image, self.store)
        except OSError as exc:
            raise ImageProblem(f"{image.ref.name} could not be copied into the data folder "
                               f"({exc.strerror or exc}): free some space there, then open the file again.") from None
        return BatchImage(source, turn, image.ref, str(path))


def _shown(source) -> str:
    text = abridged(source)
    return text if len(text) <= 80 else text[:60] + "…" + text[-16:]

