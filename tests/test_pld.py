"""Privacy-loss distributions (004 Sec. 3-4): proven brackets against independent computations.

Every check is of the form lower <= exact <= upper with an exact value computed another way
(closed form, 50-digit binomial sums, exact convolution of small discrete pairs, KOV) or of
agreement with dp-accounting / prv-accountant inside their stated errors."""
import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.optimize import brentq
from scipy.special import log_ndtr

import dpamp as dp
from dpamp.pld.discretize import discretize
from dpamp.pld.loss import LossDistribution
from dpamp.pld.sources import loss_distribution


@pytest.fixture(autouse=True)
def _mp_precision():
    with mp.workdps(50):
        yield


# --- exact references ------------------------------------------------------------------------

def gaussian_log_delta(eps, mu):
    """log delta(eps) of N(mu, 1) vs N(0, 1) (004 Cor. 8), in log space."""
    a = log_ndtr(mu / 2 - eps / mu)
    b = eps + log_ndtr(-mu / 2 - eps / mu)
    return a + np.log1p(-np.exp(b - a))


def gaussian_epsilon(delta, mu):
    f = lambda e: gaussian_log_delta(e, mu) - math.log(delta)  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    return brentq(f, 0.0, mu * mu + 40 * mu + 10, xtol=1e-14, rtol=1e-14)


def discrete_delta(losses, probs, eps):
    """delta(eps) = sum p (1 - e^{eps - l})_+ + P[l = inf], exactly in mpmath."""
    total = mp.mpf(0)
    for l, p in zip(losses, probs):
        if l == math.inf:
            total += p
        elif l > eps:
            total += p * (1 - mp.exp(mp.mpf(eps) - l))
    return total


def discrete_epsilon(losses, probs, delta):
    f = lambda e: float(discrete_delta(losses, probs, e)) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = max(l for l in losses if l != math.inf) + 1.0
    if f(hi) > 0:
        return math.inf
    return brentq(f, 0.0, hi, xtol=1e-13)


def rr_k_fold(eps0, k):
    """Privacy loss of k-fold randomized response: (2l - k) eps0 w.p. C(k,l) p^l (1-p)^(k-l)."""
    p = mp.e ** eps0 / (1 + mp.e ** eps0)
    losses = [(2 * l - k) * mp.mpf(eps0) for l in range(k + 1)]
    probs = [mp.binomial(k, l) * p ** l * (1 - p) ** (k - l) for l in range(k + 1)]
    return losses, probs


# --- Gaussian: T-fold composition is Gaussian (004 Cor. 8, Thm 9) ------------------------------

@pytest.mark.parametrize("sigma,T", [(1.0, 1), (2.0, 10), (0.8, 3), (5.0, 1000), (20.0, 5000)])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_gaussian_composition_brackets_closed_form(sigma, T, delta):
    mech = dp.Gaussian(sigma) * T
    exact = gaussian_epsilon(delta, math.sqrt(T) / sigma)
    g = mech.epsilon(delta, method="pld")
    assert g.lower <= exact <= g.epsilon
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon + 1e-12
    assert g.method == "pld"


@pytest.mark.parametrize("sigma,T,eps", [(1.0, 4, 1.0), (3.0, 100, 0.5), (1.5, 20, 4.0)])
def test_gaussian_delta_query_brackets_closed_form(sigma, T, eps):
    mu = math.sqrt(T) / sigma
    exact = math.exp(gaussian_log_delta(eps, mu))
    g = (dp.Gaussian(sigma) * T).delta(eps, method="pld")
    assert g.lower <= exact <= g.delta
    assert g.delta - g.lower <= 1e-3 * g.delta


# --- randomized response and the worst-case (eps, delta) pair ---------------------------------

@pytest.mark.parametrize("eps0,k", [(0.1, 1), (0.1, 100), (0.5, 37), (1.0, 10), (0.05, 1000)])
def test_randomized_response_k_fold_brackets_binomial(eps0, k):
    delta = 1e-6
    exact = discrete_epsilon(*rr_k_fold(eps0, k), delta)
    g = (dp.RandomizedResponse.from_epsilon(eps0) * k).epsilon(delta, method="pld")
    assert g.lower <= exact * (1 + 1e-12) and exact <= g.epsilon * (1 + 1e-12)
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon + 1e-12


@pytest.mark.parametrize("eps0,delta0,k", [(0.1, 0.0, 100), (0.2, 1e-7, 50), (1.0, 1e-6, 10)])
def test_worst_case_pair_k_fold_brackets_kov(eps0, delta0, k):
    delta = 1e-5
    exact = dp.composition.kov_epsilon(eps0, delta0, k, delta)
    g = (dp.EpsDelta(eps0, delta0) * k).epsilon(delta, method="pld")
    # kov_epsilon is itself an upper bound within 1e-12 relative of the optimum
    assert g.lower <= exact and exact * (1 - 1e-9) <= g.epsilon
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon


