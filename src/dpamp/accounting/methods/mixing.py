"""Registers the "mixing" accounting method: Balle et al. 2019, Thm 1 on the base's privacy profile.

Applies to a single post-processed mechanism ``base.post_process(kernel)`` (count 1) whose
kernel has some uniform mixing coefficient < 1 and whose base has a privacy profile.
``delta(eps')`` is the amplified profile
(:func:`~dpamp.amplification.mixing.uniform.amplified_profile`); ``epsilon(delta')`` inverts it:
the smallest grid point eps' at which the (proven) amplified profile is <= delta', found by
doubling then refining 33-point grids to a relative 1e-10. The returned eps' satisfies
delta'(eps') <= delta' as evaluated, so it is a valid guarantee even if the computed profile
were not monotone. No lower bound is given.
"""
from __future__ import annotations

import math

import numpy as np

from ...core import roots
from ...core.guarantee import Guarantee
from ..registry import Method, register
from ...amplification.mixing.post_processed import PostProcessed

_SOURCE = ("Balle, Barthe, Gaboardi & Geumlek 2019, Thm 1 (mixing: Dobrushin, "
           "(gamma, eps)-Dobrushin, Doeblin, ultra-mixing) applied to the base privacy profile")


def _applies(mechanism) -> bool:
    if not isinstance(mechanism, PostProcessed) or not mechanism.kernel.mixes():
        return False
    try:
        mechanism.base.profile(np.array([1.0]))
    except (NotImplementedError, ValueError):
        return False
    return True


def _delta(mechanism, epsilon, **_):
    d = float(mechanism.profile(float(epsilon)))
    return Guarantee(epsilon, d, None, "mixing", _SOURCE, "delta")


def invert_profile(profile, delta: float, cap: float = 1e4) -> float:
    """Smallest eps (to a relative 1e-10, rounded up) with profile(eps) <= delta; inf if none
    below ``cap``. ``profile`` is vectorised."""
    if float(profile(np.array([0.0]))[0]) <= delta:
        return 0.0
    lo, hi = roots.expand(lambda e: not float(profile(np.array([e]))[0]) > delta, 0.0, 1.0,
                          limit=cap)
    if hi > cap:
        return math.inf
    while hi - lo > 1e-10 * hi:
        grid = np.linspace(lo, hi, 33)
        vals = np.asarray(profile(grid), dtype=float)
        ok = np.nonzero(vals <= delta)[0]
        i = int(ok[0]) if ok.size else 32  # hi itself is known to satisfy it
        if i == 0:  # lo satisfies it (only possible if lo > 0 was verified earlier): done
            return float(lo)
        lo, hi = float(grid[i - 1]), float(grid[i]) if ok.size else hi
    return float(hi)


def _epsilon(mechanism, delta, **_):
    if delta == 0.0:
        eps = mechanism.pure_epsilon()
        if math.isinf(eps):
            eps = invert_profile(mechanism.profile, 0.0)
    else:
        eps = invert_profile(mechanism.profile, delta)
    return Guarantee(eps, delta, None, "mixing", _SOURCE, "epsilon")


register(Method("mixing", _epsilon, _delta, _applies, rank=9))
