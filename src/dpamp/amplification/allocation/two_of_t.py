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
   E_Q[L 1_A] = P[A]. N >= 3 is charged with the union bound over triples (pp = P0[X > b],
   qq = Q0[X > b]: under P_{ij} coordinates i, j have law P0, the others Q0;
   :func:`charge_many`; N >= 2 where ``pairs`` is off). By symmetry the event N = 1 is t
   times the event "X_t > b, the others <= b", and N = 2 is C(t, 2) times "X_{t-1}, X_t > b"
   (step 5).
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
   at least its true mass. (For the body's curve the FFT's error may instead be charged in
   l2: with e the bins' error vector of one tilt and f its untilting factors,
   sum_b |e_b| f_b c_b <= ||e||_2 ||f c||_2, by Cauchy-Schwarz; ||e||_2 is ~sqrt(#bins)
   times smaller than the sum of the per-bin bounds, which had dominated the bound at
   t = 100: sigma 1, delta 1e-6, eps 1.5261 -> 1.5182 against the truth >= 1.5173.)
   The mass outside the s-window is charged by Chernoff bounds
   (E[S'^2 1{S' >= s_hi}] <= e^{-th s_hi} E[S'^2 e^{th S'}], from the one-coordinate
   moments), and L <= S'^2 / (t (t - 1)).
5. *N = 1.* L = (Y S_r + e_2(rest)) / C(t, 2) is affine in the large coordinate Y: its law on
   (b, Y_max] is split to the ends of a geometric grid (:func:`.tail.tail_cells`), and
   Y > Y_max charged with 2 P0[X > Y_max] + 2 (t - 1) Q0[X > Y_max] (twice the tail's
   ``beyond``: more than the 2 P0 + (t - 2) Q0 two P0-coordinates need); given Y = y the rest's
   (S_r, R_r) law (t - 1 body coordinates) is spread and composed as above, and the curve
   E[((s^2 + 2 y s - r) / (t (t - 1)) - x)_+] is convex in s and in r, so merging rows and
   r-bins by linear splits (the bins of a coarser lattice) raises it too. *N = 2* likewise:
   L = (S_r^2 - R_r + 2 (Y1 + Y2) S_r + 2 Y1 Y2) / (t (t - 1)) is affine in each of Y1, Y2,
   each split to the knots of a coarser geometric grid (LOG_R_PAIRS; the event is rare under
   P), against the (t - 2)-fold rest.
6. *All queries at once* (:mod:`.lhist`): every outcome's L rounded up onto a fine grid, the
   curve at any x from suffix sums.

Positions are rounded pessimistically (s up, r down, 4 ulps); every sum carries a rounding
bound. :meth:`TwoOfT.add_curve` gives the other half of the same pair's curve, H_x(Q || P) =
x E_Q[(1/x - L)_+] at x >= 1 (E_Q L = 1): the put is convex in each X_i and in Y too, so the
same splits hold, with positions rounded the other way (s and Y down; the square split UP, the
put being non-decreasing in r), on a lattice ``put_merge`` times coarser (X's knots merged by a
linear split), with N = 1 and N = 2 at Y = b (the put is non-increasing in Y, so any Y > b,
Y_max or not, is covered) against the rest's rows merged DOWN (the put of s^2 + 2 y s is not
convex in s, but it is non-increasing), and every event left out (N >= 3, a sum outside its
window, the r-window included: folding lowers r, which lowers a put) charged y times its
Q-probability. Bins at positions no lattice sum reaches (R' > S'^2 + n dr) are dropped: their
FFT noise would cost the put x |L'| each. Both halves together are what
a PLD of the pair needs (:mod:`.two_of_t_pld`).
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from . import grid as G
from . import tail as T
from .fft2 import compose2
from .lhist import Calls, Puts, body_histograms

_U = 2.0 ** -53
#: the knots' log-ratio of the two large coordinates of N = 2, and of the three of N = 3
LOG_R_PAIRS = 0.2
LOG_R_TRIPLES = 0.4


def _choose(n: int, j: int) -> float:
    return float(math.comb(n, j)) if 0 <= j <= n else 0.0


