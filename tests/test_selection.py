"""Selection mechanisms (dp.ExponentialMechanism, dp.ReportNoisyMax, dp.PermuteAndFlip) against
exact truths of their own.

* The mechanisms themselves, on a tiny domain: output laws of the exponential mechanism (EM),
  permute-and-flip (PF, by its exact polynomial integral) and report-noisy-max with Gumbel and
  exponential noise (by quadrature of the argmax), utilities of sensitivity 1 on 2 and 3
  candidates on a lattice, every neighbouring utility vector enumerated. Checked: Gumbel-RNM is
  EM and exponential-RNM is PF in distribution; every EM pair is eps-bounded-range and below
  dpamp's one-run upper profile; PF is not eps-BR (a pair with losses eps and
  -log(2 - e^-eps)); every PF pair is below randomized response with eps.
* The attained pairs: the two-candidate EM with the utility gap that gives t = (eps + eps')/2
  reaches dpamp's one-run profile; two candidates whose utilities swap give the pairs behind
  the lower rows (randomized response with eps/2 for EM, log(2e^{eps/2} - 1) for PF).
* RDP: the closed form of the BR class against a numerical supremum over t (mpmath).
* Compositions: the optimal adaptive value for T = 2 (a one-dimensional maximum over t of the
  exact one-run profile) and T = 3 (nested, numerically) inside dpamp's bracket; T runs of one
  pair and products of enumerated EM pairs (exact convolution) below dpamp's upper end.
* Properties (hypothesis): non-decreasing in eps and in T.

dp-accounting 0.6 has no event or accountant for these mechanisms, so there is no peer here.
"""
import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.mechanisms.selection import pf_pair_epsilon

EM, RNM, PF = dp.ExponentialMechanism, dp.ReportNoisyMax, dp.PermuteAndFlip


# --- the output laws -------------------------------------------------------------------------

def em_probs(u, eps):
    w = np.exp(eps / 2 * (np.asarray(u, float) - max(u)))
    return w / w.sum()


def pf_probs(u, eps):
    """P[r] = p_r int_0^1 prod_{s != r} (1 - p_s x) dx, p_r = exp(eps (u_r - max u) / 2): the
    polynomial integrated exactly."""
    p = np.exp(eps / 2 * (np.asarray(u, float) - max(u)))
    out = []
    for r in range(len(p)):
        poly = np.polynomial.Polynomial([1.0])
        for s in range(len(p)):
            if s != r:
                poly = poly * np.polynomial.Polynomial([1.0, -p[s]])
        integ = poly.integ()
        out.append(p[r] * (integ(1.0) - integ(0.0)))
    return np.array(out)


def rnm_probs(u, eps, noise):
    """P[argmax_r u_r + Z_r = r] by quadrature (mpmath), Z of scale b = 2 / eps."""
    b = mp.mpf(2) / eps
    u = [mp.mpf(x) for x in u]
    if noise == "gumbel":
        dens = lambda z: mp.exp(-(z / b + mp.exp(-z / b))) / b  # noqa: E731
        cdf = lambda z: mp.exp(-mp.exp(-z / b))  # noqa: E731
        lims = [-40 * b, 0, 60 * b]
    else:
        dens = lambda z: mp.exp(-z / b) / b if z >= 0 else mp.mpf(0)  # noqa: E731
        cdf = lambda z: -mp.expm1(-z / b) if z > 0 else mp.mpf(0)  # noqa: E731
        lims = sorted({mp.mpf(0), *(ur - us for ur in u for us in u if ur > us), 80 * b})
    out = []
    for r, ur in enumerate(u):
        f = lambda z: dens(z) * mp.fprod(cdf(z + ur - us) for s, us in enumerate(u) if s != r)  # noqa: E731,B023
        out.append(float(mp.quad(f, lims)))
    return np.array(out)


def hockey(P, Q, e):
    """max over both orders of sum (P - e^e Q)_+."""
    x = math.exp(e)
    return max(float(np.sum(np.maximum(P - x * Q, 0))), float(np.sum(np.maximum(Q - x * P, 0))))


