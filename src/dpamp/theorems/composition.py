"""Composition theorems for (epsilon, delta)-DP guarantees (Steinke 2022).

Pure functions of the parts' guarantees; they know nothing about mechanisms. Parts are given as
arrays ``epsilons`` / ``deltas`` with optional ``counts`` (how many times each part runs), all
broadcast together, so a 10^6-fold homogeneous composition is ``counts=10**6``, not a long array.

| function              | source                 | statement                                        |
|-----------------------|------------------------|--------------------------------------------------|
| ``basic``             | Steinke 2022, Thm 1 (+ Sec. 2)   | (sum eps_j, sum delta_j)                         |
| ``advanced_pure``     | Steinke 2022, Thm 18             | eps = S/2 + sqrt(2 log(1/delta) S), S = sum eps_j^2 |
| ``advanced``          | Steinke 2022, Thm 22             | min{sum eps_j, S/2 + sqrt(2 log(1/delta') S)}, delta' = delta - sum delta_j |
| ``advanced_delta``    | Steinke 2022, Thm 22, inverted   | smallest delta Thm 22 gives for a target eps     |
| ``kov_delta``         | Steinke 2022, Sec. 7 [KOV15]     | optimal delta(eps) of k-fold (eps0, delta0)-DP    |
| ``kov_epsilon``       | Steinke 2022, Sec. 7, bisection  | optimal eps(delta) of k-fold (eps0, delta0)-DP    |

Optimal composition of *heterogeneous* (eps_j, delta_j) guarantees is #P-complete (Murtagh and
Vadhan, cited in Steinke 2022, Sec. 7); it is left to the PLD of the worst-case mechanisms
(:class:`dpamp.EpsDelta`), which approximates it with certified bounds.
"""
from __future__ import annotations

import math
from fractions import Fraction
from numbers import Real
from typing import cast

import numpy as np
from scipy.special import gammaln

from ..core import validate as V
from ..core.rounding import TINY, ulps_up, weighted_sum_up

__all__ = ["basic", "advanced_pure", "advanced", "advanced_delta", "kov_delta", "kov_epsilon",
           "kov_log_pmf", "KOV_MAX_K"]

def _parts(epsilons, deltas=0.0, counts=1):
    """Broadcast (eps_j, delta_j, count_j) and validate them at the boundary."""
    e = V.reals("epsilons", epsilons, low=0.0, allow_inf=True)
    d = V.reals("deltas", deltas, low=0.0)
    if (d > 1).any():
        raise ValueError(f"deltas must be in [0, 1] (got {d[d > 1].ravel()[0]:g})")
    c = V.reals("counts", counts, low=0.0, allow_inf=False)
    if not np.all(c == np.floor(c)):
        raise ValueError("counts must be non-negative integers (got "
                         f"{c[c != np.floor(c)].ravel()[0]:g})")
    e, d, c = np.broadcast_arrays(e, d, c)
    if e.size == 0:
        raise ValueError("epsilons must contain at least one part")
    return e.ravel(), d.ravel(), c.ravel()


def _weighted_sum(x, c):
    """sum_j c_j x_j summed exactly and rounded up (a float sum can fall below the exact one:
    3 x 0.7 gives 2.0999999999999996); a part that runs zero times costs nothing (0 x inf)."""
    return weighted_sum_up((int(cj), float(xj)) for xj, cj in zip(np.ravel(x), np.ravel(c))
                           if cj > 0)


def _exact_delta_sum(d, c) -> Fraction:
    """sum_j count_j delta_j in exact rational arithmetic: the delta budget is compared with the
    user's delta, and a float sum can land below it (10 x 1e-6 sums to 9.999999999999999e-06)."""
    return sum((Fraction(float(dj)) * int(cj) for dj, cj in zip(d, c) if cj > 0 and dj > 0),
               Fraction(0))


