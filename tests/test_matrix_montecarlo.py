"""The Monte Carlo check of sampled matrix mechanisms (dpamp.accounting.montecarlo_matrix):
the exact loss recursions against brute force over every pattern, the estimates against
quadrature of the pair (n = 1, 2, 3) and against dpamp's certified brackets where those are
exact (DP-SGD, the cyclic-Poisson reduction), and the no-amplification upper bound above the
estimate's lower end."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

import dpamp as dp
from dpamp.accounting.matrix_mc_loss import epochs_of, log_ratio_bins, log_ratio_rates
from dpamp.accounting.montecarlo_matrix import (MonteCarloEstimate, estimate_delta,
                                                estimate_epsilon)


def _banded(n: int, bands: int, rows: int, rng) -> np.ndarray:
    c = np.zeros((rows, n))
    for t in range(n):
        for k in range(bands):
            if t + k < rows:
                c[t + k, t] = rng.normal()
    return c


def _brute(h, j, patterns):
    """log sum_B prob(B) exp(B.h - sum_{u<t} B_u B_t J[u, t]) over the listed patterns."""
    upper = np.triu(j, 1)
    return np.array([logsumexp([lp + b @ hi - b @ upper @ b for b, lp in patterns])
                     for hi in h])


def test_rate_recursion_is_exact():
    rng = np.random.default_rng(0)
    n = 7
    c = _banded(n, 3, n + 1, rng)          # negative entries too: J of both signs
    j = 0.7 * c.T @ c
    h = 2.0 * rng.normal(size=(5, n))
    r = rng.uniform(0.05, 0.9, n)
    r[2], r[4] = 0.0, 1.0                  # a step never taken, a step always taken
    pats = []
    for bits in itertools.product([0.0, 1.0], repeat=n):
        b = np.array(bits)
        pr = np.prod(np.where(b == 1, r, 1 - r))
        if pr > 0:
            pats.append((b, np.log(pr)))
    np.testing.assert_allclose(log_ratio_rates(h, j, r), _brute(h, j, pats), atol=1e-12)
    # diagonal J: the closed form sum_t log(1 - r_t + r_t e^{h_t})
    d = np.diag(np.diag(j))
    np.testing.assert_allclose(log_ratio_rates(h, d, r), _brute(h, d, pats), atol=1e-12)


def test_bins_recursion_is_exact():
    rng = np.random.default_rng(1)
    n, bins = 7, 3
    c = _banded(n, 3, n, rng)
    j = 0.5 * c.T @ c
    h = rng.normal(size=(4, n))
    eps = epochs_of(n, bins)
    assert eps == [(0, 3), (3, 6), (6, 7)]
    pats = []
    for pick in itertools.product(*[range(a, b) for a, b in eps]):
        b = np.zeros(n)
        b[list(pick)] = 1.0
        pats.append((b, -np.log(9.0)))
    np.testing.assert_allclose(log_ratio_bins(h, j, bins), _brute(h, j, pats), atol=1e-12)


def _bins_brute(h, j, bins):
    """log E_B over every balls-in-bins pattern (one step per epoch), by enumeration."""
    n = h.shape[1]
    eps = epochs_of(n, bins)
    pats = []
    for pick in itertools.product(*[range(a, b) for a, b in eps]):
        b = np.zeros(n)
        b[list(pick)] = 1.0
        pats.append((b, -sum(np.log(b - a) for a, b in eps)))
    return _brute(h, j, pats)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), bins=st.integers(1, 4), bands=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1))
@example(n=9, bins=2, bands=6, seed=0)          # bandwidth 5 over epochs of 2: m = 3
@example(n=7, bins=1, bands=4, seed=1)          # one step per epoch: B fixed, no mixture
def test_bins_recursion_below_the_bandwidth_is_exact(n, bins, bands, seed):
    # epochs shorter than the Gram matrix's bandwidth: a step interacts with several earlier
    # epochs, the state holds all of their drawn steps (bins^m states)
    rng = np.random.default_rng(seed)
    c = _banded(n, bands, n + bands, rng)
    j = 0.5 * c.T @ c
    h = 1.5 * rng.normal(size=(3, n))
    np.testing.assert_allclose(log_ratio_bins(h, j, bins), _bins_brute(h, j, bins),
                               atol=1e-11)


def test_bins_recursion_refuses_too_many_states():
    n = 40
    c = _banded(n, 30, n, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"bandwidth 29.*5\^6 states"):
        log_ratio_bins(np.zeros((1, n)), c.T @ c, 5)


def _grid_delta(c, sigma, patterns, eps, half=9.0, step=0.02):
    """max over the two orders of the hockey-stick divergence of P = sum_B pi_B N(C B, s^2)
    and Q = N(0, s^2), by the trapezoid rule on a grid (the tails beyond 9 sigma are below
    1e-18); ``patterns`` [(B, pi_B)]."""
    m = c.shape[0]
    axes = [np.arange(-half * sigma, half * sigma + 1 + step / 2, step)] * m
    rm = ad = 0.0
    ys = np.stack(np.meshgrid(*axes[1:], indexing="ij"), -1).reshape(-1, m - 1)
    for y0 in axes[0]:              # slices along the first axis keep memory small
        y = np.column_stack([np.full(len(ys), y0), ys])
        q = np.exp(-0.5 * np.sum(y * y, 1) / sigma ** 2)
        p = sum(pi * np.exp(-0.5 * np.sum((y - c @ b) ** 2, 1) / sigma ** 2)
                for b, pi in patterns)
        rm += np.sum(np.maximum(p - np.exp(eps) * q, 0.0))
        ad += np.sum(np.maximum(q - np.exp(eps) * p, 0.0))
    norm = step ** m / (2 * np.pi * sigma ** 2) ** (m / 2)
    return max(rm, ad) * norm


def _poisson_patterns(n, q):
    return [(np.array(b), np.prod([q if x else 1 - q for x in b]))
            for b in itertools.product([0.0, 1.0], repeat=n)]


@pytest.mark.parametrize("q, sigma, delta", [(0.1, 1.0, 1e-5), (0.5, 0.8, 1e-3)])
def test_one_step_matches_the_subsampled_gaussian(q, sigma, delta):
    m = dp.MatrixMechanism(np.eye(1), sigma, participation=dp.Poisson(q))
    r = estimate_epsilon(m, delta, samples=20000, seed=1)
    g = dp.Gaussian(sigma).subsample(dp.Poisson(q)).epsilon(delta)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)
    assert r.hi - r.lo < 0.05 * r.estimate            # and the interval is informative


def test_rate_one_is_the_gaussian_mechanism():
    """q = 1: no sampling, the pair is the Gaussian mechanism's (both orders equal); the
    proposal is then a plain shift and eps is large (no e^eps overflow on the way)."""
    m = dp.MatrixMechanism(np.eye(1), 0.2, participation=dp.Poisson(1.0))
    r = estimate_epsilon(m, 1e-6, samples=4000, seed=10)
    g = dp.Gaussian(0.2).epsilon(1e-6)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)


def test_many_diagonal_steps_match_dp_sgd():
    """Diagonal C, 60 steps: the tilted proposal at delta = 1e-6 against the certified
    bracket of 60 Poisson-subsampled Gaussian steps."""
    m = dp.MatrixMechanism(np.eye(60), 1.0, participation=dp.Poisson(0.05))
    r = estimate_epsilon(m, 1e-6, samples=10000, seed=2)
    g = (dp.Gaussian(1.0).subsample(dp.Poisson(0.05)) * 60).epsilon(1e-6)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)
    assert r.ess > 100 and r.max_share < 0.05


@pytest.mark.parametrize("c, q, sigma, eps", [
    (np.array([[1.0, 0.0], [0.6, 1.0]]), 0.4, 1.0, 0.5),
    (np.array([[1.0, 0.0], [-0.5, 0.8]]), 0.7, 1.2, 0.2),
    (np.array([[1.0, 0.0], [0.6, 1.0]]), 0.02, 0.6, 2.0),     # delta 3.2e-4: tilted
])
def test_two_steps_against_quadrature(c, q, sigma, eps):
    m = dp.MatrixMechanism(c, sigma, participation=dp.Poisson(q))
    truth = _grid_delta(c, sigma, _poisson_patterns(2, q), eps)
    r = estimate_delta(m, eps, samples=20000, seed=3)
    assert r.lo <= truth <= r.hi, (tuple(r), truth)


def test_three_steps_against_quadrature():
    c = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.5, 1.0]])
    q, sigma, eps = 0.3, 1.0, 0.4
    truth = _grid_delta(c, sigma, _poisson_patterns(3, q), eps, half=7.0, step=0.1)
    r = estimate_delta(dp.MatrixMechanism(c, sigma, participation=dp.Poisson(q)), eps,
                       samples=20000, seed=4)
    assert r.lo <= truth <= r.hi, (tuple(r), truth)


def test_balls_in_bins_against_quadrature():
    """One epoch of 2 steps: the record in step 0 or 1, each with probability 1/2."""
    c = np.array([[1.0, 0.0], [0.7, 1.0]])
    sigma, eps = 0.9, 0.6
    pats = [(np.array([1.0, 0.0]), 0.5), (np.array([0.0, 1.0]), 0.5)]
    truth = _grid_delta(c, sigma, pats, eps)
    r = estimate_delta(dp.MatrixMechanism(c, sigma, participation=dp.BallsInBins(2)), eps,
                       samples=20000, seed=5)
    assert r.lo <= truth <= r.hi, (tuple(r), truth)


@pytest.mark.parametrize("bins, epochs, sigma", [(10, 1, 0.8), (4, 3, 1.0)])
def test_balls_in_bins_on_the_identity_is_random_allocation(bins, epochs, sigma):
    """C = I: one uniformly drawn step per epoch is the random allocation of one step among
    ``bins`` (the balls-in-bins sampler of DP-SGD), which dpamp brackets independently."""
    m = dp.MatrixMechanism(np.eye(bins * epochs), sigma, participation=dp.BallsInBins(bins))
    r = estimate_epsilon(m, 1e-5, samples=10000, seed=9)
    g = (dp.Gaussian(sigma).subsample(dp.RandomAllocation(1, bins)) * epochs).epsilon(1e-5)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)


def test_cyclic_poisson_route_bracket():
    """8 steps, 4 groups, 4 bands: group 0's steps 0 and 4 have full columns and are
    disjoint in rows, so the route's DP-SGD reduction is exact for it."""
    c = dp.BandedToeplitz([1.0, 0.8, 0.6, 0.4], 8)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.CyclicPoisson(0.5, 4))
    assert m.route == "cyclic-poisson"
    g = m.epsilon(1e-3)
    r = estimate_epsilon(m, 1e-3, samples=20000, seed=6)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)
    assert r.group == 0


