"""Certified global maximisation behind :func:`dpamp.bernoulli.exact` (001 Thms 1, 3; Alg. 2).

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
* caps: G <= (alpha - 1) min(epsilon, k r_alpha(c)) on S (post-processing, 001 Thm 5);
* lower bound: the best G at a point proven feasible (the Thm 4 pair of eqs. 3-4, and box
  corners that satisfy both constraints after rounding);
* symmetry: (x, y) -> (1-x, 1-y) relabels the two corners, so x <= 1/2 loses nothing.

A box is discarded once its bound is within the tolerance of the best feasible value; the
certified upper bound is the largest bound of any discarded or leftover box. If the budget runs
out the result is still a proven bracket, only wider than asked. All instances (pairs epsilon,
alpha) share one batch, each with its own budget, so results do not depend on the batch.

For d > 1, :func:`local_search` gives a proven *lower* bound (see its docstring); the upper end
is proven by :mod:`dpamp._bernoulli_global`.
"""
from __future__ import annotations

import numpy as np

#: initial grid of squares over [0, 1/2] x [0, 1], each cut into two triangles
_NX = 8


def _logs(v: np.ndarray):
    with np.errstate(divide="ignore"):
        return np.log(v), np.log1p(-v)


def _objective(x, y, alpha, c, k):
    """G(x, y) with its rounding-error bound (001 Alg. 2 objective, errata form)."""
    from .bernoulli import _moment_d1
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    return _moment_d1(lx, l1x, ly, l1y, x - y, alpha, c, k)


def _constraints(x, y, alpha):
    """H1 = (alpha-1) R_alpha(P_x || P_y), H2 = (alpha-1) R_alpha(P_y || P_x), error bounds."""
    from .bernoulli import _PAIR_TABLES, _moment_d1
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    h1, e1 = _moment_d1(lx, l1x, ly, l1y, x - y, alpha, 0.0, 1, tables=_PAIR_TABLES)
    h2, e2 = _moment_d1(ly, l1y, lx, l1x, y - x, alpha, 0.0, 1, tables=_PAIR_TABLES)
    return h1, e1, h2, e2


def _grad_h(x, y, alpha):
    """Gradient of H(x, y) = log(x^a y^(1-a) + (1-x)^a (1-y)^(1-a)) at interior points, with an
    absolute error bound per component: dH/dx = a (w/x - (1-w)/(1-x)),
    dH/dy = (1-a) (w/y - (1-w)/(1-y)), w = x^a y^(1-a) / (sum) (a softmax weight)."""
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    t1 = alpha * lx + (1.0 - alpha) * ly
    t2 = alpha * l1x + (1.0 - alpha) * l1y
    w = 1.0 / (1.0 + np.exp(np.clip(t2 - t1, -700.0, 700.0)))
    w2 = 1.0 / (1.0 + np.exp(np.clip(t1 - t2, -700.0, 700.0)))
    ux, vx = w / x, w2 / (1.0 - x)
    uy, vy = w / y, w2 / (1.0 - y)
    gx = alpha * (ux - vx)
    gy = (1.0 - alpha) * (uy - vy)
    # t1, t2 carry a few ulps of the magnitudes they are built from; through the softmax
    # that is the relative error of w, and a few more ulps for the divisions
    rel = 1e-15 * (8.0 + alpha * (np.abs(lx) + np.abs(l1x))
                   + (alpha - 1.0) * (np.abs(ly) + np.abs(l1y)))
    ex = alpha * (ux + vx) * rel
    ey = (alpha - 1.0) * (uy + vy) * rel
    return gx, gy, ex, ey