def _float_up(x: Fraction) -> float:
    """The smallest float >= x (x >= 0)."""
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def basic(epsilons, deltas=0.0, counts=1) -> tuple[float, float]:
    """Basic composition (Steinke 2022, Thm 1, extended to approximate DP as noted in Steinke 2022,
    Sec. 2): the composition of (eps_j, delta_j)-DP mechanisms is (sum_j eps_j, sum_j delta_j)-DP.
    Returns (epsilon, delta); delta is capped at 1."""
    e, d, c = _parts(epsilons, deltas, counts)
    return _weighted_sum(e, c), min(1.0, _float_up(_exact_delta_sum(d, c)))


def advanced_pure(epsilons, delta: float, counts=1) -> float:
    """Advanced composition from pure DP (Steinke 2022, Thm 18): eps_j-DP parts compose to (eps,
    delta)-DP

        eps = (1/2) sum_j eps_j^2 + sqrt(2 log(1/delta) sum_j eps_j^2)    for any delta > 0

    (Prop. 16: eps_j-DP is eps_j^2/2-zCDP; Thm 13: rho adds; Prop. 14: the simple conversion)."""
    delta = V.delta(delta)
    e, _, c = _parts(epsilons, 0.0, counts)
    s = _weighted_sum(ulps_up(e * e, 1), c)   # each square rounded up, then summed exactly
    return ulps_up(0.5 * s + math.sqrt(2.0 * math.log(1.0 / delta) * s), 4)


def advanced(epsilons, deltas, delta: float, counts=1) -> float:
    """Advanced adaptive composition from approximate DP (Steinke 2022, Thm 22).

    (eps_j, delta_j)-DP parts (chosen adaptively) compose to (eps, delta)-DP for any
    delta > sum_j delta_j, with delta' = delta - sum_j delta_j (the delta split) and

        eps = min{ sum_j eps_j,  (1/2) sum_j eps_j^2 + sqrt(2 log(1/delta') sum_j eps_j^2) }.

    Raises ValueError when delta <= sum_j delta_j (the theorem needs delta' > 0)."""
    delta = V.delta(delta)
    e, d, c = _parts(epsilons, deltas, counts)
    spent = _exact_delta_sum(d, c)
    if not Fraction(delta) > spent:
        raise ValueError(f"delta must be > sum of the parts' deltas = {float(spent):.17g} for "
                         f"Steinke 2022, Thm 22 (got {delta:.17g}); the remainder delta' = delta - "
                         "sum delta_j must be > 0")
    # delta' rounded down (a smaller delta' only enlarges log(1/delta')): pessimistic
    dprime = float(Fraction(delta) - spent) * (1.0 - 1e-12)
    s = _weighted_sum(ulps_up(e * e, 1), c)   # each square rounded up, then summed exactly
    adv = ulps_up(0.5 * s + math.sqrt(2.0 * math.log(1.0 / dprime) * s), 4)
    return min(_weighted_sum(e, c), adv)


def advanced_delta(epsilons, deltas, epsilon: float, counts=1) -> float:
    """Smallest delta for which Steinke 2022, Thm 22 (or Thm 1) certifies (epsilon, delta)-DP.

    If epsilon >= sum eps_j, basic composition gives delta = sum delta_j. Otherwise Thm 22 needs
    S/2 + sqrt(2 log(1/delta') S) <= epsilon, i.e. delta' = exp(-(epsilon - S/2)^2 / (2 S)) when
    epsilon > S/2 (else no bound: 1). Returns min(1, sum delta_j + delta')."""
    epsilon = V.nonnegative("epsilon", epsilon)
    e, d, c = _parts(epsilons, deltas, counts)
    spent = _float_up(_exact_delta_sum(d, c))
    if epsilon >= _weighted_sum(e, c):
        return min(1.0, spent)
    s = _weighted_sum(ulps_up(e * e, 1), c)   # each square rounded up, then summed exactly
    if not epsilon > 0.5 * s:
        return 1.0
    dprime = math.exp(-((epsilon - 0.5 * s) ** 2) / (2.0 * s))
    # below the pure epsilon the true delta is > 0: never 0, even where delta' underflows
    return min(1.0, max((spent + dprime) * (1.0 + 1e-12), TINY))


