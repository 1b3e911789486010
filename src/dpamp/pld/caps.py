"""Caps on epsilon(delta) that hold whatever the grid: where delta is at least the mass at
+inf of a composition of purely atomic parts, epsilon(delta) is at most the largest finite
loss of the composition (Steinke 2022, Prop. 7: delta(eps) = E_P[(1 - e^{eps - L})_+] + P[L = +inf],
whose first term vanishes once eps is above every finite loss)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..core.rounding import weighted_sum_up

#: up to this many steps the mass at +inf is computed in rationals (exact ties such as
#: EpsDelta(1, 0.1) + EpsDelta(2, 0.2) at delta = 0.28 are claimed); beyond, in floats with a
#: relative margin
EXACT_STEPS = 64
_MARGIN = 1e-12


def atomic_cap(dirs, delta: float) -> float:
    """An upper bound on epsilon(delta) for compositions whose every part is purely atomic
    (randomized response, pure DP, (eps, delta) parts, their subsampled versions, enumerated
    random allocation), both directions: the largest of :func:`atomic_caps`."""
    return max(atomic_caps(dirs, delta))


def atomic_caps(dirs, delta: float) -> list[float]:
    """Per direction, an upper bound on its epsilon(delta): the sum of the parts' largest
    finite losses (count times each, summed exactly and rounded up; the losses of subsampled
    atoms, which are rounded, 1e-12 up), when delta is at least the composed mass at +inf,
    1 - prod (1 - a_j)^{c_j}; inf otherwise. A part may state its own (top, a), both from
    above (``cap_terms``)."""
    return [_direction_cap(parts, delta) for parts in dirs]


def _terms(src):
    """(largest finite loss, mass at +inf) of a part, from above, or None (not atomic)."""
    own = getattr(src, "cap_terms", None)
    if own is not None:
        return own()
    loss = getattr(src, "atom_loss", None)
    if loss is None or getattr(src, "cdf", 1) is not None:
        return None
    p = np.asarray(src.atom_p, dtype=float)
    fin = np.isfinite(loss) & (p > 0)
    top = float(loss[fin].max()) if fin.any() else 0.0
    a = float(p[loss == np.inf].sum())
    if not getattr(src, "exact_labels", False):
        # a rounded transformation of the atoms (subsampling): losses and the mass at
        # +inf (q delta, rounded to nearest) moved outwards
        top = top + _MARGIN * abs(top)
        a = a * (1.0 + 4 * 2.0 ** -53)
    return top, a


def composed_inf_mass(terms, upper: bool, margin: float = 0.0) -> Fraction:
    """The mass at +inf of a composition, 1 - prod (1 - a_j)^{c_j} over (a_j, c_j) (a_j < 1,
    floats or Fractions), from above (``upper``) or below: exactly in rationals up to
    EXACT_STEPS steps; beyond, in floats with a relative margin (each log1p and product within
    an ulp or two: a relative error of ~ steps u of the sum, which moves 1 - e^x by
    |x| e^x / (1 - e^x) times as much), plus ``margin`` times the same spread."""
    if not any(a > 0 for a, _ in terms):
        return Fraction(0)
    steps = sum(c for _, c in terms)
    if steps <= EXACT_STEPS:
        keep = Fraction(1)
        for a, c in terms:
            keep *= (1 - Fraction(a)) ** c
        return 1 - keep
    log_keep = sum(c * math.log1p(-float(a)) for a, c in terms)
    mass = -math.expm1(log_keep)
    spread = max(1.0, abs(log_keep) / max(mass, 1e-300))
    r = ((8 * steps + 16) * 2.0 ** -53 + margin) * spread
    return Fraction(min(1.0, mass * (1 + r) + 1e-300) if upper else max(0.0, mass * (1 - r)))


def _direction_cap(parts, delta: float) -> float:
    terms, inf_terms = [], []
    for src, c in parts:
        ta = _terms(src)
        if ta is None:
            return math.inf
        top, a = ta
        terms.append((c, max(top, 0.0)))
        if a >= 1.0:
            return math.inf
        inf_terms.append((a, c))
    # (beyond EXACT_STEPS the float route's margin, and _MARGIN more, as the labels carry)
    if Fraction(delta) < composed_inf_mass(inf_terms, True, _MARGIN):
        return math.inf
    return weighted_sum_up(terms)
