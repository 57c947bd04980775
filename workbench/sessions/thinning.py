"""Series thinned for drawing a picture of them: at most ``max_points`` per run, each stretch of points
replaced by its minimum and its maximum (peaks kept, as pyqtgraph's "peak" downsampling keeps them).
The CSV keeps every point; only pictures are drawn from the thinned series."""
from __future__ import annotations

import warnings

import numpy as np

MAX_POINTS = 800  # about a point per pixel of a 900-pixel picture: min and max of 400 stretches


def _thin_part(part: dict[str, np.ndarray], max_points: int) -> dict[str, np.ndarray]:
    n = len(part["t"])
    if n <= max_points:
        return part
    num_buckets = max_points // 2
    edges = np.linspace(0, n, num_buckets + 1).astype(int)
    thinned = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a stretch of NaN stays NaN
        for name, values in part.items():
            if name == "t":
                pair = (values[edges[:-1]], values[edges[1:] - 1])
            else:
                pair = (np.fmin.reduceat(values, edges[:-1]), np.fmax.reduceat(values, edges[:-1]))
            thinned[name] = np.column_stack(pair).ravel()
    return thinned


def thin_series(series: dict[str, np.ndarray], max_points: int = MAX_POINTS) -> dict[str, np.ndarray]:
    """``series`` with each run (the stretches between rows whose ``t`` is NaN) thinned to ``max_points``."""
    if not series or len(series["t"]) <= max_points:
        return series
    t = series["t"]
    gaps = np.flatnonzero(np.isnan(t))
    bounds = [-1, *gaps, len(t)]
    parts = []
    for start, stop in zip(bounds, bounds[1:]):
        if stop - start > 1:
            if parts:
                parts.append({name: np.array([np.nan]) for name in series})
            parts.append(_thin_part({name: values[start + 1:stop] for name, values in series.items()}, max_points))
    return {name: np.concatenate([part[name] for part in parts]) for name in series}
