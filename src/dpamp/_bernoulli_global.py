"""Certified global upper bound on Post_{alpha,k}(epsilon) for d = 2, 3 (paper 001, Alg. 3).

Post(eps) = max R_alpha(P W || Q W) over distributions P, Q on the 2^d corners {c, 1-c}^d with
R_alpha(P || Q) <= eps and R_alpha(Q || P) <= eps; W is the channel from a corner to the
sufficient statistic of the k samples (:func:`dpamp._bernoulli_search.statistic_channel`).
Maximising the convex objective over the convex feasible set is not a convex program, so this
module proves upper bounds by a branch-and-bound. Everything below is a proof; the comments
say which step each part of the code carries out.

Notation. a = alpha > 1, E = (a-1) eps, eta = e^E - 1, h(u) = (1+u)^a - 1 - a u >= 0 (convex,
0 only at u = 0), z = (P, Q) in the cone R_+^{2m} over a support of m corners, D = P - Q.

(1) Objective and constraints as perspectives. With x = W P, y = W Q (the columns of W sum to 1):

        F(P, Q) = sum_s x_s^a y_s^(1-a) = 1 + G,   G(z) = sum_s y_s h(x_s / y_s - 1),
        M1(P, Q) = sum_v P_v^a Q_v^(1-a) = 1 + C1,  C1(z) = sum_v Q_v h(P_v / Q_v - 1),
        M2 = 1 + C2,  C2(z) = sum_v P_v h(Q_v / P_v - 1),

    on {sum P = sum Q = 1} (there sum_s y_s (x_s/y_s - 1) = sum D = 0). G, C1, C2 are
    jointly convex and 1-homogeneous on the whole cone (perspectives of the convex h composed
    with linear maps), and are sums of *nonnegative* terms, so they are evaluated without the
    cancellation of F - 1 and keep their relative accuracy as eps -> 0. Post = log1p(max G)/(a-1)
    over the feasible set {sum P = sum Q = 1, C1 <= eta, C2 <= eta}.

(2) Support reduction. Feasibility forces supp P = supp Q (C1 = inf where Q_v = 0 < P_v, C2
    the other way). Let (P*, Q*) be a maximiser (the feasible set is compact and F continuous,
    W > 0 entrywise) of smallest support S, and L = P*/Q* on S. For this fixed L, P = L o Q and
        sum Q = 1, sum Q L = 1, sum Q L^a <= e^E, sum Q L^(1-a) <= e^E, Q >= 0 on S
    is a polytope in Q on which F(L o Q, Q) is convex, so some vertex Q' is a maximiser too.
    By minimality Q' > 0 on all of S, and a vertex of a polytope in R^|S| has |S| linearly
    independent active constraints among these four (plus Q >= 0, which is inactive), hence:
    |S| <= 4; if |S| = 4 both Rényi constraints are active (C1 = C2 = eta); if |S| = 3 at least
    one is. So Post = max over: supports of 2 corners (a two-point problem: with h the Hamming
    distance of the two corners, the k samples of the h differing coordinates are h k coins of
    bias c or 1-c after relabelling, i.e. the d = 1 problem with h k samples, largest at h = d
    since fewer coins are a post-processing of more), supports of 3 corners with one active
    constraint, and supports of 4 corners with both active.

(3) Symmetry. Permuting coordinates and flipping bits (theta_l -> 1 - theta_l) relabels the
    corners and, correspondingly, the outcomes of W (a count m_l becomes k - m_l); G, C1, C2
    are unchanged. So only one support per orbit of the hyperoctahedral group (order 2^d d!)
    is searched, and, within a support, points may be mapped by the support's stabiliser so
    that a chain of its corners carry the most Q-mass on their stabiliser orbits (see
    :func:`support_orbits`; a cell where some corner surely has more is discarded).

(4) Cells. Per support corner v the pair (P_v, Q_v) = s_v (w_v, 1 - w_v) with s in [s_lo, s_hi],
    w in [w_lo, w_hi]: a convex quadrilateral (between two rays from the origin and two lines
    P + Q = const) whose four corners are in the cone; a cell is the product over the m corners,
    a polytope with 4^m vertices z_i, and every point of it is a convex combination of them.

(5) Bound on a cell, by linear programming duality. For z = sum_i l_i z_i in the cell and
    feasible: G(z) <= sum_i l_i G(z_i) (convexity), and the l_i satisfy linear conditions:
      * sum_v s_v = 2 and sum_v P_v = 1 (equalities, linear in z);
      * tangent cuts: C1(z) >= T1(z) = sum_v [a (L_v^(a-1) - 1) P_v + (a-1)(1 - L_v^a) Q_v] for
        any ratios L_v > 0 (the supporting plane of the 1-homogeneous convex C1 at any point with
        P_v/Q_v = L_v passes through 0), so T1(z) <= eta; likewise T2 for C2 (P <-> Q);
      * ratio rows: on the cell L_v = P_v/Q_v lies in [L_lo, L_hi] (from w) and Q L^a,
        Q L^(1-a) are monotone in L, so sum Q (L_lo^a - 1) <= eta, sum Q (L_hi^(1-a) - 1) <= eta;
      * activity (4 corners): eta = C1(z) <= sum_i l_i C1(z_i) (convexity), same for C2, and
        the ratio rows reversed, sum Q (L_hi^a - 1) >= eta, sum Q (L_lo^(1-a) - 1) >= eta.
    The LP max sum_i l_i G_i under these rows is bounded by weak duality: for any multipliers
    (free for equalities, >= 0 for inequalities) max_i (G_i - y . A_i) >= the LP value. Any y
    is valid, so y comes from a few smoothed Newton steps and is never trusted for more than
    evaluating that max. Every value (G_i, C_i, the cut coefficients, the sums) carries a
    rounding-error bound and enters on the safe side.

(6) Pruning and propagation. C1 = sum_v s_v psi1(w_v) with psi1(w) = (1-w) h((2w-1)/(1-w)) >= 0
    convex, 0 at w = 1/2 (same for C2 with psi2(w) = psi1(1-w)): each term is <= eta minus the
    others' minima, which bounds each w_v (psi1 is monotone on each side of 1/2; a bisection
    moves an end only to a point proven infeasible) and s_v; the equalities bound each s_v and
    P_v by the others' intervals. A cell whose minimum of C1 or C2 exceeds eta, or (activity)
    whose maximum of C1 (a convex function: at a vertex) is below eta, holds no candidate.
    Then each Q_v is bounded by a small LP in Q alone (:func:`_tighten_masses`): on a cell the
    ratios L_v lie in intervals, so sum Q = 1, sum Q L = 1 and the Rényi rows (reversed too
    when both are active) become linear inequalities in Q; weak duality with the multipliers
    of every basis bounds each Q_v, hence s_v = Q_v (1 + L_v). With both constraints active Q
    is a function of L (module docstring (2)), so the s-intervals shrink with the w-intervals
    and the search is in effect 4-dimensional instead of 6.

The certified upper bound is the largest bound of any cell discarded within the tolerance of
the best proven-feasible value or left when the cell budget ran out; it is capped by the closed
form min(eps, d k r_alpha(c)). Numbers with E = (a-1) eps > 600 would overflow (e^E); such
instances are not searched (the caller reports them uncertified).
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

#: relative rounding slack of one floating-point operation, with room to spare
_U = 2.3e-16
#: largest E = (alpha-1) eps searched (e^E must stay far from overflow)
MAX_E = 600.0


# --------------------------------------------------------------------------------------------
# symmetry: the hyperoctahedral group on corner indices (bit l of the index, counted from the
# most significant, is coordinate l, as in statistic_channel)
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def cube_group(d: int) -> tuple[tuple[int, ...], ...]:
    """All 2^d d! relabellings of the corners {0,1}^d by a coordinate permutation and a flip."""
    out = set()
    for perm in itertools.permutations(range(d)):
        for flip in range(2 ** d):
            g = []
            for i in range(2 ** d):
                j = 0
                for l in range(d):
                    j = 2 * j + ((i >> (d - 1 - perm[l])) & 1)
                g.append(j ^ flip)
            out.add(tuple(g))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=None)
def support_orbits(d: int, m: int):
    """One m-subset of corners per orbit of :func:`cube_group`, each with its symmetry chain:
    pairs (p, others) of positions in the subset such that WLOG Q_p >= Q_j for j in others.

    Chain: G_0 = the subset's stabiliser; p_0 = 0 and others = its G_0-orbit; G_1 = the
    elements of G_0 fixing p_0, p_1 = the first position G_1 moves, and so on. Any point can
    be mapped by some g_0 in G_0 so that Q_{p_0} is the largest on its orbit, then by some g_1
    in G_1 (which keeps p_0 in place, so the first condition stays true) so that Q_{p_1} is the
    largest on its G_1-orbit, etc.; the objective and constraints do not change (module
    docstring (3))."""
    group = cube_group(d)
    seen, reps = set(), []
    for sub in itertools.combinations(range(2 ** d), m):
        if sub in seen:
            continue
        stab = []
        for g in group:
            image = tuple(sorted(g[i] for i in sub))
            seen.add(image)
            if image == sub:
                stab.append(tuple(sub.index(g[i]) for i in sub))   # as a permutation
        chain = []
        for p in range(m):
            orbit = sorted({perm[p] for perm in stab})
            if len(orbit) > 1:
                chain.append((p, tuple(j for j in orbit if j != p)))
            stab = [perm for perm in stab if perm[p] == p]
            if len(stab) == 1:
                break
        reps.append((sub, tuple(chain)))
    return tuple(reps)


# --------------------------------------------------------------------------------------------
# h(u) = (1+u)^a - 1 - a u and its derivative, with error bounds
# --------------------------------------------------------------------------------------------
def _h(u, a):
    """h(u) = (1+u)^a - 1 - a u >= 0 for u >= -1, and a bound on its evaluation error.

    With l = log1p(u): h = expm1(a l) - a expm1(l) = sum_{j>=2} (a^j - a) l^j / j!. For
    |a l| <= 0.1 the series up to j = 11 (the rest is below 1e-16 of the first term, which
    dominates the alternating ones) avoids the cancellation of the difference; elsewhere the
    difference loses at most a factor ~20, which the error bound covers."""
    u = np.asarray(u, float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        l = np.log1p(u)
        al = a * l
        val = np.expm1(al) - a * u
        # (the last term: the rounding of l through e^{a l}; 0 at u = -1, where l = -inf)
        mag = (np.abs(np.expm1(al)) + a * np.abs(u)
               + np.where(np.isfinite(l), np.exp(np.minimum(al, 709.0)) * a * np.abs(l), 0.0))
        err = 16 * _U * mag
        small = np.abs(al) <= 0.1
        if small.any():
            ls = l[small]
            aa = a if np.ndim(a) == 0 else np.broadcast_to(a, u.shape)[small]
            pj = aa * ls       # (a l)^j / j!
            qj = ls.copy()     # l^j / j!
            ser = np.zeros(ls.shape)
            for j in range(2, 12):
                pj = pj * (aa * ls) / j
                qj = qj * ls / j
                ser = ser + (pj - aa * qj)
            val[small] = ser
            err[small] = 32 * _U * np.abs(ser)
        zero = u == 0
        val = np.where(zero, 0.0, val)
        err = np.where(zero, 0.0, err)
    return np.maximum(val, 0.0), err


def _dh_abs_max(u_lo, u_hi, a):
    """max |h'| over [u_lo, u_hi] (h' = a ((1+u)^(a-1) - 1) is increasing), rounded up."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        u_lo = np.maximum(u_lo, -1.0)
        d_lo = a * np.expm1((a - 1.0) * np.log1p(u_lo))
        d_hi = a * np.expm1((a - 1.0) * np.log1p(u_hi))
        out = np.maximum(np.abs(d_lo), np.abs(d_hi))
    return out * (1.0 + 64 * _U) + 1e-300


