"""Trade-off curves, attack TPR, GDP mu and advantage (dpamp.accounting.risk) against
independent truths: the Gaussian's closed form in mpmath, Neyman-Pearson on finite outcome
spaces in exact fractions, the likelihood-ratio test of a subsampled Gaussian in mpmath."""
from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.accounting import risk
from dpamp.cli.main import main

ALPHAS = np.concatenate([[0.0], np.geomspace(1e-9, 1e-1, 25), np.linspace(0.12, 0.99, 20),
                         [1.0 - 1e-6, 1.0]])


def _gauss_beta(alpha, mu):
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) in 40-digit arithmetic."""
    with mp.workdps(40):
        if alpha == 0:
            return 1.0
        if alpha == 1:
            return 0.0
        z = -mp.sqrt(2) * mp.erfinv(2 * mp.mpf(alpha) - 1)      # Phi^-1(1 - alpha)
        return mp.ncdf(z - mu)


def _contains(t, truth, slack=0.0):
    lo, up = np.atleast_1d(t.lower), np.atleast_1d(t.upper)
    for a, l, u, v in zip(np.atleast_1d(t.alpha), lo, up, truth):
        assert l <= v + slack and v <= u + slack, (a, l, float(v), u)


# --- the Gaussian --------------------------------------------------------------------------

@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("method", ["gaussian", "profile", "pld"])
def test_gaussian_tradeoff_is_g_mu(mu, method):
    m = dp.Gaussian(1.0 / mu)
    t = m.tradeoff(ALPHAS, method=method)
    truth = [_gauss_beta(a, mu) for a in ALPHAS]
    _contains(t, truth)
    # and the bracket is tight: within 1e-4 everywhere
    assert np.max(t.upper - t.lower) < 1e-4
    assert t.method == method


def test_gaussian_100_fold_composition():
    m = dp.Gaussian(10.0) * 100                     # mu = sqrt(100) / 10 = 1
    truth = [_gauss_beta(a, 1.0) for a in ALPHAS]
    for method in ("gaussian", "pld"):
        t = m.tradeoff(ALPHAS, method=method)
        _contains(t, truth)
        assert np.max(t.upper - t.lower) < 1e-4


def test_heterogeneous_gaussian_composition_mu():
    m = dp.Gaussian(2.0) * 3 + dp.Gaussian(1.0, sensitivity=0.5) * 5
    mu = math.sqrt(3 / 4 + 5 / 4)
    g = m.gdp_mu()
    assert g.lower <= mu <= g.upper and g.upper - g.lower < 1e-14


@pytest.mark.parametrize("sigma,T", [(1.0, 1), (2.0, 9), (0.7, 100), (3.0, 10000)])
def test_gdp_mu_of_gaussian_composition(sigma, T):
    m = dp.Gaussian(sigma) * T
    g = m.gdp_mu()
    mu = math.sqrt(T) / sigma
    assert g.lower <= mu <= g.upper
    assert g.upper == pytest.approx(mu, rel=1e-14)


@pytest.mark.parametrize("method", ["profile", "pld"])
def test_gdp_mu_of_gaussian_numerically(method):
    """Without the closed form: the certified mu over a range is >= the truth and close to it,
    and the global mu is not certified (the profile never vanishes: G_mu(0) = 1 needs it)."""
    m = dp.Gaussian(0.8)
    mu = 1.25
    g = m.gdp_mu((1e-6, 1 - 1e-6), method=method)
    assert g.lower <= mu * (1 + 1e-12) and mu <= g.upper * (1 + 1e-12)
    assert g.upper == pytest.approx(mu, rel=1e-4)
    assert m.gdp_mu(method=method).upper == math.inf


def test_advantage_gaussian():
    for mu in (0.3, 1.0, 4.0):
        a = dp.Gaussian(1 / mu).advantage()
        with mp.workdps(40):
            truth = float(mp.erf(mu / (2 * mp.sqrt(2))))
        assert a.lower <= truth <= a.upper
        b = dp.Gaussian(1 / mu).advantage(method="profile")
        assert b.lower <= truth <= b.upper and b.upper - b.lower < 1e-10


# --- finite outcome spaces: Neyman-Pearson in fractions ----------------------------------------

def _np_tradeoff(P, Q, alpha):
    """Exact beta(alpha) of testing Q (null) against P (alternative): the likelihood-ratio
    test, randomised on the boundary outcome (Neyman-Pearson), in fractions."""
    alpha = Fraction(alpha)
    outs = sorted(range(len(P)), key=lambda i: (-(P[i] / Q[i]) if Q[i] else -math.inf))
    power, spent = Fraction(0), Fraction(0)
    for i in outs:
        if Q[i] == 0:
            power += P[i]
            continue
        take = min(Q[i], alpha - spent)
        if take <= 0:
            break
        power += P[i] * take / Q[i]
        spent += take
    return 1 - power


def _mech_tradeoff(P, Q, alpha):
    """The mechanism's trade-off: the worse of both orders of the pair."""
    return min(_np_tradeoff(P, Q, alpha), _np_tradeoff(Q, P, alpha))


