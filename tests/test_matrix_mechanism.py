"""The matrix mechanism (issue 35, items 1-4 and 7): sensitivity against brute force over every
participation pattern, b = 1 is DP-SGD, the binary tree is tree aggregation, the cyclic-Poisson
reduction against dp-accounting's PLD, plan words, the command line, calibration, errors."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.families.matrix import bsr_coefficients
from dpamp.io.plan import PlanError, parse_stage
from dpamp.mechanisms.matrix_sensitivity import count_patterns, sensitivity, vec_sens


# --- brute force -----------------------------------------------------------------------------

def patterns(n, b, k):
    """Every non-empty pattern of at most k steps of range(n), any two >= b apart."""
    for r in range(1, k + 1):
        for p in itertools.combinations(range(n), r):
            if all(p[i + 1] - p[i] >= b for i in range(r - 1)):
                yield p


def brute(strategy, k, b):
    """(max 1^T X_pi 1, max sum |X_pi|) over every pattern: the first is attained (equal
    gradients), the second bounds every gradient choice; equal where X >= 0."""
    c = strategy.dense()
    x = c.T @ c
    lo = max(float(x[np.ix_(p, p)].sum()) for p in patterns(strategy.n, b, k))
    hi = max(float(np.abs(x[np.ix_(p, p)]).sum()) for p in patterns(strategy.n, b, k))
    return lo, hi


def check_bracket(strategy, k, b):
    s = sensitivity(strategy, k, b)
    lo, hi = brute(strategy, k, b)
    assert s.lower <= s.upper
    assert s.lower ** 2 <= hi * (1 + 1e-12)        # never above what any gradients reach
    assert s.upper ** 2 >= lo * (1 - 1e-12)        # never below an attained value
    if s.exact:     # closed: the truth lies between the attained lo and the bound hi
        assert s.lower == pytest.approx(s.upper, rel=1e-9)
        assert lo * (1 - 1e-9) <= s.upper ** 2 <= hi * (1 + 1e-9)
    if s.exact and s.route in ("banded", "toeplitz-monotone", "single") or \
            s.exact and (strategy.dense() >= 0).all():
        assert s.upper ** 2 == pytest.approx(lo, rel=1e-9)   # equal gradients are the worst
    return s, lo, hi


def test_vec_sens_is_the_best_pattern_sum():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 10))
        b, k = int(rng.integers(1, n + 1)), int(rng.integers(1, 5))
        x = rng.random(n)
        best = max(sum(x[list(p)]) for p in patterns(n, b, k))
        assert vec_sens(x, b, k) == pytest.approx(best, rel=1e-12)
        assert count_patterns(n, b, k, 10 ** 6) == sum(1 for _ in patterns(n, b, k))


@pytest.mark.parametrize("seed", range(6))
def test_sensitivity_against_every_pattern(seed):
    rng = np.random.default_rng(seed)
    routes = set()
    for _ in range(40):
        n = int(rng.integers(1, 9))
        b, k = int(rng.integers(1, n + 1)), int(rng.integers(1, 5))
        kind = int(rng.integers(0, 6))
        if kind == 0:
            s = dp.DenseStrategy(np.tril(rng.random((n, n))))
        elif kind == 1:
            s = dp.DenseStrategy(rng.normal(size=(int(rng.integers(1, 9)), n)))
        elif kind == 2:
            s = dp.Toeplitz(np.sort(rng.random(n))[::-1], n)
        elif kind == 3:
            s = dp.BandedToeplitz(rng.normal(size=int(rng.integers(1, n + 1))), n)
        elif kind == 4:
            s = dp.BLT(rng.random(2), rng.normal(size=2) * 0.4, n)
        else:
            s = dp.BinaryTree(n)
        routes.add(check_bracket(s, k, b)[0].route)
    assert "single" in routes and len(routes) >= 3


def test_exact_routes_on_their_structures():
    # banded with bands <= separation: exact even with negative coefficients
    s, lo, _ = check_bracket(dp.BandedToeplitz([1.0, -0.7, 0.3], 8), 3, 3)
    assert s.route == "banded" and s.exact
    # Toeplitz, non-negative and non-increasing: the earliest pattern
    s, lo, _ = check_bracket(dp.Toeplitz(bsr_coefficients(8), 8), 3, 2)
    assert s.route == "toeplitz-monotone" and s.exact
    # BLT with omega >= 0, sum omega <= 1: the same
    s, lo, _ = check_bracket(dp.BLT((0.9, 0.5), (0.4, 0.3), 8), 4, 2)
    assert s.route == "toeplitz-monotone" and s.exact
    # a dense banded C (not Toeplitz) is banded too; its Gram's band is found structurally
    rng = np.random.default_rng(7)
    c = np.tril(rng.normal(size=(8, 8))) * (np.tri(8) - np.tri(8, k=-3))
    dense = dp.DenseStrategy(c)
    assert dense.bands == 3 and dense.gram_bands == 3 and dense.toeplitz() is None
    s, lo, _ = check_bracket(dense, 3, 3)
    assert s.route == "banded" and s.exact
    # dense non-negative: enumeration is exact
    s, lo, _ = check_bracket(dp.DenseStrategy(np.tril(np.ones((7, 7)))), 3, 2)
    assert s.exact


def _best_sum(x, b, k):
    """max over patterns (<= k indices, gaps >= b) of sum x, by plain recursion on prefixes."""
    n = len(x)
    best = [[0.0] * (k + 1) for _ in range(n + 1)]   # best[i][j]: within x[:i], <= j picks
    for i in range(1, n + 1):
        for j in range(1, k + 1):
            take = x[i - 1] + best[max(i - b, 0)][j - 1]
            best[i][j] = max(best[i - 1][j], take)
    return best[n][k]


def test_row_bound_is_the_two_stage_bound():
    """The row bound is Choquette-Choo et al.'s Alg. 4 (jax_privacy's
    get_min_sep_sensitivity_upper_bound): each row's best pattern sum of |X|, then the best
    pattern sum of those; re-derived here by plain recursion."""
    rng = np.random.default_rng(11)
    s = dp.Toeplitz(rng.normal(size=60), 60)
    k, b = 6, 3
    got = sensitivity(s, k, b)
    assert got.route == "row bound"
    x = np.abs(s.dense().T @ s.dense())
    rows = [_best_sum(list(r), b, k) for r in x]
    ref = math.sqrt(_best_sum(rows, b, k))
    assert got.upper == pytest.approx(ref, rel=1e-9) and got.upper >= ref
    assert got.lower <= got.upper


def test_blt_is_its_dense_matrix():
    blt = dp.BLT((0.99, 0.8), (0.5, -0.3), 40)
    dense = dp.DenseStrategy(blt.dense())
    a, b = sensitivity(blt, 4, 7), sensitivity(dense, 4, 7)
    assert a.lower <= b.upper and b.lower <= a.upper
    c = blt.toeplitz()
    assert c[0] == 1 and c[3] == pytest.approx(0.5 * 0.99 ** 2 - 0.3 * 0.8 ** 2, rel=1e-14)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 4),
       st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=8))
def test_toeplitz_bracket_property(n, b, k, coeffs):
    if not any(coeffs):
        coeffs = [1.0]
    check_bracket(dp.Toeplitz(coeffs, n), k, min(b, n))


def test_large_strategies_are_fast_and_tight():
    s = sensitivity(dp.BandedToeplitz(bsr_coefficients(16), 10_000), 10, 1000)
    assert s.route == "banded" and s.exact
    s = sensitivity(dp.Toeplitz(bsr_coefficients(10_000), 10_000), 100, 100)
    assert s.route == "toeplitz-monotone" and s.upper / s.lower - 1 < 1e-9
    s = sensitivity(dp.BinaryTree(10_000), 10, 1000)
    assert s.route == "tree levels" and s.upper / s.lower < 1.1


# --- b = 1 is DP-SGD; the tree is tree aggregation ----------------------------------------

def test_identity_single_epoch_is_the_gaussian():
    m = dp.MatrixMechanism(np.eye(6), 1.3)
    g, ref = m.epsilon(1e-5), dp.Gaussian(1.3).epsilon(1e-5)
    assert m.route == "gaussian" and m.sensitivity.exact
    assert g.lower <= ref.epsilon and ref.lower <= g.epsilon
    assert g.epsilon == pytest.approx(ref.epsilon, rel=1e-9)


def test_one_band_under_poisson_is_dpsgd():
    n, z, q = 300, 1.1, 0.02
    m = dp.MatrixMechanism(dp.BandedToeplitz([1.0], n), z, dp.Poisson(q))
    assert m.route == "cyclic-poisson" and m.rounds == n
    ref = dp.Gaussian(z).subsample(dp.Poisson(q)) * n
    ((step, count),) = m.reduction().parts()
    assert count == n and step.scheme.rate == q
    assert step.base.mu == pytest.approx(1 / z, rel=1e-14)
    g, r = m.epsilon(1e-5), ref.epsilon(1e-5)
    assert g.lower <= r.epsilon and r.lower <= g.epsilon


def test_binary_tree_is_tree_aggregation():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant
    for n in (1, 7, 8, 1000):
        m = dp.MatrixMechanism(dp.BinaryTree(n), 2.0)
        assert m.sensitivity.exact
        assert m.sensitivity.upper == pytest.approx(math.sqrt(n.bit_length()), rel=1e-14)
        g, t = m.epsilon(1e-6), dp.TreeAggregation(2.0, n).epsilon(1e-6)
        assert g.lower <= t.epsilon and t.lower <= g.epsilon
        # dp-accounting: its RDP of the tree event, and the PLD of the same Gaussian
        # the event is stated under "replace with a special record": a record moves a node by
        # at most the clipping norm, as under add/remove
        acc = rdp_privacy_accountant.RdpAccountant(
            neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
        acc.compose(dpa.SingleEpochTreeAggregationDpEvent(2.0, n))
        assert m.epsilon(1e-6, method="rdp").epsilon == pytest.approx(
            acc.get_epsilon(1e-6), rel=1e-3)
        pld = pld_privacy_accountant.PLDAccountant()
        pld.compose(dpa.GaussianDpEvent(2.0 / math.sqrt(n.bit_length())))
        truth = pld.get_epsilon(1e-6)
        assert g.lower <= truth * (1 + 1e-6) and truth <= g.epsilon * (1 + 1e-3)


# --- the cyclic-Poisson reduction (jax_privacy's amplified_bandmf_event) -----------------

def _bandmf_event(z, n, bands, q, max_col):
    """jax_privacy's amplified_bandmf_event: DP-SGD with noise multiplier z (C normalised to
    max column norm 1) for ceil(n / bands) steps; dpamp's z is per unit of C, so z / max_col."""
    import dp_accounting as dpa
    step = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z / max_col))
    return dpa.SelfComposedDpEvent(step, math.ceil(n / bands))


