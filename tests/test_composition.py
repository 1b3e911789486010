"""Composition theorems of paper 004: basic (Thm 1), advanced (Thms 18, 22), optimal KOV (Sec. 7),
checked against mpmath evaluations, brute-force enumeration of worst-case pairs, and each other.
Also the relation rules (Sec. 6.2, Lemma 33.7), the worst-case EpsDelta mechanism, dp.compare
and `dpamp compare`."""
import io
import functools
import itertools
import json
import math
from contextlib import redirect_stdout

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import norm

import dpamp as dp
from dpamp.theorems import composition as C
from dpamp.core import relation_rules as R
from dpamp.theorems import zcdp as Z



@pytest.fixture(autouse=True)
def _mp_precision():
    """30 digits for the mpmath references, restored afterwards (mpmath precision is global
    and other test modules rely on theirs)."""
    with mp.workdps(30):
        yield
DELTA = 1e-6
KS = [1, 10, 100, 1000]


# --- independent references (mpmath) ---------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _rr_pmfs(eps0, k):
    """k-fold randomized response with truth probability p = e^eps0/(1+e^eps0): the number l of
    outputs agreeing with x has P(l) = C(k,l) p^l (1-p)^(k-l) under x, Q(l) with p and 1-p
    swapped under the neighbour (l is a sufficient statistic)."""
    e = mp.mpf(eps0)
    p = mp.e ** e / (1 + mp.e ** e)
    return [(mp.binomial(k, l) * p ** l * (1 - p) ** (k - l),
             mp.binomial(k, l) * (1 - p) ** l * p ** (k - l)) for l in range(k + 1)]


def mp_kov_delta(eps0, k, eps, delta0=0):
    """Hockey-stick divergence of the k-fold worst-case pair, by hand: sum over l of
    P(l) - e^eps Q(l) where positive, plus the infinite-loss mass 1 - (1-delta0)^k."""
    w = mp.e ** mp.mpf(eps)
    s = mp.fsum(max(mp.mpf(0), P - w * Q) for P, Q in _rr_pmfs(eps0, k))
    keep = (1 - mp.mpf(delta0)) ** k
    return 1 - keep + keep * s


def mp_bisect(f, target, lo, hi, n=90):
    """smallest x in [lo, hi] with f(x) <= target, f non-increasing (mpmath); the bracket is
    checked first (f(lo) > target >= f(hi)), so a narrow bracket around a candidate is fine."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    assert f(hi) <= target and (lo == 0 or f(lo) > target)
    for _ in range(n):
        mid = (lo + hi) / 2
        if f(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def mp_gauss_delta(mu, eps):
    """004 Cor. 8/10: delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)."""
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(mu / 2 - eps / mu) - mp.e ** eps * mp.ncdf(-mu / 2 - eps / mu)


def mp_zcdp_eps(rho, delta):
    """004 Prop. 14 improved, solved independently: h(t) = t(t+1)rho - eps t - log(1+t)
    - t log(1 + 1/t) is convex with h'(t) = (2t+1) rho - eps - log(1 + 1/t); for each eps find t*
    by bisection on h', then bisect eps so that exp(h(t*)) = delta."""
    rho, delta = mp.mpf(rho), mp.mpf(delta)

    def log_delta(eps):
        lo, hi = mp.mpf("1e-30"), mp.mpf(10) ** 8
        for _ in range(200):
            mid = (lo + hi) / 2
            if (2 * mid + 1) * rho - eps - mp.log(1 + 1 / mid) > 0:
                hi = mid
            else:
                lo = mid
        t = (lo + hi) / 2
        return t * (t + 1) * rho - eps * t - mp.log(1 + t) - t * mp.log(1 + 1 / t)

    return mp_bisect(lambda e: log_delta(e), mp.log(delta), 0, rho + 2 * mp.sqrt(rho * mp.log(1 / delta)) + 1)


# --- Figure 1 ----------------------------------------------------------------------------------

FIG1 = {}