def test_kov_and_pld_agree_both_ways():
    """KOV (004 Sec. 7) against the PLD of randomized response composed k times, in both the
    epsilon(delta) and the delta(epsilon) direction."""
    eps0, k = 0.3, 60
    m = dp.RandomizedResponse.from_epsilon(eps0) * k
    for delta in [1e-3, 1e-6]:
        g = m.epsilon(delta, method="pld")
        kov = dp.composition.kov_epsilon(eps0, 0.0, k, delta)
        assert g.lower <= kov <= g.epsilon * (1 + 1e-9)
    for eps in [1.0, 3.0]:
        g = m.delta(eps, method="pld")
        kov = dp.composition.kov_delta(eps0, 0.0, k, eps)
        assert g.lower <= kov * (1 + 1e-8) and kov <= g.delta * (1 + 1e-8)


# --- small discrete pairs composed exactly ----------------------------------------------------

def exact_composition(losses, probs, T):
    out_l, out_p = [], []
    for combo in itertools.product(range(len(losses)), repeat=T):
        l = sum(losses[i] for i in combo)
        out_l.append(l)
        out_p.append(mp.fprod(probs[i] for i in combo))
    return out_l, out_p


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4), st.integers(1, 3), st.integers(0, 10 ** 6), st.booleans())
# most mass at +inf and one finite atom: the optimistic lowering finds no feasible polygon;
# the pessimistic PMF stands and the lower end is zeros (CI found it)
@example(n=2, T=1, seed=9244, with_inf=True)
def test_random_discrete_pairs_composed_exactly_are_bracketed(n, T, seed, with_inf):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n))
    Q = rng.dirichlet(np.ones(n))
    if with_inf:
        Q[0] = 0.0
        Q /= Q.sum()
    with np.errstate(divide="ignore"):
        L = np.log(P) - np.log(Q)
    ld = LossDistribution(L, P, Q)
    # the composed curve at several eps, both orders of the pair
    for pair in (ld, ld.swapped()):
        d = discretize(pair, 0.07, -80, 80)
        fin = np.isfinite(pair.atom_loss)
        losses = [mp.mpf(float(x)) if f else mp.inf for x, f in zip(pair.atom_loss, fin)]
        probs = [mp.mpf(float(x)) for x in pair.atom_p]
        el, ep = exact_composition(losses, probs, T)
        # compose the discretisations exactly too (small), then compare curves pointwise
        grid = 0.07 * np.arange(d.jlo, d.jhi + 1)
        for which, mass, inf in (("upper", d.upper, d.upper_inf), ("lower", d.lower, d.lower_inf)):
            gl = [mp.mpf(float(x)) for x in grid] + [mp.inf]
            gp = [mp.mpf(float(x)) for x in mass] + [mp.mpf(float(inf))]
            keep = [i for i, x in enumerate(gp) if x > 0]
            gl, gp = [gl[i] for i in keep], [gp[i] for i in keep]
            cl, cp = exact_composition(gl, gp, T)
            for eps in [-1.0, 0.0, 0.3, 1.0, 2.5]:
                true = discrete_delta(el, ep, eps)
                disc = discrete_delta(cl, cp, eps)
                if which == "upper":
                    assert disc >= true - 1e-12
                else:
                    assert disc <= true + 1e-12


def test_exact_discrete_composition_is_bracketed_by_the_engine():
    P = np.array([0.5, 0.3, 0.2])
    Q = np.array([0.2, 0.3, 0.5])
    L = np.log(P / Q)
    ld = LossDistribution(L, P, Q)
    losses = [mp.mpf(float(x)) for x in L]
    probs = [mp.mpf(float(x)) for x in P]
    el, ep = exact_composition(losses, probs, 6)
    exact = discrete_epsilon(el, ep, 1e-3)
    from dpamp.pld.engine import PartPMF, compose
    for h in [0.05, 0.01]:
        d = discretize(ld, h, -int(1 / h) - 2, int(1 / h) + 2)
        res = compose([PartPMF(d, 6)], h, 1.0, target=(exact, math.log(1e-3)))
        assert res.lower.epsilon(1e-3) <= exact <= res.upper.epsilon(1e-3)


# --- subsampled plans: peers and properties --------------------------------------------------

def test_poisson_plan_agrees_with_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    q, sigma, T, delta = 0.01, 1.0, 500, 1e-5
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), T)
    theirs = acc.get_epsilon(delta)          # its pessimistic estimate: an upper bound
    g = (dp.Gaussian(sigma).subsample(dp.Poisson(q)) * T).epsilon(delta, method="pld")
    assert g.lower <= theirs
    assert abs(g.epsilon - theirs) <= 2e-3 * theirs


