"""Closed-form privacy profiles of the basic mechanisms (Balle et al. 2018, Thms 3, 4; RR; (eps,
delta) point), as log H with proven rounding margins, and their registration as profile handlers.

| mechanism            | delta(e^eps), both orders (symmetric pairs)                  | source      |
|----------------------|--------------------------------------------------------------|-------------|
| Gaussian, mu = D/sigma | Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)             | Balle et al. 2018, Thm 4   |
| Laplace, eta = D/b   | [1 - exp((eps - eta)/2)]_+                                   | Balle et al. 2018, Thm 3   |
| randomized response  | [q - e^eps (1-q)]_+, q = max(p, 1-p)  (phi_p of Balle et al. 2018, Sec. 5)  | Balle et al. 2018, Sec. 5  |
| pure eps0-DP         | the RR curve with q = e^eps0/(1+e^eps0)                      | Steinke 2022, Sec. 5  |
| (eps0, delta0)       | delta0 + (1 - delta0) RR(eps0)(eps)                          | Steinke 2022, fn. 16  |

Group profiles (Balle et al. 2018, Sec. 3, "white-box"): k changes move a Gaussian / Laplace mean by
at most k*sensitivity (triangle inequality), so delta_{M,k} is the profile with k*mu / k*eta; a
randomized response of a {0,1}-valued statistic has delta_{M,k} = delta_M (the bit can only
flip); a pure eps0-DP mechanism is k*eps0-DP for groups of k.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, erfcx, log_ndtr

from ..mechanisms.family import ProfileHooks
from .numerics import ULP, log1mexp, log_expm1, logaddexp, pad_down, pad_up

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_HALF_PI = math.sqrt(math.pi / 2)
_C = 64 * ULP  # error allowance per term (erf ~1 ulp, log_ndtr ~18 ulps in the log, measured)


# --- Gaussian (Balle et al. 2018, Thm 4)
# ------------------------------------------------------------------------

def gaussian_log_profile(mu, eps, *, upper=True):
    """log H_{e^eps}(N(mu,1) || N(0,1)) = log[Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)]
    (Balle et al. 2018, Thm 4, Balle-Wang), symmetric in the two orders, with an error bound added
    (upper) or subtracted (lower). mu >= 0 and eps >= 0 broadcast (eps may be inf).

    Two cancellation-free forms, x = eps/mu - mu/2:
    * x <= 0: H = [Phi(a) - Phi(b)] - expm1(eps) Phi(b), a = -x >= 0 > b = a - mu, where
      Phi(a) - Phi(b) = (erf(a/sqrt2) - erf(b/sqrt2))/2 is a sum of two positive numbers;
    * x > 0: H = phi(x) [R(x) - R(x + mu)], R = Mills ratio = sqrt(pi/2) erfcx(x/sqrt2)
      (from H = int_0^inf phi(x+t)(1 - e^{-mu t}) dt), computed in log space so that it never
      underflows or overflows for huge eps."""
    mu = np.asarray(mu, dtype=float)
    eps = np.asarray(eps, dtype=float)
    mu, eps = np.broadcast_arrays(mu, eps)
    mu = mu * (1 + 4 * ULP) if upper else mu * (1 - 4 * ULP)
    # beyond mu = 1e150 the formulas below overflow (mu^2); the profile grows with mu, so a
    # lower bound may use mu = 1e150 and an upper bound uses the trivial H <= 1 (log 0)
    vast = mu > 1e150
    mu = np.minimum(mu, 1e150)
    out = np.where(vast & upper & ~np.isposinf(eps), 0.0, -np.inf)
    pos = (mu > 0) & ~np.isposinf(eps) & ~(vast & upper)
    if not pos.any():
        return out
    m, e = mu[pos], eps[pos]
    sign = 1.0 if upper else -1.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        x = e / m - m / 2
        res = np.empty_like(m)
        r1 = x <= 0
        if r1.any():
            a = -x[r1]
            b = a - m[r1]
            d1 = 0.5 * (erf(a / math.sqrt(2)) - erf(b / math.sqrt(2)))
            t = np.exp(log_expm1(e[r1]) + log_ndtr(b))  # <= d1 <= 1: never overflows
            dxa = 8 * ULP * m[r1] / 2                    # the cancellation of x (see below)
            err = _C * (d1 + t) * (4 + e[r1] + a * a + b * b) + (0.4 + t * (1 - b)) * dxa
            h = d1 - t + sign * err
            with np.errstate(divide="ignore"):
                res[r1] = np.where(h > 0, np.log(np.maximum(h, 1e-323)), -np.inf)
        r2 = ~r1
        if r2.any():
            xx = x[r2]
            ra = _SQRT_HALF_PI * erfcx(xx / math.sqrt(2))
            rb = _SQRT_HALF_PI * erfcx((xx + m[r2]) / math.sqrt(2))
            # erfcx is good to ~9 ulps (measured vs mpmath); rounding of the arguments moves
            # R by |R'| * ulps * (x + mu) with |R'(x)| = 1 - x R(x) <= 1/(1 + x^2) for x > 0
            err_r = 32 * ULP * (ra + rb) + 8 * ULP * (xx + m[r2]) / (1 + xx * xx)
            rd = ra - rb + sign * err_r
            log_phi = -0.5 * xx * xx - _LOG_SQRT_2PI
            err_log = 16 * ULP * (4 + xx * xx) + (xx + m[r2] + 1) * (8 * ULP * m[r2] / 2)
            res[r2] = np.where(rd > 0, log_phi + np.log(np.maximum(rd, 1e-323)) + sign * err_log,
                               -np.inf)
            # x^2 overflows beyond 1e154: log H < -x^2/2 < -1e300 there, still a finite bound
            huge = np.isfinite(xx) & (xx > 1e150)
            res[r2] = np.where(huge, -1e300 if upper else -np.inf, res[r2])
            res[r2] = np.where(np.isposinf(xx), -np.inf, res[r2])
        # x = eps/mu - mu/2 cancels when mu is large: beyond the relative error of eps/mu, which
        # the error terms above cover, it carries an absolute error dx <= 8 ulps of mu/2, which
        # they do not; for mu > 1e6 (dx > 1e-9) H <= Phi(-x) (the second term is >= 0, and only
        # ~x/(x + mu) of the first) at x - dx bounds H from above (H falls with x at fixed mu),
        # and no lower bound is claimed.
        dx = 8 * ULP * m / 2
        vast_mu = m > 1e6
        if vast_mu.any():
            res = np.where(vast_mu, log_ndtr(dx - x) if upper else -np.inf, res)
    out[pos] = res
    return pad_up(out) if upper else pad_down(out)


def _gauss_group(m, k, eps):
    return gaussian_log_profile(np.asarray(k, dtype=float) * m.mu, eps, upper=True)


# --- Laplace (Balle et al. 2018, Thm 3)
# -------------------------------------------------------------------------

def laplace_log_profile(eta, eps, *, upper=True):
    """log [1 - exp((eps - eta)/2)]_+ (Balle et al. 2018, Thm 3), eta = sensitivity / scale;
    symmetric."""
    eta = np.asarray(eta, dtype=float)
    eta = eta * (1 + 4 * ULP) if upper else eta * (1 - 4 * ULP)
    eps = np.asarray(eps, dtype=float)
    with np.errstate(invalid="ignore"):
        z = np.minimum((eps - eta) / 2, 0.0)
        out = np.where(eps < eta, log1mexp(z), -np.inf)
    return pad_up(out) if upper else pad_down(out)


def _lap_group(m, k, eps):
    return laplace_log_profile(np.asarray(k, dtype=float) * m.eps0, eps, upper=True)


# --- randomized response / pure DP / (eps, delta) ------------------------------------------------

def rr_log_profile(eps0, eps, *, upper=True):
    """log H for the randomized-response pair with pure epsilon eps0 (truth probability
    q = e^eps0/(1+e^eps0)): H = q - e^eps (1-q) = (1 - e^{eps-eps0}) / (1 + e^{-eps0}) for
    eps < eps0, else 0. This is phi_q(e^eps) of Balle et al. 2018, Sec. 5 (general form, errata),
    and the profile bound of every eps0-DP mechanism (Steinke 2022, Sec. 5)."""
    eps0 = np.asarray(eps0, dtype=float)
    eps0 = eps0 * (1 + 4 * ULP) if upper else eps0 * (1 - 4 * ULP)
    eps = np.asarray(eps, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        body = log1mexp(np.minimum(eps - eps0, 0.0)) - np.log1p(np.exp(-eps0))
        out = np.where(eps < eps0, body, -np.inf)
    return pad_up(out) if upper else pad_down(out)


def eps_delta_log_profile(eps0, delta0, eps, *, upper=True):
    """log[delta0 + (1 - delta0) RR_{eps0}(eps)]: the profile of the worst-case (eps0, delta0)
    pair of Steinke 2022, Cor. 24 / footnote 16 (losses +inf, +eps0, -eps0); symmetric."""
    rr = rr_log_profile(eps0, eps, upper=upper)
    with np.errstate(divide="ignore"):
        ld = math.log(delta0) if delta0 > 0 else -math.inf
        l1 = math.log1p(-delta0)
    out = logaddexp(np.full(np.shape(rr), ld), l1 + rr)
    return pad_up(out) if upper else pad_down(out)


def symmetric_hooks(log_profile, group=None, binary=False) -> ProfileHooks:
    """The profile hooks of a symmetric mechanism: both directions share one profile,
    log_profile(m, eps, upper)."""
    def pair(m, eps):
        v = log_profile(m, eps, True)
        return np.stack([v, v])

    def lower(m, eps):
        v = log_profile(m, eps, False)
        return np.stack([v, v])
    return ProfileHooks(pair=pair, lower=lower, group=group,
                        binary=(lambda m: True) if binary else None, symmetric=lambda m: True)


def rr_group(m, k, eps):
    """k-group profile of randomized response of a bit: a {0,1}-valued statistic changes by
    at most one flip, whatever k is."""
    return np.broadcast_to(rr_log_profile(float(m.eps0), eps, upper=True),
                           np.broadcast_shapes(np.shape(k), np.shape(eps))).copy()


def pure_group(m, k, eps):
    """k-group profile of a pure eps0-DP mechanism: k eps0-DP (randomized response dominates
    it) or the black-box bound of Balle et al. 2018, Sec. 3, whichever is smaller."""
    from .group import log_group_blackbox
    k = np.asarray(k)
    white = rr_log_profile(k * m.eps0, eps, upper=True)
    black = log_group_blackbox(lambda e: rr_log_profile(m.eps0, e, upper=True), k, eps)
    return np.minimum(white, black)


#: the closed-form profile hooks of the base families, by name (dpamp.families declares them)
HOOKS = {
    "gaussian": symmetric_hooks(lambda m, e, up: gaussian_log_profile(m.mu, e, upper=up),
                                group=_gauss_group),
    "laplace": symmetric_hooks(lambda m, e, up: laplace_log_profile(m.eps0, e, upper=up),
                               group=_lap_group),
    "randomized_response": symmetric_hooks(
        lambda m, e, up: rr_log_profile(float(m.eps0), e, upper=up), group=rr_group,
        binary=True),
    "pure_dp": symmetric_hooks(lambda m, e, up: rr_log_profile(float(m.eps0), e, upper=up),
                               group=pure_group),
    "eps_delta": symmetric_hooks(
        lambda m, e, up: eps_delta_log_profile(m.epsilon_, m.delta_, e, upper=up)),
}
