"""Proven lower ends for balls in bins on a matrix mechanism with C >= 0: matched filters.

The record's clipped gradient is one unit vector u in every step it enters, the other
records' gradients 0: an actual pair of neighbours (P with the record, Q without), so any
post-processing of it gives a lower bound on the mechanism's delta(eps) (data processing).
Projected on u, the release is y = C x + sigma N(0, I), x the record's participation pattern.

**Fixed bins** (:class:`~dpamp.mechanisms.participation.FixedBins`: one bin j of B drawn
once, x_j = the indicator of steps j, j + B, ...). With m_j = C x_j and a chosen bin j*, the
statistic v = <m_j*, y> / (sigma |m_j*|) is N(<m_j*, m_j> / (sigma |m_j*|), 1) given bin j and
N(0, 1) without the record: the pair is the mixture of Gaussians (1/B) sum_j N(a_j, 1) against
N(0, 1), a_j = <m_j*, m_j> / (sigma |m_j*|) >= 0 (C >= 0), dpamp's ``MixtureOfGaussians``.
j* is the bin of largest |m_j|.

**Balls in bins redrawn every epoch** (:class:`~dpamp.mechanisms.participation.BallsInBins`,
epochs of B steps, a C of b bands). The rows R_e = [e B + b - 1, (e + 1) B - 1] of epoch e are
read by epoch e's steps only (a step s reads rows s .. s + b - 1), so with w_s = C[R_e, s] and
s* the step of largest |w_s|, the statistics v_e = <w_s*, y_{R_e}> / (sigma |w_s*|) of the full
epochs use disjoint rows (independent noise) and depend on their own epoch's draw only: the
pair is the product over the full epochs of (1/B) sum_{s in epoch e} N(<w_s*, w_s> /
(sigma |w_s*|), 1) against N(0, 1).

**Row allocation** (balls in bins redrawn every epoch, a Toeplitz C >= 0 of b bands, b
dividing B): row r reads steps r - b + 1 .. r, so the rows e B + b - 1 + i b (i < B / b) of
full epoch e read the disjoint blocks e B + i b .. e B + i b + b - 1 of that epoch's steps and
nothing else. The record's step e B + i b + k (i, k uniform and independent) puts c_{b-1-k} in
row i of the epoch's kept rows and 0 in the others: projected on u, the kept rows' pair is
exactly random allocation (1 of B / b) of (1/b) sum_k N(c_k, sigma^2) against N(0, sigma^2),
independent across epochs (disjoint rows, fresh draws); the last partial epoch's steps are
read by none of the kept rows (dropped: post-processing). Coefficients beyond the ones given
are 0 (a zero shift).

**Filter allocation** (balls in bins redrawn every epoch, a Toeplitz C >= 0 of b bands, a
spacing b' >= b dividing B; our construction). Take the matched filters of every b'-th step,
T_j = <c, y_{j .. j + b - 1}> / |c| at j = e B + o + i b' (o = ceil(b'/2) - 1, i < B / b'):
their rows are disjoint (b' >= b), so without the record they are independent N(0, sigma^2).
The record's step s shifts T_j by rho(|s - j|) / |c| >= 0 (rho the autocorrelation of c, 0
from b on) for the filters within b - 1 of it, possibly of the next epoch. Every shift but
one is lowered to 0: step s keeps only that of the filter whose window [j - o, j + b' - 1 - o]
holds it (the windows tile the epoch; a lower mixture of non-negative shifts is dominated
in both orders, :mod:`.lower`, module docstring). Then T of epoch e depends on epoch e's draw
only, and its pair is exactly random allocation (1 of B / b') of (1/b') sum_d N(rho(|d|) / |c|,
sigma^2), d in [-o, b' - 1 - o], against N(0, sigma^2): the matched filter's whole column
where row allocation keeps one coefficient of it. Epochs whose filters' rows pass the last
row are dropped (post-processing).

**Filter allocation, fixed bins** (:class:`~dpamp.mechanisms.participation.FixedBins`, the
same C and filters, periods of B steps). Bin j's record takes the same position in every
period, so after the same lowering it shifts filter i = its window's of every usable period
(E of them) by the same rho(|d|) / |c|: the sums U_i = sum_e T_(e, i) / sqrt(E) over the
periods (a post-processing) are independent N(0, sigma^2) without the record, and with it the
one U holding its bin is shifted by sqrt(E) rho(|d|) / |c|: the pair is one random
allocation (1 of B / b') of (1/b') sum_d N(sqrt(E) rho(|d|) / |c|, sigma^2).

**Windows of an epoch** (balls in bins redrawn every epoch or fixed bins, a Toeplitz C >= 0,
windows of L steps with L dividing B; our construction after the Poisson windows of
:mod:`.lower_block`). Cut each epoch into its B / L windows W_k and take the statistics T_k =
<v, y_(R_k)> / |v| of :mod:`.lower_block` (v the sum of the window's columns over the rows R_k,
whose shifts a_s = <v, C[R_k, s]> / |v| >= 0): *windowed*, the gradient one unit vector and R_k
the rows reading W_k only (t in [k L + b - 1, (k + 1) L)); *alternating*, the gradient u_1 in
the even windows and u_2 in the odd ones (a model of at least two parameters) and R_k every
row reading W_k along its direction (L >= b - 1). Either way the T_k are independent N(0,
sigma^2) without the record (disjoint rows, or orthogonal directions), and T_k is shifted only
by the record's steps in W_k. Under balls in bins the epoch's step is uniform: exactly one
window of the epoch holds it, uniformly, and within it the position is uniform, so the
epoch's statistics are exactly random allocation (1 of B / L) of (1/L) sum_s N(a_s, sigma^2)
against N(0, sigma^2), independent across epochs (interior windows of a Toeplitz C all have
the same shifts; the first window's extra rows, and epochs whose rows pass the last row, are
dropped). L = B is one mixture per epoch: the epoch filter above with the sum of the columns
for the filter. Under fixed bins the periods' statistics of the same window are summed (the
record's bin takes the same position in each), the shifts times sqrt(E) as above.

**Rounding**: the means are scaled by a power of two (largest entry in [1/2, 1)), each shift
is lowered by the relative error of its sums (non-negative terms, gamma bounds; Higham 2002,
Sec. 3.1) and by an absolute bound on what was rounded in the subnormals (there the relative
bounds fail), and each positive shift's probability padded down, the
zero shift taking the rest; a stochastically smaller law of non-negative shifts gives a
dominated mixture in both orders (:mod:`.lower`, module docstring). A C with negative
entries gets no witness here; a computed C (a BLT's coefficients, ``coeff_error`` > 0) only
the fixed-bins matched filter, read from its :func:`lowered_proxy` (a one-dimensional
statistic; the others rely on which rows a step reads).
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from ...mechanisms.matrix_strategies import DenseStrategy, Strategy, Toeplitz
from .lower import ALLOCATED, ALTERNATING, FILTERED, MATCHED, MAX_COMPONENTS, WINDOWED, \
    Witness, _reduce

__all__ = ["fixed_bins_witness", "epoch_witness", "allocation_witness",
           "filter_allocation_witness", "fixed_filter_witness", "window_witnesses",
           "lowered_proxy", "MAX_WORK", "MAX_BIN_WINDOW", "MAX_PROXY_BANDS"]

_U = 2.0 ** -53
#: the most multiply-adds spent on a witness's means (beyond: no witness; it is optional)
MAX_WORK = 1 << 27
#: the longest window of :func:`window_witnesses` (its block is (L + b - 1) x L)
MAX_BIN_WINDOW = 512


def _matched(v: np.ndarray, sigma: float, terms: int, bins: int) -> tuple | None:
    """(shifts, probabilities, j*) of the matched filter on the columns of ``v`` (one per
    participation, each of probability 1/B; entries >= 0, each computed within a relative
    gamma bound of its ``terms`` terms): the filter w = the column of largest computed norm,
    the shifts <w, v_j> / |w| rounded down, each positive shift's probability padded down and
    the zero shift taking the rest, so that the true mixture dominates it (module docstring);
    None where the columns are 0 or not finite, or the shifts leave the double range.

    The columns are first scaled by 2^-k (exact bar underflow) so that the largest entry lies
    in [1/2, 1): then |w|^2 >= 1/4 (w's computed norm is the largest, at least that entry's
    square) and what the relative bounds do not cover, products and scaled entries rounded in
    the subnormals (each off by at most half the spacing 2^-1074), is bounded absolutely,
    2^-1072 per term; without the scaling a C and sigma near 2^-538 (squares in the
    subnormals) overestimated a shift by 35%."""
    if not np.isfinite(v).all() or not v.any():
        return None
    k = math.frexp(float(v.max()))[1]
    v = np.ldexp(v, -k)
    norms = np.einsum("tj,tj->j", v, v)
    top = int(np.argmax(norms))
    g = np.einsum("t,tj->j", v[:, top], v)
    rel = (4 * terms + 32) * _U
    tiny = v.shape[0] * 2.0 ** -1072
    shifts = np.maximum(g - tiny, 0.0) * (1 - rel) / math.sqrt(
        float(norms[top]) * (1 + rel) + tiny)
    with np.errstate(over="ignore"):     # (a shift beyond the doubles: None below)
        scaled = np.ldexp(shifts, k)
    mixture = _uniform_mixture(scaled, sigma, bins)
    return None if mixture is None else (*mixture, top)


def _uniform_mixture(shifts: np.ndarray, sigma: float, count: int) -> tuple | None:
    """(shifts, probabilities) of (1/count) sum_i N(shifts_i, sigma^2) against N(0, sigma^2),
    as :func:`dominated_mixture` rounds them."""
    return dominated_mixture(shifts, np.full(np.shape(shifts), 1.0 / count), sigma)


def dominated_mixture(shifts: np.ndarray, probs: np.ndarray, sigma: float, pad: float = 0.0
                      ) -> tuple | None:
    """(shifts, probabilities) of sum_i probs_i N(shifts_i, sigma^2) against N(0, sigma^2)
    (``probs`` each within ``pad`` relative of the true mass, or above it), rounded so that
    the true mixture dominates it: a shift in the subnormals (a scaling rounded, maybe up) or
    whose mu = shift / sigma is (MixtureOfGaussians divides, within its rounding only for a
    normal mu) moved to 0; equal shifts merged, each positive shift's mass lowered by ``pad``,
    its merge's error (gamma bound of its terms) and MixtureOfGaussians' normalisation; the
    zero shift taking the rest (stochastically smaller: dominated); None where a shift or mu
    is not finite or no shift is positive."""
    with np.errstate(over="ignore", under="ignore"):
        mus = shifts / sigma
    if not np.isfinite(shifts).all() or not np.isfinite(mus).all():
        return None
    shifts = np.where((shifts >= 2.0 ** -1000) & (mus >= 2.0 ** -1000), shifts, 0.0)
    u, inv = np.unique(shifts, return_inverse=True)
    terms = np.bincount(inv, minlength=u.size)
    pp = np.bincount(inv, weights=probs, minlength=u.size) * (1 - pad - (2 * terms + 64) * _U)
    if u[0] > 0:
        u, pp = np.concatenate([[0.0], u]), np.concatenate([[0.0], pp])
    pos = u > 0
    if not pos.any():
        return None
    pp[~pos] = max(1.0 - math.fsum(pp[pos]), 0.0)
    return tuple(u.tolist()), tuple(pp.tolist())


def _toeplitz(strategy: Strategy) -> np.ndarray | None:
    """|c| of a Toeplitz strategy (trailing zeros dropped), or None for a dense one."""
    if isinstance(strategy, Toeplitz):
        # (its own coefficients: the length-n column would be built for nothing)
        a = np.abs(np.asarray(strategy.coeffs, dtype=float))
        nz = np.flatnonzero(a)
        return a[:int(nz[-1]) + 1]
    c = strategy.toeplitz()
    if c is None or isinstance(strategy, DenseStrategy):
        return None
    a = np.abs(np.asarray(c, dtype=float))
    nz = np.flatnonzero(a)
    return a[:int(nz[-1]) + 1]


def _block(strategy: Strategy, rows: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """C[rows, steps] (a Toeplitz C from its coefficients, without the n x n array)."""
    c = _toeplitz(strategy)
    if c is None:
        return np.asarray(strategy.dense(), dtype=float)[np.ix_(rows, steps)]
    k = rows[:, None] - steps[None, :]
    return np.where((k >= 0) & (k < c.size), c[np.clip(k, 0, c.size - 1)], 0.0)


def _usable(strategy: Strategy) -> bool:
    return strategy.square_lower and strategy.nonnegative() and not strategy.coeff_error


#: the most coefficients a computed C's lowered proxy keeps (the later ones lowered to 0)
MAX_PROXY_BANDS = 1024


def lowered_proxy(strategy: Strategy) -> Toeplitz | None:
    """For a computed Toeplitz C >= 0 (a BLT whose output scales are >= 0: every exact entry
    >= 0, each computed one within ``coeff_error`` e of it): the Toeplitz C' of the given
    floats c'_k = (c_k - e) rounded down (0 where that is below 2^-1000) for k <
    MAX_PROXY_BANDS, 0 beyond, so that 0 <= C' <= C entrywise, exactly. Only a
    one-dimensional statistic may read it: its filter u' >= 0, built from C', has shifts
    <u', C e_s> >= <u', C' e_s> under the true C, a stochastically larger law of
    non-negative shifts (:mod:`.lower`, module docstring). The witnesses that rely on which
    rows a step reads need C's own bands. None where C is not such, or C' is 0."""
    if strategy.coeff_error == 0 or not strategy.square_lower or not strategy.nonnegative():
        return None
    c = strategy.toeplitz()
    if c is None:
        return None
    c = np.asarray(c, dtype=float)[:MAX_PROXY_BANDS]
    # (c - e) within half an ulp of the exact difference when it is normal: 3 ulps down
    low = (c - strategy.coeff_error) * (1 - 3 * _U)
    low = np.where(low >= 2.0 ** -1000, low, 0.0)
    return Toeplitz(tuple(low.tolist()), strategy.n) if low.any() else None


def _bin_means(strategy: Strategy, bins: int) -> np.ndarray | None:
    """m_j = C x_j for the bins j (n x bins), or None beyond MAX_WORK."""
    n = strategy.n
    c = _toeplitz(strategy)
    if (n * n if c is None else min(bins, n) * n * c.size) > MAX_WORK:
        return None
    out = np.zeros((n, min(bins, n)))
    if c is None:
        dense = np.asarray(strategy.dense(), dtype=float)
        for j in range(out.shape[1]):
            out[:, j] = dense[:, j::bins].sum(axis=1)
        return out
    for j in range(out.shape[1]):
        x = np.zeros(n)
        x[j::bins] = 1.0
        out[:, j] = np.convolve(c, x)[:n]
    return out


def fixed_bins_witness(strategy: Strategy, sigma: float, bins: int) -> Witness | None:
    """The fixed-bins matched filter (module docstring; a computed C through its
    :func:`lowered_proxy`), or None (C not >= 0, or its means beyond MAX_WORK)."""
    if not _usable(strategy):
        # (one statistic: a computed C's lowered proxy serves)
        proxy = lowered_proxy(strategy)
        if proxy is None:
            return None
        strategy = proxy
    means = _bin_means(strategy, bins)
    if means is None:
        return None
    mixture = _matched(means, sigma, 2 * strategy.n, bins)
    if mixture is None:
        return None
    shifts, probs, top = mixture
    return Witness(MATCHED, ((MixtureOfGaussians(sigma, shifts, probs), 1),), top, 1)


def epoch_witness(strategy: Strategy, sigma: float, bins: int) -> Witness | None:
    """The per-epoch matched filters of balls in bins redrawn every epoch (module docstring),
    or None (C not >= 0 and exact, no bands known, epochs shorter than the bands, no full
    epoch, or beyond MAX_WORK). A Toeplitz C has one epoch's mixture for every full epoch."""
    n, b = strategy.n, strategy.bands
    epochs = n // bins
    if not _usable(strategy) or b is None or bins < b or epochs == 0:
        return None
    same = _toeplitz(strategy) is not None
    if (1 if same else epochs) * bins * bins > MAX_WORK:
        return None
    parts: Counter = Counter()
    for e in range(1 if same else epochs):
        steps = np.arange(e * bins, (e + 1) * bins)
        w = _block(strategy, np.arange(e * bins + b - 1, (e + 1) * bins), steps)
        mixture = _matched(w, sigma, 2 * bins, bins)
        if mixture is not None:
            parts[mixture[:2]] += epochs if same else 1
    out = tuple((MixtureOfGaussians(sigma, s, p), k) for (s, p), k in sorted(parts.items())
                if any(v > 0 for v in s))
    return Witness(MATCHED, out, 0, 1) if out else None


