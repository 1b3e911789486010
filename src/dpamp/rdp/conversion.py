"""RDP -> (epsilon, delta) conversions, optimised over real orders.

classic  (003 Lemma 6 / eq. 2.2): eps = eps(alpha) + log(1/delta) / (alpha - 1)
improved (004 Lemma 33 item 8 = Prop. 14):
    delta = e^{-(alpha-1)(eps - eps(alpha))} (1/alpha) (1 - 1/alpha)^{alpha-1}, i.e.
    eps = eps(alpha) + [log(1/delta) + (alpha-1) log(1 - 1/alpha) - log(alpha)] / (alpha - 1).

Every order alpha gives a valid bound, so the optimisation only affects tightness, never
soundness. Soundness in floating point: the curve is read through :func:`upper_curve` (RDP is a
divergence, so >= 0; a value below 0 or NaN is rounding or a bug and is replaced by its proven
limit, 0 or inf; every value is moved up by a relative 2^-40, far above the few ulps that a sum
of composed curves can lose), and each objective carries the rounding error of its own terms
(``_pad``: 2^-50 times the sum of their magnitudes), so every value it returns is an upper
bound of the real formula at that order. It follows 003 Algorithm 5: a coarse geometric
("doubling") sweep over lambda = alpha - 1, extended by doubling while the optimum sits at the
top edge, then four zoom-in passes around the best point (the bisection step, done on
vectorised grids).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core.rounding import TINY

_COARSE = np.geomspace(1e-3, 255.0, 72)  # lambda grid; top edge extended by doubling
_CURVE_REL = 2.0 ** -40


def upper_curve(curve: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The RDP curve as an outward-rounded upper bound: never below 0 (a Rényi divergence is
    >= 0), NaN read as inf, and every value moved up by a relative 2^-40."""
    def up(alpha):
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.asarray(curve(alpha), dtype=float)
            v = np.where(np.isnan(v), np.inf, np.maximum(v, 0.0))
            return v * (1.0 + _CURVE_REL)
    return up


def _pad(*terms) -> np.ndarray:
    """A bound on the rounding error of a sum of a few floating-point terms, each computed to
    within a few ulps: 2^-50 (4.5 ulps) times the sum of their magnitudes (NaN-free)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = sum(np.abs(np.asarray(x, dtype=float)) for x in terms)
    return np.where(np.isnan(s), np.inf, s) * 2.0 ** -50


def eps_at_orders(alpha: np.ndarray, rdp: np.ndarray, log_inv_delta: float,
                  improved: bool = True) -> np.ndarray:
    """epsilon(delta) at each order (vectorised); log_inv_delta = log(1/delta)."""
    lam = alpha - 1.0
    t1: np.ndarray | float
    t2: np.ndarray | float
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if improved:
            t1, t2 = np.log1p(-1.0 / alpha), np.log(alpha) / lam
        else:
            t1 = t2 = 0.0
        t0 = log_inv_delta / lam
        out = rdp + t0 + t1 - t2
        out = out + _pad(rdp, t0, t1, t2)
    out = np.where(np.isnan(out), np.inf, out)
    return np.maximum(out, 0.0)


def log_delta_at_orders(alpha: np.ndarray, rdp: np.ndarray, epsilon: float,
                        improved: bool = True) -> np.ndarray:
    """log delta(epsilon) at each order (vectorised)."""
    lam = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t0, t1 = lam * rdp, lam * epsilon
        t2: np.ndarray | float
        t3: np.ndarray | float
        if improved:
            t2, t3 = lam * np.log1p(-1.0 / alpha), np.log(alpha)
        else:
            t2 = t3 = 0.0
        out = t0 - t1 + t2 - t3
        out = out + _pad(t0, t1, t2, t3)
    out = np.where(np.isnan(out), np.inf, out)
    return np.minimum(out, 0.0)


def _minimise(objective: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """Minimise objective(alpha) over alpha > 1; returns (best value, argmin alpha)."""
    lam = _COARSE
    vals = objective(1.0 + lam)
    # doubling: while the best order is the largest one tried, try larger ones (003 Alg. 5)
    while np.argmin(vals) == vals.size - 1 and lam[-1] < 1e6 and np.isfinite(vals[-1]):
        more = lam[-1] * np.geomspace(2.0, 16.0, 4)
        lam = np.concatenate([lam, more])
        vals = np.concatenate([vals, objective(1.0 + more)])
    best_i = int(np.argmin(vals))
    best_val, best_lam = float(vals[best_i]), float(lam[best_i])
    lo = lam[max(best_i - 1, 0)] if best_i > 0 else lam[0] / 2
    hi = lam[min(best_i + 1, lam.size - 1)]
    for _ in range(4):  # zoom in: the bisection step of 003 Alg. 5 on a vectorised grid
        grid = np.linspace(lo, hi, 25)
        v = objective(1.0 + grid)
        i = int(np.argmin(v))
        if v[i] < best_val:
            best_val, best_lam = float(v[i]), float(grid[i])
        step = grid[1] - grid[0]
        lo, hi = max(best_lam - step, grid[0]), min(best_lam + step, grid[-1])
        if not np.isfinite(best_val):
            break
    return best_val, 1.0 + best_lam


def epsilon_from_rdp(curve: Callable[[np.ndarray], np.ndarray], delta: float,
                     improved: bool = True, pure_epsilon: float = math.inf):
    """Smallest epsilon over alpha for a given delta (> 0), capped by the pure epsilon.
    Returns (epsilon, alpha used; inf alpha means the pure-DP bound was better)."""
    curve = upper_curve(curve)
    log_inv_delta = -math.log(delta)
    # (0, delta)-DP holds when delta >= TV; TV <= sqrt(1 - e^{-KL}) (Bretagnolle-Huber) and
    # KL <= D_alpha for every alpha > 1, so a small-order RDP value certifies epsilon = 0.
    kl_bound = float(curve(np.array([1.0 + 1e-6]))[0])
    if delta * delta * (1.0 - 2.0 ** -50) >= -math.expm1(-kl_bound) * (1.0 + 2.0 ** -50):
        return 0.0, 1.0 + 1e-6
    val, alpha = _minimise(lambda a: eps_at_orders(a, curve(a), log_inv_delta, improved))
    if pure_epsilon <= val:
        return pure_epsilon, math.inf
    return val, alpha


def delta_from_rdp(curve: Callable[[np.ndarray], np.ndarray], epsilon: float,
                   improved: bool = True, pure_epsilon: float = math.inf):
    """Smallest delta over alpha for a given epsilon; 0 only when epsilon >= pure epsilon (an
    upper bound of the real pure epsilon). A delta below the double range is reported as the
    smallest positive double, a proven upper bound, never as 0."""
    if epsilon >= pure_epsilon:
        return 0.0, math.inf
    curve = upper_curve(curve)
    val, alpha = _minimise(lambda a: log_delta_at_orders(a, curve(a), epsilon, improved))
    return min(1.0, max(math.exp(val), TINY)), alpha
