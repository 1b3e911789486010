"""Bounds on one cell of the d > 1 search (Imola & Chaudhuri 2021, Alg. 3) by linear programming
duality.

:func:`_cell_bound` bounds the objective G over the candidates of a cell by the LP of step (5):
convex interpolation between the cell's 4^m vertices under the equalities, tangent cuts, ratio
rows and (4 corners) activity rows. Its multipliers come from a batched interior-point method
(:func:`_dual_bound`) and are only ever used to evaluate the weak-duality bound
(:func:`_phi`), which is a proof whatever they are. :func:`_tighten_masses` bounds each mass
Q_v by a small LP in Q alone (step (6)). Steps (1)-(6) are those of the proof in the
docstring of :mod:`dpamp.amplification.bernoulli._support_search`.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from ._cells import (_U, _dh_abs_max, _h, _log_ratio_bounds, _psi, _vertex_table, _widen_hi,
                     _widen_lo)


# --------------------------------------------------------------------------------------------
# the dual of the cell LP
# --------------------------------------------------------------------------------------------
def _dual_bound(g, A, n_free, iters=16):
    """Multipliers y (y_j free for j < n_free, >= 0 otherwise) that nearly minimise
    max_i (g_i - A_i . y). By weak duality any such y bounds the LP max sum_i l_i g_i over the
    simplex subject to sum_i l_i A_ij = 0 (j < n_free), <= 0 (else), so y only has to be good,
    never exact (:func:`_phi` evaluates the bound): it comes from a batched primal-dual
    interior-point method on that LP (slacks for the inequalities, normal equations of size
    J + 1). g: (n, V); A: (n, V, J), a column with a non-finite entry is switched off."""
    n, V, J = A.shape
    usable = np.isfinite(A).all(axis=1) & (np.abs(A).max(axis=1) < 1e250)
    A = np.where(usable[:, None, :], A, 0.0)
    gmax = g.max(axis=1, keepdims=True)
    spread = gmax[:, 0] - g.min(axis=1) + 1e-300
    sc = np.abs(A).max(axis=1) + 1e-300               # (n, J) column scales
    # normalised LP: min c.l, c = -(g - gmax)/spread in [0, 1]; rows: sum l = 1, An^T l (= or
    # <= 0 with slacks); variables x = (l, slacks) >= 0
    c = -(g - gmax) / spread[:, None]
    An = np.where(usable[:, None, :], A / sc[:, None, :], 0.0)
    q = J - n_free
    Mr = J + 1
    Arow = np.concatenate([np.ones((n, V, 1)), An], axis=2)   # (n, V, Mr): l-columns
    bvec = np.zeros((n, Mr))
    bvec[:, 0] = 1.0
    x = np.ones((n, V))
    xs = np.ones((n, q))
    y = np.zeros((n, Mr))
    s_l = c + 1.0
    s_s = np.ones((n, q))
    off = np.where(usable, 0.0, 1.0)                  # switched-off rows: regularise
    eye = np.eye(Mr)
    with np.errstate(all="ignore"):
        for _ in range(iters):
            # residuals: primal A x = b, dual A^T y + s = c (slack columns: identity, cost 0)
            rp = bvec - (x[:, None, :] @ Arow)[:, 0]
            rp[:, 1 + n_free:] -= xs
            rd_l = c - (Arow @ y[..., None])[..., 0] - s_l
            rd_s = -y[:, 1 + n_free:] - s_s
            mu = (np.einsum("nv,nv->n", x, s_l) + np.einsum("nq,nq->n", xs, s_s)) / (V + q)
            sig = 0.1
            rc_l = sig * mu[:, None] - x * s_l
            rc_s = sig * mu[:, None] - xs * s_s
            d_l = x / s_l
            d_s = xs / s_s
            K = np.swapaxes(Arow * d_l[..., None], 1, 2) @ Arow
            K[:, 1 + n_free:, 1 + n_free:] += d_s[:, :, None] * np.eye(q)
            K = K + (1e-12 * np.trace(K, axis1=1, axis2=2)[:, None, None] + 1e-300) * eye
            K[:, 1 + n_free:, 1 + n_free:] += (off[:, n_free:] * 1.0)[:, :, None] * np.eye(q)
            rhs = rp - ((rc_l / s_l - d_l * rd_l)[:, None, :] @ Arow)[:, 0]
            rhs[:, 1 + n_free:] -= rc_s / s_s - d_s * rd_s
            dy = np.linalg.solve(K, rhs[..., None])[..., 0]
            ds_l = rd_l - (Arow @ dy[..., None])[..., 0]
            ds_s = rd_s - dy[:, 1 + n_free:]
            dx_l = (rc_l - x * ds_l) / s_l
            dx_s = (rc_s - xs * ds_s) / s_s

            def steplen(v, dv):
                r = np.where(dv < 0, -v / np.where(dv < 0, dv, -1.0), np.inf)
                return np.min(r, axis=1)

            tp = np.minimum(1.0, 0.99 * np.minimum(steplen(x, dx_l), steplen(xs, dx_s)))
            td = np.minimum(1.0, 0.99 * np.minimum(steplen(s_l, ds_l), steplen(s_s, ds_s)))
            good = np.isfinite(dy).all(axis=1) & np.isfinite(tp) & np.isfinite(td)
            tp, td = np.where(good, tp, 0.0), np.where(good, td, 0.0)
            x = x + tp[:, None] * np.where(good[:, None], dx_l, 0.0)
            xs = xs + tp[:, None] * np.where(good[:, None], dx_s, 0.0)
            y = y + td[:, None] * np.where(good[:, None], dy, 0.0)
            s_l = s_l + td[:, None] * np.where(good[:, None], ds_l, 0.0)
            s_s = s_s + td[:, None] * np.where(good[:, None], ds_s, 0.0)
    # back to the original scale: lambda = -y (min form), inequality multipliers clipped >= 0
    z = -y[:, 1:]
    z = np.where(np.isfinite(z), z, 0.0)
    z[:, n_free:] = np.maximum(z[:, n_free:], 0.0)
    lam = np.maximum(np.where(np.isfinite(x), x, 0.0), 0.0)
    lam = lam / np.maximum(lam.sum(axis=1, keepdims=True), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        y_out = np.where(usable, z * spread[:, None] / sc, 0.0)
    return np.where(np.isfinite(y_out), y_out, 0.0), lam


def _phi(g, A, rhs_err, y, n_free):
    """The weak-duality bound max_i (g_i - A_i . y) + rounding slack for given multipliers
    (inequality ones clipped to >= 0, those of switched-off rows set to 0): a proven upper
    bound on the cell LP whatever y is (see :func:`_dual_bound`)."""
    J = A.shape[2]
    usable = np.isfinite(A).all(axis=1) & (np.abs(A).max(axis=1) < 1e250)
    A = np.where(usable[:, None, :], A, 0.0)
    y = np.where(usable & np.isfinite(y), y, 0.0)
    y = np.concatenate([y[:, :n_free], np.maximum(y[:, n_free:], 0.0)], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = g - (A @ y[..., None])[..., 0]
        phi = terms.max(axis=1)
        mag = np.abs(g).max(axis=1) + (np.abs(y) * np.abs(A).max(axis=1)).sum(axis=1)
        phi = phi + 16 * _U * (J + 2) * mag + (np.abs(y) * rhs_err).sum(axis=1)
    phi = np.where(np.isfinite(phi), phi, np.inf)
    return np.minimum(phi, g.max(axis=1) * (1 + 4 * _U)), y


# --------------------------------------------------------------------------------------------
# mass tightening: a small LP in Q alone
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _bases(m: int, n_rows: int):
    """The candidate bases of the mass LP of :func:`_tighten_masses`: pairs (rows, cols) with
    rows = (0,) + a (k-1)-subset of the n_rows inequality rows (1-based) and cols a k-subset
    of the m masses, k = 1..m (the other masses sit at a bound of their box)."""
    out = []
    for k in range(1, m + 1):
        for rows in itertools.combinations(range(1, n_rows + 1), k - 1):
            for cols in itertools.combinations(range(m), k):
                out.append(((0,) + rows, cols))
    return tuple(out)


def _tighten_masses(inst, s_lo, s_hi, w_lo, w_hi):
    """Bounds on each Q_v over the candidates of each cell by linear programming duality, and
    the masses s_v = Q_v (1 + L_v) they imply (step (6)); returns the new s
    bounds and a mask of cells proven to hold no candidate.

    On a cell the ratio L_v = P_v / Q_v lies in [lo_v, hi_v] (from w), so every candidate's
    Q satisfies the linear rows (a . Q >= b form; coefficients rounded so that each row stays
    valid for Q >= 0)

        sum Q = 1;  sum Q lo <= 1 <= sum Q hi  (sum P = 1);
        sum Q lo^a <= e^E,  sum Q hi^(1-a) <= e^E  (both constraints hold);
        sum Q hi^a >= e^E,  sum Q lo^(1-a) >= e^E  (both active: 4-corner supports only),

    and Q lies in the cell's box [s_lo (1 - w_hi), s_hi (1 - w_lo)]. For 4 corners these rows
    pin Q down as the cell shrinks (Q is the solution of a 4 x 4 system once L is known), which
    interval propagation alone does not see. For any multipliers y (free for sum Q = 1, >= 0
    otherwise) and any objective c, every such Q has

        c . Q = (c - A^T y) . Q + y . A Q >= y . b + sum_j min over the box of (c - A^T y)_j Q_j,

    so each y gives a proven bound (weak duality; no y is trusted for more than this). The
    y tried are those of every basis of the LP (:func:`_bases`), solved for c = +-e_v; the best
    bound per objective is kept, less a rounding margin."""
    lL_lo, lL_hi = _log_ratio_bounds(w_lo, w_hi)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        A, b = _mass_rows(inst, lL_lo, lL_hi)
        q_lo = np.clip(_widen_lo(s_lo * (1.0 - w_hi)), 0.0, 1.0)
        q_hi = np.clip(_widen_hi(s_hi * (1.0 - w_lo)), 0.0, 1.0)
        best = _mass_bounds(A, b, q_lo, q_hi)
    m = s_lo.shape[1]
    qmin = np.maximum(best[:, :m], q_lo)
    qmax = np.minimum(-best[:, m:], q_hi)
    dead = (qmin > qmax).any(axis=1)
    # s = Q (1 + L), L in [lo, hi]
    with np.errstate(over="ignore", invalid="ignore"):
        s_new_lo = _widen_lo(qmin * (1.0 + np.exp(lL_lo) * (1.0 - 8 * _U)))
        s_new_hi = _widen_hi(qmax * (1.0 + np.exp(lL_hi) * (1.0 + 8 * _U)))
    s_lo = np.fmax(s_lo, np.where(np.isfinite(s_new_lo), s_new_lo, 0.0))
    s_hi = np.fmin(s_hi, np.where(np.isfinite(s_new_hi), s_new_hi, np.inf))
    return s_lo, s_hi, dead


def _mass_rows(inst, lL_lo, lL_hi) -> tuple:
    """(A, b), (n, R + 1, m) and (n, R + 1): the rows A Q >= b of the mass LP of
    :func:`_tighten_masses` on each cell, row 0 sum Q = 1 (the others in the order of its
    docstring); a row with a coefficient not finite or above 1e100 is 0 >= 0."""
    a = inst.a
    n, m = lL_lo.shape

    def dn(x):    # exp(x) rounded down
        return _widen_lo(np.exp(x))

    def up(x):
        return _widen_hi(np.exp(x))

    # (coefficient rows in >= form, rhs)
    rows = [(-dn(lL_lo), -1.0), (up(lL_hi), 1.0),
            (-dn(a * lL_lo), -(1.0 + inst.eta_hi)), (-dn((1.0 - a) * lL_hi),
                                                     -(1.0 + inst.eta_hi))]
    if inst.activity == "both":
        rows += [(up(a * lL_hi), 1.0 + inst.eta_lo), (up((1.0 - a) * lL_lo),
                                                       1.0 + inst.eta_lo)]
    R = len(rows)
    A = np.zeros((n, R + 1, m))
    b = np.zeros((n, R + 1))
    A[:, 0, :] = 1.0
    b[:, 0] = 1.0
    for i, (coef, rhs) in enumerate(rows, start=1):
        ok = (np.isfinite(coef) & (np.abs(coef) < 1e100)).all(axis=1)
        A[:, i, :] = np.where(ok[:, None], coef, 0.0)
        b[:, i] = np.where(ok, rhs, 0.0)
    return A, b


def _mass_bounds(A, b, q_lo, q_hi):
    """(n, 2m): per cell the best weak-duality bound min Q_v (columns 0..m-1) and min -Q_v
    (m..2m-1) over the multipliers of every basis of the mass LP (:func:`_bases`), each less
    its rounding margin (see :func:`_tighten_masses`)."""
    n, R, m = A.shape[0], A.shape[1] - 1, A.shape[2]
    # objectives: columns 0..m-1 minimise Q_v, m..2m-1 minimise -Q_v
    C = np.concatenate([np.eye(m), -np.eye(m)], axis=1)          # (m, 2m)
    best = np.full((n, 2 * m), -np.inf)
    absA = np.abs(A)
    for rws, cols in _bases(m, R):
        rws, cols = list(rws), list(cols)
        B = A[:, rws][:, :, cols]                                  # (n, k, k)
        # (a nearly singular basis gives no useful y: skipped)
        det_ok = np.linalg.cond(B) < 1e10
        Bs = np.where(det_ok[:, None, None], B, np.eye(len(rws)))
        rhs = np.broadcast_to(C[cols], (n, len(cols), 2 * m))
        y_b = np.linalg.solve(np.swapaxes(Bs, 1, 2), rhs)         # (n, k, 2m)
        y = np.zeros((n, R + 1, 2 * m))
        y[:, rws] = y_b
        y[:, 1:] = np.maximum(y[:, 1:], 0.0)
        y = np.where(np.isfinite(y) & det_ok[:, None, None], y, 0.0)
        red = C[None] - np.swapaxes(A, 1, 2) @ y                  # (n, m, 2m)
        val = (np.einsum("nr,nro->no", b, y)
               + np.minimum(red * q_lo[..., None], red * q_hi[..., None]).sum(axis=1))
        # rounding: of y . b, of A^T y (through Q <= q_hi) and of the sums
        mag = (np.einsum("nr,nro->no", np.abs(b), np.abs(y))
               + (np.abs(C[None]) + np.swapaxes(absA, 1, 2) @ np.abs(y)).__mul__(
                   q_hi[..., None]).sum(axis=1))
        val = val - 32 * _U * (R + m + 2) * mag - 1e-300
        best = np.fmax(best, np.where(np.isfinite(val), val, -np.inf))
    return best


# --------------------------------------------------------------------------------------------
# the bound on a cell
# --------------------------------------------------------------------------------------------
def _corner_vertices(s_lo, s_hi, w_lo, w_hi):
    """(s, w) at the four corners of each corner's quadrilateral: arrays (n, m, 4)."""
    s = np.stack([s_lo, s_lo, s_hi, s_hi], axis=2)
    w = np.stack([w_lo, w_hi, w_lo, w_hi], axis=2)
    return s, w


