"""dp.KaryRandomizedResponse against brute force in mpmath and against dp-accounting.

The mechanism reports a value in {0..k-1}: the true one with probability 1 - p, else a uniform
draw from all k. The oracle here never uses the three-outcome pair dpamp is built on: it takes
the k output probabilities of inputs 0 and 1 as they are (R(v)[o] = (1 - p)[o = v] + p/k) and,
for T-fold composition, enumerates all k^T output sequences (k = 3, 5; T <= 4), at 50 digits:

    delta(eps) = sum_o (P(o) - e^eps Q(o))_+,   D_alpha = log sum_o P(o)^alpha Q(o)^(1-alpha) / (alpha-1).

dpamp's brackets (every method that applies) must contain the truth and be tight; the pure
epsilon and the Rényi curve are held to the exact values; dp-accounting's PLD accountant (its
own three-outcome pair, composed as a ComposedDpEvent of T events: its 0.6.0 PLD accountant
composes a RandomizedResponseDpEvent inside SelfComposedDpEvent once, whatever the count, which
is checked below) and RDP curve agree. Reading dp-accounting's event as this mechanism (and not
as pure DP, whose lower bound lies above this mechanism's truth) is checked last.
"""
import itertools
import math

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION
DPS = 50


@pytest.fixture(autouse=True)
def _digits():
    with mp.workdps(DPS):
        yield


def rows(p, k):
    """The output laws of inputs 0 and 1, all k outcomes (no lumping), exact from the floats."""
    p, k = mp.mpf(p), mp.mpf(k)
    def law(v):
        return [(1 - p) * (o == v) + p / k for o in range(int(k))]
    return law(0), law(1)


def composed(p, k, T):
    """(P, Q) of T independent runs, by enumerating the k^T output sequences."""
    P1, Q1 = rows(p, k)
    out_p, out_q = [], []
    for seq in itertools.product(range(k), repeat=T):
        out_p.append(mp.fprod(P1[o] for o in seq))
        out_q.append(mp.fprod(Q1[o] for o in seq))
    return out_p, out_q


def exact_delta(P, Q, eps):
    x = mp.e ** mp.mpf(eps)
    return mp.fsum(max(a - x * b, 0) for a, b in zip(P, Q))


def exact_epsilon(P, Q, delta):
    """The smallest eps >= 0 with delta(eps) <= delta (delta(eps) is decreasing)."""
    if exact_delta(P, Q, 0) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), max(mp.log(a / b) for a, b in zip(P, Q))
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if exact_delta(P, Q, mid) <= delta else (mid, hi)
    return hi


def exact_renyi(P, Q, alpha):
    alpha = mp.mpf(alpha)
    return mp.log(mp.fsum(a ** alpha * b ** (1 - alpha) for a, b in zip(P, Q))) / (alpha - 1)


CASES = [(3, 0.5), (5, 0.4), (3, 0.9), (5, 0.05)]


@pytest.mark.parametrize("k, p", CASES)
def test_pure_epsilon_is_the_likelihood_ratio(k, p):
    m = dp.KaryRandomizedResponse(k, p)
    P, Q = rows(p, k)
    eps = mp.log(P[0] / Q[0])
    assert m.pure_epsilon() >= eps and m.pure_epsilon() <= eps * (1 + 1e-14)
    assert m.rdp(math.inf) == m.pure_epsilon()
    assert m.renyi(math.inf).lower <= eps


@pytest.mark.parametrize("k, p", CASES)
def test_renyi_curve_is_exact_at_real_orders(k, p):
    m = dp.KaryRandomizedResponse(k, p)
    P, Q = rows(p, k)
    alphas = [1 + 1e-9, 1 + 1e-4, 1.25, 2.0, 3.5, 32.0, 1e4, 1e8]
    br = m.renyi(alphas)
    for a, up, lo in zip(alphas, br.upper, br.lower):
        exact = exact_renyi(P, Q, a)
        assert lo <= exact <= up, (a, lo, exact, up)
        assert up <= exact * (1 + 1e-12) + 1e-300, (a, up, exact)
        assert lo >= exact * (1 - 1e-12), (a, lo, exact)


