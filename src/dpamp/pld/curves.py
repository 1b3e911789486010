"""Both hockey-stick curves of a composition, upper and lower, on a whole grid of epsilon at
once: the input of the trade-off curve (:mod:`dpamp.profiles.tradeoff`).

A query of :mod:`.query` tilts the FFT towards one epsilon, where its error budget is relative;
a trade-off curve reads the curves at every epsilon with absolute accuracy, so here the
composition is untilted (its floating-point budget is then ~1e-14 absolute everywhere, see
:mod:`.engine`). Each direction of the pair is composed with both kinds:

* row 0: the direction as given, H_{e^eps}(P || Q); row 1: its swap, H_{e^eps}(Q || P)
  (the same curve when every part is symmetric, :func:`.query._directions`);
* upper rows: the pessimistic PMFs, upper bounds for every ordered pair of that order
  (Steinke 2022, Prop. 7 on a dominating pair), for eps >= 0;
* lower rows: the optimistic PMFs of the two orders of ONE pair (the swap of each part's pair
  is that pair in the other order), or None where they are not proven
  (:func:`.query._lower_proven`, :func:`.query._has_lower`).
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..core.errors import OutOfReach
from .engine import compose
from .state import BOTH, Bound
from .query import (_align, _directions, _discretize, _exact_parts, _has_lower, _initial_h,
                    _lower_proven, _pure_epsilon)

#: the P-mass the grids may leave out (it moves delta by at most that much)
TAIL = 1e-14
#: the largest absolute gap between the upper and lower rows that stops the refinement
GAP = 1e-5


def curves(mechanism, eps=None, budget: float | None = None, gap: float = GAP,
           points: int = 2001):
    """(eps, upper rows, lower rows or None, h), rows of shape (2, eps.size). ``eps`` (>= 0,
    +inf allowed) defaults to ``points`` equally spaced values from 0 to where both upper rows
    fall below 1e-13 (or the pure epsilon), then the pure epsilon and +inf. The loss grid is
    refined (h halved, at most 4 rounds; 2 with profile-only parts) until the largest gap between
    the rows is <= ``gap`` or a time budget (seconds, only if given) is spent; every round's rows
    are proven bounds."""
    dirs = _directions(mechanism)
    if eps is None:
        eps = _default_eps(dirs, _pure_epsilon(mechanism), points)
    eps = np.asarray(eps, dtype=float)
    lower_ok = _has_lower(dirs) and _lower_proven(dirs)
    pure = _pure_epsilon(mechanism)
    h = min(_initial_h(d, 1e-4) for d in dirs)
    deadline = math.inf if budget is None else time.monotonic() + budget
    best = None
    # profile-only parts have a gap of their own that a finer grid does not close
    rounds = 4 if _exact_parts(dirs) else 2
    for _ in range(rounds):
        try:
            up, low = _rows(dirs, eps, h, lower_ok)
        except MemoryError:
            if best is None:
                raise OutOfReach("the PLD grid the trade-off curve needs exceeds the largest "
                                 "grid; use a coarser tolerance") from None
            break
        if math.isfinite(pure):        # (an infinite one says nothing about eps = inf)
            up = np.where(eps >= pure, 0.0, up)
        if best is not None:
            _, best_up, best_low, _ = best
            up = np.minimum(up, best_up)
            if low is not None:
                low = np.maximum(low, best_low)
        best = (eps, up, low, h)
        if low is None or float(np.max(up - low)) <= gap or time.monotonic() > deadline:
            break
        h = _align(dirs[0], 0.5 * h)
    return best


def _default_eps(dirs, pure, points):
    """0 .. E in ``points`` steps, E where the coarse pessimistic curves come within 1e-13 of
    their mass at infinity."""
    h = 4 * min(_initial_h(d, 1e-3) for d in dirs)
    top = 0.0
    for d in dirs:
        pp = _discretize(d, h, TAIL, optimistic=False)
        up = compose(pp, h, 0.0, bounds=(Bound.UPPER,), target=(0.0, math.log(1e-12))).upper
        assert up is not None                       # the upper bound asked for
        # (above the mass at infinity: an (eps, delta) part keeps delta > 1e-13 for ever)
        top = max(top, up.epsilon(min(up.inf + 1e-13, 1.0)))
    top = min(top, pure, 650.0)
    if not (math.isfinite(top) and top > 0):
        top = min(pure, 650.0) if math.isfinite(pure) and pure > 0 else 50.0
    extra = [pure] if math.isfinite(pure) and pure > top else []
    return np.concatenate([np.linspace(0.0, top, points), extra, [np.inf]])


def _rows(dirs, eps, h, lower_ok):
    bounds = BOTH if lower_ok else (Bound.UPPER,)
    ups, lows = [], []
    for d in dirs:
        pp = _discretize(d, h, TAIL, optimistic=lower_ok)
        pm = compose(pp, h, 0.0, bounds=bounds, target=(0.0, math.log(1e-12)))
        assert pm.upper is not None                 # the upper bound is always asked for
        ups.append(pm.upper.delta(eps))
        if lower_ok:
            assert pm.lower is not None             # and the lower one with lower_ok
            lows.append(pm.lower.delta(eps))
    if len(dirs) == 1:
        ups, lows = ups * 2, lows * 2
    up = np.clip(np.array(ups), 0.0, 1.0)
    low = np.clip(np.array(lows), 0.0, 1.0) if lower_ok else None
    return up, low
