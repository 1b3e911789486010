"""Soundness at the edges of the float range, against 60-digit mpmath: cancellations near
p = 1/2 or tiny epsilon and gamma, overflow at tiny delta, subnormal results, padded curves
reported as lower bounds, and caps that do not hold. Each test failed before its fix."""
import math

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp



@pytest.fixture(autouse=True)
def _precision():
    """60 digits inside this module's tests only (mp.mp.dps is global)."""
    with mp.workdps(60):
        yield


def test_randomized_response_epsilon_near_one_half():
    """log(q) - log1p(-q) cancels near q = 1/2 (relative error ~1e-8). The pure epsilon is
    rounded up (an upper bound, within a few ulps)."""
    for p in (0.5 + 3e-7, 0.5 + 1e-12, 0.5 - 2e-9, 0.73, 0.75):
        q = mp.mpf(max(p, 1 - p))
        exact = mp.log(q / (1 - q))
        got = dp.RandomizedResponse(p).eps0
        assert exact <= got <= exact * (1 + 8 * 2.0 ** -53)


def test_mixing_at_tiny_delta_is_not_pure_dp():
    """(e^eps - 1)/delta overflowed for delta below ~1e-295, which read as eps~ = inf."""
    from dpamp.amplification.mixing import GaussianKernel, amplify_by_mixing
    eps2, delta2 = amplify_by_mixing(20.0, 1e-300, GaussianKernel(1.0, 0.0, 50.0),
                                     "dobrushin-eps")
    assert delta2 > 0.0
    g = dp.Gaussian(2.0).post_process(GaussianKernel(1.0)).delta(20.0)
    assert g.delta > 0.0


def test_add_order_of_a_mixture_at_tiny_epsilon():
    """eps'' = log(1 + (e^{eps'} - 1)/c), c = 1 - e^{eps'}(1 - gamma): the upper path must not
    exceed it (a larger eps'' gives a smaller, optimistic profile); it lost ~u |log gamma|."""
    from dpamp.profiles.numerics import ajc_reverse
    for gamma in (1e-9, 1e-4, 0.3):
        for e in (1e-24, 1e-15, 1e-9, 0.5):
            _, got = ajc_reverse(np.array([e]), gamma, upper=True)
            c = 1 - mp.exp(mp.mpf(e)) * (1 - mp.mpf(gamma))
            if c <= 0:                        # no add-order mass at all: eps'' = inf
                assert got[0] == math.inf
                continue
            exact = mp.log(1 + mp.expm1(mp.mpf(e)) / c)
            assert got[0] <= exact * (1 + 1e-14)
            assert got[0] >= exact * (1 - 1e-6)


def test_joint_convexity_beta_for_tiny_gamma_and_epsilon():
    """beta = gamma / (1 - (1-gamma) e^{-eps'}): the denominator cancelled (log error 0.33)."""
    from dpamp.profiles.numerics import ajc_log_beta
    for gamma, e in ((1e-12, 2e-13), (1e-6, 1e-9), (0.2, 1.0)):
        lb, l1b = ajc_log_beta(np.array([e]), gamma)
        g, x = mp.mpf(gamma), mp.mpf(e)
        beta = g / (1 - (1 - g) * mp.exp(-x))
        assert abs(lb[0] - mp.log(beta)) <= 1e-13 * (1 + abs(mp.log(beta)))
        assert abs(l1b[0] - mp.log(1 - beta)) <= 1e-12 * (1 + abs(mp.log(1 - beta)))


def test_subnormal_profile_values_round_outwards():
    from dpamp.profiles.numerics import to_linear_lower, to_linear_upper
    for v in ("7.975e-322", "4.1e-324", "1e-310", "3e-300"):
        lv = float(mp.log(mp.mpf(v)))
        up = math.nextafter(math.nextafter(lv, math.inf), math.inf)     # log upper bound
        down = math.nextafter(math.nextafter(lv, -math.inf), -math.inf)
        assert to_linear_upper(np.array([up]))[0] >= mp.mpf(v)
        assert to_linear_lower(np.array([down]))[0] <= mp.mpf(v)


def test_lower_curves_of_padded_mechanisms_drop_their_pad():
    """Laplace's curve is padded by 16u z and the diffusions' by a relative 1e-12: reporting
    the padded curve as the lower end put the lower bound above the truth."""
    b = 1e8
    a = mp.mpf(2)
    z = mp.mpf(1) / b
    exact = mp.log(a / (2 * a - 1) * mp.exp((a - 1) * z)
                   + (a - 1) / (2 * a - 1) * mp.exp(-a * z)) / (a - 1)
    br = dp.Laplace(b).renyi(2.0)
    assert br.lower <= exact <= br.upper
    lap = dp.Laplace(0.7).renyi([1.5, 4.0, 50.0])
    assert (lap.lower <= lap.upper).all() and (lap.lower >= lap.upper * (1 - 1e-13)).all()
    bm = dp.BrownianMotion(0.7)
    br = bm.renyi([2.0, 9.0])
    exact = np.array([2.0, 9.0]) * bm.intrinsic_sensitivity
    assert (br.lower <= exact).all() and (br.upper >= exact).all()


