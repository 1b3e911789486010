"""An independent review of the row-allocation lower end of balls in bins redrawn every epoch
(:func:`dpamp.amplification.matrix.lower_bins.allocation_witness`): on tiny mechanisms the
witness's lower end, and the mechanism's reported lower end, stay at or below the exact delta
of the fixed-direction pair (Gauss-Hermite quadrature over the whole output, every
participation pattern), and the witness's one-dimensional pair is the mixture claimed."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import ndtr

import dpamp as dp
from dpamp.amplification.matrix.lower import lower_end
from dpamp.amplification.matrix.lower_bins import allocation_witness
from test_matrix_amplified import exact_delta


def _pairs(bins, epochs):
    """The one-hot-per-epoch patterns of balls in bins (each equally likely)."""
    pats = [np.concatenate([np.eye(bins)[s] for s in ss])
            for ss in itertools.product(range(bins), repeat=epochs)]
    return np.array(pats), np.full(len(pats), -epochs * math.log(bins))


def _configs():
    """(coefficients, bins, epochs, z): random C >= 0 (interior zeros included), bands
    dividing the bins (b = bins too, and bins = 1), one or two epochs; n = 4 is slow."""
    rng = np.random.default_rng(2026)
    out = []
    for bins, epochs, b in [(2, 1, 1), (2, 1, 2), (3, 1, 3), (3, 1, 1), (1, 3, 1), (1, 2, 1),
                            (4, 1, 1), (4, 1, 2), (4, 1, 4), (2, 2, 1), (2, 2, 2), (1, 4, 1)]:
        c = rng.uniform(0.2, 1.5, b)
        if b >= 3:
            c[1] = 0.0                                   # an interior zero
        mark = (pytest.mark.slow,) if bins * epochs == 4 else ()
        out.append(pytest.param(tuple(c), bins, epochs, float(rng.uniform(0.5, 1.5)),
                                marks=mark))
    return out


@pytest.mark.parametrize("coeffs,bins,epochs,z", _configs())
def test_witness_and_reported_lower_end_below_exact_delta(coeffs, bins, epochs, z):
    """Gauss-Hermite's error on the kinked integrand (measured against 56 nodes and mpmath:
    up to 1.1e-4 relative at 120-200 nodes for n <= 3; for n = 4 40 nodes within 2e-4 of 64,
    24 nodes 0.7% low; at deltas of 3e-11 60 nodes were 3% low) is the slack."""
    n = bins * epochs
    s = dp.BandedToeplitz(coeffs, n)
    w = allocation_witness(s, z, bins)
    assert w is not None
    m = dp.MatrixMechanism(s, z, participation=dp.BallsInBins(bins))
    nodes, grid = (120, (0.1, 0.5, 1.0)) if n <= 3 else (40, (0.5,))
    assert_below_exact(w, m, bins, epochs, nodes, grid, diagonal=len(coeffs) == 1)


def assert_below_exact(w, m, bins, epochs, nodes, grid, diagonal, tol=1e-3):
    """The witness ``w`` and the balls-in-bins mechanism ``m``'s reported lower end at or below
    the exact delta of the whole pair (Gauss-Hermite at ``nodes``, ``tol`` its slack) at each
    eps of ``grid``; where C is ``diagonal`` every row is kept and the witness is the whole
    pair (up to the PLD's discretisation): a wrong pair (e.g. the shifts in the wrong units)
    fails there."""
    pats, logw = _pairs(bins, epochs)
    for eps in grid:
        truth = exact_delta(m.strategy.dense(), m.noise_multiplier, None, eps, nodes=nodes,
                            pats=pats, logw=logw)
        low = lower_end([w], "delta", eps).value
        rep = m.delta(eps).lower
        assert 0 < low <= truth * (1 + tol), (eps, low, truth)
        assert rep is not None and rep <= truth * (1 + tol), (eps, rep, truth)
        if diagonal and eps <= 0.5:
            assert low >= truth * 0.97, (eps, low, truth)


def _allocated_mixture_delta(mus, ps, eps, t):
    """The worse order's delta(eps) of (1/t) sum_i (P0 in coordinate i, N(0, 1) elsewhere)
    against N(0, I_t), P0 = sum_k p_k N(mu_k, 1), t in {1, 2}: with X(x) = sum_k p_k
    e^{mu_k x - mu_k^2/2} increasing, the last coordinate's condition X(x_t) > (or <)
    t e^{+-eps} - X(x_1) in closed form at its root, x_1 by adaptive quadrature (scipy's
    ``quad``, the kink given as a break point): Gauss-Hermite on this kinked integrand was
    1e-4 low against mpmath."""
    mus, ps = np.asarray(mus, float), np.asarray(ps, float)

    def big_x(x):
        return float(np.sum(ps * np.exp(mus * x - mus ** 2 / 2)))

    def root(level):                       # X(r) = level > X(-inf) = p_0
        return brentq(lambda x: big_x(x) - level, -60.0, 60.0, xtol=1e-15, rtol=1e-15)

    def part(a, sgn):                      # the last coordinate given X(x_1) = a (t - 1 = 1)
        level = t * math.exp(sgn * eps) - a
        p0 = float(ps[mus == 0].sum())
        if sgn > 0:
            if level <= p0:                # every x_t above
                return (a + 1.0) / t - math.exp(eps)
            r = root(level)
            return (a * ndtr(-r) + np.sum(ps * ndtr(mus - r))) / t - math.exp(eps) * ndtr(-r)
        if level <= p0:
            return 0.0
        r = root(level)
        return ndtr(r) - math.exp(eps) * (a * ndtr(r) + np.sum(ps * ndtr(r - mus))) / t

    out = []
    for sgn in (1, -1):
        if t == 1:
            out.append(_one(mus, ps, eps, sgn, root, big_x))
            continue
        kink = root(t * math.exp(sgn * eps)) if t * math.exp(sgn * eps) > float(
            ps[mus == 0].sum()) else 0.0
        v, _ = quad(lambda x: part(big_x(x), sgn) * math.exp(-x * x / 2) / math.sqrt(2 * math.pi),
                    -40, 40, points=[kink], epsabs=1e-15, epsrel=1e-12, limit=400)
        out.append(v)
    return max(out)


def _one(mus, ps, eps, sgn, root, big_x):
    """t = 1: the mixture's own delta at the root of X = e^{+-eps}."""
    if sgn > 0:
        r = root(math.exp(eps))
        return float(np.sum(ps * ndtr(mus - r)) - math.exp(eps) * ndtr(-r))
    if math.exp(-eps) <= float(ps[mus == 0].sum()):
        return 0.0
    r = root(math.exp(-eps))
    return float(ndtr(r) - math.exp(eps) * np.sum(ps * ndtr(r - mus)))


@pytest.mark.parametrize("coeffs,bins,z", [((1.0, 0.6), 2, 0.9), ((0.8, 0.0, 1.1), 3, 1.2),
                                           ((1.0, 0.4), 4, 1.0), ((1.0,), 2, 0.8)])
def test_witness_pair_is_the_claimed_allocated_mixture(coeffs, bins, z):
    """One epoch: the witness's lower end is at most, and within discretisation of, our own
    quadrature of the claimed pair (random allocation 1 of bins / b of (1/b) sum N(c_k, z^2)
    against N(0, z^2)), in the worse of both orders."""
    b = len(coeffs)
    w = allocation_witness(dp.BandedToeplitz(coeffs, bins), z, bins)
    mus, ps = np.array(coeffs) / z, np.full(b, 1.0 / b)
    for eps in (0.2, 1.0):
        want = _allocated_mixture_delta(mus, ps, eps, bins // b)
        got = lower_end([w], "delta", eps).value
        assert got <= want * (1 + 1e-9), (eps, got, want)
        assert got >= want * 0.99, (eps, got, want)


def test_tiny_coefficients_neither_warn_nor_lose_the_witness():
    """A subnormal coefficient (its mu = c / z in the subnormals) is moved to the zero shift
    (stochastically smaller: a dominated pair) instead of reaching the PLD, where it overflowed
    a division, warned, and lost the witness."""
    s = dp.BandedToeplitz((1.0, 5e-324), 4)
    w = allocation_witness(s, 0.5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        le = lower_end([w], "delta", 1.0)
        m = dp.MatrixMechanism(s, 0.5, participation=dp.BallsInBins(2))
        rep = m.delta(1.0).lower
    # two epochs of the mixture (1/2)(N(0, z^2) + N(1, z^2)) itself (one block per epoch)
    ref = (dp.MixtureOfGaussians(0.5, (0.0, 1.0), (0.5, 0.5)) * 2).delta(1.0).lower
    assert le is not None and le.value == pytest.approx(ref, rel=1e-9)
    assert rep is not None and rep >= le.value * (1 - 1e-12)


def test_the_last_partial_epoch_is_left_out():
    """n = 5, bins 2: the kept rows (at most row 3) read steps 0-3 only, so the witness is
    two epochs of that of n = 4, whatever the partial epoch draws."""
    for coeffs in [(1.0,), (1.0, 0.4)]:
        w5 = allocation_witness(dp.BandedToeplitz(coeffs, 5), 0.9, 2)
        w4 = allocation_witness(dp.BandedToeplitz(coeffs, 4), 0.9, 2)
        assert w5 is not None and w5.parts == w4.parts and w5.parts[0][1] == 2
