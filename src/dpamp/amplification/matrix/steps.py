"""The dominating mixture of Gaussians of one step of a Poisson-sampled matrix mechanism, given
the past (conditional composition: Choquette-Choo, Ganesh, Steinke & Thakurta, ICLR 2024).

Output i of C G + Z, given the outputs before it, is (for the data set with the record) a
mixture over the record's participation pattern x drawn from its posterior, of
N(m_i + sum_j C[i, j] x_j g_j, sigma^2 I), against N(m_i, sigma^2 I) without it. That pair is
dominated (hockey-stick divergence, both orders) by the scalar mixture
sum_s w_s N(s, sigma^2) against N(0, sigma^2) as soon as the law w stochastically dominates
S_i = sum_j |C[i, j]| x_j under the posterior:

- the vector mixture is dominated by the scalar one with each shift replaced by a larger norm:
  pad each shift u_x to norm r_x >= |u_x| in its own new coordinate (projection is a
  post-processing, the same for every component), then, at fixed norms, the likelihood ratio
  sum_x pi_x exp(<u_x, y> - r_x^2 / 2) is a convex function of a sum of non-decreasing functions
  of the Gaussians <u_x, y> ~ N(0, r_x^2), whose expectation (either order of the hockey-stick)
  is largest when they are comonotone (Lorentz 1953 for n variables, Tchen 1980; as comonotone sums
  being largest in convex order, Dhaene, Denuit, Goovaerts, Kaas & Vyncke 2002), i.e.
  all shifts on one ray;
- a stochastically larger law of shifts dominates: couple S <= S', and the mixture indexed by
  the pair (S, S') with shifts S is dominated by the one with shifts S' (previous item).

The posterior law of S_i is bounded through the window W of the last past steps with
C[i, j] != 0 (older ones are counted as taken part, their |C[i, j]| added to every shift; the
current step's x_i is independent of the past, Bernoulli(q)): for a threshold t, every pattern
with s(x) >= t contains a set A minimal for t (s(A) >= t > s(A without j) for all j in A), so

    Pr[s(x_W) >= t | past] <= sum_{A minimal for t} Pr[x_A = 1 | past]
                          <= sum_{A minimal for t} min(1, q^|A| e^{eps_A})

on the good event of :mod:`.tails` (its probability budget beta per set). The tail function
T(t), made non-increasing by a running minimum (the sets {s >= t} shrink as t grows), defines
the dominating law.
"""
from __future__ import annotations

import math

import numpy as np

from .tails import posterior_exponents

__all__ = ["step_mixture", "window_law", "dominating_law", "set_budgets", "subsets", "merge",
           "MAX_COMPONENTS"]

#: shifts of one step's mixture at most: beyond, shifts are rounded up onto a grid (larger
#: shifts dominate, previous module docstring), which keeps the PLD of each step cheap
MAX_COMPONENTS = 64
#: relative padding of sums of floats that must be upper bounds (shifts, norms, tails)
_REL = 1e-12


def subsets(w: int) -> np.ndarray:
    """The 2^w patterns of w steps as rows of 0/1 (bit j of the row index is step j)."""
    idx = np.arange(1 << w)
    return ((idx[:, None] >> np.arange(w)) & 1).astype(float)


def _tail_function(s: np.ndarray, p_sets: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray]:
    """(values v, tails T(v)) of the dominating law of s(x_W): v the sorted distinct shifts
    (v[0] = 0 for the empty pattern), T(v_k) an upper bound on Pr[s >= v_k] (T(v_0) = 1)."""
    masks = np.arange(1 << w)
    lo = np.full(masks.size, -np.inf)
    for j in range(w):
        has = (masks >> j) & 1 == 1
        lo[has] = np.maximum(lo[has], s[masks[has] ^ (1 << j)])
    v = np.unique(s)
    # set A (non-empty) is minimal for thresholds t with lo_A < t <= s_A
    sel = (lo[None, 1:] < v[1:, None]) & (v[1:, None] <= s[None, 1:])
    raw = sel.astype(float) @ p_sets[1:]
    tails = np.minimum.accumulate(np.minimum(raw * (1 + 1e-9) + 1e-300, 1.0))
    return v, np.concatenate([[1.0], tails])


