"""Amplified upper bound of a Poisson-sampled matrix mechanism by conditional composition
(Choquette-Choo, Ganesh, Steinke & Thakurta, "Privacy Amplification for Matrix Mechanisms",
ICLR 2024, their conditional composition theorem; the bounds of each step are this package's
own, :mod:`.steps` and :mod:`.tails`).

The mechanism releases C G + Z, C lower triangular (n x n), Z ~ N(0, sigma^2 I), a record
taking part in each step independently with probability q (``dp.Poisson(q)``), its gradients
adaptive and clipped to norm 1, add/remove neighbours. Let P be the law of the outputs with the
record, Q without it, P_i and Q_i their kernels of output i given the past.

Conditional composition. On the good histories E_i (every set A of the window of step i has
R_A <= e^{eps_A}, :mod:`.tails`) the pair (P_i, Q_i) is dominated by the fixed pair
(M_i, N(0, sigma^2)), M_i the mixture of :func:`.steps.step_mixture`. Let P^ follow P's kernels
while the history is good and Q's from the first bad history on (a pair of equal kernels is
dominated by anything). The adaptive composition of dominating pairs (Zhu, Dong & Wang 2022)
makes (P^, Q) dominated by the product of the (M_i, N(0, sigma^2)), whose PLD composition
(dpamp's certified upper bound) gives delta_PLD(eps) for both orders. P^ and P agree on the
all-good event G, and P(not G) <= delta_P := sum of the budgets beta (a union bound). Then

- remove: P(S) <= P^(S) + delta_P <= e^eps Q(S) + delta_PLD(eps) + delta_P;
- add: Q(S) <= Q(S and G) + Q(not G), Q(S and G) <= e^eps P^(S and G) + delta_PLD(eps)
  <= e^eps P(S) + delta_PLD(eps), and, applying the same domination to the event "not G",
  Q(not G) <= e^{eps0} P^(not G) + delta_PLD(eps0) = e^{eps0} delta_P + delta_PLD(eps0) for any
  eps0 (fixed in advance, not the eps queried).

So delta(eps) <= delta_PLD(eps) + delta', with delta' = e^{eps0} delta_P + delta_PLD(eps0)
(>= delta_P): a slack independent of the eps queried, accounted explicitly.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core.rounding import ulps_up
from ...mechanisms.matrix import CONDITIONAL
from .steps import step_mixture, window_law
from .toeplitz_view import LowerToeplitzAbs

__all__ = ["StepMixtures", "dominating_steps", "check_lower_triangular", "CONDITIONAL",
           "WINDOW"]

#: past steps whose participation patterns are enumerated (2^WINDOW sets per step); older
#: steps with C[i, j] != 0 are counted as taken part
WINDOW = 10


@dataclasses.dataclass(frozen=True)
class StepMixtures:
    """The dominating mixtures of the steps: ``parts`` ((shifts, probabilities), count) with
    shifts in the units of C; ``delta_p`` the probability budget of the bad histories under P
    (the union bound over ``events`` sets)."""

    parts: tuple[tuple[tuple[tuple[float, ...], tuple[float, ...]], int], ...]
    delta_p: float
    events: int
    sigma: float


#: ratio of the geometric grid that the older steps' sum is rounded up onto (a larger shift
#: dominates; fewer distinct steps to compose when C has more bands than the window)
OLDER_GRID = 1 + 1 / 64


def older_grid(x: float) -> float:
    """x rounded up onto the grid OLDER_GRID^k (k an integer; 0 stays 0)."""
    if x <= 0:
        return 0.0
    k = math.ceil(math.log(x) / math.log(OLDER_GRID))
    up = OLDER_GRID ** k
    while up < x:                     # the logarithms' rounding: step up until above
        k += 1
        up = OLDER_GRID ** k
    return float(up)


def _window(row: np.ndarray, i: int, window: int) -> tuple[np.ndarray, float]:
    """The window's past columns (the last ``window`` with C[i, j] != 0) and the sum of |C[i, j]|
    over the older ones (rounded up)."""
    past = np.flatnonzero(row[:i])
    win, older = (past[-window:], past[:-window]) if window > 0 else (past[:0], past)
    if not older.size:
        return win, 0.0
    return win, float(ulps_up(math.fsum(row[older]), 4))


def check_lower_triangular(c):
    """|C| of a square, finite, lower-triangular C (errors name ``strategy``); a
    :class:`~.toeplitz_view.LowerToeplitzAbs` is one by construction and is read lazily."""
    if isinstance(c, LowerToeplitzAbs):
        return c
    c = np.asarray(c, dtype=float)
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise ValueError(f"strategy: conditional composition needs a square C (got shape "
                         f"{c.shape})")
    if not np.isfinite(c).all():
        raise ValueError("strategy: C has entries that are not finite")
    if np.any(np.triu(c, 1)):
        raise ValueError("strategy: conditional composition needs a lower-triangular C "
                         "(an output may not depend on later steps)")
    return np.abs(c)


def dominating_steps(c, sigma: float, q: float, delta_p: float, window: int = WINDOW,
                     eligible=None) -> StepMixtures:
    """Each step's dominating mixture (:func:`.steps.step_mixture`) with the budget ``delta_p``
    split over the steps and the sets of their windows; equal steps (a Toeplitz C past its
    first bands) are computed once and counted. ``eligible`` (booleans, one per step; default
    all): the steps the record may be sampled in (cyclic Poisson: its group's steps); in the
    others it never takes part, so their columns are dropped."""
    a = check_lower_triangular(c)
    n = a.shape[0]
    if eligible is not None:
        e = np.asarray(eligible, dtype=bool)
        if e.shape != (n,):
            raise ValueError(f"eligible must hold one boolean per step ({n}; got shape "
                             f"{e.shape})")
        a = a.with_mask(e) if isinstance(a, LowerToeplitzAbs) else np.where(e[None, :], a, 0.0)
    if not (0 < q <= 1):
        raise ValueError(f"sampling_prob must be in (0, 1] (got {q!r})")
    if not (delta_p > 0):
        raise ValueError(f"delta_p must be positive (got {delta_p!r})")
    wins = [_window(a[i], i, window) for i in range(n)]
    events = sum((1 << w.size) - 1 for w, _ in wins)
    # the budget split equally over the steps with a past to condition on, then over the sets
    # of each step's window (steps._set_budgets)
    busy = sum(1 for w, _ in wins if w.size)
    log_beta = math.log(delta_p) - math.log(max(busy, 1))
    laws: dict[bytes, tuple] = {}
    cache: dict[tuple, tuple] = {}
    counts: dict[tuple, int] = {}
    for i, (win, older) in enumerate(wins):
        rows = slice(int(win[0]) if win.size else i, i)
        row, block = a[i, win], a[rows, win]
        key = b"|".join([repr((row.shape, block.shape)).encode(), row.tobytes(),
                         block.tobytes()])
        if key not in laws:
            laws[key] = window_law(row, block, q, sigma, log_beta)
        full = (key, float(a[i, i]), older_grid(older))
        if full not in cache:
            sh, p = step_mixture(laws[key], full[1], full[2], q)
            cache[full] = (tuple(float(x) for x in sh), tuple(float(x) for x in p))
        counts[cache[full]] = counts.get(cache[full], 0) + 1
    return StepMixtures(tuple(counts.items()), float(delta_p), events, float(sigma))
