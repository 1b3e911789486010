"""One epoch of 2-out-of-t random allocation as a PLD source: the upper PMF from the curves of
:mod:`.two_of_t` (no block argument), the lower one from :mod:`.lower_split`.

**The upper PMF.** :class:`.two_of_t.TwoOfT` gives proven upper bounds on both halves of the
remove pair's curve: F(x) = H_x(P || Q) and F_rev(x) = H_x(Q || P) at x >= 1. The engine's
:func:`dpamp.pld.discretize.discretize_profile` turns their values at x = e^{i h} into a PMF
whose curve lies above the lower convex hull of those values, hence above the true convex curve
(Steinke 2022, Prop. 7); the add direction is the same pair swapped (F and F_rev exchanged). At
every x the smaller of that and the blocks' curve (:func:`composed_curve`: two 1-out-of-t/2 epochs,
whose pair dominates this one) is taken: both bound the same curve, and where the puts' noise
floors the 2-D add curve (~1e-9 x at sigma 0.7, t 1000) the blocks answer (delta 1e-10 had no
upper end there; now [3.71324, 3.71417], the blocks alone [3.71325, 3.73613]). The lower
PMF of this part is the trivial pair (point mass at loss 0); the post-processed pair of
:mod:`.lower_split` is a part of its own with a trivial upper PMF (:mod:`.lower_k`), so the
composition of both parts has this part's upper and that part's lower.

**The grid** (:meth:`Grid.for_step`, sizing only: every choice gives a proven bound). X's step
dx = C_DX h sqrt(t): the split adds variance <= dx^2 / 4 to each X_i, so the loss
~ 2 log(S / t) moves by about dx / sqrt(t) = C_DX h, the engine's own resolution. The R-lattice
step dr = R_PER_S t dx: the r-split then costs L about R_PER_S^2 / 4 of the s-split's variance
(L = (S^2 - R) / (t (t - 1)) moves by 2 S dx / t^2 ~ 2 dx / t per coordinate from s and by
dr / t^2 from r) where S ~ t; with a heavy tail the outcomes that decide delta have S well
above t, where the s-split costs more, so there the R-step is R_PER_S_HEAVY t dx. The body's
end b: the smallest with P[N >= 3] <= N3_CHARGE (that charge is paid at every x; N = 1 and
N = 2 are summed), or where that is above TRIPLES_FROM_B, with P[N >= 4] <= N3_CHARGE and
N = 3 summed too (:func:`body_ends`). Where a two-dimensional window would exceed ENGINE_BINS
bins the step is doubled (coarser is as sound).

Measured (``python benchmarks/analysis_two_of_t.py``, add/remove, cold): sigma 1, t 1000,
delta 1e-6: [0.36127, 0.36150] (6.6e-4 of eps) in ~1.1 s, the blocks [0.36132, 0.36201]
(1.9e-3); t 100: [1.51729, 1.51837] against the blocks' upper end 1.55514; delta 1e-12 at
t 1000: [1.41784, 1.41834] against 1.42324; sigma 0.8, t 1000: [0.87608, 0.87650]; sigma 0.7,
t 1000: [1.61763, 1.61839] against 1.63139. (``np.convolve`` in :func:`composed_curve` is
direct, O(n^2) in the grid's points: its sums' rounding is then bounded relative to each sum.)
"""
from __future__ import annotations

import math

import numpy as np

from ...core import roots
from ...core.once import OnceCache
from . import tail as T
from .chords import chords

_U = 2.0 ** -53