def _tangent_rows(Pi, Qi, lL, a, eta_hi):
    """Rows T1(z_i) - eta and T2(z_i) - eta of the tangent cuts (5) at per-cell log-ratios
    lL (n, m) (the supporting planes of {C1 <= eta}, {C2 <= eta} at points with those
    ratios), evaluated at the vertices Pi, Qi (n, V, m), with bounds on their rounding. A cut
    whose coefficients are not finite is returned as NaN (switched off)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        coefs = [(a * np.expm1((a - 1.0) * lL), -(a - 1.0) * np.expm1(a * lL)),
                 (-(a - 1.0) * np.expm1(-a * lL), a * np.expm1(-(a - 1.0) * lL))]
        # rounding of the coefficients: lL to a few ulps, amplified by the exponent
        rl = 16 * _U * (1.0 + np.abs(lL)) * a
        rows, errs = [], []
        for al, be in coefs:
            ok = (np.isfinite(al) & np.isfinite(be) & (np.abs(al) < 1e200)
                  & (np.abs(be) < 1e200)).all(axis=1)
            alc = np.where(ok[:, None], al, 0.0)
            bec = np.where(ok[:, None], be, 0.0)
            ea = (np.abs(alc) + a) * rl + 8 * _U * np.abs(alc)
            eb = (np.abs(bec) + a) * rl + 8 * _U * np.abs(bec)
            T = (Pi @ alc[..., None])[..., 0] + (Qi @ bec[..., None])[..., 0]
            Te = (Pi @ np.where(ok[:, None], ea, 0.0)[..., None])[..., 0] + (
                Qi @ np.where(ok[:, None], eb, 0.0)[..., None])[..., 0]
            rows.append(np.where(ok[:, None], T - eta_hi, np.nan))
            errs.append(np.where(ok, Te.max(1) + 8 * _U * eta_hi, 0.0))
    return rows, errs


def _cell_bound(inst, s_lo, s_hi, w_lo, w_hi, y_warm, thr):
    """Upper bound on G = F - 1 over the feasible points of each cell that can be the maximiser
    of (2) (activity), by (5); +inf where no bound is available. Also returns the cells shown
    to hold no such point (activity fails) and the per-coordinate variation of G over the
    vertices (split heuristic, (n, m, 2): s, w)."""
    m, W = inst.m, inst.W
    n = s_lo.shape[0]
    idx = _vertex_table(m)
    sv, wv = _corner_vertices(s_lo, s_hi, w_lo, w_hi)
    P = sv * wv
    Q = sv * (1.0 - wv)
    D = sv * (2.0 * wv - 1.0)
    c1, c1e, c2, c2e, inactive = _activity(inst, sv, wv)
    # tangent cuts (5) at the ratio of each corner's centre, L = w/(1-w)
    wc = np.clip(0.5 * (w_lo + w_hi), 1e-300, 1.0 - 1e-16)
    lLc = np.log(wc) - np.log1p(-wc)
    lLlo, lLhi = _log_ratio_bounds(w_lo, w_hi)
    row_coef = _ratio_coefficients(inst, lLlo, lLhi)
    bound = np.full(n, np.inf)
    var = np.zeros((n, m, 2))
    y_out = np.zeros_like(y_warm)
    chunk = max(1, int(4e6 // (idx.shape[0] * W.shape[0])))
    ar = np.arange(m)
    for i0 in range(0, n, chunk):
        sl = slice(i0, min(n, i0 + chunk))
        Pi = P[sl][:, ar, idx]                           # (n', V, m)
        Qi = Q[sl][:, ar, idx]
        Di = D[sl][:, ar, idx]
        Gup = _vertex_objective(inst, Pi, Qi, Di)
        var[sl] = _variation(Gup, m)
        act = ([(cc[sl][:, ar, idx], ce[sl][:, ar, idx]) for cc, ce in ((c1, c1e), (c2, c2e))]
               if inst.activity == "both" else [])
        A, Aerr = _lp_rows(inst, Pi, Qi, lLc[sl], (lLlo[sl], lLhi[sl]), act,
                           [(kc[sl], sign) for kc, sign in row_coef])
        fin = np.isfinite(Gup).all(axis=1)
        if fin.any():
            phi, yf = _settle(Gup[fin], A[fin], Aerr[fin], y_warm[sl][fin], thr)
            bb = bound[sl]
            bb[fin] = phi
            bound[sl] = bb
            yy = y_out[sl]
            yy[fin] = yf
            y_out[sl] = yy
    bound = np.where(np.isnan(bound), np.inf, np.maximum(bound, 0.0))
    return bound, inactive, var, y_out


def _activity(inst, sv, wv) -> tuple:
    """(c1, c1e, c2, c2e, inactive): each corner's terms s psi of the constraints C1, C2 at the
    corner vertices (sv, wv) with their rounding bounds, and the cells where the activity of
    (2) fails. C1 is convex, so its maximum over the cell is at a vertex and at most the sum
    of the per-corner maxima; a cell where it cannot reach eta holds no candidate."""
    with np.errstate(invalid="ignore"):
        p1, e1, p2, e2 = _psi(wv, inst.a)
        c1 = np.where(sv > 0, sv * p1, 0.0)
        c2 = np.where(sv > 0, sv * p2, 0.0)
        c1e = np.where(sv > 0, sv * e1 + 4 * _U * c1, 0.0)
        c2e = np.where(sv > 0, sv * e2 + 4 * _U * c2, 0.0)
    c1max = (c1 + c1e).max(axis=2).sum(axis=1) * (1 + 8 * _U)
    c2max = (c2 + c2e).max(axis=2).sum(axis=1) * (1 + 8 * _U)
    # (NaN-safe: only a proven shortfall counts)
    reach1, reach2 = ~(c1max < inst.eta_lo), ~(c2max < inst.eta_lo)
    inactive = ~(reach1 & reach2) if inst.activity == "both" else ~(reach1 | reach2)
    return c1, c1e, c2, c2e, inactive


def _ratio_coefficients(inst, lLlo, lLhi) -> list:
    """[(coefficients (n, m), sign)] of the ratio rows of :func:`_lp_rows`: L^a - 1 and
    L^(1-a) - 1 at the ends of the cell's ratios that make each row valid, rounded the safe
    way; NaN where too large to use."""
    a = inst.a
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        row_coef = [(_widen_lo(np.expm1(a * lLlo)), 1), (_widen_lo(np.expm1((1.0 - a) * lLhi)), 1)]
        if inst.activity == "both":
            row_coef += [(_widen_hi(np.expm1(a * lLhi)), -1),
                         (_widen_hi(np.expm1((1.0 - a) * lLlo)), -1)]
        return [(np.where(np.abs(kc) < 1e250, kc, np.nan), sg) for kc, sg in row_coef]


def _vertex_objective(inst, Pi, Qi, Di):
    """G at every vertex of every cell, rounded up ((n', V)); +inf where unbounded or NaN."""
    a, W = inst.a, inst.W
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        y = Qi @ W.T                                  # (n', V, S)
        dx = Di @ W.T
        absd = np.abs(Di) @ W.T
        u = dx / y
        h, he = _h(u, a)
        du = 2 * inst.rho * absd / y + 4 * _U * np.abs(u)
        he = he + _dh_abs_max(u - du, u + du, a) * du
        g_terms = y * h
        g_err = y * he + (inst.rho + 8 * _U) * g_terms
        # y = 0 (all Q-mass at zero) with x > 0: G = inf; x = y = 0: the term is 0
        zero_y = y <= 0
        g_terms = np.where(zero_y, np.where(absd > 0, np.inf, 0.0), g_terms)
        g_err = np.where(zero_y, 0.0, g_err)
        G = g_terms.sum(axis=2)
        Gup = G + g_err.sum(axis=2) + 4 * _U * W.shape[0] * G
    return np.where(np.isnan(Gup), np.inf, Gup)


def _variation(Gup, m: int):
    """The split heuristic: the largest change of G along each coordinate of each corner,
    (n', m, 2) (s, w)."""
    nn = Gup.shape[0]
    Gr = np.where(np.isfinite(Gup), Gup, 1e300).reshape((nn,) + (2, 2) * m)
    var = np.zeros((nn, m, 2))
    for v in range(m):
        for j in range(2):
            dif = np.abs(np.diff(Gr, axis=1 + 2 * v + j))
            var[:, v, j] = dif.reshape(nn, -1).max(axis=1)
    return var


def _lp_rows(inst, Pi, Qi, lLc, ends, act, row_coef) -> tuple:
    """(A, Aerr): the rows of the LP (5) at the vertices, (n', V, J), and bounds on their
    rounding, (n', J): the equalities, tangent cuts at the centre's and the ends' ratios
    (``lLc``, ``ends``), activity (``act``: the constraints' corner terms and errors at the
    vertices) and the ratio rows (``row_coef``, :func:`_ratio_coefficients`)."""
    rows, errs = [], []
    ssum = Pi.sum(2) + Qi.sum(2)                     # = sum s at the vertex
    rows.append(ssum - 2.0)
    errs.append(8 * _U * ssum.max(1))
    psum = Pi.sum(2)
    rows.append(psum - 1.0)
    errs.append(8 * _U * psum.max(1))
    t_rows, t_errs = _tangent_rows(Pi, Qi, lLc, inst.a, inst.eta_hi)
    rows += t_rows
    errs += t_errs
    # and at the cell's lowest and highest ratios (any ratios give valid cuts)
    for lx in ends:
        lxs = np.where(np.isfinite(lx), lx, 0.0)
        t_rows, t_errs = _tangent_rows(Pi, Qi, lxs, inst.a, inst.eta_hi)
        rows += t_rows
        errs += t_errs
    if inst.activity == "both":
        for cc, ce in act:
            up = (cc + ce).sum(2) * (1 + 8 * _U)
            rows.append(inst.eta_lo - up)             # sum l C(z_i) >= eta
            errs.append(8 * _U * np.where(np.isfinite(up), up, 0.0).max(1))
    # ratio rows: on the cell P_v / Q_v = L_v lies in [L_lo, L_hi] (from w), and
    # Q L^a, Q L^(1-a) are monotone in L, so sum Q (L_lo^a - 1) <= eta,
    # sum Q (L_hi^(1-a) - 1) <= eta (sum Q = 1); with activity also
    # sum Q (L_hi^a - 1) >= eta and sum Q (L_lo^(1-a) - 1) >= eta. Coefficients are
    # rounded so that each row stays valid (they multiply Q >= 0)
    for kq, sign in row_coef:
        kf = np.where(np.isfinite(kq), kq, 0.0)
        val = (Qi @ kf[..., None])[..., 0]
        mag = (Qi @ np.abs(kf)[..., None])[..., 0]
        row = (val - inst.eta_hi) if sign > 0 else (inst.eta_lo - val)
        row = np.where(np.isfinite(kq).all(axis=1)[:, None], row, np.nan)
        rows.append(row)
        errs.append(8 * _U * (mag.max(1) + inst.eta_hi))
    return np.stack(rows, axis=2), np.stack(errs, axis=1)


def _settle(G, A, Aerr, y_warm, thr) -> tuple:
    """(bound, multipliers) of cells with finite vertex values: the multipliers inherited from
    the parent cell first; the interior-point solve only where they do not already settle the
    cell (bound <= thr), its multipliers kept where they give the smaller bound."""
    phi, yf = _phi(G, A, Aerr, y_warm, 2)
    hard = phi > thr
    if hard.any():
        y_new, _ = _dual_bound(G[hard], A[hard], 2)
        phi2, y2 = _phi(G[hard], A[hard], Aerr[hard], y_new, 2)
        better = phi2 < phi[hard]
        phi[hard] = np.where(better, phi2, phi[hard])
        yf[hard] = np.where(better[:, None], y2, yf[hard])
    return phi, yf
