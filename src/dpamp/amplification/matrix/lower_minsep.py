"""Windowed matched filters under b-min-separation sampling: a proven lower end for a banded
C >= 0.

The record is taken at a step with probability p unless one of the s - 1 steps before it took
it (s the separation): its pattern B is a Markov chain, so the windows of
:mod:`.lower_block` are no longer independent. They need not be. Take the windowed or
alternating witness of :mod:`.lower_block` (the same rows R_j, the same statistic
T_j = <v_j, y_j> / |v_j| with shifts a_{j,k} >= 0 of the window's steps in order). Given the
outputs of the windows before j, the noise of y_j is fresh and B restricted to W_j has the law
sum_r pi(r | past) Law(B_{W_j} | r), r in {0 .. s - 1} the chain's entry state (its first r
steps barred; the chain is Markov). So T_j given the past is the mixture
sum_S w(S) N(S, sigma^2) of its sum S = sum_k B_k a_{j,k} under that posterior mixture.

**A law below every entry state.** Let D_j be a law with survival function at most
min_r P[S >= t | r] for every t. Then S given any past is stochastically larger than D_j, and
the pair (sum_S w(S) N(S, sigma^2), N(0, sigma^2)) dominates (sum D_j(S) N(S, sigma^2),
N(0, sigma^2)): couple S >= S' pointwise; both hockey-stick curves of a mixture of
N(s_i, sigma^2) (s_i >= 0) against N(0, sigma^2) are non-decreasing in each s_i (the
derivative is w_i Cov_{y ~ N(s_i, sigma^2)}(phi'(L(y)), y) >= 0, L increasing in y, phi convex),
so by Blackwell's theorem (Blackwell 1953; Dong, Roth & Su 2022, Thm 2.10) a kernel maps the
first pair to the second. Applying, window by window, the kernel chosen for the past that has
been seen turns the release pair into the product over the windows of the (D_j mixture,
N(0, sigma^2)) pairs: a post-processing of an actual pair of neighbours, whose delta(eps) the
PLD's optimistic discretisation bounds from below. Both orders (remove and add) follow.

**The law** (:func:`chain_sum_law`). For each entry state r, the law of S on a lattice h Z,
h a power of two, 1/LATTICE (fewer points where MAX_CHAIN_WORK binds) of the sum of the
m = ceil(L / s) largest shifts scaled into [1/2, 1) (no pattern takes more than m steps, so
no S passes it): shifts rounded down to h k_k (S' <= S), the chain run over the window's
steps in order (state 0 eligible, d >= 1 barred for d more steps; an eligible step is taken
with probability p, adding k_k and barring the next s - 1), every term a sum of non-negative
products (relative error within (4 L + 4) u), the survival functions by suffix sums (K
more), lowered by all of it and an absolute 2^-1030 for the subnormals, their minimum over
r taken, and the masses as its differences lowered by 4 ulps (so the law's survival stays
below the minimum). Then the shifts are rounded down onto at most ``count`` values
(:func:`.lower._reduce`), each merged mass lowered by the error of its float sum. A window
shorter than s gives the point mass at 0 (the entry state s - 1 bars it whole), so the chain
runs only for s <= L <= MAX_WINDOW and its arrays hold at most s^2 x LATTICE floats (fewer
lattice points where MAX_CHAIN_WORK binds).

The windows' lengths are chosen among s, 2 s, 4 s, 8 s (at least b - 1 for the alternating
witness, at most MAX_WINDOW and n; a window shorter than s may be barred whole): any choice
is valid, :func:`.lower.lower_end` keeps the largest answer. Initial state: any (the cold and
the warm start are both entry states).
"""
from __future__ import annotations

import math

import numpy as np

from ...mechanisms.matrix_strategies import Strategy
from .lower import MAX_COMPONENTS, Witness, _reduce
from .lower_block import MAX_WINDOW, MAX_WORK, block_witness, representatives

__all__ = ["chain_sum_law", "minsep_witnesses", "MAX_CHAIN_WORK"]

_U = 2.0 ** -53
#: lattice points of a window's law (fewer where the chain's work would pass MAX_CHAIN_WORK)
LATTICE = 4096
#: the most multiply-adds of one window's chain recursion (entry states x states x lattice x
#: steps)
MAX_CHAIN_WORK = 1 << 28


def _run_chain(k: np.ndarray, p: float, sep: int, size: int) -> np.ndarray:
    """(sep, size): for each entry state r, the probabilities of S' = h sum_k B_k k_k on the
    lattice after the window's steps (shifts k in step order)."""
    f = np.zeros((sep, sep, size))                # (entry state, state, lattice)
    f[np.arange(sep), np.arange(sep), 0] = 1.0
    stay = 1.0 - p
    for x in k.tolist():
        nxt = np.zeros_like(f)
        nxt[:, 0, :] = f[:, 0, :] * stay
        if sep > 1:
            nxt[:, 0, :] += f[:, 1, :]
            nxt[:, 1:sep - 1, :] = f[:, 2:, :]
        taken = sep - 1 if sep > 1 else 0
        nxt[:, taken, x:] += p * f[:, 0, :size - x]
        f = nxt
    return f.sum(axis=1)