# --- optimal homogeneous composition (Kairouz, Oh, Viswanath; Steinke 2022, Sec. 7)
# --------------------
#
# delta(eps) = 1 - K + K S(eps), K = (1 - delta0)^k, S(eps) = sum_l pmf(l) w_l with pmf the
# Binomial(k, p) law of the number l of +eps0 steps, p = e^eps0/(1 + e^eps0), and w_l =
# [1 - e^{eps - z_l}]_+, z_l = (2l - k) eps0 (the privacy loss of the k-fold worst-case pair).
#
# Only a window [L, U] of indices around the mean kp is summed (Bernstein's inequality bounds
# the binomial mass outside it, and that bound is added), so time and memory grow like sqrt(k),
# not k. Inside the window the terms are computed relative to an anchor m (log pmf(l) -
# log pmf(m) as a running sum of log pmf(j+1)/pmf(j) = log((k-j)/(j+1)) + eps0), and S is
# normalised by the window's own total: sum_W pmf w / sum_W pmf >= sum_W pmf w, because
# sum_W pmf <= 1. Nothing large cancels: the textbook log-binomial coefficients, gammaln(k + 1)
# ~ k log k, carry an absolute error ~ u k log k in the exponent (1e-8 relative at k = 7e6),
# beyond any fixed margin as k grows.
#
# Rounding (u = 2^-53; numpy's log, log1p, exp, expm1 are assumed within _ULPS ulps): step j of
# a running sum carries an absolute error <= 1.01 u + 2.02 _ULPS u |log ratio_j| + u |step_j|,
# and forming partial sum j adds u |partial_j|; so the exponent of term l is off by at most
# E_l, the running sum of those bounds from the anchor to l (computed from the arrays: it grows
# with the distance to the anchor, ~1e-10 where the mass is at k = 1e9), plus u |exponent| and
# the exp's error: eta_l. Errors common to all terms cancel in the ratio; with them
#     numerator <= (sum r w + 1.01 sum r w eta) (1 + (3.01 + 2.02 _ULPS) u + 2 gamma + 4 u),
#     denominator >= (sum r - 1.01 sum r eta) (1 - 2 gamma - 4 u),
# gamma = n u / (1 - n u) bounding any summation of n positive terms. The weights w are
# accurate to a few ulps because z_l - eps is formed without cancellation: l* (the first index
# with z_l > eps) and c = z_{l*} - eps are computed exactly in rational arithmetic, then
# x_l = (l - l*) 2 eps0 + c is a sum of two non-negative numbers (relative error <= 3.01 u) and
# x -> 1 - e^{-x} has relative condition number <= 1. Underflowed terms: an absolute n 2^-1071.

_U = 2.0 ** -53
#: assumed bound on the error of numpy's float64 log, log1p, exp and expm1, in ulps
_ULPS = 4
#: exponent of the tail mass left out of the KOV sum by a delta query: e^-700 ~ 1e-304
_KOV_TAIL = 700.0
#: largest k for which the KOV sum is evaluated: its window has about 37 sqrt(k) terms
#: (3.7e6 at 10^10: ~0.3 GB of temporaries and about a second per evaluation)
KOV_MAX_K = 10 ** 10


def kov_log_pmf(eps0: float, k: int) -> np.ndarray:
    """log P[L = l], l = 0..k, L ~ Binomial(k, e^eps0 / (1 + e^eps0)): the number of +eps0 steps
    of the worst-case pair (Steinke 2022, Sec. 7, footnote 16 with the tightness errata). All k + 1
    terms, by gammaln (not used by the KOV functions, which sum a window; k <= 10^7)."""
    eps0 = V.nonnegative("eps0", eps0)
    k = V.integer("k", k, low=1, high=10 ** 7)
    lv = np.arange(k + 1, dtype=float)
    log_p = -np.logaddexp(0.0, -eps0)      # log(e^eps0 / (1 + e^eps0))
    log_q = -np.logaddexp(0.0, eps0)       # log(1 / (1 + e^eps0))
    with np.errstate(invalid="ignore"):
        out = (gammaln(k + 1.0) - gammaln(lv + 1.0) - gammaln(k - lv + 1.0)
               + np.where(lv > 0, lv * log_p, 0.0) + np.where(k - lv > 0, (k - lv) * log_q, 0.0))
    return out


