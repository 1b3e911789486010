"""Composition of discretised privacy-loss distributions by FFT, with proven error bounds.

For one direction of a composition sum_j c_j x (part j) (Steinke 2022, Thm 9: the loss of a
composition is the sum of independent losses, so its measure is the convolution of the parts'
measures):

1. Each part is discretised on the common grid t = i h, pessimistically and optimistically
   (:mod:`.discretize`); both stay bounds after any number of compositions.
2. The PMFs are exponentially tilted by e^{lam t} and normalised, lam being the Chernoff saddle
   point of the query (the order of the best RDP bound). Floating-point error of an FFT is
   absolute, relative to the largest value; after tilting, the values that decide delta(eps) near
   the answer are the largest ones, so the error bound is relative there (without tilting, T
   compositions turn 1e-15 absolute errors into ~T 1e-15, as large as delta itself on long plans).
3. Self-composition is a power of the Fourier transform and heterogeneous composition a product
   (Steinke 2022, Thm 9). The window [A, B) of the circular convolution is chosen by Chernoff bounds
   from the parts' moment generating functions (of coarse, rounded-outwards copies of the PMFs), and
   the mass that may wrap around is bounded the same way.
4. Every floating-point step carries an explicit bound: the FFT's componentwise error
   (<= C log2(N) u ||x||_1 per coefficient), the error of complex powers and products, the inverse
   FFT; untilted, these give an error budget for each suffix of the grid, which the upper bound
   adds and the lower bound subtracts. Tail mass above B is added to delta in the upper bound.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable

import numpy as np
from scipy import fft as sfft

from ..core.errors import OutOfReach
from ..core.logspace import logsumexp
from .discretize import Discretized
from .pmf import GridPMF, suffix_sums
from .state import BOTH, Bound

_U = 2.0 ** -53
#: safety constant of the componentwise FFT error bound |dF_k| <= C log2(N) u ||x||_1 (a radix-2
#: transform with accurate twiddles has C ~ 4; pocketfft's mixed radix is no worse)
_C_FFT = 8.0
#: relative margin for the rounding of the discretised masses: each part's masses carry a
#: relative error of at most ~u/h (their cancellation), and a bin of the c-fold convolution of
#: non-negative masses with relative errors <= r carries at most (1 + r)^c - 1; so the margin is
#: expm1(sum of counts x 8 u / h), and never below 1e-9 (:func:`mass_margin`)
REL_MARGIN = 1e-9
#: largest FFT length accepted (memory: a few arrays of this many complex numbers)
MAX_N = 1 << 22
#: a spectral coefficient whose modulus is proven <= DROP is set to 0 and DROP is charged to the
#: error budget (per bin ~ DROP, far below the FFT's own ~1e-14)
_DROP = 1e-20
_LOG_DROP = math.log(_DROP)


@dataclasses.dataclass(slots=True)
class PartPMF:
    """One part's discretisation (both bounds) and its multiplicity."""
    d: Discretized
    count: int

    def mass(self, bound: Bound) -> np.ndarray:
        return self.d.upper if bound is Bound.UPPER else self.d.lower

    def inf(self, bound: Bound) -> float:
        return self.d.upper_inf if bound is Bound.UPPER else self.d.lower_inf


@dataclasses.dataclass(slots=True, frozen=True)
class Composed:
    """The composition of one direction (:func:`compose`): its upper and its lower PMF, each
    None where that bound was not asked for."""
    upper: GridPMF | None = None
    lower: GridPMF | None = None

    def of(self, bound: Bound) -> GridPMF | None:
        return self.upper if bound is Bound.UPPER else self.lower


