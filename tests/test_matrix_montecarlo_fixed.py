"""The Monte Carlo check under balls in bins drawn once (dp.FixedBins): the pair P = (1/bins)
sum_j N(C x_j, z^2 I) against Q = N(0, z^2 I), x_j the indicator of bin j's steps. Its loss
against brute force over the bins; the estimates against independent truths: C = I is random
allocation (1 of bins) of the Gaussian at sqrt(cycles) / z, one bin is the Gaussian mechanism
of sensitivity |C 1|, tiny overlapping cases against quadrature of the pair; the proposals'
density against the Gaussian mixture it is, their EM step's fixed point; and the proven upper
bound above the interval's lower end."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from test_matrix_amplified import exact_delta

import dpamp as dp
from dpamp.accounting.matrix_mc_fixed_bins import FixedBinsSampler
from dpamp.accounting.matrix_mc_loss import log_ratio_fixed_bins
from dpamp.accounting.montecarlo_matrix import estimate_delta, estimate_epsilon
from dpamp.families.matrix import bsr_coefficients


def _bin_patterns(n: int, bins: int) -> np.ndarray:
    """(bins, n): row j the indicator of steps j, j + bins, ... (empty when j >= n)."""
    return (np.arange(n)[None, :] % bins == np.arange(bins)[:, None]).astype(float)


@pytest.mark.parametrize("n, bins", [(7, 3), (5, 1), (4, 6)])
def test_fixed_bins_loss_is_exact(n, bins):
    """log (1/bins) sum_j exp(x_j.h - sum_{u<t} x_ju x_jt J[u, t]) by brute force, J dense of
    both signs and full bandwidth (no band limit here); bins > n leaves empty bins (e^0)."""
    rng = np.random.default_rng(3)
    c = rng.normal(size=(n + 1, n))
    j = 0.6 * c.T @ c
    h = 2.0 * rng.normal(size=(6, n))
    upper = np.triu(j, 1)
    pats = _bin_patterns(n, bins)
    want = np.array([logsumexp([x @ hi - x @ upper @ x for x in pats]) - math.log(bins)
                     for hi in h])
    np.testing.assert_allclose(log_ratio_fixed_bins(h, j, bins), want, atol=1e-12)


@pytest.mark.parametrize("bins, cycles, sigma", [(10, 1, 0.8), (4, 3, 1.5)])
def test_identity_is_random_allocation(bins, cycles, sigma):
    """C = I: bin j's block is its own steps, so the pair is random allocation (1 of bins) of
    the Gaussian of sensitivity sqrt(cycles) at noise sigma, which dpamp brackets
    independently (its allocation PLD)."""
    m = dp.MatrixMechanism(np.eye(bins * cycles), sigma, participation=dp.FixedBins(bins))
    r = estimate_epsilon(m, 1e-6, samples=10000, seed=1)
    g = dp.Gaussian(sigma / math.sqrt(cycles)).subsample(
        dp.RandomAllocation(1, bins)).epsilon(1e-6)
    assert r.lo <= g.lower and g.epsilon <= r.hi, (tuple(r), g)
    assert r.trusted and r.hi - r.lo < 0.02 * r.estimate
    assert r.direction == "remove"


def test_one_bin_is_the_gaussian_mechanism():
    """bins = 1: the record is in every step, no amplification: the Gaussian mechanism of
    sensitivity |C 1| (both orders equal)."""
    c = np.eye(6) + 0.5 * np.eye(6, k=-1)
    m = dp.MatrixMechanism(c, 2.0, participation=dp.FixedBins(1))
    r = estimate_epsilon(m, 1e-6, samples=4000, seed=2)
    g = dp.Gaussian(2.0, float(np.linalg.norm(c.sum(axis=1)))).epsilon(1e-6)
    assert r.lo <= g.lower and g.epsilon <= r.hi, (tuple(r), g)


@pytest.mark.parametrize("n, bins, eps", [(4, 2, 1.5), (4, 2, 3.0), (3, 2, 0.8), (3, 4, 0.5)])
def test_overlapping_bins_against_quadrature(n, bins, eps):
    """C = I + 0.7 I_{-1}: the bins' columns share rows. The exact delta of the pair by
    quadrature (n <= 4; bins 2 over 3 steps: unequal bins; bins 4 over 3: an empty bin, the
    record absent; 20 nodes agree with 64 to 1e-11 here)."""
    c = np.eye(n) + 0.7 * np.eye(n, k=-1)
    truth = exact_delta(c, 1.0, None, eps, nodes=20, pats=_bin_patterns(n, bins),
                        logw=np.full(bins, -math.log(bins)))
    m = dp.MatrixMechanism(c, 1.0, participation=dp.FixedBins(bins))
    r = estimate_delta(m, eps, samples=20000, seed=4)
    assert r.lo <= truth <= r.hi, (tuple(r), truth)
    assert r.hi - r.lo < 0.1 * truth


def test_small_delta_against_quadrature():
    """The tail: delta near 1e-6 on the overlapping 4-step case (the tilted proposal's
    regime) against quadrature, both through delta(eps) and eps(delta)."""
    c = np.eye(4) + 0.7 * np.eye(4, k=-1)
    pats, logw = _bin_patterns(4, 2), np.full(2, -math.log(2))
    m = dp.MatrixMechanism(c, 1.0, participation=dp.FixedBins(2))
    eps = 8.5
    truth = exact_delta(c, 1.0, None, eps, nodes=20, pats=pats, logw=logw)
    assert 1e-7 < truth < 1e-5
    r = estimate_delta(m, eps, samples=10000, seed=5)
    assert r.lo <= truth <= r.hi and r.trusted, (tuple(r), truth)
    e = estimate_epsilon(m, truth, samples=10000, seed=5)
    assert e.lo <= eps <= e.hi, tuple(e)


def _banded(bands: int, n: int):
    co = bsr_coefficients(bands)
    norm = math.sqrt(sum(x * x for x in co))
    return dp.BandedToeplitz([x / norm for x in co], n)


@pytest.mark.parametrize("bands, n, bins, sigma, method", [(4, 40, 10, 2.0, "profile"),
                                                         (2, 40, 20, 3.0, "noise-split")])
def test_proven_upper_above_the_estimate(bands, n, bins, sigma, method):
    """The banded square root: dpamp's proven upper bound (the smaller of the noise split and
    no amplification; ``method`` the one that gives it here, the noise split within 1.2x of
    the estimate at 20 bins, z = 3) stays above the interval's lower end."""
    m = dp.MatrixMechanism(_banded(bands, n), sigma, participation=dp.FixedBins(bins))
    r = estimate_epsilon(m, 1e-6, samples=6000, seed=6)
    g = m.epsilon(1e-6)
    assert g.epsilon >= r.lo and g.method == method, (tuple(r), g)
    assert r.trusted