@pytest.mark.parametrize("n, bands, z, q", [  # (the two larger plans: 12-15 s each)
    pytest.param(1000, 8, 3.0, 0.05, marks=pytest.mark.slow),
    pytest.param(257, 4, 1.5, 0.01, marks=pytest.mark.slow), (64, 16, 5.0, 0.2), (64, 4, 1.5, 0.01)])
def test_cyclic_poisson_holds_dp_accounting(n, bands, z, q):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    coeffs = bsr_coefficients(bands)
    m = dp.MatrixMechanism(dp.BandedToeplitz(coeffs, n), z, dp.CyclicPoisson(q, bands))
    assert m.route == "cyclic-poisson" and m.rounds == math.ceil(n / bands)
    max_col = math.sqrt(sum(c * c for c in coeffs))
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(_bandmf_event(z, n, bands, q, max_col))
    event = acc.get_epsilon(1e-6)
    # the worst group exactly (group 0: the most steps, the longest last column), each step at
    # its own column norm; where bands divide n it is jax_privacy's event
    import dp_accounting as dpa
    norms = np.linalg.norm(dp.BandedToeplitz(coeffs, n).dense(), axis=0)[::bands]
    exact = pld_privacy_accountant.PLDAccountant()
    exact.compose(dpa.ComposedDpEvent([dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z / c))
                                       for c in norms]))
    truth = exact.get_epsilon(1e-6)
    g = m.epsilon(1e-6)
    assert g.lower is not None
    # dp-accounting's PLD is pessimistic to its discretisation: within our bracket's reach
    assert g.lower <= truth * (1 + 1e-4) and truth <= g.epsilon * (1 + 2e-3)
    # the event counts ceil(n / bands) full steps: the same where bands divide n, else above
    assert g.epsilon <= event * (1 + 2e-3)
    if n % bands == 0:
        assert g.lower <= event * (1 + 1e-4)
    r = m.epsilon(1e-6, method="rdp")
    assert r.epsilon >= g.lower


