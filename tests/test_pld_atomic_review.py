"""A review of the exact composition of atoms (dpamp.pld.atomic) at the edges of floating
point: composed losses beyond e^709 (where e^eps overflows) and composed Q-masses that are
subnormal or underflow to 0 (where a relative margin moves nothing). The oracle is the 50-digit
enumeration of tests/test_pld_atomic.py, from the mechanisms' definitions."""
from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.pld import atomic
from dpamp.pld import query as Q
from test_pld_atomic import (DPS, _allocation, _check_epsilon, _compose, _delta, _eps_delta,
                             _poisson, _rr, _top)


def _pure(e0, c):
    return dp.PureDP(e0) * c, lambda: _compose([_eps_delta(e0, 0)] * c)


def _sub(e0, q, c):
    return (dp.PureDP(e0).subsample(dp.Poisson(q)) * c,
            lambda: _compose([_poisson(_eps_delta(e0, 0), q)] * c))


def _truth_check(m, pair_fn, eps):
    with mp.workdps(DPS):
        pair = pair_fn()
        truth = _delta(pair, eps)
        up, low = atomic.delta_bounds(Q._directions(m), eps)
        assert low <= truth <= up, (eps, low, float(truth), up)


@pytest.mark.parametrize("e0,c,eps", [
    (360.0, 2, 715.0),      # composed loss 720 > 709: e^eps overflows, the term is ~0.993
    (360.0, 2, 719.9),
    (360.0, 2, 709.0),
    (300.0, 3, 880.0),      # composed Q-mass e^-900 underflows to 0: the term is 1 - e^-20
    (300.0, 3, 899.0),
    (400.0, 2, 790.0),
])
def test_delta_beyond_the_exponents_range(e0, c, eps):
    m, pair = _pure(e0, c)
    _truth_check(m, pair, eps)


@pytest.mark.parametrize("k", [-4, -1, 0, 1, 4])
def test_delta_where_the_top_outcomes_q_mass_is_subnormal(k):
    """PureDP(368) Poisson-subsampled at 1e-6, twice: the top outcome has P ~ 1e-12 and
    Q ~ e^-736 ~ 1e-320 (subnormal, ~10 bits): a Q-mass rounded to the nearest subnormal is
    off by up to 2.5e-324, times e^eps ~ e^708 that is ~ 1e-16, far above 3 u P ~ 1e-27."""
    m, pair = _sub(368.0, 1e-6, 2)
    with mp.workdps(DPS):
        top = float(_top(pair()))
    assert top < 709.0
    _truth_check(m, pair, top + k * math.ulp(top))


@pytest.mark.parametrize("delta", [1e-6, pytest.param(0.5, marks=pytest.mark.slow), 0.99])
def test_epsilon_beyond_the_exponents_range(delta):
    """PureDP(40) composed 18 times: the top loss is 720 (the upper curve beyond e^709 must
    not read as 0, which gave eps(1e-6) <= 709 while the truth is ~720)."""
    m, pair = _pure(40.0, 18)
    with mp.workdps(DPS):
        _check_epsilon(m, pair(), delta)


@settings(max_examples=30, deadline=None)
@given(e0=st.floats(200.0, 400.0), c=st.integers(1, 3), q=st.sampled_from([1.0, 1e-3, 1e-6]),
       frac=st.floats(-0.05, 0.05))
def test_drawn_plans_near_the_float_range(e0, c, q, frac):
    m, pair = _sub(e0, q, c) if q < 1 else _pure(e0, c)
    with mp.workdps(DPS):
        top = float(_top(pair()))
    _truth_check(m, pair, max(0.0, top * (1 + frac)))


def test_the_public_query_at_a_subnormal_q_mass_holds_the_truth():
    """The plan above through delta_bracket: the first grid misses tol, the exact route is
    asked; before its fix it answered [0, 0], met, with the truth 4.5e-25."""
    m, pair = _sub(368.0, 1e-6, 2)
    eps = 708.368978884071
    b = Q.delta_bracket(m, eps)
    with mp.workdps(DPS):
        truth = _delta(pair(), eps)
    assert b.lower <= truth <= b.upper, (b, truth)


