"""Composition theorems for (epsilon, delta)-DP guarantees (paper 004).

Pure functions of the parts' guarantees; they know nothing about mechanisms. Parts are given as
arrays ``epsilons`` / ``deltas`` with optional ``counts`` (how many times each part runs), all
broadcast together, so a 10^6-fold homogeneous composition is ``counts=10**6``, not a long array.

| function              | source                 | statement                                        |
|-----------------------|------------------------|--------------------------------------------------|
| ``basic``             | 004 Thm 1 (+ Sec. 2)   | (sum eps_j, sum delta_j)                         |
| ``advanced_pure``     | 004 Thm 18             | eps = S/2 + sqrt(2 log(1/delta) S), S = sum eps_j^2 |
| ``advanced``          | 004 Thm 22             | min{sum eps_j, S/2 + sqrt(2 log(1/delta') S)}, delta' = delta - sum delta_j |
| ``advanced_delta``    | 004 Thm 22, inverted   | smallest delta Thm 22 gives for a target eps     |
| ``kov_delta``         | 004 Sec. 7 [KOV15]     | optimal delta(eps) of k-fold (eps0, delta0)-DP    |
| ``kov_epsilon``       | 004 Sec. 7, bisection  | optimal eps(delta) of k-fold (eps0, delta0)-DP    |

Optimal composition of *heterogeneous* (eps_j, delta_j) guarantees is #P-complete (Murtagh and
Vadhan, cited in 004 Sec. 7); it is left to the PLD of the worst-case mechanisms
(:class:`dpamp.EpsDelta`), which approximates it with certified bounds.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import gammaln

from ..core import _validate as V

__all__ = ["basic", "advanced_pure", "advanced", "advanced_delta", "kov_delta", "kov_epsilon",
           "kov_log_pmf"]

#: Relative margin added to KOV deltas: covers float rounding of the log-binomial weights
#: (gammaln of numbers up to k, absolute error ~1e-16 k log k in the exponent). Pessimistic.
_KOV_REL = 1e-9


def _parts(epsilons, deltas=0.0, counts=1):
    """Broadcast (eps_j, delta_j, count_j) and validate them at the boundary."""
    e = V.reals("epsilons", epsilons, low=0.0, allow_inf=True)
    d = V.reals("deltas", deltas, low=0.0)
    if (d > 1).any():
        raise ValueError(f"deltas must be in [0, 1] (got {d[d > 1].ravel()[0]:g})")
    c = np.asarray(counts)
    if c.dtype.kind not in "iu" and not (c.dtype.kind == "f" and np.all(c == np.round(c))):
        raise ValueError("counts must be non-negative integers")
    c = c.astype(np.float64)
    if (c < 0).any():
        raise ValueError("counts must be non-negative integers (got a negative count)")
    e, d, c = np.broadcast_arrays(e, d, c)
    if e.size == 0:
        raise ValueError("epsilons must contain at least one part")
    return e.ravel(), d.ravel(), c.ravel()


def _weighted_sum(x, c):
    # 0 * inf must be 0 (a part that runs zero times costs nothing)
    return float(np.sum(np.where(c > 0, x * c, 0.0)))


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
    """Basic composition (004 Thm 1, extended to approximate DP as noted in 004 Sec. 2):
    the composition of (eps_j, delta_j)-DP mechanisms is (sum_j eps_j, sum_j delta_j)-DP.
    Returns (epsilon, delta); delta is capped at 1."""
    e, d, c = _parts(epsilons, deltas, counts)
    return _weighted_sum(e, c), min(1.0, _float_up(_exact_delta_sum(d, c)))


def advanced_pure(epsilons, delta: float, counts=1) -> float:
    """Advanced composition from pure DP (004 Thm 18): eps_j-DP parts compose to (eps, delta)-DP

        eps = (1/2) sum_j eps_j^2 + sqrt(2 log(1/delta) sum_j eps_j^2)    for any delta > 0

    (Prop. 16: eps_j-DP is eps_j^2/2-zCDP; Thm 13: rho adds; Prop. 14: the simple conversion)."""
    delta = V.delta(delta)
    e, _, c = _parts(epsilons, 0.0, counts)
    s = _weighted_sum(e * e, c)
    return 0.5 * s + math.sqrt(2.0 * math.log(1.0 / delta) * s)


def advanced(epsilons, deltas, delta: float, counts=1) -> float:
    """Advanced adaptive composition from approximate DP (004 Thm 22).

    (eps_j, delta_j)-DP parts (chosen adaptively) compose to (eps, delta)-DP for any
    delta > sum_j delta_j, with delta' = delta - sum_j delta_j (the delta split) and

        eps = min{ sum_j eps_j,  (1/2) sum_j eps_j^2 + sqrt(2 log(1/delta') sum_j eps_j^2) }.

    Raises ValueError when delta <= sum_j delta_j (the theorem needs delta' > 0)."""
    delta = V.delta(delta)
    e, d, c = _parts(epsilons, deltas, counts)
    spent = _exact_delta_sum(d, c)
    if not Fraction(delta) > spent:
        raise ValueError(f"delta must be > sum of the parts' deltas = {float(spent):.17g} for "
                         f"004 Thm 22 (got {delta:.17g}); the remainder delta' = delta - "
                         "sum delta_j must be > 0")
    # delta' rounded down (a smaller delta' only enlarges log(1/delta')): pessimistic
    dprime = float(Fraction(delta) - spent) * (1.0 - 1e-12)
    s = _weighted_sum(e * e, c)
    adv = 0.5 * s + math.sqrt(2.0 * math.log(1.0 / dprime) * s)
    return min(_weighted_sum(e, c), adv)


def advanced_delta(epsilons, deltas, epsilon: float, counts=1) -> float:
    """Smallest delta for which 004 Thm 22 (or Thm 1) certifies (epsilon, delta)-DP.

    If epsilon >= sum eps_j, basic composition gives delta = sum delta_j. Otherwise Thm 22 needs
    S/2 + sqrt(2 log(1/delta') S) <= epsilon, i.e. delta' = exp(-(epsilon - S/2)^2 / (2 S)) when
    epsilon > S/2 (else no bound: 1). Returns min(1, sum delta_j + delta')."""
    epsilon = V.nonnegative("epsilon", epsilon)
    e, d, c = _parts(epsilons, deltas, counts)
    spent = _float_up(_exact_delta_sum(d, c))
    if epsilon >= _weighted_sum(e, c):
        return min(1.0, spent)
    s = _weighted_sum(e * e, c)
    if not epsilon > 0.5 * s:
        return 1.0
    dprime = math.exp(-((epsilon - 0.5 * s) ** 2) / (2.0 * s))
    return min(1.0, (spent + dprime) * (1.0 + 1e-12))


# --- optimal homogeneous composition (Kairouz, Oh, Viswanath; 004 Sec. 7) --------------------

def kov_log_pmf(eps0: float, k: int) -> np.ndarray:
    """log P[L = l], l = 0..k, L ~ Binomial(k, e^eps0 / (1 + e^eps0)): the number of +eps0 steps
    of the worst-case pair (004 Sec. 7, footnote 16 with the tightness errata)."""
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
    k = V.integer("k", k, low=1)
    return eps0, delta0, k


def _kov_delta_core(epsilon, eps0, delta0, k, log_pmf):
    """delta(epsilon) of the k-fold worst-case pair, with the pessimistic margin."""
    log_keep = k * math.log1p(-delta0) if delta0 > 0 else 0.0  # log (1-delta0)^k
    z = (2.0 * np.arange(k + 1) - k) * eps0                     # privacy loss with l plus-steps
    above = z > epsilon
    if above.any():
        with np.errstate(divide="ignore"):
            terms = log_pmf[above] + np.log(-np.expm1(epsilon - z[above]))
        m = terms.max()
        log_s = m + math.log(np.exp(terms - m).sum()) if np.isfinite(m) else -math.inf
    else:
        log_s = -math.inf
    d = -math.expm1(log_keep) + (math.exp(log_keep + log_s) if np.isfinite(log_s) else 0.0)
    return min(1.0, d * (1.0 + _KOV_REL) + 1e-300)


def kov_delta(eps0: float, delta0: float, k: int, epsilon: float) -> float:
    """Optimal delta(epsilon) for the k-fold composition of (eps0, delta0)-DP (004 Sec. 7, KOV15):

        delta = 1 - (1-delta0)^k + (1-delta0)^k (1+e^eps0)^{-k}
                sum_{l=0}^{k} C(k,l) e^{l eps0} max{0, 1 - e^{epsilon - (2l-k) eps0}},

    the hockey-stick divergence (004 Prop. 7) of the shifted binomial privacy loss of the
    worst-case mechanism. Evaluated in log space (log-binomial weights, log-sum-exp) and rounded
    up by a relative 1e-9."""
    eps0, delta0, k = _check_kov(eps0, delta0, k)
    epsilon = V.nonnegative("epsilon", epsilon, allow_inf=True)
    return _kov_delta_core(epsilon, eps0, delta0, k, kov_log_pmf(eps0, k))


def kov_epsilon(eps0: float, delta0: float, k: int, delta: float, *, rtol: float = 1e-12) -> float:
    """Optimal epsilon(delta) for the k-fold composition of (eps0, delta0)-DP (004 Sec. 7):
    the smallest epsilon with kov_delta(epsilon) <= delta, found by bisection on [0, k eps0]
    (kov_delta is non-increasing in epsilon). Returns the upper end of the final bracket, which
    satisfies the condition, so the answer is an upper bound within rtol of the optimum.
    Returns inf when delta < 1 - (1-delta0)^k (the infinite-loss mass alone exceeds delta)."""
    eps0, delta0, k = _check_kov(eps0, delta0, k)
    delta = V.delta(delta, allow_zero=True)
    log_pmf = kov_log_pmf(eps0, k)
    f = lambda e: _kov_delta_core(e, eps0, delta0, k, log_pmf)  # noqa: E731
    hi = k * eps0
    if f(hi) > delta:
        return math.inf
    if f(0.0) <= delta:
        return 0.0
    lo = 0.0
    for _ in range(200):  # halves the bracket; float resolution is reached well before 200
        if hi - lo <= rtol * hi:
            break
        mid = 0.5 * (lo + hi)
        if f(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
