"""The separation blocks of b-min-separation sampling (dpamp.mechanisms.matrix_separation):
each block's (m, gamma), the block's domination by a subsampled allocation against exact
quadrature of both pairs, and the plan against the exact delta of the mechanism's own pair
(a diagonal C, where the split is the mechanism)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.families.matrix import bsr_coefficients
from dpamp.mechanisms.matrix import BLOCKS, SPLIT
from dpamp.mechanisms.matrix_separation import block_allocation, separation_blocks
from oracles.pattern_mixture import min_sep_patterns, pattern_mixture_delta


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-6, 1.0, exclude_min=False), st.integers(1, 5000))
def test_block_allocation_covers_the_block(p, length):
    ma = block_allocation(p, length)
    pe = Fraction(p)
    p_l = 1 - (1 - pe) ** length
    if ma is None:
        assert math.ceil(p_l / pe) * pe > 1
        return
    m, gamma = ma
    assert 1 <= m <= length
    assert m * pe >= p_l                          # weak submajorization needs m p >= p_l
    assert Fraction(gamma) >= m * pe and gamma <= 1.0
    # the smallest such m, up to the few ulps by which (1 - p)^l is lowered
    assert (m - 1) * pe < p_l * (1 + Fraction(1, 10 ** 12))


def _block(p, length):
    """The fully eligible block's patterns: one step at j with p (1 - p)^(j - 1), none with
    (1 - p)^l."""
    out = [(tuple(0 for _ in range(length)), (1 - p) ** length)]
    for j in range(length):
        out.append((tuple(int(i == j) for i in range(length)), p * (1 - p) ** j))
    return out


def _allocation(rate, m, length):
    """(1 - rate) N(0, I) + rate / m sum_{j <= m} N(mu e_j, I) on ``length`` coordinates."""
    out = [(tuple(0 for _ in range(length)), 1 - rate)]
    for j in range(m):
        out.append((tuple(int(i == j) for i in range(length)), rate / m))
    return out


@pytest.mark.parametrize("p,length,mu,eps", [
    (0.1, 2, 1.0, 0.3), (0.3, 2, 2.0, 1.0), (0.45, 2, 0.7, 0.1),
    (0.2, 3, 1.5, 0.5), (0.05, 3, 3.0, 2.0), (0.3, 3, 1.0, 0.0)])
def test_block_is_dominated_by_its_allocation(p, length, mu, eps):
    """uniform at rate p_l (majorized by the block's weights: smaller in convex order)
    <= the block <= the subsampled allocation (m, gamma), all by exact quadrature; the
    sandwich shows the check tells the directions apart."""
    m, gamma = block_allocation(p, length)
    p_l = 1 - (1 - p) ** length
    block = pattern_mixture_delta(_block(p, length), mu, eps)
    upper = pattern_mixture_delta(_allocation(gamma, m, length), mu, eps)
    below = pattern_mixture_delta(_allocation(p_l, length, length), mu, eps)
    assert below <= block * (1 + 1e-9) + 1e-13
    assert block <= upper * (1 + 1e-9) + 1e-13
    assert below < upper


def _diagonal(n, z, p, b, warm):
    return dp.MatrixMechanism(np.eye(n), z, participation=dp.MinSepSampling(p, b, warm))


@pytest.mark.parametrize("n,b,p,z,warm,eps", [
    (2, 2, 0.3, 0.7, False, 1.0), (3, 2, 0.3, 0.7, True, 1.0), (3, 3, 0.2, 0.5, False, 0.5),
    (3, 2, 0.5, 1.0, False, 0.2), (3, 3, 0.4, 0.8, True, 2.0)])
def test_blocks_bound_the_exact_pair(n, b, p, z, warm, eps):
    """A diagonal C: the split's steps are the mechanism's own (y_s ~ N(x_s / z, 1)), so the
    blocks' delta must lie above the chain pair's exact delta (enumerated patterns, exact
    quadrature), and so must the family's answer."""
    m = _diagonal(n, z, p, b, warm)
    exact = pattern_mixture_delta(min_sep_patterns(n, p, b, warm), 1.0 / z, eps)
    got = m.blocks_reduction().delta(eps, method="pld")
    assert got.delta >= exact
    assert m.delta(eps).delta >= exact
    # not vacuous: within a few times the truth on these small cases
    assert got.delta <= 4 * exact + 1e-3


def test_blocks_of_a_banded_c_beat_poisson_where_separation_matters():
    co = bsr_coefficients(8)
    norm = math.sqrt(sum(c * c for c in co))
    m = dp.MatrixMechanism(dp.BandedToeplitz([c / norm for c in co], 240), 3.0,
                           participation=dp.MinSepSampling(0.1, 8, warm_start=True))
    plan = separation_blocks(m.strategy, m.participation)
    assert plan is not None and plan.length == 8
    assert sum(k for *_, k in plan.parts) == 30
    # p_8 = 1 - 0.9^8 = 0.5695: m = 6, gamma = 0.6 (rounded up)
    assert all(mm == 6 and 0.6 <= g <= 0.6 * (1 + 1e-15) for _, mm, g, _ in plan.parts)
    got = m.epsilon(1e-4)
    split = m.split_reduction().epsilon(1e-4, method="pld")
    assert got.method == BLOCKS and got.epsilon < 0.95 * split.epsilon
    assert "route noise-split gave" in got.note and "blocks of 8 steps" in got.note
    assert any("30 blocks of 8 steps" in line for line in m.explain())


def test_small_rates_keep_the_split_where_it_is_smaller():
    co = bsr_coefficients(2)
    norm = math.sqrt(sum(c * c for c in co))
    m = dp.MatrixMechanism(dp.BandedToeplitz([c / norm for c in co], 200), 3.0,
                           participation=dp.MinSepSampling(0.01, 2))
    got = m.epsilon(1e-6)
    assert got.method in (SPLIT, BLOCKS)
    assert "separation-blocks gave" in got.note or got.method == BLOCKS


def test_block_length_is_the_longest_with_gamma_at_most_one():
    from dpamp.mechanisms.matrix_separation import block_length
    assert block_length(0.1, 8) == 8 and block_length(0.45, 4) == 3
    assert block_length(0.5, 4) == 4 and block_length(0.51, 4) == 1   # (m 2, gamma 1)
    for p, b in [(0.34, 4), (0.2, 8), (0.3, 16), (0.05, 64)]:
        length = block_length(p, b)
        assert block_allocation(p, length) is not None
        assert length == b or block_allocation(p, length + 1) is None


def test_where_blocks_do_not_apply():
    eye = np.eye(16)
    assert separation_blocks(dp.MatrixMechanism(eye, 1.0).strategy,
                             dp.MinSepSampling(0.1, 1)) is None     # separation 1: Poisson
    assert separation_blocks(dp.MatrixMechanism(eye, 1.0).strategy,
                             dp.MinSepSampling(0.6, 8)) is None     # 2 p > 1: no length
    assert dp.MatrixMechanism(eye, 1.0, participation=dp.Poisson(0.1)).separation_blocks \
        is None
    with pytest.raises(ValueError, match="separation blocks do not apply"):
        dp.MatrixMechanism(eye, 1.0, participation=dp.Poisson(0.1)).blocks_reduction()


def test_tiny_rates_answer_by_the_split_under_rdp():
    """p 1e-9: the split's and the blocks' PLDs are out of reach (a grid beyond its size);
    the split's plan by RDP answers (as dp.Poisson's own auto does), not no-amplification's
    0.51."""
    m = dp.MatrixMechanism(np.eye(3), 1.0, participation=dp.MinSepSampling(1e-9, 2))
    got = m.delta(0.5)
    poisson = dp.MatrixMechanism(np.eye(3), 1.0, participation=dp.Poisson(1e-9)).delta(0.5)
    assert got.delta < 1e-10 and got.method == SPLIT and "by RDP" in got.note
    assert got.delta == pytest.approx(poisson.delta, rel=1e-9)
