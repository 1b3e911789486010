"""Proven lower end of Post_{alpha,k}(epsilon) for d > 1 (Imola & Chaudhuri 2021, Alg. 3): a
multi-start local search over pairs of corner distributions, every result re-verified with
rounding-error bounds. A local optimum is only a lower bound (errata: maximising a convex objective
is not a convex program); the upper end is proven by
:mod:`dpamp.amplification.bernoulli._support_search`.
"""
from __future__ import annotations

import numpy as np

from ._moments import _lse, _moment_general, _pair_moment, log_softmax, statistic_channel
from ._renyi import _feasible_log_odds


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
    constraint = {"type": "ineq", "fun": lambda v: _margins(v, nc, alpha, E),
                  "jac": lambda v: _margins_jacobian(v, nc, alpha)}
    best = 0.0
    for v0 in _starting_points(eps, alpha, nc, starts, seed):
        try:
            with np.errstate(all="ignore"):
                res = minimize(lambda v: _negated_objective(v, logw, nc, alpha), v0, jac=True,
                               method="SLSQP", constraints=[constraint],
                               options={"maxiter": 200, "ftol": 1e-12})
            v = res.x
        except (ValueError, FloatingPointError):  # pragma: no cover - solver breakdown
            v = v0
        for cand in (v, v0):
            lx, ly = _split(cand, nc)
            best = max(best, _verified(lx, ly, logw, alpha, E))
    return best


def _split(v, nc: int) -> tuple:
    """(log x, log y) of the softmax parameters v = (a, b): x = softmax(a), y = softmax(b)."""
    return log_softmax(v[:nc]), log_softmax(v[nc:])


# analytic gradients: dG/da_j = alpha (sum_m pi_m post^x_{mj} - x_j), dG/db_j = (1-alpha)
# (sum_m pi_m post^y_{mj} - y_j), pi = the alpha-tilted outcome weights, post = corner
# posteriors; for the constraint h1 = log sum_i x_i^a y_i^(1-a): dh1/da = alpha (rho - x),
# dh1/db = (1-alpha)(rho - y), rho = the tilted corner weights.
def _negated_objective(v, logw, nc: int, alpha: float) -> tuple:
    """(-G, -grad G) at the softmax parameters v (G the log-moment objective)."""
    lx, ly = _split(v, nc)
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


def _margins(v, nc: int, alpha: float, E: float):
    """E - h1, E - h2: both >= 0 where the pair meets its two constraints."""
    lx, ly = _split(v, nc)
    z1 = ly + alpha * (lx - ly)
    z2 = lx + alpha * (ly - lx)
    h1, h2 = _lse(z1), _lse(z2)
    return np.array([E - h1, E - h2])


def _margins_jacobian(v, nc: int, alpha: float):
    lx, ly = _split(v, nc)
    z1 = ly + alpha * (lx - ly)
    z2 = lx + alpha * (ly - lx)
    r1, r2 = np.exp(z1 - _lse(z1)), np.exp(z2 - _lse(z2))
    x, y = np.exp(lx), np.exp(ly)
    j1 = np.concatenate([alpha * (r1 - x), (1.0 - alpha) * (r1 - y)])
    j2 = np.concatenate([(1.0 - alpha) * (r2 - x), alpha * (r2 - y)])
    return -np.stack([j1, j2])


def _verified(lx, ly, logw, alpha: float, E: float) -> float:
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


def _starting_points(eps: float, alpha: float, nc: int, starts: int, seed: int) -> list:
    """The pair of eqs. 3-4 (mass p on the all-c corner and 1-p on the all-(1-c) corner) and
    ``starts`` random pairs, as softmax parameters."""
    rng = np.random.default_rng(seed)
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
    return inits