def dominating_law(s: np.ndarray, p_sets: np.ndarray, w: int,
                   cap: int = MAX_COMPONENTS) -> tuple[np.ndarray, np.ndarray]:
    """(shifts, masses) of a law stochastically dominating s(x) for x a pattern of w
    coordinates with Pr[x_A = 1] <= p_sets[A] (A a bitmask; p_sets[0] unused), at most ``cap``
    shifts (rounded up)."""
    return _coarsen(*_law(*_tail_function(s, p_sets, w)), cap)


def _law(v: np.ndarray, tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masses of the law with these upper tails (built from the top: each tail is the sum of
    masses no larger than it, so the rounding stays relative to it)."""
    nxt = np.concatenate([tails[1:], [0.0]])
    mass = np.maximum(tails - nxt, 0.0)
    mass[0] = max(1.0 - tails[1], 0.0) if tails.size > 1 else 1.0
    return v, mass


def _coarsen(v: np.ndarray, mass: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``cap`` distinct shifts: each rounded up to a grid of step v_max / (cap - 1)."""
    if v.size <= cap or v[-1] <= 0:
        return v, mass
    h = v[-1] / (cap - 1)
    # ceil(v / h) h can fall an ulp short of v (v / h rounded down): the maximum keeps it above
    up = np.maximum(np.nextafter(np.ceil(v / h) * h, np.inf), v)
    up[v == 0] = 0.0
    return merge(up, mass)


def merge(v: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, inv = np.unique(v, return_inverse=True)
    return u, np.bincount(inv, weights=mass, minlength=u.size)


def set_budgets(k: np.ndarray, log_beta: float) -> np.ndarray:
    """log of each set's share of the step's budget, for the sets of sizes ``k`` (>= 1) that
    need one: the sets of size k share 2^-k (normalised over the sizes present) equally (a
    singleton's posterior bound q e^eps matters most; a large set's is small whatever its eps),
    rounded down by 1e-12 so the shares sum to at most the budget."""
    kk = k.astype(int)
    sizes, counts = np.unique(kk, return_counts=True)
    log_norm = math.log(math.fsum(2.0 ** -float(j) for j in sizes))
    log_count = dict(zip(sizes.tolist(), np.log(counts).tolist()))
    return np.array([log_beta - j * math.log(2.0) - log_norm - log_count[j] - 1e-12
                     for j in kk.tolist()])


def window_law(past_row: np.ndarray, past_block: np.ndarray, q: float, sigma: float,
               log_beta: float, cap: int = MAX_COMPONENTS) -> tuple[np.ndarray, np.ndarray]:
    """(shifts, masses) of a law dominating s(x_W) = sum_{j in W} |C[i, j]| x_j given the past
    (module docstring). ``past_row``: |C[i, j]| of the window's w past steps; ``past_block``:
    |C[t, j]| for the rows t < i that those columns touch (rows x w); ``log_beta``: the log of
    the step's share of the tail budget (split over its sets by :func:`set_budgets`)."""
    w = past_row.size
    if not w:
        return np.zeros(1), np.ones(1)
    bits = subsets(w)
    s = (bits @ past_row) * (1 + _REL)
    norms = np.sqrt(np.sum((past_block @ bits.T) ** 2, axis=0)) * (1 + _REL) / sigma
    k = bits.sum(axis=1)
    eps = posterior_exponents(norms[1:], k[1:], q, set_budgets(k[1:], log_beta))
    with np.errstate(over="ignore"):
        p_sets = np.minimum(np.exp(k[1:] * math.log(q) + eps) * (1 + _REL), 1.0)
    return dominating_law(s, np.concatenate([[0.0], p_sets]), w, cap)


def step_mixture(law: tuple[np.ndarray, np.ndarray], diag: float, older: float,
                 q: float) -> tuple[np.ndarray, np.ndarray]:
    """(shifts, probabilities) of the dominating mixture of one step: the window's law
    (:func:`window_law`), plus ``older`` (the sum of |C[i, j]| over the past steps outside the
    window, counted as taken part), plus ``diag`` = |C[i, i]| with probability q (the current
    step, independent of the past). Shifts in the units of C (sigma not divided)."""
    v, mass = law
    shifts = np.concatenate([v, v + diag]) + older
    probs = np.concatenate([mass * (1 - q), mass * q])
    shifts = shifts * (1 + _REL) if (older or diag) else shifts
    return merge(shifts, probs)
