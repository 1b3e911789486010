"""002 Sec. 5: Brownian motion and the Ornstein-Uhlenbeck mechanism (Cor. 7, eq. 4, Thm 8)."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp


@pytest.fixture(autouse=True)
def _local_mpmath_precision():
    """Tests set mp.mp.dps; restore it afterwards so other test modules are unaffected."""
    with mp.workdps(mp.mp.dps):
        yield


ALPHAS = np.array([1.01, 1.5, 2.0, 8.0, 64.0])


@pytest.mark.parametrize("theta, rho, t, sens", [(1.0, 1.0, 0.5, 1.0), (0.3, 2.0, 3.0, 2.5),
                                                 (5.0, 0.4, 0.01, 0.3), (2.0, 1.0, 200.0, 1.0)])
def test_ou_rdp_equals_direct_gaussian_computation(theta, rho, t, sens):
    """Cor. 7 equals the Gaussian RDP with sensitivity e^{-theta t} Delta and variance
    rho^2/theta (1 - e^{-2 theta t}), computed here from the mechanism's definition."""
    ou = dp.OrnsteinUhlenbeck(theta, rho, t, sensitivity=sens)
    var = rho ** 2 / theta * (1 - math.exp(-2 * theta * t))
    direct = ALPHAS * (math.exp(-theta * t) * sens) ** 2 / (2 * var)
    mp.mp.dps = 40
    cor7 = np.array([float(a * mp.mpf(theta) * mp.mpf(sens) ** 2
                           / (2 * mp.mpf(rho) ** 2 * mp.expm1(2 * mp.mpf(theta) * mp.mpf(t))))
                     for a in ALPHAS])
    got = ou.rdp(ALPHAS)
    assert np.all(got >= cor7)  # rounded up (relative 1e-12)
    if cor7.min() > 1e-300:
        assert np.allclose(got, direct, rtol=3e-12, atol=0)
        assert np.allclose(got, cor7, rtol=3e-12)
        assert np.allclose(got, ou.gaussian_form().rdp(ALPHAS), rtol=1e-11)
    else:  # e^{-2 theta t} underflows: a tiny positive number, never a false 0
        assert np.all(got > 0) and np.all(got < 1e-300)
    assert ou.rdp(np.inf) == np.inf


@pytest.mark.parametrize("alpha", [1.5, 3.0])
def test_ou_rdp_against_mpmath_quadrature(alpha):
    mp.mp.dps = 30
    theta, rho, t, sens = mp.mpf(0.7), mp.mpf(1.3), mp.mpf(0.4), mp.mpf(1.1)
    mean = mp.e ** (-theta * t) * sens
    sd = mp.sqrt(rho ** 2 / theta * (1 - mp.e ** (-2 * theta * t)))
    f = lambda x: mp.npdf(x, mean, sd) ** alpha * mp.npdf(x, 0, sd) ** (1 - alpha)
    exact = mp.log(mp.quad(f, [-mp.inf, 0, mean, mp.inf])) / (alpha - 1)
    got = dp.OrnsteinUhlenbeck(0.7, 1.3, 0.4, sensitivity=1.1).rdp(alpha)
    assert mp.mpf(got) >= exact and got == pytest.approx(float(exact), rel=3e-12)


def test_brownian_motion_is_gaussian_with_variance_2t():
    bm = dp.BrownianMotion(0.75, sensitivity=2.0)
    assert np.allclose(bm.rdp(ALPHAS), ALPHAS * 4.0 / (4 * 0.75), rtol=1e-12)
    assert np.allclose(bm.rdp(ALPHAS), dp.Gaussian(math.sqrt(1.5), 2.0).rdp(ALPHAS), rtol=1e-11)
    assert bm.mse(3) == pytest.approx(3 * 1.5)


def test_post_processing_adds_time():
    """P_s o M_t = M_{t+s}; and the same number comes out of the coupling bound of 002 Thm 2
    (Example 3: the OU kernel is an e^{-theta s}-Lipschitz Gaussian kernel)."""
    ou = dp.OrnsteinUhlenbeck(0.8, 1.2, 0.5, sensitivity=1.5)
    later = ou.post_process(dp.OrnsteinUhlenbeckKernel(0.8, 1.2, 0.7))
    assert later == dp.OrnsteinUhlenbeck(0.8, 1.2, 1.2, sensitivity=1.5)
    assert ou.advance(0.7) == later
    var_s = 1.2 ** 2 / 0.8 * (1 - math.exp(-2 * 0.8 * 0.7))
    via_coupling = ou.post_process(dp.GaussianKernel(math.sqrt(var_s), lipschitz=math.exp(-0.56)))
    assert np.allclose(via_coupling.rdp(ALPHAS), later.rdp(ALPHAS), rtol=1e-10)
    # an OU kernel with other parameters goes through the coupling bound too
    other = ou.post_process(dp.OrnsteinUhlenbeckKernel(2.0, 0.5, 0.3))
    assert np.all(other.rdp(ALPHAS) <= ou.rdp(ALPHAS))
    bm = dp.BrownianMotion(0.5)
    assert bm.post_process(dp.BrownianKernel(0.25)) == dp.BrownianMotion(0.75)
    g = dp.Gaussian(1.0).post_process(dp.BrownianKernel(0.5))  # N(0, 1) + N(0, 1)
    assert np.allclose(g.rdp(ALPHAS), dp.Gaussian(math.sqrt(2.0)).rdp(ALPHAS), rtol=1e-11)


