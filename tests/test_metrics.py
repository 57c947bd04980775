"""The figures defined once in ``engine/metrics.py``: percentiles, rates, TTFT and gaps."""
from __future__ import annotations

import math

import pytest

from workbench.engine.metrics import (
    decode_tokens_per_s, gap_tokens_per_s, percentile, timings_from_arrivals, tokens_per_s,
)


def test_percentile_picks_a_value_at_the_rounded_index():
    values = [float(v) for v in range(1, 101)]  # 1..100, index = value - 1
    assert percentile(values, 0) == 1 and percentile(values, 100) == 100
    assert percentile(values, 99) == 99  # round(98.01) = 98
    assert percentile(values, 90) == 90  # round(89.1) = 89
    assert percentile(reversed(values), 50) == 51  # round(49.5) = 50: halves go to the even index
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 3.0  # round(1.5) = 2
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 50) == 3.0  # round(2.5) = 2
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_gap_rate_is_the_decode_rate_when_the_first_arrival_is_one_token():
    submitted = 10.0
    arrivals = [(10.5, 1), (10.6, 1), (10.8, 2), (11.0, 1)]  # 5 tokens, the last four over 0.5 s
    ttft, gaps = timings_from_arrivals(submitted, arrivals)
    assert ttft == pytest.approx(0.5)
    assert gaps == pytest.approx([0.1, 0.1, 0.1, 0.2])
    assert gap_tokens_per_s(gaps) == pytest.approx(8.0)
    assert decode_tokens_per_s(5, 10.5, 11.0) == pytest.approx(8.0)
    # A first arrival of three tokens: the gap rate counts from it, the decode rate from the first token.
    _, gaps = timings_from_arrivals(submitted, [(10.5, 3), (11.0, 2)])
    assert gap_tokens_per_s(gaps) == pytest.approx(4.0) and decode_tokens_per_s(5, 10.5, 11.0) == pytest.approx(8.0)


def test_rates_of_nothing():
    assert timings_from_arrivals(1.0, []) == (None, [])
    assert gap_tokens_per_s([]) == 0.0
    assert decode_tokens_per_s(1, 0.0, 1.0) is None
    assert tokens_per_s(100, 0.0) == 0.0 and tokens_per_s(100, 4.0) == 25.0