def _product(P, k):
    out = []
    for idx in itertools.product(range(len(P)), repeat=k):
        v = Fraction(1)
        for i in idx:
            v *= P[i]
        out.append(v)
    return out


def _rr_pair(p):
    p = Fraction(p)
    return [p, 1 - p], [1 - p, p]


@pytest.mark.parametrize("p,k", [(Fraction(3, 4), 1), (Fraction(9, 10), 1), (Fraction(3, 5), 4)])
def test_randomized_response_against_neyman_pearson(p, k):
    P, Q = _rr_pair(p)
    P, Q = _product(P, k), _product(Q, k)
    m = dp.RandomizedResponse(float(p)) * k
    t = m.tradeoff(ALPHAS)
    truth = [float(_mech_tradeoff(P, Q, Fraction(float(a)))) for a in ALPHAS]
    _contains(t, truth, slack=1e-15)
    assert np.max(t.upper - t.lower) < 1e-3


def test_subsampled_randomized_response_against_neyman_pearson():
    """Poisson rate q under add/remove: the pair ((1 - q) Q + q P, Q) (004 Thm 34's pair), its
    swap, composed 3 times; exact on the 8 outcomes."""
    p, q, k = Fraction(4, 5), Fraction(3, 10), 3
    P, Q = _rr_pair(p)
    Pq = [(1 - q) * b + q * a for a, b in zip(P, Q)]
    P3, Q3 = _product(Pq, k), _product(Q, k)
    m = dp.RandomizedResponse(float(p)).subsample(dp.Poisson(float(q))) * k
    t = m.tradeoff(ALPHAS)
    truth = [float(_mech_tradeoff(P3, Q3, Fraction(float(a)))) for a in ALPHAS]
    _contains(t, truth, slack=1e-15)
    assert t.method == "pld" and np.max(t.upper - t.lower) < 1e-3
    # advantage = total variation, exactly
    tv = float(sum(abs(a - b) for a, b in zip(P3, Q3)) / 2)
    adv = m.advantage()
    assert adv.lower <= tv <= adv.upper


@pytest.mark.parametrize("p", [0.6, 0.75, 0.95])
def test_gdp_mu_of_randomized_response(p):
    """RR is pure DP, so some mu-GDP holds on all of [0, 1]; the smallest is set at the kink
    alpha = beta = 1 - p: mu = Phi^-1(p) - Phi^-1(1 - p) = 2 Phi^-1(p)."""
    g = dp.RandomizedResponse(p).gdp_mu()
    with mp.workdps(40):
        truth = float(2 * mp.sqrt(2) * mp.erfinv(2 * mp.mpf(p) - 1))
    assert g.lower <= truth <= g.upper
    assert g.upper == pytest.approx(truth, rel=1e-6)


