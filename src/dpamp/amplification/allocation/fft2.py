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
            aF = np.abs(F)
            if prev is not None and n == prev[0] + 1:
                m, Sn, err = prev
                prev = None
                aSm = np.abs(Sn)
                # in place, in the order of (err_m |F| + G^m (1 + 1e-11) eF
                # + 3u |S_m| |F|) (1 + 8u): the last power's arrays are not read again
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
            else:
                # exp(n log|F| + i n arg F) and n eF G^{n-1} + rel |S_n| (the docstring), in
                # place where a temporary would be a window
                # (log|F| and arg F only here: the powers after the first are usually
                # consecutive)
                prev = None
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
            # at least 1e-300: a power that underflows to 0 is within that of the true one
            np.fmax(err, 1e-300, out=err)
            np.fmin(err, aS + (1.0 + 1e-9), out=err)
        prev = (n, Sn, err)
        # |S_n| handed over without a reference left here (the caller drops it when done)
        box = [aS]
        del aS
        yield n, Sn, box.pop(), err


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
    # above the window L <= S'^2 / (t (t - 1)): E[S'^2; above] <= 1e-14 t^2 costs the curve
    # at most ~1e-14 (sizing only: whatever it is, it is charged)
    mom = _Charges.moments(a_all, am, nmax)
    charges = {n: _Charges(a_all, am, n, mom) for n in powers}
    hi_s = nmax * mean + sds * math.sqrt(nmax * var)
    step = 0.5 * math.sqrt(nmax * var)
    for _ in range(60):
        if charges[nmax].above(hi_s)[0] <= 1e-14 * nmax * nmax:
            break
        hi_s += step
        step *= 1.25
    N1 = sfft.next_fast_len(int(math.ceil(hi_s / dx)) - j0 + 1)
    r_charges = None
    if put:
        # the puts pay for the mass beyond the r-window (Chernoff on R'): widen the window
        # until that is below PUT_OUTSIDE, or until it holds every R' (n max r)
        ar, mr = dr * np.arange(int(i.max()) + 1), np.bincount(i, w)
        mom_r = _Charges.moments(ar, mr, nmax)
        r_charges = {n: _Charges(ar, mr, n, mom_r) for n in powers}
        step = max(r_hi, dr)
        while (r_hi < nmax * float(r.max())
               and r_charges[nmax].above_mass(r_hi) > PUT_OUTSIDE):
            r_hi = min(r_hi + step, nmax * float(r.max()))
    N2 = sfft.next_fast_len(int(math.ceil(r_hi / dr)) + 2, real=True)
    if N1 * N2 > max_bins:
        raise MemoryError(f"two-dimensional window {N1} x {N2} exceeds {max_bins} bins")
    if size_only:
        return N1, N2
    sd_n = math.sqrt(nmax * var)
    # the put reads the sum's lower tail, the call its upper one: a tilt at the saddle point
    # whose tilted sum has its mean z standard deviations out, z for delta_ref (a heavy-tailed
    # X makes the plain z / sd tilt put all its mass at the body's end: at sigma 1, t 100,
    # delta 1e-9 the upper end was 2.5847, with the saddle 2.5500 against the lower 2.5486; a
    # third tilt aimed at 1e-20 changed nothing)
    sign = -1.0 if put else 1.0
    tilts = (0.0, _saddle(a, w, nmax, nmax * mean
                          + sign * math.sqrt(2.0 * math.log(1.0 / delta_ref)) * sd_n))
    out = {}
    s_lo = j0 * dx * (1 + 4 * _U)
    s_hi = (j0 + N1) * dx * (1 - 4 * _U)

    def finish(n):
        """Law n, once its last pass is summed (``done`` may then shrink it at once)."""
        rel = max(1e-9, math.expm1(8 * _U * n * (am.size + 8)))
        # back to window order, scaled in place (the circular arrays are not read again)
        U = np.roll(best.pop(n), -j0, axis=0)
        U *= 1 + rel
        extra = {}
        if n in l2:
            V = np.roll(best_v.pop(n), -j0, axis=0)
            V *= 1 + rel
            extra = dict(V=V, sel=np.roll(sel.pop(n), -j0, axis=0), facs=facs[n],
                         e2=[e * (1 + rel) for e in e2s[n]])
        if put:
            # S' >= 0: nothing lies below a window that starts at 0; R' >= N2 dr by Chernoff
            # on the r-marginal, nothing when the window holds every R' (n max r)
            below = charges[n].below(s_lo) if j0 > 0 else 0.0
            beyond_r = (r_charges[n].above_mass(N2 * dr * (1 - 4 * _U))
                        if (N2 - 1) * dr < n * float(r.max()) else 0.0)
            out_mass = below + charges[n].above_mass(s_hi) + beyond_r
            law = PutLaw(dx, dr, j0 * dx, U, min(out_mass * (1 + 8 * _U), 3.0), **extra)
        else:
            a2, a1 = charges[n].above(s_hi)
            law = Law(dx, dr, j0 * dx, U, s_lo, charges[n].below(s_lo), a2, a1, **extra)
        del U, extra
        out[n] = law if done is None else done(n, law)
    best = {n: None for n in powers}
    # the l2 route: per bin the smaller computed mass, clipped at 0, and its pass
    best_v = {n: None for n in powers}
    sel = {n: None for n in powers}
    facs = {n: [] for n in powers}
    e2s = {n: [] for n in powers}
    rows = j0 + np.arange(N1)
    s_rows = rows * dx
    L = math.log2(N1) + math.log2(N2)
    eF = _C_FFT * L * _U * (1.0 + 1e-12)
    for ti, th in enumerate(tilts):
        lw = np.log(w) + th * a
        lM = float(logsumexp(lw))
        wt = np.exp(lw - lM)
        grid = np.zeros((N1, N2))
        np.add.at(grid, (k % N1, i % N2), wt)
        F = sfft.rfft2(grid, workers=FFT_WORKERS)
        del grid
        mult = np.full(F.shape[1], 2.0)
        mult[0] = 1.0
        if N2 % 2 == 0:
            mult[-1] = 1.0
        for n, Sn, aS, err in _power_spectra(F, np.abs(F), sorted(powers), eF):
            ebin = (float(np.sum(err * mult[None, :])) + _C_FFT * L * _U
                    * float(np.sum(aS * mult[None, :]))) / (N1 * N2)
            # ||e||_2 of the bins' errors: the coefficients' errors through the inverse
            # transform (Parseval: ||ifft(E)||_2 = ||E||_2 / sqrt(N)) and that transform's
            # own rounding, normwise (Higham, Accuracy and Stability, Thm 24.2)
            e2 = (math.sqrt(float(np.sum(err * err * mult[None, :])))
                  + _C_FFT * L * _U * math.sqrt(float(np.sum(aS * aS * mult[None, :])))) \
                / math.sqrt(N1 * N2) * (1 + 1e-9)
            del aS, err
            res = sfft.irfft2(Sn, s=(N1, N2), workers=FFT_WORKERS)
            del Sn
            with np.errstate(over="ignore"):
                fac = np.exp(np.minimum(n * lM - th * s_rows, 700.0))
            # the window row w sits at circular row (j0 + w) mod N1: the bins stay in circular
            # order (the factors rolled to it instead), and the laws are rolled once at the end
            fac_c = np.roll(fac, j0)
            over = fac_c >= math.exp(700.0) * 0.999
            # (res + ebin) fac, clipped at 0, computed in place (the same roundings; in res
            # itself where V is not wanted)
            if n in l2:
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
            better = None if best[n] is None else up < best[n]
            if better is None:
                best[n] = up
            else:
                np.copyto(best[n], up, where=better)
            del up
            if n not in l2:
                if ti == len(tilts) - 1:
                    finish(n)
                continue
            # res fac, clipped at 0, in place: res is not read again
            v = res
            del res
            v *= fac_c[:, None]
            np.maximum(v, 0.0, out=v)
            v[over] = np.inf
            facs[n].append(np.where(np.roll(over, -j0), np.inf, fac))
            e2s[n].append(e2)
            if better is None:
                best_v[n], sel[n] = v, np.zeros(v.shape, dtype=np.int8)
            else:
                np.copyto(best_v[n], v, where=better)
                sel[n][better] = ti
            del v, better
            if ti == len(tilts) - 1:
                finish(n)
        del F
    return {n: out[n] for n in powers}
