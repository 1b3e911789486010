"""The large coordinates of one allocation epoch: the likelihood ratio above a split point b.

For small noise (Gaussian sigma <~ 0.8) X = dP0/dQ0 = e^l is lognormal with a very long right
tail, and the answer of a random-allocation query is decided by the event that ONE coordinate
is huge. A linear grid of X reaching where the tail is negligible needs far too many points; so
(our construction) X is split at a moderate b: the body X <= b stays on the linear grid of
:mod:`.grid`, the tail X > b goes on a geometric grid y_j = b r^j (cells with their Q0-mass
q_j = Q0[cell] and first moment p_j = E_Q0[X; cell] = P0[cell]) up to Y_max.

**Remove, Q-form.** With all t coordinates ~ Q0, N = #{i: X_i > b} ~ Bin(t, pi), pi = Q0[X > b]:

    H_x(P || Q) = E_Q[(S/t - x)_+] + P0[l = inf]
                = T_0(x) + T_1(x) + T_2(x) + T_3+(x) + P0[l = inf],

T_n the expectation on {N = n} (T_3+ on N >= 3).

* T_0: the t-fold convolution of the body SUB-measure (:mod:`.pld`, as before with cut b).
* T_1 = t E[((R + Y)/t - x)_+] = sum over the tail of E[C_R(t x - Y); Y], where R is the
  (t-1)-fold body sub-measure, Y the tail sub-measure and C_R(z) = E[(R - z)_+] (sub-measures
  throughout). z -> C_R(t x - y) is convex in y, so each tail cell's mass split to its two ends
  keeping its mean (:func:`tail_cells`, ``w_up``) gives an upper bound, and its whole mass at its
  conditional mean (Jensen) a lower one. C_R(z) for z >= 0 is (t-1) E_{R'}[(1 - z/R')_+], R' the
  P-tilted law (one coordinate's masses times X, the engine's weights in [0, 1] with its suffix
  error budget: :class:`CallR`); for z < 0 it is E[R] + |z| Q[R], with Q[R] = (1 - pi)^{t-1}.
  Any coordinate above Y_max is charged once for all N: E_Q[S/t; some X_i > Y_max] =
  E_Q[X_1; ...] <= P0[X > Y_max] + (t-1) Q0[X > Y_max]; the sums run over (b, Y_max].
* T_2 (N = 2) = C(t, 2) E[((R_{t-2} + Y_1 + Y_2)/t - x)_+] <= C(t, 2) pi E[((R_{t-2} + 2Y)/t -
  x)_+] (convexity: the mean of the values at 2 Y_1 and 2 Y_2 bounds the value at their mean,
  Y_1 + Y_2), and C_{R_{t-2}} <= C_{R_{t-1}} / (1 - pi) (R_{t-1} = R_{t-2} + a body coordinate
  of mass 1 - pi, >= 0): T_2 <= (t-1) pi / (2 (1 - pi)) sum over the tail of E[C_R(t x - 2Y)],
  the same sum as T_1 at the doubled knots. b keeps (t-1) pi <= TPI_MAX, so this is a small
  fraction of T_1 at x/2.
* N >= 3: E_Q[S/t; N >= 3] = E_Q[X_1; N >= 3] <= P0[b < X < inf] C(t-1, 2) pi^2 + C(t-1, 3) pi^3
  (union bounds on Bin(t-1, pi) >= 2, >= 3; E_Q[X; X <= b] <= 1), charged at +inf (upper) and
  left out (lower). b is the smallest point where this charge is below a target and
  (t-1) pi <= TPI_MAX (:func:`split_points`).

Lower bound of T_1 (:func:`lower_atoms`): R from the engine's lower P-tilted composition R'_lo
of (x lo) * lo^{t-2}, lo the body's lowered masses (:mod:`.grid`: smaller than the body in the
increasing convex order), each bin lowered by its budget. Its Q-masses (t-1) m'(s)/s, s > 0,
bound R from below in that order: for phi increasing, convex, >= 0, (t-1) sum m'(s) phi(s)/s
<= (t-1) E_{(x lo) lo^{t-2}}[phi(S)/S] = E_{lo^{t-1}}[phi(S); S > 0] (the factor x of one of
t-1 exchangeable coordinates is S/(t-1) on average) <= E_{body^{t-1}}[phi(S)]. They are merged
into chunks at their Q-weighted means (Jensen), and each tail cell at its
conditional mean (a lower mass, a lower position); the atoms s = r + y with Q-mass t Q_R Q_Y,
then merged in bins of log s at their means. Merging outcomes is a post-processing (and a
mean-preserving contraction of S), so every hockey-stick divergence only decreases.

Add direction (H_x(Q || P) = E_Q[(1 - x S/t)_+], decreasing in S): the upper bound puts the
whole tail at b (X ^ b <= X; :mod:`.pld` adds Q0[X > b] to the atom at b); the lower keeps the
event N = 1 as one atom (:func:`add_lower_atom`) and drops N >= 2.

Floating point: every mass carries its error bound (raised above, lowered below), positions are
rounded outward (upper atoms up, lower atoms down), z = t x - y is charged 8 ulps of t x + y times
the slope of C_R (<= 1) on the band of knots evaluated one by one and next to its ends. Stated,
not charged: scipy's cdf / sf to FUNC_ULPS ulps (as in :mod:`.grid`), and the positions of the
lower atoms' losses log(s/t) at ulp level.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core import roots
from .chords import chord_points, chords
from .grid import FUNC_ULPS, add_atoms

_U = 2.0 ** -53
#: ratio log r of the geometric tail grid: at most this, and about dx / sqrt(t) (the loss grid
#: step the epoch is computed for, h = 2 dx / sqrt(t), halved) but no finer than dx / b (knots
#: closer than the S-grid's step dx resolve nothing more)
LOG_R_MAX = 1e-3
#: and at least this: a cell's split to its ends is a mean-preserving spread of the loss by at
#: most log r (Y <= S), whose effect on a curve is second order (~(log r)^2 / 2 of its second
#: derivative in the loss: ~1e-5 of delta at 2^-12 where log delta falls 30 per unit of
#: epsilon); finer knots only cost (a plan's grid fixed by 5000 Poisson steps gave log r 6e-5)
LOG_R_MIN = 2.0 ** -12
#: where the curve is asked at points closer than this in log x, :func:`upper_tail` evaluates
#: its sums this far apart and bounds the points between by chords (module docstring)
CHORD_LOG_STEP = 2.0 ** -10
#: quantile levels of R's chunks for the lower bound (logit-spaced: finer in both tails)
N_CHUNKS = 192
#: bins of log s per loss-grid step h for merging the lower atoms
BINS_PER_H = 8
#: largest (t-1) pi: the bound on T_2 (charged to the upper bound only) is about (t-1) pi / 2
#: times T_1 at half the x
TPI_MAX = 1e-4


def tail_masses(loss, lb: float):
    """(P0[lb < l < inf], Q0[l > lb]) of ``loss`` (continuous part and finite atoms); sizing."""
    p = q = 0.0
    if loss.sf is not None:
        sp, sq = loss.sf(np.array([lb]))
        p, q = float(sp[0]), float(sq[0])
    if loss.atom_loss.size:
        sel = np.isfinite(loss.atom_loss) & (loss.atom_loss > lb)
        p += float(np.sum(loss.atom_p[sel]))
        q += float(np.sum(loss.atom_q[sel]))
    return p, q


def charge(p_tail: float, pi: float, t: int) -> float:
    """E_Q[S/t; N >= 3] <= p_tail min(1, C(t-1, 2) pi^2) + min(1, C(t-1, 3) pi^3) (rounded
    up)."""
    n = t - 1
    return (p_tail * min(1.0, 0.5 * n * (n - 1) * pi * pi)
            + min(1.0, n * (n - 1) * (n - 2) / 6.0 * pi ** 3)) * (1 + 16 * _U)


def split_points(loss, t: int, targets, y_max: float) -> list:
    """For each target, a b (as small as a bisection on log b finds) with the charge of
    N >= 3 at most about the target and (t-1) pi <= TPI_MAX (sizing: the charge itself is
    computed from the cells)."""
    hi0 = math.log(y_max)
    out = []

    def ok(lb, target):
        p, q = tail_masses(loss, lb)
        return charge(p, q, t) <= target and (t - 1) * q <= TPI_MAX
    for target in targets:
        if ok(0.0, target):
            out.append(1.0)
            continue
        _, hi = roots.bisect(lambda lb: ok(lb, target), 0.0, hi0, iterations=60)
        out.append(math.exp(hi))
    return out


@dataclasses.dataclass
class Tail:
    """The tail X > b on a geometric grid (see the module docstring)."""
    y_up: np.ndarray     # knots (rounded up), ascending
    w_up: np.ndarray     # Q0-masses of the mean-preserving split at the knots (raised)
    y_lo: np.ndarray     # per cell: its conditional mean, rounded down
    q_lo: np.ndarray     # per cell: its Q0-mass, lowered
    pi_lo: float         # Q0[b < X <= Y_max] from below
    beyond: float        # P0[X > Y_max] + (t-1) Q0[X > Y_max] (rounded up)
    pi_up: float = 1.0   # Q0[X > b] from above (set by the caller, from the body's cells)


def tail_cells(loss, lb: float, y_max: float, log_r: float, t: int) -> Tail:
    """The tail cells between the loss lb (= log b, the body's last knot as the body computed it)
    and log Y_max, of ratio e^{log_r}."""
    n = max(1, int(math.ceil((math.log(y_max) - lb) / log_r)))
    lk = lb + log_r * np.arange(n + 1)
    rel = FUNC_ULPS * _U
    if loss.sf is not None:
        sP, sQ = (np.asarray(v, dtype=float) for v in loss.sf(lk))
    else:
        sP = sQ = np.zeros(n + 1)
    p = np.maximum(sP[:-1] - sP[1:], 0.0)
    q = np.maximum(sQ[:-1] - sQ[1:], 0.0)
    ep = rel * (sP[:-1] + sP[1:]) + _U * p
    eq = rel * (sQ[:-1] + sQ[1:]) + _U * q
    beyond_p, beyond_q = float(sP[-1]) * (1 + rel), float(sQ[-1]) * (1 + rel)
    if loss.atom_loss.size:
        al = loss.atom_loss
        fin = np.isfinite(al) & (al > lb)
        cell = np.searchsorted(lk, al[fin], side="left") - 1      # lk_c < l <= lk_{c+1}
        inside = cell < n
        cc = cell[inside]
        bp, bq = add_atoms(p, q, ep, eq, cc, loss.atom_p[fin], loss.atom_q[fin], inside)
        beyond_p += bp
        beyond_q += bq
    y = np.exp(lk)
    A = y[:-1] * (1 - 4 * _U)                 # the true cell [e^lk_c, e^lk_{c+1}] lies in [A, B]
    B = y[1:] * (1 + 4 * _U)
    w = B - A
    # mean-preserving split of each cell onto [A, B] (larger in convex order), as in
    # grid.split_masses: the inputs' bounds, and the rounding of every step (B - A to 2 ulps of B)
    left = np.clip((B * q - p) / w, 0.0, q)
    right = np.clip((p - A * q) / w, 0.0, q)
    e = (B * eq + ep + 8 * _U * (B * q + p)) / w + (left + right + q) * 16 * _U * B / w
    w_up = np.zeros(n + 1)
    w_up[:-1] += left + e
    w_up[1:] += right + e
    # every atom at the knot y_j (1 + 4u) >= the true end it stands for (a cell's left end
    # A_j <= y_j and its right end B_{j-1} = y_j (1 + 4u)): moving mass up only raises T_1
    y_up = y * (1 + 4 * _U)
    q_lo = np.maximum(q - eq, 0.0) * (1 - 4 * _U)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_lo = np.where(q > 0, np.maximum(p - ep, 0.0) / (q + eq), 0.0) * (1 - 8 * _U)
    y_lo = np.maximum(mean_lo, A)
    pi_lo = max(float(np.sum(q_lo)) * (1 - (n + 4) * _U), 0.0)
    beyond = (beyond_p + (t - 1) * beyond_q) * (1 + 8 * _U)
    return Tail(y_up, w_up * (1 + 4 * _U), y_lo, q_lo, pi_lo, beyond)


class CallR:
    """Upper bounds on C_R(z) = E_Q[(R - z)_+], R the (t-1)-fold body sub-measure, from the
    engine's upper P-tilted compositions R' (several: the smaller value is taken), positions
    s = step (jlo + i): C_R(z) = (t-1) E_{R'}[(1 - z/R')_+] for z >= 0 (module docstring), with
    the suffix budget E_k (weights in [0, 1], zero below the first bin above z) and the mass at
    +inf (weight <= 1). These are computed once at the knots z_j = j step; between knots the
    chord of the two knots' bounds is a bound (C_R is convex), so a call is an interpolation."""

    def __init__(self, pmfs, step: float, t: int, pi_lo: float):
        self.t1 = t - 1
        self.step = step
        self.parts = []
        for pmf in pmfs:
            m = np.maximum(pmf.mass, 0.0)
            s = step * (pmf.jlo + np.arange(m.size))
            with np.errstate(divide="ignore"):
                inv = np.where(s > 0, 1.0 / np.maximum(s, 1e-300), 0.0)
            A = np.concatenate([np.cumsum(m[::-1])[::-1], [0.0]])
            B = np.concatenate([np.cumsum((m * inv)[::-1])[::-1], [0.0]])
            self.parts.append((s, A, B, pmf.err, pmf.inf, m.size))
        self.s_top = max(float(p[0][-1]) for p in self.parts) if self.parts else 0.0
        top = [(p[3][-1] + p[4]) for p in self.parts]
        self.c_top = self.t1 * min(top) * (1 + 8 * _U)            # C_R(z) for z >= s_top
        self.n = max(1, int(math.ceil(self.s_top / step)))
        # knots only over the compositions' windows: below the lowest window C_R's bound is
        # affine in z and :meth:`_direct` gives it at any z, and the windows do not grow with
        # t where 0 .. s_top does (t 10^7: 2.4e8 knots, 1.8 GiB each array)
        lowest = min((float(p[0][0]) for p in self.parts), default=0.0)
        self.j0 = min(max(0, int(math.floor(lowest / step))), self.n - 1)
        zk = step * np.arange(self.j0, self.n + 1)
        # (each knot z_j is step j to an ulp: C_R has slope in [-1, 0], so 2 ulps of z_j more)
        self.U = self._direct(zk) + 2 * _U * zk
        self.c0 = float(self._direct(np.zeros(1))[0])            # E_Q[R]
        # Q[R] = (1 - pi)^{t-1}, from above
        self.mass = min(1.0, math.exp(self.t1 * math.log1p(-min(pi_lo, 1.0))) * (1 + 1e-12)) \
            if pi_lo < 1 else 1e-300

    def _direct(self, z: np.ndarray) -> np.ndarray:
        best = None
        for s, A, B, err, inf, n in self.parts:
            k = np.searchsorted(s, z, side="right")
            val = np.maximum(A[k] - z * B[k], 0.0) + (n + 8) * _U * (A[k] + z * B[k]) \
                + err[k] + inf
            best = val if best is None else np.minimum(best, val)
        assert best is not None                   # at least one part
        return self.t1 * best * (1 + 8 * _U)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """C_R at 0 <= z (from above; z beyond the last knot: that knot's value, as C_R
        decreases)."""
        z = np.asarray(z, dtype=float)
        u = z / self.step
        j = np.clip(np.floor(u), self.j0, self.n - 1).astype(np.int64)
        f = np.clip(u - j, 0.0, 1.0)
        lo, hi = self.U[j - self.j0], self.U[j + 1 - self.j0]
        # (a z a few ulps off its cell is charged by the caller: C_R is 1-Lipschitz)
        out = (lo + f * (hi - lo)) * (1 + 4 * _U) + 4 * _U * lo
        below = u < self.j0
        if below.any():
            zb = z[below]
            out[below] = (self._direct(zb) + 2 * _U * np.abs(zb)) * (1 + 4 * _U)
        return out


