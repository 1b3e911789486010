"""Labelled mixtures of dominating pairs, and a part whose upper and lower bounds come from two
different pairs.

**Labelled mixture.** Given pairs (P_i, Q_i) and weights w_i >= 0 summing to 1, the pair

    P = sum_i w_i (i, P_i),    Q = sum_i w_i (i, Q_i)

(the label i drawn first, with the same law under both, then the output of pair i) has the
privacy loss L = log dP_i/dQ_i on the branch i, so its loss law under P is sum_i w_i (law of
L_i under P_i), the same under Q, and every hockey-stick divergence is H_x(P || Q) =
sum_i w_i H_x(P_i || Q_i) (both orders). It is what joint convexity of the hockey-stick
divergence gives when a mechanism is, conditionally on a random variable whose law does not
depend on the dataset, dominated by pair i with probability w_i (e.g. truncated Poisson
sampling, :mod:`dpamp.amplification.truncation`); it dominates the mechanism, and composes like
any pair. Its cells are the weighted sums of the parts' cells: a weight's relative error and the
one rounding of each sum are charged through ``mass_rel_err``.

**Bracketed part.** :class:`Bracketed` is a PLD part whose pessimistic discretisation is that of
one pair (an upper pair that dominates the mechanism) and whose optimistic one is that of
another (a lower pair that one pair of neighbouring datasets attains). Composed, the upper PMFs
bound the composition from above and the lower ones from below, each as for a single pair. The
two differ by construction, so the bracket does not close as the grid is refined
(``exact = False``: the refinement stops when the gap stops narrowing).
"""
from __future__ import annotations

import math

import numpy as np

from .loss import LossDistribution

__all__ = ["labelled_mixture", "Bracketed"]

_U = 2.0 ** -52


def labelled_mixture(parts, weight_rel_err: float = 0.0, name: str = "") -> LossDistribution:
    """The loss distribution of the labelled mixture of ``parts`` = [(w_i, loss_i)] (module
    docstring), the w_i the branch probabilities (summing to 1 up to ``weight_rel_err``, a
    bound on each weight's relative error, which joins the mass error). Continuous parts: the
    weighted sums of the parts' CDFs and survival functions."""
    parts = [(float(w), d) for w, d in parts if w > 0]
    if not parts:
        raise ValueError("a labelled mixture needs a part of positive weight")
    if len(parts) == 1:
        return parts[0][1]
    ws = np.array([w for w, _ in parts])
    atoms = [(d.atom_loss, w * d.atom_p, w * d.atom_q) for w, d in parts]
    cont = [(w, d) for w, d in parts if d.cdf is not None]
    cdf = sf = None
    if cont:
        def cdf(t):
            return _sum(cont, t, "cdf")

        def sf(t):
            return _sum(cont, t, "sf")
    support = (min(d.support[0] for _, d in cont), max(d.support[1] for _, d in cont)) \
        if cont else (-math.inf, math.inf)
    mean, var = _mix_moments(ws, [(d.mean, d.var) for _, d in parts])
    swaps = [d.swap_moments for _, d in parts]
    swap = _mix_moments(ws, swaps) if all(s is not None for s in swaps) else None
    ups = [d.upper_tail for _, d in cont]
    lows = [d.lower_tail for _, d in cont]
    upper = (lambda tail: max(u(tail) for u in ups)) if cont and all(ups) else None
    lower = (lambda tail: min(lo(tail) for lo in lows)) if cont and all(lows) else None
    # one product and one sum per mass: 2 ulps, the weights' own error, the parts' errors
    rel = max(d.mass_rel_err for _, d in parts) + weight_rel_err + 4 * _U
    return LossDistribution(
        np.concatenate([a[0] for a in atoms]), np.concatenate([a[1] for a in atoms]),
        np.concatenate([a[2] for a in atoms]), cdf, sf, support, False, mean, var,
        name or "labelled(" + ", ".join(f"{w:.3g}: {d.name}" for w, d in parts) + ")",
        upper, lower, swap_moments=swap,
        lower_slack=float(sum(w * d.lower_slack for w, d in parts)), mass_rel_err=rel)


def _sum(parts, t, which: str):
    p = q = 0.0
    for w, d in parts:
        a, b = getattr(d, which)(t)
        p = p + w * np.asarray(a, dtype=float)
        q = q + w * np.asarray(b, dtype=float)
    return p, q


def _mix_moments(ws, moments):
    """(mean, var) of a mixture from its parts' (mean, var) (sizing only)."""
    m = np.array([x[0] for x in moments], dtype=float)
    v = np.array([x[1] for x in moments], dtype=float)
    mean = float(np.sum(ws * m))
    return mean, float(max(np.sum(ws * (v + m * m)) - mean * mean, 0.0))


class Bracketed:
    """A PLD part bounded above by the pair ``upper`` (pessimistic discretisation) and below by
    the pair ``lower`` (optimistic discretisation), both loss distributions of the same order
    (module docstring). Sizing (moments, ranges, mass at +inf) follows the upper pair."""

    attained = True          # the lower pair is one pair of neighbours' (the caller's claim)
    has_lower = True
    exact = False            # the two pairs differ: the bracket has a gap of its own
    gaussian_mu = None       # never merged with exact Gaussian parts

    def __init__(self, upper: LossDistribution, lower: LossDistribution):
        self.upper, self.lower = upper, lower

    @property
    def symmetric(self) -> bool:
        return False

    @property
    def mean(self) -> float:
        return self.upper.mean

    @property
    def var(self) -> float:
        return self.upper.var

    @property
    def inf_mass(self) -> float:
        return self.upper.inf_mass

    @property
    def mass_rel_err(self) -> float:
        return max(self.upper.mass_rel_err, self.lower.mass_rel_err)

    @property
    def lower_slack(self) -> float:
        return self.lower.lower_slack

    def quantile_range(self, tail):
        a, b = self.upper.quantile_range(tail)
        c, d = self.lower.quantile_range(tail)
        return min(a, c), max(b, d)

    def swapped(self) -> "Bracketed":
        return Bracketed(self.upper.swapped(), self.lower.swapped())

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from .discretize import Discretized, discretize
        up = discretize(self.upper, h, jlo, jhi, optimistic=False)
        if not optimistic:
            return up
        lo = discretize(self.lower, h, jlo, jhi, optimistic=True)
        return Discretized(h, jlo, up.upper, up.upper_inf, lo.lower, lo.lower_inf,
                           lo.lower_slack, max(up.rel_err, lo.rel_err))
