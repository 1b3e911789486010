"""RDP of the Poisson-subsampled Gaussian at real orders (MTZ 2019 Sec. 3.3; dpamp.rdp.fractional):
against 50-digit quadrature of A_alpha, the integer orders of 004 Thm 34, both orders of the pair
(MTZ Thm 5), dp-accounting's RDP accountant on the issue's plans, and the second-order bound on
orders in (1, 2) for other mechanisms.

The full quadrature grid (sigma x q x alpha, about a minute) runs with DPAMP_FULL_FRACTIONAL=1;
the default run checks a spread of it."""
import math
import os
import time

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp
from dpamp.rdp.fractional import MAX_FRACTIONAL_ORDER, poisson_gaussian_rdp

DPS = 50


def _breakpoints(m, q, alpha):
    """Where the integrand of A_alpha - 1 lives: 0, z0, and around its peak (found in floats)."""
    z0 = m / 2 + math.log((1 - q) / q) / m
    z = np.linspace(-40.0, alpha * m + 40.0, 4001)
    with np.errstate(over="ignore", divide="ignore"):
        lg = -0.5 * z * z + alpha * np.logaddexp(math.log1p(-q), math.log(q) + m * z - m * m / 2)
    peak = float(z[np.argmax(lg)])
    pts = {0.0, z0, peak} | {peak + d for d in (-12, -4, -1.5, 1.5, 4, 12)} | {z0 - 1, z0 + 1}
    return sorted(pts)


def mp_a_minus_one(m, q, alpha):
    """A_alpha - 1 = int phi(z) [(b + qL)^a - 1 - a q (L - 1)] dz (the linear term integrates to
    0; the integrand is >= 0, so no cancellation), L = e^{mz - m^2/2}, at DPS digits."""
    with mp.workdps(DPS):
        M, Q, A = mp.mpf(m), mp.mpf(q), mp.mpf(alpha)

        def g(z):
            x = Q * (mp.exp(M * z - M * M / 2) - 1)
            if abs(x) < mp.mpf("1e-6"):  # (1+x)^a - 1 - a x by its series
                term = A * (A - 1) / 2 * x * x
                s, k = term, 2
                while abs(term) > abs(s) * mp.mpf(10) ** (-DPS - 5):
                    term = term * (A - k) / (k + 1) * x
                    s += term
                    k += 1
                return mp.npdf(z) * s
            return mp.npdf(z) * (mp.power(1 + x, A) - 1 - A * x)

        pts = [mp.mpf(p) for p in _breakpoints(m, q, alpha)]
        return mp.quad(g, [-mp.inf] + pts + [mp.inf], method="gauss-legendre")


def mp_b_minus_one(m, q, alpha):
    """B_alpha - 1 = E_mu[(mu0/mu)^a] - 1 = int mu [y^a - 1 - a(y - 1)], y = mu0/mu."""
    with mp.workdps(DPS):
        M, Q, A = mp.mpf(m), mp.mpf(q), mp.mpf(alpha)

        def g(z):
            mix = 1 - Q + Q * mp.exp(M * z - M * M / 2)
            y = 1 / mix
            return mp.npdf(z) * mix * (mp.power(y, A) - 1 - A * (y - 1))

        z0 = m / 2 + math.log((1 - q) / q) / m
        pts = sorted({0.0, z0, m} | {z0 + d for d in (-8, -2, -1, 1, 2, 8)}
                     | {float(d) for d in (-8, -4, -2, 2, 4, 8)})
        return mp.quad(g, [-mp.inf] + [mp.mpf(p) for p in pts] + [mp.inf],
                       method="gauss-legendre")


def mp_eps(m, q, alpha):
    with mp.workdps(DPS):
        return mp.log1p(mp_a_minus_one(m, q, alpha)) / (mp.mpf(alpha) - 1)


def _excess(ours, exact):
    with mp.workdps(DPS):
        return float((mp.mpf(ours) - exact) / exact)


SIGMAS = [0.2, 0.3, 0.5, 1.0, 2.0, 10.0]
RATES = [1e-6, 1e-3, 0.01, 0.1, 0.5]
ORDERS = [1.01, 1.1, 1.5, 3.7, 9.3, 50.5, 256.5]
FULL = [(s, q, a) for s in SIGMAS for q in RATES for a in ORDERS]
# the default spread: every sigma, rate and order at least twice, the hard corners included
SPREAD = [(0.2, 0.01, 1.01), (0.2, 1e-6, 1.5), (0.2, 0.5, 50.5), (0.3, 0.01, 1.1),
          (0.3, 1e-3, 3.7), (0.3, 0.1, 256.5), (0.5, 1e-6, 9.3), (0.5, 0.5, 1.01),
          (0.5, 0.01, 1.5), (1.0, 1e-3, 1.01), (1.0, 0.1, 9.3), (1.0, 0.5, 3.7),
          (2.0, 0.01, 50.5), (2.0, 0.5, 1.1), (2.0, 1e-6, 256.5), (10.0, 0.5, 1.01),
          (10.0, 1e-6, 1.1), (10.0, 0.1, 50.5), (10.0, 1e-3, 1.5), (0.2, 0.1, 9.3)]