def loss_range(P, Q):
    lr = np.log(P) - np.log(Q)
    return float(lr.max() - lr.min())


def neighbours(k, grid=(-1.0, -0.5, 0.0, 0.5, 1.0)):
    """Every utility vector on ``grid`` and every neighbour moving each utility by at most
    1 (steps -1, 0, 1)."""
    for u in itertools.product(grid, repeat=k):
        for d in itertools.product((-1.0, 0.0, 1.0), repeat=k):
            yield np.array(u), np.array(u) + np.array(d)


@pytest.mark.parametrize("u", [(0.0, 1.0), (0.3, -0.2, 1.0), (2.0, 0.0, 0.0, -1.0)])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_report_noisy_max_laws(u, eps):
    """Gumbel-max is softmax (report-noisy-max with Gumbel noise of scale 2/eps is the
    exponential mechanism), and exponential noise of scale 2/eps gives permute-and-flip (Ding
    et al. 2021)."""
    with mp.workdps(30):
        g = rnm_probs(u, eps, "gumbel")
        e = rnm_probs(u, eps, "exponential")
    assert np.allclose(g, em_probs(u, eps), atol=1e-12)
    assert np.allclose(e, pf_probs(u, eps), atol=1e-12)
    assert RNM(eps).equivalent() == EM(eps)
    assert RNM(eps, "exponential").equivalent() == PF(eps)


# --- one run ---------------------------------------------------------------------------------

EPS_GRID = [0.0, 0.1, 0.3, 0.6, 0.9]


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_exponential_mechanism_by_enumeration(eps):
    """Every enumerated EM pair (2 and 3 candidates) is eps-BR and below dpamp's one-run
    profile (both the profile and bounded-range methods); report-noisy-max with Gumbel noise
    answers the same."""
    es = [f * eps for f in EPS_GRID]
    ups = [EM(eps).delta(e, method="bounded-range") for e in es]
    prof = [EM(eps).delta(e, method="profile").delta for e in es]
    assert [g.delta for g in ups] == [RNM(eps).delta(e).delta for e in es]
    worst = [0.0] * len(es)
    for k in (2, 3):
        for u, v in neighbours(k):
            P, Q = em_probs(u, eps), em_probs(v, eps)
            assert loss_range(P, Q) <= eps * (1 + 1e-12)
            for i, e in enumerate(es):
                worst[i] = max(worst[i], hockey(P, Q, e))
    for w, g, p in zip(worst, ups, prof):
        assert w <= g.delta * (1 + 1e-9) + 1e-15 and w <= p * (1 + 1e-9) + 1e-15
        assert g.lower <= g.delta <= g.lower * (1 + 1e-12) + 1e-300     # exact, both ends


