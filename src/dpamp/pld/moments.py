"""Sizing moments of many Poisson-subsampled Gaussian pairs at once (a plan of a hundred
heterogeneous DP-SGD stages, issue 18: one quadrature per part cost ~0.15 ms each).

For the pair (P', Q') = ((1-q) Q + q P, Q) of N(mu, 1) vs N(0, 1) (Steinke 2022, Thm 34's pair), the
mean and variance of L' = log(1 - q + q e^L) under P', and of -L' under Q' (the swapped pair's
loss), by the quadrature of :func:`.loss._mixture_moments` on all parts as the rows of one array:
the midpoint rule over the base's losses L on 512 cells and on every other node, combined by
Richardson's extrapolation. The base range is the closed-form 1e-12 tail quantiles of the
Gaussian pair (quantile_range's scans move them in by < 1/3969 of the range). Sizing only:
grids, windows and first guesses are built from these numbers, never bounds.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri_exp

#: nodes of the fine quadrature (the coarse one takes every other)
NODES = 513


def subsampled_gaussian_moments(mu, q):
    """[(mean, var, (swap mean, swap var))] of the subsampled pairs (mu_i, q_i), mu > 0 and
    0 < q < 1, as :func:`.loss._mixture_moments` returns them for ``gaussian(mu).poisson(q)``
    (up to its quadrature error, ~1e-5 relative)."""
    mu = np.asarray(mu, dtype=float)[:, None]
    q = np.asarray(q, dtype=float)[:, None]
    half = 0.5 * mu * mu
    zt = float(ndtri_exp(math.log(1e-12)))                  # < 0
    lo, hi = -half + mu * zt, half - mu * zt                # Q's lower, P's upper quantile
    t = lo + (hi - lo) * (np.arange(NODES) / (NODES - 1))[None, :]
    cp, cq = ndtr((t - half) / mu), ndtr((t + half) / mu)
    fine = _nodes(q, t, cp, cq)
    coarse = _nodes(q, t[:, ::2], cp[:, ::2], cq[:, ::2])
    out = []
    for i in range(mu.shape[0]):
        pair = []
        for f, c in ((fine[0][i], coarse[0][i]), (fine[1][i], coarse[1][i])):
            r = tuple((4.0 * a - b) / 3.0 for a, b in zip(f, c))
            ok = all(math.isfinite(v) for v in r) and r[1] > 0 and abs(r[1] / f[1] - 1) < 0.5
            pair.append(r if ok else tuple(f))
        out.append(pair[0] + (pair[1],))
    return out


def _nodes(q, t, cp, cq):
    """Per row: (mean, var) under P' and (mean, var) of -L' under Q', midpoint rule."""
    wp, wq = np.diff(cp, axis=1), np.diff(cq, axis=1)
    mid = 0.5 * (t[:, 1:] + t[:, :-1])
    w = (1 - q) * wq + q * wp
    with np.errstate(over="ignore"):
        z = np.where(mid > 0, mid + np.log(q + (1 - q) * np.exp(-np.minimum(mid, 700))),
                     np.logaddexp(np.log1p(-q), np.log(q) + mid))
    return _moments(w, z), _moments(wq, -z)


def _moments(w, z):
    s = w.sum(axis=1)
    safe = np.where(s > 0, s, 1.0)
    # (losses past 1e154 square to inf: an infinite variance, refused by the grid sizing)
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.sum(w * z, axis=1) / safe
        v = np.sum(w * (z - m[:, None]) ** 2, axis=1) / safe
    return [(float(a), float(b)) if ok else (0.0, 0.0) for a, b, ok in zip(m, v, s > 0)]
