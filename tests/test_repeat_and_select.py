"""dp.RepeatAndSelect (Papernot & Steinke 2022) against exact selections of its own,
dp-accounting's RDP accountant and its test values; dp.to_dp_event / dp.from_dp_event.

* Exact truths: with K runs, "report the largest output" (one selection rule among those the
  theorems cover) has P[out <= y] = G(F(y)), G the probability generating function of K
  (Poisson: e^{mu (s - 1)}, K = 0 releasing nothing; truncated negative binomial:
  ((1 - (1-g) s)^{-eta} - 1) / (g^{-eta} - 1); logarithmic: log(1 - (1-g) s) / log g), F the
  base's CDF. For a Gaussian base (N(mu, 1) vs N(0, 1)) the Rényi divergences of the two
  selections are one-dimensional integrals (mpmath quadrature); for randomized response and a
  three-output pure-DP pair they are finite sums. dpamp's curve is never below them.
* dp-accounting: the same theorems in its RDP accountant: per order and in eps(delta), on
  Gaussian, Laplace and DP-SGD bases; its test values (Corollary 3 for pure DP, the trivial
  mean 1, Corollary 4's Gaussian closed form, the pure Poisson formula).
* RDP only: the PLD and profile methods say no, with the reason.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.mechanisms.repeat_select import tnb_gamma, tnb_mean

RS = dp.RepeatAndSelect
DISTS = [("poisson", None), ("geometric", None), ("logarithmic", None),
         ("truncated_negative_binomial", 0.5), ("truncated_negative_binomial", 3.0),
         ("truncated_negative_binomial", -0.5)]


def true_gamma(mean, eta):
    f = lambda g: (eta * (1 - g) / (g * (1 - g ** eta)) if eta != 0  # noqa: E731
                   else (1 / g - 1) / mp.log(1 / g)) - mean
    return mp.findroot(f, (mp.mpf(1e-12), 1 - mp.mpf(10) ** -12), solver="anderson")


def pgf(dist, shape, mean):
    """(G, G') of K as functions of s in [0, 1], with the true parameters."""
    mean = mp.mpf(mean)
    if dist == "poisson":
        return (lambda s: mp.exp(mean * (s - 1))), (lambda s: mean * mp.exp(mean * (s - 1)))
    eta = {"geometric": 1.0, "logarithmic": 0.0}.get(dist, shape)
    g = mp.mpf(1) / mean if eta == 1 else true_gamma(mean, mp.mpf(eta))
    if eta == 0:
        return (lambda s: mp.log(1 - (1 - g) * s) / mp.log(g),
                lambda s: -(1 - g) / ((1 - (1 - g) * s) * mp.log(g)))
    c = g ** (-eta) - 1
    return (lambda s: ((1 - (1 - g) * s) ** (-eta) - 1) / c,
            lambda s: eta * (1 - g) * (1 - (1 - g) * s) ** (-eta - 1) / c)


def renyi_gaussian_selection(mu, dist, shape, mean, alpha):
    """max over both orders of D_alpha between "the largest of K draws" of N(mu, 1) and of
    N(0, 1) (plus the atom of K = 0 for Poisson, equal on both sides)."""
    G, dG = pgf(dist, shape, mean)
    atom = G(mp.mpf(0))
    out = []
    for a, b in ((mu, 0), (0, mu)):
        f = lambda y: (dG(mp.ncdf(y - a)) * mp.npdf(y - a)) ** alpha * \
            (dG(mp.ncdf(y - b)) * mp.npdf(y - b)) ** (1 - alpha)  # noqa: E731,B023
        total = mp.quad(f, [-mp.inf, -3, 0, mu, 3 + mu, mp.inf]) + atom
        out.append(mp.log(total) / (alpha - 1))
    return max(out)


def renyi_finite_selection(P, Q, dist, shape, mean, alpha):
    """The same for a base on finitely many outputs, ranked by their index (largest best)."""
    G, _ = pgf(dist, shape, mean)
    out = []
    for A, B in ((P, Q), (Q, P)):
        Fa, Fb = np.concatenate([[0], np.cumsum(A)]), np.concatenate([[0], np.cumsum(B)])
        pa = [G(mp.mpf(Fa[i + 1])) - G(mp.mpf(Fa[i])) for i in range(len(A))] + [G(0)]
        pb = [G(mp.mpf(Fb[i + 1])) - G(mp.mpf(Fb[i])) for i in range(len(B))] + [G(0)]
        tot = mp.fsum(x ** alpha * y ** (1 - alpha) for x, y in zip(pa, pb) if x > 0)
        out.append(mp.log(tot) / (alpha - 1))
    return max(out)


def _gauss_cases():
    for sigma, mean in [(1.0, 5.0), (2.0, 30.0)]:
        for dist, shape in DISTS:
            slow = sigma == 2.0 and dist not in ("poisson", "geometric")
            yield pytest.param(dist, shape, sigma, mean,
                               marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("dist, shape, sigma, mean", list(_gauss_cases()))
def test_gaussian_base_exact_selection(dist, shape, sigma, mean):
    m = RS(dp.Gaussian(sigma), mean, dist, shape)
    alphas = [2.0, 8.0]
    ours = m.rdp(alphas)
    with mp.workdps(20):
        for a, u in zip(alphas, ours):
            ex = renyi_gaussian_selection(mp.mpf(1) / sigma, dist, shape, mean, mp.mpf(a))
            assert ex <= u, (a, float(ex), u)


@pytest.mark.parametrize("dist, shape", DISTS)
def test_pure_bases_exact_selection(dist, shape):
    """Randomized response (p = 0.8) and a three-output 1-DP pair, best of K, K of mean 8."""
    cases = [(dp.RandomizedResponse(0.8), np.array([0.2, 0.8]), np.array([0.8, 0.2])),
             (dp.PureDP(1.0), np.array([1.0, 1.0, math.e]) / (2 + math.e),
              np.array([math.e, 1.0, 1.0]) / (2 + math.e))]
    for base, P, Q in cases:
        m = RS(base, 8.0, dist, shape)
        alphas = [1.5, 3.0, 10.0, 50.0]
        with mp.workdps(30):
            for a, u in zip(alphas, m.rdp(alphas)):
                ex = renyi_finite_selection(P, Q, dist, shape, 8.0, mp.mpf(a))
                assert ex <= u, (base, a, float(ex), u)
        if dist != "poisson":
            eta = m.eta
            assert m.pure_epsilon() <= (2 + eta) * base.pure_epsilon() * (1 + 1e-12)


@pytest.mark.parametrize("eta, mean", [(0.0, 5.0), (0.5, 10.0), (1.0, 7.0), (3.0, 100.0),
                                       (-0.5, 4.0), (0.01, 1e4)])
def test_gamma_is_a_lower_bound(eta, mean):
    g = tnb_gamma(mean, eta)
    with mp.workdps(40):
        true = mp.mpf(1) / mean if eta == 1 else true_gamma(mean, mp.mpf(eta))
    assert g <= true and g >= float(true) * (1 - 1e-9)
    assert tnb_mean(g, eta) >= mean * (1 - 1e-12)


# --- dp-accounting ---------------------------------------------------------------------------

def _theirs(event, orders=None):
    from dp_accounting.rdp import rdp_privacy_accountant as R
    acc = R.RdpAccountant(orders=orders or R.DEFAULT_RDP_ORDERS)
    acc.compose(event)
    return acc


def _bases():
    from dp_accounting import dp_event as E
    sgd = E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.1)), 300)
    return [("gaussian", E.GaussianDpEvent(2.0)), ("laplace", E.LaplaceDpEvent(1.0)),
            ("dp-sgd", sgd)]


