"""The grid of a PLD query: the mass its windows may leave out (:func:`tail_fraction`), and a
first step from a model of the bracket's width, fitted to the parts' atoms and support ends (the
anchors), where the loss curve has kinks that cost the optimistic polygon first-order errors off
the grid and nothing (or almost) on it."""
from __future__ import annotations

import math

import numpy as np

from ..core.errors import OutOfReach

#: total P-mass (over all steps) allowed outside the parts' grids, relative to the target delta.
#: It is charged (to +inf in the upper PMFs, dropped from the lower ones), so it moves epsilon
#: by about TAIL_FRACTION delta / |d delta / d eps|. Where delta <= TAIL_REGIME the answer is in
#: the tail of the composed loss, whose slope |d log delta / d eps| is at least about z / sd
#: (z = sqrt(2 log(1/delta)) >= 4.3): there TAIL_FRACTION_TAIL moves epsilon by ~1e-4 sd / z,
#: a few percent of the tolerance, and makes W4's grids 30% shorter (the subsampled losses'
#: right tails are long and light). Above it the answer can be where delta(eps) is flat (near
#: the total variation distance, eps << sd): 1e-4 there kept tol out of reach.
TAIL_FRACTION = 1e-6
TAIL_FRACTION_TAIL = 1e-4
TAIL_REGIME = 1e-4


def tail_fraction(delta: float, tol_rel: float | None = None) -> float:
    """TAIL_FRACTION_TAIL for delta <= TAIL_REGIME, else TAIL_FRACTION (see there); for a
    tolerance tighter than the default 1e-3 of epsilon (``tol_rel``, relative to an estimate
    of epsilon) the tail share shrinks with it, down to TAIL_FRACTION: a refinement of the
    grid cannot narrow what the left-out tails cost."""
    frac = TAIL_FRACTION_TAIL if delta <= TAIL_REGIME else TAIL_FRACTION
    if tol_rel is not None:
        frac = max(TAIL_FRACTION, min(frac, frac * tol_rel / 1e-3))
    return frac


def initial_h(direction_parts, tol_abs, z=4.0):
    """A first grid step from the model gap ~ 0.2 z h^2 (sum of counts) / sd (second-order
    discretisation errors add up in variance over the steps); refined by measurement."""
    counts = sum(c for _, c in direction_parts)
    var = sum(c * max(src.var, 0.0) for src, c in direction_parts)
    sd = math.sqrt(max(var, 1e-30))
    h = math.sqrt(0.8 * tol_abs * sd / (0.2 * max(z, 1.0) * counts))
    # never coarser than a fraction of the composition's spread (a part whose own spread is
    # far smaller -- a point mass, the swap of a small-sigma subsampled pair, which is a
    # near-atom at -log(1 - q) -- is resolved by the anchors of align, and weighs little in
    # the composition's error otherwise)
    h = min(h, max(sd, 1e-12) / 4.0)
    # and never coarser than the largest anchor (a cell holding a kink of F off its grid
    # points costs the lower bound its whole mass times the cell: at small sigma the first
    # grids proved nothing until h came below |log(1 - q)|)
    anchors = _anchors(direction_parts)
    if anchors and anchors[-1] >= 1e-7:
        h = min(h, anchors[-1])
    return align(direction_parts, max(h, 1e-7))


def align(direction_parts, h):
    """If every finite atom of every part is a multiple of one loss a (randomized response,
    Laplace, the worst-case (eps, delta) pair), use a step that divides a, so the atoms fall on
    the grid and cost nothing."""
    if not (math.isfinite(h) and h > 0):
        raise OutOfReach("the PLD cannot size a grid for this query (the spread of the "
                         "privacy losses is beyond the range of floating point)")
    # an anchor inside the first cell stays there (fitting h to it would shrink h to it); so
    # does a lattice finer than the grid (its atoms are dense in every cell)
    anchors = sorted(a for a in _anchors(direction_parts) + _lattices(direction_parts) if a >= h)
    if 1 <= len(anchors) <= MAX_ANCHORS:
        return _near_common_divisor(anchors, h)
    return h


#: most distinct anchors a grid step is fitted to (beyond, the step is left alone)
MAX_ANCHORS = 4


def _anchors(direction_parts) -> list:
    """The magnitudes |loss| where the loss curve F has a kink or a near-kink: finite atoms,
    and finite ends of a continuous part's support (a Poisson-subsampled pair's losses pile
    up just above log(1 - q) when its base pair is far apart, i.e. small sigma). Off the grid,
    such a point costs the optimistic polygon a first-order lowering (its offset from the grid
    times its mass, per step; for a pile inside a cell whose far knot is on the curve's floor,
    up to the whole cell's curve), on a grid point nothing (an atom) or a defect of the
    pile's width times its mass (see polygon.FAR_KINK)."""
    found = []
    for src, _ in direction_parts:
        if getattr(src, "lattice", None):
            continue            # its atoms are multiples of one step: :func:`_lattices`
        loss = getattr(src, "atom_loss", np.zeros(0))
        p = getattr(src, "atom_p", np.ones(loss.size))
        q = getattr(src, "atom_q", np.ones(loss.size))
        big = np.isfinite(loss) & (loss != 0) & (np.maximum(p, q) > 1e-9)
        found.append(np.abs(loss[big]))
        if getattr(src, "cdf", None) is not None:
            found.append(np.array([abs(float(e)) for e in getattr(src, "support", ())
                                   if math.isfinite(e) and e != 0], dtype=float))
    vals = np.sort(np.concatenate(found)) if found else np.zeros(0)
    if vals.size > _MANY:
        # (thousands of atoms, a subsampled discrete Gaussian's: far more than MAX_ANCHORS
        # either way, so each is kept unless within rounding of the one before it)
        keep = np.concatenate([[True], vals[1:] > vals[:-1] * (1 + 1e-12)])
        return [float(v) for v in vals[keep]]
    out: list[float] = []         # anchors equal up to rounding are one
    for a in vals:
        if not out or a > out[-1] * (1 + 1e-12):
            out.append(float(a))
    return out


#: above this many atoms, :func:`_anchors` merges equal ones by a vectorised pass
_MANY = 256


def _lattices(direction_parts) -> list:
    """The lattice steps of the parts whose finite atoms are all multiples of one step (the
    ``lattice`` of a :class:`~.loss.LossDistribution`): a grid step dividing it puts every atom
    on a grid point, which the many atoms of such a part would not allow as anchors one by
    one."""
    out: list[float] = []
    for src, _ in direction_parts:
        s = getattr(src, "lattice", None)
        if s and math.isfinite(s) and s > 0 and not any(abs(s - a) <= 1e-12 * a for a in out):
            out.append(float(s))
    return out


def _near_common_divisor(anchors, h: float) -> float:
    """A step h' <= h dividing the largest anchor a_0 that puts every other anchor nearest to
    a multiple of h' (n = a_0 / h' scanned over [a_0/h, 1.5 a_0/h]: a simultaneous
    Diophantine approximation; among M candidates the best misfit is ~ h'/M^(1/(k-1)))."""
    a0 = anchors[-1]
    n0 = max(1, math.ceil(a0 / h))
    if len(anchors) == 1:
        return a0 / n0
    n = np.arange(n0, n0 + max(8, min(20000, n0 // 2)))
    hs = a0 / n
    off = np.zeros(n.size)
    for a in anchors[:-1]:
        r = a / hs
        off = np.maximum(off, np.abs(r - np.rint(r)) * hs)
    return float(hs[int(np.argmin(off))])
