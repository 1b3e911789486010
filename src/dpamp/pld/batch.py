"""All parts of one direction of a composition discretised on one grid (the engine's step 1).

Each part gets its own window [jlo, jhi] from its quantiles (a pessimistic-only pass from its
tail functions alone, see :func:`_range`); the loss distributions' halves (two per part) are
then built together by :func:`.polygon.halves`, joined part by part
(:func:`.discretize._combine`), and their optimistic PMFs' rounding-level negative masses
cancelled in one pass over all of them (:func:`cancel_negatives_many`): bit for bit what the
part-by-part :func:`.discretize.discretize` gives (tests/test_pld_batch.py). The other sources
(profiles, symmetrised curves, self-discretising sources) go one by one as before. Issue 18:
a hundred heterogeneous parts cost mostly numpy's per-call overhead part by part.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..core.errors import OutOfReach
from . import loss as L
from .cells import Cells, Side
from .discretize import _combine, cells_of, half_args
from .engine import MAX_N, PartPMF
from .loss_batch import evaluate_flat, quantile_ranges, shape, tail_points_many
from .polygon import halves
from .sources import discretize_source

#: largest |loss| on a grid: the discretisation works with x = e^loss (e^709 overflows)
MAX_LOSS = 650.0


def discretize_parts(parts, h, tail_total, optimistic=True, batched=True):
    """[PartPMF] of the (source, count) parts on t_j = j h, each window leaving out P-mass at
    most tail_total / (count x number of parts) on either side (charged by the discretisation
    itself, which puts it at +inf or rounds it onto the window's ends). ``batched=False``
    discretises part by part (the reference the batched path is tested against)."""
    n = len(parts)
    grids = []
    tails = [max(tail_total / (c * n), 1e-300) for _, c in parts]
    for lo, hi in _ranges(parts, tails, h, optimistic, batched):
        if max(-lo, hi) > MAX_LOSS:
            raise OutOfReach(f"the PLD works with e^loss in floating point and handles losses "
                             f"up to {MAX_LOSS:g}; one part reaches {max(-lo, hi):.4g} "
                             "(epsilon in the hundreds): use method='rdp'")
        jlo = min(-1, math.floor(lo / h) - 1)
        jhi = max(1, math.ceil(hi / h) + 1)
        if jhi - jlo > MAX_N:
            raise MemoryError(jhi - jlo)
        grids.append((jlo, jhi))
    ds = [None] * n
    batch = [i for i, (src, _) in enumerate(parts)
             if batched and type(src) is L.LossDistribution]
    if len(batch) > 1:
        prep, args = {}, []
        # the cells of the parts of a family all together; the others' one by one
        fam = [i for i in batch if _flat(parts[i][0])]
        cells = dict(zip(fam, cells_many([parts[i][0] for i in fam], [grids[i] for i in fam],
                                         h, optimistic)))
        for i in batch:
            src = parts[i][0]
            jlo, jhi = grids[i]
            c = cells[i] if i in cells else cells_of(src, h, jlo, jhi, optimistic)
            fwd, rev, p_tot, q_tot = half_args(c, h, src.inf_mass, None, src.neg_inf_mass,
                                               optimistic)
            prep[i] = (len(args), p_tot, q_tot, src.inf_mass)
            args += [fwd, rev]
        done = halves(args)
        for i in batch:
            k, p_tot, q_tot, p_inf = prep[i]
            ds[i] = _combine(done[k], done[k + 1], h, *grids[i], p_tot, q_tot, p_inf,
                             cancel=False)
        for i, (m, slack) in zip(batch, cancel_negatives_many([ds[i].lower for i in batch])):
            ds[i].lower, ds[i].lower_slack = m, slack
    out = []
    for i, (src, c) in enumerate(parts):
        d = ds[i] if ds[i] is not None else discretize_source(src, h, *grids[i], optimistic)
        # the optimistic PMF may drop any mass (that only lowers delta): drop its top tail of
        # mass <= the budget, which otherwise holds the tail rounded down onto the last knot and,
        # once tilted, widens the FFT window for nothing
        # (the last knot holds the P-mass above the grid, <= the tail budget by the choice of
        # jhi, rounded down onto it: it goes too)
        top = np.cumsum(d.lower[::-1])
        cut = max(1, int(np.searchsorted(top, tail_total / (c * n), side="right")))
        d.lower = d.lower.copy()
        d.lower[d.lower.size - cut:] = 0.0
        out.append(PartPMF(d, c))
    return out


def _flat(src) -> bool:
    """Whether :func:`cells_many` takes this part: a loss distribution of a family
    (:mod:`.loss_batch`) without atoms."""
    return type(src) is L.LossDistribution and src.atom_loss.size == 0 \
        and src.cdf is not None and shape(src.family) is not None


def cells_many(srcs, grids, h: float, optimistic: bool):
    """[:func:`.discretize.cells_of` (src, h, jlo, jhi, optimistic)] for parts without atoms
    whose continuous part :mod:`.loss_batch` evaluates: the same masses (bit for bit), computed
    on all parts' cells laid end to end. Every part's cells are its own: the differences that
    would straddle two parts are dropped, and the pairs of half cells never straddle (each part
    has an even number of them on either side)."""
    if not srcs:
        return []
    k = 2 if optimistic else 1
    step = 0.5 * h if optimistic else h
    lo = np.array([k * g[0] for g in grids], dtype=np.int64)
    hi = np.array([k * g[1] for g in grids], dtype=np.int64)

    def laid(first, n):
        """first_i + 0, 1, ..., n_i - 1 for every part, end to end, and the starts."""
        start = np.concatenate([[0], np.cumsum(n)[:-1]])
        return np.arange(n.sum()) - np.repeat(start - first, n), start
    jl, sl = laid(lo, 1 - lo)
    jr, sr = laid(np.zeros_like(hi), hi + 1)
    cp, cq = evaluate_flat(srcs, 1 - lo, step * jl, "cdf")
    sp, sq = evaluate_flat(srcs, hi + 1, step * jr, "sf")
    # the cells of each part: differences inside its own points (the one after its last point
    # straddles into the next part); P[L < t_lo] and P[L > t_hi] at its ends
    inl = np.ones(cp.size - 1, dtype=bool)
    inl[sl[1:] - 1] = False
    inr = np.ones(sp.size - 1, dtype=bool)
    inr[sr[1:] - 1] = False
    left = [np.maximum(np.diff(v)[inl], 0.0) + 0.0 for v in (cp, cq)]
    right = [np.maximum(-np.diff(v)[inr], 0.0) + 0.0 for v in (sp, sq)]
    ends = np.concatenate([sr[1:], [sp.size]]) - 1
    below, above = (cp[sl], cq[sl]), (sp[ends], sq[ends])
    nl, nr = -lo, hi
    cl, cr = np.concatenate([[0], np.cumsum(nl)]), np.concatenate([[0], np.cumsum(nr)])
    pair = lambda v: v[0::2] + v[1::2]  # noqa: E731
    if optimistic:
        coarse = [pair(v) for v in left], [pair(v) for v in right]
        ml, mr = [v[0::2] for v in left], [v[1::2] for v in right]
        cl2, cr2 = cl // 2, cr // 2
    out = []
    for i in range(len(srcs)):
        a, b = slice(cl[i], cl[i + 1]), slice(cr[i], cr[i + 1])
        if optimistic:
            a2, b2 = slice(cl2[i], cl2[i + 1]), slice(cr2[i], cr2[i + 1])
            lv, rv = [v[a2] for v in coarse[0]], [v[b2] for v in coarse[1]]
            lh, rh = (ml[0][a2], ml[1][a2]), (mr[0][b2], mr[1][b2])
        else:
            lv, rv = [v[a] for v in left], [v[b] for v in right]
            lh = rh = (None, None)
        n_l, n_r = lv[0].size, rv[0].size
        out.append(Cells(0.0 + float(below[0][i]), 0.0 + float(below[1][i]),
                         Side(*lv, *(v.copy() for v in lv), np.zeros(n_l), np.zeros(n_l), *lh),
                         0.0, 0.0,
                         Side(*rv, *(v.copy() for v in rv), np.zeros(n_r), np.zeros(n_r), *rh),
                         0.0 + float(above[0][i]), 0.0 + float(above[1][i])))
    return out


def _ranges(parts, tails, h: float, scan: bool, batched: bool = True):
    """[_range(src, tail, h, scan)] for the (source, count) parts, the quantile scans of the
    loss distributions evaluated together (:func:`.loss_batch.quantile_ranges`)."""
    if not batched:
        return [_range(src, t, h, scan) for (src, _), t in zip(parts, tails)]
    out = [None] * len(parts)
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


def cancel_negatives_many(ms, passes: int = 20):
    """[:func:`.discretize._cancel_negatives` (m) for m in ms], the passes run on all PMFs at
    once (laid end to end: a PMF's top bin passes nothing on, as there; a PMF that meets a
    negative top bin stops after that pass, as there). Equal values (zeros maybe signed)."""
    sizes = np.array([m.size for m in ms], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    flat = np.concatenate(ms) if ms else np.zeros(0)
    is_top = np.zeros(flat.size, dtype=bool)
    is_top[offs[1:][sizes > 0] - 1] = True
    owner = np.repeat(np.arange(len(ms)), sizes)
    stopped = np.zeros(len(ms), dtype=bool)
    neg = np.nonzero(flat < 0)[0]
    for _ in range(passes):
        if neg.size == 0:
            break
        top = is_top[neg]
        inner = neg[~top]
        amount = -flat[inner]
        flat[inner] = 0.0
        flat[inner + 1] -= amount             # (distinct indices, none past its PMF's top)
        stopped[owner[neg[top]]] = True
        cand = inner + 1
        cand = cand[~stopped[owner[cand]]]
        neg = cand[flat[cand] < 0]
    out = []
    for a, b in itertools.pairwise(offs):
        m = flat[a:b]
        if (m < 0).any():
            out.append((np.maximum(m, 0.0), float(-np.minimum(m, 0.0).sum())))
        else:
            out.append((m, 0.0))
    return out
