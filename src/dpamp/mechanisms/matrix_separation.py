"""Separation blocks: an upper plan of the noise split under b-min-separation sampling that
keeps the separation (the split's own plan forgets it: Poisson at rate p).

The argument (dpamp's own). By the noise split (:mod:`.matrix_split`) the release is a
post-processing of y_s ~ N(x_s mu_s, 1), s = 1..n, x the record's participation, here the
b-min-separation chain: a step is taken with probability p unless one of the b - 1 before it
was. Cut the steps into consecutive blocks of b (the last one, of l < b steps, shorter).

1. **At most one step per block**, and given the outputs of the blocks before it a block's
   law is sum_r pi(r | past) P_r, r the block's entry state (its first r steps still barred),
   P_r = (1 - p)^(l - r) N(0, I) + sum_{j > r} p (1 - p)^(j - r - 1) N(mu_j e_j, I) (the
   chain is Markov, the block's noise fresh); without the record N(0, I).
2. **The fully eligible block covers every state.** P_r is a post-processing of
   P = (1 - p)^l N(0, I_l) + sum_{j <= l} p (1 - p)^(j - 1) N(mu e_j, I_l), mu the block's
   largest mu_s: shift the coordinates r places (fresh N(0, 1) in front, the last r
   dropped), and scale coordinate j to mu_j / mu with noise added. Both map N(0, I) to
   itself. Drawing r from its posterior given the outputs so far and applying that map to
   independent draws of the blocks' P (or of N(0, I)) gives the whole release's law with the
   record (or without it): one kernel, so the release pair is a post-processing of the
   product of the blocks' (P, N(0, I)).
3. **Each block by a subsampled allocation.** Both hockey-stick curves of (P, N(0, I)) are
   E_Q phi(L) for a convex phi ((L - x)+ and (1 - x L)+) of the likelihood ratio
   L = w_0 + sum_j a_j X_j, X_j = e^(mu y_j - mu^2 / 2) independent with mean 1 under Q,
   a_j = p (1 - p)^(j - 1), w_0 = (1 - p)^l. With p_l = 1 - (1 - p)^l, m = ceil(p_l / p) and
   gamma = m p <= 1, a is weakly submajorized by (p, .., p, 0, ..) (m copies), so a <= u,
   u majorized by it (Marshall, Olkin & Arnold 2011, *Inequalities*, 5.A.9). Raising a
   coefficient and lowering the constant by as much does not decrease E phi
   (G(s) = E phi(K + s (X - 1)) with K = c + a_j + sum_{i != j} a_i X_i independent of
   X = X_j is convex with G'(0) = 0), and
   v -> E phi(c + sum v_j X_j) is symmetric and convex, hence Schur-convex (ibid., 3.C.2):
   the curves are at most those of L' = 1 - gamma + p sum_{j <= m} X_j, the pair
   A = (1 - gamma) N(0, I_m) + (gamma / m) sum_j N(mu e_j, I_m), which is random allocation
   (1 of m; Feldman & Shenfeld 2025) of the Poisson(gamma)-subsampled Gaussian at mu.
   Curves dominated in one direction for every x make (P, Q) a post-processing of (A, Q)
   (Blackwell 1953; Dong, Roth & Su 2022, Thm 2.10), so the product of the A's bounds the
   release in both orders.

Where the separation matters (p b not small) this is below the Poisson plan: n 1000, 8 bands
of the banded square root, p 0.1, z 3, delta 1e-4: 12.28 against 14.97. Where p b is small it
is about the same, and both are kept (the smaller answer is taken).

Rounding: m in exact rationals from a lower bound of (1 - p)^l;
gamma = m p and mu = Delta / z rounded up (a larger rate or shift is a less private step:
post-processings of it).
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from fractions import Fraction

import numpy as np

from ..core.rounding import onto_levels, ulps_up
from .matrix_split import MAX_LEVELS, step_deltas
from .matrix_strategies import Strategy
from .participation import MinSepSampling

__all__ = ["BlockPlan", "separation_blocks", "block_allocation", "block_length"]


@dataclasses.dataclass(frozen=True)
class BlockPlan:
    """The blocks as ((Delta, m, gamma, count), ...): ``count`` blocks, each random allocation
    of one of ``m`` steps of the Poisson(``gamma``)-subsampled Gaussian at sensitivity
    ``Delta`` (clipping-norm units; mu = Delta / z)."""

    parts: tuple[tuple[float, int, float, int], ...]
    length: int


def block_allocation(rate: float, length: int) -> tuple[int, float] | None:
    """(m, gamma) of a block of ``length`` steps at rate p (module docstring, 3): the
    smallest m with m p >= an upper bound of p_l = 1 - (1 - p)^l, in exact rationals from a
    lower bound of (1 - p)^l (its computed value e^x, x = l log1p(-p), lowered by its error
    (|x| + 2) 4 ulps); gamma = m p rounded up; None where m p > 1 (the dominating pair needs
    1 - gamma >= 0)."""
    if rate >= 1.0:                     # every block takes its first step: m = 1
        return 1, 1.0
    x = length * math.log1p(-rate)
    stay = max(0.0, math.exp(x) * (1.0 - (abs(x) + 2.0) * 4 * 2.0 ** -53))
    p = Fraction(rate)
    # (p_l <= l p exactly, Bernoulli's inequality: m <= l)
    m = min(length, max(1, math.ceil((1 - Fraction(stay)) / p)))
    if m * p > 1:
        return None
    # (m p <= 1 exactly: a rounding above 1 is only the rounding)
    return m, min(1.0, float(ulps_up(m * rate, 2)))


def block_length(rate: float, separation: int) -> int:
    """The longest block length l <= separation whose (m, gamma) exists (m p <= 1; m p grows
    with l), or 1 (none: the Poisson plan)."""
    for length in range(separation, 1, -1):
        if block_allocation(rate, length) is not None:
            return length
    return 1


def separation_blocks(strategy: Strategy, participation: MinSepSampling) -> BlockPlan | None:
    """The blocks of ``strategy`` under ``participation`` (module docstring), or None where
    they do not apply (C not square lower triangular; separation 1, which is Poisson; no
    block length of at least 2 with gamma <= 1). Blocks of any length l <= b are as valid
    (still at most one step each; an entry state barring the whole block leaves N(0, I)):
    the longest whose gamma is at most 1 is taken (at n 1000, 8 bands, it was the best or
    within 2e-4 of the best length in every cell tried)."""
    b = block_length(participation.sampling_prob, participation.min_separation)
    if not strategy.square_lower or b < 2:
        return None
    n = strategy.n
    per_step = step_deltas(strategy)
    starts = np.arange(0, n, b)
    tops = onto_levels(np.maximum.reduceat(per_step, starts), MAX_LEVELS, True)
    lengths = np.minimum(starts + b, n) - starts
    out: Counter = Counter()
    for d, length in zip(tops.tolist(), lengths.tolist()):
        if d <= 0:
            continue                    # the block's steps read no row: nothing released
        ma = block_allocation(participation.sampling_prob, length)
        assert ma is not None           # (m p grows with the length: l <= b has one)
        out[(float(d), ma[0], ma[1])] += 1
    parts = tuple((d, m, g, k) for (d, m, g), k in
                  sorted(out.items(), key=lambda kv: (-kv[0][0], -kv[0][1])))
    return BlockPlan(parts, b)
