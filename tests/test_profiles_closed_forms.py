"""Closed-form profiles (000 Thms 3, 4; RR; (eps, delta)) and the hockey-stick divergence against
independent computations: 60-digit mpmath closed forms, mpmath quadrature of
int [p - e^eps q]_+ (to 1e-9), brute-force suprema over events, and the PLD formula."""
import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import dpamp as dp
from dpamp.profiles import gaussian_log_profile, hockey_stick, profile_from_privacy_loss


def mp_gauss(mu, eps):
    with mp.workdps(60):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        Phi = lambda x: mp.erfc(-x / mp.sqrt(2)) / 2  # noqa: E731
        return Phi(mu / 2 - eps / mu) - mp.exp(eps) * Phi(-mu / 2 - eps / mu)


MUS = [1e-3, 0.05, 0.3, 1.0, 2.5, 8.0, 40.0]
EPSS = [0.0, 1e-9, 1e-4, 0.01, 0.3, 1.0, 2.0, 5.0, 12.0, 40.0, 150.0, 700.0]


@pytest.mark.parametrize("mu", MUS)
def test_gaussian_thm4_vs_mpmath(mu):
    up = gaussian_log_profile(mu, np.array(EPSS), upper=True)
    lo = gaussian_log_profile(mu, np.array(EPSS), upper=False)
    for e, u, l in zip(EPSS, up, lo):
        ex = mp_gauss(mu, e)
        with mp.workdps(60):
            le = mp.log(ex)
        assert l <= le <= u, (mu, e)
        if le > -700:  # relative accuracy in the range that matters
            assert u - l < 2e-9, (mu, e, u - l)


def _quad(p, q, eps, pts, lo=-mp.inf, hi=mp.inf):
    with mp.workdps(30):
        a = mp.exp(mp.mpf(eps))
        f = lambda z: max(p(z) - a * q(z), 0)  # noqa: E731
        return mp.quad(f, [lo, *sorted(set(pts)), hi])


@pytest.mark.parametrize("mu,eps", [(1.0, 0.0), (1.0, 0.5), (0.5, 0.2), (3.0, 2.0), (2.0, 6.0)])
def test_gaussian_vs_quadrature(mu, eps):
    g = dp.Gaussian(sigma=1.0 / mu)
    p = lambda z: mp.npdf(z, 1, 1 / mu)  # noqa: E731
    q = lambda z: mp.npdf(z, 0, 1 / mu)  # noqa: E731
    cross = eps / mu ** 2 + 0.5  # p = e^eps q at z = sigma^2 eps + 1/2
    ref = float(_quad(p, q, eps, [cross, 0.5]))
    got = dp.profile_pair(g, eps)
    np.testing.assert_allclose(got, [ref, ref], rtol=1e-9)
    assert (got >= ref * (1 - 1e-12)).all()


@pytest.mark.parametrize("b,eps", [(1.0, 0.0), (1.0, 0.4), (0.5, 1.5), (2.0, 0.1), (1.0, 1.0)])
def test_laplace_thm3_vs_quadrature(b, eps):
    lap = dp.Laplace(scale=b)
    p = lambda z: mp.exp(-abs(z - 1) / b) / (2 * b)  # noqa: E731
    q = lambda z: mp.exp(-abs(z) / b) / (2 * b)  # noqa: E731
    ref = float(_quad(p, q, eps, [0, (1 + eps * b) / 2, 1]))  # kink where p = e^eps q
    got = dp.profile_pair(lap, eps)
    np.testing.assert_allclose(got, [ref, ref], rtol=1e-9, atol=1e-15)  # eta rounded up
    assert (got >= ref).all()
    low = dp.profile_pair_lower(lap, eps)
    assert (low <= ref + 1e-17).all()


