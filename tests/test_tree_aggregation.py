"""dp.TreeAggregation (one epoch of DP-FTRL) against truths of its own and dp-accounting.

* The tree itself, by brute force: the online binary tree over ``steps`` leaves releases only
  completed dyadic nodes; every prefix sum is a sum of them (the binary decomposition of its
  step); a record at step s enters the nodes holding s, so the L2 norm of its contribution is
  sqrt(#nodes holding s), largest sqrt(steps.bit_length()) = sqrt(ceil(log2(steps + 1))).
* The mechanism is then exactly the Gaussian mechanism with mu = c sqrt(depth) / z: every
  method's answer equals the Gaussian's (both relations), compositions merge with Gaussians.
* dp-accounting: its RDP accountant (REPLACE_SPECIAL, the add/remove numbers) on
  SingleEpochTreeAggregationDpEvent gives the same curve to 1e-12; its published bounds for the
  StackOverflow setting of Kairouz et al. (eps < 19.74 at z = 1.13, eps < 2.04 at z = 8.83,
  1600 steps, delta 1e-6) hold with room; the events both ways.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp

TA = dp.TreeAggregation


def complete_nodes(n):
    """The dyadic intervals [k 2^h + 1, (k + 1) 2^h] inside [1, n]: the nodes the online tree
    releases."""
    out = []
    h = 0
    while 2 ** h <= n:
        for k in range(n // 2 ** h):
            out.append((k * 2 ** h + 1, (k + 1) * 2 ** h))
        h += 1
    return out


def prefix_nodes(s):
    """The nodes whose sum is the prefix sum at step s: s's binary decomposition."""
    out, start = [], 0
    for h in reversed(range(s.bit_length())):
        if s & (1 << h):
            out.append((start + 1, start + 2 ** h))
            start += 2 ** h
    return out


