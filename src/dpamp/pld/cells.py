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
            return Side(*c[name], *c[name + "_cont"], c[name + "_beta"], c[name + "_end"])
        return Cells(*c["below"], side("left"), *c["zero"], side("right"), *c["above"])


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
        return _split(_laid(srcs, grids, h))
    fine = _laid(srcs, [(2 * a, 2 * b) for a, b in grids], 0.5 * h)
    out = _split(_coarse(fine), fine)
    atomic = [i for i, s in enumerate(srcs) if np.isfinite(s.atom_loss).any()]
    if atomic:
        direct = _split(_laid([srcs[i] for i in atomic], [grids[i] for i in atomic], h))
        for i, c in zip(atomic, direct):
            halves = out[i]
            out[i] = dataclasses.replace(
                c, left=dataclasses.replace(c.left, half_p=halves.left.half_p,
                                            half_q=halves.left.half_q),
                right=dataclasses.replace(c.right, half_p=halves.right.half_p,
                                          half_q=halves.right.half_q))
    return out


@dataclasses.dataclass(slots=True)
class _Laid:
    """The cells of many parts laid end to end: part i's left cells are the columns
    off_l[i]:off_l[i + 1] of ``left``, its right cells likewise; column i of ``ends`` holds its
    masses below, at zero and above."""
    off_l: np.ndarray
    off_r: np.ndarray
    left: np.ndarray       # (6, cells): p, q, cont_p, cont_q, beta, end
    right: np.ndarray      # (6, cells)
    ends: np.ndarray       # (6, parts): below_p, below_q, zero_p, zero_q, above_p, above_q


def _laid(srcs, grids, step: float) -> _Laid:
    """The cells of every part on t_j = j step: those of the continuous parts, then the atoms
    added part by part."""
    lo = np.array([g[0] for g in grids], dtype=np.int64)
    hi = np.array([g[1] for g in grids], dtype=np.int64)
    off_l = np.array([0, *itertools.accumulate(-lo)], dtype=np.int64)
    off_r = np.array([0, *itertools.accumulate(hi)], dtype=np.int64)
    left, right = np.zeros((6, off_l[-1])), np.zeros((6, off_r[-1]))
    ends = np.zeros((6, len(srcs)))
    cont = [i for i, s in enumerate(srcs) if s.cdf is not None]
    if len(cont) == len(srcs):
        cl, cr, below, above = _continuous(srcs, lo, hi, step)
        left[0:2] = left[2:4] = cl
        right[0:2] = right[2:4] = cr
        ends[0:2], ends[4:6] = below, above
    elif cont:
        cl, cr, below, above = _continuous([srcs[i] for i in cont], lo[cont], hi[cont], step)
        cols_l, cols_r = _spans(off_l, cont), _spans(off_r, cont)
        left[0:2, cols_l] = left[2:4, cols_l] = cl
        right[0:2, cols_r] = right[2:4, cols_r] = cr
        ends[0:2, cont], ends[4:6, cont] = below, above
    for i, src in enumerate(srcs):
        if src.atom_loss.size:
            _add_atoms(src, int(lo[i]), int(hi[i]), step, left[:, off_l[i]:off_l[i + 1]],
                       right[:, off_r[i]:off_r[i + 1]], ends[:, i])
    return _Laid(off_l, off_r, left, right, ends)


def _spans(off, idx):
    """The columns of the parts ``idx`` (their spans of the offsets ``off``), in order."""
    return np.concatenate([np.arange(off[i], off[i + 1]) for i in idx])


def _continuous(srcs, lo, hi, step: float):
    """The continuous parts' masses: (left (2, cells), right (2, cells), below (2, parts), above
    (2, parts)), P and Q. Differences of the CDF at t_jlo .. 0 on the left, of the survival
    function at 0 .. t_jhi on the right (each part's inside its own points: the one after a
    part's last point would straddle into the next part), clipped at 0 (rounding only)."""
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
    inl = inr = slice(None)                   # (one part: every difference is its own)
    if len(srcs) > 1:
        inl = np.ones(cp.size - 1, dtype=bool)
        inl[sl[1:] - 1] = False
        inr = np.ones(sp.size - 1, dtype=bool)
        inr[sr[1:] - 1] = False
    left = [np.maximum(np.diff(v)[inl], 0.0) + 0.0 for v in (cp, cq)]
    right = [np.maximum(-np.diff(v)[inr], 0.0) + 0.0 for v in (sp, sq)]
    last = np.concatenate([sr[1:], [sp.size]]) - 1
    return left, right, (0.0 + cp[sl], 0.0 + cq[sl]), (0.0 + sp[last], 0.0 + sq[last])


