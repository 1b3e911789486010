"""n-fold sums of a lattice law on (s, r) = (k dx, i dr) by a two-dimensional FFT, every bin with
a proven upper bound (:mod:`.two_of_t`).

The one-coordinate law m (non-negative, finite support k = 0..K, i = 0..I) is tilted by
e^{th k dx}, normalised to total 1, placed on the torus Z_N1 x Z_N2 and raised to the n-th power
in Fourier space. The inverse transform is exactly (up to rounding) the tilted law of the sum
folded modulo (N1, N2); untilted by e^{n log M(th) - th s_w} at the window's row w, every bin's
value is at least the true mass of its own position (the folded-in masses are non-negative), and
in r the window [0, N2) only receives masses from larger r.

Rounding (as :mod:`dpamp.pld.engine`): a row-column FFT has componentwise error <=
C (log2 N1 + log2 N2) u ||w||_1 (each pass's error is bounded by the l1 norm of its input,
and the first pass's outputs have l1 norm <= ||w||_1 per column); the power's error
n eF max(|F| + eF, 1)^{n-1} + (n u (3 |log |F|| + 12) + 8u) |F^n|; the inverse transform spreads
every coefficient's error evenly over the N1 N2 bins. Tilting and normalising cost each mass a
few ulps, n-fold (1 + 8u)^(n (K + 8)) - 1 of relative error at most: charged as REL.
Two tilts are run (none, and one aimed at the tail the curve reads: the upper one for the calls,
the lower one for the puts) and every bin keeps the smaller of its two upper bounds.

The per-bin budget spends the coefficients' whole l1 error on every bin; a curve summing
c_b >= 0 over many bins may instead use the error vector's l2 norm: ||e||_2 <= (||E||_2 +
C L u ||Y||_2) / sqrt(N1 N2) (Parseval, and the normwise error of the inverse transform of the
computed coefficients Y, N. J. Higham, *Accuracy and Stability of Numerical Algorithms*,
Thm 24.2), and sum_b |e_b| c_b <= ||e||_2 ||c||_2. Each Law (and PutLaw) also carries the
computed masses without budget (V, clipped at 0, from the pass whose budgeted bound the bin
kept), the pass each bin took, the passes' untilting factors f and their l2 bounds:
m_b <= V_b + |e_b| f_b for the pass taken, so the curve is at most sum V c plus, per pass,
||e||_2 ||f c||_2 over the bins that took it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import fft as sfft
from ...core import roots
from ...core.logspace import logsumexp

from ...pld.engine import FFT_WORKERS

_U = 2.0 ** -53
_C_FFT = 8.0
#: largest number of lattice bins per sum (memory: several float arrays of this size)
MAX_BINS = 1 << 25
#: the puts' charge for a sum's mass outside its window is sized to stay below this
PUT_OUTSIDE = 1e-14


@dataclasses.dataclass
class Law:
    """Upper masses of the sum on its window, in the form the curves read."""
    dx: float
    dr: float
    s0: float                # first row's s (row w at s0 + w dx)
    U: np.ndarray            # rows x r-bins, upper masses
    s_lo: float              # s below the window: S' < s_lo
    below_mass: float        # Q'[S' < s_lo] (upper)
    above_s2: float          # E[S'^2; S' >= s_hi] (upper)
    above_s1: float          # E[S'; S' >= s_hi] (upper)
    # the bins' computed masses without the per-bin budget (the curves may charge the
    # floating-point error in l2 instead, :func:`compose2`): V, the pass each bin took (sel),
    # that pass's untilting factor per row (facs[pass]) and its l2 error bound (e2[pass])
    V: np.ndarray | None = None
    sel: np.ndarray | None = None
    facs: list | None = None
    e2: list | None = None

    def __post_init__(self):
        n1, n2 = self.U.shape
        self.s_up = (self.s0 + np.arange(n1) * self.dx) * (1 + 4 * _U)
        self.r_lo = np.arange(n2) * self.dr * (1 - 4 * _U)

    def merged(self, g: int, g_r: int = 1) -> Law:
        """Rows merged g to one and r-bins g_r to one: the mass of row j0 + R g + q goes
        (1 - q/g) to coarse row R and q/g to R + 1 (a mean-preserving split in s), and likewise
        in r (the curves are convex in s and in r, so both splits raise them)."""
        U = _merge_axis(_merge_axis(self.U, g, 0), g_r, 1)
        return Law(self.dx * g, self.dr * g_r, self.s0, U, self.s_lo, self.below_mass,
                   self.above_s2, self.above_s1)


def _merge_axis(U: np.ndarray, g: int, axis: int) -> np.ndarray:
    """Index w's mass split (1 - q/g) to w // g and q/g to w // g + 1 (q = w % g) along
    ``axis``; the sums raised for their rounding."""
    if g <= 1:
        return U
    V = U if axis == 0 else U.T
    n1 = V.shape[0]
    Vc = np.zeros((n1 // g + 2,) + V.shape[1:])
    w = np.arange(n1)
    R, q = w // g, w % g
    f = (q / g)[:, None]
    # in blocks of indices, each pass over all blocks in order (the same additions, in the
    # same order, as one pass over the whole; the shares are never a whole window at once)
    step = max(1, (1 << 18) // max(1, math.prod(V.shape[1:])))
    blocks = [slice(lo, lo + step) for lo in range(0, n1, step)]
    # a zero share of an unbounded (inf) entry is zero, not nan
    with np.errstate(invalid="ignore"):
        for b in blocks:
            np.add.at(Vc, R[b], np.where(f[b] < 1.0, V[b] * (1.0 - f[b]), 0.0))
        for b in blocks:
            np.add.at(Vc, R[b] + 1, np.where(f[b] > 0.0, V[b] * f[b], 0.0))
    Vc *= 1 + (2 * g + 4) * _U                   # sums of at most 2 g terms
    return Vc if axis == 0 else np.ascontiguousarray(Vc.T)


@dataclasses.dataclass
class PutLaw:
    """Upper masses of the sum on its window, in the form the puts read (positions rounded the
    other way: s down, r up; suffix sums in r), and the mass outside the window: below and
    above it in s, beyond it in r (folded into lower r, where a put is smaller: charged)."""
    dx: float
    dr: float
    s0: float
    U: np.ndarray
    outside: float           # Q'[S' < s_lo] + Q'[S' >= s_hi] + Q'[R' >= r_end] (upper)
    V: np.ndarray | None = None          # as :class:`Law`'s
    sel: np.ndarray | None = None
    facs: list | None = None
    e2: list | None = None

    def __post_init__(self):
        n1, n2 = self.U.shape
        self.s_dn = np.maximum(self.s0 + np.arange(n1) * self.dx, 0.0) * (1 - 4 * _U)
        self.r_up = np.arange(n2) * self.dr * (1 + 4 * _U)


def _saddle(a: np.ndarray, w: np.ndarray, n: int, target: float) -> float:
    """The tilt th whose tilted n-fold sum has mean ``target`` (n M'(th) / M(th) = target,
    by bisection; clipped to the lattice's range). Sizing only: any tilt is sound."""
    lw = np.log(w)
    la = np.log(np.maximum(a, 1e-300))
    target = min(max(target / n, float(a.min()) + 1e-9), float(a.max()) - 1e-9)

    def mean(th):
        return float(np.exp(logsumexp(lw + la + th * a) - logsumexp(lw + th * a)))

    # doubling from -1 and from 1 up to |th| = 2^20, the first power of 2 past 1e6
    _, lo = roots.expand(lambda th: not mean(th) > target, None, -1.0, limit=1e6)
    _, hi = roots.expand(lambda th: not mean(th) < target, None, 1.0, limit=1e6)
    lo, hi = roots.bisect(lambda th: not mean(th) < target, lo, hi, iterations=60)
    return 0.5 * (lo + hi)


def log_moments(a: np.ndarray, m: np.ndarray, th: np.ndarray) -> tuple:
    """log sum m a^j e^{th a}, j = 0, 1, 2, for every th (Chernoff charges)."""
    with np.errstate(divide="ignore"):
        lm = np.log(m)
        la = np.log(a)
    E = th[:, None] * a[None, :]
    out = []
    for j in range(3):
        base = lm + (j * la if j else 0.0)
        out.append(logsumexp(base[None, :] + E, axis=1))
    return tuple(out)


class _Charges:
    """Chernoff bounds for the n-fold sum S' of the masses m at positions a >= 0, every tilt th
    of a scan giving a valid bound and the smallest one taken:

        Q'[S' < s_lo] <= e^{th s_lo} E[e^{-th S'}],   E[S'^j; S' >= s_hi] <= e^{-th s_hi} E[S'^j e^{th S'}],

    with E[S' e^{th S'}] = n M1 M0^{n-1}, E[S'^2 e^{th S'}] = n M2 M0^{n-1} + n (n-1) M1^2 M0^{n-2}
    (M_j = sum m a^j e^{th a}). The moments are computed once per window (its powers share
    the tilts: any tilt gives a valid bound); the sizing scans s_hi."""

    def __init__(self, a, m, n: int, moments=None):
        th, L0, L1, L2, Ln = _Charges.moments(a, m, n) if moments is None else moments
        self.th = th
        self.l2 = np.logaddexp(math.log(n) + L2 + (n - 1) * L0,
                               math.log(n) + math.log(max(n - 1, 1e-300)) + 2 * L1
                               + (n - 2) * L0 if n > 1 else -np.inf)
        self.l1 = math.log(n) + L1 + (n - 1) * L0
        self.l0 = n * L0
        self.ln = n * Ln

    @staticmethod
    def moments(a, m, n: int) -> tuple:
        """The scan's tilts (for sums of about n terms) and the one-coordinate log-moments at
        them: shared by the sums of n, n - 1, n - 2 terms (any tilt gives a valid bound)."""
        keep = m > 0
        a, m = a[keep], m[keep]
        tot = max(float(m.sum()), 1e-300)
        sd = math.sqrt(max(float(np.sum(m * a * a)) / tot - (float(np.sum(m * a)) / tot) ** 2,
                           1e-12))
        th = np.geomspace(1e-4, 1e3, 200) / (sd * math.sqrt(n))
        return (th,) + tuple(log_moments(a, m, th)) + (log_moments(a, m, -th)[0],)

    def above(self, s_hi: float) -> tuple:
        """(E[S'^2; S' >= s_hi], E[S'; S' >= s_hi]), raised for the scan's own rounding."""
        a2 = float(np.exp(min(np.min(self.l2 - self.th * s_hi), 700.0)))
        a1 = float(np.exp(min(np.min(self.l1 - self.th * s_hi), 700.0)))
        return a2 * (1 + 1e-6), a1 * (1 + 1e-6)

    def above_mass(self, s_hi: float) -> float:
        """Q'[S' >= s_hi]."""
        return float(np.exp(min(np.min(self.l0 - self.th * s_hi), 0.0))) * (1 + 1e-6)

    def below(self, s_lo: float) -> float:
        """Q'[S' < s_lo] (1 where s_lo <= 0)."""
        if s_lo <= 0:
            return 1.0
        return float(np.exp(min(np.min(self.ln + self.th * s_lo), 0.0))) * (1 + 1e-6)


def _power_spectra(F, aF, powers, eF):
    """(n, S_n, |S_n|, err_n) for n in ``powers`` (ascending): S_n the computed F^n and err_n a
    bound on |S_n - F_true^n| (F's own error at most eF, |F_true| <= G = min(|F| + eF, 1)).
    A power one above the last is the last times F, with
    err_{n+1} = (err_n |F| + G^n eF + 3u |S_n| |F|) (1 + 8u) (the complex product's rounding
    is at most sqrt(5) u of it); any other by exp(n log|F| + i n arg F), with
    err_n = n eF G^{n-1} + rel |S_n|, rel = (n u (3 |log|F|| + 12) + 8u) (1 + 1e-6): the
    modulus exp(fl(n fl(log|F|))) is off by n u (2 |log|F|| + 2) from |F| and the log, n u
    |log|F|| from the product and 2u from exp; the angle by 2 pi u (atan2) times n and n pi u
    from the product, e^{i psi} by 3u, their product by 1.5u (first order: where |S_n| does
    not underflow n |log|F|| < 745, so the slack covers the rest). Both are
    capped at |S_n| + 1 + 1e-9 (|F_true^n| <= 1) and floored at 1e-300 (underflow); G^m by
    exp(m log G), raised by 1e-11 for its rounding (|m log G| < 745 where it does not
    underflow). ``aF`` is |F|. A power's arrays are overwritten by the next one's (in place,
    the same roundings): read them before asking for the next."""
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        log_g = np.log(np.minimum(aF + eF, 1.0 + 1e-12))
    # |F| and |S_m| are recomputed where they are read (the same values), not held while the
    # caller works on a power: two half-windows less beside its arrays
    del aF
    prev = None
    for n in powers:
        with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
            if prev is not None and n == prev[0] + 1:
                m, Sn, err = prev
                prev = None
                Sn, aS, err = _next_power(F, Sn, err, m, log_g, eF)
            else:
                # (the last power's arrays go before the new ones are made)
                prev = Sn = err = None
                Sn, aS, err = _exp_log_power(F, n, log_g, eF)
            # at least 1e-300: a power that underflows to 0 is within that of the true one
            np.fmax(err, 1e-300, out=err)
            np.fmin(err, aS + (1.0 + 1e-9), out=err)
        prev = (n, Sn, err)
        # |S_n| handed over without a reference left here (the caller drops it when done)
        box = [aS]
        del aS
        yield n, Sn, box.pop(), err


def _next_power(F, Sn, err, m: int, log_g, eF: float) -> tuple:
    """(S_{m+1}, |S_{m+1}|, err_{m+1}) from S_m and err_m, in their arrays (they are not read
    again), in the order of (err_m |F| + G^m (1 + 1e-11) eF + 3u |S_m| |F|) (1 + 8u) (see
    :func:`_power_spectra`)."""
    aF = np.abs(F)
    aSm = np.abs(Sn)
    Sn *= F
    aS = np.abs(Sn)
    err *= aF
    g = m * log_g
    np.exp(g, out=g)
    g *= 1 + 1e-11
    g *= eF
    err += g
    del g
    aSm *= 3 * _U
    aSm *= aF
    err += aSm
    del aSm, aF
    err *= 1 + 8 * _U
    return Sn, aS, err


def _exp_log_power(F, n: int, log_g, eF: float) -> tuple:
    """(S_n, |S_n|, err_n): exp(n log|F| + i n arg F) and n eF G^{n-1} + rel |S_n| (see
    :func:`_power_spectra`), in place where a temporary would be a window (log|F| and arg F
    only here: the powers after the first are usually consecutive)."""
    aF = np.abs(F)
    log_aF = np.log(aF)
    zero = ~(aF > 0)
    del aF
    aS = n * log_aF
    np.exp(aS, out=aS)
    Sn = np.angle(F)
    Sn *= n
    Sn = 1j * Sn
    Sn += n * log_aF
    np.exp(Sn, out=Sn)
    np.abs(log_aF, out=log_aF)                       # |log|F||
    log_aF[zero] = 0.0
    del zero
    err = (n - 1) * log_g
    np.exp(err, out=err)
    err *= 1 + 1e-11
    err *= n * eF
    log_aF *= 3.0
    log_aF += 12.0
    log_aF *= n * _U
    log_aF += 8 * _U
    log_aF *= 1 + 1e-6
    log_aF *= aS
    err += log_aF
    del log_aF
    return Sn, aS, err


@dataclasses.dataclass
class _Window:
    """compose2's lattice (cells k, i of masses w > 0; a = k dx) and the window it sums on:
    rows j0 .. j0 + N1 - 1 (s = row dx), N2 columns (r = column dr), with the Chernoff charges
    of every power's s-sum (``charges``) and, for the puts, r-sum (``r_charges``)."""
    dx: float
    dr: float
    k: np.ndarray
    i: np.ndarray
    w: np.ndarray
    a: np.ndarray
    mean: float              # of one coordinate's s
    var: float
    am: np.ndarray           # s-marginal masses by k
    r_max: float             # the largest single r
    j0: int
    N1: int
    N2: int
    charges: dict
    r_charges: dict | None


def _window(lattice, dx: float, dr: float, powers, sds: float, put: bool,
            max_bins: int) -> _Window:
    """The window of :func:`compose2` (see there); MemoryError where it exceeds ``max_bins``."""
    k, i, w = lattice
    keep = w > 0
    k, i, w = k[keep], i[keep], w[keep]
    a = k * dx
    tot = float(w.sum())
    mean = float(np.sum(w * a)) / tot
    var = max(float(np.sum(w * a * a)) / tot - mean * mean, 1e-300)
    r = i * dr
    r_mean = float(np.sum(w * r)) / tot
    r_var = max(float(np.sum(w * r * r)) / tot - r_mean ** 2, 0.0)
    nmax = max(powers)
    # the window: s within sds standard deviations below the mean of the largest sum and up to
    # where its Chernoff charge for E[S'^2; above] is negligible; r from 0 to the mean plus the
    # largest single r plus 12 standard deviations (beyond, folding only lowers r: sound)
    lo_s = max(0.0, (min(powers) * mean - sds * math.sqrt(nmax * var)))
    j0 = int(math.floor(lo_s / dx))
    # a lower bound on the window's size (the s- and r-ends below only grow from these, and
    # next_fast_len(n) >= n): a window over the cap by it needs no Chernoff sizing, whose
    # tilts x knots arrays are largest, and slowest, at the finest steps
    r_hi = nmax * r_mean + 12.0 * math.sqrt(nmax * r_var) + float(r.max())
    least = ((int(math.ceil((nmax * mean + sds * math.sqrt(nmax * var)) / dx)) - j0 + 1)
             * (int(math.ceil(r_hi / dr)) + 2))
    if least > max_bins:
        raise MemoryError(f"two-dimensional window of at least {least} bins exceeds "
                          f"{max_bins} bins")
    am = np.bincount(k, w)
    a_all = dx * np.arange(am.size)
    mom = _Charges.moments(a_all, am, nmax)
    charges = {n: _Charges(a_all, am, n, mom) for n in powers}
    hi_s = _s_end(charges[nmax], nmax, nmax * mean + sds * math.sqrt(nmax * var),
                  0.5 * math.sqrt(nmax * var))
    N1 = sfft.next_fast_len(int(math.ceil(hi_s / dx)) - j0 + 1)
    r_charges = None
    if put:
        r_hi, r_charges = _r_end(i, w, dr, powers, r_hi, float(r.max()))
    N2 = sfft.next_fast_len(int(math.ceil(r_hi / dr)) + 2, real=True)
    if N1 * N2 > max_bins:
        raise MemoryError(f"two-dimensional window {N1} x {N2} exceeds {max_bins} bins")
    return _Window(dx, dr, k, i, w, a, mean, var, am, float(r.max()), j0, N1, N2, charges,
                   r_charges)


def _s_end(charge: _Charges, nmax: int, hi_s: float, step: float) -> float:
    """The window's upper s-end: from ``hi_s`` up by growing steps until the largest sum's
    E[S'^2; above] <= 1e-14 nmax^2. Above the window L <= S'^2 / (t (t - 1)), so that costs
    the curve at most ~1e-14 (sizing only: whatever it is, it is charged)."""
    for _ in range(60):
        if charge.above(hi_s)[0] <= 1e-14 * nmax * nmax:
            break
        hi_s += step
        step *= 1.25
    return hi_s


def _r_end(i, w, dr: float, powers, r_hi: float, r_max: float) -> tuple:
    """(r-end, charges of the r-sums) for the puts, which pay for the mass beyond the r-window
    (Chernoff on R'): the window widened until that is below PUT_OUTSIDE, or until it holds
    every R' (n max r)."""
    nmax = max(powers)
    ar, mr = dr * np.arange(int(i.max()) + 1), np.bincount(i, w)
    mom_r = _Charges.moments(ar, mr, nmax)
    r_charges = {n: _Charges(ar, mr, n, mom_r) for n in powers}
    step = max(r_hi, dr)
    while r_hi < nmax * r_max and r_charges[nmax].above_mass(r_hi) > PUT_OUTSIDE:
        r_hi = min(r_hi + step, nmax * r_max)
    return r_hi, r_charges


def _tilts(win: _Window, nmax: int, put: bool, delta_ref: float) -> tuple:
    """The passes' tilts: none, and the saddle point whose tilted sum has its mean z standard
    deviations out, z for delta_ref, on the side the curve reads (the put reads the sum's
    lower tail, the call its upper one). A heavy-tailed X makes the plain z / sd tilt put all
    its mass at the body's end: at sigma 1, t 100, delta 1e-9 the upper end was 2.5847, with
    the saddle 2.5500 against the lower 2.5486; a third tilt aimed at 1e-20 changed nothing."""
    sd_n = math.sqrt(nmax * win.var)
    sign = -1.0 if put else 1.0
    return (0.0, _saddle(win.a, win.w, nmax, nmax * win.mean
                         + sign * math.sqrt(2.0 * math.log(1.0 / delta_ref)) * sd_n))


def _tilted_spectrum(win: _Window, th: float) -> tuple:
    """(F, lM): the transform of the law tilted by e^{th a}, normalised by its log-mass lM,
    placed on the torus of the window."""
    lw = np.log(win.w) + th * win.a
    lM = float(logsumexp(lw))
    wt = np.exp(lw - lM)
    grid = np.zeros((win.N1, win.N2))
    np.add.at(grid, (win.k % win.N1, win.i % win.N2), wt)
    F = sfft.rfft2(grid, workers=FFT_WORKERS)
    del grid
    return F, lM


class _Sums:
    """The laws being summed over the passes (one per tilt): per bin the smaller budgeted
    bound (``best``) and, for the powers in ``l2``, the smaller computed mass (``best_v``),
    the pass it came from (``sel``), the passes' untilting factors and l2 error bounds."""

    def __init__(self, win: _Window, powers, l2: set, put: bool, done):
        self.win, self.l2, self.put, self.done = win, l2, put, done
        self.out: dict = {}
        self.best: dict[int, Any] = {n: None for n in powers}     # arrays from the first pass
        self.best_v: dict[int, Any] = {n: None for n in powers}
        self.sel: dict[int, Any] = {n: None for n in powers}
        self.facs: dict[int, list] = {n: [] for n in powers}
        self.e2s: dict[int, list] = {n: [] for n in powers}
        N1, N2 = win.N1, win.N2
        self.s_rows = (win.j0 + np.arange(N1)) * win.dx
        self.L = math.log2(N1) + math.log2(N2)
        self.eF = _C_FFT * self.L * _U * (1.0 + 1e-12)
        # each rfft2 coefficient but the first (and the last, N2 even) column stands for two
        self.mult = np.full(N2 // 2 + 1, 2.0)
        self.mult[0] = 1.0
        if N2 % 2 == 0:
            self.mult[-1] = 1.0

    def errors(self, aS, err) -> tuple:
        """(ebin, e2): the per-bin error budget and ||e||_2 of the bins' errors: the
        coefficients' errors through the inverse transform (Parseval: ||ifft(E)||_2 =
        ||E||_2 / sqrt(N)) and that transform's own rounding, normwise (Higham, Accuracy and
        Stability, Thm 24.2)."""
        N1, N2, mult, L = self.win.N1, self.win.N2, self.mult, self.L
        ebin = (float(np.sum(err * mult[None, :])) + _C_FFT * L * _U
                * float(np.sum(aS * mult[None, :]))) / (N1 * N2)
        e2 = (math.sqrt(float(np.sum(err * err * mult[None, :])))
              + _C_FFT * L * _U * math.sqrt(float(np.sum(aS * aS * mult[None, :])))) \
            / math.sqrt(N1 * N2) * (1 + 1e-9)
        return ebin, e2

    def add(self, n: int, ti: int, th: float, lM: float, arrays: list, last: bool):
        """Pass ti's power n (``arrays`` = [S_n, |S_n|, err_n], emptied here: the power's
        arrays are dropped as soon as they are read) into law n; law n is finished after
        the last pass."""
        Sn, aS, err = arrays
        arrays.clear()
        ebin, e2 = self.errors(aS, err)
        del aS, err
        res = sfft.irfft2(Sn, s=(self.win.N1, self.win.N2), workers=FFT_WORKERS)
        del Sn
        j0 = self.win.j0
        with np.errstate(over="ignore"):
            fac = np.exp(np.minimum(n * lM - th * self.s_rows, 700.0))
        # the window row w sits at circular row (j0 + w) mod N1: the bins stay in circular
        # order (the factors rolled to it instead), and the laws are rolled once at the end
        fac_c = np.roll(fac, j0)
        over = fac_c >= math.exp(700.0) * 0.999
        # (res + ebin) fac, clipped at 0, computed in place (the same roundings; in res
        # itself where V is not wanted)
        if n in self.l2:
            up = res + ebin
        else:
            up = res
            del res
            up += ebin
        up *= fac_c[:, None]
        np.maximum(up, 0.0, out=up)
        up[over] = np.inf
        # the pass with the smaller budgeted bound, bin by bin (any choice is sound; this
        # one keeps a tilt's huge untilting factors off the bins where it is poor)
        better = None if self.best[n] is None else up < self.best[n]
        if better is None:
            self.best[n] = up
        else:
            np.copyto(self.best[n], up, where=better)
        del up
        if n in self.l2:
            self._add_l2(n, ti, res, fac, fac_c, over, better, e2)
            del res
        del better
        if last:
            self.finish(n)

    def _add_l2(self, n, ti, v, fac, fac_c, over, better, e2):
        """The computed masses v = res fac, clipped at 0, in res itself (not read again);
        kept in the bins where this pass's budgeted bound was."""
        v *= fac_c[:, None]
        np.maximum(v, 0.0, out=v)
        v[over] = np.inf
        self.facs[n].append(np.where(np.roll(over, -self.win.j0), np.inf, fac))
        self.e2s[n].append(e2)
        if better is None:
            self.best_v[n], self.sel[n] = v, np.zeros(v.shape, dtype=np.int8)
        else:
            np.copyto(self.best_v[n], v, where=better)
            self.sel[n][better] = ti

    def finish(self, n: int):
        """Law n, once its last pass is summed (``done`` may then shrink it at once)."""
        win, j0 = self.win, self.win.j0
        rel = max(1e-9, math.expm1(8 * _U * n * (win.am.size + 8)))
        # back to window order, scaled in place (the circular arrays are not read again)
        U = np.roll(self.best.pop(n), -j0, axis=0)
        U *= 1 + rel
        extra = {}
        if n in self.l2:
            V = np.roll(self.best_v.pop(n), -j0, axis=0)
            V *= 1 + rel
            extra = dict(V=V, sel=np.roll(self.sel.pop(n), -j0, axis=0), facs=self.facs[n],
                         e2=[e * (1 + rel) for e in self.e2s[n]])
        s_lo = j0 * win.dx * (1 + 4 * _U)
        s_hi = (j0 + win.N1) * win.dx * (1 - 4 * _U)
        charge = win.charges[n]
        law: Law | PutLaw
        if self.put:
            assert win.r_charges is not None      # the window was made for puts
            # S' >= 0: nothing lies below a window that starts at 0; R' >= N2 dr by Chernoff
            # on the r-marginal, nothing when the window holds every R' (n max r)
            below = charge.below(s_lo) if j0 > 0 else 0.0
            beyond_r = (win.r_charges[n].above_mass(win.N2 * win.dr * (1 - 4 * _U))
                        if (win.N2 - 1) * win.dr < n * win.r_max else 0.0)
            out_mass = below + charge.above_mass(s_hi) + beyond_r
            law = PutLaw(win.dx, win.dr, j0 * win.dx, U, min(out_mass * (1 + 8 * _U), 3.0),
                         **extra)
        else:
            a2, a1 = charge.above(s_hi)
            law = Law(win.dx, win.dr, j0 * win.dx, U, s_lo, charge.below(s_lo), a2, a1,
                      **extra)
        del U, extra
        self.out[n] = law if self.done is None else self.done(n, law)


def compose2(lattice, dx: float, dr: float, powers, delta_ref: float,
             sds: float = 10.0, put: bool = False, max_bins: int = MAX_BINS,
             l2=None, size_only: bool = False, done=None):
    """{n: Law} for every n in ``powers`` (see the module docstring); {n: PutLaw} with
    ``put``; MemoryError where the window would exceed ``max_bins``. ``l2``: the powers whose
    laws carry V, sel, facs and e2 (default all; the others' are None: a curve that reads only
    U need not hold a second window). ``size_only``: the window's shape (N1, N2) only, after
    the same check (sizing is cheap; the sums are not). ``done(n, law)``: called as soon as
    law n is final (after its last pass, while the larger powers are still being summed), its
    value kept for n instead of the law: a caller that reads only part of a law (a merged
    copy) need not hold the whole window meanwhile."""
    l2 = set(powers) if l2 is None else set(l2)
    win = _window(lattice, dx, dr, powers, sds, put, max_bins)
    if size_only:
        return win.N1, win.N2
    tilts = _tilts(win, max(powers), put, delta_ref)
    sums = _Sums(win, powers, l2, put, done)
    for ti, th in enumerate(tilts):
        F, lM = _tilted_spectrum(win, th)
        last = ti == len(tilts) - 1
        # (each power's arrays handed over in a list the sums empty: none is held here)
        for n, *arrays in _power_spectra(F, np.abs(F), sorted(powers), sums.eF):
            sums.add(n, ti, th, lM, arrays, last)
        del F
    return {n: sums.out[n] for n in powers}
