"""Certified global maximisation behind :func:`dpamp.amplification.bernoulli.exact` for d = 1
(Imola & Chaudhuri 2021, Thms 1, 3; Alg. 2).

For d = 1, Post_{alpha,k}(epsilon) = max G(x, y) / (alpha - 1) over the feasible set

    S = {(x, y) in [0,1]^2 : M1(x, y) <= e^E, M2(x, y) <= e^E},   E = (alpha - 1) epsilon,

with P_x = x 1[c] + (1-x) 1[1-c], M1 = e^{(alpha-1) R_alpha(P_x || P_y)}, M2 = M1 with x <-> y,
and G = log F, F the Rényi moment of Bern_k(P_x) against Bern_k(P_y). F, M1 and M2 are jointly
convex (perspectives of u -> u^alpha composed with linear maps), so maximising F over S is *not*
a convex program (errata): a local optimum is only a lower bound. This module runs a
branch-and-bound over boxes whose every bound is a proof:

* propagation: each term of M1 and M2 is <= e^E on S, which bounds y by a monotone function of x
  and vice versa (e.g. x^a y^(1-a) <= e^E gives y >= exp((a log x0 - E)/(a-1)) on the box); the
  box shrinks to one holding all its feasible points (this resolves the cusps of S at the
  edges of the square);
* infeasible boxes: R_alpha(Ber(x) || Ber(y)) and its reverse both grow with |x - y| (convex in
  each argument, 0 on the diagonal), so on a box off the diagonal both are smallest at its
  corner nearest the diagonal;
* tangent cuts: convexity of M_m gives M_m(z) >= M_m(z0) (1 + grad log M_m(z0) . (z - z0)), so
  every feasible z satisfies the linear inequality grad H_m(z0) . (z - z0) <= expm1(E - H_m(z0))
  (H_m = log M_m), widened by the rounding errors of H_m and of its gradient;
* stage 1 (interpolation): F(sum l_i v_i) <= sum l_i F(v_i) over the box's corners v_i; the
  linear program "max sum l_i F(v_i) subject to the two cuts at the box centre" is bounded by
  its Lagrange dual, max_i (F_i - mu . c_i) + mu . r for any mu >= 0 (candidates: origin,
  pairwise and triple breakpoints, which include the dual optimum);
* stage 2 (polygon), for boxes stage 1 leaves open: the box cut by tangent planes at its centre
  and at points near both edges of the feasible band around the diagonal is a convex polygon,
  and the convex F attains its maximum over it at a vertex; the vertices (edge segments that
  satisfy all cuts, pairwise crossings of cut lines inside the box) are enumerated with
  tolerances that only ever add points, and nearly parallel cuts are dropped (a larger polygon)
  or shown not to cross inside the box. This resolves the thin band of small epsilon;
* caps: G <= (alpha - 1) min(epsilon, k r_alpha(c)) on S (post-processing, Imola & Chaudhuri 2021,
Thm 5);
* lower bound: the best G at a point proven feasible (the Thm 4 pair of eqs. 3-4, and box
  corners that satisfy both constraints after rounding);
* symmetry: (x, y) -> (1-x, 1-y) relabels the two corners, so x <= 1/2 loses nothing.

A box is discarded once its bound is within the tolerance of the best feasible value; the
certified upper bound is the largest bound of any discarded or leftover box. If the budget runs
out the result is still a proven bracket, only wider than asked. All instances (pairs epsilon,
alpha) share one batch, each with its own budget, so results do not depend on the batch.

The bounds on one box are computed in :mod:`dpamp.amplification.bernoulli._d1_boxes`; this
module runs the search (:func:`certify_d1`).

For d > 1, :func:`dpamp.amplification.bernoulli._local_search.local_search` gives a proven
*lower* bound (see its docstring); the upper end is proven by
:mod:`dpamp.amplification.bernoulli._support_search`.
"""
from __future__ import annotations

import numpy as np

from ._d1_boxes import _dual_bound, _polygon_bound, _tighten
from ._moments import _constraints, _grad_h, _objective

#: initial grid of squares over [0, 1/2] x [0, 1], each cut into two triangles
_NX = 8