def test_sampling_distribution_and_semigroup_by_simulation():
    """Seeded simulation (deterministic): M_t's mean / variance, and sampling P_s after M_t has
    the law of M_{t+s} (moments within 6 standard errors)."""
    rng = np.random.default_rng(12345)
    ou = dp.OrnsteinUhlenbeck(0.9, 1.1, 0.6)
    f = np.array([2.0, -1.0, 0.5])
    n = 40_000
    xs = np.stack([ou.sample(f, rng) for _ in range(n)])
    assert xs.shape == (n, 3)
    se = math.sqrt(ou.variance / n)
    assert np.all(np.abs(xs.mean(axis=0) - ou.shrinkage * f) < 6 * se)
    assert np.all(np.abs(xs.var(axis=0) / ou.variance - 1) < 6 * math.sqrt(2 / n))
    # post-process each sample by P_s (simulate the kernel on the released value)
    s = 0.4
    step = dp.OrnsteinUhlenbeck(0.9, 1.1, s)
    ys = np.stack([step.sample(x, rng) for x in xs[:, 0]])
    later = ou.advance(s)
    se2 = math.sqrt(later.variance / n)
    assert abs(ys.mean() - later.shrinkage * f[0]) < 6 * se2
    assert abs(ys.var() / later.variance - 1) < 6 * math.sqrt(2 / n)
    # same seed, same draw; scalar input gives a scalar-shaped array
    assert np.array_equal(ou.sample(1.0, 7), ou.sample(1.0, 7)) and ou.sample(1.0, 7).shape == ()
    bm = dp.BrownianMotion(0.5)
    zs = bm.sample(np.zeros(n), rng)
    assert abs(zs.var() - 1.0) < 6 * math.sqrt(2 / n)


@pytest.mark.parametrize("theta, rho, t, f_norm, d", [(1.0, 1.0, 0.5, 2.0, 3), (0.2, 3.0, 4.0,
                                                                                0.5, 1)])
def test_mse_eq4_mpmath_and_simulation(theta, rho, t, f_norm, d):
    ou = dp.OrnsteinUhlenbeck(theta, rho, t)
    mp.mp.dps = 30
    th, r, tt = mp.mpf(theta), mp.mpf(rho), mp.mpf(t)
    ref = ((1 - mp.e ** (-th * tt)) ** 2 * f_norm ** 2
           + d * r ** 2 / th * (1 - mp.e ** (-2 * th * tt)))
    assert ou.mse(f_norm, d) == pytest.approx(float(ref), rel=1e-13)
    rng = np.random.default_rng(99)
    f = np.zeros(d)
    f[0] = f_norm
    errs = np.array([np.sum((ou.sample(f, rng) - f) ** 2) for _ in range(20_000)])
    assert errs.mean() == pytest.approx(ou.mse(f_norm, d), rel=0.05)
    assert np.allclose(ou.mse(np.array([0.0, f_norm]), d),
                       [ou.mse(0.0, d), ou.mse(f_norm, d)])


def test_gaussian_and_pgm_comparison():
    ou = dp.OrnsteinUhlenbeck(0.5, 1.0, 2.0)
    d, R = 4, 1.5
    s2 = ou.gaussian_sigma ** 2
    assert s2 == pytest.approx((math.exp(2 * 0.5 * 2.0) - 1) / 0.5)
    # the Gaussian mechanism with sensitivity Delta and sigma~ has the same RDP as M_t
    assert np.allclose(dp.Gaussian(ou.gaussian_sigma).rdp(ALPHAS), ou.rdp(ALPHAS), rtol=1e-11)
    assert ou.gaussian_mse(d) == pytest.approx(d * s2)
    # PGM error: minimise the worst case over ||f|| <= R of (1-b)^2 R^2 + b^2 d s2 (brute force)
    b = np.linspace(0, 1, 200_001)
    brute = np.min((1 - b) ** 2 * R ** 2 + b ** 2 * d * s2)
    assert ou.pgm_mse(R, d) == pytest.approx(brute, rel=1e-8)
    assert ou.pgm_mse(R, d) == pytest.approx(ou.gaussian_mse(d) / (1 + d * s2 / R ** 2))


@settings(max_examples=300, deadline=None)
@given(st.floats(0.01, 10), st.floats(0.01, 10), st.floats(1e-3, 20), st.integers(1, 50),
       st.floats(0.0, 0.999))