def charge_many(pp: float, qq: float, t: int, m: int) -> float:
    """P[N >= m] (m = 2, 3, 4) under P (two coordinates P0, the rest Q0), by the union bound
    over m-sets: those holding both P0-coordinates, one, or none (pp, qq the P0-, Q0-mass
    above b, rounded up)."""
    n = t - 2
    v = (pp * pp * _choose(n, m - 2) * qq ** (m - 2) + 2 * pp * _choose(n, m - 1) * qq ** (m - 1)
         + _choose(n, m) * qq ** m)
    return v * (1 + 16 * _U)


#: the rest's law in the N = 1 sum is merged in r to at most this many bins (a linear split:
#: the call is convex in r)
R_BINS_N1 = 128
#: and in the N = 2 sum (which is rare under P) to at most R_BINS_N2, its rows N2_MERGE times
#: more than rows_merge (sigma 0.8, t 1000: the N = 2 sum 0.85 s -> ~0.1 s)
R_BINS_N2 = 32
N2_MERGE = 4
#: ... and in the N = 3 sum (``triples``) rows N3_MERGE times more than rows_merge
N3_MERGE = 8


class TwoOfT:
    """Upper bounds on H_x(P || Q) of one epoch of 2-out-of-t allocation of ``loss`` (a
    :class:`dpamp.pld.loss.LossDistribution` of the base pair), x >= 1.

    ``dx``: the step of X's grid (the S-lattice); ``b``: the body's end; ``dr``: the step of the
    R-lattice (default t dx / 2: the two spreads then cost L about the same variance);
    ``log_r``: the log-ratio of the large coordinate's geometric grid; ``delta_ref``: the delta
    the FFT's second tilt is aimed at (any tilt is sound); ``y_tail``: the P0- and Q0-mass
    above the largest Y-knot (charged); ``rows_merge``: rows of the rest's law merged to one
    for the N = 1 sum; ``put_merge``: X's knots merged to one for the puts' coarser lattice;
    ``pairs``: the event N = 2 summed like N = 1 (two large coordinates against the rest's law)
    rather than charged, so that only N >= 3 is; ``triples`` (with ``pairs``): N = 3 too, so
    that only N >= 4 is (a heavy tail's b then falls ~2.5x: sigma 0.8, t 1000: 518 -> 241);
    ``max_bins``: the largest 2-D window (MemoryError beyond)."""

    def __init__(self, loss, t: int, dx: float, b: float, dr: float | None = None,
                 log_r: float = 0.02, delta_ref: float = 1e-8, y_tail: float = 1e-18,
                 rows_merge: int = 8, put_merge: int = 1, pairs: bool = True,
                 triples: bool = False,
                 max_bins: int | None = None):
        from ...core import validate as V
        t = V.integer("t", t, low=3)
        dx = V.positive("dx", dx)
        b = V.positive("b", b)
        if dr is not None:
            dr = V.positive("dr", dr)
        if not 0.0 < log_r <= 1.0:
            raise ValueError(f"log_r must be in (0, 1] (got {log_r})")
        rows_merge = V.integer("rows_merge", rows_merge, low=1)
        self.put_merge = V.integer("put_merge", put_merge, low=1)
        from .fft2 import MAX_BINS
        self.max_bins = MAX_BINS if max_bins is None else V.integer("max_bins", max_bins, low=1)
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
        self.pairs = bool(pairs)
        self.triples = bool(triples) and self.pairs and t >= 4
        self.charge_n2 = charge_many(pp, qq, t, 4 if self.triples else 3 if pairs else 2)
        y_max = math.exp(min(G.truncation_point(loss, y_tail), 600.0))
        self.tail = T.tail_cells(loss, math.log(self.b), max(y_max, self.b * 1.5), log_r, t)
        # the two large coordinates of N = 2 on a coarser grid (that event is rare under P)
        self.tail2 = T.tail_cells(loss, math.log(self.b), max(y_max, self.b * 1.5),
                                  LOG_R_PAIRS, t) if pairs else None
        # tail.beyond = P0[X > Y_max] + (t - 1) Q0[X > Y_max]; under P two coordinates are P0
        self.charge_y = 2.0 * self.tail.beyond
        self.delta_ref = delta_ref
        self._laws: tuple | None = None          # kept by laws() and put_laws()
        self._put_laws: list | None = None
        self._call: tuple | None = None
        self._put: tuple | None = None
        # the puts: N = 1 and N = 2 with the large coordinates at b (any Y > b, the put being
        # non-increasing in Y), Q-mass t qq and C(t, 2) qq^2; N >= 3 charged, C(t, 3) qq^3
        self.qq = qq * (1 + 4 * _U)
        # (with triples N = 3 at Y = b too, C(t, 3) qq^3, and N >= 4 charged, C(t, 4) qq^4)
        self.charge_q = _choose(t, 4 if self.triples else 3) * qq ** (4 if self.triples else 3) \
            * (1 + 16 * _U)
        self.tail3 = T.tail_cells(loss, math.log(self.b), max(y_max, self.b * 1.5),
                                  LOG_R_TRIPLES, t) if self.triples else None

    # --- the laws of the sums -----------------------------------------------------------
    def lattice(self) -> tuple:
        """The one-coordinate lattice law: (k, i, mass) triplets (both r-ends of every knot)."""
        k = np.arange(self.m.size)
        w_lo = self.m * (1.0 - self.phi) * (1 + 4 * _U)
        w_hi = self.m * self.phi * (1 + 4 * _U)
        return (np.concatenate([k, k]), np.concatenate([self.i0, self.i0 + 1]),
                np.concatenate([w_lo, w_hi]))

    def _powers(self) -> tuple:
        return (self.t, self.t - 1) + ((self.t - 2,) if self.pairs else ()) \
            + ((self.t - 3,) if self.triples else ())

    def laws(self):
        """(the body's law, [(the rest's law, merged), ...] for N = 1, 2, 3), kept (the curves
        build theirs without keeping them: :meth:`prepare`)."""
        if self._laws is None:
            self._laws = self._make_laws()
        return self._laws

    def _make_laws(self, lean: bool = False):
        """The laws of :meth:`laws`; ``lean``: each rest's law merged as soon as it is final
        and only its :class:`_Outside` kept beside the merged copy (its window is not held
        while the larger powers are summed)."""
        powers = self._powers()

        def merged(n, law):
            # N = 2, 3 are rare under P (~1e-10 at sigma 1, t 1000): their rests coarser
            j = powers.index(n) - 1
            g = self.rows_merge * (1, N2_MERGE, N3_MERGE)[j]
            g_r = max(1, -(-law.U.shape[1] // (R_BINS_N2 if j else R_BINS_N1)))
            return law.merged(g, g_r)

        def done(n, law):
            return law if n == self.t else (_Outside.of(law), merged(n, law))
        # only the body's curve reads V (the l2 route): the rests' laws carry U alone
        laws = compose2(self.lattice(), self.dx, self.dr, powers, self.delta_ref,
                        max_bins=self.max_bins, l2=(self.t,), done=done if lean else None)
        if lean:
            return laws[self.t], [laws[n] for n in powers[1:]]
        # the N = 1 (N = 2) sums read the rest's law with rows and r-bins merged
        return laws[self.t], [(laws[n], merged(n, laws[n])) for n in powers[1:]]

    def put_laws(self):
        """The sums for the puts: X's knots merged ``put_merge`` to one (a linear split: the
        put is convex in each X_i), the square split UP (split point >= a_k^2, the put is
        non-decreasing in r), no row merge (the put of s^2 + 2 y s is not convex in s).
        Kept, as :meth:`laws`."""
        if self._put_laws is None:
            self._put_laws = self._make_put_laws()
        return self._put_laws

    def _put_lattice(self) -> tuple:
        """(lattice, dx, dr) of the puts' sums (see :meth:`put_laws`)."""
        from .fft2 import _merge_axis
        g = self.put_merge
        m = _merge_axis(self.m[:, None], g, 0)[:, 0]
        dx, dr = self.dx * g, self.dr * g
        a = dx * np.arange(m.size)
        z = (a * a) * (1 + 4 * _U) / dr * (1 + 4 * _U)
        i0 = np.floor(z).astype(np.int64)
        phi = z - i0
        k = np.arange(m.size)
        lat = (np.concatenate([k, k]), np.concatenate([i0, i0 + 1]),
               np.concatenate([m * (1.0 - phi) * (1 + 4 * _U), m * phi * (1 + 4 * _U)]))
        return lat, dx, dr

    def _put_powers(self) -> tuple:
        return (self.t, self.t - 1, self.t - 2) + ((self.t - 3,) if self.triples else ())

    def _make_put_laws(self, lean: bool = False) -> list:
        """The laws of :meth:`put_laws`; ``lean``: each rest's as its :class:`_PutRest` as
        soon as it is final (as :meth:`_make_laws`)."""
        lat, dx, dr = self._put_lattice()
        powers = self._put_powers()

        def done(n, law):
            _drop_impossible(law, n)
            return law if not lean or n == self.t else _PutRest.of(law, self.rows_merge)
        laws = compose2(lat, dx, dr, powers, self.delta_ref, put=True,
                        max_bins=self.max_bins, l2=(self.t,), done=done)
        return [laws.pop(n) for n in powers]

    def check_windows(self):
        """MemoryError where either sum's window exceeds max_bins (sizing only, no sum)."""
        compose2(self.lattice(), self.dx, self.dr, self._powers(), self.delta_ref,
                 max_bins=self.max_bins, size_only=True)
        lat, dx, dr = self._put_lattice()
        compose2(lat, dx, dr, self._put_powers(), self.delta_ref, put=True,
                 max_bins=self.max_bins, size_only=True)

    def prepare(self):
        """Both curves' histograms, built now, the laws dropped once their histogram is
        summed: the curves read only the histograms, and the laws would otherwise hold several
        windows' worth of memory as long as the object lives. (Call :meth:`check_windows`
        first, as :class:`.two_of_t_pld.Grid` does: neither sum is started where one does
        not fit.)"""
        if self._call is None:
            self._call = self._call_histogram()
        if self._put is None:
            self._put = self._put_histogram()
        return self

    # --- the curves ----------------------------------------------------------------------
    def remove_curve(self, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on E_Q[(L - x)_+] at every x >= 1."""
        x = np.asarray(x, dtype=float)
        if np.any(x < 1.0):
            raise ValueError("x must be >= 1 (the remove curve at epsilon >= 0)")
        if self._call is None:
            self._call = self._call_histogram()
        body_bin, body_l2, terms, rest = self._call
        # the body's floating-point error, per bin or in l2 (:func:`.fft2.compose2`): with
        # c_b = (L_b - x)_+, sum_b |e_b| f_b c_b <= ||e||_2 (sum_b f_b^2 c_b^2)^(1/2) per pass,
        # and sum f^2 c^2 <= max_b c_b sum f^2 c
        err = np.zeros(x.size)
        for e2, g in terms:
            with np.errstate(invalid="ignore", over="ignore"):
                err += e2 * np.sqrt(np.maximum(g.top() - x, 0.0) * g.calls(x)) * (1 + 8 * _U)
        err = np.where(np.isnan(err), np.inf, err)
        body = np.minimum(body_bin.calls(x), body_l2.calls(x) + err)
        return np.minimum((body + rest.calls(x)) * (1 + 8 * _U), 1.0)

    def add_curve(self, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on H_x(Q || P) = x E_Q[(1/x - L)_+] at every x >= 1 (the other
        half of the remove pair's curve). The put (y - L)_+ is convex in each X_i and in Y,
        non-increasing in s and Y, non-decreasing in r: the same splits as the call's with
        positions rounded the other way; N = 1, 2 with the large coordinates at b; the event
        N >= 3 and the sums' mass outside their windows charged y times their Q-probability."""
        x = np.asarray(x, dtype=float)
        if np.any(x < 1.0):
            raise ValueError("x must be >= 1 (the add curve at epsilon >= 0)")
        if self._put is None:
            self._put = self._put_histogram()
        y = (1.0 / x) * (1 + 2 * _U)
        body_bin, body_l2, terms, rest = self._put
        # the body's floating-point error as in remove_curve, with c_b = (y - L_b)_+ <=
        # y - (the smallest L')
        err = np.zeros(x.size)
        for e2, g in terms:
            with np.errstate(invalid="ignore", over="ignore"):
                err += e2 * np.sqrt(np.maximum(y - g.low, 0.0) * g.puts(y)) * (1 + 8 * _U)
        err = np.where(np.isnan(err), np.inf, err)
        body = np.minimum(body_bin.puts(y), body_l2.puts(y) + err)
        return np.minimum(x * (body + rest.puts(y)) * (1 + 8 * _U), 1.0)

    def _call_histogram(self) -> tuple:
        """Every lattice outcome with L > 1 (the others add nothing at x >= 1), L rounded up to
        the geometric grid e^{j LOG_STEP}: the body's (N = 0) with its per-bin budget, and
        without it beside the l2 terms (e2, sum of f^2 over the pass's bins); the rest (N = 1,
        the mass outside the windows as outcomes at their bound (below the s-window,
        L <= lo^2 / tt) or as a constant (above it, E[L] there), the charges)."""
        tt = float(self.t) * (self.t - 1)
        n0, merged = self._laws if self._laws is not None else self._make_laws(lean=True)
        merged = [(_Outside.of(law), m) for law, m in merged]
        n1, n1m = merged[0]
        body = body_histograms(Calls, tt, (n0.s_up ** 2)[:, None], n0.r_lo[None, :], n0)
        h = Calls(tt)
        const = self.charge_n2 + self.charge_y + n0.above_s2 / tt
        h.add(np.array([[n0.s_lo ** 2]]), np.zeros((1, 1)), np.array([[n0.below_mass]]))
        del n0                           # the body's window: not read again
        # N = 1: t choices of the large coordinate, its law split to the knots y_j (L affine
        # in it), the rest's law with rows merged (L convex in s)
        y = self.tail.y_up
        const += _large_into(h, n1, n1m, self.t * self.tail.w_up * (1 + 4 * _U), y,
                             np.zeros_like(y), self.t)
        if self.pairs:
            const += self._two_large(h, *merged[1])
        if self.triples:
            const += self._three_large(h, *merged[2])
        h.finish(const * (1 + 8 * _U))
        return body + (h,)

    def _two_large(self, h, n2, n2m) -> float:
        """N = 2 into the histogram h: C(t, 2) choices of the two large coordinates, each one's
        law split to the knots of ``tail2`` (L = (s^2 + 2 (y1 + y2) s + 2 y1 y2 - r) / tt is
        affine in each), the rest's (t - 2)-fold law merged: C(t, 2) w_a w_b over unordered
        knot pairs (2 or 1 orderings); returns the constant of :func:`_large_into`."""
        assert self.tail2 is not None                # made when pairs are
        y, w = self.tail2.y_up, self.tail2.w_up
        a, b = np.triu_indices(y.size)
        ww = _choose(self.t, 2) * w[a] * w[b] * np.where(b > a, 2.0, 1.0) * (1 + 8 * _U)
        return _large_into(h, n2, n2m, ww, y[a] + y[b], 2.0 * y[a] * y[b], self.t)

    def _three_large(self, h, n3, n3m) -> float:
        """N = 3 into h, as :meth:`_two_large` with three large coordinates on ``tail3``'s knots
        (L = (s^2 + 2 (y1 + y2 + y3) s + 2 (y1 y2 + y1 y3 + y2 y3) - r) / tt, affine in each):
        C(t, 3) w_a w_b w_c over unordered knot triples (6, 3 or 1 orderings)."""
        assert self.tail3 is not None                # made when triples are
        y, w = self.tail3.y_up, self.tail3.w_up
        a, b, c = np.array(list(itertools.combinations_with_replacement(range(y.size), 3)),
                           dtype=np.int64).reshape(-1, 3).T
        distinct = (a < b).astype(int) + (b < c).astype(int)
        mult = np.choose(distinct, [1.0, 3.0, 6.0])
        ww = _choose(self.t, 3) * w[a] * w[b] * w[c] * mult * (1 + 8 * _U)
        return _large_into(h, n3, n3m, ww, y[a] + y[b] + y[c],
                           2.0 * (y[a] * y[b] + (y[a] + y[b]) * y[c]), self.t)

    def _put_histogram(self) -> tuple:
        """Every lattice outcome with L < 1, L rounded down to a multiple of PUT_STEP: the
        body's with its per-bin budget, and without it beside the l2 terms (as the calls');
        the rest: N = 1, 2 with the rest's rows merged down (the put is non-increasing in s,
        not convex), the charges."""
        tt = float(self.t) * (self.t - 1)
        n0, *rests = (self._put_laws if self._put_laws is not None
                      else self._make_put_laws(lean=True))
        body = body_histograms(Puts, tt, (n0.s_dn ** 2)[:, None], n0.r_up[None, :], n0)
        h = Puts(tt)
        const = self.charge_q + n0.outside
        del n0                           # the body's window: not read again
        # N = 1, N = 2: L = (s^2 + 2 j b s + j (j - 1) b^2 - r) / tt with j large coordinates
        # at b (rounded down), the rest's rows merged DOWN (the put is non-increasing in s)
        g = self.rows_merge
        yd = self.b * (1 - 8 * _U)
        for j in range(1, len(rests) + 1):
            rest = _PutRest.of(rests[j - 1], g)
            mass = _choose(self.t, j) * self.qq ** j
            s = rest.s
            tw = mass * (1 + 8 * _U)
            h.add((s * s + 2.0 * j * yd * s + (j - 1) * j * yd * yd)[:, None] * (1 - 4 * _U),
                  rest.r_up[None, :], rest.Um * tw)
            const += tw * rest.outside * (1 + 4 * _U)
        h.finish(const * (1 + 8 * _U))
        return body + (h,)


@dataclasses.dataclass
class _Outside:
    """What :func:`_large_into` reads of a rest's law beside its merged masses: the window's
    s-range and the Chernoff charges outside it."""
    s_lo: float
    s_end: float             # s0 + dx rows, the window's end
    below_mass: float
    above_s2: float
    above_s1: float

    @staticmethod
    def of(law):
        if isinstance(law, _Outside):
            return law
        return _Outside(law.s_lo, law.s0 + law.dx * law.U.shape[0], law.below_mass,
                        law.above_s2, law.above_s1)


@dataclasses.dataclass
class _PutRest:
    """What :meth:`TwoOfT._put_histogram` reads of a rest's put law: its masses with rows
    merged g to one DOWN (to the group's first row, whose s is the smallest), those rows' s,
    the r-bins' ends and the mass outside the window."""
    Um: np.ndarray
    s: np.ndarray
    r_up: np.ndarray
    outside: float

    @staticmethod
    def of(law, g: int):
        if isinstance(law, _PutRest):
            return law
        rows = (np.arange(law.U.shape[0]) // g) * g
        Um = np.zeros((rows[-1] // g + 1, law.U.shape[1]))
        np.add.at(Um, rows // g, law.U)
        Um *= 1 + (g + 4) * _U
        return _PutRest(Um, law.s_dn[rows[::g]], law.r_up, law.outside)


def _large_into(h, law, merged, ww, y1, y2, t: int) -> float:
    """Outcomes with j large coordinates against the rest's law into the histogram h: weights
    ww, L = (s^2 + 2 y1 s + y2 - r) / tt with (y1, y2) the large coordinates' sum and twice
    their pairwise products, the rest's rows merged; the rest's mass below its s-window at its
    bound, and the constant returned for the mass above it (E[L] there, P[S' >= s_hi] <=
    E[S'; S' >= s_hi] / s_hi). Several knot combinations per call (rows x r-bins each)."""
    keep = ww > 0
    ww, y1, y2 = ww[keep], y1[keep], y2[keep]
    if ww.size == 0:
        return 0.0
    tt = float(t) * (t - 1)
    s, lo = merged.s_up, law.s_lo
    s_hi = law.s_end * (1 - 8 * _U)
    step = max(1, (1 << 20) // merged.U.size)
    for i in range(0, ww.size, step):
        sl = slice(i, i + step)
        h.add(((s * s)[None, :] + 2.0 * y1[sl, None] * s[None, :]
               + y2[sl, None])[:, :, None] * (1 + 4 * _U),
              merged.r_lo[None, None, :], merged.U[None] * ww[sl, None, None])
    h.add((lo * lo + 2.0 * y1 * lo + y2)[None, :], np.zeros((1, 1)),
          (law.below_mass * ww)[None, :])
    # a sum of ww.size terms: within (size + 8) u of its exact value
    return float(np.sum(ww * (law.above_s2 + 2.0 * y1 * law.above_s1
                              + y2 * law.above_s1 / s_hi))) / tt * (1 + (ww.size + 16) * _U)


def _drop_impossible(law, n: int):
    """Zero the bins at positions the lattice sum cannot reach (a bin bounds its own
    position's mass; folded-in mass from outside the window is charged as ``outside``): each
    coordinate has r <= a^2 (1 + 9u) + dr (its square split up), so the n-fold sum has
    R' <= (1 + 9u) sum a_i^2 + n dr <= (1 + 9u) S'^2 + n dr. There the put's L' is far below 0,
    and the FFT's noise on those bins would cost the put x |L'| times it at every x."""
    n1, n2 = law.U.shape
    s = law.s0 + law.dx * np.arange(n1)
    r = law.dr * np.arange(n2)
    cap = (s * s * (1 + 1e-9) + n * law.dr) * (1 + 1e-9) + law.dr
    out = r[None, :] > cap[:, None]
    law.U[out] = 0.0
    if law.V is not None:
        law.V[out] = 0.0
        law.sel[out] = -1
