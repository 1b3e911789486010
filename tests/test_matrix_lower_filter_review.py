"""Review of the filter-allocation lower ends (balls in bins redrawn every epoch and fixed bins,
:func:`dpamp.amplification.matrix.lower_bins.filter_allocation_witness` and
:func:`~dpamp.amplification.matrix.lower_bins.fixed_filter_witness`), against oracles written
independently of dpamp's code:

1. the hockey-stick divergence of the WHOLE fixed-direction pair, both orders, on tiny n: P the
   average over every participation pattern x of N(C x, sigma^2 I), Q = N(0, sigma^2 I).
   Coordinates: e_1 = the normalised sum of the means (every mean >= 0 has a positive
   component on it), the others an orthonormal basis of the residuals' span (SVD). Given the
   others, the likelihood ratio L is increasing and convex in z_1, so the inner integral is in
   closed form (Newton for the root of log L, from its right), and the outer one, a smooth
   function, by Gauss-Hermite; accuracy measured below (a closed form, adaptive quadrature,
   node doubling);
2. the per-epoch mixture re-derived from the dense C in exact rationals (mpmath for the square
   root): its law must stochastically dominate the witness's (every threshold), positive
   probabilities at most the exact multiples of 1/b', the counts (epochs, periods, t) from an
   explicit enumeration of the filters' rows;
3. every witness the mechanism builds for balls in bins (filter, matched, row allocation,
   windowed: one direction; alternating windows: two) at or below the exact delta of the pair
   it comes from, and the reported lower end at or below the larger of them.

The witnesses are also compared with my own exact witness pair (the product over epochs of
random allocation of (1/b') sum_d N(rho(|d|)/|c|, sigma^2), computed by oracle 1) in each
order separately: the argument's claim, independent of dpamp's PLD engine.
"""
from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr, logsumexp
from scipy.stats import norm

import dpamp as dp
from dpamp.amplification.matrix.lower import lower_end
from dpamp.amplification.matrix.lower_bins import (filter_allocation_witness,
                                                    fixed_filter_witness)

# ------------------------------------------------------------------------------------------
# oracle 1: the whole pair's hockey-stick divergence, both orders
# ------------------------------------------------------------------------------------------


def _frame(means):
    """(m1, m') of the means in the frame e_1 = normalised sum, then the residuals' span."""
    means = np.asarray(means, dtype=float)
    u = means.sum(axis=0)
    u = u / np.linalg.norm(u)
    m1 = means @ u
    res = means - m1[:, None] * u[None, :]
    if np.abs(res).max() > 0:
        _, sv, vt = np.linalg.svd(res, full_matrices=False)
        mp_ = res @ vt[:int(np.sum(sv > sv[0] * 1e-13))].T
    else:
        mp_ = np.zeros((means.shape[0], 0))
    return m1, mp_


def _inner(loga, m1, eps):
    """E[(L - e^eps)_+ | z'] and E[(1 - e^eps L)_+ | z'] for L(t) = sum_k a_k e^{m1_k t -
    m1_k^2/2} (rows of ``loga`` = log a_k at the outer points)."""
    pos = m1 > 0
    base = loga - 0.5 * m1 ** 2
    l0 = (logsumexp(np.where(pos[None], -np.inf, loga), axis=1) if (~pos).any()
          else np.full(loga.shape[0], -np.inf))
    out = []
    for lev in (eps, -eps):
        exists = l0 < lev
        t = np.min(np.where(pos[None], (lev - base) / np.where(pos, m1, 1.0)[None], np.inf),
                   axis=1)                                  # log L(t) >= lev there
        for _ in range(300):
            z = base + m1[None] * t[:, None]
            lse = logsumexp(z, axis=1)
            step = np.where(exists, (lse - lev) / (np.exp(z - lse[:, None]) @ m1), 0.0)
            t = t - step
            if np.all(np.abs(step) <= 1e-14 * (1 + np.abs(t))):
                break
        t = np.where(exists, t, -np.inf)
        if lev > 0:      # sum a_k Phibar(t - m1_k) - e^eps Phibar(t)
            a = logsumexp(loga + log_ndtr(-(t[:, None] - m1[None])), axis=1)
            b = lev + log_ndtr(-t)
        else:            # Phi(t) - e^eps sum a_k Phi(t - m1_k)
            a = log_ndtr(t)
            b = eps + logsumexp(loga + log_ndtr(t[:, None] - m1[None]), axis=1)
        with np.errstate(invalid="ignore"):
            out.append(np.where(a > b, np.exp(a) * -np.expm1(b - a), 0.0))
    return out


