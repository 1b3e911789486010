"""The noise split (dpamp.mechanisms.matrix_split) against independent truths: its per-step
sensitivities in exact rationals, the Toeplitz path against the dense one, the identities of
its two limits (q = 1 loses nothing for C >= 0; disjoint rows give the column norms, the
cyclic-Poisson reduction), the exact delta of the fixed-direction pair by quadrature (n <= 3),
and the route's place among the others."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_matrix_amplified import exact_delta

import dpamp as dp
from dpamp.families.matrix import bsr_coefficients
from dpamp.mechanisms.matrix_split import (_per_group, _toeplitz_uniform, split_plan)
from dpamp.mechanisms.matrix_strategies import BLT, BandedToeplitz, DenseStrategy


def _exact_deltas(c: np.ndarray, steps) -> list[Fraction]:
    """Delta_s^2 = sum_t |C[t, s]| R_t, R_t = sum_{s' in steps} |C[t, s']|, in rationals."""
    a = [[abs(Fraction(float(v))) for v in row] for row in c]
    r = [sum(row[s] for s in steps) for row in a]
    return [sum(a[t][s] * r[t] for t in range(len(a))) for s in steps]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 7), p=st.integers(1, 4), seed=st.integers(0, 2 ** 16),
       signed=st.booleans())
def test_dense_deltas_are_the_exact_ones_rounded_up(n, p, seed, signed):
    rng = np.random.default_rng(seed)
    c = np.tril(rng.uniform(-1 if signed else 0, 1, (n, n)))
    c[rng.uniform(size=(n, n)) < 0.3] = 0.0
    groups = _per_group(DenseStrategy(c), n, p)
    for g, got in enumerate(groups):
        steps = list(range(g, n, p))
        for d, want in zip(got, _exact_deltas(c, steps)):
            assert Fraction(float(d)) ** 2 >= want
            assert float(d) <= math.sqrt(float(want)) * (1 + 1e-13) + 1e-300


@pytest.mark.parametrize("bands,n,p", [(3, 20, 1), (3, 20, 2), (8, 50, 1), (8, 50, 3),
                                       (5, 9, 4)])
def test_toeplitz_path_is_the_dense_path(bands, n, p):
    co = np.array(bsr_coefficients(bands))
    s = BandedToeplitz(tuple(co), n)
    t, d = _per_group(s, n, p), _per_group(DenseStrategy(s.dense()), n, p)
    top = _toeplitz_uniform(s, n, p)
    for a, b in zip(t, d):
        np.testing.assert_allclose(a, b, rtol=1e-13)
        assert (a <= top).all()
    # the uniform bound is the interior value (a step whose rows are all full)
    assert top == pytest.approx(float(max(a.max() for a in t)), rel=1e-12)


def test_q_one_loses_nothing_for_nonnegative_c():
    """sum_s Delta_s^2 = sum_t R_t^2 = |C 1|^2: at q = 1 the split is no-amplification's
    Gaussian (its sensitivity, all steps taken)."""
    s = BandedToeplitz(tuple(bsr_coefficients(6)), 40)
    plan = split_plan(s, dp.CyclicPoisson(1.0, 1))
    want = float(np.sum(s.dense().sum(axis=1) ** 2))
    assert plan.raw_sq == pytest.approx(want, rel=1e-12) and plan.raw_sq >= want
    # the steps moved up onto a few levels (one PLD part each) only add
    assert len(plan.parts) <= 8 and plan.total_sq >= plan.raw_sq


def test_disjoint_rows_give_the_column_norms():
    """p >= bands: no row reads two of a group's steps, w = 1, Delta_s = |C[:, s]| (the
    cyclic-Poisson reduction of Choquette-Choo et al. 2023)."""
    s = BandedToeplitz((1.0, 0.5, 0.25), 12)
    norms = np.sqrt(s.column_norms_sq())
    for g, d in enumerate(_per_group(s, 12, 3)):
        np.testing.assert_allclose(d, norms[g::3], rtol=1e-14)
        assert (d >= norms[g::3]).all()


def test_a_diagonal_c_is_dp_sgd():
    plan = split_plan(DenseStrategy(np.eye(5) * 2.0), dp.CyclicPoisson(0.1, 1))
    assert plan.parts == ((pytest.approx(2.0), 0, 5),) and plan.rate == 0.1


def test_balls_in_bins_epochs():
    """Each epoch at its largest Delta_s; a shorter last epoch of its own steps."""
    s = BandedToeplitz((1.0, 0.5), 10)
    plan = split_plan(s, dp.BallsInBins(4))
    per = _per_group(s, 10, 1)[0]
    got = {(e, k) for _, e, k in plan.parts}
    assert got == {(4, 2), (2, 1)}
    assert max(d for d, _, _ in plan.parts) == pytest.approx(per.max())
    assert split_plan(s, dp.BallsInBins(20)).parts == ((pytest.approx(per.max()), 10, 1),)


def test_blt_pads_its_coefficient_error():
    b = BLT((0.9, 0.5), (0.3, 0.2), 30)
    assert b.coeff_error > 0
    exact = _per_group(DenseStrategy(b.dense()), 30, 1)[0]
    got = _per_group(b, 30, 1)[0]
    assert (got >= exact).all() and got == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("n,q,eps", [(2, 0.3, 0.5), (3, 0.2, 1.0), (3, 0.6, 2.0)])
def test_above_the_exact_fixed_direction_pair(n, q, eps):
    """The fixed-direction pair is an actual pair of neighbours: its exact delta (quadrature over
    the 2^n patterns) is at most the split's, whose rows overlap here (3 bands)."""
    c = np.array([[1.0, 0, 0], [0.6, 1.0, 0], [0.3, 0.6, 1.0]])[:n, :n]
    m = dp.MatrixMechanism(c, 1.2, participation=dp.Poisson(q))
    assert m.route == "noise-split"
    ours = m.delta(eps, method="pld").delta
    assert exact_delta(c, 1.2, q, eps) <= ours
    # the column norms alone (the split's weights dropped) would not be a bound: a
    # composition at |C[:, s]| falls below the truth here
    cols = np.linalg.norm(c, axis=0)
    naive = dp.compose(*[dp.Gaussian(1.0, v / 1.2).subsample(dp.Poisson(q)) for v in cols])
    assert naive.delta(eps).delta < exact_delta(c, 1.2, q, eps) or n == 2


