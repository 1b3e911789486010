"""002 Thm 2 (shift reduction, Examples 1-3), Thm 4 (amplification by iteration) and Thm 5
(noisy projected SGD): closed forms, exact linear-Gaussian recursions, mpmath quadrature of the
exact Rényi divergence of convolved densities, and hypothesis properties."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.mixing.coupling import minimise_shift


@pytest.fixture(autouse=True)
def _local_mpmath_precision():
    """Tests set mp.mp.dps; restore it afterwards so other test modules are unaffected."""
    with mp.workdps(mp.mp.dps):
        yield


ALPHAS = np.array([1.1, 1.5, 2.0, 4.0, 16.0, 100.0])


# --- Thm 2: coupling / shift reduction --------------------------------------------------------

@pytest.mark.parametrize("s1, s2, sens", [(1.0, 1.0, 1.0), (0.5, 2.0, 1.0), (3.0, 0.2, 2.5)])
def test_example1_iterated_gaussian_is_exact(s1, s2, sens):
    """002 Ex. 1: Gaussian mechanism + Gaussian kernel gives exactly the RDP of
    N(f(D), (s1^2 + s2^2) I): alpha Delta^2 / (2 (s1^2 + s2^2))."""
    mech = dp.Gaussian(s1, sensitivity=sens)
    kern = dp.GaussianKernel(s2)
    exact = ALPHAS * sens ** 2 / (2 * (s1 ** 2 + s2 ** 2))
    got = dp.shift_reduction_rdp(ALPHAS, mech, kern)
    assert np.all(got >= exact) and np.allclose(got, exact, rtol=1e-11)
    assert np.allclose(got, dp.Gaussian(math.hypot(s1, s2), sens).rdp(ALPHAS), rtol=1e-11)
    post = mech.post_process(kern)
    assert np.allclose(post.rdp(ALPHAS), exact, rtol=1e-11)
    assert post.relation is mech.relation
    # the numerical search (used for the other cases) finds the same minimum and the paper's theta
    val, theta = minimise_shift(ALPHAS, "gaussian", s1, sens, "gaussian", s2, 1.0)
    assert np.allclose(val, exact, rtol=1e-6)
    assert np.allclose(theta, 1 / (1 + s2 ** 2 / s1 ** 2), atol=1e-4)


@pytest.mark.parametrize("z", [1e-8, 1e-4, 0.1, 1.0, 30.0])
@pytest.mark.parametrize("alpha", [1.001, 1.1, 2.0, 50.0, 1e4])
def test_laplace_shift_rdp_is_a_rounded_up_mpmath_value(z, alpha):
    """The cancellation-free form with its absolute margin: above the 50-digit value, close."""
    from dpamp.amplification.mixing.coupling import laplace_shift_rdp
    mp.mp.dps = 50
    a, t = mp.mpf(alpha), mp.mpf(z)
    g = a / (2 * a - 1) * mp.e ** ((a - 1) * t) + (a - 1) / (2 * a - 1) * mp.e ** (-a * t)
    exact = mp.log(g) / (a - 1)
    got = laplace_shift_rdp(z, 1.0, alpha)
    assert mp.mpf(float(got)) >= exact
    assert float(got) == pytest.approx(float(exact), rel=1e-6)


@pytest.mark.parametrize("L", [0.3, 0.9, 1.0, 2.0])
def test_example3_lipschitz_kernel_exact_for_linear_map(L):
    """002 Ex. 3: sigma*^2 = s1^2 + s2^2 / L^2. For psi(x) = L x the post-processed output is
    N(L f(D), L^2 s1^2 + s2^2) with sensitivity L Delta: the same number, computed directly."""
    s1, s2, sens = 1.2, 0.7, 1.5
    got = dp.shift_reduction_rdp(ALPHAS, dp.Gaussian(s1, sens), dp.GaussianKernel(s2, lipschitz=L))
    direct = ALPHAS * (L * sens) ** 2 / (2 * (L ** 2 * s1 ** 2 + s2 ** 2))
    assert np.allclose(got, direct, rtol=1e-11) and np.all(got >= direct)


def lap_conv_pdf(z, b1, b2):
    """Density of Lap(0, b1) + Lap(0, b2) (closed form)."""
    z = abs(z)
    if b1 == b2:
        return (b1 + z) * mp.e ** (-z / b1) / (4 * b1 ** 2)
    return (b1 * mp.e ** (-z / b1) - b2 * mp.e ** (-z / b2)) / (2 * (b1 ** 2 - b2 ** 2))


def gauss_lap_pdf(z, s, b):
    """Density of N(0, s^2) + Lap(0, b) (closed form with erfc)."""
    c = mp.e ** (s ** 2 / (2 * b ** 2)) / (4 * b)
    r2 = mp.sqrt(2) * s
    return c * (mp.e ** (-z / b) * mp.erfc((s ** 2 / b - z) / r2)
                + mp.e ** (z / b) * mp.erfc((s ** 2 / b + z) / r2))


def renyi_shift(pdf, shift, alpha, points):
    f = lambda z: pdf(z - shift) ** alpha * pdf(z) ** (1 - alpha)
    return float(mp.log(mp.quad(f, [-mp.inf] + points + [mp.inf])) / (alpha - 1))


@pytest.mark.parametrize("b1, b2", [(1.0, 1.0), (0.5, 1.5), (2.0, 0.7)])
@pytest.mark.parametrize("alpha", [1.5, 3.0, 10.0])
def test_iterated_laplace_bound_above_exact_and_amplifies(b1, b2, alpha):
    """002 Ex. 2: the bound is >= the exact Rényi divergence of the convolved laws (mpmath), and
    below the Laplace mechanism's own RDP when b1 = b2 (log-convexity of g_alpha)."""
    mp.mp.dps = 20
    sens = 1.0
    pdf = lambda z: lap_conv_pdf(z, mp.mpf(b1), mp.mpf(b2))
    assert float(mp.quad(pdf, [-mp.inf, 0, mp.inf])) == pytest.approx(1.0, abs=1e-12)
    exact = renyi_shift(pdf, sens, alpha, [0, sens])
    got = dp.shift_reduction_rdp(alpha, dp.Laplace(b1, sens), dp.LaplaceKernel(b2))
    assert exact <= got
    base = dp.Laplace(b1, sens).rdp(alpha)
    assert got <= base * (1 + 1e-12)
    if b1 == b2:
        assert got < base * 0.999