@pytest.mark.parametrize("n,c,e0", [(300, 0.1, 1.0), (2000, 0.05, 0.5)])
def test_a_bernoulli_witness_states_its_masses_error(n, c, e0):
    """A Bernoulli witness is a list of atoms, so the exact route (and the grids) take its
    masses within 2 mass_rel_err + (16 + 4 max|loss|) ulps; its masses come from gammaln and
    logs of size ~ n |log c| and are off by ~1e-12 relative (measured: 190-1200 times that
    margin), which its own ``rel_err`` bounds but the loss distribution did not carry."""
    from dpamp.amplification.bernoulli.witness import BernoulliWitness
    from dpamp.core.relations import ADD_REMOVE
    l1, l0 = -math.log1p(math.exp(-e0)), -e0 - math.log1p(math.exp(-e0))
    ld = BernoulliWitness(l1, l0, l0, l1, c, n, ADD_REMOVE).exact_loss()
    fin = ld.atom_loss[(ld.atom_p > 0) & (abs(ld.atom_loss) < math.inf)]
    rho = 2 * ld.mass_rel_err + (16 + 4 * float(max(abs(fin)))) * 2.0 ** -53
    with mp.workdps(40):
        p, q, cc = mp.e ** mp.mpf(l1), mp.e ** mp.mpf(l0), mp.mpf(c)
        for j in range(0, n + 1, max(1, n // 40)):
            a = mp.binomial(n, j) * (p * (1 - cc) ** j * cc ** (n - j)
                                     + q * cc ** j * (1 - cc) ** (n - j))
            if a < mp.mpf("1e-300"):
                continue
            assert abs(mp.mpf(float(ld.atom_p[j])) / a - 1) <= rho, j


@pytest.mark.parametrize("a,d", [(1e-6, 20), (1e-10, 100), (1e-14, 5), (1e-14, 100), (0.01, 60),
                                 (1.0, 7)])
def test_a_discrete_laplace_states_its_masses_error(a, d):
    """The discrete Laplace's atoms: log c = log((1 - e^-a) / (1 + e^-a)) ~ log(a / 2) carries
    a few ulps of its size, a relative error of the masses beyond 16 ulps where a is small
    (measured 1.2-3.7 times the margin 2 mass_rel_err + (16 + 4 a d) ulps when the masses
    were e^(log c - a j)); computed directly (c r^j) they are within 0.2 of it."""
    from dpamp.pld.sources import loss_distribution
    m = dp.DiscreteLaplace(a, d)
    ld = loss_distribution(m)
    fin = (ld.atom_p > 0) & (abs(ld.atom_loss) < math.inf)
    rho = 2 * ld.mass_rel_err + (16 + 4 * float(max(abs(ld.atom_loss[fin])))) * 2.0 ** -53
    with mp.workdps(40):
        r = mp.e ** (-mp.mpf(m.a))
        c = (1 - r) / (1 + r)
        for j, i in enumerate(sorted(range(d + 1), key=lambda i: -ld.atom_loss[i])):
            p = 1 / (1 + r) if j == 0 else (r ** d / (1 + r) if j == d else c * r ** j)
            assert abs(mp.mpf(float(ld.atom_p[i])) / p - 1) <= rho, j


# --- drawn plans of every atomic family, at composed atoms' losses -----------------------
def _kary(k, p):
    k, p = mp.mpf(k), mp.mpf(p)
    a, b = (1 - p) + p / k, p / k
    return [(a, b), (b, a)] + ([(p * (k - 2) / k,) * 2] if k > 2 else [])


def _dlap(a, d):
    r = mp.e ** (-mp.mpf(a))
    c = (1 - r) / (1 + r)
    ps = [1 / (1 + r)] + [c * r ** j for j in range(1, d)] + [r ** d / (1 + r)]
    return [(ps[j], ps[d - j]) for j in range(d + 1)]


_PARTS = {
    "rr": (lambda x: dp.RandomizedResponse(0.5 + 0.49 * x), lambda x: _rr(0.5 + 0.49 * x)),
    "pure": (lambda x: dp.PureDP(0.1 + 5 * x), lambda x: _eps_delta(0.1 + 5 * x, 0)),
    "ed": (lambda x: dp.EpsDelta(0.1 + 3 * x, 1e-4 * x),
           lambda x: _eps_delta(0.1 + 3 * x, 1e-4 * x)),
    "kary": (lambda x: dp.KaryRandomizedResponse(4, 0.05 + 0.9 * x),
             lambda x: _kary(4, 0.05 + 0.9 * x)),
    "poisson-pure": (lambda x: dp.PureDP(1 + 4 * x).subsample(dp.Poisson(0.01 + 0.5 * x)),
                     lambda x: _poisson(_eps_delta(1 + 4 * x, 0), 0.01 + 0.5 * x)),
    "poisson-ed": (lambda x: dp.EpsDelta(1 + 2 * x, 1e-3).subsample(dp.Poisson(0.3)),
                   lambda x: _poisson(_eps_delta(1 + 2 * x, 1e-3), 0.3)),
    "dlap": (lambda x: dp.DiscreteLaplace(0.2 + x, 3), lambda x: _dlap(0.2 + x, 3)),
}


def _plan(names, xs, counts):
    """(the drawn plan, its composed pair, the composed outcomes' losses, sorted)."""
    m, pairs = None, []
    for name, x, c in zip(names, xs, counts):
        mech, pair = _PARTS[name]
        m = mech(x) * c if m is None else m + mech(x) * c
        with mp.workdps(DPS):
            pairs += [pair(x)] * c
    with mp.workdps(DPS):
        pair = _compose(pairs)
        losses = sorted({float(abs(mp.log(a / b))) for a, b in pair if a > 0 and b > 0})
    return m, pair, losses


def _drawn(names, xs, counts, pick, ulps):
    """(the drawn plan, its composed pair, eps at a composed outcome's loss moved by ``ulps``,
    the oracle's delta there)."""
    m, pair, losses = _plan(names, xs, counts)
    with mp.workdps(DPS):
        eps = losses[pick % len(losses)]
        eps = max(0.0, eps + ulps * math.ulp(eps))
        truth = _delta(pair, eps)
    return m, pair, eps, truth


@settings(max_examples=40, deadline=None)
@given(names=st.lists(st.sampled_from(sorted(_PARTS)), min_size=1, max_size=2),
       xs=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2),
       counts=st.lists(st.integers(1, 3), min_size=2, max_size=2),
       pick=st.integers(0, 10 ** 6), ulps=st.integers(-3, 3))
def test_drawn_plans_at_composed_atoms_losses(names, xs, counts, pick, ulps):
    """A drawn composition of atomic parts, at eps = a composed outcome's loss (either order)
    moved by a few ulps, and eps(delta) at delta = that eps's delta and the mass at +inf."""
    m, pair, eps, truth = _drawn(names, xs, counts, pick, ulps)
    with mp.workdps(DPS):
        up, low = atomic.delta_bounds(Q._directions(m), eps)
        slack = truth * mp.mpf("1e-40") + mp.mpf("1e-45")   # the oracle's rounding
        assert low <= truth + slack and truth - slack <= up, (eps, low, float(truth), up)
        inf_mass = float(_delta(pair, mp.inf))
        for delta in {float(truth), inf_mass}:
            if 0 < delta < 1:
                _check_epsilon_slack(m, pair, delta)


def _check_epsilon_slack(m, pair, delta):
    """As test_pld_atomic's check, with 1e-40 of delta for the oracle's own 50-digit sums
    (at delta = the mass at +inf the truth is delta itself, summed over ~100 outcomes)."""
    up, low = atomic.epsilon_bounds(Q._directions(m), delta)
    slack = mp.mpf(delta) * mp.mpf("1e-40") + mp.mpf("1e-45")
    if math.isfinite(up):
        assert _delta(pair, up) <= delta + slack, (delta, up)
    if low > 0 and math.isfinite(low):
        assert _delta(pair, low) >= delta - slack, (delta, low)
    if math.isinf(low):
        assert _delta(pair, mp.inf) > delta - slack


_BASES = {
    "rr": (lambda x: dp.RandomizedResponse(0.5 + 0.49 * x), lambda x: _rr(0.5 + 0.49 * x)),
    "ed": (lambda x: dp.EpsDelta(0.5 + 6 * x, 1e-6), lambda x: _eps_delta(0.5 + 6 * x, 1e-6)),
    "poisson-ed": (lambda x: dp.EpsDelta(1 + 2 * x, 1e-3).subsample(dp.Poisson(0.3)),
                   lambda x: _poisson(_eps_delta(1 + 2 * x, 1e-3), 0.3)),
}


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(_BASES)), x=st.floats(0.0, 1.0),
       kt=st.sampled_from([(1, 2), (1, 3), (2, 3)]), c=st.integers(1, 2),
       pick=st.integers(0, 10 ** 6), ulps=st.integers(-3, 3))
