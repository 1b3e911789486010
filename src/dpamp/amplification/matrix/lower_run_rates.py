"""A proven lower end for (cyclic) Poisson sampling on any C >= 0: the whole run's matched
filter.

The record's clipped gradient is one unit vector in every step it enters and the other
records' gradients are 0: an actual pair of neighbours, so any post-processing of it bounds
the mechanism's delta(eps) from below (:mod:`.lower_bins`). Projected on that vector the
release is y = C x + sigma N(0, I), x the record's participation: x_s ~ Bernoulli(q)
independently on the steps E it may join (every step under Poisson; under cyclic Poisson
with p groups its group's steps, here group 0's: 0, p, 2p, ..., a fixed group as the other
cyclic-Poisson witnesses take it), 0 elsewhere.

Take the single statistic T = <u, y> / |u| with u = C 1_E, the mean of the release when
every joinable step is taken. Without the record T ~ N(0, sigma^2); with it T ~ N(A,
sigma^2), A = sum_{s in E} x_s a_s, a_s = <u, C e_s> / |u| >= 0. So the pair is the mixture
over the law of A of N(A, sigma^2) against N(0, sigma^2): dpamp's ``MixtureOfGaussians``
(the remove order; the engine composes its swap too).

**The law of A.** The a_s are put in at most MAX_GROUPS groups (their distinct values, or
runs of the sorted values), each a_s lowered to its group's least value v_j; then
A >= sum_j v_j K_j with K_j ~ Binomial(n_j, q) independent (n_j the group's steps). Each
binomial law comes from the recursion p_k <- p_k (1 - q) + p_(k-1) q (non-negative terms
only: within (4 n_j + 8) u relative of the truth; Higham 2002, Sec. 3.1), masses below
2^-1000 set to 0; the groups' laws are convolved one at a time, after each step every value
rounded down onto at most MAX_COMPONENTS kept values (:func:`.lower._reduce`). Lowering a
shift or moving mass to the zero shift gives a stochastically smaller law of non-negative
shifts, so a dominated mixture in both orders (:mod:`.lower`, module docstring). For a
Toeplitz C the steps away from both ends share one a_s, so one group holds nearly all.

**C.** A Toeplitz C (at most MAX_WORK multiply-adds of its coefficients over the n steps)
is read from its coefficients, u and C^T u by one shifted sum per coefficient in a fixed
order (no BLAS: the same bits on every machine); a dense C by its n x n array (n^2 at most
MAX_WORK); a computed C (a BLT) through its lowered proxy C' <= C
(:func:`.lower_bins.lowered_proxy`): the statistic is one-dimensional, so its shifts under
C are at least those computed from C'.

**Rounding**, as in :mod:`.lower_run`: C scaled by a power of two, each sum of non-negative
terms lowered by its gamma bound, the masses padded down by their recursions' and merges'
error, the zero shift taking the rest.

**b-min-separation sampling** (a Toeplitz C >= 0 of b bands, separation s; the chain takes
an eligible step with probability p and then bars the next s - 1). u = C 1 over every step;
the steps b - 1 <= t <= n - b (m of them) share a_t = P_(b-1)^2 / |u| (P the prefix sums of
c), the others' terms are lowered to 0, so A >= a K with K the participations among those
m steps. Given the chain's state on entering them (r >= 0 steps still barred), its i-th
participation comes at r + T_i, T_i the times of a chain that enters eligible, driven by the
same coin flips: K is pathwise non-increasing in r, so K given the most barred entry state
r = s - 1, which is the count of an eligible chain over m - s + 1 steps, is stochastically
below K under any initial law (cold or warm). Its law by the chain's recursion over (state,
count), non-negative terms only.

What is loose: T keeps the record's total and drops where in the run it took part, which
the windowed witnesses of :mod:`.lower_block` keep (and lose the rows between windows); it
is the one lower end of a computed or dense C >= 0 that keeps the coherent sum of every row.
"""
from __future__ import annotations

import numpy as np

from ...mechanisms.matrix_strategies import Strategy
from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from .lower import MAX_COMPONENTS, RUN, Witness, _reduce
from .lower_bins import MAX_WORK, _toeplitz, _usable, dominated_mixture, lowered_proxy
from .lower_run import _lowered_shifts, _scale, _toeplitz_norm

