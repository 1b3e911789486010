"""Amplification by uniform mixing (Balle et al. 2019, Thm 1).

Balle et al. 2019, Thm 1 (signs restored per the errata). If M is (eps, delta)-DP, then K o M is

| K is                        | K o M is (eps', delta')-DP with                                         |
|-----------------------------|-------------------------------------------------------------------------|
| gamma-Dobrushin             | eps' = eps, delta' = gamma delta                                        |
| (gamma, eps~)-Dobrushin     | eps' = eps, delta' = gamma delta, eps~ = log(1 + (e^eps - 1)/delta)     |
| gamma-Doeblin               | eps' = log(1 + gamma (e^eps - 1)), delta' = gamma (1 - e^{eps'-eps} (1 - delta)) |
| gamma-ultra-mixing          | eps' = log(1 + gamma (e^eps - 1)), delta' = gamma delta e^{eps'-eps}    |

The Doeblin case can make delta *worse* (delta' > 0 even for delta = 0): it amplifies delta
only when gamma <= delta e^eps / ((1 - delta)(e^eps - 1)) (Balle et al. 2019, Sec. 3, the other root
of delta' = delta being gamma = 1); :func:`amplify_by_mixing` warns with :class:`DoeblinWarning`.

Evaluation without cancellation: with e^{eps'-eps} = gamma + (1 - gamma) e^{-eps},

    Doeblin       delta' = gamma [(1 - gamma)(1 - e^{-eps}) + (gamma + (1 - gamma) e^{-eps}) delta]
    ultra-mixing  delta' = gamma delta (gamma + (1 - gamma) e^{-eps}),

sums of non-negative terms; eps' = log1p(gamma expm1(eps)). Both are rounded up by a relative
1e-14 (eps') and 1e-12 (delta').
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...core import validate as V
from ...core.logspace import log_expm1, logaddexp
from .kernels import MixingKernel

CONDITIONS = ("dobrushin", "dobrushin-eps", "doeblin", "ultra-mixing")
_U = 2.0 ** -53
_REL_EPS, _REL_DELTA = 1e-14, 1e-12


class DoeblinWarning(UserWarning):
    """Balle et al. 2019, Thm 1 (3) gave delta' > delta: the Doeblin bound does not amplify delta
    here."""


def _up(x, rel):
    x = np.asarray(x, dtype=float)
    # + 10 subnormal ulps: relative margins do not cover rounding of subnormal results
    return np.where((x > 0) & np.isfinite(x), x * (1 + rel) + 5e-323, x)


def dobrushin_epsilon(epsilon, delta):
    """The order eps~ = log(1 + (e^eps - 1)/delta) at which Balle et al. 2019, Thm 1 (2) needs the
    (gamma, eps~)-Dobrushin coefficient; inf when delta = 0 (Balle et al. 2019, footnote 3).
    Vectorised. Rounded *down* by 16 ulps (a smaller eps~ gives a larger, still valid,
    coefficient)."""
    e = np.asarray(epsilon, dtype=float)
    d = np.asarray(delta, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        big = e > 30  # log(1 + (e^e - 1)/d) = e + log(1 - e^-e + d e^-e) - log d, no overflow
        # in log space: (e^eps - 1)/delta overflows for delta below ~1e-295, which read as
        # eps~ = inf (pure DP)
        small_val = logaddexp(0.0, log_expm1(np.minimum(e, 30.0)) - np.log(d))
        big_val = e - np.log(d) + np.log1p((d - 1.0) * np.exp(-np.minimum(e, 745.0)))
        out = np.where(big, big_val, small_val)
    out = np.where(d == 0, np.inf, np.where(e == 0, 0.0, out))
    out = np.where(np.isfinite(out) & (out > 0), out * (1 - 16 * _U), out)
    return out if out.ndim else float(out)


def amplified_epsilon(epsilon, gamma):
    """eps' = log(1 + gamma (e^eps - 1)) (Balle et al. 2019, Thm 1 (3)-(4)), exact (not rounded);
    vectorised. Overflow-free: for eps > 30 it is eps + log(gamma + (1 - gamma) e^{-eps})."""
    e = np.asarray(epsilon, dtype=float)
    g = np.asarray(gamma, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.log1p(g * np.expm1(np.minimum(e, 30.0)))
        big = e + np.log(g + (1.0 - g) * np.exp(-np.minimum(e, 745.0)))
        out = np.where(e > 30, big, small)
    out = np.where(g == 0, 0.0, np.where(np.isinf(e), np.inf, out))
    return out


def base_epsilon_for(epsilon_prime, gamma):
    """The inverse of :func:`amplified_epsilon`: eps = log(1 + (e^eps' - 1)/gamma), the largest
    base epsilon whose amplified epsilon is eps'. Rounded *down* by 16 ulps so that using it can
    only give an amplified epsilon <= eps'. inf when gamma = 0. Vectorised."""
    return dobrushin_epsilon(epsilon_prime, gamma)


def _doeblin_delta(eps, delta, gamma):
    """gamma [(1 - gamma)(1 - e^{-eps}) + (gamma + (1 - gamma) e^{-eps}) delta] (exact form)."""
    with np.errstate(over="ignore", invalid="ignore"):
        em = np.exp(-eps)
        return gamma * ((1.0 - gamma) * (-np.expm1(-eps)) + (gamma + (1.0 - gamma) * em) * delta)


def _ultra_delta(eps, delta, gamma):
    """gamma delta (gamma + (1 - gamma) e^{-eps}) (Balle et al. 2019, Thm 1 (4), exact form)."""
    return gamma * delta * (gamma + (1.0 - gamma) * np.exp(-eps))


def doeblin_threshold(epsilon, delta) -> float:
    """gamma* = delta e^eps / ((1 - delta)(e^eps - 1)): Balle et al. 2019, Thm 1 (3) gives delta' <=
    delta iff gamma <= gamma* (or gamma = 1) (Balle et al. 2019, Sec. 3). inf when eps = 0."""
    e = V.nonnegative("epsilon", epsilon, allow_inf=True)
    d = V.real("delta", delta, low=0.0, high=1.0)
    den = (1.0 - d) * -math.expm1(-e)
    if den == 0.0 or d == 1.0:  # eps = 0 (or below the smallest float): delta' = gamma delta
        return math.inf
    return min(math.inf, d / den) if d > 0 else 0.0


def amplify_by_mixing(epsilon: float, delta: float, gamma: float,
                      condition: str = "dobrushin") -> tuple[float, float]:
    """(eps', delta') of K o M for an (eps, delta)-DP mechanism M and a kernel K satisfying
    ``condition`` with coefficient ``gamma`` (Balle et al. 2019, Thm 1, all four cases; module
    docstring).

    ``gamma`` is a number in [0, 1] or a kernel (its smallest gamma for the condition is used;
    for "dobrushin-eps" the coefficient at eps~ = log(1 + (e^eps - 1)/delta)). A number given
    with "dobrushin-eps" must be K's (gamma, eps~)-Dobrushin coefficient at that eps~ (see
    :func:`dobrushin_epsilon`). Returns floats rounded up (a valid guarantee). The Doeblin case
    warns (:class:`DoeblinWarning`) when the result has delta' > delta."""
    eps = V.nonnegative("epsilon", epsilon, allow_inf=True)
    d = V.real("delta", delta, low=0.0, high=1.0)
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {list(CONDITIONS)} (got {condition!r})")
    if isinstance(gamma, MixingKernel):
        if condition == "dobrushin":
            g = float(gamma.dobrushin())
        elif condition == "dobrushin-eps":
            g = float(gamma.dobrushin(epsilon=dobrushin_epsilon(eps, d))) if d > 0 else 0.0
        elif condition == "doeblin":
            g = gamma.doeblin()
        else:
            g = gamma.ultra_mixing()
    else:
        g = V.probability("gamma", gamma)
    # (1), (2) and (4) never increase delta (gamma <= 1, e^{eps'-eps} <= 1): cap at delta
    if condition in ("dobrushin", "dobrushin-eps"):
        return eps, float(min(d, _up(g * d, _REL_DELTA)))
    # log(1 + gamma (e^eps - 1)) <= eps exactly, so capping the rounded value at eps is sound
    eps_p = min(eps, float(_up(amplified_epsilon(eps, g), _REL_EPS)))
    if g == 0.0:
        return 0.0, 0.0
    if condition == "doeblin":
        dp_ = float(min(1.0, _up(_doeblin_delta(eps, d, g), _REL_DELTA)))
        thr = doeblin_threshold(eps, d)
        if thr < g < 1.0:
            warnings.warn(
                f"Balle, Barthe, Gaboardi & Geumlek 2019, Thm 1 (3) (Doeblin) makes delta "
                f"worse here: delta' = {dp_:.6g} > delta = {d:.6g}. It amplifies delta only "
                f"when gamma <= delta e^eps / ((1 - delta)(e^eps - 1)) = {thr:.6g} (got "
                f"gamma = {g:.6g}); K o M is still "
                f"({eps:g}, {d:g})-DP by post-processing", DoeblinWarning, stacklevel=2)
        return eps_p, dp_
    return eps_p, float(min(d, _up(_ultra_delta(eps, d, g), _REL_DELTA)))


# --- the privacy profile of K o M --------------------------------------------------------------

#: fractions of the largest usable base epsilon tried by the Doeblin minimisation (any point is
#: valid, so the grid only affects tightness)
_DOEBLIN_GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 49),
                                          1.0 - np.geomspace(1e-6, 0.02, 12)]))