def test_same_seed_same_answer_and_inputs():
    m = dp.MatrixMechanism(_banded(2, 12), 1.0, participation=dp.FixedBins(3))
    a = estimate_epsilon(m, 1e-5, samples=2000, seed=11)
    b = estimate_epsilon(m, 1e-5, samples=2000, seed=11)
    other = estimate_epsilon(m, 1e-5, samples=2000, seed=12)
    assert a == b and a.estimate != other.estimate and "not a guarantee" in a.label
    with pytest.raises(ValueError, match="group"):
        estimate_epsilon(m, 1e-5, samples=200, group=1)


def _sampler(c: np.ndarray, sigma: float, bins: int) -> FixedBinsSampler:
    cs = sp.csr_matrix(c)
    return FixedBinsSampler(cs, sp.csr_matrix(cs.T @ cs) / sigma ** 2, sigma, bins)


@pytest.mark.parametrize("bins, bands, rings, with_all", [(6, 3, 2, True), (4, 3, 2, False), (3, 3, 1, False),
                                                          (5, 1, 0, True), (1, 2, 0, False)])
def test_proposal_density_is_the_gaussian_mixture(bins, bands, rings, with_all):
    """log dR_theta/dQ against the mixture (1/B) sum_j N(C m_j, s^2 I) over N(0, s^2 I)
    evaluated directly, m_j = sum_k theta_k (x_{j+k} + x_{j-k}, each bin once) (+ theta_e 1):
    the rings reach as far as the bins' steps meet in C^T C."""
    rng = np.random.default_rng(7)
    n, sigma = 9, 0.8
    c = np.zeros((n, n))
    for t in range(n):
        for k in range(bands):
            if t + k < n:
                c[t + k, t] = rng.uniform(0.2, 1.0)
    st = _sampler(c, sigma, bins)
    assert (st.rings, st.with_all) == (rings, with_all)
    theta = tuple(rng.normal(size=st.size))
    x = _bin_patterns(n, bins)
    means = []
    for j in range(bins):
        m = sum(theta[k] * np.clip(x[(j + k) % bins] + x[(j - k) % bins], 0, 1)
                for k in range(rings + 1))
        means.append(m + (theta[-1] if with_all else 0.0))
    y = 1.5 * rng.normal(size=(n, 5))
    want = [logsumexp([(cm @ yi - 0.5 * cm @ cm) / sigma ** 2 for cm in (c @ m for m in means)])
            - math.log(bins) for yi in y.T]
    np.testing.assert_allclose(st.log_ratio(st.observe(y), theta), want, atol=1e-10)
    # the target's own loss (the loss module's path) is the same mixture at ring 0 = 1
    want_p = [logsumexp([(c @ xj @ yi - 0.5 * (c @ xj) @ (c @ xj)) / sigma ** 2 for xj in x])
              - math.log(bins) for yi in y.T]
    np.testing.assert_allclose(st.log_ratio(st.observe(y), st.target(True)), want_p,
                               atol=1e-10)


def test_em_step_keeps_the_sampling_proposal():
    """With unit weights on draws of R_theta, the update is the maximum likelihood of theta:
    it returns theta up to sampling noise (the EM fixed point)."""
    c = np.eye(12) + 0.8 * np.eye(12, k=-1) + 0.5 * np.eye(12, k=-2)
    st = _sampler(c, 1.0, 4)
    theta = (2.0, 0.6, -0.4)                  # rings 0, 1, 2 cover the 4 bins: no theta_e
    assert st.size == 3
    _, stats = st.sample(theta, theta, 20000, np.random.default_rng(8))
    got = st.ce_update(stats, np.ones(20000), st.start(True))
    np.testing.assert_allclose(got, theta, atol=0.05)
