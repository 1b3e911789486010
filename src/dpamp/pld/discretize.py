"""Discretising a privacy-loss distribution onto a grid, pessimistically and optimistically.

For a (possibly defective) measure w of privacy losses under P, let

    F_w(x) = int (1 - x e^{-l})_+ dw(l)  (+ w({+inf})),   x = e^eps >= 0,

so that for a pair (P, Q), F(e^eps) = H_{e^eps}(P || Q) = delta(eps) (Steinke 2022, Prop. 7). F is
convex and non-increasing; a measure on grid points t_j gives a polygon with kinks exactly at x_j =
e^{t_j}, its mass at t_j being x_j times the jump of the slope there and its mass at +inf the final
flat value. Conversely every convex polygon with kinks at grid points that is flat after the last
one is F_w of a non-negative measure on the grid.

Composition is convolution of the measures, and F_{w1*w2}(x) = int F_{w1}(x e^{-l}) dw2(l)
(Fubini). Hence if F_{v1} <= F_{w1} and F_{v2} <= F_{w2} pointwise, then
F_{v1*v2}(x) = int F_{v1}(x e^{-l}) dv2 <= int F_{w1}(x e^{-l}) dv2 = int F_{v2}(x e^{-l}) dw1
<= F_{w1*w2}(x), and the same with >=. So any polygon above the true curve composes into proven
upper bounds and any polygon below it into proven lower bounds, for any number of compositions,
whether or not it is the curve of a genuine pair of distributions.

* Pessimistic ("connect the dots"): the polygon through (x_j, F(x_j)), flat after the last grid
  point at F(x_jhi) (mass moved to +inf) and the chord to (0, 1) before the first (mass moved up to
  t_jlo). Chords of a convex function lie above it. Per atom this splits a loss l in
  (t_j, t_{j+1}] between t_j and t_{j+1} keeping both its P- and Q-mass: a second-order change
  that does not drift with the number of compositions.
* Optimistic: the same knots, each lowered. On a cell [x_j, x_{j+1}] the tangents at both ends
  (slopes -Q[L > t]) form a convex minorant V of F; the chord exceeds V by at most
  G_j = dx_j beta_j (dB_j - beta_j) / dB_j, at lambda_j = beta_j / dB_j of the way, so lowering the
  cell's knots such that (1 - lambda_j) e_j + lambda_j e_{j+1} >= G_j puts the polygon below V.
  For a loss distribution the tangent at the cell's midpoint joins them (from the masses of the
  half cells, see ``polygon._mid_line``), which halves the lowering. After
  the last grid point the polygon must be flat, so the last knot goes down to F(inf) (the true
  mass at +inf: the tail is kept as mass at t_jhi with its Q-mass, a rounding down); before the
  first it follows the tangent (the P-mass below t_jlo is dropped: a defective measure, which the
  argument above allows). Knots never go below the floor that keeps the polygon non-increasing;
  remaining non-convex kinks are removed by the lower convex hull. Second order as well.

Everything is computed half-line by half-line so that the quantities are sums of positive terms:
the eps >= 0 half from (P, Q) and the eps <= 0 half from the swapped pair (Q, P), whose curve is
F_rev(x') = 1 - x' + x' F(1/x') (a perspective: polygons map to polygons, knots to knots, convex
to convex), and the two halves meet at x = 1.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from ..core.hull import lower_hull
from .cells import Cells, cells_many
from .loss import LossDistribution
from .polygon import Floor, Half, HalfArgs, _half_from_values, halves

_U = 2.0 ** -53
#: relative raise of a profile's upper values before the hull (:func:`discretize_profile`)
PROFILE_PAD = 1e-10


@dataclasses.dataclass
class Discretized:
    """PMFs on the grid t_j = j h, j = jlo..jhi, with masses at +inf: ``upper`` dominates the
    input (its curve is >= everywhere), ``lower`` is dominated by it (possibly defective)."""
    h: float
    jlo: int
    upper: np.ndarray
    upper_inf: float
    lower: np.ndarray
    lower_inf: float
    #: mass added to ``lower`` by clipping rounding-level negative values to 0; a composition's
    #: lower bound must subtract count * slack (each unit of mass moves delta by at most 1)
    lower_slack: float = 0.0
    #: relative error of the source's masses beyond the few ulps of their own rounding
    #: (``LossDistribution.mass_rel_err``): the engine's mass margin grows by it per step
    rel_err: float = 0.0
    #: ``upper`` is a majorant that already covers its masses' rounding (:mod:`.majorant`): the
    #: engine's margin leaves it out of the upper bound's
    majorised: bool = False
    #: what :func:`lower_total` reads, set by :func:`discretize_many`: (the source's P_tot, its
    #: P-mass below the grid, the optimistic masses a query dropped since), or None where no
    #: total is known; ``minorised``: ``lower`` is a minorant that already covers its masses'
    #: rounding (:mod:`.majorant`)
    lower_basis: tuple[float, float, float] | None = None
    minorised: bool = False

    def mass_error(self, h: float) -> float:
        """r, the modelled relative error of each mass (8u / h from the cancellation of a cell's
        split between its knots, and the source's own, amplified alike): the engine's mass
        margin grows by it per step (:func:`.engine.mass_margin`)."""
        return (8.0 * _U + self.rel_err) / h

    @property
    def jhi(self) -> int:
        return self.jlo + self.upper.size - 1


def discretize(loss: LossDistribution, h: float, jlo: int, jhi: int,
               optimistic: bool = True) -> Discretized:
    """Pessimistic and optimistic discretisations of ``loss`` on t_j = j h, jlo < 0 < jhi
    (optimistic=False: the pessimistic one only, ``lower`` all zeros: a valid, useless bound)."""
    return discretize_many([loss], [(jlo, jhi)], h, optimistic)[0]


def discretize_many(losses, grids, h: float, optimistic: bool = True) -> list[Discretized]:
    """:func:`discretize` of each loss distribution on its grid (jlo, jhi), all at once: their
    cells laid end to end (:func:`.cells.cells_many`), their halves built together
    (:func:`.polygon.halves`), joined part by part and their optimistic PMFs' rounding-level
    negative masses cancelled in one pass over all of them (:func:`cancel_negatives_many`);
    each part's PMFs are the same bits as alone."""
    if not all(jlo < 0 < jhi for jlo, jhi in grids):
        raise ValueError("the grid must have points on both sides of 0")
    args, totals, below = [], [], []
    for loss, c in zip(losses, cells_many(losses, grids, h, optimistic)):
        fwd, rev, p_tot, q_tot = half_args(c, h, loss.inf_mass, None, loss.neg_inf_mass,
                                           optimistic)
        args += [fwd, rev]
        totals.append((p_tot, q_tot))
        below.append(float(c.below_p))
    try:
        done = halves(args)
    except ArithmeticError:
        if not optimistic:
            raise
        if len(losses) > 1:          # part by part gives the same bits; find the one that fails
            return [d for loss, g in zip(losses, grids)
                    for d in discretize_many([loss], [g], h, optimistic)]
        # the optimistic lowering found no feasible polygon for this pair (seen on a two-atom
        # pair with most mass at +inf): keep the pessimistic PMF and give no lower bound for
        # it (``lower`` all zeros: valid, useless) rather than fail the query
        return discretize_many(losses, grids, h, optimistic=False)
    out = [_combine(done[2 * k], done[2 * k + 1], h, jlo, jhi, p_tot, q_tot, loss.inf_mass,
                    cancel=False)
           for k, (loss, (jlo, jhi), (p_tot, q_tot)) in enumerate(zip(losses, grids, totals))]
    for d, loss in zip(out, losses):
        d.upper_inf = _above_grid_floor(loss, d)
    for d, loss, b, (m, slack) in zip(out, losses, below,
                                      cancel_negatives_many([d.lower for d in out])):
        # (a truncated pair's mass at +-inf, charged to the lower bound: LossDistribution)
        d.lower, d.lower_slack = m, slack + loss.lower_slack
        d.rel_err = loss.mass_rel_err
        if optimistic and loss.lower_slack == 0:
            d.lower_basis = (_p_total(loss), b, 0.0)
    return out


def _p_total(loss: LossDistribution) -> float:
    """P_tot of :func:`lower_total`: 1, or for a pair of atoms only the sum of its P-masses as
    given where below 1 (a threshold witness of Bernoulli sampling: 1 - 5e-13, its own rounding
    charged outside the PLD to the pair as given; fsum is correctly rounded: 2u less is below
    it)."""
    if loss.cdf is None and loss.atom_p.size:
        return min(1.0, math.fsum(loss.atom_p) * (1.0 - 2.0 * _U))
    return 1.0


def lower_total(d: Discretized, h: float) -> float | None:
    """A lower bound on the exact total of the optimistic PMF ``d.lower`` (with ``lower_inf``)
    under the engine's relative-error model of the masses, or None (computed on demand: the
    minorant of :mod:`.majorant` reads it, only for long compositions). Its masses are x_i times the jumps of its polygon's slopes, so their total is the
    polygon's value at x = 0: by the perspective F(x) = P_tot - x Q_tot + x F_rev(1/x) that is
    P_tot plus the swapped half's final slope, -B_tail = -P[L below the grid], whatever the
    lowering did to the knots. P_tot is 1: a LossDistribution is the loss of a pair of
    probability distributions (a truncated pair, which charges its tails, excepted; a pair of
    atoms only: :func:`_p_total`); P[below]
    is one value of the source's CDF (relative error mass_rel_err and a few ulps, no
    cancellation). A truncated pair (``lower_slack``) has other totals: None. The computed
    total must agree (net of the clipped slack) within the masses' modelled rounding, else
    None: a path of the construction the argument does not cover, or a source that breaks the
    type's contract by more than that."""
    if d.lower_basis is None or d.lower.size == 0:
        return None
    one, below, dropped = d.lower_basis
    r = d.mass_error(h)
    if not r < 0.5:
        return None
    bound = one - below * (1.0 + 2.0 * d.rel_err + 16.0 * _U) - 16.0 * _U
    seen = math.fsum(d.lower) + d.lower_inf - d.lower_slack + dropped
    # (observed within 0.23 r and 1e-13: a sanity check, the argument above is the proof)
    if not abs(seen - (one - below)) <= 4.0 * r * max(seen, 1.0) + 64.0 * _U:
        return None
    # the exact masses a query dropped are at most the computed ones / (1 - r)
    return bound - dropped / (1.0 - r)


#: the smallest positive double: the pessimistic mass at +inf where the true one is positive
#: but its computed value underflowed to 0
_TINIEST = math.ulp(0.0)


def _above_grid_floor(loss: LossDistribution, d: Discretized) -> float:
    """The pessimistic mass at +inf, F(x_jhi), raised to the smallest positive double where it
    computed 0 while the pair has P-mass above the grid's last loss: F(x_jhi) = E_P[(1 -
    e^{t_jhi - L})_+] is then positive, and a computed 0 means it underflowed, i.e. it lies below
    the smallest subnormal (a Gaussian at mu 1e-8 has P[L > 1] ~ e^{-5e15}). Without the floor
    delta(eps) of such a pair would read 0, which is not an upper bound in exact arithmetic."""
    if d.upper_inf > 0.0:
        return d.upper_inf
    top = d.jhi * d.h
    above = loss.sf is not None and loss.support[1] > top
    above = above or bool(np.any((loss.atom_loss > top) & (loss.atom_p > 0.0)))
    return _TINIEST if above else d.upper_inf


def discretize_cells(c: Cells | dict, h: float, jlo: int, jhi: int, p_inf: float,
                     totals: tuple | None = None, q_ninf: float = 0.0,
                     optimistic: bool = True) -> Discretized:
    """``discretize`` from cell masses (:class:`.cells.Cells`, or their dict form,
    LossDistribution.cell_masses); p_inf = P[L = inf], q_ninf = Q[L = -inf] (the swapped pair's
    mass at +inf; 0 is always safe for the bounds). The measures may be defective (total masses
    below 1): the perspective between the halves is F(x) = P_tot - x Q_tot + x F_rev(1/x) for
    x <= 1. The sides' half cells (if any) give the midpoint tangents (polygon._mid_line)."""
    if isinstance(c, dict):
        c = Cells.from_dict(c)
    fwd, rev, p_tot, q_tot = half_args(c, h, p_inf, totals, q_ninf, optimistic)
    h_fwd, h_rev = halves([fwd, rev])
    return _combine(h_fwd, h_rev, h, jlo, jhi, p_tot, q_tot, p_inf)


def half_args(c: Cells, h: float, p_inf: float, totals: tuple | None = None,
              q_ninf: float = 0.0, optimistic: bool = True):
    """The arguments of :func:`.polygon.halves` for the eps >= 0 half and for the swapped
    pair's half, and the total masses (p_tot, q_tot) (see :func:`discretize_cells`)."""
    if totals is None:
        p_tot = c.below_p + c.left.p.sum() + c.zero_p + c.right.p.sum() + c.above_p
        q_tot = c.below_q + c.left.q.sum() + c.zero_q + c.right.q.sum() + c.above_q
    else:
        p_tot, q_tot = totals
    fwd = HalfArgs(c.right, c.above_p, c.above_q, h, True, Floor(p_inf, 0.0, p_inf), p_inf,
                   optimistic)
    # the swapped pair (Q, P): its cell i is [t_{-i-1}, t_{-i}) of L; its curve is
    # E_Q[(1 - x' e^L)_+] >= max(Q[L = -inf], Q_tot - x'(P_tot - p_inf))
    rev = HalfArgs(c.left.swapped(), c.below_q, c.below_p, h, False,
                   Floor(q_tot, -(p_tot - p_inf), q_ninf), q_ninf, optimistic)
    return fwd, rev, p_tot, q_tot


def _combine(fwd: Half, rev: Half, h, jlo, jhi, p_tot, q_tot, p_inf,
             cancel: bool = True) -> Discretized:
    """Join the eps >= 0 half and the swapped pair's half at x = 1 into the two PMFs
    (cancel=False: the optimistic masses before :func:`_cancel_negatives`, for the caller to
    cancel, with ``lower_slack`` 0 until then)."""
    z = -jlo                                      # index of t = 0
    back = np.exp(-h * np.arange(1, z + 1))       # swapped pair's P-mass -> P-mass: times e^{-t'}
    upper = np.empty(jhi - jlo + 1)
    upper[z + 1:] = fwd.m_up
    upper[:z] = (rev.m_up * back)[::-1]
    # jump of the slope at x = 1 (includes any atom at 0): left slope is F(1) - P_tot - S_rev
    upper[z] = fwd.s_up0 + rev.s_up0 + p_tot - fwd.f[0]
    if fwd.e is None:                             # pessimistic only
        return Discretized(h, jlo, np.maximum(upper, 0.0), fwd.inf_up, np.zeros_like(upper), 0.0)
    assert rev.e is not None and fwd.m_lo is not None and rev.m_lo is not None  # both optimistic
    # optimistic: common lowering at x = 1; the forward slope left of 1 is -1 + g0 - S_rev
    e0 = max(fwd.e[0], rev.e[0])
    em1 = np.expm1(h)
    lower = np.empty_like(upper)
    lower[z + 1:] = fwd.m_lo
    lower[:z] = (rev.m_lo * back)[::-1]
    # the halves' first slopes were computed with their own e_0; correct to the common one
    s_f = fwd.s_lo0 + (e0 - fwd.e[0]) / em1
    s_r = rev.s_lo0 + (e0 - rev.e[0]) / em1
    lower[z + 1] -= np.exp(h) * (e0 - fwd.e[0]) / em1 if fwd.m_lo.size else 0.0
    if rev.m_lo.size:
        lower[z - 1] -= np.exp(h) * (e0 - rev.e[0]) / em1 * back[0]
    g0 = fwd.f[0] - e0
    lower[z] = s_f + s_r + p_tot - g0
    neg = -np.minimum(lower, 0.0)
    if neg.sum() > 1e-13 * max(p_tot, 1e-300):
        lower = _hull_masses(fwd, rev, g0, h, lower, z, p_tot, q_tot)
    lower, slack = _cancel_negatives(lower) if cancel else (lower, 0.0)
    upper = np.maximum(upper, 0.0)        # rounding noise only (>= 0 in exact arithmetic)
    return Discretized(h, jlo, upper, fwd.inf_up, lower, p_inf, slack)


def _cancel_negatives(m: np.ndarray, passes: int = 20):
    """:func:`cancel_negatives_many` of one PMF: (masses, slack)."""
    return cancel_negatives_many([m], passes)[0]


def cancel_negatives_many(ms, passes: int = 20):
    """Rounding-level negative masses of optimistic PMFs, cancelled against the next bin up:
    that moves mass to a lower loss, which only lowers the curve F (every term
    (1 - x e^{-t})_+ decreases as t decreases), so each PMF stays a lower bound. What cannot be
    placed (at a PMF's top end: the PMF then stops after that pass) is returned as its slack,
    for the caller's error budget: [(masses, slack)]. The passes run on all PMFs at once, laid
    end to end (a PMF's top bin passes nothing on); only the bins that received mass can have
    turned negative (the ones emptied are 0, the rest unchanged): each pass looks there, not at
    the whole PMFs again."""
    if len(ms) == 1 and ms[0].size:
        return [_cancel_one(ms[0], passes)]
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


def _cancel_one(m: np.ndarray, passes: int):
    """:func:`cancel_negatives_many` of one non-empty PMF: the same passes, without the
    bookkeeping of which PMF a bin belongs to (its top bin stops it: the passes end there)."""
    flat = m.copy()
    top = flat.size - 1
    neg = np.nonzero(flat < 0)[0]
    for _ in range(passes):
        if neg.size == 0:
            break
        stop = bool(neg[-1] == top)               # (neg is increasing)
        inner = neg[:-1] if stop else neg
        amount = -flat[inner]
        flat[inner] = 0.0
        flat[inner + 1] -= amount             # (distinct indices, none past the top)
        if stop:
            break
        cand = inner + 1
        neg = cand[flat[cand] < 0]
    if (flat < 0).any():
        return np.maximum(flat, 0.0), float(-np.minimum(flat, 0.0).sum())
    return flat, 0.0


def _half_hull(half: Half, h: float, g0: float):
    """The lower convex hull of a half's optimistic knots with g_0 = g0, made convex at the far
    end too (its slope after x_K is ``end_slope``). Returns (x, knots, moved, first vertex
    distance, hull slopes right of each knot)."""
    K = half.f.size - 1
    x = np.exp(h * np.arange(K + 1))
    g = half.f - half.e
    g[0] = g0
    orig = g.copy()
    if K > 1:
        # the loop below lowers the end knot onto the line of slope end_slope through the
        # hull's second-last vertex until the last slope is <= end_slope: its fixed point is
        # the hull's supporting line of that slope, min_i g_i + end_slope (x_K - x_i) (every
        # hull vertex is above it and it touches one), reached here at once; the loop then
        # only confirms it (it took one full hull per vertex given up, K of them at worst)
        with np.errstate(over="ignore", invalid="ignore"):
            reach = g[:-1] + half.end_slope * (x[K] - x[:-1])
        reach = reach[np.isfinite(reach)]
        if reach.size:
            g[K] = min(g[K], float(reach.min()))
    for _ in range(K + 2):
        v = lower_hull(x, g)     # rounding can only drop a vertex: lower, still below F
        g = np.minimum(np.interp(x, x[v], g[v]), g)
        if K == 0:
            break
        last = (g[v[-1]] - g[v[-2]]) / (x[v[-1]] - x[v[-2]])
        if last <= half.end_slope:
            break
        # the last segment is flatter than the extension: lower the end knot onto the line of
        # slope end_slope through the previous vertex (stays below the tangent, hence below F)
        lowered = g[v[-2]] + half.end_slope * (x[K] - x[v[-2]])
        if not lowered < g[K]:
            # a slope an ulp flatter than end_slope, which the lowering cannot move in floating
            # point: every further pass would be this one (K + 2 hulls for nothing); the
            # rounding-sized kink left is a negative mass that _cancel_negatives takes
            break
        g[K] = lowered
    moved = g < orig
    return x, g, moved, _first_reach(x, g)


def _first_reach(x: np.ndarray, g: np.ndarray) -> float:
    """Distance from x_0 to the farthest knot on the hull's first segment: lowering g_0 by d
    raises that segment's slope by d / distance (the nearest knot on it would say d / h when
    rounding leaves the knots of a straight stretch a hair off the line, and make the glue
    iteration below crawl)."""
    if x.size < 2:
        return np.inf
    s = (g[1:] - g[0]) / (x[1:] - x[0])
    smin = float(s.min())
    on = np.nonzero(s <= smin + 1e-9 * abs(smin) + 1e-300)[0]
    return float(x[on[-1] + 1] - x[0])


def _hull_masses(fwd: Half, rev: Half, g0: float, h: float, lower: np.ndarray, z: int,
                 p_tot: float, q_tot: float):
    """Exact convexification (rarely needed: off-grid atoms, too-narrow windows): lower convex
    hull of each half's knots in its own coordinates, the shared knot at x = 1 lowered (never
    below its floor) until the kink there is convex as well. Masses are recomputed as x times
    the slope jump where a knot moved or next to one; elsewhere the precise masses stay."""
    floor0 = max(fwd.floor.a + fwd.floor.b, fwd.floor.c)                         # the floor of the shared knot at x = 1
    for _ in range(100):
        xf, gf, mf, dist_f = _half_hull(fwd, h, g0)
        xr, gr, mr, dist_r = _half_hull(rev, h, g0 + q_tot - p_tot)
        s_f = (gf[1] - gf[0]) / (xf[1] - xf[0]) if xf.size > 1 else fwd.end_slope
        s_r = (gr[1] - gr[0]) / (xr[1] - xr[0]) if xr.size > 1 else rev.end_slope
        jump0 = s_f + s_r + p_tot - g0
        if jump0 >= 0:
            break
        if g0 <= floor0:
            # at the floor both first slopes are bounded by the floors' slopes, which makes the
            # kink convex in exact arithmetic; what is left is rounding
            if jump0 > -1e-12:
                jump0 = 0.0
                break
            if jump0 > -1e-6 * p_tot:
                # the polygon through the floors lies below the curve whatever the kink; a
                # rounding-sized negative mass at x = 1 (slopes of values over a short reach,
                # e.g. 1e-11 at reach 1e-4) is left for _cancel_negatives, which moves it
                # down to a lower loss (the curve only falls)
                break
            raise ArithmeticError("optimistic discretisation: no convex polygon at 0")
        # lowering g0 by d raises each first hull slope (a minimum over the knots of the slope
        # from x = 1) by at most d / (its reach): jump0 is concave and increasing in the
        # lowering, so this Newton step never passes the root, bar the 0.1% margin (which only
        # lowers the polygon a little more: still below the curve)
        d = (-jump0) / (1.0 / dist_f + 1.0 / dist_r + 1.0) * 1.001 + 1e-300
        g0 = max(g0 - d, floor0)
    else:
        # not converged (never seen): the floor is always convex up to rounding
        if g0 > floor0:
            return _hull_masses(fwd, rev, floor0, h, lower, z, p_tot, q_tot)
        raise ArithmeticError("optimistic discretisation: no convex polygon at 0")

    def masses(x, g, moved, end_slope):
        slope = np.diff(g) / np.diff(x)
        right = np.concatenate([slope, [end_slope]])
        left = np.concatenate([[0.0], slope])
        m = x * (right - left)
        touch = moved.copy()
        touch[:-1] |= moved[1:]
        touch[1:] |= moved[:-1]
        touch[1:2] = True                                 # sees the new g0
        touch[0] = False                                  # the glue is set apart
        return m, touch

    out = lower.copy()
    m_f, t_f = masses(xf, gf, mf, fwd.end_slope)
    out[z + np.nonzero(t_f)[0]] = m_f[t_f]
    m_r, t_r = masses(xr, gr, mr, rev.end_slope)
    k = np.nonzero(t_r)[0]
    out[z - k] = m_r[t_r] * np.exp(-h * k)
    out[z] = jump0
    return out


def discretize_profile(upper_rows, lower_rows, inf_upper: float, inf_lower: float, h: float,
                       jlo: int, jhi: int) -> Discretized:
    """PMFs from a privacy profile alone (a PLD from any profile, Balle et al. 2018 / Steinke 2022,
    Prop. 7).

    ``upper_rows`` = (F(e^{i h}) for i = 0..jhi, F_rev(e^{i h}) for i = 0..-jlo): proven upper
    bounds on the curves of the pair and of its swap at the grid points; ``lower_rows`` the same
    for one actual pair's exact curves rounded down, or None. Upper: the lower convex hull of
    the upper values (in x, with the swapped half mapped by F(x) = 1 - x + x F_rev(1/x)) lies
    above the true convex curve, so it dominates it; flat after the last knot, through (0, 1)
    before the first. Lower: the secant construction of :func:`_half_from_values` on both
    halves, joined as for loss distributions (mass 0 when no lower values are known)."""
    U, R = (np.asarray(v, dtype=float) for v in upper_rows)
    # a non-increasing running minimum keeps upper bounds (the true curve is non-increasing)
    U = np.minimum.accumulate(np.minimum(U, 1.0))
    R = np.minimum.accumulate(np.minimum(R, 1.0))
    g0 = max(U[0], R[0])
    U[0] = R[0] = g0
    K, Kr = U.size - 1, R.size - 1
    x_right = np.exp(h * np.arange(K + 1))
    x_left = np.exp(-h * np.arange(Kr, 0, -1))                  # t_jlo .. t_{-1}
    xs = np.concatenate([[0.0], x_left, x_right])
    ys = np.concatenate([[1.0], 1.0 - x_left + x_left * R[1:][::-1], U])
    # raised by PROFILE_PAD of themselves: the PMF's curve is the hull's only in exact
    # arithmetic; the slopes (differences of the hull's values) and the masses (differences
    # of the slopes) are rounded, and the curve rebuilt from them, sum_{j > k} m_j (1 - x_k /
    # x_j), is off by about 2 u sum_{j >= k} gy_j, i.e. 2 u / (a h) of gy_k where the curve
    # falls like e^{-a log x} (1e-12 of it at h 1e-4, a 1); the point (0, 1) stays, so the
    # total mass stays 1 (the answers move by ~1e-10 of delta)
    ys[1:] *= 1.0 + PROFILE_PAD
    v = lower_hull(xs, ys)
    gy = np.interp(xs, xs[v], ys[v])
    slope = np.diff(gy) / np.diff(xs)
    right = np.concatenate([slope, [0.0]])                       # flat after the last knot
    jump = right - np.concatenate([[np.nan], slope])
    upper = np.maximum(xs[1:] * jump[1:], 0.0)   # clipping rounding noise raises the curve: safe
    n = jhi - jlo + 1
    if lower_rows is None:
        return Discretized(h, jlo, upper, float(gy[-1]), np.zeros(n), 0.0)
    L0, L1 = (np.asarray(v, dtype=float) for v in lower_rows)
    fwd = _half_from_values(L0, h, True, Floor(inf_lower, 0.0, inf_lower), inf_lower)
    rev = _half_from_values(L1, h, False, Floor(1.0, -(1.0 - inf_lower), 0.0), 0.0)
    d = _combine(fwd, rev, h, jlo, jhi, 1.0, 1.0, inf_lower)
    return Discretized(h, jlo, upper, float(gy[-1]), d.lower, d.lower_inf, d.lower_slack)