def test_no_gdp_with_mass_at_infinity():
    """An (eps, delta) mechanism with delta > 0 has beta(0) = 1 - delta < 1 = G_mu(0)."""
    g = dp.EpsDelta(1.0, 1e-3).gdp_mu()
    assert g.upper == math.inf and "no Gaussian" in g.note


# --- the likelihood-ratio test of a subsampled Gaussian ---------------------------------------

def test_tpr_bound_above_likelihood_ratio_test():
    """Poisson-subsampled Gaussian: P = (1 - q) N(0,1) + q N(mu,1) vs Q = N(0,1); the LR is
    monotone in x, so the best tests are thresholds and their TPRs are closed forms."""
    mu, q = 2.0, 0.2
    m = dp.Gaussian(1 / mu).subsample(dp.Poisson(q))
    fprs = np.array([1e-6, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.3, 0.6, 0.9])
    tpr = m.tpr_at_fpr(fprs)
    with mp.workdps(40):
        for a, up, lo in zip(fprs, tpr.upper, tpr.lower):
            c = -mp.sqrt(2) * mp.erfinv(2 * mp.mpf(a) - 1)          # Q(X > c) = a
            t1 = (1 - q) * a + q * mp.ncdf(mu - c)                   # reject Q for x > c
            # the other order: reject P for x < c2 with P(X < c2) = a: TPR = Phi(c2)
            c2 = mp.findroot(lambda x: (1 - q) * mp.ncdf(x) + q * mp.ncdf(x - mu) - a, 0)
            t2 = mp.ncdf(c2)
            best = max(t1, t2)
            assert lo <= best <= up, (a, lo, float(best), up)
            assert up - lo < 1e-4


def test_pld_profile_and_composition_agree():
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.1))
    a = np.array([1e-3, 1e-2, 0.1, 0.5])
    t1 = m.tradeoff(a, method="profile")
    t2 = (m * 1).tradeoff(a, method="pld")
    assert np.all(t1.lower <= t2.upper + 1e-15) and np.all(t2.lower <= t1.upper + 1e-15)


# --- properties ------------------------------------------------------------------------------

MECHS = [dp.Gaussian(1.3), dp.RandomizedResponse(0.7) * 3,
         dp.Gaussian(2.0).subsample(dp.Poisson(0.05)) * 20, dp.Laplace(0.8)]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(range(len(MECHS))),
       st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12))
def test_monotone_bracketed(i, alphas):
    a = np.sort(np.array(alphas))
    t = MECHS[i].tradeoff(a)
    assert np.all(t.lower <= t.upper)
    assert np.all(np.diff(t.lower) <= 1e-15) and np.all(np.diff(t.upper) <= 1e-15)
    assert np.all(t.upper <= 1 - a + 1e-15) and np.all(t.lower >= 0)
    tpr = t.tpr
    assert np.all(tpr.lower <= tpr.upper) and np.all(tpr.lower >= a - 1e-15)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([0, 1, 3]), st.floats(0.0, 1.0), st.floats(0.0, 1.0),
       st.floats(0.0, 1.0))
def test_lower_bound_convex_for_symmetric_pairs(i, a, b, lam):
    """The lower bound is a maximum of lines (per order; these pairs are symmetric): convex."""
    m = MECHS[i]
    x = lam * a + (1 - lam) * b
    t = m.tradeoff(np.array([a, b, x]))
    assert t.lower[2] <= lam * t.lower[0] + (1 - lam) * t.lower[1] + 1e-12


def test_scalar_and_shapes():
    m = dp.Gaussian(1.0)
    t = m.tradeoff(0.01)
    assert isinstance(t.lower, float) and isinstance(t.upper, float)
    assert m.tradeoff(np.full((2, 3), 0.1)).lower.shape == (2, 3)
    r = m.tpr_at_fpr(0.01)
    assert float(r) == r.upper and r.lower <= r.upper


