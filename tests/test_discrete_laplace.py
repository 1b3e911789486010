"""dp.DiscreteLaplace against an exact oracle (tests/oracle_discrete_laplace.py) and dp-accounting.

The mechanism adds DLap(a) noise, P[X = k] = tanh(a/2) e^{-a|k|} on the integers, to an integer
query of sensitivity D: the two-sided geometric mechanism of Ghosh, Roughgarden & Sundararajan
2009, the discrete Laplace of Canonne, Kamath & Steinke 2020. Its privacy loss takes the D + 1
values a(D - 2j), j = 0..D (derived in the oracle's docstring), so every quantity tested here is
a finite sum computed exactly at 50 digits:

* delta(eps) of one step, in closed form by geometric sums, checked against the same sum over
  the D + 1 cells and against a truncated sum over k in [-K, K + D] with its tail bound;
* T-fold compositions (the loss adds up: Meiser & Mohammadi 2018; Balle & Wang 2018 for
  delta(eps) = E_P[(1 - e^{eps - L})_+]), as a convolution on the lattice aZ and, for T <= 4,
  by enumerating the product's atoms; eps(delta) inverted exactly segment by segment and by
  bisection;
* Renyi divergences, integer and fractional orders;
* Poisson subsampling under add/remove: the pairs ((1-q)Q + qP, Q) and (Q, (1-q)Q + qP), the
  worse of the two (Zhu, Dong & Wang 2022), composed by enumeration.

The test_oracle_* tests check the oracle against itself (closed form vs cells vs truncated pmf
sums; lattice vs enumeration; segment inversion vs bisection) and against dp-accounting's
published and live closed-form values; the others hold dp.DiscreteLaplace to it. Only the
dp-accounting comparisons are skipped when dp_accounting is not installed.

Note on direction: a is a decay rate (the scale is 1/a), so delta(eps) grows with a.
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
import oracle_discrete_laplace as O  # noqa: E402

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION

#: an upper bound from a method meeting its default tol (upper - lower <= 1e-3 upper, lower <=
#: exact) is at most exact / (1 - 1e-3); 2e-3 leaves room for the last refinement's rounding
TIGHT = 2e-3


@pytest.fixture(autouse=True, scope="module")
def _digits():
    """The oracle's precision for the arithmetic done here too (module scope: hypothesis
    refuses function-scoped fixtures)."""
    with mp.workdps(O.DPS):
        yield


def pure(a, D, T=1):
    """The real pure epsilon T a D of the float a (a float product may round below it)."""
    return mp.mpf(a) * D * T


def DL(a, sensitivity=1, relation=A):
    return dp.DiscreteLaplace(a, sensitivity=sensitivity, relation=relation)


def _ids(case):
    return "-".join(f"{k}{v:g}" for k, v in zip(("a", "D", "T", "x"), case))


def exact_pair_T(a, D, T):
    """The T-fold pair of the single step, by the lattice convolution (checked against the
    atom-by-atom enumeration in test_oracle_compositions_agree and in the bracket tests)."""
    return O.compose_lattice(a, D, T)


def times(m, T):
    """m composed T times; m itself for T = 1 (so that one step is tested as the mechanism)."""
    return m * T if T > 1 else m


def assert_bracket(g, exact, kind, what=""):
    """lower <= exact <= upper for a Guarantee of kind 'epsilon' or 'delta'."""
    up = g.epsilon if kind == "epsilon" else g.delta
    ex = float(exact)
    # the upper bound is proven: no slack below the exact value (compared at 50 digits)
    assert mp.mpf(up) >= exact, (what, g.method, up, ex)
    if g.lower is not None:
        assert mp.mpf(g.lower) <= exact, (what, g.method, g.lower, ex)
    return up


def assert_tight(up, exact, what=""):
    ex = float(exact)
    assert up <= ex * (1 + TIGHT) + 1e-9, (what, up, ex, up / ex - 1 if ex else up)


# --- the oracle against itself ------------------------------------------------------------------

ORACLE_GRID = [(a, D) for a in (0.1, 0.5, 1.0, 2.5) for D in (1, 2, 3, 5)]


@pytest.mark.parametrize("a, D", ORACLE_GRID)
def test_oracle_closed_form_cells_and_truncated_sum_agree(a, D):
    cells = O.base_atoms(a, D)
    assert mp.fsum(p for p, _, _ in cells) == pytest.approx(1, abs=1e-45)
    assert mp.fsum(q for _, q, _ in cells) == pytest.approx(1, abs=1e-45)
    # the pair is symmetric under k -> D - k: q_j = p_{D-j}
    for (_, q, _), (p, _, _) in zip(cells, reversed(cells)):
        assert abs(q - p) < mp.mpf(10) ** -45
    # the generic mixture cells (pmf sums and geometric tails) give the same pair
    generic = O.pair_atoms(a, [(1, 0)], [(1, D)])
    assert len(generic) == D + 1
    for (p, q), (p2, q2, _) in zip(generic, cells):
        assert abs(p - p2) < mp.mpf(10) ** -45 and abs(q - q2) < mp.mpf(10) ** -45
    K = int(math.ceil(120 / a))            # tail mass e^{-120} ~ 1e-52
    top = pure(a, D)
    for eps in (-top - mp.mpf(0.5), -0.3, 0.0, 0.05, 0.4, top / 3, top * (1 - mp.mpf(1e-9)),
                top, top + 1):
        closed = O.delta_closed(a, D, eps)
        by_cells = O.delta_of(O.base_pair(a, D), eps)
        trunc, tail = O.delta_truncated(a, D, eps, K)
        assert abs(closed - by_cells) < mp.mpf(10) ** -40, (eps, closed, by_cells)
        assert trunc - mp.mpf(10) ** -45 <= closed <= trunc + tail + mp.mpf(10) ** -45
    # pure DP: the largest loss is a D, so delta(a D) = 0 exactly and delta is positive below
    assert O.delta_closed(a, D, top) == 0
    assert O.delta_closed(a, D, top * (1 - mp.mpf(1e-6))) > 0
    # below eps = -aD every cell counts: delta = 1 - e^eps
    e = -top - mp.mpf(0.5)
    assert abs(O.delta_closed(a, D, e) + mp.expm1(e)) < mp.mpf(10) ** -40


def test_oracle_matches_dp_accountings_published_values():
    """Values from dp-accounting's own tests (privacy_loss_mechanism_test.py,
    test_discrete_laplace_get_delta_for_epsilon[_vectorized]): a = 0.5, sensitivity 4, and
    sampled at q < 1 (their ADD is our add direction (Q, (1-q)Q + qP), their REMOVE our
    remove direction ((1-q)Q + qP, Q))."""
    eps = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
    want = [0.86466472, 0.77686984, 0.7222211, 0.63212056, 0.54202002, 0.39346934, 0.0]
    for e, w in zip(eps, want):
        assert float(O.delta_closed(0.5, 4, e)) == pytest.approx(w, abs=1e-8)
    for q, e, rem, add in [(0.7, 0.5, 0.3523838505224567, 0.2293628348747755),
                           (0.6, 0.6, None, 0.07668344250639381),
                           (0.6, 1.0, 0.178181891763215, None),
                           (0.3, 0.5, 0.1068168460276349, 0.0)]:
        r, ad = O.poisson_pairs(0.5, 4, q)
        if rem is not None:
            assert float(O.delta_of(r, e)) == pytest.approx(rem, abs=1e-12)
        if add is not None:
            assert float(O.delta_of(ad, e)) == pytest.approx(add, abs=1e-12)
    r, ad = O.poisson_pairs(0.5, 4, 0.2)
    eps = [-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]
    for e, w in zip(eps, [0.25918178, 0.18126925, 0.14821539, 0.12642411, 0.11181698,
                          0.095673604, 0.07817137]):
        assert float(O.delta_of(r, e)) == pytest.approx(w, abs=1e-8)
    for e, w in zip(eps, [0.31709255, 0.25960017, 0.19633877, 0.12642411, 0.058632421, 0.0,
                          0.0]):
        assert float(O.delta_of(ad, e)) == pytest.approx(w, abs=1e-8)
    # their sampled privacy-loss tail: a = 1, D = 1, q = 0.8, REMOVE: losses +-0.8648, -0.7046
    r, _ = O.poisson_pairs(1.0, 1, 0.8)
    assert float(mp.log(r[0][0] / r[0][1])) == pytest.approx(0.86483972516319, abs=1e-12)
    assert float(mp.log(r[1][0] / r[1][1])) == pytest.approx(-0.7046054708796525, abs=1e-12)


@pytest.mark.parametrize("a, D, q", [(0.3, 1, 0.5), (1.0, 2, 0.1), (2.0, 5, 0.9),
                                     (0.05, 3, 0.02)])
def test_oracle_against_dp_accounting_live(a, D, q):
    """dp-accounting's DiscreteLaplacePrivacyLoss.get_delta_for_epsilon (its closed form, no
    discretisation) against the oracle, both directions."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_mechanism as plm
    rem, add = O.poisson_pairs(a, D, q)
    eps = [-0.5, 0.0, 0.01, 0.2, 0.7, 1.5]
    for adj, pair in ((plm.AdjacencyType.REMOVE, rem), (plm.AdjacencyType.ADD, add)):
        pl = plm.DiscreteLaplacePrivacyLoss(a, sensitivity=D, sampling_prob=q,
                                            adjacency_type=adj)
        theirs = pl.get_delta_for_epsilon(eps)
        for e, t in zip(eps, theirs):
            assert float(O.delta_of(pair, e)) == pytest.approx(t, rel=1e-9, abs=1e-15), (adj, e)
    pl = plm.DiscreteLaplacePrivacyLoss(a, sensitivity=D)
    for e in eps:
        assert float(O.delta_closed(a, D, e)) == pytest.approx(
            pl.get_delta_for_epsilon(e), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("a, D, T", [(0.7, 1, 4), (0.3, 2, 3), (1.2, 3, 2), (0.05, 3, 4),
                                     (2.0, 2, 4)])
def test_oracle_compositions_agree(a, D, T):
    """Lattice convolution vs multiset enumeration vs the plain product; eps(delta) by segment
    inversion vs bisection."""
    lat = O.compose_lattice(a, D, T)
    base = O.base_pair(a, D)
    prod = O.compose_product(base, T)
    brute = O.compose_brute(base, T)
    assert abs(mp.fsum(p for p, _ in lat) - 1) < mp.mpf(10) ** -45
    top = pure(a, D, T)
    for eps in (0.0, 0.1, top / 4, top / 2, top * mp.mpf(0.9), top):
        x = [O.delta_of(pr, eps) for pr in (lat, prod, brute)]
        assert max(x) - min(x) < mp.mpf(10) ** -40, (eps, x)
    assert O.delta_of(lat, top) < mp.mpf(10) ** -45          # zero up to the 50 digits
    for delta in (1e-9, 1e-5, 1e-2, 0.3):
        seg = O.epsilon_of(lat, delta)
        bis = O.epsilon_bisect([brute], delta)
        assert abs(seg - bis) < mp.mpf(10) ** -30, (delta, seg, bis)
        # the definition: delta(eps(delta)) = delta when eps(delta) > 0
        if seg > 0:
            assert abs(O.delta_of(lat, seg) - delta) < mp.mpf(10) ** -35


@pytest.mark.parametrize("a, D", [(0.1, 1), (0.5, 2), (1.0, 3), (2.0, 5)])
def test_oracle_renyi_closed_form(a, D):
    K = int(math.ceil(120 / a))
    pair = O.base_pair(a, D)
    for alpha in (1.001, 1.5, 2, 3, 7.25, 32):
        c = O.rdp_closed(a, D, alpha)
        assert abs(c - O.rdp_of(pair, alpha)) < mp.mpf(10) ** -40 * max(1, c)
        t = O.rdp_truncated(a, D, alpha, K)
        assert abs(c - t) < mp.mpf(10) ** -30, (alpha, c, t)
        assert 0 < c < pure(a, D)                    # below D_inf = a D
    # D = 1 is randomized response with eps = a: (e^{(al-1) a} + e^{-al a}) / (1 + e^{-a})
    al = mp.mpf(2.5)
    rr = mp.log((mp.exp((al - 1) * a) + mp.exp(-al * a)) / (1 + mp.exp(-mp.mpf(a)))) / (al - 1)
    assert abs(O.rdp_closed(a, 1, al) - rr) < mp.mpf(10) ** -40


@pytest.mark.parametrize("a, D, q", [(0.5, 1, 0.1), (1.0, 2, 0.3), (2.0, 3, 0.05)])
def test_oracle_poisson_pairs_from_pmfs(a, D, q):
    """The cell pairs of the subsampled mixtures against the mixtures' pmfs summed directly."""
    rem, add = O.poisson_pairs(a, D, q)
    mix = [(1 - mp.mpf(q), D), (mp.mpf(q), 0)]                # (1-q) Q + q P
    generic = O.pair_atoms(a, mix, [(1, D)])
    for (p, qq), (p2, q2) in zip(rem, generic):
        assert abs(p - p2) < mp.mpf(10) ** -45 and abs(qq - q2) < mp.mpf(10) ** -45
    K = int(math.ceil(120 / a))
    for eps in (0.0, 0.01, 0.1, 0.5):
        x = mp.exp(eps)
        brute_rem = brute_add = mp.mpf(0)
        for k in range(-K, K + D + 1):
            m_k = (1 - mp.mpf(q)) * O.pmf(a, k, D) + q * O.pmf(a, k)
            q_k = O.pmf(a, k, D)
            brute_rem += max(m_k - x * q_k, 0)
            brute_add += max(q_k - x * m_k, 0)
        assert abs(O.delta_of(rem, eps) - brute_rem) < mp.mpf(10) ** -40
        assert abs(O.delta_of(add, eps) - brute_add) < mp.mpf(10) ** -40


# --- dpamp against the oracle: one step and compositions ----------------------------------------

#: (a, D, T, delta): T <= 4 and D <= 3 are also enumerated atom by atom in the oracle tests
EPS_CASES = [
    (0.1, 1, 1, 1e-5), (0.1, 1, 4, 1e-3), (0.5, 1, 3, 1e-6), (1.0, 1, 2, 1e-2),
    (2.0, 1, 4, 1e-5), (0.3, 2, 1, 1e-4), (0.5, 2, 3, 1e-5), (1.0, 2, 4, 1e-8),
    (0.05, 3, 4, 1e-5), (0.7, 3, 2, 1e-3), (1.5, 3, 1, 1e-6), (0.5, 5, 10, 1e-5),
    (0.2, 3, 30, 1e-6),
    # many interior cells: an off-by-one in the geometric middle would show here
    (0.02, 50, 1, 1e-6), (0.01, 200, 2, 1e-5),
]


@pytest.mark.parametrize("case", EPS_CASES, ids=_ids)
def test_epsilon_bracket_and_tightness(case):
    a, D, T, delta = case
    exact = O.epsilon_of(exact_pair_T(a, D, T), delta)
    if T <= 4 and D <= 3:
        assert abs(exact - O.epsilon_max([O.compose_product(O.base_pair(a, D), T)], delta)) \
            < mp.mpf(10) ** -30
    assert 0 < exact < pure(a, D, T)
    m = times(DL(a, D), T)
    for method in ("pld", "auto"):
        g = m.epsilon(delta, method=method)
        assert g.delta == delta
        up = assert_bracket(g, exact, "epsilon", (case, method))
        assert_tight(up, exact, (case, method))
    # the RDP method: an upper bound only
    assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= exact
    if T == 1 and "profile" in dp.available_methods(DL(a, D)):
        g = DL(a, D).epsilon(delta, method="profile")
        assert_tight(assert_bracket(g, exact, "epsilon", (case, "profile")), exact, case)


def test_substitution_has_the_same_pair():
    """Under substitution the query moves by at most D too: the same pair, the same curve."""
    a, D, T, delta = 0.5, 2, 3, 1e-5
    exact = O.epsilon_of(exact_pair_T(a, D, T), delta)
    for method in ("pld", "auto"):
        g = (DL(a, D, S) * T).epsilon(delta, method=method)
        assert_tight(assert_bracket(g, exact, "epsilon", method), exact, method)


def test_epsilon_zero_when_delta_exceeds_delta_at_zero():
    """a = 0.1, D = 1: delta(0) = (1 - e^{-0.1}) / (1 + e^{-0.1}) ~ 0.05, so eps(0.5) = 0."""
    assert O.delta_closed(0.1, 1, 0) < 0.5
    for method in ("pld", "auto"):
        g = DL(0.1).epsilon(0.5, method=method)
        assert g.epsilon <= 1e-9 and (g.lower is None or g.lower <= 0)


#: (a, D, T, eps as a fraction of the pure epsilon T a D)
DELTA_CASES = [(0.1, 1, 1, 0.5), (0.5, 2, 3, 0.0), (0.5, 2, 3, 0.3), (1.0, 3, 2, 0.8),
               (2.0, 1, 4, 0.6), (0.05, 3, 4, 0.2), (0.7, 2, 10, 0.4)]


@pytest.mark.parametrize("case", DELTA_CASES, ids=_ids)
def test_delta_bracket_and_tightness(case):
    a, D, T, frac = case
    eps = frac * a * D * T
    exact = O.delta_of(exact_pair_T(a, D, T), eps)
    assert exact > 1e-6
    m = times(DL(a, D), T)
    for method in ("pld", "auto"):
        g = m.delta(eps, method=method)
        assert g.epsilon == eps
        up = assert_bracket(g, exact, "delta", (case, method))
        assert up <= float(exact) * (1 + TIGHT) + 1e-12, (case, method, up, float(exact))
    assert mp.mpf(m.delta(eps, method="rdp").delta) >= exact


@pytest.mark.parametrize("a, D, T", [(0.3, 1, 1), (1.0, 2, 1), (0.5, 3, 2), (2.0, 2, 3)])
def test_privacy_profile(a, D, T):
    eps = np.array([0.0, 0.05, 0.3, 1.0, 2.5])
    m = times(DL(a, D), T)
    got = np.atleast_1d(dp.privacy_profile(m, eps))
    pair = exact_pair_T(a, D, T)
    for e, d in zip(eps, got):
        ex = O.delta_of(pair, e)
        assert mp.mpf(float(d)) >= ex, (e, d, float(ex))
        assert d <= float(ex) * (1 + TIGHT) + 1e-12, (e, d, float(ex))


@pytest.mark.parametrize("a, D", [(0.1, 1), (0.5, 2), (1.0, 3), (2.5, 5), (0.01, 1)])
def test_rdp_is_exact(a, D):
    alphas = np.array([1.001, 1.5, 2.0, 3.0, 7.25, 32.0, 256.0])
    m = DL(a, D)
    got = np.asarray(m.rdp(alphas))
    assert got.shape == alphas.shape                 # vectorised
    for al, v in zip(alphas, got):
        ex = O.rdp_closed(a, D, al)
        assert mp.mpf(float(v)) >= ex, (al, v, float(ex))       # a proven upper bound
        # tight to 1e-9, except near alpha = 1, where the log-moment is a difference of O(1)
        # terms and its rounding bound, divided by alpha - 1, is carried as a pad
        slack = 1e-9 if al >= 1.01 else 1e-6
        assert float(v) <= float(ex) * (1 + slack) + 1e-15, (al, v, float(ex))
    one = m.rdp(2.0)                                 # scalar in, float out
    assert isinstance(one, float) and one == pytest.approx(got[2], rel=1e-14)
    # composition adds the curves (Mironov 2017)
    comp = np.asarray((m * 7).rdp(alphas))
    for al, v in zip(alphas, comp):
        ex = 7 * O.rdp_closed(a, D, al)
        slack = 1e-9 if al >= 1.01 else 1e-6          # the single step's pad, as above
        assert mp.mpf(float(v)) >= ex, (al, v, float(ex))
        assert float(v) <= float(ex) * (1 + slack) + 1e-15, (al, v, float(ex))


def test_rdp_at_infinity_is_the_pure_epsilon():
    for a, D in [(0.5, 2), (1.5, 3)]:
        v = DL(a, D).rdp(math.inf)
        assert pure(a, D) <= v <= a * D * (1 + 1e-12)


# --- pure DP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, D, T", [(0.1, 1, 1), (0.5, 2, 1), (1.0, 3, 3), (2.0, 5, 2)])
def test_pure_dp(a, D, T):
    """The loss never exceeds a D per step (Ghosh et al. 2009: the geometric mechanism is
    (aD)-DP), so delta(T a D) = 0; just below, delta > 0 (the top cell has P-mass
    (1 + e^{-a})^{-T})."""
    m = times(DL(a, D), T)
    top = a * D * T
    for method in ("pld", "auto"):
        assert m.delta(top, method=method).delta <= 1e-12
        below = top * (1 - 1e-2)
        g = m.delta(below, method=method)
        assert_bracket(g, O.delta_of(exact_pair_T(a, D, T), below), "delta")
        assert g.delta > 0
        e0 = m.epsilon(0.0, method=method).epsilon
        assert pure(a, D, T) <= e0 <= top * (1 + 1e-12)


def test_dp_accountings_basic_composition_is_pure():
    """dp-accounting's test_discrete_laplace_basic: DLap(1) x 3 then DLap(0.5) x 2 (sensitivity
    1) is 4-DP, delta(4) = 0 and eps(0) = 4."""
    m = dp.compose(DL(1.0) * 3, DL(0.5) * 2)
    assert m.delta(4.0).delta <= 1e-12
    assert 4.0 <= m.epsilon(0.0).epsilon <= 4.0 * (1 + 1e-12)
    # the composed pair is the product of the two lattices: check the oracle says so too
    pair = O.compose_product(O.base_pair(1.0, 1), 3)
    pair = [(p1 * p2, q1 * q2) for p1, q1 in pair
            for p2, q2 in O.compose_product(O.base_pair(0.5, 1), 2)]
    assert O.delta_of(pair, 4.0) == 0
    g = m.epsilon(1e-3)
    assert_tight(assert_bracket(g, O.epsilon_of(pair, 1e-3), "epsilon"), O.epsilon_of(pair, 1e-3))


# --- Poisson subsampling ------------------------------------------------------------------------

#: (a, D, q, T, delta)
POISSON_CASES = [(0.5, 1, 0.1, 1, 1e-5), (1.0, 2, 0.01, 3, 1e-6), (2.0, 3, 0.5, 2, 1e-3),
                 (0.3, 3, 0.2, 3, 1e-5), (3.0, 1, 0.05, 3, 1e-6), (1.0, 1, 0.9, 2, 1e-4),
                 (0.1, 20, 0.05, 2, 1e-6)]


def _poisson_exact(a, D, q, T):
    rem, add = O.poisson_pairs(a, D, q)
    return [O.compose_product(rem, T), O.compose_product(add, T)]


@pytest.mark.parametrize("case", POISSON_CASES,
                         ids=lambda c: "a{:g}-D{}-q{:g}-T{}-d{:g}".format(*c))
def test_poisson_epsilon_bracket(case):
    a, D, q, T, delta = case
    pairs = _poisson_exact(a, D, q, T)
    exact = O.epsilon_max(pairs, delta)
    assert abs(exact - O.epsilon_bisect(pairs, delta)) < mp.mpf(10) ** -30
    m = times(DL(a, D).subsample(dp.Poisson(q)), T)
    for method in ("pld", "auto"):
        g = m.epsilon(delta, method=method)
        up = assert_bracket(g, exact, "epsilon", (case, method))
        assert_tight(up, exact, (case, method))
    assert mp.mpf(m.epsilon(delta, method="rdp").epsilon) >= exact


@pytest.mark.parametrize("case", POISSON_CASES,
                         ids=lambda c: "a{:g}-D{}-q{:g}-T{}".format(*c[:4]))
def test_poisson_delta_bracket(case):
    a, D, q, T, _ = case
    pairs = _poisson_exact(a, D, q, T)
    m = times(DL(a, D).subsample(dp.Poisson(q)), T)
    for eps in (0.0, 0.05, 0.5):
        exact = O.delta_max(pairs, eps)
        for method in ("pld", "auto"):
            g = m.delta(eps, method=method)
            up = assert_bracket(g, exact, "delta", (case, eps, method))
            if exact > 1e-9:
                assert up <= float(exact) * (1 + TIGHT) + 1e-12, (case, eps, method, up)
            else:
                assert up <= 1e-9


@pytest.mark.parametrize("a, D, q", [(0.5, 1, 0.1), (1.0, 2, 0.3), (2.0, 3, 0.05)])
def test_poisson_rdp(a, D, q):
    """The subsampled mechanism's exact RDP is the worse direction's Renyi divergence of the
    pairs (they are attained, and dominate in hockey-stick hence in every f-divergence: Zhu,
    Dong & Wang 2022). dpamp's curve must lie above it at every order; at integer orders the
    binomial expansion of E_Q[(1 - q + q P/Q)^alpha] is exact, so there it must be tight.
    (At fractional orders it may be loose: e.g. 2.2x at alpha = 1.5 for a = 2, D = 3,
    q = 0.05, when this was written.)"""
    rem, add = O.poisson_pairs(a, D, q)
    alphas = [1.5, 2.0, 3.0, 5.5, 16.0]
    got = np.asarray(DL(a, D).subsample(dp.Poisson(q)).rdp(alphas))
    for al, v in zip(alphas, got):
        ex = max(O.rdp_of(rem, al), O.rdp_of(add, al))
        assert mp.mpf(float(v)) >= ex, (al, v, float(ex))
        if float(al).is_integer():
            assert float(v) <= float(ex) * (1 + 1e-9) + 1e-15, (al, v, float(ex))


# --- sampling without replacement (substitution) ------------------------------------------------

@pytest.mark.parametrize("a, D, b, n, T, eps", [(1.0, 2, 10, 100, 1, 0.05),
                                                (0.5, 3, 1, 4, 2, 0.1),
                                                (2.0, 1, 5, 50, 1, 0.1)])
def test_without_replacement_covers_attained_pairs(a, D, b, n, T, eps):
    """Every record but one is 0; the differing record is u in D and u - D in D' (a sum of
    integers moves by at most D under substitution). A batch of b out of n contains it with
    probability g = b/n: outputs g DLap(u) + (1-g) DLap(0) and g DLap(u - D) + (1-g) DLap(0).
    The worst case over datasets is at least every such pair in both orders, composed T times
    on the same datasets, so dpamp's upper bound must cover them."""
    g = mp.mpf(b) / n
    attained = mp.mpf(0)
    for u in range(D + 1):
        pair = O.pair_atoms(a, [(g, u), (1 - g, 0)], [(g, u - D), (1 - g, 0)])
        for pr in (pair, [(q, p) for p, q in pair]):
            attained = max(attained, O.delta_of(O.compose_product(pr, T), eps))
    assert attained > 0
    m = times(DL(a, D, relation=S).subsample(dp.WithoutReplacement(b, n)), T)
    for method in ("pld", "auto"):
        up = m.delta(eps, method=method).delta
        assert mp.mpf(up) >= attained, (method, up, float(attained))


def test_without_replacement_needs_substitution():
    with pytest.raises(ValueError):
        DL(1.0, 1, relation=A).subsample(dp.WithoutReplacement(5, 50))


# --- dp-accounting as a peer --------------------------------------------------------------------

PEER = [(a, D, T) for a in (0.1, 0.5, 1.0, 2.0) for D in (1, 2, 5) for T in (1, 10, 100)]
PEER_FAST = {(0.5, 2, 100), (2.0, 5, 100)}


def _peer_param(c):
    marks = [pytest.mark.slow] if c[2] == 100 and c not in PEER_FAST else []
    return pytest.param(*c, marks=marks, id="a{:g}-D{}-T{}".format(*c))


@pytest.mark.parametrize("a, D, T", [_peer_param(c) for c in PEER])
def test_against_dp_accounting_pld(a, D, T):
    """dp-accounting's PLDAccountant (pessimistic discretisation, 1e-4 grid) on
    DiscreteLaplaceDpEvent(a, D) composed T times, at delta = 1e-5. Its value is an upper
    bound: ours lower <= it; ours upper <= it (1 + 1e-2) + 1e-6; and the exact eps lies below
    both uppers."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    from dp_accounting.pld import pld_privacy_accountant as P
    delta = 1e-5
    acc = P.PLDAccountant()
    acc.compose(E.DiscreteLaplaceDpEvent(noise_parameter=a, sensitivity=D), T)
    theirs = acc.get_epsilon(delta)
    exact = O.epsilon_of(exact_pair_T(a, D, T), delta)
    # the oracle against the peer: their pessimistic PLD never reports below the exact value
    assert mp.mpf(theirs) >= exact * (1 - mp.mpf(10) ** -9), (theirs, float(exact))
    g = times(DL(a, D), T).epsilon(delta)
    assert g.lower is None or g.lower <= theirs * (1 + 1e-6)
    assert g.epsilon <= theirs * (1 + 1e-2) + 1e-6, (g.epsilon, theirs, float(exact))
    assert_bracket(g, exact, "epsilon", (a, D, T))


def test_from_dp_event():
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    ev = E.DiscreteLaplaceDpEvent(noise_parameter=0.5, sensitivity=2)
    assert dp.from_dp_event(ev) == dp.DiscreteLaplace(0.5, sensitivity=2)
    assert dp.from_dp_event(E.DiscreteLaplaceDpEvent(1.5, 1)) == DL(1.5)
    assert dp.from_dp_event(E.SelfComposedDpEvent(ev, 7)) == DL(0.5, 2) * 7
    assert dp.from_dp_event(E.PoissonSampledDpEvent(0.1, ev)) == \
        DL(0.5, 2).subsample(dp.Poisson(0.1))
    composed = E.ComposedDpEvent([E.SelfComposedDpEvent(E.DiscreteLaplaceDpEvent(1, 1), 3),
                                  E.SelfComposedDpEvent(E.DiscreteLaplaceDpEvent(0.5, 1), 2)])
    x = dp.from_dp_event(composed)
    assert x == dp.compose(DL(1.0) * 3, DL(0.5) * 2)
    assert 4.0 <= x.epsilon(0.0).epsilon <= 4.0 * (1 + 1e-12)
    # noise_parameter 0 is no noise (dp-accounting: not DP)
    with pytest.raises(ValueError):
        dp.from_dp_event(E.DiscreteLaplaceDpEvent(0.0, 1))


# --- serialisation and plans --------------------------------------------------------------------

@pytest.mark.parametrize("m", [
    lambda: DL(0.5, 2), lambda: DL(1.25, 1, S), lambda: DL(0.3, 3).subsample(dp.Poisson(0.1)) * 4,
    lambda: dp.compose(DL(1.0) * 3, dp.Gaussian(2.0)),
])
def test_json_round_trip(m):
    m = m()
    text = m.to_json()
    back = dp.from_json(text)
    assert back == m
    assert back.to_json() == text


@pytest.mark.parametrize("extra, want", [
    ("", lambda: DL(0.5, 2) * 3),
    ('sampler = "poisson"\nsample_rate = 0.1\n',
     lambda: DL(0.5, 2).subsample(dp.Poisson(0.1)) * 3),
])
def test_plan_word(extra, want):
    from dpamp.io.plan import parse_plan_text
    text = ('delta = 1e-5\n[[stage]]\nmechanism = "discrete_laplace"\na = 0.5\n'
            'sensitivity = 2\nsteps = 3\n' + extra)
    plan = parse_plan_text(text)
    assert plan.mechanism == want()
    assert plan.stages[0].step == (DL(0.5, 2) if not extra
                                   else DL(0.5, 2).subsample(dp.Poisson(0.1)))


def test_plan_word_rejects_bad_values():
    from dpamp.io.plan import PlanError, parse_plan_text
    for body, key in [("a = -1\nsensitivity = 1\n", "'a'"),
                      ("a = 0.5\nsensitivity = 1.5\n", "'sensitivity'")]:
        with pytest.raises(PlanError, match=key):
            parse_plan_text('delta = 1e-5\n[[stage]]\nmechanism = "discrete_laplace"\n'
                            + body + "steps = 1\n")


# --- properties ---------------------------------------------------------------------------------

def _mono(g_small, g_big):
    """g_small's exact value <= g_big's: a sound check (lower <= exact <= exact <= upper) and a
    tolerance-level one on the two uppers."""
    if g_small.lower is not None:
        assert g_small.lower <= g_big.delta
    assert g_small.delta <= g_big.delta * (1 + TIGHT) + 1e-12


@settings(max_examples=15, deadline=None)
@given(a=st.floats(0.05, 3.0), r=st.floats(1.05, 4.0), D=st.integers(1, 3),
       T=st.integers(1, 3), f=st.floats(0.0, 0.9))
def test_delta_non_decreasing_in_a(a, r, D, T, f):
    """A larger a is less noise (the scale is 1/a), so delta(eps) is non-DEcreasing in a
    (non-increasing in the scale). Proof: for a < a', r = e^{-a} > r' = e^{-a'},
    DLap(a) = DLap(a') + Z with Z independent, Z's pmf proportional to
    g(k) = (1 + r'^2) r^{|k|} - r' r^{|k-1|} - r' r^{|k+1|}, which is
    r^{|k|} (1 - r'/r)(1 - r r') >= 0 for k != 0 and 1 + r'^2 - 2 r r' > 0 at 0 (the ratio of
    the characteristic functions (1-r)^2 / (1 - 2r cos t + r^2) over the same with r'). So the
    mechanism with a is a post-processing of the one with a'."""
    eps = f * a * D * T
    lo, hi = DL(a, D) * T, DL(a * r, D) * T
    g_lo, g_hi = lo.delta(eps), hi.delta(eps)
    _mono(g_lo, g_hi)
    ex_lo = O.delta_of(O.compose_lattice(a, D, T), eps)
    ex_hi = O.delta_of(O.compose_lattice(a * r, D, T), eps)
    assert ex_lo <= ex_hi
    assert_bracket(g_lo, ex_lo, "delta")
    assert_bracket(g_hi, ex_hi, "delta")


@settings(max_examples=15, deadline=None)
@given(a=st.floats(0.05, 3.0), D=st.integers(1, 3), T=st.integers(1, 4), dT=st.integers(1, 4),
       eps=st.floats(0.0, 3.0))
def test_delta_non_decreasing_in_steps(a, D, T, dT, eps):
    g1, g2 = (DL(a, D) * T).delta(eps), (DL(a, D) * (T + dT)).delta(eps)
    _mono(g1, g2)
    assert_bracket(g2, O.delta_of(O.compose_lattice(a, D, T + dT), eps), "delta")


@settings(max_examples=15, deadline=None)
@given(a=st.floats(0.1, 3.0), D=st.integers(1, 3), q=st.floats(0.001, 0.9),
       r=st.floats(1.05, 5.0), T=st.integers(1, 2), eps=st.floats(0.0, 1.0))
def test_delta_non_decreasing_in_poisson_rate(a, D, q, r, T, eps):
    q2 = min(1.0, q * r)
    g1 = (DL(a, D).subsample(dp.Poisson(q)) * T).delta(eps)
    g2 = (DL(a, D).subsample(dp.Poisson(q2)) * T).delta(eps)
    _mono(g1, g2)
    if q2 < 1.0:
        assert_bracket(g2, O.delta_max(_poisson_exact(a, D, q2, T), eps), "delta")


# --- validation ---------------------------------------------------------------------------------

_NAMES_A = r"^a\b|['\"`]a['\"`]|\ba ?="


@pytest.mark.parametrize("a", [0.0, -1.0, float("nan"), -math.inf])
def test_invalid_a(a):
    with pytest.raises(ValueError, match=_NAMES_A):
        dp.DiscreteLaplace(a)
    with pytest.raises(ValueError, match=_NAMES_A):
        dp.DiscreteLaplace(a, sensitivity=2)


@pytest.mark.parametrize("s", [0, -1, 1.5, float("nan"), 0.5, math.inf])
def test_invalid_sensitivity(s):
    with pytest.raises(ValueError, match="sensitivity"):
        dp.DiscreteLaplace(1.0, sensitivity=s)


@settings(max_examples=20, deadline=None)
@given(a=st.one_of(st.floats(max_value=0.0), st.just(float("nan"))), s=st.integers(1, 5))
def test_invalid_a_property(a, s):
    with pytest.raises(ValueError, match=_NAMES_A):
        dp.DiscreteLaplace(a, sensitivity=s)
