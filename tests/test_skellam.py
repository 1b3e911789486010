"""dp.Skellam against exact oracles (tests/oracle_discrete_noise.py) and Agarwal, Kairouz & Liu's
RDP bound.

The mechanism adds X = Poisson(mu) - Poisson(mu) (variance 2 mu; P[X = k] = e^{-2 mu} I_|k|(2 mu))
to an integer query of sensitivity D. The oracle evaluates the Bessel functions at 40 digits
(mpmath), truncates the law where it falls below 1e-45 and carries what it leaves out:

* delta(eps) and eps(delta) of the pair (X + D, X) and of its T-fold product (multisets of atoms);
* Renyi divergences summed until the terms are negligible;
* Poisson subsampling, both add/remove orders.

scipy's ive (which dpamp uses) has no proven error bound: its measured error against mpmath is
checked to lie well inside the bound dpamp charges (IVE_C ulps per unit of |log f|).
"""
import math
import os
import sys

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.mechanisms import skellam as SKM

sys.path.insert(0, os.path.dirname(__file__))
import oracle_discrete_noise as O  # noqa: E402

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION
TIGHT = 2e-3


@pytest.fixture(autouse=True, scope="module")
def _digits():
    with mp.workdps(O.DPS):
        yield


def SK(mu, sensitivity=1, relation=A):
    return dp.Skellam(mu, sensitivity=sensitivity, relation=relation)


def times(m, T):
    return m * T if T > 1 else m


def check_eps(g, lo, hi, what=""):
    """The exact value lies in [lo, hi]: upper >= lo, lower <= hi, upper within TIGHT of hi."""
    assert mp.mpf(g.epsilon) >= lo, (what, g.method, g.epsilon, float(lo))
    if g.lower is not None:
        assert mp.mpf(g.lower) <= hi, (what, g.method, g.lower, float(hi))
    assert g.epsilon <= float(hi) * (1 + TIGHT) + 1e-9, (what, g.epsilon, float(hi))


def check_delta(g, lo, hi, what=""):
    assert mp.mpf(g.delta) >= lo, (what, g.method, g.delta, float(lo))
    if g.lower is not None:
        assert mp.mpf(g.lower) <= hi, (what, g.method, g.lower, float(hi))
    if hi > 1e-9:
        assert g.delta <= float(hi) * (1 + TIGHT) + 1e-12, (what, g.delta, float(hi))


def composed(mu, D, T):
    pair, tail = O.sk_outcomes(mu, D)
    return (O.compose_product(pair, T) if T > 1 else pair), T * tail


# --- the oracle and scipy's ive ----------------------------------------------------------------

def test_oracle_law_is_the_poisson_difference():
    """e^{-2 mu} I_k(2 mu) equals sum_j Pois(j; mu) Pois(j + k; mu), and the law sums to 1."""
    mu = mp.mpf(1.7)
    law, tail = O.sk_law(1.7)
    for k in (0, 1, 3, 8):
        direct = mp.fsum(mp.exp(-2 * mu) * mu ** (2 * j + k) / (mp.factorial(j) *
                                                                mp.factorial(j + k))
                         for j in range(200))
        assert abs(direct - law[k]) < mp.mpf(10) ** -35
    assert abs(mp.fsum(law.values()) + tail - 1) < mp.mpf(10) ** -38


@pytest.mark.parametrize("mu", [0.01, 0.3, 2.0, 30.0, 300.0,
                                pytest.param(3000.0, marks=pytest.mark.slow)])
def test_scipy_ive_within_the_charged_bound(mu):
    """scipy's ive against mpmath over the window dpamp keeps (log f >= -700): the measured
    relative error must stay well inside IVE_C ulps per unit of |log f| (+16)."""
    k = SKM._window(mu)
    ks = np.unique(np.concatenate([np.arange(0, min(k, 40) + 1),
                                   np.linspace(0, k, 60).astype(int)]))
    lf, err = SKM.log_pmf(mu, ks)
    worst = 0.0
    for kk, v, e in zip(ks, lf, err):
        ex = mp.log(mp.besseli(int(kk), 2 * mp.mpf(mu)) * mp.exp(-2 * mp.mpf(mu)))
        d = abs(mp.mpf(v) - ex)
        assert d <= e / 4, (kk, float(d), e)
        worst = max(worst, float(d / e))
    assert worst < 0.25


