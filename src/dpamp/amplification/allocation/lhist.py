"""Histograms of the likelihood ratio L of :mod:`.two_of_t`'s lattice outcomes, for all queries
at once: E[(L - x)_+] and E[(y - L)_+] from suffix and prefix sums.

Every outcome (a lattice bin of the sum's law, with its upper mass) has L = (s^2 - r) /
(t (t - 1)); the calls round it up to a geometric grid, the puts down to a linear one (a call
rises with L, a put falls), so each query's value is at least that of the outcomes themselves:

    sum_j (v_j - x)_+ m_j  >=  sum_b (L_b - x)_+ m_b      (v_j >= L_b for every b in bin j).

The grids are fine (relative 2^-17 in L for the calls, 2^-19 absolute for the puts), so the
rounding costs the curve ~1e-5 of L (sigma 1, t 1000, k 2: the bracket 6.49e-4 -> 6.59e-4 of
epsilon from 2^-20 and 2^-21, in 0.8 s rather than 1.4 s); every sum carries its
floating-point bound.
"""
from __future__ import annotations

import math

import numpy as np

_U = 2.0 ** -53

#: the calls' L-grid: L rounded up to e^{j LOG_STEP} (relative error <= 2^-17 in L) up to
#: e^LOG_CAP, to e^{j LOG_STEP_FAR} beyond (an epoch's loss grid rarely reaches e^4)
LOG_STEP = 2.0 ** -17
LOG_STEP_FAR = 2.0 ** -10
LOG_CAP = 4.0
#: outcomes buffered before they are summed into bins
FLUSH = 1 << 22
#: the puts' L-grid on [0, 1]: L rounded down to a multiple of PUT_STEP (exact binary
#: multiples); outcomes with L < 0 kept as two sums (their puts are y m - L m exactly)
PUT_STEP = 2.0 ** -19


#: elements per block of :func:`outcomes` (its temporaries are a few blocks, not a window)
BLOCK = 1 << 18