def _add_atoms(src, jlo: int, jhi: int, h: float, left, right, ends):
    """Add one part's atoms to its cells (``left``, ``right``: its columns, in place) and to
    its masses below, at zero and above (``ends``): the cells' P- and Q-masses; ``beta``, the
    atoms' share of the discretiser's beta = sum (P e^{-t_start} - Q) / (e^h - 1) over the cell
    (t_start being the cell's end nearer 0, in the half's own coordinates), computed per atom as
    Q expm1(u h) / expm1(h) with u in (0, 1] its offset in the cell: exactly Q for an atom on the
    cell's far grid point, so that such atoms cost nothing; and ``end``, the Q-mass (again in
    the half's coordinates) of atoms exactly on the cell's far grid point, for the left tangent
    there. The continuous part's masses (rows 2, 3) are already in place."""
    loss, ap, aq = src.atom_loss, src.atom_p, src.atom_q
    neg, pos, at0 = loss < 0, loss > 0, loss == 0
    em1 = math.expm1(h)
    ends[2] += float(ap[at0].sum())
    ends[3] += float(aq[at0].sum())
    # left cells [t_{j-1}, t_j): index k for the cell [t_{k+jlo}, t_{k+jlo+1})
    ln, pn, qn = loss[neg], ap[neg], aq[neg]
    fl = _grid_floor(ln / h)
    inl = (ln >= h * jlo) & np.isfinite(ln)
    ends[0] += float(pn[~inl].sum())
    ends[1] += float(qn[~inl].sum())
    kk = np.clip((fl - jlo)[inl], 0, -jlo - 1)
    # seen from the swap (loss -l, P and Q exchanged), the cell ends at -(fl+1) h near 0:
    # offset u = (-l)/h + fl + 1 in (0, 1], 1 for an atom on t_fl
    on = fl[inl] * h == ln[inl]
    u = np.clip(np.where(on, 1.0, -ln[inl] / h + fl[inl] + 1), 0, 1)
    _add_cells(left, kk, pn[inl], qn[inl], pn[inl] * np.expm1(u * h) / em1, pn[inl] * on)
    # right cells (t_j, t_{j+1}]: index j, offset u = l/h - j in (0, 1]
    lp, pp, qp = loss[pos], ap[pos], aq[pos]
    j = -_grid_floor(-lp / h) - 1          # ceil(l/h) - 1: cell (t_j, t_{j+1}]
    inr = (lp <= h * jhi) & np.isfinite(lp)
    ends[4] += float(pp[~inr].sum())
    ends[5] += float(qp[~inr].sum())
    jj = np.clip(j[inr], 0, jhi - 1)
    on = (j[inr] + 1) * h == lp[inr]
    u = np.clip(np.where(on, 1.0, lp[inr] / h - j[inr]), 0, 1)
    _add_cells(right, jj, pp[inr], qp[inr], qp[inr] * np.expm1(u * h) / em1, qp[inr] * on)


def _add_cells(side, idx, p, q, beta, end):
    """The atoms (cell index, P, Q, share of beta, mass on the far end) summed per cell into a
    part's columns ``side``: masses = atoms' + continuous part's."""
    n = side.shape[1]
    atoms = np.zeros((4, n))
    for row, w in enumerate((p, q, beta, end)):
        atoms[row] += np.bincount(idx, w, n)
    side[0:2] = atoms[0:2] + side[2:4]
    side[4:6] = atoms[2:4]


def _coarse(fine: _Laid) -> _Laid:
    """The cells of step h from those of step h/2 (every part has an even number of half
    cells on either side: the pairs never straddle two parts)."""
    return _Laid(fine.off_l // 2, fine.off_r // 2, fine.left[:, 0::2] + fine.left[:, 1::2],
                 fine.right[:, 0::2] + fine.right[:, 1::2], fine.ends)


def _split(laid: _Laid, fine: _Laid | None = None) -> list[Cells]:
    """Each part's Cells (with the masses of its half cells farther from 0 from ``fine``, the
    cells of step h/2)."""
    out = []
    for i in range(laid.ends.shape[1]):
        a, b, c, d = laid.off_l[i], laid.off_l[i + 1], laid.off_r[i], laid.off_r[i + 1]
        hl = hr = (None, None)
        if fine is not None:
            hl = tuple(fine.left[0:2, 2 * a:2 * b:2])            # [t_{2k}, t_{2k+1}) of h/2
            hr = tuple(fine.right[0:2, 2 * c + 1:2 * d:2])       # (t_{2k+1}, t_{2k+2}]
        e = [float(v) for v in laid.ends[:, i]]
        out.append(Cells(e[0], e[1], Side(*laid.left[:, a:b], *hl), e[2], e[3],
                         Side(*laid.right[:, c:d], *hr), e[4], e[5]))
    return out


def _grid_floor(u: np.ndarray) -> np.ndarray:
    """floor(u), treating values within 4 ulps of an integer as that integer, so that an atom
    placed on a grid point in floating point (its loss / h rounded) lands in the cell that
    starts there. Only rounding-level: a wider snap (it was 1e-9) moves an atom just above a
    grid point down onto it, which the pessimistic side must never do."""
    u = np.where(np.isfinite(u), u, 0.0)
    r = np.rint(u)
    on = np.abs(u - r) <= 4 * 2.0 ** -52 * np.maximum(1.0, np.abs(r))
    return np.where(on, r, np.floor(u)).astype(np.int64)
