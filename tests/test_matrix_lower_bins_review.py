"""An independent review of the balls-in-bins lower ends of the matrix mechanism: the
matched-filter witnesses (dpamp.amplification.matrix.lower_bins) and the attained noise split
of a diagonal C (``MatrixMechanism.split_attained``), against the exact delta(eps) of the
actual pair of neighbours (a record whose clipped gradient is one unit vector, signed as C;
the other records' gradients 0) computed here by quadrature (n <= 3), against exact rational
projections, and over the structure the witnesses rely on (which rows each epoch's steps
read, the partial last epoch, bins not dividing n, computed products near the subnormals)."""
from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_ndtr

import dpamp as dp
from dpamp.amplification.matrix.lower import lower_end
from dpamp.amplification.matrix.lower_bins import epoch_witness, fixed_bins_witness
from dpamp.mechanisms.matrix_strategies import DenseStrategy


# --- the exact delta of the actual pair, independently --------------------------------------

def _lse(a: np.ndarray) -> np.ndarray:
    top = a.max(axis=1)
    return np.log(np.exp(a - top[:, None]).sum(axis=1)) + top


def pair_delta(means, logw, eps: float, nodes: int = 100) -> float:
    """max over both orders of H_{e^eps} between P = sum_i w_i N(m_i, I) and Q = N(0, I), for
    non-negative means m_i (rows of ``means``, in units of the noise) and log-weights ``logw``.

    With L = dP/dQ and S = {L > e^eps}, T = {L < e^-eps}: H(P || Q) = sum_i w_i P_i(S) -
    e^eps Q(S) and H(Q || P) = Q(T) - e^eps sum_i w_i P_i(T), P_i = N(m_i, I). The noise is
    rotated so that the last axis is (1, ..., 1) / sqrt(n): along it every non-zero pattern has
    slope <m_i, 1> / sqrt(n) > 0, so the loss is increasing in the last coordinate and its
    level sets are {y_last > t(y_outer)} with t analytic in the outer coordinates (a pattern
    flat along the last axis would put a kink into the outer integrand). The last coordinate
    in closed form (Gaussian CDFs at the root, found by Newton's method from the right: the
    loss is a convex log-sum-exp of lines, each below it), the outer ones by Gauss-Hermite
    after shifting each P_i's nodes by its own mean (bounded, smooth integrands). Checked
    against closed forms, adaptive quadrature and mpmath (tests below); the nodes do not reach
    the far tails, so it is used for deltas above 1e-10 only."""
    means = np.asarray(means, float)
    logw = np.asarray(logw, float)
    assert (means >= 0).all()
    P, n = means.shape
    if n > 1:
        basis, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, :n - 1]]))
        basis = basis[:, list(range(1, n)) + [0]]
        basis[:, -1] *= np.sign(basis[0, -1])
        means = means @ basis
    b = means[:, -1]
    pos = b > 1e-12 * max(1.0, float(np.abs(means).max()))
    means[~pos] = 0.0                      # (a zero pattern, rotated: rounding noise only)
    b = np.where(pos, b, 0.0)
    half = 0.5 * np.sum(means ** 2, axis=1)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    if n > 1:
        outer = np.stack([g.ravel() for g in np.meshgrid(*([x] * (n - 1)), indexing="ij")], 1)
        ow = np.prod(np.stack([g.ravel() for g in np.meshgrid(*([w] * (n - 1)),
                                                                indexing="ij")], 1), axis=1)
    else:
        outer, ow = np.zeros((1, 0)), np.ones(1)

    def root(yo, level):
        a = logw[None] + yo @ means[:, :-1].T - half[None]
        lim = _lse(a[:, ~pos]) if (~pos).any() else np.full(len(a), -np.inf)
        if not pos.any():
            return np.where(lim > level, -np.inf, np.inf)
        y = np.min((level - a[:, pos]) / b[pos], axis=1)
        act = np.flatnonzero(lim < level)
        for _ in range(400):
            e = a[act] + y[act, None] * b[None]
            top = e.max(axis=1)
            ex = np.exp(e - top[:, None])
            s = ex.sum(axis=1)
            step = (np.log(s) + top - level) / ((ex @ b) / s)
            y[act] -= step
            go = (np.abs(step) > 1e-15 * (1 + np.abs(y[act]))) & (y[act] > -60)
            act = act[go]
            if not act.size:
                break
        return np.where(lim < level, y, -np.inf)

    out = []
    for sgn in (1, -1):
        def mass(shift, bb, sgn=sgn):
            t = root(outer + shift[None], sgn * eps)
            return float(np.sum(ow * np.exp(log_ndtr(-(t - bb)) if sgn == 1 else
                                            log_ndtr(t - bb))))
        q = mass(np.zeros(n - 1), 0.0)
        p = math.fsum(math.exp(lw) * mass(means[i, :-1], b[i]) for i, lw in enumerate(logw))
        out.append(p - math.exp(eps) * q if sgn == 1 else q - math.exp(eps) * p)
    return max(max(out), 0.0)


