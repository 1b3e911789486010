"""dp.DiscreteGaussian against exact oracles (tests/oracle_discrete_noise.py) and dp-accounting.

The mechanism adds N_Z(0, sigma^2) noise, P[Z = k] proportional to e^{-k^2/(2 sigma^2)}
(Canonne, Kamath & Steinke 2020), to an integer query of sensitivity D. Its pair (Z + D, Z) has
infinitely many atoms on the lattice of losses (D / sigma^2)(x - D/2); dpamp keeps the outcomes
of mass >= e^-700 and charges the rest at +-inf. The oracle sums the laws at 40 digits down to
1e-45 and carries what it leaves out, so each exact value is known to within ~1e-44:

* delta(eps) and eps(delta) of T-fold compositions by convolution on the lattice;
* Renyi divergences from the closed form of the theta-function ratio, checked against the
  direct sum;
* Poisson subsampling (both add/remove orders, Zhu, Dong & Wang 2022), composed by
  enumerating multisets of atoms.

Every bracket must hold the exact value (lower <= exact <= upper) and the upper end must be
within TIGHT of it at the default tolerance.
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

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION
TIGHT = 2e-3


@pytest.fixture(autouse=True, scope="module")
def _digits():
    with mp.workdps(O.DPS):
        yield


def DG(sigma, sensitivity=1, relation=A):
    return dp.DiscreteGaussian(sigma, sensitivity=sensitivity, relation=relation)


def times(m, T):
    return m * T if T > 1 else m


def check_eps(g, lo, hi, what=""):
    """The exact value lies in [lo, hi] (the oracle's truncation, ~1e-44 wide): the upper end
    must be >= lo, the lower end <= hi, and the upper end within TIGHT of hi."""
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


# --- the oracle against itself ----------------------------------------------------------------

@pytest.mark.parametrize("sigma", [0.2, 0.5, 1.0, 2.5, 7.0])
def test_oracle_poisson_summation_and_rdp_forms_agree(sigma):
    """Theta(0) summed directly equals sigma sqrt(2 pi)(1 + 2 sum e^{-2 pi^2 sigma^2 n^2}); the
    closed-form Renyi divergence equals the direct sum over the outcomes (to its truncation)."""
    s = mp.mpf(sigma)
    poisson = s * mp.sqrt(2 * mp.pi) * (1 + 2 * mp.nsum(lambda n: mp.exp(-2 * mp.pi ** 2 * s * s
                                                                          * n * n), [1, mp.inf]))
    assert abs(O.dg_theta(sigma) / poisson - 1) < mp.mpf(10) ** -35
    for D in (1, 2):
        for a in (1.5, 2.0, 3.25):
            assert abs(O.dg_rdp(sigma, D, a) - O.dg_rdp_direct(sigma, D, a)) < mp.mpf(10) ** -30


def test_oracle_lattice_convolution_matches_enumeration():
    pair1, _ = O.dg_outcomes(0.7, 1)
    pair2, _ = O.dg_composed(0.7, 1, 2)
    enum = O.compose_product(pair1, 2)
    for eps in (0.0, 0.4, 1.7):
        assert abs(O.delta_of(pair2, eps) - O.delta_of(enum, eps)) < mp.mpf(10) ** -35


# --- Renyi DP and zCDP ------------------------------------------------------------------------

@pytest.mark.parametrize("sigma", [0.15, 0.4, 0.5, 0.8, 1.0, 3.0, 40.0])
@pytest.mark.parametrize("D", [1, 3])
def test_rdp_is_exact(sigma, D):
    alphas = np.array([1.001, 1.25, 1.5, 2.0, 2.5, 3.7, 10.0, 64.5, 1e4 + 0.3])
    m = DG(sigma, D)
    up, lo = np.asarray(m.rdp(alphas)), np.asarray(m.rdp_lower(alphas))
    closed = alphas * D * D / (2 * sigma * sigma)
    for a, u, l, c in zip(alphas, up, lo, closed):
        ex = O.dg_rdp(sigma, D, a)
        assert mp.mpf(l) <= ex <= mp.mpf(u), (a, l, float(ex), u)
        assert u <= c * (1 + 1e-14)                # never above CKS20's alpha D^2/(2 s^2)
        assert u - l <= 1e-9 * float(ex) + 1e-300, (a, u, l)
    # equality with alpha D^2/(2 sigma^2) where alpha D is an integer
    assert abs(m.rdp(2.0) - 2 * D * D / (2 * sigma * sigma)) <= 1e-12 * m.rdp(2.0)
    assert m.rdp(math.inf) == math.inf and m.pure_epsilon() == math.inf


def test_zcdp_is_the_gaussian_rho():
    m = DG(1.3, 2)
    rho = 4 / (2 * 1.3 ** 2)
    g = (m * 5).epsilon(1e-6, method="zcdp")
    ref = dp.ZCDP(rho * (1 + 1e-12)).__mul__(5).epsilon(1e-6, method="zcdp")
    assert g.epsilon <= ref.epsilon * (1 + 1e-9)
    assert dp.supports(m, "zcdp")


# --- single steps and compositions: the PLD bracket -------------------------------------------

#: (sigma, D, T)
CASES = [(0.3, 1, 1), (0.7, 1, 1), (1.0, 1, 1), (1.0, 2, 3), (2.0, 1, 1), (2.5, 3, 2),
         (1.0, 1, 10), (4.0, 1, 6), (0.5, 2, 4)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "s{:g}-D{}-T{}".format(*c))
def test_epsilon_bracket(case):
    sigma, D, T = case
    pair, tail = O.dg_composed(sigma, D, T)
    m = times(DG(sigma, D), T)
    for delta in (1e-3, 1e-6, 1e-10):
        lo, hi = O.epsilon_bracket([(pair, tail)], delta)
        for method in ("pld", "auto"):
            check_eps(m.epsilon(delta, method=method), lo, hi, (case, delta, method))
        assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= lo


@pytest.mark.parametrize("case", CASES[:6], ids=lambda c: "s{:g}-D{}-T{}".format(*c))
def test_delta_bracket(case):
    sigma, D, T = case
    pair, tail = O.dg_composed(sigma, D, T)
    m = times(DG(sigma, D), T)
    for eps in (0.0, 0.3, 1.5):
        lo = O.delta_of(pair, eps)
        for method in ("pld", "auto"):
            check_delta(m.delta(eps, method=method), lo, lo + tail, (case, eps, method))


def test_profile_method_is_exact_for_one_step():
    m = DG(1.5, 2)
    pair, tail = O.dg_composed(1.5, 2, 1)
    for eps in (0.0, 0.7, 2.0, 5.0):
        lo = O.delta_of(pair, eps)
        g = m.delta(eps, method="profile")
        assert mp.mpf(g.delta) >= lo and mp.mpf(g.lower) <= lo + tail
        assert g.delta <= float(lo) * (1 + 1e-9) + 1e-300
    prof = np.asarray(m.profile(np.array([0.0, 0.7, 2.0])))
    assert all(mp.mpf(v) >= O.delta_of(pair, e) for v, e in zip(prof, (0.0, 0.7, 2.0)))


def test_not_monotone_in_sigma():
    """delta(eps) of the discrete Gaussian is not monotone in sigma: at D = 1, eps = 1.1 the
    exact delta at sigma = 0.70 is below the one at sigma = 0.72 (the lattice of losses moves
    across eps). dpamp's brackets are narrow enough to show it."""
    d1 = O.delta_of(O.dg_composed(0.70, 1, 1)[0], 1.1)
    d2 = O.delta_of(O.dg_composed(0.72, 1, 1)[0], 1.1)
    assert d1 < d2
    g1, g2 = DG(0.70).delta(1.1), DG(0.72).delta(1.1)
    assert g1.delta < g2.lower


# --- the tails are charged ---------------------------------------------------------------------

def test_truncated_pair_charges_its_tails(monkeypatch):
    """The PLD source holds the outcomes of mass >= e^-700 and puts a proven bound on the rest
    at +inf (P) and -inf (Q). With the floor raised to e^-12 (so that the tails matter) the
    bracket still holds the exact value; the same atoms with the tails dropped give an "upper"
    bound below it."""
    import dpamp.families.discrete_gaussian as F
    import dpamp.mechanisms.discrete_gaussian as M
    import dpamp.pld.query as Q
    import dpamp.pld.sources as SRC
    from dpamp.pld.cache import PLDCache
    # (fresh caches, restored afterwards: the coarse pair's answers must not outlive the test)
    monkeypatch.setattr(Q, "_CACHE", PLDCache())
    monkeypatch.setattr(SRC, "_PARTS", PLDCache(8))
    m = DG(1.0)
    src = F._loss(m)
    law, _ = O.dg_law(1.0)
    K = max(k for k in law if law[k] >= mp.exp(-700))
    exact_tail = 2 * mp.fsum(v for k, v in law.items() if k > K)
    assert src.inf_mass >= exact_tail and src.lower_slack == 2 * src.inf_mass
    assert src.neg_inf_mass == src.inf_mass                  # symmetric by construction
    monkeypatch.setattr(M, "LOG_FLOOR", -12.0)
    F._pair.cache_clear()
    try:
        coarse = F._loss(m)
        assert coarse.inf_mass > 1e-7
        pair, tail = O.dg_composed(1.0, 1, 3)
        eps = 1.0
        lo = O.delta_of(pair, eps)
        g = (m * 3).delta(eps, method="pld")
        check_delta(g, lo, lo + tail)
        # the tail bound is what keeps it an upper bound: the kept atoms alone fall below the
        # exact delta of one step
        x, loss, lp, lq, _, _, _ = F._pair(m)
        one, _ = O.dg_composed(1.0, 1, 1)
        kept = O.delta_of([(mp.exp(mp.mpf(a)), mp.exp(mp.mpf(b))) for a, b in zip(lp, lq)], 0.5)
        assert kept < O.delta_of(one, 0.5) - mp.mpf(1e-7)
        assert mp.mpf(m.delta(0.5, method="pld").delta) >= O.delta_of(one, 0.5)
    finally:
        F._pair.cache_clear()


# --- subsampling -------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma, D, q, T, delta", [(1.0, 1, 0.1, 1, 1e-5), (0.7, 2, 0.3, 2, 1e-6),
                                                   (1.5, 1, 0.05, 3, 1e-4)])