def test_the_route_and_its_answer():
    co = np.array(bsr_coefficients(4))
    s = BandedToeplitz(tuple(co / np.linalg.norm(co)), 200)
    m = dp.MatrixMechanism(s, 1.5, participation=dp.Poisson(0.02))
    assert m.route == "noise-split"
    g = m.epsilon(1e-6)
    assert g.method == "noise-split" and 0 < g.lower <= g.epsilon
    assert "route no-amplification gave" in g.note
    assert "route conditional-composition gave" in \
        m.epsilon(1e-6, method="conditional-composition").note
    assert any("noise split" in line for line in m.explain())
    # inside a composition the split's steps compose as parts, with no lower end of their own
    both = dp.compose(m, dp.Gaussian(4.0))
    h = both.epsilon(1e-6, method="pld")
    assert h.epsilon > m.epsilon(1e-6, method="pld").epsilon and not h.lower
    # RDP of the same plan is a (looser) proven bound
    assert m.epsilon(1e-6, method="rdp").epsilon >= g.epsilon
    # calibration keeps the split (it depends on C and the schema only)
    m2 = m.with_noise_multiplier(3.0)
    assert m2.split is m.split and m2.epsilon(1e-6).epsilon < g.epsilon


def test_no_amplification_stays_where_the_split_is_not_dominated():
    """One epoch of balls in bins: no-amplification's Gaussian at the one step's column norm
    is not dominated by the split (whose step reads every step's rows): the route stays, and
    the amplified answer still takes the smaller."""
    s = BandedToeplitz(tuple(bsr_coefficients(8)), 100)
    m = dp.MatrixMechanism(s, 1.0, participation=dp.BallsInBins(100))
    assert m.route == "no-amplification" and m.split is not None
    g = m.epsilon(1e-6)
    assert "route noise-split gave" in g.note
    assert g.epsilon <= dp.Gaussian(1.0, m.mu[1]).epsilon(1e-6).epsilon


