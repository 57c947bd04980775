"""Time series kept in fixed-size numpy rings, and the immutable values they publish. No Qt.

The engine thread (statistics) and the telemetry thread (memory) append rows; the GUI reads only
the published :class:`Series`, whose arrays are read-only copies, so it may keep them as long as it likes.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Series:
    """Named columns of equal length, oldest sample first; ``t`` is time.monotonic() seconds."""

    version: int  # grows by one with each appended row
    columns: Mapping[str, np.ndarray]  # read-only float64 arrays

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return len(self.columns["t"]) if "t" in self.columns else 0

    def last(self, name: str, default: float = float("nan")) -> float:
        column = self.columns.get(name)
        return float(column[-1]) if column is not None and len(column) else default


EMPTY_SERIES = Series(0, MappingProxyType({}))


class RingBuffer:
    """Rows of float64 samples under fixed column names; once full, the oldest row drops out."""

    def __init__(self, names: Sequence[str], capacity: int):
        self.names = tuple(names)
        self.capacity = capacity
        self._data = np.full((len(self.names), capacity), np.nan)
        self._next = 0  # where the next row goes
        self._count = 0
        self.version = 0

    def __len__(self) -> int:
        return self._count

    def append(self, row: Sequence[float]) -> None:
        """One sample per column, in the order of ``names``."""
        self._data[:, self._next] = row
        self._next = (self._next + 1) % self.capacity
        self._count = min(self._count + 1, self.capacity)
        self.version += 1

    def publish(self) -> Series:
        """The rows so far, oldest first, as read-only copies."""
        if self._count < self.capacity:
            block = self._data[:, :self._count].copy()
        else:
            block = np.concatenate([self._data[:, self._next:], self._data[:, :self._next]], axis=1)
        block.setflags(write=False)
        return Series(self.version, MappingProxyType(dict(zip(self.names, block))))
