"""The windowed and alternating witnesses of balls in bins and fixed bins
(:func:`dpamp.amplification.matrix.lower_bins.window_witnesses`): their shifts against the
same statistics built from the dense C, their delta below the exact delta of the pair they
post-process on tiny mechanisms (quadrature), a control that fails at 0.9 sigma, and the
answer's lower end below a Monte Carlo estimate's upper end."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.matrix.lower import lower_end
from dpamp.amplification.matrix.lower_bins import _window_lengths, window_witnesses
from dpamp.families.matrix import bsr_coefficients
from test_matrix_amplified import exact_delta
from test_matrix_lower_block import _rotated


def _direct(c, n, length, alternating):
    """Shifts of the first window from the dense C in plain floats: rows [0, L + b - 1)
    (alternating) or [b - 1, L) (windowed), v the sum of the window's columns over them."""
    b = len(c)
    dense = np.asarray(dp.BandedToeplitz(tuple(c), n).dense(), dtype=float)
    rows = np.arange(0, min(length + b - 1, n)) if alternating else np.arange(b - 1, length)
    m = dense[np.ix_(rows, np.arange(length))]
    v = m.sum(axis=1)
    return np.sort(m.T @ v / np.linalg.norm(v))


def _expand(alloc, length):
    """The mixture's shifts, one per position (probabilities 1/L, the zero shift the rest)."""
    shifts = np.array(alloc.base.sensitivities)
    reps = np.round(np.array(alloc.base.probabilities) * length).astype(int)
    return np.sort(np.repeat(shifts, reps))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.05, 2.0), min_size=1, max_size=5), st.integers(1, 30),
       st.integers(1, 3), st.booleans())
