"""The pessimistic and optimistic polygons of one half-line of a privacy curve (the module
docstring of :mod:`dpamp.pld.discretize` gives the construction and why both bounds compose).

A half-line is x = e^eps >= 1 in its own coordinates: the eps >= 0 half of (P, Q), or the
eps <= 0 half as the eps' >= 0 half of the swapped pair (Q, P). On knots t_i = i h it holds the
curve's values, the pessimistic masses (chords: connect the dots) and the optimistic lowering of
each knot (below the tangent minorant, with the midpoint tangent of each cell).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .cells import Side


@dataclasses.dataclass(slots=True, frozen=True)
class Floor:
    """No optimistic knot of a half goes below max(c, a + b x), a lower bound on its curve
    (c >= 0: the curve's limit, its mass at +inf)."""
    a: float
    b: float
    c: float


@dataclasses.dataclass(slots=True, frozen=True)
class HalfArgs:
    """What one half-line is built from (:func:`_half`): its cells (t_i, t_{i+1}], t_i = i h,
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


def _half(args: HalfArgs) -> Half:
    """Cells (t_i, t_{i+1}], t_i = i h (i < K) carry P-mass dA and Q-mass dB; A_tail, B_tail are
    the P- and Q-mass above t_K (A_tail includes the P-mass inf_true at +inf).
    flat_end: the optimistic polygon goes flat after x_K at inf_true (the eps >= 0 half);
    otherwise it follows the tangent of slope -B_tail (the eps <= 0 half seen from the swap).
    floor: (a, b, c): no optimistic knot goes below max(c, a + b x), a lower bound on the true
    curve (c: the curve's limit, its mass at +inf). Keeping the knots up there matters: a polygon
    below it is the curve of a defective measure, the missing mass compounds over the number of
    compositions, and a knot dipping below the flat tail makes a concave kink there.
    optimistic=False skips the optimistic lowering (its fields are then None).
    mid: (dA2, dB2), the P- and Q-mass of the upper half (t_i + h/2, t_{i+1}] of each cell, which
    give the curve's value and tangent at the cell's midpoint x_m = x_i e^{h/2}:

        F(x_m) = F(x_{i+1}) + (x_{i+1} - x_m) Q[L > t_{i+1}] + dA2 - x_m dB2,
        F'(x_m+) = -(Q[L > t_{i+1}] + dB2),

    a third tangent of the minorant, which halves the optimistic lowering (the chord exceeds the
    two end tangents by up to a quarter of h^2 F'' at their kink, the three tangents by an
    eighth): the lower bound's error falls from about twice the upper bound's to about half."""
    side, h, B_tail = args.cells, args.h, args.B_tail
    dA, dB, flat_end, optimistic = side.p, side.q, args.flat_end, args.optimistic
    K = dA.size
    t = h * np.arange(K + 1)
    x = np.exp(t)
    em1 = np.expm1(h)
    dx = x[:-1] * em1                                     # x_{i+1} - x_i
    # beta_i = (dA_i - x_i dB_i) / dx_i, in [0, dB_i] because the cell's losses are in
    # (t_i, t_{i+1}]; clipping only removes rounding noise. Atoms' shares come precomputed
    # (exact for atoms on grid points); the continuous part's by this difference.
    cA, cB = side.cont_p, side.cont_q
    with np.errstate(over="ignore", invalid="ignore"):
        beta = (cA * np.exp(-t[:-1]) - cB) / em1
    beta = np.clip(np.nan_to_num(beta, nan=0.0, posinf=0.0), 0.0, cB)
    beta = beta + side.beta
    beta = np.clip(beta, 0.0, dB)
    qbar = np.concatenate([np.cumsum(dB[::-1])[::-1], [0.0]]) + B_tail   # Q[L > t_i]
    s_up = -qbar[1:] - beta                               # chord slope on cell i
    f_K = max(args.A_tail - x[K] * B_tail, args.inf_true, 0.0)   # F(x_K) (>= its limit)
    # F at the knots by the backward recursion F_i = F_{i+1} - dx_i s_i: all terms >= 0
    f = np.concatenate([np.cumsum((-s_up * dx)[::-1])[::-1], [0.0]]) + f_K
    # chord - tangent at x_i (slope -Qbar_i) grows like alpha (x - x_i); chord - tangent at
    # x_{i+1} like beta_end (x_{i+1} - x), the tangent there using the left derivative
    # -Q[L >= t_{i+1}], which counts an atom on t_{i+1} (it belongs to cell i): beta - q_end
    # instead of beta (tight when the atom is alone)
    alpha = dB - beta
    beta_end = np.clip(beta - side.end, 0.0, None)
    end_slope = 0.0 if flat_end else -B_tail
    mid_line = None
    if optimistic and side.half_p is not None and K:
        dA2, dB2 = side.half_p, side.half_q
        assert dB2 is not None                # the halves come in pairs
        xm = x[:-1] * np.exp(0.5 * h)
        gap = x[1:] - xm
        # dA2 - x_m dB2 is in [0, (x_{i+1} - x_m) dB2] (the half cell's losses are above
        # t_m): clipping removes rounding noise only
        inner = np.clip(dA2 - xm * dB2, 0.0, gap * dB2)
        f_m = f[1:] + gap * qbar[1:] + inner
        s_m = -(qbar[1:] + dB2)
        # chord - (tangent at x_m) as a line in lam, its value at lam = 0 rounded up by a few
        # ulps of its terms (a larger difference only lowers the polygon more)
        c0 = f[:-1] - f_m + s_m * (xm - x[:-1])
        pad = 16 * 2.0 ** -53 * (np.abs(f[:-1]) + np.abs(f[1:]) + f_m
                                 + np.abs(s_m) * (xm - x[:-1] + dx))
        mid_line = (f[1:] - f[:-1] - s_m * dx, c0 + pad)
    return _half_core(x, dx, f, s_up, f_K, alpha, beta_end, flat_end, args.floor,
                      args.inf_true, end_slope, optimistic, mid_line)


#: a deficit this far along its cell is fixed by the far knot (see the loop in _half_core)
FAR_KINK = 0.9


def pair_crossings(lines):
    """The pairwise intersections (cv - cu) / (su - sv) of lines (slope, value at 0), -1 where
    parallel, unclipped: one array per pair (any shape, elementwise)."""
    lams = []
    for u in range(len(lines)):
        for v in range(u + 1, len(lines)):
            (su, cu), (sv, cv) = lines[u], lines[v]
            den = su - sv
            with np.errstate(divide="ignore", invalid="ignore"):
                lams.append(np.where(np.abs(den) > 0, (cv - cu) / den, -1.0))
    return lams


def _kinks(lines):
    """Pairwise intersections lam in [0, 1] of lines (slope, value at 0) in lam, per cell, and
    the minimum of all the lines there: (lams, values), each (pairs, cells)."""
    lam = np.clip(np.nan_to_num(np.array(pair_crossings(lines)), nan=0.0), 0.0, 1.0)
    vals = np.min(np.stack([sl[None, :] * lam + c0[None, :] for sl, c0 in lines]), axis=0)
    return lam, vals


def _half_core(x, dx, f, s_up, f_K, alpha, beta_end, flat_end, floor, inf_true,
               end_slope, optimistic: bool = True, mid_line=None) -> Half:
    """Pessimistic masses of the polygon through the knots f (chord slopes s_up, flat after the
    last knot at f_K) and the optimistic lowering of the knots, given on each cell the growth
    rates alpha, beta_end of chord - (left line) and chord - (right line) of a convex minorant
    of the curve (tangents, or secants of neighbouring cells), and optionally chord - (a third
    line below the curve) as (slope, value at lam = 0) per cell."""
    K = f.size - 1
    # pessimistic masses x_i (S_i - S_{i-1}), S_K = 0 (flat)
    s_full = np.concatenate([s_up, [0.0]])
    m_up = x[1:] * (s_full[1:] - s_full[:-1])
    if not optimistic:
        return Half(f, m_up, f_K, float(s_up[0]) if K else 0.0, None, None, None, end_slope,
                    floor)
    # --- optimistic lowering -------------------------------------------------------------
    # On cell i (position lam in [0, 1]) the curve is above V = max(left line, right line,
    # [midpoint tangent,] floor) (the floor max(c, a + b x) is a lower bound too). chord - V is concave, so the
    # polygon is below V iff it is at V's kinks, among the pairwise intersections of
    #   chord - left = alpha lam dx,   chord - right = beta_end (1 - lam) dx,
    #   chord - line = (1-lam) f_i + lam f_{i+1} - a - b x,   chord - c = (1-lam) f_i + lam f_{i+1} - c.
    a, b, c = floor.a, floor.b, floor.c
    fi, fj, xi = f[:-1], f[1:], x[:-1]
    tangents = [  # (slope in lam, value at lam = 0) of each difference, per cell
        (alpha * dx, np.zeros(K)),
        (-beta_end * dx, beta_end * dx),
    ] + ([mid_line] if mid_line is not None else [])
    floors = [(fj - fi - b * dx, fi - a - b * xi), (fj - fi, fi - c)]
    # the tangents' kinks decide almost every cell; the floor lines only where they come near
    # one (a cell is "hard" then, and all pairwise intersections of all lines are its kinks)
    lam_c, vals = _kinks(tangents)                       # (1 or 3, K)
    floor_near = np.minimum(floors[0][0][None, :] * lam_c + floors[0][1][None, :],
                            floors[1][0][None, :] * lam_c + floors[1][1][None, :])
    hard = np.nonzero((floor_near < vals).any(axis=0))[0]
    need_c = np.maximum(vals, 0.0)
    if hard.size:
        lam_h, vals_h = _kinks([(sl[hard], c0[hard]) for sl, c0 in tangents + floors])
        need_h = np.maximum(vals_h, 0.0)
    G = need_c.max(axis=0)
    if hard.size:
        G[hard] = need_h.max(axis=0)
    cols = np.arange(hard.size)
    allc = np.arange(K)

    def deficits(e):
        """The largest shortfall of the polygon below the minorant's kinks in each cell and
        the position of that kink."""
        dc = need_c - ((1.0 - lam_c) * e[None, :-1] + lam_c * e[None, 1:])
        if dc.shape[0] == 1:
            d, lam = dc[0], lam_c[0]
        else:
            w = np.argmax(dc, axis=0)
            d, lam = dc[w, allc], lam_c[w, allc]
        if hard.size:
            dh = need_h - ((1.0 - lam_h) * e[None, hard] + lam_h * e[None, hard + 1])
            w = np.argmax(dh, axis=0)
            d[hard] = dh[w, cols]
            lam = lam.copy()
            lam[hard] = lam_h[w, cols]
        return d, lam
    # Knot floors. Hard: the line a + b x (a lower bound on the curve; at x = 1 it matches the
    # other half's floor, which keeps the kink at x = 1 fixable), always feasible since V >= line.
    # Soft: max(c, a + b x), whose use avoids a defective measure (mass lost per step compounds
    # over the compositions); where its kink inside a cell makes it infeasible, the hard floor
    # takes over for that cell's knots only.
    line = a + b * x
    cap_hard = np.maximum(f - line, 0.0)
    cap = np.minimum(np.maximum(f - np.maximum(line, c), 0.0), cap_hard)
    if flat_end:
        cap[K] = cap_hard[K] = max(f[K] - inf_true, 0.0)          # last knot on F(inf)
    tol = 64 * 2.0 ** -53 * (np.abs(f[:-1]) + np.abs(f[1:]))
    for attempt in range(2):
        e = np.zeros(K + 1)
        e[:-1] = G
        e[1:] = np.maximum(e[1:], G)
        if flat_end:
            e[K] = cap[K]
        e = np.minimum(e, cap)
        # a knot held by its floor leaves a deficit at some kink of its cell: lower the other
        # knot of the cell (lowering never breaks a constraint)
        for _ in range(200):
            d, lam = deficits(e)
            # deficits at rounding level of the curve's values are not deficits
            bad = np.nonzero(d > tol)[0]
            if bad.size == 0:
                break
            lb = lam[bad]
            d = d[bad] * (1.0 + 1e-12)
            # a kink near the far end of its cell (a pile of mass just below a grid point whose
            # knot is on the curve's floor: small sigma) is fixed by the far knot going below
            # its soft floor to the hard one (d / lam, a defect of about d), not by the near
            # knot going down by d / (1 - lam), which can be the whole curve
            need = d / np.maximum(lb, 1e-300)
            far = ((lb > FAR_KINK) & (cap[bad + 1] - e[bad + 1] < need)
                   & (cap_hard[bad + 1] - e[bad + 1] >= need))
            if far.any():
                fb = bad[far]
                np.maximum.at(e, fb + 1, e[fb + 1] + need[far])
                cap[fb + 1] = np.maximum(cap[fb + 1], e[fb + 1])
                bad, lb, d = bad[~far], lb[~far], d[~far]
            up_l = np.maximum(np.minimum(cap[bad] - e[bad], d / np.maximum(1.0 - lb, 1e-300)),
                              0.0)
            np.maximum.at(e, bad, e[bad] + up_l)
            rest = d - (1.0 - lb) * up_l
            up_r = np.where(rest > 0, rest / np.maximum(lb, 1e-300), 0.0)
            np.maximum.at(e, bad + 1, np.minimum(e[bad + 1] + up_r, cap[bad + 1]))
        else:
            if attempt == 1:
                raise ArithmeticError("optimistic discretisation: infeasible cell")
        stuck = np.nonzero(deficits(e)[0] > tol)[0]
        if stuck.size == 0:
            break
        cap[stuck] = cap_hard[stuck]
        cap[stuck + 1] = cap_hard[stuck + 1]
    if flat_end and K > 1:
        e = _end_chord(x, f, e)
    s_lo = s_up - np.diff(e) / dx
    s_lo_full = np.concatenate([s_lo, [end_slope]])
    m_lo = x[1:] * (s_lo_full[1:] - s_lo_full[:-1])
    return Half(f, m_up, f_K, float(s_up[0]) if K else 0.0, e, m_lo,
                float(s_lo[0]) if K else end_slope, end_slope, floor)


def _end_chord(x, f, e):
    """The optimistic knots of a flat-ended half made convex at the far end: the last knot
    sits on F(inf) (e_K = cap_K), often far below the curve's value there, which leaves a
    concave kink at x_{K-1} (a negative mass that used to send the whole part through the
    lower convex hull of :func:`.discretize._hull_masses`). The lower hull's last segment is
    the chord from the last knot to the knot i* of largest slope s* = max_i (g_K - g_i) /
    (x_K - x_i), g = f - e: every knot is above that line, so the knots between i* and K are
    lowered onto it (e only grows: the polygon only goes down, still below the curve; a knot
    already below the rounded chord stays where it is). Knots stay >= g_K = F(inf), the floor."""
    K = f.size - 1
    g = f - e
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (g[K] - g[:-1]) / (x[K] - x[:-1])
    i = int(np.argmax(np.where(np.isnan(s), -np.inf, s)))
    if i >= K - 1:
        return e
    j = np.arange(i + 1, K)
    with np.errstate(invalid="ignore", over="ignore"):
        low = f[j] - (g[K] + s[i] * (x[j] - x[K]))
    e = e.copy()
    # (where x overflows the chord is not a number: those knots stay)
    e[j] = np.where(np.isfinite(low), np.maximum(e[j], low), e[j])
    return e


def _half_from_values(f, h, flat_end: bool, floor: Floor, inf_true: float) -> Half:
    """A half from the curve's values at the knots x_i = e^{i h} only (a privacy profile), in
    place of cell masses. The knots must be values of one convex curve (an actual pair's exact
    profile, rounded down, for the optimistic side): secants of neighbouring cells, extended,
    are then below it on the cell between them and replace the tangents. An end without a
    neighbouring cell gets no line (only the floors): more lowering, still sound."""
    f = np.asarray(f, dtype=float)
    K = f.size - 1
    x = np.exp(h * np.arange(K + 1))
    dx = np.diff(x)
    s_up = np.diff(f) / dx
    big = np.inf
    alpha = np.concatenate([[big], np.maximum(s_up[1:] - s_up[:-1], 0.0)])
    beta_end = np.concatenate([np.maximum(s_up[1:] - s_up[:-1], 0.0), [big]])
    # an infinite rate means "no such line": the min in the kink search ignores it
    alpha = np.where(np.isinf(alpha), 1e300 / np.maximum(dx, 1e-300), alpha)
    beta_end = np.where(np.isinf(beta_end), 1e300 / np.maximum(dx, 1e-300), beta_end)
    end_slope = 0.0 if flat_end else (float(s_up[-1]) if K else 0.0)
    return _half_core(x, dx, f, s_up, float(f[-1]), alpha, beta_end, flat_end, floor, inf_true,
                      end_slope)
