"""Registers the "bounded-range" accounting method: adaptive compositions of eps-bounded-range
mechanisms (the exponential mechanism, report-noisy-max with Gumbel noise), all with one eps.

* One run: the exact profile (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1), both ends (the supremum
  over the generalized randomized-response pairs is attained at t = (eps + eps') / 2).
* T runs: the optimal adaptive composition (Dong, Durfee & Rogers 2020) by the dynamic
  program of :mod:`dpamp.theorems.bounded_range`: an upper bound by chords of the convex
  optimum, a lower bound by adaptive strategies with t on the grid; the grid is refined
  (m = 16, 32, ... cells per eps) until the bracket meets ``tol`` or the next grid would pass
  the time ``budget`` (seconds, 5 by default). The lower end is also at least that of T runs of
  one pair (P_t, Q_t) (exact binomial sums, a few t).
* Past the budget: the smaller upper end of the RDP method (the exact RDP curve of the class)
  and the PLD method (the profile's PLD), with the binomial lower end; ``tol_met`` False.
"""
from __future__ import annotations

import math
import time

import numpy as np
from scipy.special import gammaln

from ...core.errors import OutOfReach
from ...core.guarantee import Guarantee
from ...core.rounding import ulps_down, ulps_up
from ...mechanisms.family import Support, family_of
from ...theorems import bounded_range as BR
from ..registry import Method, register

SOURCE = ("Dong, Durfee & Rogers 2020 (optimal adaptive composition of bounded-range "
          "mechanisms), by dynamic programming: chord upper bound, grid-strategy lower bound")
_U = 2.0 ** -52
#: default time budget of the dynamic program (seconds; the ``budget`` option), its expected
#: speed (cell updates per second, a conservative guess) and its finest grid
BUDGET = 5.0
RATE = 1e7
MAX_M = 4096
TOL = 1e-3


def common(mechanism) -> tuple[float, int] | Support:
    """(eps, T) when every part (count > 0) is eps-bounded-range with one eps, as the families
    declare (``bounded_range``), else a Support saying why not."""
    eps: set[float] = set()
    total = 0
    for part, count in mechanism.parts():
        if count <= 0:
            continue
        fam = family_of(part)
        e = None if fam is None or fam.bounded_range is None else fam.bounded_range(part)
        if e is None:
            return Support.no("bounded-range: applies to compositions of eps-bounded-range "
                              "mechanisms (the exponential mechanism, report-noisy-max with "
                              "Gumbel noise)")
        eps.add(float(e))
        total += int(count)
    if len(eps) != 1:
        return Support.no("bounded-range: the parts have different epsilons (the dynamic "
                          "program runs on one grid); use pld or rdp")
    return eps.pop(), total


def _supports(mechanism) -> Support:
    c = common(mechanism)
    if isinstance(c, Support):
        return c
    if not 0 < c[0] <= BR.MAX_EPS:
        return Support.no(f"bounded-range: eps {c[0]:g} is outside (0, {BR.MAX_EPS:g}]")
    return Support.yes()


# --- T runs of one pair (P_t, Q_t): exact binomial sums, a lower bound -----------------------

def _pair_rows(eps0: float, t: float, steps: int, eps: np.ndarray) -> np.ndarray:
    """Lower bounds of both hockey-stick curves of T runs of the pair (P_t, Q_t): losses
    T t - j eps0 with P-mass C(T, j) p^(T-j) (1-p)^j (:func:`finite_pair_log_rows`)."""
    from ...profiles.divergence import finite_pair_log_rows
    j = np.arange(steps + 1, dtype=float)
    lp1 = math.log(math.expm1(eps0 - t)) + t - math.log(math.expm1(eps0))    # log p_t
    lq1 = math.log(math.expm1(t)) - math.log(math.expm1(eps0))               # log(1 - p_t)
    lcomb = gammaln(steps + 1.0) - gammaln(j + 1.0) - gammaln(steps - j + 1.0)
    lp = lcomb + (steps - j) * lp1 + j * lq1
    loss = steps * t - j * eps0
    err = 64 * _U * (np.abs(lcomb) + steps * (abs(lp1) + abs(lq1) + eps0) + 4.0)
    return finite_pair_log_rows(lp, lp - loss, err, eps, upper=False)


