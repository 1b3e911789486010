"""The lazy |C| of a Toeplitz strategy (dpamp.amplification.matrix.toeplitz_view): the same
entries as the dense array under every index pattern the conditional-composition bounds use,
the same bounds bit for bit, and the amplified route beyond the dense limit of 4096 steps."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.matrix import query as Q
from dpamp.amplification.matrix.bins import dominating_steps_bins
from dpamp.amplification.matrix.conditional import dominating_steps
from dpamp.amplification.matrix.toeplitz_view import LowerToeplitzAbs
from dpamp.families.matrix import MAX_AMPLIFIED_STEPS, amplifiable, amplified_c


def _pair(coeffs, n):
    s = dp.BandedToeplitz(tuple(coeffs), n)
    return LowerToeplitzAbs(s.toeplitz(), n), np.abs(s.dense())


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=5).filter(
    lambda c: c[0] != 0), st.integers(5, 12), st.data())
def test_every_index_pattern_matches_the_dense_array(coeffs, n, data):
    view, dense = _pair(coeffs, n)
    i = data.draw(st.integers(0, n - 1))
    lo = data.draw(st.integers(0, n - 1))
    cols = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    assert np.array_equal(view[i], dense[i])
    assert view[i, i] == dense[i, i]
    assert np.array_equal(view[i, :i], dense[i, :i])
    assert np.array_equal(view[i, cols], dense[i, cols])
    assert np.array_equal(view[lo:i + 1, cols], dense[lo:i + 1, cols])
    assert np.array_equal(view[:i, cols], dense[:i, cols])
    assert np.array_equal(view[lo:i + 1, lo:i + 1], dense[lo:i + 1, lo:i + 1])
    assert np.array_equal(view[lo:, lo:].dense(), dense[lo:, lo:])
    mask = np.arange(n) % 3 != 1
    assert np.array_equal(view.with_mask(mask).dense(), np.where(mask[None, :], dense, 0.0))


def test_elementwise_fancy_indexing_is_refused():
    view, _ = _pair((1.0, 0.5), 6)
    with pytest.raises(NotImplementedError):
        view[np.array([1, 2]), np.array([0, 1])]
    with pytest.raises(ValueError, match="strategy"):
        LowerToeplitzAbs((1.0, float("nan")), 4)


@pytest.mark.parametrize("partitions", [1, 2])
def test_the_bounds_are_the_same_bits(partitions):
    """Poisson / cyclic Poisson and balls in bins read through the view give exactly the
    dense array's mixtures and epsilons."""
    view, dense = _pair((1.0, 0.6, 0.3), 24)
    e = None if partitions == 1 else np.arange(24) % 2 == 0
    assert dominating_steps(view, 3.0, 0.05, 1e-9, eligible=e) == \
        dominating_steps(dense, 3.0, 0.05, 1e-9, eligible=e)
    assert dominating_steps_bins(view, 3.0, 4, 1e-9) == dominating_steps_bins(dense, 3.0, 4, 1e-9)
    a = Q.epsilon(view, 3.0, 0.05, 1e-6, partitions=partitions)
    b = Q.epsilon(dense, 3.0, 0.05, 1e-6, partitions=partitions)
    assert a.epsilon == b.epsilon


def test_beyond_the_dense_limit():
    """A banded C of 6000 steps (above the dense limit, 288 MB as an array) takes the
    amplified route read lazily; its bound is below the no-amplification one."""
    n = 6000
    assert n > MAX_AMPLIFIED_STEPS
    m = dp.MatrixMechanism(dp.BandedToeplitz((1.0, 0.5), n), 6.0,
                           participation=dp.Poisson(0.01))
    assert amplifiable(m) and isinstance(amplified_c(m), LowerToeplitzAbs)
    g = m.epsilon(1e-6, method="conditional-composition")
    plain = dp.Gaussian(1.0, m.mu[1]).epsilon(1e-6, method="profile")
    assert g.epsilon < plain.epsilon and "route conditional-composition gave" in g.note