_NODES = {0: 1, 1: 64, 2: 48, 3: 28, 4: 22, 5: 10}


def hockey(means, logw, eps, scale=1.0):
    """(remove, add) = (H_{e^eps}(P || Q), H_{e^eps}(Q || P)), P = sum_k w_k N(means_k, I),
    Q = N(0, I); means >= 0 (already over sigma)."""
    means = np.asarray(means, dtype=float)
    means = means[:, np.abs(means).sum(axis=0) > 0]
    logw = np.asarray(logw, dtype=float)
    m1, mp_ = _frame(means)
    r = mp_.shape[1]
    nodes = max(4, int(_NODES[r] * scale))
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    pts = np.array(list(itertools.product(x, repeat=r))) if r else np.zeros((1, 0))
    wts = np.prod(np.array(list(itertools.product(w, repeat=r))), axis=1) if r else np.ones(1)
    tot = np.zeros(2)
    for lo in range(0, len(pts), 20000):
        z = pts[lo:lo + 20000]
        loga = logw[None] + z @ mp_.T - 0.5 * (mp_ ** 2).sum(axis=1)[None]
        rem, add = _inner(loga, m1, eps)
        tot += [wts[lo:lo + 20000] @ rem, wts[lo:lo + 20000] @ add]
    return tot


def dense(c, n):
    return np.array([[c[i - j] if 0 <= i - j < len(c) else 0.0 for j in range(n)]
                     for i in range(n)], dtype=float)


def bins_patterns(n, bins, partial="slot"):
    """(patterns, log-weights) of balls in bins redrawn every epoch; the last partial epoch's
    step uniform over its B slots (absent beyond n: ``partial`` "slot") or over its steps
    ("step"): the witness must lie below both."""
    full, r = divmod(n, bins)
    opts = [[(s, 1.0 / bins) for s in range(e * bins, (e + 1) * bins)] for e in range(full)]
    if r:
        opts.append([(s, 1.0 / bins) for s in range(full * bins, n)] + [(None, (bins - r) / bins)]
                    if partial == "slot" else [(s, 1.0 / r) for s in range(full * bins, n)])
    pats, logw = [], []
    for combo in itertools.product(*opts):
        x = np.zeros(n)
        for s, _ in combo:
            if s is not None:
                x[s] = 1.0
        pats.append(x)
        logw.append(sum(math.log(p) for _, p in combo))
    return np.array(pats), np.array(logw)


def fixed_patterns(n, bins):
    pats = []
    for j in range(min(bins, n)):
        x = np.zeros(n)
        x[j::bins] = 1.0
        pats.append(x)
    return np.array(pats), np.full(len(pats), -math.log(bins))


def whole_truth(c, n, sigma, pats, logw, eps):
    """(remove, add) of the whole fixed-direction pair, and the relative change at 0.6 times
    the nodes (the quadrature's own error estimate)."""
    means = pats @ dense(c, n).T / sigma
    v = hockey(means, logw, eps)
    v2 = hockey(means, logw, eps, scale=0.6)
    return v, float(np.max(np.abs(v - v2) / np.maximum(v, 1e-300)))