# --------------------------------------------------------------------------------------------
# per-corner terms s psi1(w), s psi2(w) of C1, C2
# --------------------------------------------------------------------------------------------
def _psi(w, a):
    """(psi1(w), err1, psi2(w), err2): psi1 = (1-w) h((2w-1)/(1-w)), psi2(w) = psi1(1-w);
    +inf at w = 1 (resp. 0), where Q (resp. P) vanishes but the other does not."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.asarray(w, float)
        one_w = 1.0 - w
        u1 = (2.0 * w - 1.0) / one_w
        u2 = (1.0 - 2.0 * w) / w
        h1, e1 = _h(u1, a)
        h2, e2 = _h(u2, a)
        # rounding of u (a few ulps relative, plus an absolute ulp of 2w - 1) through h'
        du1 = 8 * _U * (np.abs(u1) + 1.0 / np.maximum(one_w, 1e-300))
        du2 = 8 * _U * (np.abs(u2) + 1.0 / np.maximum(w, 1e-300))
        e1 = e1 + _dh_abs_max(u1 - du1, u1 + du1, a) * du1
        e2 = e2 + _dh_abs_max(u2 - du2, u2 + du2, a) * du2
        p1 = one_w * h1
        p2 = w * h2
        e1 = one_w * e1 + 4 * _U * p1
        e2 = w * e2 + 4 * _U * p2
    p1 = np.where(w >= 1.0, np.inf, p1)
    p2 = np.where(w <= 0.0, np.inf, p2)
    e1 = np.where(np.isfinite(p1), e1, 0.0)
    e2 = np.where(np.isfinite(p2), e2, 0.0)
    return p1, e1, p2, e2


def _psi_min(w_lo, w_hi, a):
    """Lower bounds on min psi1, min psi2 over [w_lo, w_hi] (0 if 1/2 is inside; else the
    value at the end nearest 1/2 minus its error: both decrease towards 1/2)."""
    near = np.clip(0.5, w_lo, w_hi)
    p1, e1, p2, e2 = _psi(near, a)
    inside = (w_lo <= 0.5) & (w_hi >= 0.5)
    return (np.where(inside, 0.0, np.maximum(p1 - e1, 0.0)),
            np.where(inside, 0.0, np.maximum(p2 - e2, 0.0)))


def _shrink_w(w_lo, w_hi, bound, a, which):
    """Shrink [w_lo, w_hi] so that it still holds every w with psi_which(w) <= bound (bound
    may be inf). Each end moves only to a point where psi - err > bound is proven, and psi
    is monotone between that point and the old end (both on one side of 1/2)."""
    new_lo, new_hi = w_lo.copy(), w_hi.copy()
    fin = np.isfinite(bound)
    for side in (-1, 1):
        # side -1: the part below 1/2, moving w_lo up; side +1: above 1/2, moving w_hi down
        end = w_lo if side < 0 else w_hi
        on_side = fin & ((end < 0.5) if side < 0 else (end > 0.5))
        if not on_side.any():
            continue
        far = np.where(on_side, end, 0.5)
        p = _psi(far, a)
        val = p[0] - p[1] if which == 1 else p[2] - p[3]
        move = on_side & (val > bound)
        if not move.any():
            continue
        # bisection on [far, 1/2 clipped to the interval]: out = proven-infeasible end
        out = far.copy()
        inn = np.where(side < 0, np.minimum(w_hi, 0.5), np.maximum(w_lo, 0.5))
        for _ in range(14):
            mid = 0.5 * (out + inn)
            p = _psi(mid, a)
            val = p[0] - p[1] if which == 1 else p[2] - p[3]
            bad = val > bound
            out = np.where(move & bad, mid, out)
            inn = np.where(move & ~bad, mid, inn)
        if side < 0:
            new_lo = np.where(move, out, new_lo)
        else:
            new_hi = np.where(move, out, new_hi)
    return new_lo, new_hi


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
# the branch-and-bound over one support
# --------------------------------------------------------------------------------------------
def _widen_lo(v):
    """A float <= v for a bound computed with a few roundings (pushes a lower end out)."""
    return v - 16 * _U * np.abs(v) - 1e-300


def _widen_hi(v):
    return v + 16 * _U * np.abs(v) + 1e-300


def _log_ratio_bounds(w_lo, w_hi):
    """log L over a w-interval, L = w / (1 - w) = P / Q: (lower end rounded down, upper end
    rounded up; -inf / +inf at w = 0 / 1). The two logs and their difference err by at most
    a few ulps of |log w| + |log1p(-w)| + |result|, which 8 ulps of 1 + |result| cover."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.log(w_lo) - np.log1p(-w_lo)
        hi = np.log(w_hi) - np.log1p(-w_hi)
        return lo - 8 * _U * (1.0 + np.abs(lo)), hi + 8 * _U * (1.0 + np.abs(hi))