def _check_kov(eps0, delta0, k):
    eps0 = V.nonnegative("eps0", eps0)
    delta0 = V.real("delta0", delta0, low=0.0, high=1.0, high_open=True)
    # (the cast for the type checker only: numbers.Real's stubs declare < and <= but not >,
    # which every concrete Real has)
    if isinstance(k, Real) and not isinstance(k, bool) and cast(float, k) > KOV_MAX_K:
        raise ValueError(f"k must be an integer in [1, {KOV_MAX_K}] for the KOV sum (got {k}): "
                         "its window of binomial terms grows like sqrt(k); use advanced "
                         "composition (Steinke 2022, Thm 22) or the PLD of dp.EpsDelta for "
                         "larger k")
    return eps0, delta0, V.integer("k", k, low=1, high=KOV_MAX_K)


def _log_bernstein_tail(dev: float, var: float) -> float:
    """log of Bernstein's bound exp(-dev^2 / (2 (var + dev/3))) on P[X - EX >= dev] (and on
    P[EX - X >= dev]) for a sum X of independent Bernoulli variables with total variance <=
    var; 0 (the trivial bound 1) when dev <= 0. Rounded towards the larger bound."""
    if not dev > 0:
        return 0.0
    return -(dev * dev) / (2.0 * (var + dev / 3.0)) * (1.0 - 1e-12)