def _jax_privacy_event_fn():
    """jax_privacy's ``amplified_bandmf_event`` where jax-privacy imports (not in the venv)."""
    import importlib
    pytest.importorskip("jax_privacy")
    for name in ("jax_privacy.accounting", "jax_privacy.accounting.dp_events",
                 "jax_privacy.experimental.accounting", "jax_privacy.dp_events"):
        try:
            fn = getattr(importlib.import_module(name), "amplified_bandmf_event", None)
        except ImportError:
            continue
        if fn is not None:
            return fn
    pytest.skip("jax_privacy has no amplified_bandmf_event where looked")


def test_cyclic_poisson_matches_jax_privacy_plan():  # pragma: no cover - needs jax-privacy
    fn = _jax_privacy_event_fn()
    coeffs = bsr_coefficients(4)
    norm = math.sqrt(sum(c * c for c in coeffs))
    ev = fn(2.0, 101, num_bands=4, sampling_prob=0.1)
    m = dp.MatrixMechanism(dp.BandedToeplitz([c / norm for c in coeffs], 101), 2.0,
                           dp.CyclicPoisson(0.1, 4))
    ((step, count),) = m.reduction().parts()
    assert ev.count == count == m.rounds
    assert ev.event.sampling_probability == step.scheme.rate
    assert ev.event.event.noise_multiplier == pytest.approx(1 / step.base.mu, rel=1e-12)


