"""Analytic privacy-amplification-by-subsampling bounds of Steinke 2022, as explicit functions.

| function              | source        | what it bounds                                            |
|-----------------------|---------------|-----------------------------------------------------------|
| ``thm29``             | Steinke 2022, Thm 29    | (eps, delta)-DP -> (log(1 + p(e^eps - 1)), p delta)-DP     |
| ``thm29_scheme``      | Steinke 2022, Thm 29    | the same, after checking the theorem's condition on U     |
| ``thm38``             | Steinke 2022, Thm 38    | rho-zCDP + Poisson(p) -> (alpha, 10 p^2 rho alpha)-RDP     |
| ``thm38_omega``       | Steinke 2022, Thm 38    | the order limit omega and whether the conditions hold      |
| ``prop41``            | Steinke 2022, Prop. 41  | D_alpha(pP + (1-p)Q || Q), small orders                   |
| ``prop42``            | Steinke 2022, Prop. 42  | D_alpha(pP + (1-p)Q || Q), large orders                   |

Props 41 and 42 bound one direction of the Poisson pair. For a mechanism whose RDP curve eps(.)
bounds D(P||Q) and D(Q||P) for every neighbouring pair (the library's convention), applying the
proposition to both directions and then Steinke 2022, Thm 35 (as the proofs of Thms 34 and 38 do)
makes the same number an RDP bound for the Poisson-subsampled mechanism under add/remove; that is
how ``prop41_rdp`` / ``prop42_rdp`` are meant to be read.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core import validate as V

__all__ = ["thm29", "thm29_scheme", "thm38", "thm38_omega", "prop41", "prop41_rdp",
           "prop42", "prop42_rdp"]

#: margin for float rounding in the closed forms (a few ulps): reported bounds stay upper bounds
_REL = 1e-12


def _up(x):
    return np.where(np.isfinite(x) & (x > 0), x * (1.0 + _REL), x)


def thm29(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """Steinke 2022, Thm 29: if M is (eps, delta)-DP and U satisfies the theorem's condition with
    p = max_i P[i in U], then M(x_U) is (log(1 + p (e^eps - 1)), p delta)-DP. Tight (Steinke 2022,
    Sec. 6.1). The caller vouches for the condition; ``thm29_scheme`` checks it for a sampling
    scheme."""
    eps = V.nonnegative("epsilon", epsilon, allow_inf=True)
    d = V.real("delta", delta, low=0.0, high=1.0)
    p = V.probability("rate", rate)
    if math.isinf(eps):
        return (math.inf if p > 0 else 0.0), p * d
    # log(1 + p expm1(eps)) without overflow for large eps (the same value)
    e_new = math.log1p(p * math.expm1(eps)) if eps <= 1.0 else (
        eps + math.log(p + (1.0 - p) * math.exp(-eps)) if p > 0 else 0.0)
    return float(_up(e_new)), p * d


def thm29_scheme(epsilon: float, delta: float, scheme) -> tuple[float, float]:
    """Steinke 2022, Thm 29 for a dpamp sampling scheme, after checking its condition: for every i
    there is U_{-i} subset [n]\\{i} with x_U, x_{U_{-i}} neighbours and U_{-i} | i in U distributed
    as U | i not in U.

    * Poisson(rate): U_{-i} = U \\ {i}; x_U and x_{U_{-i}} differ by removing i (add/remove), or
      by replacing x_i with the null value (substitution, Steinke 2022, Sec. 6.2). p = rate.
    * WithoutReplacement(m, n): U_{-i} replaces i by a uniform element outside U; x_U and
      x_{U_{-i}} differ by a replacement, so the inner guarantee must be under substitution
      (the scheme's ``needs``). p = m / n.
    * WithReplacement: a multiset; the condition is not established -> ValueError (use the
      tight profile bounds of Balle et al. 2018, Thm 10 instead)."""
    from ..mechanisms.family import amplification_of
    if getattr(amplification_of(scheme), "u_minus_i", False):
        return thm29(epsilon, delta, scheme.rate)
    raise ValueError(f"Steinke 2022, Thm 29 needs a sampling scheme with a U_{{-i}} coupling "
                     f"(Poisson or WithoutReplacement); its condition is not established for "
                     f"{scheme!r}: use the privacy-profile method (Balle, Barthe & Gaboardi "
                     "2018, Thm 10) for sampling with replacement")


# --- Theorem 38 ----------------------------------------------------------------------------------

def thm38_omega(rho: float, rate: float) -> tuple[float, bool]:
    """omega = min{log(1/p) / (4 rho), 1 + p^{-1/4}} of Steinke 2022, Thm 38, and whether the
    theorem's assumption omega >= 3 + 2 log(1/rho) / log(1/p) holds (p in (0, 1/2], rho in (0,
    1])."""
    rho = V.real("rho", rho, low=0.0, high=1.0, low_open=True)
    p = V.real("rate", rate, low=0.0, high=0.5, low_open=True)
    lp = math.log(1.0 / p)
    omega = min(lp / (4.0 * rho), 1.0 + p ** -0.25)
    return omega, omega >= 3.0 + 2.0 * math.log(1.0 / rho) / lp


def thm38(rho: float, rate: float, alpha):
    """Steinke 2022, Thm 38: a rho-zCDP mechanism (add/remove), Poisson-subsampled with rate p, is
    (alpha, 10 p^2 rho alpha)-RDP for all alpha in (1, omega), when p in (0, 1/2], rho in (0, 1]
    and omega = min{log(1/p)/(4 rho), 1 + p^{-1/4}} >= 3 + 2 log(1/rho)/log(1/p).

    Every validity condition is checked; where one fails the theorem says nothing and this
    function raises ValueError naming it (e.g. p = 0.05, rho = 0.5 of Steinke 2022, Figure 2).
    Vectorised over alpha."""
    omega, ok = thm38_omega(rho, rate)
    if not ok:
        lp = math.log(1.0 / rate)
        need = 3.0 + 2.0 * math.log(1.0 / rho) / lp
        raise ValueError(
            f"Steinke 2022, Thm 38 does not apply at rho={rho:g}, rate={rate:g}: it needs "
            f"omega = min(log(1/p)/(4 rho), 1 + p^(-1/4)) = {omega:.4g} >= 3 + 2 log(1/rho)/log(1/p)"
            f" = {need:.4g}; use the exact Thm 34 (method 'rdp') or Props 41/42")
    a = V.orders(alpha)
    if (a >= omega).any():
        raise ValueError(f"alpha must be in (1, omega) = (1, {omega:.4g}) for Steinke 2022, Thm 38 "
                         f"(got {a[a >= omega].ravel()[0]:g})")
    out = _up(10.0 * rate * rate * rho * a)
    return out if out.ndim else float(out)


# --- Propositions 41 and 42 ----------------------------------------------------------------------

def prop41(rate: float, alpha, omega, eps2, eps_omega):
    """Steinke 2022, Prop. 41: for p in [0, 1 - 1/e] and 1 < alpha <= omega,

        D_alpha(pP + (1-p)Q || Q) <= 1/(alpha-1) log(1 + (e/2) alpha(alpha-1) p^2 (e^{D_2} - 1)
                                                     + ((alpha-1) p)^omega e^{(omega-1) D_omega}),

    with D_2 <= eps2 and D_omega <= eps_omega (bounds on D(P||Q)). Evaluated in log space
    (log-sum-exp of the three terms), vectorised over alpha / omega / eps arrays."""
    p = V.real("rate", rate, low=0.0, high=1.0 - math.exp(-1.0))
    a = V.orders(alpha)
    w = V.orders(omega, "omega")
    e2 = V.reals("eps2", eps2, low=0.0)
    ew = V.reals("eps_omega", eps_omega, low=0.0)
    a, w, e2, ew = np.broadcast_arrays(a, w, e2, ew)
    if (a > w).any():
        raise ValueError("omega must be >= alpha for Steinke 2022, Prop. 41")
    if p == 0:
        out = np.zeros(a.shape)
        return out if out.ndim else float(out)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_t1 = (math.log(math.e / 2.0) + np.log(a) + np.log(a - 1.0) + 2.0 * math.log(p)
                  + np.where(e2 > 0, np.log(np.expm1(e2)), -np.inf))
        log_t1 = np.where(e2 > 30, math.log(math.e / 2.0) + np.log(a) + np.log(a - 1.0)
                          + 2.0 * math.log(p) + e2 + np.log1p(-np.exp(-e2)), log_t1)
        log_t2 = w * np.log((a - 1.0) * p) + (w - 1.0) * ew
        stack = np.stack([np.zeros(a.shape), log_t1, log_t2])
        m = np.max(stack, axis=0)
        m = np.where(np.isfinite(m), m, 0.0)
        log_sum = m + np.log(np.sum(np.exp(stack - m), axis=0))
        out = log_sum / (a - 1.0)
    out = np.where(np.isnan(out), np.inf, out)
    out = _up(out)
    return out if out.ndim else float(out)


def prop41_rdp(rdp: Callable, rate: float, alpha, omegas=None):
    """Prop. 41 for a mechanism with RDP curve ``rdp`` (callable, vectorised over orders),
    minimised over omega >= alpha on a grid (each omega gives a valid bound, so the minimum is
    one too). Vectorised over alpha."""
    a = np.atleast_1d(V.orders(alpha)).astype(float).ravel()
    eps2 = float(np.asarray(rdp(np.array([2.0])), dtype=float).ravel()[0])
    if omegas is None:
        w = a[:, None] * np.geomspace(1.0, 64.0, 97)[None, :]
    else:
        w = np.broadcast_to(np.asarray(omegas, dtype=float)[None, :], (a.size, np.size(omegas)))
    ok = w >= a[:, None]
    if not ok.any(axis=1).all():
        raise ValueError("omegas must contain a value >= alpha for every alpha")
    w = np.where(ok, w, a[:, None])  # placeholders, discarded below
    ew = np.asarray(rdp(w.ravel()), dtype=float).reshape(w.shape)
    vals = prop41(rate, np.broadcast_to(a[:, None], w.shape), w, eps2, ew)
    out = np.min(np.where(ok, vals, np.inf), axis=1)
    shape = np.shape(alpha)
    return out.reshape(shape) if shape else float(out[0])


def prop42(rate: float, alpha, eps_alpha):
    """Steinke 2022, Prop. 42: for p in [0, 1] and alpha > 1, with D_alpha(P||Q) <= eps_alpha,

        D_alpha(pP + (1-p)Q || Q) <= alpha/(alpha-1) log(1 - p + p e^{(1 - 1/alpha) eps_alpha}).

    In log space: alpha/(alpha-1) logaddexp(log(1-p), log p + (1-1/alpha) eps_alpha).
    Vectorised. For large alpha it approaches eps_alpha - alpha/(alpha-1) log(1/p), the lower
    bound of Steinke 2022, Sec. 6.6, so it is tight there."""
    p = V.probability("rate", rate)
    a = V.orders(alpha)
    e = V.reals("eps_alpha", eps_alpha, low=0.0)
    a, e = np.broadcast_arrays(a, e)
    if p == 0:
        out = np.zeros(a.shape)
    else:
        with np.errstate(divide="ignore"):
            log1mp = math.log1p(-p) if p < 1 else -np.inf
            out = a / (a - 1.0) * np.logaddexp(log1mp, math.log(p) + (1.0 - 1.0 / a) * e)
        out = _up(out)
    return out if out.ndim else float(out)


def prop42_rdp(rdp: Callable, rate: float, alpha):
    """Prop. 42 for a mechanism with RDP curve ``rdp``, vectorised over alpha."""
    a = V.orders(alpha)
    return prop42(rate, a, np.asarray(rdp(np.atleast_1d(a).astype(float)),
                                      dtype=float).reshape(np.shape(a)))