@functools.lru_cache(maxsize=None)
def _vertex_table(m: int) -> np.ndarray:
    """(4^m, m) table: vertex i of a cell takes corner-vertex idx[i, v] in 0..3 at corner v,
    where 2 * (s at its high end) + (w at its high end) numbers the quadrilateral's corners."""
    return np.array(list(itertools.product(range(4), repeat=m)), dtype=np.intp)


class _Instance:
    """Constants of one (eps, alpha, support) search."""

    def __init__(self, eps, a, logw_s, orbit, activity):
        self.a = float(a)
        E = (a - 1.0) * eps
        self.eta_hi = math.expm1(E * (1 + 4 * _U)) * (1 + 4 * _U)
        self.eta_lo = math.expm1(E * (1 - 4 * _U)) * (1 - 4 * _U)
        self.W = np.exp(logw_s)                           # (S, m)
        self.m = logw_s.shape[1]
        # relative error of a W entry and of a sum of m products of W with cell coordinates
        self.rho = 16 * _U * (8.0 + self.m + 2.0 * float(np.abs(logw_s).max()))
        self.orbit = orbit
        self.activity = activity                          # "both" (m = 4) or "one" (m = 3)


def _propagate(inst, s_lo, s_hi, w_lo, w_hi, rounds=3):
    """Shrink every cell to one holding all its feasible points (see (6) in the module
    docstring); returns the new bounds and a mask of cells proven to hold none."""
    a, eta = inst.a, inst.eta_hi
    dead = np.zeros(s_lo.shape[0], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(rounds):
            # sum s = 2
            tot_lo, tot_hi = s_lo.sum(1, keepdims=True), s_hi.sum(1, keepdims=True)
            s_lo = np.fmax(s_lo, _widen_lo(2.0 - (tot_hi - s_hi)))
            s_hi = np.fmin(s_hi, _widen_hi(2.0 - (tot_lo - s_lo)))
            # sum P = 1 and sum Q = 1, P = s w, Q = s (1 - w)
            for part in (0, 1):
                if part == 0:
                    v_lo, v_hi = _widen_lo(s_lo * w_lo), _widen_hi(s_hi * w_hi)
                else:
                    v_lo, v_hi = _widen_lo(s_lo * (1.0 - w_hi)), _widen_hi(s_hi * (1.0 - w_lo))
                t_lo, t_hi = v_lo.sum(1, keepdims=True), v_hi.sum(1, keepdims=True)
                n_lo = np.fmax(v_lo, _widen_lo(1.0 - (t_hi - v_hi)))
                n_hi = np.fmin(v_hi, _widen_hi(1.0 - (t_lo - v_lo)))
                # fraction f = w (P) or 1 - w (Q) lies in [n_lo / s_hi, n_hi / s_lo]
                f_lo = np.where(s_hi > 0, _widen_lo(n_lo / s_hi), 0.0)
                f_hi = np.where(s_lo > 0, _widen_hi(n_hi / s_lo), 1.0)
                f_lo, f_hi = np.nan_to_num(f_lo, nan=0.0), np.nan_to_num(f_hi, nan=1.0)
                if part == 0:
                    w_lo, w_hi = np.fmax(w_lo, f_lo), np.fmin(w_hi, f_hi)
                    fr_lo, fr_hi = w_lo, w_hi
                else:
                    w_lo = np.fmax(w_lo, _widen_lo(1.0 - f_hi))
                    w_hi = np.fmin(w_hi, _widen_hi(1.0 - f_lo))
                    fr_lo, fr_hi = _widen_lo(1.0 - w_hi), _widen_hi(1.0 - w_lo)
                # and s in [n_lo / fr_hi, n_hi / fr_lo]
                s_lo = np.fmax(s_lo, np.where(fr_hi > 0, _widen_lo(n_lo / fr_hi), 0.0))
                s_hi = np.fmin(s_hi, np.where(fr_lo > 0, _widen_hi(n_hi / fr_lo), np.inf))
            # C1, C2 budgets: each term s psi(w) is >= s_lo min psi and the terms sum to <= eta
            m1, m2 = _psi_min(w_lo, w_hi, a)
            t1 = s_lo * m1
            t2 = s_lo * m2
            dead |= (_widen_lo(t1.sum(1)) > eta) | (_widen_lo(t2.sum(1)) > eta)
            b1 = _widen_hi(eta - (t1.sum(1, keepdims=True) - t1))
            b2 = _widen_hi(eta - (t2.sum(1, keepdims=True) - t2))
            s_hi = np.fmin(s_hi, np.where(m1 > 0, _widen_hi(b1 / m1), np.inf))
            s_hi = np.fmin(s_hi, np.where(m2 > 0, _widen_hi(b2 / m2), np.inf))
            pos = s_lo > 0
            lim1 = np.where(pos, _widen_hi(b1 / np.where(pos, s_lo, 1.0)), np.inf)
            lim2 = np.where(pos, _widen_hi(b2 / np.where(pos, s_lo, 1.0)), np.inf)
            shape = w_lo.shape
            w_lo, w_hi = (v.reshape(shape) for v in _shrink_w(
                w_lo.ravel(), w_hi.ravel(), lim1.ravel(), a, 1))
            w_lo, w_hi = (v.reshape(shape) for v in _shrink_w(
                w_lo.ravel(), w_hi.ravel(), lim2.ravel(), a, 2))
            w_lo, w_hi = np.clip(w_lo, 0.0, 1.0), np.clip(w_hi, 0.0, 1.0)
            s_lo, s_hi = np.clip(s_lo, 0.0, 2.0), np.clip(s_hi, 0.0, 2.0)
    dead |= ((s_lo > s_hi) | (w_lo > w_hi)).any(axis=1)
    # symmetry (3): WLOG Q_p >= Q_j along the chain of support_orbits
    if inst.orbit:
        q_lo = s_lo * (1.0 - w_hi)
        q_hi = s_hi * (1.0 - w_lo)
        for p, others in inst.orbit:
            for j in others:
                dead |= _widen_lo(q_lo[:, j]) > _widen_hi(q_hi[:, p])
    return s_lo, s_hi, w_lo, w_hi, dead


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
    the masses s_v = Q_v (1 + L_v) they imply (module docstring (6)); returns the new s
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
    a, m = inst.a, s_lo.shape[1]
    both = inst.activity == "both"
    lL_lo, lL_hi = _log_ratio_bounds(w_lo, w_hi)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        def dn(x):    # exp(x) rounded down
            return _widen_lo(np.exp(x))

        def up(x):
            return _widen_hi(np.exp(x))

        # (coefficient rows in >= form, rhs); a row with a non-finite coefficient is dropped
        rows = [(-dn(lL_lo), -1.0), (up(lL_hi), 1.0),
                (-dn(a * lL_lo), -(1.0 + inst.eta_hi)), (-dn((1.0 - a) * lL_hi),
                                                         -(1.0 + inst.eta_hi))]
        if both:
            rows += [(up(a * lL_hi), 1.0 + inst.eta_lo), (up((1.0 - a) * lL_lo),
                                                           1.0 + inst.eta_lo)]
        n = s_lo.shape[0]
        R = len(rows)
        A = np.zeros((n, R + 1, m))
        b = np.zeros((n, R + 1))
        A[:, 0, :] = 1.0
        b[:, 0] = 1.0
        for i, (coef, rhs) in enumerate(rows, start=1):
            ok = (np.isfinite(coef) & (np.abs(coef) < 1e100)).all(axis=1)
            A[:, i, :] = np.where(ok[:, None], coef, 0.0)
            b[:, i] = np.where(ok, rhs, 0.0)
        q_lo = np.clip(_widen_lo(s_lo * (1.0 - w_hi)), 0.0, 1.0)
        q_hi = np.clip(_widen_hi(s_hi * (1.0 - w_lo)), 0.0, 1.0)
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
    a, m, W = inst.a, inst.m, inst.W
    n = s_lo.shape[0]
    idx = _vertex_table(m)
    V = idx.shape[0]
    sv, wv = _corner_vertices(s_lo, s_hi, w_lo, w_hi)
    P = sv * wv
    Q = sv * (1.0 - wv)
    D = sv * (2.0 * wv - 1.0)
    with np.errstate(invalid="ignore"):
        p1, e1, p2, e2 = _psi(wv, a)
        c1 = np.where(sv > 0, sv * p1, 0.0)
        c2 = np.where(sv > 0, sv * p2, 0.0)
        c1e = np.where(sv > 0, sv * e1 + 4 * _U * c1, 0.0)
        c2e = np.where(sv > 0, sv * e2 + 4 * _U * c2, 0.0)
    # activity (2): C1 is convex, so its maximum over the cell is at a vertex and at most the
    # sum of the per-corner maxima; a cell where it cannot reach eta holds no candidate
    c1max = (c1 + c1e).max(axis=2).sum(axis=1) * (1 + 8 * _U)
    c2max = (c2 + c2e).max(axis=2).sum(axis=1) * (1 + 8 * _U)
    # (NaN-safe: only a proven shortfall counts)
    reach1, reach2 = ~(c1max < inst.eta_lo), ~(c2max < inst.eta_lo)
    inactive = ~(reach1 & reach2) if inst.activity == "both" else ~(reach1 | reach2)

    # tangent cuts (5) at the ratio of each corner's centre, L = w/(1-w)
    wc = np.clip(0.5 * (w_lo + w_hi), 1e-300, 1.0 - 1e-16)
    lLc = np.log(wc) - np.log1p(-wc)

    lLlo, lLhi = _log_ratio_bounds(w_lo, w_hi)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        row_coef = [(_widen_lo(np.expm1(a * lLlo)), 1), (_widen_lo(np.expm1((1.0 - a) * lLhi)), 1)]
        if inst.activity == "both":
            row_coef += [(_widen_hi(np.expm1(a * lLhi)), -1),
                         (_widen_hi(np.expm1((1.0 - a) * lLlo)), -1)]
        row_coef = [(np.where(np.abs(kc) < 1e250, kc, np.nan), sg) for kc, sg in row_coef]
    bound = np.full(n, np.inf)
    var = np.zeros((n, m, 2))
    y_out = np.zeros_like(y_warm)
    chunk = max(1, int(4e6 // (V * W.shape[0])))
    ar = np.arange(m)
    for i0 in range(0, n, chunk):
        sl = slice(i0, min(n, i0 + chunk))
        Pi = P[sl][:, ar, idx]                           # (n', V, m)
        Qi = Q[sl][:, ar, idx]
        Di = D[sl][:, ar, idx]
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
        Gup = np.where(np.isnan(Gup), np.inf, Gup)
        # split heuristic: the largest change of G along each coordinate of each corner
        nn = Gup.shape[0]
        Gr = np.where(np.isfinite(Gup), Gup, 1e300).reshape((nn,) + (2, 2) * m)
        for v in range(m):
            for j in range(2):
                dif = np.abs(np.diff(Gr, axis=1 + 2 * v + j))
                var[sl, v, j] = dif.reshape(nn, -1).max(axis=1)
        # rows of the LP (5): equalities, tangent cuts, activity
        rows, errs = [], []
        ssum = Pi.sum(2) + Qi.sum(2)                     # = sum s at the vertex
        rows.append(ssum - 2.0)
        errs.append(8 * _U * ssum.max(1))
        psum = Pi.sum(2)
        rows.append(psum - 1.0)
        errs.append(8 * _U * psum.max(1))
        t_rows, t_errs = _tangent_rows(Pi, Qi, lLc[sl], a, inst.eta_hi)
        rows += t_rows
        errs += t_errs
        # and at the cell's lowest and highest ratios (any ratios give valid cuts)
        for lx in (lLlo, lLhi):
            lxs = np.where(np.isfinite(lx[sl]), lx[sl], 0.0)
            t_rows, t_errs = _tangent_rows(Pi, Qi, lxs, a, inst.eta_hi)
            rows += t_rows
            errs += t_errs
        if inst.activity == "both":
            for cc, ce in ((c1, c1e), (c2, c2e)):
                up = (cc[sl][:, ar, idx] + ce[sl][:, ar, idx]).sum(2) * (1 + 8 * _U)
                rows.append(inst.eta_lo - up)             # sum l C(z_i) >= eta
                errs.append(8 * _U * np.where(np.isfinite(up), up, 0.0).max(1))
        # ratio rows: on the cell P_v / Q_v = L_v lies in [L_lo, L_hi] (from w), and
        # Q L^a, Q L^(1-a) are monotone in L, so sum Q (L_lo^a - 1) <= eta,
        # sum Q (L_hi^(1-a) - 1) <= eta (sum Q = 1); with activity also
        # sum Q (L_hi^a - 1) >= eta and sum Q (L_lo^(1-a) - 1) >= eta. Coefficients are
        # rounded so that each row stays valid (they multiply Q >= 0)
        for kc, sign in row_coef:
            kq = kc[sl]
            kf = np.where(np.isfinite(kq), kq, 0.0)
            val = (Qi @ kf[..., None])[..., 0]
            mag = (Qi @ np.abs(kf)[..., None])[..., 0]
            row = (val - inst.eta_hi) if sign > 0 else (inst.eta_lo - val)
            row = np.where(np.isfinite(kq).all(axis=1)[:, None], row, np.nan)
            rows.append(row)
            errs.append(8 * _U * (mag.max(1) + inst.eta_hi))
        A = np.stack(rows, axis=2)
        Aerr = np.stack(errs, axis=1)
        fin = np.isfinite(Gup).all(axis=1)
        if fin.any():
            # multipliers inherited from the parent cell first; the interior-point solve
            # only where they do not already settle the cell
            Gf, Af, Ef = Gup[fin], A[fin], Aerr[fin]
            phi, yf = _phi(Gf, Af, Ef, y_warm[sl][fin], 2)
            hard = phi > thr
            if hard.any():
                y_new, _ = _dual_bound(Gf[hard], Af[hard], 2)
                phi2, y2 = _phi(Gf[hard], Af[hard], Ef[hard], y_new, 2)
                better = phi2 < phi[hard]
                phi[hard] = np.where(better, phi2, phi[hard])
                yf[hard] = np.where(better[:, None], y2, yf[hard])
            bb = bound[sl]
            bb[fin] = phi
            bound[sl] = bb
            yy = y_out[sl]
            yy[fin] = yf
            y_out[sl] = yy
    bound = np.where(np.isnan(bound), np.inf, np.maximum(bound, 0.0))
    return bound, inactive, var, y_out


def _split(s_lo, s_hi, w_lo, w_hi, var):
    """Split each cell in two along the coordinate over which G varies most (ties: the widest);
    an s-interval reaching 0 is cut at a quarter (small masses are resolved geometrically)."""
    n, m = s_lo.shape
    score = var.reshape(n, 2 * m).copy()
    width = np.stack([s_hi - s_lo, w_hi - w_lo], axis=2).reshape(n, 2 * m)
    score = np.where(width > 1e-15, score, -1.0)
    score = score + 1e-300 * width
    j = score.argmax(axis=1)
    v, coord = j // 2, j % 2
    r = np.arange(n)
    out = [x.copy() for x in (s_lo, s_hi, w_lo, w_hi)]
    out2 = [x.copy() for x in (s_lo, s_hi, w_lo, w_hi)]
    is_s = coord == 0
    lo = np.where(is_s, s_lo[r, v], w_lo[r, v])
    hi = np.where(is_s, s_hi[r, v], w_hi[r, v])
    mid = np.where(is_s & (lo == 0), 0.25 * hi,
                   np.where(is_s & (lo > 0) & (hi > 4 * lo), np.sqrt(lo * hi), 0.5 * (lo + hi)))
    rs, rw = r[is_s], r[~is_s]
    out[1][rs, v[is_s]] = mid[is_s]
    out2[0][rs, v[is_s]] = mid[is_s]
    out[3][rw, v[~is_s]] = mid[~is_s]
    out2[2][rw, v[~is_s]] = mid[~is_s]
    return [np.concatenate([x, y]) for x, y in zip(out, out2)]


class SupportSearch:
    """Best-first branch-and-bound over one support (module docstring (4)-(6)).

    ``best_r``: a Rényi value attained by a proven-feasible pair (any value <= Post is safe; it
    only sets the threshold best_r (1 + rtol) + atol below which a cell is settled). Cells are
    kept in a pool with their bounds; each :meth:`step` splits the cells with the largest
    bounds, so :attr:`upper` (the largest bound of any settled or pooled cell, in Rényi units)
    is a proven upper bound on the largest R_alpha(P W || Q W) over this support's candidates
    at every moment, and decreases as the budget grows."""

    def __init__(self, eps, a, logw_s, orbit, best_r, rtol, atol, cap_r=np.inf):
        m = logw_s.shape[1]
        self.inst = _Instance(eps, a, logw_s, orbit, "both" if m == 4 else "one")
        self.am1 = a - 1.0
        thr = max(best_r * (1.0 + rtol) + atol, 0.0)
        self.thr_g = math.expm1(self.am1 * thr) * (1 - 8 * _U)
        self.cap_g = (math.expm1(self.am1 * cap_r) * (1 + 8 * _U) if np.isfinite(cap_r)
                      else np.inf)
        # initial grid: s in a few pieces (small masses apart), w below / above 1/2
        s_edges = np.array([0.0, 0.1, 1.0, 2.0])
        w_edges = np.array([0.0, 0.5, 1.0])
        pieces = [(s_edges[i], s_edges[i + 1], w_edges[j], w_edges[j + 1])
                  for i in range(len(s_edges) - 1) for j in range(len(w_edges) - 1)]
        combo = np.array(list(itertools.product(range(len(pieces)), repeat=m)))
        arr = np.array(pieces)[combo]                     # (n, m, 4)
        cells = tuple(np.ascontiguousarray(arr[..., t]) for t in range(4))
        self.n_rows = 14 if m == 4 else 10
        self.settled = -np.inf   # largest bound of a cell settled within tolerance
        self.used = 0
        empty = np.zeros((0, m))
        self.pool = (empty, empty, empty, empty, np.zeros((0, self.n_rows)), np.zeros(0),
                     np.zeros((0, m, 2)))
        self._add(*cells, np.zeros((cells[0].shape[0], self.n_rows)))

    def _add(self, s_lo, s_hi, w_lo, w_hi, y):
        """Propagate and bound new cells; settle those within tolerance, pool the rest."""
        s_lo, s_hi, w_lo, w_hi, dead = _propagate(self.inst, s_lo, s_hi, w_lo, w_hi)
        s_lo, s_hi, dead2 = _tighten_masses(self.inst, s_lo, s_hi, w_lo, w_hi)
        dead |= dead2 | (s_lo > s_hi).any(axis=1)
        keep = ~dead
        s_lo, s_hi, w_lo, w_hi, y = (x[keep] for x in (s_lo, s_hi, w_lo, w_hi, y))
        if not s_lo.shape[0]:
            return
        b, inactive, var, y = _cell_bound(self.inst, s_lo, s_hi, w_lo, w_hi, y, self.thr_g)
        self.used += s_lo.shape[0]
        b = np.fmin(b, self.cap_g)       # (the closed-form cap bounds every cell)
        live = ~inactive
        done = live & (b <= self.thr_g)
        if done.any():
            self.settled = max(self.settled, float(b[done].max()))
        go = live & ~done
        new = (s_lo, s_hi, w_lo, w_hi, y, b, var)
        self.pool = tuple(np.concatenate([old, x[go]]) for old, x in zip(self.pool, new))

    @property
    def pool_max(self) -> float:
        return float(self.pool[5].max()) if self.pool[5].size else -np.inf

    @property
    def done(self) -> bool:
        return self.pool[5].size == 0

    @property
    def upper(self) -> float:
        """Proven upper bound (Rényi units) on this support's candidates; -inf if none."""
        top = max(self.settled, self.pool_max)
        if top == -np.inf:
            return -np.inf
        if not np.isfinite(top):
            return np.inf
        return math.log1p(top) / self.am1 * (1 + 8 * _U)

    def step(self, batch):
        """Split the ``batch`` pooled cells with the largest bounds."""
        b = self.pool[5]
        if b.size <= batch:
            take = np.ones(b.size, dtype=bool)
        else:
            take = np.zeros(b.size, dtype=bool)
            take[np.argpartition(-b, batch - 1)[:batch]] = True
        sel = [x[take] for x in self.pool]
        self.pool = tuple(x[~take] for x in self.pool)
        s_lo, s_hi, w_lo, w_hi, y, _b, var = sel
        s_lo, s_hi, w_lo, w_hi = _split(s_lo, s_hi, w_lo, w_hi, var)
        self._add(s_lo, s_hi, w_lo, w_hi, np.concatenate([y, y]))


def search_supports(searches, max_cells, batch=512):
    """Run several :class:`SupportSearch` es under one cell budget, always refining the one
    with the largest pooled bound (so the overall upper bound falls fastest). Returns True when
    every search finished within tolerance."""
    while True:
        live = [s for s in searches if not s.done]
        if not live:
            return True
        if sum(s.used for s in searches) >= max_cells:
            return False
        worst = max(live, key=lambda s: (s.pool_max, -s.used))
        worst.step(batch)
