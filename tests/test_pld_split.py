"""The composition split by how many steps draw a large loss (dpamp.pld.split): the binomial
expansion against the plain composition of the same discretised measures, its brackets against
the grid-free MGF oracle, its remainder, and the tiny-rate x tiny-delta plans it answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dpamp as dp
from dpamp.pld import query as Qy
from dpamp.pld import split as S
from dpamp.pld.engine import compose
from dpamp.pld.grid import tail_fraction
from dpamp.pld.state import Bound

import oracle_mgf as O


def _subsampled(sigma, q, steps):
    return dp.Gaussian(sigma).subsample(dp.Poisson(q)) * steps


def _parts(mech, h, delta, which=0):
    d = Qy._directions(mech)[which]
    return Qy._discretize(d, h, delta * tail_fraction(delta, None), True)


def _both(pp, h, lam, eps0, log_d):
    plain = compose(pp, h, lam, target=(eps0, log_d))
    sp = S.plan(pp, h, eps0, math.exp(log_d), Qy.saddle_for_epsilon)
    assert sp is not None and len(sp.terms) >= 2
    return plain, S.compose_split(sp, h, Bound.UPPER), S.compose_split(sp, h, Bound.LOWER)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.floats(0.6, 2.0), st.floats(0.01, 0.3), st.integers(2, 40), st.floats(0.2, 0.8))
def test_the_expansion_brackets_the_same_composition(sigma, q, steps, u):
    """W^{*c} = sum_k C(c, k) B^{*(c-k)} R^{*k} is an identity on the discretised measures: the
    split's bounds and the plain composition's bound the same numbers (each within its own
    floating-point budget), at every epsilon, for any cut."""
    h = 2e-3
    pp = _parts(_subsampled(sigma, q, steps), h, 1e-6)
    top = h * (pp[0].d.jlo + int(np.nonzero(pp[0].d.upper > 0)[0][-1]))
    eps0 = u * top / S.CUT                    # the cut at u of the largest finite loss
    plain, up, lo = _both(pp, h, 0.0, eps0, math.log(1e-6))
    e = np.linspace(0.0, 2 * eps0, 41)
    pu, pl = plain.upper.delta(e), plain.lower.delta(e)
    su, sl = up.delta(e), lo.delta(e)
    assert np.all(sl <= pu * (1 + 1e-9) + 1e-15)
    assert np.all(pl <= su * (1 + 1e-9) + 1e-15)
    # near the epsilon each term's window is sized for, the two agree but for the remainder,
    # the budgets and the windows' charges for what they leave out (~1e-7 of the target delta
    # each; far below eps0 a term whose losses all lie above 0 charges its window's left-out
    # mass: valid, loose)
    near = (pu > 1e-8) & (e >= eps0) & (e <= 1.2 * eps0)
    slack = np.array([plain.upper.budget(x) + up.budget(x) for x in e]) + up.remainder
    assert np.all(np.abs(su - pu)[near] <= 1e-5 * pu[near] + slack[near])


def test_split_bracket_holds_the_oracle():
    """A moderate plan forced through the split (cut at half the answer) gives a proven
    bracket holding the grid-free oracle's epsilon (tests/oracle_mgf.py, ~1e-9 here)."""
    sigma, q, steps, delta = 0.9, 0.02, 200, 1e-7
    mech = _subsampled(sigma, q, steps)
    truth = O.epsilon_max([O.subsampled_gaussian(sigma, q, "remove"),
                           O.subsampled_gaussian(sigma, q, "add")], delta, steps)
    dirs = Qy._directions(mech)
    state = Qy._compute_for_eps(dirs, delta, None, 2e-4, delta * 1e-4, 1.0, (truth, 0.0))
    assert any(d.split is not None and len(d.split.terms) >= 2 for d in state.dirs)
    ups = [d.pmf.upper.epsilon(delta) for d in state.dirs]
    dom = state.dirs[int(np.argmax(ups))]
    low = dom.compose_lower().epsilon(delta)
    assert low <= truth * (1 + 1e-8) and max(ups) >= truth * (1 - 1e-8)
    assert max(ups) - low < 3e-3 * truth


def test_the_remainder_is_charged(monkeypatch):
    """With the expansion cut after k = 0 (only the bulk's term) the terms left out are
    charged: the upper bound stays above the full expansion's lower bound."""
    h, delta = 1e-3, 1e-9
    pp = _parts(_subsampled(0.7, 0.05, 30), h, delta)
    eps = 2.0
    full = S.plan(pp, h, eps, delta, Qy.saddle_for_epsilon)
    monkeypatch.setattr(S, "MAX_K", 0)
    cut = S.plan(pp, h, eps, delta, Qy.saddle_for_epsilon)
    assert len(cut.terms) == 1 and cut.remainder > 0
    lo_full = S.compose_split(full, h, Bound.LOWER).delta(np.array([eps]))[0]
    up_cut = S.compose_split(cut, h, Bound.UPPER).delta(np.array([eps]))[0]
    up_full = S.compose_split(full, h, Bound.UPPER).delta(np.array([eps]))[0]
    assert up_cut >= lo_full and up_cut >= up_full * (1 - 1e-9)