@pytest.mark.parametrize("mean, shape", [(10, math.inf), (10, 1.0), (10, 0.0), (10, 0.5),
                                         (100, 2.0)])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_against_dp_accounting(mean, shape, which):
    """Per order within 1e-3 of dp-accounting's (the same theorems; dpamp optimises lambda^
    over more orders and pads its rounding) and eps(1e-6) at most theirs (1 + 1e-4)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    name, base = _bases()[which]
    ev = E.RepeatAndSelectDpEvent(base, mean, shape)
    acc = _theirs(ev)
    m = dp.from_dp_event(ev)
    assert dp.to_dp_event(m) == ev
    orders = np.asarray(acc._orders)
    ours = np.asarray(m.rdp(orders))
    ratio = ours / np.asarray(acc._rdp)
    assert np.all(ratio <= 1 + 1e-3), (name, orders[np.argmax(ratio)], ratio.max())
    theirs, g = acc.get_epsilon(1e-6), m.epsilon(1e-6)
    assert g.epsilon <= theirs * (1 + 1e-4)
    print(f"{name} mean {mean} shape {shape}: dpamp {g.epsilon:.6g}, dp-accounting "
          f"{theirs:.6g} ({theirs / g.epsilon - 1:+.3%}); per order ours/theirs in "
          f"[{ratio.min():.4f}, {ratio.max():.4f}]")


@pytest.mark.parametrize("eps, shape", [(0.1, 0.0), (1.0, 0.5), (2.0, 1.0), (0.5, 5.0)])
def test_dp_accountings_pure_values(eps, shape):
    """dp-accounting's test_repeat_select_pure_negative_binomial: a pure eps base (Laplace),
    Corollary 3: (2 + shape) eps at order 1e10 (mean 10)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    m = RS(dp.Laplace(1.0 / eps), 10.0, "truncated_negative_binomial", shape)
    acc = _theirs(E.RepeatAndSelectDpEvent(E.LaplaceDpEvent(1.0 / eps), 10.0, shape), [1e10])
    assert acc._rdp[0] == pytest.approx(eps * (2 + shape), rel=1e-7)
    # Theorem 2 at lambda = inf with the best lambda^ (Corollary 3 takes lambda^ = inf)
    assert m.pure_epsilon() <= eps * (2 + shape) * (1 + 1e-9)
    assert m.rdp(1e10) <= eps * (2 + shape) * (1 + 1e-9)