#: X's step per loss step h and sqrt(t) (see the module docstring)
C_DX = 0.7
#: the R-lattice's step per t dx
R_PER_S = 4.0
#: ... and R_PER_S_HEAVY where the body's end b is at least B_HEAVY (heavy-tailed X: the events
#: that decide delta have a few large coordinates, whose s-split costs far more than the
#: r-split; measured at sigma 0.8, t 1000, 10 epochs, dx 0.177: the upper end 1.86519,
#: 1.86525, 1.86537, 1.86567 at R_PER_S 2, 4, 8, 16, against 1.86663 at dx 0.253)
R_PER_S_HEAVY = 16.0
B_HEAVY = 50.0
#: P[N >= 3] above b at most this (charged at every x, composed epoch by epoch; N = 2 is
#: summed, :meth:`.two_of_t.TwoOfT._two_large`)
N3_CHARGE = 1e-15
#: N = 3 summed too (three large coordinates against the rest, so that only N >= 4 is
#: charged) where the end for N >= 3 would be above TRIPLES_FROM_B: b then falls ~2.5x (sigma
#: 0.8, t 1000: 518 -> 241, 3.0 s -> 1.4 s at the same width). Not below it: the large
#: coordinates' sums are looser than the body's (sigma 1, t 40: 2.0e-3 -> 2.8e-3 of eps)
TRIPLES_FROM_B = 450.0
#: the large coordinate's geometric grid (log-ratio of neighbouring knots)
LOG_R = 0.02
#: the largest body end b (N >= 3 charged) for the 2-D route (:func:`applies`). N = 3 summed
#: (b then ~2.5x smaller), the heavy-tail R-step and the per-round window cap (ENGINE_BINS)
#: keep the cost nearly flat in b: measured at delta 1e-6, one epoch unless said, 2-D route
#: against the blocks (`benchmarks/analysis_two_of_t.py --small`): sigma 0.6, t 1000 (b 4038)
#: 7.9e-4 of eps in 4.1 s against 1.2e-2 in 2.1 s; sigma 0.7, t 300 9.1e-4 against 2.1e-2;
#: sigma 0.5, t 1000 (b 22081) 4.8e-3 against 2.8e-2 in 7.3 s, 2.2 GB; sigma 0.45, t 1000
#: (b 69348) 1.5e-2 against 4.7e-2 in 6.8 s, 2.2 GB. Below (sigma 0.4, t 100: 0.107 against
#: 0.120 for 2.8 GB) the gain no longer pays for the memory.
MAX_B = 1e5
#: the most points of a grid on which the blocks' curve is convolved directly (beyond, a
#: coarser grid and chords: :meth:`TwoOfTSource._blocks_curve`; an epoch composed with 5000
#: Poisson steps, whose grid had ~2e5 points, took 170 s in that convolution)
BLOCKS_POINTS = 1 << 13
#: the largest 2-D window per round: a finer loss grid then gets a coarser X-step (as sound),
#: so that a round's cost stays bounded (sigma 1, k 10 of 1000, 10 epochs: 9.1 s -> 3.8 s,
#: the bracket 2.7e-3 -> 3.8e-3 of eps)
ENGINE_BINS = 1 << 22
#: the fewest steps for the 2-D route (:func:`applies`)
MIN_T = 10
#: the largest b^2 / t for the 2-D route (:func:`applies`): sigma >= 0.55 from t 10 (sigma 0.8,
#: t 10: 5.6e-2 of eps against the blocks' 0.114), sigma 0.5 from t ~50, sigma 0.45 from t
#: ~1000 (the windows' R-extent b^2 / (R_PER_S_HEAVY t dx) is what grows)
MAX_B2_PER_T = 5e6
#: the smallest spread of the epoch's loss, 2 sqrt(Var X / t), for the 2-D route
MIN_SD = 0.06
#: the puts (the curve's negative half) on a lattice this many times coarser in s and r from
#: PUT_MERGE_T steps on (sigma 2, t 10, delta 1e-10: the add direction's epsilon 2.296 with
#: the coarser lattice, 2.060 without; at t 1000 it costs ~1e-5 of epsilon)
PUT_MERGE = 2
PUT_MERGE_T = 64


def applies(loss, t: int) -> bool:
    """The 2-D route needs X's law with a continuous part and no finite atom (the Gaussian,
    and mechanisms whose pair is a Gaussian's): X then has an unbounded tail, which the body's
    end b and the geometric tail grid are made for. And b <= MAX_B: the R-window holds b^2
    (folding a large body coordinate's square would cost L up to the window / (t (t - 1)) on
    an event of P-mass ~ P0[X > sqrt(window)]), so a heavier tail (Gaussian sigma < ~0.45)
    makes the windows costly in memory (see MAX_B). Few steps likewise: the window's R-extent
    b^2 against the R-step R_PER_S_HEAVY t dx, b^2 / t <= MAX_B2_PER_T (sigma 0.5: t >= ~50),
    and t >= MIN_T: the puts'
    lattice has outcomes with L' = (S'^2 - R') / (t (t - 1)) < 0 (each square split UP), whose
    puts grow like x |L'| (sigma 2, t 3: the add curve stayed above 4e-4 for all x, so
    epsilon(1e-6) had no upper bound); with t >= 10 they were negligible in every case run.
    Last, the blocks are kept where they are good: their excess grows with the epoch's loss
    spread, ~2 sqrt(Var X / t); measured at delta 1e-6, one epoch, their bracket was within
    7.3e-4 of epsilon wherever that spread is <= 0.047 (sigma 1.5, 2 at t 1000, 10^4; sigma 1
    at 10^4) and 1.4e-3 to 4.5e-2 wherever it is >= 0.083 (sigma 1 at t <= 1000, sigma 2 at
    t <= 100), where this route gives 5.7e-4 to 2.2e-3 (benchmarks/analysis_two_of_t.py)."""
    fin = np.isfinite(loss.atom_loss) & (np.maximum(loss.atom_p, loss.atom_q) > 0)
    if loss.cdf is None or fin.any() or loss.neg_inf_mass != 0.0 or t < MIN_T:
        return False
    # the gates read the end for N >= 3 charged even where N = 3 is summed
    b = body_end(loss, t)
    if b > MAX_B or b * b > MAX_B2_PER_T * t:
        return False
    # where the epoch's loss is narrow the blocks are already within the tolerance, and cheaper
    from . import grid as G
    from .sums import _var_x
    var_x = _var_x(loss, math.exp(min(G.truncation_point(loss, 1e-10), 600.0)))
    return 2.0 * math.sqrt(max(var_x, 0.0) / t) >= MIN_SD