@pytest.mark.parametrize("s, b", [(1.0, 1.0), (0.5, 2.0), (2.0, 0.5)])
@pytest.mark.parametrize("alpha", [1.5, 4.0])
def test_gaussian_then_laplace_bound_above_exact(s, b, alpha):
    mp.mp.dps = 20
    pdf = lambda z: gauss_lap_pdf(z, mp.mpf(s), mp.mpf(b))
    assert float(mp.quad(pdf, [-mp.inf, 0, mp.inf])) == pytest.approx(1.0, abs=1e-12)
    exact = renyi_shift(pdf, 1.0, alpha, [0, 1])
    got = dp.shift_reduction_rdp(alpha, dp.Gaussian(s), dp.LaplaceKernel(b))
    assert exact <= got
    # ... and the Laplace -> Gaussian order gives the same bound (theta <-> 1 - theta)
    assert dp.shift_reduction_rdp(alpha, dp.Laplace(b), dp.GaussianKernel(s)) == \
        pytest.approx(got, rel=1e-9)


@pytest.mark.parametrize("b1, b2, L", [(1.0, 1.0, 1.0), (0.5, 2.0, 1.0), (2.0, 0.5, 1.0),
                                       (1.0, 1.0, 0.25)])
def test_pure_dp_limit_matches_lemma3(b1, b2, L):
    """alpha = inf: min over theta of theta Delta/b1 + (1 - theta) L Delta/b2 = Delta min(1/b1,
    L/b2), i.e. Delta / max(b1, b2) for L = 1 (002 Lemma 3: no amplification below that)."""
    sens = 1.7
    got = dp.shift_reduction_rdp(np.inf, dp.Laplace(b1, sens), dp.LaplaceKernel(b2, lipschitz=L))
    want = sens * min(1 / b1, L / b2)
    assert want <= got and got == pytest.approx(want, rel=1e-11)
    post = dp.Laplace(b1, sens).post_process(dp.LaplaceKernel(b2, lipschitz=L))
    assert post.pure_epsilon() == pytest.approx(got, rel=1e-12)
    # Gaussian mechanism + Laplace kernel is pure (L Delta / b2)-DP
    assert dp.shift_reduction_rdp(np.inf, dp.Gaussian(1.0, sens), dp.LaplaceKernel(b2)) == \
        pytest.approx(sens / b2, rel=1e-11)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["gaussian", "laplace"]), st.sampled_from(["gaussian", "laplace"]),
       st.floats(0.2, 5), st.floats(0.2, 5), st.floats(0.1, 3),
       st.one_of(st.just(0.0), st.floats(0.01, 2.0)))
