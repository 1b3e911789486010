"""High-probability bounds on the posterior of a participation pattern given past outputs.

The question of conditional composition (Choquette-Choo, Ganesh, Steinke & Thakurta, "Privacy
Amplification for Matrix Mechanisms", ICLR 2024): after the outputs theta_{<i} of a matrix
mechanism, how likely is it that the record took part in every step of a set A? With
P = law of theta_{<i} when the record is Poisson-sampled (rate q) and P_A = the same law
conditioned on "the record is in every step of A", Bayes gives exactly

    Pr[x_A = 1 | theta_{<i}] = q^|A| P_A(theta_{<i}) / P(theta_{<i}).

So on the event R_A = P_A / P <= e^eps the posterior is at most q^|A| e^eps. The event's
complement is rare: for any eps' < eps, (R_A - e^{eps'})_+ >= e^eps - e^{eps'} on it, so

    Pr_P[R_A > e^eps] <= H_{e^{eps'}}(P_A || P) / (e^eps - e^{eps'})        (Markov)

and P = q^|A| P_A + (1 - q^|A|) R (R: the mixture over the other patterns of A) gives, by joint
convexity of the hockey-stick divergence, H(P_A || P) <= (1 - q^|A|) H(P_A || R). Each pair
(P_A, P_a) (a another pattern of A; every other step's participation drawn alike on both sides)
is, for each draw of the other steps, an adaptive composition of Gaussian steps whose means
differ at output t by sum_{j in A, a_j = 0} C[t, j] g_j, of norm at most sum_{j in A} |C[t, j]|
(gradients clipped to norm 1): mu_A-GDP with

    mu_A = || sum_{j in A} |C[:i, j]| ||_2 / sigma

(Dong, Roth & Su 2022, adaptive composition of Gaussian differential privacy), and a mixture with
the same weights on both sides is dominated by its worst member. Hence

    Pr_P[R_A > e^eps] <= (1 - q^|A|) min_{eps' in [0, eps)} delta_G(mu_A; eps') / (e^eps - e^{eps'}),

delta_G the Gaussian mechanism's profile (Balle & Wang 2018). :func:`posterior_exponents` finds,
for a budget beta per set, a (not the smallest) eps_A with this bound <= beta, by bisection on
values whose bound is checked with the profile rounded up.
"""
from __future__ import annotations

import numpy as np

from ...profiles.closed_forms import gaussian_log_profile

__all__ = ["posterior_exponents", "tail_log_bound"]

#: the gaps eps - eps' tried in Markov's bound (the best one is taken)
_GAPS = np.array([1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0])
#: absolute padding of the computed log bound (the log1p / log terms' rounding)
_PAD = 1e-12


def tail_log_bound(mu: np.ndarray, log1m_qk: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """An upper bound on log Pr_P[R_A > e^eps] (module docstring), elementwise in mu (the
    GDP parameter mu_A), log1m_qk = log(1 - q^|A|) and eps >= 0."""
    mu, log1m_qk, eps = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                               for v in (mu, log1m_qk, eps)))
    best = np.full(mu.shape, np.inf)
    for gap in _GAPS:
        lo = eps - gap
        ok = lo >= 0
        if not ok.any():
            continue
        with np.errstate(divide="ignore"):
            lh = gaussian_log_profile(mu[ok], lo[ok], upper=True)
        # log(e^eps - e^{eps'}) = eps + log(1 - e^{-gap}), rounded down by _PAD
        val = lh - eps[ok] - np.log(-np.expm1(-gap)) + _PAD
        best[ok] = np.minimum(best[ok], val)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isneginf(log1m_qk), -np.inf, best + log1m_qk + _PAD)
    return np.minimum(out, 0.0)


def posterior_exponents(mu: np.ndarray, k: np.ndarray, q: float,
                        log_beta) -> np.ndarray:
    """eps_A >= 0 per set (vectorised over sets: mu_A, |A| = k) with
    Pr_P[R_A > e^{eps_A}] <= beta = exp(log_beta) (a number, or one per set): the upper end of a bisection whose every
    upper end was checked with :func:`tail_log_bound` (so the answer is proven, whatever the
    bisection's accuracy)."""
    mu = np.asarray(mu, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore"):       # q^k = 1: P_A = P, the bound is 0 (log -inf)
        log1m_qk = np.log1p(-np.power(q, k))
    log_beta = np.broadcast_to(np.asarray(log_beta, dtype=float), mu.shape)
    lo = np.zeros_like(mu)
    hi = 0.5 * mu * mu + mu * (np.sqrt(2.0 * np.maximum(-log_beta, 1.0)) + 3.0) + 1.0
    for _ in range(60):                       # grow hi until it is certified
        bad = tail_log_bound(mu, log1m_qk, hi) > log_beta
        if not bad.any():
            break
        hi = np.where(bad, 2.0 * hi + 1.0, hi)
    else:  # pragma: no cover - mu is finite and the bound falls like a Gaussian tail
        raise ArithmeticError("no tail exponent found for the posterior bound")
    ok0 = tail_log_bound(mu, log1m_qk, lo) <= log_beta
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        good = tail_log_bound(mu, log1m_qk, mid) <= log_beta
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
    return np.where(ok0, 0.0, hi)