def body_end(loss, t: int, target: float = N3_CHARGE, many: int = 3) -> float:
    """The smallest b (bisection on log b) at which :func:`.two_of_t.charge_many`'s bound on
    P[N >= many] (pp = P0[X > b], qq = Q0[X > b]) is at most ``target`` (sizing only: the
    charge itself is computed from the cells)."""
    from .two_of_t import charge_many

    def charge(lb):
        pp, qq = T.tail_masses(loss, lb)
        return charge_many(pp, qq, t, many)
    if charge(0.0) <= target:
        return 1.0
    _, hi = roots.bisect(lambda lb: charge(lb) <= target, 0.0, 60.0, iterations=50)
    return math.exp(hi)


def body_ends(loss, t: int) -> tuple:
    """(b, triples): the body's end for N >= 3 charged, or for N >= 4 charged (N = 3 summed)
    where the former exceeds TRIPLES_FROM_B."""
    b3 = body_end(loss, t, many=3)
    if b3 <= TRIPLES_FROM_B:
        return b3, False
    return body_end(loss, t, many=4), True


class Grid:
    """The :class:`.two_of_t.TwoOfT` of one base and t, one per X-step, cached.

    Keyed by the step actually taken (after doublings): the two directions of a query ask for
    steps h and COARSE h on two threads, and where the window cap doubles both to the same
    step (sigma 0.5, t 1000) they share one object; a step being built by one thread is
    waited for by the other rather than built twice (the same arguments give the same
    object, so whichever builds it, every number is the same)."""

    #: built objects kept (each holds only its two histograms: :meth:`.two_of_t.TwoOfT.prepare`)
    KEEP = 3

    def __init__(self, loss, t: int):
        self.loss, self.t = loss, t
        self.b, self.triples = body_ends(loss, t)
        self.r_per_s = R_PER_S_HEAVY if self.b >= B_HEAVY else R_PER_S
        # step -> its TwoOfT, or None where the windows do not fit at that step (remembered
        # at no cost: only the built objects count towards KEEP)
        self._steps = OnceCache(self.KEEP, counted=lambda m: m is not None)

    def for_step(self, h: float):
        dx = C_DX * h * math.sqrt(self.t)
        step = dx
        for _ in range(12):
            m = self._at(step)
            if m is not None:
                return m
            step *= 2.0
        raise MemoryError("2-out-of-t allocation: no two-dimensional window fits")

    def _at(self, step: float):
        """The prepared TwoOfT at this step, or None where its windows exceed ENGINE_BINS:
        built by the first caller, waited for by any other meanwhile (core.once)."""
        try:
            return self._steps.get(step, lambda: self._build(step))
        except MemoryError:
            # an allocation that failed (not a window over the cap): this step is skipped
            # now, as one that does not fit, but not remembered as such
            return None

    def _build(self, step: float):
        from .two_of_t import TwoOfT
        put_merge = PUT_MERGE if self.t >= PUT_MERGE_T else 1
        m = TwoOfT(self.loss, self.t, dx=step, b=self.b, dr=self.r_per_s * self.t * step,
                   log_r=LOG_R, rows_merge=16,
                   put_merge=put_merge,
                   triples=self.triples,
                   max_bins=ENGINE_BINS)
        try:
            m.check_windows()
        except MemoryError:
            return None
        return m.prepare()


