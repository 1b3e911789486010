"""The classic route to user-level (group) privacy: account per record, then convert.

A mechanism (eps, delta)-DP for neighbours differing in one record is, for datasets differing
in k records (a chain of k neighbours),

    (k eps, delta (e^{k eps} - 1) / (e^eps - 1))-DP,

the sum delta sum_{i<k} e^{i eps} of the chain (Vadhan 2017, "The Complexity of Differential
Privacy", Lemma 2.2 and its proof; Dwork & Roth 2014 state the looser k e^{(k-1) eps} delta).
TF-Privacy's ``compute_dp_sgd_privacy_statement(max_examples_per_user=k)`` reports this route:
it searches the per-record delta_1 whose conversion is the target delta and reports k eps_1.
For Rényi DP see :mod:`dpamp.rdp.group` (Mironov 2017, Prop. 2).

This is a comparison: dpamp reports the user-level step's own pair
(:class:`dpamp.UserLevelGaussian`), which is far tighter. Every value here is still a proven
upper bound (given a proven per-record epsilon): the search checks the constraint it returns.
"""
from __future__ import annotations

import math
from typing import Callable

from ..core import validate as V
from ..core.rounding import ulps_up

__all__ = ["group_eps_delta", "group_log_delta", "classic_user_epsilon"]


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x < 700.0 else x


def group_log_delta(epsilon: float, log_delta: float, k: int) -> float:
    """log of delta (e^{k eps} - 1) / (e^eps - 1) (k delta at eps = 0), padded up by a few
    ulps of its terms (the rounding of log, exp and expm1)."""
    if epsilon == 0.0:
        v = log_delta + math.log(k)
    else:
        v = log_delta + _log_expm1(k * epsilon) - _log_expm1(epsilon)
    return float(ulps_up(v, 8)) + 16 * 2.0 ** -52 * (abs(log_delta) + k * epsilon + 2.0)


def group_eps_delta(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(k eps, delta (e^{k eps} - 1) / (e^eps - 1)) for groups of k (module docstring), both
    rounded up; delta capped at 1."""
    eps = V.nonnegative("epsilon", epsilon)
    d = V.delta(delta, allow_zero=True)
    k = V.integer("k", k, low=1)
    if k == 1:
        return eps, d
    if d == 0.0:
        return float(ulps_up(k * eps, 2)), 0.0
    return float(ulps_up(k * eps, 2)), min(1.0, math.exp(group_log_delta(eps, math.log(d), k)))


def classic_user_epsilon(epsilon_of_delta: Callable[[float], float], k: int, delta: float,
                         iterations: int = 40) -> tuple[float, float]:
    """The user-level epsilon at ``delta`` by the classic route: (k eps_1, delta_1) where
    eps_1 = ``epsilon_of_delta(delta_1)`` is the per-record (proven) epsilon and delta_1 the
    largest found with group delta <= ``delta`` (a search in log delta_1 as TF-Privacy's: down
    in steps of 10 to a feasible point, then ``iterations`` bisections; the constraint is
    checked at the point returned, so the answer holds whether or not the per-record curve is
    monotone). (inf, 0) when no delta_1 down to 1e-300 x delta is feasible."""
    k = V.integer("k", k, low=1)
    d = V.delta(delta)
    if k == 1:
        return float(epsilon_of_delta(d)), d
    target = math.log(d)

    def gap(log_d1: float) -> tuple[float, float]:
        e1 = float(epsilon_of_delta(math.exp(log_d1)))
        if not math.isfinite(e1):
            return math.inf, e1
        return group_log_delta(e1, log_d1, k) - target, e1

    hi = target                                  # infeasible: the group delta is >= k delta_1
    lo = target - math.log(10.0)
    g, e_lo = gap(lo)
    while g > 0:
        hi, lo = lo, lo - max(g, math.log(10.0))
        if lo < target - 300 * math.log(10.0):
            return math.inf, 0.0
        g, e_lo = gap(lo)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        g, e = gap(mid)
        if g <= 0:
            lo, e_lo = mid, e
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return float(ulps_up(k * e_lo, 2)), math.exp(lo)
