"""A proven lower end for balls in bins on any C >= 0: the whole run's matched filter.

The record's clipped gradient is one unit vector in every step it enters and the other
records' gradients are 0: an actual pair of neighbours, so any post-processing of it bounds
the mechanism's delta(eps) from below (:mod:`.lower_bins`). Projected on that vector the
release is y = C x + sigma N(0, I), x the record's participation pattern: one step of each
full epoch of B steps, uniform and independent across epochs, and possibly a step of the last
partial epoch.

Take the single statistic T = <u, y> / |u| with u = C 1, the mean of the release when every
step is taken. Without the record T ~ N(0, sigma^2); with it T ~ N(A, sigma^2), where
A = sum_{s in x} a_s and a_s = <u, C e_s> / |u| >= 0. So the pair is the mixture over the law
of A of N(A, sigma^2), against N(0, sigma^2). Here A is the sum over the full epochs e of
a_(s_e), independent and each uniform over its epoch's steps. The partial epoch's term is
lowered to 0: a stochastically smaller law of non-negative shifts gives a dominated mixture
in both orders (:mod:`.lower`, module docstring).

A computed C (a BLT) is read through a lowered proxy C' <= C (:func:`.lower_bins.lowered_proxy`):
the filter u' = C' 1 >= 0 has shifts <u', C e_s> / |u'| under the true C at least those
computed from C', so the law of A computed from C' is stochastically smaller.

Where the pattern is fixed (B = 1, every step taken) this is exact: the Gaussian at
|C 1| / sigma, which no-amplification's upper end equals for C >= 0. It is also the only lower
end where the epochs are shorter than the bands (the witnesses of :mod:`.lower_bins` need
epochs of at least b - 1 steps). Where those apply, the windows of an epoch keep far more.

**A Toeplitz C** (coefficients c_0 .. c_(b-1)). u_t = P_min(t, b-1), with P the prefix sums
of c, so |u|^2 = sum_{t < b-1} P_t^2 + (n - b + 1) P_(b-1)^2. Every step s with
b - 1 <= s <= n - b has <u, C e_s> = P_(b-1)^2. So only the epochs that touch the first or the
last b - 1 steps vary; every other epoch adds the same constant, and the cost is O(b^2)
whatever n. **A dense C**: u and C^T u directly (n^2 multiply-adds, at most MAX_WORK).

**The law of A**: the varying epochs' uniform laws are convolved one at a time. After each
step every shift is rounded down onto at most MAX_COMPONENTS kept values
(:func:`.lower._reduce`), and masses below 2^-1000 are dropped (their paths' whole shift taken
as 0). Both give a stochastically smaller law.

**Rounding**, as in :mod:`.lower_bins`: C is scaled by a power of two (largest entry in
[1/2, 1)). Each sum of non-negative terms is lowered by its gamma bound (Higham 2002,
Sec. 3.1), with an absolute bound for what was rounded in the subnormals. The positive
shifts' masses are padded down by their products' and merges' error, and the zero shift takes
the rest.
"""
from __future__ import annotations

import math

import numpy as np

from ...mechanisms.matrix_strategies import Strategy
from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from .lower import MAX_COMPONENTS, RUN, Witness, _reduce
from .lower_bins import MAX_WORK, _toeplitz, _usable, dominated_mixture, lowered_proxy

__all__ = ["run_filter_witnesses", "MAX_FIXED_BINS"]

_U = 2.0 ** -53
_TINY = 2.0 ** -1072          # what one product rounded in the subnormals may be off by (bound)
_NEGLIGIBLE = 2.0 ** -1000    # masses below this are dropped (relative bounds fail there)
#: the most fixed bins the witness takes (one value per bin)
MAX_FIXED_BINS = 1 << 20


