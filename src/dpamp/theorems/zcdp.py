"""Zero-concentrated DP (Steinke 2022, Sec. 4.1): conversions and the rho of a mechanism.

rho-zCDP (Steinke 2022, Def. 11): E[exp(t Z)] <= exp(t(t+1) rho) for all t >= 0, Z the privacy loss;
equivalently RDP epsilon(alpha) <= rho alpha. rho adds under (adaptive) composition (Steinke 2022,
Thm 13, Prop. 19), which is the whole accounting: a composition whose parts all have a rho is
(sum_j count_j rho_j)-zCDP, converted to (epsilon, delta) at the end.

| function                | source                       |
|-------------------------|------------------------------|
| ``pure_to_zcdp``        | Steinke 2022, Prop. 16: eps-DP => eps^2/2-zCDP |
| ``gaussian_rho``        | Steinke 2022, Lemma 12: Delta^2 / (2 sigma^2)  |
| ``delta_simple``        | Steinke 2022, Prop. 14 (last line): exp(-(eps-rho)^2 / (4 rho)) |
| ``epsilon_simple``      | Steinke 2022, Remark 15: rho + 2 sqrt(rho log(1/delta)) |
| ``delta_improved``      | Steinke 2022, Prop. 14: inf_t exp(t(t+1)rho - eps t) (1/(t+1)) (1 - 1/(t+1))^t |
| ``epsilon_improved``    | Steinke 2022, Prop. 14 solved for eps, inf over t |
| ``rho_for``             | Steinke 2022, Remark 15 (closed form) or the improved conversion inverted |
"""
from __future__ import annotations

import math

import numpy as np

from ..core import roots, validate as V
from ..core.rounding import TINY, ulps_up, weighted_sum_up

__all__ = ["pure_to_zcdp", "gaussian_rho", "delta_simple", "epsilon_simple", "delta_improved",
           "epsilon_improved", "rho_for", "rho_of"]

#: relative + absolute margin on reported bounds: covers float rounding in the closed forms
#: (a few ulps), so a printed number is still a proven upper bound. Pessimistic.
_REL, _ABS = 1e-12, 1e-300


def _up(x: float) -> float:
    return x * (1.0 + _REL) + _ABS if math.isfinite(x) and x > 0 else x


def _rho(rho) -> float:
    return V.positive("rho", rho)


def pure_to_zcdp(epsilon: float) -> float:
    """Steinke 2022, Prop. 16: an epsilon-DP mechanism is (epsilon^2 / 2)-zCDP."""
    e = V.nonnegative("epsilon", epsilon)
    return 0.5 * e * e


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """Steinke 2022, Lemma 12: N(q(x), sigma^2 I) with L2 sensitivity Delta is Delta^2/(2
    sigma^2)-zCDP."""
    s = V.positive("sigma", sigma)
    d = V.nonnegative("sensitivity", sensitivity)
    return d * d / (2.0 * s * s)


def delta_simple(rho: float, epsilon: float) -> float:
    """Steinke 2022, Prop. 14 (simple form): rho-zCDP implies (epsilon, exp(-(epsilon-rho)^2/(4
    rho)))-DP for epsilon >= rho; below rho the bound is the trivial delta = 1."""
    rho = _rho(rho)
    eps = V.nonnegative("epsilon", epsilon)
    if eps <= rho:
        return 1.0
    return min(1.0, max(_up(math.exp(-((eps - rho) ** 2) / (4.0 * rho))), TINY))


def epsilon_simple(rho: float, delta: float) -> float:
    """Steinke 2022, Remark 15: rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP, delta
    in (0,1)."""
    rho = _rho(rho)
    d = V.delta(delta)
    return _up(rho + 2.0 * math.sqrt(rho * math.log(1.0 / d)))