def test_a_wide_sensitivity_bracket_gives_both_gaussians_ends():
    """The PLD's pessimistic side is the Gaussian at Delta_hi, its optimistic side the Gaussian
    at Delta_lo (pld.sources.Bracketed)."""
    m = dp.MatrixMechanism(dp.BinaryTree(10_000), 20.0, dp.MinSeparation(10, 1000))
    s = m.sensitivity
    assert not s.exact and s.upper / s.lower > 1.01
    g = m.epsilon(1e-6, method="pld")
    hi = dp.Gaussian(20.0, s.upper).epsilon(1e-6, method="pld")
    lo = dp.Gaussian(20.0, s.lower).epsilon(1e-6, method="pld")
    assert g.epsilon >= hi.lower and g.lower <= lo.epsilon
    assert g.lower >= lo.lower * (1 - 1e-3)


def test_heterogeneous_composition_keeps_a_lower_bound():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    a = dp.MatrixMechanism(dp.BandedToeplitz(bsr_coefficients(4), 400), 2.0,
                           dp.CyclicPoisson(0.1, 4))
    b = dp.MatrixMechanism(dp.BLT((0.9, 0.5), (0.3, 0.2), 300), 20.0, dp.MinSeparation(3, 100))
    g = (a + b).epsilon(1e-6)
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp.to_dp_event(a + b))
    truth = acc.get_epsilon(1e-6)
    assert g.lower is not None and g.lower <= truth * (1 + 1e-4) and truth <= g.epsilon * 1.002