def _tighten(x0, x1, y0, y1, alpha, E):
    """Shrink the box [x0,x1] x [y0,y1] to a box that still holds every feasible point.

    Each of the two terms of M1 = x^a y^(1-a) + (1-x)^a (1-y)^(1-a) and of M2 (x <-> y) is at
    most e^E on S, and each such inequality bounds one coordinate by a monotone function of the
    other, e.g. x^a y^(1-a) <= e^E  =>  y >= exp((a log x - E)/(a-1)) >= exp((a log x0 - E)/(a-1)).
    These capture the cusps of S at the corners of the square, where the constraints blow up.
    Two rounds of propagation; results rounded outwards."""
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for _ in range(2):
            l_x0, l_1x0 = _logs(x0)
            l_x1, l_1x1 = _logs(x1)
            l_y0, l_1y0 = _logs(y0)
            l_y1, l_1y1 = _logs(y1)
            # lower bounds: exp(v) rounded down, 1 - exp(v) = -expm1(v) rounded down
            def dn(v):
                return np.where(np.isfinite(v), np.exp(v) * (1.0 - 4e-14 * (1.0 + np.abs(v))),
                                np.exp(v))

            def one_minus_dn(v):
                return np.where(np.isfinite(v), -np.expm1(v) * (1.0 - 4e-14 * (1.0 + np.abs(v)))
                                - 4e-16 * np.exp(v), -np.expm1(v))

            def up(v):
                return np.where(np.isfinite(v), np.exp(v) * (1.0 + 4e-14 * (1.0 + np.abs(v))),
                                np.exp(v))

            def one_minus_up(v):
                return np.where(np.isfinite(v), -np.expm1(v) * (1.0 + 4e-14 * (1.0 + np.abs(v)))
                                + 4e-16 * np.exp(v), -np.expm1(v))

            y_lo = np.maximum.reduce([y0, dn((alpha * l_x0 - E) / am1),
                                      one_minus_up((am1 * l_1x0 + E) / alpha)])
            y_hi = np.minimum.reduce([y1, one_minus_dn((alpha * l_1x1 - E) / am1),
                                      up((am1 * l_x1 + E) / alpha)])
            x_lo = np.maximum.reduce([x0, dn((alpha * l_y0 - E) / am1),
                                      one_minus_up((am1 * l_1y0 + E) / alpha)])
            x_hi = np.minimum.reduce([x1, one_minus_dn((alpha * l_1y1 - E) / am1),
                                      up((am1 * l_y1 + E) / alpha)])
            x0, x1, y0, y1 = (np.nan_to_num(v, nan=w) for v, w in
                              ((x_lo, x0), (x_hi, x1), (y_lo, y0), (y_hi, y1)))
    return x0, x1, y0, y1


def _dual_bound(F, A, B, ra, rb):
    """Upper bound on max sum_i l_i F_i over the simplex with sum l_i A_i <= ra,
    sum l_i B_i <= rb (arrays (m, V) and (m,)), by weak duality
    phi(mu) = max_i (F_i - mu_a A_i - mu_b B_i) + mu_a ra + mu_b rb for mu >= 0, minimised over
    candidate mu (origin, pairwise breakpoints on each axis, triple breakpoints). Returns
    (bound, empty) where empty marks cuts that exclude every vertex (no feasible point)."""
    m, nv = F.shape
    cands = [np.zeros((m, 2))]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(nv):
            for j in range(i + 1, nv):
                da, db, df = A[:, i] - A[:, j], B[:, i] - B[:, j], F[:, i] - F[:, j]
                cands.append(np.stack([df / da, np.zeros(m)], axis=1))
                cands.append(np.stack([np.zeros(m), df / db], axis=1))
                for l in range(j + 1, nv):
                    da2, db2, df2 = A[:, i] - A[:, l], B[:, i] - B[:, l], F[:, i] - F[:, l]
                    det = da * db2 - db * da2
                    cands.append(np.stack([(df * db2 - db * df2) / det,
                                           (da * df2 - df * da2) / det], axis=1))
    mu = np.stack(cands, axis=1)                       # (m, C, 2)
    mu = np.where(np.isfinite(mu) & (mu >= 0) & (mu < 1e200), mu, np.nan)
    mu = np.where(np.isnan(mu).any(axis=2, keepdims=True), 0.0, mu)
    ma, mb = mu[..., 0:1], mu[..., 1:2]
    with np.errstate(over="ignore", invalid="ignore"):
        vals = F[:, None, :] - ma * A[:, None, :] - mb * B[:, None, :]
        phi = vals.max(axis=2) + ma[..., 0] * ra[:, None] + mb[..., 0] * rb[:, None]
        # rounding: a few ulps of every magnitude in the sum
        mag = (np.abs(F).max(1)[:, None]
               + ma[..., 0] * (np.abs(A).max(1)[:, None] + np.abs(ra)[:, None])
               + mb[..., 0] * (np.abs(B).max(1)[:, None] + np.abs(rb)[:, None]))
        phi = phi + 1e-14 * (1.0 + mag)
    # a candidate whose evaluation overflowed proves nothing; mu = 0 always evaluates
    phi = np.where(np.isfinite(phi), phi, np.inf)
    empty = (A.min(axis=1) > ra) | (B.min(axis=1) > rb)
    return phi.min(axis=1), empty


