"""The exact composition of atomic parts (dpamp.pld.atomic) against an independent oracle.

The oracle enumerates every outcome of the composed pair in 50-digit mpmath, from the
mechanisms' definitions (not from dpamp's loss distributions): randomized response, pure DP and
(eps, delta) pairs (Steinke 2022, footnote 16), Poisson subsampling ((1 - q) Q + q P, Q) and one
epoch of k-out-of-t random allocation (Feldman & Shenfeld 2025, Sec. 2: P the average over the
k-sets I of P0 on I, Q0 elsewhere; Q = Q0^t), outcome by outcome (no count vectors); then
delta(eps) = sum (P - e^eps Q)_+ over the outcomes, both orders, the larger.
"""
from __future__ import annotations

import itertools
import math
import time

import mpmath as mp
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.core.multisets import count_vectors
from dpamp.pld import atomic
from dpamp.pld import query as Q

DPS = 50


# --- the oracle ---------------------------------------------------------------------------
def _eps_delta(e, d):
    """[(P, Q)] of the worst-case (e, d) pair: +e, -e, and +inf / -inf with mass d."""
    e, d = mp.mpf(e), mp.mpf(d)
    hi, lo = (1 - d) * mp.e ** e / (1 + mp.e ** e), (1 - d) / (1 + mp.e ** e)
    out = [(hi, lo), (lo, hi)]
    return out + [(d, mp.mpf(0)), (mp.mpf(0), d)] if d > 0 else out


def _rr(p):
    p = mp.mpf(p)
    return [(p, 1 - p), (1 - p, p)]


def _poisson(pair, q):
    q = mp.mpf(q)
    return [((1 - q) * b + q * a, b) for a, b in pair]


def _allocation(pair, k, t):
    out = []
    for o in itertools.product(range(len(pair)), repeat=t):
        qq = mp.fprod(pair[i][1] for i in o)
        pp = mp.fsum(mp.fprod(pair[o[i]][0] if i in s else pair[o[i]][1] for i in range(t))
                     for s in itertools.combinations(range(t), k)) / math.comb(t, k)
        out.append((pp, qq))
    return out


def _compose(pairs):
    out = [(mp.mpf(1), mp.mpf(1))]
    for pair in pairs:
        out = [(a * c, b * d) for a, b in out for c, d in pair]
    return out


def _delta(pair, eps):
    if eps == mp.inf:       # the masses at +inf of either order
        return max(mp.fsum(a for a, b in pair if b == 0), mp.fsum(b for a, b in pair if a == 0))
    x = mp.e ** mp.mpf(eps)
    one = mp.fsum(max(a - x * b, 0) for a, b in pair)
    two = mp.fsum(max(b - x * a, 0) for a, b in pair)
    return max(one, two)


def _top(pair):
    """The largest finite loss of either order."""
    return max(abs(mp.log(a / b)) for a, b in pair if a > 0 and b > 0)


def _dirs(m):
    return Q._directions(m)


def _check_delta(m, pair, eps):
    with mp.workdps(DPS):
        truth = _delta(pair, eps)
        up, low = atomic.delta_bounds(_dirs(m), eps)
        assert low <= truth <= up, (eps, low, truth, up)
        return float(truth), up, low


def _check_epsilon(m, pair, delta):
    with mp.workdps(DPS):
        up, low = atomic.epsilon_bounds(_dirs(m), delta)
        # eps* = inf{eps: delta(eps) <= delta}: the upper end has delta(up) <= delta, the lower
        # end delta(low) >= delta (the curve is non-increasing and continuous in eps)
        if math.isfinite(up):
            assert _delta(pair, up) <= delta, (delta, up)
        if low > 0 and math.isfinite(low):
            assert _delta(pair, low) >= delta, (delta, low)
        if math.isinf(low):
            assert _delta(pair, mp.inf) > delta
        return up, low


