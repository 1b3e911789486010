"""An independent review of the windowed and alternating witnesses
(dpamp.amplification.matrix.lower_block) against oracles written here, not the module's helpers:

- the EXACT delta(eps) of the record's actual pair P = sum_B pi(B) N(A B, sigma^2 I), Q =
  N(0, sigma^2 I) (A = C on the joinable columns for one gradient direction; for the
  alternating gradient the two directions stacked), rotated onto range(A) with the last axis
  along A 1 (every mean has a non-negative component there, so the likelihood ratio is
  monotone along it): that axis in closed form at the root, the others by Gauss-Hermite (the
  integrand is smooth once the kink is integrated out; 60 and 100 nodes agree to 1e-14);
- the projected pair (each window's matched filter, the rows chosen by brute force over the
  band) by the same routine, A the windows' shifts;
- for moderate n, a Monte Carlo of the full pair with the likelihood by the forward
  algorithm over the last b - 1 participation bits (slow).
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp

import dpamp as dp
from dpamp.amplification.matrix import lower as LW
from dpamp.amplification.matrix import lower_block as LB
from dpamp.families.matrix import amplified_delta, amplified_epsilon, lower_witnesses
from dpamp.mechanisms.matrix_strategies import as_strategy


# --- oracles ---------------------------------------------------------------------------------

def _basis(a):
    one = a.sum(axis=1)
    w = one / np.linalg.norm(one)
    rest = a - np.outer(w, w @ a)
    u, s, _ = np.linalg.svd(rest, full_matrices=False)
    return u[:, s > 1e-11 * max(float(s.max(initial=0.0)), float(np.abs(a).max()))], w


def exact_delta(a, sigma, q, eps, order="remove", nodes=None):
    """H_{e^eps}(P || Q) ("remove") or H_{e^eps}(Q || P) ("add") of the pair above."""
    a = np.asarray(a, float) / sigma
    if not a.any():
        return 0.0
    k = a.shape[1]
    u, w = _basis(a)
    pats = np.array(list(itertools.product((0, 1), repeat=k)), float)
    ones = pats.sum(axis=1)
    l1q = math.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore"):
        logpi = ones * math.log(q) + np.where(ones < k, (k - ones) * l1q, 0.0)
    keep = np.isfinite(logpi)
    means = pats[keep] @ a.T
    logpi = logpi[keep]
    beta, outer = means @ w, means @ u
    r = u.shape[1]
    nodes = nodes or {0: 1, 1: 200, 2: 60, 3: 24}.get(r, 14)
    if r:
        x, wt = np.polynomial.hermite_e.hermegauss(nodes)
        grid = np.stack([g.ravel() for g in np.meshgrid(*([x] * r), indexing="ij")], axis=1)
        weight = np.prod(np.stack(np.meshgrid(*([wt / math.sqrt(2 * math.pi)] * r),
                                              indexing="ij")).reshape(r, -1), axis=0)
    else:
        grid, weight = np.zeros((1, 0)), np.ones(1)
    la = logpi[None, :] + grid @ outer.T - 0.5 * np.sum(outer ** 2, axis=1)[None, :]
    lb = la - 0.5 * beta[None, :] ** 2
    lev = eps if order == "remove" else -eps
    lo, hi = np.full(grid.shape[0], -80.0), np.full(grid.shape[0], 80.0)
    for _ in range(90):             # 160 / 2^90: far below what the checks resolve
        mid = 0.5 * (lo + hi)
        up = logsumexp(lb + beta[None, :] * mid[:, None], axis=1) > lev
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    t = 0.5 * (lo + hi)
    if order == "remove":
        val = np.exp(logsumexp(la + log_ndtr(beta[None, :] - t[:, None]), axis=1)) \
            - np.exp(eps + log_ndtr(-t))
    else:
        val = np.exp(log_ndtr(t)) \
            - np.exp(eps + logsumexp(la + log_ndtr(t[:, None] - beta[None, :]), axis=1))
    return float(np.sum(weight * np.maximum(val, 0.0)))


def exact_both(a, sigma, q, eps):
    return max(exact_delta(a, sigma, q, eps, "remove"), exact_delta(a, sigma, q, eps, "add"))


def full_matrix(c, joinable, length, alternating):
    """The record's actual pair: means A B, B over the joinable steps."""
    cols = np.flatnonzero(joinable)
    if not alternating:
        return c[:, cols]
    odd = (cols // length) % 2 == 1
    return np.vstack([c[:, cols] * ~odd[None, :], c[:, cols] * odd[None, :]])


def projected_matrix(c, joinable, length, alternating, b):
    """windows x joinable steps: <v_j, M_j[:, s]> / |v_j|, the rows chosen by brute force."""
    n = c.shape[0]
    cols = np.flatnonzero(joinable)
    out = []
    for j in range(-(-n // length)):
        win = set(range(j * length, min((j + 1) * length, n)))
        if alternating:     # every row reading the window
            rows = [t for t in range(n) if any(t - b < s <= t for s in win)]
        else:               # rows of the window whose joinable read steps all lie in it
            rows = [t for t in sorted(win)
                    if all(s in win for s in range(max(0, t - b + 1), t + 1) if joinable[s])]
        m = np.array([[c[t, s] if s in win and t - b < s <= t else 0.0 for s in cols]
                      for t in rows]).reshape(len(rows), cols.size)
        v = m.sum(axis=1)
        nv = math.sqrt(float(v @ v))
        out.append(np.zeros(cols.size) if nv == 0 else (v @ m) / nv)
    return np.array(out)


def _banded(rng, n, b):
    c = np.tril(rng.uniform(0.05, 1.5, (n, n))) * (np.tri(n) - np.tri(n, k=-b))
    c[rng.uniform(size=c.shape) < 0.25] = 0.0
    np.fill_diagonal(c, np.where(rng.uniform(size=n) < 0.15, 0.0, rng.uniform(0.2, 1.5, n)))
    return c


def _witness_value(w, eps):
    vals = [LW._value(w.parts, "delta", eps)] + \
        ([LW._value(w.refined, "delta", eps)] if w.refined else [])
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


# --- the oracle itself -----------------------------------------------------------------------

def test_oracle_matches_closed_forms():
    """Gaussians (q = 1) in closed form, and the rotation: the same pair in more coordinates."""
    from scipy.stats import norm
    for mus, eps in (([1.3], 0.5), ([0.7, 0.9, 0.4], 1.0)):
        mu = math.sqrt(sum(x * x for x in mus))
        want = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert exact_delta(np.diag(mus), 1.0, 1.0, eps) == pytest.approx(want, rel=1e-10)
    c = np.array([[1.0, 0, 0], [0.7, 1.2, 0], [0.0, 0.4, 0.9]])
    rot = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 5)))[0][:, :3]
    for order in ("remove", "add"):
        d = exact_delta(c, 0.8, 0.3, 0.7, order)
        assert exact_delta(c, 0.8, 0.3, 0.7, order, nodes=100) == pytest.approx(d, rel=1e-9)
        assert exact_delta(np.vstack([c, np.zeros((2, 3))]), 0.8, 0.3, 0.7, order) == \
            pytest.approx(d, rel=1e-9)
        # any orthonormal image of the means: the same pair (inner products with A 1 kept)
        assert exact_delta(rot @ c, 0.8, 0.3, 0.7, order) == pytest.approx(d, rel=1e-8)