def _cut(zx, zy, x0, x1, y0, y1, alpha, e_hi, which):
    """Linear inequality a x + b y <= cc satisfied by every feasible point: the tangent plane of
    the convex moment M_which (1: M1, 2: M2) at z0 = (zx, zy) (see the module docstring),
    widened by the rounding errors of H, of its gradient (times the distance from z0 to the
    box) and by a relative margin that covers the rounding of the polygon clipping below.
    Returns (a, b, cc) with cc = +inf where the cut is unusable."""
    c1, ce1, c2, ce2 = _constraints(zx, zy, alpha)
    if which == 1:
        gx, gy, dx, dy = _grad_h(zx, zy, alpha)
        h, he = c1, ce1
    else:
        gy, gx, dy, dx = _grad_h(zy, zx, alpha)       # H2(x, y) = H(y, x)
        h, he = c2, ce2
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.expm1(np.minimum(e_hi - (h - he), 700.0))
        ext = (np.maximum(np.abs(x0 - zx), np.abs(x1 - zx)) * dx
               + np.maximum(np.abs(y0 - zy), np.abs(y1 - zy)) * dy)
        cc = r + np.abs(r) * 1e-14 + ext + gx * zx + gy * zy
        cc = cc + 1e-11 * (np.abs(cc) + np.abs(gx) + np.abs(gy))
    ok = np.isfinite(gx) & np.isfinite(gy) & np.isfinite(cc)
    return np.where(ok, gx, 0.0), np.where(ok, gy, 0.0), np.where(ok, cc, np.inf)


def _band_point(xc, alpha, e_mid, which, side):
    """A point (xc, y) near the boundary of {H_which(xc, .) <= E} below (side=-1) or above
    (side=+1) the diagonal, by a few Newton steps from the quadratic approximation
    (alpha-1) D_alpha ~ alpha (alpha-1) (x-y)^2 / (2 y (1-y)). Only its quality matters: a
    tangent plane anywhere gives a valid cut."""
    am1 = alpha - 1.0
    with np.errstate(all="ignore"):
        v = np.sqrt(2.0 * e_mid * xc * (1.0 - xc) / (alpha * am1))
        y = np.clip(xc + side * v, 1e-12, 1.0 - 1e-12)
        for _ in range(4):
            h1, _e1, h2, _e2 = _constraints(xc, y, alpha)
            if which == 1:
                h = h1
                gy = _grad_h(xc, y, alpha)[1]
            else:
                h = h2
                gy = _grad_h(y, xc, alpha)[0]
            step = (h - e_mid) / gy
            y_new = y - np.where(np.isfinite(step), step, 0.0)
            y = np.clip(np.where(side * (y_new - xc) > 0, y_new, 0.5 * (y + xc)),
                        1e-12, 1.0 - 1e-12)
    return y


