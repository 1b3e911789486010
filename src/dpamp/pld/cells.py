"""The masses of P and Q in the cells of a grid t_j = j h: what the discretiser
(:mod:`.discretize`) reads of a loss distribution (:meth:`.loss.LossDistribution.cells`).

    below : L < t_jlo                                   (incl. -inf)
    left  : [t_{j-1}, t_j) for j = jlo+1 .. 0          (-jlo cells)
    zero  : L = 0
    right : (t_j, t_{j+1}] for j = 0 .. jhi-1          (jhi cells)
    above : L > t_jhi                                   (incl. +inf)

Cells are closed on the side away from 0. Each side also carries its continuous part's masses
alone, the atoms' shares of the discretiser's beta and the Q-mass of atoms on the cells' far
grid points (see :meth:`.loss.LossDistribution.cells`), and, for the optimistic discretisation,
the masses of the half of each cell farther from 0 (:func:`.polygon.halves`: the midpoint
tangents).
"""
from __future__ import annotations

import dataclasses

import numpy as np


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
        return Cells(*c["below"], side("left"), *c["zero"], side("right"), *c["above"])  # type: ignore[call-arg]


def _pair(v: np.ndarray) -> np.ndarray:
    return v[0::2] + v[1::2]


def coarsen(fine: Cells) -> Cells:
    """Cells on the grid of step h from those of step h/2 (pairs of half cells added), with
    the half cells farther from 0 kept for the midpoint tangents; for a loss without finite
    atoms only (the atoms' shares ``beta`` and ``end`` are then zero)."""
    def side(s: Side, far: slice) -> Side:
        return Side(_pair(s.p), _pair(s.q), _pair(s.cont_p), _pair(s.cont_q), _pair(s.beta),
                    _pair(s.end), s.p[far], s.q[far])
    return dataclasses.replace(fine, left=side(fine.left, slice(0, None, 2)),
                               right=side(fine.right, slice(1, None, 2)))


def with_halves(coarse: Cells, fine: Cells) -> Cells:
    """``coarse`` with the half cells farther from 0 taken from ``fine`` (step h/2)."""
    return dataclasses.replace(
        coarse,
        left=dataclasses.replace(coarse.left, half_p=fine.left.p[0::2], half_q=fine.left.q[0::2]),
        right=dataclasses.replace(coarse.right, half_p=fine.right.p[1::2],
                                  half_q=fine.right.q[1::2]))