def test_poisson_plan_agrees_with_prv_accountant():
    pytest.importorskip("prv_accountant")
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism
    q, sigma, T, delta = 0.01, 1.0, 500, 1e-5
    acc = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=sigma,
                                                                 sampling_probability=q)],
                        max_self_compositions=[T], eps_error=0.01, delta_error=1e-9)
    lo, est, up = acc.compute_epsilon(delta=delta, num_self_compositions=[T])
    g = (dp.Gaussian(sigma).subsample(dp.Poisson(q)) * T).epsilon(delta, method="pld")
    assert g.lower <= up and lo <= g.epsilon          # the two brackets intersect
    assert lo - 1e-9 <= g.lower and g.epsilon <= up + 1e-9   # and ours is inside theirs


@settings(max_examples=12, deadline=None)
@given(st.floats(0.6, 3.0), st.floats(1e-3, 0.05), st.integers(1, 400), st.integers(1, 400))
def test_monotone_in_steps_and_rate(sigma, q, t1, t2):
    lo_t, hi_t = sorted([t1, t2])
    base = dp.Gaussian(sigma)
    a = (base.subsample(dp.Poisson(q)) * lo_t).epsilon(1e-5, method="pld", tol=0.02)
    b = (base.subsample(dp.Poisson(q)) * hi_t).epsilon(1e-5, method="pld", tol=0.02)
    c = (base.subsample(dp.Poisson(min(1.0, 2 * q))) * lo_t).epsilon(1e-5, method="pld", tol=0.02)
    assert a.lower <= b.epsilon and a.lower <= c.epsilon
    assert a.lower <= a.epsilon and b.lower <= b.epsilon


@pytest.mark.parametrize("mech", [
    dp.Gaussian(1.0).subsample(dp.Poisson(0.01)),
    dp.Laplace(0.7).subsample(dp.Poisson(0.1)),
    dp.RandomizedResponse(0.7),
    dp.EpsDelta(0.5, 1e-4),
])
def test_discretised_pmfs_keep_e_minus_loss_at_most_one(mech):
    ld = loss_distribution(mech)
    for pair in (ld, ld.swapped()):
        lo, hi = pair.quantile_range(1e-14)
        h = 1e-3
        d = discretize(pair, h, min(-1, math.floor(lo / h) - 1), max(1, math.ceil(hi / h) + 1))
        t = h * (d.jlo + np.arange(d.upper.size))
        assert np.all(d.upper >= 0) and np.all(d.lower >= 0)
        assert float(np.sum(d.upper * np.exp(-t))) <= 1 + 1e-12        # E[e^{-Z}] <= 1
        assert d.upper.sum() + d.upper_inf == pytest.approx(1.0, abs=1e-12)


def test_asymmetric_pair_uses_the_worse_direction():
    # Poisson subsampling under add/remove: the pair and its swap differ; the composed epsilon
    # is the worse of the two orders (004 Thm 34's pair; exact by enumerating 2^6 outcomes)
    step = dp.RandomizedResponse.from_epsilon(1.0).subsample(dp.Poisson(0.3))
    m = step * 6
    ld = loss_distribution(step)
    from dpamp.pld.query import _directions
    assert len(_directions(m)) == 2
    delta = 1e-3
    exact = []
    for pair in (ld, ld.swapped()):
        keep = pair.atom_p > 0
        losses = [mp.mpf(float(x)) for x in pair.atom_loss[keep]]
        probs = [mp.mpf(float(x)) for x in pair.atom_p[keep]]
        exact.append(discrete_epsilon(*exact_composition(losses, probs, 6), delta))
    assert exact[0] != pytest.approx(exact[1], rel=1e-6)       # genuinely asymmetric
    g = m.epsilon(delta, method="pld", tol=1e-2)
    assert g.lower <= max(exact) <= g.epsilon


def test_without_replacement_single_step_matches_profile():
    # one step: the PLD of the symmetric curve reproduces 000 Thm 9's profile
    base = dp.Gaussian(1.0, relation=dp.SUBSTITUTION)
    m = base.subsample(dp.WithoutReplacement(50, 1000))
    for eps in [0.01, 0.05, 0.2]:
        g = m.delta(eps, method="pld")
        prof = float(dp.privacy_profile(m, eps))
        assert g.lower <= prof * (1 + 1e-9) and prof <= g.delta * (1 + 1e-9)


def test_auto_uses_pld_for_compositions_with_loss_distributions():
    m = dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100
    assert m.epsilon(1e-5).method == "pld"
    assert dp.ZCDP(0.1).epsilon(1e-5).method != "pld"          # no PLD: another method


