"""The exact delta(eps) of a mixture of Gaussians over participation patterns against the
standard Gaussian (tests only).

P = sum_B pi(B) N(mu B, I_n) over a finite list of patterns B in {0, 1}^n, Q = N(0, I_n).
With X_s = e^{mu y_s - mu^2 / 2}, dP/dQ = sum_B pi(B) prod_{s in B} X_s, which given
y_1 .. y_{n-1} is alpha + beta X_n (alpha, beta >= 0). The last coordinate is integrated in
closed form (E[(beta X - k)+] = beta Phi(mu - z0) - k Phi(-z0), z0 = (log(k / beta) + mu^2 / 2)
/ mu, and its put by parity), the one before by composite Gauss-Legendre split where alpha
crosses the kink of the closed form (k = 0: its expansion there is not analytic, which a
Gauss-Hermite rule over it converges on only to ~1e-3), the first (n = 3) by adaptive
quadrature. Both orders: remove E_Q[(L - e^eps)+], add
E_Q[(1 - e^eps L)+]; the larger is returned.

Also the b-min-separation chain's patterns (a step is taken with probability p unless one of
the b - 1 before it was), cold or warm started, enumerated from that definition."""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import ndtr


def min_sep_patterns(n: int, p: float, b: int, warm: bool) -> list[tuple[tuple[int, ...], float]]:
    """(pattern, probability) of every pattern of the chain on n steps with positive
    probability. Warm: the state before step 1 from the stationary law (eligible with
    probability 1 / (1 + (b - 1) p); last taken k steps before step 1, k = 1 .. b - 1, with
    p times that each)."""
    start = [(None, 1.0)] if not warm else \
        [(None, 1.0 / (1.0 + (b - 1) * p))] + \
        [(k, p / (1.0 + (b - 1) * p)) for k in range(1, b)]
    out: dict[tuple[int, ...], float] = {}
    for last0, w0 in start:
        for bits in itertools.product((0, 1), repeat=n):
            prob, last = w0, (None if last0 is None else 1 - last0)  # step index of last take
            for t, bit in enumerate(bits, start=1):
                eligible = last is None or t - last >= b
                if not eligible:
                    prob = prob if bit == 0 else 0.0
                else:
                    prob *= p if bit else 1.0 - p
                if bit:
                    last = t
            if prob > 0:
                out[bits] = out.get(bits, 0.0) + prob
    return sorted(out.items())