def _polygon_candidates(x0, x1, y0, y1, a, b, cc):
    """Points whose convex hull contains the box [x0,x1] x [y0,y1] cut by the halfplanes
    a_i x + b_i y <= cc_i (arrays (m, C)): on each box edge the endpoints of the sub-segment
    satisfying all cuts (an interval in the edge parameter, widened), and the pairwise
    intersections of cut lines inside the box that satisfy the other cuts (with tolerance).
    Nearly parallel cut pairs would make the intersections ill-conditioned, so the later cut
    of such a pair is dropped first (fewer cuts, a larger polygon: still valid).
    Returns (px, py, valid) of shape (m, P)."""
    m, nc = a.shape
    a, b, cc = a.copy(), b.copy(), cc.copy()
    norm = np.abs(a) + np.abs(b)
    corners_x = np.stack([x0, x1, x1, x0], 1)
    corners_y = np.stack([y0, y0, y1, y1], 1)
    skip = np.zeros((m, nc, nc), dtype=bool)
    with np.errstate(all="ignore"):
        for i in range(nc):
            for j in range(i + 1, nc):
                det = a[:, i] * b[:, j] - a[:, j] * b[:, i]
                live = np.isfinite(cc[:, i]) & np.isfinite(cc[:, j])
                par = live & (np.abs(det) <= 1e-3 * norm[:, i] * norm[:, j])
                same = a[:, i] * a[:, j] + b[:, i] * b[:, j] > 0
                # opposite normals: a strip; its two lines cannot cross inside the box if the
                # strip has positive width at all four corners (width is linear along it)
                ni = np.hypot(a[:, i], b[:, i])[:, None]
                nj = np.hypot(a[:, j], b[:, j])[:, None]
                width = (-(a[:, i, None] * corners_x + b[:, i, None] * corners_y
                           - cc[:, i, None]) / ni
                         - (a[:, j, None] * corners_x + b[:, j, None] * corners_y
                            - cc[:, j, None]) / nj)
                apart = (width > 1e-9 * (np.abs(cc[:, i, None]) / ni
                                         + np.abs(cc[:, j, None]) / nj + 1.0)).all(axis=1)
                skip[:, i, j] = par & ~same & apart
                # otherwise an ill-conditioned crossing: drop one cut (a larger polygon, still
                # valid) - of two nearly parallel cuts facing the same way, the looser one
                zxm, zym = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
                off_i = (cc[:, i] - a[:, i] * zxm - b[:, i] * zym) / ni[:, 0]
                off_j = (cc[:, j] - a[:, j] * zxm - b[:, j] * zym) / nj[:, 0]
                drop = par & ~(~same & apart)
                drop_i = drop & same & (off_i > off_j)
                drop_j = drop & ~drop_i
                cc[:, i] = np.where(drop_i, np.inf, cc[:, i])
                cc[:, j] = np.where(drop_j, np.inf, cc[:, j])
    on = np.isfinite(cc)
    a, b = np.where(on, a, 0.0), np.where(on, b, 0.0)
    pts_x, pts_y, valid = [], [], []
    edges = [(x0, y0, x1 - x0, 0.0 * x0), (x1, y0, 0.0 * x0, y1 - y0),
             (x0, y1, x1 - x0, 0.0 * x0), (x0, y0, 0.0 * x0, y1 - y0)]
    with np.errstate(all="ignore"):
        for px0, py0, dx, dy in edges:
            s = a * dx[:, None] + b * dy[:, None]
            rhs = cc - (a * px0[:, None] + b * py0[:, None])
            tiny = np.abs(s) <= 1e-13 * norm * (np.abs(dx) + np.abs(dy))[:, None]
            t_up = np.where(on & (s > 0) & ~tiny, rhs / s, np.inf)
            t_dn = np.where(on & (s < 0) & ~tiny, rhs / s, -np.inf)
            # a cut nearly constant along the edge excludes all of it only if violated at
            # both ends whatever the tiny slope
            dead = (on & tiny & (rhs < -np.abs(s))).any(axis=1)
            t_hi = np.minimum(1.0, t_up.min(axis=1))
            t_lo = np.maximum(0.0, t_dn.max(axis=1))
            t_hi = np.minimum(1.0, t_hi + 1e-9)
            t_lo = np.maximum(0.0, t_lo - 1e-9)
            ok = ~dead & (t_lo <= t_hi)
            for t in (t_lo, t_hi):
                # one coordinate is the edge's own (exact); the other moves along the edge
                pts_x.append(np.where(dx == 0, px0, np.minimum(px0 + t * dx, x1)))
                pts_y.append(np.where(dy == 0, py0, np.minimum(py0 + t * dy, y1)))
                valid.append(ok)
        tol_x = 1e-9 * (x1 - x0) + 1e-15
        tol_y = 1e-9 * (y1 - y0) + 1e-15
        for i in range(nc):
            for j in range(i + 1, nc):
                det = a[:, i] * b[:, j] - a[:, j] * b[:, i]
                both = on[:, i] & on[:, j] & ~skip[:, i, j]
                ix = (cc[:, i] * b[:, j] - cc[:, j] * b[:, i]) / det
                iy = (a[:, i] * cc[:, j] - a[:, j] * cc[:, i]) / det
                ok = (both & np.isfinite(ix) & np.isfinite(iy)
                      & (ix >= x0 - tol_x) & (ix <= x1 + tol_x)
                      & (iy >= y0 - tol_y) & (iy <= y1 + tol_y))
                ix, iy = np.clip(ix, x0, x1), np.clip(iy, y0, y1)
                viol = a * ix[:, None] + b * iy[:, None] - cc
                slack = 1e-9 * (np.abs(cc) + norm)
                ok &= ~((viol > slack) & on).any(axis=1)
                pts_x.append(np.where(ok, ix, x0))
                pts_y.append(np.where(ok, iy, y0))
                valid.append(ok)
    return np.stack(pts_x, 1), np.stack(pts_y, 1), np.stack(valid, 1)