@pytest.mark.parametrize("k, p", [(3, 1 - 1e-12), (2 ** 53, 0.5), (3, 1e-200), (2 ** 40, 1e-300),
                                  (1000, 0.999999), (2, 0.3)])
def test_extreme_parameters(k, p):
    """Near-zero and near-overflow epsilons, huge k, orders near 1 and past the far form's
    switch (x = (alpha - 1) eps > 700): the curve and the profile still bracket the truth
    tightly, without warnings (they are errors in the suite)."""
    m = dp.KaryRandomizedResponse(k, p)
    P, Q = rows(p, 2) if k == 2 else _lumped(p, k)
    alphas = [1 + 1e-12, 1 + 1e-6, 1.5, 2.0, 10.0, 1e3, 1e6, 1e300]
    br = m.renyi(alphas)
    for a, up, lo in zip(alphas, br.upper, br.lower):
        exact = exact_renyi(P, Q, a)
        assert lo <= exact <= up and up <= exact * (1 + 1e-10), (a, lo, exact, up)
    eps = np.array([0.0, 0.5 * m.pure_epsilon(), 2.0])
    up, low = np.asarray(m.profile(eps)), dp.profile_pair_lower(m, eps)[0]
    for e, u, lo in zip(eps, up, low):
        exact = exact_delta(P, Q, e)
        assert lo <= exact <= u and u <= exact * (1 + 1e-10) + 1e-300, (e, lo, exact, u)


def _lumped(p, k):
    """The three classes {0}, {1}, the rest (k too large to list every outcome)."""
    p, k = mp.mpf(p), mp.mpf(k)
    a, b, c = 1 - p + p / k, p / k, p * (k - 2) / k
    return [a, b, c], [b, a, c]


def test_renyi_both_directions_equal():
    """The pair is symmetric: D_alpha(Q || P) = D_alpha(P || Q) (so one curve serves both)."""
    P, Q = rows(0.3, 5)
    for a in (1.5, 4.0):
        assert exact_renyi(Q, P, a) == pytest.approx(exact_renyi(P, Q, a), rel=1e-40)


@pytest.mark.parametrize("k, p, T", [(3, 0.5, 1), (3, 0.5, 4), (5, 0.4, 2), (5, 0.4, 4),
                                      (3, 0.9, 3), (5, 0.05, 2)])
def test_delta_of_t_fold_composition_against_enumeration(k, p, T):
    m = dp.KaryRandomizedResponse(k, p, S)
    mech = m * T if T > 1 else m
    P, Q = composed(p, k, T)
    for eps in (0.1, 0.5, 1.0, 2.5):
        exact = exact_delta(P, Q, eps)
        for method in dp.available_methods(mech):       # every method: sound both ways
            g = mech.delta(eps, method=method)
            assert g.delta >= exact, (method, eps, g, exact)
            if g.lower is not None:
                assert g.lower <= exact, (method, eps, g, exact)
        g = mech.delta(eps, method="pld")
        assert g.lower is not None and g.delta <= exact * (1 + 2e-3) + 1e-12, (eps, g, exact)


@pytest.mark.parametrize("k, p, T", [(3, 0.5, 4), (5, 0.4, 3)])
def test_epsilon_of_t_fold_composition_against_enumeration(k, p, T):
    m = dp.KaryRandomizedResponse(k, p, S)
    P, Q = composed(p, k, T)
    for delta in (1e-2, 1e-5):
        exact = exact_epsilon(P, Q, delta)
        for method in dp.available_methods(m * T):
            g = (m * T).epsilon(delta, method=method)
            assert g.epsilon >= exact, (method, delta, g, exact)
            if g.lower is not None:
                assert g.lower <= exact, (method, delta, g, exact)
        g = (m * T).epsilon(delta, method="pld")
        assert g.epsilon <= exact * (1 + 2e-3), (g, exact)


