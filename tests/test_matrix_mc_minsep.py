"""The Monte Carlo check under b-min-separation sampling (dp.MinSepSampling): the pair
P = E_B N(C B, s^2 I) against Q = N(0, s^2 I), B the min-separation chain's pattern. Its loss
recursion against brute force over every pattern (each pattern's probability from the chain's
definition, cold and warm start), its sampler against those probabilities, the estimates
against the exact delta of the pair (pattern enumeration and quadrature), against the Gaussian
mechanism where the pattern is certain (rate 1), and b = 1 against Poisson sampling."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import logsumexp
from test_matrix_amplified import exact_delta

import dpamp as dp
from dpamp.accounting import matrix_mc_loss as mc_loss
from dpamp.accounting.matrix_mc_loss import log_ratio_minsep, log_ratio_rates
from dpamp.accounting.montecarlo_matrix import (estimate_delta, estimate_epsilon,
                                                minsep_patterns)


def chain_probability(b, p: float, sep: int, warm: bool) -> float:
    """The probability of pattern b under the chain, step by step from its definition: the
    record is eligible at step t when its last participation is sep or more steps back (or
    never); eligible, it is taken with probability p; ineligible, never. Warm: the
    participation before the run at -d (d = 1 .. sep - 1, probability p pi_E each) or none
    (pi_E = 1 / (1 + (sep - 1) p))."""
    pi_e = 1.0 / (1.0 + (sep - 1) * p) if warm else 1.0
    starts = [(None, pi_e)] + ([(-d, p * pi_e) for d in range(1, sep)] if warm else [])
    total = 0.0
    for last, weight in starts:
        for t, bit in enumerate(b):
            if last is None or t - last >= sep:
                weight *= p if bit else 1.0 - p
                last = t if bit else last
            elif bit:
                weight = 0.0
        total += weight
    return total


def chain_law(n: int, p: float, sep: int, warm: bool) -> list[tuple[np.ndarray, float]]:
    """Every pattern of positive probability with its probability."""
    out = []
    for bits in itertools.product([0.0, 1.0], repeat=n):
        pr = chain_probability(bits, p, sep, warm)
        if pr > 0:
            out.append((np.array(bits), pr))
    return out


def brute(h, j, law):
    """log sum_B P(B) exp(B.h - sum_{u<t} B_u B_t J[u, t]) over the law's patterns."""
    upper = np.triu(j, 1)
    return np.array([logsumexp([math.log(pr) + b @ hi - b @ upper @ b for b, pr in law])
                     for hi in h])


def banded(n: int, bands: int, rng) -> np.ndarray:
    c = np.zeros((n, n))
    for t in range(n):
        for k in range(min(bands, n - t)):
            c[t + k, t] = rng.normal()
    return c


@pytest.mark.parametrize("n, sep, kind", [
    (8, 3, 2),          # bands < separation: no interaction
    (8, 2, 4),          # bands > separation
    (9, 4, 6),
    (7, 3, "dense"),    # a dense lower-triangular C: the full bandwidth
    (10, 5, 3),
    (6, 7, 2),          # separation beyond n
])
@pytest.mark.parametrize("warm", [False, True])
def test_minsep_recursion_is_exact(n, sep, kind, warm):
    rng = np.random.default_rng(n * 10 + sep)
    c = np.tril(rng.normal(size=(n, n))) if kind == "dense" else banded(n, kind, rng)
    j = 0.6 * c.T @ c
    h = 2.0 * rng.normal(size=(6, n))
    law = chain_law(n, 0.35, sep, warm)
    assert sum(pr for _, pr in law) == pytest.approx(1.0, abs=1e-12)
    want = brute(h, j, law)
    np.testing.assert_allclose(log_ratio_minsep(h, j, 0.35, sep, warm), want, rtol=1e-12,
                               atol=1e-12)


def test_separation_one_is_independent_rates():
    rng = np.random.default_rng(4)
    c = banded(9, 4, rng)
    j = 0.8 * c.T @ c
    h = 3.0 * rng.normal(size=(7, 9))
    for warm in (False, True):
        np.testing.assert_allclose(log_ratio_minsep(h, j, 0.2, 1, warm),
                                   log_ratio_rates(h, j, np.full(9, 0.2)), rtol=1e-12)


