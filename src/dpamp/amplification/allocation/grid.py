"""The likelihood ratio of one step on a linear grid, in convex order above and below.

Let (P0, Q0) be the base mechanism's dominating pair and X = dP0/dQ0 under Q0 (X = e^l for the
privacy loss l; E[X] = 1 - P0[l = +inf]). For k = 1 the epoch's pair is
P = (1/t) sum_i P0 in coordinate i (Q0 elsewhere) vs Q = Q0^t (FS25a Sec. 2, FS25b Sec. 3), so
dP/dQ = S / t with S = X_1 + ... + X_t, the X_i independent under Q. Both hockey-stick curves are
expectations of convex functions of S:

    H_x(P || Q) = E[(S/t - x)_+] + P0[l = +inf],    H_x(Q || P) = E[(1 - x S/t)_+].

So a law of X that is larger in convex order gives upper curves in both directions, and one that
is smaller in the increasing (resp. decreasing) convex order gives lower curves for the first
(resp. second) -- for every x, and after convolution (the orders are closed under sums of
independent variables: y -> int phi(x + y) d mu(x) is again convex, increasing, >= 0).

On the grid a_k = k dx, k = 0..K, with the cells [a_c, a_{c+1}] holding p_c = E[X; cell] and
q_c = Q0[cell] (X > a_K is cut off and charged separately, see :mod:`.pld`):

* ``split_masses`` (upper): each cell's mass split between its ends keeping its mean, i.e. the
  call function C(z) = E(X - z)_+ replaced by its chords through the knots (convex order above).
* ``lowered_masses`` (lower): the knots of C lowered by dx q_c / 4 (a chord of a convex function
  exceeds it by at most a quarter of the cell's width times its slope change, q_c), the lower
  convex hull of the lowered knots, and the masses of that polygon. Its call function is below C
  everywhere and its mass no larger: smaller in the increasing convex order.

Both are second-order in dx. Every mass carries its floating-point error bound: the upper masses
are raised by it and the lower ones lowered (a pointwise larger measure only raises
expectations of functions >= 0, a smaller one lowers them), so both stay bounds.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...core.hull import lower_hull

_U = 2.0 ** -53
#: assumed relative accuracy of a loss distribution's cdf / sf values (scipy's ndtr and the
#: closed forms of dpamp.pld.loss are within a few ulps); every difference is charged with it
FUNC_ULPS = 16


@dataclasses.dataclass
class Cells:
    """X on the grid a_k = k dx: per cell c (between a_c and a_{c+1}, c = 0..K-1) p = E[X; cell],
    q = Q0[cell] and their error bounds; ``zero`` = Q0[X = 0]; the cut tails above a_K."""
    dx: float
    p: np.ndarray
    q: np.ndarray
    ep: np.ndarray
    eq: np.ndarray
    zero: float
    p_tail: float          # P0[a_K < X < inf]  (rounded up)
    q_tail: float          # Q0[X > a_K]        (rounded up)
    p_inf: float           # P0[l = +inf]
    v: np.ndarray | None = None   # call function E[(X - a_k)_+; X <= a_K] at the knots, k = 0..K
    dv: np.ndarray | None = None  # its error bound
    put: np.ndarray | None = None   # put function E[(a_k - X)_+] at the knots
    dput: np.ndarray | None = None
    o: float = 0.0           # offset: the knots are o + k dx (p, v, put are of X - o)
    q_gap: np.ndarray | None = None  # per cell: the Q0-mass strictly inside (for the lowering)
    q_ends: tuple = (0.0, 0.0)  # Q0-mass of atoms on knot 0 and on knot K (from below)
    #: sum of q (x - a_{c+1})_+ over the atoms counted in a cell c whose right end a_{c+1} they
    #: exceed (an atom on a knot, or on the last one, a few ulps above it): the split's mean is
    #: short of theirs by this, so E[(S/t - x)_+] may exceed the split's by it (1-Lipschitz,
    #: t coordinates of weight 1/t); added to the remove curve (rounded up)
    excess: float = 0.0

    @property
    def K(self) -> int:
        return self.p.size

    def reflected(self) -> "Cells":
        """Y = a_K - X: the cells in reverse order, E[Y; cell] = a_K q - p. The atom X = 0
        (loss -inf, Q0-mass ``zero``: an (epsilon, delta) base) is the atom Y = a_K, on the
        last knot: in the last cell's q (and so its mean), not inside it (q_gap)."""
        aK = self.K * self.dx
        assert (self.v is not None and self.dv is not None and self.put is not None
                and self.dput is not None and self.q_gap is not None)   # as cells() makes them
        q = self.q[::-1].copy()
        eq = self.eq[::-1].copy()
        if self.zero:
            q[-1] += self.zero
            eq[-1] += 2 * _U * q[-1]
        p = np.maximum(aK * q - self.p[::-1], 0.0)
        ep = aK * eq + self.ep[::-1] + 4 * _U * (aK * q + self.p[::-1])
        ends = (self.q_ends[1], self.q_ends[0] + self.zero * (1 - 4 * _U))
        # C_Y(b_k) = E(a_K - b_k - X)_+ = put(a_{K-k}) (put counts X = 0); put_Y(b_k) =
        # C(a_{K-k})
        return Cells(self.dx, p, q, ep, eq, 0.0, self.p_tail, self.q_tail,
                     self.p_inf, self.put[::-1].copy(), self.dput[::-1].copy(),
                     self.v[::-1].copy(), self.dv[::-1].copy(), 0.0, self.q_gap[::-1].copy(),
                     ends)


