"""zCDP (004 Sec. 4.1) and the analytic subsampling bounds (004 Sec. 6.1, 6.6), against closed
forms, mpmath, brute-force hockey sticks and 004 Figure 2."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.theorems import subsampling as S
from dpamp.theorems import zcdp as Z



@pytest.fixture(autouse=True)
def _mp_precision():
    """30 digits for the mpmath references, restored afterwards (mpmath precision is global
    and other test modules rely on theirs)."""
    with mp.workdps(30):
        yield


# --- conversions -------------------------------------------------------------------------------

def test_rho_of_parts():
    assert Z.gaussian_rho(2.0, 3.0) == pytest.approx(9 / 8) == dp.Gaussian(2.0, 3.0).rho
    assert Z.pure_to_zcdp(0.3) == pytest.approx(0.045)
    m = dp.compose(dp.Gaussian(2.0) * 3, dp.PureDP(0.2) * 5, dp.ZCDP(0.01), dp.Laplace(10.0))
    assert Z.rho_of(m) == pytest.approx(3 / 8 + 5 * 0.02 + 0.01 + 0.005)
    assert Z.rho_of(dp.Gaussian(1.0).subsample(dp.Poisson(0.1))) is None
    assert "zcdp" not in dp.available_methods(dp.Gaussian(1.0).subsample(dp.Poisson(0.1)))
    assert Z.rho_of(dp.EpsDelta(0.1, 1e-6)) is None
    assert Z.rho_of(dp.EpsDelta(0.1, 0.0)) == pytest.approx(0.005)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0])
def test_prop16_pure_dp_rdp_below_zcdp(eps):
    """004 Prop. 16: the RDP of randomized response (the worst eps-DP pair), computed in mpmath
    from its two-point distribution, never exceeds eps^2 alpha / 2."""
    e = mp.mpf(eps)
    p = mp.e ** e / (1 + mp.e ** e)
    for a in [1.01, 1.5, 2, 5, 30, 300]:
        a = mp.mpf(a)
        d = mp.log(p ** a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
        assert d <= Z.pure_to_zcdp(eps) * a


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.5, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-12])
def test_improved_conversion_vs_mpmath(rho, delta):
    """Prop. 14 improved, checked independently: the optimal t solves
    (2t+1) rho - eps = log(1 + 1/t) (h is convex), found by mpmath root finding; the library's
    epsilon gives delta(eps) <= delta and 1e-7 less epsilon would not."""
    r = mp.mpf(rho)

    def mp_delta(eps):
        eps = mp.mpf(eps)
        g = lambda t: (2 * t + 1) * r - eps - mp.log(1 + 1 / t)  # noqa: E731
        lo, hi = mp.mpf("1e-40"), mp.mpf(10) ** 12
        for _ in range(250):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if g(mid) > 0 else (mid, hi)
        t = (lo + hi) / 2
        return mp.e ** (t * (t + 1) * r - eps * t - mp.log(1 + t) - t * mp.log(1 + 1 / t))

    eps = Z.epsilon_improved(rho, delta)
    assert mp_delta(eps) <= delta
    assert mp_delta(eps * (1 - 1e-7)) > delta
    # delta query at that epsilon, vs the same reference
    d = Z.delta_improved(rho, eps)
    assert d >= float(mp_delta(eps)) * (1 - 1e-12) and d == pytest.approx(float(mp_delta(eps)), rel=1e-7)
    # the simple forms (Prop. 14 last line, Remark 15) are closed forms and never better
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert Z.epsilon_simple(rho, delta) >= simple
    assert Z.epsilon_simple(rho, delta) == pytest.approx(simple, rel=1e-11)
    assert eps <= simple
    assert Z.delta_simple(rho, simple) == pytest.approx(delta, rel=1e-9)
    assert d <= Z.delta_simple(rho, eps)


@settings(max_examples=80, deadline=None)
@given(rho=st.floats(1e-5, 20.0), delta=st.floats(1e-15, 0.5))
def test_improved_round_trip_and_monotone(rho, delta):
    eps = Z.epsilon_improved(rho, delta)
    assert Z.delta_improved(rho, eps) <= delta * (1 + 1e-8)
    assert Z.epsilon_improved(rho * 1.1, delta) >= eps
    assert Z.epsilon_improved(rho, delta / 10) >= eps


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-5), (8.0, 1e-10), (0.01, 0.1)])
def test_rho_for_target(eps, delta):
    """004 Remark 15: rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2 converts back to
    exactly eps by the simple form, and lies between eps^2/(4L + 4 eps) and eps^2/(4L); the
    improved inverse allows a larger rho that still meets the target."""
    L = math.log(1 / delta)
    simple = Z.rho_for(eps, delta, improved=False)
    closed = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert simple == pytest.approx(closed, rel=1e-9)
    assert eps ** 2 / (4 * L + 4 * eps) * (1 - 1e-9) <= simple <= eps ** 2 / (4 * L)
    assert Z.epsilon_simple(simple, delta) <= eps
    assert Z.epsilon_simple(simple, delta) == pytest.approx(eps, rel=1e-9)
    better = Z.rho_for(eps, delta)
    assert better >= simple
    assert Z.epsilon_improved(better, delta) <= eps
    assert Z.epsilon_improved(better * (1 + 1e-8), delta) > eps * (1 - 1e-6)


def test_bad_rho_and_targets():
    for f in (lambda r: Z.delta_simple(r, 1.0), lambda r: Z.epsilon_simple(r, 1e-6),
              lambda r: Z.delta_improved(r, 1.0), lambda r: Z.epsilon_improved(r, 1e-6)):
        for bad in (0.0, -1.0, float("nan")):
            with pytest.raises(ValueError, match="rho"):
                f(bad)
    with pytest.raises(ValueError, match="epsilon"):
        Z.rho_for(0.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        Z.rho_for(1.0, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        Z.gaussian_rho(0.0)


def test_zcdp_method():
    m = dp.ZCDP(0.3) * 4
    g = m.epsilon(1e-6, method="zcdp")
    assert g.method == "zcdp" and g.epsilon == Z.epsilon_improved(1.2, 1e-6)
    assert m.delta(g.epsilon, method="zcdp").delta <= 1e-6 * (1 + 1e-8)
    assert dp.Gaussian(1.0, sensitivity=0.0).epsilon(1e-6, method="zcdp").epsilon == 0.0
    # the zcdp method on a Gaussian equals the RDP improved conversion (same formula; the RDP
    # order search is discrete, so it can only be a hair above)
    gm = dp.Gaussian(3.0) * 50
    assert gm.epsilon(1e-7, method="zcdp").epsilon <= gm.epsilon(1e-7, method="rdp").epsilon * (1 + 1e-9)
    assert gm.epsilon(1e-7, method="zcdp").epsilon == pytest.approx(
        gm.epsilon(1e-7, method="rdp").epsilon, rel=1e-4)


# --- Figure 2: Thm 34 exact vs Props 41, 42; Thm 38 refuses ----------------------------------

P_FIG, RHO_FIG = 0.05, 0.5


def mp_thm34(rho, p, a):
    """004 Thm 34 at an integer order with eps(k) = rho k, by hand in mpmath."""
    p, rho = mp.mpf(p), mp.mpf(rho)
    s = (1 - p) ** (a - 1) * (1 + (a - 1) * p)
    s += mp.fsum(mp.binomial(a, k) * (1 - p) ** (a - k) * p ** k * mp.e ** ((k - 1) * rho * k)
                 for k in range(2, a + 1))
    return mp.log(s) / (a - 1)


def mp_prop41(rho, p, a, w):
    p, rho, a, w = (mp.mpf(x) for x in (p, rho, a, w))
    inner = 1 + mp.e / 2 * a * (a - 1) * p ** 2 * (mp.e ** (2 * rho) - 1) \
        + ((a - 1) * p) ** w * mp.e ** ((w - 1) * rho * w)
    return mp.log(inner) / (a - 1)


def mp_prop42(rho, p, a):
    p, rho, a = (mp.mpf(x) for x in (p, rho, a))
    return a / (a - 1) * mp.log(1 - p + p * mp.e ** ((1 - 1 / a) * rho * a))


def test_figure2_exact_vs_props_41_42():
    """004 Figure 2 (p = 0.05, base 0.5-zCDP): the exact Thm 34 curve (the library's Poisson
    subsampled RDP) matches an mpmath binomial sum, and both analytic bounds lie above it: Prop.
    41 is the better one at small orders, Prop. 42 at large orders, where it becomes tight."""
    base = dp.ZCDP(RHO_FIG)
    sub = base.subsample(dp.Poisson(P_FIG))
    orders = np.array([2, 3, 4, 6, 8, 10, 15, 20, 30, 50, 100, 200])
    exact = sub.rdp(orders.astype(float))
    ref = np.array([float(mp_thm34(RHO_FIG, P_FIG, int(a))) for a in orders])
    assert np.allclose(exact, ref, rtol=1e-9)
    p41 = S.prop41_rdp(base.rdp, P_FIG, orders.astype(float))
    p42 = S.prop42_rdp(base.rdp, P_FIG, orders.astype(float))
    assert np.all(p41 >= ref * (1 - 1e-12)) and np.all(p42 >= ref * (1 - 1e-12))
    assert np.all(p41[:3] < p42[:3])          # small orders: Prop. 41 wins
    assert np.all(p42[-4:] < p41[-4:])        # large orders: Prop. 42 wins ...
    assert np.allclose(p42[-3:], ref[-3:], rtol=1e-6)  # ... and is tight (004 Sec. 6.6)
    # the lower bound D(P||Q) - alpha/(alpha-1) log(1/p) of 004 Sec. 6.6 sits below everything
    lower = RHO_FIG * orders - orders / (orders - 1) * math.log(1 / P_FIG)
    assert np.all(lower <= ref)
    # the explicit formulas against mpmath at a few (alpha, omega)
    for a, w in [(2.0, 2.0), (3.0, 4.5), (10.0, 20.0)]:
        assert S.prop41(P_FIG, a, w, base.rdp(2.0), base.rdp(w)) == pytest.approx(
            float(mp_prop41(RHO_FIG, P_FIG, a, w)), rel=1e-10)
        assert S.prop42(P_FIG, a, base.rdp(a)) == pytest.approx(float(mp_prop42(RHO_FIG, P_FIG, a)),
                                                                 rel=1e-11)


def test_thm38_refuses_in_figure2_and_checks_its_range():
    with pytest.raises(ValueError, match="Thm 38 does not apply"):
        S.thm38(RHO_FIG, P_FIG, 1.2)
    omega, ok = S.thm38_omega(RHO_FIG, P_FIG)
    assert not ok and omega == pytest.approx(math.log(20) / 2)
    with pytest.raises(ValueError, match="rate"):
        S.thm38(0.01, 0.6, 1.5)          # p outside (0, 1/2]
    with pytest.raises(ValueError, match="rate"):
        S.thm38(0.01, 0.0, 1.5)
    with pytest.raises(ValueError, match="rho"):
        S.thm38(1.5, 0.001, 1.5)         # rho outside (0, 1]
    with pytest.raises(ValueError, match="rho"):
        S.thm38(0.0, 0.001, 1.5)
    # where it applies: omega = min(log(1000)/0.04, 1 + 1000^(1/4)) = 6.62, and the bound holds
    rho, p = 0.01, 0.001
    omega, ok = S.thm38_omega(rho, p)
    assert ok and omega == pytest.approx(1 + 1000 ** 0.25)
    alphas = np.array([1.5, 2.0, 3.0, 5.0, 6.5])
    got = S.thm38(rho, p, alphas)
    assert np.allclose(got, 10 * p * p * rho * alphas)
    exact = dp.ZCDP(rho).subsample(dp.Poisson(p)).rdp(np.array([2.0, 3.0, 5.0]))
    assert np.all(exact <= got[[1, 2, 3]])
    with pytest.raises(ValueError, match="omega"):
        S.thm38(rho, p, 7.0)             # alpha >= omega


# --- Theorem 29 -------------------------------------------------------------------------------

def _subsampled_worst_case_hockey(eps, delta, p, eps_new):
    """Brute force: the worst-case (eps, delta) pair (004 Cor. 24) P, Q; Poisson subsampling
    with add/remove gives the pair pP + (1-p)Q vs Q (and its reverse); hockey stick at eps_new
    in both directions (4 outcomes)."""
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    P = np.array([delta, a, b, 0.0])
    Q = np.array([0.0, b, a, delta])
    mix = p * P + (1 - p) * Q
    f = lambda x, y: np.maximum(x - math.exp(eps_new) * y, 0).sum()  # noqa: E731
    return max(f(mix, Q), f(Q, mix))


@pytest.mark.parametrize("eps,delta,p", [(1.0, 1e-3, 0.1), (0.3, 0.0, 0.5), (3.0, 1e-5, 0.01)])
def test_thm29_against_brute_force(eps, delta, p):
    e2, d2 = S.thm29(eps, delta, p)
    assert e2 == pytest.approx(math.log1p(p * math.expm1(eps)), rel=1e-12)
    assert d2 == pytest.approx(p * delta)
    assert _subsampled_worst_case_hockey(eps, delta, p, e2) <= d2 * (1 + 1e-9) + 1e-15
    # tight (004 Sec. 6.1): a slightly smaller epsilon with the same delta fails
    assert _subsampled_worst_case_hockey(eps, delta, p, e2 * 0.99) > d2


def test_thm29_scheme_condition():
    assert S.thm29_scheme(1.0, 1e-6, dp.Poisson(0.01)) == S.thm29(1.0, 1e-6, 0.01)
    assert S.thm29_scheme(1.0, 1e-6, dp.WithoutReplacement(10, 1000)) == S.thm29(1.0, 1e-6, 0.01)
    with pytest.raises(ValueError, match="condition"):
        S.thm29_scheme(1.0, 1e-6, dp.WithReplacement(10, 1000))
    with pytest.raises(ValueError, match="rate"):
        S.thm29(1.0, 1e-6, 1.5)