@pytest.mark.parametrize("k", KS)
def test_figure1_k_fold_point_one_dp(k):
    """004 Figure 1: k-fold 0.1-DP at delta = 1e-6 by basic (Thm 1), advanced (Thm 18), optimal
    (KOV), zCDP improved (Props 16 + 14) and the Gaussian with the variance of Laplace(10)
    (Cor. 10), each against an independent mpmath evaluation."""
    mech = dp.PureDP(0.1) * k
    # basic: k * 0.1
    assert mech.epsilon(DELTA, method="basic").epsilon == pytest.approx(0.1 * k, rel=1e-15)
    # Theorem 18 closed form at 40 digits
    s = mp.mpf(k) * mp.mpf("0.01")
    thm18 = s / 2 + mp.sqrt(2 * mp.log(1 / mp.mpf(DELTA)) * s)
    got18 = C.advanced_pure([0.1], DELTA, counts=k)
    assert float(thm18) == pytest.approx(got18, rel=1e-12)
    assert mech.epsilon(DELTA, method="advanced").epsilon == pytest.approx(min(0.1 * k, float(thm18)),
                                                                           rel=1e-12)
    # KOV: by-hand binomial hockey stick, inverted by mpmath bisection
    got_kov = mech.epsilon(DELTA, method="kov").epsilon
    kov_ref = mp_bisect(lambda e: mp_kov_delta(0.1, k, e), DELTA, got_kov * (1 - 1e-6), got_kov,
                        n=40)
    assert got_kov >= float(kov_ref) * (1 - 1e-12)           # an upper bound ...
    assert got_kov == pytest.approx(float(kov_ref), rel=1e-9)  # ... and the optimum
    # zCDP improved, rho = k * 0.1^2 / 2
    z_ref = float(mp_zcdp_eps(k * 0.005, DELTA))
    got_z = mech.epsilon(DELTA, method="zcdp").epsilon
    assert got_z >= z_ref * (1 - 1e-12) and got_z == pytest.approx(z_ref, rel=1e-8)
    # Gaussian with the variance of Laplace(10): sigma^2 = 2 * 10^2, rho = k / 400
    mu = math.sqrt(k / 200.0)
    g_ref = float(mp_bisect(lambda e: mp_gauss_delta(mu, e), DELTA, 0, 60, n=70))
    g = (dp.Gaussian(math.sqrt(200.0)) * k).epsilon(DELTA)
    assert g.epsilon >= g_ref * (1 - 1e-9)  # whatever method auto picks, it is an upper bound
    assert g.epsilon <= Z.epsilon_improved(k / 400.0, DELTA) * (1 + 1e-6)
    FIG1[k] = dict(basic=0.1 * k, thm18=float(thm18), kov=got_kov, zcdp=got_z, gauss=g_ref)
    # the ordering the figure shows
    assert got_kov <= got_z <= float(thm18) * (1 + 1e-12)
    assert got_kov <= min(0.1 * k, float(thm18))
    if k >= 100:
        assert g_ref < got_kov and float(thm18) < 0.1 * k


def test_figure1_values():
    """Pin the numbers read off 004 Figure 1 (k = 1000): basic 100, Thm 18 ~ 21.6, KOV ~ 19.3,
    zCDP ~ 20.6."""
    m = dp.PureDP(0.1) * 1000
    assert m.epsilon(DELTA, method="advanced").epsilon == pytest.approx(21.6226, abs=1e-3)
    assert m.epsilon(DELTA, method="kov").epsilon == pytest.approx(19.3447, abs=1e-3)
    assert m.epsilon(DELTA, method="zcdp").epsilon == pytest.approx(20.5519, abs=1e-3)


# --- KOV ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps0,k", [(0.5, 20), (1.0, 7), (0.05, 400), (2.0, 3)])
def test_kov_equals_exact_randomized_response_composition_both_ways(eps0, k):
    """KOV is exact for randomized response (the worst case of pure DP): delta(eps) equals the
    brute-force hockey stick of the k-fold RR output distribution, and eps(delta) its inverse."""
    rr = dp.RandomizedResponse.from_epsilon(eps0) * k
    # the mechanism's own epsilon: log(p / (1 - p)) of the stored float p, which is not eps0
    # exactly (the reference must describe the mechanism that was accounted)
    p = mp.mpf(rr.parts()[0][0].p)
    true_eps0 = mp.log(p / (1 - p))
    for eps in [0.0, 0.3 * eps0 * math.sqrt(k), eps0 * math.sqrt(k), 0.9 * eps0 * k]:
        ref = float(mp_kov_delta(true_eps0, k, eps))
        got = rr.delta(eps, method="kov").delta
        assert got >= ref * (1 - 1e-14)
        assert got == pytest.approx(ref, rel=1e-8, abs=1e-300)
    for delta in [1e-2, 1e-5, 1e-9]:
        got = rr.epsilon(delta, method="kov").epsilon
        ref = float(mp_bisect(lambda e: mp_kov_delta(true_eps0, k, e), delta, got * (1 - 1e-6),
                              got, n=40))
        assert got >= ref * (1 - 1e-12) and got == pytest.approx(ref, rel=1e-9, abs=1e-12)
        # and the round trip: delta at the reported epsilon is within the target
        assert float(mp_kov_delta(true_eps0, k, got)) <= delta