def test_shift_reduction_properties(mk, kk, s1, s2, sens, L):
    mech = dp.Gaussian(s1, sens) if mk == "gaussian" else dp.Laplace(s1, sens)
    kern = dp.GaussianKernel(s2, lipschitz=L) if kk == "gaussian" else \
        dp.LaplaceKernel(s2, lipschitz=L)
    got = dp.shift_reduction_rdp(ALPHAS, mech, kern)
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    assert np.all(np.diff(got) >= -1e-11 * got[1:] - 1e-15)   # non-decreasing in alpha
    assert np.all(got <= mech.rdp(ALPHAS) * (1 + 1e-11))       # theta = 1: the mechanism alone
    kernel_alone = (dp.Gaussian(s2, L * sens) if kk == "gaussian" else
                    dp.Laplace(s2, L * sens) if L > 0 else dp.Gaussian(1.0, 0.0))
    # theta = 0 (abs. tolerance: dp.Laplace's own curve loses ~1e-16 absolute to cancellation)
    assert np.all(got <= kernel_alone.rdp(ALPHAS) * (1 + 1e-11) + 1e-14)
    more_noise = dp.GaussianKernel(2 * s2, lipschitz=L) if kk == "gaussian" else \
        dp.LaplaceKernel(2 * s2, lipschitz=L)
    assert np.all(dp.shift_reduction_rdp(ALPHAS, mech, more_noise) <= got * (1 + 1e-9))


def test_shift_reduction_bad_input():
    with pytest.raises(ValueError, match="Gaussian or Laplace mechanism"):
        dp.shift_reduction_rdp(2.0, dp.RandomizedResponse(0.7), dp.GaussianKernel(1.0))
    with pytest.raises(ValueError, match="unbounded"):
        dp.shift_reduction_rdp(2.0, dp.Gaussian(1.0), dp.GaussianKernel(1.0, 0, 1))
    with pytest.raises(ValueError, match="alpha"):
        dp.shift_reduction_rdp(1.0, dp.Gaussian(1.0), dp.GaussianKernel(1.0))


def test_post_processed_gaussian_composes_and_converts():
    post = dp.Gaussian(1.0).post_process(dp.GaussianKernel(1.0))
    # Example 1: its RDP curve is exactly that of the Gaussian with the summed variance
    assert (post * 10).epsilon(1e-5, method="rdp").epsilon == pytest.approx(
        (dp.Gaussian(math.sqrt(2.0)) * 10).epsilon(1e-5, method="rdp").epsilon, rel=1e-9)
    # an unbounded kernel has no uniform mixing: the mixing method does not apply
    assert "mixing" not in dp.available_methods(post)


# --- Thm 4: amplification by iteration ------------------------------------------------------------

def linear_exact(alpha, sigma, L, r, dist):
    """Exact Rényi divergence after r steps x -> L x + N(0, sigma^2) from point masses dist apart
    (an independent recursion on the mean gap and the variance)."""
    m, v = dist, 0.0
    for _ in range(r):
        m, v = L * m, L * L * v + sigma ** 2
    return alpha * m * m / (2 * v)


@pytest.mark.parametrize("L", [0.2, 0.5, 0.9, 0.999, 1.0, 1.1, 2.0])
@pytest.mark.parametrize("r", [1, 2, 5, 20])
def test_optimal_path_is_exact_for_linear_maps(L, r):
    sigma, dist = 0.8, 1.3
    got = dp.amplification_by_iteration(ALPHAS, sigma, L, r, dist)
    exact = np.array([linear_exact(a, sigma, L, r, dist) for a in ALPHAS])
    assert np.all(got >= exact) and np.allclose(got, exact, rtol=1e-10)


