"""Pessimistic and optimistic PMFs whose mass rounding does not compound over the steps.

The engine's mass margin (:func:`.engine.mass_margin`) models each discretised mass m~_j as
within a relative r of its exact value m_j (r = 8u/h plus the source's own error: the split of
each cell's masses between its two knots cancels to order h), and a c-fold composition then
within (1 + r)^c - 1: at 10^7 steps and h ~ 1e-7 that is 10 %, the whole bracket.

It need not compound, because the exact pessimistic PMF is a probability measure: its total is
at most 1 (connect the dots moves mass but keeps it; the grid's tails go to its ends or to
+inf), or 1 + the part's lower slack for a truncated pair (its tails are bounds on the masses
left out, :func:`.loss.truncated_atoms`). With |m~_j - m_j| <= r m_j, m_j <= m~_j / (1 - r)
and m_j >= (1 - r) m~_j, so its survival function obeys

    S(t) = sum_{j >= t} m_j <= min(S~(t) / (1 - r),  T - (1 - r) F~(t)),   F~(t) = sum_{j < t} m~_j,

T = min(sum m~ / (1 - r), max(1 + slack, sum m~)) a bound on its total. The computed total
sum m~ is in it for a PMF built from a privacy profile (:func:`.discretize.discretize_profile`:
sampling with replacement, random allocation): that PMF is itself the dominating measure (its
pad keeps its curve above the truth; its masses are not within r of any measure of total 1),
and the clipped noise of its slope jumps puts its total 1e-10..1e-7 above 1, far more than r;
with T = 1 the majorant cut that mass from the lowest bins and the mass at +inf (the upper end
of an (eps, delta) base sampled with replacement fell below its lower end).

The measure m+ whose survival function is that minimum is (1 - r) m~ below a split bin j*,
m~ / (1 - r) above it, and at j* the balance that makes its total T. Convolution with any
non-negative measure keeps S <= S+ (S_{m*v}(t) = int S_m(t - x) dv(x)), so S of the exact
composition is below that of the composed m+, and the hockey-stick curve
int (1 - e^{eps - l})_+ dw(l), a monotone functional, follows (the framework of
:mod:`.discretize`: any polygon above the true curve composes into upper bounds). m+ <= m~ /
(1 - r) bin by bin (j* is the first bin where the minimum switches), so it is never above the
margin's answer but for the margin's own second order (it takes (1 + r)^c, short of
(1 - r)^-c by c r^2, which its 8u/h model's factor covers); where the mass is concentrated
(Poisson sampling at tiny rates) the composed error is the mean shift c r (spread of one step),
not (1 + r)^c.

The optimistic PMF the same way (:func:`minorant`): its exact total is known from below
(:func:`.discretize.lower_total`: 1 minus the P-mass below the grid, whatever the lowering did, less
the top tail a query drops), so the measure with survival max((1 - r) S~, total - F~ / (1 - r))
is below it in the survival order, and its error does not compound either.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .discretize import lower_total
from .engine import PartPMF, mass_margin

_U = 2.0 ** -53
_TINY = float(np.finfo(float).tiny)             # the smallest normal double
#: majorise when the margin would exceed this (below it the margin costs nothing visible, and
#: a query keeps the bits it had)
ABOVE = 1e-7


def majorant(masses: np.ndarray, inf: float, r: float,
             excess: float = 0.0) -> tuple[np.ndarray, float]:
    """(m+, its mass at +inf) of the module docstring for masses m~ >= 0 on the grid and m~ at
    +inf (the top bin), each rounded so that the exact sums keep the inequalities. ``excess``
    bounds how far the exact measure's total may exceed 1 (a truncated pair's tails are bounds
    on the masses left out, not those masses). T is never below the computed total: a PMF built
    from a privacy profile (:func:`.discretize.discretize_profile`) is itself the dominating
    measure (its pad keeps its curve above the truth), and the clipped noise of its slope jumps
    puts its total above 1 by far more than r (7e-10 at h 1e-3, 8e-8 at h 1e-4): T = 1 would
    cut that mass off its lowest bins and its mass at +inf."""
    a = np.append(np.maximum(np.asarray(masses, dtype=float), 0.0), max(float(inf), 0.0))
    # m <= m~ / (1 - r) where r is read relative to the exact masses (the usual reading), which
    # covers m <= (1 + r) m~ too; >= that after the product's rounding (r >= 1: no bound, the
    # rest of the mass all goes to +inf); 0 stays 0 (not 0 x inf)
    r_up = r / (1.0 - r) if r < 1.0 else math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        up = np.where(a > 0.0, a * ((1.0 + r_up) * (1.0 + 4.0 * _U)), 0.0)
    # <= (1 - r) a, and never negative (m >= 0 is all r >= 1 says; a signed m+ would not keep
    # survival dominance through a convolution)
    dn = a * (max(1.0 - r, 0.0) * (1.0 - 4.0 * _U))
    # a subnormal product's rounding is absolute (up to half its ulp, 2.5e-324), which no
    # relative factor covers: one ulp outwards
    up = np.where(up < _TINY, np.nextafter(up, np.inf), up)
    dn = np.where(dn < _TINY, np.maximum(np.nextafter(dn, 0.0), 0.0), dn)
    # (fsum is correctly rounded: 2u more are above the exact sums)
    own = math.fsum(a) * (1.0 + 2.0 * _U)
    total = min(max((1.0 + excess) * (1.0 + 2.0 * _U), own), math.fsum(up) * (1.0 + 4.0 * _U))
    # D(j) = T - sum_{i<j} dn - sum_{i>=j} up grows with j (by up_j - dn_j >= 0); j* is the
    # first j with D(j + 1) >= 0, found on the float sums and confirmed by an exact one below
    pre = np.concatenate([[0.0], np.cumsum(dn)])
    suf = np.concatenate([np.cumsum(up[::-1])[::-1], [0.0]])
    d_next = total - pre[1:] - suf[1:]
    j = int(np.argmax(d_next >= 0.0)) if bool(np.any(d_next >= 0.0)) else a.size - 1
    def balance(i):                                # D(i + 1), exactly rounded
        return math.fsum(np.concatenate([[total], -dn[:i], -up[i + 1:]]))
    star = balance(j)
    if star < 0.0 and j < a.size - 1:
        # the float search landed low: bisect on the exact D, monotone in j (~log2 n sums)
        lo, hi = j, a.size - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if balance(mid) >= 0.0 else (mid, hi)
        j, star = hi, balance(hi)
    # fsum is correctly rounded: a few ulps of T more keep the exact total >= T
    star = max(star, 0.0) + 4.0 * _U * total
    out = np.concatenate([dn[:j], [star], up[j + 1:]])
    return out[:-1], float(out[-1])


def minorant(masses: np.ndarray, inf: float, r: float, total: float) -> tuple[np.ndarray, float]:
    """(m-, its mass at +inf): the optimistic PMF's counterpart of :func:`majorant`. The exact
    optimistic PMF m has total >= ``total`` (:func:`.discretize.lower_total`) and m_j >= (1 - r)
    m~_j, m_j <= m~_j / (1 - r), so its survival function obeys

        S(t) >= max((1 - r) S~(t),  total - F~(t) / (1 - r)),

    and the measure with that survival function, m~ / (1 - r) below a split bin j*, (1 - r) m~
    above it and at j* the balance to ``total``, is below m in the survival order: every
    composition of it bounds that of m from below (the argument of :func:`majorant`, reversed).
    Any j* with a non-negative balance is valid; the last such one is taken (the tightest)."""
    a = np.append(np.maximum(np.asarray(masses, dtype=float), 0.0), max(float(inf), 0.0))
    dn = a * (max(1.0 - r, 0.0) * (1.0 - 4.0 * _U))
    dn = np.where(dn < _TINY, np.maximum(np.nextafter(dn, 0.0), 0.0), dn)
    if not (r < 1.0 and total > 0.0):
        return dn[:-1], float(dn[-1])
    with np.errstate(over="ignore"):
        up = a * ((1.0 + r / (1.0 - r)) * (1.0 + 4.0 * _U))
    up = np.where(up < _TINY, np.nextafter(up, np.inf), up)

    # B(j) = total - sum_{i<j} up - sum_{i>=j} dn falls with j (by up_j - dn_j >= 0); the
    # balance at j is B(j) + dn_j >= 0 where B(j) >= 0
    def b_exact(j):
        return math.fsum(np.concatenate([[total], -up[:j], -dn[j:]]))
    if b_exact(0) < 0.0:
        return dn[:-1], float(dn[-1])
    pre = np.concatenate([[0.0], np.cumsum(up)])
    suf = np.concatenate([np.cumsum(dn[::-1])[::-1], [0.0]])
    ok = np.flatnonzero(total - pre[:-1] - suf[:-1] >= 0.0)
    j = int(ok[-1]) if ok.size else 0
    if b_exact(j) < 0.0:
        # the float guess landed high: bisect on the exact B, falling in j (B(0) >= 0)
        lo, hi = 0, j
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if b_exact(mid) >= 0.0 else (lo, mid)
        j = lo
    # the balance, rounded down (fsum is correctly rounded: a few ulps of total less)
    star = math.fsum(np.concatenate([[total], -up[:j], -dn[j + 1:]])) - 4.0 * _U * total
    out = np.concatenate([up[:j], [max(star, 0.0)], dn[j + 1:]])
    return out[:-1], float(out[-1])


def majorise(pparts: list[PartPMF], h: float) -> list[PartPMF]:
    """The parts with their upper PMFs replaced by majorants (``Discretized.majorised``: the
    engine's margin then leaves them out of the upper bound's), where the margin of the whole
    composition exceeds ABOVE; else the parts as they are."""
    if mass_margin(pparts, h) <= ABOVE:
        return pparts
    out = []
    for p in pparts:
        r = p.d.mass_error(h)
        # (the part's lower slack holds a truncated pair's tails, tail_p + tail_q: at least
        # how far the exact pessimistic PMF's total, in either order and after Poisson
        # subsampling, may exceed 1; it may hold the lower PMF's clipped mass too: only wider)
        up, inf = majorant(p.d.upper, p.d.upper_inf, r, p.d.lower_slack)
        d = dataclasses.replace(p.d, upper=up, upper_inf=inf, majorised=True)
        total = lower_total(p.d, h)
        if total is not None:
            low, low_inf = minorant(p.d.lower, p.d.lower_inf, r, total)
            d = dataclasses.replace(d, lower=low, lower_inf=low_inf, minorised=True)
        out.append(PartPMF(d, p.count))
    return out


__all__ = ["majorant", "minorant", "majorise", "ABOVE"]