def outcomes(s2, r, U, tt, up: bool, select=None):
    """(L, mass) of the outcomes L = (s2 - r) / tt, rows x bins broadcast, with mass > 0
    (and ``select(L)`` where given), in C order; L rounded up (``up``) or down: the
    subtraction's error is within u (s2 + r), each of s2's and the division's within u of the
    result. Computed in blocks along the first axis (every step is elementwise, so the
    blocks' outcomes, concatenated, are the whole's); ``U`` may be a function of a slice of
    that axis giving those rows' masses (a weight array never made whole)."""
    shape = np.broadcast_shapes(np.shape(s2), np.shape(r),
                                *(() if callable(U) else (np.shape(U),)))
    if len(shape) == 0 or shape[0] <= 1:
        return _outcomes(s2, r, U(slice(None)) if callable(U) else U, tt, up, select)
    per_row = max(1, math.prod(shape[1:]))
    step = max(1, BLOCK // per_row)

    def rows(a, sl):
        a = np.asarray(a)
        return a[sl] if a.ndim == len(shape) and a.shape[0] > 1 else a
    Ls, ms = [], []
    for i in range(0, shape[0], step):
        sl = slice(i, i + step)
        L, m = _outcomes(rows(s2, sl), rows(r, sl), U(sl) if callable(U) else rows(U, sl),
                         tt, up, select)
        Ls.append(L)
        ms.append(m)
    if len(Ls) == 1:
        return Ls[0], ms[0]
    return np.concatenate(Ls), np.concatenate(ms)


def _outcomes(s2, r, U, tt, up: bool, select):
    num = s2 - r
    err = 4 * _U * (np.abs(s2) + np.abs(r))
    L = (num + err) / tt if up else (num - err) / tt
    L = L + np.abs(L) * (4 * _U) if up else L - np.abs(L) * (4 * _U)
    # a mass that is not a number has no bound: kept as +inf (dropping it would be optimistic)
    U = np.where(np.isnan(U), np.inf, U)
    keep = U > 0
    L = np.broadcast_to(L, keep.shape)
    L, U = L[keep], np.broadcast_to(U, keep.shape)[keep]
    if select is not None:
        sel = select(L)
        L, U = L[sel], U[sel]
    return L, U


class Calls:
    """Masses of L' (an upper bound on the lattice's L; outcomes with L <= 1 add nothing at
    x >= 1) on the grid v_j = e^{j LOG_STEP} up to e^LOG_CAP and e^{j LOG_STEP_FAR} beyond,
    accumulated by :meth:`add`; then sum_j (v_j - x)_+ m_j + const for any x >= 1 from
    suffix sums."""

    def __init__(self, tt: float):
        self.tt = tt
        self.J = int(math.ceil(LOG_CAP / LOG_STEP))
        self.far: list | None = []              # beyond e^LOG_CAP: (first index, bin sums)
        # the fine grid's bin sums (indices 0..J), chunk by chunk of FLUSH outcomes: the
        # current chunk's, and the finished chunks' total (each chunk's sums added to it in
        # turn, as the chunks' bin sums would be)
        self.cur: np.ndarray | None = None
        self.tot: np.ndarray | None = None
        self.buf_n = 0                          # outcomes in the current chunk
        self.n_terms = 0
        self.inf_mass = 0.0                     # outcomes with L' beyond 1e300

    def add(self, s2, r, U):
        """Outcomes at L = (s2 - r) / tt (s2, r broadcast to U's rows x bins)."""
        # (only the outcomes with L > 1 are kept, block by block)
        L, m = outcomes(s2, r, U, self.tt, up=True, select=lambda L: L > 1.0)
        big = ~(L <= 1e300)
        if big.any():
            # no grid point bounds them: their mass makes every call +inf (a window's sums
            # never get there; clipping them to 1e300 would have lowered them)
            self.inf_mass += float(np.sum(m[big]))
            L, m = L[~big], m[~big]
        if L.size == 0:
            return
        self.n_terms += L.size
        # j >= log(L) / step: e^{j step} >= L (the margin covers log's rounding)
        j = np.ceil(np.log(L) / LOG_STEP + 1e-6).astype(np.int64)
        far = j > self.J
        if far.any():
            jf = np.ceil(np.log(L[far]) / LOG_STEP_FAR + 1e-6).astype(np.int64)
            assert self.far is not None          # add comes before finish
            self.far.append(_binned(jf, m[far]))
            j, m = j[~far], m[~far]
        if j.size:
            if self.cur is None:
                self.cur = np.zeros(self.J + 1)
            # summed at once into the chunk's bins, outcome by outcome in order (the additions
            # a bincount of the chunk's outcomes, kept until it is full, would make)
            np.add.at(self.cur, j, m)
            self.buf_n += j.size
            if self.buf_n >= FLUSH:
                self._flush()

    def _flush(self):
        """The current chunk's bin sums added to the finished chunks' total."""
        if self.cur is not None:
            if self.tot is None:
                self.tot = self.cur
            else:
                self.tot += self.cur
        self.cur, self.buf_n = None, 0

    def finish(self, const: float = 0.0):
        self._flush()
        # a bin's sum of n terms (in chunks) is within n u of its exact sum
        grow = 1 + (self.n_terms + 8) * _U
        vs, ms = [], []
        if self.tot is None:
            near = np.zeros(0, dtype=np.int64), np.zeros(0)
        else:
            occ = np.nonzero(self.tot)[0]
            near = occ, self.tot[occ]
        for step, (j, m_b) in ((LOG_STEP, near), (LOG_STEP_FAR, _combined(self.far))):
            vs.append(np.exp(j * step) * (1 + 4 * _U))
            ms.append(m_b * grow)
        self.far = self.tot = None
        v, m_b = np.concatenate(vs), np.concatenate(ms)
        order = np.argsort(v, kind="stable")
        self.v, m_b = v[order], m_b[order]
        n = self.v.size
        with np.errstate(invalid="ignore", over="ignore"):
            vm = self.v * m_b
        g = 1 + (n + 4) * _U
        # suffix sums from the top (smallest terms first): c[k] = sum over j >= k
        with np.errstate(invalid="ignore", over="ignore"):
            self.c0 = np.concatenate([np.cumsum(m_b[::-1])[::-1], [0.0]]) * g
            self.c1 = np.concatenate([np.cumsum(vm[::-1])[::-1], [0.0]]) * g
        self.const = const
        return self

    def top(self) -> float:
        """An upper bound on every outcome's L'."""
        if self.inf_mass > 0:
            return math.inf
        return float(self.v[-1]) if self.v.size else 1.0

    def calls(self, x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.v, x, side="right")           # first v_j > x
        c0, c1 = self.c0[k], self.c1[k]
        with np.errstate(invalid="ignore", over="ignore"):
            val = np.maximum(c1 - x * c0, 0.0) + (self.v.size + 8) * _U * (c1 + x * c0)
        # an inf mass above x leaves inf - inf: no bound there
        val = np.where(np.isnan(val) | (self.inf_mass > 0), np.inf, val)
        return val + self.const


def _binned(j: np.ndarray, m: np.ndarray) -> tuple:
    """(first index, per-index sums) of masses m at integer indices j."""
    j0 = int(j.min())
    return j0, np.bincount(j - j0, weights=m)


def _combined(chunks) -> tuple:
    """The occupied indices and their summed masses over ``chunks`` of :func:`_binned`."""
    if not chunks:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    lo = min(c[0] for c in chunks)
    acc = np.zeros(max(c[0] + c[1].size for c in chunks) - lo)
    for j0, b in chunks:
        acc[j0 - lo:j0 - lo + b.size] += b
    occ = np.nonzero(acc)[0]
    return lo + occ, acc[occ]


class Puts:
    """Masses of L' (a lower bound on the lattice's L; outcomes with L >= 1 add nothing at
    y <= 1) on the grid v_j = j PUT_STEP of [0, 1]; then sum_j (y - v_j)_+ m_j + y const for
    any y <= 1 + 4u."""

    def __init__(self, tt: float):
        self.tt = tt
        self.J = int(1.0 / PUT_STEP) + 2
        self.m: np.ndarray | None = np.zeros(self.J + 1)
        self.n_terms = 0
        self.neg_m = self.neg_mL = 0.0          # outcomes with L < 0: sum m, sum |L| m
        self.low = 1.0                          # the smallest L' with mass

    def add(self, s2, r, U):
        L, m = outcomes(s2, r, U, self.tt, up=False, select=lambda L: L < 1.0 + 1e-9)
        if L.size == 0:
            return
        self.n_terms += L.size
        self.low = min(self.low, float(L.min()))
        neg = L < 0.0
        if neg.any():
            with np.errstate(invalid="ignore"):
                self.neg_m += float(np.sum(m[neg]))
                self.neg_mL += float(np.sum(-L[neg] * m[neg]))
            L, m = L[~neg], m[~neg]
        if L.size:
            j = np.floor(L / PUT_STEP).astype(np.int64)         # j PUT_STEP <= L, exactly
            j0 = int(j.min())
            b = np.bincount(j - j0, weights=m)
            assert self.m is not None            # add comes before finish
            self.m[j0:j0 + b.size] += b

    def finish(self, const: float = 0.0):
        grow = 1 + (self.n_terms + 8) * _U
        assert self.m is not None                # finish is called once
        occ = np.nonzero(self.m)[0]
        m_b = self.m[occ] * grow
        self.m = None
        self.v = occ * PUT_STEP
        n = self.v.size
        with np.errstate(invalid="ignore"):
            vm = self.v * m_b
        g = 1 + (n + 4) * _U
        # prefix sums from the bottom: p[k] = sum over j < k
        with np.errstate(invalid="ignore", over="ignore"):
            self.p0 = np.concatenate([[0.0], np.cumsum(m_b)]) * g
            self.p1 = np.concatenate([[0.0], np.cumsum(vm)]) * g
        self.neg_m *= grow
        self.neg_mL *= grow
        self.const = const
        return self

    def puts(self, y: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.v, y, side="left")            # v_j < y for j < k
        p0, p1 = self.p0[k], self.p1[k]
        with np.errstate(invalid="ignore"):
            val = np.maximum(y * p0 - p1, 0.0) + (self.v.size + 8) * _U * (y * p0 + p1)
            val = val + (y * self.neg_m + self.neg_mL) * (1 + 4 * _U)
        val = np.where(np.isnan(val), np.inf, val)
        return val + y * self.const


def body_histograms(kind, tt: float, s2, r, law) -> tuple:
    """The body's outcomes three ways (:class:`Calls` or :class:`Puts`): masses with the
    per-bin budget (U), without it (V), and per FFT pass the squared untilting factors of the
    bins that took it, with that pass's l2 error bound (:mod:`.fft2`)."""
    # each finished as soon as it is filled (its accumulators then go)
    with_budget, without = kind(tt), kind(tt)
    with_budget.add(s2, r, law.U)
    with_budget.finish()
    without.add(s2, r, law.V)
    without.finish()
    terms = []
    for p, (fac, e2) in enumerate(zip(law.facs, law.e2)):
        g = kind(tt)

        def weights(sl, p=p, f=fac):
            # made block by block of rows, as the outcomes are (:func:`outcomes`)
            return np.where(law.sel[sl] == p, (f[sl] * f[sl])[:, None] * (1 + 4 * _U), 0.0)
        with np.errstate(over="ignore"):
            g.add(s2, r, weights)
        terms.append((e2, g.finish()))
    return with_budget, without, terms
