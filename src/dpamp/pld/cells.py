"""The masses of P and Q in the cells of a grid t_j = j h: what the discretiser
(:mod:`.discretize`) reads of a loss distribution, for one part or many (:func:`cells_many`).

    below : L < t_jlo                                   (incl. -inf)
    left  : [t_{j-1}, t_j) for j = jlo+1 .. 0          (-jlo cells)
    zero  : L = 0
    right : (t_j, t_{j+1}] for j = 0 .. jhi-1          (jhi cells)
    above : L > t_jhi                                   (incl. +inf)

Cells are closed on the side away from 0. Each side also carries its continuous part's masses
alone, the atoms' shares of the discretiser's beta and the Q-mass of atoms on the cells' far
grid points (see :func:`_atoms`), and, for the optimistic discretisation, the masses of the
half of each cell farther from 0 (:func:`.polygon.halves`: the midpoint tangents).

One implementation for one part and for many (issue 18: a hundred heterogeneous parts cost
mostly numpy's per-call overhead part by part): the parts' cells are laid end to end, the
continuous parts of the parts of one family evaluated in one pass (:mod:`.loss_batch`, the
others by their own functions on their own points), every difference taken inside a part's own
points, the atoms added part by part; a part alone is the same operations on its own values.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from .loss_batch import evaluate_flat


@dataclasses.dataclass(slots=True, frozen=True)
class Side:
    """The cells of one side of the grid, in increasing loss (``left``) or, in the half's own
    coordinates, away from 0 (``right``, and a swapped left side, :meth:`swapped`). ``beta`` and
    ``end`` are in the coordinates of the half that reads them (the swapped pair's for the left
    side)."""
    p: np.ndarray                  # P-mass of each cell
    q: np.ndarray                  # Q-mass of each cell
    cont_p: np.ndarray             # the continuous part's P-mass alone
    cont_q: np.ndarray             # the continuous part's Q-mass alone
    beta: np.ndarray               # the atoms' share of the discretiser's beta
    end: np.ndarray                # Q-mass of atoms exactly on the cell's far grid point
    #: P- and Q-mass of the half of each cell farther from 0 (None: no midpoint tangents)
    half_p: np.ndarray | None = None
    half_q: np.ndarray | None = None

    def swapped(self) -> "Side":
        """The left side as the swapped pair (Q, P) sees it: cells away from 0, P and Q
        exchanged (its cell i is [t_{-i-1}, t_{-i}) of L)."""
        return Side(self.q[::-1], self.p[::-1], self.cont_q[::-1], self.cont_p[::-1],
                    self.beta[::-1], self.end[::-1],
                    None if self.half_q is None else self.half_q[::-1],
                    None if self.half_p is None else self.half_p[::-1])


@dataclasses.dataclass(slots=True, frozen=True)
class Cells:
    """The cell masses of one loss distribution on one grid (see the module docstring)."""
    below_p: float
    below_q: float
    left: Side
    zero_p: float
    zero_q: float
    right: Side
    above_p: float
    above_q: float

    def as_dict(self) -> dict:
        """The dict form of :meth:`.loss.LossDistribution.cell_masses` (the half cells left
        out)."""
        return {"below": (self.below_p, self.below_q), "left": (self.left.p, self.left.q),
                "zero": (self.zero_p, self.zero_q), "right": (self.right.p, self.right.q),
                "above": (self.above_p, self.above_q),
                "left_cont": (self.left.cont_p, self.left.cont_q),
                "right_cont": (self.right.cont_p, self.right.cont_q),
                "left_beta": self.left.beta, "right_beta": self.right.beta,
                "left_end": self.left.end, "right_end": self.right.end}

    @staticmethod
    def from_dict(c: dict) -> "Cells":
        """The inverse of :meth:`as_dict` (for cells built in that form, e.g. the mirrored
        cells of :class:`.sources.SymmetricCurve`)."""
        def side(name):
            (p, q), (cont_p, cont_q) = c[name], c[name + "_cont"]
            return Side(p, q, cont_p, cont_q, c[name + "_beta"], c[name + "_end"])
        (below_p, below_q), (zero_p, zero_q), (above_p, above_q) = c["below"], c["zero"], c["above"]
        return Cells(below_p, below_q, side("left"), zero_p, zero_q, side("right"), above_p, above_q)


def cells_of(src, h: float, jlo: int, jhi: int, optimistic: bool = True) -> Cells:
    """The cells of one loss distribution (see :func:`cells_many`)."""
    return cells_many([src], [(jlo, jhi)], h, optimistic)[0]


def cells_many(srcs, grids, h: float, optimistic: bool = True) -> list[Cells]:
    """The cells of the loss distributions ``srcs`` on t_j = j h, part i's from grids[i] =
    (jlo, jhi), jlo <= 0 <= jhi. ``optimistic``: with the masses of the half cells farther from
    0, from the cells of step h/2; those are added in pairs into the cells of step h, except for
    a part with finite atoms, whose atoms' shares of beta do not add up over half cells: its
    cells of step h are computed directly."""
    if not optimistic:
        laid = _laid(srcs, grids, h)
        return [laid.part(i) for i in range(len(srcs))]
    fine = _laid(srcs, [(2 * a, 2 * b) for a, b in grids], 0.5 * h)
    coarse = _coarse(fine)
    out = [coarse.part(i, fine, i) for i in range(len(srcs))]
    atomic = [i for i, s in enumerate(srcs) if np.isfinite(s.atom_loss).any()]
    if atomic:
        direct = _laid([srcs[i] for i in atomic], [grids[i] for i in atomic], h)
        for k, i in enumerate(atomic):
            out[i] = direct.part(k, fine, i)
    return out


@dataclasses.dataclass(slots=True)
class _LaidSide:
    """One side's cells of many parts laid end to end (part i's: the columns off[i]:off[i + 1]),
    P and Q in the rows of ``mass`` and ``cont``."""
    off: np.ndarray
    mass: np.ndarray       # (2, cells)
    cont: np.ndarray       # (2, cells): the continuous part's alone
    beta: np.ndarray       # (cells,)
    end: np.ndarray        # (cells,)

    @staticmethod
    def zeros(sizes) -> "_LaidSide":
        off = np.array([0, *itertools.accumulate(sizes)], dtype=np.int64)
        n = int(off[-1])
        return _LaidSide(off, np.zeros((2, n)), np.zeros((2, n)), np.zeros(n), np.zeros(n))

    def cols(self, i: int) -> slice:
        return slice(int(self.off[i]), int(self.off[i + 1]))

    def side(self, i: int, halves=(None, None)) -> Side:
        c = self.cols(i)
        return Side(self.mass[0, c], self.mass[1, c], self.cont[0, c], self.cont[1, c],
                    self.beta[c], self.end[c], *halves)


@dataclasses.dataclass(slots=True)
class _Laid:
    """The cells of many parts laid end to end, and per part (columns) the masses of P and Q
    (rows) below the grid, at zero and above it."""
    left: _LaidSide
    right: _LaidSide
    below: np.ndarray      # (2, parts)
    zero: np.ndarray       # (2, parts)
    above: np.ndarray      # (2, parts)

    def part(self, i: int, fine: "_Laid | None" = None, j: int = 0) -> Cells:
        """Part i's Cells, with the masses of its half cells farther from 0 from part j of
        ``fine`` (the cells of step h/2), if given."""
        hl = hr = (None, None)
        if fine is not None:
            lc, rc = fine.left.cols(j), fine.right.cols(j)
            hl = tuple(fine.left.mass[:, lc][:, 0::2])          # [t_{2k}, t_{2k+1}) of h/2
            hr = tuple(fine.right.mass[:, rc][:, 1::2])         # (t_{2k+1}, t_{2k+2}]
        return Cells(float(self.below[0, i]), float(self.below[1, i]), self.left.side(i, hl),
                     float(self.zero[0, i]), float(self.zero[1, i]), self.right.side(i, hr),
                     float(self.above[0, i]), float(self.above[1, i]))


def _laid(srcs, grids, step: float) -> _Laid:
    """The cells of every part on t_j = j step: those of the continuous parts, then the atoms
    added part by part."""
    lo = np.array([g[0] for g in grids], dtype=np.int64)
    hi = np.array([g[1] for g in grids], dtype=np.int64)
    n = len(srcs)
    laid = _Laid(_LaidSide.zeros(-lo), _LaidSide.zeros(hi), np.zeros((2, n)), np.zeros((2, n)),
                 np.zeros((2, n)))
    cont = [i for i, s in enumerate(srcs) if s.cdf is not None]
    if len(cont) == n:
        cl, cr, laid.below, laid.above = _continuous(srcs, lo, hi, step)
        laid.left.mass[:] = laid.left.cont[:] = cl
        laid.right.mass[:] = laid.right.cont[:] = cr
    elif cont:
        cl, cr, below, above = _continuous([srcs[i] for i in cont], lo[cont], hi[cont], step)
        cols_l, cols_r = _spans(laid.left.off, cont), _spans(laid.right.off, cont)
        laid.left.mass[:, cols_l] = laid.left.cont[:, cols_l] = cl
        laid.right.mass[:, cols_r] = laid.right.cont[:, cols_r] = cr
        laid.below[:, cont], laid.above[:, cont] = below, above
    for i, src in enumerate(srcs):
        if src.atom_loss.size:
            _add_atoms(src, int(lo[i]), int(hi[i]), step, laid, i)
    return laid


def _spans(off, idx):
    """The columns of the parts ``idx`` (their spans of the offsets ``off``), in order."""
    return np.concatenate([np.arange(off[i], off[i + 1]) for i in idx])


def _continuous(srcs, lo, hi, step: float):
    """The continuous parts' masses, P and Q in rows: (left cells, right cells, below,
    above). Differences of the CDF at t_jlo .. 0 on the left, of the survival function at
    0 .. t_jhi on the right (each part's inside its own points: the one after a part's last
    point would straddle into the next part), clipped at 0 (rounding only)."""
    def laid(first, n):
        """first_i + 0, 1, ..., n_i - 1 for every part, end to end, and the starts."""
        if n.size == 1:
            return np.arange(first[0], first[0] + n[0]), np.zeros(1, dtype=np.int64)
        start = np.concatenate([[0], np.cumsum(n)[:-1]])
        return np.arange(n.sum()) - np.repeat(start - first, n), start
    jl, sl = laid(lo, 1 - lo)
    jr, sr = laid(np.zeros_like(hi), hi + 1)
    cp, cq = evaluate_flat(srcs, 1 - lo, step * jl, "cdf")
    sp, sq = evaluate_flat(srcs, hi + 1, step * jr, "sf")
    inl: slice | np.ndarray = slice(None)     # (one part: every difference is its own)
    inr: slice | np.ndarray = slice(None)
    if len(srcs) > 1:
        inl = np.ones(cp.size - 1, dtype=bool)
        inl[sl[1:] - 1] = False
        inr = np.ones(sp.size - 1, dtype=bool)
        inr[sr[1:] - 1] = False
    left = [np.maximum(np.diff(v)[inl], 0.0) + 0.0 for v in (cp, cq)]
    right = [np.maximum(-np.diff(v)[inr], 0.0) + 0.0 for v in (sp, sq)]
    last = np.concatenate([sr[1:], [sp.size]]) - 1
    return left, right, np.array([0.0 + cp[sl], 0.0 + cq[sl]]), \
        np.array([0.0 + sp[last], 0.0 + sq[last]])


def _add_atoms(src, jlo: int, jhi: int, h: float, laid: _Laid, i: int):
    """Add part i's atoms to its cells and to its masses below, at zero and above (in place):
    the cells' P- and Q-masses; ``beta``, the atoms' share of the discretiser's beta =
    sum (P e^{-t_start} - Q) / (e^h - 1) over the cell (t_start being the cell's end nearer 0,
    in the half's own coordinates), computed per atom as Q expm1(u h) / expm1(h) with u in
    (0, 1] its offset in the cell: exactly Q for an atom on the cell's far grid point, so that
    such atoms cost nothing; and ``end``, the Q-mass (again in the half's coordinates) of atoms
    exactly on the cell's far grid point, for the left tangent there. The continuous part's
    masses are already in place."""
    loss, ap, aq = src.atom_loss, src.atom_p, src.atom_q
    # an atom within rounding of the grid point 0 is on it, as _grid_floor places atoms near
    # every other grid point: its cell would otherwise be clipped into [-h, 0) or (0, h] with
    # the offset of the cell's far end, moving its loss by a whole step (a loss of -1e-17,
    # log(1 - q + q e^0) in floating point, was read as -h: an upper bound below the truth)
    near0 = np.isfinite(loss) & (_grid_floor(np.where(np.isfinite(loss), loss / h, 0.0)) == 0) \
        & (_grid_floor(np.where(np.isfinite(loss), -loss / h, 0.0)) == 0)
    neg, pos, at0 = (loss < 0) & ~near0, (loss > 0) & ~near0, (loss == 0) | near0
    em1 = math.expm1(h)
    laid.zero[0, i] += float(ap[at0].sum())
    laid.zero[1, i] += float(aq[at0].sum())
    # left cells [t_{j-1}, t_j): index k for the cell [t_{k+jlo}, t_{k+jlo+1})
    ln, pn, qn = loss[neg], ap[neg], aq[neg]
    fl = _grid_floor(ln / h)
    inl = (ln >= h * jlo) & np.isfinite(ln)
    laid.below[0, i] += float(pn[~inl].sum())
    laid.below[1, i] += float(qn[~inl].sum())
    kk = np.clip((fl - jlo)[inl], 0, -jlo - 1)
    # seen from the swap (loss -l, P and Q exchanged), the cell ends at -(fl+1) h near 0:
    # offset u = (-l)/h + fl + 1 in (0, 1], 1 for an atom on t_fl
    on = fl[inl] * h == ln[inl]
    u = np.clip(np.where(on, 1.0, -ln[inl] / h + fl[inl] + 1), 0, 1)
    _add_cells(laid.left, i, kk, pn[inl], qn[inl], pn[inl] * np.expm1(u * h) / em1, pn[inl] * on)
    # right cells (t_j, t_{j+1}]: index j, offset u = l/h - j in (0, 1]
    lp, pp, qp = loss[pos], ap[pos], aq[pos]
    j = -_grid_floor(-lp / h) - 1          # ceil(l/h) - 1: cell (t_j, t_{j+1}]
    inr = (lp <= h * jhi) & np.isfinite(lp)
    laid.above[0, i] += float(pp[~inr].sum())
    laid.above[1, i] += float(qp[~inr].sum())
    jj = np.clip(j[inr], 0, jhi - 1)
    on = (j[inr] + 1) * h == lp[inr]
    u = np.clip(np.where(on, 1.0, lp[inr] / h - j[inr]), 0, 1)
    _add_cells(laid.right, i, jj, pp[inr], qp[inr], qp[inr] * np.expm1(u * h) / em1, qp[inr] * on)


def _add_cells(side: _LaidSide, i: int, idx, p, q, beta, end):
    """The atoms (cell index, P, Q, share of beta, mass on the far end) summed per cell into
    part i's columns of ``side``: masses = atoms' + continuous part's."""
    c = side.cols(i)
    n = c.stop - c.start
    atoms = np.zeros((2, n))
    atoms[0] += np.bincount(idx, p, n)
    atoms[1] += np.bincount(idx, q, n)
    side.mass[:, c] = atoms + side.cont[:, c]
    side.beta[c] += np.bincount(idx, beta, n)
    side.end[c] += np.bincount(idx, end, n)


def _coarse(fine: _Laid) -> _Laid:
    """The cells of step h from those of step h/2 (every part has an even number of half
    cells on either side: the pairs never straddle two parts)."""
    def pairs(s: _LaidSide) -> _LaidSide:
        return _LaidSide(s.off // 2, s.mass[:, 0::2] + s.mass[:, 1::2],
                         s.cont[:, 0::2] + s.cont[:, 1::2], s.beta[0::2] + s.beta[1::2],
                         s.end[0::2] + s.end[1::2])
    return _Laid(pairs(fine.left), pairs(fine.right), fine.below, fine.zero, fine.above)


def _grid_floor(u: np.ndarray) -> np.ndarray:
    """floor(u), treating values within 4 ulps of an integer as that integer, so that an atom
    placed on a grid point in floating point (its loss / h rounded) lands in the cell that
    starts there. Only rounding-level: a wider snap (it was 1e-9) moves an atom just above a
    grid point down onto it, which the pessimistic side must never do."""
    u = np.where(np.isfinite(u), u, 0.0)
    r = np.rint(u)
    on = np.abs(u - r) <= 4 * 2.0 ** -52 * np.maximum(1.0, np.abs(r))
    return np.where(on, r, np.floor(u)).astype(np.int64)