def chain_sum_law(shifts, p: float, sep: int, count: int = MAX_COMPONENTS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(values, probabilities), 0 first, of a law D stochastically below the law of
    S = sum_k B_k a_k (a_k >= 0 in step order, B the separation-``sep`` chain at rate ``p``)
    from every entry state (module docstring), with at most ``count`` values."""
    a = np.asarray(shifts, dtype=float)
    none = np.zeros(1), np.ones(1)                # the point mass at 0: below every law
    # a window shorter than the separation is barred whole from the entry state s - 1 (the
    # minimum over entry states is the point mass at 0, exactly what the chain would give);
    # past it s <= L <= MAX_WINDOW, so the chain's arrays stay within s^2 * LATTICE floats
    if a.size < sep or p == 0 or not np.isfinite(a).all() or not (a > 0).any():
        return none
    # no pattern takes more than m = ceil(L / s) steps: S <= the m largest shifts' sum, the
    # scale of the lattice (not the whole window's sum, which a large s never reaches)
    m = -(-a.size // sep)
    most = np.argsort(a, kind="stable")[a.size - m:]              # the m largest
    try:
        top = math.fsum(a[most].tolist())
    except OverflowError:                         # a sum beyond the doubles: no lattice
        return none
    e = math.frexp(top)[1]
    a = np.ldexp(a, -e)                           # that sum in [1/2, 1): exact
    points = LATTICE
    while points > 64 and sep * sep * points * a.size > MAX_CHAIN_WORK:
        points //= 2
    h = 2.0 ** -math.ceil(math.log2(points))      # a power of two: exact
    k = np.floor(a / h * (1 - 4 * _U)).astype(np.int64)      # k h <= a
    k = np.maximum(k, 0)
    # (k is non-decreasing in a: the same steps carry the largest k) every reachable S' below
    size = int(k[most].sum()) + 1
    law = _run_chain(k, p, sep, size)
    rel = (4 * a.size + sep + size + 16) * 2 * _U
    surv = np.flip(np.cumsum(np.flip(law, axis=1), axis=1), axis=1)     # P[S' >= j h]
    surv = np.maximum(surv * (1 - rel) - 2.0 ** -1030, 0.0).min(axis=0)
    surv[0] = 1.0
    nxt = np.concatenate([surv[1:], [0.0]])
    probs = np.maximum(surv - nxt, 0.0) * (1 - 4 * _U)
    vals = np.ldexp(np.arange(size) * h, e)       # exact: integers times 2^j
    nz = probs > 0
    nz[0] = True
    vals, probs = vals[nz], probs[nz]
    if vals.size > count:
        vals, probs = _reduce(vals, probs, count,
                              64 if count >= MAX_COMPONENTS else count // 2 - 1)
        # each merged mass is a float sum of at most ``size`` masses: lowered by that error
        probs = probs * (1 - (size + 2) * _U)
    probs = np.where(vals > 0, np.where(probs < 2.0 ** -1000, 0.0, probs), 0.0)
    probs[0] = max(1.0 - math.fsum(probs[1:].tolist()), 0.0)
    return vals, probs


def _lengths(n: int, bands: int, sep: int, alternating: bool) -> list[int]:
    """The candidate window lengths (module docstring)."""
    base = max(sep, bands - 1 if alternating else 1, 1)
    out = {min(f * base, MAX_WINDOW, n) for f in (1, 2, 4, 8)}
    return sorted(x for x in out if x >= (bands - 1 if alternating else 1))


def minsep_witnesses(strategy: Strategy, sigma: float, p: float, sep: int) -> list[Witness]:
    """Every candidate windowed and alternating witness under ``sep``-min-separation
    sampling at rate ``p`` (module docstring), or [] where they do not apply (C not square
    lower triangular, not >= 0, computed, no bands known, or the blocks beyond MAX_WORK)."""
    b = strategy.bands
    if b is None or not strategy.square_lower or not strategy.nonnegative() \
            or strategy.coeff_error:
        return []
    n = strategy.n
    joinable = np.ones(n, dtype=bool)
    out = []
    for alternating in (False, True):
        for length in _lengths(n, int(b), sep, alternating):
            js, _ = representatives(strategy, length, 1)
            if js.size * length * (length + b) > MAX_WORK:
                continue
            w = block_witness(strategy, sigma, p, joinable, length, alternating, 0, 1,
                              law=lambda key, count: chain_sum_law(key, p, sep, count),
                              ordered=True)
            if w is not None:
                out.append(w)
    return out