def test_rdp_fallback_is_an_upper_bound_on_risk():
    """zCDP has neither profile nor PLD: the curve comes from its (eps, delta) bounds; a
    Gaussian with the same rho is in its class, so the lower bound is below G_mu."""
    mu = 1.0
    m = dp.ZCDP(mu * mu / 2)
    a = np.array([1e-3, 1e-2, 0.1, 0.5])
    t = m.tradeoff(a)
    assert t.method == "rdp"
    assert np.all(t.lower <= [_gauss_beta(x, mu) for x in a])
    assert np.allclose(t.upper, 1 - a)


def test_validation():
    m = dp.Gaussian(1.0)
    with pytest.raises(ValueError, match="alpha"):
        m.tradeoff(1.5)
    with pytest.raises(ValueError, match="fpr"):
        m.tpr_at_fpr(-0.1)
    with pytest.raises(ValueError, match="method"):
        m.tradeoff(0.1, method="magic")
    with pytest.raises(TypeError):
        m.tradeoff(0.1, nonsense=1)
    with pytest.raises(ValueError, match="fpr_range"):
        m.gdp_mu((0.5, 0.1))
    with pytest.raises(ValueError, match="gaussian"):
        dp.Laplace(1.0).tradeoff(0.1, method="gaussian")


# --- the command line --------------------------------------------------------------------------

def test_cli_risk_text(capsys):
    assert main(["risk", "--noise-multiplier", "2", "--steps", "4"]) == 0
    out = capsys.readouterr().out
    assert "TPR" in out and "advantage" in out and "mu <= 1.00001" in out
    assert "add/remove" in out and "L2 sensitivity 1" in out and "4 steps" in out