class TwoOfTSource:
    """The upper PMF of one 2-out-of-t epoch (remove direction; ``swapped`` gives add), with
    the trivial pair as its lower PMF. Sizing (mean, variance, loss range) from the blocks
    (two 1-out-of-t/2 epochs), whose pair dominates this one."""

    symmetric = False
    has_lower = True
    attained = True
    gaussian_mu = None     # never merged with exact Gaussian parts
    exact = False          # its lower PMF is the other part's

    def __init__(self, grid: Grid, blocks, remove: bool = True, _composed=None):
        self.grid, self.blocks, self.remove = grid, blocks, remove
        parts = [(s if remove else s.swapped(), c) for s, c in blocks]
        self.mean = sum(c * s.mean for s, c in parts)
        self.var = sum(c * s.var for s, c in parts)
        self.inf_mass = 0.0
        self._parts = parts
        # the blocks' composed PMFs by (direction, h, jlo, jhi), shared with the swapped source
        # (each source reads both directions' curves, on the two directions' threads)
        self._composed = OnceCache(keep=4) if _composed is None else _composed

    def swapped(self):
        return TwoOfTSource(self.grid, self.blocks, not self.remove, self._composed)

    def _blocks_curve(self, remove: bool, h, jlo, jhi, n):
        """The blocks' curve at x = e^{i h}, i < n (:func:`coarse_curve`: its convolution is
        direct, O(points^2))."""
        parts = [(s if remove else s.swapped(), c) for s, c in self.blocks]

        def curve(hc, lo, hi, nc):
            pmf = self._composed.get((remove, hc, lo, hi),
                                     lambda: composed_pmf(parts, hc, lo, hi))
            return composed_curve(None, hc, lo, hi, nc, pmf)
        return coarse_curve(curve, h, jlo, jhi, n)

    def quantile_range(self, tail):
        lo = hi = 0.0
        for s, c in self._parts:
            a, b = s.quantile_range(tail)
            lo, hi = lo + c * a, hi + c * b
        return lo, hi

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from ...pld.discretize import Discretized, discretize_profile
        m = self.grid.for_step(h)
        xr = np.exp(h * np.arange(jhi + 1))
        xl = np.exp(h * np.arange(-jlo + 1))
        if self.remove:
            rows = (m.remove_curve(xr), m.add_curve(xl))
        else:
            rows = (m.add_curve(xr), m.remove_curve(xl))
        # the blocks' curves bound the same pair's: the smaller of the two at every point
        rows = (np.minimum(rows[0], self._blocks_curve(self.remove, h, jlo, jhi, xr.size)),
                np.minimum(rows[1], self._blocks_curve(not self.remove, h, jlo, jhi, xl.size)))
        up = discretize_profile(rows, None, 0.0, 0.0, h, jlo, jhi)
        one = np.zeros(jhi - jlo + 1)
        one[-jlo] = 1.0
        return Discretized(h, jlo, up.upper, up.upper_inf, one, 0.0)