GRID = FULL if os.environ.get("DPAMP_FULL_FRACTIONAL") else SPREAD


@pytest.mark.parametrize("sigma,q,alpha", GRID)
def test_matches_quadrature(sigma, q, alpha):
    """An upper bound of the exact fractional-order RDP, within 1e-9 relative of it."""
    exact = mp_eps(1 / sigma, q, alpha)
    ours = float(poisson_gaussian_rdp(1 / sigma, q, np.array([alpha]))[0])
    excess = _excess(ours, exact)
    assert 0 <= excess <= 1e-9, (ours, float(exact), excess)


@pytest.mark.parametrize("sigma,q,alpha", [(1.1, 0.9, 1.3), (0.5, 0.7, 7.5), (3.0, 0.99, 2.2),
                                           (0.4, 1e-9, 1.7), (0.2, 1e-12, 1.001),
                                           (0.217, 1e-20, 1.3), (0.05, 0.01, 1.2),
                                           (300.0, 0.2, 40.5)])
def test_other_corners_match_quadrature(sigma, q, alpha):
    """q > 1/2 (the subtraction moves to part 2), tiny q (where Phi(-z0) ~ 1e-35 must be right
    to a few ulps), tiny and huge sigma."""
    exact = mp_eps(1 / sigma, q, alpha)
    ours = float(poisson_gaussian_rdp(1 / sigma, q, np.array([alpha]))[0])
    assert 0 <= _excess(ours, exact) <= 1e-9


def test_sensitivity_is_the_standardised_shift():
    m = dp.Gaussian(2.0, sensitivity=3.0).subsample(dp.Poisson(0.05))
    exact = mp_eps(1.5, 0.05, 2.75)
    assert 0 <= _excess(m.rdp(2.75), exact) <= 1e-9


def test_cancellation_corner_is_explained():
    """Orders near 1 with large sigma at q near 1/2: A - 1 (about (a-1) q^2 m^2 / 2) is the
    difference of terms of size 1/4, so the proven rounding margin of a few ulps per term is
    ~1e-8 of it at a = 1.001 (9e-10 at a = 1.01). Still an upper bound."""
    exact = mp_eps(0.1, 0.5, 1.001)
    excess = _excess(float(poisson_gaussian_rdp(0.1, 0.5, np.array([1.001]))[0]), exact)
    assert 0 <= excess <= 2e-8


@pytest.mark.parametrize("sigma", [0.2, 0.5, 1.1, 2.0])
@pytest.mark.parametrize("q", [1e-6, 0.01, 0.3, 0.5, 0.7])
def test_integer_orders_agree_with_thm34(sigma, q):
    """At integer orders the series is finite and is 004 Thm 34's sum (rdp.poisson)."""
    orders = np.array([2.0, 3.0, 5.0, 16.0, 100.0, 1000.0])
    ours = poisson_gaussian_rdp(1 / sigma, q, orders)
    thm34 = dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(orders)
    rel = ours / thm34 - 1
    assert np.all(rel >= -1e-14) and np.all(rel <= 1e-12), rel


def test_integer_orders_large_sigma():
    """sigma = 10: the terms cancel more (A - 1 ~ q^2 m^2), the margin is a few 1e-11."""
    for q in [1e-6, 0.01, 0.5]:
        orders = np.array([2.0, 3.0, 16.0, 100.0, 1000.0])
        rel = poisson_gaussian_rdp(0.1, q, orders) / \
            dp.Gaussian(10.0).subsample(dp.Poisson(q)).rdp(orders) - 1
        assert np.all(rel >= -1e-14) and np.all(rel <= 5e-11), rel


def test_continuous_across_integers():
    m = dp.Gaussian(0.7).subsample(dp.Poisson(0.02))
    for k in [2.0, 3.0, 17.0, 200.0]:
        near = m.rdp(np.array([k - 1e-9, k, k + 1e-9]))
        assert near[0] <= near[1] * (1 + 1e-9) and near[1] <= near[2] * (1 + 1e-9)
        assert near[2] == pytest.approx(near[0], rel=1e-6)


@pytest.mark.parametrize("sigma,q,alpha", [(0.2, 0.01, 1.5), (0.5, 0.1, 1.01), (0.5, 0.5, 3.3),
                                           (1.0, 0.9, 1.5), (2.0, 0.5, 10.5), (1.0, 0.01, 3.3)])