def test_drawn_allocation_epochs_at_composed_losses(name, x, kt, c, pick, ulps):
    """Epochs of k-out-of-t random allocation (enumerated, ExactAllocationSource), composed c
    times, at a composed outcome's loss +- ulps; eps(delta) at that delta and the mass at
    +inf."""
    k, t = kt
    mech, base = _BASES[name]
    m = mech(x).subsample(dp.RandomAllocation(k, t)) * c
    with mp.workdps(DPS):
        pair = _compose([_allocation(base(x), k, t)] * c)
        losses = sorted({float(abs(mp.log(a / b))) for a, b in pair if a > 0 and b > 0})
        eps = losses[pick % len(losses)]
        eps = max(0.0, eps + ulps * math.ulp(eps))
        truth = _delta(pair, eps)
        dirs = Q._directions(m)
        if not atomic.applies(dirs):
            return
        up, low = atomic.delta_bounds(dirs, eps)
        slack = truth * mp.mpf("1e-40") + mp.mpf("1e-45")   # the oracle's rounding
        assert low <= truth + slack and truth - slack <= up, (eps, low, float(truth), up)
        for delta in {float(truth), float(_delta(pair, mp.inf))}:
            if 0 < delta < 1:
                _check_epsilon_slack(m, pair, delta)