def test_cli_risk_json_and_fpr(capsys):
    assert main(["risk", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10",
                 "--fpr", "0.001", "0.2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["fpr"] for r in d["tpr_at_fpr"]] == [0.001, 0.2]
    for r in d["tpr_at_fpr"]:
        assert r["fpr"] <= r["tpr_lower"] <= r["tpr_upper"] <= 1
    assert d["method"] == "pld" and d["mechanism"]["type"] == "Composition"
    assert d["advantage"]["lower"] <= d["advantage"]["upper"]
    assert d["gdp_mu_range"]["upper"] < math.inf
    # what it assumed and what it was given, as every query command states them
    assert d["assumed"]["sampler"] == "poisson" and d["assumed"]["relation"] == "add_remove"
    assert d["inputs"]["sample_rate"] == 0.1 and d["inputs"]["steps"] == 10


def test_cli_risk_errors(capsys):
    assert main(["risk", "--noise-multiplier", "1", "--steps", "1", "--fpr", "2"]) == 2
    assert "fpr" in capsys.readouterr().err
    assert main(["risk", "--noise-multiplier", "1", "--steps", "1", "--method", "kov"]) == 2
    assert main(["risk", "--noise-multiplier", "1"]) == 2          # no steps / epochs
    assert "--epochs" in capsys.readouterr().err


@settings(max_examples=40, deadline=None)
@given(st.floats(0.2, 4.0), st.integers(2, 40), st.floats(0.05, 12.0), st.booleans())
def test_any_grid_gives_valid_bounds(mu, n, top, with_inf):
    """The conjugate bounds hold for ANY finite grid (coarse, truncated, with or without the
    point at infinity), not only for the fine default one: the Gaussian's rows from its
    closed-form profile, checked against G_mu in mpmath."""
    from dpamp.profiles import profile_pair, profile_pair_lower
    from dpamp.profiles import tradeoff as T
    m = dp.Gaussian(1 / mu)
    eps = np.linspace(0.0, top, n)
    if with_inf:
        eps = np.append(eps, np.inf)
    up, low = profile_pair(m, eps), profile_pair_lower(m, eps)
    a = np.array([0.0, 1e-8, 1e-4, 1e-2, 0.1, 0.3, 0.5, 0.8, 0.99, 1.0])
    lo, hi = T.beta_lower(a, eps, up), T.beta_upper(a, eps, up, low)
    for x, l, u in zip(a, lo, hi):
        v = _gauss_beta(x, mu)
        assert l <= v <= u, (x, l, float(v), u)
    mu_up, _ = T.gdp_mu_upper(eps, up, 1e-3, 0.5)
    assert mu_up >= mu * (1 - 1e-12)


def test_bracket_tight_when_pure_epsilon_far_beyond_the_grid():
    """Subsampled Laplace composed: the pure epsilon (38.7) is a lone knot far beyond the
    others (x = 6e16); the rounding pads must not swamp the cell before it (they did: the
    upper bound on beta was the trivial 1 - alpha)."""
    m = dp.Laplace(2.0).subsample(dp.Poisson(0.02)) * 3000
    tpr = m.tpr_at_fpr([1e-3, 1e-2, 0.1])
    assert np.all(tpr.upper - tpr.lower < 1e-4)
    assert np.all(tpr.lower > [4e-3, 3e-2, 0.2])


def test_report_has_a_risk_section(tmp_path, capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "privacy risk" in out and "TPR <=" in out and "advantage" in out
    assert main(["report", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    r = d["risk"]
    assert [x["fpr"] for x in r["tpr_at_fpr"]] == list(risk.DEFAULT_FPR)
    for x in r["tpr_at_fpr"]:
        assert x["fpr"] <= x["tpr_lower"] <= x["tpr_upper"] <= 1
    assert main(["report", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "#### Privacy risk" in md and "| FPR | TPR (upper bound) | TPR reached |" in md


def test_tradeoff_bracket_figure(tmp_path):
    pytest.importorskip("matplotlib")
    from dpamp.io import plot
    out = tmp_path / "risk.png"
    d = plot.tradeoff_bracket(dp.Gaussian(1.0) * 4, output=out)
    assert out.stat().st_size > 0
    assert np.all(d["tpr_lower"] <= d["tpr_upper"]) and np.all(d["tpr_upper"] >= d["alpha"])
    with pytest.raises(ValueError, match="alphas"):
        plot.tradeoff_bracket(dp.Gaussian(1.0), alphas=[0.0, 0.5])


def test_certified_mu_below_exact_curve_subsampled_rr():
    """The certified mu of a subsampled randomized response composed 3 times: G_mu lies below
    the exact (Neyman-Pearson, fractions) curve at every kink of it and between; and the
    lower end of the bracket is not below what some kink needs."""
    p, q, k = Fraction(4, 5), Fraction(3, 10), 3
    P, Q = _rr_pair(p)
    Pq = [(1 - q) * b + q * a for a, b in zip(P, Q)]
    P3, Q3 = _product(Pq, k), _product(Q, k)
    m = dp.RandomizedResponse(float(p)).subsample(dp.Poisson(float(q))) * k
    g = m.gdp_mu()
    assert g.lower <= g.upper < math.inf
    # the kinks of both orders' curves: cumulative null masses in likelihood-ratio order
    kinks = set()
    for A, B in ((P3, Q3), (Q3, P3)):
        order = sorted(range(len(A)), key=lambda i: -A[i] / B[i])
        acc = Fraction(0)
        for i in order:
            acc += B[i]
            kinks.add(float(acc))
    alphas = sorted(kinks | set(np.linspace(0.001, 0.999, 60).tolist()))
    need = 0.0
    for a in alphas:
        if not 0 < a < 1:
            continue
        exact = float(_mech_tradeoff(P3, Q3, Fraction(a)))
        assert _gauss_beta(a, g.upper) <= exact + 1e-15, a
        with mp.workdps(40):
            z = -mp.sqrt(2) * mp.erfinv(2 * mp.mpf(a) - 1)
            need = max(need, float(z - mp.sqrt(2) * mp.erfinv(2 * mp.mpf(exact) - 1)))
    assert g.lower <= need * (1 + 1e-9) and need <= g.upper


def test_global_mu_of_subsampled_laplace_composition():
    """Pure DP, so some mu holds on all of [0, 1]; the profile's line at the pure epsilon
    overtakes the others only within an ulp of alpha = 1 (this was reported as none)."""
    m = dp.Laplace(2.0).subsample(dp.Poisson(0.02)) * 300
    g, mid = m.gdp_mu(), m.gdp_mu((1e-6, 1 - 1e-6))
    assert g.upper < math.inf and mid.upper <= g.upper


def _eps_delta_pair(e, d):
    """The worst-case (eps, delta) pair (Kairouz, Oh & Viswanath 2015, Thm 2.1): 4 outcomes."""
    x = Fraction(math.exp(e))
    d = Fraction(d)
    P = [d, (1 - d) * x / (1 + x), (1 - d) / (1 + x), Fraction(0)]
    Q = [Fraction(0), (1 - d) / (1 + x), (1 - d) * x / (1 + x), d]
    return P, Q


@pytest.mark.parametrize("k", [1, 3])
def test_eps_delta_with_mass_at_infinity(k):
    """beta(0) = 1 - (mass at infinity) < 1: the bound at alpha = 0 must say so (it claimed 1
    when an infinite pure epsilon zeroed the column at eps = inf)."""
    P, Q = _eps_delta_pair(1.0, 1e-3)
    P, Q = _product(P, k), _product(Q, k)
    m = dp.EpsDelta(1.0, 1e-3) * k
    t = m.tradeoff(ALPHAS)
    truth = [float(_mech_tradeoff(P, Q, Fraction(float(a)))) for a in ALPHAS]
    _contains(t, truth, slack=1e-12)
    assert t.lower[0] <= 1 - (1 - (1 - 1e-3) ** k) + 1e-12


def test_pld_out_of_reach_falls_back_to_rdp():
    m = dp.Laplace(0.0015) * 2                       # losses beyond the PLD's range
    t = m.tradeoff([0.0, 0.5, 1.0])
    assert t.method == "rdp" and "pld" in t.note
    assert t.lower[0] == 1.0                         # pure DP: no mass at infinity
    assert np.all(t.lower <= t.upper)


_PART = st.one_of(
    st.tuples(st.just("rr"), st.floats(0.55, 0.95), st.just(0.0)),
    st.tuples(st.just("srr"), st.floats(0.55, 0.95), st.floats(0.05, 0.9)),
    st.tuples(st.just("ed"), st.floats(0.1, 2.0), st.floats(1e-4, 0.05)))


def _part(kind, a, b):
    """(mechanism, exact pair) of one part."""
    if kind == "rr":
        return dp.RandomizedResponse(a), _rr_pair(Fraction(a))
    if kind == "srr":
        P, Q = _rr_pair(Fraction(a))
        q = Fraction(b)
        return (dp.RandomizedResponse(a).subsample(dp.Poisson(b)),
                ([(1 - q) * y + q * x for x, y in zip(P, Q)], Q))
    return dp.EpsDelta(a, b), _eps_delta_pair(a, b)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(_PART, st.integers(1, 2)), min_size=1, max_size=2),
       st.lists(st.floats(0.0, 1.0), min_size=3, max_size=8))
def test_random_discrete_plans_against_neyman_pearson(parts, alphas):
    """Plans of randomized response, Poisson-subsampled RR and (eps, delta) pairs, composed:
    the bracket contains the exact curve (the product pair, both orders, in fractions), and
    the advantage bracket the exact total variation."""
    mech, P, Q = None, [Fraction(1)], [Fraction(1)]
    for (kind, a, b), c in parts:
        m, (p1, q1) = _part(kind, a, b)
        mech = m * c if mech is None else mech + m * c
        for _ in range(c):
            P = [x * y for x in P for y in p1]
            Q = [x * y for x in Q for y in q1]
    al = np.array(sorted(alphas))
    t = mech.tradeoff(al)
    truth = [float(_mech_tradeoff(P, Q, Fraction(float(a)))) for a in al]
    _contains(t, truth, slack=1e-12)
    tv = float(sum(abs(x - y) for x, y in zip(P, Q)) / 2)
    adv = mech.advantage()
    assert adv.lower - 1e-12 <= tv <= adv.upper + 1e-12
