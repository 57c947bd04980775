"""One trial's figures from vLLM's own per-request figures (``RequestFinished``): output tok/s, goodput,
TTFT p50 / p99, TPOT p99, ITL p99, and the goal's value. Goodput counts the requests within the goal's TTFT
and TPOT limits, as ``vllm bench serve --goodput ttft:… tpot:…`` does; TPOT is each request's mean
inter-token gap (vLLM's first to last token time over its tokens after the first), its p99 taken over the
requests. (The field keeps its first name, ``itl_p99_ms``, so that stored searches read back.) ITL p99 is
taken over every gap between two tokens of the trial's requests, as ``vllm bench serve`` reports its p99
ITL: one slow step shows there even where each request's mean stays low."""
from __future__ import annotations

import math

from workbench.engine.metrics import RequestFigures, percentile
from workbench.tune.values import Goal, TrialFigures


class TrialMeasure:
    """Collects a trial's requests as they end. ``offsets_s`` are their arrival offsets: the trial lasts
    from the first arrival to the last request's end (its arrival offset plus vLLM's end-to-end time)."""

    def __init__(self, offsets_s: tuple[float, ...], prefix: str):
        self.offsets_s = offsets_s
        self.prefix = prefix
        self.figures: dict[int, RequestFigures] = {}
        self.errors: dict[int, str] = {}
        self.texts: dict[int, list[str]] = {}
        self.started_s: float | None = None  # the clock of the caller when the workload was sent
        self.gaps_s: list[float] = []  # every gap between two tokens of the finished requests
        self.last_end_s: float | None = None

    def index_of(self, request_id: str) -> int | None:
        head, _, index = request_id.rpartition("-")
        return int(index) if head == self.prefix and index.isdigit() else None

    @property
    def num_ended(self) -> int:
        return len(self.figures) + len(self.errors)

    @property
    def done(self) -> bool:
        return self.num_ended >= len(self.offsets_s)

    def text_arrived(self, index: int, text: str) -> None:
        self.texts.setdefault(index, []).append(text)

    def finished(self, index: int, figures: RequestFigures | None, aborted: bool, now_s: float,
                 gaps_s: tuple[float, ...] = ()) -> None:
        if aborted or figures is None:
            self.errors[index] = "aborted"
        else:
            self.figures[index] = figures
            self.gaps_s.extend(gaps_s)
        self.last_end_s = now_s

    def failed(self, index: int, message: str, now_s: float) -> None:
        self.errors[index] = message
        self.last_end_s = now_s

    def text_of(self, index: int) -> str:
        return "".join(self.texts.get(index, ()))

    def duration_s(self) -> float:
        """First arrival to last end: from vLLM's end-to-end times where it gave them, else the caller's clock."""
        ends = [self.offsets_s[i] + f.e2e_s for i, f in self.figures.items() if f.e2e_s is not None]
        if ends and len(ends) == len(self.figures):
            return max(ends)
        if self.started_s is not None and self.last_end_s is not None:
            return self.last_end_s - self.started_s
        return 0.0

    def result(self, goal: Goal) -> TrialFigures:
        done = list(self.figures.values())
        duration = self.duration_s()
        ttfts = [f.ttft_s for f in done if f.ttft_s is not None]
        itls_ms = [f.itl_s * 1e3 for f in done if f.itl_s is not None]
        good = [f for f in done if meets(f, goal)]
        return TrialFigures(
            output_tokens_per_s=_rate(sum(f.output_tokens for f in done), duration),
            goodput_tokens_per_s=_rate(sum(f.output_tokens for f in good), duration),
            ttft_p50_s=percentile(ttfts, 50) if ttfts else None,
            ttft_p99_s=percentile(ttfts, 99) if ttfts else None,
            itl_p99_ms=percentile(itls_ms, 99) if itls_ms else None,
            gap_p99_ms=percentile(self.gaps_s, 99) * 1e3 if self.gaps_s else None,
            num_requests_done=len(done), num_requests_failed=len(self.errors), duration_s=duration)


def _rate(tokens: int, duration_s: float) -> float:
    return tokens / duration_s if duration_s > 0 else 0.0


def meets(figures: RequestFigures, goal: Goal) -> bool:
    """Whether one request counts toward goodput: its TTFT and its mean inter-token gap within the limits."""
    if goal.ttft_p99_limit_s is not None and (figures.ttft_s is None or figures.ttft_s > goal.ttft_p99_limit_s):
        return False
    itl = figures.itl_s
    return goal.itl_p99_limit_ms is None or itl is None or itl * 1e3 <= goal.itl_p99_limit_ms


def goal_value(figures: TrialFigures, goal: Goal) -> float | None:
    """The figure the goal ranks trials by (None where the trial measured none)."""
    if goal.kind == "ttft":
        return figures.ttft_p99_s
    value = figures.goodput_tokens_per_s if goal.kind == "goodput" else figures.output_tokens_per_s
    return value if figures.num_requests_done else None


def better(a: float, b: float, goal: Goal) -> bool:
    return a > b if goal.maximise else a < b


def agreement(texts: dict[int, str], baseline: dict[int, str]) -> float | None:
    """The share of requests whose greedy output equals the baseline's (None: nothing to compare)."""
    shared = [i for i in texts if i in baseline]
    if not shared:
        return None
    return sum(texts[i] == baseline[i] for i in shared) / len(shared)


def pareto_front(points: list[tuple[int, float, float]]) -> tuple[int, ...]:
    """The numbers of the trials no other beats on both throughput (higher: the goal's, ``Goal.throughput_of``)
    and p99 TTFT (lower); ``points``: (number, tok/s, p99 TTFT s) of the completed trials."""
    front = []
    for number, tps, ttft in points:
        if math.isnan(tps) or math.isnan(ttft):
            continue
        dominated = any(o_tps >= tps and o_ttft <= ttft and (o_tps > tps or o_ttft < ttft)
                        for _, o_tps, o_ttft in points)
        if not dominated:
            front.append(number)
    return tuple(sorted(front))
