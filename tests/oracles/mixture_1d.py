"""The exact delta(eps) of a one-dimensional Bernoulli mixture of Gaussians against the
Gaussian, at 30 digits (tests only).

P = sum_B pi(B) N(sum_j B_j a_j, 1) over the patterns B in {0, 1}^m with independent
B_j ~ Bernoulli(q), Q = N(0, 1), shifts a_j >= 0 (in units of the noise). The loss increases in
the outcome, so each order's hockey-stick divergence is closed-form at the root of the loss
(found by bisection): the larger of both orders is returned."""
from __future__ import annotations

import itertools

import mpmath as mp


def bernoulli_mixture_delta(shifts, q, eps) -> float:
    """delta(eps) of the pair above, the largest of both orders; ``shifts`` are mpmath or
    float numbers already divided by the noise's standard deviation."""
    mp.mp.dps = 30
    a = [mp.mpf(x) for x in shifts]
    qq = mp.mpf(q)
    comps = [(mp.fsum(x for x, bit in zip(a, bits) if bit),
              qq ** sum(bits) * (1 - qq) ** (len(a) - sum(bits)))
             for bits in itertools.product((0, 1), repeat=len(a))]

    def loss(y):
        return mp.log(mp.fsum(w * mp.exp(x * y - x * x / 2) for x, w in comps))

    def root(level):
        lo, hi = mp.mpf(-200), mp.mpf(200)
        if loss(lo) >= level:
            return None
        for _ in range(140):           # 400 * 2^-140: far below the 30 digits kept
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if loss(mid) < level else (lo, mid)
        return (lo + hi) / 2
    e = mp.exp(eps)
    y = root(mp.mpf(eps))
    rem = (mp.fsum(w * mp.ncdf(x) for x, w in comps) - e if y is None else
           mp.fsum(w * mp.ncdf(x - y) for x, w in comps) - e * mp.ncdf(-y))
    y2 = root(-mp.mpf(eps))
    add = mp.mpf(0) if y2 is None else \
        mp.ncdf(y2) - e * mp.fsum(w * mp.ncdf(y2 - x) for x, w in comps)
    return float(max(rem, add, mp.mpf(0)))
