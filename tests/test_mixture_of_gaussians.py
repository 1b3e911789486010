"""dp.MixtureOfGaussians against exact oracles (tests/oracle_discrete_noise.py) and dp-accounting.

The mechanism outputs N(0, sigma^2) on one dataset and sum_i p_i N(c_i, sigma^2) on its
neighbour (dp-accounting's MixtureOfGaussiansDpEvent). The oracle, at 40 digits:

* both orders' hockey-stick curves at the root of the (increasing) loss, checked against a 1-D
  quadrature of the positive part, and against dp-accounting's own published test values;
* two steps by a quadrature of the one-step curve against the law of the first step's loss;
* Renyi divergences by 1-D quadrature.

A mixture of one shift is the Gaussian mechanism and one of a zero shift and c is the
Poisson-subsampled Gaussian: dpamp's answers for those must be its answers for the Gaussian
families (which have their own tests).
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

sys.path.insert(0, os.path.dirname(__file__))
import oracle_discrete_noise as O  # noqa: E402

TIGHT = 2e-3
#: (sigma, sensitivities, probabilities)
MIXES = [(1.0, (0.0, 1.0, 2.0), (0.2, 0.6, 0.2)), (2.0, (0.0, 2.0, 3.0), (0.33, 0.34, 0.33)),
         (1.0, (1.0, 2.0), (0.2, 0.8)), (0.7, (0.3, 1.0, 1.5, 4.0), (0.4, 0.3, 0.2, 0.1)),
         (1.0, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01))]


@pytest.fixture(autouse=True, scope="module")
def _digits():
    with mp.workdps(O.DPS):
        yield


def MG(sigma, c, p, relation=dp.ADD_REMOVE):
    return dp.MixtureOfGaussians(sigma, tuple(c), tuple(p), relation=relation)


def exact_delta(mix, eps):
    return max(O.mog_delta(*_args(mix), eps, d) for d in ("remove", "add"))


def _args(mix):
    sigma, c, p = mix
    return c, p, sigma


def exact_epsilon(mix, delta):
    """eps(delta) of the worse order, by bisection of the exact (non-increasing) curves."""
    lo, hi = mp.mpf(0), mp.mpf(1)
    if exact_delta(mix, 0) <= delta:
        return mp.mpf(0), mp.mpf(0)
    while exact_delta(mix, hi) > delta:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if exact_delta(mix, mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo, hi


# --- the oracle ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mix", MIXES[:3])
def test_oracle_closed_form_equals_quadrature(mix):
    for eps in (0.0, 0.6, 2.5):
        for d in ("remove", "add"):
            a = O.mog_delta(*_args(mix), eps, d)
            b = O.mog_delta(*_args(mix), eps, d, quad=True)
            assert abs(a - b) <= mp.mpf(10) ** -25 * (1 + abs(a)), (eps, d, a, b)


@pytest.mark.parametrize("c, p, d, want", [
    ((0.0, 1.0, 2.0), (0.2, 0.6, 0.2), "add", 0.036691263832032806),
    ((1.0, 2.0), (0.2, 0.8), "add", 0.3894964356580768),
    ((0.0, 1.0, 2.0), (0.2, 0.6, 0.2), "remove", 0.15768284088654105),
    ((1.0, 2.0), (0.2, 0.8), "remove", 0.433276675545065),
    ((0.0, 1.0), (0.2, 0.8), "add", 0.0231362104090899),
    ((0.0, 3.0), (0.3, 0.7), "remove", 0.5356298793262404)])
def test_oracle_matches_dp_accountings_published_values(c, p, d, want):
    """dp-accounting's privacy_loss_mechanism_test.py, test_get_delta_for_epsilon, sigma 1 and
    eps 1 (its REMOVE is our (mixture, centred) order, its ADD the other)."""
    assert float(O.mog_delta(c, p, 1.0, 1.0, d)) == pytest.approx(want, rel=1e-9)


# --- profile and PLD: one step ------------------------------------------------------------------

@pytest.mark.parametrize("mix", MIXES)
def test_profile_is_exact(mix):
    m = MG(*mix)
    eps = np.array([0.0, 0.3, 1.0, 2.5, 6.0])
    from dpamp.profiles import profile_pair, profile_pair_lower
    up, lo = np.asarray(profile_pair(m, eps)), np.asarray(profile_pair_lower(m, eps))
    for j, e in enumerate(eps):
        for row, d in enumerate(("remove", "add")):
            ex = O.mog_delta(*_args(mix), e, d)
            assert mp.mpf(up[row, j]) >= ex and mp.mpf(lo[row, j]) <= ex, (e, d)
            assert up[row, j] <= float(ex) * (1 + 1e-9) + 1e-300, (e, d, up[row, j], float(ex))


@pytest.mark.parametrize("mix", MIXES)
def test_one_step_brackets(mix):
    m = MG(*mix)
    for eps in (0.0, 0.8, 2.0):
        ex = exact_delta(mix, eps)
        for method in ("pld", "auto", "profile"):
            g = m.delta(eps, method=method)
            assert mp.mpf(g.delta) >= ex and (g.lower is None or mp.mpf(g.lower) <= ex)
            assert g.delta <= float(ex) * (1 + TIGHT) + 1e-12, (method, eps, g.delta, float(ex))
    for delta in (1e-3, 1e-6):
        lo, hi = exact_epsilon(mix, delta)
        for method in ("pld", "auto"):
            g = m.epsilon(delta, method=method)
            assert mp.mpf(g.epsilon) >= lo and (g.lower is None or mp.mpf(g.lower) <= hi)
            assert g.epsilon <= float(hi) * (1 + TIGHT) + 1e-9, (method, delta)


@pytest.mark.parametrize("mix, eps", [(MIXES[0], 1.0),
                                      pytest.param(MIXES[3], 0.5, marks=pytest.mark.slow)])
def test_two_steps(mix, eps):
    """Two steps by the oracle's nested quadrature (dp-accounting's test mixture)."""
    m = MG(*mix) * 2
    ex = max(O.mog_delta2(*_args(mix), eps, d) for d in ("remove", "add"))
    g = m.delta(eps)
    assert mp.mpf(g.delta) >= ex * (1 - mp.mpf(10) ** -15)      # (the quadrature's digits)
    assert g.lower is None or mp.mpf(g.lower) <= ex * (1 + mp.mpf(10) ** -15)
    assert g.delta <= float(ex) * (1 + TIGHT)


# --- the special cases are the Gaussian families' -----------------------------------------------

def test_one_shift_is_the_gaussian():
    m, g = MG(1.3, (2.0,), (1.0,)), dp.Gaussian(1.3, 2.0)
    for T in (1, 50):
        a, b = (m * T).epsilon(1e-6), (g * T).epsilon(1e-6)
        assert a.epsilon == pytest.approx(b.epsilon, rel=1e-9)
    assert dp.supports(m, "zcdp")
    assert (m * 5).epsilon(1e-6, method="zcdp").epsilon == \
        pytest.approx((g * 5).epsilon(1e-6, method="zcdp").epsilon, rel=1e-9)
    # composed with a Gaussian, the pairs merge into one Gaussian
    assert (m + g).epsilon(1e-6).epsilon == pytest.approx((g * 2).epsilon(1e-6).epsilon,
                                                        rel=1e-6)


def test_zero_and_one_shift_is_the_poisson_subsampled_gaussian():
    q = 0.02
    m = MG(0.9, (0.0, 1.0), (1 - q, q))
    ref = dp.Gaussian(0.9).subsample(dp.Poisson(q))
    for T in (1, 200):
        a, b = (m * T).epsilon(1e-6), (ref * T).epsilon(1e-6)
        assert a.epsilon == pytest.approx(b.epsilon, rel=1e-9)
    al = np.array([2.0, 3.0, 8.0])
    ours, theirs = np.asarray(m.rdp(al)), np.asarray(ref.rdp(al))
    low = np.asarray(m.rdp_lower(al))
    # the Poisson-subsampled Gaussian's RDP is exact at integer orders: inside our bracket
    assert (low <= theirs * (1 + 1e-9)).all() and (theirs <= ours * (1 + 1e-9)).all()
    assert (ours <= theirs * (1 + 1e-3)).all()


# --- Renyi DP -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mix", MIXES[:4])
def test_rdp_bracket(mix):
    m = MG(*mix)
    alphas = np.array([1.05, 1.5, 2.0, 3.5, 8.0, 24.0])
    up, lo = np.asarray(m.rdp(alphas)), np.asarray(m.rdp_lower(alphas))
    for a, u, l in zip(alphas, up, lo):
        ex = max(O.mog_rdp(*_args(mix), a, d) for d in ("remove", "add"))
        assert mp.mpf(l) <= ex <= mp.mpf(u), (a, l, float(ex), u)
        assert u <= float(ex) * (1 + 5e-3), (a, u, float(ex))
    cap = np.asarray(m._cap(alphas))
    assert (up <= cap).all()
    assert m.rdp(math.inf) == math.inf


# --- against dp-accounting ----------------------------------------------------------------------

#: dp-accounting's test_mixture_of_gaussians_basic (pld_privacy_accountant_test.py): its PLD
#: accountant's epsilon at delta 1e-6 for these two events composed 3 and 2 times
DPA_EVENTS = [((1.0, [0.0, 1.0, 2.0], [0.2, 0.6, 0.2]), 3),
              ((2.0, [0.0, 2.0, 3.0], [0.33, 0.34, 0.33]), 2)]
DPA_EPSILON = 17.193115


def _dpa_plan():
    from dp_accounting import dp_event as E
    return E.ComposedDpEvent([E.SelfComposedDpEvent(E.MixtureOfGaussiansDpEvent(*args), n)
                              for args, n in DPA_EVENTS])


def test_dp_accountings_published_plan(capsys):
    """dpamp's bracket on dp-accounting's own test plan, read from its events: its published
    17.193115 lies inside the bracket (dp-accounting's PLD at 1e-4 is pessimistic)."""
    pytest.importorskip("dp_accounting")
    x = dp.from_dp_event(_dpa_plan())
    assert x == dp.compose(MG(1.0, (0, 1, 2), (0.2, 0.6, 0.2)) * 3,
                           MG(2.0, (0, 2, 3), (0.33, 0.34, 0.33)) * 2)
    g = x.epsilon(1e-6)
    with capsys.disabled():
        print(f"\n[mog] dpamp [{g.lower:.7g}, {g.epsilon:.7g}] dp-accounting {DPA_EPSILON} "
              f"({DPA_EPSILON / g.epsilon - 1:+.2e} from our upper)")
    assert g.lower <= DPA_EPSILON <= g.epsilon * (1 + 1e-3)
    assert g.tol_met


@pytest.mark.slow
def test_against_dp_accounting_live():
    """The same plan through the installed dp-accounting (its MoG PLD takes ~30 s)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as P
    acc = P.PLDAccountant()
    acc.compose(_dpa_plan())
    assert acc.get_epsilon(1e-6) == pytest.approx(DPA_EPSILON, abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("mix, T", [(MIXES[4], 1), (MIXES[4], 20), (MIXES[2], 5)])
def test_against_dp_accounting_single_events(mix, T, capsys):
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    from dp_accounting.pld import pld_privacy_accountant as P
    sigma, c, p = mix
    acc = P.PLDAccountant()
    acc.compose(E.MixtureOfGaussiansDpEvent(sigma, list(c), list(p)), T)
    theirs = acc.get_epsilon(1e-5)
    g = (MG(*mix) * T if T > 1 else MG(*mix)).epsilon(1e-5)
    with capsys.disabled():
        print(f"\n[mog {mix} T={T}] dpamp [{g.lower:.7g}, {g.epsilon:.7g}] dp-accounting "
              f"{theirs:.7g} ({theirs / g.epsilon - 1:+.2e})")
    assert g.lower <= theirs * (1 + 1e-6) and g.epsilon <= theirs * (1 + 1e-2)


# --- words, events, JSON, validation ------------------------------------------------------------

def test_from_dp_event():
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    ev = E.MixtureOfGaussiansDpEvent(1.5, [0.0, 1.0], [0.7, 0.3])
    assert dp.from_dp_event(ev) == MG(1.5, (0.0, 1.0), (0.7, 0.3))
    assert dp.from_dp_event(E.SelfComposedDpEvent(ev, 3)) == MG(1.5, (0.0, 1.0), (0.7, 0.3)) * 3
    # a single zero sensitivity costs nothing (as dp-accounting's accountants take it)
    none = dp.from_dp_event(E.MixtureOfGaussiansDpEvent(1.0, [0.0], [1.0]))
    assert none.epsilon(1e-6).epsilon == 0
    with pytest.raises(ValueError, match="not private"):
        dp.from_dp_event(E.MixtureOfGaussiansDpEvent(0.0, [1.0], [1.0]))
    with pytest.raises(ValueError, match="add/remove"):
        dp.from_dp_event(ev, relation=dp.SUBSTITUTION)


@pytest.mark.parametrize("m", [lambda: MG(*MIXES[0]), lambda: MG(1.0, (1.0,), (1.0,)),
                               lambda: MG(*MIXES[3]).subsample(dp.Poisson(0.1)) * 4])
def test_json_round_trip(m):
    m = m()
    back = dp.from_json(m.to_json())
    assert back == m and back.to_json() == m.to_json()


def test_plan_word():
    from dpamp.io.plan import PlanError, parse_plan_text
    from dpamp.mechanisms.family import describe
    text = ('delta = 1e-5\n[[stage]]\nmechanism = "mixture_of_gaussians"\nsigma = 1.0\n'
            'sensitivities = [0.0, 1.0, 2.0]\nprobabilities = [0.2, 0.6, 0.2]\nsteps = 3\n')
    assert parse_plan_text(text).mechanism == MG(*MIXES[0]) * 3
    with pytest.raises(PlanError, match="'probabilities'"):
        parse_plan_text(text.replace("[0.2, 0.6, 0.2]", "[0.2, 0.6, 0.3]"))
    with pytest.raises(PlanError, match="'sensitivities'"):
        parse_plan_text(text.replace("[0.0, 1.0, 2.0]", "[0.0, -1.0, 2.0]"))
    assert "mixture of Gaussians" in describe(MG(*MIXES[0]))


@pytest.mark.parametrize("args, match", [
    ((1.0, (0.0, -1.0), (0.5, 0.5)), "not monotone"),
    ((1.0, (0.0, 1.0), (0.5, 0.6)), "sum to 1"),
    ((1.0, (0.0, 1.0), (0.5,)), "same length"),
    ((0.0, (1.0,), (1.0,)), "sigma"),
    ((1.0, (), ()), "non-empty")])
def test_invalid(args, match):
    with pytest.raises(ValueError, match=match):
        dp.MixtureOfGaussians(*args)


def test_zero_shifts_are_free():
    m = MG(1.0, (0.0, 0.0), (0.5, 0.5))
    assert m.pure_epsilon() == 0 and m.epsilon(1e-6).epsilon == 0


def test_every_sampler_answers():
    m = MG(*MIXES[0])
    ms = MG(*MIXES[0], relation=dp.SUBSTITUTION)
    plans = [m.subsample(dp.Poisson(0.01)) * 50, ms.subsample(dp.WithReplacement(10, 1000)),
             m.subsample(dp.RandomAllocation(1, 10)) * 2,
             ms.subsample(dp.Shuffled(10, 100, relation=dp.SUBSTITUTION)) * 2]
    for x in plans:
        g = x.epsilon(1e-5)
        assert 0 < g.epsilon < math.inf
        assert g.lower is None or g.lower <= g.epsilon


# --- properties ---------------------------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.5, 3.0), r=st.floats(1.05, 3.0), eps=st.floats(0.0, 3.0),
       q=st.floats(0.05, 0.9))
def test_delta_non_increasing_in_sigma(sigma, r, eps, q):
    """N(c, s'^2) = N(c, s^2) + N(0, s'^2 - s^2) for every shift: the mixture with the larger
    sigma is a post-processing of the other."""
    c, p = (0.0, 1.0, 2.0), (1 - q, q * 0.7, q * 0.3)
    g_small, g_big = MG(sigma, c, p).delta(eps), MG(sigma * r, c, p).delta(eps)
    if g_big.lower is not None:
        assert g_big.lower <= g_small.delta
    assert g_big.delta <= g_small.delta * (1 + TIGHT) + 1e-12
    ex = exact_delta((sigma * r, c, p), eps)
    assert mp.mpf(g_big.delta) >= ex


@settings(max_examples=8, deadline=None)
@given(T=st.integers(1, 20), dT=st.integers(1, 20), eps=st.floats(0.0, 3.0))
def test_delta_non_decreasing_in_steps(T, dT, eps):
    m = MG(*MIXES[0])
    g1, g2 = (m * T).delta(eps), (m * (T + dT)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    assert g1.delta <= g2.delta * (1 + TIGHT) + 1e-12


@settings(max_examples=8, deadline=None)
@given(q=st.floats(0.01, 0.9), r=st.floats(1.05, 4.0), eps=st.floats(0.0, 2.0))
def test_delta_non_decreasing_in_poisson_rate(q, r, eps):
    m = MG(*MIXES[3])
    q2 = min(1.0, q * r)
    g1 = m.subsample(dp.Poisson(q)).delta(eps)
    g2 = m.subsample(dp.Poisson(q2)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    assert g1.delta <= g2.delta * (1 + TIGHT) + 1e-12