def _doeblin_min(base_profile, top: np.ndarray, gamma: float) -> np.ndarray:
    """min over base eps in [0, top] of the Doeblin delta' (Balle et al. 2019, Thm 1 (3)) with delta
    = delta_M(eps), per entry of ``top``: a 61-point grid, then three 33-point zoom passes around
    the best point. Every evaluated point is a valid bound, so the search affects tightness
    only."""
    fin = np.isfinite(top)
    out = np.full(top.shape, np.inf)  # eps' = inf: not used (the other terms cover it)
    if not fin.any():
        return out
    t = top[fin]

    def value(eps):
        dm = np.minimum(1.0, np.asarray(base_profile(eps.ravel()), dtype=float)).reshape(eps.shape)
        return _doeblin_delta(eps, dm, gamma)

    frac = np.broadcast_to(_DOEBLIN_GRID, (t.size, _DOEBLIN_GRID.size))
    vals = value(t[:, None] * frac)
    rows = np.arange(t.size)
    i = np.argmin(vals, axis=1)
    best, best_f = vals[rows, i], frac[rows, i]
    lo = frac[rows, np.maximum(i - 1, 0)]
    hi = frac[rows, np.minimum(i + 1, frac.shape[1] - 1)]
    for _ in range(3):
        grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, 33)[None, :]
        v = value(t[:, None] * grid)
        j = np.argmin(v, axis=1)
        better = v[rows, j] < best
        best = np.where(better, v[rows, j], best)
        best_f = np.where(better, grid[rows, j], best_f)
        step = (hi - lo) / 32
        lo, hi = np.maximum(best_f - step, 0.0), np.minimum(best_f + step, 1.0)
    out[fin] = best
    return out