def allocation_witness(strategy: Strategy, sigma: float, bins: int) -> Witness | None:
    """The row-allocation witness of balls in bins redrawn every epoch (module docstring), or
    None (not a Toeplitz C >= 0 given exactly, bands not dividing the bins, no full epoch, or
    a coefficient over sigma overflowing). The coefficients are the given floats (exact),
    each positive one's probability 1/b, as :func:`_uniform_mixture` rounds them."""
    from ...core.sampling import RandomAllocation
    c, b = _toeplitz(strategy), strategy.bands
    epochs = strategy.n // bins
    if c is None or not _usable(strategy) or b is None or bins % b or epochs == 0:
        return None
    a = np.zeros(b)
    a[:c.size] = c[:b]
    mixture = _uniform_mixture(a, sigma, b)
    if mixture is None:
        return None
    mog = MixtureOfGaussians(sigma, *mixture)
    return Witness(ALLOCATED, ((mog.subsample(RandomAllocation(1, bins // b)), epochs),), 0, 1)


def filter_spacing(bands: int, bins: int) -> int | None:
    """The least divisor b' >= ``bands`` of ``bins`` (the filter allocation's spacing), or
    None where there is none up to MAX_BIN_WINDOW (the window's block is b x b'; a prime
    number of bins of 10^7 would have asked for 10^7 columns)."""
    for d in range(max(bands, 1), min(bins, MAX_BIN_WINDOW) + 1):
        if bins % d == 0:
            return d
    return None


def _epochs_inside(n: int, bins: int, reach: int) -> int:
    """How many full epochs e (of ``bins`` steps, n // bins of them) read no row past n - 1,
    epoch e's last row read being (e + 1) B + ``reach``: e + 1 <= (n - 1 - reach) // B."""
    return max(0, min(n // bins, (n - 1 - reach) // bins))


def filter_allocation_witness(strategy: Strategy, sigma: float, bins: int) -> Witness | None:
    """The filter-allocation witness of balls in bins redrawn every epoch (module docstring),
    or None (not a Toeplitz C >= 0 given exactly, no bands known or epochs shorter than them,
    no epoch whose filters fit, or a shift over sigma out of range). The shifts are the
    matched filter's (:func:`_matched` on the window's columns over the filter's rows, each
    position of probability 1/b')."""
    return _filter_witness(strategy, sigma, bins, fixed=False)


def fixed_filter_witness(strategy: Strategy, sigma: float, bins: int) -> Witness | None:
    """The filter-allocation witness of fixed bins (module docstring: the periods summed), or
    None (as :func:`filter_allocation_witness`)."""
    return _filter_witness(strategy, sigma, bins, fixed=True)


def _filter_witness(strategy: Strategy, sigma: float, bins: int, fixed: bool
                    ) -> Witness | None:
    from ...core.sampling import RandomAllocation
    c, b, n = _toeplitz(strategy), strategy.bands, strategy.n
    if c is None or not _usable(strategy) or b is None:
        return None
    spacing = filter_spacing(b, bins)
    if spacing is None:
        return None
    o = -(-spacing // 2) - 1
    # the last filter of epoch e reads rows up to (e + 1) B - b' + o + b - 1
    epochs = _epochs_inside(n, bins, o + b - 1 - spacing)
    if epochs == 0:
        return None
    mixture = _filter_mixture(strategy, sigma, spacing, o, epochs if fixed else 1)
    if mixture is None:
        return None
    alloc = MixtureOfGaussians(sigma, *mixture).subsample(RandomAllocation(1, bins // spacing))
    return Witness(FILTERED, ((alloc, 1 if fixed else epochs),), 0, 1, window=spacing,
                   periods=epochs if fixed else 0)


def _filter_mixture(strategy: Strategy, sigma: float, spacing: int, o: int,
                    periods: int) -> tuple | None:
    """(shifts, probabilities) of one filter's mixture (module docstring): the matched filter
    of step o over rows o .. o + b - 1 against the b' steps of its window (one filter stands
    for all: Toeplitz), each shift times sqrt(``periods``) rounded down, or None."""
    b = strategy.bands
    assert b is not None
    rows = np.arange(o, o + b)
    steps = o + np.arange(-o, spacing - o)
    mixture = _matched(_block(strategy, rows, steps), sigma, 2 * b, spacing)
    if mixture is None:
        return None
    shifts, probs = np.array(mixture[0]), mixture[1]
    if periods > 1:
        shifts = _times_root(shifts, periods)
        with np.errstate(over="ignore"):
            if not np.isfinite(shifts / sigma).all():
                return None
    return tuple(shifts.tolist()), probs


def _times_root(shifts: np.ndarray, periods: int) -> np.ndarray:
    """shifts * sqrt(periods) rounded down (sqrt and the product each within half an ulp: 4
    ulps down cover both; beyond the doubles inf, which the mixture refuses)."""
    with np.errstate(over="ignore"):
        return shifts * math.sqrt(periods) * (1 - 4 * _U)


def _window_lengths(bins: int, least: int) -> list[int]:
    """The window lengths tried: the largest divisor of ``bins`` up to MAX_BIN_WINDOW and the
    divisor nearest a quarter of it, both at least ``least`` (any choice is valid)."""
    divs = [d for d in range(max(least, 1), min(bins, MAX_BIN_WINDOW) + 1) if bins % d == 0]
    if not divs:
        return []
    top = divs[-1]
    quarter = min(divs, key=lambda d: (abs(d - top / 4), d))
    return sorted({top, quarter})


def window_witnesses(strategy: Strategy, sigma: float, bins: int, fixed: bool = False
                     ) -> list[Witness]:
    """The windowed and alternating witnesses of balls in bins redrawn every epoch, or of
    fixed bins (``fixed``: the periods summed) (module docstring, "Windows of an epoch"), at
    the lengths of :func:`_window_lengths`; [] where C is not a Toeplitz C >= 0 given exactly
    or no epoch fits."""
    from ...core.sampling import RandomAllocation
    from .lower_block import window_shifts
    c, b, n = _toeplitz(strategy), strategy.bands, strategy.n
    if c is None or not _usable(strategy) or b is None:
        return []
    out = []
    for alternating in (False, True):
        for length in _window_lengths(bins, b - 1 if alternating else b):
            # epochs whose rows stay below n (an alternating window reads b - 1 rows on)
            epochs = _epochs_inside(n, bins, b - 2 if alternating else -1)
            if epochs == 0:
                continue
            # the first window stands for all: its rows as an interior one's (``strict``)
            # (every step joinable: a broadcast view, nothing of length n is allocated)
            a = window_shifts(strategy, np.broadcast_to(True, n), length, alternating, [0],
                              strict=True)[0]
            if fixed:
                a = _times_root(a, epochs)
            mixture = _uniform_mixture(a, sigma, length)
            if mixture is None:
                continue
            vals, probs = np.array(mixture[0]), np.array(mixture[1])
            if vals.size > MAX_COMPONENTS:
                vals, probs = _reduce(vals, probs)
                # (merged masses: sums of at most ``length`` terms, lowered by that error)
                probs = np.where(vals > 0, probs * (1 - (length + 2) * _U), 0.0)
                probs[0] = max(1.0 - math.fsum(probs[1:].tolist()), 0.0)
            mog = MixtureOfGaussians(sigma, tuple(vals.tolist()), tuple(probs.tolist()))
            alloc = mog.subsample(RandomAllocation(1, bins // length))
            out.append(Witness(ALTERNATING if alternating else WINDOWED,
                               ((alloc, 1 if fixed else epochs),), 0, 2 if alternating else 1,
                               window=length, periods=epochs if fixed else 0))
    return out
