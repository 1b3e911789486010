"""The pessimistic PMF's majorant (dpamp.pld.majorant): its survival function is above that of
every measure within the relative error model, exactly (rational arithmetic), and so is every
composition of it; it never exceeds the margin's (1 + r) m~ bin by bin; it meets the
10^7-step corner cell the margin kept wide."""
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import dpamp as dp
from dpamp.pld.discretize import lower_total
from dpamp.pld import engine as E
from dpamp.pld.majorant import majorant
from dpamp.pld.state import Bound


def _survival(m):
    out, s = [], Fr(0)
    for x in reversed(m):
        s += x
        out.append(s)
    return out[::-1]


def _convolve(a, b):
    out = [Fr(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


masses = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=9)


@settings(max_examples=150, deadline=None)
@given(masses, st.floats(1e-9, 0.2), st.lists(st.floats(-1.0, 1.0), min_size=10, max_size=10),
       st.booleans())
def test_survival_is_above_every_measure_of_the_model(raw, r, e, defective):
    """m~ normalised (to total 1, or a defective 0.9); every 'true' m with m_j within r m~_j of
    m~_j and total <= 1 has S_m <= S_{m+} at every bin, and so for the two-fold compositions."""
    a = np.array(raw[:-1])
    if a.sum() + raw[-1] < 1e-3:                   # (a total of order 1: normal numbers)
        return
    scale = (0.9 if defective else 1.0) / (a.sum() + raw[-1])
    mt = np.append(a * scale, raw[-1] * scale)
    up, inf = majorant(mt[:-1], mt[-1], r)
    plus = [Fr(float(x)) for x in up] + [Fr(inf)]
    rr = Fr(r)
    true = [Fr(float(x)) * (1 + rr * Fr(ei)) for x, ei in zip(mt, e)]
    assume(sum(true) <= 1)                          # the model's measures have total <= 1
    assert all(x >= 0 for x in plus)
    for s_true, s_plus in zip(_survival(true), _survival(plus)):
        assert s_true <= s_plus
    for s_true, s_plus in zip(_survival(_convolve(true, true)), _survival(_convolve(plus, plus))):
        assert s_true <= s_plus
    # never above m~ / (1 - r) bin by bin (a few ulps of the split bin aside)
    bound = [Fr(float(x)) / (1 - rr) for x in mt]    # m <= m~ / (1 - r): r read as exact's
    assert all(p <= b * (1 + Fr(1, 10**12)) + Fr(1, 10**15) for p, b in zip(plus, bound))


def test_the_margin_leaves_majorised_and_minorised_parts_out():
    """mass_margin leaves a majorised part out of the upper bound's margin and a minorised one
    out of the lower bound's; without a bound it counts every part (the threshold's test)."""
    from dpamp.pld.majorant import majorise
    from dpamp.pld.batch import discretize_parts
    from dpamp.pld.sources import parts_of
    m = dp.Gaussian(1.0).subsample(dp.Poisson(1e-5)) * 10**7
    d = parts_of(m)
    h = 1e-6
    pp = discretize_parts(d, h, 1e-12)
    before = E.mass_margin(pp, h)
    mp = majorise(pp, h)
    assert all(p.d.majorised and p.d.minorised for p in mp)
    assert E.mass_margin(mp, h) == before
    assert E.mass_margin(mp, h, Bound.LOWER) == E.REL_MARGIN
    assert E.mass_margin(mp, h, Bound.UPPER) == E.REL_MARGIN
    # and the majorant is a measure of total <= 1, at most (1 + r) times the PMF bin by bin
    for p, q in zip(pp, mp):
        assert np.all(q.d.upper >= 0) and q.d.upper.sum() + q.d.upper_inf <= 1 + 1e-12
        r = 8 * 2.0 ** -53 / h
        assert np.all(q.d.upper <= p.d.upper / (1 - r) * (1 + 1e-12) + 1e-300)


def test_a_small_composition_keeps_its_bits():
    """Below the threshold nothing is majorised: the parts are the same objects."""
    from dpamp.pld.majorant import majorise
    from dpamp.pld.batch import discretize_parts
    from dpamp.pld.sources import parts_of
    d = parts_of(dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 100)
    pp = discretize_parts(d, 1e-3, 1e-8)
    assert majorise(pp, 1e-3) is pp


@pytest.mark.slow
@pytest.mark.parametrize("q,delta,truth", [
    # the grid-free contour oracle (tests/oracles/contour_gaussian.py epsilon_with_error(1.0,
    # q, 10**7, delta); errors 1.1e-13, 3.6e-9, 4e-16; about a minute each, not recomputed)
    (1e-5, 1e-9, 0.2145103359699),
    (1e-5, 1e-14, 0.2898601982958),
    (1e-4, 1e-9, 2.386526947989),
    (1e-6, 1e-9, 0.01957030981620),   # (error 1.6e-13; the minorant's lower end decided it)
])
def test_ten_million_steps_meet_tol(q, delta, truth):
    """sigma 1, 10^7 steps: the margin (1 +- 8u/h)^T kept q 1e-5, delta 1e-9 1.3e-3 wide and
    q 1e-6 5e-3; with the majorant and the minorant each meets 1e-3 of epsilon and holds the
    oracle's value."""
    g = (dp.Gaussian(1.0).subsample(dp.Poisson(q)) * 10**7).epsilon(delta)
    assert "tol not met" not in str(g) and g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g.lower <= truth <= g.epsilon


# --- the optimistic PMF's minorant ---------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(masses, st.floats(1e-9, 0.2), st.lists(st.floats(-1.0, 1.0), min_size=10, max_size=10),
       st.floats(0.5, 1.0))