def cells(loss, dx: float, K: int, o: float = 0.0) -> Cells:
    """p, q per cell for a :class:`~dpamp.pld.loss.LossDistribution` ``loss`` (cdf / sf of
    its continuous part and its atoms) on the knots o + k dx. Differences of the cdf on the
    left of 0 and of the sf on the right keep relative precision; each value is charged
    FUNC_ULPS ulps. With an offset o > 0, X must be >= o (the caller checks the support):
    every quantity is then of X - o. Atoms within 1e-9 dx of a knot are counted there: they
    cost the lowering only their distance to it."""
    a = o + dx * np.arange(1, K + 1)
    with np.errstate(divide="ignore"):
        lk = np.log(a)                                       # log a_1 .. log a_K
    p = np.zeros(K)
    q = np.zeros(K)
    ep = np.zeros(K)
    eq = np.zeros(K)
    rel = FUNC_ULPS * _U
    p_tail = q_tail = 0.0
    if loss.cdf is not None:
        cp, cq = (np.asarray(v, dtype=float) for v in loss.cdf(lk))
        sp, sq = (np.asarray(v, dtype=float) for v in loss.sf(lk))
        # cell 0: l <= log a_1; cell c >= 1: log a_c < l <= log a_{c+1}
        left = np.concatenate([[True], lk[1:] <= 0.0])
        lo_cp = np.concatenate([[0.0], cp[:-1]])
        lo_cq = np.concatenate([[0.0], cq[:-1]])
        lo_sp = np.concatenate([[np.nan], sp[:-1]])
        lo_sq = np.concatenate([[np.nan], sq[:-1]])
        with np.errstate(invalid="ignore"):
            p = np.where(left, cp - lo_cp, lo_sp - sp)
            q = np.where(left, cq - lo_cq, lo_sq - sq)
            ep = rel * np.where(left, cp + lo_cp, lo_sp + sp) + _U * np.abs(p)
            eq = rel * np.where(left, cq + lo_cq, lo_sq + sq) + _U * np.abs(q)
        p = np.maximum(np.nan_to_num(p), 0.0)
        q = np.maximum(np.nan_to_num(q), 0.0)
        p_tail += float(sp[-1]) * (1 + rel)
        q_tail += float(sq[-1]) * (1 + rel)
    zero = 0.0
    p_inf = 0.0
    if loss.atom_loss.size:
        l = loss.atom_loss
        fin = np.isfinite(l)
        zero = float(np.sum(loss.atom_q[l == -np.inf]))
        p_inf = float(np.sum(loss.atom_p[l == np.inf]))
        with np.errstate(over="ignore"):
            x = np.exp(l[fin])
        ap, aq = loss.atom_p[fin], loss.atom_q[fin]
        r = (x - o) / dx
        near = np.rint(r)
        on = np.abs(r - near) <= 1e-9
        c = np.where(on, near - 1, np.floor(r)).astype(np.int64)   # on knot c: cell c-1
        inside = x <= a[-1] * (1 + 1e-12)
        cc = np.clip(c[inside], 0, K - 1)
        on_in = on[inside]
        # the atoms on knots: their Q0-mass does not bend C inside a cell, but their distance
        # to the knot (with 8 ulps of x) does, by at most q times it: as mass of a cell, 4 q
        # dist / dx gives the lowering dx q_gap / 4 >= that
        dist = np.abs(x[inside] - (o + near[inside] * dx)) + 8 * _U * x[inside]
        q_on: np.ndarray = np.bincount(cc, np.where(on_in, aq[inside], 0.0), K)
        q_on_gap: np.ndarray = np.bincount(cc, np.where(on_in, 4 * aq[inside] * dist / dx, 0.0), K)
        knot = np.where(on_in, near[inside], -1)
        q_ends = (float(np.sum(aq[inside][knot == 0])) * (1 - 4 * _U),
                  float(np.sum(aq[inside][knot == K])) * (1 - 4 * _U))
        tp, tq = add_atoms(p, q, ep, eq, cc, ap, aq, inside)
        p_tail += tp
        q_tail += tq
        right = (o + (cc + 1) * dx) * (1 - 4 * _U)       # each atom's cell's right end, down
        excess = float(np.sum(aq[inside] * np.maximum(x[inside] - right, 0.0))) * (1 + 8 * _U)
        x_top = a[-1] * (1 + 1e-12)
    else:
        q_on = q_on_gap = np.zeros(K)
        q_ends = (0.0, 0.0)
        excess, x_top = 0.0, None
    v, dv, put, dput = _knots(loss, dx, K, lk, zero, o, x_top)
    q_gap = np.maximum(q - q_on, 0.0) + q_on_gap
    if o:
        # of X - o: E[X - o; cell] = p - o q
        ep = ep + o * eq + 4 * _U * (p + o * q)
        p = np.maximum(p - o * q, 0.0)
    return Cells(dx, p, q, ep, eq, zero, p_tail * (1 + 4 * _U), q_tail * (1 + 4 * _U), p_inf,
                 v, dv, put, dput, o, q_gap, q_ends, excess)