def test_no_tail_no_split():
    """A part without finite mass at or above the cut, or met once, is not expanded."""
    h = 1e-3
    pp = _parts(_subsampled(1.0, 0.01, 50), h, 1e-6)
    assert S.plan(pp, h, 1e3, 1e-6, Qy.saddle_for_epsilon) is None
    pp1 = _parts(_subsampled(1.0, 0.01, 1), h, 1e-6)
    assert S.plan(pp1, h, 0.01, 1e-6, Qy.saddle_for_epsilon) is None


# the tiny-rate x tiny-delta plans: (sigma, q, steps, delta, epsilon of the grid-free contour
# oracle, tests/oracles/contour_gaussian.py, ~1e-8 relative; plan 4 ~6e-7): values computed by
# epsilon_poisson_gaussian (8-30 s each), not recomputed here
CORNER = [
    (1.9681, 4.009e-5, 251, 1.97e-12, 0.002078674095609),
    (1.0, 1e-5, 1000, 1e-12, 0.007036550196735),
    (1.0, 1e-4, 1000, 1e-9, 0.033633591114958),
    (1.0, 1e-5, 100000, 1e-9, 0.019864606730859),
    (1.0, 1e-6, 1000000, 1e-14, 0.008530715322211),
]


@pytest.mark.parametrize("sigma,q,steps,delta,truth", CORNER)
def test_corner_plans_meet_tol_and_hold_the_oracle(sigma, q, steps, delta, truth):
    """Where delta comes from one rare large loss (one tilt cannot reach it: the FFT's budget
    swamped delta, 5-40 % wide before), the default query meets 1e-3 of epsilon, and its
    bracket holds the oracle's epsilon (within the oracle's own error)."""
    g = _subsampled(sigma, q, steps).epsilon(delta)
    assert g.method == "pld" and "tol not met" not in str(g)
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g.lower <= truth * (1 + 1e-6) and g.epsilon >= truth * (1 - 1e-6)


def test_long_corner_plan_meets_tol():
    """sigma .8384, q 1.594e-5, 671191 steps, delta 1.88e-12 (was [0.1389, 0.1622] at a 300 s
    budget, dp-accounting's PLD at 1e-4 says 2.27); the contour oracle's 0.149832514656147."""
    g = _subsampled(0.8384, 1.594e-5, 671191).epsilon(1.88e-12)
    assert "tol not met" not in str(g) and g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g.lower <= 0.149832514656147 <= g.epsilon


def test_the_lower_slack_is_charged_once():
    """A part's clipped mass s costs the whole composition at most c s (times the other steps'
    masses); the expansion is an identity on the measures, so the terms are composed without
    slack and the sum is charged the plain composition's c s once (per term it would be
    sum_k C(c, k) c s, which swamps a tiny delta)."""
    h = 1e-3
    pp = _parts(_subsampled(0.8, 0.05, 400), h, 1e-9)
    pp[0].d.lower_slack = 1e-20
    sp = S.plan(pp, h, 2.0, 1e-9, Qy.saddle_for_epsilon)
    assert len(sp.terms) >= 3
    assert all(p.d.lower_slack == 0.0 for t in sp.terms for p in t.parts)
    assert 400 * 1e-20 <= sp.lower_slack <= 400 * 1e-20 * (1 + 1e-6)
    lo = S.compose_split(sp, h, Bound.LOWER)
    assert lo.slack == sp.lower_slack and lo.budget(2.0) >= sp.lower_slack


def test_a_nan_mass_reads_as_the_trivial_bounds():
    """A NaN in a composed PMF (overflowing sums) must not turn into a bound: the upper reads
    1 where its suffix holds it, the lower 0 (then the suffix maximum of later, NaN-free grid
    points), never NaN (which epsilon() would take for 'never below delta')."""
    from dpamp.pld.pmf import GridPMF
    m = np.array([0.5, np.nan, 0.1])
    err = np.zeros(4)
    up, lo = GridPMF(0.1, 0, m, 0.0, err, True), GridPMF(0.1, 0, m, 0.0, err, False)
    e = np.array([0.0, 0.05, 0.15])
    u, low = up.delta(e), lo.delta(e)
    assert not np.isnan(u).any() and not np.isnan(low).any()
    assert np.all(u[:2] == 1.0) and np.all(low <= u)
    assert lo._raw(e[:2]).tolist() == [0.0, 0.0]


def test_a_cut_beyond_the_doubles_is_no_split():
    """An estimate of epsilon near the largest double (a delta query at eps 1e300) puts the cut
    beyond any grid: no split, and no overflow turning it into an index."""
    h = 1e-3
    pp = _parts(_subsampled(1.0, 0.01, 50), h, 1e-6)
    assert S.plan(pp, h, 1e300, 1e-6, Qy.saddle_for_epsilon) is None
    assert S.plan(pp, 1e-300, 1e300, 1e-6, Qy.saddle_for_epsilon) is None
