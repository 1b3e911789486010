"""Amplification by iteration (Balle et al. 2019, Thm 4; Feldman et al. 2018).

r noisy steps Y_i = Pi_K(psi_i(x) + Z_i), Z_i ~ N(0, sigma^2 I) (errata: the noise is Z_i, not
X_i), each psi_i L-Lipschitz on a convex set K, applied to two input distributions mu, nu with
W_inf(mu, nu) = Delta. Balle et al. 2019, Thm 4 (2): for any path mu = mu_0, mu_1, ..., mu_r = nu,

    R_alpha(mu K_1..K_r || nu K_1..K_r) <= alpha L^2 / (2 sigma^2) sum_i L^{2(r-i)} a_i^2,
    a_i = W_inf(mu_i, mu_{i-1})                                          ->
    :func:`iteration_path_bound`

**Optimal path** (``bound="optimal"``, derived here from (2)): the interpolating path
mu_i = Law((1 - t_i) X + t_i Y) along a W_inf-optimal coupling of (mu, nu) stays in K (convex)
and has a_i = (t_i - t_{i-1}) Delta for any 0 = t_0 <= ... <= t_r = 1, so any a_i >= 0 with
sum a_i = Delta is achievable. Minimising sum w_i a_i^2 (w_i = L^{2(r-i)}) under that constraint
gives a_i proportional to 1/w_i and

    R_alpha <= alpha L^2 Delta^2 / (2 sigma^2 S),   S = sum_{j=0}^{r-1} L^{-2j}
             = alpha Delta^2 L^{2r} (1 - L^2) / (2 sigma^2 (1 - L^{2r}))     (L != 1),
             = alpha Delta^2 / (2 r sigma^2)                                 (L = 1).

It is exact for linear psi_i(x) = L x without projection: then mu K_1..K_r for point masses at
distance Delta are N(., sigma^2 sum_{k<r} L^{2k}) with means L^r Delta apart, whose Rényi
divergence is alpha L^{2r} Delta^2 / (2 sigma^2 sum_{k<r} L^{2k}), the same number.

**Paper's bound** (``bound="paper"``, Balle et al. 2019, Thm 4 (3), L <= 1): alpha Delta^2 L^{r+1} /
(2 r sigma^2). It is the optimal path bound weakened by AM-GM (S >= r L^{-(r-1)}), so it is never
smaller; equal at L = 1 (Feldman et al. Thm 1). For L > 1 the paper's bound is not available (the
optimal-path bound still holds).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_REL = 1e-12


def linear_rdp(alpha: np.ndarray, coef: float, positive: bool) -> np.ndarray:
    """The RDP curve alpha * coef, rounded up by a relative 1e-12. ``positive`` says whether the
    true coefficient is > 0 (decided from the inputs, not from the float, which may have
    underflowed): then every value is at least the smallest positive float and order inf gives
    inf (never a false pure-DP claim); otherwise the curve is 0."""
    alpha = np.asarray(alpha, dtype=float)
    if not positive:
        return np.zeros(alpha.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.maximum(alpha * (coef * (1 + _REL)), 5e-324)
    return np.where(np.isinf(alpha), np.inf, out)


def optimal_coefficient(lipschitz: float, steps):
    """L^2 / S with S = sum_{j=0}^{r-1} L^{-2j}, in log space (x = -2 log L, S = expm1(r x) /
    expm1(x)); 1/r at L = 1, 0 at L = 0. Vectorised over ``steps`` (integers >= 1)."""
    L = float(lipschitz)
    r = np.asarray(steps, dtype=float)
    if L == 0.0:
        out = np.zeros(r.shape)
    elif L == 1.0:
        out = 1.0 / r
    else:
        x = -2.0 * math.log(L)
        with np.errstate(over="ignore", under="ignore"):
            if x > 0:  # L < 1: S = e^{r x} (1 - e^{-r x}) / expm1(x)
                log_s = r * x + np.log(-np.expm1(-r * x)) - math.log(math.expm1(x))
            else:  # L > 1: S = (1 - e^{r x}) / (1 - e^{x}), both factors positive
                log_s = np.log(-np.expm1(r * x)) - math.log(-math.expm1(x))
            out = np.exp(2.0 * math.log(L) - log_s)
    return out if out.ndim else float(out)


def paper_coefficient(lipschitz: float, steps):
    """L^{r+1} / r (Balle et al. 2019, Thm 4 (3) without the alpha Delta^2 / (2 sigma^2) factor);
    vectorised."""
    L = float(lipschitz)
    r = np.asarray(steps, dtype=float)
    with np.errstate(divide="ignore", under="ignore"):
        out = np.exp((r + 1) * np.log(L)) / r if L > 0 else np.zeros(r.shape)
    return out if out.ndim else float(out)


def amplification_by_iteration(alpha: ArrayLike, sigma: float, lipschitz: float, steps: int,
                               distance: float = 1.0,
                               bound: str = "optimal") -> float | np.ndarray:
    """RDP of r = ``steps`` noisy L-Lipschitz steps (noise N(0, sigma^2 I), optional projection)
    started from two distributions at W_inf distance ``distance`` (Balle et al. 2019, Thm 4).

    ``bound="optimal"``: the best path in Thm 4 (2), alpha L^2 Delta^2 / (2 sigma^2 S) (module
    docstring); any L >= 0. ``bound="paper"``: Thm 4 (3), alpha Delta^2 L^{r+1} / (2 r sigma^2),
    requires L <= 1. Vectorised over alpha; rounded up by a relative 1e-12."""
    a = V.orders(alpha)
    s = V.positive("sigma", sigma)
    L = V.nonnegative("lipschitz", lipschitz)
    r = V.integer("steps", steps, low=1)
    dist = V.nonnegative("distance", distance)
    if bound == "optimal":
        coef = optimal_coefficient(L, r) * dist ** 2 / (2.0 * s ** 2)
    elif bound == "paper":
        if L > 1.0:
            raise ValueError(f"lipschitz must be in [0, 1] for Balle, Barthe, Gaboardi & "
                             f"Geumlek 2019, Thm 4 bound (3) (got {L:g}); "
                             "use bound='optimal' (Thm 4 (2) with the best path), valid for any L")
        coef = paper_coefficient(L, r) * dist ** 2 / (2.0 * s ** 2)
    else:
        raise ValueError(f"bound must be 'optimal' or 'paper' (got {bound!r})")
    out = linear_rdp(a, coef, dist > 0 and L > 0)
    return out if out.ndim else float(out)


def iteration_path_bound(alpha: ArrayLike, sigma: float, lipschitz: float,
                         distances: ArrayLike) -> float | np.ndarray:
    """Balle et al. 2019, Thm 4 (2) for a given path: alpha L^2 / (2 sigma^2) sum_i L^{2(r-i)} a_i^2
    with a_i = W_inf(mu_i, mu_{i-1}), i = 1..r (``distances``; their sum must reach W_inf(mu, nu)
    for the path to connect mu to nu - the caller's responsibility). Vectorised over alpha."""
    a = V.orders(alpha)
    s = V.positive("sigma", sigma)
    L = V.nonnegative("lipschitz", lipschitz)
    d = V.reals("distances", distances, low=0.0, allow_inf=False).ravel()
    if d.size == 0:
        raise ValueError("distances must hold one W_inf distance per step (got none)")
    r = d.size
    with np.errstate(over="ignore"):
        powers = L ** (2.0 * (r - np.arange(1, r + 1)))  # L^{2(r-i)}; 0^0 = 1
    coef = L ** 2 / (2.0 * s ** 2) * float(np.sum(powers * d ** 2))
    out = linear_rdp(a, coef, L > 0 and bool((d > 0).any()))
    return out if out.ndim else float(out)