def run_filter_witnesses(strategy: Strategy, sigma: float, bins: int, fixed: bool = False
                         ) -> list[Witness]:
    """The whole run's matched filter of balls in bins redrawn every epoch, or of fixed bins
    (``fixed``: one bin for the whole run, so the law of A is uniform over the bins' sums)
    (module docstring): the Gaussian at the least shift (every epoch, or bin, at its smallest
    value: a point mass below the whole law, exact where the pattern is fixed; its
    closed-form profile answers where the PLD's range does not reach) and, where the law has
    more than one value, the mixture over it. A computed C (a BLT) is read through its
    :func:`.lower_bins.lowered_proxy`. [] where C is not square lower triangular and >= 0, no
    full epoch, a dense C beyond MAX_WORK, more than MAX_FIXED_BINS fixed bins, or a shift
    over sigma outside the doubles."""
    from ...mechanisms.gaussian import Gaussian
    n = strategy.n
    if not _usable(strategy):
        proxy = lowered_proxy(strategy)     # (a computed C: one statistic, its proxy serves)
        if proxy is None:
            return []
        strategy = proxy
    if n // bins == 0 or (fixed and bins > MAX_FIXED_BINS):
        return []
    got = _toeplitz_sums(strategy, bins, fixed) if _toeplitz(strategy) is not None else \
        _dense_sums(strategy, bins, fixed)
    if got is None:
        return []
    k, laws, constant, norm2, terms, summed = got
    least = math.fsum([constant, *(float(w.min()) for w, _ in laws)])
    vals, probs, rel_p = _convolve(laws, bins)
    shifts = _lowered_shifts(np.concatenate([[least], constant + vals]), k, n, norm2, terms,
                             summed)
    out = []
    with np.errstate(over="ignore", under="ignore"):
        mu = shifts[0] / sigma
    if np.isfinite(shifts[0]) and shifts[0] > 0 and _NEGLIGIBLE <= mu < math.inf:
        out.append(Witness(RUN, ((Gaussian(sigma, float(shifts[0])), 1),), 0, 1))
    mixture = dominated_mixture(shifts[1:], probs, sigma, rel_p) if vals.size > 1 else None
    if mixture is not None:
        out.append(Witness(RUN, ((MixtureOfGaussians(sigma, *mixture), 1),), 0, 1))
    return out


def _lowered_shifts(sums: np.ndarray, k: int, n: int, norm2: float, terms: int,
                    summed: int) -> np.ndarray:
    """The shifts sum / |u| (scaled back by 2^k) of computed sums of at most ``summed``
    terms, each term within rel_g of its own sum of ``terms`` non-negative products and |u|^2
    within rel_n: rounded down (module docstring); inf beyond the doubles."""
    rel_g = (4 * terms + 32) * _U
    rel_n = (4 * (terms + n) + 32) * _U
    rel = rel_g + 2 * (summed + 8) * _U
    shifts = np.maximum(sums - summed * terms * _TINY, 0.0)
    shifts = shifts * (1 - rel) / math.sqrt(norm2 * (1 + rel_n) + n * _TINY) * (1 - 4 * _U)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(shifts, k)
    # (scaled back into the subnormals ldexp rounds to nearest, maybe up: such shifts are 0)
    return np.where(out >= _NEGLIGIBLE, out, 0.0)


def _scale(c: np.ndarray) -> tuple[int, np.ndarray]:
    """(k, c 2^-k) with the largest entry of c 2^-k in [1/2, 1) (exact bar underflow)."""
    k = math.frexp(float(c.max()))[1]
    # an entry that lands in the subnormals may be rounded up (by up to a factor 2, then
    # multiplied by the row sums): lowered to 0 instead, in the filter and the shifts alike
    # (a smaller C >= 0 gives smaller shifts of the same filter's statistic)
    scaled = np.ldexp(c, -k)
    return k, np.where(scaled >= 2.0 ** -1022, scaled, 0.0)


def _toeplitz_norm(c: np.ndarray, n: int) -> tuple[int, np.ndarray, float, float]:
    """(k, c 2^-k, P_(b-1)^2, |u|^2) of a Toeplitz C's coefficients c (b of them, n steps)
    scaled by 2^-k (:func:`_scale`): u = C 1 has u_t = P_min(t, b-1), P the prefix sums."""
    k, c = _scale(c)
    b = c.size
    p = np.cumsum(c)
    top = float(p[-1]) ** 2
    norm2 = math.fsum((p[:min(n, b - 1)] ** 2).tolist()) + max(0, n - b + 1) * top
    return k, c, top, norm2