def _two_candidate_pair(eps, t):
    """The two-candidate EM whose loss on candidate 1 is t: P[1] = sigmoid(s), Q[1] =
    sigmoid(s - eps) (utility gaps s / (eps/2) and one moved by 2), s solved for."""
    with mp.workdps(40):
        f = lambda s: mp.log(mp.sigmoid(s) / mp.sigmoid(s - eps)) - t  # noqa: E731
        s = mp.findroot(f, (mp.mpf(-60), mp.mpf(60)), solver="bisect")
        p, q = mp.sigmoid(s), mp.sigmoid(s - eps)
        return [p, 1 - p], [q, 1 - q]


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_one_run_profile_is_attained(eps):
    """At each eps', the two-candidate EM with t = (eps + eps')/2 reaches dpamp's value: the
    one-run profile (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1) is exact."""
    for f in (0.0, 0.2, 0.5, 0.8):
        e = f * eps
        P, Q = _two_candidate_pair(eps, (eps + e) / 2)
        with mp.workdps(40):
            exact = mp.fsum(max(p - mp.exp(e) * q, 0) for p, q in zip(P, Q))
            closed = (mp.exp(mp.mpf(eps) / 2) - mp.exp(mp.mpf(e) / 2)) ** 2 / mp.expm1(eps)
            assert abs(exact - closed) < mp.mpf(10) ** -30
        g = EM(eps).delta(e)
        assert g.lower <= exact <= g.delta


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_permute_and_flip_by_enumeration(eps):
    """PF is not eps-BR; every enumerated PF pair is below randomized response with eps (the
    upper rows), and the pair behind the lower rows (utilities swapping) is attained."""
    P, Q = pf_probs([0.0, 0.0], eps), pf_probs([1.0, -1.0], eps)
    assert loss_range(P, Q) == pytest.approx(eps + math.log(2 - math.exp(-eps)), rel=1e-12)
    assert loss_range(P, Q) > eps
    es = [f * eps for f in EPS_GRID]
    ups = [PF(eps).delta(e, method="profile") for e in es]
    worst = [0.0] * len(es)
    for k in (2, 3):
        for u, v in neighbours(k):
            P, Q = pf_probs(u, eps), pf_probs(v, eps)
            for i, e in enumerate(es):
                worst[i] = max(worst[i], hockey(P, Q, e))
    swap = (pf_probs([0.0, -1.0], eps), pf_probs([-1.0, 0.0], eps))
    for i, (e, g) in enumerate(zip(es, ups)):
        assert worst[i] <= g.delta * (1 + 1e-9) + 1e-15
        assert g.lower <= hockey(*swap, e) * (1 + 1e-9) + 1e-15
        assert hockey(*swap, e) <= worst[i] * (1 + 1e-12) + 1e-15
    # the swap pair is randomized response with log(2 e^{eps/2} - 1)
    assert math.log(swap[0][0] / swap[1][0]) == pytest.approx(pf_pair_epsilon(eps), rel=1e-12)


def test_exponential_mechanisms_lower_pair():
    """The lower rows of EM are the pair t = eps/2: two candidates whose utilities swap,
    randomized response with eps/2."""
    eps = 1.3
    P, Q = em_probs([0.5, -0.5], eps), em_probs([-0.5, 0.5], eps)
    assert math.log(P[0] / Q[0]) == pytest.approx(eps / 2, rel=1e-12)
    low = dp.profile_pair_lower(EM(eps), np.array([0.0, 0.2, 0.5]))
    for e, lo in zip([0.0, 0.2, 0.5], np.max(low, axis=0)):
        assert lo <= hockey(P, Q, e) * (1 + 1e-12)
        assert lo >= hockey(P, Q, e) * (1 - 1e-9)


# --- RDP -------------------------------------------------------------------------------------

def _br_rdp_numeric(eps, alpha):
    """sup over t of D_alpha(P_t || Q_t), by maximising over u = e^t in [1, e^eps]."""
    eps, alpha = mp.mpf(eps), mp.mpf(alpha)

    def moment(u):
        p = (mp.exp(eps) - u) / mp.expm1(eps)
        return p * u ** (alpha - 1) + (1 - p) * (u * mp.exp(-eps)) ** (alpha - 1)
    us = [1 + (mp.exp(eps) - 1) * i / 400 for i in range(401)]
    i = max(range(401), key=lambda j: moment(us[j]))
    lo, hi = us[max(i - 1, 0)], us[min(i + 1, 400)]
    for _ in range(200):                                   # golden section (unimodal)
        a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        lo, hi = (a, hi) if moment(a) < moment(b) else (lo, b)
    return mp.log(moment((lo + hi) / 2)) / (alpha - 1)


