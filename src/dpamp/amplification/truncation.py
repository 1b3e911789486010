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

**The lower bounds.** Two pairs of neighbouring datasets, each attained:

* the others contribute 0 and x a vector of norm Delta: the output is the noise plus x's
  contribution when x is kept, which happens w.p. q_eff = q E[min(1, B/(K+1))] = q U +
  B P[Bin(n, q) >= B+1] / n, independently of everything the output shows; its pair is
  exactly PoissonGaussian(mu, q_eff). q_eff is *not* the rate of a dominating pair:
* the others contribute -e and x +e (|e| = Delta): a cut batch that keeps x moves the sum by
  2 Delta; its laws are mixtures of Gaussians on a lattice (:func:`instance_loss`), binned (a
  post-processing). Where the count of the others is not hidden by the noise (small sigma, or
  B far from nq) it is within a few per cent of the upper bound (the tests compare both with
  the exact divergences of small cases).

The PLD's lower part is the one of the two with the larger KL divergence (a choice, not a
bound: both are attained); the profile's and the RDP's lower bounds are the first. The width
of the bracket is the price of the cut batches (T, with p and 2 mu). B >= n cuts nothing:
plain Poisson sampling, exact.

**Numerics.** T, U, p and q_eff come from scipy's binomial tails (the regularised incomplete
beta function, each tail from its own side, so both keep their relative precision), charged as a
relative error of 1e-9 (scipy documents errors near 1e-14; the tests compare them with a
50-digit mpmath sum): U and T as a mass error of the mixture, p rounded up and q_eff down by
that much (the Poisson pair's curve increases with its rate, in both orders).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ..core.rounding import TINY

__all__ = ["TruncationWeights", "truncation_weights", "binomial_tails", "upper_loss",
           "lower_loss", "instance_loss", "log_moments", "profile_rows"]

#: the relative error charged to scipy's binomial tails (module docstring)
WEIGHT_REL_ERR = 1e-9


@dataclasses.dataclass(frozen=True)
class TruncationWeights:
    """``keep`` = U = P[K < B], ``cut`` = T = P[K >= B] (K ~ Bin(n - 1, q)), ``cut_rate`` = p
    rounded up, ``rate_low`` = q_eff rounded down (module docstring)."""

    keep: float
    cut: float
    cut_rate: float
    rate_low: float


def binomial_tails(m: int, q: float, k: int) -> tuple[float, float]:
    """(P[X < k], P[X >= k]) for X ~ Bin(m, q) (scipy, each side from its own tail; relative
    error charged as WEIGHT_REL_ERR)."""
    from scipy.stats import binom
    if k <= 0:
        return 0.0, 1.0
    if k > m:
        return 1.0, 0.0
    if q >= 1.0:
        return 0.0, 1.0
    return float(binom.cdf(k - 1, m, q)), float(binom.sf(k - 1, m, q))


@functools.lru_cache(maxsize=256)
def truncation_weights(q: float, b: int, n: int) -> TruncationWeights:
    """U, T, p (up) and q_eff (down) of truncated Poisson sampling (module docstring)."""
    if b >= n:
        return TruncationWeights(1.0, 0.0, 0.0, q)
    keep, cut = binomial_tails(n - 1, q, b)
    _, over = binomial_tails(n, q, b + 1)
    slack = 4.0 * WEIGHT_REL_ERR
    # a tail below the doubles (e^-745) is weighted by the smallest one, which is above it
    # (a larger weight only raises the mixture's curve); p <= q B/(B+1) where it underflows
    if keep == 0.0 and q < 1.0:
        keep = TINY
    if cut < 1e-300 or over < 1e-300:
        p = q * b / (b + 1.0)
        cut = max(cut, TINY)
    else:
        p = b / n * over / cut * (1.0 + slack)
    q_eff = (q * keep + b / n * over) * (1.0 - slack)
    return TruncationWeights(keep, cut, min(p, 1.0), min(q_eff, q))


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
    """The attained lower pair (remove order): of the two instances (others 0 and x +e: the
    Poisson-subsampled Gaussian at q_eff; others -e and x +e: :func:`instance_loss`), the one
    whose loss has the larger mean under P (KL divergence, which drives a long composition;
    a choice of sizing only, both are attained)."""
    w = truncation_weights(scheme.rate, scheme.max_batch_size, scheme.dataset_size)
    eff = _poisson_gaussian(mu, w.rate_low)
    try:
        opposed = instance_loss(mu, scheme)
    except MemoryError:
        return eff
    return opposed if opposed.mean > eff.mean else eff


#: the largest number of (lattice point, bin) pairs :func:`instance_loss` evaluates
MAX_CELLS = 2 ** 23
#: lattice points of log-weight below the largest less this are left out (module docstring)
DROP = 750.0


def instance_loss(mu: float, scheme, bins_per_unit: float = 10.0):
    """The pair of one pair of neighbouring datasets, post-processed: the others contribute
    -e, the differing record +e (|e| = Delta; in units of the noise, shifts mu). Without the
    record the output is N(-mu min(K, B), 1); with it, in addition, x is kept (K < B: w.p. q,
    mean mu (1 - K); K >= B: w.p. q B/(K+1), mean mu (2 - B), else mean -mu B). Both laws are
    mixtures of N(mu j, 1) over the lattice j = -B..1 (weights: :func:`_instance_weights`).
    The output is binned (cells of width 1 / ``bins_per_unit`` over the lattice's range, two
    end cells beyond): a post-processing, so its pair is dominated by the instance's, which is
    a lower bound on the mechanism's.

    Masses: log sums over the lattice of log(Phi(b - mu j) - Phi(a - mu j)) (scipy's log_ndtr
    and binomial, charged as a relative mass error of 2e-9), through
    :func:`dpamp.pld.loss.truncated_atoms` (cells below e^-708 go to its tails). Lattice points
    of log-weight DROP below the largest are left out: each cell kept (mass >= e^-708) loses at
    most their count times e^-750, a relative 1e-18 or less per point, within the charged error;
    the tails are raised by the whole left-out mass."""
    from scipy.special import logsumexp

    from ..pld.loss import truncated_atoms
    q, b, n = scheme.rate, scheme.max_batch_size, scheme.dataset_size
    # k far from the mean has P[K = k] <= exp(-2 (mq - k)^2 / m) (Hoeffding), below
    # e^-(DROP + log(b + 2)) <= e^(top - DROP) (the largest weight is at least 1/(b + 2)):
    # left out unevaluated, counted with the others left out
    reach = math.sqrt(max(n - 1, 1) * (DROP + math.log(b + 2) + 1.0) / 2.0)
    k0 = max(0, min(b, int(math.floor((n - 1) * q - reach))))
    if (b + 2 - k0) * (mu * (b + 2 - k0) + 24.0) * bins_per_unit > MAX_CELLS:
        raise MemoryError("the instance's lattice and bins are too many")
    lw_p, lw_q, n_drop = _instance_weights(q, b, n, k0, reach)
    top = max(lw_p.max(), lw_q.max())
    used = (lw_p > top - DROP) | (lw_q > top - DROP)
    n_drop += int(used.size - used.sum())
    idx = np.nonzero(used)[0]
    js = 1.0 - idx
    lo, hi = mu * js.min() - 12.0, mu * js.max() + 12.0
    cells = int(math.ceil((hi - lo) * bins_per_unit))
    if cells * idx.size > MAX_CELLS:
        raise MemoryError("the instance's lattice and bins are too many")
    edges = np.concatenate([[-np.inf], np.linspace(lo, hi, cells + 1), [np.inf]])
    a, c = edges[:-1][:, None] - mu * js[None, :], edges[1:][:, None] - mu * js[None, :]
    log_cell = _log_interval(a, c)                        # (cells, points)
    log_p = logsumexp(log_cell + lw_p[idx][None, :], axis=1)
    log_q = logsumexp(log_cell + lw_q[idx][None, :], axis=1)
    with np.errstate(invalid="ignore"):
        loss = log_p - log_q
    tail = n_drop * math.exp(-DROP) * (cells + 2) if n_drop else 0.0
    return truncated_atoms(loss, log_p, log_q, tail, tail, mass_rel_err=2e-9,
                           name=f"truncation_instance({mu:g}, {q:g}, {b}, {n})")


def _instance_weights(q: float, b: int, n: int, k0: int, reach: float):
    """Log weights of P and Q on the lattice j = 1 - i (i = 0 .. b + 1) of
    :func:`instance_loss`, and how many terms were left out (each below e^-DROP): P[K = k]
    for k0 <= k < b (below k0: left out), T, q E[B/(K+1); K >= B] = B P[Bin(n, q) > B] / n and
    q E[1 - B/(K+1); K >= B] summed over k up to the mean plus ``reach`` (beyond: left out)."""
    from scipy.special import logsumexp
    from scipy.stats import binom
    m = n - 1
    _, cut = binomial_tails(m, q, b)
    _, over = binomial_tails(n, q, b + 1)
    k_hi = min(m, int(math.ceil(m * q + reach)))
    ks = np.arange(b, k_hi + 1)
    with np.errstate(divide="ignore"):
        l_dc = math.log(q) + float(logsumexp(binom.logpmf(ks, m, q) + np.log1p(-b / (ks + 1.0))))
        l_cut = math.log(cut) if cut > 0 else -math.inf
        l_kc = math.log(b / n * over) if over > 0 else -math.inf
        lk = binom.logpmf(np.arange(k0, min(b, n)), m, q)
    lw_q = np.full(b + 2, -np.inf)
    lw_q[1 + k0:1 + k0 + lk.size] = lk                    # j = -k, k < b
    lw_q[1 + b] = np.logaddexp(lw_q[1 + b], l_cut)        # j = -b
    l1 = math.log1p(-q) if q < 1 else -math.inf
    lw_p = l1 + lw_q
    lw_p[k0:k0 + lk.size] = np.logaddexp(lw_p[k0:k0 + lk.size], math.log(q) + lk)  # j = 1 - k
    lw_p[b - 1] = np.logaddexp(lw_p[b - 1], l_kc)        # j = 2 - b
    lw_p[1 + b] = np.logaddexp(lw_p[1 + b], l_dc)        # j = -b
    return lw_p, lw_q, k0 + max(0, m - k_hi)


def _log_interval(a, c):
    """log(Phi(c) - Phi(a)) for a < c elementwise, without cancellation: through the upper
    tails where a >= 0, the lower tails where c <= 0, directly across 0."""
    from scipy.special import log_ndtr
    with np.errstate(divide="ignore", invalid="ignore"):
        right = log_ndtr(-a) + np.log1p(-np.exp(log_ndtr(-c) - log_ndtr(-a)))
        left = log_ndtr(c) + np.log1p(-np.exp(log_ndtr(a) - log_ndtr(c)))
        mid = np.log1p(-(np.exp(log_ndtr(a)) + np.exp(log_ndtr(-c))))
    return np.where(a >= 0, right, np.where(c <= 0, left, mid))


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
    parts' proven rows (Balle et al. 2018, Thm 8 each), summed and rounded up. (The lower rows are
    those of the membership pair at q_eff, which the subsampled family builds from
    ``member_gamma``.)"""
    from ..profiles.core import log_pair
    from ..profiles.numerics import pad_up
    eps = np.asarray(eps, dtype=float)
    terms = [math.log(wt) + np.asarray(log_pair(m, eps), dtype=float)
             for wt, m in _components(mu, scheme)]
    with np.errstate(invalid="ignore"):
        total = np.logaddexp.reduce(np.stack(terms), axis=0)
    return pad_up(total, extra=1e-15)