def test_accountant_and_cli_accept_pld_and_tol(capsys):
    import json
    from dpamp import cli
    acc = dp.Accountant().compose(dp.Gaussian(1.0).subsample(dp.Poisson(0.02)), times=300)
    g = acc.epsilon(1e-5, method="pld", tol=1e-2)
    assert g.epsilon - g.lower <= 1e-2
    assert cli.main(["epsilon", "--sigma", "1.0", "--poisson", "0.02", "--steps", "300",
                     "--delta", "1e-5", "--method", "pld", "--tol", "0.01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "pld" and out["epsilon"] - out["lower"] <= 0.01


@pytest.mark.parametrize("tol", [0.0, -1.0, float("nan")])
def test_bad_tol_is_refused(tol):
    with pytest.raises(ValueError, match="tol"):
        (dp.Gaussian(1.0) * 3).epsilon(1e-5, method="pld", tol=tol)


def test_impossible_grid_gives_the_best_bracket_not_a_refusal_nor_a_hang():
    """A tol finer than the largest grid resolves: the PLD returns the best proven bracket it
    reached (the refinement stops at the grid limit), says that tol was not met and why, and
    stays sound (it contains the bracket at the default tol)."""
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 1_000
    g = m.epsilon(1e-5, method="pld", tol=1e-9, max_rounds=3)
    assert "did not reach tol" in g.note and g.lower <= g.epsilon
    ref = m.epsilon(1e-5, method="pld")
    assert g.lower <= ref.epsilon and ref.lower <= g.epsilon


def test_pld_profile_of_a_composition():
    m = dp.Gaussian(2.0) * 4
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    prof = dp.privacy_profile(m, eps)
    exact = np.exp(gaussian_log_delta(eps, 1.0))
    assert np.all(prof >= exact * (1 - 1e-12)) and np.all(prof <= exact * 1.01 + 1e-12)


def test_pure_dp_composition_delta_is_zero_at_its_pure_epsilon():
    m = dp.Laplace(1.0) * 3
    assert m.delta(3.0, method="pld").delta == 0.0
    g = m.epsilon(1e-9, method="pld")
    assert g.epsilon <= 3.0 + 1e-12


# --- parts with mass at +-inf next to parts with other atoms ---------------------------------

def test_worst_case_pair_composed_with_off_grid_atoms_converges_to_the_identity():
    """For one (eps0, delta0) worst-case pair in a composition, delta(eps) = delta0 + (1 -
    delta0) delta_RR(eps) (its loss is +inf w.p. delta0, else that of randomized response), so
    epsilon(delta) of the composition is epsilon_RR((delta - delta0)/(1 - delta0)) of the one
    with randomized response. The Laplace atoms (+-1/2) and the pair's (+-0.3) cannot both be
    on the grid: the optimistic side must still converge (it used to stall, its swapped half
    dipping below the mass at +inf)."""
    d0, delta = 1e-7, 1e-5
    lap = dp.Laplace(2.0) * 7
    g = dp.compose(dp.EpsDelta(0.3, d0), lap).epsilon(delta, method="pld")
    r = dp.compose(dp.RandomizedResponse.from_epsilon(0.3), lap).epsilon(
        (delta - d0) / (1 - d0), method="pld")
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g.lower <= r.epsilon and r.lower <= g.epsilon


def test_swapped_half_keeps_the_mass_at_infinity_in_its_lower_bound():
    ld = loss_distribution(dp.EpsDelta(0.5, 1e-7))
    h = 6.6e-5                                    # 0.5 / h is not an integer
    k = int(0.51 / h) + 1
    d = discretize(ld, h, -k, k)
    # only rounding noise is left to the error budget (it was 8e-5 when the lower polygon's
    # swapped half went below its limit 1e-7 at the atom)
    assert d.lower_slack <= 1e-8


def test_epsilon_is_infinite_below_the_mass_at_infinity():
    # 20 (0.3, 1e-7) pairs put ~2e-6 at loss +inf: no finite epsilon has delta 1e-6
    m = dp.compose(dp.EpsDelta(0.3, 1e-7) * 20, dp.Laplace(2.0) * 7)
    g = m.epsilon(1e-6, method="pld")
    assert g.epsilon == math.inf and g.lower == math.inf


def test_randomized_membership_has_the_exact_loss_distribution_of_randomized_response():
    a = (dp.RandomizedMembership(0.8) * 10).epsilon(1e-6, method="pld")
    b = (dp.RandomizedResponse(0.8) * 10).epsilon(1e-6, method="pld")
    assert a.epsilon == pytest.approx(b.epsilon, rel=1e-12)
    assert a.epsilon - a.lower <= 1e-3 * a.epsilon


# --- the edges of the method's reach ---------------------------------------------------------

@pytest.mark.parametrize("sigma,T", [(1000.0, 10 ** 9), (1e-3, 2)])
def test_gaussian_compositions_far_out_are_one_exact_part(sigma, T):
    # N(mu, 1)^T is N(sqrt(T) mu, 1) (004 Cor. 8): losses in the hundreds of thousands, or a
    # billion steps, are one Gaussian in a few equal parts rather than a refusal
    mu = math.sqrt(T) / sigma
    g = (dp.Gaussian(sigma) * T).epsilon(1e-6, method="pld")
    exact = gaussian_epsilon(1e-6, mu)
    assert g.lower <= exact <= g.epsilon
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon


def test_out_of_reach_queries_fall_back_to_the_next_method():
    from dpamp.accounting.registry import OutOfReach
    m = dp.Gaussian(1.0) * 10
    with pytest.raises(OutOfReach, match="rdp"):
        m.epsilon(1e-300, method="pld")
    g = m.epsilon(1e-300)                      # auto: PLD refuses, RDP answers
    assert g.method == "rdp" and g.epsilon == m.epsilon(1e-300, method="rdp").epsilon


def test_pure_epsilon_caps_the_upper_bound_for_tiny_delta():
    g = (dp.Laplace(1.0) * 5).epsilon(1e-250, method="pld")
    assert g.lower <= 5.0 <= g.epsilon <= 5.0 * (1 + 1e-14)


# --- engine internals: each shortcut checked against the plain computation --------------------

def test_two_atom_pair_composed_thousands_of_times_is_bracketed():
    """Large counts: most spectral coefficients are dropped as proven-negligible; the bracket
    must still hold the exact binomial answer (off-grid atoms, so nothing is exact)."""
    P = np.array([0.6, 0.4])
    Q = np.array([0.45, 0.55])
    L = np.log(P / Q)
    T, delta = 3000, 1e-6
    losses = [k * mp.mpf(float(L[0])) + (T - k) * mp.mpf(float(L[1])) for k in range(T + 1)]
    probs = [mp.binomial(T, k) * mp.mpf(float(P[0])) ** k * mp.mpf(float(P[1])) ** (T - k)
             for k in range(T + 1)]
    exact = discrete_epsilon(losses, probs, delta)
    from dpamp.pld.engine import PartPMF, compose
    from dpamp.pld.query import saddle_for_delta
    ld = LossDistribution(L, P, Q)
    for h in [2e-3, 5e-4]:
        d = discretize(ld, h, math.floor(L[1] / h) - 2, math.ceil(L[0] / h) + 2)
        parts = [PartPMF(d, T)]
        e_est, lam = saddle_for_delta(parts, delta)
        res = compose(parts, h, 0.5 * lam, target=(e_est, math.log(delta)))
        lo, up = res.lower.epsilon(delta), res.upper.epsilon(delta)
        assert lo <= exact <= up
        assert up - lo < 0.05 * exact


def test_midpoint_tangents_keep_the_lower_curve_below_and_tighter_than_the_upper():
    """One Gaussian step, curves checked against the closed form at the knots, midpoints and
    quarter points: lower <= exact <= upper, and the lower curve's mean error is below the
    upper's (with tangents at the cell ends only it was about twice the upper's)."""
    mu, h = 1.0, 0.02
    ld = loss_distribution(dp.Gaussian(1.0 / mu))
    lo, hi = ld.quantile_range(1e-16)
    d = discretize(ld, h, math.floor(lo / h) - 1, math.ceil(hi / h) + 1)
    t = h * (d.jlo + np.arange(d.upper.size))
    eps = np.arange(0.0, 3.0, h / 4)
    exact = np.exp(gaussian_log_delta(eps, mu))

    def curve(m, inf):
        return np.array([np.sum(m * -np.expm1(np.minimum(e - t, 0.0))) + inf for e in eps])
    up, low = curve(d.upper, d.upper_inf), curve(d.lower, d.lower_inf)
    assert np.all(low <= exact + 1e-15) and np.all(up >= exact - 1e-15)
    assert np.mean(exact - low) < 0.8 * np.mean(up - exact)


def test_pessimistic_only_discretisation_is_the_same_upper_bound():
    ld = loss_distribution(dp.Gaussian(1.3).subsample(dp.Poisson(0.02)))
    lo, hi = ld.quantile_range(1e-15)
    h = 1e-3
    jlo, jhi = math.floor(lo / h) - 1, math.ceil(hi / h) + 1
    both, only = discretize(ld, h, jlo, jhi), discretize(ld, h, jlo, jhi, optimistic=False)
    np.testing.assert_allclose(only.upper, both.upper, rtol=1e-12, atol=1e-300)
    assert only.upper_inf == both.upper_inf
    assert not only.lower.any()


@pytest.mark.parametrize("mech", [dp.Gaussian(0.9).subsample(dp.Poisson(0.003)),
                                  dp.Laplace(1.0).subsample(dp.Poisson(0.05)), dp.Gaussian(2.0)])
@pytest.mark.parametrize("tail", [1e-9, 1e-17])
def test_quantile_range_tails_are_within_the_budget(mech, tail):
    for pair in (loss_distribution(mech), loss_distribution(mech).swapped()):
        a, b = pair.quantile_range(tail)
        sp, sq = pair.sf(np.array([b]))
        cp, cq = pair.cdf(np.array([a]))
        assert max(sp[0], sq[0], cp[0], cq[0]) <= tail * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.floats(1e-5, 0.5), st.integers(0, 10 ** 6))
def test_grid_log_mgf_equals_the_direct_sum(n, h, seed):
    from dpamp.core.logspace import logsumexp
    from dpamp.pld.engine import grid_log_mgf
    rng = np.random.default_rng(seed)
    m = rng.exponential(size=n) * (rng.random(n) < 0.8) * 10.0 ** rng.integers(-250, 0, n)
    t0 = float(rng.normal())
    s = np.concatenate([-np.geomspace(1e-2, 60, 5), [0.0], np.geomspace(1e-2, 60, 5)])
    with np.errstate(divide="ignore"):
        lm = np.log(m)
    ref = np.array([logsumexp(lm + v * (t0 + h * np.arange(n))) for v in s])
    got = grid_log_mgf(m, t0, h, s)
    fin = np.isfinite(ref)
    assert np.array_equal(fin, np.isfinite(got))
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-13, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=40), st.integers(0, 10 ** 6))
def test_lower_hull_equals_the_points_below_every_chord(bumps, seed):
    """Independent of the monotone chain it is built on: a point is a vertex of the lower hull
    iff it lies strictly below every chord between a point on its left and one on its right
    (brute force over all chords; the ends have none)."""
    from dpamp.core.hull import lower_hull as _lower_hull
    rng = np.random.default_rng(seed)
    n = len(bumps)
    x = np.cumsum(rng.random(n) + 1e-3)
    y = (x - x.mean()) ** 2 + np.array(bumps) * (rng.random(n) < 0.3)
    hull = [i for i in range(n)
            if all((x[b] - x[a]) * (y[i] - y[a]) < (y[b] - y[a]) * (x[i] - x[a])
                   for a in range(i) for b in range(i + 1, n))]
    assert list(_lower_hull(x, y)) == hull