def test_amos_ratio_bound_holds():
    """The Bessel ratio bound the Renyi tail rests on (Amos 1974):
    I_{n+1}(z)/I_n(z) >= z / (n + 1 + sqrt((n + 1)^2 + z^2))."""
    for n in (0, 1, 4, 30, 300):
        for z in (1e-3, 0.7, 5.0, 60.0, 4000.0):
            z_ = mp.mpf(z)
            r = mp.besseli(n + 1, z_) / mp.besseli(n, z_)
            assert r >= z_ / (n + 1 + mp.sqrt((n + 1) ** 2 + z_ * z_))


# --- Renyi DP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mu", [0.2, 1.0, 5.0, 60.0])
@pytest.mark.parametrize("D", [1, 3])
def test_rdp_bracket(mu, D):
    alphas = np.array([1.01, 1.5, 2.0, 3.0, 6.5, 20.0])
    m = SK(mu, D)
    up, lo = np.asarray(m.rdp(alphas)), np.asarray(m.rdp_lower(alphas))
    for a, u, l in zip(alphas, up, lo):
        ex_lo, ex_hi = O.sk_rdp_bounds(mu, D, a)
        assert mp.mpf(u) >= ex_lo and mp.mpf(l) <= ex_hi, (a, u, l, float(ex_lo))
        # tight to 1e-8, except near alpha = 1, where the log-sum's error bound (ive's,
        # charged) is divided by alpha - 1
        slack = 1e-8 if a >= 1.1 else 1e-6
        assert u <= float(ex_hi) * (1 + slack) + 1e-14, (a, u, float(ex_hi))
    assert m.rdp(math.inf) == math.inf and m.pure_epsilon() == math.inf


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("D", [1, 2, 4])
def test_rdp_below_akl21(mu, D):
    """Agarwal, Kairouz & Liu 2021's RDP bound for the Skellam mechanism, with their variance
    2 mu: eps(alpha) <= alpha D^2/(4 mu) + min(((2 alpha - 1) D^2 + 6 D)/(16 mu^2), 3 D/(4 mu))
    at integer orders. dpamp's exact curve lies below it (by 2-17x at mu = 0.3, 0.06% at
    1000)."""
    al = np.arange(2, 65).astype(float)
    ours = np.asarray(SK(mu, D).rdp(al))
    akl = al * D * D / (4 * mu) + np.minimum(((2 * al - 1) * D * D + 6 * D) / (16 * mu * mu),
                                             3 * D / (4 * mu))
    assert (ours <= akl).all(), float(np.max(ours / akl))


# --- the PLD bracket -----------------------------------------------------------------------------

#: (mu, D, T)
CASES = [(0.1, 1, 1), (0.5, 1, 1), (2.0, 1, 1), (2.0, 2, 2), (8.0, 3, 1), (0.3, 1, 3),
         (10.0, 1, 2), pytest.param((0.7, 1, 3), marks=pytest.mark.slow),
         pytest.param((25.0, 1, 2), marks=pytest.mark.slow)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "mu{:g}-D{}-T{}".format(*c))
def test_epsilon_bracket(case):
    mu, D, T = case
    pair, tail = composed(mu, D, T)
    m = times(SK(mu, D), T)
    for delta in (1e-3, 1e-6, 1e-9):
        lo, hi = O.epsilon_bracket([(pair, tail)], delta)
        for method in ("pld", "auto"):
            check_eps(m.epsilon(delta, method=method), lo, hi, (case, delta, method))
        assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= lo


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: "mu{:g}-D{}-T{}".format(*c))
def test_delta_bracket(case):
    mu, D, T = case
    pair, tail = composed(mu, D, T)
    m = times(SK(mu, D), T)
    for eps in (0.0, 0.4, 2.0):
        lo = O.delta_of(pair, eps)
        for method in ("pld", "auto", "profile") if T == 1 else ("pld", "auto"):
            check_delta(m.delta(eps, method=method), lo, lo + tail, (case, eps, method))


def test_large_mu_is_near_the_gaussian():
    """For mu large the Skellam pair approaches the Gaussian of variance 2 mu: at mu = 1e4 over
    100 steps dpamp's bracket lies within 0.1% of the Gaussian's, and the tails and ive's error
    are charged without widening it beyond tol."""
    g = (SK(1e4) * 100).epsilon(1e-5)
    ref = (dp.Gaussian(math.sqrt(2e4)) * 100).epsilon(1e-5)
    assert g.tol_met and abs(g.epsilon / ref.epsilon - 1) < 1e-3


# --- subsampling ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mu, D, q, T, delta", [(1.0, 1, 0.1, 1, 1e-5), (0.5, 2, 0.3, 2, 1e-6),
                                                (3.0, 1, 0.05, 2, 1e-4)])