@pytest.mark.parametrize("k, p", [(3, 0.5), (5, 0.4)])
def test_profile_is_the_pair_diluted_randomized_response_profile(k, p):
    """delta(eps) = (a + b) RR_eps0(eps): the binary-RR profile times the mass off the
    zero-loss outcomes, and strictly below pure eps0-DP's lower bound (the old reading)."""
    m = dp.KaryRandomizedResponse(k, p)
    P, Q = rows(p, k)
    eps_grid = np.array([0.0, 0.3, 1.0, 2.0])
    prof = np.asarray(m.profile(eps_grid))
    for e, v in zip(eps_grid, prof):
        exact = exact_delta(P, Q, e)
        assert exact <= v <= exact * (1 + 1e-12), (e, v, exact)
    old = dp.PureDP(m.pure_epsilon())
    for e in (0.3, 1.0):
        assert m.delta(e).delta < old.delta(e).lower


def _poisson_pair(p, k, q):
    """((1-q) Q + q P, Q) on the k outputs: the remove order of Poisson sampling at rate q."""
    P, Q = rows(p, k)
    q = mp.mpf(q)
    return [(1 - q) * b + q * a for a, b in zip(P, Q)], Q


def _product(pair, T):
    P1, Q1 = pair
    n = len(P1)
    out_p, out_q = [], []
    for seq in itertools.product(range(n), repeat=T):
        out_p.append(mp.fprod(P1[o] for o in seq))
        out_q.append(mp.fprod(Q1[o] for o in seq))
    return out_p, out_q


@pytest.mark.parametrize("T", [1, 3])
def test_poisson_subsampled_against_enumeration(T):
    """Poisson sampling (add/remove) of the pair: the worse of ((1-q)Q + qP, Q) and its swap
    (Zhu, Dong & Wang 2022), both enumerated over the k^T sequences."""
    k, p, q = 3, 0.3, 0.2
    mech = dp.KaryRandomizedResponse(k, p).subsample(dp.Poisson(q)) * T
    rem = _product(_poisson_pair(p, k, q), T)
    add = (rem[1], rem[0])
    for eps in (0.05, 0.3):
        exact = max(exact_delta(*rem, eps), exact_delta(*add, eps))
        g = mech.delta(eps, method="pld")
        assert g.lower <= exact <= g.delta, (eps, g, exact)
        assert g.delta <= exact * (1 + 2e-3) + 1e-12


# --- dp-accounting -------------------------------------------------------------------------------

E = pytest.importorskip("dp_accounting.dp_event")
from dp_accounting import NeighboringRelation as NR  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as PLDA  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as RDPA  # noqa: E402


def _their_pld_epsilon(event, delta, h=1e-4):
    acc = PLDA.PLDAccountant(NR.REPLACE_ONE, value_discretization_interval=h)
    acc.compose(event)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("k, p, T", [(3, 0.5, 1), (5, 0.4, 1), (5, 0.4, 3), (10, 0.2, 2)])
def test_dp_accounting_pld_agrees(k, p, T):
    """dp-accounting's pessimistic PLD of T events (a ComposedDpEvent: see the module
    docstring) lies above our lower bound, and near our upper one."""
    ev = E.RandomizedResponseDpEvent(p, k)
    mech = dp.from_dp_event(E.ComposedDpEvent([ev] * T))
    for delta in (1e-3, 1e-6):
        ours = mech.epsilon(delta, method="pld")
        theirs = _their_pld_epsilon(E.ComposedDpEvent([ev] * T), delta)
        assert theirs >= ours.lower
        assert theirs == pytest.approx(ours.epsilon, rel=2e-3, abs=1e-3 * T)


def test_dp_accounting_pld_composes_self_composed_randomized_response_once():
    """Why the comparisons above use ComposedDpEvent: dp-accounting 0.6.0's PLD accountant
    drops the count of a RandomizedResponseDpEvent inside SelfComposedDpEvent (its RDP
    accountant does not). dpamp reads the count; if a later dp-accounting fixes this, the first
    assertion fails and the comparisons may use SelfComposedDpEvent again."""
    ev = E.RandomizedResponseDpEvent(0.4, 5)
    assert _their_pld_epsilon(E.SelfComposedDpEvent(ev, 3), 1e-5) == \
        _their_pld_epsilon(ev, 1e-5)
    ours = dp.from_dp_event(E.SelfComposedDpEvent(ev, 3))
    assert ours == dp.KaryRandomizedResponse(5, 0.4, S) * 3
    assert ours.epsilon(1e-5, method="pld").lower == pytest.approx(
        _their_pld_epsilon(E.ComposedDpEvent([ev] * 3), 1e-5), rel=1e-3)