def test_thm8_part1_ou_never_worse_than_gaussian(theta, rho, t, d, frac):
    """theta R^2 <= 4 d rho^2 => E_OU / E_GM <= 1 for every t (002 Thm 8 (1))."""
    R = frac * 2 * rho * math.sqrt(d / theta)  # R^2 = frac^2 * 4 d rho^2 / theta
    ou = dp.OrnsteinUhlenbeck(theta, rho, t)
    assert ou.dominates_gaussian(R, d)
    assert ou.mse_ratio(R, d) <= 1 + 1e-12


def test_thm8_condition_is_needed_and_ratio_vanishes():
    theta, rho, d = 1.0, 1.0, 1
    R = 3 * rho * math.sqrt(d / theta)  # theta R^2 = 9 d rho^2 > 4 d rho^2
    ou = dp.OrnsteinUhlenbeck(theta, rho, 0.01)
    assert not ou.dominates_gaussian(R, d) and ou.mse_ratio(R, d) > 1
    # the ratio tends to 0 as t grows, whatever R
    assert dp.OrnsteinUhlenbeck(theta, rho, 30.0).mse_ratio(R, d) < 1e-20


@pytest.mark.parametrize("eps, R, d, sens", [(1.0, 1.0, 1, 1.0), (0.1, 5.0, 100, 2.0),
                                             (3.0, 0.2, 10, 0.5)])
def test_thm8_part2_calibration(eps, R, d, sens):
    ou = dp.OrnsteinUhlenbeck.calibrate(eps, R, d, sens)
    c = d * sens ** 2 / (2 * eps * R ** 2)
    assert ou.t == 1.0 and ou.theta == pytest.approx(math.log1p(c))
    assert np.allclose(ou.rdp(ALPHAS), ALPHAS * eps, rtol=1e-11)   # (alpha, alpha eps)-RDP at t = 1
    assert ou.gaussian_mse(d) == pytest.approx(d * sens ** 2 / (2 * eps), rel=1e-12)
    assert ou.mse_ratio(R, d) == pytest.approx(1 / (1 + c), rel=1e-10)
    assert ou.mse_ratio(R, d) <= 1 / (1 + c) * (1 + 1e-12)
    # ... which is exactly the optimally post-processed Gaussian mechanism's error
    assert ou.mse(R, d) == pytest.approx(ou.pgm_mse(R, d), rel=1e-10)


def test_diffusion_mechanisms_compose_and_convert():
    ou = dp.OrnsteinUhlenbeck(1.0, 1.0, 0.3)
    g = (ou * 20).epsilon(1e-6)
    same = (ou.gaussian_form() * 20).epsilon(1e-6)
    assert g.epsilon == pytest.approx(same.epsilon, rel=1e-9)
    dp.compose(ou, dp.BrownianMotion(1.0), dp.Gaussian(2.0)).epsilon(1e-6)
    assert ou.pure_epsilon() == math.inf


@pytest.mark.parametrize("make, word", [
    (lambda: dp.OrnsteinUhlenbeck(0.0, 1.0, 1.0), "theta"),
    (lambda: dp.OrnsteinUhlenbeck(-1.0, 1.0, 1.0), "theta"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 0.0, 1.0), "rho"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 1.0, 0.0), "t"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 1.0, -2.0), "t"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 1.0, 1.0, sensitivity=-1.0), "sensitivity"),
    (lambda: dp.BrownianMotion(0.0), "t"),
    (lambda: dp.BrownianMotion(float("nan")), "t"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 1.0, 1.0).advance(0.0), "s"),
    (lambda: dp.OrnsteinUhlenbeckKernel(1.0, 1.0, -1.0), "s"),
    (lambda: dp.OrnsteinUhlenbeck.calibrate(0.0, 1.0), "epsilon"),
    (lambda: dp.OrnsteinUhlenbeck(1.0, 1.0, 1.0).mse(1.0, 0), "dimension"),
])
def test_diffusion_bad_input(make, word):
    with pytest.raises(ValueError, match=word):
        make()


def test_extreme_times_stay_finite():
    ou = dp.OrnsteinUhlenbeck(1.0, 1.0, 1e-12)
    assert np.isfinite(ou.rdp(2.0)) and ou.rdp(2.0) > 1e11
    far = dp.OrnsteinUhlenbeck(1.0, 1.0, 1e4)
    assert 0 < far.rdp(2.0) < 1e-300  # underflow never reports an exact 0
    assert far.pure_epsilon() == math.inf and far.intrinsic_sensitivity >= 0
    assert dp.OrnsteinUhlenbeck(1.0, 1.0, 1.0, sensitivity=0.0).pure_epsilon() == 0.0
    sgd = dp.NoisyProjectedSGD(10_000, 1.0, 2.0, 1.0, 0.5, 1.0, index=1)
    assert 0 < sgd.rdp(2.0) < 1e-300 and sgd.pure_epsilon() == math.inf
    flat = dp.NoisyProjectedSGD(10, 1.0, 2.0, 2.0, 0.5, 1.0, index=3)  # L = 0: forgets z_3
    assert flat.contraction == 0.0 and flat.rdp(2.0) == 0.0 and flat.pure_epsilon() == 0.0
