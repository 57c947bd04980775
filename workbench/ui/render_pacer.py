"""How often a streaming reply is drawn again. Each draw lays the whole reply out anew (Markdown in a
word-wrapped label), so its cost grows with the reply: about 35 ms of the GUI thread at 1,000 words
on the CPU box, layout and paint. Drawing at every text flush (20 a second) would then fill the GUI
thread; the pacer spaces the draws so that they take a bounded share of it. No Qt."""
from __future__ import annotations

MIN_INTERVAL_S = 0.05  # a short reply is drawn at every text flush
GUI_SHARE = 0.1  # of the GUI thread's time, at most, for drawing a long reply (layout and paint)


class RenderPacer:
    def __init__(self, min_interval_s: float = MIN_INTERVAL_S, share: float = GUI_SHARE):
        self.min_interval_s, self.share = min_interval_s, share
        self.interval_s = min_interval_s
        self._last = float("-inf")

    def delay_s(self, now: float) -> float:
        """How long a draw asked for at ``now`` should wait: 0 when one may happen at once."""
        return max(0.0, self._last + self.interval_s - now)

    def drawn(self, at: float, cost_s: float) -> None:
        """A draw began at ``at`` and took ``cost_s`` of the GUI thread: the next one waits accordingly."""
        self._last = at
        self.interval_s = max(self.min_interval_s, cost_s / self.share)
