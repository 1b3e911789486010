"""Bounds on one box [x0, x1] x [y0, y1] of the certified d = 1 search (Imola & Chaudhuri 2021, Alg.
2): propagation of the constraints (:func:`_tighten`), the dual bound of the interpolation LP
(stage 1, :func:`_dual_bound`), tangent cuts (:func:`_cut`) and the polygon bound (stage 2,
:func:`_polygon_bound`). Why each of them is a proof is in the docstring of
:mod:`dpamp.amplification.bernoulli._d1_search`.
"""
from __future__ import annotations

import numpy as np

from ._moments import _constraints, _grad_h, _logs, _objective


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
    the convex moment M_which (1: M1, 2: M2) at z0 = (zx, zy) (see
    :mod:`dpamp.amplification.bernoulli._d1_search`), widened by the rounding errors of H, of its
    gradient (times the distance from z0 to the box) and by a relative margin that covers the
    rounding of the polygon clipping below.
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
    norm = np.abs(a) + np.abs(b)
    cc, skip = _drop_parallel_cuts(x0, x1, y0, y1, a, b, cc.copy(), norm)
    on = np.isfinite(cc)
    a, b = np.where(on, a, 0.0), np.where(on, b, 0.0)
    with np.errstate(all="ignore"):
        ex, ey, ev = _edge_points(x0, x1, y0, y1, a, b, cc, on, norm)
        cx, cy, cv = _crossing_points(x0, x1, y0, y1, a, b, cc, on, norm, skip)
    return np.stack(ex + cx, 1), np.stack(ey + cy, 1), np.stack(ev + cv, 1)


def _drop_parallel_cuts(x0, x1, y0, y1, a, b, cc, norm) -> tuple:
    """(cc, skip) for :func:`_polygon_candidates`: of two nearly parallel cuts, the pair
    marked in ``skip`` where they face apart and cannot cross inside the box, else one of them
    dropped (cc = inf, in ``cc`` itself; a larger polygon, still valid)."""
    m, nc = a.shape
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
    return cc, skip


def _edge_points(x0, x1, y0, y1, a, b, cc, on, norm) -> tuple:
    """Lists (x, y, valid) of the candidates on the box's edges: on each edge the ends of the
    sub-segment that satisfies all cuts (an interval in the edge parameter, widened)."""
    pts_x, pts_y, valid = [], [], []
    edges = [(x0, y0, x1 - x0, 0.0 * x0), (x1, y0, 0.0 * x0, y1 - y0),
             (x0, y1, x1 - x0, 0.0 * x0), (x0, y0, 0.0 * x0, y1 - y0)]
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
    return pts_x, pts_y, valid


def _crossing_points(x0, x1, y0, y1, a, b, cc, on, norm, skip) -> tuple:
    """Lists (x, y, valid) of the pairwise crossings of cut lines inside the box (with
    tolerance) that satisfy the other cuts (with tolerance), except the pairs in ``skip``."""
    nc = a.shape[1]
    pts_x, pts_y, valid = [], [], []
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
    return pts_x, pts_y, valid


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
