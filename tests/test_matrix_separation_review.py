"""Independent review of the separation blocks (dpamp.mechanisms.matrix_separation).

Own oracles (tests/oracles/pattern_mixture.py is not used):

- ``_hockey``: both hockey-stick curves of c N(0, I) + sum_j a_j N(mu_j e_j, I) against
  N(0, I) (c = 1 - sum a), i.e. E_Q[(L - x)+] and E_Q[(1 - x L)+] with
  L = c + sum_j a_j X_j, X_j = e^(mu_j y_j - mu_j^2 / 2): the coordinate of the largest a_j in
  closed form (Black-Scholes-type normal integrals), the others by a tensor Gauss-Hermite
  rule (the closed form is C-infinity in the rest: the lognormal density is flat at 0);
- ``_chain_mc``: Monte Carlo of the b-min-separation chain's own pair, any mean matrix
  (rows of C / z per step), the likelihood ratio exact: by a forward recursion over the
  chain's states for a diagonal C (y_s ~ N(x_s mu_s, 1)), by enumerating the chain's patterns
  for a banded C (the fixed-direction pair, theta ~ N(C x / z, I)). Both orders are
  estimated with integrands in [0, 1] (remove under P as E_P[(1 - x / L)+], add under Q as
  E_Q[(1 - x L)+]), so mean +- 5 standard errors is an honest interval.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr

import dpamp as dp
from dpamp.core.errors import OutOfReach
from dpamp.mechanisms.matrix_separation import block_allocation, separation_blocks


# --- oracle 1: hockey-stick curves of a one-hot Gaussian mixture by quadrature ------------
def _inner(k_const, a1, mu1, x):
    """(remove, add) of K + a1 X1 given K (array): E[(K + a1 X - x)+], E[(1 - x K - x a1 X)+]."""
    K = np.asarray(k_const, dtype=float)
    if a1 <= 0:
        return np.maximum(K - x, 0.0), np.maximum(1.0 - x * K, 0.0)
    k = x - K
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (np.log(np.where(k > 0, k, 1.0) / a1) + mu1 * mu1 / 2) / mu1
        rem = np.where(k > 0, a1 * ndtr(mu1 - t) - k * ndtr(-t), K - x + a1)
        kk = 1.0 - x * K
        if x > 0:
            t2 = (np.log(np.where(kk > 0, kk, 1.0) / (x * a1)) + mu1 * mu1 / 2) / mu1
            add = np.where(kk > 0, kk * ndtr(t2) - x * a1 * ndtr(t2 - mu1), 0.0)
        else:
            add = np.ones_like(K)
    return np.maximum(rem, 0.0), np.maximum(add, 0.0)


_GRADE = 10


def _split_nodes(K, a, mu, threshold, nodes):
    """Nodes and weights (N(0, 1) weight included) of y on [-9, 9 + mu] (the rest of the
    mass is below 1e-18 of the curves), per entry of K: panels of width 2 with ``nodes``
    Gauss-Legendre points each, one of them cut where K + a X(y) crosses ``threshold``
    (where the rest's expectation is not analytic)."""
    lo, hi = -9.0, 9.0 + mu
    with np.errstate(divide="ignore", invalid="ignore"):
        cut = (np.log(np.where(threshold > K, threshold - K, 1.0) / a) + mu * mu / 2) / mu
    cut = np.where(threshold > K, np.clip(cut, lo, hi), lo)
    fixed = np.append(np.arange(lo, hi, 2.0), hi)
    # panels graded geometrically towards the cut (the expectation beyond it is flat there
    # like e^(-log^2 / (2 mu^2)): smooth, not analytic)
    grade = np.concatenate([-(2.0 ** -np.arange(0, _GRADE)), 2.0 ** -np.arange(0, _GRADE)])
    near = np.clip(cut[:, None] + grade, lo, hi)
    edges = np.sort(np.concatenate([np.broadcast_to(fixed, (K.size, fixed.size)),
                                    cut[:, None], near], axis=1), axis=1)
    g, w = np.polynomial.legendre.leggauss(nodes)
    half = (edges[:, 1:] - edges[:, :-1]) / 2
    mid = (edges[:, 1:] + edges[:, :-1]) / 2
    y = (mid[:, :, None] + half[:, :, None] * g).reshape(K.size, -1)
    wt = (half[:, :, None] * w).reshape(K.size, -1) * np.exp(-y * y / 2) / math.sqrt(2 * math.pi)
    return y, wt


def _hockey(c, coeffs, mus, x, nodes=10):
    """(E_Q[(L - x)+], E_Q[(1 - x L)+]) for L = c + sum_j a_j X_j (module docstring): the
    largest coefficient in closed form, the others by nested Gauss-Legendre split where the
    partial sum crosses the curve's kink (x for remove, 1 / x for add)."""
    a = np.asarray(coeffs, dtype=float)
    mu = np.broadcast_to(np.asarray(mus, dtype=float), a.shape)
    keep = a > 0
    a, mu = a[keep], mu[keep]
    if a.size == 0:
        return max(c - x, 0.0), max(1.0 - x * c, 0.0)
    i = int(np.argmax(a))
    rest_a, rest_mu = np.delete(a, i), np.delete(mu, i)
    out = []
    for order, threshold in ((0, x), (1, 1.0 / x if x > 0 else math.inf)):
        K, W = np.array([float(c)]), np.array([1.0])
        for aj, mj in zip(rest_a, rest_mu):
            y, wt = _split_nodes(K, aj, mj, threshold, nodes)
            K = (K[:, None] + aj * np.exp(mj * y - mj * mj / 2)).ravel()
            W = (W[:, None] * wt).ravel()
        out.append(float((W * _inner(K, a[i], mu[i], x)[order]).sum()))
    return out[0], out[1]


def _geometric(p, length):
    """The fully eligible block: (constant, coefficients)."""
    return (1 - p) ** length, [p * (1 - p) ** j for j in range(length)]


def _allocated(gamma, m):
    return 1 - gamma, [gamma / m] * m


def test_hockey_oracle_against_closed_forms_and_monte_carlo():
    # one coordinate: the Poisson-subsampled Gaussian; compare with a direct formula
    q, mu, x = 0.3, 1.2, 1.5
    rem, add = _hockey(1 - q, [q], [mu], x)
    # remove: L > x iff y > t, t = (log((x - 1 + q) / q) + mu^2 / 2) / mu
    t = (math.log((x - 1 + q) / q) + mu * mu / 2) / mu
    direct = (1 - q) * ndtr(-t) + q * ndtr(mu - t) - x * ndtr(-t)
    assert abs(rem - direct) < 1e-14
    # the two curves are one: H_x(Q||P) = 1 - x + x H_{1/x}(P||Q)
    r_inv, _ = _hockey(1 - q, [q], [mu], 1 / x)
    assert abs(add - (1 - x + x * r_inv)) < 1e-13
    # three coordinates, unequal: quadrature against Monte Carlo (5 sigma)
    rng = np.random.default_rng(7)
    c, a, mus = 0.4, np.array([0.3, 0.2, 0.1]), np.array([1.0, 1.5, 0.7])
    for x in (0.6, 1.0, 2.5):
        rem, add = _hockey(c, a, mus, x)
        y = rng.standard_normal((400_000, 3))
        L = c + (a * np.exp(mus * y - mus ** 2 / 2)).sum(axis=1)
        for got, sample in ((rem, np.maximum(L - x, 0)), (add, np.maximum(1 - x * L, 0))):
            assert abs(got - sample.mean()) <= 5 * sample.std() / math.sqrt(y.shape[0]) + 1e-15
    # the split Gauss-Legendre converged: 10 against 20 nodes a panel
    for x in (0.5, 1.0, 3.0):
        lo = _hockey(0.2, [0.3, 0.25, 0.25], [2.0, 2.0, 2.0], x, nodes=10)
        hi = _hockey(0.2, [0.3, 0.25, 0.25], [2.0, 2.0, 2.0], x, nodes=20)
        assert abs(lo[0] - hi[0]) < 1e-10 and abs(lo[1] - hi[1]) < 1e-10


# --- the lemma on its own: one block against its subsampled allocation ----------------------
_XS = [0.05, 0.2, 0.5, 0.8, 0.95, 1.0, 1.05, 1.3, 2.0, 4.0, 10.0, 40.0]


def _lemma_grid(length, ps, mus, xs, nodes, tol):
    """max over the grid of (block curve - allocation curve), both orders, against dpamp's
    (m, gamma) and against the exact m p (the lemma itself, no rounding)."""
    worst = -math.inf
    for p in ps:
        ma = block_allocation(p, length)
        if ma is None:
            continue
        m, gamma = ma
        c, a = _geometric(p, length)
        for mu in mus:
            for x in xs:
                blk = _hockey(c, a, mu, x, nodes)
                for g in (gamma, m * p):
                    up = _hockey(*_allocated(g, m), mu, x, nodes)
                    for lo, hi in zip(blk, up):
                        assert lo <= hi + tol, (p, length, mu, x, lo, hi)
                        worst = max(worst, lo - hi)
    return worst


@pytest.mark.parametrize("length", [1, 2, 3])
def test_block_dominated_by_allocation_both_orders(length):
    """H_x(P||Q) <= H_x(A||Q) and H_x(Q||P) <= H_x(Q||A) over a grid of x (both sides of 1),
    P the geometric block, A random allocation (1 of m) of the Poisson(gamma) Gaussian."""
    if length < 3:
        _lemma_grid(length, (0.01, 0.1, 0.25, 0.4, 0.5), (0.3, 1.0, 2.0), _XS, 10, 1e-12)
    else:
        _lemma_grid(length, (0.01, 0.2, 0.45), (0.5, 2.0), (0.2, 0.9, 1.0, 1.3, 4.0), 6, 1e-8)


@pytest.mark.slow
def test_block_dominated_by_allocation_length_3_4_full():
    _lemma_grid(3, (0.01, 0.1, 0.25, 0.4, 0.5), (0.3, 1.0, 2.0), _XS, 8, 1e-10)
    _lemma_grid(4, (0.05, 0.25, 0.5), (0.5, 2.0), (0.3, 0.95, 1.0, 1.2, 3.0), 4, 1e-7)


def _crn_difference(c_p, a_p, c_a, a_a, mu, x, size, seed):
    """Monte Carlo (common random numbers) of the allocation's curves minus the block's,
    both orders: (mean, standard error) each."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((size, len(a_p)))
    X = np.exp(mu * y - mu * mu / 2)
    lp = c_p + X @ np.asarray(a_p)
    la = c_a + X[:, :len(a_a)] @ np.asarray(a_a)
    out = []
    for f in (lambda L: np.maximum(L - x, 0), lambda L: np.maximum(1 - x * L, 0)):
        d = f(la) - f(lp)
        out.append((d.mean(), d.std() / math.sqrt(size)))
    return out


@pytest.mark.slow
def test_block_dominated_by_allocation_length_5_monte_carlo():
    """b = 5: the allocation's curves minus the block's, not significantly negative."""
    for p in (0.05, 0.15, 0.3):
        m, gamma = block_allocation(p, 5)
        c, a = _geometric(p, 5)
        for mu in (0.5, 1.5):
            for x in (0.3, 0.9, 1.0, 1.2, 3.0):
                for mean, se in _crn_difference(c, a, *_allocated(gamma, m), mu, x,
                                                400_000, 11):
                    assert mean >= -5 * se - 1e-15


def test_lemma_check_can_fail():
    """The comparison tells directions apart: the uniform block at rate p_l (majorized by the
    geometric weights) lies strictly below the block in the remove order, and so does an
    allocation at a gamma below p_l."""
    p, length, mu = 0.3, 3, 1.5
    c, a = _geometric(p, length)
    m, _ = block_allocation(p, length)
    pl = 1 - (1 - p) ** length
    for x in (1.0, 1.5, 3.0):
        blk = _hockey(c, a, mu, x)
        uni = _hockey(*_allocated(pl, length), mu, x)
        assert uni[0] < blk[0] - 1e-6 and uni[1] <= blk[1] + 1e-15
    low = _hockey(*_allocated(0.9 * pl, m), mu, 1.0)
    assert low[0] < _hockey(c, a, mu, 1.0)[0] - 1e-6


# --- dpamp's own number of one block against the exact allocation pair ---------------------
@pytest.mark.parametrize("p,length,z,eps", [
    (0.3, 2, 1.0, 0.5), (0.1, 3, 0.7, 1.0), (0.45, 2, 2.0, 0.1), (0.2, 2, 0.5, 2.0),
    (1.0, 3, 1.0, 1.0), (0.5, 2, 0.8, 0.3)])
def test_one_block_pld_is_the_allocation_pair(p, length, z, eps):
    """n = b (one block), C = I: dpamp's blocks delta must lie above the exact delta of the
    allocation pair A (both orders; the orientation of the subsampled base inside the
    allocation) and close to it (it is that pair, up to the PLD's discretisation)."""
    mech = dp.MatrixMechanism(np.eye(length), z, participation=dp.MinSepSampling(p, length))
    plan = mech.separation_blocks
    assert plan is not None and len(plan.parts) == 1
    _, m, gamma, count = plan.parts[0]
    assert count == 1
    x = math.exp(eps)
    rem, add = _hockey(*_allocated(gamma, m), 1.0 / z, x)
    exact = max(rem, add)
    got = mech.blocks_reduction().delta(eps, method="pld").delta
    assert got >= exact
    assert got <= exact * 1.01 + 1e-6
    # and the mechanism's own exact pair (the geometric block) lies below
    blk = _hockey(*_geometric(p, length), 1.0 / z, x)
    assert max(blk) <= got


# --- oracle 2: Monte Carlo of the chain's own pair ------------------------------------------
def _initial(p, b, warm):
    """Law of the state before step 1: k = steps still barred (0 eligible)."""
    if not warm:
        return np.eye(1, b)[0]
    pi = np.full(b, p)
    pi[0] = 1.0
    return pi / pi.sum()


def _sample_chain(rng, n, p, b, warm, size):
    """Participation patterns (size x n) of the b-min-separation chain."""
    state = rng.choice(b, size=size, p=_initial(p, b, warm))
    x = np.zeros((size, n))
    for s in range(n):
        take = (state == 0) & (rng.random(size) < p)
        x[:, s] = take
        state = np.where(take, b - 1, np.maximum(state - 1, 0))
    return x


def _forward_loglik(y, mus, p, b, warm):
    """log dP/dQ of y (size x n), P the chain's mixture of N(x_s mu_s, 1), Q = N(0, I):
    forward recursion over the states (0 eligible, k barred k more steps)."""
    with np.errstate(divide="ignore"):
        la = np.log(np.broadcast_to(_initial(p, b, warm), (y.shape[0], b))).copy()
        lp, lq = math.log(p), (math.log1p(-p) if p < 1 else -math.inf)
    for s in range(y.shape[1]):
        lx = mus[s] * y[:, s] - mus[s] ** 2 / 2
        new = np.full_like(la, -np.inf)
        new[:, 0] = np.logaddexp(la[:, 0] + lq, la[:, 1])
        new[:, b - 1] = np.logaddexp(new[:, b - 1], la[:, 0] + lp + lx)
        for k in range(1, b - 1):
            new[:, k] = la[:, k + 1]
        la = new
    return np.logaddexp.reduce(la, axis=1)


def _patterns(n, p, b, warm):
    """(patterns, probabilities) of the chain, enumerated from its definition."""
    init = _initial(p, b, warm)
    pats, probs = [], []
    for bits in itertools.product((0, 1), repeat=n):
        total = 0.0
        for s0, w0 in enumerate(init):
            if w0 == 0:
                continue
            prob, state = w0, s0
            for bit in bits:
                if state > 0:
                    if bit:
                        prob = 0.0
                        break
                    state -= 1
                else:
                    prob *= p if bit else 1 - p
                    state = b - 1 if bit else 0
            total += prob
        if total > 0:
            pats.append(bits)
            probs.append(total)
    return np.array(pats, dtype=float), np.array(probs)


def _pattern_loglik(theta, means, logw):
    """log dP/dQ for P = sum_i w_i N(means_i, I), Q = N(0, I)."""
    quad = 0.5 * (means ** 2).sum(axis=1)
    return np.logaddexp.reduce(theta @ means.T - quad + logw, axis=1)


def _chain_mc(eps, n, p, b, warm, z, c=None, size=200_000, seed=0, diag=None):
    """(estimate, standard error) of max(remove, add) delta(eps) of the chain's pair:
    C = I (forward recursion) when ``c`` is None, else theta ~ N(C x / z, I) with the
    patterns enumerated (the fixed-direction pair); ``diag``: C = diag(diag) instead of I."""
    rng = np.random.default_rng(seed)
    x = math.exp(eps)
    if c is None:
        mus = np.full(n, 1.0 / z) if diag is None else np.asarray(diag, dtype=float) / z
        xs = _sample_chain(rng, n, p, b, warm, size)
        y_p = xs * mus + rng.standard_normal((size, n))
        y_q = rng.standard_normal((size, n))
        ll_p = _forward_loglik(y_p, mus, p, b, warm)
        ll_q = _forward_loglik(y_q, mus, p, b, warm)
    else:
        pats, probs = _patterns(n, p, b, warm)
        means = pats @ (np.asarray(c, dtype=float) / z).T
        logw = np.log(probs)
        idx = rng.choice(len(probs), size=size, p=probs / probs.sum())
        y_p = means[idx] + rng.standard_normal((size, means.shape[1]))
        y_q = rng.standard_normal((size, means.shape[1]))
        ll_p = _pattern_loglik(y_p, means, logw)
        ll_q = _pattern_loglik(y_q, means, logw)
    rem = np.maximum(1.0 - x * np.exp(-ll_p), 0.0)
    add = np.maximum(1.0 - x * np.exp(ll_q), 0.0)
    out = [(v.mean(), v.std() / math.sqrt(size)) for v in (rem, add)]
    return max(out)


def test_chain_mc_against_quadrature():
    """The Monte Carlo oracle agrees with the quadrature where the chain is a one-hot mixture
    (n <= b: at most one step), cold and warm, and the forward recursion with the patterns."""
    for n, b, p, z, warm, eps in [(1, 3, 0.4, 0.8, True, 0.5), (2, 2, 0.3, 0.7, False, 1.0),
                                  (3, 3, 0.25, 1.0, True, 0.3)]:
        init = _initial(p, b, warm)
        pats, probs = _patterns(n, p, b, warm)
        coeff = [probs[(pats == np.eye(n)[j]).all(axis=1)].sum() for j in range(n)]
        c0 = probs[(pats == 0).all(axis=1)].sum()
        assert abs(c0 + sum(coeff) - 1) < 1e-12 and init.sum() == pytest.approx(1)
        rem, add = _hockey(c0, coeff, 1.0 / z, math.exp(eps))
        est, se = _chain_mc(eps, n, p, b, warm, z, size=100_000, seed=3)
        assert abs(est - max(rem, add)) < 5 * se + 1e-12
    # the recursion and the enumeration agree pointwise
    rng = np.random.default_rng(1)
    for n, b, p, warm in [(5, 2, 0.3, False), (6, 3, 0.45, True)]:
        y = rng.standard_normal((50, n)) * 1.5
        pats, probs = _patterns(n, p, b, warm)
        a = _forward_loglik(y, np.full(n, 0.9), p, b, warm)
        e = _pattern_loglik(y, 0.9 * pats, np.log(probs))
        assert np.allclose(a, e, rtol=0, atol=1e-12)


def _cases(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        b = int(rng.integers(2, 6))
        n = int(rng.integers(1, 13))
        p = float(rng.uniform(0.01, 0.9))
        z = float(np.exp(rng.uniform(math.log(0.3), math.log(3.0))))
        yield n, b, p, z, bool(rng.integers(2)), float(rng.uniform(0.0, 4.0))


def _check_diagonal(n, b, p, z, warm, eps, size, family=True, diag=None):
    c = np.eye(n) if diag is None else np.diag(diag)
    mech = dp.MatrixMechanism(c, z, participation=dp.MinSepSampling(p, b, warm))
    est, se = _chain_mc(eps, n, p, b, warm, z, size=size, seed=n * 31 + b, diag=diag)
    truth_lo = est - 5 * se
    if mech.separation_blocks is not None:
        got = mech.blocks_reduction().delta(eps, method="pld").delta
        assert got >= truth_lo, (n, b, p, z, warm, eps, got, est, se)
    else:
        got = math.nan
    if family:
        assert mech.delta(eps).delta >= truth_lo
    return got, est, se


@pytest.mark.parametrize("n,b,p,z,warm,eps", [
    (6, 2, 0.3, 1.0, False, 0.5), (7, 3, 0.2, 0.6, True, 1.0), (8, 4, 0.5, 1.5, False, 0.1),
    (5, 5, 0.1, 0.4, True, 2.0), (9, 2, 0.45, 0.8, True, 0.0)])
def test_blocks_above_the_diagonal_chain(n, b, p, z, warm, eps):
    _check_diagonal(n, b, p, z, warm, eps, 100_000)


@pytest.mark.slow
def test_blocks_above_the_diagonal_chain_sweep():
    """A seeded sweep: n 1..12, b 2..5, p in [0.01, 0.9], z in [0.3, 3], warm or cold,
    eps in [0, 4]."""
    for case in _cases(40, 2026):
        _check_diagonal(*case, 100_000, family=False)
    # unequal diagonals: the blocks take each block's largest mu_s, in step order
    rng = np.random.default_rng(5)
    for n, b, p, z, warm, eps in _cases(15, 77):
        _check_diagonal(n, b, p, z, warm, eps, 100_000, family=False,
                        diag=rng.uniform(0.2, 1.0, n))


def test_blocks_above_an_unequal_diagonal_chain():
    d = [0.3, 1.0, 0.5, 0.9, 0.2, 0.7, 1.0]
    _check_diagonal(7, 3, 0.35, 0.6, True, 0.5, 100_000, diag=d)


def _banded(n, coeffs):
    c = np.zeros((n, n))
    for k, v in enumerate(coeffs):
        c += np.diag(np.full(n - k, v), -k)
    return c


@pytest.mark.parametrize("n,b,p,z,warm,eps,coeffs", [
    (6, 2, 0.3, 1.0, False, 0.5, (1.0, 0.5)), (8, 3, 0.25, 1.5, True, 1.0, (1.0, 0.6, 0.3)),
    (7, 2, 0.45, 2.0, True, 0.2, (1.0, -0.4, 0.2)), (9, 4, 0.2, 0.8, False, 1.5, (1.0, 0.7))])
def test_blocks_above_the_banded_fixed_direction_pair(n, b, p, z, warm, eps, coeffs):
    """A banded C: the fixed-direction pair is an actual pair of neighbours, so its delta
    lies below the bound (only that direction can be checked)."""
    c = _banded(n, coeffs)
    mech = dp.MatrixMechanism(c, z, participation=dp.MinSepSampling(p, b, warm))
    est, se = _chain_mc(eps, n, p, b, warm, z, c=c, size=100_000, seed=5)
    got = mech.blocks_reduction().delta(eps, method="pld").delta
    assert got >= est - 5 * se
    assert mech.delta(eps).delta >= est - 5 * se


# --- the plan's numbers ---------------------------------------------------------------------
def _dense_deltas(c):
    """Delta_s^2 = sum_t |C[t, s]| R_t, R_t = sum_s |C[t, s]| (every step a possible one)."""
    a = np.abs(c)
    return np.sqrt(a.T @ a.sum(axis=1))


@pytest.mark.parametrize("n,b", [(7, 3), (2, 5), (1, 2), (10, 5), (11, 4), (5, 1)])
def test_blocks_take_each_blocks_largest_delta_in_step_order(n, b):
    rng = np.random.default_rng(n * 10 + b)
    c = np.tril(rng.standard_normal((n, n))) * (rng.random((n, n)) < 0.6)
    np.fill_diagonal(c, rng.uniform(0.1, 2.0, n))
    strat = dp.MatrixMechanism(c, 1.0).strategy
    plan = separation_blocks(strat, dp.MinSepSampling(0.2, b))
    if b == 1:
        assert plan is None
        return
    assert plan.length == b                   # p 0.2: every length up to 5 has gamma <= 1
    want = {}
    d = _dense_deltas(c)
    for start in range(0, n, b):
        block = d[start:start + b]
        ma = block_allocation(0.2, len(block))
        key = (block.max(), ma)
        want[key] = want.get(key, 0) + 1
    got = sorted((dd, m, g, k) for dd, m, g, k in plan.parts)
    assert sum(k for *_, k in got) == -(-n // b)
    exp = sorted((dd, m, g, k) for (dd, (m, g)), k in want.items())
    assert len(got) == len(exp)
    for (gd, gm, gg, gk), (ed, em, eg, ek) in zip(got, exp):
        assert gd >= ed and gd <= ed * (1 + 1e-12)     # moved up, by rounding only
        assert (gm, gg, gk) == (em, eg, ek)


def test_zero_blocks_are_skipped_and_levels_move_up():
    b = 3
    c = np.diag([0, 0, 0, 1.0, 0, 0, 0.5, 0.25, 0, 0, 0, 0])
    plan = separation_blocks(dp.MatrixMechanism(c, 1.0).strategy, dp.MinSepSampling(0.3, b))
    assert sum(k for *_, k in plan.parts) == 2        # blocks 2 and 3 only
    assert sorted(round(d, 12) for d, *_ in plan.parts) == [0.5, 1.0]


@pytest.mark.parametrize("p", [1e-9, 1e-4, 0.3, 0.5, 0.5000000001, 0.9, 1.0])
@pytest.mark.parametrize("length", [1, 2, 3, 5, 17])
def test_block_allocation_edges(p, length):
    """m p >= p_l exactly (against (1 - p)^l in rationals), gamma >= m p, gamma <= 1; None
    only where every m with m p >= p_l has m p > 1."""
    from fractions import Fraction
    ma = block_allocation(p, length)
    pe = Fraction(p)
    pl = 1 - (1 - pe) ** length
    need = max(1, math.ceil(pl / pe))
    if ma is None:
        assert need * pe > 1
        return
    m, gamma = ma
    assert m * pe >= pl and Fraction(gamma) >= m * pe and gamma <= 1.0 and m <= length
    assert m <= need + 1


def test_gamma_one_and_rate_one():
    """p = 1: every block's first eligible step is taken for sure (m 1, gamma 1); p = 1/2 on
    two steps: m 2, gamma exactly 1. Both against the exact block."""
    for p, length, z, eps in [(1.0, 3, 1.0, 0.5), (0.5, 2, 1.0, 0.5), (0.5, 3, 0.7, 1.0)]:
        mech = dp.MatrixMechanism(np.eye(length), z,
                                  participation=dp.MinSepSampling(p, length))
        _, m, gamma, _ = mech.separation_blocks.parts[0]
        assert gamma == 1.0
        got = mech.blocks_reduction().delta(eps, method="pld").delta
        blk = _hockey(*_geometric(p, length), 1.0 / z, math.exp(eps))
        assert got >= max(blk)


@pytest.mark.parametrize("n,b,coeffs", [(23, 4, (1.0, 0.6, -0.3)), (10, 3, (0.8, 0.5, 0.4, 0.1)),
                                        (5, 7, (1.0, 0.5))])
def test_toeplitz_blocks_match_the_dense_deltas(n, b, coeffs):
    """A banded Toeplitz C (its coefficients' path): each block's largest Delta_s as from the
    dense |C|, step order kept (the early steps read more rows than the last ones)."""
    strat = dp.MatrixMechanism(dp.BandedToeplitz(list(coeffs), n), 1.0).strategy
    plan = separation_blocks(strat, dp.MinSepSampling(0.2, b))
    d = _dense_deltas(_banded(n, coeffs))
    maxima = sorted((d[s:s + b].max() for s in range(0, n, b)), reverse=True)
    got = sorted((dd for dd, _, _, k in plan.parts for _ in range(k)), reverse=True)
    assert len(got) == len(maxima)
    for g, w in zip(got, maxima):
        assert w <= g <= w * (1 + 1e-12)


def test_more_block_maxima_than_levels_are_moved_up():
    """More distinct block maxima than the plan keeps levels: sorted, every kept value is at
    least the block maximum it replaces (n divisible by b: every block the same (m, gamma))."""
    n, b = 60, 3
    d = np.linspace(0.1, 1.0, n)[np.random.default_rng(2).permutation(n)]
    plan = separation_blocks(dp.MatrixMechanism(np.diag(d), 1.0).strategy,
                             dp.MinSepSampling(0.2, b))
    assert len(plan.parts) <= 8 and len({(m, g) for _, m, g, _ in plan.parts}) == 1
    maxima = sorted((d[s:s + b].max() for s in range(0, n, b)), reverse=True)
    got = sorted((dd for dd, _, _, k in plan.parts for _ in range(k)), reverse=True)
    assert len(got) == len(maxima) == n // b
    assert all(g >= w for g, w in zip(got, maxima))


@pytest.mark.parametrize("n,b,p,z,warm,eps", [
    (2, 4, 0.031, 0.6, True, 1.13), (2, 2, 0.01, 0.5, False, 1.0), (3, 3, 0.01, 1.0, True, 0.5),
    (3, 5, 0.005, 0.7, False, 2.0), (1, 2, 0.2, 1.0, False, 0.0), (3, 3, 0.02, 2.0, False, 0.1),
    (2, 2, 0.001, 0.4, False, 1.5)])
def test_tight_cases_by_exact_quadrature(n, b, p, z, warm, eps):
    """n <= b (at most one step: the chain's pair is a one-hot mixture, exact by quadrature),
    small p where the blocks lose little: above the truth, and within a few per cent of it
    (n = 1 cold: the pair is the Poisson-subsampled Gaussian itself, ratio 1 + 1e-9)."""
    pats, probs = _patterns(n, p, b, warm)
    coeff = [probs[(pats == np.eye(n)[j]).all(axis=1)].sum() for j in range(n)]
    c0 = probs[(pats == 0).all(axis=1)].sum()
    exact = max(_hockey(c0, coeff, 1.0 / z, math.exp(eps), 10))
    mech = dp.MatrixMechanism(np.eye(n), z, participation=dp.MinSepSampling(p, b, warm))
    got = mech.blocks_reduction().delta(eps, method="pld").delta
    assert exact <= got <= 1.25 * exact
    assert mech.delta(eps).delta >= exact


@pytest.mark.parametrize("p,b,n", [pytest.param(1e-9, 2, 5, marks=pytest.mark.slow), (1e-9, 5, 3), (1.0, 3, 7), (0.5, 2, 6),
                                   (0.999, 2, 4), (0.3, 9, 4), (0.3, 4, 1)])
def test_edge_rates_answer_without_error(p, b, n):
    """Tiny and extreme rates, b > n, n = 1: an answer (or blocks that do not apply), finite
    and at least the single step's Poisson-subsampled Gaussian (n = 1 cold is exactly it)."""
    mech = dp.MatrixMechanism(np.eye(n), 1.0, participation=dp.MinSepSampling(p, b))
    one = max(_hockey(1 - p, [p], 1.0, math.exp(0.5)))
    if mech.separation_blocks is None:
        assert p > 0.5
    else:
        try:
            got = mech.blocks_reduction().delta(0.5, method="pld").delta
        except OutOfReach:
            # p 1e-9: the allocation's PLD grid is out of reach; the family answers by
            # another route (no amplification: loose, but an upper bound)
            assert p < 1e-6
        else:
            assert math.isfinite(got) and got >= one
    assert mech.delta(0.5).delta >= one


@pytest.mark.parametrize("b_short", [2, 3])
def test_shorter_blocks_also_bound_the_chain(b_short):
    """Blocks of any length b' <= b hold at most one participation and the entry-state
    argument is unchanged (r >= b' leaves a block N(0, I)), so the b'-block plan bounds the
    b-chain too: where b gives gamma > 1 (p 0.45, b 4) the plan takes b' = 3 (the longest
    with gamma <= 1); b' = 2, 3 measured against the chain's truth."""
    n, b, p, z, eps = 10, 4, 0.45, 0.6, 1.0
    mech = dp.MatrixMechanism(np.eye(n), z, participation=dp.MinSepSampling(p, b))
    assert mech.separation_blocks is not None and mech.separation_blocks.length == 3
    short = dp.MatrixMechanism(np.eye(n), z, participation=dp.MinSepSampling(p, b_short))
    got = short.blocks_reduction().delta(eps, method="pld").delta
    est, se = _chain_mc(eps, n, p, b, False, z, size=100_000, seed=9)
    assert got >= est - 5 * se
    if b_short == 3:
        answer = mech.delta(eps).delta
        assert est - 5 * se <= answer <= got * (1 + 1e-12)


@pytest.mark.parametrize("p,length,z,eps", [
    (1 / 3, 3, 0.3, 2.0), (0.5, 3, 0.35, 3.0), (0.25, 4, 0.4, 1.0), (0.05, 2, 0.25, 4.0),
    (0.5, 2, 3.0, 0.0)])
def test_one_block_large_mu_and_gamma_one(p, length, z, eps):
    """Large mu (z down to 0.25) and gamma exactly 1 (p 1/2, p 1/3 over 3 steps): the
    allocation's PLD still above the exact allocation pair, both orders, and close to it."""
    mech = dp.MatrixMechanism(np.eye(length), z, participation=dp.MinSepSampling(p, length))
    (_, m, gamma, _), = mech.separation_blocks.parts
    exact = max(_hockey(*_allocated(gamma, m), 1.0 / z, math.exp(eps), 8))
    got = mech.blocks_reduction().delta(eps, method="pld").delta
    assert exact <= got <= exact * 1.02 + 1e-9


@pytest.mark.parametrize("n,b,p,z,warm,delta", [
    (8, 2, 0.3, 0.8, False, 1e-2), (9, 3, 0.2, 0.5, True, 1e-2), (6, 3, 0.15, 1.2, False, 1e-3)])
def test_epsilon_query_is_an_upper_bound(n, b, p, z, warm, delta):
    """The epsilon query: the chain's true delta at the reported epsilon is at most delta."""
    mech = dp.MatrixMechanism(np.eye(n), z, participation=dp.MinSepSampling(p, b, warm))
    got = mech.epsilon(delta)
    blocks = mech.blocks_reduction().epsilon(delta, method="pld").epsilon
    for eps in (got.epsilon, blocks):
        est, se = _chain_mc(eps, n, p, b, warm, z, size=200_000, seed=13)
        assert est - 5 * se <= delta


@pytest.mark.slow
def test_blocks_above_the_banded_fixed_direction_pair_sweep():
    """Random banded C (1 to 4 bands, signed coefficients), n up to 11, every route's answer
    and the blocks' above the fixed-direction pair's delta."""
    rng = np.random.default_rng(99)
    for n, b, p, z, warm, eps in _cases(25, 4242):
        n = max(n, 2)
        coeffs = np.concatenate([[1.0], rng.uniform(-0.8, 0.8, int(rng.integers(0, 4)))])[:n]
        c = _banded(n, coeffs)
        mech = dp.MatrixMechanism(c, z, participation=dp.MinSepSampling(p, b, warm))
        est, se = _chain_mc(eps, n, p, b, warm, z, c=c, size=60_000, seed=n)
        if mech.separation_blocks is not None:
            assert mech.blocks_reduction().delta(eps, method="pld").delta >= est - 5 * se
        assert mech.delta(eps).delta >= est - 5 * se


@pytest.mark.parametrize("n", [29, 41])
def test_blt_blocks_match_the_dense_deltas(n):
    """A BLT (its computed coefficients' path, padded for their error): each block's largest
    Delta_s as from the dense |C|, moved up by the padding only (8 blocks: one level each),
    or onto the kept levels (11 blocks)."""
    b = 4
    strat = dp.MatrixMechanism(dp.BLT((0.9, 0.4), (0.3, -0.2), n), 1.0).strategy
    plan = separation_blocks(strat, dp.MinSepSampling(0.2, b))
    d = _dense_deltas(strat.dense())
    maxima = sorted((d[s:s + b].max() for s in range(0, n, b)), reverse=True)
    got = sorted((dd for dd, _, _, k in plan.parts for _ in range(k)), reverse=True)
    assert len(got) == len(maxima)
    for g, w in zip(got, maxima):
        assert w <= g and (n > 32 or g <= w * (1 + 1e-9))


def test_block_lemma_seeded_random_cases():
    """Seeded random (p, mu, x) for blocks of 2 (exact quadrature, 150 cases) and 3 (20):
    the block's curves below the allocation's in both orders."""
    rng = np.random.default_rng(20261203)
    for length, count, nodes, tol in ((2, 150, 10, 1e-12), (3, 20, 6, 1e-8)):
        for _ in range(count):
            p = float(rng.uniform(0.005, 0.5))
            mu = float(np.exp(rng.uniform(math.log(0.2), math.log(3.0))))
            x = float(np.exp(rng.uniform(-3.0, 3.0)))
            ma = block_allocation(p, length)
            if ma is None:
                continue
            m, gamma = ma
            blk = _hockey(*_geometric(p, length), mu, x, nodes)
            up = _hockey(*_allocated(gamma, m), mu, x, nodes)
            assert blk[0] <= up[0] + tol and blk[1] <= up[1] + tol, (p, mu, x, blk, up)