def participation_patterns(n: int, fixed: bool, bins: int):
    """(patterns x, log-probabilities) of one record: fixed bins, bin j ~ U{0..bins-1} once,
    x = 1 on steps j, j + bins, ... (an empty bin where j >= n); balls in bins redrawn every
    epoch, one step drawn uniformly from each epoch of ``bins`` steps, the shorter last one
    from its own steps (dpamp.mechanisms.participation, matrix_split._bins_plan)."""
    if fixed:
        pats = [[1.0 if s % bins == j else 0.0 for s in range(n)] for j in range(bins)]
        return np.array(pats), np.full(bins, -math.log(bins))
    starts = list(range(0, n, bins))
    lens = [min(bins, n - s) for s in starts]
    pats, lw = [], []
    for choice in itertools.product(*[range(k) for k in lens]):
        x = np.zeros(n)
        for s, k in zip(starts, choice):
            x[s + k] = 1.0
        pats.append(x)
        lw.append(-sum(math.log(k) for k in lens))
    return np.array(pats), np.array(lw)


def mechanism_delta(c, z: float, fixed: bool, bins: int, eps: float) -> float:
    """delta(eps) of the actual pair: the record's gradient sign(C[t, s]) u at step s (|C| for
    a diagonal C; C itself where C >= 0), the output projected on u (a sufficient statistic)."""
    c = np.abs(np.asarray(c, float)) / z
    pats, lw = participation_patterns(c.shape[1], fixed, bins)
    return pair_delta(pats @ c.T, lw, eps, 100 if c.shape[0] < 3 else 80)


# --- the helper itself ------------------------------------------------------------------------

@pytest.mark.parametrize("mu, eps", [(0.5, 0.1), (1.0, 1.0), (2.0, 0.3)])
def test_pair_delta_is_the_gaussian(mu, eps):
    """One pattern: the Gaussian N(|m|, 1), in closed form (Balle & Wang 2018), for m spread
    over one, two or three coordinates."""
    from scipy.stats import norm
    want = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
    for n in (1, 2, 3):
        got = pair_delta([[mu / math.sqrt(n)] * n], [0.0], eps, 40)
        assert got == pytest.approx(want, rel=1e-10)