def test_cached_state_answers_the_same_query_only():
    """A Poisson plan (two directions, the second coarse and pessimistic only) answers the same
    query again from its cached PMFs, bit for bit; another delta is composed afresh (a state of
    another query would give other digits: answers never depend on what ran before)."""
    from dpamp.pld.query import _CACHE, epsilon_bracket
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 300
    _CACHE.store.clear()
    first = epsilon_bracket(m, 1e-5)
    again = epsilon_bracket(m, 1e-5)
    assert again.rounds == 0 and (again.upper, again.lower) == (first.upper, first.lower)
    other = epsilon_bracket(m, 1e-6)
    _CACHE.store.clear()
    fresh = epsilon_bracket(m, 1e-6)
    assert other.rounds >= 1 and (other.upper, other.lower) == (fresh.upper, fresh.lower)
    assert other.upper - other.lower <= 1e-3 * other.upper


# --- review findings: each test fails on the code before its fix ------------------------------

def test_mass_at_infinity_below_an_ulp_of_the_finite_mass_is_kept():
    """delta0 = 1e-17 per step is below an ulp of the finite mass 1 - 1e-17: composed 100 times
    the mass at +inf is ~1e-15 > 1e-16, so no finite epsilon has delta <= 1e-16 (it was lost,
    and 99.996 was reported); a Gaussian's tail above the window is kept the same way (delta
    at eps = 10 was reported 0, the truth is 9.8e-23)."""
    from dpamp.accounting.registry import OutOfReach
    assert (dp.EpsDelta(1.0, 1e-17) * 100).epsilon(1e-16, method="pld").epsilon == math.inf
    true = float(mp.ncdf(0.5 - 10) - mp.exp(10) * mp.ncdf(-0.5 - 10))
    try:
        assert dp.Gaussian(1.0).delta(10.0, method="pld").delta >= true
    except OutOfReach:
        pass