class _KovWindow:
    """The binomial weights of the KOV sum on a window [L, U] around the mean, relative to an
    anchor (see the comment above): ``r[i]`` ~ pmf(L + i) / pmf(top), each with a bound
    ``eta[i]`` on the error of its logarithm; ``log_left`` and ``log_right(a)`` bound the
    masses P[X < L] and P[X >= a] (a > U) left out."""

    def __init__(self, eps0: float, k: int, tail: float):
        tiny = math.exp(-abs(eps0))                       # no overflow for any eps0
        big, small = 1.0 / (1.0 + tiny), tiny / (1.0 + tiny)
        p, q = (big, small) if eps0 >= 0 else (small, big)
        slack = 8 * _U                                   # p, q to a few ulps
        self.mean_lo, self.mean_hi = k * p * (1 - slack) - 1.0, k * p * (1 + slack) + 1.0
        self.var = k * p * q * (1 + slack) ** 3
        t = tail / 3.0 + math.sqrt(tail * tail / 9.0 + 2.0 * tail * self.var)
        self.L = max(0, math.floor(self.mean_lo - t) - 1)
        self.U = min(k, math.ceil(self.mean_hi + t) + 1)
        self.k = k
        m = min(max(round(k * p), self.L), self.U)        # the anchor: any index works
        right = np.arange(m + 1, self.U + 1, dtype=float)   # log pmf(j) / pmf(j - 1)
        left = np.arange(m - 1, self.L - 1, -1, dtype=float)  # log pmf(j) / pmf(j + 1)
        cr, er = self._running(k - right + 1.0, right, eps0)
        cl, el = self._running(left + 1.0, k - left, -eps0)
        c = np.concatenate([cl[::-1], [0.0], cr])
        lr = c - float(c.max())
        eta = np.concatenate([el[::-1], [0.0], er]) + _U * np.abs(lr) + 2.02 * _ULPS * _U
        self.eta = eta * 1.01                            # and the rounding of this sum
        with np.errstate(under="ignore"):
            self.r = np.exp(lr)                          # the top term is exp(0) = 1
        self.r_eta = self.r * self.eta
        n = self.r.size
        self.gamma = n * _U / (1.0 - n * _U)             # any summation of n positive terms
        # sum r >= sum r_true e^-eta >= ...: a lower bound on the window's total (>= 1/2)
        self.D = ((float(self.r.sum()) - 1.01 * float(self.r_eta.sum()))
                  * (1.0 - 2.0 * self.gamma - 4 * _U))
        self.log_left = (-math.inf if self.L == 0 else
                         _log_bernstein_tail(self.mean_lo - (self.L - 1), self.var))

    @staticmethod
    def _running(num, den, shift):
        """Running sums of log(num/den) + shift, and bounds on their absolute errors (one per
        partial sum: a running sum of the steps' errors, see the comment above)."""
        if num.size == 0:
            return num, num
        ratio = num / den
        y = (num - den) / den                            # num - den is exact
        with np.errstate(divide="ignore"):
            lg = np.where(np.abs(y) < 0.5, np.log1p(y), np.log(ratio))
        step = lg + shift
        csum = np.cumsum(step)                           # sequential: the bound below holds
        per_step = (1.01 * _U + 2.02 * _ULPS * _U * np.abs(lg) + _U * np.abs(step)
                    + _U * np.abs(csum))
        return csum, np.cumsum(per_step) * 1.01

    def log_right(self, a: int) -> float:
        """log of a bound on P[X >= a]."""
        if a > self.k:
            return -math.inf
        return _log_bernstein_tail(a - self.mean_hi, self.var)

    def sum_upper(self, eps: float, eps0: float) -> float:
        """Upper bound on S(eps) = sum_l pmf(l) [1 - e^{eps - z_l}]_+ (eps finite, eps0 > 0)."""
        k = self.k
        ratio = Fraction(eps) / Fraction(eps0)
        lstar = math.floor((k + ratio) / 2) + 1           # first l with (2l - k) eps0 > eps
        if lstar > k:
            return 0.0
        lo = max(lstar, self.L)
        out = 0.0
        if lo <= self.U:
            c = (2 * lstar - k) * Fraction(eps0) - Fraction(eps)  # > 0, exact
            try:
                cf = float(c)
            except OverflowError:
                cf = math.inf
            d = np.arange(lo - lstar, self.U - lstar + 1, dtype=float)
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                x = np.where(d == 0, cf, d * (2.0 * eps0) + cf)
                w = -np.expm1(-x)                        # relative error <= (3.01 + 2 ulps) u
            i = lo - self.L
            num = float(np.dot(self.r[i:], w)) + 1.01 * float(np.dot(self.r_eta[i:], w))
            num *= 1.0 + (3.01 + 2.02 * _ULPS) * _U + 2.0 * self.gamma + 4 * _U
            out = num / self.D + self.r.size * 2.0 ** -1071  # + underflowed terms
        out += math.exp(self.log_right(max(lstar, self.U + 1)))
        if lstar < self.L:
            out += math.exp(self.log_left)
        # S > 0 here (the term l* has a positive weight): never round it to 0, even where it
        # is below the smallest float (e^-10^5 at the far end of the support)
        return min(1.0, math.nextafter(out * (1.0 + 4 * _U), math.inf))


def _kov_delta_core(epsilon, eps0, delta0, k, window):
    """Upper bound on delta(epsilon) of the k-fold worst-case pair (see the comment above)."""
    if eps0 == 0.0 or math.isinf(epsilon):
        s = 0.0                                          # no finite loss exceeds epsilon
    else:
        s = window.sum_upper(epsilon, eps0)
    if delta0 == 0.0:
        return s
    # 1 - K + K S decreases in K = (1 - delta0)^k: a lower bound on log K gives an upper bound
    log_keep = k * math.log1p(-delta0) * (1.0 + (2.02 * _ULPS + 2) * _U)
    lost = -math.expm1(log_keep) * (1.0 + 2.02 * _ULPS * _U)
    kept = math.exp(log_keep) * (1.0 + 2.02 * _ULPS * _U)
    return min(1.0, math.nextafter((lost + kept * s) * (1.0 + 4 * _U), math.inf))


