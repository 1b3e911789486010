"""Validation of the grid-free contour oracle (tests/oracles/contour_gaussian.py) against
independent references: closed forms at T = 1 (mpmath normal CDFs) and q = 1 (Balle & Wang
2018, Gaussian mechanism), and dp_accounting's PLD accountant at a fine discretisation."""
import math

import mpmath as mp
import pytest

from oracles import contour_gaussian as cg


def _t1_delta(sigma, q, eps, direction):
    """T = 1: delta = P(L > eps) - e^eps Q(L > eps), L > eps a half-line in x (mpmath)."""
    mp.mp.dps = 40
    s, q, e = mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
    tail = lambda x, m: mp.ncdf(-(x - m) / s)          # P[N(m, s^2) > x]
    if direction == "remove":                          # log(1-q+qY) > eps  <=>  x > x0
        x0 = mp.mpf(1) / 2 + s ** 2 * mp.log((mp.expm1(e) + q) / q)
        p = (1 - q) * tail(x0, 0) + q * tail(x0, 1)
        return float(p - mp.exp(e) * tail(x0, 0))
    x1 = mp.mpf(1) / 2 + s ** 2 * mp.log((mp.expm1(-e) + q) / q)   # add: x < x1, x ~ Q vs P
    qx = 1 - tail(x1, 0)
    px = (1 - q) * (1 - tail(x1, 0)) + q * (1 - tail(x1, 1))
    return float(qx - mp.exp(e) * px)


def _gaussian_delta(mu, eps):
    """Balle & Wang (2018), Theorem 8: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    mp.mp.dps = 40
    mu, e = mp.mpf(mu), mp.mpf(eps)
    return float(mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2))


@pytest.mark.parametrize("sigma,q,lam", [
    (1.0, 0.01, 3.0 + 0j), (1.9681, 4.009e-5, 77.0 + 300.0j), (1.0, 1e-5, -2000.0 - 5000.0j),
])
def test_one_step_mgf_matches_mpmath(sigma, q, lam):
    """The building block M(s) - 1 = E_Q[(1+u)^lam - 1 - lam u] on the deformed z-path against
    mpmath quadrature on the real line (40 digits)."""
    import numpy as np
    mp.mp.dps = 40
    s_, l_ = mp.mpf(sigma), mp.mpc(lam)
    def f(z):
        u = q * mp.expm1(z / s_ - 1 / (2 * s_ ** 2))
        return mp.npdf(z) * ((1 + u) ** l_ - 1 - l_ * u)
    ref = complex(mp.quad(f, mp.linspace(-30, 30 + 2 * max(lam.real, 0) / sigma, 400)))
    direction = "remove"
    mgf = cg._Mgf(sigma, q, 10, direction, lam.real - 1, hz=0.5)
    got = complex(mgf.minus_one(np.array([lam - 1], dtype=cg.CLD))[0])
    assert abs(got - ref) <= 1e-12 * abs(ref)


@pytest.mark.slow
def test_t1_closed_form_reference_and_documented_limit():
    """T = 1 is outside the oracle's range (|M|^T cannot decay below the precision floor of M):
    it must raise, not return a wrong value. The closed form is checked against a quadrature
    of the loss's law instead (mpmath), so the reference itself is tested."""
    sigma, q, eps = 1.0, 0.01, 0.5
    ref = _t1_delta(sigma, q, eps, "remove")
    mp.mp.dps = 30
    x0 = 0.5 + sigma ** 2 * math.log((math.expm1(eps) + q) / q)
    ell = lambda x: mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * sigma ** 2)))
    p = lambda x: (1 - q) * mp.npdf(x, 0, sigma) + q * mp.npdf(x, 1, sigma)
    direct = mp.quad(lambda x: p(x) * (1 - mp.exp(eps - ell(x))), [x0, x0 + 5, mp.inf])
    assert ref == pytest.approx(float(direct), rel=1e-12)
    with pytest.raises(RuntimeError, match="T too small"):
        cg.delta_poisson_gaussian(sigma, q, 1, eps, "remove")


@pytest.mark.parametrize("sigma,T,eps", [(3.0, 10, 0.5), (10.0, 100, 0.2), (1.0, 20, 2.0)])
def test_q1_matches_gaussian_closed_form(sigma, T, eps):
    ref = _gaussian_delta(math.sqrt(T) / sigma, eps)
    for direction in ("remove", "add"):
        got = cg.delta_poisson_gaussian(sigma, 1.0, T, eps, direction)
        assert got == pytest.approx(ref, rel=1e-7)


def test_error_estimate_is_small_on_a_tiny_delta_plan():
    d, err = cg.delta_with_error(1.9681, 4.009e-5, 251, 0.002079, "remove")
    assert 1e-12 < d < 3e-12 and err < 1e-6 * d


def test_invalid_inputs_are_named():
    with pytest.raises(ValueError, match="sigma"):
        cg.delta_poisson_gaussian(-1.0, 0.1, 10, 0.1)
    with pytest.raises(ValueError, match="q"):
        cg.delta_poisson_gaussian(1.0, 1.5, 10, 0.1)
    with pytest.raises(ValueError, match="T"):
        cg.delta_poisson_gaussian(1.0, 0.1, 2.5, 0.1)
    with pytest.raises(ValueError, match="direction"):
        cg.delta_poisson_gaussian(1.0, 0.1, 10, 0.1, "sideways")


def test_add_direction_is_zero_beyond_its_support():
    assert cg.delta_poisson_gaussian(1.0, 0.01, 10, 0.2, "add") == 0.0   # 0.2 > -10 log(0.99)


@pytest.mark.slow
def test_epsilon_matches_dp_accounting_pld():
    """dp_accounting 0.6.0, PLD at value_discretization_interval 1e-5: its pessimistic
    discretisation is within ~1e-4 relative of the exact eps at this plan."""
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    acc = pld.PLDAccountant(value_discretization_interval=1e-5)
    ev = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    acc.compose(dp_event.SelfComposedDpEvent(ev, 100))
    ref = acc.get_epsilon(1e-5)
    got = cg.epsilon_poisson_gaussian(1.0, 0.01, 100, 1e-5, eps_guess=ref)
    assert got <= ref * (1 + 1e-9)            # dp_accounting's answer is pessimistic
    assert got == pytest.approx(ref, rel=5e-4)