def test_discounted_suffix_keeps_tiny_masses():
    """C_k = sum_{j>=k} m_j e^{-(j-k)h} for masses 1e-50 .. 1e-99: direct sums; the lower
    bound A - e^{eps-t_k} C_k built on it stays below the exact delta."""
    from dpamp.pld.pmf import GridPMF, _discounted_suffix
    h, n = 1.0, 560
    t = h * np.arange(n)
    m = 1e-50 * np.exp(-0.2 * t)
    want = np.array([np.sum(m[k:] * np.exp(-(np.arange(k, n) - k) * h)) for k in range(n)])
    np.testing.assert_allclose(_discounted_suffix(m, h), want, rtol=1e-13)
    pmf = GridPMF(h, 0, m, 0.0, np.zeros(n + 1), upper=False)
    for eps in (300.5, 540.5):
        exact = np.sum(m[t > eps] * -np.expm1(eps - t[t > eps]))
        assert pmf.delta(np.array([eps]))[0] <= exact * (1 + 1e-12)


@pytest.mark.parametrize("upper", [True, False])
def test_scalar_and_grid_readings_are_the_vectorised_bits(upper):
    """GridPMF._delta1 (one eps, on scalars) and _grid_raw (the grid points, by slices) give
    the same bits as delta() and _raw() on arrays: at, between, below and beyond the grid
    points, with signed masses (a lower PMF), tiny and zero masses and a mass at +inf."""
    from dpamp.pld.pmf import GridPMF
    rng = np.random.default_rng(5)
    for n, jlo, h in ((1, 0, 0.3), (2, -1, 0.01), (57, 3, 0.05), (4000, -7, 1e-3)):
        m = rng.exponential(size=n) * np.exp(-rng.uniform(0, 700, n))
        m[rng.random(n) < 0.1] = 0.0
        if not upper:
            m[rng.random(n) < 0.2] *= -1e-17
        err = np.abs(rng.normal(size=n + 1)) * 1e-16
        pmf = GridPMF(h, jlo, m, 1e-9 * rng.random(), err, upper)
        t = pmf.t
        assert np.array_equal(pmf._grid_raw(), pmf._raw(t, np.arange(1, n + 1)))
        mids = np.concatenate([t, t + 0.5 * h, t - 1e-15, [t[0] - 1.0, t[-1] + 3 * h, 0.0]])
        want = pmf.delta(mids)
        got = np.array([pmf._delta1(float(e)) for e in mids])
        assert np.array_equal(got.view(np.int64), want.view(np.int64))