def test_poisson_epsilon_bracket(mu, D, q, T, delta):
    pair, tail = O.sk_outcomes(mu, D)
    rem, add = O.poisson_pairs(pair, q)
    pairs = [(O.compose_product(rem, T), T * tail), (O.compose_product(add, T), T * tail)]
    lo, hi = O.epsilon_bracket(pairs, delta)
    m = times(SK(mu, D).subsample(dp.Poisson(q)), T)
    for method in ("pld", "auto"):
        check_eps(m.epsilon(delta, method=method), lo, hi, method)
    assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= lo


def test_without_replacement_covers_attained_pairs():
    mu, D, b, n, T, eps = 1.0, 2, 10, 100, 2, 0.2
    pair, _ = O.sk_outcomes(mu, D)
    rem, add = O.poisson_pairs(pair, mp.mpf(b) / n)
    attained = max(O.delta_of(O.compose_product(pr, T), eps) for pr in (rem, add))
    m = times(SK(mu, D, relation=S).subsample(dp.WithoutReplacement(b, n)), T)
    for method in ("pld", "auto"):
        assert mp.mpf(m.delta(eps, method=method).delta) >= attained


def test_every_sampler_answers():
    m, ms = SK(3.0), SK(3.0, 2, relation=S)
    plans = [m.subsample(dp.Poisson(0.01)) * 50,
             ms.subsample(dp.WithoutReplacement(10, 1000)) * 5,
             ms.subsample(dp.WithReplacement(10, 1000)),
             m.subsample(dp.RandomAllocation(1, 10)) * 2,
             ms.subsample(dp.Shuffled(10, 100, relation=S)) * 2]
    for x in plans:
        g = x.epsilon(1e-5)
        assert 0 < g.epsilon < math.inf
        assert g.lower is None or g.lower <= g.epsilon
    assert not dp.supports(m, "zcdp")


# --- words, JSON ---------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [lambda: SK(1.5, 2), lambda: SK(0.8, 1, S),
                               lambda: SK(2.0).subsample(dp.Poisson(0.1)) * 4])
def test_json_round_trip(m):
    m = m()
    back = dp.from_json(m.to_json())
    assert back == m and back.to_json() == m.to_json()


def test_plan_word():
    from dpamp.io.plan import PlanError, parse_plan_text
    from dpamp.mechanisms.family import describe
    text = ('delta = 1e-5\n[[stage]]\nmechanism = "skellam"\nmu = 20\nsensitivity = 2\n'
            'steps = 3\n')
    assert parse_plan_text(text).mechanism == SK(20.0, 2) * 3
    with pytest.raises(PlanError, match="'mu'"):
        parse_plan_text(text.replace("mu = 20", "mu = -1"))
    assert "Skellam" in describe(SK(20.0, 2))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), math.inf])
def test_invalid_mu(bad):
    with pytest.raises(ValueError, match="mu"):
        dp.Skellam(bad)


# --- properties ----------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(mu=st.floats(0.1, 20.0), r=st.floats(1.05, 4.0), D=st.integers(1, 2),
       eps=st.floats(0.0, 3.0))
def test_delta_non_increasing_in_mu(mu, r, D, eps):
    """Sk(mu') = Sk(mu) + Sk(mu' - mu) (independent): the mechanism with the larger mu is a
    post-processing of the other, so delta(eps) does not increase with mu."""
    g_small, g_big = SK(mu, D).delta(eps), SK(mu * r, D).delta(eps)
    if g_big.lower is not None:
        assert g_big.lower <= g_small.delta
    assert g_big.delta <= g_small.delta * (1 + TIGHT) + 1e-12
    pair, tail = composed(mu * r, D, 1)
    lo = O.delta_of(pair, eps)
    check_delta(g_big, lo, lo + tail)


@settings(max_examples=10, deadline=None)
@given(mu=st.floats(0.3, 10.0), T=st.integers(1, 3), dT=st.integers(1, 3),
       eps=st.floats(0.0, 3.0))
def test_delta_non_decreasing_in_steps(mu, T, dT, eps):
    g1, g2 = times(SK(mu), T).delta(eps), (SK(mu) * (T + dT)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    assert g1.delta <= g2.delta * (1 + TIGHT) + 1e-12


@settings(max_examples=10, deadline=None)
@given(mu=st.floats(0.3, 10.0), q=st.floats(0.01, 0.9), r=st.floats(1.05, 4.0),
       eps=st.floats(0.0, 2.0))
def test_delta_non_decreasing_in_poisson_rate(mu, q, r, eps):
    q2 = min(1.0, q * r)
    g1 = SK(mu).subsample(dp.Poisson(q)).delta(eps)
    g2 = SK(mu).subsample(dp.Poisson(q2)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    assert g1.delta <= g2.delta * (1 + TIGHT) + 1e-12