def test_kov_against_pld_if_available():
    """KOV vs the PLD of randomized response composed k times (when the PLD method exists):
    the PLD bracket [lower, epsilon] must contain the exact KOV value."""
    rr = dp.RandomizedResponse.from_epsilon(0.5) * 50
    if "pld" not in dp.available_methods(rr):
        pytest.skip("pld method not available yet")
    kov = rr.epsilon(1e-6, method="kov").epsilon
    g = rr.epsilon(1e-6, method="pld")
    assert g.epsilon >= kov * (1 - 1e-9)
    if g.lower is not None:
        assert g.lower <= kov * (1 + 1e-9)
    d_kov = rr.delta(2.0, method="kov").delta
    gd = rr.delta(2.0, method="pld")
    assert gd.delta >= d_kov * (1 - 1e-9)


def _worst_case_pair(eps, delta):
    """004 Cor. 24 worst-case (eps, delta) randomized response R(0), R(1) over 4 outcomes
    (b, top/bot)."""
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    P = {"0b": delta, "0t": a, "1t": b, "1b": 0.0}
    Q = {"1b": delta, "1t": a, "0t": b, "0b": 0.0}
    return P, Q


def brute_k_fold_delta(eps0, delta0, k, eps):
    P, Q = _worst_case_pair(eps0, delta0)
    keys = list(P)
    tot = mp.mpf(0)
    for out in itertools.product(keys, repeat=k):
        p = mp.fprod(mp.mpf(P[o]) for o in out)
        q = mp.fprod(mp.mpf(Q[o]) for o in out)
        tot += max(mp.mpf(0), p - mp.e ** eps * q)
    return tot


@pytest.mark.parametrize("eps0,delta0,k", [(0.3, 1e-3, 5), (1.0, 0.01, 4)])
def test_kov_with_delta_matches_enumeration_of_worst_case(eps0, delta0, k):
    """KOV with delta0 > 0 vs enumerating all 4^k outcomes of the k-fold worst-case pair."""
    for eps in [0.0, 0.5, 1.2, eps0 * k]:
        ref = float(brute_k_fold_delta(eps0, delta0, k, eps))
        got = C.kov_delta(eps0, delta0, k, eps)
        assert got >= ref * (1 - 1e-13) and got == pytest.approx(ref, rel=1e-8)
        assert (dp.EpsDelta(eps0, delta0) * k).delta(eps, method="kov").delta == got


def test_kov_unreachable_delta_is_infinite():
    # the infinite-loss mass 1 - (1 - 1e-3)^10 ~ 0.00996 exceeds the target
    assert C.kov_epsilon(0.1, 1e-3, 10, 1e-3) == math.inf
    assert C.kov_epsilon(0.1, 0.0, 10, 0.9) == 0.0


# --- Theorem 22 --------------------------------------------------------------------------------

def test_thm22_heterogeneous_by_hand():
    e = [0.1, 0.2, 0.05]
    d = [1e-7, 0.0, 2e-7]
    c = [10, 5, 100]
    delta = 1e-4
    s = 10 * 0.01 + 5 * 0.04 + 100 * 0.0025
    dprime = delta - (10e-7 + 200e-7)
    hand = min(10 * 0.1 + 5 * 0.2 + 100 * 0.05, s / 2 + math.sqrt(2 * math.log(1 / dprime) * s))
    got = C.advanced(e, d, delta, counts=c)
    assert got >= hand and got == pytest.approx(hand, rel=1e-10)
    # the inverse gives back a delta at which the forward theorem certifies the epsilon
    dd = C.advanced_delta(e, d, got * 1.001, counts=c)
    assert dd <= delta and C.advanced(e, d, dd, counts=c) <= got * 1.001 * (1 + 1e-9)


