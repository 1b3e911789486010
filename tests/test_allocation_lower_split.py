"""The split lower bound of k-out-of-t random allocation (dpamp.amplification.allocation.
lower_split): the statistic's event masses against closed forms of the Gaussian, its curve
below the exact t = 3 curve (quadrature) and the 2-D upper bound at t = 40, never below the
plain statistic's bound, and the engine's bracket at sigma 1, t 1000."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import dpamp as dp
from dpamp.amplification.allocation import lower_split as LS
from dpamp.amplification.allocation.lower_k import _TPair
from dpamp.pld.query import delta_bracket, epsilon_bracket
from dpamp.pld.sources import loss_distribution

from test_allocation_quadrature import _exact_delta


def _curve(pair, eps):
    return float(np.sum(np.maximum(pair.atom_p - math.exp(eps) * pair.atom_q, 0.0)))


def _gauss(sigma):
    return loss_distribution(dp.Gaussian(sigma=sigma))


@pytest.mark.parametrize("sigma,t,k", [(1.0, 20, 2), (1.0, 30, 3), (0.8, 50, 2)])
def test_event_masses_match_the_closed_form(sigma, t, k):
    # The Gaussian's privacy loss is N(mu^2/2, mu^2) under P0 and N(-mu^2/2, mu^2) under Q0
    # (mu = 1 / sigma); with b the body's end as a loss, P[N = 0] and P[N = 1] under the
    # k-subset {1..k} and under Q0^t are binomial-type closed forms. The statistic's laws must
    # bracket them (lower masses below, upper masses above), within 1e-4 relative plus the
    # lower bins' floating-point budgets (~5e-6 in all over ~1e5 bins): a wrong coefficient
    # (k against t - k, t - 1 against t) would be off by > 2 % of P[N = 1].
    tp = LS.SplitPair(_gauss(sigma), k, t)
    r = tp.compute(tp.dx_for(1e-3))
    assert r["split"] and r["n2"] <= LS.N2_SHARE * 1e-8
    mu = 1.0 / sigma
    b = r["b_loss"]
    p_in, q_in = norm.cdf(b, mu * mu / 2, mu), norm.cdf(b, -mu * mu / 2, mu)
    p_out, q_out = norm.sf(b, mu * mu / 2, mu), norm.sf(b, -mu * mu / 2, mu)
    exact = {
        "P0": p_in ** k * q_in ** (t - k),
        "Q0": q_in ** t,
        "P1": k * p_out * p_in ** (k - 1) * q_in ** (t - k)
        + (t - k) * q_out * p_in ** k * q_in ** (t - k - 1),
        "Q1": t * q_out * q_in ** (t - 1),
    }
    pm_lo, pm_up, qm_lo, qm_up = r["large"]
    (Al, Au), (Bl, Bu), (Cl, Cu) = r["A"], r["B"], r["C"]
    got = {
        "P0": (r["P0"][0].sum(), r["P0"][1][np.isfinite(r["P0"][1])].sum()),
        "Q0": (r["Q0"][0].sum(), r["Q0"][1][np.isfinite(r["Q0"][1])].sum()),
        "P1": (k * pm_lo.sum() * Al.sum() + (t - k) * qm_lo.sum() * Bl.sum(),
               k * pm_up.sum() * Au[np.isfinite(Au)].sum()
               + (t - k) * qm_up.sum() * Bu[np.isfinite(Bu)].sum()),
        "Q1": (t * qm_lo.sum() * Cl.sum(), t * qm_up.sum() * Cu[np.isfinite(Cu)].sum()),
    }
    for key, (lo, up) in got.items():
        assert lo <= exact[key] * (1 + 1e-12), key
        assert lo >= exact[key] * (1 - 1e-4) - 1e-5, (key, lo, exact[key])
        # the upper vectors are finite wherever some tilt's window covers a bin
        assert up >= exact[key] * (1 - 1e-12), (key, up, exact[key])
        assert up <= exact[key] * (1 + 1e-4) + 1e-5, (key, up, exact[key])


@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0])
def test_below_the_exact_t3_curve(eps):
    tp = LS.SplitPair(_gauss(1.0), 2, 3)
    pair = tp.pair(tp.dx_for(1e-3), True)
    got = _curve(pair, eps)
    exact = _exact_delta(eps, 1.0, 2)
    assert got <= exact
    assert got >= 0.7 * exact


def test_t40_between_the_plain_statistic_and_the_2d_upper_bound():
    from dpamp.amplification.allocation.two_of_t import TwoOfT
    loss, t, eps = _gauss(1.0), 40, 1.0
    tp, old = LS.SplitPair(loss, 2, t), _TPair(loss, 2, t)
    dy = tp.dx_for(1e-3)
    split = _curve(tp.pair(dy, True), eps)
    plain = _curve(old.pair(dy, True), eps)
    up = float(TwoOfT(loss, t, dx=0.05, b=100.0, dr=20.0).remove_curve(
        np.array([math.exp(eps)]))[0])
    assert plain * (1 - 1e-6) <= split <= up
    assert split >= 0.99 * up


def test_atomic_base_gives_the_plain_statistic():
    loss = loss_distribution(dp.RandomizedResponse(0.75))
    a = LS.SplitPair(loss, 2, 6).pair(1e-3, True)
    b = _TPair(loss, 2, 6).pair(1e-3, True)
    np.testing.assert_array_equal(a.atom_p, b.atom_p)
    np.testing.assert_array_equal(a.atom_q, b.atom_q)


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(sigma=st.floats(0.7, 3.0), t=st.integers(4, 80), k=st.integers(2, 4),
       eps=st.floats(0.2, 3.0))
def test_split_lower_is_below_the_engine_upper_bound(sigma, t, k, eps):
    k = min(k, t - 1)
    mech = dp.Gaussian(sigma=sigma).subsample(dp.RandomAllocation(k, t))
    up = delta_bracket(mech, eps).upper
    tp = LS.SplitPair(_gauss(sigma), k, t)
    dy = tp.dx_for(1e-3)
    for remove in (True, False):
        pr = tp.pair(dy, remove)
        assert pr is not None
        assert pr.atom_p.sum() <= 1.0 and pr.atom_q.sum() <= 1.0
        assert _curve(pr, eps) <= up


@pytest.mark.slow
def test_engine_bracket_sigma1_t1000():
    # one epoch, delta 1e-6: the plain statistic gave the lower end 0.36084; the 2-D upper
    # bound of two_of_t (benchmarks/analysis_two_of_t.py) is 0.36146
    mech = dp.Gaussian(sigma=1.0).subsample(dp.RandomAllocation(2, 1000))
    br = epsilon_bracket(mech, 1e-6)
    assert 0.3612 <= br.lower <= br.upper


def _eps_at(pair, delta):
    lo, hi = 0.0, 40.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _curve(pair, mid) >= delta else (lo, mid)
    return lo


def test_chosen_c_per_direction():
    """Few steps per unit (t / k <= C_CHOICE_UNIT): each direction keeps the candidate c whose
    pair is largest at SELECT_DELTA (sigma 0.8, t 10: c ~0.2 rather than c0 = 0.4, about 3 %
    higher a lower end; every candidate is a post-processing, so all stay below the exact
    t = 3 curve); many steps: c0's pair itself."""
    loss = _gauss(0.8)
    pd = LS.chosen_pair(loss, 2, 10)
    assert isinstance(pd, LS.PerDirection)
    c0 = LS.SplitPair(loss, 2, 10)
    for remove in (True, False):
        cands = [c0] + [LS.SplitPair(loss, 2, 10, 0.4 - d) for d in LS.C_STEPS[1:]]
        dy = c0.dx_for(LS.SELECT_H)
        eps = [_eps_at(c.pair(dy, remove), LS.SELECT_DELTA) for c in cands]
        got = _eps_at(pd.pair_fitting(dy, remove), LS.SELECT_DELTA)
        assert got == max(eps)
        assert pd.by[remove].z / pd.by[remove].z0 in [pytest.approx(0.4 - d) for d in LS.C_STEPS]
    assert _eps_at(pd.pair_fitting(dy, True), 1e-6) > 1.02 * _eps_at(c0.pair(dy, True), 1e-6)
    assert isinstance(LS.chosen_pair(loss, 2, 1000), LS.SplitPair)
    assert isinstance(LS.chosen_pair(loss, 5, 1000), LS.SplitPair)
    t3 = LS.chosen_pair(_gauss(1.0), 2, 3)
    for eps in (0.5, 2.0):
        assert _curve(t3.pair_fitting(t3.dx_for(1e-3), True), eps) <= _exact_delta(eps, 1.0, 2)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(1, 30), delta=st.floats(1e-9, 0.5))
def test_epsilon_at_inverts_the_atoms_curve(data, n, delta):
    """lower_split's exact inversion of a pair's curve against the curve itself: at its
    epsilon the curve is delta (or below it from 0 on, or at an atom's jump)."""
    from types import SimpleNamespace
    p = np.array(data.draw(st.lists(st.floats(1e-6, 1.0), min_size=n, max_size=n)))
    q = np.array(data.draw(st.lists(st.floats(1e-6, 1.0), min_size=n, max_size=n)))
    p, q = p / p.sum(), q / q.sum()
    pr = SimpleNamespace(atom_loss=np.log(p / q), atom_p=p, atom_q=q)
    e = LS._epsilon_at(pr, delta)
    curve = lambda x: float(np.sum(np.maximum(p - math.exp(x) * q, 0.0)))  # noqa: E731
    assert e >= 0.0
    if e == 0.0:
        assert curve(0.0) <= delta * (1 + 1e-9)
    else:
        assert curve(e) == pytest.approx(delta, rel=1e-7, abs=1e-15)