def test_poisson_epsilon_bracket(sigma, D, q, T, delta):
    pair, tail = O.dg_outcomes(sigma, D)
    rem, add = O.poisson_pairs(pair, q)
    pairs = [(O.compose_product(rem, T), T * tail), (O.compose_product(add, T), T * tail)]
    lo, hi = O.epsilon_bracket(pairs, delta)
    m = times(DG(sigma, D).subsample(dp.Poisson(q)), T)
    for method in ("pld", "auto"):
        check_eps(m.epsilon(delta, method=method), lo, hi, method)
    assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= lo


@pytest.mark.parametrize("sigma, D, q", [(1.0, 1, 0.1), (0.6, 2, 0.3)])
def test_poisson_rdp(sigma, D, q):
    pair, _ = O.dg_outcomes(sigma, D, wide=True)
    rem, add = O.poisson_pairs(pair, q)
    alphas = [2.0, 3.0, 5.5]
    got = np.asarray(DG(sigma, D).subsample(dp.Poisson(q)).rdp(alphas))
    for a, v in zip(alphas, got):
        # the pairs are attained and dominate (Zhu, Dong & Wang 2022): the exact curve is the
        # worse order's; at integer orders dpamp's binomial expansion is exact
        ex = max(O.rdp_of(rem, a), O.rdp_of(add, a))
        assert mp.mpf(float(v)) >= ex, (a, v, float(ex))
        if float(a).is_integer():
            assert float(v) <= float(ex) * (1 + 1e-9) + 1e-15, (a, v, float(ex))