def add_atoms(p, q, ep, eq, cc, ap, aq, inside):
    """Add the atoms (P0-mass ap, Q0-mass aq) that are ``inside`` to the cells cc of p, q (in
    place), with 8 ulps of their masses charged to ep, eq (an atom's X = e^l is known to a few
    ulps only: its cell's split is charged for it); returns the P0- and Q0-mass outside."""
    n = p.size
    bp, bq = np.bincount(cc, ap[inside], n), np.bincount(cc, aq[inside], n)
    p += bp
    q += bq
    ep += bp * 8 * _U
    eq += bq * 8 * _U
    return float(np.sum(ap[~inside])), float(np.sum(aq[~inside]))


def _knots(loss, dx, K, lk, zero, o=0.0, x_top=None):
    """Call C(a_k) = E[(X - a_k)_+; X <= a_K] = P0[l_k < l <= l_K] - a_k Q0[same] and put
    E[(a_k - X)_+] = a_k Q0[l <= l_k] - P0[l <= l_k] (l finite), straight from the sf / cdf
    (no long sums), each with its error bound (FUNC_ULPS per value, 4 ulps per operation).
    ``x_top``: atoms with X = e^l at most this are inside [0, a_K], as :func:`cells` counts
    them (an atom on the last knot may have a loss an ulp above log a_K: counted above it, the
    call function omitted it, and the lowered masses collapsed to knot 0); they are taken at
    l_K, which lowers the call function (it is a lower bound's constraint) by at most their
    mass times 1e-12 a_K and leaves the put at the knots unchanged."""
    rel = FUNC_ULPS * _U
    a = o + dx * np.arange(K + 1)
    l = np.concatenate([[-np.inf], lk])
    sfp = np.zeros(K + 1)
    sfq = np.zeros(K + 1)
    cdp = np.zeros(K + 1)
    cdq = np.zeros(K + 1)
    if loss.cdf is not None:
        sp, sq = (np.asarray(x, dtype=float) for x in loss.sf(lk))
        cp, cq = (np.asarray(x, dtype=float) for x in loss.cdf(lk))
        tp, tq = (np.asarray(x, dtype=float) for x in loss.sf(np.array([-np.inf])))
        sfp[:] = np.concatenate([tp, sp])
        sfq[:] = np.concatenate([tq, sq])
        cdp[1:], cdq[1:] = cp, cq
    esf_p, esf_q = rel * sfp, rel * sfq
    ecd_p, ecd_q = rel * cdp, rel * cdq
    if loss.atom_loss.size:
        fin = np.isfinite(loss.atom_loss)
        al, ap, aq = loss.atom_loss[fin], loss.atom_p[fin], loss.atom_q[fin]
        if x_top is not None:
            with np.errstate(over="ignore"):
                top = (al > l[-1]) & (np.exp(al) <= x_top)
            al = np.where(top, l[-1], al)
        # atoms above each knot's loss / at most it (a sort and cumulative sums: n u relative)
        order = np.argsort(al)
        al, ap, aq = al[order], ap[order], aq[order]
        cap_ = np.concatenate([[0.0], np.cumsum(ap)])
        caq = np.concatenate([[0.0], np.cumsum(aq)])
        idx = np.searchsorted(al, l, side="right")        # atoms with loss <= l
        n = al.size + 2
        cdp = cdp + cap_[idx]
        cdq = cdq + caq[idx]
        sfp = sfp + cap_[-1] - cap_[idx]
        sfq = sfq + caq[-1] - caq[idx]
        ecd_p = ecd_p + n * _U * cap_[idx]
        ecd_q = ecd_q + n * _U * caq[idx]
        esf_p = esf_p + n * _U * cap_[-1]
        esf_q = esf_q + n * _U * caq[-1]
    tp = np.maximum(sfp - sfp[-1], 0.0)
    tq = np.maximum(sfq - sfq[-1], 0.0)
    etp = esf_p + esf_p[-1] + _U * tp
    etq = esf_q + esf_q[-1] + _U * tq
    v = np.maximum(tp - a * tq, 0.0)
    # (an atom within rounding of a knot may be counted on either side: it adds at most its
    # mass times the distance, 16 ulps of a)
    dv = etp + a * etq + 4 * _U * (tp + a * tq) + 16 * _U * a * (tq[0] + cdq[-1])
    v[-1], dv[-1] = 0.0, 0.0
    lq = cdq + zero
    put = np.maximum(a * lq - cdp, 0.0)
    dput = a * ecd_q + ecd_p + 4 * _U * (a * lq + cdp) + 16 * _U * a * (tq[0] + cdq[-1])
    put[0], dput[0] = 0.0, 0.0
    return v, dv, put, dput