@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 3.0, 10.0])
def test_bounded_range_rdp_is_exact(eps):
    alphas = np.array([1.01, 1.5, 2.0, 5.0, 32.0, 1000.0])
    up = np.asarray(EM(eps).rdp(alphas))
    low = np.asarray(EM(eps).renyi(alphas).lower)
    with mp.workdps(40):
        for a, u, lo in zip(alphas, up, low):
            ex = _br_rdp_numeric(eps, a)
            assert lo <= ex <= u, (a, lo, float(ex), u)
            assert u - lo <= 1e-10 * max(1.0, u), (a, u, lo)
            assert u <= a * eps * eps / 8 * (1 + 1e-12)           # Cesar & Rogers 2021
    assert EM(eps).rdp(math.inf) == eps
    # Gumbel-RNM is the same; PF and exponential-RNM are randomized response with eps
    assert np.array_equal(RNM(eps).rdp(alphas), up)
    rr = dp.PureDP(eps).rdp(alphas)
    assert np.array_equal(PF(eps).rdp(alphas), rr)
    assert np.array_equal(RNM(eps, "exponential").rdp(alphas), rr)
    assert np.all(np.asarray(PF(eps).renyi(alphas).lower)
                  <= dp.PureDP(pf_pair_epsilon(eps)).rdp(alphas))


def test_zcdp():
    """rho = eps^2/8 for bounded range (Cesar & Rogers 2021), eps^2/2 for pure eps-DP."""
    for m, rho in ((EM(1.0), 1.0 / 8), (RNM(1.0), 1.0 / 8), (PF(1.0), 0.5),
                   (RNM(1.0, "exponential"), 0.5)):
        got = m.epsilon(1e-6, method="zcdp").epsilon
        want = dp.ZCDP(rho).epsilon(1e-6, method="zcdp").epsilon
        assert want <= got <= want * (1 + 1e-12)


# --- compositions ----------------------------------------------------------------------------

def _env(eps, x):
    """W_1(e^x): the exact one-run profile, both signs of x (mpmath)."""
    eps, x = mp.mpf(eps), mp.mpf(x)
    if x < 0:
        return -mp.expm1(x) + mp.exp(x) * _env(eps, -x)
    if x >= eps:
        return mp.mpf(0)
    return (mp.exp(eps / 2) - mp.exp(x / 2)) ** 2 / mp.expm1(eps)


def _w2(eps, x, n=600):
    """W_2(e^x) = max over t of p_t W_1(x - t) + (1 - p_t) W_1(x - t + eps): a fine grid of t
    then golden section around the best (a lower estimate of the maximum, converged)."""
    eps = mp.mpf(eps)

    def f(t):
        p = (mp.exp(eps) - mp.exp(t)) / mp.expm1(eps)
        return p * _env(eps, x - t) + (1 - p) * _env(eps, x - t + eps)
    ts = [eps * i / n for i in range(n + 1)]
    i = max(range(n + 1), key=lambda j: f(ts[j]))
    lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, n)]
    for _ in range(80):
        a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        lo, hi = (a, hi) if f(a) < f(b) else (lo, b)
    return max(f((lo + hi) / 2), f(ts[i]))


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_two_runs_adaptive_optimum(eps):
    """T = 2: the optimal adaptive delta (the recursion of dpamp.theorems.bounded_range with
    the exact one-run profile inside) lies in dpamp's bracket, at eps' across the range."""
    m = EM(eps) * 2
    with mp.workdps(30):
        for f in (0.1, 0.5, 1.0, 1.5, 1.9):
            e = f * eps
            exact = _w2(eps, e)
            g = m.delta(e)
            assert g.method == "bounded-range"
            assert g.lower <= exact * (1 + 1e-9) and exact <= g.delta * (1 + 1e-12), \
                (e, g.lower, float(exact), g.delta)


def _w_grid(eps, T, n=2400):
    """W_T on the grid x_j = j eps / n' by the recursion with t on the same grid (the lower
    dynamic program written independently, fine): a lower estimate of the optimum."""
    h = eps / n
    xs = np.arange(-T * n - n, T * n + n + 1) * h
    w = np.where(xs >= 0, 0.0, -np.expm1(xs))
    t = h * np.arange(n + 1)
    p = np.exp(t) * np.expm1(eps - t) / np.expm1(eps)
    off = T * n + n
    for _ in range(T):
        i = np.arange(-T * n, T * n + 1)
        best = np.zeros(i.size)
        for s in range(n + 1):
            best = np.maximum(best, p[s] * w[i - s + off] + (1 - p[s]) * w[i - s + n + off])
        w = w.copy()
        w[i + off] = best
    return xs, w


