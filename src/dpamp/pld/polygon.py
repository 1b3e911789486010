"""The pessimistic and optimistic polygons of one half-line of a privacy curve (the module
docstring of :mod:`dpamp.pld.discretize` gives the construction and why both bounds compose).

A half-line is x = e^eps >= 1 in its own coordinates: the eps >= 0 half of (P, Q), or the
eps <= 0 half as the eps' >= 0 half of the swapped pair (Q, P). On knots t_i = i h it holds the
curve's values, the pessimistic masses (chords: connect the dots) and the optimistic lowering of
each knot (below the tangent minorant, with the midpoint tangent of each cell).

One implementation for one half and for many: :func:`halves` lays the halves of a batch (the
same h) out as the rows of 2-D arrays, padded at the far end, and every step is an elementwise
operation on each row, exact minima and maxima, or a reverse cumulative sum, which over a row
padded with zeros at its far end adds the same terms in the same order after a run of exact
zeros: so a half gets the same bits alone (:func:`half`, a batch of one row) as in any batch.
Padding cells carry no mass, are never lowered and never "bad"; padding knots keep a zero
lowering. Why batches: a hundred heterogeneous parts are two hundred halves of a few thousand
cells each, whose cost part by part was mostly numpy's per-call overhead (issue 18, plans of
100 stages). tests/test_pld_batch.py checks the equality on heterogeneous plans.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from .cells import Side

_U = 2.0 ** -53
#: rounds of each attempt of the lowering loop (:func:`_lowering`)
ROUNDS = 200
#: a deficit this far along its cell is fixed by the far knot (see :func:`_raise_knots`)
FAR_KINK = 0.9
#: rows of one batch are within this ratio of lengths (padding costs at most this much)
_SPREAD = 1.6
#: and hold at most this many cells (beyond, the arrays leave the caches: slower)
_CELLS = 1 << 15
#: rows of a batch whose padded cells are at most this many in all are batched whatever
#: their lengths (a batch's own cost, ~150 numpy calls, then outweighs the padding's)
_SMALL = 1 << 11


@dataclasses.dataclass(slots=True, frozen=True)
class Floor:
    """No optimistic knot of a half goes below max(c, a + b x), a lower bound on its curve
    (c >= 0: the curve's limit, its mass at +inf)."""
    a: float
    b: float
    c: float


@dataclasses.dataclass(slots=True, frozen=True)
class HalfArgs:
    """What one half-line is built from (:func:`halves`): its cells (t_i, t_{i+1}], t_i = i h,
    in its own coordinates, and the masses above its last knot."""
    cells: Side
    A_tail: float          # P-mass above t_K (including the mass inf_true at +inf)
    B_tail: float          # Q-mass above t_K
    h: float
    #: the optimistic polygon goes flat after x_K at inf_true (the eps >= 0 half); otherwise
    #: it follows the tangent of slope -B_tail (the eps <= 0 half seen from the swap)
    flat_end: bool
    floor: Floor
    inf_true: float
    #: False: the pessimistic polygon only (the optimistic fields of the Half are None)
    optimistic: bool


@dataclasses.dataclass(slots=True, frozen=True)
class Half:
    """One half-line x >= 1 of a curve in its own coordinates (knots t_i = i h, i = 0..K)."""
    f: np.ndarray          # the curve at the knots
    m_up: np.ndarray       # pessimistic P-masses at t_1..t_K
    inf_up: float          # pessimistic mass at +inf (flat value after x_K)
    s_up0: float           # pessimistic slope right of x = 1
    e: np.ndarray | None   # optimistic lowering of the knots t_0..t_K
    m_lo: np.ndarray | None  # optimistic P-masses at t_1..t_K (before convexification)
    s_lo0: float | None    # optimistic slope right of x = 1 (with e_0 of this half)
    end_slope: float       # optimistic slope after x_K (0: flat; < 0: tangent, defective)
    floor: Floor


@dataclasses.dataclass(slots=True)
class _Rows:
    """Halves as the rows of 2-D arrays, padded at the far end: row r has Ks[r] cells (V: the
    real ones) and Ks[r] + 1 knots x_i = e^{i h}; on each cell the chord of the curve and the
    growth rates of chord - (left line) and chord - (right line) of a convex minorant of the
    curve, alpha and beta_end (tangents, or secants of neighbouring cells), and optionally
    chord - (a third line below the curve) as (slope, value at lam = 0) per cell."""
    Ks: np.ndarray           # (R,) cells of each row
    V: np.ndarray            # (R, Km) real cells
    x: np.ndarray            # (Km + 1,) the knots
    dx: np.ndarray           # (Km,) x_{i+1} - x_i
    f: np.ndarray            # (R, Km + 1) the curve at the knots
    s_up: np.ndarray         # (R, Km) chord slopes
    f_K: np.ndarray          # (R,) the curve at the last knot (flat after it)
    alpha: np.ndarray        # (R, Km)
    beta_end: np.ndarray     # (R, Km)
    mid_line: tuple | None   # ((R, Km), (R, Km)) or None
    end_slope: np.ndarray    # (R,) optimistic slope after the last knot
    flat_end: np.ndarray     # (R,) bool
    inf_true: np.ndarray     # (R,) the curve's limit
    floors: list             # [Floor] of each row


def half(args: HalfArgs) -> Half:
    """The pessimistic and optimistic polygons of one half-line (a batch of one row)."""
    return halves([args])[0]


def halves(args_list: list[HalfArgs]) -> list[Half]:
    """The halves of ``args_list``, in batches of rows of similar lengths that share h, the
    kind (optimistic or not) and the midpoint tangents (present or not)."""
    out: list = [None] * len(args_list)
    groups = defaultdict(list)
    for i, a in enumerate(args_list):
        mid = a.optimistic and a.cells.half_p is not None
        groups[(float(a.h), bool(a.optimistic), mid)].append(i)
    for idx in groups.values():
        idx.sort(key=lambda i: args_list[i].cells.p.size)
        for batch in _batches([args_list[i].cells.p.size for i in idx]):
            for k, r in zip(batch, _halves_of([args_list[idx[k]] for k in batch])):
                out[idx[k]] = r
    return out


def _batches(sizes: list[int]):
    """Consecutive runs of the (sorted) row sizes within _SPREAD of the first and _CELLS
    cells in all, or _SMALL cells in all: lists of positions."""
    start = 0
    while start < len(sizes):
        stop = start + 1
        while (stop < len(sizes) and ((stop - start + 1) * sizes[stop] <= _SMALL or (
                sizes[stop] <= _SPREAD * sizes[start]
                and (stop - start + 1) * sizes[stop] <= _CELLS))):
            stop += 1
        yield list(range(start, stop))
        start = stop


def _halves_of(args: list[HalfArgs]) -> list[Half]:
    """The halves of one batch."""
    rows = _chords(args)
    m_up = _pessimistic_masses(rows)
    if not args[0].optimistic:
        return [Half(rows.f[r, :K + 1], m_up[r, :K], float(rows.f_K[r]),
                     float(rows.s_up[r, 0]) if K else 0.0, None, None, None,
                     float(rows.end_slope[r]), rows.floors[r]) for r, K in enumerate(rows.Ks)]
    return _optimistic_halves(rows, m_up, _lowering(rows))


def _pad(rows, Km):
    """The rows as one (R, Km) array, zeros after each row's end (read only: one full,
    contiguous row of doubles is returned as a view of itself)."""
    if len(rows) == 1:
        v = rows[0]
        if v.size == Km and v.dtype == np.float64 and v.flags.c_contiguous:
            return v[None, :]
    out = np.zeros((len(rows), Km))
    for r, v in enumerate(rows):
        out[r, :v.size] = v
    return out


def _chords(args: list[HalfArgs]) -> _Rows:
    """The rows of halves given by their cells (t_i, t_{i+1}], t_i = i h (i < K), with P-mass
    dA and Q-mass dB (A_tail, B_tail: the masses above t_K, A_tail including the P-mass
    inf_true at +inf). The curve at the knots comes from the backward recursion
    F_i = F_{i+1} - dx_i s_i (all terms >= 0) from F(x_K) = max(A_tail - x_K B_tail, inf_true),
    with the chord slope s_i = -Q[L > t_{i+1}] - beta_i on cell i."""
    R = len(args)
    Ks = np.array([a.cells.p.size for a in args])
    Km = int(Ks.max())
    h = float(args[0].h)
    V = np.arange(Km)[None, :] < Ks[:, None]
    dB = _pad([a.cells.q for a in args], Km)     # (the P-masses enter through beta)
    B_tail = np.array([a.B_tail for a in args], dtype=float)
    A_tail = np.array([a.A_tail for a in args], dtype=float)
    flat_end = np.array([bool(a.flat_end) for a in args])
    inf_true = np.array([a.inf_true for a in args], dtype=float)
    t = h * np.arange(Km + 1)
    x = np.exp(t)
    em1 = np.expm1(h)
    dx = x[:-1] * em1                                     # x_{i+1} - x_i
    beta = _betas(args, t, em1, dB, Km)
    zc = np.zeros((R, 1))
    qbar = np.concatenate([np.cumsum(dB[:, ::-1], axis=1)[:, ::-1], zc], axis=1) \
        + B_tail[:, None]                                 # Q[L > t_i]
    s_up = -qbar[:, 1:] - beta
    f_K = np.maximum(np.maximum(A_tail - x[Ks] * B_tail, inf_true), 0.0)
    v = np.where(V, -s_up * dx, 0.0)
    f = np.concatenate([np.cumsum(v[:, ::-1], axis=1)[:, ::-1], zc], axis=1) + f_K[:, None]
    # chord - tangent at x_i (slope -Qbar_i) grows like alpha (x - x_i); chord - tangent at
    # x_{i+1} like beta_end (x_{i+1} - x), the tangent there using the left derivative
    # -Q[L >= t_{i+1}], which counts an atom on t_{i+1} (it belongs to cell i): beta - q_end
    # instead of beta (tight when the atom is alone)
    beta_end = np.clip(beta - _pad([a.cells.end for a in args], Km), 0.0, None)
    mid = args[0].optimistic and args[0].cells.half_p is not None
    mid_line = _mid_line(args, h, x, dx, f, qbar, Km) if mid else None
    return _Rows(Ks, V, x, dx, f, s_up, f_K, dB - beta, beta_end, mid_line,
                 np.where(flat_end, 0.0, -B_tail), flat_end, inf_true, [a.floor for a in args])


def _betas(args, t, em1, dB, Km):
    """beta_i = (dA_i - x_i dB_i) / dx_i, in [0, dB_i] because the cell's losses are in
    (t_i, t_{i+1}]; clipping only removes rounding noise. The atoms' shares come precomputed
    (exact for atoms on grid points); the continuous part's by this difference."""
    cA = _pad([a.cells.cont_p for a in args], Km)
    cB = _pad([a.cells.cont_q for a in args], Km)
    with np.errstate(over="ignore", invalid="ignore"):
        beta = (cA * np.exp(-t[:-1]) - cB) / em1
    # NaN and +inf to 0 (-inf is clipped to 0 below), in place on this new array: what
    # np.nan_to_num(beta, nan=0.0, posinf=0.0) gave here, without its copies
    beta[np.isnan(beta) | (beta == np.inf)] = 0.0
    beta = np.clip(beta, 0.0, cB)
    beta = beta + _pad([a.cells.beta for a in args], Km)
    return np.clip(beta, 0.0, dB)


def _mid_line(args, h, x, dx, f, qbar, Km):
    """chord - (tangent at each cell's midpoint x_m = x_i e^{h/2}) as a line in lam: the
    masses dA2, dB2 of the upper half (t_i + h/2, t_{i+1}] of each cell give the curve's value
    and tangent there,

        F(x_m) = F(x_{i+1}) + (x_{i+1} - x_m) Q[L > t_{i+1}] + dA2 - x_m dB2,
        F'(x_m+) = -(Q[L > t_{i+1}] + dB2),

    a third tangent of the minorant, which halves the optimistic lowering (the chord exceeds the
    two end tangents by up to a quarter of h^2 F'' at their kink, the three tangents by an
    eighth): the lower bound's error falls from about twice the upper bound's to about half."""
    dA2 = _pad([a.cells.half_p for a in args], Km)
    dB2 = _pad([a.cells.half_q for a in args], Km)
    xm = x[:-1] * np.exp(0.5 * h)
    gap = x[1:] - xm
    # dA2 - x_m dB2 is in [0, (x_{i+1} - x_m) dB2] (the half cell's losses are above t_m):
    # clipping removes rounding noise only
    inner = np.clip(dA2 - xm * dB2, 0.0, gap * dB2)
    f_m = f[:, 1:] + gap * qbar[:, 1:] + inner
    s_m = -(qbar[:, 1:] + dB2)
    # its value at lam = 0 rounded up by a few ulps of its terms (a larger difference only
    # lowers the polygon more)
    c0 = f[:, :-1] - f_m + s_m * (xm - x[:-1])
    pad = 16 * _U * (np.abs(f[:, :-1]) + np.abs(f[:, 1:]) + f_m
                     + np.abs(s_m) * (xm - x[:-1] + dx))
    return f[:, 1:] - f[:, :-1] - s_m * dx, c0 + pad


def _value_rows(f, h, flat_end: bool, floor: Floor, inf_true: float) -> _Rows:
    """One row from the curve's values at the knots x_i = e^{i h} only (a privacy profile), in
    place of cell masses. The knots must be values of one convex curve (an actual pair's exact
    profile, rounded down, for the optimistic side): secants of neighbouring cells, extended,
    are then below it on the cell between them and replace the tangents. An end without a
    neighbouring cell gets no line (only the floors): more lowering, still sound."""
    f = np.asarray(f, dtype=float)
    K = f.size - 1
    x = np.exp(h * np.arange(K + 1))
    dx = np.diff(x)
    s_up = np.diff(f) / dx
    kink = np.maximum(s_up[1:] - s_up[:-1], 0.0)
    # an infinite rate means "no such line": the min in the kink search ignores it
    alpha = np.concatenate([[np.inf], kink])
    beta_end = np.concatenate([kink, [np.inf]])
    alpha = np.where(np.isinf(alpha), 1e300 / np.maximum(dx, 1e-300), alpha)
    beta_end = np.where(np.isinf(beta_end), 1e300 / np.maximum(dx, 1e-300), beta_end)
    end_slope = 0.0 if flat_end else (float(s_up[-1]) if K else 0.0)
    return _Rows(np.array([K]), np.ones((1, K), dtype=bool), x, dx, f[None, :], s_up[None, :],
                 np.array([float(f[-1])]), alpha[None, :], beta_end[None, :], None,
                 np.array([end_slope]), np.array([flat_end]), np.array([float(inf_true)]),
                 [floor])


def _half_from_values(f, h, flat_end: bool, floor: Floor, inf_true: float) -> Half:
    """A half from the curve's values at the knots (see :func:`_value_rows`)."""
    rows = _value_rows(f, h, flat_end, floor, inf_true)
    return _optimistic_halves(rows, _pessimistic_masses(rows), _lowering(rows))[0]


def _pessimistic_masses(rows: _Rows) -> np.ndarray:
    """The masses x_i (S_i - S_{i-1}) of the polygon through the knots (chord slopes S_i,
    S_K = 0: flat after the last knot)."""
    s_full = np.concatenate([np.where(rows.V, rows.s_up, 0.0),
                             np.zeros((rows.f.shape[0], 1))], axis=1)
    return rows.x[1:] * (s_full[:, 1:] - s_full[:, :-1])


def _optimistic_halves(rows: _Rows, m_up: np.ndarray, e: np.ndarray) -> list[Half]:
    """The halves with the optimistic polygon through the knots lowered by e (its slopes, and
    its masses before convexification)."""
    end = rows.end_slope[:, None]
    s_lo = np.where(rows.V, rows.s_up - np.diff(e, axis=1) / rows.dx, end)
    s_lo_full = np.concatenate([s_lo, end], axis=1)
    m_lo = rows.x[1:] * (s_lo_full[:, 1:] - s_lo_full[:, :-1])
    return [Half(rows.f[r, :K + 1], m_up[r, :K], float(rows.f_K[r]),
                 float(rows.s_up[r, 0]) if K else 0.0, e[r, :K + 1], m_lo[r, :K],
                 float(s_lo[r, 0]) if K else float(rows.end_slope[r]),
                 float(rows.end_slope[r]), rows.floors[r]) for r, K in enumerate(rows.Ks)]


# --- the optimistic lowering ------------------------------------------------------------------
# On cell i (position lam in [0, 1]) the curve is above V = max(left line, right line,
# [midpoint tangent,] floor) (the floor max(c, a + b x) is a lower bound too). chord - V is
# concave, so the polygon is below V iff it is at V's kinks, among the pairwise intersections of
#   chord - left = alpha lam dx,   chord - right = beta_end (1 - lam) dx,
#   chord - line = (1-lam) f_i + lam f_{i+1} - a - b x,   chord - c = (1-lam) f_i + lam f_{i+1} - c.


def _pair_crossings(lines):
    """The pairwise intersections (cv - cu) / (su - sv) of lines (slope, value at 0), -1 where
    parallel, unclipped: one row per pair, (pairs, *cells) (the lines' arrays of one shape)."""
    n = len(lines)
    lam = np.empty((n * (n - 1) // 2,) + np.broadcast(*(a for line in lines for a in line)).shape)
    p = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for u in range(n):
            for v in range(u + 1, n):
                (su, cu), (sv, cv) = lines[u], lines[v]
                den = su - sv
                # (in place on the row: the quotient, then -1 where the lines are parallel)
                np.subtract(cv, cu, out=lam[p])
                np.divide(lam[p], den, out=lam[p])
                np.copyto(lam[p], -1.0, where=~(np.abs(den) > 0))
                p += 1
    return lam


def _crossings(lines):
    """Pairwise intersections lam in [0, 1] of lines (slope, value at 0) in lam, per cell, and
    the minimum of all the lines there: (lams, values), each (pairs, *cells)."""
    lam = _pair_crossings(lines)
    # NaN to 0, +-inf to the ends: fmax drops a NaN for 0
    np.fmin(np.fmax(lam, 0.0, out=lam), 1.0, out=lam)
    # the minimum over the lines (exact in any order), in place: the same operations
    vals, v = np.empty_like(lam), np.empty_like(lam)
    for k, (sl, c0) in enumerate(lines):
        w = vals if k == 0 else v
        np.multiply(sl[None], lam, out=w)
        w += c0[None]
        if k:
            np.minimum(vals, v, out=vals)
    return lam, vals


def _pick(dc, lam):
    """The largest deficit over the kinks (axis 0) and its position (first on ties)."""
    if dc.shape[0] == 1:
        return dc[0], lam[0]
    if dc.shape[0] == 3 and not np.isnan(dc).any():
        # argmax of three without NaN: the first of the largest, by two comparisons
        later = dc[1] > dc[0]
        d, lm = np.where(later, dc[1], dc[0]), np.where(later, lam[1], lam[0])
        later = dc[2] > d
        return np.where(later, dc[2], d), np.where(later, lam[2], lm)
    w = np.argmax(dc, axis=0)[None]
    return np.take_along_axis(dc, w, 0)[0], np.take_along_axis(lam, w, 0)[0]


def _floor_lines(rows: _Rows):
    """The floors' coefficients (a, b, c) per row, (R, 1) each."""
    fl = np.array([(f.a, f.b, f.c) for f in rows.floors], dtype=float)
    return fl[:, 0:1], fl[:, 1:2], fl[:, 2:3]


@dataclasses.dataclass(slots=True)
class _Kinks:
    """The kinks of the minorant of every cell and the lowering each needs there: those of the
    tangents (and midpoint lines) on every cell, and, on the "hard" cells where a floor line
    comes near them, those of all the lines (all pairwise intersections are kinks there)."""
    V: np.ndarray
    lam_c: np.ndarray                 # (pairs, R, Km)
    need_c: np.ndarray                # (pairs, R, Km)
    hr: np.ndarray                    # the hard cells' rows
    hi: np.ndarray                    # and columns
    lam_h: np.ndarray | None          # (pairs of all lines, hard cells)
    need_h: np.ndarray | None
    hpos: np.ndarray | None           # (R, Km): index of a hard cell, -1 elsewhere
    G: np.ndarray                     # (R, Km) the largest lowering needed on each cell

    @staticmethod
    def of(rows: _Rows) -> "_Kinks":
        R, Km = rows.V.shape
        a, b, c = _floor_lines(rows)
        f, x, dx = rows.f, rows.x, rows.dx
        fi, fj, xi = f[:, :-1], f[:, 1:], x[:-1]
        tangents = [  # (slope in lam, value at lam = 0) of each difference, per cell
            (rows.alpha * dx, np.zeros((R, Km))),
            (-rows.beta_end * dx, rows.beta_end * dx),
        ] + ([rows.mid_line] if rows.mid_line is not None else [])
        floors = [(fj - fi - b * dx, fi - a - b * xi), (fj - fi, fi - c)]
        lam_c, vals = _crossings(tangents)
        # (each floor line at the kinks in place: the same operations)
        near0 = np.multiply(floors[0][0][None], lam_c)
        near0 += floors[0][1][None]
        near1 = np.multiply(floors[1][0][None], lam_c)
        near1 += floors[1][1][None]
        floor_near = np.minimum(near0, near1, out=near0)
        hr, hi = np.nonzero((floor_near < vals).any(axis=0) & rows.V)
        need_c = np.maximum(vals, 0.0, out=vals)          # (vals is not read again)
        G = need_c.max(axis=0)
        lam_h = need_h = hpos = None
        if hr.size:
            lam_h, vals_h = _crossings([(sl[hr, hi], c0[hr, hi]) for sl, c0 in tangents + floors])
            need_h = np.maximum(vals_h, 0.0)
            G[hr, hi] = need_h.max(axis=0)
            hpos = np.full((R, Km), -1, dtype=np.int64)
            hpos[hr, hi] = np.arange(hr.size)
        return _Kinks(rows.V, lam_c, need_c, hr, hi, lam_h, need_h, hpos,
                      np.where(rows.V, G, 0.0))

    def deficits(self, e):
        """The largest shortfall of the polygon below the minorant's kinks in each cell and
        the position of that kink (-inf on padding cells)."""
        # need - ((1 - lam) e_i + lam e_{i+1}), in place on one array: the same operations
        w = np.subtract(1.0, self.lam_c)
        w *= e[None, :, :-1]
        w += np.multiply(self.lam_c, e[None, :, 1:])
        d, lam = _pick(np.subtract(self.need_c, w, out=w), self.lam_c)
        if self.hr.size:
            assert self.lam_h is not None and self.need_h is not None  # of() sets them with hr
            hr, hi, lh = self.hr, self.hi, self.lam_h
            dh, lk = _pick(self.need_h - ((1.0 - lh) * e[hr, hi][None]
                                          + lh * e[hr, hi + 1][None]), lh)
            d, lam = d.copy(), lam.copy()
            d[hr, hi], lam[hr, hi] = dh, lk
        return np.where(self.V, d, -np.inf), lam

    def deficits_at(self, e, r, i):
        """deficits(e)[r, i] (the same operations, on these cells only)."""
        lc = self.lam_c[:, r, i]
        d, lam = _pick(self.need_c[:, r, i] - ((1.0 - lc) * e[r, i][None]
                                               + lc * e[r, i + 1][None]), lc)
        if self.hr.size:
            # of() sets all three whenever there are hard cells
            assert self.hpos is not None and self.lam_h is not None and self.need_h is not None
            m = self.hpos[r, i] >= 0
            if m.any():
                k, rm, im = self.hpos[r, i][m], r[m], i[m]
                lh = self.lam_h[:, k]
                dh, lk = _pick(self.need_h[:, k] - ((1.0 - lh) * e[rm, im][None]
                                                    + lh * e[rm, im + 1][None]), lh)
                d, lam = d.copy(), lam.copy()
                d[m], lam[m] = dh, lk
        return np.where(self.V[r, i], d, -np.inf), lam


def _caps(rows: _Rows):
    """How far each knot may go down: (cap, cap_hard). Hard: to the line a + b x (a lower
    bound on the curve; at x = 1 it matches the other half's floor, which keeps the kink at
    x = 1 fixable), always feasible since V >= line. Soft: to max(c, a + b x), whose use avoids
    a defective measure (mass lost per step compounds over the compositions); where its kink
    inside a cell makes it infeasible, the hard floor takes over for that cell's knots only
    (:func:`_lowering`). A flat-ended half's last knot goes down to F(inf)."""
    a, b, c = _floor_lines(rows)
    f, Ks = rows.f, rows.Ks
    line = a + b * rows.x
    cap_hard = np.maximum(f - line, 0.0)
    cap = np.minimum(np.maximum(f - np.maximum(line, c), 0.0), cap_hard)
    fe = np.nonzero(rows.flat_end)[0]
    last = np.maximum(f[fe, Ks[fe]] - rows.inf_true[fe], 0.0)
    cap[fe, Ks[fe]] = last
    cap_hard[fe, Ks[fe]] = last
    knots = np.arange(f.shape[1])[None, :] <= Ks[:, None]
    return np.where(knots, cap, 0.0), np.where(knots, cap_hard, 0.0)


def _start(rows: _Rows, G, cap):
    """The first lowering: each knot by the largest need of its cells, within its cap (the
    last knot of a flat-ended half on F(inf))."""
    e = np.zeros((G.shape[0], G.shape[1] + 1))
    e[:, :-1] = G
    e[:, 1:] = np.maximum(e[:, 1:], G)
    fe = np.nonzero(rows.flat_end)[0]
    e[fe, rows.Ks[fe]] = cap[fe, rows.Ks[fe]]
    return np.minimum(e, cap)


def _lowering(rows: _Rows) -> np.ndarray:
    """The optimistic lowering e of every knot: the polygon through f - e is below the
    minorant on every cell, then convex at the far end (:func:`_end_chord`). A row whose loop
    does not settle within ROUNDS rounds gets a second attempt with the hard floors on the
    cells it got stuck on."""
    kinks = _Kinks.of(rows)
    cap, cap_hard = _caps(rows)
    tol = 64 * _U * (np.abs(rows.f[:, :-1]) + np.abs(rows.f[:, 1:]))
    e = _start(rows, kinks.G, cap)
    D, settled = _lower_knots(rows, kinks, e, cap, cap_hard, tol)
    if not settled:
        sr, si = np.nonzero(D > tol)
        if sr.size:
            cap[sr, si] = cap_hard[sr, si]
            cap[sr, si + 1] = cap_hard[sr, si + 1]
            redo = np.unique(sr)
            e[redo] = _start(rows, kinks.G, cap)[redo]
            if not _lower_knots(rows, kinks, e, cap, cap_hard, tol)[1]:
                raise ArithmeticError("optimistic discretisation: infeasible cell")
    return _end_chord(rows, e)


def _lower_knots(rows: _Rows, kinks: _Kinks, e, cap, cap_hard, tol):
    """Lower the knots in place until no cell has a deficit beyond rounding (``tol``: of the
    curve's values), ROUNDS rounds at most: a knot held by its floor leaves a deficit at some
    kink of its cell, and the other knot of the cell goes down (lowering never breaks a
    constraint). Returns the deficits and whether every row settled."""
    D, LAM = kinks.deficits(e)
    Km = D.shape[1]
    for _ in range(ROUNDS):
        br, bi = np.nonzero(D > tol)
        if br.size == 0:
            return D, True
        _raise_knots(e, cap, cap_hard, D[br, bi] * (1.0 + 1e-12), LAM[br, bi], br, bi)
        # the deficits of the cells next to a knot this round may have moved (the others'
        # knots are unchanged: so are their deficits)
        kr = np.concatenate([br, br])
        ki = np.concatenate([bi, bi + 1])
        cell = np.unique(np.concatenate([kr * (Km + 1) + ki - 1, kr * (Km + 1) + ki]))
        cr, ci = cell // (Km + 1), cell % (Km + 1)
        keep = (ci >= 0) & (ci < rows.Ks[cr]) & (cell >= 0)
        cr, ci = cr[keep], ci[keep]
        D[cr, ci], LAM[cr, ci] = kinks.deficits_at(e, cr, ci)
    return D, False


def _raise_knots(e, cap, cap_hard, d, lb, br, bi):
    """One round: lower the knots of the cells (br, bi) with deficit d at kink position lb,
    the near knot first, the far one for the rest."""
    # a kink near the far end of its cell (a pile of mass just below a grid point whose knot
    # is on the curve's floor: small sigma) is fixed by the far knot going below its soft floor
    # to the hard one (d / lam, a defect of about d), not by the near knot going down by
    # d / (1 - lam), which can be the whole curve
    need = d / np.maximum(lb, 1e-300)
    far = ((lb > FAR_KINK) & (cap[br, bi + 1] - e[br, bi + 1] < need)
           & (cap_hard[br, bi + 1] - e[br, bi + 1] >= need))
    if far.any():
        fr, fi = br[far], bi[far] + 1
        np.maximum.at(e, (fr, fi), e[fr, fi] + need[far])
        cap[fr, fi] = np.maximum(cap[fr, fi], e[fr, fi])
        br, bi, lb, d = br[~far], bi[~far], lb[~far], d[~far]
    up_l = np.maximum(np.minimum(cap[br, bi] - e[br, bi], d / np.maximum(1.0 - lb, 1e-300)),
                      0.0)
    np.maximum.at(e, (br, bi), e[br, bi] + up_l)
    rest = d - (1.0 - lb) * up_l
    up_r = np.where(rest > 0, rest / np.maximum(lb, 1e-300), 0.0)
    np.maximum.at(e, (br, bi + 1), np.minimum(e[br, bi + 1] + up_r, cap[br, bi + 1]))


def _end_chord(rows: _Rows, e):
    """The optimistic knots of the flat-ended rows (K > 1) made convex at the far end: the last
    knot sits on F(inf) (e_K = cap_K), often far below the curve's value there, which leaves a
    concave kink at x_{K-1} (a negative mass that used to send the whole part through the
    lower convex hull of :func:`.discretize._hull_masses`). The lower hull's last segment is
    the chord from the last knot to the knot i* of largest slope s* = max_i (g_K - g_i) /
    (x_K - x_i), g = f - e: every knot is above that line, so the knots between i* and K are
    lowered onto it (e only grows: the polygon only goes down, still below the curve; a knot
    already below the rounded chord stays where it is). Knots stay >= g_K = F(inf), the floor.
    In place; returns e."""
    f, x, Ks = rows.f, rows.x, rows.Ks
    xK = x[Ks]
    g = f - e
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (g[np.arange(Ks.size), Ks][:, None] - g[:, :-1]) / (xK[:, None] - x[None, :-1])
    s = np.where(rows.V & ~np.isnan(s), s, -np.inf)
    istar = np.argmax(s, axis=1)
    sel = rows.flat_end & (Ks > 1) & (istar < Ks - 1)
    if sel.any():
        cols = np.arange(f.shape[1])[None, :]
        br, bi = np.nonzero(sel[:, None] & (cols > istar[:, None]) & (cols < Ks[:, None]))
        with np.errstate(invalid="ignore", over="ignore"):
            low = f[br, bi] - (g[br, Ks[br]] + s[br, istar[br]] * (x[bi] - xK[br]))
        # (where x overflows the chord is not a number: those knots stay)
        e[br, bi] = np.where(np.isfinite(low), np.maximum(e[br, bi], low), e[br, bi])
    return e
