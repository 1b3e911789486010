"""Exact delta(eps) and eps(delta) of a composition of purely atomic parts, by enumeration.

Where every part of a direction is a finite list of atoms (randomized response, pure DP,
(eps, delta) parts and their Poisson-subsampled versions, the discrete Laplace, enumerated
epochs of random allocation), the composition of c_j copies of part j is again a finite list.
Its outcomes are the count vectors n_j (how many of the c_j copies drew each finite atom i),

    P[n] = prod_j c_j! / prod_i n_ji! * prod_i p_ji^{n_ji}        (Q[n] likewise),

plus the P-mass a = 1 - prod_j (1 - a_j)^{c_j} at +inf (a_j: part j's); an outcome with a
coordinate at -inf has P-mass 0 and is left out. Every hockey-stick divergence follows
(Steinke 2022, Prop. 7):

    delta(eps) = a + sum_n (P[n] - e^eps Q[n])_+ .

The grids of :mod:`.engine` smear an atom over a cell of width h, so where eps sits within
~1e-9 of a composed atom's loss (delta(eps) has a kink there, and eps(delta) a jump of the
curve's derivative, or at delta = a a jump of eps itself) no grid the engine can afford
narrows the bracket; the sum above settles it in one pass over the outcomes.

Rounding (our construction): each part states its atoms' masses already rounded outward
(``exact_atoms(upper)``: P-masses raised and Q-masses lowered for the upper curve, the reverse
for the lower); the logs of the composed masses carry absolute error bounds (gammaln within
FUNC_ULPS ulps, every other log, product and sum within an ulp of its terms' sizes), applied
outward again; each term (P - x Q)_+ then only grows (upper) or shrinks (lower), and the float
evaluation of the terms and of their sum is charged on top. Where a relative margin moves
nothing (a composed Q-mass below the normal doubles: 0 for the upper curve, 2^-1021 for the
lower; e^eps beyond 709: each upper term taken as its P-mass, the lower's as 0; a part's P-mass
that underflowed: charged at +inf) the bound is absolute. The mass at +inf is composed in
rationals up to :data:`.caps.EXACT_STEPS` steps (exact ties such as delta equal to an
(eps, delta) part's own delta are decided exactly), beyond that with a relative margin.
eps(delta) is read off both curves by bisection: any eps with the upper curve <= delta is an
upper end, any eps with the lower curve > delta a lower end (the true curve is non-increasing),
whatever the bisection's path.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import gammaln

from ..core.multisets import count_vectors
from .caps import composed_inf_mass

_U = 2.0 ** -53
#: ulps of scipy's gammaln at integer arguments (the convention of the allocation grids)
FUNC_ULPS = 16
#: the most composed outcomes enumerated per direction (beyond, the grids alone)
MAX_OUTCOMES = 1 << 16
#: the most (count vector, atom) entries of one part's enumeration
MAX_ENTRIES = 1 << 22
#: bisection steps of eps(delta): the bracket [0, top] shrinks to top 2^-96 (far below any tol)
BISECTIONS = 96
_TINY = 5e-324
#: twice the smallest normal double: a Q-mass below it is held as 0 (upper) or as it (lower)
_NORMAL = 2.0 ** -1021


def part_atoms(src, upper: bool):
    """(a, b, a_inf) of one part, or None where it is not a finite list of atoms stated
    exactly: the finite atoms' P-masses a and Q-masses b (rounded outward for the ``upper``
    or the lower curve) and the P-mass at +inf (from above, resp. below, as a Fraction). Only
    a source whose own class states ``exact_atoms`` qualifies (a wrapper that forwards
    attributes, e.g. a bracketed or unattained part, does not)."""
    own = getattr(type(src), "exact_atoms", None)
    if own is None:
        return None
    return own(src, upper)


def direction_atoms(parts, upper: bool):
    """Per part [(a, b, c)] and the composed mass at +inf (Fraction) of one direction, or None
    (a part not atomic, or too many outcomes)."""
    out, n_out, dropped = [], 1, 0
    for src, c in parts:
        at = part_atoms(src, upper)
        if at is None or c < 1:
            return None
        a, b, a_inf = at
        keep = a > 0
        # an atom whose P-mass (raised) underflowed has P < 5e-324: every outcome drawing it
        # weighs at most c 5e-324 times the rest's total (<= 2); the upper curve carries
        # that at +inf rather than leave it out (it decided an upper end of 0 where the
        # truth was below 1e-321)
        dropped += c * int(np.count_nonzero(~keep))
        a, b = a[keep], b[keep]
        m = a.size
        k = math.comb(c + m - 1, m - 1) if m else 1
        n_out *= k
        if n_out > MAX_OUTCOMES or (c > 1 and k * m > MAX_ENTRIES):
            return None
        out.append((a, b, c, a_inf))
    inf = composed_inf_mass([(ai, c) for _, _, c, ai in out], upper)
    if upper and dropped:
        inf = min(Fraction(1), inf + 2 * dropped * Fraction(_TINY))
    return [(a, b, c) for a, b, c, _ in out], inf


def _part_logs(a, b, c: int, upper: bool):
    """(log P, log Q) per outcome of c copies of one part, each moved outward by its error
    bound (P up and Q down for the upper curve), and their absolute rounding bounds."""
    with np.errstate(divide="ignore"):
        la, lb = np.log(a), np.log(b)
    if c == 1:
        return la, lb, 2 * _U * np.abs(la), 2 * _U * np.where(np.isfinite(lb), np.abs(lb), 0.0)
    n = count_vectors(a.size, c)
    lg = gammaln(n.astype(float) + 1.0)
    coef = math.lgamma(c + 1) - lg.sum(axis=1)
    size = math.lgamma(c + 1) + lg.sum(axis=1)
    m = a.size
    logs = []
    for l in (la, lb):
        fin = np.isfinite(l)
        with np.errstate(invalid="ignore"):
            prod = np.where(n > 0, n * np.where(fin, l, 0.0), 0.0)
        # an atom with Q-mass 0 (underflowed) drawn at least once: Q[n] = 0
        dead = ((n > 0) & ~fin).any(axis=1)
        val = np.where(dead, -np.inf, coef + prod.sum(axis=1))
        # gammaln to FUNC_ULPS ulps; each log, product and the sum of m + 2 terms within
        # (m + 4) ulps of the terms' total size; doubled (pessimistic)
        err = 2 * _U * ((FUNC_ULPS + m + 4) * (size + np.abs(prod).sum(axis=1)))
        logs.append((val, err))
    return logs[0][0], logs[1][0], logs[0][1], logs[1][1]


def composed_masses(part_list, upper: bool):
    """(A, B): the composed P- and Q-masses per outcome of a direction, A raised and B lowered
    by their error bounds (``upper``), else the reverse."""
    lp, lq, ep, eq = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
    for a, b, c in part_list:
        pa, pb, ea, eb = _part_logs(a, b, c, upper)
        with np.errstate(invalid="ignore"):
            lp, lq = np.add.outer(lp, pa).ravel(), np.add.outer(lq, pb).ravel()
        ep, eq = np.add.outer(ep, ea).ravel(), np.add.outer(eq, eb).ravel()
    s = 1.0 if upper else -1.0
    # the sums over parts within (parts + 2) ulps of their size; the exp within 2 ulps
    j = len(part_list) + 2
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        lp_fin = np.where(np.isfinite(lp), np.abs(lp), 0.0)
        lq_fin = np.where(np.isfinite(lq), np.abs(lq), 0.0)
        A = np.exp(lp + s * (ep + j * _U * lp_fin)) * (1 + s * 4 * _U)
        B = np.exp(lq - s * (eq + j * _U * lq_fin)) * (1 - s * 4 * _U)
    # below the normal range the relative margins move nothing (a subnormal keeps its value
    # and is rounded to within 2^-1075, which e^eps scales up to ~1e-17 at eps 700): the
    # upper curve's Q-mass goes to 0 there (a lower bound), the lower curve's up to
    # _NORMAL (an upper bound: the value before the last rounding was below it, and a
    # Q-mass that underflowed to 0 is below it too)
    if upper:
        return A, np.where(np.isnan(B) | (B < _NORMAL), 0.0, B)
    return A, np.where(np.isnan(B), _NORMAL, np.maximum(B, _NORMAL))


class DirectionCurve:
    """The exact hockey-stick curve of one direction, from above and from below."""

    def __init__(self, parts):
        up, low = direction_atoms(parts, True), direction_atoms(parts, False)
        assert up is not None and low is not None
        self.A_up, self.B_up = composed_masses(up[0], True)
        self.A_lo, self.B_lo = composed_masses(low[0], False)
        self.inf_up, self.inf_lo = up[1], low[1]
        with np.errstate(divide="ignore"):
            r = np.log(self.A_up) - np.log(self.B_up)
        fin = np.isfinite(r) & (self.A_up > 0)
        #: above every finite loss of the upper pair (its finite sum is 0 beyond)
        self.top = float(np.max(r[fin])) if fin.any() else 0.0

    def finite_sum(self, eps: float, upper: bool) -> float:
        """sum (A - e^eps B)_+ over the outcomes, from above or from below, with the float
        evaluation charged: each term within 3u (A + x B) plus 4 of the smallest subnormal
        (a subnormal's rounding is absolute), the sum of n non-negative terms within n u of
        its total, and a P-mass that underflowed to 0 (< 5e-324). An outcome whose term is
        clearly negative adds exactly 0, so beyond the largest loss the sum is 0."""
        A, B = (self.A_up, self.B_up) if upper else (self.A_lo, self.B_lo)
        with np.errstate(over="ignore"):
            x = math.exp(eps) if eps < 709.0 else math.inf
        x = x * (1 - 4 * _U) if upper else x * (1 + 4 * _U)
        with np.errstate(over="ignore", invalid="ignore"):
            # beyond e^709 the upper curve takes each term as A (>= (A - x B)_+) rather than
            # -inf (which dropped it: delta 0 where it is ~1); the lower's terms go to 0
            xb = np.where(B > 0, x * B, 0.0) if math.isfinite(x) or not upper else \
                np.zeros_like(B)
            t = A - xb
            e = 3 * _U * (A + xb)
        n = A.size
        if upper:
            keep = t > -e - 4 * _TINY
            s = float(np.sum(np.where(keep, np.maximum(t, 0.0) + e + 4 * _TINY, 0.0)))
            lost = int(np.count_nonzero(A == 0.0))
            return s * (1 + (n + 4) * _U) + lost * _TINY
        keep = t > e + 4 * _TINY
        s = float(np.sum(np.where(keep, t - e - 4 * _TINY, 0.0)))
        return max(0.0, s * (1 - (n + 4) * _U))

    def delta(self, eps: float, upper: bool) -> Fraction:
        """delta(eps) from above or below, as a Fraction (the mass at +inf exactly as bounded)."""
        return (self.inf_up if upper else self.inf_lo) + Fraction(self.finite_sum(eps, upper))


def applies(dirs) -> bool:
    """Whether every part of every direction is atomic with few enough composed outcomes."""
    return all(direction_atoms(d, True) is not None for d in dirs)


def _round(x: Fraction, up: bool) -> float:
    f = float(x)
    if up and Fraction(f) < x:
        return math.nextafter(f, math.inf)
    if not up and Fraction(f) > x:
        return math.nextafter(f, -math.inf)
    return f


def delta_bounds(dirs, epsilon: float) -> tuple[float, float]:
    """(upper, lower) of delta(epsilon), the worst direction's (each direction's lower end is
    a lower end of the worst one's)."""
    curves = [DirectionCurve(d) for d in dirs]
    up = max(_round(c.delta(epsilon, True), True) for c in curves)
    low = max(_round(c.delta(epsilon, False), False) for c in curves)
    return min(up, 1.0), min(max(low, 0.0), up)


def _bisect(pred, lo: float, hi: float) -> tuple[float, float]:
    """(lo, hi) with pred(hi) true and pred(lo) false kept at every step (pred(lo) false and
    pred(hi) true on entry), narrowed BISECTIONS times or to adjacent doubles."""
    for _ in range(BISECTIONS):
        mid = lo + 0.5 * (hi - lo)
        if not lo < mid < hi:
            break
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _epsilon_one(c: DirectionCurve, delta: Fraction) -> tuple[float, float]:
    """(upper, lower) of one direction's eps(delta), eps >= 0."""
    if c.inf_up > delta:
        upper = math.inf
    elif c.delta(0.0, True) <= delta:
        upper = 0.0
    else:
        hi = c.top + 1e-9 * (1.0 + abs(c.top))
        grow = 0
        while not c.delta(hi, True) <= delta and grow < 8:
            hi, grow = 2.0 * hi + 1.0, grow + 1
        upper = _bisect(lambda e: c.delta(e, True) <= delta, 0.0, hi)[1] \
            if c.delta(hi, True) <= delta else math.inf
    if c.inf_lo > delta:
        return upper, math.inf
    if not c.delta(0.0, False) > delta:
        return upper, 0.0
    hi = upper if math.isfinite(upper) else c.top + 1.0
    if c.delta(hi, False) > delta:
        return upper, hi
    return upper, _bisect(lambda e: not c.delta(e, False) > delta, 0.0, hi)[0]


def epsilon_bounds(dirs, delta: float) -> tuple[float, float]:
    """(upper, lower) of eps(delta), the worst direction's."""
    d = Fraction(delta)
    ends = [_epsilon_one(DirectionCurve(p), d) for p in dirs]
    return max(u for u, _ in ends), max(low for _, low in ends)