def test_add_direction_is_dominated(sigma, q, alpha):
    """MTZ 2019 Thm 5: B_a <= A_a, so log A_a / (a-1) bounds both orders of the pair."""
    m = 1 / sigma
    a1, b1 = mp_a_minus_one(m, q, alpha), mp_b_minus_one(m, q, alpha)
    assert b1 <= a1
    with mp.workdps(DPS):
        add = float(mp.log1p(b1) / (mp.mpf(alpha) - 1))
    assert add <= dp.Gaussian(sigma).subsample(dp.Poisson(q)).rdp(alpha)


def test_outside_the_range_gives_no_bound():
    out = poisson_gaussian_rdp(1.0, 0.1, np.array([1.0, 0.5, np.inf, MAX_FRACTIONAL_ORDER + 1]))
    assert np.all(np.isinf(out))
    assert np.all(np.isinf(poisson_gaussian_rdp(1.0, 1.0, np.array([1.5]))))
    assert np.all(np.isinf(poisson_gaussian_rdp(1e5, 0.1, np.array([1.5]))))
    assert np.all(poisson_gaussian_rdp(0.0, 0.1, np.array([1.5, 2.5])) == 0.0)
    big = poisson_gaussian_rdp(1.0, 0.1, np.array([4095.5]))
    assert np.isfinite(big[0]) and big[0] <= 4095.5 / 2


def test_vectorised_and_cached():
    m = dp.Gaussian(0.9).subsample(dp.Poisson(0.01))
    a = np.array([[1.5, 2.0, 7.25], [600.5, 1.0001, 33.3]])
    first = m.rdp(a)
    assert first.shape == a.shape
    again = m.rdp(a)
    assert np.array_equal(first, again)
    one = np.array([m.rdp(float(x)) for x in a.ravel()]).reshape(a.shape)
    np.testing.assert_array_equal(first, one)


# --- the issue's plans against dp-accounting ----------------------------------------------------

PLANS = [(s, q, n) for s in [0.2, 0.3, 0.5, 1.1] for q in [0.01, 256 / 60000] for n in [100, 14062]]
FINE_ORDERS = ([1 + x / 200 for x in range(1, 200)] + [2 + x / 20 for x in range(180)]
               + list(range(11, 257)) + [512, 1024])
_RDP = {}