def test_poisson_gaussian_both_orders_vs_quadrature():
    """000 Thm 8 rows, incl. the add order c H_{a''}(Q||P), against direct quadrature of the
    mixture densities (1-q) N(0, s^2) + q N(1, s^2) vs N(0, s^2)."""
    s, q = 0.8, 0.1
    m = dp.Gaussian(s).subsample(dp.Poisson(q))
    mix = lambda z: (1 - q) * mp.npdf(z, 0, s) + q * mp.npdf(z, 1, s)  # noqa: E731
    base = lambda z: mp.npdf(z, 0, s)  # noqa: E731
    for eps in [0.0, 0.005, 0.05, 0.2, 1.0, 2.5]:
        up = dp.profile_pair(m, eps)
        low = dp.profile_pair_lower(m, eps)
        # the likelihood ratio (1-q) + q e^{(z - 1/2)/s^2} is monotone: one kink each
        a = math.exp(eps)
        k0 = s * s * math.log((a - (1 - q)) / q) + 0.5
        k1 = s * s * math.log((1 / a - (1 - q)) / q) + 0.5 if 1 / a > 1 - q else 0.0
        r0 = float(_quad(mix, base, eps, [k0, 0.5]))
        r1 = float(_quad(base, mix, eps, [k1, 0.5]))
        np.testing.assert_allclose(up, [r0, r1], rtol=1e-9, atol=1e-300)
        assert up[0] >= r0 * (1 - 1e-13) and up[1] >= r1 * (1 - 1e-13)
        assert low[0] <= r0 * (1 + 1e-13) and low[1] <= r1 * (1 + 1e-13)
    # the add order is not q * delta(eps): it is 0 beyond log(1/(1-q))
    assert dp.profile_pair(m, 0.2)[1] == 0.0 and dp.profile_pair(m, 0.2)[0] > 0


def test_rr_and_pure_vs_hockey_stick():
    for p in [0.6, 0.9, 0.3, 0.999]:
        rr = dp.RandomizedResponse(p)
        P, Q = np.array([p, 1 - p]), np.array([1 - p, p])
        eps = np.array([0.0, 0.1, 0.5, 1.0, 3.0, 8.0])
        ref = hockey_stick(P, Q, eps)
        np.testing.assert_allclose(dp.profile_pair(rr, eps)[0], ref, rtol=1e-12, atol=1e-17)
        assert (dp.profile_pair(rr, eps)[0] >= ref).all()
        assert (dp.profile_pair_lower(rr, eps)[0] <= ref).all()
        pure = dp.PureDP(rr.eps0)
        np.testing.assert_allclose(dp.profile_pair(pure, eps), dp.profile_pair(rr, eps),
                                   rtol=1e-12)


def test_eps_delta_vs_its_pld_and_pair():
    ed = dp.EpsDelta(1.2, 1e-3)
    eps = np.array([0.0, 0.3, 1.0, 1.2, 2.0, np.inf])
    losses, probs = ed.privacy_loss_atoms()
    ref = profile_from_privacy_loss(losses, probs, eps)
    # explicit 4-point pair: P = (d, (1-d)p, (1-d)(1-p), 0), Q = reversed
    d, e0 = 1e-3, 1.2
    p = 1 / (1 + math.exp(-e0))
    P = np.array([d, (1 - d) * p, (1 - d) * (1 - p), 0.0])
    np.testing.assert_allclose(hockey_stick(P, P[::-1], eps), ref, rtol=1e-13)
    up = dp.profile_pair(ed, eps)
    assert (up[0] >= ref).all() and (up[1] >= ref).all()
    np.testing.assert_allclose(up[0], ref, rtol=1e-11)
    assert up[0][-1] >= 1e-3  # mass at infinity = delta


# --- edge cases ------------------------------------------------------------------------------

def test_epsilon_zero_is_total_variation():
    for mu in [0.01, 0.7, 3.0]:
        tv = math.erf(mu / (2 * math.sqrt(2)))  # TV(N(mu,1), N(0,1)) = 2 Phi(mu/2) - 1
        np.testing.assert_allclose(dp.Gaussian(1 / mu).profile(0.0), tv, rtol=1e-12)
    np.testing.assert_allclose(dp.Laplace(1.0).profile(0.0), 1 - math.exp(-0.5), rtol=1e-12)
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    np.testing.assert_allclose(dp.profile_pair(m, 0.0), 0.01 * math.erf(1 / (2 * math.sqrt(2))),
                               rtol=1e-12)


def test_huge_epsilon_no_overflow():
    eps = np.array([50.0, 700.0, 710.0, 1e4, 1e8, 1e300, np.inf])
    mechs = [dp.Gaussian(0.5), dp.Gaussian(50.0), dp.Laplace(0.01), dp.EpsDelta(3, 1e-9),
             dp.Gaussian(1.0).subsample(dp.Poisson(1e-6)),
             dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.WithReplacement(5, 100)),
             dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(
                 dp.Poisson(0.1, relation=dp.SUBSTITUTION, population=50))]
    with np.errstate(over="raise", invalid="raise"):
        for m in mechs:
            rows = dp.profile_pair(m, eps)
            assert np.isfinite(rows).all() and (rows >= 0).all() and (rows <= 1).all()
            assert (np.diff(rows, axis=1) <= 0).all()
    # a Gaussian curve is positive at every finite eps: never reported as exactly 0
    assert (dp.profile_pair(dp.Gaussian(0.5), eps[:-1]) > 0).all()
    assert dp.Gaussian(0.5).profile(np.inf) == 0.0


