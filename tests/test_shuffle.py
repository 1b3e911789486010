"""Shuffled fixed-size batches (amplification.allocation.shuffle): the lower bounds of
Chua et al. (ICML 2024, arXiv:2403.17673; NeurIPS 2024, arXiv:2411.04205) computed soundly, and
the proven no-amplification upper bound."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.allocation import shuffle as S
from dpamp.amplification.allocation.shuffle import (shuffle_lower_delta, shuffle_lower_epsilon,
                                                    shuffle_upper_delta, shuffle_upper_epsilon)

FAST = dict(n_cells=300)


def mp_max_cdf(c, sigma, t, shift, rho=0):
    """P(max_i y_i <= c) for rho N(0, s^2 I) + (1 - rho) MoG(shift), in mpmath."""
    c, s = mp.mpf(c), mp.mpf(sigma)
    base = mp.ncdf(c / s)
    return rho * base ** t + (1 - rho) * mp.ncdf((c - shift) / s) * base ** (t - 1)


def mp_hockey_of_max(sigma, t, u, v, eps):
    """Exact hockey-stick divergence of the laws of max_i y_i under MoG(u) vs MoG(v), by
    mpmath quadrature of (f_P - e^eps f_Q)_+ (densities by differentiating the CDFs)."""
    fp = lambda c: mp.diff(lambda x: mp_max_cdf(x, sigma, t, u), c)
    fq = lambda c: mp.diff(lambda x: mp_max_cdf(x, sigma, t, v), c)
    g = lambda c: max(fp(c) - mp.e ** eps * fq(c), 0)
    lo, hi = min(u, v) - 8 * sigma, max(u, v) + 10 * sigma
    pts = list(np.linspace(lo, hi, 25))
    with mp.workdps(30):
        return float(mp.quad(g, pts))


@pytest.mark.parametrize("sigma,t,eps", [(0.5, 4, 1.0), (1.0, 10, 0.5), (0.8, 3, 2.0)])
def test_single_epoch_cells_against_quadrature(sigma, t, eps):
    """One epoch, the (2, 1) pair: the cell post-processing is below the exact divergence of
    the max statistic (quadrature) and close to it."""
    exact = mp_hockey_of_max(sigma, t, 2.0, 1.0, eps)
    pair = S._LowerPair(sigma, t, 1, 2.0, 1.0, 0.0, 1000, 2e-3)
    ours = float(_hockey(pair.laws[0], eps))
    assert ours <= exact * (1 + 1e-6)
    assert ours >= exact * 0.99


def _hockey(law, eps):
    return S._hockey_lower(law[0], law[1], np.array([eps]))[0]


@pytest.mark.parametrize("sigma,t", [(0.5, 10), (1.0, 100), (2.0, 5)])
def test_dominates_every_cube_test(sigma, t):
    """CGK24's cube test sets {max_i y_i > C} (a closed form): the cell divergence is at least
    each of them, here on cut points of the grid, where the set is a union of cells."""
    pair = S._LowerPair(sigma, t, 1, 2.0, 1.0, 0.0, 200, 2e-3)
    with mp.workdps(30):
        lo = sigma * float(mp.sqrt(2) * mp.erfinv(2 * mp.exp(-mp.mpf(120) / t) - 1))
    cuts = np.linspace(lo, 2.0 + 12 * sigma, 201)  # the cut points of _cells
    for eps in (0.3, 1.5):
        ours = _hockey(pair.laws[0], eps)
        for c in cuts[::20]:
            cube = ((1 - mp_max_cdf(c, sigma, t, 2.0))
                    - mp.e ** eps * (1 - mp_max_cdf(c, sigma, t, 1.0)))
            assert ours >= float(cube) - 1e-12


@pytest.mark.parametrize("relation", ["substitution", "add_remove"])
@pytest.mark.parametrize("sigma,t,epochs", [(0.5, 100, 1), (1.0, 1000, 1), (0.7, 50, 3),
                                           (2.0, 10, 2)])
def test_lower_below_upper(relation, sigma, t, epochs):
    kw = dict(batch_size=4, dataset_size=4 * t + 1) if relation == "add_remove" else {}
    eps = np.array([0.0, 0.5, 1.0, 3.0, 8.0])
    lo = shuffle_lower_delta(sigma, t, epochs, eps, relation, **kw, **FAST)
    up = shuffle_upper_delta(sigma, epochs, eps, relation, **kw)
    assert np.all(lo <= up) and np.all(lo >= 0) and np.all(up <= 1)
    el = shuffle_lower_epsilon(sigma, t, epochs, 1e-5, relation, **kw, **FAST)
    eu = shuffle_upper_epsilon(sigma, epochs, 1e-5, relation, **kw)
    assert 0 <= el <= eu


def test_upper_is_the_gaussian_closed_form():
    """E epochs: the Gaussian with mu = 2 sqrt(E)/sigma, 000 Thm 4, evaluated in mpmath."""
    for sigma, epochs, eps in [(1.0, 1, 0.5), (2.0, 10, 2.0), (5.0, 100, 1.0)]:
        with mp.workdps(40):
            mu = mp.mpf(2) * mp.sqrt(epochs) / sigma
            exact = mp.ncdf(mu / 2 - eps / mu) - mp.e ** eps * mp.ncdf(-mu / 2 - eps / mu)
        ours = shuffle_upper_delta(sigma, epochs, eps)
        assert float(exact) <= ours <= float(exact) * (1 + 1e-9)
        e_up = shuffle_upper_epsilon(sigma, epochs, float(exact))
        assert e_up >= eps * (1 - 1e-12) and e_up <= eps * (1 + 1e-6)


def test_small_sigma_lower_bound_is_near_no_amplification():
    """CGK24 (Sec. 4, Fig. 1): for small sigma the shuffled sampler is barely better than
    deterministic batches. Here sigma = 0.3, t = 1000, delta = 1e-6: the proven lower bound is
    within 15% of the no-amplification upper bound, and far above the random-allocation
    guarantee of the same plan (add/remove, remove direction, RDP route)."""
    lo = shuffle_lower_epsilon(0.3, 1000, 1, 1e-6, "substitution", **FAST)
    up = shuffle_upper_epsilon(0.3, 1, 1e-6, "substitution")
    assert 0.85 * up <= lo <= up


def test_shuffle_lower_exceeds_poisson_for_small_sigma():
    """CGK24's headline: with small noise, the shuffled sampler's proven lower bound exceeds
    the epsilon computed for Poisson sampling at rate 1/t (here an RDP upper bound on it, so
    the gap is certain). Add/remove, sigma = 0.4, t = 100 batches of 10 of 1001 records (a
    dataset whose neighbours give 100 batches too), one epoch."""
    lo = shuffle_lower_epsilon(0.4, 100, 1, 1e-5, "add_remove", batch_size=10,
                               dataset_size=1001, **FAST)
    assert math.isfinite(lo)
    pois = (dp.Gaussian(0.4).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-5, method="rdp")
    assert lo > pois.epsilon


def test_monotone_in_sigma_and_epochs():
    eps = np.array([0.5, 2.0])
    d = [shuffle_lower_delta(s, 50, 1, eps, **FAST) for s in (0.5, 0.8, 1.5)]
    assert np.all(d[0] >= d[1]) and np.all(d[1] >= d[2])
    e = [shuffle_lower_epsilon(0.8, 50, E, 1e-5, **FAST) for E in (1, 2, 4)]
    assert e[0] <= e[1] <= e[2]


def test_no_reshuffle_is_one_epoch_at_reduced_noise():
    a = shuffle_lower_delta(1.0, 20, 4, [0.5, 1.0], reshuffle=False, **FAST)
    b = shuffle_lower_delta(0.5, 20, 1, [0.5, 1.0], **FAST)
    assert np.allclose(a, b, rtol=1e-12)
    # reshuffling hides more: its lower bound is not above the fixed order's
    c = shuffle_lower_delta(1.0, 20, 4, [0.5, 1.0], **FAST)
    assert np.all(c <= b * (1 + 1e-9))


def test_dropped_remainder_weakens_the_lower_bound():
    """Substitution with n = t b + r: the differing record is dropped with probability r/n,
    so the lower bound may only go down, and it is exactly the no-remainder one when r = 0."""
    eps = np.array([0.5, 2.0])
    full = shuffle_lower_delta(0.8, 20, 1, eps, **FAST)
    same = shuffle_lower_delta(0.8, 20, 1, eps, batch_size=5, dataset_size=100, **FAST)
    drop = shuffle_lower_delta(0.8, 20, 1, eps, batch_size=5, dataset_size=104, **FAST)
    assert np.allclose(full, same, rtol=1e-12)
    assert np.all(drop <= full) and np.all(drop >= 0.9 * full)


def test_add_remove_relation_rules():
    # b divides n + 1: one more record makes one more batch, no finite guarantee
    assert shuffle_lower_epsilon(1.0, 10, 1, 1e-5, "add_remove", batch_size=4,
                                 dataset_size=43) == math.inf
    assert shuffle_lower_delta(1.0, 10, 1, 3.0, "add_remove", batch_size=4,
                               dataset_size=43) == 1.0
    assert shuffle_upper_epsilon(1.0, 1, 1e-5, "add_remove", batch_size=4,
                                 dataset_size=43) == math.inf
    # b divides n: one record fewer makes one batch fewer, likewise (the upper bound was finite)
    assert shuffle_upper_delta(1.0, 1, 1.0, "add_remove", batch_size=10,
                               dataset_size=100) == 1.0
    assert shuffle_upper_epsilon(1.0, 1, 1e-5, "add_remove", batch_size=10,
                                 dataset_size=100) == math.inf
    assert shuffle_lower_epsilon(1.0, 10, 1, 1e-5, "add_remove", batch_size=10,
                                 dataset_size=100) == math.inf
    with pytest.raises(ValueError, match="number of batches"):
        dp.Gaussian(1.0).subsample(dp.Shuffled(10, 100, relation=dp.ADD_REMOVE))
    # neither: finite both ways
    assert shuffle_upper_epsilon(1.0, 1, 1e-5, "add_remove", batch_size=10,
                                 dataset_size=101) < math.inf
    with pytest.raises(ValueError, match="steps_per_epoch"):
        shuffle_lower_delta(1.0, 11, 1, 1.0, "add_remove", batch_size=4, dataset_size=40)
    with pytest.raises(ValueError, match="batch_size"):
        shuffle_lower_delta(1.0, 10, 1, 1.0, "add_remove")
    with pytest.raises(ValueError, match="relation"):
        shuffle_lower_delta(1.0, 10, 1, 1.0, "sideways")
    with pytest.raises(ValueError, match="sigma"):
        shuffle_upper_delta(-1.0, 1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        shuffle_lower_delta(1.0, 10, 1, -1.0)


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.3, 4.0), t=st.integers(1, 200), epochs=st.integers(1, 3),
       eps=st.floats(0.0, 10.0))
def test_properties(sigma, t, epochs, eps):
    lo = shuffle_lower_delta(sigma, t, epochs, eps, n_cells=100)
    up = shuffle_upper_delta(sigma, epochs, eps)
    assert 0.0 <= lo <= up <= 1.0 and math.isfinite(lo)


def test_at_least_the_best_cube_test_off_the_grid():
    """sigma 0.8, 100 steps, eps 4: a cube test between two cut points, {max > 3.748} for the
    (2, 0) pair, once beat the cells (0.006938875 against 0.006936995). Every threshold of a
    fine scan, evaluated here in mpmath, is now below the bound."""
    sigma, t, eps = 0.8, 100, 4.0
    ours = shuffle_lower_delta(sigma, t, 1, eps)
    best = 0.0
    with mp.workdps(30):
        for c in np.linspace(3.6, 3.9, 61):
            cube = (1 - mp_max_cdf(c, sigma, t, 2.0)) - mp.e ** eps * (1 - mp_max_cdf(c, sigma,
                                                                                     t, 0.0))
            best = max(best, float(cube))
    assert best > 0.006938 > 0.006936995 and ours >= best


@settings(max_examples=8, deadline=None)
@given(sigma=st.floats(0.4, 2.0), t=st.integers(2, 30), eps=st.floats(0.1, 3.0),
       c=st.floats(-1.0, 6.0))
def test_any_cube_threshold_is_below_the_bound(sigma, t, eps, c):
    ours = shuffle_lower_delta(sigma, t, 1, eps, n_cells=100)
    with mp.workdps(30):
        for u, v in ((2.0, 1.0), (2.0, 0.0)):
            for a, b in ((u, v), (v, u)):
                fa, fb = mp_max_cdf(c, sigma, t, a), mp_max_cdf(c, sigma, t, b)
                for cube in ((1 - fa) - mp.e ** eps * (1 - fb), fa - mp.e ** eps * fb):
                    assert ours >= float(cube) - 1e-12


def test_add_remove_uses_the_neighbour_with_one_record_fewer():
    """D of n records against D - x drops x with the remainder's share (n - t b)/n, less often
    than D + x against D (1 - t b/(n + 1)): the larger of the two lower bounds."""
    sigma, b, n = 0.7, 4, 4 * 20 + 2
    t = n // b
    got = shuffle_lower_delta(sigma, t, 1, 1.0, "add_remove", batch_size=b, dataset_size=n)
    minus = S._LowerPair(sigma, t, 1, 2.0, 0.0, (n - t * b) / n, 1000, 2e-3)
    plus = S._LowerPair(sigma, t, 1, 2.0, 0.0, 1 - t * b / (n + 1), 1000, 2e-3)
    d_minus, d_plus = (float(p.delta(np.array([1.0]))[0]) for p in (minus, plus))
    assert got == d_minus > d_plus


def test_without_mpmath_the_lower_bound_is_omitted(monkeypatch):
    """dpamp's runtime needs numpy and scipy only: without mpmath the shuffled-batches lower
    bound (60-digit cells) is not computed, and the answer has no lower bound instead of
    failing (a fresh `make run` installs no mpmath)."""
    import sys

    import dpamp as dp
    from dpamp.accounting import sampler_lower
    sampler_lower._lower.cache_clear()
    monkeypatch.setitem(sys.modules, "mpmath", None)       # import mpmath -> ImportError
    step = dp.Gaussian(1.0, sensitivity=2.0, relation=dp.SUBSTITUTION)
    g = step.subsample(dp.Shuffled(100, 1050, relation=dp.SUBSTITUTION)).epsilon(1e-5)
    assert g.lower is None and g.epsilon > 0
    sampler_lower._lower.cache_clear()