def test_minorant_survival_is_below_every_measure_of_the_model(raw, r, e, total):
    """m~ normalised to ``total``; every 'true' m with |m~_j - m_j| <= r m_j and total >= the
    stated lower bound (here: its own, whatever it is, >= ``total`` (1 - r)) has S_m >= S_{m-}
    at every bin, and so for the two-fold compositions."""
    from dpamp.pld.majorant import minorant
    a = np.array(raw[:-1])
    if a.sum() + raw[-1] < 1e-3:
        return
    scale = total / (a.sum() + raw[-1])
    mt = np.append(a * scale, raw[-1] * scale)
    rr = Fr(r)
    # true masses within r of the computed ones, relative to the true: m = m~ / (1 + r e)
    true = [Fr(float(x)) / (1 + rr * Fr(ei)) for x, ei in zip(mt, e)]
    t_true = sum(true)
    low, inf = minorant(mt[:-1], mt[-1], r, float(t_true) * (1 - 1e-15))
    minus = [Fr(float(x)) for x in low] + [Fr(inf)]
    assert all(x >= 0 for x in minus)
    for s_true, s_minus in zip(_survival(true), _survival(minus)):
        assert s_minus <= s_true
    for s_true, s_minus in zip(_survival(_convolve(true, true)),
                               _survival(_convolve(minus, minus))):
        assert s_minus <= s_true


def test_minorant_keeps_the_total_the_margin_loses():
    """A measure whose total is known: the minorant's total is that bound (no (1 - r) per
    step), while every bin above the split is (1 - r) m~."""
    from dpamp.pld.majorant import minorant
    mt = np.array([0.25, 0.5, 0.25])
    low, inf = minorant(mt[:-1], mt[-1], 1e-3, 1.0 - 1e-3 * 0.25)
    assert abs(low.sum() + inf - (1.0 - 2.5e-4)) < 1e-12
    assert inf <= 0.25 * (1 - 1e-3)


@pytest.mark.parametrize("mech", [
    dp.Gaussian(1.0), dp.Gaussian(0.8).subsample(dp.Poisson(0.01)), dp.Laplace(1.0),
    dp.Laplace(1.0).subsample(dp.Poisson(0.05)), dp.RandomizedResponse(0.7),
    dp.EpsDelta(1.0, 1e-6), dp.EpsDelta(1.0, 1e-6).subsample(dp.Poisson(0.1))])
def test_the_optimistic_total_is_one_minus_the_mass_below_the_grid(mech):
    """The optimistic PMF's total is P_tot minus the P-mass below its grid (the swapped half's
    final slope), whatever the lowering: the stated lower bound is below the computed total
    (net of the clipped slack) and within the model's rounding of it."""
    from dpamp.pld.batch import discretize_parts
    from dpamp.pld.sources import parts_of
    for h in (1e-2, 1e-4):
        for p in discretize_parts(parts_of(mech * 100), h, 1e-10):
            d = p.d
            total = lower_total(d, h)
            assert total is not None
            seen = float(np.sum(d.lower)) + d.lower_inf - d.lower_slack
            assert total <= seen + 1e-12
            assert seen - total < 1e-9


def test_a_truncated_pair_states_no_total():
    """A truncated pair (the discrete Gaussian's tails are bounds): no total is claimed, and
    its lower PMF keeps the margin."""
    from dpamp.pld.batch import discretize_parts
    from dpamp.pld.sources import parts_of
    from dpamp.pld.majorant import majorise
    pp = discretize_parts(parts_of(dp.DiscreteGaussian(2.0) * 10**7), 1e-4, 1e-12)
    assert pp and all(lower_total(p.d, 1e-4) is None for p in pp)
    mp = majorise(pp, 1e-4)
    assert mp is not pp and not any(p.d.minorised for p in mp)
