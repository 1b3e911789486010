"""Profile -> MGF -> RDP (000 Thm 6): against the closed-form Gaussian MGF
exp(s(s+1) eta^2 / 2), the Laplace and randomized-response RDP, brute-force Rényi divergences of
subsampled discrete mechanisms, and the hooks into Subsampled."""
import math

import numpy as np
import pytest

import dpamp as dp
from dpamp.profiles import core
from dpamp.profiles.rdp_bridge import (crude_log_mgf, log_mgf_from_profile, profile_rdp,
                                       rdp_from_profile, subsampled_log_moments)


@pytest.mark.parametrize("eta", [0.3, 1.0, 2.0])
def test_thm6_gaussian_mgf(eta):
    """E[e^{sL}] = exp(s(s+1) eta^2 / 2) for N(eta, 1) vs N(0, 1)."""
    s = np.array([0.5, 1.0, 3.0, 7.0, 20.0])
    rows = lambda e: core.log_pair(dp.Gaussian(1 / eta), e)  # noqa: E731
    exact = s * (s + 1) * eta ** 2 / 2
    tail = lambda t: t * (t + 1) * eta ** 2 / 2  # noqa: E731  the Gaussian's own moments
    got = log_mgf_from_profile(rows, s, log_tail_mgf=tail)
    assert (got >= exact).all()
    np.testing.assert_allclose(got, exact, rtol=2e-4)


def test_thm6_without_tail_needs_a_pure_profile():
    rows = lambda e: core.log_pair(dp.Gaussian(1.0), e)  # noqa: E731
    assert np.isinf(log_mgf_from_profile(rows, np.array([2.0]))).all()  # no tail bound: inf
    lap = dp.Laplace(0.7)
    a = np.array([1.5, 2.0, 5.0, 30.0])
    got = profile_rdp(lap, a)  # profile is 0 beyond eps0: no tail needed
    assert (got >= lap.rdp(a)).all()
    np.testing.assert_allclose(got, lap.rdp(a), rtol=1e-3)
    rr = dp.RandomizedResponse(0.9)
    got = rdp_from_profile(lambda e: core.log_pair(rr, e), a)
    assert (got >= rr.rdp(a)).all()
    np.testing.assert_allclose(got, rr.rdp(a), rtol=1e-3)


def test_thm6_asymmetric_pair_both_orders():
    """Poisson-subsampled Gaussian (asymmetric pair): Thm 6 bounds max(D(P||Q), D(Q||P)), which
    004 Thm 34 (remove order) gives exactly at integer orders."""
    m = dp.Gaussian(0.9).subsample(dp.Poisson(0.05))
    a = np.array([2.0, 3.0, 6.0, 12.0])
    got = profile_rdp(m, a)
    ref = m.rdp(a)  # 004 Thm 34, tight for this pair
    assert (got >= ref * (1 - 1e-9)).all()
    np.testing.assert_allclose(got, ref, rtol=2e-3)


def test_poisson_substitution_rdp_hook():
    g = dp.Gaussian(1.0, relation=dp.SUBSTITUTION)
    m = g.subsample(dp.Poisson(0.05, relation=dp.SUBSTITUTION, population=200))
    assert m.has_rdp()
    a = np.array([2.0, 4.0, 9.0])
    r = m.rdp(a)
    # never below the exact RDP of the membership pair ((1-q) N(0,1) + q N(1,1), N(0,1)), which
    # is an actual pair of this mechanism (004 Thm 34 value, both orders)
    member = dp.Gaussian(1.0).subsample(dp.Poisson(0.05)).rdp(a)
    assert (r >= member * (1 - 1e-9)).all()
    # and better than the crude joint-convexity bound
    crude = crude_log_mgf(m, a - 1) / (a - 1)
    assert (r <= crude).all() and r[0] < 0.5 * crude[0]
    # without the population only the crude bound is available
    m2 = g.subsample(dp.Poisson(0.05, relation=dp.SUBSTITUTION))
    np.testing.assert_allclose(m2.rdp(a), np.minimum(crude, g.rdp(a)), rtol=1e-10)


def test_rdp_gating_where_caps_would_be_unsound():
    lap = dp.Laplace(1.0, relation=dp.SUBSTITUTION)
    assert not lap.subsample(dp.Poisson(0.1, relation=dp.SUBSTITUTION, population=9)).has_rdp()
    assert not lap.subsample(dp.WithReplacement(3, 10)).has_rdp()
    assert lap.subsample(dp.WithReplacement(1, 10)).has_rdp()
    # no profile: only the crude joint-convexity bound (finite), and no profile method
    z = dp.ZCDP(0.1, relation=dp.SUBSTITUTION).subsample(dp.WithReplacement(1, 10))
    assert z.has_rdp() and 0 < z.rdp(2.0) <= 0.2
    with pytest.raises(NotImplementedError):
        dp.profile_pair(z, 1.0)
    assert "profile" not in dp.available_methods(z)


def _renyi(p, q, a):
    p, q = np.asarray(p, float), np.asarray(q, float)
    return math.log(np.sum(p ** a * q ** (1 - a))) / (a - 1)


def test_with_replacement_rdp_vs_bruteforce():
    """m = 2 draws from n = 3 records, randomized response of a bit (its k-group profile is its
    profile): the exact Rényi divergence of the membership pair ((1-g) R(0) + g R(1), R(0)), an
    actual pair, is never above the bound, and the bound is close to it."""
    p, n, mb = 0.8, 3, 2
    rr = dp.RandomizedResponse(p, relation=dp.SUBSTITUTION)
    m = rr.subsample(dp.WithReplacement(mb, n))
    orders = np.array([2, 3, 5])
    K = subsampled_log_moments(m, orders)
    g = 1 - (1 - 1 / n) ** mb
    P = np.array([(1 - g) * (1 - p) + g * p, (1 - g) * p + g * (1 - p)])
    Q = np.array([1 - p, p])
    for a, k in zip(orders, K):
        exact = max(_renyi(P, Q, a), _renyi(Q, P, a))
        assert k / (a - 1) >= exact - 1e-12
        assert k / (a - 1) <= exact * 1.01 + 1e-9


def test_with_replacement_large_batch_rdp_is_genuinely_large():
    """All m draws hitting the changed record has probability n^-m but likelihood ratio
    exp(m^2 ...): the Rényi divergence of with-replacement sampling of a Gaussian sum grows
    like alpha m^2 / (2 sigma^2) - m log n / (alpha - 1). The bound must not be below it."""
    gs = dp.Gaussian(1.0, relation=dp.SUBSTITUTION)
    mb, n = 20, 1000
    m = gs.subsample(dp.WithReplacement(mb, n))
    orders = np.array([2, 3])
    K = subsampled_log_moments(m, orders)
    for a, k in zip(orders, K):
        # E_Q[(P/Q)^a] >= w_m^a e^{a(a-1) m^2/2}, w_m = n^-m (all draws hit the record)
        floor = a * mb ** 2 / 2 - a * mb * math.log(n) / (a - 1)
        assert k / (a - 1) >= floor