def _split(lo, hi):
    """Split point of [lo, hi] inside [0, 1]: geometric near an edge the interval does not
    touch (so cusps of S at the edges are resolved in O(log) steps), else the midpoint."""
    mid = 0.5 * (lo + hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        geo0 = np.sqrt(lo * hi)
        geo1 = 1.0 - np.sqrt((1.0 - lo) * (1.0 - hi))
    near0 = (lo > 0) & (hi > 2.0 * lo) & (hi <= 0.5)
    near1 = (hi < 1) & ((1.0 - lo) > 2.0 * (1.0 - hi)) & (lo >= 0.5)
    return np.where(near0, geo0, np.where(near1, geo1, mid))


def _rel_width(lo, hi):
    """Width of [lo, hi] relative to its distance from the far side of the nearest edge."""
    return (hi - lo) / np.maximum(np.minimum(hi, 1.0 - lo), 1e-300)


def certify_d1(eps, alpha, c, k, best0, cap, rtol, atol, max_cells, max_levels=400):
    """Branch-and-bound for d = 1 over a batch of instances (1-D arrays ``eps``, ``alpha``;
    finite, eps > 0, alpha > 1, 0 < c < 1/2). ``best0``: a proven-feasible objective value per
    instance (log-moment units); ``cap``: a proven upper bound on the maximum (same units).
    Returns (best, upper, certified) per instance, in log-moment units: best = a value attained
    at a proven-feasible point, upper >= the true maximum, certified = upper - best within
    tolerance."""
    n_inst = eps.size
    E = (alpha - 1.0) * eps
    # feasibility thresholds, widened/narrowed for the rounding of the product (alpha-1) eps
    e_hi = E * (1.0 + 4e-16)
    e_lo = E * (1.0 - 4e-16)
    best = best0.astype(float).copy()
    pruned_up = np.full(n_inst, -np.inf)
    leftover = np.full(n_inst, -np.inf)
    tol_abs = (alpha - 1.0) * atol
    inst, x0, x1, y0, y1 = _initial_boxes(n_inst)
    processed = np.zeros(n_inst, dtype=np.int64)

    for level in range(max_levels):
        if inst.size == 0:
            break
        inst, x0, x1, y0, y1, a = _feasible_boxes(inst, x0, x1, y0, y1, alpha, e_hi)
        if inst.size == 0:
            break
        processed += np.bincount(inst, minlength=n_inst)
        tx, ty, gup = _vertex_values(inst, x0, x1, y0, y1, a, c, k, e_lo, best)
        up, gone = _dual_lp_bound(inst, x0, x1, y0, y1, a, tx, ty, gup, e_hi, cap)
        tol = tol_abs[inst] + rtol * np.maximum(best[inst], 0.0)
        # second stage, only where the first did not settle the box
        open_ = ~gone & (up > best[inst] + tol)
        if open_.any():
            _polygon_stage(open_, inst, x0, x1, y0, y1, a, eps, e_hi, e_lo, c, k, up, gone,
                           best)
            # (the incumbent may have risen)
            tol = tol_abs[inst] + rtol * np.maximum(best[inst], 0.0)
        done = ~gone & (up <= best[inst] + tol)
        if done.any():
            np.maximum.at(pruned_up, inst[done], up[done])
        live = ~(gone | done)
        inst, x0, x1, y0, y1, up = (v[live] for v in (inst, x0, x1, y0, y1, up))
        if inst.size == 0:
            break
        # --- budget: an instance that has used its cells stops with a proven bracket -----
        count = np.bincount(inst, minlength=n_inst)
        over = (processed + 2 * count > max_cells) | (level == max_levels - 1)
        stop = over[inst]
        if stop.any():
            np.maximum.at(leftover, inst[stop], up[stop])
            inst, x0, x1, y0, y1 = (v[~stop] for v in (inst, x0, x1, y0, y1))
            if inst.size == 0:
                break
        inst, x0, x1, y0, y1 = _split_boxes(inst, x0, x1, y0, y1)
    upper = np.maximum(np.maximum(pruned_up, leftover), best)
    certified = ~np.isfinite(leftover)
    return best, upper, certified


def _initial_boxes(n_inst: int) -> tuple:
    """(inst, x0, x1, y0, y1): the boxes of the initial grid (``_NX`` by 2 ``_NX`` squares
    over [0, 1/2] x [0, 1]) for every instance."""
    g = np.linspace(0.0, 0.5, _NX + 1)
    h = np.linspace(0.0, 1.0, 2 * _NX + 1)
    X0, Y0 = (v.ravel() for v in np.meshgrid(g[:-1], h[:-1], indexing="ij"))
    X1, Y1 = (v.ravel() for v in np.meshgrid(g[1:], h[1:], indexing="ij"))
    inst = np.repeat(np.arange(n_inst), X0.size)
    x0, x1, y0, y1 = (np.tile(v, n_inst) for v in (X0, X1, Y0, Y1))
    return inst, x0, x1, y0, y1


def _feasible_boxes(inst, x0, x1, y0, y1, alpha, e_hi) -> tuple:
    """(inst, x0, x1, y0, y1, a): each box shrunk to one that still holds all its feasible
    points (propagation), without the boxes proven to hold none: empty, or off the diagonal
    with a constraint above e^E at the corner nearest it (its minimum over the box)."""
    a = alpha[inst]
    x0, x1, y0, y1 = _tighten(x0, x1, y0, y1, a, e_hi[inst])
    infeasible = (x0 > x1) | (y0 > y1)
    below, above = x0 >= y1, x1 <= y0
    px = np.where(below, x0, np.where(above, x1, 0.5))
    py = np.where(below, y1, np.where(above, y0, 0.5))
    h1, e1, h2, e2 = _constraints(px, py, a)
    infeasible |= (below | above) & ((h1 - e1 > e_hi[inst]) | (h2 - e2 > e_hi[inst]))
    keep = ~infeasible
    return tuple(v[keep] for v in (inst, x0, x1, y0, y1, a))


def _vertex_values(inst, x0, x1, y0, y1, a, c, k, e_lo, best) -> tuple:
    """(tx, ty, gup): the boxes' corners ((m, 4) each) and the objective there, rounded up;
    the corners proven feasible raise the incumbent ``best`` (in place)."""
    tx = np.stack([x0, x1, x1, x0], 1)
    ty = np.stack([y0, y0, y1, y1], 1)
    va = np.repeat(a, 4)
    vi = np.repeat(inst, 4)
    gv, ge = _objective(tx.ravel(), ty.ravel(), va, c, k)
    f1, fe1, f2, fe2 = _constraints(tx.ravel(), ty.ravel(), va)
    ok = (f1 + fe1 <= e_lo[vi]) & (f2 + fe2 <= e_lo[vi])
    if ok.any():
        np.maximum.at(best, vi[ok], gv[ok] - ge[ok])
    return tx, ty, (gv + ge).reshape(inst.size, 4)


def _dual_lp_bound(inst, x0, x1, y0, y1, a, tx, ty, gup, e_hi, cap) -> tuple:
    """(up, gone): stage 1's bound on each box (tangent cuts at its centre, the Lagrange dual
    of the interpolation LP over its corners, the cap) and the boxes it shows to hold no
    feasible point."""
    gmax = gup.max(axis=1)
    zx, zy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
    c1, ce1, c2, ce2 = _constraints(zx, zy, a)
    g1x, g1y, d1x, d1y = _grad_h(zx, zy, a)
    g2y, g2x, d2y, d2x = _grad_h(zy, zx, a)       # H2(x, y) = H(y, x)
    rx, ry = 0.5 * (x1 - x0), 0.5 * (y1 - y0)
    with np.errstate(over="ignore", invalid="ignore"):
        r1 = np.expm1(np.minimum(e_hi[inst] - (c1 - ce1), 700.0))
        r2 = np.expm1(np.minimum(e_hi[inst] - (c2 - ce2), 700.0))
        r1 = r1 + np.abs(r1) * 1e-14 + d1x * rx + d1y * ry
        r2 = r2 + np.abs(r2) * 1e-14 + d2x * rx + d2y * ry
        A = g1x[:, None] * (tx - zx[:, None]) + g1y[:, None] * (ty - zy[:, None])
        B = g2x[:, None] * (tx - zx[:, None]) + g2y[:, None] * (ty - zy[:, None])
    usable = (np.isfinite(A).all(1) & np.isfinite(B).all(1) & np.isfinite(r1)
              & np.isfinite(r2))
    F = np.exp(gup - gmax[:, None])
    phi, empty = _dual_bound(F, np.where(usable[:, None], A, 0.0),
                             np.where(usable[:, None], B, 0.0),
                             np.where(usable, r1, 1.0), np.where(usable, r2, 1.0))
    with np.errstate(divide="ignore"):
        lp = gmax + np.log(np.maximum(phi, 0.0))
    lp = np.where(usable, lp, gmax)
    up = np.minimum(np.minimum(gmax, lp), cap[inst])
    gone = usable & (empty | (phi <= 0.0))
    return up, gone


def _polygon_stage(sel, inst, x0, x1, y0, y1, a, eps, e_hi, e_lo, c, k, up, gone, best):
    """Stage 2 on the boxes ``sel``: the vertices of each box cut by tangent planes (resolves
    the thin band of small epsilon) lower ``up`` and may show it empty (``gone``), and its
    near-boundary points proven feasible raise the incumbent ``best`` (all in place)."""
    pb, pe, cx, cy = _polygon_bound(x0[sel], x1[sel], y0[sel], y1[sel], a[sel],
                                    eps[inst[sel]], e_hi[inst[sel]], c, k)
    up[sel] = np.minimum(up[sel], pb)
    gone[sel] |= pe
    ci = np.repeat(inst[sel], cy.shape[1])
    ca = np.repeat(a[sel], cy.shape[1])
    cxr = np.repeat(cx, cy.shape[1])
    f1, fe1, f2, fe2 = _constraints(cxr, cy.ravel(), ca)
    okc = (f1 + fe1 <= e_lo[ci]) & (f2 + fe2 <= e_lo[ci])
    if okc.any():
        gc, gce = _objective(cxr[okc], cy.ravel()[okc], ca[okc], c, k)
        np.maximum.at(best, ci[okc], gc - gce)


def _split_boxes(inst, x0, x1, y0, y1) -> tuple:
    """Each box split in two along its relatively wider side (at :func:`_split`)."""
    split_x = _rel_width(x0, x1) >= _rel_width(y0, y1)
    sx, sy = _split(x0, x1), _split(y0, y1)
    inst = np.concatenate([inst, inst])
    x0, x1 = (np.concatenate([x0, np.where(split_x, sx, x0)]),
              np.concatenate([np.where(split_x, sx, x1), x1]))
    y0, y1 = (np.concatenate([y0, np.where(split_x, y0, sy)]),
              np.concatenate([np.where(split_x, y1, sy), y1]))
    return inst, x0, x1, y0, y1