def test_three_runs_adaptive_optimum():
    """T = 3: an independent fine-grid recursion (strategies with t on a grid of eps/2400, a
    lower estimate of the optimum) never above dpamp's upper end, and within 1e-3 of it."""
    eps = 1.0
    xs, w = _w_grid(eps, 3)
    for x in (0.2, 1.0, 1.7, 2.5):
        j = int(round(x / (eps / 2400))) + 3 * 2400 + 2400
        g = (EM(eps) * 3).delta(xs[j])
        assert w[j] <= g.delta * (1 + 1e-12), (x, w[j], g.delta)
        assert g.lower <= w[j] * (1 + 2e-3) + 1e-15, (x, g.lower, w[j])


def _binomial_delta(eps, t, T, e):
    """delta of T runs of the pair (P_t, Q_t), both orders, at 40 digits."""
    eps, t, e = mp.mpf(eps), mp.mpf(t), mp.mpf(e)
    p = (mp.exp(eps) - mp.exp(t)) / mp.expm1(eps)
    out = []
    for sign in (1, -1):
        tot = mp.mpf(0)
        for j in range(T + 1):
            loss = T * t - j * eps
            pm = mp.binomial(T, j) * p ** (T - j) * (1 - p) ** j
            qm = pm * mp.exp(-loss)
            a, b = (pm, qm) if sign == 1 else (qm, pm)
            tot += max(a - mp.exp(e) * b, 0)
        out.append(tot)
    return max(out)


@pytest.mark.parametrize("eps, T", [(0.5, 4), (1.0, 6), (2.0, 3)])
def test_runs_of_one_pair_below_the_upper_end(eps, T):
    """T runs of any one pair (P_t, Q_t) (a non-adaptive strategy): exact binomial sums never
    above dpamp's upper end."""
    m = EM(eps) * T
    with mp.workdps(40):
        for e in (0.2 * eps * T, 0.5 * eps * T):
            g = m.delta(e)
            worst = max(_binomial_delta(eps, eps * f, T, e) for f in (0.3, 0.5, 0.62, 0.8, 0.95))
            assert worst <= g.delta * (1 + 1e-12), (e, float(worst), g.delta)


def test_products_of_enumerated_pairs():
    """Two runs of different enumerated three-candidate EM pairs, composed by exact
    convolution (the product of their output laws): below dpamp's upper end."""
    eps = 1.0
    rng = np.random.default_rng(1)
    pairs = [(em_probs(u, eps), em_probs(v, eps)) for u, v in neighbours(3)]
    idx = rng.choice(len(pairs), size=(300, 2))
    es = [0.3, 0.8, 1.4]
    ups = [(EM(eps) * 2).delta(e).delta for e in es]
    for a, b in idx:
        (P1, Q1), (P2, Q2) = pairs[a], pairs[b]
        P, Q = np.outer(P1, P2).ravel(), np.outer(Q1, Q2).ravel()
        for e, u in zip(es, ups):
            assert hockey(P, Q, e) <= u * (1 + 1e-9) + 1e-15


#: (eps, T, delta, exact eps(delta) to 3 digits from the dynamic program at m = 256)
BRACKETS = [(1.0, 10, 1e-6), (0.1, 10, 1e-6), (1.0, 50, 1e-6), (0.1, 100, 1e-6),
            (0.5, 20, 1e-9), (2.0, 5, 1e-3)]


@pytest.mark.parametrize("eps, T, delta", BRACKETS)
def test_bracket_is_tight_and_beats_the_others(eps, T, delta):
    """The bounded-range bracket meets its tolerance; the RDP, PLD and zCDP answers are
    proven upper bounds too, so none is below its lower end. Far below T eps."""
    m = EM(eps) * T
    g = m.epsilon(delta)
    assert g.method == "bounded-range" and g.tol_met
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon
    for method in ("rdp", "pld", "zcdp"):
        assert m.epsilon(delta, method=method).epsilon >= g.lower
    assert g.epsilon < T * eps