#: most (x, knot) pairs evaluated at once in :func:`upper_t1`
_PAIRS = 1 << 21


def upper_tail(x: np.ndarray, t: int, tail: Tail, C: CallR) -> np.ndarray:
    """Upper bounds on T_1(x) + T_2(x) + E_Q[S/t; some X_i > Y_max] (module docstring), at
    x >= 0. Each term is convex in x (C_R is convex and t x - y affine), so where x is denser
    than CHORD_LOG_STEP in log x the sums are evaluated at points that far apart (the ends
    included) and the x between get the chord of their two neighbours' bounds, itself a
    bound: the sums cost (points) x (knots in a band), and a plan whose grid is set by other
    parts asked ~17000 points of ~20000 knots each."""
    x = np.asarray(x, dtype=float)
    at = chord_points(x, CHORD_LOG_STEP)
    if at is None:
        return _upper_tail_at(x, t, tail, C)
    return chords(x, at, _upper_tail_at(x[at], t, tail, C))


def _upper_tail_at(x: np.ndarray, t: int, tail: Tail, C: CallR) -> np.ndarray:
    """:func:`upper_tail` evaluated at every x."""
    t1 = _upper_sum(x, t, tail.y_up, tail.w_up, C)
    pi = tail.pi_up
    # (pi >= 1 leaves no body: the bound is vacuous, and the caller clips the curve at 1)
    f = 0.5 * (t - 1) * pi / (1.0 - pi) * (1 + 8 * _U) if pi < 1.0 else 1e300
    t2 = _upper_sum(x, t, 2.0 * tail.y_up, tail.w_up, C)
    return (t1 + f * t2 + tail.beyond) * (1 + 8 * _U)