@pytest.mark.parametrize("k, p", [(3, 0.5), (5, 0.4), (100, 0.9), (7, 0.01)])
def test_dp_accounting_rdp_agrees(k, p):
    alphas = [1.5, 2.0, 4.0, 16.0, 256.0, math.inf]
    theirs = RDPA._compute_randomized_response_rdp(p, k, alphas, NR.REPLACE_ONE)
    m = dp.KaryRandomizedResponse(k, p, S)
    assert m.rdp(alphas) == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 5, 17])
def test_event_round_trip_every_k(k):
    ev = E.RandomizedResponseDpEvent(0.4, k)
    m = dp.from_dp_event(ev)
    assert dp.from_dp_event(dp.to_dp_event(m), relation=m.relation) == m
    if k == 2:
        # binary randomized response stays what it was: truth probability 1 - p/2, written
        # back as 2 (1 - q), which need not give the float p back (0.3999999999999999 here)
        assert m == dp.RandomizedResponse(0.8, S)
        assert dp.to_dp_event(m).noise_parameter == pytest.approx(0.4, rel=1e-15)
    else:
        assert dp.to_dp_event(m) == ev
        assert m == dp.KaryRandomizedResponse(k, 0.4, S)
        assert dp.to_dp_event(m * 3) == E.SelfComposedDpEvent(ev, 3)


def test_binary_case_agrees_with_randomized_response():
    """k = 2: the same mechanism as dp.RandomizedResponse with truth probability 1 - p/2."""
    kary, rr = dp.KaryRandomizedResponse(2, 0.5), dp.RandomizedResponse(0.75)
    assert kary.pure_epsilon() == pytest.approx(rr.pure_epsilon(), rel=1e-14)
    a = [1.5, 3.0, 50.0]
    assert kary.rdp(a) == pytest.approx(rr.rdp(a), rel=1e-13)
    for mech_k, mech_r, method in ((kary * 4, rr * 4, "pld"), (kary, rr, "profile")):
        x, y = mech_k.delta(0.5, method=method), mech_r.delta(0.5, method=method)
        assert x.delta == pytest.approx(y.delta, rel=2e-3)


# --- descriptions ---------------------------------------------------------------------------------

def test_from_epsilon():
    for k, e in ((3, 1.0), (10, 0.1), (1000, 5.0)):
        m = dp.KaryRandomizedResponse.from_epsilon(e, k)
        assert m.k == k and m.pure_epsilon() == pytest.approx(e, rel=1e-13)
    assert dp.KaryRandomizedResponse.from_epsilon(0.0, 4).noise_parameter == 1.0
    with pytest.raises(ValueError, match="epsilon"):
        dp.KaryRandomizedResponse.from_epsilon(800.0, 3)


def test_no_noise_left_is_zero_dp():
    m = dp.KaryRandomizedResponse(4, 1.0)
    assert m.pure_epsilon() == 0.0
    assert m.epsilon(1e-5).epsilon == 0.0
    assert (m * 3).epsilon(1e-5, method="pld").epsilon == 0.0


@pytest.mark.parametrize("kw, name", [
    ({"k": 1, "noise_parameter": 0.5}, "k"), ({"k": 2.5, "noise_parameter": 0.5}, "k"),
    ({"k": 3, "noise_parameter": 0.0}, "noise_parameter"),
    ({"k": 3, "noise_parameter": 1.5}, "noise_parameter"),
    ({"k": 3, "noise_parameter": float("nan")}, "noise_parameter"),
])
def test_validation_names_the_parameter(kw, name):
    with pytest.raises(ValueError, match=name):
        dp.KaryRandomizedResponse(**kw)