def test_cyclic_poisson_risk_is_the_reductions():
    """The risk queries (trade-off, TPR at FPR) of the cyclic route are those of its DP-SGD
    plan, never a closed-form Gaussian profile of one step."""
    m = dp.MatrixMechanism(dp.BandedToeplitz([1.0], 50), 2.0, dp.CyclicPoisson(0.1, 1))
    ref = dp.Gaussian(2.0).subsample(dp.Poisson(0.1)) * 50
    a, b = m.tpr_at_fpr(0.01), ref.tpr_at_fpr(0.01)
    assert a.upper >= b.lower and b.upper >= a.lower
    assert dp.profiles.has_profile(m) is False


def test_more_bands_than_partitions_is_an_upper_bound_only():
    m = dp.MatrixMechanism(dp.BandedToeplitz(bsr_coefficients(8), 64), 4.0,
                           dp.CyclicPoisson(0.1, 4))
    assert m.route == "noise-split"
    g = m.epsilon(1e-6, method="pld")
    assert g.lower is None or g.lower == 0
    # the worst pattern: 16 participations 4 apart, as (k, b)-participation (no-amplification's
    # sensitivity, which the split's steps' sum of squares does not exceed)
    worst = dp.MatrixMechanism(m.strategy, 4.0, dp.MinSeparation(16, 4))
    assert m.sensitivity == worst.sensitivity
    assert m.split.total_sq <= m.sensitivity.upper ** 2 * (1 + 1e-9)
    w = worst.epsilon(1e-6, method="profile")
    assert g.epsilon < w.epsilon and w.lower is not None
    assert not dp.supports(m, "profile")
    b = dp.MatrixMechanism(np.eye(8), 1.0, dp.BallsInBins(2))
    assert b.route == "noise-split" and b.sensitivity.upper == pytest.approx(2.0)
    # 4 epochs of random allocation (1 of 2) of the Gaussian at mu 1
    assert b.split.parts == ((pytest.approx(1.0), 2, 4),)


def test_calibration_is_certified():
    m = dp.MatrixMechanism(dp.BandedToeplitz(bsr_coefficients(4), 200), 1.0,
                           dp.MinSeparation(5, 40))
    cal = dp.calibrate.sigma(2.0, 1e-6, family=lambda z, **_: m.with_noise_multiplier(z),
                             steps=1)
    assert cal.guarantee.epsilon <= 2.0
    assert m.with_noise_multiplier(cal.value).epsilon(1e-6).epsilon <= 2.0
    assert m.with_noise_multiplier(cal.value * 0.99).epsilon(1e-6).lower > 2.0 * 0.999


# --- words, command line, errors ---------------------------------------------------------

def test_plan_words():
    stage = parse_stage({"mechanism": "matrix", "strategy": "banded", "bands": 8,
                         "steps": 1000, "noise_multiplier": 3.0,
                         "participation": "cyclic-poisson", "sampling_prob": 0.05,
                         "partitions": 8}, cli=False)
    assert stage.steps == 1 and stage.total_steps == 1000
    assert stage.assumed["route"] == "cyclic-poisson"
    d = stage.describe()
    assert "sensitivity 1.31087 (exact" in d["mechanism"] and "cyclic Poisson" in d["sampling"]
    words = {"mechanism": "matrix", "strategy": "banded", "bands": 4, "steps": 50,
             "noise_multiplier": 2.0, "sampling_prob": 0.1}
    poisson = parse_stage({**words, "participation": "poisson"}, cli=False)
    one_group = parse_stage({**words, "participation": "cyclic-poisson"}, cli=False)
    assert poisson.describe() == one_group.describe()
    assert "the whole data set, each step samples at rate 0.1" in poisson.describe()["sampling"]
    tree = parse_stage({"mechanism": "matrix", "strategy": "tree", "steps": 100,
                        "noise_multiplier": 2.0}, cli=False)
    assert tree.mechanism.epsilon(1e-6).epsilon == pytest.approx(
        dp.TreeAggregation(2.0, 100).epsilon(1e-6).epsilon, rel=1e-9)


