"""Timing shared by the benchmarks (each is run as ``python benchmarks/bench_*.py``, so this
module is importable as ``_timing``)."""
from __future__ import annotations

import sys
import time


def timed(fn, *args, repeat=1):
    """(fn(*args), the best wall time of ``repeat`` runs in seconds)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, best


def clock(fn, *args):
    """(fn(*args), CPU seconds (process_time, all threads), wall seconds)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.process_time() - c0, time.perf_counter() - t0


def clear_caches():
    """Every cache of dpamp's answers, so that each run is cold: the PLD caches, the mixture's
    RDP memo, and every functools cache of a loaded dpamp module (e.g. the truncated pairs)."""
    from dpamp.mechanisms import mixture_of_gaussians as mog
    from dpamp.pld import cache
    for c in list(cache._ALL):
        c.store.clear()
    mog._CACHE.clear()
    for name, mod in list(sys.modules.items()):
        if name.startswith("dpamp.") and mod is not None:
            for obj in list(vars(mod).values()):
                if callable(getattr(obj, "cache_clear", None)) and \
                        getattr(obj, "__module__", "") == name:
                    obj.cache_clear()