def _group_plan(c, sigma, q, group, partitions):
    """The exact plan of one cyclic group: its steps' Poisson-subsampled Gaussians at their
    own column norms, composed."""
    norms = np.linalg.norm(c, axis=0)[group::partitions]
    parts = [dp.Gaussian(sigma / nrm).subsample(dp.Poisson(q)) for nrm in norms]
    plan = parts[0]
    for p in parts[1:]:
        plan = plan + p
    return plan


def test_cyclic_groups_with_truncated_columns():
    """10 steps, 4 groups: the groups of 3 steps end in the truncated columns 8 and 9. Each
    group's MC estimate against the certified bracket of its own composition."""
    c = dp.BandedToeplitz([1.0, 0.8, 0.6, 0.4], 10)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.CyclicPoisson(0.5, 4))
    for group in (0, 1):
        g = _group_plan(c.dense(), 1.0, 0.5, group, 4).epsilon(1e-3)
        r = estimate_epsilon(m, 1e-3, samples=10000, seed=7, group=group)
        assert r.lo <= g.epsilon and g.lower <= r.hi, (group, tuple(r), g)


@pytest.mark.parametrize("n, coeffs, p", [(10, [1.0, 0.8, 0.6, 0.4], 4),
                                            (13, [1.0, 0.5], 3), (9, [1.0, 0.9, 0.9], 4)])