def _polygon_bound(x0, x1, y0, y1, alpha, eps, e_hi, c, k):
    """Upper bound on G over the feasible points of each box: F is convex, so its maximum over
    the polygon (box cut by tangent planes of both constraints, at the centre and at points near
    the two edges of the feasible band around the diagonal) is at one of the polygon's vertices.
    Tighter than interpolating from the box corners when the feasible set is a thin band.
    Returns (bound, empty); bound = inf where nothing could be shown."""
    zx, zy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
    cuts = [_cut(zx, zy, x0, x1, y0, y1, alpha, e_hi, 1),
            _cut(zx, zy, x0, x1, y0, y1, alpha, e_hi, 2)]
    e_mid = (alpha - 1.0) * eps
    xc = np.clip(zx, 1e-12, 1.0 - 1e-12)
    band = []
    for which in (1, 2):
        for side in (-1.0, 1.0):
            yb = _band_point(xc, alpha, e_mid, which, side)
            band.append(yb)
            cuts.append(_cut(xc, yb, x0, x1, y0, y1, alpha, e_hi, which))
            cuts.append(_cut(xc, yb, x0, x1, y0, y1, alpha, e_hi, 3 - which))
    a = np.stack([q[0] for q in cuts], 1)
    b = np.stack([q[1] for q in cuts], 1)
    cc = np.stack([q[2] for q in cuts], 1)
    px, py, valid = _polygon_candidates(x0, x1, y0, y1, a, b, cc)
    m, npt = px.shape
    g, ge = _objective(px.ravel(), py.ravel(), np.repeat(alpha, npt), c, k)
    vals = np.where(valid, (g + ge).reshape(m, npt), -np.inf)
    bound = vals.max(axis=1)
    empty = ~valid.any(axis=1)
    # the band points, pulled a hair towards the diagonal, are good incumbent candidates
    cand_y = np.stack([xc + (yb - xc) * (1.0 - 1e-9) for yb in band], 1)
    return np.where(np.isnan(bound), np.inf, bound), empty, xc, cand_y


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

    g = np.linspace(0.0, 0.5, _NX + 1)
    h = np.linspace(0.0, 1.0, 2 * _NX + 1)
    X0, Y0 = (v.ravel() for v in np.meshgrid(g[:-1], h[:-1], indexing="ij"))
    X1, Y1 = (v.ravel() for v in np.meshgrid(g[1:], h[1:], indexing="ij"))
    inst = np.repeat(np.arange(n_inst), X0.size)
    x0, x1, y0, y1 = (np.tile(v, n_inst) for v in (X0, X1, Y0, Y1))
    processed = np.zeros(n_inst, dtype=np.int64)

    for level in range(max_levels):
        if inst.size == 0:
            break
        a = alpha[inst]
        # --- shrink each box to one that still holds all its feasible points --------------
        x0, x1, y0, y1 = _tighten(x0, x1, y0, y1, a, e_hi[inst])
        infeasible = (x0 > x1) | (y0 > y1)
        # constraint minimum over the box (at the corner nearest the diagonal) above eps
        below, above = x0 >= y1, x1 <= y0
        px = np.where(below, x0, np.where(above, x1, 0.5))
        py = np.where(below, y1, np.where(above, y0, 0.5))
        h1, e1, h2, e2 = _constraints(px, py, a)
        infeasible |= (below | above) & ((h1 - e1 > e_hi[inst]) | (h2 - e2 > e_hi[inst]))
        keep = ~infeasible
        inst, x0, x1, y0, y1, a = (v[keep] for v in (inst, x0, x1, y0, y1, a))
        m = inst.size
        if m == 0:
            break
        processed += np.bincount(inst, minlength=n_inst)
        # --- vertex values: objective and proven-feasible candidates ----------------------
        tx = np.stack([x0, x1, x1, x0], 1)
        ty = np.stack([y0, y0, y1, y1], 1)
        va = np.repeat(a, 4)
        vi = np.repeat(inst, 4)
        gv, ge = _objective(tx.ravel(), ty.ravel(), va, c, k)
        f1, fe1, f2, fe2 = _constraints(tx.ravel(), ty.ravel(), va)
        ok = (f1 + fe1 <= e_lo[vi]) & (f2 + fe2 <= e_lo[vi])
        if ok.any():
            np.maximum.at(best, vi[ok], gv[ok] - ge[ok])
        gup = (gv + ge).reshape(m, 4)
        gmax = gup.max(axis=1)
        # --- tangent cuts at the centre and the dual LP bound ------------------------------
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
        tol = tol_abs[inst] + rtol * np.maximum(best[inst], 0.0)
        # second stage, only where the first did not settle the box: vertices of the box
        # cut by tangent planes (resolves the thin band of small epsilon)
        open_ = ~gone & (up > best[inst] + tol)
        if open_.any():
            pb, pe, cx, cy = _polygon_bound(x0[open_], x1[open_], y0[open_], y1[open_],
                                            a[open_], eps[inst[open_]], e_hi[inst[open_]],
                                            c, k)
            up[open_] = np.minimum(up[open_], pb)
            gone[open_] |= pe
            # incumbent: near-boundary points proven feasible
            ci = np.repeat(inst[open_], cy.shape[1])
            ca = np.repeat(a[open_], cy.shape[1])
            cxr = np.repeat(cx, cy.shape[1])
            f1, fe1, f2, fe2 = _constraints(cxr, cy.ravel(), ca)
            okc = (f1 + fe1 <= e_lo[ci]) & (f2 + fe2 <= e_lo[ci])
            if okc.any():
                gc, gce = _objective(cxr[okc], cy.ravel()[okc], ca[okc], c, k)
                np.maximum.at(best, ci[okc], gc - gce)
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
        # --- split each live box in two along its relatively wider side -------------------
        split_x = _rel_width(x0, x1) >= _rel_width(y0, y1)
        sx, sy = _split(x0, x1), _split(y0, y1)
        inst = np.concatenate([inst, inst])
        x0, x1 = (np.concatenate([x0, np.where(split_x, sx, x0)]),
                  np.concatenate([np.where(split_x, sx, x1), x1]))
        y0, y1 = (np.concatenate([y0, np.where(split_x, y0, sy)]),
                  np.concatenate([np.where(split_x, y1, sy), y1]))
    upper = np.maximum(np.maximum(pruned_up, leftover), best)
    certified = ~np.isfinite(leftover)
    return best, upper, certified