def alternating_truth(c, n, sigma, pats, logw, eps, length):
    """The pair of the alternating-windows witness: gradient u_1 in the steps of the even
    windows of ``length`` steps, u_2 in the odd ones (the outputs along both directions)."""
    par = (np.arange(n) // length) % 2
    cd = dense(c, n)
    means = np.concatenate([(pats * (par == 0)) @ cd.T, (pats * (par == 1)) @ cd.T], 1) / sigma
    return hockey(means, logw, eps)


# ------------------------------------------------------------------------------------------
# oracle 2: the filter construction re-derived from the dense C, exactly
# ------------------------------------------------------------------------------------------


def spacing_of(b, bins):
    return next((d for d in range(b, bins + 1) if bins % d == 0), None)


def filter_counts(b, bins, n):
    """(b', o, usable epochs): every filter position j = e B + o + i b' enumerated, an epoch
    usable when all its filters' rows j .. j + b - 1 exist."""
    sp = spacing_of(b, bins)
    if sp is None:
        return None
    o = math.ceil(sp / 2) - 1
    usable = 0
    for e in range(n // bins):
        rows = [j + k for i in range(bins // sp) for j in [e * bins + o + i * sp]
                for k in range(b)]
        usable += max(rows) <= n - 1
    return sp, o, usable


def exact_filter_shifts(c, bins):
    """{filter column f: the b' shifts (mpf, 60 digits) of the window's steps} for each column
    of the window whose norm over the filter's rows is the largest or within 1e-9 of it (any
    non-negative filter on those rows is valid; the witness takes the largest COMPUTED norm,
    which can pick a column short of a coefficient whose square is below the rounding, e.g.
    c_0 = 7e-7 next to c_6 = 988), from the dense C in rationals."""
    cf = [Fraction(v) for v in c]
    while cf[-1] == 0:
        cf.pop()
    b = len(cf)
    sp = spacing_of(b, bins)
    o = math.ceil(sp / 2) - 1
    cell = lambda r, s: cf[r - s] if 0 <= r - s < b else Fraction(0)  # noqa: E731
    cols = {s: [cell(r, s) for r in range(o, o + b)] for s in range(sp)}
    sq = {s: sum(v * v for v in col) for s, col in cols.items()}
    top = max(sq.values())
    to_mp = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
    out = {}
    with mpmath.workdps(60):
        for f, col in cols.items():
            if sq[f] >= top * (1 - Fraction(1, 10 ** 9)):
                out[f] = [to_mp(sum(a * v for a, v in zip(col, cols[s]))) / mpmath.sqrt(to_mp(top))
                          for s in range(sp)]
    return out


def _check_against_exact(c, bins, n, sigma, fixed):
    """The witness's law of shifts stochastically below the exact one (uniform over the b'
    positions, times sqrt(E) for fixed bins), padding only down, within 1e-12 (relative) of
    it, and its counts; None when it declines (asserted to be allowed)."""
    s = dp.BandedToeplitz(tuple(c), n)
    w = (fixed_filter_witness if fixed else filter_allocation_witness)(s, sigma, bins)
    b = len(s.coeffs)
    counts = filter_counts(b, bins, n)
    if counts is None or counts[2] == 0:
        assert w is None
        return None
    sp, o, usable = counts
    if w is None:
        return None                      # (declined: a shift over sigma out of range)
    (alloc, count), = w.parts
    assert w.window == sp and alloc.scheme.k == 1 and alloc.scheme.t == bins // sp
    assert (count, w.periods) == ((1, usable) if fixed else (usable, 0))
    mog = alloc.base
    shifts = [mpmath.mpf(v) for v in mog.sensitivities]
    probs = [mpmath.mpf(v) for v in mog.probabilities]
    assert all(p >= 0 for p in probs) and abs(sum(probs) - 1) < 1e-12
    for v, p in zip(shifts, probs):
        if v > 0:
            assert p <= mpmath.mpf(round(float(p * sp))) / sp
    scale = mpmath.sqrt(usable) if fixed else 1
    fits = []
    for exact in exact_filter_shifts(tuple(s.coeffs), bins).values():
        exact = sorted(x * scale for x in exact)
        dominated = all(
            sum(p for v, p in zip(shifts, probs) if v >= x) <= mpmath.mpf(
                sum(1 for e in exact if e >= x)) / sp
            for x in shifts if x > 0)
        reps = [int(round(float(p * sp))) for p in probs]
        mine = sorted(itertools.chain.from_iterable([v] * k for v, k in zip(shifts, reps)))
        close = len(mine) == sp and all(
            e == 0 or e < 2.0 ** -990 or e < 2.0 ** -990 * sigma or abs(e - m) <= 1e-12 * e
            for m, e in zip(mine, exact))
        fits.append((dominated, close))
    assert any(d for d, _ in fits), (c, bins, n, sigma, fixed)
    assert any(d and k for d, k in fits), (c, bins, n, sigma, fixed, "over-lowered")
    return w


# ------------------------------------------------------------------------------------------
# oracle accuracy
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_oracle_gaussian_closed_form(mu, eps):
    want = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    rem, add = hockey(np.array([[mu]]), np.array([0.0]), eps)
    assert rem == pytest.approx(want, rel=1e-12) and add == pytest.approx(want, rel=1e-12)


def test_oracle_two_dimensions_against_adaptive_quadrature():
    """Random allocation (1 of 2) of N(1.2, 1): the oracle against adaptive quadrature (outer)
    of the kinked integrand itself (inner: Gauss-Legendre on each side of its kink, where it
    is smooth), both orders, 1e-10."""
    mu, eps = 1.2, 0.5
    g = math.exp(eps)
    rem, add = hockey(np.array([[mu, 0.0], [0.0, mu]]), np.log([0.5, 0.5]), eps)
    xg, wg = np.polynomial.legendre.leggauss(400)

    def inner(y, order):
        ey = 0.5 * math.exp(mu * y - mu * mu / 2)
        lvl = (g if order == 0 else 1 / g) - ey            # 0.5 e^{mu x - mu^2/2} vs lvl
        xk = (math.log(2 * lvl) + mu * mu / 2) / mu if lvl > 0 else -math.inf
        lo, hi = (max(xk, -40.0), 40.0) if order == 0 else (-40.0, min(xk, 40.0))
        if lo >= hi:
            return 0.0
        x = 0.5 * (hi - lo) * xg + 0.5 * (hi + lo)
        lx = 0.5 * np.exp(mu * x - mu * mu / 2) + ey
        f = (lx - g if order == 0 else 1 - g * lx) * norm.pdf(x)
        return 0.5 * (hi - lo) * float(wg @ f)

    for order, got in ((0, rem), (1, add)):
        want = integrate.quad(lambda y: inner(y, order) * norm.pdf(y), -40, 40,
                              epsabs=1e-15, epsrel=1e-12, limit=400)[0]
        assert got == pytest.approx(want, rel=1e-10), (order, got, want)


def test_oracle_nodes_converge_on_a_whole_pair():
    """The outer integrand is smooth: 28 and 16 nodes a dimension agree to 3e-5 on a pair of 3
    outer dimensions (c = (1, 0.6, 0.3), 4 bins, n 5), and 34 nodes agree with 28 to 1e-7."""
    pats, logw = bins_patterns(5, 4)
    v, rel = whole_truth((1.0, 0.6, 0.3), 5, 1.0, pats, logw, 0.5)
    assert rel < 3e-5
    means = pats @ dense((1.0, 0.6, 0.3), 5).T
    v40 = hockey(means, logw, 0.5, scale=34 / 28)
    assert np.allclose(v, v40, rtol=1e-7, atol=0), (v, v40)


# ------------------------------------------------------------------------------------------
# oracle 2: shifts, probabilities and counts
# ------------------------------------------------------------------------------------------

_NAMED = [((1.0, 0.5), 2, 10), ((0.0, 1.0), 2, 9), ((0.0, 0.0, 1.0), 3, 12),
          ((0.0, 0.5, 0.0, 1.0), 6, 20), ((1.0, 0.0, 0.0, 0.8), 4, 9), ((1.0,), 7, 7),
          ((1.0,) * 5, 5, 20), ((1.0,) * 5, 6, 20), ((1.0,) * 5, 7, 21), ((1.0, 2.0, 3.0), 3, 3),
          ((1.0, 2.0, 3.0), 3, 5), ((1.0, 2.0, 3.0), 3, 6), ((1.0, 0.7), 9, 30),
          ((1e-160, 3e-161), 4, 20), ((1e150, 1e150), 4, 20), ((1.0, 5e-324), 4, 9),
          ((5e-324, 1.0), 2, 6), ((2.0 ** -537, 2.0 ** -537), 2, 6), ((1.0, 2.0 ** -1074, 1.0), 5, 12),
          ((1.0, 0.9, 0.8, 0.7, 0.6), 11, 40), ((0.3, 1.0), 1, 5)]


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("c,bins,n", _NAMED)
def test_shifts_against_the_exact_derivation_named(c, bins, n, fixed):
    for sigma in (2.0 ** -500, 1e-3, 1.0, 1e3, 1e300):
        _check_against_exact(c, bins, n, sigma, fixed)


def test_shifts_against_the_exact_derivation_random():
    rnd = random.Random(20240611)
    built = 0
    for _ in range(250):
        b = rnd.randint(1, 7)
        c = [rnd.choice([0.0, rnd.random(), rnd.random() * 10.0 ** rnd.randint(-6, 6)])
             for _ in range(b)]
        if not any(c):
            c[0] = 1.0
        bins = rnd.randint(1, 30)
        n = rnd.randint(len(c), 3 * bins + 10)
        if not any(c[:n]):
            continue             # (a C = 0 after truncation: refused, see the test below)
        sigma = 10.0 ** rnd.uniform(-3, 3)
        built += _check_against_exact(c, bins, n, sigma, rnd.random() < 0.5) is not None
    assert built > 100


def test_declines_where_the_filters_do_not_fit():
    """bins < bands; every epoch's last filter reading past row n - 1 (b' = B = b = 3: o = 1,
    the last filter's rows e B + 1 .. e B + 3); one more step and the first epoch counts."""
    s = dp.BandedToeplitz((1.0, 0.5, 0.2), 40)
    assert filter_allocation_witness(s, 1.0, 2) is None and fixed_filter_witness(s, 1.0, 2) is None
    s3 = dp.BandedToeplitz((1.0, 2.0, 3.0), 3)
    assert filter_allocation_witness(s3, 1.0, 3) is None and fixed_filter_witness(s3, 1.0, 3) is None
    s4 = dp.BandedToeplitz((1.0, 2.0, 3.0), 4)
    assert filter_allocation_witness(s4, 1.0, 3).parts[0][1] == 1
    assert fixed_filter_witness(s4, 1.0, 3).periods == 1


def test_zero_matrix_after_truncation_is_refused():
    """BandedToeplitz((0, 1), 1) was accepted with C = 0 (the coefficients cut to n after the
    all-zero check) and the witnesses then indexed an empty array: now refused, naming the
    parameter."""
    with pytest.raises(ValueError, match="coeffs must not all be 0"):
        dp.BandedToeplitz((0.0, 1.0), 1)


# ------------------------------------------------------------------------------------------
# oracle 1 against the witnesses
# ------------------------------------------------------------------------------------------


def my_witness_pair(c, bins, n, sigma, eps, fixed):
    """(remove, add) of my own filter-allocation pair: per usable epoch, filter i uniform of
    B / b' and offset d uniform of b', the shift rho(|d|) / |c| at filter i (fixed bins: one
    draw, shifts times sqrt(E), on the B / b' sums); None where no epoch fits."""
    c = np.asarray(c, dtype=float)
    c = c[:np.flatnonzero(c)[-1] + 1]
    b = c.size
    counts = filter_counts(b, bins, n)
    if counts is None or counts[2] == 0:
        return None
    sp, o, e_ = counts
    rho = lambda d: float(c[:b - d] @ c[d:]) if d < b else 0.0  # noqa: E731
    sh = np.array([rho(abs(d)) for d in range(-o, sp - o)]) / np.linalg.norm(c)
    f_ = bins // sp
    per = [(i, d) for i in range(f_) for d in range(sp)]
    if fixed:
        means = np.zeros((len(per), f_))
        for k, (i, d) in enumerate(per):
            means[k, i] = sh[d] * math.sqrt(e_)
        logw = np.full(len(per), -math.log(bins))
    else:
        combos = list(itertools.product(per, repeat=e_))
        means = np.zeros((len(combos), e_ * f_))
        for k, combo in enumerate(combos):
            for e, (i, d) in enumerate(combo):
                means[k, e * f_ + i] = sh[d]
        logw = np.full(len(combos), -e_ * math.log(bins))
    if not (means > 0).any():
        return np.zeros(2)
    return hockey(means / sigma, logw, eps)


def _filter_case(c, bins, n, sigma, fixed, eps_list, partials=("slot", "step"),
                 max_rel=1e-4):
    """The witness below the whole pair, both partial-epoch readings; ``max_rel`` the largest
    quadrature error estimate accepted (the comparison's slack is 10 times it)."""
    s = dp.BandedToeplitz(tuple(c), n)
    w = (fixed_filter_witness if fixed else filter_allocation_witness)(s, sigma, bins)
    if filter_counts(len(s.coeffs), bins, n)[2] == 0:
        assert w is None
        return
    assert w is not None
    for partial in (("slot",) if fixed or n % bins == 0 else partials):
        pats, logw = fixed_patterns(n, bins) if fixed else bins_patterns(n, bins, partial)
        for eps in eps_list:
            truth, rel = whole_truth(c, n, sigma, pats, logw, eps)
            assert rel < max_rel, rel                    # the oracle converged
            tol = 1 + 10 * max(rel, 1e-9)
            mine = my_witness_pair(c, bins, n, sigma, eps, fixed)
            # the argument, order by order (my own witness pair, not dpamp's)
            assert mine[0] <= truth[0] * tol and mine[1] <= truth[1] * tol, (eps, mine, truth)
            low = lower_end([w], "delta", eps).value
            # dpamp's witness below my exact witness pair (its PLD's optimistic end) ...
            assert 0 <= low <= max(mine) * (1 + 1e-7), (eps, low, mine)
            # ... and below the whole pair
            assert low <= max(truth) * tol, (eps, low, truth)


_BINS = [  # (coefficients, bins, n, sigma): n <= 5 or few outer dimensions
    ((1.0, 0.5), 2, 4, 0.9),              # cross-epoch: epoch 0's step 1 shifts epoch 1's filter
    ((1.0, 0.5), 2, 5, 1.0),              # a partial epoch
    ((0.0, 1.0), 2, 4, 0.6),              # c_0 = 0 (a tie of filters)
    ((1.0, 0.9), 3, 4, 0.7),              # b = 2 not dividing 3: b' = 3, o = 1
    ((1.0, 0.6, 0.3), 4, 4, 1.0),         # b = 3, b' = 4, one epoch
    ((1.0, 0.0, 0.8), 4, 4, 0.5),         # an interior zero
    ((1.0, 1.0, 1.0), 3, 4, 0.4),         # bins == bands
    ((1.0, 0.7), 2, 6, 1.2),              # three epochs
    ((1.0,), 2, 4, 0.5),                  # b = 1: the witness is the whole pair
    ((1.0,), 1, 3, 1.0),                  # one step per epoch
    ((0.3, 1.0), 4, 4, 3.0),              # large sigma
    ((1.0, 0.5), 2, 4, 0.15),             # small sigma (delta near 1)
]


@pytest.mark.parametrize("c,bins,n,sigma", _BINS)
def test_filter_allocation_below_the_whole_pair(c, bins, n, sigma):
    _filter_case(c, bins, n, sigma, False, (0.05, 1.0))


_FIXED = [
    ((1.0, 0.7), 2, 8, 0.9),              # 4 periods, the last filter at row 7
    ((1.0, 0.7), 2, 9, 1.0),              # a partial period
    ((1.0, 0.0, 0.7), 4, 8, 0.6),         # interior zero, b' = 4
    ((0.5, 1.0, 0.5), 3, 12, 1.0),        # b = b' = 3, 3 usable periods of 4
    ((1.0, 0.7, 0.4), 4, 16, 2.0),
    ((1.0, 0.9, 0.8, 0.7), 4, 13, 1.0),
    ((1.0,), 3, 12, 0.8),                 # b = 1: the whole pair
    ((0.2, 1.0), 2, 10, 0.3),
    ((1.0, 0.3), 5, 15, 4.0),             # b' = 5 for b = 2
]


@pytest.mark.parametrize("c,bins,n,sigma", _FIXED)
def test_fixed_filter_below_the_whole_pair(c, bins, n, sigma):
    _filter_case(c, bins, n, sigma, True, (0.05, 1.0))


def test_the_check_catches_a_witness_too_large():
    """Sensitivity of the comparison: where the witness is the whole pair (C diagonal), one
    epoch too many, or the shift 2% too large, puts it above the oracle."""
    from dpamp.amplification.matrix.lower import Witness
    s = dp.BandedToeplitz((1.0,), 4)
    w = filter_allocation_witness(s, 0.5, 2)
    pats, logw = bins_patterns(4, 2)
    truth = max(whole_truth((1.0,), 4, 0.5, pats, logw, 0.5)[0])
    good = lower_end([w], "delta", 0.5).value
    assert good <= truth and good >= truth * 0.998
    (alloc, count), = w.parts
    more = Witness(w.name, ((alloc, count + 1),), 0, 1, window=w.window)
    assert lower_end([more], "delta", 0.5).value > truth * 1.01
    big = dp.MixtureOfGaussians(0.5, tuple(1.02 * v for v in alloc.base.sensitivities),
                                alloc.base.probabilities).subsample(alloc.scheme)
    wider = Witness(w.name, ((big, count),), 0, 1, window=w.window)
    assert lower_end([wider], "delta", 0.5).value > truth * 1.001


# ------------------------------------------------------------------------------------------
# the mechanism's reported lower end, every witness against its own pair
# ------------------------------------------------------------------------------------------


def _mechanism_case(c, bins, n, sigma, fixed, eps_list):
    from dpamp.families.matrix import lower_witnesses
    s = dp.BandedToeplitz(tuple(c), n)
    m = dp.MatrixMechanism(s, sigma, participation=dp.FixedBins(bins) if fixed
                           else dp.BallsInBins(bins))
    ws = lower_witnesses(m)
    assert any(w.name == "filter-allocation" for w in ws)
    pats, logw = fixed_patterns(n, bins) if fixed else bins_patterns(n, bins)
    for eps in eps_list:
        truth, rel = whole_truth(c, n, sigma, pats, logw, eps)
        assert rel < 1e-4
        tol = 1 + 10 * max(rel, 1e-9)
        allowed = max(truth)
        for w in ws:
            le = lower_end([w], "delta", eps)
            if le is None:
                continue
            if w.dimensions == 1:
                ref = max(truth)
            else:
                assert w.name == "alternating-windows"
                ref = max(alternating_truth(c, n, sigma, pats, logw, eps, w.window))
                allowed = max(allowed, ref)
            assert le.value <= ref * tol, (w.name, w.window, eps, le.value, ref)
        rep = m.delta(eps).lower
        assert rep is not None and rep <= allowed * tol, (eps, rep, allowed)


@pytest.mark.parametrize("c,bins,n,sigma,fixed", [
    ((1.0, 0.5), 2, 5, 0.5, False),
    ((1.0, 0.9), 3, 4, 0.7, False),
    ((0.3, 1.0), 4, 4, 1.0, False),
    ((1.0, 0.7), 2, 8, 0.9, True),
    ((1.0, 0.0, 0.7), 4, 8, 0.6, True),
])
def test_reported_lower_end_below_the_pairs(c, bins, n, sigma, fixed):
    _mechanism_case(c, bins, n, sigma, fixed, (0.5,))


# ------------------------------------------------------------------------------------------
# slow: the broader sweep (four outer dimensions, several sigma and eps)
# ------------------------------------------------------------------------------------------

_SWEEP = [((1.0,), 3, 5, False), ((1.0, 0.9), 3, 5, False), ((0.6, 1.0), 3, 5, False),
          ((1.0, 0.0, 0.8), 3, 5, False), ((1.0, 0.6, 0.3), 4, 5, False),
          ((1.0, 0.7), 5, 5, False), ((1.0, 0.7, 0.2), 5, 5, False),
          ((0.0, 0.5, 1.0), 3, 5, False), ((1.0, 0.5, 0.5, 0.5), 4, 5, False),
          ((1.0, 0.9, 0.8), 3, 3, False), ((1.0, 0.5), 2, 6, False), ((1.0, 0.7), 2, 7, False),
          ((1.0, 0.4, 0.9), 3, 5, True), ((1.0, 0.8), 5, 5, True), ((0.0, 1.0), 2, 5, True),
          ((1.0, 0.0, 0.6), 3, 5, True), ((1.0, 0.8), 4, 5, True)]


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("c,bins,n,fixed", _SWEEP)
def test_sweep_filter_below_the_whole_pair(c, bins, n, fixed, sigma):
    """(four outer dimensions at small sigma: 22 and 13 nodes differ by up to ~1e-2; the
    witnesses there are below 0.8 of the truth)"""
    _filter_case(c, bins, n, sigma, fixed, (0.05, 0.5, 1.5), max_rel=3e-2)


@pytest.mark.slow
@pytest.mark.parametrize("c,bins,n,sigma,fixed", [
    ((1.0, 0.5), 2, 4, 0.3, False), ((1.0, 0.6, 0.3), 4, 4, 1.0, False),
    ((1.0, 0.7), 5, 5, 1.0, False), ((0.0, 1.0), 2, 4, 1.0, False),
    ((0.3, 1.0), 4, 5, 1.0, False), ((0.3, 1.0), 4, 5, 3.0, False),
    ((1.0, 1.0, 1.0), 3, 4, 0.5, False), ((1.0, 0.5), 2, 6, 1.0, False),
    ((1.0, 0.4, 0.9), 3, 5, 1.0, True), ((0.0, 1.0), 2, 5, 1.0, True),
    ((0.5, 1.0, 0.5), 3, 12, 1.0, True), ((1.0, 0.7, 0.4), 4, 16, 0.5, True)])
def test_sweep_reported_lower_end(c, bins, n, sigma, fixed):
    _mechanism_case(c, bins, n, sigma, fixed, (0.05, 1.0))