def _log_delta_at(t: np.ndarray, rho: float, eps: float) -> np.ndarray:
    """log of exp(t(t+1) rho - eps t) (1/(t+1)) (1 - 1/(t+1))^t, vectorised over t > 0;
    t log(t/(t+1)) is written -t log1p(1/t) so that it stays accurate for large t."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        terms = (t * (t + 1.0) * rho, eps * t, np.log1p(t), t * np.log1p(1.0 / t))
        return terms[0] - terms[1] - terms[2] - terms[3] + _pad(terms)


def _eps_at(alpha: np.ndarray, rho: float, log_inv_delta: float) -> np.ndarray:
    """Prop. 14 solved for eps at t = alpha - 1 (the same formula as Steinke 2022, Lemma 33 item 8):
    eps = alpha rho + (log(1/delta) - log alpha) / (alpha - 1) + log(1 - 1/alpha)."""
    lam = alpha - 1.0
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        terms = (alpha * rho, log_inv_delta / lam, np.log(alpha) / lam, np.log1p(-1.0 / alpha))
        return terms[0] + terms[1] - terms[2] + terms[3] + _pad(terms)


def _pad(terms) -> np.ndarray:
    """Rounding error of a sum of terms each computed to a few ulps: 2^-50 x sum |term|, so
    that the objectives above are upper bounds of the real formula at every order."""
    s = sum(np.abs(x) for x in terms)
    return np.where(np.isnan(s), np.inf, s) * 2.0 ** -50


def _argmin_1d(f, grid: np.ndarray) -> float:
    """min of f over a geometric grid, refined by a bounded scalar search around the best grid
    point. Only tightness depends on this: every value of f is itself a valid bound."""
    vals = f(grid)
    i = int(np.argmin(vals))
    best = float(vals[i])
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi > lo:
        # scipy.optimize only here: importing it with the module put ~0.1 s on every query
        # that lists the methods (the zcdp method is loaded to ask whether it applies)
        from scipy.optimize import minimize_scalar
        r = minimize_scalar(lambda x: float(f(np.array([x]))[0]), bounds=(lo, hi),
                            method="bounded", options={"xatol": 1e-12 * hi})
        if r.success and float(r.fun) < best:
            best = float(f(np.array([r.x]))[0])  # re-evaluate: the value we report is f(x)
    return best


_T_GRID = np.geomspace(1e-10, 1e10, 801)


def delta_improved(rho: float, epsilon: float) -> float:
    """Steinke 2022, Prop. 14 (improved): rho-zCDP implies (epsilon, delta)-DP with

        delta = inf_{t > 0} exp(t(t+1) rho - epsilon t) * 1/(t+1) * (1 - 1/(t+1))^t,

    never above the simple form (which bounds the bracket by exp(-eps t)). Capped at 1."""
    rho = _rho(rho)
    eps = V.nonnegative("epsilon", epsilon)
    log_d = _argmin_1d(lambda t: _log_delta_at(t, rho, eps), _T_GRID)
    # below the double range: the smallest positive double, a proven bound (never 0)
    return min(1.0, max(_up(math.exp(min(log_d, 0.0))), TINY))


def epsilon_improved(rho: float, delta: float) -> float:
    """Steinke 2022, Prop. 14 (improved) solved for epsilon: with alpha = t + 1,

        epsilon(delta) = inf_{alpha > 1} alpha rho + (log(1/delta) - log alpha)/(alpha - 1)
                                         + log(1 - 1/alpha),

    floored at 0 ((eps, delta)-DP with eps < 0 implies (0, delta)-DP)."""
    rho = _rho(rho)
    d = V.delta(delta)
    e = _argmin_1d(lambda a: _eps_at(a, rho, -math.log(d)), 1.0 + _T_GRID)
    return _up(max(e, 0.0))


def rho_for(epsilon: float, delta: float, improved: bool = True) -> float:
    """The largest rho (within a relative 1e-12, rounded down) whose zCDP guarantee converts to
    (epsilon, delta)-DP.

    improved=False: Steinke 2022, Remark 15, rho = (sqrt(log(1/delta) + eps) -
    sqrt(log(1/delta)))^2, which inverts the simple conversion exactly. improved=True: bisection of
    the improved conversion (epsilon_improved is increasing in rho), starting from the Remark 15
    value, which is always sufficient. The returned rho satisfies epsilon_*(rho, delta) <=
    epsilon."""
    eps = V.positive("epsilon", epsilon)
    d = V.delta(delta)
    L = math.log(1.0 / d)
    # (sqrt(L+e) - sqrt(L))^2 = e^2 / (sqrt(L+e) + sqrt(L))^2 : no cancellation
    simple = eps * eps / (math.sqrt(L + eps) + math.sqrt(L)) ** 2
    lo, step = simple, 1e-12
    while epsilon_simple(lo, d) > eps:  # rounding margin: step down until certified
        lo *= 1.0 - step
        step *= 2.0
    if not improved:
        return lo
    too_large = lambda r: not epsilon_improved(r, d) <= eps
    lo, hi = roots.expand(too_large, lo, lo * 2.0)
    lo, _ = roots.bisect(too_large, lo, hi, iterations=200, rtol=1e-12)
    return lo


def rho_of(mechanism) -> float | None:
    """zCDP rho of one mechanism, or None when it has none we can prove: its family's declared
    rho (Gaussian -> Delta^2/(2 sigma^2), Lemma 12; ZCDP -> rho), else, for any mechanism with
    a finite pure epsilon (PureDP, Laplace, RandomizedResponse, EpsDelta(eps, 0), pure
    subsampled ones), eps^2/2 (Prop. 16). A composition has rho = sum count_j rho_j (Thm 13)
    if every part has one. Rounded up: each part's rho by a few ulps (its formula has three
    roundings at most), the sum exactly (rationals) and then up."""
    from ..mechanisms.family import family_of
    parts = mechanism.parts()
    if len(parts) != 1 or parts[0][0] is not mechanism:
        rhos = []
        for part, count in parts:
            r = rho_of(part)
            if r is None:
                return None
            rhos.append((count, r))
        return weighted_sum_up(rhos)
    fam = family_of(mechanism)
    if fam is not None and fam.zcdp is not None:
        rho = fam.zcdp(mechanism)
        if rho is not None:
            return rho
    try:
        pure = float(mechanism.pure_epsilon())
    except (NotImplementedError, ValueError):
        return None
    if math.isfinite(pure):
        return ulps_up(0.5 * pure * pure, 2)
    return None