# --------------------------------------------------------------------------------------------
# d > 1: 001 Alg. 3 on the sufficient statistic, multi-start local search (lower bound only)
# --------------------------------------------------------------------------------------------
def statistic_channel(c: float, d: int, k: int) -> np.ndarray:
    """log Pr[m | corner i] for the sufficient statistic m = (number of ones in each of the d
    coordinates over the k samples) in {0..k}^d, corner i in {0,1}^d (bit 1: theta_l = 1-c):

        Pr[m | i] = prod_l C(k, m_l) theta_l^{m_l} (1 - theta_l)^{k - m_l}.

    Bern_k(P) depends on the samples only through m (the k samples of each coordinate are
    exchangeable given theta), so R_alpha(Bern_k P, Bern_k Q) is the Rényi divergence of the
    pushforwards through this (k+1)^d x 2^d channel (001 Alg. 3 with outcomes merged)."""
    from scipy.special import gammaln
    j = np.arange(k + 1, dtype=float)
    log_binom = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
    lc, l1c = np.log(c), np.log1p(-c)
    one = np.stack([log_binom + j * lc + (k - j) * l1c,      # theta = c
                    log_binom + j * l1c + (k - j) * lc], 1)  # theta = 1 - c
    logw = np.zeros((1, 1))
    for _ in range(d):  # Kronecker product in log space: outcomes x corners
        logw = (logw[:, None, :, None] + one[None, :, None, :]).reshape(
            logw.shape[0] * (k + 1), logw.shape[1] * 2)
    return logw