@pytest.mark.parametrize("dist, shape, sigma", [("logarithmic", None, 1.0),
                                                ("truncated_negative_binomial", 0.5, 10.0),
                                                ("geometric", None, 0.1),
                                                ("truncated_negative_binomial", 2.0, 1.0)])
def test_dp_accountings_trivial_mean(dist, shape, sigma):
    """test_repeat_select_trivial: mean 1 is one run, the base's curve."""
    m = RS(dp.Gaussian(sigma), 1.0, dist, shape)
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    assert np.allclose(m.rdp(alphas), dp.Gaussian(sigma).rdp(alphas), rtol=1e-12)


@pytest.mark.parametrize("rho, gamma, shape", [(0.01, 0.01, 0), (1, 0.1, 0), (10, 0.99, 0),
                                               (0.01, 0.01, 0.5), (1, 0.1, 1), (10, 0.99, 5)])
def test_dp_accountings_gaussian_closed_form(rho, gamma, shape):
    """test_repeat_select_gaussian_negative_binomial (Corollary 4): for a rho-zCDP base,
    eps'(lambda) = rho (lambda - 1) + log(mean)/(lambda - 1) + 2 (1 + eta) sqrt(rho log(1/g))
    - eta rho past lambda* = 1 + sqrt(log(mean) / rho), constant below: the optimum over
    lambda^, which dpamp's grid search reaches to 1e-6."""
    from dpamp.mechanisms.repeat_select import tnb_mean
    mean = tnb_mean(gamma, shape)
    rho = min(rho, -math.log(gamma))
    m = RS(dp.ZCDP(rho), mean, "truncated_negative_binomial", shape)
    lg = -math.log(tnb_gamma(mean, shape))
    for order in (1.5, 2.0, 5.0, 30.0):
        lam = max(order, 1 + math.sqrt(math.log(mean) / rho)) if mean > 1 else order
        want = (rho * (lam - 1) + (math.log(mean) / (lam - 1) if mean > 1 else 0)
                + 2 * (1 + shape) * math.sqrt(rho * lg) - shape * rho)
        got = m.rdp(order)
        assert got >= want * (1 - 1e-9) - 1e-12 and got <= want * (1 + 1e-6) + 1e-12, \
            (order, got, want)


@pytest.mark.parametrize("eps, mean", [(1, 1), (0.1, 2), (10, 10), (0.001, 100), (2, 1000)])
def test_dp_accountings_pure_poisson(eps, mean):
    """test_repeat_and_select_pure_poisson: a Laplace (eps-DP) base, Poisson runs, at
    alpha = 1 + 1/expm1(eps): eps(alpha) + log(mean) expm1(eps) (+ mean delta^, which their
    test neglects: delta^ = 0 at eps^ = eps for an eps-DP base): dpamp within 1e-3 of it."""
    alpha = 1 + 1 / math.expm1(eps)
    m = RS(dp.Laplace(1 / eps), mean)
    base = dp.Laplace(1 / eps).rdp(alpha)
    want = base + math.log(mean) * math.expm1(eps)
    assert m.rdp(alpha) <= want * (1 + 1e-3) + mean * 1e-12


# --- events, capabilities, words -------------------------------------------------------------