def test_pair_delta_against_adaptive_quadrature():
    """Random allocation of two steps ((1/2) sum_s N(mu e_s, I) vs N(0, I)) in the original
    coordinates: y_1 in closed form given y_0 (L = (a_0 + e^{mu y_1 - mu^2/2}) / 2, a_0 =
    e^{mu y_0 - mu^2/2}, increasing in y_1), y_0 by scipy's adaptive quad."""
    from scipy import integrate
    from scipy.stats import norm
    mu, eps = 0.78, 0.3
    got = pair_delta([[mu, 0.0], [0.0, mu]], np.full(2, -math.log(2)), eps)
    e = math.exp(eps)

    def root(a0, level):             # L(y_1) = level at y_1 = (log(2 level - a0) + mu^2/2)/mu
        return (math.log(2 * level - a0) + mu * mu / 2) / mu if 2 * level > a0 else -math.inf

    def rem(y0):
        a0 = math.exp(mu * y0 - mu * mu / 2)
        t = root(a0, e)
        return (0.5 * a0 * norm.sf(t) + 0.5 * norm.sf(t - mu) - e * norm.sf(t)) * norm.pdf(y0)

    def add(y0):
        a0 = math.exp(mu * y0 - mu * mu / 2)
        t = root(a0, 1 / e)
        if t == -math.inf:
            return 0.0
        return (norm.cdf(t) - e * (0.5 * a0 * norm.cdf(t) + 0.5 * norm.cdf(t - mu))) * \
            norm.pdf(y0)
    want = max(integrate.quad(f, -15, 15, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
               for f in (rem, add))
    assert got == pytest.approx(want, rel=1e-9)


def test_pair_delta_against_mpmath():
    """Poisson sampling of a 2-step C >= 0: the project's mpmath oracle (mp.quad)."""
    from test_matrix_amplified_lower import exact_delta_mp
    c, q = np.array([[1.0, 0.0], [0.6, 0.9]]), 0.3
    pats = np.array(list(itertools.product((0, 1), repeat=2)), float)
    lw = pats.sum(1) * math.log(q) + (2 - pats.sum(1)) * math.log1p(-q)
    for eps in (0.3, 2.0):
        got = pair_delta(pats @ (c / 0.7).T, lw, eps)
        assert got == pytest.approx(exact_delta_mp(c, 0.7, q, eps), rel=1e-9)


# --- the reported lower ends against the exact pair -------------------------------------------

def _strategy(kind: str, n: int, vals: list[float], d: float, signs: list[bool]):
    """(strategy, C) of a kind: dense C >= 0 lower triangular (some entries 0), banded
    Toeplitz, diagonal with one |C[s, s]| = d (signed, dense or Toeplitz)."""
    if kind == "dense":
        c = np.zeros((n, n))
        c[np.tril_indices(n)] = vals[:n * (n + 1) // 2]
        c[np.diag_indices(n)] += 0.2
        return DenseStrategy(c), c
    if kind == "toeplitz":
        s = dp.BandedToeplitz(tuple([vals[0] + 0.2] + vals[1:n]), n)
        return s, s.dense()
    if kind == "diag-toeplitz":
        s = dp.BandedToeplitz((d,), n)
        return s, s.dense()
    c = np.diag([-d if neg else d for neg in signs[:n]])
    return DenseStrategy(c), c


def _check(kind, n, vals, d, signs, z, fixed, bins, eps):
    s, c = _strategy(kind, n, vals, d, signs)
    m = dp.MatrixMechanism(s, z, participation=(dp.FixedBins if fixed else dp.BallsInBins)(bins))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = m.delta(eps)
    truth = mechanism_delta(c, z, fixed, bins, eps)
    if truth < 1e-10:
        # (the Gauss-Hermite nodes do not reach the far tails a delta this small lives in:
        # at delta ~ 1e-171 the helper gave 2e-175, below the exact delta of a 1-D projection)
        return g, m
    assert g.delta >= truth * (1 - 1e-9)
    if g.lower is not None:
        assert g.lower <= truth * (1 + 1e-8), (g.lower, truth, g.note)
    if truth > 1e-6 and truth < 0.9:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            e = m.epsilon(truth)
        if e.lower is not None and e.lower > 0:
            # eps_lo <= eps(truth) exactly when delta(eps_lo) >= truth (delta decreasing)
            assert mechanism_delta(c, z, fixed, bins, e.lower) >= truth * (1 - 1e-8)
    return g, m


_kinds = st.sampled_from(["dense", "toeplitz", "diag-toeplitz", "diag-signed"])
#: the drawn configurations (the default run takes a few, the slow one many)
_cases = given(kind=_kinds, n=st.integers(1, 3),
               vals=st.lists(st.floats(0.0, 1.5), min_size=6, max_size=6),
               d=st.floats(0.1, 2.0), signs=st.lists(st.booleans(), min_size=3, max_size=3),
               z=st.floats(0.3, 3.0), fixed=st.booleans(), bins=st.integers(1, 4),
               eps=st.sampled_from([0.05, 0.3, 1.0, 2.0]))


@settings(max_examples=5, deadline=None)
@_cases
def test_lower_ends_below_the_exact_pair(kind, n, vals, d, signs, z, fixed, bins, eps):
    _check(kind, n, vals, d, signs, z, fixed, bins, eps)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@_cases
def test_lower_ends_below_the_exact_pair_many(kind, n, vals, d, signs, z, fixed, bins, eps):
    _check(kind, n, vals, d, signs, z, fixed, bins, eps)


@pytest.mark.parametrize("fixed, bins", [(False, 1), (True, 3), (True, 1), (False, 3)])
def test_attained_split_is_reported_and_tight(fixed, bins):
    """A diagonal C of one |d| (signs mixed), n = 3: the split's lower end is reported (its
    note says so) and lies within 1e-2 below the exact pair (random allocation of the
    Gaussian). (bins not dividing n: not attained, a shorter last epoch could be read
    otherwise.)"""
    c = np.diag([0.9, -0.9, 0.9])
    g, m = _check("diag-signed", 3, [0.0] * 6, 0.9, [False, True, False], 0.8, fixed, bins,
                  0.5)
    truth = mechanism_delta(c, 0.8, fixed, bins, 0.5)
    assert m.split_attained == 0.9 and "attained" in g.note
    assert truth * (1 - 1e-2) <= g.lower <= truth


def test_attained_split_epoch_lengths_and_mu():
    """The lower plan's steps against the mechanism's exact structure: balls in bins of 3
    over 6 steps is epochs of 3, 3 steps, each random allocation of N(d / z); fixed bins
    of 3 over 6 steps is one allocation of 3 bins of N(d sqrt(2) / z). Each mu at most the
    exact value (rational arithmetic; the square root bounded by its square) and within a
    few ulps of it. (Over 7 steps the last epoch is shorter: not attained.)"""
    from dpamp.core.sampling import RandomAllocation
    d, z = 0.7, 1.3
    assert dp.MatrixMechanism(np.eye(7) * d, z, dp.BallsInBins(3)).split_attained is None
    m = dp.MatrixMechanism(np.eye(6) * d, z, participation=dp.BallsInBins(3))
    lows = m.split_steps(upper=False)
    got = sorted((st_.scheme.t, cnt) for st_, cnt in lows)
    assert got == [(3, 2)]
    for st_, _ in lows:
        assert isinstance(st_.scheme, RandomAllocation) and st_.scheme.k == 1
        mu = Fraction(st_.base.sensitivity) / Fraction(st_.base.sigma)
        exact = Fraction(d) / Fraction(z)
        assert mu <= exact and float(exact - mu) <= 8 * 2.0 ** -52 * float(exact)
    m = dp.MatrixMechanism(np.eye(6) * d, z, participation=dp.FixedBins(3))
    ((st_, cnt),) = m.split_steps(upper=False)
    assert (st_.scheme.t, cnt) == (3, 1)
    mu = Fraction(st_.base.sensitivity) / Fraction(st_.base.sigma)
    exact_sq = 2 * (Fraction(d) / Fraction(z)) ** 2
    assert mu * mu <= exact_sq and float(exact_sq - mu * mu) <= 16 * 2.0 ** -52 * float(exact_sq)


def test_no_attained_split_where_the_split_is_not_the_pair():
    """Fixed bins not dividing n (bins of 2 and 1 steps), unequal |C[s, s]|, a non-diagonal
    C: the split only bounds from above."""
    assert dp.MatrixMechanism(np.eye(3), 1.0, participation=dp.FixedBins(2)).split_attained \
        is None
    assert dp.MatrixMechanism(np.diag([1.0, 0.5]), 1.0,
                              participation=dp.BallsInBins(2)).split_attained is None
    assert dp.MatrixMechanism(np.eye(2) + np.eye(2, k=-1) * 0.1, 1.0,
                              participation=dp.BallsInBins(2)).split_attained is None


@pytest.mark.parametrize("fixed", [True, False])
def test_negative_entries_give_no_lower_end(fixed):
    """A C with entries of both signs off the diagonal: no witness, no attained split."""
    c = np.eye(3) - 0.4 * np.eye(3, k=-1)
    m = dp.MatrixMechanism(c, 1.0, participation=(dp.FixedBins if fixed else dp.BallsInBins)(3))
    assert m.delta(0.5).lower is None and m.epsilon(1e-3).lower is None


# --- the structure the epoch witness relies on ------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), bins=st.integers(1, 5), bands=st.integers(1, 4),
       seed=st.integers(0, 2 ** 16))
def test_epoch_statistics_read_only_their_own_epoch(n, bins, bands, seed):
    """For a banded dense C >= 0 (random entries, zeros included), every balls-in-bins
    participation pattern (partial last epoch included): the mean of each epoch's statistic
    <w*, y_{R_e}> / |w*| is the witness's shift of that epoch's drawn step (exact rational
    arithmetic), so it depends on epoch e's draw alone, and each shift of the witness's
    mixture is at most the exact one of the same step."""
    rng = np.random.default_rng(seed)
    c = np.tril(rng.choice([0.0, 0.3, 0.7, 1.0], (n, n)))
    c = np.where(np.subtract.outer(np.arange(n), np.arange(n)) < bands, c, 0.0)
    c[np.diag_indices(n)] = 1.0
    s = DenseStrategy(c)
    w = epoch_witness(s, 1.0, bins)
    b = s.bands
    if bins < b or n // bins == 0:
        assert w is None
        return
    assert w is not None
    cf = [[Fraction(float(v)) for v in row] for row in c]
    built = sorted(x for part, k in w.parts for x in part.sensitivities for _ in range(k)
                   if x > 0)
    exact_all = []
    for e in range(n // bins):
        rows = range(e * bins + b - 1, (e + 1) * bins)
        steps = range(e * bins, (e + 1) * bins)
        for t in rows:                       # read by epoch e's steps only
            assert all(cf[t][j] == 0 for j in range(n) if j not in steps)
        cols = {j: [cf[t][j] for t in rows] for j in steps}
        top = max(steps, key=lambda j: (sum(v * v for v in cols[j]), -j))
        nt = math.sqrt(sum(v * v for v in cols[top]))
        exact_all += [float(sum(a * v for a, v in zip(cols[top], cols[j]))) / nt
                      for j in steps]
    pos = sorted(v for v in exact_all if v > 0)
    # the witness's positive shifts, rank by rank below the exact ones of the same epoch set
    assert len(built) <= len(pos)
    for x, y in zip(built[::-1], pos[::-1]):
        assert x <= y * (1 + 1e-12)


# --- rounding near the subnormals -------------------------------------------------------------

_C0 = np.array([[0.1781165825916507, 0.0, 0.0],
                [0.15070893259081064, 0.9509689591470379, 0.0],
                [0.4333914219121997, 0.2731376754070225, 0.8804609535870982]])
_Z0 = 0.5005559041982077


@pytest.mark.parametrize("scale", [1.0, 2.0 ** -530, 2.0 ** -538, 2.0 ** -545, 2.0 ** 500])
def test_witness_shifts_below_the_exact_projections_at_any_scale(scale):
    """C and z scaled together leave the mechanism unchanged (the pair depends on C / z), so
    each shift / sigma of the witness must stay below the exact projection mean of the
    unscaled C, which the products of a C near 2^-538 (squares in the subnormals, where a
    relative error bound fails) must not break. Fixed bins of 1 (the Gaussian at |C 1| / z,
    exactly the pair) and of 2, balls in bins of 3."""
    cs, zs = _C0 * scale, _Z0 * scale
    cf = [[Fraction(float(v)) for v in row] for row in _C0]
    for bins in (1, 2):
        w = fixed_bins_witness(DenseStrategy(cs), zs, bins)
        means = [[sum(cf[t][s] for s in range(3) if s % bins == j) for t in range(3)]
                 for j in range(bins)]
        top = max(range(bins), key=lambda j: sum(v * v for v in means[j]))
        nt = math.sqrt(sum(v * v for v in means[top]))
        exact = sorted(float(sum(a * v for a, v in zip(means[top], m))) / nt / _Z0
                       for m in means)
        if w is None:
            continue
        mus = sorted(x / w.parts[0][0].sigma for x in w.parts[0][0].sensitivities if x > 0)
        for x, y in zip(mus[::-1], exact[::-1]):
            assert x <= y * (1 + 1e-12)
    w = epoch_witness(DenseStrategy(cs), zs, 3)
    if w is not None:
        row = [cf[2][s] for s in range(3)]
        exact = sorted(float(v) / _Z0 for v in row)
        mus = sorted(x / w.parts[0][0].sigma for x in w.parts[0][0].sensitivities if x > 0)
        for x, y in zip(mus[::-1], exact[::-1]):
            assert x <= y * (1 + 1e-12)


@pytest.mark.parametrize("scale", [2.0 ** -538, 2.0 ** -545])
def test_witness_lower_end_below_the_truth_at_any_scale(scale):
    """Fixed bins of 1 on the scaled C: the witness's lower end below the exact Gaussian of
    the unscaled C (the witness is tight there, so an overestimated shift shows)."""
    w = fixed_bins_witness(DenseStrategy(_C0 * scale), _Z0 * scale, 1)
    truth = mechanism_delta(_C0, _Z0, True, 1, 1.0)
    if w is not None:
        assert lower_end([w], "delta", 1.0).value <= truth


# --- one projection in closed form, deep in the tails -----------------------------------------

def _mixture_delta_mp(mus, ps, eps) -> float:
    """max over both orders of H_{e^eps} between sum_i p_i N(mu_i, 1) and N(0, 1), mu_i >= 0
    (mpmath, 60 digits): the loss is increasing, so each region is a half-line at its root."""
    import mpmath as mp
    mp.mp.dps = 60
    mus, ps = [mp.mpf(m) for m in mus], [mp.mpf(p) for p in ps]
    e = mp.e ** mp.mpf(eps)

    def lik(y):
        return mp.fsum(p * mp.e ** (m * y - m * m / 2) for m, p in zip(mus, ps))

    def root(level):
        lo, hi = mp.mpf(-200), mp.mpf(200)
        for _ in range(400):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if lik(mid) > level else (mid, hi)
        return (lo + hi) / 2
    p0 = mp.fsum(p for m, p in zip(mus, ps) if m == 0)
    y = root(e)
    rem = mp.fsum(p * mp.ncdf(m - y) for m, p in zip(mus, ps)) - e * mp.ncdf(-y)
    add = mp.mpf(0)
    if p0 < 1 / e:
        y2 = root(1 / e)
        add = mp.ncdf(y2) - e * mp.fsum(p * mp.ncdf(y2 - m) for m, p in zip(mus, ps))
    return float(max(rem, add, 0))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 6), bins=st.integers(1, 7), seed=st.integers(0, 2 ** 16),
       z=st.floats(0.2, 3.0), eps=st.sampled_from([0.5, 2.0, 4.0, 8.0]))