def test_shifts_match_the_dense_construction(coeffs, bins, epochs, fixed):
    """Each witness's positions: L of them (one window), every shift at most the direct one
    and within 1e-12 of it (times sqrt(E) under fixed bins); B / L windows per epoch; the
    epochs whose rows stay inside."""
    n = epochs * bins + 1
    s = dp.BandedToeplitz(tuple(coeffs), n)
    b = s.bands                                   # (at most n)
    c = np.array(coeffs)[:b]
    ws = window_witnesses(s, 1.3, bins, fixed=fixed)
    if bins >= b and epochs >= 2:
        assert {w.name for w in ws} == {"windowed", "alternating-windows"}
    for w in ws:
        alternating = w.name == "alternating-windows"
        length = w.window
        assert bins % length == 0 and length >= (b - 1 if alternating else b)
        assert length in _window_lengths(bins, b - 1 if alternating else b)
        (alloc, count), = w.parts
        want_e = sum(1 for e in range(n // bins)
                     if (e + 1) * bins + (b - 2 if alternating else -1) <= n - 1)
        assert (count, w.periods) == ((1, want_e) if fixed else (want_e, 0))
        assert (f"summed over the {want_e} periods" in w.describe()) == fixed
        assert alloc.scheme.t == bins // length and w.dimensions == (2 if alternating else 1)
        mine = _expand(alloc, length)
        want = _direct(c, n, length, alternating) * (math.sqrt(want_e) if fixed else 1.0)
        assert mine.size == length
        assert np.all(mine <= want * (1 + 1e-15))
        np.testing.assert_allclose(mine, want, rtol=1e-12)


@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_windowed_below_the_exact_pair(eps):
    """One epoch of two steps, 2 bands (n 2): the windowed witness keeps row 1 (it reads both
    steps) and is the mixture (N(c_1) + N(c_0)) / 2, at most the exact delta of the whole
    pair; at 0.9 sigma it is above that truth (the check can fail)."""
    c, sigma = (1.0, 0.6), 0.8
    s = dp.BandedToeplitz(c, 2)
    w, = [w for w in window_witnesses(s, sigma, 2) if w.name == "windowed"]
    truth = exact_delta(s.dense(), sigma, None, eps, nodes=200, pats=np.eye(2),
                        logw=np.full(2, -math.log(2)))
    low = lower_end([w], "delta", eps).value
    assert 0 < low <= truth * (1 + 1e-4)
    mog = dp.MixtureOfGaussians(sigma, (0.6, 1.0), (0.5, 0.5))
    ref = mog.delta(eps)                          # (its own bracket: a second grid)
    assert ref.lower * (1 - 1e-3) <= low <= ref.delta


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_alternating_below_its_exact_pair(eps):
    """n 3, 2 bins, 2 bands: the record's gradient u_1 in window {0, 1} (one epoch) and u_2
    in step 2 (the partial epoch). Along u_1 the first epoch's pair is the mixture over steps
    0, 1 of N(C[:, s], I) on all three rows; the witness (its projection on the window's sum)
    is below its exact delta (quadrature, the 3 x 2 mean matrix rotated so the loss increases
    in the last coordinate), which bounds the whole pair's from below; and at 0.9 sigma it is
    above that truth."""
    c, sigma = (1.0, 0.7), 1.0
    s = dp.BandedToeplitz(c, 3)
    ws = [w for w in window_witnesses(s, sigma, 2) if w.name == "alternating-windows"
          and w.window == 2]
    assert len(ws) == 1
    m = np.asarray(s.dense(), dtype=float)[:, :2]
    truth = exact_delta(_rotated(m), sigma, None, eps, nodes=160, pats=np.eye(2),
                        logw=np.full(2, -math.log(2)))
    low = lower_end(ws, "delta", eps).value
    assert 0 < low <= truth * (1 + 1e-3)
    hot = [w for w in window_witnesses(s, 0.9 * sigma, 2) if w.name == "alternating-windows"
           and w.window == 2]
    assert lower_end(hot, "delta", eps).value > truth


def test_fixed_bins_windowed_below_the_exact_pair():
    """Fixed bins, 2 bins, 2 periods, 2 bands (n 4): the windowed witness (row 1 and row 3,
    summed) below the exact delta of the mixture over the two bins' patterns."""
    c, sigma, eps = (1.0, 0.6), 0.9, 0.5
    s = dp.BandedToeplitz(c, 4)
    w, = [w for w in window_witnesses(s, sigma, 2, fixed=True) if w.name == "windowed"]
    assert w.periods == 2
    pats = np.array([[1.0, 0, 1, 0], [0, 1.0, 0, 1]])
    truth = exact_delta(s.dense(), sigma, None, eps, nodes=40, pats=pats,
                        logw=np.full(2, -math.log(2)))
    assert 0 < lower_end([w], "delta", eps).value <= truth * (1 + 1e-3)


@pytest.mark.parametrize("fixed", [False, True])
def test_the_estimate_lies_above_the_lower_end(fixed):
    """n 120, 4 bands, 20 bins, z 2: the answer's lower end (now the windows') at or below the
    Monte Carlo estimate's upper end of the fixed-direction pair, and far above the matched
    filter's."""
    from dpamp.accounting.montecarlo_matrix import estimate_epsilon
    co = np.array(bsr_coefficients(4))
    s = dp.BandedToeplitz(tuple(co / np.linalg.norm(co)), 120)
    m = dp.MatrixMechanism(s, 2.0, participation=(dp.FixedBins if fixed else dp.BallsInBins)(20))
    g = m.epsilon(1e-5)
    r = estimate_epsilon(m, 1e-5, samples=4000, seed=11)
    assert g.lower is not None and g.lower <= r.hi and r.lo <= g.epsilon
    if not fixed:
        assert "windows" in g.note and g.lower >= 0.8 * r.estimate


def test_lengths_and_declines():
    assert _window_lengths(100, 8) == [25, 100] and _window_lengths(100, 1) == [25, 100]
    assert _window_lengths(7, 2) == [7] and _window_lengths(3, 4) == []
    assert _window_lengths(2048, 3) == [128, 512]
    assert window_witnesses(dp.BandedToeplitz((1.0, -0.5), 40), 1.0, 10) == []
    assert window_witnesses(dp.DenseStrategy(np.eye(4)), 1.0, 2) == []
    # bins shorter than the bands: no windowed length, alternating from b - 1
    names = {w.name for w in window_witnesses(dp.BandedToeplitz((1.0, 0.5, 0.2), 40), 1.0, 2)}
    assert names == {"alternating-windows"}