def test_pure_and_mixed_compositions():
    m = EM(0.5) * 4 + RNM(0.5) * 3
    assert m.epsilon(0.0).epsilon == pytest.approx(3.5, rel=1e-12)
    assert m.epsilon(1e-6).method == "bounded-range"
    assert not dp.supports(EM(0.5) + EM(0.6), "bounded-range")
    assert not dp.supports(EM(0.5) + PF(0.5), "bounded-range")
    assert not dp.supports(RNM(0.5, "exponential") * 2, "bounded-range")
    g = (EM(0.5) + EM(0.6)).epsilon(1e-6)
    assert g.method != "bounded-range" and g.epsilon < 1.1


def test_past_the_budget_falls_back():
    """A budget too small for the dynamic program: the smaller of the RDP and PLD upper ends,
    the lower end of T runs of one pair, tol_met False with the reason."""
    m = EM(1.0) * 200
    g = m.epsilon(1e-6, budget=1e-6)
    full = m.epsilon(1e-6)
    assert g.tol_met is False and "budget" in g.note
    assert g.lower <= full.epsilon and full.lower <= g.epsilon
    assert g.epsilon == min(m.epsilon(1e-6, method="rdp").epsilon,
                            m.epsilon(1e-6, method="pld").epsilon)


@pytest.mark.parametrize("sampler", [dp.Poisson(0.05), dp.WithoutReplacement(5, 100)])
def test_subsampled_upper_above_an_attained_pair(sampler):
    """Subsampling the two-candidate EM pair t (Poisson: ((1-q)Q + qP, Q); sampling without
    replacement, substitution: the record in the batch with probability g = b/n moves one
    utility pair, else nothing): every method's upper end is above it."""
    eps = 1.0
    rel = getattr(sampler, "needs", dp.ADD_REMOVE)
    m = EM(eps, relation=rel).subsample(sampler) * 3
    gam = 0.05 if isinstance(sampler, dp.Poisson) else 5 / 100
    P, Q = _two_candidate_pair(eps, 0.7 * eps)
    P, Q = np.array([float(x) for x in P]), np.array([float(x) for x in Q])
    mix = (1 - gam) * Q + gam * P
    P3 = np.einsum("i,j,k->ijk", mix, mix, mix).ravel()
    Q3 = np.einsum("i,j,k->ijk", Q, Q, Q).ravel()
    for e in (0.01, 0.1):
        exact = hockey(P3, Q3, e)
        for method in dp.available_methods(m):
            assert m.delta(e, method=method).delta >= exact * (1 - 1e-9), method


# --- properties ------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(eps=st.floats(0.05, 3.0), r=st.floats(1.05, 3.0), T=st.integers(1, 6),
       f=st.floats(0.0, 0.9))
def test_delta_non_decreasing_in_epsilon(eps, r, T, f):
    """eps-BR mechanisms are eps'-BR for eps' > eps: the optimum grows with eps."""
    e = f * eps * T
    lo, hi = (EM(eps) * T).delta(e), (EM(eps * r) * T).delta(e)
    assert lo.lower <= hi.delta * (1 + 1e-12)


@settings(max_examples=12, deadline=None)
@given(eps=st.floats(0.05, 2.0), T=st.integers(1, 8), dT=st.integers(1, 4),
       e=st.floats(0.0, 3.0))
def test_delta_non_decreasing_in_runs(eps, T, dT, e):
    """A run with t = 0 changes nothing: the optimum grows with T."""
    lo, hi = (EM(eps) * T).delta(e), (EM(eps) * (T + dT)).delta(e)
    assert lo.lower <= hi.delta * (1 + 1e-12)


# --- words, JSON, validation -----------------------------------------------------------------

@pytest.mark.parametrize("m", [EM(0.7), RNM(1.0), RNM(2.0, "exponential"),
                               PF(0.3, relation=dp.SUBSTITUTION),
                               EM(0.5).subsample(dp.Poisson(0.1)) * 3,
                               dp.compose(EM(1.0) * 2, PF(1.0))])