# --- each witness below its projected pair and its full pair (n <= 4) ------------------------

@pytest.mark.parametrize("seed", [0, 2, 3] + [pytest.param(k, marks=pytest.mark.slow)
                                          for k in (1, 4, 5)])
def test_witnesses_below_their_exact_pairs(seed):
    """Random banded C >= 0 (zero entries, zero diagonal entries), Poisson and cyclic Poisson,
    every window length (windowed from 1, below b too; alternating from b - 1), both modes:
    each witness's lower end (coarse and refined) at most the exact delta of its projected
    pair (tight: the numerics) and of the full pair (the independence claims)."""
    rng = np.random.default_rng(100 + seed)
    checked = 0
    for _ in range(3):
        n = int(rng.integers(2, 5))
        c = _banded(rng, n, int(rng.integers(1, n + 1)))
        if not c.any():
            continue
        s = as_strategy(c)
        b = int(s.bands)
        q = float(rng.choice([0.01, 0.1, 0.3, 0.6, 0.95]))
        z = float(rng.choice([0.3, 0.7, 1.0, 2.0]))
        p = int(rng.choice([1, 2, 3]))
        g = int(rng.integers(0, p))
        joinable = np.arange(n) % p == g
        eps = float(rng.choice([0.0, 0.3, 1.0, 2.5]))
        for alternating in (False, True):
            for length in range(max(b - 1, 1) if alternating else 1, n + 1):
                w = LB.block_witness(s, z, q, joinable, length, alternating, g, p)
                v = None if w is None else _witness_value(w, eps)
                if v is None:
                    continue
                proj = exact_both(projected_matrix(c, joinable, length, alternating, b), z,
                                  q, eps)
                full = exact_both(full_matrix(c, joinable, length, alternating), z, q, eps)
                assert v <= proj * (1 + 1e-9) + 1e-15, (n, b, length, alternating, v, proj)
                assert v <= full * (1 + 1e-6) + 1e-13, (n, b, length, alternating, v, full)
                checked += 1
    assert checked