def _toeplitz_sums(strategy: Strategy, bins: int, fixed: bool) -> tuple | None:
    """(k, laws, constant, |u|^2, terms, summed) of a Toeplitz C (module docstring), scaled
    by 2^-2k: the varying epochs' laws of <u, C e_s> as (values, counts) over their steps
    (under fixed bins one law, over the bins' sums), the other epochs' constant sum, the
    products per sum (``terms``) and the computed terms per value (``summed``); None where C
    is 0 over the n steps."""
    n = strategy.n
    c = _toeplitz(strategy)
    assert c is not None
    c = c[:n]
    if not c.any():
        return None
    k, c, top, norm2 = _toeplitz_norm(c, n)
    b = c.size
    p = np.cumsum(c)
    # the steps outside b - 1 <= s <= n - b, where <u, C e_s> is not P_(b-1)^2
    edge = np.unique(np.concatenate([np.arange(min(b - 1, n)), np.arange(max(n - b + 1, 0), n)]))
    t = edge[:, None] + np.arange(b)[None, :]
    g = np.where(t < n, c[None, :] * p[np.minimum(t, b - 1)], 0.0).sum(axis=1)
    if fixed:
        j = np.arange(bins)
        lo, hi = b - 1, n - b                    # interior steps s = j (mod B) in [lo, hi]
        inner = np.maximum((hi - j) // bins - (-((j - lo) // bins)) + 1, 0) if hi >= lo else \
            np.zeros(bins, dtype=int)
        sums = inner * top + np.bincount(edge % bins, weights=g, minlength=bins)
        return k, [(sums, np.ones(bins))], 0.0, norm2, b, edge.size + 2
    epochs = n // bins
    laws = []
    for e in np.unique(edge // bins):
        if e >= epochs:                          # (the partial epoch: lowered to 0)
            continue
        mine = (edge // bins) == e
        rest = bins - int(mine.sum())
        laws.append((np.concatenate([g[mine], [top] if rest else []]),
                     np.concatenate([np.ones(int(mine.sum())), [rest] if rest else []])))
    constant = (epochs - len(laws)) * top
    return k, laws, constant, norm2, b, len(laws) + 2


def _dense_sums(strategy: Strategy, bins: int, fixed: bool) -> tuple | None:
    """As :func:`_toeplitz_sums` for a dense C (every full epoch a law), or None beyond
    MAX_WORK or where C is 0."""
    n = strategy.n
    if n * n > MAX_WORK:
        return None
    d = np.abs(np.asarray(strategy.dense(), dtype=float))
    if not d.any():
        return None
    k, d = _scale(d)
    u = d.sum(axis=1)
    # (einsum, not a BLAS product: the same bits on every machine)
    g = np.einsum("t,tj->j", u, d)
    norm2 = math.fsum((u * u).tolist())
    if fixed:
        sums = np.bincount(np.arange(n) % bins, weights=g, minlength=bins)
        return k, [(sums, np.ones(bins))], 0.0, norm2, n, -(-n // bins) + 2
    epochs = n // bins
    laws = [(g[e * bins:(e + 1) * bins], np.ones(bins)) for e in range(epochs)]
    return k, laws, 0.0, norm2, n, epochs + 2


def _convolve(laws: list[tuple[np.ndarray, np.ndarray]], bins: int
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, masses, relative error bound of the masses) of the sum of independent draws
    from ``laws`` ((values, counts) each, of probability count / ``bins``), stochastically
    lowered (module docstring)."""
    vals: np.ndarray = np.zeros(1)
    probs: np.ndarray = np.ones(1)
    rel_p = 0.0
    for a, counts in laws:
        w, inv = np.unique(a, return_inverse=True)
        pw = np.bincount(inv, weights=counts, minlength=w.size) / bins
        merged = vals.size * a.size
        vals = (vals[:, None] + w[None, :]).ravel()
        probs = (probs[:, None] * pw[None, :]).ravel()
        keep = probs >= _NEGLIGIBLE
        vals, probs = vals[keep], probs[keep]
        vals, back = np.unique(vals, return_inverse=True)
        probs = np.bincount(back, weights=probs, minlength=vals.size)
        if vals.size > MAX_COMPONENTS:
            vals, probs = _reduce(vals, probs)
        # (the counts' sums and the division, a product, a merge of at most ``merged``
        # terms, twice the gamma bound for safety)
        rel_p += 2 * (2 * merged + 8) * _U
        if vals.size == 0:
            break
    return vals, probs, rel_p