def test_fixed_bins_witness_below_its_exact_projection(n, bins, seed, z, eps):
    """The fixed-bins witness's lower end below the exact delta (mpmath) of the projection it
    claims to be, built here from the exact (rational) bin means and the filter of the bin of
    largest exact norm: deltas down to 1e-300, where the quadrature of the full pair cannot
    go; bins not dividing n and bins beyond n (empty bins) included."""
    rng = np.random.default_rng(seed)
    c = np.tril(rng.choice([0.0, 0.25, 0.5, 1.0], (n, n)))
    c[np.diag_indices(n)] = 0.75
    w = fixed_bins_witness(DenseStrategy(c), z, bins)
    assert w is not None
    cf = [[Fraction(float(v)) for v in row] for row in c]
    means = [[sum(cf[t][s] for s in range(n) if s % bins == j) for t in range(n)]
             for j in range(bins)]
    top = max(range(bins), key=lambda j: sum(v * v for v in means[j]))
    nt = math.sqrt(sum(v * v for v in means[top]))
    mus = [float(sum(a * v for a, v in zip(means[top], m))) / nt / z for m in means]
    truth = _mixture_delta_mp(mus, [1 / bins] * bins, eps)
    low = lower_end([w], "delta", eps)
    if low is not None:
        assert low.value <= truth * (1 + 1e-9)


# --- known: the sensitivity and the noise split underflow (outside the witnesses) -------------

@pytest.mark.parametrize("participation", [dp.SingleEpoch(), dp.FixedBins(1)])
def test_a_subnormal_scale_is_refused(participation):
    """The mechanism depends on C / z only, but at C, z ~ 2^-538 the squares of C's entries
    fall in the subnormals, where the sensitivity's and the split's relative rounding bounds
    do not hold (the bracket left the truth, sensitivity 0): such a C is refused, naming
    ``strategy``, rather than answered wrongly."""
    scale = 2.0 ** -538
    with pytest.raises(ValueError, match="strategy"):
        dp.MatrixMechanism(_C0 * scale, _Z0 * scale, participation=participation)
