"""Certified global upper bound on Post_{alpha,k}(epsilon) for d = 2, 3 (Imola & Chaudhuri 2021,
Alg. 3).

Post(eps) = max R_alpha(P W || Q W) over distributions P, Q on the 2^d corners {c, 1-c}^d with
R_alpha(P || Q) <= eps and R_alpha(Q || P) <= eps; W is the channel from a corner to the
sufficient statistic of the k samples
(:func:`dpamp.amplification.bernoulli._moments.statistic_channel`). Maximising the convex
objective over the convex feasible set is not a convex program, so upper bounds are proven by
a branch-and-bound. Everything below is a proof; the comments say which step each part of the
code carries out. Steps (2)-(3) are carried out in :mod:`dpamp.amplification.bernoulli._supports`,
(1), (4) and the propagation of (6) in :mod:`dpamp.amplification.bernoulli._cells`, (5) and the
mass LP of (6) in :mod:`dpamp.amplification.bernoulli._cell_bounds`; this module runs the
search over the cells of one support (:class:`SupportSearch`) and over several supports
(:func:`search_supports`).

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
    :func:`~dpamp.amplification.bernoulli._supports.support_orbits`; a cell where some corner
    surely has more is discarded).

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
    Then each Q_v is bounded by a small LP in Q alone
    (:func:`~dpamp.amplification.bernoulli._cell_bounds._tighten_masses`): on a cell the
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

import itertools
import math

import numpy as np

from ._cell_bounds import _cell_bound, _tighten_masses
from ._cells import _U, _Instance, _propagate

#: largest E = (alpha-1) eps searched (e^E must stay far from overflow)
MAX_E = 600.0


# --------------------------------------------------------------------------------------------
# the branch-and-bound over one support
# --------------------------------------------------------------------------------------------
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
        s_lo, s_hi, w_lo, w_hi = (np.ascontiguousarray(arr[..., t]) for t in range(4))
        self.n_rows = 14 if m == 4 else 10
        self.settled = -np.inf   # largest bound of a cell settled within tolerance
        self.used = 0
        empty = np.zeros((0, m))
        # the pooled cells' (s_lo, s_hi, w_lo, w_hi, y, bound, var)
        self.pool: tuple[np.ndarray, ...] = (empty, empty, empty, empty,
                                             np.zeros((0, self.n_rows)), np.zeros(0),
                                             np.zeros((0, m, 2)))
        self._add(s_lo, s_hi, w_lo, w_hi, np.zeros((s_lo.shape[0], self.n_rows)))

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