def test_cyclic_route_lower_end_with_truncated_columns(n, coeffs, p):
    """Where p does not divide n the busiest groups' last columns are cut short by the square
    C: the bracket holds the worst group's own composition (each group is exactly DP-SGD
    at its own column norms)."""
    c = dp.BandedToeplitz(coeffs, n)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.CyclicPoisson(0.5, p))
    groups = [_group_plan(c.dense(), 1.0, 0.5, g, p).epsilon(1e-3) for g in range(p)]
    worst = max(groups, key=lambda g: g.epsilon)
    ours = m.epsilon(1e-3)
    assert ours.lower <= worst.epsilon and worst.lower <= ours.epsilon


def test_proven_upper_bounds_above_the_estimate():
    """The noise split's bound (the route now) and no-amplification's stay above the Monte
    Carlo estimate's lower end, under Poisson and balls in bins."""
    c = dp.BandedToeplitz([1.0, 0.6, 0.3], 12)
    m = dp.MatrixMechanism(c, 2.0, participation=dp.Poisson(0.2))
    assert m.route == "noise-split"
    r = estimate_epsilon(m, 1e-5, samples=10000, seed=8)
    assert dp.Gaussian(1.0, m.mu[1]).epsilon(1e-5).epsilon >= r.lo
    assert m.epsilon(1e-5).epsilon >= r.lo and m.epsilon(1e-5).method == "noise-split"
    mb = dp.MatrixMechanism(c, 2.0, participation=dp.BallsInBins(4))
    rb = estimate_epsilon(mb, 1e-5, samples=10000, seed=8)
    assert dp.Gaussian(1.0, mb.mu[1]).epsilon(1e-5).epsilon >= rb.lo
    assert mb.epsilon(1e-5).epsilon >= rb.lo