def test_fixed_bins_of_a_diagonal_c_is_random_allocation():
    """C = I: every step's block is the step itself, and fixed bins is random allocation (1 of
    bins) of the Gaussian at sqrt(cycles) / z, exactly."""
    m = dp.MatrixMechanism(np.eye(40), 1.0, participation=dp.FixedBins(10))
    assert m.route == "noise-split"
    assert m.split.parts == ((pytest.approx(2.0), 10, 1),)
    ra = dp.Gaussian(0.5).subsample(dp.RandomAllocation(1, 10)).epsilon(1e-6)
    g = m.epsilon(1e-6)
    assert g.epsilon == pytest.approx(ra.epsilon, rel=1e-9) and g.method == "noise-split"
    # attained: the same bracket, both ends
    assert m.split_attained == 1.0 and g.lower == pytest.approx(ra.lower, rel=1e-9)
    # 43 steps: the bins differ in size, the split is an upper plan only
    assert dp.MatrixMechanism(np.eye(43), 1.0, dp.FixedBins(10)).split_attained is None


def test_balls_in_bins_of_a_diagonal_c_is_random_allocation():
    """b = 1: balls in bins redrawn every epoch is dpamp's random allocation (one of each
    epoch's steps) composed over the epochs, both ends."""
    m = dp.MatrixMechanism(dp.BandedToeplitz([2.0], 100), 2.0, participation=dp.BallsInBins(10))
    ra = (dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, 10)) * 10).epsilon(1e-6)
    g = m.epsilon(1e-6)
    assert m.route == "noise-split" and m.split_attained == 2.0
    assert g.epsilon == pytest.approx(ra.epsilon, rel=1e-9)
    assert g.lower == pytest.approx(ra.lower, rel=1e-9)
    assert "attained" in g.note or "row-allocation" in g.note   # (equal to rounding)
    # off the diagonal: no lower end of its own (the matched-filter witness gives one)
    m2 = dp.MatrixMechanism(dp.BandedToeplitz([2.0, 0.5], 100), 2.0, dp.BallsInBins(10))
    g2 = m2.epsilon(1e-6)
    assert m2.split_attained is None and "attained" not in g2.note
    assert "matched-filter" in g2.note


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_fixed_bins_above_the_exact_pair(eps):
    """Two bins over three steps of a 2-banded C (rows shared across bins): the exact delta of
    P = (1/2) sum_j N(C x_j, .) against N(0, .), x_j bin j's steps, is at most the bound."""
    c = np.eye(3) + 0.7 * np.eye(3, k=-1)
    pats = np.array([[1.0, 0, 1], [0, 1.0, 0]])
    truth = exact_delta(c, 1.0, None, eps, pats=pats, logw=np.full(2, -math.log(2)))
    m = dp.MatrixMechanism(c, 1.0, participation=dp.FixedBins(2))
    assert truth <= m.delta(eps).delta
    assert truth <= m.split_reduction().delta(eps).delta


def test_fixed_bins_worst_case_and_words():
    fb = dp.FixedBins(8)
    assert fb.worst_case(100) == (13, 8) and "drawn once" in fb.describe()
    with pytest.raises(ValueError, match="bins"):
        dp.FixedBins(0)
    from dpamp.io.plan import parse_stage
    stage = parse_stage({"mechanism": "matrix", "strategy": "banded", "bands": 2,
                         "steps": 40, "noise_multiplier": 2.0,
                         "participation": "fixed-bins", "bins": 10}, cli=False)
    d = stage.describe()
    assert "drawn once" in d["sampling"] and stage.assumed["route"] in ("noise-split",
                                                                        "no-amplification")
    split = parse_stage({"mechanism": "matrix", "strategy": "banded", "bands": 2,
                         "steps": 40, "noise_multiplier": 2.0,
                         "participation": "cyclic-poisson", "sampling_prob": 0.1},
                        cli=False)
    assert "Poisson-sampled Gaussian steps" in split.describe()["mechanism"]


