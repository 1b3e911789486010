"""The privacy profile delta(eps) of a mechanism or composition, for many eps at once, off
one composed PLD (Steinke 2022, Steinke 2022, Prop. 7, on the pessimistic and optimistic PMFs)."""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from .query import (MAX_ROUNDS, _CACHE, _directions, _lower_proven, _pure_epsilon,
                    _query_key, delta_bracket)


def pld_profile(mechanism, epsilon):
    """Privacy profile delta(eps) of any mechanism or composition with a PLD: proven upper bounds
    (vectorised; Steinke 2022, Prop. 7 on the composed pessimistic PLD). Lower bounds:
    ``pld_profile_bounds``."""
    return pld_profile_bounds(mechanism, epsilon)[0]


def pld_profile_bounds(mechanism, epsilon):
    """(upper, lower) arrays of delta(eps) for every eps (each eps is accounted with the tilt
    of the median eps; every value is a valid bound, tightest near that eps)."""
    e = V.reals("epsilon", epsilon, low=0.0)
    flat = np.atleast_1d(e).ravel()
    fin = flat[np.isfinite(flat)]
    mid = float(np.median(fin)) if fin.size else 0.0
    pure = _pure_epsilon(mechanism)
    if pure == 0.0:
        zero = np.zeros(np.shape(e))
        return zero, zero                         # no privacy loss at all
    if mid >= pure:
        mid = 0.5 * pure if math.isfinite(pure) else mid   # (delta is 0 beyond pure anyway)
    delta_bracket(mechanism, mid)               # fills the cache with a good state
    state = _CACHE.get(_query_key(mechanism, "delta", mid, None, MAX_ROUNDS))
    ups = np.max([d.pmf.upper.delta(flat) for d in state.dirs], axis=0)
    with_low = [d.pmf.lower.delta(flat) for d in state.dirs if d.pmf.lower is not None]
    proven = with_low and _lower_proven(_directions(mechanism))
    lows = np.max(with_low, axis=0) if proven else np.zeros(flat.shape)
    ups = np.where(np.isinf(flat), np.max([d.pmf.upper.inf for d in state.dirs]), ups)
    ups = np.where(flat >= pure, 0.0, ups)      # the loss never exceeds the pure epsilon
    lows = np.where(flat >= pure, 0.0, lows)
    return ups.reshape(np.shape(e)), lows.reshape(np.shape(e))