def test_rate_edge_cases():
    g = dp.Gaussian(1.3)
    eps = np.array([0.0, 0.5, 2.0])
    # rate 1: no amplification
    np.testing.assert_allclose(dp.profile_pair(g.subsample(dp.Poisson(1.0)), eps),
                               dp.profile_pair(g, eps), rtol=1e-12)
    gs = dp.Gaussian(1.3, relation=dp.SUBSTITUTION)
    np.testing.assert_allclose(dp.profile_pair(gs.subsample(dp.WithoutReplacement(7, 7)), eps),
                               dp.profile_pair(gs, eps), rtol=1e-12)
    # rate -> 0: no privacy cost
    tiny = dp.profile_pair(g.subsample(dp.Poisson(1e-300)), eps)
    assert (tiny <= 1e-299).all()
    assert dp.profiles.membership_profile(0.8, 0.0, eps).tolist() == [0, 0, 0]
    assert dp.profiles.advanced_joint_convexity(0.0, eps, lambda e: 1, lambda e: 1).sum() == 0
    # sensitivity 0: nothing to protect
    assert dp.Gaussian(1.0, sensitivity=0.0).profile(0.0) == 0.0


# --- group profiles ----------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_group_white_box_below_black_box(k):
    eps = np.array([0.0, 0.1, 0.5, 1.0, 3.0, 10.0])
    g = dp.Gaussian(2.0)
    white = dp.group_profile(g, k, eps)
    np.testing.assert_allclose(white, dp.Gaussian(2.0, sensitivity=k).profile(eps), rtol=1e-12)
    black = dp.profiles.group_profile_blackbox(g.profile, k, eps)
    assert (black >= white * (1 - 1e-12)).all()
    lap = dp.Laplace(1.5)
    assert (dp.profiles.group_profile_blackbox(lap.profile, k, eps)
            >= dp.group_profile(lap, k, eps) * (1 - 1e-12)).all()
    # randomized response of a bit: groups cost nothing more
    rr = dp.RandomizedResponse(0.8)
    np.testing.assert_array_equal(dp.group_profile(rr, k, eps), rr.profile(eps))
    # pure DP: never above the k*eps0 randomized-response curve
    assert (dp.group_profile(dp.PureDP(0.4), k, eps) <= dp.PureDP(0.4 * k).profile(eps)).all()


def test_group_black_box_bound_holds_on_a_chain():
    """Brute force: a chain of k randomized-response-like neighbours P0 ~ P1 ~ ... ~ Pk with an
    explicit (eps, delta) profile per link; the black-box bound must dominate H(P0 || Pk)."""
    rng = np.random.default_rng(1)
    eps = np.linspace(0, 3, 13)
    for _ in range(20):
        k = int(rng.integers(2, 5))
        chain = [rng.dirichlet(np.ones(5)) for _ in range(k + 1)]
        link = lambda e: max(max(hockey_stick(a, b, e), hockey_stick(b, a, e))  # noqa: E731
                             for a, b in zip(chain[:-1], chain[1:]))
        prof = lambda e: np.array([link(x) for x in np.atleast_1d(e).ravel()]).reshape(  # noqa
            np.shape(e))
        bound = dp.profiles.group_profile_blackbox(prof, k, eps)
        true = np.maximum(hockey_stick(chain[0], chain[-1], eps),
                          hockey_stick(chain[-1], chain[0], eps))
        assert (bound >= true - 1e-12).all()


# --- the hockey-stick divergence itself ---------------------------------------------------------

def _sup_over_events(p, q, a):
    best = 0.0
    for r in range(len(p) + 1):
        for E in itertools.combinations(range(len(p)), r):
            best = max(best, sum(p[i] - a * q[i] for i in E))
    return best


dists = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6).filter(lambda v: sum(v) > 0.1)