def grid_log_mgf(m: np.ndarray, t0: float, h: float, s) -> np.ndarray:
    """log sum_j m_j e^{s (t0 + j h)} for each s (non-negative masses m on the grid t0 + j h;
    -inf where there is no mass). Blocks of B points share the factors e^{s h i}, i < B, so the
    cost is one small matrix product instead of s.size x m.size exponentials; each block is
    scaled by its largest mass, so nothing overflows or underflows (every term is positive).
    The products here avoid BLAS: its threads stall when the machine is busy, which cost ten
    times the work itself in our benchmarks."""
    s = np.asarray(s, dtype=float)
    n = m.size
    if n == 0 or not np.any(m > 0):
        return np.full(s.shape, -np.inf)
    B = int(min(1024, max(1, 30.0 / max(float(np.max(np.abs(s))) * h, 1e-300))))
    nb = -(-n // B)
    mm: np.ndarray = np.zeros(nb * B)
    mm[:n] = np.maximum(m, 0.0)
    mm = mm.reshape(nb, B)
    scale = mm.max(axis=1)
    nz = np.nonzero(scale > 0)[0]
    mm = mm[nz] / scale[nz, None]
    E = np.exp(np.outer(s, h * np.arange(B)))             # e^{s h i}, |s h i| <= 30
    logs = (np.log(np.einsum("bi,si->bs", mm, E)) + np.log(scale[nz])[:, None]
            + np.outer(t0 + h * B * nz, s))
    return logsumexp(logs, axis=0)


#: most points (padded) of one batch of :func:`grid_log_mgf_many`
_MGF_BATCH = 1 << 22


def grid_log_mgf_many(ms, jlos, h: float, s) -> np.ndarray:
    """:func:`grid_log_mgf` of many parts at once: row j is log sum_i ms[j]_i e^{s (jlos[j] +
    i) h} for each s (-inf for a part without mass). The same block sums, each block of B
    points scaled by its largest mass, without a Python loop over the parts: the parts are laid
    end to end, each padded to a multiple of 1024 points, so that blocks of any power of two
    B <= 1024 never straddle two parts; the s are taken in groups sharing the largest B with
    |s h| B <= 30 (small |s| in few long blocks, large |s| in many short ones)."""
    return mgf_layout(ms, jlos)(h, s)


def mgf_layout(ms, jlos):
    """The parts laid end to end for :func:`grid_log_mgf_many`, once: a function (h, s) -> the
    log-MGFs, for callers that evaluate them at several sets of s."""
    P = len(ms)
    sizes = np.array([m.size for m in ms], dtype=np.int64)
    if P == 0 or sizes.sum() == 0:
        return lambda h, s: np.full((P, np.size(s)), -np.inf)
    padded = -(-sizes // 1024) * 1024
    if P > 1 and padded.sum() > _MGF_BATCH:
        # many parts: in halves, so that the padded copy stays a few tens of MB
        k = P // 2
        first, second = mgf_layout(ms[:k], jlos[:k]), mgf_layout(ms[k:], jlos[k:])
        return lambda h, s: np.concatenate([first(h, s), second(h, s)])
    offs = np.concatenate([[0], np.cumsum(padded)])
    flat = np.zeros(int(offs[-1]))
    for m, o in zip(ms, offs[:-1]):
        flat[o:o + m.size] = m
    np.maximum(flat, 0.0, out=flat)
    jl = np.asarray(jlos, dtype=np.int64)
    # block size -> its blocks (:func:`_blocks`), filled as the sizes are first needed
    blocks: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    # (block size, h) -> the losses h i within a block and h start of each block
    losses: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}
    return lambda h, s: _mgf_blocks(flat, offs, jl, P, h, np.asarray(s, dtype=float), blocks,
                                    losses)


def _blocks(flat, offs, jl, B):
    """The blocks of B points with mass, each scaled by its largest mass: (their part, first
    loss index, scaled masses, log of the scale)."""
    mm = flat.reshape(-1, B)
    scale = mm.max(axis=1)
    nz = np.nonzero(scale > 0)[0]
    if offs.size == 2:
        # one part (offs = [0, its padded size]): every block is its, from jl[0] on (the
        # same integers as below)
        part = np.zeros(nz.size, dtype=np.int64)
        start = jl[0] + nz * B
    else:
        part = np.searchsorted(offs, nz * B, side="right") - 1
        start = jl[part] + (nz * B - offs[part])
    return part, start, mm[nz] / scale[nz, None], np.log(scale[nz])[:, None]


#: the block sizes of :func:`_mgf_blocks` (divisors of the layout's padding, 1024)
_BLOCKS = np.array([1, 16, 128, 1024], dtype=np.int64)
_FIRST = np.zeros(1, dtype=np.int64)


def _mgf_blocks(flat, offs, jl, P, h, s, blocks, losses):
    out = np.full((P, s.size), -np.inf)
    with np.errstate(divide="ignore"):
        fit = 30.0 / np.maximum(np.abs(s) * h, 1e-300)
    # the largest of _BLOCKS that fits (a smaller block is as exact; few sizes, because each
    # size is one more pass over all the parts' padded masses: 17 sizes cost W4's pessimistic
    # pass, of ~30 points a part, a third of its time)
    Bs = _BLOCKS[np.searchsorted(_BLOCKS, np.maximum(fit, 1.0), side="right") - 1]
    sizes = sorted(set(Bs.tolist()))
    for B in sizes:
        # (one part and one size: every column, as a slice)
        cols = np.nonzero(Bs == B)[0] if len(sizes) > 1 or P > 1 else slice(None)
        sg = s[cols]
        if B not in blocks:                      # (kept for the layout's next s)
            blocks[B] = _blocks(flat, offs, jl, B)
        part, start, mm, log_scale = blocks[B]
        if part.size == 0:
            continue
        # the losses h i within a block and h start of each block (kept for the next s)
        if (B, h) not in losses:
            losses[(B, h)] = ((h * np.arange(B))[None, :], (h * start)[:, None])
        h_i, h_start = losses[(B, h)]
        # (np.outer's products, by broadcasting)
        # e^{s h i}, |s h i| <= 30 (the exponentials in place on the products)
        E = np.multiply(sg[:, None], h_i)
        np.exp(E, out=E)
        # (in place: log(sum), then + log of the scale, then + h start s, as before)
        logs = np.log(np.einsum("bi,si->bs", mm, E))
        logs += log_scale
        logs += h_start * sg[None, :]
        # blocks are grouped by part (in order): a log-sum-exp per group; terms below e^-700
        # of their part's largest are raised to it (no subnormal arithmetic, ten times
        # slower; the sum only grows, and a larger MGF still gives Chernoff bounds)
        if P == 1:
            # one part, one group: the same maximum (exact in any order) and the same sums
            # (reduceat's, whose order np.sum does not keep), without the bookkeeping
            top = logs.max(axis=0)
            x = np.subtract(logs, top, out=logs)
            np.maximum(x, -700.0, out=x)
            sums = np.add.reduceat(np.exp(x, out=x), _FIRST, axis=0)
            out[0, cols] = np.log(sums[0]) + top
            continue
        first = np.concatenate([[0], np.nonzero(np.diff(part))[0] + 1])
        top = np.maximum.reduceat(logs, first, axis=0)
        rep = np.repeat(top, np.diff(np.concatenate([first, [part.size]])), axis=0)
        sums = np.add.reduceat(np.exp(np.maximum(logs - rep, -700.0)), first, axis=0)
        assert not isinstance(cols, slice)          # (several parts: the indices)
        out[np.ix_(part[first], cols)] = np.log(sums) + top
    return out


#: the window's grid of nus, in units of the Gaussian optimum (:func:`tilted_window`), and
#: the points of it evaluated first (every third, and the last)
_NU_GRID = np.geomspace(0.01, 4.0, 24)
_NU_COARSE = np.unique(np.append(np.arange(0, 24, 3), 23))
_NU_COARSE_SET = frozenset(int(j) for j in _NU_COARSE)


def tilted_window(ws, ts, counts, h: float, log_tail: float):
    """Window [iA, iB] for the composed normalised tilted measure: by Chernoff its mass above B
    is <= exp(sum_j c_j log sum_t w_j(t) e^{nu t} - nu B) for every nu > 0 (symmetrically below A
    with nu < 0). The bound is evaluated exactly at a few nu around the Gaussian optimum (any nu
    is valid; the grid only affects the window's width).
    Returns (iA, iB, bound), bound(a, b) giving the logs of the bounds above b and below a."""
    # the composed variance (sizing only: it centres the grid of nus), all parts at once
    sizes = np.array([w.size for w in ws], dtype=np.int64)
    var = 0.0
    if len(ws) == 1 and sizes[0]:
        # (one part: its own arrays, its mean broadcast: the same values)
        w, t = ws[0], ts[0]
        m1 = np.add.reduceat(w * t, _FIRST)
        v = np.add.reduceat(w * (t - m1) ** 2, _FIRST)
        var = float(np.sum(np.asarray(counts, dtype=float) * v))
    elif sizes.sum():
        live = np.nonzero(sizes)[0]
        starts = np.concatenate([[0], np.cumsum(sizes[live])[:-1]])
        w, t = np.concatenate(ws), np.concatenate(ts)
        m1 = np.add.reduceat(w * t, starts)
        v = np.add.reduceat(w * (t - np.repeat(m1, sizes[live])) ** 2, starts)
        var = float(np.sum(np.asarray(counts, dtype=float)[live] * v))
    sd = math.sqrt(max(var, 1e-300))
    nu_star = math.sqrt(2.0 * abs(log_tail)) / sd
    # heavy right tails (rare large losses) make the best nu much smaller than the Gaussian
    # optimum for short compositions: the grid reaches far below it
    nus = nu_star * _NU_GRID
    # (the margin covers the rounding of the sums: a Chernoff bound from a slightly larger
    # moment generating function is still a bound)
    jlos = [int(round(float(t[0]) / h)) if t.size else 0 for t in ts]
    cnt = np.asarray(counts, dtype=float)[:, None]
    # B = min over nu > 0 of (logK(nu) - log_tail) / nu, where logK is convex with logK(0) >= 0 >
    # log_tail: the derivative's numerator nu logK' - logK + log_tail grows with nu, so the
    # ratio falls then rises (likewise for A with nu < 0). Every third nu of the grid first,
    # then the two on either side of the best of them: the grid's optimum, at 26 of 48 MGFs
    # (bound() below takes the nus evaluated, among them those of A and B)
    # (both signs in one evaluation of the MGFs, then both signs' neighbours in a second: each
    # column's value is computed on its own, so this is the same as four evaluations, at the
    # fixed cost of two)
    coarse, nc = _NU_COARSE, _NU_COARSE.size
    mgf = mgf_layout(ws, jlos)
    first = np.concatenate([nus[coarse], -nus[coarse]])
    K1 = np.sum(cnt * (mgf(h, first) + 1e-12), axis=0)
    sides = []
    for i, sign in enumerate((1.0, -1.0)):
        Ks = K1[i * nc:(i + 1) * nc]
        k = int(coarse[int(np.argmin((Ks - log_tail) / (sign * first[i * nc:(i + 1) * nc])))])
        near = [j for j in range(max(0, k - 2), min(24, k + 3)) if j not in _NU_COARSE_SET]
        sides.append(sign * nus[np.array(near, dtype=np.int64)])
    second = np.concatenate(sides)
    K2 = np.sum(cnt * (mgf(h, second) + 1e-12), axis=0)
    nu = np.concatenate([first, second])
    logK = np.concatenate([K1, K2])
    up = nu > 0
    B = float(np.min((logK[up] - log_tail) / nu[up]))
    A = float(np.max((log_tail - logK[~up]) / (-nu[~up])))

    def bound(a, b):
        above = float(np.min(logK[up] - nu[up] * b))
        below = float(np.min(logK[~up] - nu[~up] * a))
        return min(above, 0.0), min(below, 0.0)
    if not (math.isfinite(A) and math.isfinite(B)):
        raise OutOfReach("the PLD's composition window is beyond the range of floating point "
                         "for this query (epsilon or the privacy losses too large for a grid)")
    return math.floor(A / h) - 1, math.ceil(B / h) + 1, bound


def tilt_cap(pparts):
    """Largest useful tilt: 20 over the composed standard deviation. Beyond it the values that
    decide delta near the answer are tiny next to the tilted peak (bounded losses push the
    Chernoff saddle to infinity) and the FFT's relative accuracy there is lost."""
    live = [p for p in pparts if p.d.upper.size]
    if not live:
        return 20.0 / math.sqrt(1e-12)
    # all parts at once: their masses end to end, a sum per part by reduceat
    sizes = np.array([p.d.upper.size for p in live], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    m = np.maximum(np.concatenate([p.d.upper for p in live]), 0.0)
    t = np.concatenate([p.d.h * (p.d.jlo + np.arange(p.d.upper.size)) for p in live])
    s = np.add.reduceat(m, starts)
    ok = s > 0
    mu = np.add.reduceat(m * t, starts) / np.where(ok, s, 1.0)
    v = np.add.reduceat(m * (t - np.repeat(mu, sizes)) ** 2, starts) / np.where(ok, s, 1.0)
    counts = np.array([p.count for p in live], dtype=float)
    var = float(np.sum(np.where(ok, counts * v, 0.0)))
    return 20.0 / math.sqrt(max(var, 1e-12))


def compose(parts: list[PartPMF], h: float, lam: float, bounds: tuple[Bound, ...] = BOTH,
            target: tuple[float, float] = (0.0, -12.0), max_n: int = MAX_N) -> Composed:
    """Compose the parts (one direction) for each of ``bounds``, tilted by lam. ``target`` =
    (eps, log delta) near which the answer is expected: it sizes the window so that the mass
    that may wrap around costs <= 1e-9 of delta there. MemoryError, before any allocation,
    where the window exceeds ``max_n`` bins (at most MAX_N)."""
    return Composed(**{b.value: _compose_kind(parts, h, lam, b, target, min(max_n, MAX_N))
                       for b in bounds})


def _tilted(parts, h, lam, bound):
    """Each part's PMF tilted by e^{lam t} and normalised, w = m e^{lam t - lM} with
    lM = log sum m e^{lam t} (-inf, and w = 0, for a part without positive mass), and its
    losses t: for all parts in one pass over their concatenated masses."""
    ms = [p.mass(bound) for p in parts]
    sizes = np.array([m.size for m in ms], dtype=np.int64)
    # (one part: its own masses, and each per-part value broadcast rather than repeated over
    # its points: the same values)
    one = len(ms) == 1
    starts = _FIRST if one else np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat = ms[0] if one else np.concatenate(ms)

    def rep(v):
        return v if one else np.repeat(v, sizes)
    jl = np.array([p.d.jlo for p in parts], dtype=np.int64)
    t = h * (rep(jl - starts) + np.arange(flat.size))
    with np.errstate(divide="ignore"):
        lw = np.log(np.maximum(flat, 0.0)) + lam * t
    # a log-sum-exp per part (every part has at least one grid point)
    top = np.maximum.reduceat(lw, starts)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore", divide="ignore"):
        lM = np.log(np.add.reduceat(np.exp(lw - rep(safe)), starts)) + safe
    lM = np.where(np.isfinite(top), lM, -np.inf)
    with np.errstate(invalid="ignore"):
        w = np.where(rep(np.isfinite(lM)), np.exp(lw - rep(lM)), 0.0)
    cut = starts[1:]
    if not cut.size:                      # one part (np.split's one view, without its cost)
        return [w], [t], [float(v) for v in lM]
    return np.split(w, cut), np.split(t, cut), [float(v) for v in lM]


#: most array entries of one batch of the parts' Fourier transforms (rows of N points): a
#: few MB, so that a batch is filled and transformed while in the caches (16 MB batches took
#: half as long again on W4; each row's transform is the same either way)
_FFT_BATCH = 1 << 18
#: threads of one batch of transforms (scipy.fft's ``workers``: rows are split between them;
#: each row's transform is the same): W4's transforms take a third less time on 2 cores
FFT_WORKERS = min(os.cpu_count() or 1, 4)


def _spectra(parts, ws, lMs, N):
    """The rfft of each part with finite lM (its normalised tilted PMF wrapped onto the
    circle of N points), in order; computed a batch of rows at a time."""
    live = [i for i, lM in enumerate(lMs) if math.isfinite(lM)]
    rows = max(1, _FFT_BATCH // N)
    for b in range(0, len(live), rows):
        batch = live[b:b + rows]
        arr = np.zeros((len(batch), N))
        for r, i in enumerate(batch):
            # loss index jlo + k at circular index (jlo + k) mod N: one or two slices (a
            # part's support, at most N points, wraps around at most once)
            w, a = ws[i], parts[i].d.jlo % N
            k = min(w.size, N - a)
            arr[r, a:a + k] = w[:k]
            arr[r, :w.size - k] = w[k:]
        yield from sfft.rfft(arr, axis=1, workers=FFT_WORKERS)


def _single(part, h, bound):
    """A lone part composed once: its own PMF on the bins t >= 0, no transform and so no
    transform error (an epoch enumerated exactly has a few spread atoms, where the FFT's
    error budget would decide the bracket). The lower PMF keeps its signed values with its
    clipped slack charged, and both carry the mass margin of :func:`_compose_kind`."""
    upper = bound is Bound.UPPER
    m = part.mass(bound)
    start = max(part.d.jlo, 0)
    mass = np.array(m[start - part.d.jlo:], dtype=float)
    rel = mass_margin([part], h, bound)
    slack = 0.0 if upper else part.d.lower_slack * max(1.0, float(np.sum(np.abs(m))))
    if upper:
        mass = np.maximum(mass, 0.0) * (1 + rel)
        inf = min(part.inf(bound) * (1 + rel) * (1 + 4 * _U), 1.0)
    else:
        mass = mass * max(1 - rel, 0.0)
        inf = part.inf(bound) * max(1 - rel, 0.0)
    # the bins' losses j h are within an ulp or two of the atoms' real losses (an atom on a
    # knot, e.g. Laplace's 1/3, may sit a rounding below it); moving mass m by dt moves delta
    # by at most m dt: 8 u max(|t|, 1) per unit of mass, charged to every suffix and to the
    # one that starts just above it (delta at eps = t_j reads the suffix from bin j + 1)
    t_abs = np.maximum(np.abs(h * (start + np.arange(mass.size))), 1.0)
    move = 8 * _U * np.abs(mass) * t_abs
    suffix = np.concatenate([np.cumsum(move[::-1])[::-1], [0.0]])
    err = slack + np.concatenate([suffix[:1], suffix[:-1]])
    out = GridPMF(h, start, mass, inf, err, upper)
    out.bin_err = slack + move
    return out


def _compose_kind(parts, h, lam, bound, target, max_n=MAX_N) -> GridPMF:
    """The composed PMF of one bound (see the module docstring for the steps)."""
    return sized(parts, h, lam, bound, target, max_n).finish()


@dataclasses.dataclass(slots=True, frozen=True)
class Sized:
    """One bound's composition with its window chosen (:func:`sized`), before its transforms:
    their length ``n`` (0 for a lone part, composed without one), and ``finish`` composing it."""
    n: int
    finish: Callable[[], GridPMF]


def sized(parts, h, lam, bound: Bound, target: tuple[float, float] = (0.0, -12.0),
          max_n: int = MAX_N) -> Sized:
    """The first steps of one bound's composition (:func:`compose`), up to its window: a caller
    can weigh the transforms to come (e.g. whether other work should run beside them) before
    ``finish()`` computes them. MemoryError here where the window exceeds ``max_n`` bins."""
    if len(parts) == 1 and parts[0].count == 1 and parts[0].d.jlo + parts[0].d.upper.size > 0:
        return Sized(0, lambda: _single(parts[0], h, bound))
    # the normalised tilted PMFs first: the window is chosen from them
    ws, ts, lMs = _tilted(parts, h, lam, bound)
    iA, N, tail_bound = _window(parts, ws, ts, lMs, h, lam, target, min(max_n, MAX_N))

    def finish() -> GridPMF:
        prod = _spectrum_product(parts, ws, lMs, N, bound)
        res, ebin = _inverse(prod, N)
        return _untilted(parts, h, lam, bound, iA, N, res, ebin, prod, tail_bound)
    return Sized(N, finish)


def _window(parts, ws, ts, lMs, h, lam, target, max_n):
    """(first loss index iA, length N, tail bound) of the circular convolution's window
    (:func:`tilted_window`); MemoryError where N exceeds max_n."""
    # aliasing costs e^{log_tail + K(lam) - lam t} at t: at most 1e-7 delta at the target (the
    # tolerance is ~1e-3; what it costs is charged to the lower bound either way)
    K_lam = sum(p.count * lM for p, lM in zip(parts, lMs) if math.isfinite(lM))
    log_tail = min(-20.0, math.log(1e-7) + target[1] - (K_lam - lam * target[0]))
    # (a target beyond the doubles, e.g. delta(1e308) estimated at 0, gives -inf or nan: no
    # tail below e^-740 can matter to a double)
    log_tail = -740.0 if not log_tail >= -740.0 else log_tail
    iA, iB, tail_bound = tilted_window(ws, ts, [p.count for p in parts], h, log_tail)
    widest = max(p.d.upper.size for p in parts)
    N = sfft.next_fast_len(max(iB - iA + 1, widest, 16), real=True)
    if N > max_n:
        raise MemoryError(N)
    return iA, N, tail_bound


@dataclasses.dataclass(slots=True)
class _Product:
    """The running product of the parts' spectra (:func:`_spectrum_product`): the frequencies
    still kept (``act``), the product's coefficients there and a bound on each one's error, the
    bound on the dropped ones' sum, the log of the untilting scale sum_j c_j lM_j, and the logs
    of the total mass and of its finite share."""
    #: the frequencies' count; act, spec and spec_err stay None while the product is the
    #: initial one (``fresh``) until :meth:`full` writes it out: most are dropped at the
    #: first factor, whose kept ones :func:`_multiply` takes from it directly
    nfreq: int
    act: np.ndarray | None = None
    spec: np.ndarray | None = None
    spec_err: np.ndarray | None = None
    dropped: float = 0.0
    log_scale: float = 0.0
    # log of the total mass and log of the finite share of it, per part c log(fin / (fin +
    # inf)) = c log1p(-inf / (fin + inf)): a ratio, so an inf mass far below fin's ulp counts
    frac_log: float = 0.0
    tot_log: float = 0.0
    # True while the product is the initial one: every coefficient exactly 1, every error 0,
    # every frequency kept (:func:`_multiply` then skips the gathers and sums that would
    # give exactly that)
    fresh: bool = True

    def full(self) -> "_Product":
        """This product with its arrays written out (the initial one's: every coefficient 1,
        every error 0, every frequency)."""
        if self.act is None:
            self.act = np.arange(self.nfreq)
            self.spec = np.ones(self.nfreq, dtype=complex)
            self.spec_err = np.zeros(self.nfreq)
        return self


def _spectrum_product(parts, ws, lMs, N, bound) -> _Product:
    """prod_j F_j^{c_j} of the parts' normalised tilted PMFs' spectra (Steinke 2022, Thm 9: the
    composition is a product of Fourier transforms), with its error bounds."""
    nfreq = N // 2 + 1
    # the spectrum is kept only on the frequencies that can still matter (``act``): a power
    # |F|^c with c in the thousands is below any useful size except near the few lowest
    # frequencies, and dropping a coefficient is an error bounded like every other
    prod = _Product(nfreq)
    L = max(1.0, math.log2(N))
    eF = _C_FFT * L * _U * (1.0 + 1e-12)         # componentwise FFT bound, ||w||_1 = 1
    spectra = _spectra(parts, ws, lMs, N)
    for p, lM in zip(parts, lMs):
        m = p.mass(bound)
        c = p.count
        fin = float(m.sum())
        inf = p.inf(bound)
        prod.tot_log = prod.tot_log + c * math.log(fin + inf) if fin + inf > 0 else -math.inf
        if inf > 0:
            prod.frac_log = prod.frac_log + c * math.log1p(-inf / (fin + inf)) if fin > 0 \
                else -math.inf
        if not math.isfinite(lM):
            spec = prod.full().spec
            assert spec is not None
            spec[:] = 0.0
            prod.fresh = False
            continue
        prod.log_scale += c * lM
        _multiply(prod, next(spectra), c, eF)
    return prod.full()


def _multiply(prod: _Product, F, c: int, eF: float):
    """prod times F^c, in place: the coefficients of F^c proven negligible dropped first."""
    fresh = prod.fresh and prod.act is None
    F = F if fresh else F[prod.full().act]
    aF = np.abs(F)
    # |true F| <= aF + eF, and every later factor has |true F| <= ||w||_1 = 1: where
    # (aF + eF)^c <= DROP the true coefficient of the product is <= DROP (|true spec| <= 1
    # so far), and it is set to 0 with that error (the threshold is rounded down so that
    # the c-th power of anything below it is <= DROP (1 + 1e-9))
    thr = math.exp(_LOG_DROP / c) * (1.0 - 1e-12)
    keep = aF + eF > thr
    if keep.all():
        prod.full()
    elif fresh:
        # (|1| + 0 summed over the dropped ones: exactly their count; the kept ones' initial
        # coefficients 1 and errors 0, at their indices)
        prod.dropped += float(np.count_nonzero(~keep)) * _DROP * (1 + 1e-9)
        idx = np.flatnonzero(keep)
        prod.act, F, aF = idx, F[idx], aF[idx]
        prod.spec, prod.spec_err = np.ones(idx.size, dtype=complex), np.zeros(idx.size)
    else:
        assert prod.act is not None and prod.spec is not None and prod.spec_err is not None
        gone = ~keep
        dropped = float(np.sum(np.abs(prod.spec[gone]) + prod.spec_err[gone]))
        prod.dropped += dropped * _DROP * (1 + 1e-9)
        # (the kept ones by their indices: few of many, once c is large)
        idx = np.flatnonzero(keep)
        prod.act, F, aF = prod.act[idx], F[idx], aF[idx]
        prod.spec, prod.spec_err = prod.spec[idx], prod.spec_err[idx]
    assert prod.spec is not None and prod.spec_err is not None
    S, aS, err_pow = _power(F, aF, c, eF)
    new_spec = prod.spec * S
    prod.spec_err = prod.spec_err * (aS + err_pow) + np.abs(prod.spec) * err_pow \
        + 2 * _U * np.abs(new_spec)
    prod.spec = new_spec
    prod.fresh = False


def _power(F, aF, c: int, eF: float):
    """(F^c, |F^c|, a bound on its error) from coefficients F (|F| = aF) known within eF."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        log_aF = np.log(aF)
        if c > 1:
            # polar form |F|^c e^{i c arg F}: within the error bound below and far
            # cheaper than complex pow
            S = np.exp(c * log_aF) * np.exp(1j * (c * np.angle(F)))
        else:
            S = F
        aS = np.abs(S)
        # |(F + d)^c - F^c| <= c |d| max(|F|, |F + d|)^{c-1}; |F| <= ||w||_1 = 1
        growth = np.power(np.minimum(aF + eF, 1.0 + 1e-12), c - 1)
        log_abs = np.where(aF > 0, -log_aF, 0.0)
    # the polar power's rounding, relative: the modulus exp(fl(c fl(log fl|F|))) is off
    # by c u (2 |log|F|| + 2) from the abs and the log, c u |log|F|| from the product and
    # 2u from exp; the angle by 2 pi u (atan2) times c, and c pi u from the product, and
    # e^{i psi} by 3u; their product by 1.5u: <= c u (3 |log|F|| + 12) + 8u, on |S| (a
    # first-order bound: a kept coefficient has c |log|F|| <= -log DROP, so the
    # neglected second-order terms are far below the 1e-6 of slack)
    rel = (c * _U * (3.0 * log_abs + 12.0) + 8 * _U) * (1 + 1e-6) if c > 1 else 0.0
    err_pow = c * eF * growth + rel * aS
    # |S - true S| <= |S| + |true S| <= |S| + 1: a larger or undefined bound is that one
    # (fmin drops a NaN; one pass, where nan_to_num took three)
    return S, aS, np.fmin(err_pow, aS + (1.0 + 1e-9))


def _inverse(prod: _Product, N: int):
    """The inverse transform of the product (the tilted composed PMF on the circle of N
    points) and the error bound of each of its bins."""
    nfreq = N // 2 + 1
    assert prod.act is not None and prod.spec is not None and prod.spec_err is not None
    full_spec = np.zeros(nfreq, dtype=complex)
    full_spec[prod.act] = prod.spec
    res = sfft.irfft(full_spec, N, workers=FFT_WORKERS)
    # each rfft coefficient but the first (and the last for even N) stands for two of the full
    # transform; the inverse transform spreads every coefficient's error evenly over the bins
    twice = np.where((prod.act == 0) | ((N % 2 == 0) & (prod.act == nfreq - 1)), 1.0, 2.0)
    L = max(1.0, math.log2(N))
    ebin = (float(np.sum(twice * prod.spec_err))
            + _C_FFT * L * _U * float(np.sum(twice * np.abs(prod.spec)))
            + 2.0 * prod.dropped) / N
    return res, ebin


def _untilted(parts, h, lam, bound, iA, N, res, ebin, prod: _Product, tail_bound) -> GridPMF:
    """The composed PMF of the window's bins t >= 0 (queries are at eps >= 0, where bins below
    eps do not count), untilted, with its error budgets, its mass at +inf, and the margin for
    the parts' mass rounding."""
    upper = bound is Bound.UPPER
    # window bins: loss index iA + i  <->  circular index (iA + i) mod N
    start = max(iA, 0) if iA + N > 0 else iA
    nkeep = iA + N - start
    # (the losses h (start + i): the integers as floats, exact, times h in place)
    t = np.arange(start, start + nkeep, dtype=float)
    t *= h
    log_scale = prod.log_scale
    factor = _factors(log_scale, lam, t)
    # (circular index (start + i) mod N: at most two slices, as nkeep <= N)
    a = start % N
    mass = np.multiply(res[a:a + nkeep] if a + nkeep <= N else
                       np.concatenate([res[a:], res[:a + nkeep - N]]), factor)
    log_above, log_below = tail_bound(h * (iA - 1), t[-1] + h)
    alias = math.exp(log_above) + math.exp(log_below)   # tilted mass that may wrap around
    # the mass the parts' discretisations added by clipping rounding noise, charged to the lower
    # PMF (each unit of added mass in one step moves delta by at most 1, times the growth of
    # the other steps)
    slack = 0.0 if upper else \
        sum(p.count * p.d.lower_slack for p in parts) * math.exp(max(prod.tot_log, 0.0))
    err = _budgets(ebin, factor, alias, slack, upper)
    if upper and start > 0:
        # a window starting above 0 leaves out the losses in [0, t_0): a query at eps < t_0
        # must count their mass, at most the tilted mass below the window untilted by the
        # largest factor for losses >= 0, e^{log_scale}
        err[0] += math.exp(min(log_below + prod.log_scale, 700.0))
    # mass at +inf: prod (fin+inf)^c - prod fin^c = tot (1 - prod (fin/(fin+inf))^c)
    inf = math.exp(prod.tot_log) * (-math.expm1(min(prod.frac_log, 0.0))) \
        if math.isfinite(prod.tot_log) else 0.0
    rel = mass_margin(parts, h, bound)
    # (mass is this function's own array: scaled in place)
    if upper:
        np.maximum(mass, 0.0, out=mass)  # clipping noise up only adds mass: still an upper bound
        # untilted mass above the window: tilted bound times the largest untilting factor there
        inf += math.exp(min(log_above + prod.log_scale - lam * (t[-1] + h), 700.0))
        mass *= 1 + rel
        inf = min(inf * (1 + rel) * (1 + 4 * _U), 1.0)
    else:
        # the lower PMF keeps its signed values: |computed - exact| per bin is within the budget
        # either way, and clipping would charge the noise of every bin again
        mass *= max(1 - rel, 0.0)
        inf = inf * max(1 - rel, 0.0)
    out = GridPMF(h, start, mass, inf, err, upper, t)
    # (only random allocation reads a bin's error alone: computed then, with the factors
    # recomputed, the same bits, rather than kept meanwhile)
    out.bin_err = lambda: _bin_errs(ebin, _factors(log_scale, lam, t), alias, slack, upper)
    return out


def _factors(log_scale: float, lam: float, t: np.ndarray) -> np.ndarray:
    """The untilting factors e^{log_scale - lam t} of the bins t (at most e^700)."""
    x = lam * t                     # (in place from here: the same operations)
    np.subtract(log_scale, x, out=x)
    np.minimum(x, 700.0, out=x)
    with np.errstate(over="ignore"):
        return np.exp(x, out=x)


def _budgets(ebin, factor, alias, slack, upper: bool):
    """The error budget of each suffix k of the bins: the FFT's per-bin error times the
    untilting factors, and for the lower PMF the mass that may have wrapped around into the
    window (for a suffix: a total, which weighs at most the largest factor of the suffix, the
    first, the factor falling with t) and the parts' clipped ``slack``. (For the lower PMF
    ``factor`` is overwritten: the caller reads it no more.)"""
    # (in place on one array: the same operations, the empty suffix's entry included)
    with np.errstate(over="ignore", invalid="ignore"):
        err = suffix_sums(factor)
        err *= ebin
        if not upper:
            # the largest factor of each suffix: the factor itself where the factors are seen
            # not to increase (lam >= 0, the usual tilt; checked rather than assumed, as exp's
            # rounding need not be monotone), else the running maximum
            top = factor if (factor.size < 2 or bool(np.all(factor[1:] <= factor[:-1]))) \
                else np.maximum.accumulate(factor[::-1])[::-1]
            err[:-1] += np.multiply(top, alias, out=top)
            err[-1] += alias * 0.0
    err[np.isnan(err)] = np.inf
    if not upper:
        err += slack
    return err


def _bin_errs(ebin, factor, alias, slack, upper: bool):
    """The error bound of each bin alone (read by dpamp.amplification.allocation, which needs
    masses bin by bin): as :func:`_budgets`, bin by bin (the wrapped-around mass may all sit
    in one bin)."""
    with np.errstate(over="ignore", invalid="ignore"):
        bin_err = ebin * factor
        if not upper:
            bin_err = bin_err + alias * factor + slack
    return np.where(np.isnan(bin_err), np.inf, bin_err)


def mass_margin(parts, h: float, bound: Bound | None = None) -> float:
    """Relative error bound on every composed mass from the parts' mass rounding (see
    REL_MARGIN): it grows with the number of steps composed and the fineness of the grid, and
    with each part's own relative mass error (``Discretized.rel_err``: a source whose masses come
    from a special function of a library), which its cancellation amplifies as it does u. For
    the upper bound (``bound`` UPPER) a part whose upper PMF is a majorant (:mod:`.majorant`)
    counts no more, nor for the lower bound one whose lower PMF is a minorant: its rounding is
    inside it."""
    flag = "majorised" if bound is Bound.UPPER else "minorised" if bound is Bound.LOWER else ""
    per = sum(p.count * (8.0 * _U + getattr(p.d, "rel_err", 0.0)) for p in parts
              if not (flag and getattr(p.d, flag, False)))
    return max(REL_MARGIN, math.expm1(per / h))