__all__ = ["rate_filter_witnesses", "minsep_filter_witnesses", "MAX_GROUPS", "MAX_RECURSION"]

_U = 2.0 ** -53
_NEGLIGIBLE = 2.0 ** -1000
#: the most groups of equal (lowered) shifts the law of A is built from
MAX_GROUPS = 32
#: the most binomial recursion steps (joinable steps) the witness takes
MAX_RECURSION = 1 << 17


def rate_filter_witnesses(strategy: Strategy, sigma: float, q: float, partitions: int = 1
                          ) -> list[Witness]:
    """The whole run's matched filter under (cyclic) Poisson sampling at rate ``q`` with
    ``partitions`` groups (module docstring): [the mixture over the law of A], or [] where C
    is not square lower triangular and >= 0, the sums are beyond MAX_WORK, more than
    MAX_RECURSION joinable steps, q is 0, or a shift over sigma is outside the doubles."""
    if not _usable(strategy):
        proxy = lowered_proxy(strategy)
        if proxy is None:
            return []
        strategy = proxy
    n = strategy.n
    joinable = np.arange(0, n, partitions)
    if not 0 < q or joinable.size > MAX_RECURSION:
        return []
    got = _filter_sums(strategy, joinable)
    if got is None:
        return []
    k, g, norm2, terms = got
    groups = _groups(g)
    vals, probs, rel_p = _law(groups, q)
    if vals.size < 2:
        return []
    # (a value: at most len(groups) products v_j k_j, each one rounding, and their sums; the
    # subnormal allowance of a g is multiplied by k_j, so it counts every joinable step)
    shifts = _lowered_shifts(vals, k, n, norm2, terms, joinable.size + 2 * len(groups) + 2)
    mixture = dominated_mixture(shifts, probs, sigma, rel_p)
    if mixture is None:
        return []
    return [Witness(RUN, ((MixtureOfGaussians(sigma, *mixture), 1),), 0, 1)]


def _filter_sums(strategy: Strategy, joinable: np.ndarray) -> tuple | None:
    """(k, g, |u|^2, terms): g_s = <u, C e_s> over the joinable steps s, u = C 1_E, both for
    C scaled by 2^-k (so scaled by 2^-2k), ``terms`` the products per sum; None beyond
    MAX_WORK or where C 1_E is 0."""
    n = strategy.n
    c = _toeplitz(strategy)
    if c is not None:
        c = c[:n]
        if n * c.size > MAX_WORK or not c.any():
            return None
        k, c = _scale(c)
        x = np.zeros(n)
        x[joinable] = 1.0
        u = np.zeros(n)
        for i in range(c.size):          # u_t = sum_i c_i x_(t - i), i ascending
            u[i:] += c[i] * x[:n - i]
        g = np.zeros(n)
        for i in range(c.size):          # (C^T u)_s = sum_i c_i u_(s + i)
            g[:n - i] += c[i] * u[i:]
        terms = c.size
        g = g[joinable]
    else:
        if n * n > MAX_WORK:
            return None
        d = np.abs(np.asarray(strategy.dense(), dtype=float))[:, joinable]
        if not d.any():
            return None
        k, d = _scale(d)
        u = d.sum(axis=1)
        g = np.einsum("t,tj->j", u, d)   # (no BLAS: the same bits on every machine)
        terms = n
    norm2 = float(np.einsum("t,t->", u, u))
    if not norm2 > 0:
        return None
    return k, g, norm2, terms


def _groups(g: np.ndarray) -> list[tuple[float, int]]:
    """(v_j, n_j): the values g grouped, each lowered to its group's least (its distinct
    values, or MAX_GROUPS runs of the sorted values, equal ends merged); zeros dropped."""
    g = np.sort(g[g > 0])
    if g.size == 0:
        return []
    vals, counts = np.unique(g, return_counts=True)
    if vals.size > MAX_GROUPS:
        runs = np.array_split(g, MAX_GROUPS)
        vals, back = np.unique([r[0] for r in runs], return_inverse=True)
        counts = np.bincount(back, weights=[r.size for r in runs]).astype(int)
    return list(zip(vals.tolist(), counts.tolist()))