def test_min_sep_sampling_is_bounded_by_the_poisson_plan():
    """b-min-separation sampling: the split's plan is Poisson's at rate p (each step's
    conditional rate is at most p)."""
    s = BandedToeplitz((1.0, 0.5, 0.25), 60)
    ms = dp.MatrixMechanism(s, 1.5, participation=dp.MinSepSampling(0.05, 3))
    po = dp.MatrixMechanism(s, 1.5, participation=dp.Poisson(0.05))
    assert ms.split == po.split and po.route == "noise-split"
    # its worst pattern is 20 steps 3 apart (rows not shared): no-amplification's Gaussian is
    # not dominated by the split here, and the amplified answer takes the smaller
    assert ms.participation.worst_case(60) == (20, 3) and ms.route == "no-amplification"
    g = ms.epsilon(1e-6)
    split = ms.split_reduction().epsilon(1e-6, method="pld").epsilon
    plain = dp.Gaussian(1.0, ms.mu[1]).epsilon(1e-6).epsilon
    blocks = ms.blocks_reduction().epsilon(1e-6, method="pld").epsilon
    assert split == po.epsilon(1e-6, method="pld").epsilon
    # (the separation blocks, test_matrix_separation.py, are smaller here)
    assert g.epsilon == min(split, plain, blocks) == blocks < split
    assert g.method == "separation-blocks"
    assert "min-separation sampling" in ms.explain()[1]
    # a warm start (any initial state) leaves the bound as it is
    warm = dp.MatrixMechanism(s, 1.5, participation=dp.MinSepSampling(0.05, 3, warm_start=True))
    assert warm.split == ms.split and "warm start" in warm.participation.describe()
    with pytest.raises(ValueError, match="warm_start"):
        dp.MinSepSampling(0.05, 3, warm_start=1)


@pytest.mark.parametrize("eps", [0.3, 1.5])
def test_min_sep_sampling_above_the_exact_pair(eps):
    """n = 3, b = 2: patterns 000, 100, 010, 001, 101 with their probabilities; the exact delta of
    the fixed-direction pair is at most the bound."""
    p = 0.3
    c = np.array([[1.0, 0, 0], [0.8, 1.0, 0], [0, 0.8, 1.0]])
    pats = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1]], dtype=float)
    probs = np.array([(1 - p) ** 3, p * (1 - p), (1 - p) * p, (1 - p) ** 2 * p, p * p])
    assert probs.sum() == pytest.approx(1.0)
    truth = exact_delta(c, 1.0, None, eps, pats=pats, logw=np.log(probs))
    m = dp.MatrixMechanism(c, 1.0, participation=dp.MinSepSampling(p, 2))
    assert truth <= m.delta(eps).delta


def test_calibration_narrows_on_the_upper_end():
    """The amplified answer's lower end is a witness's (another pair): calibration narrows
    the noise multiplier on the proven upper end to its rtol, not to the bracket's width."""
    co = np.array(bsr_coefficients(4))
    m = dp.MatrixMechanism(BandedToeplitz(tuple(co / np.linalg.norm(co)), 200), 1.0,
                           participation=dp.Poisson(0.02))
    cal = dp.calibrate.sigma(3.0, 1e-6, family=lambda z, **_: m.with_noise_multiplier(z),
                             steps=1)
    g = cal.guarantee
    assert g.lower is not None and g.lower < 0.8 * g.epsilon      # a wide bracket
    assert 3.0 * (1 - 2e-3) <= g.epsilon <= 3.0 and g.method == "noise-split"