def _upper_sum(x: np.ndarray, t: int, Y: np.ndarray, W: np.ndarray, C: CallR) -> np.ndarray:
    """Upper bounds on sum_j W_j C_R(t x - Y_j): knots with Y_j >= t x in closed form
    (C_R(z) <= E[R] + |z| Q[R]), knots with t x - Y_j >= s_top at the constant C_R beyond the
    window, the rest (a band of width s_top) one by one."""
    n = Y.size
    tx = t * np.asarray(x, dtype=float)
    sW = np.concatenate([np.cumsum(W[::-1])[::-1], [0.0]])
    sWy = np.concatenate([np.cumsum((W * Y)[::-1])[::-1], [0.0]])
    k1 = np.searchsorted(Y, tx, side="left")            # y_j >= t x from k1 on
    k0 = np.minimum(np.searchsorted(Y, tx - C.s_top, side="right"), k1)   # z >= s_top below
    above = C.c0 * sW[k1] + C.mass * np.maximum(sWy[k1] - tx * sW[k1], 0.0) \
        + C.mass * (n + 8) * _U * (sWy[k1] + tx * sW[k1])
    below = C.c_top * (sW[0] - sW[k0])
    mid = np.zeros(tx.size)
    lip = np.zeros(tx.size)
    counts = k1 - k0
    start = 0
    while start < tx.size:
        # rows [start, end) with at most _PAIRS pairs (at least one row)
        cum = np.cumsum(counts[start:])
        end = start + max(1, int(np.searchsorted(cum, _PAIRS, side="right")))
        c = counts[start:end]
        tot = int(c.sum())
        if tot:
            rows = np.repeat(np.arange(start, end), c)
            ks = np.arange(tot) - np.repeat(np.cumsum(c) - c, c) + np.repeat(k0[start:end], c)
            z = np.maximum(tx[rows] - Y[ks], 0.0)
            mid[start:end] = np.bincount(rows - start, W[ks] * C(z), end - start)
            lip[start:end] = np.bincount(rows - start, W[ks] * (tx[rows] + Y[ks]), end - start)
        start = end
    total = above + below + mid * (1 + (n + 8) * _U)
    # z = t x - y in floating point, each within 4 ulps of t x + y, and C_R has slope in
    # [-1, 0]: the band's knots, and those next to its ends (which a rounded comparison may
    # have put on the wrong side) are charged that
    edge = np.zeros(tx.size)
    for k in (k0 - 1, k0, k1 - 1, k1):
        ok = (k >= 0) & (k < n)
        kk = np.clip(k, 0, n - 1)
        edge += np.where(ok, W[kk] * (tx + Y[kk]), 0.0)
    lip = 8 * _U * (lip + edge) * (1 + (n + 8) * _U)
    return (total + lip) * (1 + 8 * _U)