@settings(max_examples=60, deadline=None)
@given(dists, dists, st.floats(-3.0, 3.0))
def test_hockey_stick_is_sup_over_events(pv, qv, eps):
    n = min(len(pv), len(qv))
    assume(sum(pv[:n]) > 0 and sum(qv[:n]) > 0)   # (the filter holds for the whole lists)
    p = np.array(pv[:n]) / sum(pv[:n])
    q = np.array(qv[:n]) / sum(qv[:n])
    assert abs(hockey_stick(p, q, eps) - _sup_over_events(p, q, math.exp(eps))) < 1e-12
    # the extension to alpha < 1 (000 Thm 14): H_a(P||Q) = 1 - a + a H_{1/a}(Q||P)
    a = math.exp(-abs(eps))
    assert abs(hockey_stick(p, q, alpha=a)
               - (1 - a + a * hockey_stick(q, p, alpha=1 / a))) < 1e-12
    # the PLD formula (000 Thm 5 / 004 Prop. 7) gives the same curve
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.where(q > 0, np.log(p) - np.log(q), np.inf)
    keep = p > 0
    assert abs(profile_from_privacy_loss(loss[keep], p[keep], eps)
               - hockey_stick(p, q, eps)) < 1e-12


def test_hockey_stick_edges():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    assert hockey_stick(p, q, np.inf) == 0.0
    assert hockey_stick(q, p, np.inf) == 0.5         # mass of Q where P = 0
    assert hockey_stick(p, q, -np.inf) == 1.0        # alpha = 0: total mass
    np.testing.assert_allclose(hockey_stick(p, q, [0.0, math.log(2)]), [0.5, 0.0])
    with pytest.raises(ValueError, match="same length"):
        hockey_stick([1.0], [0.5, 0.5], 0.0)
    with pytest.raises(ValueError, match="exactly one"):
        hockey_stick(p, q)
    with pytest.raises(ValueError):
        hockey_stick([-0.1, 1.1], [0.5, 0.5], 0.0)


def test_hockey_stick_density_vs_closed_form():
    from scipy.stats import norm
    eps = np.array([0.0, 0.5, 2.0])
    got = dp.profiles.hockey_stick_density(lambda z: norm.pdf(z, 1.5), norm.pdf, eps,
                                           points=[0.75, 1.5, 3.0])
    np.testing.assert_allclose(got, dp.Gaussian(1 / 1.5).profile(eps), rtol=1e-9)


def test_add_order_near_its_cutoff_vs_50_digits():
    """Row 1 of 000 Thm 8, c H_{a''}(Q||P) with c = 1 - e^eps (1 - q), cancels as eps approaches
    log(1/(1-q)); upper and lower must still bracket the exact value."""
    p, q = 0.9, 0.3
    m = dp.RandomizedResponse(p).subsample(dp.Poisson(q))
    cut = -math.log1p(-q)
    eps = np.array([cut * (1 - 1e-6), cut * (1 - 1e-9), cut * (1 - 1e-12), cut, cut * (1 + 1e-12)])
    up = dp.profile_pair(m, eps)[1]
    low = dp.profile_pair_lower(m, eps)[1]
    with mp.workdps(50):
        P = [mp.mpf(p), 1 - mp.mpf(p)]
        Q = [1 - mp.mpf(p), mp.mpf(p)]
        qq = mp.mpf(q)
        mix = [(1 - qq) * b + qq * a for a, b in zip(P, Q)]
        for e, u, l in zip(eps, up, low):
            a = mp.exp(mp.mpf(float(e)))
            ex = mp.fsum(max(b - a * x, 0) for b, x in zip(Q, mix))
            assert l <= ex <= u, (e, l, float(ex), u)


@pytest.mark.slow
def test_poisson_gaussian_vs_dp_accounting():
    """Peer library: dp_accounting's PLD of the Poisson-subsampled Gaussian (pessimistic and
    optimistic discretisations) brackets our exact 000 Thm 8 profile."""
    import logging
    from dp_accounting.pld import privacy_loss_distribution as pld
    logging.getLogger().setLevel(logging.ERROR)
    eps = [0.0, 0.01, 0.1, 0.5, 1.5]
    for sigma, q in [(0.8, 0.01), (1.5, 0.2)]:
        ours = dp.Gaussian(sigma).subsample(dp.Poisson(q)).profile(eps)
        pess = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=True,
                                           value_discretization_interval=1e-5)
        opt = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=False,
                                          value_discretization_interval=1e-5,
                                          use_connect_dots=False)
        for e, v in zip(eps, ours):
            hi, lo = pess.get_delta_for_epsilon(e), opt.get_delta_for_epsilon(e)
            assert lo <= v <= hi * (1 + 1e-9)
            assert v >= hi * (1 - 1e-4)
