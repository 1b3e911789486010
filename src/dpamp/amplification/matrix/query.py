"""epsilon(delta) and delta(epsilon) of the conditional-composition bound
(:mod:`.conditional`): delta(eps) <= delta_PLD(eps) + delta', the slack
delta' = e^{eps0} delta_P + delta_PLD(eps0) reported beside the answer.

The budget delta_P of the bad histories is chosen before the mixtures are built (they depend on
it): for an epsilon query at delta, delta_P = eta delta e^{-g} / 2 for a guess g of eps0, eps0
is the PLD's epsilon at eta delta / 2 (so delta' <= eta delta when eps0 <= g; g is raised and
the mixtures rebuilt otherwise, at most twice); the answer is the PLD's epsilon at
delta - delta'. Every choice is a function of the inputs only (same question, same answer).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core.rounding import ulps_up
from ...mechanisms.composition import compose_counts
from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from .bins import dominating_steps_bins
from .conditional import CONDITIONAL, WINDOW, StepMixtures, dominating_steps

__all__ = ["Amplified", "epsilon", "delta", "epsilon_bins", "delta_bins", "composition"]

#: share of delta spent on the bad histories (eta) in an epsilon query
ETA = 0.1
#: the bad histories' budget of a delta query
DELTA_P = 1e-12


@dataclasses.dataclass(frozen=True)
class Amplified:
    """A proven (epsilon, delta) of the matrix mechanism: ``delta`` = ``delta_pld`` + ``slack``
    (the bad histories, module docstring); ``steps`` the mixtures composed."""

    epsilon: float
    delta: float
    delta_pld: float
    slack: float
    steps: StepMixtures
    route: str = CONDITIONAL


def composition(steps: StepMixtures):
    """The adaptive composition of the steps' mixtures against N(0, sigma^2) (dpamp's
    ``MixtureOfGaussians``, whose PLD upper pair is certified)."""
    parts = [(MixtureOfGaussians(steps.sigma, s, p), count) for (s, p), count in steps.parts]
    return compose_counts(parts)


def _slack(steps: StepMixtures, eps0: float, d_p: float, d_pld0: float) -> float:
    """delta' = e^{eps0} delta_P + delta_PLD(eps0), rounded up; 0 when no step has a past to
    condition on (a diagonal C: the mixtures are exact, no history is bad)."""
    if steps.events == 0:
        return 0.0
    log_part = eps0 + math.log(d_p)
    if log_part > 0:                  # the slack is above 1: no bound from this candidate
        return math.inf
    return float(ulps_up(math.exp(log_part) * (1 + 1e-12) + d_pld0, 4))


def _eps(comp, d: float) -> float:
    return float(comp.epsilon(d, method="pld").epsilon)


def _candidate(build, delta, eta, guess) -> tuple[Amplified, float]:
    """The bound with the bad histories' budget eta delta e^{-guess} / 2 (``build(d_p)`` makes
    the steps' mixtures), and its eps0."""
    d_p = eta * delta * math.exp(-guess) / 2
    if not d_p > 0:                   # underflow: no budget to split, no candidate
        return Amplified(math.inf, delta, 0.0, math.inf, build(1e-300)), math.inf
    steps = build(d_p)
    comp = composition(steps)
    eps0 = _eps(comp, eta * delta / 2)
    slack = _slack(steps, eps0, d_p, eta * delta / 2)
    if slack >= delta:
        return Amplified(math.inf, delta, 0.0, slack, steps), eps0
    # the PLD's share rounded down (fl(delta - slack) may lie half an ulp above the difference),
    # so that delta_PLD + slack <= delta holds in exact arithmetic
    share = math.nextafter(delta - slack, 0.0)
    return Amplified(_eps(comp, share), delta, share, slack, steps), eps0


def _groups(n: int, partitions: int):
    """The steps of each group of cyclic Poisson (group g: steps g, g + p, ...); one group of
    every step for Poisson (None)."""
    if int(partitions) != partitions or partitions < 1:
        raise ValueError(f"partitions must be an integer >= 1 (got {partitions!r})")
    if partitions == 1:
        return [None]
    idx = np.arange(n)
    return [idx % partitions == g for g in range(min(partitions, n))]