@pytest.mark.parametrize("words, key", [
    ({"strategy": "banded"}, "bands"),
    ({"strategy": "bandd", "bands": 2}, "strategy"),
    ({"strategy": "banded", "bands": 2, "sample_rate": 0.1}, "sample_rate"),
    ({"strategy": "banded", "bands": 2, "participation": "min-separation",
      "participations": 3}, "min_separation"),
    ({"strategy": "blt", "output_scales": [0.1]}, "buffer_decays"),
    ({"strategy": "tree", "bands": 3}, "bands"),
    ({"strategy": "banded", "bands": 2, "bins": 3}, "bins"),
    ({"strategy": "banded", "bands": 2, "participation": "bogus"}, "participation"),
    ({"strategy": "banded", "bands": 2, "participation": "poisson", "sampling_prob": 0.1,
      "partitions": 2}, "partitions"),
    ({"strategy": "banded", "bands": 2, "coeffs": [1, 2, 3]}, "coeffs"),
    ({"strategy": "blt", "buffer_decays": [1.5], "output_scales": [0.1]}, "strategy"),
    ({"strategy": "banded", "bands": 2, "participation": "cyclic-poisson",
      "sampling_prob": 0.1, "relation": "substitution"}, "participation"),
])
def test_plan_errors_name_the_key(words, key):
    with pytest.raises(PlanError, match=key):
        parse_stage({"mechanism": "matrix", "steps": 10, "noise_multiplier": 1.0, **words},
                    cli=False)