def test_without_replacement_covers_attained_pairs():
    """Substitution of one record among n: a batch of b contains it with probability g = b/n,
    and moves the integer sum by D, so ((1-g) Z + g (Z + D), Z) (and its swap) is an attained
    pair of one step; dpamp's bound must cover its T-fold composition."""
    sigma, D, b, n, T, eps = 1.0, 2, 10, 100, 2, 0.2
    pair, _ = O.dg_outcomes(sigma, D)
    rem, add = O.poisson_pairs(pair, mp.mpf(b) / n)
    attained = max(O.delta_of(O.compose_product(pr, T), eps) for pr in (rem, add))
    m = times(DG(sigma, D, relation=S).subsample(dp.WithoutReplacement(b, n)), T)
    for method in ("pld", "auto"):
        assert mp.mpf(m.delta(eps, method=method).delta) >= attained


def test_every_sampler_answers():
    m, ms = DG(2.0), DG(2.0, 2, relation=S)
    plans = [m.subsample(dp.Poisson(0.01)) * 50,
             ms.subsample(dp.WithoutReplacement(10, 1000)) * 5,
             ms.subsample(dp.WithReplacement(10, 1000)),
             m.subsample(dp.RandomAllocation(1, 10)) * 2,
             ms.subsample(dp.Shuffled(10, 100, relation=S)) * 2]
    for x in plans:
        g = x.epsilon(1e-5)
        assert 0 < g.epsilon < math.inf
        assert g.lower is None or g.lower <= g.epsilon