def test_json_round_trip(m):
    text = m.to_json()
    back = dp.from_json(text)
    assert back == m and back.to_json() == text


@pytest.mark.parametrize("body, want", [
    ('mechanism = "exponential_mechanism"\nepsilon = 0.5\n', EM(0.5)),
    ('mechanism = "report_noisy_max"\nepsilon = 0.5\n', RNM(0.5)),
    ('mechanism = "report_noisy_max"\nepsilon = 0.5\nnoise = "exponential"\n',
     RNM(0.5, "exponential")),
    ('mechanism = "permute_and_flip"\nepsilon = 0.5\n', PF(0.5)),
])
def test_plan_words(body, want):
    from dpamp.io.plan import parse_plan_text
    plan = parse_plan_text("delta = 1e-5\n[[stage]]\n" + body + "steps = 4\n")
    assert plan.mechanism == want * 4
    assert plan.stages[0].describe()["mechanism"]


def test_plan_word_errors():
    from dpamp.io.plan import PlanError, parse_plan_text
    for body, key in [('mechanism = "exponential_mechanism"\nepsilon = -1\n', "'epsilon'"),
                      ('mechanism = "report_noisy_max"\nepsilon = 1\nnoise = "laplace"\n',
                       "'noise'"),
                      ('mechanism = "permute_and_flip"\n', "'epsilon'")]:
        with pytest.raises(PlanError, match=key):
            parse_plan_text("delta = 1e-5\n[[stage]]\n" + body + "steps = 1\n")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), math.inf, "1"])
def test_invalid_epsilon(bad):
    for cls in (EM, PF, RNM):
        with pytest.raises(ValueError, match="epsilon"):
            cls(bad)
    with pytest.raises(ValueError, match="noise"):
        RNM(1.0, "laplace")


def test_group_and_words():
    from dpamp.mechanisms.family import describe, family_of
    assert family_of(EM(0.5)).group(EM(0.5), 3) == EM(1.5)
    assert family_of(RNM(0.5, "exponential")).group(RNM(0.5, "exponential"), 2) == \
        RNM(1.0, "exponential")
    assert "bounded range" in describe(EM(1.0)) and "ε-DP" in describe(PF(1.0))
    # the 2-group profile is that of eps 2 eps0
    g2 = dp.group_profile(EM(0.5), 2, np.array([0.1, 0.4]))
    one = dp.privacy_profile(EM(1.0), np.array([0.1, 0.4]))
    assert np.allclose(g2, one, rtol=1e-12)


# --- the dynamic program's pieces ------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0.05, 5.0), m=st.integers(2, 64), s=st.integers(1, 64),
       w=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
       r=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)))
def test_cell_maximum_by_brute_force(eps, m, s, w, r):
    """The closed-form maximum over one grid cell of p_t f(c e^-t) + (1 - p_t) g(c e^{eps-t})
    (f, g chords in c, the stationary point where the function is concave) is at least the
    largest of 20001 sampled t and at most it plus 1e-9 (it is the maximum)."""
    from dpamp.theorems.bounded_range import _cell_max, _Grid
    s = min(s, m)
    g = _Grid(eps, m)
    f0, f1, g0, g1 = w
    lo, hi = min(r), max(r)
    rho = math.exp(s * g.h)
    got = float(_cell_max(g, np.array(f0), np.array(f1), np.array(g0), np.array(g1),
                          np.array(rho), np.array(lo), np.array(hi)))
    rr = np.linspace(lo, hi, 20001)
    t = math.log(rho) - np.log1p(rr * g.eta)
    p = (math.exp(eps) - np.exp(t)) / math.expm1(eps)
    brute = float(np.max(p * (f0 + rr * (f1 - f0)) + (1 - p) * (g0 + rr * (g1 - g0))))
    assert got >= brute - 1e-12 and got <= brute + 1e-9, (got, brute)