def test_same_seed_same_answer_and_labels():
    c = dp.BandedToeplitz([1.0, 0.5], 6)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.Poisson(0.3))
    a = estimate_epsilon(m, 1e-4, samples=2000, seed=11)
    b = estimate_epsilon(m, 1e-4, samples=2000, seed=11)
    other = estimate_epsilon(m, 1e-4, samples=2000, seed=12)
    assert a == b and a.estimate != other.estimate
    assert isinstance(a, MonteCarloEstimate) and "not a guarantee" in a.label
    est, lo, hi = a
    assert lo <= est <= hi and type(est) is float


def test_inputs_are_checked():
    c = dp.BandedToeplitz([1.0, 0.5], 6)
    with pytest.raises(ValueError, match="sampled participation"):
        estimate_epsilon(dp.MatrixMechanism(c, 1.0), 1e-5)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.CyclicPoisson(0.3, 2))
    with pytest.raises(ValueError, match="samples"):
        estimate_epsilon(m, 1e-5, samples=10)
    with pytest.raises(ValueError, match="group"):
        estimate_epsilon(m, 1e-5, group=2)
    with pytest.raises(ValueError, match="epsilon"):
        estimate_delta(m, -1.0)
    with pytest.raises(ValueError, match="mechanism"):
        estimate_epsilon(dp.Gaussian(1.0), 1e-5)    # type: ignore[arg-type]
    dense = dp.MatrixMechanism(np.tril(np.ones((14, 14))), 1.0, participation=dp.Poisson(0.1))
    with pytest.raises(ValueError, match="bandwidth 13"):
        estimate_epsilon(dense, 1e-5, samples=200)
    tiny = dp.MatrixMechanism(c, 0.01, participation=dp.Poisson(0.1))
    with pytest.raises(ValueError, match="noise_multiplier too small"):
        estimate_epsilon(tiny, 1e-5, samples=200)
