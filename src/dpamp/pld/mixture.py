"""The privacy-loss distribution of a mixture of Gaussians against the centred one:
(P, Q) = (sum_i p_i N(mu_i, 1), N(0, 1)), every mu_i >= 0 (dp-accounting's
MixtureOfGaussiansDpEvent in units of sigma; :mod:`dpamp.mechanisms.mixture_of_gaussians`).

The loss g(z) = log sum_i p_i e^{mu_i z - mu_i^2/2} of the outcome z is convex and, with every
mu_i >= 0 and one positive, strictly increasing from log p_0 (p_0 the probability of the zero
shifts, 0 if none: then from -inf) to +inf. So L <= t iff z <= z(t), the root of g = t, and
    P[L <= t] = sum_i p_i Phi(z(t) - mu_i),   Q[L <= t] = Phi(z(t)),
the survival functions with Phi(mu_i - z(t)) and Phi(-z(t)) (each tail in full relative
precision). The root is :func:`dpamp.mechanisms.mixture_of_gaussians.loss_root`. The continuous part is
all there is (no atoms); its swap is built by ``LossDistribution.swapped``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri_exp

from ..mechanisms.mixture_of_gaussians import loss_root
from .loss import LossDistribution


def gaussian_mixture(mus, ps, name: str = "") -> LossDistribution:
    """The pair (sum_i p_i N(mu_i, 1), N(0, 1)) (module docstring); mu_i >= 0 with one > 0,
    p_i > 0 summing to 1."""
    mus, ps = np.asarray(mus, dtype=float), np.asarray(ps, dtype=float)
    p0 = float(ps[mus == 0].sum())
    log_p0 = math.log(p0) if p0 > 0 else -math.inf

    def cdf(t):
        z = loss_root(t, mus, ps)
        zz = z[..., None] - mus
        return np.sum(ps * ndtr(zz), axis=-1), ndtr(z)

    def sf(t):
        z = loss_root(t, mus, ps)
        zz = mus - z[..., None]
        return np.sum(ps * ndtr(zz), axis=-1), ndtr(-z)

    def loss_at(z):
        e = np.log(ps) + mus * z - mus * mus / 2.0
        top = float(e.max())
        return top + math.log(float(np.exp(e - top).sum()))

    def upper_tail(tail):
        # P[L > g(z)] = sum p_i Phi(mu_i - z) <= Phi(mu_max - z), and Q's is below it
        return loss_at(float(mus.max()) - float(ndtri_exp(math.log(tail))))

    def lower_tail(tail):
        # P[L <= g(z)] = sum p_i Phi(z - mu_i) <= Phi(z) = Q[L <= g(z)]
        return loss_at(float(ndtri_exp(math.log(tail))))

    mean, var, swap = _moments(mus, ps)
    return LossDistribution(np.zeros(0), np.zeros(0), np.zeros(0), cdf, sf, (log_p0, math.inf),
                            False, mean, var, name or f"gaussian_mixture({len(mus)})",
                            upper_tail, lower_tail, swap_moments=swap)


def _moments(mus, ps):
    """Mean and variance of L under P and of -L under Q (sizing only): Gauss-Hermite, 64
    nodes, per component."""
    x, w = np.polynomial.hermite_e.hermegauss(64)
    w = w / w.sum()

    def g(z):
        e = np.log(ps) + mus * z[..., None] - mus * mus / 2.0
        top = e.max(axis=-1)
        return np.log(np.exp(e - top[..., None]).sum(axis=-1)) + top

    # (means past 1e154 square to inf: an infinite variance, which the grid sizing refuses,
    # rather than a warning)
    with np.errstate(over="ignore", invalid="ignore"):
        lp = g(mus[:, None] + x[None, :])                 # component i, node k
        m1 = float(np.sum(ps[:, None] * w * lp))
        m2 = float(np.sum(ps[:, None] * w * lp * lp))
        lq = -g(x)
        q1 = float(np.sum(w * lq))
        q2 = float(np.sum(w * lq * lq))
        return m1, max(m2 - m1 * m1, 0.0), (q1, max(q2 - q1 * q1, 0.0))
