"""The remove curve of one epoch of 2-out-of-t random allocation, from the joint law of
(sum X_i, sum X_i^2): a proven upper bound without the block argument.

**The pair.** With X = dP0/dQ0 of the base mechanism (iid X_1..X_t under Q = Q0^t), one epoch
of k-out-of-t allocation has the remove pair P = mean over k-subsets of (P0 there, Q0
elsewhere), Q = Q0^t, and dP/dQ = L = e_k(X) / C(t, k) (FS25a Sec. 2). For k = 2,

    L = (S^2 - R) / (t (t - 1)),     S = sum X_i,  R = sum X_i^2,

so H_x(P || Q) = E_Q[(L - x)_+] is a function of the two-dimensional sum (S, R). The block
bound of :mod:`.pld` replaces the uniform pair by one draw in each half; here nothing is
replaced, only spread in convex order and charged, so the bound tends to the truth as the grid
is refined (the block bound does not).

**The upper bound, step by step** (each step can only raise E_Q[(L - x)_+]):

1. *Events by the number N of coordinates above b.* For any event A, E_Q[(L - x)_+ 1_A] <=
   E_Q[L 1_A] = P[A]. N >= 2 is charged with P[N >= 2] <= pp^2 + 2 (t - 2) pp qq +
   C(t - 2, 2) qq^2 (pp = P0[X > b], qq = Q0[X > b]: under P_{ij} coordinates i, j have law
   P0, the others Q0; union over pairs). By symmetry the event N = 1 is t times the event
   "X_t > b, the others <= b".
2. *Spread of each coordinate (body).* e_2 is affine in each X_i, so (e_2 / C - x)_+ is convex
   in each X_i; splitting X_i's law on every cell [a_c, a_{c+1}] (a_c = c dx) to the cell's
   ends, mean-preserving, raises the expectation (conditional Jensen, one coordinate at a
   time). :func:`.grid.split_masses` gives these masses, each raised by its error bound.
3. *Spread of the square.* Then X_i'^2 = a_c^2 is split between the neighbouring multiples
   of dr, mean-preserving about a point at or below a_c^2: f(s, r) = ((s^2 - r) / (t (t - 1))
   - x)_+ is convex and non-increasing in r, so this raises it again. Now every coordinate
   lives on the lattice (c dx, i dr), and so does the sum.
4. *The sum by a two-dimensional FFT* (:mod:`.fft2`): the cyclic convolution of the tilted
   lattice law is the law of the sum folded modulo the window; folded in r it only lowers r
   (the window starts at r = 0), which raises f; in s each window bin gets its own mass and
   others' (all non-negative): every bin's computed mass plus its floating-point budget is
   at least its true mass. The mass outside the s-window is charged by Chernoff bounds
   (E[S'^2 1{S' >= s_hi}] <= e^{-th s_hi} E[S'^2 e^{th S'}], from the one-coordinate
   moments), and L <= S'^2 / (t (t - 1)).
5. *N = 1.* L = (Y S_r + e_2(rest)) / C(t, 2) is affine in the large coordinate Y: its law on
   (b, Y_max] is split to the ends of a geometric grid (:func:`.tail.tail_cells`), and
   Y > Y_max charged with 2 P0[X > Y_max] + (t - 2) Q0[X > Y_max]; given Y = y the rest's
   (S_r, R_r) law (t - 1 body coordinates) is spread and composed as above, and the curve
   E[((s^2 + 2 y s - r) / (t (t - 1)) - x)_+] is convex in s, so merging rows by a linear
   split in s (the rows of the coarser lattice) raises it too.

Positions are rounded pessimistically (s up, r down, 4 ulps); every sum carries a rounding
bound. :meth:`TwoOfT.add_curve` gives the other half of the same pair's curve, H_x(Q || P) =
x E_Q[(1/x - L)_+] at x >= 1 (E_Q L = 1): the put is convex in each X_i and in Y too, so the
same splits hold, with positions rounded the other way (s and Y down; the square split UP, the
put being non-decreasing in r), rows unmerged (the put of s^2 + 2 y s is not convex in s), and
every event left out (N >= 2, Y > Y_max, a sum outside its window, the r-window included:
folding lowers r, which lowers a put) charged y times its Q-probability. Both halves together
are what a PLD of the pair needs (not yet wired into the engine: NOTES).
"""
from __future__ import annotations