def lower_atoms(s: np.ndarray, q_r: np.ndarray, t: int, tail: Tail, h: float):
    """Atoms (positions of S, Q-masses) of a lower bound on the Q-law of S on {N = 1}: R's lower
    Q-masses ``q_r`` at ``s`` merged into chunks at their means, each tail cell at its
    conditional mean, the t choices of the tail coordinate, and the sums merged in bins of
    log s of width h / BINS_PER_H at their Q-weighted means (module docstring)."""
    keep = (q_r > 0) & (s > 0)
    s, q_r = s[keep], q_r[keep]
    tq = tail.q_lo > 0
    yq, qq = tail.y_lo[tq], tail.q_lo[tq]
    if s.size == 0 or yq.size == 0:
        return np.zeros(0), np.zeros(0)
    cum = np.cumsum(q_r)
    tot = cum[-1]
    levels = 1.0 / (1.0 + np.exp(-np.linspace(-25.0, 25.0, N_CHUNKS)))
    edges = np.unique(np.searchsorted(cum, levels * tot, side="left"))
    edges = np.unique(np.concatenate([[0], edges[edges < s.size], [s.size]]))
    cm = np.add.reduceat(q_r, edges[:-1])
    c1 = np.add.reduceat(q_r * s, edges[:-1])
    # (sums of at most s.size positive terms: relative error <= s.size u; the mean rounded down)
    ok = cm > 0
    cm, c1 = cm[ok], c1[ok]
    r_bar = c1 / cm * (1 - (2 * s.size + 8) * _U)
    cm = cm * (1 - (s.size + 4) * _U)
    S = (r_bar[:, None] + yq[None, :]).ravel() * (1 - 4 * _U)
    M = (t * cm[:, None] * qq[None, :]).ravel() * (1 - 4 * _U)
    width = h / BINS_PER_H
    b = np.floor(np.log(S / t) / width).astype(np.int64)
    b -= b.min()
    nb = int(b.max()) + 1
    Mb = np.bincount(b, M, nb)
    S1 = np.bincount(b, M * S, nb)
    cnt = np.bincount(b, None, nb)
    ok = Mb > 0
    Mb, S1, cnt = Mb[ok], S1[ok], cnt[ok]
    pos = S1 / Mb * (1 - (2 * cnt + 8) * _U)
    return pos, Mb * (1 - (cnt + 4) * _U)


