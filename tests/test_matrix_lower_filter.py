"""The filter-allocation lower end of balls in bins redrawn every epoch
(:func:`dpamp.amplification.matrix.lower_bins.filter_allocation_witness`): its shifts against
an independent construction from the dense C, its delta against the exact delta of the whole
fixed-direction pair on tiny mechanisms (quadrature over every participation pattern), and
its exactness where it keeps everything (C diagonal)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.matrix.lower import lower_end
from dpamp.amplification.matrix.lower_bins import (filter_allocation_witness, filter_spacing,
                                                    fixed_filter_witness)
from dpamp.families.matrix import bsr_coefficients
from test_matrix_amplified import exact_delta
from test_matrix_lower_rowalloc_review import assert_below_exact


def _direct_shifts(c, n, bins):
    """Sorted shifts of each of epoch 0's filters (rows), read from the dense C: the filter of
    every b'-th step at offset o = ceil(b'/2) - 1, each step of the epoch put to the filter
    whose window holds it, its shift <C e_j, C e_s> over the filter's rows / |C e_j| (rows
    j .. j + b - 1)."""
    b = len(c)
    dense = np.asarray(dp.BandedToeplitz(tuple(c), n).dense(), dtype=float)
    sp = filter_spacing(b, bins)
    o = -(-sp // 2) - 1
    out = []
    for s in range(bins):                                   # epoch 0
        j = (s // sp) * sp + o
        rows = slice(j, j + b)
        f = dense[rows, j]
        out.append(float(f @ dense[rows, s]) / math.sqrt(float(f @ f)))
    return np.sort(np.array(out).reshape(bins // sp, sp), axis=1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 2.0), min_size=1, max_size=6), st.integers(1, 24),
       st.floats(0.3, 5.0))
def test_shifts_match_the_dense_construction(coeffs, bins, sigma):
    """Every shift of the witness's mixture is at most the direct one (sorted, position by
    position) and within 1e-12 of it; each position has probability 1/b' (from below)."""
    c = np.array(coeffs)
    c[0] = max(c[0], 0.1)
    n = 3 * bins + 2 * len(c)
    strategy = dp.BandedToeplitz(tuple(c), n)
    c = c[:strategy.bands]                                  # (trailing zeros are not bands)
    w = filter_allocation_witness(strategy, sigma, bins)
    sp = filter_spacing(len(c), bins)
    if sp is None:
        assert w is None
        return
    assert w is not None and w.window == sp
    (alloc, count), = w.parts
    mog = alloc.base
    per_filter = _direct_shifts(c, n, bins)
    assert (per_filter == per_filter[0]).all()              # a Toeplitz C: every filter alike
    direct = per_filter[0]
    # expand the mixture back into b' positions (a zero shift takes the rest)
    probs = np.array(mog.probabilities)
    shifts = np.array(mog.sensitivities)
    assert np.all(probs[shifts > 0] <= (1.0 / sp) * np.round(probs[shifts > 0] * sp) + 1e-18)
    reps = np.round(probs * sp).astype(int)
    mine = np.sort(np.repeat(shifts, reps))
    assert mine.size == sp
    assert np.all(mine <= direct + 1e-300)
    # (shifts below 2^-1000 are put to 0 by design: their mu would be rounded in the
    # subnormals)
    big = direct >= 2.0 ** -990
    np.testing.assert_allclose(mine[big], direct[big], rtol=1e-12)
    assert alloc.scheme.t == bins // sp
    # the epochs whose filters stay inside the rows
    o = -(-sp // 2) - 1
    assert count == sum(1 for e in range(n // bins)
                        if (e + 1) * bins - sp + o + len(c) - 1 <= n - 1)


def _configs():
    """(coefficients, bins, epochs, z): C >= 0 where the witness applies; n = 4 is slow."""
    rng = np.random.default_rng(7)
    out = []
    for bins, epochs, b in [(2, 1, 1), (2, 1, 2), (3, 1, 2), (3, 1, 1), (1, 3, 1),
                            (2, 2, 2), (4, 1, 2), (4, 1, 3)]:
        c = rng.uniform(0.2, 1.5, b)
        # (n = 4, and the diagonal C of n = 3 whose quadrature needs 300 nodes: slow)
        mark = (pytest.mark.slow,) if bins * epochs == 4 or (b == 1 and bins * epochs == 3) \
            else ()
        out.append(pytest.param(tuple(c), bins, epochs, float(rng.uniform(0.5, 1.5)),
                                marks=mark))
    return out


@pytest.mark.parametrize("coeffs,bins,epochs,z", _configs())
def test_witness_below_the_exact_delta(coeffs, bins, epochs, z):
    """The witness's lower end (and the mechanism's reported one) at or below the exact
    delta of the whole pair (Gauss-Hermite, its kink's error as the slack: 1e-3; for a
    diagonal C at 300 nodes, where 120 were 1.1e-3 off at mu 1.28 against dpamp's
    random-allocation bracket; 100 nodes agree with 300 to 1e-6 on the banded n = 3 case; see
    also tests/test_matrix_lower_rowalloc_review.py); where C is diagonal every row is kept and
    the witness is the whole pair (a wrong shift or count fails there)."""
    n = bins * epochs
    s = dp.BandedToeplitz(coeffs, n)
    w = filter_allocation_witness(s, z, bins)
    if w is None:                       # the filters' rows pass the last row
        sp = filter_spacing(len(coeffs), bins)
        assert sp is not None and bins - sp + (-(-sp // 2) - 1) + len(coeffs) - 1 > n - 1
        return
    m = dp.MatrixMechanism(s, z, participation=dp.BallsInBins(bins))
    nodes = (300 if len(coeffs) == 1 else 100) if n <= 3 else 40
    assert_below_exact(w, m, bins, epochs, nodes, (0.1, 0.5, 1.0) if n <= 3 else (0.5,),
                       diagonal=len(coeffs) == 1)


def test_diagonal_c_is_random_allocation():
    """C = c_0 I, b = 1: one filter per step, the witness is random allocation (1 of B) of the
    Gaussian itself: dpamp's bracket of it."""
    w = filter_allocation_witness(dp.BandedToeplitz((1.0,), 8), 0.8, 4)
    assert w is not None
    ra = (dp.Gaussian(0.8).subsample(dp.RandomAllocation(1, 4)) * 2).delta(0.5)
    assert lower_end([w], "delta", 0.5).value == pytest.approx(ra.lower, rel=1e-9)


def test_it_raises_the_lower_end_of_many_bands():
    """n 2000, 8 bands of the banded square root, 100 bins, z 2: the filters keep whole
    columns where row allocation does not apply (8 does not divide 100) and the epoch filter
    keeps 1/B of the signal; and the reported lower end stays below the upper one."""
    co = np.array(bsr_coefficients(8))
    s = dp.BandedToeplitz(tuple(co / np.linalg.norm(co)), 2000)
    m = dp.MatrixMechanism(s, 2.0, participation=dp.BallsInBins(100))
    from dpamp.families.matrix import lower_witnesses as witnesses
    ws = {w.name: w for w in witnesses(m)}
    assert "filter-allocation" in ws and ws["filter-allocation"].window == 10
    by = {k: lower_end([w], "epsilon", 1e-5).value for k, w in ws.items()}
    assert by["filter-allocation"] > 2 * by["matched-filter"], by
    g = m.epsilon(1e-5)
    assert g.lower is not None and g.lower >= by["filter-allocation"] * (1 - 1e-9)
    assert g.lower <= g.epsilon


def test_it_declines_where_it_cannot_apply():
    assert filter_allocation_witness(dp.BandedToeplitz((1.0, 0.5, 0.2), 40), 1.0, 2) is None
    assert filter_spacing(3, 2) is None and filter_spacing(3, 10) == 5
    assert filter_spacing(8, 100) == 10 and filter_spacing(1, 7) == 1
    from dpamp.mechanisms.matrix_strategies import DenseStrategy
    assert filter_allocation_witness(DenseStrategy(np.eye(4)), 1.0, 2) is None
    assert filter_allocation_witness(dp.BandedToeplitz((1.0, -0.5), 40), 1.0, 10) is None


@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_fixed_bins_filter_below_the_exact_delta(eps):
    """Fixed bins, 2 bins of 2 periods, 2 bands (n 4): the witness (the two periods' filters
    summed) below the exact delta of the whole pair, the mixture over the two bins' patterns
    (quadrature; 40 nodes within 2e-4 of 64 at n 4), and the mechanism's lower end too."""
    c = (1.0, 0.7)
    s = dp.BandedToeplitz(c, 4)
    w = fixed_filter_witness(s, 0.9, 2)
    assert w is not None and w.window == 2
    pats = np.array([[1.0, 0, 1, 0], [0, 1.0, 0, 1]])
    truth = exact_delta(s.dense(), 0.9, None, eps, nodes=40, pats=pats,
                        logw=np.full(2, -math.log(2)))
    low = lower_end([w], "delta", eps).value
    assert 0 < low <= truth * (1 + 1e-3), (low, truth)
    m = dp.MatrixMechanism(s, 0.9, participation=dp.FixedBins(2))
    rep = m.delta(eps).lower
    assert rep is not None and rep <= truth * (1 + 1e-3)


def test_fixed_bins_filter_of_a_diagonal_c_is_the_whole_pair():
    """C = c_0 I, fixed bins: bin j's steps j, j + B, ... on their own rows; the witness is
    random allocation (1 of B) of the Gaussian at sqrt(E) c_0 / z (E periods), the whole pair:
    dpamp's bracket of it (one bin: the Gaussian itself)."""
    w = fixed_filter_witness(dp.BandedToeplitz((1.0,), 12), 0.8, 4)
    assert w is not None
    ra = dp.Gaussian(0.8 / math.sqrt(3)).subsample(dp.RandomAllocation(1, 4)).delta(0.5)
    assert lower_end([w], "delta", 0.5).value == pytest.approx(ra.lower, rel=1e-9)
    assert ra.lower <= lower_end([w], "delta", 0.5).value * (1 + 1e-9)
    w1 = fixed_filter_witness(dp.BandedToeplitz((0.6,), 3), 0.8, 1)
    g = dp.Gaussian(0.8 / (0.6 * math.sqrt(3))).delta(0.5)
    assert lower_end([w1], "delta", 0.5).value == pytest.approx(g.delta, rel=1e-4)   # (a grid)
    assert lower_end([w1], "delta", 0.5).value <= g.delta


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.05, 2.0), min_size=1, max_size=5), st.integers(1, 12),
       st.integers(1, 4))
def test_fixed_bins_shifts_are_the_filters_times_root_periods(coeffs, bins, periods):
    """Fixed bins: the shifts are sqrt(E) times the per-epoch witness's (E the usable periods),
    from below, within 1e-12."""
    n = periods * bins + len(coeffs)
    s = dp.BandedToeplitz(tuple(coeffs), n)
    w, w1 = fixed_filter_witness(s, 1.0, bins), filter_allocation_witness(s, 1.0, bins)
    assert (w is None) == (w1 is None)
    if w is None:
        return
    (a, one), = w.parts
    (a1, count), = w1.parts
    assert one == 1 and a.scheme.t == a1.scheme.t and w.periods == count
    assert f"summed over the {count} periods" in w.describe() and "per epoch" in w1.describe()
    mine, per = np.array(a.base.sensitivities), np.array(a1.base.sensitivities)
    want = per * math.sqrt(count)
    assert np.all(mine <= want * (1 + 1e-15)) and np.allclose(mine, want, rtol=1e-12)
    assert a.base.probabilities == a1.base.probabilities