@pytest.mark.parametrize("n", list(range(1, 40)) + [63, 64, 65, 1000, 1600, 1024])
def test_depth_by_brute_force(n):
    nodes = complete_nodes(n)
    node_set = set(nodes)
    for s in range(1, n + 1):                 # every prefix sum uses released nodes only
        assert set(prefix_nodes(s)) <= node_set
        lo, hi = prefix_nodes(s)[0][0], prefix_nodes(s)[-1][1]
        assert (lo, hi) == (1, s) or lo == 1
    holds = [sum(1 for a, b in nodes if a <= s <= b) for s in range(1, n + 1)]
    depth = max(holds)
    assert depth == TA(1.0, n).depth == math.ceil(math.log2(n + 1)) == n.bit_length()
    assert holds[0] == depth                 # step 1 is in a node of every level
    # L2 sensitivity of the node vector: one record (norm 1) at step s moves those nodes
    for s in (1, n // 2 + 1, n):
        vec = np.array([1.0 if a <= s <= b else 0.0 for a, b in nodes])
        assert np.linalg.norm(vec) <= math.sqrt(depth) * (1 + 1e-15)
    # a tree that also released unfinished nodes reaches ceil(log2 n) + 1: more unless n = 2^k
    full = math.ceil(math.log2(n)) + 1
    assert full >= depth and (full == depth) == (n & (n - 1) == 0)


@pytest.mark.parametrize("z, n, rel", [(1.13, 1600, dp.ADD_REMOVE), (8.83, 1600, dp.ADD_REMOVE),
                                       (2.0, 7, dp.SUBSTITUTION), (0.7, 1, dp.ADD_REMOVE)])
def test_is_the_gaussian_mechanism(z, n, rel):
    t = TA(z, n, relation=rel)
    c = 1.0 if rel is dp.ADD_REMOVE else 2.0
    g = dp.Gaussian(z, c * math.sqrt(n.bit_length()), relation=rel)
    assert t.gaussian() == g and t.mu == pytest.approx(g.mu, rel=1e-15)
    alphas = np.array([1.5, 2.0, 10.0, 100.0])
    assert np.allclose(t.rdp(alphas), g.rdp(alphas), rtol=1e-14, atol=0)
    for method in ("profile", "pld", "rdp", "zcdp"):
        a, b = t.epsilon(1e-6, method=method), g.epsilon(1e-6, method=method)
        assert a.epsilon == pytest.approx(b.epsilon, rel=1e-9), method
        assert (a.lower is None) == (b.lower is None)
    assert t.delta(1.0).delta == pytest.approx(g.delta(1.0).delta, rel=1e-9)
    assert math.isinf(t.pure_epsilon())


def test_merges_with_gaussians():
    """Gaussian parts compose exactly into one (004 Cor. 8): three epochs and a Gaussian step
    are the Gaussian with 1/z'^2 = 3 depth / z^2 + 1 / s^2."""
    m = TA(3.0, 100) * 3 + dp.Gaussian(2.0)
    z_eff = (3 * 7 / 9.0 + 1 / 4.0) ** -0.5
    want = dp.Gaussian(z_eff).epsilon(1e-5, method="profile")
    got = m.epsilon(1e-5)
    assert got.lower <= want.epsilon * (1 + 1e-9) and want.lower <= got.epsilon * (1 + 1e-9)


# --- dp-accounting ---------------------------------------------------------------------------

def _their_accountant(event, orders=None):
    from dp_accounting import privacy_accountant as PA
    from dp_accounting.rdp import rdp_privacy_accountant as R
    acc = R.RdpAccountant(orders or R.DEFAULT_RDP_ORDERS,
                          PA.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(event)
    return acc


@pytest.mark.parametrize("z, counts", [(1.13, 1600), (0.5, [10, 40, 30, 20]), (2.0, 1),
                                       (1.0, [400] * 4), (3.0, 1024)])
def test_rdp_against_dp_accounting(z, counts):
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    ev = E.SingleEpochTreeAggregationDpEvent(z, counts)
    acc = _their_accountant(ev)
    m = dp.from_dp_event(ev)
    assert m == TA(z, max(np.atleast_1d(counts)))
    ours = np.asarray(m.rdp(np.asarray(acc._orders)))
    assert np.allclose(ours, acc._rdp, rtol=1e-12, atol=0)
    theirs = acc.get_epsilon(1e-6)
    g = m.epsilon(1e-6)
    assert g.lower <= theirs and g.epsilon <= theirs
    print(f"z {z} steps {counts}: dpamp [{g.lower:.6g}, {g.epsilon:.6g}] ({g.method}), "
          f"dp-accounting RDP {theirs:.6g} (+{theirs / g.epsilon - 1:.2%})")


@pytest.mark.parametrize("z, bound", [(1.13, 19.74), (8.83, 2.04)])
def test_dp_accountings_stackoverflow_values(z, bound):
    """dp-accounting's test_compute_eps_tree: 1600 steps, delta 1e-6 (Kairouz et al. 2021's
    StackOverflow setting), eps below their published bound; dpamp's bracket is below it."""
    g = TA(z, 1600).epsilon(1e-6)
    assert g.epsilon < bound
    assert g.epsilon - g.lower <= 1e-3 * g.epsilon
    print(f"z {z}: dpamp [{g.lower:.6g}, {g.epsilon:.6g}], dp-accounting's bound {bound}")


def test_composed_trees_against_dp_accounting():
    """Restarts (a record once per tree): ComposedDpEvent of trees is the composition; their
    test_compose_tree_rdp (sum of the trees' RDP) and test_single_epoch_multi_tree_rdp (one
    epoch over several trees: the largest)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    counts = [10, 400, 400, 400, 390]
    ev = E.ComposedDpEvent([E.SingleEpochTreeAggregationDpEvent(0.1, c) for c in counts])
    m = dp.from_dp_event(ev)
    assert m == dp.compose(*[TA(0.1, c) for c in counts])
    acc = _their_accountant(ev, [2.0, 8.0])
    assert np.allclose(m.rdp(np.array([2.0, 8.0])), acc._rdp, rtol=1e-12)
    one = dp.from_dp_event(E.SingleEpochTreeAggregationDpEvent(0.1, counts))
    assert one == TA(0.1, 400)


def test_events_both_ways():
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as E
    t = TA(1.5, 100)
    ev = dp.to_dp_event(t)
    assert ev == E.SingleEpochTreeAggregationDpEvent(1.5, 100)
    assert dp.from_dp_event(ev) == t
    assert dp.to_dp_event(t * 4) == E.SelfComposedDpEvent(ev, 4)
    assert dp.from_dp_event(E.SelfComposedDpEvent(ev, 4)) == t * 4
    # substitution: dp-accounting's z is relative to the sensitivity in force (one record
    # replaced moves a node by 2 clipping norms): the same mu both ways
    s = TA(3.0, 100, relation=dp.SUBSTITUTION)
    back = dp.from_dp_event(dp.to_dp_event(s), relation=dp.SUBSTITUTION)
    assert back.mu == pytest.approx(s.mu, rel=1e-15)
    back2 = dp.from_dp_event(E.SingleEpochTreeAggregationDpEvent(1.5, 100),
                             relation=dp.SUBSTITUTION, replace_one_sensitivity=2.0)
    assert back2 == TA(1.5, 100, relation=dp.SUBSTITUTION)
    assert dp.from_dp_event(E.SingleEpochTreeAggregationDpEvent(1.0, 0)).epsilon(0.0).epsilon == 0
    with pytest.raises(ValueError, match="not private"):
        dp.from_dp_event(E.SingleEpochTreeAggregationDpEvent(0.0, 10))


# --- words, JSON, validation, properties -----------------------------------------------------

def test_plan_word_and_json():
    from dpamp.io.plan import PlanError, parse_plan_text
    plan = parse_plan_text('delta = 1e-6\n[[stage]]\nmechanism = "tree_aggregation"\n'
                           'noise_multiplier = 1.13\nsteps_per_tree = 1600\nsteps = 3\n')
    assert plan.mechanism == TA(1.13, 1600) * 3
    assert "tree aggregation" in plan.stages[0].describe()["mechanism"]
    with pytest.raises(PlanError, match="steps_per_tree"):
        parse_plan_text('delta = 1e-6\n[[stage]]\nmechanism = "tree_aggregation"\n'
                        'noise_multiplier = 1.13\nsteps = 3\n')
    for m in (TA(1.13, 1600), TA(2.0, 3, relation=dp.SUBSTITUTION) * 2):
        assert dp.from_json(m.to_json()) == m


@pytest.mark.parametrize("z, n", [(0.0, 10), (-1.0, 10), (float("nan"), 10), (1.0, 0),
                                  (1.0, 1.5), (1.0, -3)])
def test_invalid(z, n):
    with pytest.raises(ValueError, match="noise_multiplier|steps"):
        TA(z, n)


@settings(max_examples=15, deadline=None)
@given(z=st.floats(0.3, 20.0), n=st.integers(1, 10 ** 6), k=st.integers(1, 10 ** 6),
       r=st.floats(1.0, 3.0))
def test_monotone_in_steps_and_noise(z, n, k, r):
    """More steps never lower the depth; more noise never raises delta."""
    small, big = TA(z, n), TA(z, n + k)
    assert small.depth <= big.depth
    assert small.delta(1.0).lower <= big.delta(1.0).delta * (1 + 1e-9)
    assert TA(z * r, n).delta(1.0).lower <= small.delta(1.0).delta * (1 + 1e-9)