def test_with_replacement_batch_above_one_has_no_rdp_curve():
    """The inner curve is no cap when a record can be drawn twice (k copies need the k-group
    curve): rdp() returned 50 at order 100 where a counting query proves >= 198.6."""
    m = dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.WithReplacement(2, 2))
    assert not m.has_rdp()
    with pytest.raises(NotImplementedError, match="Rényi"):
        m.rdp(100.0)
    assert "rdp" not in dp.available_methods(m)


def test_profile_rdp_at_order_infinity():
    """Order inf gave NaN for every order; it is the pure epsilon."""
    from dpamp.profiles.rdp_bridge import profile_rdp
    got = profile_rdp(dp.Laplace(2.0), [2.0, math.inf])
    assert np.isfinite(got).all() and got[1] == dp.Laplace(2.0).pure_epsilon()
    assert got[0] >= dp.Laplace(2.0).rdp(2.0) * (1 - 1e-12)


@pytest.mark.parametrize("plan", ["alone", "composed", "subsampled"])
def test_pld_delta_below_the_doubles_is_not_zero(plan):
    """A Gaussian at mu 1e-8 has delta(1) ~ e^{-5e15}: positive, below the smallest double. The
    PLD's pessimistic mass at +inf underflowed to 0 and delta read 0, not an upper bound in
    exact arithmetic; the mass is now raised to the smallest positive double where the pair has
    mass above the grid."""
    g = dp.Gaussian(1e8)
    mech = {"alone": g, "composed": g * 1000,
            "subsampled": g.subsample(dp.Poisson(0.5)) * 10}[plan]
    mu = mp.mpf(1e-8)
    # log of the exact delta(1) of one step (Balle & Wang 2018): far below log(5e-324) = -744
    log_true = mp.log(mp.ncdf(-1 / mu + mu / 2) - mp.e * mp.ncdf(-1 / mu - mu / 2))
    assert log_true < -1e15
    b = mech.delta(1.0, method="pld")
    assert b.delta > 0.0
    assert b.lower == 0.0


def test_pld_delta_of_bounded_losses_stays_zero():
    """The floor applies only where the pair has mass above the grid: a pure-DP part at an
    epsilon above its losses keeps delta exactly 0."""
    assert dp.Laplace(1.0).delta(1.0, method="pld").delta == 0.0
    assert (dp.RandomizedResponse(0.75) * 3).delta(3 * math.log(3) + 1e-9,
                                                   method="pld").delta == 0.0


def test_pld_refuses_a_grid_past_the_doubles_without_warnings():
    """A Gaussian at sigma 1e-150 (mu 1e150, epsilon ~ 5e299) asked a grid step of ~1e149
    while its quantile scan was clipped to +-420: the range check passed and e^{t_j}
    overflowed, leaking RuntimeWarnings before the query failed. The grid's ends are checked
    now: a clean OutOfReach naming the methods that answer."""
    import warnings
    from dpamp.core.errors import OutOfReach
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(OutOfReach, match="rdp"):
            dp.Gaussian(1e-150).epsilon(1e-5, method="pld")


def test_auto_improves_on_an_infinite_upper_bound():
    """The closed-form profile overflows to an infinite epsilon at sigma 1e-150 where RDP
    still proves a finite one (mu^2 / 2 + mu sqrt(2 log(1/delta)) ~ 5e299, Mironov 2017):
    auto took the infinite answer; it now asks the next method, as it does for a missed tol."""
    g = dp.Gaussian(1e-150).epsilon(1e-5)
    mu = mp.mpf(10) ** 150
    assert math.isfinite(g.epsilon)
    assert mu ** 2 / 2 <= g.epsilon <= mu ** 2 / 2 * (1 + 1e-2)
    assert g.method == "rdp"
    assert not g.note.startswith(";")


@pytest.mark.parametrize("plan", ["subsampled", "matrix-poisson", "matrix-bins"])
def test_no_warnings_at_sigma_1e_150(plan):
    """The sizing moments (subsampled pair, mixture of Gaussians) squared losses ~1e300 to inf
    and warned ("overflow encountered in square / multiply"). They are for sizing only: an
    infinite variance now, and the answer (auto) or a clean OutOfReach (pld), silently."""
    import warnings
    from dpamp.core.errors import OutOfReach
    s = 1e-150
    mech = {"subsampled": lambda: dp.Gaussian(s).subsample(dp.Poisson(0.01)),
            "matrix-poisson": lambda: dp.MatrixMechanism(np.tril(np.ones((3, 3))), s,
                                                         participation=dp.Poisson(0.1)),
            "matrix-bins": lambda: dp.MatrixMechanism(np.tril(np.ones((4, 4))), s,
                                                      participation=dp.BallsInBins(2))}[plan]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mech.epsilon(1e-5).epsilon > 1e100
        try:
            mech.epsilon(1e-5, method="pld")
        except (OutOfReach, ValueError):
            pass