def _call(beta, k, mu):
    """E[(beta X - k)+], X = e^{mu Z - mu^2 / 2}, elementwise (beta > 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z0 = (np.log(np.where(k > 0, k, 1.0) / beta) + mu * mu / 2) / mu
    pos = beta * ndtr(mu - z0) - k * ndtr(-z0)
    return np.where(k > 0, pos, beta - k)


def _inner(alpha, beta, mu, x, remove):
    """E over the last coordinate given the others (arrays), for one order."""
    b = np.maximum(beta, 1e-300)
    if remove:
        return np.where(beta > 0, _call(b, x - alpha, mu), np.maximum(alpha - x, 0.0))
    k = 1.0 - x * alpha
    put = np.where(beta > 0, k - x * beta + _call(x * b, k, mu), k)
    return np.maximum(put, 0.0)


#: Gauss-Legendre nodes per panel and the panels' width (the last-but-one coordinate; 3e-12
#: absolute against adaptive quadrature on the cases of the tests, 4e-10 at 16 nodes)
_GL = np.polynomial.legendre.leggauss(32)
_PANEL = 0.25


def _panels(lo, hi):
    """Composite Gauss-Legendre nodes and weights on [lo, hi]."""
    k = max(1, math.ceil((hi - lo) / _PANEL))
    edges = np.linspace(lo, hi, k + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2
    mid = (edges[1:] + edges[:-1])[:, None] / 2
    return (mid + half * _GL[0][None, :]).ravel(), (half * _GL[1][None, :]).ravel()


def _last_two(pats, w, mu, x, remove, fixed, lim):
    """The integral over the last two coordinates given ``fixed``: the last in closed form,
    the one before by composite Gauss-Legendre split where alpha crosses the closed form's
    kink (alpha is non-decreasing in it: one crossing at most)."""
    n = pats.shape[1]
    level = x if remove else 1.0 / x
    base = mu * np.asarray(fixed, dtype=float) - mu * mu / 2
    head = pats[:, :n - 2] @ base if n > 2 else np.zeros(len(w))
    mid_bit, last = pats[:, n - 2], pats[:, n - 1] > 0

    def terms(y):
        return w[None, :] * np.exp(head[None, :] + np.multiply.outer(mu * y - mu * mu / 2,
                                                                     mid_bit))

    def alpha(y):
        return float(terms(np.array([y]))[0, ~last].sum()) - level
    cuts = [-lim, lim]
    if alpha(-lim) < 0 < alpha(lim):
        cuts.insert(1, brentq(alpha, -lim, lim, xtol=1e-14))
    total = 0.0
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        y, gw = _panels(lo, hi)
        t = terms(y)
        f = _inner(t[:, ~last].sum(axis=1), t[:, last].sum(axis=1), mu, x, remove)
        total += float(np.sum(gw * f * np.exp(-y * y / 2))) / math.sqrt(2 * math.pi)
    return total


def _nested(pats, w, mu, x, remove, fixed, lim):
    """The integral over the coordinates after ``fixed``: adaptive quadrature outside, the
    last two by :func:`_last_two`."""
    n = pats.shape[1]
    if len(fixed) == n - 2:
        return _last_two(pats, w, mu, x, remove, fixed, lim)

    def f(y):
        return _nested(pats, w, mu, x, remove, fixed + [y], lim) * math.exp(-y * y / 2) \
            / math.sqrt(2 * math.pi)
    return quad(f, -lim, lim, epsabs=1e-15, epsrel=1e-12, limit=400)[0]


def pattern_mixture_delta(patterns, mu: float, eps: float, lim: float = 14.0) -> float:
    """delta(eps) of sum_B pi(B) N(mu B, I) vs N(0, I), the larger of both orders;
    ``patterns`` as from :func:`min_sep_patterns` (probabilities summing to 1); n = 2 or 3
    (coordinates on [-lim, lim], the last in closed form)."""
    pats = np.array([b for b, _ in patterns], dtype=float)
    w = np.array([pr for _, pr in patterns])
    if not 2 <= pats.shape[1] <= 3:
        raise ValueError("2 <= n <= 3 (nested quadrature)")
    x = math.exp(eps)
    return max(_nested(pats, w, mu, x, True, [], lim), _nested(pats, w, mu, x, False, [], lim))


def mean_mixture_delta(means, probs, eps: float, lim: float = 14.0) -> float:
    """delta(eps) of sum_i probs_i N(means_i, I_2) vs N(0, I_2) (two coordinates, every mean's
    second coordinate >= 0, so the likelihood ratio is non-decreasing in y_2: one kink per
    order), the larger of both orders, by nested adaptive quadrature (the inner one split at
    the kink, found by bisection)."""
    m = np.asarray(means, dtype=float)
    w = np.asarray(probs, dtype=float)
    x = math.exp(eps)
    norm2 = np.sum(m * m, axis=1) / 2

    def ratio(y1, y2):
        return float(np.sum(w * np.exp(m[:, 0] * y1 + m[:, 1] * y2 - norm2)))

    def phi(y):
        return math.exp(-y * y / 2) / math.sqrt(2 * math.pi)

    def inner(y1, remove):
        def f(y2):
            r = ratio(y1, y2)
            return (max(r - x, 0.0) if remove else max(1.0 - x * r, 0.0)) * phi(y2)
        level = x if remove else 1.0 / x
        g = lambda y2: ratio(y1, y2) - level  # noqa: E731
        pts = [brentq(g, -lim, lim, xtol=1e-14)] if g(-lim) < 0 < g(lim) else None
        return quad(f, -lim, lim, points=pts, epsabs=1e-15, epsrel=1e-11, limit=400)[0]

    return max(quad(lambda y1, r=r: inner(y1, r) * phi(y1), -lim, lim, epsabs=1e-14,
                    epsrel=1e-10, limit=400)[0] for r in (True, False))