# --- the plans ----------------------------------------------------------------------------
PLANS = {
    "rr.999": (lambda: dp.RandomizedResponse(0.999), lambda: _rr(0.999)),
    "rr.999x3": (lambda: dp.RandomizedResponse(0.999) * 3, lambda: _compose([_rr(0.999)] * 3)),
    "rr(1-1e-10)x2": (lambda: dp.RandomizedResponse(1 - 1e-10) * 2,
                      lambda: _compose([_rr(1 - 1e-10)] * 2)),
    "pure8x2": (lambda: dp.PureDP(8.0) * 2, lambda: _compose([_eps_delta(8, 0)] * 2)),
    "ed8": (lambda: dp.EpsDelta(8.0, 1e-12), lambda: _eps_delta(8, 1e-12)),
    "ed+rr": (lambda: dp.EpsDelta(2.0, 1e-3) * 2 + dp.RandomizedResponse(0.8),
              lambda: _compose([_eps_delta(2, 1e-3)] * 2 + [_rr(0.8)])),
    "pure poisson": (lambda: dp.PureDP(3.0).subsample(dp.Poisson(0.3)) * 2,
                     lambda: _compose([_poisson(_eps_delta(3, 0), 0.3)] * 2)),
    "rr alloc(1,3)": (lambda: dp.RandomizedResponse(0.999).subsample(dp.RandomAllocation(1, 3)),
                      lambda: _allocation(_rr(0.999), 1, 3)),
    "rr alloc(2,4)": (lambda: dp.RandomizedResponse(0.9).subsample(dp.RandomAllocation(2, 4)),
                      lambda: _allocation(_rr(0.9), 2, 4)),
    "ed alloc(1,3)x2": (lambda: dp.EpsDelta(8.0, 1e-12).subsample(dp.RandomAllocation(1, 3)) * 2,
                        lambda: _compose([_allocation(_eps_delta(8, 1e-12), 1, 3)] * 2)),
}


def _plan(name):
    m, pair = PLANS[name]
    with mp.workdps(DPS):
        return m(), pair()


@pytest.mark.parametrize("name", sorted(PLANS))
def test_delta_contains_the_truth_near_the_largest_loss(name):
    m, pair = _plan(name)
    with mp.workdps(DPS):
        top = float(_top(pair))
    for eps in (top - 1e-9, top - 1e-12, top, top + 1e-12, 0.5 * top, 0.0):
        truth, up, low = _check_delta(m, pair, max(eps, 0.0))
        if eps == top - 1e-9:
            # a part of 1e-9 of the top atom's mass: resolved to a relative 1e-3 and better
            assert up - low <= 1e-3 * up


@pytest.mark.parametrize("name", sorted(PLANS))
def test_delta_contains_the_truth_within_ulps_of_the_largest_loss(name):
    """At the kink itself the truth is of the size of the masses' rounding: a bound that
    forgets a rounding (of an input mass, a composed mass, e^eps or the sum) fails here."""
    m, pair = _plan(name)
    with mp.workdps(DPS):
        top = float(_top(pair))
    for k in range(-12, 13, 2):
        _check_delta(m, pair, top + k * math.ulp(top))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_epsilon_contains_the_truth_at_the_mass_at_infinity(name):
    m, pair = _plan(name)
    with mp.workdps(DPS):
        inf_mass = float(mp.fsum(a for a, b in pair if b == 0))
        top = float(_top(pair))
    deltas = [1e-3, 1e-9, 1e-15] + ([inf_mass, inf_mass * (1 + 1e-9), inf_mass * (1 - 1e-9)]
                                    if inf_mass > 0 else [])
    for delta in deltas:
        up, low = _check_epsilon(m, pair, delta)
        if math.isfinite(up) and up > 0:
            assert up - low <= 1e-9 * max(1.0, top), (delta, low, up)


def test_epsilon_at_an_eps_delta_parts_own_delta_is_its_eps():
    """eps(delta = d0) of EpsDelta(e0, d0) under one epoch of RandomAllocation(1, 3): exactly
    the largest loss e0 (delta(eps) reaches d0 there and stays), within ulps, from both ends."""
    m = dp.EpsDelta(8.0, 1e-12).subsample(dp.RandomAllocation(1, 3))
    up, low = atomic.epsilon_bounds(_dirs(m), 1e-12)
    assert low <= 8.0 <= up and up - low < 1e-12


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.55, 0.9999), c=st.integers(1, 5), frac=st.floats(-1e-6, 1e-6),
       alloc=st.booleans())