def test_one_window_within_the_lattice_of_its_projection():
    """n = 7, one window of 7 steps (128 patterns): the projected pair is one mixture, exact
    in one dimension; the witness below it and within 0.6 % (the lattice's rounding), at
    scales whose mantissas round differently."""
    co, n = (1.0, 0.6, 0.3), 7
    for scale in (1.0, 2.0 ** -249.5, 3.0, 2.0 ** 250):
        s = dp.BandedToeplitz(tuple(x * scale for x in co), n)
        c = np.asarray(s.dense()) / scale
        a = projected_matrix(c, np.ones(n, bool), 7, False, 3)
        for eps in (0.5, 2.0):
            w = LB.block_witness(s, 0.8 * scale, 0.2, np.ones(n, bool), 7, False)
            v = _witness_value(w, eps)
            truth = exact_both(a, 0.8, 0.2, eps)
            assert truth * (1 - 6e-3) <= v <= truth


@pytest.mark.parametrize("seed", [1, 2] + [pytest.param(k, marks=pytest.mark.slow)
                                       for k in (0, 3)])
def test_family_lower_below_the_exact_pair_of_its_witness(seed):
    """The family's lower end (public API, both queries) at most the exact delta of the pair of
    the witness that gave it (n <= 4, C scaled by 2^+-200 and 1e-3 with the noise)."""
    rng = np.random.default_rng(200 + seed)
    for _ in range(3):
        n = int(rng.integers(1, 4))
        c = _banded(rng, n, int(rng.integers(1, n + 1)))
        if not c.any():
            continue
        scale = float(rng.choice([1.0, 2.0 ** -200, 2.0 ** 200, 1e-3]))
        q = float(rng.choice([1e-4, 0.05, 0.3, 0.7, 0.999]))
        z = float(rng.choice([0.2, 0.6, 1.0, 3.0]))
        p = int(rng.choice([1, 2, 3]))
        part = dp.Poisson(q) if p == 1 else dp.CyclicPoisson(q, p)
        m = dp.MatrixMechanism(c * scale, z * scale, participation=part)
        ws = lower_witnesses(m)
        for eps in (0.0, 0.5, 1.5):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                low = LW.lower_end(ws, "delta", eps)
                d = amplified_delta(m, eps)
            if low is None:
                continue
            w = low.witness
            joinable = np.arange(n) % p == w.group
            if w.name == LW.ORTHOGONAL:
                a = np.diag(np.sqrt((c[:, joinable] ** 2).sum(axis=0)))
            else:
                a = full_matrix(c, joinable, max(w.window, 1), w.name == LW.ALTERNATING)
            truth = exact_both(a, z, q, eps)
            assert low.value <= truth * (1 + 1e-6) + 1e-13
            assert d.lower is None or d.lower <= d.delta
        for delta in (1e-3, 0.05):
            low = LW.lower_end(ws, "epsilon", delta)
            if low is None or not low.value > 0:
                continue
            w = low.witness
            if w.name not in (LW.WINDOWED, LW.ALTERNATING):
                continue
            joinable = np.arange(n) % p == w.group
            a = full_matrix(c, joinable, w.window, w.name == LW.ALTERNATING)
            # eps_lower <= eps_true  <=>  delta_true(eps_lower) >= delta
            assert exact_both(a, z, q, low.value) >= delta * (1 - 1e-6)