def coarse_curve(curve, h: float, jlo: int, jhi: int, n: int,
                 points: int = BLOCKS_POINTS) -> np.ndarray:
    """Upper bounds at x = e^{i h}, i < n, on a hockey-stick curve (convex in x) that
    ``curve(h', jlo', jhi', n')`` bounds at e^{i h'}, i < n', from PMFs on j h', jlo' <= j <=
    jhi': on the grid itself where it has at most ``points`` points, else on the grid g h, g
    the smallest that fits, covering [jlo h, jhi h], and by chords in between (:mod:`.chords`;
    a plan whose grid other parts set asked ~2e5 points, and the blocks' direct convolution
    took 170 s)."""
    g = max(1, -(-(jhi - jlo + 1) // points))
    if g == 1:
        return curve(h, jlo, jhi, n)
    # [floor(jlo / g), ceil(jhi / g)] and the coarse points up to the last fine one or beyond
    nc = -(-(n - 1) // g) + 1
    coarse = curve(g * h, jlo // g, -(-jhi // g), nc)
    x = np.exp(h * np.arange((nc - 1) * g + 1))
    at = g * np.arange(nc)
    # the coarse points e^{i (g h)} and e^{(g i) h} differ by ulps, and the curve's slope in x
    # is -Q[L > x], in [-1, 0]: 8 ulps of x more
    return chords(x, at, coarse + 8 * _U * x[at])[:n]


def composed_curve(parts, h: float, jlo: int, jhi: int, n: int, composed=None) -> np.ndarray:
    """Upper bounds on the hockey-stick curve H(e^{i h}), i = 0..n-1, of the composition of
    ``parts`` [(source, count)]: their pessimistic PMFs on j h, j = jlo..jhi (each dominates
    its part, so their convolution dominates the product: the engine's own composition), and
    the curve of that PMF, sum_j p_j (1 - e^{(i - j) h})_+ + p_inf, from suffix sums. Rounding:
    each convolution's sums of at most m products (m the shorter length) within 2 m u; the
    suffix sums and the difference within (n_j + 8) u of A + x B, added. ``composed``: that
    PMF (:func:`composed_pmf`) where the caller has it."""
    pmf, lo, inf = composed_pmf(parts, h, jlo, jhi) if composed is None else composed
    j = lo + np.arange(pmf.size)
    with np.errstate(over="ignore"):
        A = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])
        B = np.concatenate([np.cumsum((pmf * np.exp(-j * h))[::-1])[::-1], [0.0]])
    i = np.arange(n)
    k = np.clip(i - lo + 1, 0, pmf.size)            # the first j with j h > i h
    x = np.exp(i * h)
    a, b = A[k], B[k]
    with np.errstate(invalid="ignore", over="ignore"):
        val = np.maximum(a - x * b, 0.0) + (pmf.size + 8) * 2 * _U * (a + x * b)
    val = np.where(np.isfinite(val), val, np.inf)
    return np.minimum(val + inf * (1 + 4 * _U), 1.0)


def composed_pmf(parts, h: float, jlo: int, jhi: int) -> tuple:
    """(masses, first index, mass at +inf) of the parts' composed pessimistic PMF (see
    :func:`composed_curve`)."""
    from ...pld.sources import discretize_source
    pmf, lo, inf = None, 0, 0.0
    for src, c in parts:
        d = discretize_source(src, h, jlo, jhi, optimistic=False)
        for _ in range(c):
            if pmf is None:
                pmf, lo, inf = d.upper.copy(), d.jlo, d.upper_inf
                continue
            m = min(pmf.size, d.upper.size)
            pmf = np.convolve(pmf, d.upper) * (1 + 2 * (m + 2) * _U)
            lo += d.jlo
            inf = min(inf + d.upper_inf, 1.0)        # >= 1 - (1 - a)(1 - b)
    assert pmf is not None                           # at least one part
    return np.maximum(pmf, 0.0), lo, inf


def paired_parts(base, src, k: int, t: int, unit, grid):
    """[(source, count)] of one epoch of k-out-of-t allocation, 1 < k < t, with the blocks
    taken two draws at a time: the t steps in k units of sizes floor(t / k), ceil(t / k) (as
    :mod:`.pld`'s blocks), units paired into blocks of m = a + b steps with two draws each, an
    odd k's last unit with one. Under a uniform permutation of the steps the drawn k-set is
    exchangeable, hence uniform: the allocation is that mixture over permutations, and by the
    joint convexity of hockey-stick divergences its curves are at most those of one term, the
    product of the blocks' 2-out-of-m (and 1-out-of-a) epochs. A pair goes the 2-D way where
    :func:`applies` says so (else its two units stay 1-out-of blocks); then the post-processed
    lower part. None where no pair does (the caller keeps its blocks). ``base``: the base
    mechanism, ``src`` its loss distribution; ``unit(size)``: a 1-out-of-size source;
    ``grid(m)``: the cached :class:`Grid` of m steps."""
    from collections import Counter

    from .lower_k import TLowerSource, UpperOnly, _tpair
    small, n_big = divmod(t, k)
    sizes = [small + 1] * n_big + [small] * (k - n_big)
    pairs = Counter((sizes[2 * i], sizes[2 * i + 1]) for i in range(k // 2))
    parts: list[tuple[object, int]] = []             # duck-typed PLD sources
    any_2d = False
    for (a, b), c in sorted(pairs.items()):
        if applies(src, a + b):
            any_2d = True
            sizing = [(unit(a), 1), (unit(b), 1)] if a != b else [(unit(a), 2)]
            parts.append((TwoOfTSource(grid(a + b), sizing), c))
        else:
            parts += [(UpperOnly(unit(a)), c), (UpperOnly(unit(b)), c)]
    if not any_2d:
        return None
    if k % 2:
        parts.append((UpperOnly(unit(sizes[-1])), 1))
    return parts + [(TLowerSource(_tpair(base, k, t)), 1)]