def split_masses(c: Cells) -> np.ndarray:
    """Masses at a_0..a_K of the mean-preserving split of every cell (each raised by its error
    bound): larger than X restricted to [0, a_K] in convex order."""
    K = c.K
    j = np.arange(K, dtype=float)
    pd = c.p / c.dx
    left = np.clip((j + 1) * c.q - pd, 0.0, c.q)            # to a_c:     (a_{c+1} q - p)/dx
    right = np.clip(pd - j * c.q, 0.0, c.q)                  # to a_{c+1}: (p - a_c q)/dx
    epd = c.ep / c.dx
    # error of each share: the inputs' bounds, the rounding of the difference, and the position
    # of an atom known to a few ulps (8 ulps of the cell's larger end times its mass)
    e_left = (j + 1) * c.eq + epd + 4 * _U * ((j + 1) * c.q + pd) + 8 * _U * (j + 1) * c.q
    e_right = j * c.eq + epd + 4 * _U * (j * c.q + pd) + 8 * _U * (j + 1) * c.q
    m = np.zeros(K + 1)
    m[:-1] += left + e_left
    m[1:] += right + e_right
    m[0] += c.zero
    return m * (1 + 4 * _U)


def lowered_masses(c: Cells) -> np.ndarray:
    """Masses at a_0..a_K whose call function is below that of X restricted to [0, a_K] and
    whose total is no larger (see the module docstring); each lowered by its error bound."""
    K, dx = c.K, c.dx
    v, dv = c.v, c.dv
    assert v is not None and dv is not None
    # total mass Q0[X <= a_K] from below, and Q0[X > 0] from above
    M = max(float(np.sum(c.q) + c.zero) - float(np.sum(c.eq)) - (K + 4) * _U, 0.0)
    # Q0[X > a_0]: the atoms on knot 0 are not above it
    Qpos = max(float(np.sum(c.q)) + float(np.sum(c.eq)) - c.q_ends[0], 0.0) * (1 + (K + 4) * _U)
    a = dx * np.arange(K + 1)
    qq = (c.q if c.q_gap is None else c.q_gap) + c.eq
    # Lowering e_k of knot k. On cell c a chord of the convex C exceeds it by at most
    # min(alpha (z - a_c), beta (a_{c+1} - z)) dx-scaled, alpha + beta <= q_c, whose largest value
    # at lam = (z - a_c)/dx is dx q_c lam (1 - lam); the lowered chord (1 - lam) e_c + lam e_{c+1}
    # covers it for every lam iff sqrt(e_c) + sqrt(e_{c+1}) >= sqrt(dx q_c) (minimise
    # e_c / lam + e_{c+1} / (1 - lam)). Default: dx q_c / 4 at both ends. Knot 0 is not lowered
    # (it is the mean: lowering it would shift a sum of t steps t times as much), nor knot K
    # (C = 0 there); knot j at most so far that the polygon leaves a_0 no steeper than -M
    # (``cap``: the mass at a_0 stays >= 0); a capped knot's cell is covered from its other end.
    g = 0.25 * dx * qq
    need = np.sqrt(dx * qq)
    # a knot is lowered by at most its value: the polygon cannot go below 0 (w >= 0 below), so
    # a knot with C(a_k) < e_k is lowered by C(a_k) only. The cover condition of each cell is
    # on these effective lowerings; a cell whose left knot is at 0 is covered (its chord rises
    # from 0 to at most C(a_{c+1}), below C on the cell: the call function is non-increasing).
    # An (epsilon, delta) base under add has most of Y's mass in one cell just below the top
    # knot, where C is tiny: read off e instead, the lowered chord rose above C there (a lower
    # bound 1.6 % above the true epsilon).
    to_zero = np.maximum(v - dv - 16 * _U * v, 0.0)
    e = np.zeros(K + 1)
    if K >= 2:
        e[1:K] = np.maximum(g[:-1], g[1:])
        e[K - 1] = max(e[K - 1], dx * qq[K - 1])
        cap = np.maximum(v - dv - (v[0] + dv[0]) + M * a, 0.0)
        cap = np.minimum(cap, to_zero)
        cap[K] = 0.0
        # cell 0: a segment from (a_0, C(a_0) or lower) is below C if its end at a_1 is below
        # the tangent at a_0, of slope -Q0[X > 0] >= -Qpos: knot 1 is lowered that far even
        # where the cap is less (by a rounding-level amount: Qpos and M differ by the mass at
        # 0 and the error bounds only); the safety net below then lowers knot 0 so that the
        # polygon leaves a_0 no steeper than -M (any lowering keeps it below C)
        tangent = v[1] + dv[1] - (v[0] - dv[0]) + Qpos * dx
        e[1] = g[1]                     # (cell 0 needs the tangent only, cell 1 dx q_1 / 4)
        e[1:] = np.minimum(e[1:], cap[1:])
        e[1] = max(e[1], tangent)
        _cover(e, need, cap, to_zero)
    w = np.maximum(v - e - dv - 16 * _U * v, 0.0)
    w[K] = 0.0
    if K < 2:
        w[:] = 0.0                                   # (no useful lowering on one cell)
    w = np.minimum.accumulate(w)
    # the polygon continues left of 0 with slope -M: no slope from a_0 may be steeper
    if K:
        w[0] = min(w[0], float(np.min(w[1:] + M * a[1:])))
    idx = lower_hull(a, w)
    wh = np.minimum(np.interp(a, a[idx], w[idx]), w)
    wh = np.minimum.accumulate(np.maximum(wh, 0.0))
    s = np.diff(wh) / dx
    s_full = np.concatenate([[-M], s, [0.0]])
    m = np.diff(s_full)
    # rounding of the slopes and their differences; wh_K >= 0 keeps C below the polygon
    err = 8 * _U * (np.abs(s_full[1:]) + np.abs(s_full[:-1])) \
        + 8 * _U * (np.abs(np.concatenate([wh, [0.0]])[1:]) + wh) / dx
    return np.maximum(m - err, 0.0)