def test_extremes_stay_finite():
    """Rate 1 (the pattern certain under a cold start: 1 - rate = 0 factors), huge and
    very negative h (the per-step rescaling keeps the largest state at 1)."""
    n, sep = 7, 3
    j = np.diag(np.ones(n)) + 0.3 * (np.eye(n, k=1) + np.eye(n, k=-1))
    h = np.array([np.full(n, 900.0), np.full(n, -900.0), np.linspace(-800, 800, n)])
    for warm in (False, True):
        law = chain_law(n, 1.0, sep, warm)
        np.testing.assert_allclose(log_ratio_minsep(h, j, 1.0, sep, warm), brute(h, j, law),
                                   rtol=1e-12)
    law = chain_law(n, 1e-6, sep, True)
    np.testing.assert_allclose(log_ratio_minsep(h, j, 1e-6, sep, True), brute(h, j, law),
                               rtol=1e-12, atol=1e-15)


def test_linear_and_log_space_agree():
    """Moderate h: the linear-scale recursion flags no sample, and the log-space one (which
    the flagged samples take) gives the same values."""
    rng = np.random.default_rng(9)
    c = banded(30, 5, rng)
    j = 0.5 * c.T @ c
    h = 2.0 * rng.normal(size=(50, 30))
    for sep, warm in [(1, False), (3, True), (7, True)]:
        ch = mc_loss._minsep_chain(j, 30, 0.2, sep, warm)
        lin, flagged = mc_loss._minsep_linear(h, ch)
        assert not flagged.any()
        np.testing.assert_allclose(mc_loss._minsep_log(h, ch), lin, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.integers(1, 7), st.booleans(),
       st.floats(0.01, 1.0), st.integers(0, 2 ** 31))