def _binomial(m: int, q: float) -> tuple[int, np.ndarray]:
    """(first count, masses) of Binomial(m, q) by the recursion of the module docstring,
    each mass within (4 m + 8) u relative of the truth or below it (masses under 2^-1000
    set to 0 on the way: only lowered)."""
    r = 1.0 - q
    first, p = 0, np.ones(1)
    for _ in range(m):
        nxt = np.zeros(p.size + 1)
        nxt[:-1] = p * r
        nxt[1:] += p * q
        nxt[nxt < _NEGLIGIBLE] = 0.0
        nz = np.flatnonzero(nxt)
        first += int(nz[0])
        p = nxt[nz[0]:nz[-1] + 1]
    return first, p


def _law(groups: list[tuple[float, int]], q: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, masses, relative error bound of the masses) of sum_j v_j K_j, stochastically
    lowered (module docstring)."""
    vals: np.ndarray = np.zeros(1)
    probs: np.ndarray = np.ones(1)
    rel_p = 0.0
    for v, m in groups:
        first, pk = _binomial(m, q)
        w = v * (first + np.arange(pk.size))
        merged = vals.size * w.size
        vals = (vals[:, None] + w[None, :]).ravel()
        probs = (probs[:, None] * pk[None, :]).ravel()
        keep = probs >= _NEGLIGIBLE
        vals, back = np.unique(vals[keep], return_inverse=True)
        probs = np.bincount(back, weights=probs[keep], minlength=vals.size)
        if vals.size > MAX_COMPONENTS:
            vals, probs = _reduce(vals, probs)
        # (the binomial's recursion; a product and a merge of at most ``merged`` terms,
        # twice the gamma bound for safety)
        rel_p += (4 * m + 8) * _U + 2 * (2 * merged + 8) * _U
        if vals.size == 0:
            break
    return vals, probs, rel_p


def minsep_filter_witnesses(strategy: Strategy, sigma: float, p: float, separation: int
                            ) -> list[Witness]:
    """The whole run's matched filter under b-min-separation sampling (module docstring):
    [the mixture over a K], or [] where C is not a Toeplitz C >= 0 (a computed one through
    its lowered proxy), no step is left between the ends and the most barred entry, more
    than MAX_RECURSION steps or MAX_WORK chain cells, or a shift over sigma is outside the
    doubles."""
    if not _usable(strategy):
        proxy = lowered_proxy(strategy)
        if proxy is None:
            return []
        strategy = proxy
    c = _toeplitz(strategy)
    if c is None:
        return []
    n = strategy.n
    c = c[:n]
    b = c.size
    steps = (n - 2 * b + 2) - (separation - 1)
    if steps <= 0 or steps > MAX_RECURSION or steps * (steps // separation + 2) > MAX_WORK:
        return []
    k, _, top, norm2 = _toeplitz_norm(c, n)
    counts, masses, rel_p = _chain_counts(steps, p, separation)
    vals, probs = top * counts, masses
    if vals.size > MAX_COMPONENTS:
        vals, probs = _reduce(vals, probs)
    # (a value: the product top * count, one rounding; top a square of a sum of b terms,
    # at least 1/4 once scaled; the subnormal allowance counted for every step anyway)
    shifts = _lowered_shifts(vals, k, n, norm2, b, steps + 4)
    mixture = dominated_mixture(shifts, probs, sigma, rel_p + 2 * (counts.size + 8) * _U)
    if mixture is None:
        return []
    return [Witness(RUN, ((MixtureOfGaussians(sigma, *mixture), 1),), 0, 1)]


def _chain_counts(steps: int, p: float, separation: int
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """(counts, masses, relative error bound) of the participations of the min-separation
    chain over ``steps`` steps entered eligible: the recursion over f[state, count] (state 0
    eligible, d >= 1 barred for d more steps), non-negative terms only, masses below 2^-1000
    set to 0 (only lowered)."""
    s = separation
    f = np.zeros((s, steps // s + 2))
    f[0, 0] = 1.0
    r = 1.0 - p
    for _ in range(steps):
        g = np.zeros_like(f)
        g[0] = f[0] * r
        g[s - 1, 1:] += f[0, :-1] * p            # taken: s - 1 barred steps follow
        if s > 1:
            g[0] += f[1]                         # the last barred step passes
            g[1:s - 1] += f[2:]
        g[g < _NEGLIGIBLE] = 0.0
        f = g
    masses = f.sum(axis=0)
    keep = np.flatnonzero(masses)
    return keep.astype(float), masses[keep], (4 * steps + 2 * s + 16) * _U