def test_events_both_ways_and_nesting():
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    inner = E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0))
    for shape, dist in ((math.inf, "poisson"), (1.0, "geometric"), (0.0, "logarithmic"),
                        (0.5, "truncated_negative_binomial")):
        ev = E.RepeatAndSelectDpEvent(inner, 5.0, shape)
        m = dp.from_dp_event(ev)
        assert m.distribution == dist and m.relation is dp.ADD_REMOVE
        assert dp.to_dp_event(m) == ev
    # compositions, self-compositions and samplers written generically
    mech = dp.compose(dp.Gaussian(2.0, 2.0) * 3, dp.Laplace(1.0),
                      dp.DiscreteLaplace(0.5, 2).subsample(dp.Poisson(0.1)) * 4, dp.ZCDP(0.2))
    ev = dp.to_dp_event(mech)
    assert isinstance(ev, E.ComposedDpEvent) and len(ev.events) == 4
    assert ev.events[0] == E.SelfComposedDpEvent(E.GaussianDpEvent(1.0), 3)
    back = dp.from_dp_event(ev)
    for d in (1e-5, 1e-8):
        assert back.epsilon(d, method="rdp").epsilon == \
            pytest.approx(mech.epsilon(d, method="rdp").epsilon, rel=1e-9)
    wor = dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.WithoutReplacement(10, 100))
    assert dp.to_dp_event(wor) == E.SampledWithoutReplacementDpEvent(100, 10,
                                                                     E.GaussianDpEvent(1.0))
    rr = dp.to_dp_event(dp.RandomizedResponse(0.75))
    assert rr == E.RandomizedResponseDpEvent(0.5, 2)
    assert dp.from_dp_event(rr) == dp.RandomizedResponse(0.75, relation=dp.SUBSTITUTION)
    for m in (dp.PureDP(1.0), dp.ExponentialMechanism(1.0), RS(dp.PureDP(1.0), 3.0),
              dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(
                  dp.Poisson(0.1, relation=dp.SUBSTITUTION, population=1000))):
        with pytest.raises(ValueError):
            dp.to_dp_event(m)


def test_rdp_only():
    m = RS(dp.Gaussian(1.0), 10.0)
    assert dp.available_methods(m)[0] == "rdp"
    for method in ("pld", "profile"):
        s = dp.supports(m, method)
        assert not s and "Rényi-DP bounds only" in s.why
    assert m.epsilon(1e-5).lower is None
    assert not dp.supports(RS(dp.EpsDelta(1.0, 1e-6), 3.0), "rdp")


def test_plan_table_and_json():
    from dpamp.io.plan import PlanError, parse_plan_text
    head = ('delta = 1e-5\n[[stage]]\nmechanism = "gaussian"\nnoise_multiplier = 1.1\n'
            'batch_size = 256\ndataset_size = 60000\nepochs = 2\n')
    plan = parse_plan_text(head + 'repeat_and_select = { mean = 10, distribution = '
                                  '"truncated_negative_binomial", shape = 0.5 }\n')
    step = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000))
    assert plan.mechanism == dp.compose(RS(step * 469, 10.0, "truncated_negative_binomial",
                                           0.5))
    assert "best kept" in plan.stages[0].describe()["steps"]
    assert plan.total_steps == 469
    for bad, key in [("{ distribution = 'poisson' }", "mean"), ("{ mean = 0.5 }", "mean"),
                     ("{ mean = 3, distribution = 'binomial' }", "distribution"),
                     ("{ mean = 3, shape = 2 }", "shape"), ("{ mean = 3, rate = 2 }", "rate")]:
        with pytest.raises(PlanError, match=key):
            parse_plan_text(head + f"repeat_and_select = {bad}\n")
    m = RS(step * 10, 4.0, "geometric")
    assert dp.from_json(m.to_json()) == m


@pytest.mark.parametrize("args, match", [((dp.Gaussian(1.0), 0.5), "mean"),
                                         ((dp.Gaussian(1.0), 3.0, "binomial"), "distribution"),
                                         ((dp.Gaussian(1.0), 3.0, "truncated_negative_binomial"),
                                          "shape"),
                                         ((dp.Gaussian(1.0), 3.0, "truncated_negative_binomial",
                                           -1.0), "shape"),
                                         ((dp.Gaussian(1.0), 3.0, "poisson", 2.0), "shape"),
                                         (("gaussian", 3.0), "base")])
def test_invalid(args, match):
    with pytest.raises(ValueError, match=match):
        RS(*args)


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.5, 5.0), mean=st.floats(1.0, 1e3), r=st.floats(1.0, 10.0),
       k=st.sampled_from(DISTS))
def test_monotone_in_mean(sigma, mean, r, k):
    """More runs on average never lower the bound (log E[K], mu delta^ and log(1/g) grow)."""
    dist, shape = k
    a = RS(dp.Gaussian(sigma), mean, dist, shape).rdp([2.0, 10.0])
    b = RS(dp.Gaussian(sigma), mean * r, dist, shape).rdp([2.0, 10.0])
    assert np.all(a <= b * (1 + 1e-9))