def _theirs(sigma, q, n, fine):
    """dp-accounting's epsilon(1e-5) and its delta(epsilon) function for the plan: its
    RdpAccountant (default orders), or its curve on a finer order list with its conversions."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import RdpAccountant
    from dp_accounting.rdp import rdp_privacy_accountant as R
    if not fine:
        acc = RdpAccountant()
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), n)
        return acc.get_epsilon(1e-5), acc.get_delta
    if (sigma, q) not in _RDP:
        _RDP[sigma, q] = np.asarray(R._compute_rdp_poisson_subsampled_gaussian(
            q, sigma, FINE_ORDERS))
    rdp = n * _RDP[sigma, q]
    return (R.compute_epsilon(FINE_ORDERS, rdp, 1e-5)[0],
            lambda e: R.compute_delta(FINE_ORDERS, rdp, e)[0])


@pytest.mark.parametrize("sigma,q,n", PLANS)
def test_never_looser_than_dp_accounting(sigma, q, n):
    mech = dp.Gaussian(sigma).subsample(dp.Poisson(q)) * n
    ours = mech.epsilon(1e-5, method="rdp").epsilon
    for fine in (False, True):
        theirs, their_delta = _theirs(sigma, q, n, fine)
        assert ours <= theirs * (1 + 1e-6), (fine, ours, theirs)
        # delta at their epsilon: ours no larger than theirs
        d_ours = mech.delta(theirs, method="rdp").delta
        assert d_ours <= their_delta(theirs) * (1 + 1e-6), (fine, d_ours)


def test_issue_numbers():
    """The issue: sigma = 0.3 / 0.2, q = 0.01, 100 steps gave 214 / 1486 against dp-accounting's
    32.1 / 88.0."""
    for sigma, theirs in [(0.3, 32.0888), (0.2, 87.9883)]:
        ours = (dp.Gaussian(sigma).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-5, method="rdp")
        assert ours.epsilon <= theirs


def test_default_plan_query_is_fast():
    make = lambda: dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062  # noqa: E731
    make().epsilon(1e-5, method="rdp")  # imports, first-use setup
    best = math.inf
    for _ in range(5):
        mech = make()  # a fresh mechanism: nothing cached
        t = time.perf_counter()
        mech.epsilon(1e-5, method="rdp")
        best = min(best, time.perf_counter() - t)
    assert best < 0.05


# --- orders in (1, 2) for other mechanisms ------------------------------------------------------

def _mp_pair_rdp(p_mass, q_mass, alpha):
    """max of both orders of D_alpha between discrete distributions (lists of mpf)."""
    a = mp.mpf(alpha)
    rem = mp.log(sum(p ** a * r ** (1 - a) for p, r in zip(p_mass, q_mass))) / (a - 1)
    add = mp.log(sum(r ** a * p ** (1 - a) for p, r in zip(p_mass, q_mass))) / (a - 1)
    return max(rem, add)


def _mp_laplace_rdp(scale, q, alpha):
    b, Q, a = mp.mpf(scale), mp.mpf(q), mp.mpf(alpha)
    lap = lambda x, mu: mp.exp(-abs(x - mu) / b) / (2 * b)  # noqa: E731
    mix = lambda x: (1 - Q) * lap(x, 0) + Q * lap(x, 1)  # noqa: E731
    rem = mp.quad(lambda x: mix(x) ** a * lap(x, 0) ** (1 - a), [-mp.inf, 0, 1, mp.inf])
    add = mp.quad(lambda x: lap(x, 0) ** a * mix(x) ** (1 - a), [-mp.inf, 0, 1, mp.inf])
    return max(mp.log(rem), mp.log(add)) / (a - 1)


@pytest.mark.parametrize("q", [0.001, 0.01, 0.3, 0.7])
def test_small_orders_other_mechanisms(q):
    """Below order 2 the curve is an upper bound and, at small rates, no longer flat at eps'(2)."""
    orders = [1.01, 1.5, 1.99]
    with mp.workdps(20):
        for base, exact in [
                (dp.Laplace(1.0), lambda a: _mp_laplace_rdp(1.0, q, a)),
                (dp.Laplace(0.3), lambda a: _mp_laplace_rdp(0.3, q, a)),
                (dp.RandomizedResponse(0.8), None), (dp.PureDP(1.0), None)]:
            m = base.subsample(dp.Poisson(q))
            vals = m.rdp(np.array(orders))
            flat = m.rdp(2.0)
            if exact is None:  # randomized response / pure DP: the pair (p, 1-p) vs (1-p, p)
                e0 = base.pure_epsilon()
                p = mp.exp(mp.mpf(e0)) / (1 + mp.exp(mp.mpf(e0)))
                Q = mp.mpf(q)
                P = [(1 - Q) * (1 - p) + Q * p, (1 - Q) * p + Q * (1 - p)]
                exact = lambda a, P=P, p=p: _mp_pair_rdp(P, [1 - p, p], a)  # noqa: E731
            for a, v in zip(orders, vals):
                assert float(exact(a)) <= v * (1 + 1e-12)
                assert v <= flat * (1 + 1e-12)
            if q <= 0.01:
                assert vals[0] < 0.6 * flat


def test_log_ndtr_error_bound():
    """log Phi(t) and its error bound against mpmath, on both sides (scipy's log_ndtr is off by
    hundreds of ulps for large t > 0)."""
    from dpamp.rdp import fractional as F
    t = np.array([-1e4, -40.0, -5.0, -0.3, 0.0, 0.7, 3.0, 5.0, 9.0, 13.5, 20.0, 37.0, 38.5])
    v, err = F._log_ndtr(t)
    with mp.workdps(60):
        for ti, vi, ei in zip(t, v, err):
            tt = mp.mpf(float(ti))
            ref = mp.log(mp.ncdf(tt)) if ti <= 0 else mp.log1p(-mp.ncdf(-tt))
            assert abs(mp.mpf(float(vi)) - ref) <= ei, (ti, vi, float(ref), ei)


def test_crvz_weights():
    """CRVZ 2000 Prop. 1: for a moment sequence, |sum (-1)^j a_j - sum w_j (-1)^j a_j| <=
    a_0 / T_n(3); e.g. a_j = 1/(j+1) (sum log 2) and a_j = 1/(j+1)^0.1 (eta(0.1))."""
    from dpamp.rdp import fractional as F
    w, tn3 = F._W, F._TN3
    assert np.all(w > 0) and np.all(w <= 1) and np.all(np.diff(w) <= 0)
    assert tn3 == pytest.approx(math.cosh(F._N * math.acosh(3.0)), rel=1e-12)
    j = np.arange(w.size)
    for a, exact in [(1.0 / (j + 1), math.log(2)), ((j + 1.0) ** -0.1, float(mp.altzeta(0.1)))]:
        got = float(np.sum(w * (-1.0) ** j * a))
        assert abs(got - exact) <= 1 / tn3 + 8e-16