def _cover(e, need, cap, to_zero):
    """Raise the lowerings e (in place) until every cell c >= 1 is covered: its lowered chord
    below C, i.e. sqrt(f_c) + sqrt(f_{c+1}) >= need_c for the effective lowerings f = min(e,
    to_zero), or its left knot at 0 (e_c >= to_zero_c). The right end takes what its cap
    allows; the left end the rest, beyond its cap (the safety net of :func:`lowered_masses`
    keeps the mass at a_0 >= 0). Raising e never uncovers a cell, so one pass suffices; the
    check after it is the proof's condition, asserted."""
    for _ in range(2):
        f = np.minimum(e, to_zero)
        short = need - np.sqrt(f[:-1]) - np.sqrt(f[1:])
        bad = np.nonzero((short > 1e-12 * need) & (e[:-1] < to_zero[:-1]))[0]
        bad = bad[bad > 0]
        if bad.size == 0:
            return
        want = (need[bad] - np.sqrt(f[bad])) ** 2 * (1 + 1e-9)
        e[bad + 1] = np.maximum(e[bad + 1], np.minimum(want, cap[bad + 1]))
        f = np.minimum(e, to_zero)
        still = need[bad] - np.sqrt(f[bad]) - np.sqrt(f[bad + 1]) > 1e-12 * need[bad]
        lb = bad[still]
        e[lb] = np.maximum(e[lb], (need[lb] - np.sqrt(f[lb + 1])) ** 2 * (1 + 1e-9))
    raise AssertionError("lowered_masses: a cell's chord is not covered")


def _suffix(x: np.ndarray, strict: bool = False) -> np.ndarray:
    """sum_{j >= k} x_j (strict: j > k) for every k."""
    out = np.cumsum(x[::-1])[::-1]
    return np.concatenate([out[1:], [0.0]]) if strict else out


def truncation_point(loss, tail: float) -> float:
    """A loss l_hi with P0 and Q0 mass above it at most about ``tail`` (sizing only)."""
    lo, hi = loss.quantile_range(tail)
    return max(hi, 0.0) + 1e-9


def moments(m: np.ndarray, dx: float):
    """(mass, mean, second moment) of masses m at k dx (sizing only)."""
    a = dx * np.arange(m.size)
    tot = float(m.sum())
    return tot, float(np.sum(m * a)), float(np.sum(m * a * a))


def log_mgf(m: np.ndarray, dx: float, s: np.ndarray) -> np.ndarray:
    """log sum_k m_k e^{s a_k}, vectorised over s (Chernoff windows; sizing only)."""
    from ...pld.engine import grid_log_mgf
    return grid_log_mgf(m, 0.0, dx, s)


__all__ = ["Cells", "cells", "split_masses", "lowered_masses", "truncation_point", "moments",
           "log_mgf", "FUNC_ULPS"]
