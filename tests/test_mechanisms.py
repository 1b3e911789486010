"""Base mechanisms: exact RDP curves against independent high-precision evaluations."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp


@pytest.fixture(autouse=True)
def _precision():
    """40 digits for this module's mpmath evaluations (scoped to each test)."""
    with mp.workdps(40):
        yield


def renyi_continuous(logp, logq, alpha, lo=-mp.inf, hi=mp.inf, points=None):
    """D_alpha(P||Q) = 1/(alpha-1) log int p^alpha q^{1-alpha} by mpmath quadrature."""
    f = lambda x: mp.exp(alpha * logp(x) + (1 - alpha) * logq(x))
    pts = [lo] + (points or []) + [hi]
    return mp.log(mp.quad(f, pts)) / (alpha - 1)


@pytest.mark.parametrize("sigma,sens", [(0.5, 1.0), (1.1, 1.0), (3.0, 2.0)])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.25, 30.0])
def test_gaussian_rdp_matches_quadrature(sigma, sens, alpha):
    c = -mp.log(mp.sqrt(2 * mp.pi) * sigma)  # densities must be normalised
    logp = lambda x: c - ((x - sens) ** 2) / (2 * sigma ** 2)
    logq = lambda x: c - (x ** 2) / (2 * sigma ** 2)
    exact = renyi_continuous(logp, logq, mp.mpf(alpha), points=[0, sens])
    assert dp.Gaussian(sigma, sensitivity=sens).rdp(alpha) == pytest.approx(float(exact), rel=1e-10)


@pytest.mark.parametrize("scale,sens", [(0.5, 1.0), (1.0, 1.0), (4.0, 2.0)])
@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 9.5, 200.0])
def test_laplace_rdp_matches_quadrature(scale, sens, alpha):
    c = -mp.log(2 * scale)
    logp = lambda x: c - abs(x - sens) / scale
    logq = lambda x: c - abs(x) / scale
    exact = renyi_continuous(logp, logq, mp.mpf(alpha), points=[0, sens])
    got = dp.Laplace(scale, sensitivity=sens).rdp(alpha)
    assert got == pytest.approx(float(exact), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("p", [0.51, 0.6, 0.75, 0.9, 0.999])
@pytest.mark.parametrize("alpha", [1.2, 2.0, 10.0, 1000.0])
def test_randomized_response_rdp_exact_sum(p, alpha):
    p_, a = mp.mpf(p), mp.mpf(alpha)
    exact = mp.log(p_ ** a * (1 - p_) ** (1 - a) + (1 - p_) ** a * p_ ** (1 - a)) / (a - 1)
    assert dp.RandomizedResponse(p).rdp(alpha) == pytest.approx(float(exact), rel=1e-10)


def test_pure_dp_is_randomized_response_and_below_zcdp_bound():
    alphas = np.array([1.001, 1.5, 2, 5, 50, 1e4])
    for eps in [0.01, 0.5, 1.0, 3.0, 50.0]:
        a = dp.PureDP(eps).rdp(alphas)
        b = dp.RandomizedResponse.from_epsilon(min(eps, 30.0)).rdp(alphas)
        if eps > 30:
            b = a
        assert np.allclose(a, b, rtol=1e-12)
        assert np.all(a <= alphas * eps ** 2 / 2 + 1e-12)  # 004 Prop. 16
        assert np.all(a <= eps + 1e-12)
    assert dp.PureDP(2.0).rdp(math.inf) == 2.0
    assert dp.PureDP(epsilon=2.0).pure_epsilon() == 2.0


def test_infinite_order_and_pure_epsilon():
    assert dp.Laplace(0.5).rdp(math.inf) == pytest.approx(2.0)
    assert dp.Gaussian(1.0).rdp(math.inf) == math.inf
    assert dp.ZCDP(0.3).rdp([2.0, 3.0]).tolist() == pytest.approx([0.6, 0.9])


def test_rdp_curve_projection_is_valid_upper_bound():
    # a user curve that is a (loose, non-convex) upper bound of a Gaussian curve
    g = dp.Gaussian(2.0)
    wiggly = lambda a: g.rdp(a) * (1.5 + 0.4 * np.sin(np.asarray(a)))
    m = dp.RDPCurve(wiggly)
    alphas = np.linspace(1.01, 200, 500)
    got = m.rdp(alphas)
    assert np.all(got <= wiggly(alphas) + 1e-12)           # never worse than given
    assert np.all(got >= g.rdp(alphas) * (1 - 1e-9))        # still above the true curve
    assert np.any(got < wiggly(alphas) - 1e-6)              # projection actually tightened


@pytest.mark.parametrize("bad", [
    lambda: dp.Gaussian(0.0), lambda: dp.Gaussian(-1), lambda: dp.Gaussian(float("nan")),
    lambda: dp.Laplace(0), lambda: dp.RandomizedResponse(1.0), lambda: dp.RandomizedResponse(0.0),
    lambda: dp.PureDP(-0.1), lambda: dp.ZCDP(-1), lambda: dp.Poisson(0.0), lambda: dp.Poisson(1.5),
    lambda: dp.WithoutReplacement(11, 10), lambda: dp.Gaussian(1.0).rdp(1.0),
    lambda: dp.Gaussian(1.0).rdp([2.0, float("nan")]), lambda: dp.Gaussian(1.0).epsilon(0.0 - 1e-9),
    lambda: dp.Gaussian(1.0).epsilon(1.0), lambda: dp.Gaussian(1.0) * -1,
    lambda: dp.RDPCurve(3.0),
])
def test_bad_input_is_a_value_error(bad):
    with pytest.raises(ValueError):
        bad()


def test_error_names_parameter_and_range():
    with pytest.raises(ValueError, match=r"sigma must be in \(0, inf\)"):
        dp.Gaussian(-1)
    with pytest.raises(ValueError, match=r"rate must be in \(0, 1\]"):
        dp.Poisson(2.0)
    with pytest.raises(ValueError, match="delta"):
        dp.Gaussian(1.0).epsilon(delta=2.0)


def test_mechanisms_are_immutable_values():
    g = dp.Gaussian(1.0)
    with pytest.raises(Exception):
        g.sigma = 2.0
    assert g == dp.Gaussian(1.0) and hash(g) == hash(dp.Gaussian(1.0))


def test_relation_mismatch_explains_fix():
    with pytest.raises(ValueError, match="substitution.*2s"):
        dp.Gaussian(1.0).subsample(dp.WithoutReplacement(10, 100))
    with pytest.raises(ValueError, match="add_remove"):
        dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.Poisson(0.1))
    with pytest.raises(ValueError, match="different neighbouring relations"):
        dp.compose(dp.Gaussian(1.0), dp.Gaussian(1.0, relation=dp.SUBSTITUTION))


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 1e3), st.floats(1.0001, 1e4), st.floats(1.0001, 1e4))
def test_rdp_monotone_in_alpha(sigma, a1, a2):
    lo, hi = sorted([a1, a2])
    for m in (dp.Gaussian(sigma), dp.Laplace(sigma), dp.PureDP(1.0 / sigma)):
        r = m.rdp([lo, hi])
        assert np.all(np.isfinite(r))
        assert r[0] <= r[1] * (1 + 1e-12) + 1e-15
