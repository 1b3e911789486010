"""Timing shared by the benchmarks (each is run as ``python benchmarks/bench_*.py``, so this
module is importable as ``_timing``)."""
from __future__ import annotations

import time


def timed(fn, *args, repeat=1):
    """(fn(*args), the best wall time of ``repeat`` runs in seconds)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, best