def kov_delta(eps0: float, delta0: float, k: int, epsilon: float) -> float:
    """Optimal delta(epsilon) for the k-fold composition of (eps0, delta0)-DP (Steinke 2022, Sec. 7,
    KOV15):

        delta = 1 - (1-delta0)^k + (1-delta0)^k (1+e^eps0)^{-k}
                sum_{l=0}^{k} C(k,l) e^{l eps0} max{0, 1 - e^{epsilon - (2l-k) eps0}},

    the hockey-stick divergence (Steinke 2022, Prop. 7) of the shifted binomial privacy loss of the
    worst-case mechanism. Returned as a proven upper bound: the sum over a window of indices
    around the binomial mean, with a rounding margin that grows with its number of terms and
    Bernstein's bound (below 1e-304) on the mass left out (see the comment above
    ``kov_log_pmf``). 0 exactly when delta0 = 0 and epsilon >= k eps0 (no loss exceeds it).
    k <= ``KOV_MAX_K``; time and memory grow like sqrt(k) (about 0.1 s at k = 10^9)."""
    eps0, delta0, k = _check_kov(eps0, delta0, k)
    epsilon = V.nonnegative("epsilon", epsilon, allow_inf=True)
    return _kov_delta_core(epsilon, eps0, delta0, k, _KovWindow(eps0, k, _KOV_TAIL))


def kov_epsilon(eps0: float, delta0: float, k: int, delta: float, *, rtol: float = 1e-12) -> float:
    """Optimal epsilon(delta) for the k-fold composition of (eps0, delta0)-DP (Steinke 2022, Sec.
    7), as a proven upper bound: a bracketing search (:func:`_bracket_root`) on [0, k eps0] for the
    smallest epsilon at which the upper bound of :func:`kov_delta` is <= delta. The *upper* end
    of the final bracket is returned: the bound holds there, so the true delta there is <= delta
    too, and the answer is an upper bound on the optimal epsilon, within rtol of where the
    bound crosses delta. The window's left-out mass is at most delta e^-30 (it only shifts the
    crossing by that).

    delta = 0: k eps0 (rounded up) when delta0 = 0, since no loss exceeds it; inf when
    delta0 > 0. inf also when delta < 1 - (1-delta0)^k (the infinite-loss mass alone exceeds
    delta)."""
    eps0, delta0, k = _check_kov(eps0, delta0, k)
    delta = V.delta(delta, allow_zero=True)
    rtol = V.real("rtol", rtol, low=0.0, high=1.0, low_open=True, high_open=True)
    hi = _float_up(Fraction(k) * Fraction(eps0))
    if delta == 0.0:
        return hi if delta0 == 0.0 else math.inf
    window = _KovWindow(eps0, k, min(_KOV_TAIL, math.log(1.0 / delta) + 30.0))
    f = lambda e: _kov_delta_core(e, eps0, delta0, k, window)  # noqa: E731
    f_hi = f(hi)
    if f_hi > delta:
        return math.inf
    f_lo = f(0.0)
    if f_lo <= delta:
        return 0.0
    return _bracket_root(f, delta, 0.0, hi, f_lo, f_hi, rtol)


def _bracket_root(f, target, lo, hi, f_lo, f_hi, rtol):
    """Shrink [lo, hi] with f(lo) > target >= f(hi) until hi - lo <= rtol hi, and return hi
    (where f <= target was evaluated). Illinois regula falsi on log f - log target (smooth for
    the KOV bound: about 10 evaluations instead of bisection's 40); a bisection step whenever
    the bracket did not halve in three steps, or log f is not finite at an end."""
    g = lambda v: math.log(v) - math.log(target) if v > 0 else -math.inf  # noqa: E731
    g_lo, g_hi, side = g(f_lo), g(f_hi), 0
    widths = [hi - lo] * 3
    for _ in range(400):
        width = hi - lo
        if width <= rtol * hi:
            break
        mid = 0.5 * (lo + hi)
        if math.isfinite(g_hi) and math.isfinite(g_lo) and width <= 0.5 * widths[-3]:
            step = 0.25 * rtol * hi                      # stay inside, off the ends
            guess = hi - g_hi * width / (g_hi - g_lo)
            mid = min(max(guess, lo + step), hi - step)
        widths.append(width)
        v = f(mid)
        if v <= target:
            hi, g_hi = mid, g(v)
            if side == -1:
                g_lo *= 0.5
            side = -1
        else:
            lo, g_lo = mid, g(v)
            if side == 1:
                g_hi *= 0.5
            side = 1
    return hi