def test_thm22_refuses_delta_not_above_the_parts():
    with pytest.raises(ValueError, match="sum of the parts' deltas"):
        C.advanced([0.1], [0.125], 0.25, counts=2)  # delta = sum delta_j exactly: delta' = 0
    # the delta budget is summed exactly: 10 x 1e-6 (float) is below 1e-5 (float), though a
    # float sum gives 9.999999999999999e-06 < 1e-5 and could be fooled the other way round
    # (the answer is the basic sum 10 x 0.1, which for the double 0.1 exceeds 1 by 5.6e-17 and
    # is rounded up to the next float: an upper bound, never below the exact sum)
    assert C.advanced([0.1], [1e-6], 1e-5, counts=10) <= math.nextafter(1.0, 2.0)
    # at delta = sum delta_j the method falls back to basic composition (Thm 1)
    g = (dp.EpsDelta(0.1, 0.125) * 2).epsilon(0.25, method="advanced")
    assert g.epsilon == pytest.approx(0.2) and "Thm 1" in g.source
    with pytest.raises(ValueError, match="sum of the parts' deltas"):
        C.advanced([0.1], [1e-6], 5e-6, counts=10)
    m = dp.EpsDelta(0.1, 1e-6) * 10
    with pytest.raises(ValueError, match="sum of the parts' deltas"):
        m.epsilon(5e-6, method="advanced")
    with pytest.raises(ValueError, match="sum of the parts' deltas"):
        m.epsilon(5e-6, method="basic")
    # compare skips the failing methods instead of raising; PLD and KOV answer "no finite
    # epsilon" (the mass at +inf, 1 - (1 - 1e-6)^10, exceeds delta)
    gs = dp.compare(m, delta=5e-6)
    assert [(g.method, g.epsilon) for g in gs] == [("pld", math.inf), ("kov", math.inf)]
    assert {g.method for g in dp.compare(m, delta=1e-4)} == {"pld", "kov", "advanced", "basic"}


def test_bad_inputs():
    with pytest.raises(ValueError, match="epsilons"):
        C.basic([-0.1])
    with pytest.raises(ValueError, match="deltas"):
        C.basic([0.1], [1.5])
    with pytest.raises(ValueError, match="delta"):
        C.advanced_pure([0.1], 0.0)
    with pytest.raises(ValueError, match="k"):
        C.kov_delta(0.1, 0.0, 0, 1.0)
    with pytest.raises(ValueError, match="delta"):
        dp.EpsDelta(0.1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        dp.EpsDelta(-1, 0.1)


# --- properties ---------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(eps0=st.floats(0.005, 2.0), k=st.integers(1, 800), delta=st.floats(1e-12, 1e-2),
       extra=st.integers(1, 200))
def test_monotone_in_k_and_ordered(eps0, k, delta, extra):
    """Every bound grows with k, and KOV (optimal) <= advanced (Thm 18 min basic) <= basic;
    the zCDP route (Props 16 + 14) is a valid bound too, so KOV <= zcdp."""
    for f in (lambda k: C.basic([eps0], counts=k)[0],
              lambda k: C.advanced_pure([eps0], delta, counts=k),
              lambda k: C.kov_epsilon(eps0, 0.0, k, delta),
              lambda k: Z.epsilon_improved(k * eps0 ** 2 / 2, delta)):
        assert f(k) <= f(k + extra) * (1 + 1e-9)
    kov = C.kov_epsilon(eps0, 0.0, k, delta)
    adv = C.advanced([eps0], [0.0], delta, counts=k)
    bas = C.basic([eps0], counts=k)[0]
    assert kov <= adv * (1 + 1e-9) and adv <= bas
    assert kov <= Z.epsilon_improved(k * eps0 ** 2 / 2, delta) * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(eps0=st.floats(0.01, 1.5), delta0=st.floats(0.0, 1e-4), k=st.integers(1, 300),
       eps=st.floats(0.0, 10.0))
def test_kov_delta_below_advanced_delta(eps0, delta0, k, eps):
    """Optimal composition never needs more delta than Thm 22 at the same epsilon."""
    assert C.kov_delta(eps0, delta0, k, eps) <= C.advanced_delta([eps0], [delta0], eps, counts=k) \
        * (1 + 1e-8) + 1e-300


# --- EpsDelta, methods, compare, CLI -----------------------------------------------------------