def _epsilon_by_envelope(pmf, delta):
    """GridPMF.epsilon as it read the whole running envelope (the reference of the test
    below): the first grid point t_k > 0 whose envelope value is <= delta, then the same
    closed form and steps."""
    from dpamp.pld.pmf import GridPMF
    fresh = GridPMF(pmf.h, pmf.jlo, pmf.mass, pmf.inf, pmf.err, pmf.upper)
    env = fresh._grid_envelope()
    n = fresh.mass.size
    if fresh._delta1(0.0) <= delta:
        return 0.0, None
    i0 = int(np.searchsorted(fresh.t, 0.0, side="right"))
    ok = env[i0:] <= delta
    k = i0 + int(np.argmax(ok)) if ok.size else n
    return (math.inf, None) if k >= n or not ok[k - i0] else (None, k)


@pytest.mark.parametrize("upper", [True, False])
def test_point_readings_without_the_running_envelope_are_its_bits(upper):
    """A fresh PMF's point readings (_delta1, _env_at: reductions over the raw values) and
    the first grid point its epsilon reads (_first_below: from the raw values) are those of
    the running envelope (np.minimum / np.maximum.accumulate over the grid), bit for bit: on
    signed, tiny and zero masses, grids across 0 and above it, a mass at +inf, error budgets
    large enough to make the raw values non-monotone, and deltas across the whole range."""
    from dpamp.pld.pmf import GridPMF
    rng = np.random.default_rng(11)
    for n, jlo, h in ((1, 0, 0.3), (2, -1, 0.01), (57, 3, 0.05), (900, -40, 1e-2),
                      (4000, -7, 1e-3)):
        m = rng.exponential(size=n) * np.exp(-rng.uniform(0, 40, n))
        m[rng.random(n) < 0.1] = 0.0
        if not upper:
            m[rng.random(n) < 0.2] *= -1e-3
        m = m / m.sum()
        err = np.abs(rng.normal(size=n + 1)) * 10.0 ** rng.uniform(-16, -3, n + 1)
        inf = 1e-9 * rng.random()
        if n > 2:
            # signed zeros: raw values -0.0 and 0.0 both, whose order decides the envelope's
            m[-n // 3:] = -0.0
            m[-n // 6:] = 0.0
            err[-n // 3:] = 0.0
            inf = 0.0 if upper else -0.0
        args = (h, jlo, m, inf, err, upper)
        ref = GridPMF(*args)
        env = ref._grid_envelope()
        t = ref.t
        mids = np.concatenate([t, t + 0.5 * h, t - 1e-15, [t[0] - 1.0, t[-1] + 3 * h, 0.0]])
        want = ref.delta(mids)
        lazy = GridPMF(*args)
        got = np.array([lazy._delta1(float(e)) for e in mids])
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
        assert getattr(lazy, "_env", None) is None      # (read without the running envelope)
        assert all(lazy._env_at(j) == env[j] for j in range(n))
        for delta in np.concatenate([[0.0, 1.0], np.sort(rng.choice(want, 25))]):
            early, k = _epsilon_by_envelope(ref, float(delta))
            pmf = GridPMF(*args)
            if pmf._delta1(0.0) <= delta:
                assert early == 0.0
                continue
            i0 = int(np.searchsorted(t, 0.0, side="right"))
            got_k = pmf._first_below(i0, float(delta))
            assert (got_k >= n and early == math.inf) or got_k == k
    # raw values with zeros of both signs (the running pass keeps one of them by its order)
    g = np.array([0.5, -0.0, 0.3, 0.0, -0.0, 0.2, 0.0, 0.0, -0.0, 0.1])
    for lay in (g, -g[::-1] + 0.0, np.abs(g) * 0.0, -(np.abs(g) * 0.0)):
        pmf = GridPMF(0.1, 0, np.zeros(lay.size), 0.0, np.zeros(lay.size + 1), upper)
        pmf._graw = lay.copy()
        x = lay.copy()
        env = np.minimum.accumulate(x, out=x) if upper else \
            np.maximum.accumulate(x[::-1], out=x[::-1])[::-1]
        got = np.array([pmf._env_at(j) for j in range(lay.size)])
        assert np.array_equal(got.view(np.int64), env.view(np.int64))


def test_atom_just_above_a_grid_point_is_not_moved_down():
    """An atom at 5h (1 + 4e-10) is above the grid point 5h: the pessimistic PMF must not
    put it on 5h (it did, within a 1e-9 snap), so delta(5h) stays >= the exact value."""
    from dpamp.pld import loss as L
    from dpamp.pld.engine import PartPMF, compose
    h = 0.1
    a = 5 * h * (1 + 4e-10)
    d = discretize(L.eps_delta(a, 0.0), h, -8, 8)
    pm = compose([PartPMF(d, 1)], h, 0.5)
    exact = -math.expm1(0.5 - a) / (1 + math.exp(-a))
    assert pm.upper.delta(np.array([0.5]))[0] >= exact


def test_pure_epsilon_of_a_composition_is_summed_exactly():
    """3 x 0.7 sums to 2.0999999999999996 in floats, below the exact 2.1 (as a sum of the
    float 0.7s): delta there is not 0. An exact sum (3 x 1.0) keeps its shortcut."""
    from fractions import Fraction
    from dpamp.accounting.registry import OutOfReach
    from dpamp.pld.query import _pure_epsilon
    assert Fraction(_pure_epsilon(dp.PureDP(0.7) * 3)) >= 3 * Fraction(0.7)
    assert _pure_epsilon(dp.Laplace(1.0) * 3) == 3.0
    try:
        assert dp.PureDP(0.7).__mul__(3).delta(3 * 0.7, method="pld").delta > 0.0
    except OutOfReach:
        pass


def test_pld_profile_at_and_beyond_the_pure_epsilon():
    """pld_profile with its median epsilon beyond the pure epsilon (it crashed): 0 there, the
    closed form below."""
    from dpamp.pld import pld_profile
    got = pld_profile(dp.Laplace(1.0), [0.5, 2.0, 3.0])
    exact = -math.expm1(-0.25)                # Laplace eps0 = 1 at eps = 1/2: 1 - e^{-1/4}
    assert got[1] == got[2] == 0.0
    assert exact <= got[0] <= exact * (1 + 1e-2)


def test_without_replacement_composition_reports_no_unproven_lower_bound():
    """Sampling without replacement composes a symmetrised envelope of both orders: its
    optimistic PMF is no lower bound on any actual pair's composition (12.48 was reported at
    T = 10 where the worst actual pair gives at most 12.26); one step keeps its lower bound."""
    base = dp.Gaussian(1.0, sensitivity=2.0, relation=dp.SUBSTITUTION)
    m1 = base.subsample(dp.WithoutReplacement(10, 100))
    assert m1.epsilon(1e-5, method="pld").lower is not None
    g = (m1 * 10).epsilon(1e-5, method="pld")
    assert g.lower is None and g.epsilon >= 12.26


def test_refinement_stops_where_the_grid_no_longer_narrows_the_bracket(monkeypatch):
    """One epoch of balls-in-bins at delta 1e-12 with the epoch's former tail charges (1e-14,
    ~1 % of delta): the bracket is decided by the epoch's own bounds, and finer engine grids
    widened it (1.17e-3 -> 1.45e-3 over 7 rounds and the whole 10 s budget). Two rounds that
    do not narrow it end the refinement, with the best bracket and a note saying why."""
    from dpamp.amplification.allocation import pld as A
    from dpamp.pld.query import _CACHE, epsilon_bracket
    monkeypatch.setattr(A, "CUT_TAILS", (1e-14, 1e-12, 1e-10))
    A._epoch.cache_clear()
    _CACHE.store.clear()
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, 1000))
    b = epsilon_bracket(m, 1e-12)
    assert not b.met and "no longer narrows" in b.note and b.rounds <= 4
    assert 0.87 < b.lower and b.upper - b.lower < 1.5e-3
    A._epoch.cache_clear()
    _CACHE.store.clear()


def test_rounds_that_prove_nothing_do_not_end_the_refinement():
    """The stop after two rounds that do not narrow the gap counts finite gaps only: rounds
    whose upper bound is still infinite (nothing proven yet) go on refining."""
    from dpamp.pld import query as Qy
    dirs = Qy._directions(dp.Gaussian(1.0) * 10)
    seen = []

    def compute(h, tilt, grid_tol, prev):
        seen.append(h)
        return Qy.QueryState(0.01 if h is None else h, True, [])

    def evaluate(state):
        k = len(seen)
        state.last = (math.inf, 0.0) if k < 4 else (1.0, 1.0)
        return Qy.Bracket(1.0, 1.0, state.h, 0) if k >= 4 else None
    b = Qy._refine(dirs, ("test-infinite-gap",), None, (None, Qy.MAX_ROUNDS), "epsilon",
                   compute, evaluate)
    assert len(seen) == 4 and b.met