@pytest.mark.parametrize("n, q, z", [(37, 0.3, 0.7),
                                     pytest.param(100, 0.01, 1.0, marks=pytest.mark.slow)])
def test_diagonal_c_below_dp_sgd(n, q, z):
    """bands = 1: the truth is DP-SGD; every windowed / alternating value (coarse and refined)
    at most dp_accounting's pessimistic PLD of DP-SGD (an upper bound on it)."""
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    m = dp.MatrixMechanism(dp.BandedToeplitz((1.0,), n), z, participation=dp.Poisson(q))
    ws = [w for w in lower_witnesses(m) if w.name in (LW.WINDOWED, LW.ALTERNATING)]
    assert ws
    for eps in (0.5, 2.0):
        acc = PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(PoissonSampledDpEvent(q, GaussianDpEvent(z)), n)
        ref = acc.get_delta(eps)
        for w in ws:
            v = _witness_value(w, eps)
            assert v is None or v <= ref


@pytest.mark.slow   # (4 s; a 16-configuration edge scan)
def test_edges_no_warning_lower_below_upper():
    """Extreme noise and rates, an all-zero column, n not a multiple of the windows: no
    exception or warning, and 0 <= lower <= upper."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for co, z, q in (((1.0, 0.0, 0.3), 1e-4, 0.5), ((0.2, 1.0, 1.0, 1.0), 1e8, 1e-12),
                         ((1.0, 0.5), 0.05, 1.0), ((1.0, 0.5), 1.0, 1 - 1e-9)):
            c = np.asarray(dp.BandedToeplitz(co, 33).dense())
            c[:, 1] = 0.0
            for s in (dp.BandedToeplitz(co, 33), dp.DenseStrategy(c)):
                m = dp.MatrixMechanism(s, z, participation=dp.CyclicPoisson(q, 3))
                for eps in (0.0, 1.0, 8.0):
                    d = amplified_delta(m, eps)
                    assert d.lower is None or 0 <= d.lower <= d.delta
                e = amplified_epsilon(m, 1e-6)
                assert e.lower is None or 0 <= e.lower <= e.epsilon


# --- moderate n: Monte Carlo of the full pair (forward algorithm) ----------------------------

def _loglik(c, b, joinable, q, y, length=None):
    """log dP/dQ at outputs y (sigma = 1): (N, n), or (N, 2, n) for the alternating pair."""
    n, num = c.shape[0], y.shape[0]
    states = 1 << (b - 1)
    lw = np.full((num, states), -np.inf)
    lw[:, 0] = 0.0
    lq, l1q = math.log(q), (math.log1p(-q) if q < 1 else -np.inf)
    odd = None if length is None else (np.arange(n) // length) % 2 == 1
    for t in range(n):
        opts = [(0, l1q if joinable[t] else 0.0)] + ([(1, lq)] if joinable[t] else [])
        new = np.full((num, states), -np.inf)
        for s in range(states):
            for bit, lp in opts:
                if not np.isfinite(lp):
                    continue
                bits = [bit] + [(s >> i) & 1 for i in range(b - 1)]
                steps = [(t - i, bits[i]) for i in range(b) if t - i >= 0]
                if odd is None:
                    mean = sum(c[t, j] * x for j, x in steps)
                    f = y[:, t] * mean - 0.5 * mean * mean
                else:
                    m1 = sum(c[t, j] * x for j, x in steps if not odd[j])
                    m2 = sum(c[t, j] * x for j, x in steps if odd[j])
                    f = y[:, 0, t] * m1 + y[:, 1, t] * m2 - 0.5 * (m1 * m1 + m2 * m2)
                ns = ((s << 1) | bit) & (states - 1)
                new[:, ns] = np.logaddexp(new[:, ns], lw[:, s] + lp + f)
        lw = new
    return logsumexp(lw, axis=1)


def mc_delta(c, sigma, q, joinable, eps, num, seed, length=None):
    """(mean, standard error) of the larger order's delta by Monte Carlo (bounded
    integrands: (1 - e^(eps - loss))_+ under P, (1 - e^eps L)_+ under Q)."""
    c = np.asarray(c, float) / sigma
    n = c.shape[0]
    i, j = np.nonzero(c)
    b = int((i - j).max()) + 1
    rng = np.random.default_rng(seed)
    out = []
    for under_p in (True, False):
        bits = (rng.uniform(size=(num, n)) < q) & joinable[None, :] & under_p
        if length is None:
            y = bits.astype(float) @ c.T + rng.normal(size=(num, n))
        else:
            odd = (np.arange(n) // length) % 2 == 1
            y = rng.normal(size=(num, 2, n))
            y[:, 0] += (bits & ~odd).astype(float) @ c.T
            y[:, 1] += (bits & odd).astype(float) @ c.T
        ll = _loglik(c, b, joinable, q, y, length)
        v = -np.expm1(np.minimum(eps - ll, 0.0)) if under_p else \
            -np.expm1(np.minimum(eps + ll, 0.0))
        v = np.maximum(v, 0.0)
        out.append((float(v.mean()), float(v.std() / math.sqrt(num))))
    return max(out)


def test_monte_carlo_oracle_agrees_with_the_exact_one():
    c = np.array([[1.0, 0, 0], [0.7, 1.2, 0], [0.0, 0.4, 0.9]])
    j = np.ones(3, bool)
    for length in (None, 1):
        a = full_matrix(c, j, length or 1, length is not None)
        mean, se = mc_delta(c, 0.8, 0.3, j, 0.7, 40000, 3, length)
        assert abs(mean - exact_both(a, 0.8, 0.3, 0.7)) < 5 * se


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_moderate_n_below_monte_carlo(seed):
    """n up to 120, Toeplitz and dense, Poisson and cyclic Poisson: every candidate's value
    (coarse and refined) below the Monte Carlo of its full pair plus 5 standard errors (only
    where delta >= 1e-3: rarer events make the standard error unreliable)."""
    rng = np.random.default_rng(300 + seed)
    checked = 0
    for _ in range(2):
        n, b = int(rng.integers(8, 120)), int(rng.integers(1, 4))
        co = rng.uniform(0.05, 1.0, b)
        co[0] = 1.0
        c = sum(np.diag(np.full(n - k, co[k]), -k) for k in range(b))
        dense = rng.uniform() < 0.5
        if dense:
            c = c * rng.uniform(0.6, 1.4, c.shape)
        q, z = float(rng.choice([0.05, 0.2, 0.5])), float(rng.choice([0.8, 1.5, 3.0]))
        p, eps = int(rng.choice([1, 2])), float(rng.choice([0.5, 1.0, 2.0]))
        s = dp.DenseStrategy(c) if dense else dp.BandedToeplitz(tuple(co), n)
        for w in LB.block_witnesses(s, z, q, p, s.column_norms_sq()):
            v = _witness_value(w, eps)
            if v is None or v < 1e-3:
                continue
            joinable = np.arange(n) % p == w.group
            mean, se = mc_delta(c, z, q, joinable, eps, 20000, seed,
                                w.window if w.name == LW.ALTERNATING else None)
            assert v <= mean + 5 * se, (n, b, w.name, w.window, v, mean, se)
            checked += 1
    assert checked


# --- Toeplitz representatives: short windows (L < b - 1) -------------------------------------

def test_representatives_hold_for_windows_shorter_than_the_bands():
    """A Toeplitz C, cyclic Poisson (2 groups, the record in group 1), b = 4, windows of one
    step (the family's candidates are longer; block_witness takes any length): window j keeps
    its row j only if no step of group 1 lies in [j - 3, j), which holds for j = 1 (its rows
    read below step 0, where there are no steps) and for no other window of group 1's steps.
    The truth of the projected pair is ONE Poisson-subsampled Gaussian at mu = c_0 / sigma: the
    windows of j L < b - 1 must not stand for the interior windows of their residue."""
    n, co, z, q = 20, (1.0, 0.5, 0.5, 0.5), 1.0, 0.5
    s = dp.BandedToeplitz(co, n)
    joinable = np.arange(n) % 2 == 1
    c = np.asarray(s.dense())
    a = projected_matrix(c, joinable, 1, False, 4)
    assert np.count_nonzero(a.any(axis=1)) == 1
    w = LB.block_witness(s, z, q, joinable, 1, False, 1, 2)
    for eps in (0.5, 1.0):
        assert _witness_value(w, eps) <= exact_both(a[a.any(axis=1)], z, q, eps)
    for g in (0, 1):
        full = LB.window_shifts(s, np.arange(n) % 2 == g, 1, False)
        js, counts = LB.representatives(s, 1, 2)
        rep = LB.window_shifts(s, np.arange(n) % 2 == g, 1, False, js)
        assert sorted(map(tuple, full)) == sorted(
            t for r, k in zip(rep, counts) for t in [tuple(r)] * int(k))


def test_every_window_length_matches_every_window():
    """representatives against every window, over random Toeplitz C, groups, window lengths
    from 1 (windowed) or b - 1 (alternating): the same multiset of window shifts."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(2, 60))
        b = int(rng.integers(1, min(n, 9) + 1))
        s = dp.BandedToeplitz(tuple(rng.uniform(0.1, 1.0, b)), n)
        p = int(rng.integers(1, 5))
        joinable = np.arange(n) % p == int(rng.integers(0, min(p, n)))
        alternating = bool(rng.integers(0, 2))
        length = int(rng.integers(max(b - 1, 1) if alternating else 1, n + 1))
        js, counts = LB.representatives(s, length, p)
        full = LB.window_shifts(s, joinable, length, alternating)
        rep = LB.window_shifts(s, joinable, length, alternating, js)
        assert int(counts.sum()) == full.shape[0]
        assert sorted(map(tuple, full)) == sorted(
            t for r, k in zip(rep, counts) for t in [tuple(r)] * int(k)), (n, b, p, length)


def test_alternating_windows_shorter_than_b_minus_1_are_refused():
    """Below L = b - 1 two windows of one direction share rows (their noise is not
    independent): block_witness refuses such a length, naming it."""
    s = dp.BandedToeplitz((1.0, 0.5, 0.5, 0.5), 12)
    with pytest.raises(ValueError, match="length"):
        LB.block_witness(s, 1.0, 0.3, np.ones(12, bool), 2, True)
    assert LB.block_witness(s, 1.0, 0.3, np.ones(12, bool), 3, True) is not None