def test_minsep_recursion_property(n, sep, bands, warm, p, seed):
    rng = np.random.default_rng(seed)
    c = banded(n, bands, rng)
    j = rng.uniform(0.1, 2.0) * c.T @ c
    h = 3.0 * rng.normal(size=(3, n))
    want = brute(h, j, chain_law(n, p, sep, warm))
    np.testing.assert_allclose(log_ratio_minsep(h, j, p, sep, warm), want, rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("sep, warm", [(3, True), (3, False), (2, True)])
def test_sampler_draws_the_chain(sep, warm):
    """Each pattern's frequency over 2 10^5 draws within 5 standard errors of its
    probability; participations are rate times the eligible steps on average."""
    n, p, count = 5, 0.3, 200_000
    b, chances = minsep_patterns(p, sep, warm, count, n, np.random.default_rng(1))
    codes = b @ (1 << np.arange(n))
    freq = np.bincount(codes.astype(int), minlength=1 << n) / count
    for code in range(1 << n):
        bits = [(code >> t) & 1 for t in range(n)]
        pr = chain_probability(bits, p, sep, warm)
        assert abs(freq[code] - pr) <= 5 * math.sqrt(pr * (1 - pr) / count) + 1e-12, code
    ones = b.sum(axis=1)
    assert abs(ones.mean() - p * chances.mean()) < 5 * ones.std() / math.sqrt(count)
    if not warm:         # cold: the eligible steps are readable from the pattern
        last = np.full(count, -sep)
        want = np.zeros(count)
        for t in range(n):
            want += t - last >= sep
            last = np.where(b[:, t] == 1, t, last)
        np.testing.assert_array_equal(chances, want)


@pytest.mark.parametrize("c, p, sep, warm, sigma, eps", [
    (np.array([[1.0, 0, 0], [0.6, 1.0, 0], [0.3, 0.6, 1.0]]), 0.4, 2, True, 1.0, 0.5),
    (np.array([[1.0, 0, 0], [0.8, 1.0, 0], [0.5, 0.8, 1.0]]), 0.5, 2, False, 0.9, 0.8),
    (np.array([[1.0, 0, 0], [0.6, 1.0, 0], [0.0, 0.6, 1.0]]), 0.1, 3, True, 0.7, 1.5),
])
def test_delta_against_the_exact_pair(c, p, sep, warm, sigma, eps):
    """The exact delta of the pair: every pattern of the chain (probabilities from its
    definition) in the Gaussian mixture, integrated by quadrature (test_matrix_amplified's
    oracle: C >= 0, the last coordinate in closed form)."""
    law = chain_law(3, p, sep, warm)
    pats = np.array([b for b, _ in law])
    logw = np.log([pr for _, pr in law])
    truth = exact_delta(c, sigma, p, eps, pats=pats, logw=logw)
    m = dp.MatrixMechanism(c, sigma, participation=dp.MinSepSampling(p, sep, warm))
    r = estimate_delta(m, eps, samples=20000, seed=3)
    assert r.lo <= truth <= r.hi, (tuple(r), truth)
    assert r.hi - r.lo < 0.1 * truth


def test_epsilon_against_the_exact_pair_four_steps():
    """Four steps, three bands, separation 2, warm: eps at delta 1e-3 bracketed, the exact
    delta (quadrature, 24 nodes a coordinate) at the interval's ends on the right sides."""
    c = dp.BandedToeplitz([1.0, 0.7, 0.4], 4)
    sigma, p = 0.8, 0.3
    law = chain_law(4, p, 2, True)
    pats = np.array([b for b, _ in law])
    logw = np.log([pr for _, pr in law])
    m = dp.MatrixMechanism(c, sigma, participation=dp.MinSepSampling(p, 2, True))
    r = estimate_epsilon(m, 1e-3, samples=20000, seed=4)

    def exact(e):
        return exact_delta(c.dense(), sigma, p, e, nodes=24, pats=pats, logw=logw)
    assert exact(r.lo) >= 1e-3 >= exact(r.hi), (tuple(r), exact(r.lo), exact(r.hi))


def test_rate_one_cold_is_the_gaussian_mechanism():
    """Rate 1, cold start: the record is in steps 0, b, 2b, ... for sure; the pair is the
    Gaussian mechanism of sensitivity |C B|."""
    c = dp.BandedToeplitz([1.0, 0.5, 0.25], 8)
    b = (np.arange(8) % 3 == 0).astype(float)
    sens = float(np.linalg.norm(c.dense() @ b))
    m = dp.MatrixMechanism(c, 1.5, participation=dp.MinSepSampling(1.0, 3))
    r = estimate_epsilon(m, 1e-5, samples=4000, seed=5)
    g = dp.Gaussian(1.5, sens).epsilon(1e-5)
    assert r.lo <= g.epsilon and g.lower <= r.hi, (tuple(r), g)


def test_separation_one_is_poisson():
    """b = 1 draws Poisson's patterns with the same uniforms, and the two recursions agree to
    rounding: the same estimate with the same seed."""
    c = dp.BandedToeplitz([1.0, 0.6, 0.3], 10)
    pois = estimate_epsilon(dp.MatrixMechanism(c, 1.0, participation=dp.Poisson(0.2)), 1e-5,
                            samples=2000, seed=6)
    for warm in (False, True):
        ms = estimate_epsilon(dp.MatrixMechanism(
            c, 1.0, participation=dp.MinSepSampling(0.2, 1, warm)), 1e-5, samples=2000, seed=6)
        for a, b in zip(ms, pois):
            assert a == pytest.approx(b, rel=1e-9)


def test_separation_lowers_epsilon():
    """A longer separation can only thin the participations here (C >= 0): the estimates
    decrease with b (the intervals ordered), and the proven upper bound is above them."""
    c = dp.BandedToeplitz([1.0, 0.6, 0.3], 24)
    rs = [estimate_epsilon(dp.MatrixMechanism(c, 1.0, participation=dp.MinSepSampling(
        0.3, sep, True)), 1e-5, samples=4000, seed=7) for sep in (1, 3, 6)]
    assert rs[0].lo > rs[1].hi and rs[1].lo > rs[2].hi, [tuple(r) for r in rs]
    for sep, r in zip((1, 3, 6), rs):
        m = dp.MatrixMechanism(c, 1.0, participation=dp.MinSepSampling(0.3, sep, True))
        assert m.epsilon(1e-5).epsilon >= r.lo and r.trusted


def test_inputs_are_checked():
    c = dp.BandedToeplitz([1.0, 0.5], 6)
    m = dp.MatrixMechanism(c, 1.0, participation=dp.MinSepSampling(0.3, 2))
    with pytest.raises(ValueError, match="group"):
        estimate_epsilon(m, 1e-5, group=1)
    h, j = np.zeros((2, 6)), np.eye(6)
    with pytest.raises(ValueError, match="rate"):
        log_ratio_minsep(h, j, 0.0, 2)
    with pytest.raises(ValueError, match="separation"):
        log_ratio_minsep(h, j, 0.5, 0)
    dense = np.ones((20, 20))
    with pytest.raises(ValueError, match="2\\^12"):
        log_ratio_minsep(np.zeros((2, 20)), dense, 0.5, 1)
    log_ratio_minsep(np.zeros((2, 20)), dense, 0.5, 6)     # few enough patterns b apart