def _lse(z, axis=-1):
    """log-sum-exp (plain numpy: scipy's wrapper costs more than the sum at these sizes)."""
    m = np.max(z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(z - m), axis=axis))


def log_softmax(v):
    return v - _lse(v)


def _moment_general(lx, ly, logw, alpha):
    """(value, error) of log sum_m ybar_m (xbar_m / ybar_m)^alpha, xbar = W x (logs given)."""
    from .bernoulli import _log_moment
    lxb = _lse(logw + lx[None, :], axis=1)
    lyb = _lse(logw + ly[None, :], axis=1)
    ell = lxb - lyb
    ell_err = 1e-15 * (4.0 + 4.0 * (np.abs(lxb) + np.abs(lyb)) + np.log(lx.size))
    return _log_moment((lyb + 0.0)[None, :], ell[None, :], ell_err[None, :],
                       np.array([alpha]))


def _pair_moment(lx, ly, alpha):
    """(value, error) of log sum_i x_i^alpha y_i^(1-alpha) (the constraint), logs given."""
    from .bernoulli import _log_moment
    with np.errstate(invalid="ignore"):
        ell = lx - ly
    if (np.isneginf(ly) & np.isfinite(lx)).any():
        return np.array([np.inf]), np.array([0.0])
    ell_err = 1e-15 * (4.0 + 4.0 * (np.abs(lx) + np.abs(ly)))
    ell = np.where(np.isfinite(ly), ell, 0.0)
    return _log_moment(ly[None, :], ell[None, :], np.where(np.isfinite(ell_err), ell_err, 0.0)[None, :],
                       np.array([alpha]))