def test_an_outcome_whose_p_mass_underflowed_is_charged():
    """One epoch of RandomAllocation(1, 3) of PureDP(300) Poisson-subsampled at 1e-110: the
    outcome with all three steps on the top atom has the largest loss and P ~ 1e-370 (below
    the doubles); between its loss and the next the truth is ~5e-372, which an upper end of
    0 (the outcome left out) misses: the dropped atoms are charged at +inf."""
    with mp.workdps(DPS):
        pair = _allocation(_poisson(_eps_delta(300.0, 0), 1e-110), 1, 3)
        losses = sorted({float(abs(mp.log(a / b))) for a, b in pair if a > 0 and b > 0})
        eps = 0.5 * (losses[-1] + losses[-2])
        truth = _delta(pair, eps)
        m = dp.PureDP(300.0).subsample(dp.Poisson(1e-110)).subsample(dp.RandomAllocation(1, 3))
        up, low = atomic.delta_bounds(Q._directions(m), eps)
        assert 0 < truth and low <= truth <= up, (low, truth, up)


@settings(max_examples=12, deadline=None)
@given(names=st.lists(st.sampled_from(["rr", "pure", "ed", "poisson-pure"]),
                      min_size=1, max_size=2),
       xs=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2),
       counts=st.lists(st.integers(1, 3), min_size=2, max_size=2),
       pick=st.integers(0, 10 ** 6), ulps=st.sampled_from([-1, 0, 1]))
def test_public_delta_queries_at_composed_losses(names, xs, counts, pick, ulps):
    """The public delta query (grid round, then the exact route where the grid misses tol) at
    a composed outcome's loss +- an ulp: its bracket holds the oracle's truth."""
    m, pair, eps, truth = _drawn(names, xs, counts, pick, ulps)
    b = Q.delta_bracket(m, eps, budget=20.0)
    slack = truth * mp.mpf("1e-40") + mp.mpf("1e-45")
    assert truth - slack <= b.upper, (eps, b, float(truth))
    assert b.lower is None or b.lower <= truth + slack, (eps, b, float(truth))


@pytest.mark.xfail(strict=True, reason="open: the grid's optimistic side reads KaryRandomized"
                   "Response's loss label eps0 (6 ulps up) with the masses of p, so its lower "
                   "end is above the truth within ~8 ulps below the top loss; the exact route "
                   "keeps the grid's lower end (intersection)")
def test_kary_randomized_response_lower_end_at_its_top_loss():
    m = dp.KaryRandomizedResponse(3, 0.3)
    with mp.workdps(DPS):
        pair = _kary(3, 0.3)
        top = float(_top(pair))
        for k in range(-8, 9):
            eps = top + k * math.ulp(top)
            truth = _delta(pair, eps)
            b = Q.delta_bracket(m, eps)
            assert b.lower is None or b.lower <= truth, (k, b.lower, float(truth))


@settings(max_examples=10, deadline=None)
@given(names=st.lists(st.sampled_from(["rr", "pure", "ed", "poisson-pure", "poisson-ed"]),
                      min_size=1, max_size=2),
       xs=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2),
       counts=st.lists(st.integers(1, 3), min_size=2, max_size=2),
       pick=st.integers(0, 10 ** 6), at_inf=st.booleans())
def test_public_epsilon_queries_at_composed_deltas(names, xs, counts, pick, at_inf):
    """The public epsilon query at delta = delta(a composed loss) (a jump of eps's slope) or
    the mass at +inf (a jump of eps itself): its bracket holds the truth."""
    m, pair, losses = _plan(names, xs, counts)
    with mp.workdps(DPS):
        delta = float(_delta(pair, mp.inf if at_inf else losses[pick % len(losses)]))
    if not 1e-12 <= delta < 1:
        return
    b = Q.epsilon_bracket(m, delta, budget=20.0)
    with mp.workdps(DPS):
        slack = mp.mpf(delta) * mp.mpf("1e-40") + mp.mpf("1e-45")
        if math.isfinite(b.upper):
            assert _delta(pair, b.upper) <= delta + slack, (delta, b)
        if b.lower is not None and 0 < b.lower < math.inf:
            assert _delta(pair, b.lower) >= delta - slack, (delta, b)