def _pair_ts(eps0: float) -> np.ndarray:
    """The t of the pairs tried: [eps/2, eps) (t and eps - t are one pair swapped)."""
    return eps0 * (0.5 + 0.5 * np.arange(12) / 12)


def pairs_delta_lower(eps0: float, steps: int, eps: float) -> float:
    """max over a few t of delta(eps) of T runs of (P_t, Q_t), both orders: a lower bound."""
    if steps > 10 ** 7:
        return 0.0
    best = -math.inf
    for t in _pair_ts(eps0):
        rows = _pair_rows(eps0, float(t), steps, np.array([eps]))
        best = max(best, float(np.max(rows)))
    return max(0.0, math.exp(best)) if best > -math.inf else 0.0


def pairs_epsilon_lower(eps0: float, steps: int, delta: float) -> float:
    """The largest eps found (bisection) where :func:`pairs_delta_lower` exceeds delta."""
    if pairs_delta_lower(eps0, steps, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, steps * eps0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if pairs_delta_lower(eps0, steps, mid) > delta else (lo, mid)
    return lo


# --- one run: the closed form -------------------------------------------------------------------

def _one_delta(eps0: float, eps: float) -> tuple[float, float]:
    """(lower, upper) of the exact one-run profile at eps."""
    up = float(np.exp(BR.envelope_log_profile(eps0, eps, upper=True)))
    low = float(np.exp(BR.envelope_log_profile(eps0, eps, upper=False)))
    return max(0.0, ulps_down(low, 2)), min(1.0, ulps_up(up, 2))


def _one_epsilon(eps0: float, delta: float) -> tuple[float, float]:
    """(lower, upper) of the smallest eps with profile <= delta, by bisection on each bound
    (the profile is decreasing)."""
    out = []
    for side in (0, 1):
        f = (lambda e: _one_delta(eps0, e)[side])
        if f(0.0) <= delta:
            out.append(0.0)
            continue
        lo, hi = 0.0, eps0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
        out.append(lo if side == 0 else hi)
    return out[0], out[1]


# --- T runs: the dynamic program, refined ------------------------------------------------------

def _refine(eps0: float, steps: int, query, tol: float, budget: float, tiny: float):
    """(lower, upper, met, note) of ``query(ladder)`` on grids of m = 16, 32, ... cells per
    eps (from 8 or 4 where 16 is expected to pass the budget) until upper - lower <= tol x
    upper or the next grid (about 4 times the last one's time) would pass the time
    ``budget`` (seconds); the best bracket of all grids (each end is proven on its own).
    OutOfReach where even m = 4 is expected to pass it."""
    m = 16
    while m > 4 and BR.dp_cost(eps0, steps, m, tiny) / RATE > budget:
        m //= 2
    guess = BR.dp_cost(eps0, steps, m, tiny) / RATE
    if guess > budget:
        raise OutOfReach(f"bounded-range: {steps} runs need a dynamic program of about "
                         f"{guess:.2g} s (budget {budget:.2g} s)")
    best_lo, best_up = 0.0, math.inf
    start = time.monotonic()
    while True:
        t0 = time.monotonic()
        lo, up = query(BR.ladder(eps0, steps, m, tiny))
        took = time.monotonic() - t0
        best_lo, best_up = max(best_lo, lo), min(best_up, up)
        if best_up - best_lo <= tol * best_up:
            return best_lo, best_up, True, ""
        if time.monotonic() - start + 4.5 * took > budget or m >= MAX_M:
            return best_lo, best_up, False, (f"bounded-range: a grid of {m} cells per eps "
                                             f"reached the time budget ({budget:g} s)")
        m *= 2


def _rdp_upper(mechanism, query: str, value: float):
    """The RDP method's answer (the class's exact RDP curve, composed), or None."""
    from ..registry import _REGISTRY
    try:
        m = _REGISTRY["rdp"]
        return m.epsilon(mechanism, value) if query == "epsilon" else m.delta(mechanism, value)
    except (OutOfReach, ValueError, NotImplementedError, ArithmeticError, KeyError):
        return None


def _fallback(mechanism, query: str, value: float, lower: float, why: str) -> Guarantee:
    """Past the budget: the smaller upper end of rdp and pld, the pairs' lower end."""
    from ..registry import _REGISTRY
    answers = [] if (r := _rdp_upper(mechanism, query, value)) is None else [r]
    try:
        m = _REGISTRY["pld"]
        answers.append(m.epsilon(mechanism, value) if query == "epsilon"
                       else m.delta(mechanism, value))
    except (OutOfReach, ValueError, NotImplementedError, ArithmeticError):
        pass
    if not answers:
        raise OutOfReach(why)
    g = min(answers, key=lambda a: a.value)
    lows = [v for v in (lower, g.lower) if v is not None]
    low = min(max(lows), g.value) if lows else None
    note = f"{why}; upper end from {g.method}"
    return _guarantee(query, value, g.value, low, f"{g.source}; lower: T runs of one pair "
                      "(P_t, Q_t)", False, note)


def _guarantee(query: str, given: float, up: float, low: float | None, source: str,
               met: bool, note: str) -> Guarantee:
    eps, delta = (up, given) if query == "epsilon" else (given, up)
    return Guarantee(eps, delta, low, "bounded-range", source, query, note, tol_met=met,
                     tol_why=note)


def _eps_steps(mechanism) -> tuple[float, int]:
    c = common(mechanism)
    if isinstance(c, Support):
        raise ValueError(c.why)
    return c


def _answer(mechanism, query: str, value: float, tol, budget) -> Guarantee:
    """T >= 2 runs: the dynamic program's bracket, its upper end lowered to the RDP method's
    where that is smaller (both are proven), its lower end raised to the pairs' (T runs of
    one (P_t, Q_t)); past the budget :func:`_fallback`."""
    eps0, steps = _eps_steps(mechanism)
    tol = TOL if tol is None else tol
    budget = BUDGET if budget is None else budget
    if query == "epsilon":
        pairs = pairs_epsilon_lower(eps0, steps, value)
        run, tiny = (lambda lad: BR.epsilon_bracket(lad, value)), value * tol * 1e-3 / steps
    else:
        pairs = pairs_delta_lower(eps0, steps, value)
        run, tiny = (lambda lad: BR.delta_bracket(lad, value)), 1e-30 / steps
    try:
        lo, up, met, note = _refine(eps0, steps, run, tol, budget, tiny)
    except OutOfReach as e:
        return _fallback(mechanism, query, value, pairs, str(e))
    source = SOURCE
    r = _rdp_upper(mechanism, query, value)
    if r is not None and r.value < up:
        up, source = r.value, f"{SOURCE}; upper end: {r.source}"
    lo = min(max(lo, pairs), up)
    if not met and up - lo <= tol * up:
        met, note = True, ""
    return _guarantee(query, value, up, lo, source, met, note)


def _epsilon(mechanism, delta, tol=None, budget=None, **_):
    eps0, steps = _eps_steps(mechanism)
    if delta == 0.0:
        return Guarantee(ulps_up(steps * eps0, 2), 0.0, ulps_down(steps * eps0, 2),
                         "bounded-range", "pure DP: T eps (approached as t -> eps)", "epsilon")
    if steps == 1:
        lo, up = _one_epsilon(eps0, delta)
        return Guarantee(up, delta, lo, "bounded-range", SOURCE, "epsilon", tol_met=True)
    return _answer(mechanism, "epsilon", delta, tol, budget)


def _delta(mechanism, epsilon, tol=None, budget=None, **_):
    eps0, steps = _eps_steps(mechanism)
    if steps == 1:
        lo, up = _one_delta(eps0, epsilon)
        return Guarantee(epsilon, up, lo, "bounded-range", SOURCE, "delta", tol_met=True)
    return _answer(mechanism, "delta", epsilon, tol, budget)


register(Method("bounded-range", _epsilon, _delta, lambda m: bool(_supports(m)), rank=5,
                supports=_supports, options=("tol", "budget")))