def local_search(eps: float, alpha: float, c: float, d: int, k: int, starts: int,
                 seed: int = 0) -> float:
    """Best objective (log-moment units, rounded down) over pairs of corner distributions found
    by SLSQP from the pair of eqs. 3-4 and ``starts`` random feasible starts; every reported
    pair is re-checked with rounding-error bounds and pulled towards the other until it is
    proven feasible, so the result is a proven lower bound on (alpha-1) Post. A local search
    is not a global maximum (errata): nothing above the result is proven."""
    from scipy.optimize import minimize

    logw = statistic_channel(c, d, k)
    nc = 2 ** d
    E = (alpha - 1.0) * eps

    def split(v):
        return log_softmax(v[:nc]), log_softmax(v[nc:])

    # softmax parameters v = (a, b), x = softmax(a), y = softmax(b); analytic gradients:
    # dG/da_j = alpha (sum_m pi_m post^x_{mj} - x_j), dG/db_j = (1-alpha)(sum_m pi_m
    # post^y_{mj} - y_j), pi = the alpha-tilted outcome weights, post = corner posteriors;
    # for the constraint h1 = log sum_i x_i^a y_i^(1-a): dh1/da = alpha (rho - x),
    # dh1/db = (1-alpha)(rho - y), rho = the tilted corner weights.
    def obj(v):
        lx, ly = split(v)
        lxb = _lse(logw + lx, axis=1)
        lyb = _lse(logw + ly, axis=1)
        z = lyb + alpha * (lxb - lyb)
        g = _lse(z)
        pi = np.exp(z - g)
        post_x = np.exp(logw + lx - lxb[:, None])
        post_y = np.exp(logw + ly - lyb[:, None])
        ga = alpha * (pi @ post_x - np.exp(lx))
        gb = (1.0 - alpha) * (pi @ post_y - np.exp(ly))
        return -g, -np.concatenate([ga, gb])

    def cons(v):
        lx, ly = split(v)
        z1 = ly + alpha * (lx - ly)
        z2 = lx + alpha * (ly - lx)
        h1, h2 = _lse(z1), _lse(z2)
        return np.array([E - h1, E - h2])

    def cons_jac(v):
        lx, ly = split(v)
        z1 = ly + alpha * (lx - ly)
        z2 = lx + alpha * (ly - lx)
        r1, r2 = np.exp(z1 - _lse(z1)), np.exp(z2 - _lse(z2))
        x, y = np.exp(lx), np.exp(ly)
        j1 = np.concatenate([alpha * (r1 - x), (1.0 - alpha) * (r1 - y)])
        j2 = np.concatenate([(1.0 - alpha) * (r2 - x), alpha * (r2 - y)])
        return -np.stack([j1, j2])

    def verified(lx, ly):
        """Proven value of the pair, after mixing x towards y until provably feasible."""
        for t in np.concatenate([[0.0], np.geomspace(1e-12, 1.0, 60)]):
            with np.errstate(divide="ignore"):
                mx = np.logaddexp(np.log1p(-t) + lx, np.log(t) + ly) if t > 0 else lx
            h1, e1 = _pair_moment(mx, ly, alpha)
            h2, e2 = _pair_moment(ly, mx, alpha)
            if h1[0] + e1[0] <= E * (1 - 4e-16) and h2[0] + e2[0] <= E * (1 - 4e-16):
                g, ge = _moment_general(mx, ly, logw, alpha)
                return float(g[0] - ge[0])
        return 0.0

    rng = np.random.default_rng(seed)
    # the pair of eqs. 3-4 (mass p on the all-c corner and 1-p on the all-(1-c) corner)
    from .bernoulli import _feasible_log_odds
    t = float(_feasible_log_odds(np.array([eps]), np.array([alpha]))[0])
    lp, lq = -np.logaddexp(0.0, t), -np.logaddexp(0.0, -t)
    x0 = np.full(nc, -60.0)
    y0 = np.full(nc, -60.0)
    x0[0], x0[-1], y0[0], y1 = lp, lq, lq, lp
    y0[-1] = y1
    inits = [np.concatenate([x0, y0])]
    for _ in range(starts):
        x = rng.dirichlet(np.ones(nc))
        y = rng.dirichlet(np.ones(nc))
        inits.append(np.log(np.concatenate([x, y]) + 1e-12))
    best = 0.0
    for v0 in inits:
        try:
            with np.errstate(all="ignore"):
                res = minimize(obj, v0, jac=True, method="SLSQP",
                               constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
                               options={"maxiter": 200, "ftol": 1e-12})
            v = res.x
        except (ValueError, FloatingPointError):  # pragma: no cover - solver breakdown
            v = v0
        for cand in (v, v0):
            lx, ly = split(cand)
            best = max(best, verified(lx, ly))
    return best