def amplified_profile(base_profile, kernel: MixingKernel, epsilon):
    """Privacy profile of K o M from the base profile delta_M (Balle et al. 2019, Thm 1 applied
    pointwise):

        delta'(eps') = min( delta_M(eps'),                                 post-processing
                            gamma_TV delta_M(eps'),                         (1)
                            gamma(eps~) delta_M(eps'),                      (2)
                            min_{eps <= eps_D} Doeblin delta'(eps, delta_M(eps)),   (3)
                            ultra-mixing delta'(eps_U, delta_M(eps_U)) )            (4)

    where eps_D, eps_U = log(1 + (e^eps' - 1)/gamma) are the largest base epsilons whose
    amplified epsilon is <= eps' (an (eps'', delta')-guarantee with eps'' <= eps' implies the
    (eps', delta') one). For (4) the largest base epsilon is best (delta_M and e^{eps'-eps}
    both decrease in eps); for (3) the minimum is taken over a grid of base epsilons in
    [0, eps_D] with zoom passes (:func:`_doeblin_min`). M is (eps, delta_M(eps))-DP for every
    eps at once, so each term is valid.
    ``base_profile`` is vectorised: array of eps -> array of delta. Vectorised over eps'."""
    eps = V.reals("epsilon", epsilon, low=0.0, allow_inf=True)
    flat = eps.ravel()
    d0 = np.minimum(1.0, np.asarray(base_profile(flat), dtype=float).reshape(flat.shape))
    best = d0.copy()
    g_tv = float(kernel.dobrushin())
    best = np.minimum(best, _up(g_tv * d0, _REL_DELTA))
    pos = d0 > 0
    if pos.any() and g_tv > 0:
        et = dobrushin_epsilon(flat[pos], d0[pos])
        g_eps = np.asarray(kernel.dobrushin(epsilon=et), dtype=float)
        best[pos] = np.minimum(best[pos], _up(g_eps * d0[pos], _REL_DELTA))
    g_d = kernel.doeblin()
    if g_d == 0.0:
        best[:] = 0.0
    elif g_d < 1.0:
        top = base_epsilon_for(flat, g_d)  # rounded down
        best = np.minimum(best, _up(_doeblin_min(base_profile, top, g_d), _REL_DELTA))
    g_u = kernel.ultra_mixing()
    if 0.0 < g_u < 1.0:
        top = base_epsilon_for(flat, g_u)
        fin = np.isfinite(top)
        dm = np.zeros(top.shape)
        if fin.any():
            dm[fin] = np.minimum(1.0, np.asarray(base_profile(top[fin]), dtype=float))
        val = np.where(fin, _ultra_delta(np.where(fin, top, 0.0), dm, g_u), np.inf)
        best = np.minimum(best, _up(val, _REL_DELTA))
    best = np.clip(best, 0.0, 1.0).reshape(eps.shape)
    return best if best.ndim else float(best)