def _check(delta: float, eta: float) -> None:
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) (got {delta!r})")
    if not (0 < eta < 1):
        raise ValueError(f"eta must be in (0, 1) (got {eta!r})")


def epsilon(c, sigma: float, q: float, delta: float, *, partitions: int = 1,
            eta: float = ETA, window: int = WINDOW) -> Amplified:
    """The epsilon this route proves at ``delta`` under (cyclic) Poisson sampling: with
    ``partitions`` groups, the largest over the groups (a record is in one group, and every
    record must be covered), each group's the smallest of :func:`_best_epsilon`."""
    _check(delta, eta)
    n = np.shape(c)[0]
    out = [_best_epsilon(lambda d_p, e=e: dominating_steps(c, sigma, q, d_p, window, e),
                         delta, eta) for e in _groups(n, partitions)]
    return max(out, key=lambda r: r.epsilon)


def epsilon_bins(c, sigma: float, bins: int, delta: float, *, eta: float = ETA,
                 window: int = WINDOW) -> Amplified:
    """The epsilon this route proves at ``delta`` under balls in bins (:mod:`.bins`)."""
    _check(delta, eta)
    return _best_epsilon(lambda d_p: dominating_steps_bins(c, sigma, bins, d_p, window),
                         delta, eta)


def _best_epsilon(build, delta, eta) -> Amplified:
    """The smallest epsilon over at most ten guesses g of eps0. From 5: while the slack
    e^{eps0 - g} eta delta / 2 + eta delta / 2 is not below delta, the next guess is eps0 + 1/2
    (after two such misses, at least 2 g: a larger guess shrinks the budget per set, which
    raises eps0 until the posterior bounds saturate at 1); once a candidate is finite, one more
    at eps0 + 1/2 if that is smaller (a smaller guess buys a larger budget). Capped at 690
    (e^-690 eta delta / 2 is still a positive double for any delta above 1e-14).
    Every candidate is proven; the answer is a function of the inputs only."""
    best, guess, tried, misses = None, 5.0, set(), 0
    for _ in range(10):
        tried.add(guess)
        cand, eps0 = _candidate(build, delta, eta, guess)
        if best is None or cand.epsilon < best.epsilon:
            best = cand
        if cand.steps.events == 0:
            break
        if math.isfinite(cand.epsilon):
            lower = round(eps0 + 0.5, 3)
            if lower >= guess:
                break
            guess = lower
        else:
            misses += 1
            nxt = eps0 + 0.5 if misses < 3 else max(eps0 + 0.5, 2 * guess)
            guess = min(round(nxt, 3), 690.0)
        if guess in tried:
            break
    assert best is not None
    return best


def delta(c, sigma: float, q: float, eps: float, *, partitions: int = 1,
          delta_p: float = DELTA_P, window: int = WINDOW) -> Amplified:
    """delta_PLD(eps) + delta' with the bad histories' budget ``delta_p`` and eps0 the PLD's
    epsilon at delta_p (so delta' <= (e^{eps0} + 1) delta_p); the largest over the groups of
    cyclic Poisson."""
    if not (eps >= 0):
        raise ValueError(f"epsilon must be >= 0 (got {eps!r})")
    n = np.shape(c)[0]
    return max((_delta_of(dominating_steps(c, sigma, q, delta_p, window, e), eps, delta_p)
                for e in _groups(n, partitions)), key=lambda r: r.delta)


def delta_bins(c, sigma: float, bins: int, eps: float, *, delta_p: float = DELTA_P,
               window: int = WINDOW) -> Amplified:
    """delta at ``eps`` under balls in bins (:func:`delta`'s slack)."""
    if not (eps >= 0):
        raise ValueError(f"epsilon must be >= 0 (got {eps!r})")
    return _delta_of(dominating_steps_bins(c, sigma, bins, delta_p, window), eps, delta_p)


def _delta_of(steps: StepMixtures, eps: float, delta_p: float) -> Amplified:
    comp = composition(steps)
    eps0 = _eps(comp, delta_p)
    slack = _slack(steps, eps0, delta_p, delta_p)
    d_pld = float(comp.delta(eps, method="pld").delta)
    # (a delta above 1 says nothing more than 1)
    return Amplified(eps, min(1.0, float(ulps_up(d_pld + slack, 2))), d_pld, slack, steps)