@pytest.mark.parametrize("L, r", [(0.5, 1), (0.5, 10), (0.9, 50), (1.0, 7), (0.0, 3)])
def test_paper_bound_3_closed_form_and_above_optimal(L, r):
    sigma, dist = 1.5, 2.0
    paper = dp.amplification_by_iteration(ALPHAS, sigma, L, r, dist, bound="paper")
    assert np.allclose(paper, ALPHAS * dist ** 2 * L ** (r + 1) / (2 * r * sigma ** 2),
                       rtol=1e-11, atol=0)
    opt = dp.amplification_by_iteration(ALPHAS, sigma, L, r, dist)
    assert np.all(opt <= paper * (1 + 1e-12))
    if L == 1.0 or r == 1:
        assert np.allclose(opt, paper, rtol=1e-11)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.05, 1.5), st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_any_path_is_above_the_optimal_path(L, r, seed):
    """Thm 4 (2) for a random path with sum a_i = Delta is never below the optimum, which the
    path a_i proportional to L^{-2(r-i)} attains."""
    rng = np.random.default_rng(seed)
    dist, sigma = 1.0, 1.0
    a = rng.dirichlet(np.ones(r)) * dist
    opt = dp.amplification_by_iteration(2.0, sigma, L, r, dist)
    assert dp.mixing.iteration_path_bound(2.0, sigma, L, a) >= opt * (1 - 1e-10)
    w = L ** (-2.0 * (r - np.arange(1, r + 1)))
    best = w / w.sum() * dist
    assert dp.mixing.iteration_path_bound(2.0, sigma, L, best) == pytest.approx(opt, rel=1e-9)
    if L <= 1:
        assert opt <= dp.amplification_by_iteration(2.0, sigma, L, r, dist, bound="paper") * \
            (1 + 1e-12)


def test_iteration_extremes_and_errors():
    assert 0 < dp.amplification_by_iteration(2.0, 1.0, 0.01, 10_000) < 1e-300  # no false 0
    assert dp.amplification_by_iteration(np.inf, 1.0, 0.01, 10_000) == np.inf
    near = dp.amplification_by_iteration(2.0, 1.0, 1 - 1e-12, 100)
    assert near == pytest.approx(2.0 / (2 * 100), rel=1e-8)
    big = dp.amplification_by_iteration(2.0, 1.0, 3.0, 10_000)  # L > 1: tends to (L^2 - 1)
    assert big == pytest.approx(2.0 * (9 - 1) / 2, rel=1e-9)
    assert dp.amplification_by_iteration(np.inf, 1.0, 0.5, 3) == np.inf
    with pytest.raises(ValueError, match="lipschitz must be in \\[0, 1\\]"):
        dp.amplification_by_iteration(2.0, 1.0, 1.5, 10, bound="paper")
    with pytest.raises(ValueError, match="steps"):
        dp.amplification_by_iteration(2.0, 1.0, 0.5, 0)
    with pytest.raises(ValueError, match="sigma"):
        dp.amplification_by_iteration(2.0, -1.0, 0.5, 3)
    with pytest.raises(ValueError, match="bound"):
        dp.amplification_by_iteration(2.0, 1.0, 0.5, 3, bound="best")


# --- Thm 5: noisy projected SGD ---------------------------------------------------------------

SGD = dict(n=50, lipschitz=1.5, smoothness=4.0, strong_convexity=1.0, step_size=0.3, sigma=2.0)


def thm5(n, C, beta, rho, eta, sigma, i):
    if i == n:
        return 2 * C ** 2 / sigma ** 2
    return 2 * C ** 2 / ((n - i) * sigma ** 2) * (1 - 2 * eta * beta * rho / (beta + rho)) ** (
        (n - i + 1) / 2)


def test_thm5_paper_formula_reproduced_at_every_index():
    sgd = dp.NoisyProjectedSGD(**SGD, bound="paper")
    want = np.array([thm5(*SGD.values(), i) for i in range(1, SGD["n"] + 1)])
    assert np.allclose(sgd.epsilons(), want, rtol=1e-11) and np.all(sgd.epsilons() >= want)
    for i in [1, 17, 49, 50]:
        assert sgd.rdp(3.0, index=i) == pytest.approx(3.0 * want[i - 1], rel=1e-11)