def test_random_allocation_claims_no_lower_end_from_a_truncated_pair():
    """Random allocation builds its epoch from the base's pair; from a truncated pair (mass at
    +-inf charged) its optimistic side does not carry the charge, so no lower end is claimed."""
    g = (DG(1.0).subsample(dp.RandomAllocation(1, 5)) * 2).epsilon(1e-5, method="pld")
    assert g.lower is None and math.isfinite(g.epsilon)


# --- against dp-accounting ---------------------------------------------------------------------

@pytest.mark.parametrize("sigma, D, T", [(1.0, 1, 1), (2.0, 1, 10), (0.8, 2, 3),
                                         pytest.param(5.0, 1, 100, marks=pytest.mark.slow)])
def test_against_dp_accounting_pld(sigma, D, T, capsys):
    """dp-accounting's PLD of the discrete Gaussian (truncated at 11.6 sigma, mass 1e-30 out,
    privacy buckets at 1e-4) composed T times, at delta = 1e-5: its value against the exact one
    and dpamp's bracket (printed)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as PLD
    delta = 1e-5
    pld = PLD.from_discrete_gaussian_mechanism(sigma, sensitivity=D)
    theirs = pld.self_compose(T).get_epsilon_for_delta(delta) if T > 1 else \
        pld.get_epsilon_for_delta(delta)
    lo, hi = O.epsilon_bracket([O.dg_composed(sigma, D, T)], delta)
    g = times(DG(sigma, D), T).epsilon(delta)
    check_eps(g, lo, hi)
    with capsys.disabled():
        print(f"\n[dg s={sigma} D={D} T={T}] exact {float(hi):.6g} dpamp [{g.lower:.6g}, "
              f"{g.epsilon:.6g}] dp-accounting {theirs:.6g} ({theirs / float(hi) - 1:+.2e})")
    assert g.epsilon <= theirs * (1 + 1e-2) + 1e-6


# --- words, events, JSON -----------------------------------------------------------------------

def test_from_dp_event():
    """dp-accounting's main branch has DiscreteGaussianDpEvent(sigma, sensitivity, dimension);
    0.6.0 does not, so a stand-in of the same name and fields is read."""
    pytest.importorskip("dp_accounting")
    import attr
    from dp_accounting import dp_event as E
    ev_cls = getattr(E, "DiscreteGaussianDpEvent", None)
    if ev_cls is None:
        @attr.s(frozen=True, slots=True, auto_attribs=True)
        class DiscreteGaussianDpEvent(E.DpEvent):
            sigma: float
            sensitivity: float = 1.0
            dimension: object = None
        ev_cls = DiscreteGaussianDpEvent
    ev = ev_cls(sigma=3.0, sensitivity=2.0, dimension=1)
    assert dp.from_dp_event(ev) == DG(3.0, 2)
    assert dp.from_dp_event(E.SelfComposedDpEvent(ev, 4)) == DG(3.0, 2) * 4
    assert dp.from_dp_event(E.PoissonSampledDpEvent(0.1, ev)) == \
        DG(3.0, 2).subsample(dp.Poisson(0.1))
    with pytest.raises(ValueError, match="univariate"):
        dp.from_dp_event(ev_cls(sigma=3.0))
    with pytest.raises(ValueError, match="integer"):
        dp.from_dp_event(ev_cls(sigma=3.0, sensitivity=1.5, dimension=1))


@pytest.mark.parametrize("m", [lambda: DG(1.5, 2), lambda: DG(0.8, 1, S),
                               lambda: DG(2.0).subsample(dp.Poisson(0.1)) * 4])
def test_json_round_trip(m):
    m = m()
    back = dp.from_json(m.to_json())
    assert back == m and back.to_json() == m.to_json()


def test_plan_word():
    from dpamp.io.plan import PlanError, parse_plan_text
    text = ('delta = 1e-5\n[[stage]]\nmechanism = "discrete_gaussian"\nsigma = 1.5\n'
            'sensitivity = 2\nsteps = 3\nsampler = "poisson"\nsample_rate = 0.1\n')
    plan = parse_plan_text(text)
    assert plan.mechanism == DG(1.5, 2).subsample(dp.Poisson(0.1)) * 3
    with pytest.raises(PlanError, match="'sensitivity'"):
        parse_plan_text(text.replace("sensitivity = 2", "sensitivity = 2.5"))
    from dpamp.mechanisms.family import describe
    assert "discrete Gaussian" in describe(DG(1.5, 2))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), math.inf])
def test_invalid_sigma(bad):
    with pytest.raises(ValueError, match="sigma"):
        dp.DiscreteGaussian(bad)


def test_huge_sigma_refuses_the_pld_and_keeps_rdp():
    m = DG(1e6)
    assert not dp.supports(m, "pld")
    assert "outcomes" in dp.supports(m, "pld").why
    g = m.epsilon(1e-9)              # (at 1e-5 the total variation, ~4e-7, is below delta)
    ref = dp.Gaussian(1e6).epsilon(1e-9, method="rdp")
    assert g.method in ("rdp", "zcdp") and 0 < g.epsilon <= ref.epsilon * (1 + 1e-9)


# --- properties --------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.3, 3.0), D=st.integers(1, 2), T=st.integers(1, 3),
       dT=st.integers(1, 3), eps=st.floats(0.0, 3.0))
def test_delta_non_decreasing_in_steps(sigma, D, T, dT, eps):
    g1, g2 = (times(DG(sigma, D), T)).delta(eps), (DG(sigma, D) * (T + dT)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    pair, tail = O.dg_composed(sigma, D, T + dT)
    lo = O.delta_of(pair, eps)
    check_delta(g2, lo, lo + tail)


@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.4, 3.0), q=st.floats(0.01, 0.9), r=st.floats(1.05, 4.0),
       eps=st.floats(0.0, 2.0))
def test_delta_non_decreasing_in_poisson_rate(sigma, q, r, eps):
    q2 = min(1.0, q * r)
    g1 = DG(sigma).subsample(dp.Poisson(q)).delta(eps)
    g2 = DG(sigma).subsample(dp.Poisson(q2)).delta(eps)
    if g1.lower is not None:
        assert g1.lower <= g2.delta
    assert g1.delta <= g2.delta * (1 + TIGHT) + 1e-12


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.2, 6.0), D=st.integers(1, 3), eps=st.floats(0.0, 4.0))
def test_single_step_bracket_drawn(sigma, D, eps):
    pair, tail = O.dg_composed(sigma, D, 1)
    lo = O.delta_of(pair, eps)
    check_delta(DG(sigma, D).delta(eps), lo, lo + tail)


def test_sorted_profile_rows_bracket_the_exact_sum():
    """The O(n + m) profile rows (sorted by log ratio, suffix sums of positive terms) against
    the term-by-term rows and a 50-digit sum: both bound it, and they agree to rounding."""
    from dpamp.profiles.divergence import finite_pair_log_rows, sorted_pair_log_rows
    import dpamp.families.discrete_gaussian as F
    for m in (DG(2.0), DG(0.5, 3), DG(40.0, 2)):
        _, loss, lp, lq, err, _, _ = F._pair(m)
        eps = np.concatenate([[0.0, 0.37, 1.3], loss[loss > 0][:20] * (1 + 1e-9)])
        for upper in (True, False):
            a = finite_pair_log_rows(lp, lq, err, eps, upper=upper)
            b = sorted_pair_log_rows(lp, lq, err, eps, upper=upper)
            fin = np.isfinite(a) & np.isfinite(b)
            assert (np.isfinite(a) == np.isfinite(b)).all()
            assert np.max(np.abs(a[fin] - b[fin])) < 1e-6
        for e in (0.0, 0.37, 1.3):
            with mp.workdps(50):
                ex = mp.fsum(max(mp.exp(mp.mpf(x)) - mp.exp(e) * mp.exp(mp.mpf(y)), 0)
                             for x, y in zip(lp, lq))
            up = sorted_pair_log_rows(lp, lq, 0 * err, np.array([e]), True)[0, 0]
            lo = sorted_pair_log_rows(lp, lq, 0 * err, np.array([e]), False)[0, 0]
            assert mp.exp(mp.mpf(lo)) <= ex <= mp.exp(mp.mpf(up)), (m, e)


def test_poisson_under_substitution_is_quick():
    """000 Thm 14 evaluates the base profile at tens of thousands of points per call: the
    term-by-term rows made this plan take four minutes."""
    import time
    m = DG(2.0, relation=S).subsample(dp.Poisson(0.01, S, population=10_000)) * 2
    t = time.time()
    g = m.epsilon(1e-3, method="pld")
    assert 0 < g.epsilon < 0.05 and time.time() - t < 60
