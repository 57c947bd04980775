"""A kept batch run's prompts, each read from its stored JSON only when it is first asked for.

A start reads back every kept run; a run of 100,000 rows took most of a second just to turn each row's
JSON into a :class:`BatchPrompt`, before the window could show. The table asks for the rows it shows,
so most are never read at all; one asked for is read once and kept. An export or a tune's workload may read
them on a worker while the table reads on the GUI thread: two reads of one row at once read the same prompt,
and either is kept (a list item is set whole)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Iterator, overload

from workbench.batch.records import BatchPrompt


class StoredPrompts(Sequence):
    """``texts``: each row's stored JSON, in row order; ``read``: one text to its BatchPrompt. A prompt appended
    (none is, to a kept run; kept for the list's contract) is held as it is."""

    def __init__(self, texts: list[str], read: Callable[[str], BatchPrompt]):
        self._texts = texts
        self._read = read
        self._prompts: list[BatchPrompt | None] = [None] * len(texts)

    @property
    def num_read(self) -> int:
        """How many have been read from their JSON so far."""
        return len(self._prompts) - self._prompts.count(None)

    def __len__(self) -> int:
        return len(self._prompts)

    @overload
    def __getitem__(self, index: int) -> BatchPrompt: ...

    @overload
    def __getitem__(self, index: slice) -> list[BatchPrompt]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        prompt = self._prompts[index]
        if prompt is None:
            prompt = self._prompts[index] = self._read(self._texts[index])
        return prompt

    def __iter__(self) -> Iterator[BatchPrompt]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # a list's contract: mutable, unhashable

    def append(self, prompt: BatchPrompt) -> None:
        self._prompts.append(prompt)
        self._texts.append("")