def test_eps_delta_mechanism():
    m = dp.EpsDelta(0.5, 1e-6)
    assert m.pure_epsilon() == math.inf and not m.has_rdp()
    with pytest.raises(NotImplementedError):
        m.rdp(2.0)
    assert "rdp" not in dp.available_methods(m * 3)
    assert dp.available_methods(m * 3)[:1] == ["kov"] or "pld" in dp.available_methods(m * 3)
    losses, probs = m.privacy_loss_atoms()
    assert losses == (0.5, -0.5, math.inf) and sum(probs) == pytest.approx(1.0)
    # E[e^{-Z}] = 1 on the finite part... minus the infinite-loss mass (DESIGN invariant)
    assert sum(q * math.exp(-z) for z, q in zip(losses, probs)) == pytest.approx(1 - 1e-6)
    pure = dp.EpsDelta(0.5, 0.0)
    assert pure.pure_epsilon() == 0.5
    assert pure.rdp(3.0) == pytest.approx(dp.PureDP(0.5).rdp(3.0))
    # a mix of equal guarantees is homogeneous: KOV applies
    mix = dp.compose(dp.Laplace(10.0) * 3, dp.PureDP(0.1) * 7)
    assert mix.epsilon(1e-6, method="kov").epsilon == (dp.PureDP(0.1) * 10).epsilon(1e-6, method="kov").epsilon
    het = dp.compose(dp.Laplace(10.0) * 3, dp.PureDP(0.2) * 7)
    assert "kov" not in dp.available_methods(het)
    assert "gaussian" not in dp.available_methods(dp.Gaussian(1.0))
    assert "basic" not in dp.available_methods(dp.Gaussian(1.0))


def test_compare_lists_one_guarantee_per_method():
    m = dp.PureDP(0.1) * 100
    gs = dp.compare(m, delta=1e-6)
    names = [g.method for g in gs]
    assert {"rdp", "zcdp", "kov", "advanced", "basic"} <= set(names)
    assert len(names) == len(set(names))
    assert all(isinstance(g, dp.Guarantee) and g.delta == 1e-6 for g in gs)
    kov = next(g for g in gs if g.method == "kov").epsilon
    assert all(g.epsilon >= kov * (1 - 1e-9) for g in gs if g.lower is None or g.method != "pld")


def test_cli_compare_table_and_json():
    from dpamp.cli.main import main
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["compare", "--sigma", "2.0", "--steps", "10", "--delta", "1e-6"]) == 0
    text = buf.getvalue()
    assert "method" in text and "zcdp" in text and "rdp" in text
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["compare", "--sigma", "2.0", "--steps", "10", "--delta", "1e-6", "--json"]) == 0
    out = json.loads(buf.getvalue())
    methods = {r["method"]: r for r in out["results"]}
    assert "zcdp" in methods and methods["zcdp"]["epsilon"] > 0 and "seconds" in methods["zcdp"]
    # zCDP of Gaussian: rho = 10 / (2 * 4)
    assert methods["zcdp"]["epsilon"] == pytest.approx(Z.epsilon_improved(1.25, 1e-6))
    with redirect_stdout(io.StringIO()):
        assert main(["compare", "--sigma", "-1", "--delta", "1e-6"]) == 2


# --- relation rules ------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma,eps", [(1.0, 0.5), (2.0, 1.0), (0.7, 2.0)])
def test_add_remove_to_substitution_gaussian(sigma, eps):
    """004 Sec. 6.2 on the Gaussian: substitution moves the mean by 2 (sensitivity 2); the exact
    delta at 2 eps (004 Cor. 8) must be below (1 + e^eps) delta_addremove(eps)."""
    def gdelta(mu, e):
        return norm.cdf(mu / 2 - e / mu) - math.exp(e) * norm.cdf(-mu / 2 - e / mu)
    d1 = gdelta(1 / sigma, eps)
    e2, d2 = R.add_remove_to_substitution(eps, d1)
    assert e2 == 2 * eps
    assert gdelta(2 / sigma, e2) <= d2
    assert d2 == pytest.approx((1 + math.exp(eps)) * d1, rel=1e-14)  # 004 Sec. 6.2 closed form
    assert R.substitution_to_add_remove(eps, d1) == (eps, d1)
    # pure DP: Laplace sensitivity doubles, so does epsilon exactly
    assert R.add_remove_to_substitution(dp.Laplace(3.0).eps0, 0.0)[0] == \
        pytest.approx(dp.Laplace(3.0, sensitivity=2.0).eps0)