@pytest.mark.parametrize("body, want", [
    ('k = 5\nnoise_parameter = 0.4\n', lambda: dp.KaryRandomizedResponse(5, 0.4, S)),
    ('k = 3\nepsilon = 1.0\n', lambda: dp.KaryRandomizedResponse.from_epsilon(1.0, 3, S)),
])
def test_plan_word(body, want):
    from dpamp.io.plan import parse_plan_text
    plan = parse_plan_text('delta = 1e-5\n[[stage]]\nmechanism = "kary_randomized_response"\n'
                           + body + 'relation = "substitution"\nsteps = 3\n')
    assert plan.mechanism == want() * 3


@pytest.mark.parametrize("body, key", [
    ("noise_parameter = 0.4\n", "'k'"), ("k = 1\nnoise_parameter = 0.4\n", "'k'"),
    ("k = 3\nnoise_parameter = 0\n", "'noise_parameter'"),
    ("k = 3\n", "noise_parameter"),
])
def test_plan_word_rejects_bad_values(body, key):
    from dpamp.io.plan import PlanError, parse_plan_text
    with pytest.raises(PlanError, match=key):
        parse_plan_text('delta = 1e-5\n[[stage]]\nmechanism = "kary_randomized_response"\n'
                        + body + "steps = 1\n")


def _multinomial_epsilon(p, k, T, delta):
    """eps(delta) of T steps from the law of N+ - N- (N+, N-, N0 multinomial with the pair's
    masses a, b, c; the loss is eps (N+ - N-)), every (N+, N-) summed in float64 log space
    (relative error ~1e-13, far inside the brackets checked), inverted by bisection."""
    from scipy.special import gammaln, logsumexp
    a, b = 1 - p + p / k, p / k
    c = 1 - a - b
    eps = math.log(a / b)
    n_plus, n_minus = np.meshgrid(np.arange(T + 1), np.arange(T + 1), indexing="ij")
    ok = n_plus + n_minus <= T
    npl, nmi = n_plus[ok].astype(float), n_minus[ok].astype(float)
    n0 = T - npl - nmi
    lw = (gammaln(T + 1) - gammaln(npl + 1) - gammaln(nmi + 1) - gammaln(n0 + 1)
          + npl * math.log(a) + nmi * math.log(b) + n0 * math.log(c))
    loss = eps * (npl - nmi)

    def dlt(e):
        sel = loss > e
        return math.exp(logsumexp(lw[sel] + np.log(-np.expm1(e - loss[sel]))))
    lo, hi = 0.0, eps * T
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if dlt(mid) <= delta else (mid, hi)
    return hi


def test_thousand_steps_against_the_multinomial_law():
    """1000 steps of k = 3, p = 0.9 (the plan of benchmarks/bench_mechanisms.py): the exact
    63.7136221 (60-digit mpmath by the same sum gives 63.71362214361096) lies in dpamp's
    bracket; pure DP of the same epsilon, the old reading of the event, has a *lower* bound of
    82.7 there."""
    exact = _multinomial_epsilon(0.9, 3, 1000, 1e-6)
    assert exact == pytest.approx(63.71362214361096, rel=1e-11)
    g = (dp.KaryRandomizedResponse(3, 0.9, S) * 1000).epsilon(1e-6, method="pld")
    assert g.lower <= exact <= g.epsilon
    assert g.epsilon - g.lower < 1e-5
    old = dp.PureDP(dp.KaryRandomizedResponse(3, 0.9).pure_epsilon()) * 1000
    assert old.epsilon(1e-6).lower > 1.25 * exact


def test_report_names_the_stage(tmp_path, capsys):
    from dpamp import cli
    plan = tmp_path / "plan.toml"
    plan.write_text('delta = 1e-5\n[[stage]]\nmechanism = "kary_randomized_response"\nk = 5\n'
                    'noise_parameter = 0.4\nrelation = "substitution"\nsteps = 10\n')
    assert cli.main(["report", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "stage 1: k-ary randomized response, k = 5, noise parameter 0.4;" in out
    assert "assumed: k-ary randomized response, k = 5, noise parameter 0.4; 10 steps" in out
