"""Rows ranked by a text column, as Python's stable sort ranks them, and kept up while a run streams.

Ranking 100,000 outputs takes Python's sort some 60 to 80 ms; a table sorted by Output during a run asked for it
at every refresh (4 a second). :class:`TextOrder` sorts once, then places again only the rows whose text changed
since its last look (a run streams into a few hundred rows at a time): a bisect each, not a sort of all.
"""
from __future__ import annotations

from bisect import bisect_left

import numpy as np

from workbench.batch.results import BatchResults

RESORT_SHARE = 8  # more than 1/8 of the rows changed: sorting all again is as quick as placing each


def python_ranks(values: list) -> np.ndarray:
    """Each value's rank in Python's (stable) sort: a fixed-width numpy string array of 100,000 outputs took as
    many bytes as the longest output times 400,000 (gigabytes), and seconds to fill."""
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[sorted(range(len(values)), key=values.__getitem__)] = np.arange(len(values))
    return ranks


class TextOrder:
    """The rows of one :class:`BatchResults` in the order of their output texts (ties in row order), exactly
    as :func:`python_ranks` of all the texts would rank them."""

    def __init__(self):
        self.results: BatchResults | None = None
        self.version = -1  # the results' version when last ranked
        self.ordered = np.empty(0, dtype=np.int64)  # results rows, by their text
        self.placed = 0  # rows placed again at the last look, not sorted (for tests and figures)

    def ranks(self, results: BatchResults) -> np.ndarray:
        """Each row's rank by its output text."""
        if results is not self.results or results.version < self.version:
            self.results, self.version = results, -1
        if results.version != self.version:
            self._update(results)
        ranks = np.empty(len(self.ordered), dtype=np.int64)
        ranks[self.ordered] = np.arange(len(self.ordered))
        return ranks

    def _update(self, results: BatchResults) -> None:
        texts, total = results.texts, results.num_rows
        changed = results.texts_changed_since(self.version) if self.version >= 0 else None
        self.version = results.version
        if changed is None or len(changed) * RESORT_SHARE > total:
            self.ordered = np.array(sorted(range(total), key=texts.__getitem__), dtype=np.int64)
            self.placed = 0
            return

        def key(row) -> tuple[str, int]:
            return texts[row], int(row)

        if not len(changed):
            self.placed = 0
            return
        stays = np.ones(total, dtype=bool)
        stays[changed] = False
        kept = self.ordered[stays[self.ordered]]
        moved = sorted(changed.tolist(), key=key)
        self.ordered = np.insert(kept, [bisect_left(kept, key(row), key=key) for row in moved], moved)
        self.placed = len(moved)