def test_validation_errors():
    with pytest.raises(ValueError, match="C must be finite"):
        dp.MatrixMechanism(np.array([[1.0, np.inf]]), 1.0)
    with pytest.raises(ValueError, match="2-D"):
        dp.MatrixMechanism(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp.MatrixMechanism(np.eye(2), 0.0)
    with pytest.raises(ValueError, match="buffer_decays"):
        dp.BLT((0.5, 2.0), (0.1, 0.1), 10)
    with pytest.raises(ValueError, match="one length"):
        dp.BLT((0.5,), (0.1, 0.1), 10)
    with pytest.raises(ValueError, match="participation must be"):
        dp.MatrixMechanism(np.eye(2), 1.0, participation="epoch")
    with pytest.raises(ValueError, match="separation"):
        dp.MinSeparation(2, 0)
    with pytest.raises(ValueError, match="sampling_prob"):
        dp.CyclicPoisson(0.0, 2)
    with pytest.raises(ValueError, match="add/remove"):
        dp.MatrixMechanism(np.eye(2), 1.0, dp.CyclicPoisson(0.1), relation="substitution")
    with pytest.raises(ValueError, match="participation"):
        dp.MatrixMechanism(np.eye(2), 1.0).subsample(dp.Poisson(0.1))
    with pytest.raises(ValueError, match="no population"):
        dp.MatrixMechanism(np.eye(2), 1.0, dp.Poisson(0.1, relation="substitution"))
    with pytest.raises(ValueError, match="all be 0"):
        dp.Toeplitz([0.0, 0.0], 4)


def test_json_and_dp_events():
    ms = [dp.MatrixMechanism(dp.BandedToeplitz([1, .5], 10), 2.0, dp.MinSeparation(2, 3)),
          dp.MatrixMechanism(np.tril(np.ones((4, 4))), 2.0, dp.CyclicPoisson(0.1, 4)),
          dp.MatrixMechanism(dp.BLT((0.9,), (0.2,), 10), 2.0, dp.BallsInBins(3)),
          dp.MatrixMechanism(dp.BinaryTree(9), 2.0, relation="substitution")]
    for m in ms:
        assert dp.from_json(m.to_json()) == m
    pytest.importorskip("dp_accounting")
    ev = dp.to_dp_event(ms[1])            # tril(ones): max column norm 2, one round
    assert ev.count == 1 and ev.event.sampling_probability == 0.1
    assert ev.event.event.noise_multiplier == pytest.approx(1.0, rel=1e-12)
    assert dp.to_dp_event(ms[3]).noise_multiplier == pytest.approx(2.0 / (2 * 2), rel=1e-12)


def test_substitution_doubles_mu():
    a = dp.MatrixMechanism(np.eye(3), 2.0)
    b = dp.MatrixMechanism(np.eye(3), 2.0, relation="substitution")
    assert b.mu[1] == pytest.approx(2 * a.mu[1], rel=1e-14)


def test_command_line(capsys):
    from dpamp.cli.main import main
    assert main(["epsilon", "--strategy", "banded", "--bands", "4", "--steps", "200",
                 "--noise-multiplier", "2", "--participation", "cyclic-poisson",
                 "--sampling-prob", "0.1", "--partitions", "4", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    assert "route cyclic-poisson" in out and "L2 sensitivity" in out
    assert "cyclic Poisson: 4 groups" in out
    assert main(["epsilon", "--bands", "4", "--steps", "10", "--noise-multiplier", "2",
                 "--delta", "1e-6"]) == 2
    assert "--strategy" in capsys.readouterr().err
    assert main(["calibrate", "noise-multiplier", "--strategy", "tree", "--steps", "100",
                 "--epsilon", "2", "--delta", "1e-6"]) == 0
    assert "noise multiplier = " in capsys.readouterr().out


def test_command_line_names_the_routes_compared(capsys):
    """Where the answer takes the smallest of several routes, the assumed line lists them
    and the method names the one that gave it."""
    from dpamp.cli.main import main
    args = ["epsilon", "--strategy", "banded", "--bands", "4", "--steps", "60",
            "--noise-multiplier", "3", "--participation", "min-sep-sampling",
            "--sampling-prob", "0.01", "--min-separation", "4", "--delta", "1e-6"]
    assert main(args) == 0
    assert "routes no-amplification, noise-split, separation-blocks, the smallest taken" \
        in capsys.readouterr().out
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    routes = out["assumed"]["routes"]
    assert routes == ["no-amplification", "noise-split", "separation-blocks"]
    assert out["method"] in routes and f"route {out['method']}: " in out["note"]


def test_figure_matrix_beside_dpsgd(tmp_path, capsys):
    """The figure's numbers: each point is the T-step mechanism's own epsilon (the same
    strategy at length T), beside DP-SGD at equal noise (z / max column norm) and the same
    expected batch (q / p); both grow with T. The CLI draws it from the flags."""
    pytest.importorskip("matplotlib")
    from dpamp.cli.main import main
    from dpamp.io import plot
    c = dp.BandedToeplitz((1.0, 0.5), 40)
    m = dp.MatrixMechanism(c, 2.0, participation=dp.CyclicPoisson(0.2, 2))
    d = plot.matrix_vs_dpsgd(m, 1e-6, steps=[1, 10, 40], output=tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0
    e, s = d["epsilon"]["matrix"], d["epsilon"]["dp-sgd"]
    assert (np.diff(e) > 0).all() and (np.diff(s) > 0).all()
    t10 = dp.MatrixMechanism(dp.BandedToeplitz((1.0, 0.5), 10), 2.0,
                             participation=dp.CyclicPoisson(0.2, 2))
    assert e[1] == t10.epsilon(1e-6).epsilon
    z = 2.0 / math.sqrt(1.25)
    assert s[2] == (dp.Gaussian(z).subsample(dp.Poisson(0.1)) * 40).epsilon(1e-6).epsilon
    with pytest.raises(ValueError, match="matrix mechanism"):
        plot.matrix_vs_dpsgd(dp.Gaussian(1.0), 1e-6, output=tmp_path / "g.png")
    assert main(["plot", "matrix-vs-dpsgd", "--strategy", "banded", "--bands", "2",
                 "--steps", "20", "--noise-multiplier", "2", "--participation",
                 "cyclic-poisson", "--sampling-prob", "0.1", "--partitions", "2",
                 "--delta", "1e-6", "-o", str(tmp_path / "h.png")]) == 0
    assert (tmp_path / "h.png").exists()