def add_lower_atom(tail: Tail, C: CallR, t: int):
    """(s, m) of one atom for the add direction's lower pair: the event N = 1 (one coordinate in
    (b, Y_max]) merged into its Q-mass m (from below, t (1 - pi)^{t-1} Q0[b < X <= Y_max]) at a
    position s at least its conditional mean of S (E_Q[R] / Q[R] + E[Y; tail] / Q0[tail], each
    bounded above). Merging outcomes is a post-processing; a larger S lowers the add loss
    log(t/S) of that P-mass, which lowers every composition's delta (module docstring)."""
    if tail.pi_lo <= 0 or tail.pi_up >= 1:
        return 0.0, 0.0
    q_r = math.exp((t - 1) * math.log1p(-tail.pi_up)) * (1 - 1e-12)
    m = t * q_r * tail.pi_lo * (1 - 1e-12)
    n = tail.y_up.size
    mean_y = float(np.sum(tail.w_up * tail.y_up)) * (1 + (n + 4) * _U) / tail.pi_lo
    s = (C.c0 / q_r + mean_y) * (1 + 8 * _U)
    return s, m


__all__ = ["add_lower_atom", "Tail", "tail_cells", "split_points", "tail_masses", "charge",
           "CallR", "upper_tail", "lower_atoms", "LOG_R_MAX", "LOG_R_MIN", "CHORD_LOG_STEP"]
