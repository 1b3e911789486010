"""All parts of one direction of a composition discretised on one grid (the engine's step 1).

Each part gets its own window [jlo, jhi] from its quantiles (a pessimistic-only pass from its
tail functions alone, see :func:`_range`); the loss distributions are then discretised all
together (:func:`.discretize.discretize_many`: bit for bit what each gives alone,
tests/test_pld_batch.py). The other sources (profiles, symmetrised curves, self-discretising
sources) go one by one. Issue 18: a hundred heterogeneous parts cost mostly numpy's per-call
overhead part by part.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.errors import OutOfReach
from . import loss as L
from .discretize import Discretized, discretize_many
from .engine import MAX_N, PartPMF
from .loss_batch import quantile_ranges, tail_points_many
from .sources import discretize_source

_U = 2.0 ** -53
#: largest |loss| on a grid: the discretisation works with x = e^loss (e^709 overflows)
MAX_LOSS = 650.0
#: largest |t_j| of a grid point: the losses' range up to MAX_LOSS, plus the two steps of
#: rounding out (e^700 is still a double)
_GRID_END = 700.0


def discretize_parts(parts, h, tail_total, optimistic=True, batched=True):
    """[PartPMF] of the (source, count) parts on t_j = j h, each window leaving out P-mass at
    most tail_total / (count x number of parts) on either side (charged by the discretisation
    itself, which puts it at +inf or rounds it onto the window's ends). ``batched=False``
    discretises part by part (the reference the batched path is tested against)."""
    n = len(parts)
    grids = []
    tails = [max(tail_total / (c * n), 1e-300) for _, c in parts]
    for lo, hi in _ranges(parts, tails, h, optimistic, batched):
        if not (-lo <= MAX_LOSS and hi <= MAX_LOSS):    # (a NaN end is refused too)
            raise OutOfReach(f"the PLD works with e^loss in floating point and handles losses "
                             f"up to {MAX_LOSS:g}; one part reaches {max(-lo, hi):.4g} "
                             "(epsilon in the hundreds): use method='rdp'")
        jlo = min(-1, math.floor(lo / h) - 1)
        jhi = max(1, math.ceil(hi / h) + 1)
        if not max(-jlo, jhi) * h <= _GRID_END:
            # a step past the losses the grid can hold (a Gaussian at mu 1e150 asks for h ~
            # 1e149 from a tol relative to its epsilon ~ 1e299, while its quantile scan is
            # clipped): e^{t_j} would overflow
            raise OutOfReach(f"the PLD grid would reach losses of {max(-jlo, jhi) * h:.4g} "
                             f"(step {h:.4g}), past the {_GRID_END:g} it handles in floating "
                             "point: use method='rdp' or 'profile'")
        if jhi - jlo > MAX_N:
            raise MemoryError(jhi - jlo)
        grids.append((jlo, jhi))
    ds: list[Discretized | None] = [None] * n
    many = [i for i, (src, _) in enumerate(parts) if type(src) is L.LossDistribution]
    for group in ([many] if batched else [[i] for i in many]):
        if group:
            for i, d in zip(group, discretize_many([parts[i][0] for i in group],
                                                   [grids[i] for i in group], h, optimistic)):
                ds[i] = d
    out = []
    for i, (src, c) in enumerate(parts):
        known = ds[i]
        d = known if known is not None else discretize_source(src, h, *grids[i], optimistic)
        # the optimistic PMF may drop any mass (that only lowers delta): drop its top tail of
        # mass <= the budget, which otherwise holds the tail rounded down onto the last knot and,
        # once tilted, widens the FFT window for nothing
        # (the last knot holds the P-mass above the grid, <= the tail budget by the choice of
        # jhi, rounded down onto it: it goes too)
        top = np.cumsum(d.lower[::-1])
        cut = max(1, int(np.searchsorted(top, tail_total / (c * n), side="right")))
        d.lower = d.lower.copy()
        if d.lower_basis is not None:
            # (the masses dropped, for :func:`.discretize.lower_total`)
            one, below, gone = d.lower_basis
            gone += math.fsum(d.lower[d.lower.size - cut:]) * (1.0 + 4.0 * _U)
            d.lower_basis = (one, below, gone)
        d.lower[d.lower.size - cut:] = 0.0
        out.append(PartPMF(d, c))
    return out


def _ranges(parts, tails, h: float, scan: bool, batched: bool = True):
    """[_range(src, tail, h, scan)] for the (source, count) parts, the quantile scans of the
    loss distributions evaluated together (:func:`.loss_batch.quantile_ranges`)."""
    if not batched:
        return [_range(src, t, h, scan) for (src, _), t in zip(parts, tails)]
    out: list[tuple[float, float] | None] = [None] * len(parts)
    many = [i for i, (src, _) in enumerate(parts) if type(src) is L.LossDistribution]
    srcs, ts = [parts[i][0] for i in many], [tails[i] for i in many]
    if scan:
        for i, r in zip(many, quantile_ranges(srcs, ts)):
            out[i] = r
    else:
        for i, a, b in zip(many, tail_points_many(srcs, ts, False),
                           tail_points_many(srcs, ts, True)):
            out[i] = _range(parts[i][0], tails[i], h, False, (a, b))
    return [r if r is not None else _range(src, t, h, scan)
            for r, (src, _), t in zip(out, parts, tails)]


def _range(src, tail: float, h: float, scan: bool = True, ends=None):
    """src.quantile_range(tail), or for a pessimistic-only pass (coarse grids, whose size
    matters little) the range from the part's tail functions alone, without quantile_range's
    scans of the CDFs, which cost most of a coarse pass (the scans move the ends in by ~20%).
    Sizing only: the tail functions bound both P's and Q's tails by ``tail`` as the scans do,
    and the discretisation charges whatever lies outside its grid anyway. ``ends``: the tail
    functions' values, when already evaluated (:func:`.loss_batch.tail_points_many`). A source
    with ``upper_trivial`` (only a lower pair; its upper is the point mass at 0) has the range
    {0} in a pessimistic-only pass."""
    if not scan and getattr(src, "upper_trivial", False):
        # the upper PMF is the point mass at loss 0 and a pessimistic-only pass reads nothing
        # else (a post-processed lower pair's range costs a whole composition)
        return 0.0, 0.0
    if scan or type(src) is not L.LossDistribution or src.cdf is None \
            or src.upper_tail is None or src.lower_tail is None:
        return src.quantile_range(tail)
    a, b = ends if ends is not None else (src.lower_tail(tail), src.upper_tail(tail))
    fin = np.isfinite(src.atom_loss) & (np.maximum(src.atom_p, src.atom_q) > tail * 1e-3)
    if fin.any():
        a, b = min(a, float(src.atom_loss[fin].min())), max(b, float(src.atom_loss[fin].max()))
    if not (math.isfinite(a) and math.isfinite(b) and a <= b) or max(-a, b) > MAX_LOSS / 2 \
            or (b - a) / h > MAX_N / 4:
        return src.quantile_range(tail)
    return a, b
