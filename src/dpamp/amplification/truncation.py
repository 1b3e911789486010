"""Truncated Poisson sampling of a Gaussian sum: its dominating pair and its lower pair.

**The sampler** (``dp.TruncatedPoisson(q, B, n)``; dp-accounting's
``TruncatedSubsampledGaussianDpEvent``): every record enters the sample independently with
probability q; a sample of more than B records is cut to a uniformly random B-subset of it; the
mechanism adds Gaussian noise to the sum of the kept records' (clipped) contributions. Add/remove
relation; n is the size of the larger dataset of a pair (the differing record x and the n - 1
others), as in dp-accounting. Let K ~ Bin(n - 1, q) be the number of the others sampled,
T = P[K >= B] (a sample with x is cut) and U = 1 - T.

**The upper bound** (the argument of dp-accounting 0.6's PLD for this event, "Tighter Privacy
Analysis for Truncated Poisson Sampling", arXiv:2508.15089; written out here). Draw the others'
sample S; if K < B let W = (S, "uncut"), else draw a uniformly random (B-1)-subset R of S and a
uniformly random y in S \\ R and let W = (R, y, "cut"). W has the same law under both datasets,
and given W:

* uncut (K < B): without x the mechanism outputs f(S) + Z, with x it outputs f(S) + Z w.p.
  1 - q and f(S + x) + Z w.p. q: the Poisson pair at rate q of two add/remove neighbours;
* cut (K >= B): without x the kept batch is R + y (a uniform B-subset of S); with x, x is
  kept w.p. q B/(K+1) and then the batch is R + x, else it is a uniform B-subset of S, which
  given W we may take to be R + y. Given only (R, y, "cut"), K's law is its law given K >= B
  (every (B-1, 1)-selection from the others is equally likely whatever K is), so x is kept
  w.p. p = E[q B/(K+1) | K >= B] = B P[Bin(n, q) >= B + 1] / (n T), and the pair is the Poisson
  pair at rate p of the *substitution* neighbours R + y, R + x: a Gaussian sum of add/remove
  sensitivity Delta has substitution sensitivity at most 2 Delta (triangle inequality).

By joint convexity of the hockey-stick divergence over W (in each order), the mechanism is
dominated by the labelled mixture (:mod:`dpamp.pld.labelled`)

    U x PoissonGaussian(mu, q)  +  T x PoissonGaussian(2 mu, p),   mu = Delta / sigma,

in both orders: delta(eps) <= U delta_{q, mu}(eps) + T delta_{p, 2 mu}(eps). (Conditioning on the
finer K instead gives the per-K mixture of rates q B/(K+1), which is never tighter: the curve
of the Poisson pair is convex in the rate.) It composes as a pair. Rényi DP: exp((a-1) eps(a))
of a labelled mixture is the same mixture of its parts', so (a-1) eps(a) <= log(U e^{(a-1)
eps_A(a)} + T e^{(a-1) eps_C(a)}); its cap is the RDP of the Gaussian with sensitivity 2 Delta
(both parts are below it), not that of the base: a cut batch moves the sum by up to 2 Delta.

**The lower bound.** The pair of datasets in which every other record contributes 0 and x
contributes a vector of norm Delta: the output is the noise plus x's contribution when x is
kept, which happens w.p. q_eff = q E[min(1, B/(K+1))] = q U + B P[Bin(n, q) >= B+1] / n,
independently of everything the output shows; its pair is exactly PoissonGaussian(mu, q_eff), a
lower bound on the mechanism's curve in both orders. (q_eff is *not* the rate of a dominating
pair: with the others contributing -e and x +e a cut batch moves the sum by 2 Delta; the tests
check both claims against the exact divergence of small cases.) The bracket's width is the
price of the cut batches: T (p with 2 mu against q_eff with mu). B >= n cuts nothing: plain
Poisson sampling, exact.

**Numerics.** T, U, p and q_eff come from the binomial tails summed in mpmath at 50 digits
(the smaller tail term by term from its end next to B, down to a term below 1e-45 of the sum
with the ratio of successive terms <= 1/2, which bounds the rest by that term), then rounded to
doubles: U and T to nearest (relative error <= 2^-52, charged as a mass error of the mixture),
p up and q_eff down (the Poisson pair's curve increases with its rate, in both orders).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

__all__ = ["TruncationWeights", "truncation_weights", "binomial_tails", "upper_loss",
           "lower_loss", "log_moments", "profile_rows"]

#: a bound on the relative error of the doubles U and T (each rounded to nearest from a 50-digit
#: value) beyond their own rounding
WEIGHT_REL_ERR = 4 * 2.0 ** -52


@dataclasses.dataclass(frozen=True)
class TruncationWeights:
    """``keep`` = U = P[K < B], ``cut`` = T = P[K >= B] (K ~ Bin(n - 1, q)), ``cut_rate`` = p
    rounded up, ``rate_low`` = q_eff rounded down (module docstring)."""

    keep: float
    cut: float
    cut_rate: float
    rate_low: float


def binomial_tails(m: int, q, k: int, dps: int = 50):
    """(P[X < k], P[X >= k]) for X ~ Bin(m, q), as mpmath numbers at ``dps`` digits: the
    smaller side summed term by term from k (module docstring), the other as 1 minus it."""
    import mpmath as mp
    with mp.workdps(dps):
        q = mp.mpf(q)
        if k <= 0:
            return mp.mpf(0), mp.mpf(1)
        if k > m:
            return mp.mpf(1), mp.mpf(0)
        if q == 1:
            return mp.mpf(0), mp.mpf(1)
        mean = m * q
        upper = k > mean                  # k above the mean: the upper tail is the small one
        j = k if upper else k - 1
        lq, l1q = mp.log(q), mp.log1p(-q)
        term = mp.exp(mp.loggamma(m + 1) - mp.loggamma(j + 1) - mp.loggamma(m - j + 1)
                      + j * lq + (m - j) * l1q)
        odds = q / (1 - q)
        total = mp.mpf(0)
        tiny = mp.mpf(10) ** (-dps + 5)
        while True:
            total += term
            if upper:
                if j >= m:
                    break
                ratio = (m - j) * odds / (j + 1)
                j += 1
            else:
                if j <= 0:
                    break
                ratio = j / ((m - j + 1) * odds)
                j -= 1
            term *= ratio
            # past the mode the ratio only falls: once <= 1/2 the rest is at most the term
            if ratio <= 0.5 and term <= tiny * total:
                total += term
                break
        return (1 - total, total) if upper else (total, 1 - total)


@functools.lru_cache(maxsize=256)
def truncation_weights(q: float, b: int, n: int) -> TruncationWeights:
    """U, T, p (up) and q_eff (down) of truncated Poisson sampling (module docstring)."""
    import mpmath as mp
    with mp.workdps(50):
        keep, cut = binomial_tails(n - 1, q, b)
        if cut == 0:
            return TruncationWeights(1.0, 0.0, 0.0, q)
        _, over = binomial_tails(n, q, b + 1)
        p = mp.mpf(b) * over / (n * cut)
        q_eff = mp.mpf(q) * keep + mp.mpf(b) * over / n
        p_up = math.nextafter(float(p), math.inf)
        q_low = math.nextafter(float(q_eff), 0.0)
        return TruncationWeights(float(keep), float(cut), min(p_up, 1.0), min(q_low, q))


def _parts(mu: float, scheme):
    w = truncation_weights(scheme.rate, scheme.max_batch_size, scheme.dataset_size)
    return w, [(w.keep, mu, scheme.rate), (w.cut, 2.0 * mu, w.cut_rate)]


def _poisson_gaussian(mu: float, rate: float):
    from ..pld import loss as L
    g = L.gaussian(mu)
    return g if rate >= 1.0 else g.poisson(rate)


def upper_loss(mu: float, scheme):
    """The dominating pair (remove order): the labelled mixture of the Poisson-subsampled
    Gaussians (mu, q) and (2 mu, p) with weights U and T; plain Poisson where nothing is cut."""
    from ..pld.labelled import labelled_mixture
    w, parts = _parts(mu, scheme)
    return labelled_mixture([(wt, _poisson_gaussian(m, r)) for wt, m, r in parts if wt > 0],
                            WEIGHT_REL_ERR,
                            name=f"truncated_poisson({mu:g}, {scheme.rate:g}, "
                                 f"{scheme.max_batch_size}, {scheme.dataset_size})")


def lower_loss(mu: float, scheme):
    """The attained lower pair (remove order): the Poisson-subsampled Gaussian at q_eff."""
    w = truncation_weights(scheme.rate, scheme.max_batch_size, scheme.dataset_size)
    return _poisson_gaussian(mu, w.rate_low)


def _components(mu: float, scheme):
    """[(weight, Subsampled Gaussian)] of the upper pair, for the RDP and profile methods."""
    from ..core.sampling import Poisson
    from ..mechanisms.gaussian import Gaussian
    w, parts = _parts(mu, scheme)
    return [(wt, Gaussian(1.0, sensitivity=m) if r >= 1.0 else
             Gaussian(1.0, sensitivity=m).subsample(Poisson(r)))
            for wt, m, r in parts if wt > 0]


def log_moments(mu: float, scheme, alpha: np.ndarray) -> np.ndarray:
    """(alpha - 1) eps(alpha) of the upper pair at real orders alpha > 1: log(U e^{(a-1) eps_A}
    + T e^{(a-1) eps_C}) from the parts' proven curves, rounded up (the weights' relative error
    and the sum's rounding: 1e-14 absolute on the log, far above them)."""
    alpha = np.asarray(alpha, dtype=float)
    terms = []
    for wt, m in _components(mu, scheme):
        with np.errstate(invalid="ignore", over="ignore"):
            terms.append(math.log(wt) + (alpha - 1.0) * np.asarray(m.rdp(alpha), dtype=float))
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.logaddexp.reduce(np.stack(terms), axis=0)
    from ..core.rounding import ulps_up
    return ulps_up(total + 1e-14 * (1.0 + np.abs(total)), 4)


def profile_rows(mu: float, scheme, eps):
    """log of both rows (remove, add) of the upper pair's privacy profile: U and T times the
    parts' proven rows (000 Thm 8 each), summed and rounded up. (The lower rows are those of
    the membership pair at q_eff, which the subsampled family builds from ``member_gamma``.)"""
    from ..profiles.core import log_pair
    from ..profiles.numerics import pad_up
    eps = np.asarray(eps, dtype=float)
    terms = [math.log(wt) + np.asarray(log_pair(m, eps), dtype=float)
             for wt, m in _components(mu, scheme)]
    with np.errstate(invalid="ignore"):
        total = np.logaddexp.reduce(np.stack(terms), axis=0)
    return pad_up(total, extra=1e-15)