def test_optimal_below_paper_and_matches_thm4():
    opt = dp.NoisyProjectedSGD(**SGD)
    paper = dp.NoisyProjectedSGD(**SGD, bound="paper")
    assert np.all(opt.epsilons() <= paper.epsilons() * (1 + 1e-12))
    assert opt.epsilons()[0] < 0.5 * paper.epsilons()[0]
    eta, C, s, L = SGD["step_size"], SGD["lipschitz"], SGD["sigma"], opt.contraction
    assert L == pytest.approx(math.sqrt(1 - 2 * 0.3 * 4 * 1 / 5))
    for i in [1, 10, 49]:
        via_thm4 = dp.amplification_by_iteration(2.0, eta * s, L, SGD["n"] - i, 2 * eta * C)
        assert opt.rdp(2.0, index=i) == pytest.approx(via_thm4, rel=1e-11)
    # the last index is the Gaussian mechanism with sensitivity 2 eta C and noise eta sigma
    assert opt.rdp(ALPHAS, index=SGD["n"]) == pytest.approx(
        dp.Gaussian(eta * s, 2 * eta * C).rdp(ALPHAS), rel=1e-11)


def test_merely_convex_loss():
    sgd = dp.NoisyProjectedSGD(**{**SGD, "strong_convexity": 0.0, "step_size": 0.5})
    paper = dp.NoisyProjectedSGD(**{**SGD, "strong_convexity": 0.0, "step_size": 0.5},
                                 bound="paper")
    i = np.arange(1, SGD["n"])
    want = 2 * SGD["lipschitz"] ** 2 / ((SGD["n"] - i) * SGD["sigma"] ** 2)
    assert np.allclose(sgd.epsilons(i), want, rtol=1e-11)
    assert np.allclose(paper.epsilons(i), want, rtol=1e-11)


def test_bound_above_exact_divergence_of_a_linear_instance():
    """Quadratic loss l(x, z) = beta/2 (x - z)^2 with rho = beta, no projection: the run is the
    linear recursion x <- (1 - eta beta) x + eta beta z - eta Z, so the last iterates for z_i and
    z_i' are Gaussians with mean gap (1 - eta beta)^{n-i} eta beta |z_i - z_i'| and variance
    eta^2 sigma^2 sum_{k=0}^{n-i} (1 - eta beta)^{2k}. The gradient gap is beta |z_i - z_i'| =
    2C. Both bounds must lie above the exact divergence."""
    n, beta, eta, sigma, C = 20, 2.0, 0.3, 1.0, 1.0
    for bound in ["optimal", "paper"]:
        sgd = dp.NoisyProjectedSGD(n, C, beta, beta, eta, sigma, bound=bound)
        for i in range(1, n + 1):
            q = 1 - eta * beta
            gap = q ** (n - i) * eta * 2 * C
            var = eta ** 2 * sigma ** 2 * sum(q ** (2 * k) for k in range(n - i + 1))
            assert sgd.rdp(2.0, index=i) >= 2.0 * gap ** 2 / (2 * var)


def test_sgd_composes_converts_and_validates():
    sgd = dp.NoisyProjectedSGD(**SGD)
    assert sgd.relation is dp.SUBSTITUTION
    assert sgd.rdp(ALPHAS) == pytest.approx(sgd.rdp(ALPHAS, index=SGD["n"]))
    assert sgd.epsilons().max() == pytest.approx(sgd.epsilon_at(SGD["n"]))
    per_person = sgd.at_index(45)
    assert per_person.rdp(2.0) == pytest.approx(sgd.rdp(2.0, index=45))
    g = (per_person * 5).epsilon(1e-5)
    assert 0 < g.epsilon < (sgd * 5).epsilon(1e-5).epsilon
    dp.compose(sgd, dp.Gaussian(1.0, relation=dp.SUBSTITUTION)).epsilon(1e-5)
    with pytest.raises(ValueError, match="relation"):
        dp.compose(sgd, dp.Gaussian(1.0))
    with pytest.raises(ValueError, match="step_size"):
        dp.NoisyProjectedSGD(**{**SGD, "step_size": 2 / 5 + 1e-9})
    dp.NoisyProjectedSGD(**{**SGD, "step_size": 2 / 5})  # the boundary is allowed
    with pytest.raises(ValueError, match="strong_convexity"):
        dp.NoisyProjectedSGD(**{**SGD, "strong_convexity": 5.0})
    with pytest.raises(ValueError, match="index"):
        sgd.rdp(2.0, index=SGD["n"] + 1)
    with pytest.raises(ValueError, match="index"):
        dp.NoisyProjectedSGD(**SGD, index=0)
    with pytest.raises(ValueError, match="SUBSTITUTION"):
        dp.NoisyProjectedSGD(**SGD, relation=dp.ADD_REMOVE)
    with pytest.raises(ValueError, match="sigma"):
        dp.NoisyProjectedSGD(**{**SGD, "sigma": 0.0})