import math

import numpy as np

from . import grid as G
from . import tail as T
from .fft2 import compose2

_U = 2.0 ** -53


class TwoOfT:
    """Upper bounds on H_x(P || Q) of one epoch of 2-out-of-t allocation of ``loss`` (a
    :class:`dpamp.pld.loss.LossDistribution` of the base pair), x >= 1.

    ``dx``: the step of X's grid (the S-lattice); ``b``: the body's end; ``dr``: the step of the
    R-lattice (default t dx / 2: the two spreads then cost L about the same variance);
    ``log_r``: the log-ratio of the large coordinate's geometric grid; ``delta_ref``: the delta
    the FFT's second tilt is aimed at (any tilt is sound); ``y_tail``: the P0- and Q0-mass
    above the largest Y-knot (charged); ``rows_merge``: rows of the rest's law merged to one
    for the N = 1 sum."""

    def __init__(self, loss, t: int, dx: float, b: float, dr: float | None = None,
                 log_r: float = 0.02, delta_ref: float = 1e-8, y_tail: float = 1e-18,
                 rows_merge: int = 8):
        from ...core import _validate as V
        t = V.integer("t", t, low=3)
        dx = V.positive("dx", dx)
        b = V.positive("b", b)
        if dr is not None:
            dr = V.positive("dr", dr)
        if not 0.0 < log_r <= 1.0:
            raise ValueError(f"log_r must be in (0, 1] (got {log_r})")
        rows_merge = V.integer("rows_merge", rows_merge, low=1)
        self.loss, self.t = loss, t
        K = max(2, int(math.ceil(b / dx)))
        c = G.cells(loss, dx, K)
        self.dx = dx
        self.b = c.dx * K
        self.m = G.split_masses(c)                         # knots a_k = k dx, k = 0..K
        self.dr = float(dr) if dr is not None else t * dx / 2.0
        self.rows_merge = rows_merge
        a = dx * np.arange(K + 1)
        # r-split point z dr <= a_k^2 (a_k^2 rounded, then 4 ulps down, the quotient too)
        z = (a * a) * (1 - 4 * _U) / self.dr * (1 - 4 * _U)
        self.i0 = np.floor(z).astype(np.int64)
        self.phi = z - self.i0                             # exact: z < 2^52
        pp = c.p_tail + c.p_inf
        qq = c.q_tail
        self.charge_n2 = (pp * pp + 2 * (t - 2) * pp * qq + 0.5 * (t - 2) * (t - 3) * qq * qq) \
            * (1 + 16 * _U)
        y_max = math.exp(min(G.truncation_point(loss, y_tail), 600.0))
        self.tail = T.tail_cells(loss, math.log(self.b), max(y_max, self.b * 1.5), log_r, t)
        # tail.beyond = P0[X > Y_max] + (t - 1) Q0[X > Y_max]; under P two coordinates are P0
        self.charge_y = 2.0 * self.tail.beyond
        self.delta_ref = delta_ref
        self._laws = None
        self._put_laws = None
        # the puts' charges (Q-probabilities): N >= 2 (C(t, 2) qq^2) and Y > Y_max
        # (tail.beyond >= (t - 1) Q0[X > Y_max], see above)
        q_beyond = self.tail.beyond / (t - 1)
        self.charge_q = (0.5 * t * (t - 1) * qq * qq + t * q_beyond) * (1 + 16 * _U)

    # --- the laws of the sums -----------------------------------------------------------
    def lattice(self) -> tuple:
        """The one-coordinate lattice law: (k, i, mass) triplets (both r-ends of every knot)."""
        k = np.arange(self.m.size)
        w_lo = self.m * (1.0 - self.phi) * (1 + 4 * _U)
        w_hi = self.m * self.phi * (1 + 4 * _U)
        return (np.concatenate([k, k]), np.concatenate([self.i0, self.i0 + 1]),
                np.concatenate([w_lo, w_hi]))

    def laws(self):
        if self._laws is None:
            laws = compose2(self.lattice(), self.dx, self.dr, (self.t, self.t - 1),
                            self.delta_ref)
            # the N = 1 sum reads the rest's law with rows merged: once, not per query chunk
            self._laws = (laws[self.t], laws[self.t - 1], laws[self.t - 1].merged(self.rows_merge))
        return self._laws

    def put_laws(self):
        """The sums for the puts: the square split UP (split point >= a_k^2, the put is
        non-decreasing in r), no row merge (the put of s^2 + 2 y s is not convex in s)."""
        if self._put_laws is None:
            a = self.dx * np.arange(self.m.size)
            z = (a * a) * (1 + 4 * _U) / self.dr * (1 + 4 * _U)
            i0 = np.floor(z).astype(np.int64)
            phi = z - i0
            k = np.arange(self.m.size)
            lat = (np.concatenate([k, k]), np.concatenate([i0, i0 + 1]),
                   np.concatenate([self.m * (1.0 - phi) * (1 + 4 * _U),
                                   self.m * phi * (1 + 4 * _U)]))
            laws = compose2(lat, self.dx, self.dr, (self.t, self.t - 1), self.delta_ref,
                            put=True)
            self._put_laws = (laws[self.t], laws[self.t - 1])
        return self._put_laws

    def add_curve(self, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on H_x(Q || P) = x E_Q[(1/x - L)_+] at every x >= 1 (the other
        half of the remove pair's curve; E_Q L = 1 gives the identity). The put (y - L)_+ is
        convex in each X_i and in Y, non-increasing in s and Y, non-decreasing in r: the same
        splits as the call's with positions rounded the other way; the events N >= 2, Y > Y_max
        and the sums' mass outside their windows are charged y times their Q-probability."""
        x = np.asarray(x, dtype=float)
        if np.any(x < 1.0):
            raise ValueError("x must be >= 1 (the add curve at epsilon >= 0)")
        y = (1.0 / x) * (1 + 2 * _U)
        n0, n1 = self.put_laws()
        val = np.zeros(x.size)
        for c in range(0, x.size, 32):
            ys = y[c:c + 32]
            val[c:c + 32] = self._body_put(n0, ys) + self.t * self._one_large_put(n1, ys)
        val = val + y * self.charge_q
        val = np.where(np.isnan(val), np.inf, val)
        return np.minimum(x * val * (1 + 8 * _U), 1.0)

    def _body_put(self, law, y):
        tt = float(self.t) * (self.t - 1)
        K = (law.s_dn ** 2)[:, None] * (1 - 8 * _U) - y[None, :] * (tt * (1 + 8 * _U))
        return _row_calls_on_r(law, K) / tt + y * law.outside

    def _one_large_put(self, law, y):
        tt = float(self.t) * (self.t - 1)
        s = law.s_dn
        out = np.zeros(y.size)
        for j in range(self.tail.y_up.size):
            wj = self.tail.w_up[j]
            if wj <= 0:
                continue
            yj = self.tail.y_up[j] * (1 - 8 * _U)        # the knot, rounded down
            K = ((s * s + 2.0 * yj * s) * (1 - 8 * _U))[:, None] - y[None, :] * (tt * (1 + 8 * _U))
            out += wj * (_row_calls_on_r(law, K) / tt + y * law.outside)
        return out * (1 + (self.tail.y_up.size + 8) * _U)

    # --- the curve ------------------------------------------------------------------------
    def remove_curve(self, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on E_Q[(L - x)_+] at every x >= 1."""
        x = np.asarray(x, dtype=float)
        if np.any(x < 1.0):
            raise ValueError("x must be >= 1 (the remove curve at epsilon >= 0)")
        n0, n1, n1_merged = self.laws()
        val = np.zeros(x.size)
        for c in range(0, x.size, 32):
            xs = x[c:c + 32]
            val[c:c + 32] = self._body(n0, xs) + self.t * self._one_large(n1, n1_merged, xs)
        val = val + self.charge_n2 + self.charge_y
        # a row whose untilting overflowed has mass inf: its products may be nan; no bound there
        val = np.where(np.isnan(val), np.inf, val)
        return np.minimum(val * (1 + 8 * _U), 1.0)

    def _body(self, law, x):
        tt = float(self.t) * (self.t - 1)
        # rows x queries, raised by its rounding (each term is known to 3 ulps: 8 cover them
        # and the raising's own rounding)
        A = (law.s_up ** 2)[:, None] * (1 + 8 * _U) - x[None, :] * (tt * (1 - 8 * _U))
        val = _row_puts(law, A) / tt
        # outside the s-window: above it L <= S'^2 / (t (t - 1)); below it f = 0 where
        # s_lo^2 <= x t (t - 1), else at most (s_lo^2 / tt - x) times Q'[S' < s_lo]
        val += law.above_s2 / tt
        lo = law.s_lo
        val += np.maximum(lo * lo / tt - x, 0.0) * law.below_mass
        return val

    def _one_large(self, law, merged, x):
        """sum_j w_j G_x(y_j): G_x(y) = E[((s^2 + 2 y s - r) / (t (t - 1)) - x)_+] over the rest's
        law ``law``, read from ``merged`` (its rows merged ``rows_merge`` to one: a linear split
        in s, and G's integrand is convex in s), plus ``law``'s charges outside the window."""
        tt = float(self.t) * (self.t - 1)
        y, w = self.tail.y_up, self.tail.w_up
        out = np.zeros(x.size)
        s = merged.s_up
        for j in range(y.size):
            if w[j] <= 0:
                continue
            A = ((s * s + 2.0 * y[j] * s) * (1 + 8 * _U))[:, None] \
                - x[None, :] * (tt * (1 - 8 * _U))
            g = _row_puts(merged, A) / tt
            g += (law.above_s2 + 2.0 * y[j] * law.above_s1) / tt
            lo = law.s_lo
            g += np.maximum((lo * lo + 2.0 * y[j] * lo) / tt - x, 0.0) * law.below_mass
            out += w[j] * g
        return out * (1 + (y.size + 8) * _U)


def _row_calls_on_r(law, K):
    """sum over rows w and r-bins i of (r_i - K[w])_+ U[w, i] (r_i = i dr raised by 4 ulps) for
    every column of K (rows x queries), from the suffix sums; plus the rounding."""
    n_r = law.U.shape[1]
    k = np.clip(np.searchsorted(law.r_up, K.ravel(), side="right").reshape(K.shape), 0, n_r)
    rows = np.arange(K.shape[0])[:, None]
    c0 = law.c0_suf[rows, k]
    c1 = law.c1_suf[rows, k]
    v = np.maximum(c1 - K * c0, 0.0)
    rnd = (n_r + 8) * _U * (np.abs(K) * c0 + c1)
    return np.sum(v + rnd, axis=0) * (1 + (K.shape[0] + 8) * _U)


def _row_puts(law, A):
    """sum over rows w and r-bins i of (A[w] - r_i)_+ U[w, i], with U the bins' upper masses,
    r_i = i dr lowered by 4 ulps, for every column of A (rows x queries); plus the rounding."""
    n_r = law.U.shape[1]
    r = law.r_lo
    # bins with r_i < A: k = number of them (r is increasing)
    k = np.clip(np.searchsorted(r, A.ravel(), side="left").reshape(A.shape), 0, n_r)
    rows = np.arange(A.shape[0])[:, None]
    c0 = law.c0_pad[rows, k]
    c1 = law.c1_pad[rows, k]
    v = np.maximum(A * c0 - c1, 0.0)
    rnd = (n_r + 8) * _U * (np.abs(A) * c0 + c1)
    return np.sum(v + rnd, axis=0) * (1 + (A.shape[0] + 8) * _U)

