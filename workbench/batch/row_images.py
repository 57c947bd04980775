"""A batch row's images read when the row is sent, on threads of their own.

The rows hold references only (:class:`~workbench.batch.record_images.BatchImage`); the bytes are read
here, just before the row goes to the engine, and let go once it has been sent. Reading is off the caller's
thread: a large file, or an http(s) URL (fetched now, with its timeout), never holds up the window that
drives the run. The caller collects what has been read with :meth:`RowImageReader.take_ready`.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from workbench.batch.record_images import BatchImage
from workbench.engine.image_sources import image_from_source
from workbench.engine.images import ImageInput, ImageProblem

NUM_READERS = 2  # threads that read images; an http fetch waits on the network, not the CPU


def read_row_images(images: tuple[BatchImage, ...]) -> tuple[ImageInput, ...]:
    """The row's images with their bytes, in order; ImageProblem names the first that cannot be read."""
    read = []
    for number, image in enumerate(images, 1):
        try:
            read.append(image_from_source(image.location or image.source, Path.cwd(), image.name))
        except ImageProblem as exc:
            raise ImageProblem(f"image {number} ({image.source}) could not be read when the row was sent: "
                               f"{exc}") from None
    return tuple(read)


class RowImageReader:
    """Reads rows' images on a small pool of threads; started on first use, closed with :meth:`close`."""

    def __init__(self, num_threads: int = NUM_READERS):
        self.num_threads = num_threads
        self._pool: ThreadPoolExecutor | None = None
        self._reading: dict[int, Future] = {}  # row -> its images being read
        self._lock = threading.Lock()
        self._ready: list[int] = []  # rows whose reading has ended, in the order they ended

    @property
    def num_reading(self) -> int:
        return len(self._reading)

    def start(self, row: int, images: tuple[BatchImage, ...]) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.num_threads, thread_name_prefix="batch-images")
        future = self._pool.submit(read_row_images, images)
        self._reading[row] = future
        future.add_done_callback(lambda _future: self._ended(row))

    def _ended(self, row: int) -> None:
        with self._lock:
            self._ready.append(row)

    def has_ready(self) -> bool:
        return bool(self._ready)

    def take_ready(self) -> list[tuple[int, tuple[ImageInput, ...] | ImageProblem]]:
        """Rows whose images have been read since the last call: each row's images, or the problem."""
        with self._lock:
            rows, self._ready = self._ready, []
        taken = []
        for row in rows:
            future = self._reading.pop(row, None)
            if future is None or future.cancelled():
                continue
            problem = future.exception()
            if problem is not None and not isinstance(problem, ImageProblem):
                problem = ImageProblem(f"the row's images could not be read: {problem}")
            taken.append((row, problem if problem is not None else future.result()))
        return taken

    def drop_all(self) -> list[int]:
        """Forgets every row still being read (their images are not wanted any more); returns those rows."""
        rows = list(self._reading)
        for future in self._reading.values():
            future.cancel()
        self._reading.clear()
        with self._lock:
            self._ready.clear()
        return rows

    def close(self) -> None:
        """Lets the threads go once their current reads end (nothing waits for them)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
