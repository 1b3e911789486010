"""004 Thm 34 (Poisson subsampling, add/remove): against dp-accounting and an mpmath sum."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp


@pytest.fixture(autouse=True)
def _precision():
    """50 digits for this module's mpmath evaluations (scoped to each test)."""
    with mp.workdps(50):
        yield


def thm34_mp(eps_fn, q, alpha):
    """004 Thm 34 evaluated term by term in 50-digit arithmetic (independent of the library)."""
    q = mp.mpf(q)
    s = (1 - q) ** (alpha - 1) * (1 + (alpha - 1) * q)
    for k in range(2, alpha + 1):
        s += mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q ** k * mp.exp((k - 1) * eps_fn(k))
    return mp.log(s) / (alpha - 1)


@pytest.mark.parametrize("sigma", [0.5, 0.8, 1.1, 4.0, 50.0])
@pytest.mark.parametrize("q", [1e-4, 256 / 60000, 0.01, 0.3, 1.0])
def test_poisson_gaussian_matches_dp_accounting_integer_orders(sigma, q):
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    orders = np.arange(2, 129)
    theirs = rdp_acc._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    ours = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(orders)
    # atol: where the RDP is ~1e-12, dp-accounting's own sum is off by up to 1e-7 relative
    # (checked against mpmath in test_tiny_rates_match_mpmath, where we agree to 1e-9)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("sigma,q", [(1.1, 1e-6), (1.1, 1e-9), (0.3, 1e-6), (100.0, 0.5), (50.0, 1e-4)])
def test_tiny_rates_match_mpmath(sigma, q):
    """At tiny rates dp-accounting's own sum loses ~1e-9 relative accuracy; check against mpmath."""
    eps_fn = lambda k: mp.mpf(k) / (2 * mp.mpf(sigma) ** 2)
    orders = [2, 3, 8, 40]
    ours = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(np.array(orders, dtype=float))
    for a, v in zip(orders, ours):
        assert v == pytest.approx(float(thm34_mp(eps_fn, q, a)), rel=1e-9)


@pytest.mark.parametrize("sigma,q,alpha", [(2.0, 0.2, 1.5), (2.0, 0.2, 2.5), (0.7, 0.5, 3.3)])
def test_fractional_orders_above_quadrature(sigma, q, alpha):
    """Exact fractional-order divergence of the mixture pair by 40-digit quadrature, both
    directions (remove: mixture || N(0); add: N(0) || mixture); ours must lie above both."""
    s, qq, a = mp.mpf(sigma), mp.mpf(q), mp.mpf(alpha)
    phi = lambda x, m: mp.exp(-((x - m) ** 2) / (2 * s * s)) / (mp.sqrt(2 * mp.pi) * s)
    mix = lambda x: (1 - qq) * phi(x, 0) + qq * phi(x, 1)
    rem = mp.log(mp.quad(lambda x: mix(x) ** a * phi(x, 0) ** (1 - a), [-mp.inf, 0, 1, mp.inf]))
    add = mp.log(mp.quad(lambda x: phi(x, 0) ** a * mix(x) ** (1 - a), [-mp.inf, 0, 1, mp.inf]))
    exact = float(max(rem, add) / (a - 1))
    ours = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(alpha)
    assert exact <= ours <= exact * 1.5


@pytest.mark.parametrize("sigma,q", [(1.1, 256 / 60000), (0.8, 0.01)])
def test_fractional_orders_are_upper_bounds_of_exact(sigma, q):
    """Fractional orders: the exact series of Mironov, Talwar & Zhang (rdp.fractional; checked
    against 50-digit quadrature in test_rdp_fractional.py) is never above dp-accounting's
    version of it, which adds every term with a positive sign (an upper bound: 13% above the
    quadrature at alpha = 1.25 for sigma = 0.8, q = 0.01), and never above the next integer
    order."""
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    orders = np.array([1.25, 1.5, 1.75, 2.5, 3.3, 10.5, 20.9])
    theirs = rdp_acc._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    ours = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(orders)
    assert np.all(ours <= theirs * (1 + 1e-9))
    ceil_vals = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(np.ceil(orders))
    assert np.all(ours <= ceil_vals * (1 + 1e-12))


@pytest.mark.parametrize("make", [lambda: dp.Laplace(1.0), lambda: dp.Laplace(0.3),
                                  lambda: dp.RandomizedResponse(0.8), lambda: dp.ZCDP(0.5)])
@pytest.mark.parametrize("q", [0.001, 0.05, 0.5])
def test_thm34_generic_mechanisms_match_mpmath(make, q):
    base = make()
    eps_fn = lambda k: mp.mpf(float(base.rdp(float(k))))
    orders = [2, 3, 5, 10, 33]
    ours = base.subsample(dp.Poisson(q)).rdp(np.array(orders, dtype=float))
    for a, v in zip(orders, ours):
        exact = thm34_mp(eps_fn, q, a)
        # the library may only be tighter via the caps (base curve, amplified pure DP), never looser
        assert v <= float(exact) * (1 + 1e-9) + 1e-300
        cap = min(float(base.rdp(float(a))), float(dp.PureDP(
            base.subsample(dp.Poisson(q)).pure_epsilon()).rdp(float(a)))
            if math.isfinite(base.pure_epsilon()) else math.inf)
        assert v == pytest.approx(min(float(exact), cap), rel=1e-9)


def test_extreme_parameters_stay_finite():
    for sigma in [0.1, 1.0, 1e3]:
        for q in [1e-9, 1e-3, 0.9]:
            r = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp([1.0001, 2, 100, 1e4])
            assert np.all(np.isfinite(r)) and np.all(r >= 0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.3, 20), st.floats(1e-5, 0.5), st.floats(1e-5, 0.5), st.floats(1.01, 300))
def test_monotone_in_rate(sigma, q1, q2, alpha):
    lo, hi = sorted([q1, q2])
    a = dp.Gaussian(sigma).subsample(dp.Poisson(lo)).rdp(alpha)
    b = dp.Gaussian(sigma).subsample(dp.Poisson(hi)).rdp(alpha)
    assert a <= b * (1 + 1e-10) + 1e-300


@settings(max_examples=40, deadline=None)
@given(st.floats(0.3, 20), st.floats(1e-5, 1.0), st.floats(1.01, 300), st.floats(1.01, 300))
def test_subsampled_monotone_in_alpha_and_below_base(sigma, q, a1, a2):
    lo, hi = sorted([a1, a2])
    m = dp.Gaussian(sigma).subsample(dp.Poisson(q))
    r = m.rdp([lo, hi])
    assert r[0] <= r[1] * (1 + 1e-10) + 1e-300
    assert np.all(r <= dp.Gaussian(sigma).rdp([lo, hi]) * (1 + 1e-12))


def test_subsampled_pure_dp_epsilon():
    m = dp.Laplace(1.0).subsample(dp.Poisson(0.1))
    assert m.pure_epsilon() == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
    assert m.epsilon(0.0).epsilon == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