def test_drawn_randomized_response_plans(p, c, frac, alloc):
    """Drawn RR plans (composed, or one epoch of RandomAllocation(1, 3)) at drawn eps near the
    largest loss: the exact bracket holds the oracle's truth."""
    with mp.workdps(DPS):
        if alloc:
            m = dp.RandomizedResponse(p).subsample(dp.RandomAllocation(1, 3))
            pair = _allocation(_rr(p), 1, 3)
        else:
            m = dp.RandomizedResponse(p) * c
            pair = _compose([_rr(p)] * c)
        top = float(_top(pair))
    _check_delta(m, pair, max(0.0, top * (1 + frac)))


def test_counts_are_stars_and_bars():
    for m, c in [(1, 4), (2, 5), (3, 3), (4, 2), (5, 1)]:
        n = count_vectors(m, c)
        assert n.shape == (math.comb(c + m - 1, m - 1), m)
        assert (n.sum(axis=1) == c).all() and (n >= 0).all()
        assert len({tuple(r) for r in n}) == n.shape[0]


def test_not_atomic_plans_do_not_apply():
    assert not atomic.applies(_dirs(dp.Gaussian(1.0) * 2))
    assert not atomic.applies(_dirs(dp.Laplace(1.0) + dp.RandomizedResponse(0.9)))
    # more outcomes than MAX_OUTCOMES: the grids alone
    assert not atomic.applies(_dirs(dp.RandomizedResponse(0.9) * 3 + dp.PureDP(1.0) * 2
                                    + dp.EpsDelta(1.0, 1e-6) * 20000))


def test_a_query_the_first_grid_settles_never_enumerates(monkeypatch):
    """RR at a moderate eps: the first grid meets tol, the exact route is not asked (the bits
    are the grid's, as before it existed)."""
    def boom(*a, **k):
        raise AssertionError("enumerated")
    monkeypatch.setattr(atomic, "delta_bounds", boom)
    monkeypatch.setattr(atomic, "epsilon_bounds", boom)
    m = dp.RandomizedResponse(0.75) * 10
    assert Q.delta_bracket(m, 2.0).met
    assert Q.epsilon_bracket(m, 1e-6).met


@pytest.mark.parametrize("query", ["delta", "epsilon"])
def test_the_slow_public_queries_answer_fast(query):
    """The plans that spent all their grid rounds (25-40 s): one epoch of RandomAllocation(1, 3)
    of RandomizedResponse(0.999), delta just below the largest loss, and of EpsDelta(8, 1e-12)
    at its own delta; now one grid round and the enumeration, met, holding the truth."""
    if query == "delta":
        m, pair = _plan("rr alloc(1,3)")
        with mp.workdps(DPS):
            eps = float(_top(pair)) - 1e-9
    else:
        m = dp.EpsDelta(8.0, 1e-12).subsample(dp.RandomAllocation(1, 3))
        with mp.workdps(DPS):
            pair = _allocation(_eps_delta(8, 1e-12), 1, 3)
    t0 = time.process_time()
    g = m.delta(epsilon=eps, method="pld") if query == "delta" else \
        m.epsilon(delta=1e-12, method="pld")
    assert time.process_time() - t0 < 5.0
    assert g.tol_met
    with mp.workdps(DPS):
        if query == "delta":
            truth = _delta(pair, eps)
            assert g.lower <= truth <= g.delta
        else:
            assert g.lower <= 8.0 <= g.epsilon


def test_same_question_same_answer_through_the_cache():
    """The second ask finds the first round's state in the cache, misses tol on it again and
    gets the same exact bracket, bit for bit."""
    m, pair = _plan("rr alloc(1,3)")
    with mp.workdps(DPS):
        eps = float(_top(pair)) - 1e-9
    first, second = Q.delta_bracket(m, eps), Q.delta_bracket(m, eps)
    assert (first.upper, first.lower, first.met) == (second.upper, second.lower, second.met)


def test_a_bracket_the_rounding_keeps_wide_stops_at_once():
    """eps 1e-14 below the largest loss: the truth is of the size of the masses' rounding, the
    exact bracket misses tol and says why, after one round (no grid refinement)."""
    m, pair = _plan("rr alloc(1,3)")
    with mp.workdps(DPS):
        eps = float(_top(pair)) - 1e-14
        truth = _delta(pair, eps)
    b = Q.delta_bracket(m, eps)
    assert b.rounds == 1 and not b.met and "exact composition" in b.note
    assert b.lower <= truth <= b.upper