def test_rdp_triangle_and_group_privacy_gaussian():
    """004 Lemma 33.7: for rho-zCDP pairs P~Q~R the bound is (sqrt r1 + sqrt r2)^2 alpha; for the
    Gaussian N(0) ~ N(1) ~ N(2) the true D_alpha(N(0)||N(2)) = 4 rho alpha attains it."""
    rho = 0.3
    curve = dp.ZCDP(rho).rdp
    alphas = np.array([1.5, 2.0, 5.0, 20.0])
    got = R.rdp_group(curve, alphas)
    exact = 4 * rho * alphas  # sensitivity-2 Gaussian, Lemma 33 item 4
    assert np.all(got >= exact * (1 - 1e-12))
    assert np.allclose(got, exact, rtol=2e-3)
    assert R.zcdp_triangle(rho, rho) == pytest.approx(4 * rho)
    assert R.zcdp_triangle(0.1, 0.4) == pytest.approx(0.9)
    # the one-point form with the optimal alpha' = 2 alpha (x = 1 for rho1 = rho2)
    a = 3.0
    assert R.rdp_triangle(curve, curve, a, 2 * a) == pytest.approx(4 * rho * a)
    with pytest.raises(ValueError, match="alpha_prime"):
        R.rdp_triangle(curve, curve, 3.0, 2.0)


# --------------------------------------------------------------------------------------------
# the Rényi bracket (upper and lower curves) through composition
# --------------------------------------------------------------------------------------------
def test_renyi_bracket_gaussian_composition_closed_form():
    """T-fold Gaussian: both ends are T alpha / (2 sigma^2) (one pair attains every order)."""
    sigma, T = 1.7, 25
    alpha = np.array([1.5, 2.0, 7.0, 64.0])
    br = (dp.Gaussian(sigma) * T).renyi(alpha)
    ref = T * alpha / (2 * sigma ** 2)
    np.testing.assert_allclose(br.upper, ref, rtol=1e-14)
    np.testing.assert_allclose(br.lower, ref, rtol=1e-14)
    np.testing.assert_array_equal(br.alpha, alpha)
    one = dp.Gaussian(sigma).renyi(3.0)
    # the lower end is the attained curve rounded down (a few ulps): a proven lower bound
    assert one.upper >= one.lower
    assert one.upper == pytest.approx(3.0 / (2 * sigma ** 2), rel=1e-14)
    assert one.lower == pytest.approx(3.0 / (2 * sigma ** 2), rel=1e-14)
    np.testing.assert_allclose((dp.Gaussian(sigma) * T).rdp_lower(alpha), ref, rtol=1e-14)


def test_renyi_bracket_lower_below_upper_and_additive():
    """Composition of one mechanism: count x the part's lower curve (003 Prop. 20 for
    subsampling without replacement, 001 eqs. 5/7 for Bernoulli sampling), always <= the
    upper curve; NaN at orders where the part has none (Prop. 20: integers only)."""
    wor = dp.Gaussian(1.0, sensitivity=2.0, relation=dp.SUBSTITUTION).subsample(
        dp.WithoutReplacement(100, 10000))
    br = (wor * 7).renyi([2.0, 2.5, 3.0])
    single = wor.renyi([2.0, 3.0])
    assert np.isnan(br.lower[1]) and np.isfinite(br.lower[[0, 2]]).all()
    np.testing.assert_allclose(br.lower[[0, 2]], 7 * single.lower, rtol=1e-14)
    assert (br.lower[[0, 2]] <= br.upper[[0, 2]]).all()
    bern = dp.Gaussian(1.0).post_process(dp.BernoulliSampling(0.1, 2, 1))
    bb = (bern * 3).renyi([2.0, 4.0])
    np.testing.assert_allclose(bb.lower, 3 * bern.rdp_lower([2.0, 4.0]), rtol=1e-14)
    assert (bb.lower <= bb.upper).all() and (bb.lower > 0).all()


def test_renyi_bracket_none_where_not_proven():
    """Different parts: no common worst pair is proven, so no lower curve; nor for a part
    without one (Poisson subsampling)."""
    assert dp.compose(dp.Gaussian(1.0), dp.Laplace(1.0)).renyi([2.0]).lower is None
    assert dp.compose(dp.Gaussian(1.0), dp.Laplace(1.0)).rdp_lower([2.0]) is None
    pois = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    assert pois.renyi(2.0).lower is None and (pois * 4).renyi(2.0).lower is None
    with pytest.raises(ValueError, match="alpha"):
        dp.Gaussian(1.0).renyi(0.5)
