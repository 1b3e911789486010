"""Independent review of commits d1a4d8c / 58e4fe9: the whole run's matched filter under
(cyclic) Poisson sampling (:func:`dpamp.amplification.matrix.lower_run_rates.rate_filter_witnesses`)
and a BLT's lowered proxy (:func:`dpamp.amplification.matrix.lower_bins.lowered_proxy`) as read
by the one-statistic witnesses (``rate_filter_witnesses``, ``run_filter_witnesses``,
``fixed_bins_witness``).

Claims under review: the witness's law of shifts is stochastically below (or equal to) the
law of A = <u, C x> / |u| for the filter u the code uses (C 1_E, or C' 1_E for a BLT's proxy
C'), rounding included; 0 <= C' <= C entrywise against the EXACT BLT coefficients.

Oracles (this file's own):

* the law of N = <u, C x> over every pattern x in exact rationals (``fractions.Fraction``),
  the true C exact too (a BLT's c_k = sum_i omega_i theta_i^(k-1) of the given floats, exact
  rationals); A = N / |u| is compared with a witness shift w exactly (A < w iff
  N^2 < w^2 |u|^2). The stochastic order is checked where it can fail: for each witness
  atom w_i, P_w[S <= w_i] >= P_true[A < w_(i+1)] (the witness masses normalised as
  MixtureOfGaussians normalises them);
* mpmath (300 bits) for the BLT coefficients beyond a few dozen steps and the binomial masses.

The filter: the code lowers to 0 the entries that scale into the subnormals (``_scale``); the
witness is a post-processing of the statistic of that filter, so the oracle builds the same
filter (a choice of statistic, not of the law: the shifts use the unlowered true C).

Findings of the review at 58e4fe9 (fixed in e71d97d; the three ``test_regression_*`` at the
end failed there and pass since):

1. ``test_regression_subnormal_products_counted_for_every_joinable_step``: the absolute
   (subnormal) rounding allowance of the rate witness, ``summed * terms * 2^-1072`` with
   summed = 2 * groups + 2, was not multiplied by the binomial count K_j: a value v_j K_j
   carries K_j times v_j's subnormal rounding. A dense C >= 0 (256 steps, entries 2^1000 and
   2^460 (1 + 2^-20)) gave a law NOT stochastically below the true one (its CDF 0.0947 short
   of the truth; at x = 1.63e-18 0.0052 against 0.0977). Delta impact nil in practice (the
   affected shifts over sigma are below 2^-36 whenever every mu is finite), but the claim
   "including all floating-point rounding" did not hold. Now summed counts |E|.
2. ``test_regression_blt_coeff_error_covers_each_coefficient``: ``BLT.coeff_error`` was an
   unscaled l2 norm: for output scales below ~1e-146 the squares underflowed and it was 0
   (or below the largest per-coefficient bound) though the coefficients are inexact; the
   BLT then passed ``_usable`` as an exact C and its computed coefficients (an ulp above the
   exact ones) were read directly, e.g. an atom of the row-allocation witness 1 ulp above the
   exact coefficient (the rate witness itself was unaffected: c_0 = 1 dominates).
3. ``test_regression_no_numerical_warning_for_a_huge_output_scale``: the same norm overflowed
   above ~1e169 with a RuntimeWarning, an error under the project's ``filterwarnings``,
   reached by the rate witness through ``lowered_proxy``.
"""
from __future__ import annotations

import bisect
import itertools
import math
from fractions import Fraction
from math import comb

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.matrix import lower_run_rates as R
from dpamp.amplification.matrix.lower_bins import (MAX_PROXY_BANDS, _usable,
                                                   fixed_bins_witness, lowered_proxy)
from dpamp.amplification.matrix.lower_run import run_filter_witnesses
from dpamp.mechanisms.gaussian import Gaussian
from dpamp.mechanisms.matrix_strategies import BLT, DenseStrategy, Toeplitz
from dpamp.mechanisms.mixture_of_gaussians import MixtureOfGaussians

F = Fraction
_U = 2.0 ** -53


# ---------------------------------------------------------------------------------------
# oracles


def exact_blt(theta, omega, n) -> list[Fraction]:
    """The exact coefficients of the BLT of the given floats (0^0 = 1)."""
    th, om = [F(t) for t in theta], [F(w) for w in omega]
    return [F(1)] + [sum((w * t ** (k - 1) for t, w in zip(th, om)), F(0))
                     for k in range(1, n)]


def toeplitz_rows(c, n) -> list[list[Fraction]]:
    return [[F(c[i - j]) if 0 <= i - j < len(c) else F(0) for j in range(n)]
            for i in range(n)]


def scale_mask(a: np.ndarray, over: np.ndarray) -> np.ndarray:
    """Entries of ``a`` (>= 0) that stay normal once the largest of ``over`` is scaled into
    [1/2, 1) (the others the code's filter drops)."""
    k = math.frexp(float(over.max()))[1]
    return np.ldexp(a, -k) >= 2.0 ** -1022


def filter_and_truth(strategy, cols):
    """(Cf, Ct): the filter's matrix (the floats the code reads, proxy for a computed C, with
    the entries its scaling drops set to 0; ``cols`` the columns that set the scale, None for
    a Toeplitz C: its coefficients) and the true C, both exact n x n; None: no witness."""
    n = strategy.n
    used = strategy if _usable(strategy) else lowered_proxy(strategy)
    if used is None:
        return None
    truth = None
    if isinstance(strategy, BLT):
        truth = toeplitz_rows(exact_blt(strategy.buffer_decays, strategy.output_scales, n), n)
    if isinstance(used, Toeplitz) or isinstance(used, BLT):
        c = np.abs(np.asarray(used.toeplitz(), dtype=float))[:n]
        keep = scale_mask(c, c)
        cf = toeplitz_rows([F(float(v)) if kk else F(0) for v, kk in zip(c, keep)], n)
        return cf, truth if truth is not None else toeplitz_rows([F(float(v)) for v in c], n)
    d = np.abs(np.asarray(used.dense(), dtype=float))
    keep = scale_mask(d, d[:, cols] if cols is not None else d)
    cf = [[F(float(d[i, j])) if keep[i, j] else F(0) for j in range(n)] for i in range(n)]
    return cf, [[F(float(d[i, j])) for j in range(n)] for i in range(n)]


def law_of_n(cf, ct, patterns):
    """({N: P}, |u|^2) over ``patterns`` ((set of steps x, probability)), u = sum of the
    filter's columns over the steps given as the filter's pattern (first item)."""
    filt, pats = patterns
    n = len(cf)
    u = [sum((cf[t][s] for s in filt), F(0)) for t in range(n)]
    g = [sum((u[t] * ct[t][s] for t in range(n)), F(0)) for s in range(n)]
    law: dict = {}
    for steps, p in pats:
        v = sum((g[s] for s in steps), F(0))
        law[v] = law.get(v, F(0)) + p
    return law, sum((x * x for x in u), F(0))


def poisson_patterns(n, q, partitions):
    e = list(range(0, n, partitions))
    fq = F(q)
    pats = []
    for bits in itertools.product((0, 1), repeat=len(e)):
        k = sum(bits)
        pats.append(([s for s, b in zip(e, bits) if b], fq ** k * (1 - fq) ** (len(e) - k)))
    return e, pats


def shortfall(shifts, probs, law, norm2) -> Fraction:
    """max over x of P_true[A <= x] - P_w[S <= x] (> 0: not stochastically below), exact;
    the witness masses normalised (MixtureOfGaussians.components). The worst x are just
    below the witness's atoms: P_w[S <= w_i] against P_true[A < w_(i+1)]."""
    order = np.argsort(shifts, kind="stable")
    sh = [F(float(shifts[i])) for i in order]
    pr = [F(float(probs[i])) for i in order]
    tot = sum(pr)
    items = sorted(law.items())                     # N >= 0: sorted as N^2 too
    squares = [v * v for v, _ in items]
    below = list(itertools.accumulate((p for _, p in items), initial=F(0)))
    worst, cum = F(0), F(0)
    for i in range(len(sh) - 1):
        cum += pr[i] / tot
        j = bisect.bisect_left(squares, sh[i + 1] ** 2 * norm2)   # N^2 < w^2 |u|^2
        worst = max(worst, below[j] - cum)
    return worst


def assert_sane(mech):
    s = np.array(mech.sensitivities)
    p = np.array(mech.probabilities)
    assert np.isfinite(s).all() and (s >= 0).all() and (s > 0).any()
    assert np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()
    assert abs(math.fsum(p.tolist()) - 1) <= 1e-12
    assert np.isfinite(np.array(s) / mech.sigma).all()


def check_rate(strategy, sigma, q, partitions):
    ws = R.rate_filter_witnesses(strategy, sigma, q, partitions)
    if not ws:
        return None
    assert len(ws) == 1 and ws[0].group == 0
    (mech, count), = ws[0].parts
    assert count == 1 and isinstance(mech, MixtureOfGaussians) and mech.sigma == sigma
    assert_sane(mech)
    e, pats = poisson_patterns(strategy.n, q, partitions)
    got = filter_and_truth(strategy, np.array(e))
    assert got is not None
    law, norm2 = law_of_n(*got, (e, pats))
    return shortfall(np.array(mech.sensitivities), np.array(mech.probabilities), law, norm2)


def build(kind, n, coeffs, scale, buffers, seed):
    if kind == "blt":
        return BLT(tuple(b[0] for b in buffers), tuple(b[1] for b in buffers), n)
    if kind == "randdense":
        rng = np.random.default_rng(seed)
        d = np.tril(rng.random((n, n)) * (rng.random((n, n)) < 0.7)) * scale
        return DenseStrategy(d) if d.any() and np.isfinite(d).all() else None
    c = [v * scale for v in coeffs]
    if not any(c[:n]) or not all(math.isfinite(v) for v in c):
        return None
    s = Toeplitz(tuple(c), n)
    return DenseStrategy(s.dense()) if kind == "dense" else s


# ---------------------------------------------------------------------------------------
# the rate witness against the exact law

_Q = st.one_of(st.floats(1e-12, 1 - 1e-12),
               st.sampled_from([1e-12, 1 - 1e-12, 0.5, 1 - 2.0 ** -53, 1e-300, 1.0]))
_SIGMA = st.one_of(st.floats(1e-3, 1e3), st.sampled_from([1e-300, 1e300, 1e-150, 1e150]))
_COEFF = st.one_of(st.just(0.0), st.floats(1e-3, 10.0), st.floats(1e-300, 1e-200))
_BUF = st.tuples(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0])),
                 st.one_of(st.floats(0.0, 3.0), st.sampled_from([0.0, 1e-300, 1e300])))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 7), st.integers(1, 9), _Q, _SIGMA, st.integers(-1000, 1000),
       st.lists(_COEFF, min_size=1, max_size=7),
       st.sampled_from(["toeplitz", "dense", "randdense", "blt"]),
       st.lists(_BUF, min_size=1, max_size=3), st.integers(0, 2 ** 31))
@example(1, 1, 0.3, 1.0, 0, [1.0], "toeplitz", [(0.5, 0.5)], 0)               # n = 1
@example(3, 9, 0.3, 1.0, 0, [1.0, 0.5], "dense", [(0.5, 0.5)], 0)             # partitions > n
@example(6, 1, 1e-12, 1e-300, 0, [1.0, 0.5], "toeplitz", [(0.5, 0.5)], 0)
@example(6, 2, 1 - 1e-12, 1e300, 0, [1.0, 0.5], "toeplitz", [(0.5, 0.5)], 0)
@example(6, 1, 0.4, 1.0, 1000, [1.0, 1e-300, 0.7], "toeplitz", [(0.5, 0.5)], 0)
@example(6, 1, 0.4, 1e-300, -1000, [1.0, 1e-300, 0.7], "dense", [(0.5, 0.5)], 0)
@example(5, 1, 0.4, 1.0, 1020, [1.7, 1.0, 1.5], "toeplitz", [(0.5, 0.5)], 0)  # near overflow
@example(6, 1, 0.3, 1.0, 0, [1.0], "blt", [(0.0, 1.0), (1.0, 0.3)], 0)       # theta 0 and 1
@example(6, 2, 0.7, 1e-3, 0, [1.0], "blt", [(0.99, 1e300)], 0)                # c_0 lost in e
@example(6, 1, 0.5, 1.0, 0, [1.0], "blt", [(0.3, 1e-160)], 0)                 # coeff_error 0
@example(7, 1, 0.6, 1.0, 0, [1.0], "randdense", [(0.5, 0.5)], 7)
def test_rate_law_is_stochastically_below_the_exact_one(n, partitions, q, sigma, e, coeffs,
                                                        kind, buffers, seed):
    s = build(kind, n, coeffs, 2.0 ** e, buffers, seed)
    if s is None:
        return
    gap = check_rate(s, sigma, q, partitions)
    assert gap is None or gap <= 0, float(gap)


@pytest.mark.parametrize("q", [1e-12, 1 - 1e-12, 0.5])
def test_reduction_against_the_exact_law(q):
    """Ten distinct shifts on a dense C (1024 patterns: the law reduced onto MAX_COMPONENTS
    values), every pattern enumerated."""
    rng = np.random.default_rng(5)
    d = np.tril(rng.random((10, 10)) + 0.05)
    gap = check_rate(DenseStrategy(d), 0.5, q, 1)
    assert gap is not None and gap <= 0, float(gap)


def grouped_law(g, q) -> dict:
    """{N: P} of N = sum_s x_s g_s, x_s ~ Bernoulli(q) i.i.d., exact: the steps of equal g
    (exact rationals) binomial, the groups convolved with equal sums merged."""
    fq = F(q)
    counts: dict = {}
    for v in g:
        if v:
            counts[v] = counts.get(v, 0) + 1
    law = {F(0): F(1)}
    for v, m in counts.items():
        pk = [comb(m, k) * fq ** k * (1 - fq) ** (m - k) for k in range(m + 1)]
        new: dict = {}
        for a, p in law.items():
            for k in range(m + 1):
                new[a + v * k] = new.get(a + v * k, F(0)) + p * pk[k]
        law = new
    return law


@pytest.mark.parametrize("strategy,q,partitions", [
    (DenseStrategy(np.diag(np.arange(1.0, 35.0))), 0.5, 1),    # 34 groups > MAX_GROUPS
    (Toeplitz((1.0, 0.5, 0.25), 150), 0.3, 1),                 # 148 steps in one group
    (Toeplitz((1.0, 0.5, 0.25), 150), 0.3, 4),
    (BLT((0.5,), (0.25,), 14), 0.5, 1),                         # the proxy, 2^14 patterns
    (BLT((0.9,), (0.3,), 13), 0.3, 1)], ids=["diag34", "toeplitz150", "toeplitz150-p4",
                                             "blt14", "blt13"])
def test_groups_against_the_exact_law(strategy, q, partitions):
    """Many joinable steps, the exact law by grouping equal exact shifts: more than
    MAX_GROUPS distinct shifts (runs lowered), one large binomial group, the BLT's proxy."""
    n = strategy.n
    e = list(range(0, n, partitions))
    ws = R.rate_filter_witnesses(strategy, 1.0, q, partitions)
    (mech, _), = ws[0].parts
    assert_sane(mech)
    cf, ct = filter_and_truth(strategy, np.array(e))
    u = [sum((cf[t][s] for s in e), F(0)) for t in range(n)]
    g = [sum((u[t] * ct[t][s] for t in range(s, n)), F(0)) for s in e]
    norm2 = sum((x * x for x in u), F(0))
    gap = shortfall(np.array(mech.sensitivities), np.array(mech.probabilities),
                    grouped_law(g, q), norm2)
    assert gap <= 0, float(gap)


def test_refusals_are_empty_not_nonsense():
    """q = 1 (a point mass: one value), q subnormal (every positive mass under 2^-1000), a
    shift over sigma beyond the doubles, a signed C: [] rather than a broken mixture."""
    c = dp.BandedToeplitz((1.0, 0.5), 6)
    assert R.rate_filter_witnesses(c, 1.0, 1.0) == []
    assert R.rate_filter_witnesses(c, 1.0, 5e-324) == []
    assert R.rate_filter_witnesses(Toeplitz((1e300, 1e300), 6), 1e-300, 0.5) == []
    assert R.rate_filter_witnesses(DenseStrategy(np.tril(np.ones((3, 3))) - 2 * np.eye(3)),
                                   1.0, 0.5) == []


# ---------------------------------------------------------------------------------------
# the proxy against the exact BLT coefficients


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 1e-200])),
                          st.one_of(st.floats(0.0, 4.0),
                                    st.sampled_from([0.0, 1e-140, 1e-300, 1e150, 1e300]))),
                min_size=1, max_size=3),
       st.integers(1, 40))
@example([(0.0, 1.0)], 5)
@example([(1.0, 1e300), (1.0, 1e300)], 6)         # coefficients inf: no proxy
@example([(1e-200, 1e300)], 8)                    # theta^(k-1) underflowing, omega huge
@example([(0.999, 0.3), (0.5, 2.0)], 40)
def test_proxy_is_between_zero_and_the_exact_coefficients(buffers, n):
    s = BLT(tuple(b[0] for b in buffers), tuple(b[1] for b in buffers), n)
    proxy = lowered_proxy(s)
    exact = exact_blt(s.buffer_decays, s.output_scales, n)
    if proxy is None:
        return
    lo = proxy.toeplitz()
    assert lo.size == n and np.isfinite(lo).all() and (lo >= 0).all()
    for k in range(n):
        assert F(float(lo[k])) <= exact[k], (k, lo[k], float(exact[k]))


def test_proxy_past_max_proxy_bands_against_mpmath():
    """1100 steps (beyond MAX_PROXY_BANDS): the proxy's coefficients below the exact ones
    (mpmath, 300 bits), 0 from MAX_PROXY_BANDS on, and within 2 coeff_error of them."""
    theta, omega = (0.9995, 0.97, 0.3), (0.2, 0.6, 1.5)
    n = 1100
    s = BLT(theta, omega, n)
    lo = lowered_proxy(s).toeplitz()
    with mpmath.workprec(300):
        th = [mpmath.mpf(t) for t in theta]
        om = [mpmath.mpf(w) for w in omega]
        for k in range(n):
            ex = mpmath.mpf(1) if k == 0 else mpmath.fsum(w * t ** (k - 1) for t, w in zip(th, om))
            assert mpmath.mpf(float(lo[k])) <= ex, k
            if k < MAX_PROXY_BANDS:
                assert ex - mpmath.mpf(float(lo[k])) <= 2 * s.coeff_error + 4 * _U * ex
            else:
                assert lo[k] == 0


# ---------------------------------------------------------------------------------------
# the other one-statistic witnesses reading the proxy (balls in bins, fixed bins)


def bins_patterns(n, bins, fixed):
    """(filter steps, [(steps, P)]): fixed bins, bin j's steps j, j + B, ... (1/B each);
    balls in bins, one step per full epoch (the partial epoch's step dropped: a smaller
    law, which the witness must still be below)."""
    if fixed:
        return list(range(n)), [(list(range(j, n, bins)), F(1, bins)) for j in range(bins)]
    epochs = n // bins
    pats = [(list(pick), F(1, bins ** epochs))
            for pick in itertools.product(*[range(e * bins, (e + 1) * bins)
                                            for e in range(epochs)])]
    return list(range(n)), pats


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 2.0)), min_size=1, max_size=2),
       st.integers(1, 7), st.integers(1, 4), st.booleans())
@example([(0.99, 0.3), (0.5, 1.2)], 7, 3, False)
@example([(0.0, 1.0)], 6, 2, True)
def test_bins_witnesses_on_a_proxy_are_below_the_exact_law(buffers, n, bins, fixed):
    s = BLT(tuple(b[0] for b in buffers), tuple(b[1] for b in buffers), n)
    if _usable(s) or lowered_proxy(s) is None:
        return
    truth = toeplitz_rows(exact_blt(s.buffer_decays, s.output_scales, n), n)
    got = filter_and_truth(s, None)
    assert got is not None
    cf = got[0]
    filt, pats = bins_patterns(n, bins, fixed)
    law, norm2 = law_of_n(cf, truth, (filt, pats))
    for w in run_filter_witnesses(s, 1.0, bins, fixed=fixed):
        (mech, _), = w.parts
        if isinstance(mech, Gaussian):             # a point mass below the whole law
            lo = min(v for v, p in law.items() if p > 0)
            assert F(mech.sensitivity) ** 2 * norm2 <= lo * lo
        else:
            assert_sane(mech)
            gap = shortfall(np.array(mech.sensitivities), np.array(mech.probabilities), law,
                            norm2)
            assert gap <= 0, float(gap)
    if fixed:
        # the fixed-bins matched filter: filter m_j* = C' x_j* (no scaling mask there)
        w = fixed_bins_witness(s, 1.0, bins)
        if w is not None:
            (mech, _), = w.parts
            assert_sane(mech)
            lo = lowered_proxy(s).toeplitz()
            cp = toeplitz_rows([F(float(v)) for v in lo], n)
            m = [sum((cp[t][s_] for s_ in range(w.group, n, bins)), F(0)) for t in range(n)]
            law2: dict = {}
            for j in range(min(bins, n)):
                v = sum((m[t] * truth[t][s_] for t in range(n) for s_ in range(j, n, bins)),
                        F(0))
                law2[v] = law2.get(v, F(0)) + F(1, bins)
            if bins > n:
                law2[F(0)] = law2.get(F(0), F(0)) + F(bins - n, bins)
            gap = shortfall(np.array(mech.sensitivities), np.array(mech.probabilities), law2,
                            sum((x * x for x in m), F(0)))
            assert gap <= 0, float(gap)


# ---------------------------------------------------------------------------------------
# the binomial recursion's claimed accuracy


@pytest.mark.parametrize("m,q", [(1, 0.3), (60, 1e-12), (300, 0.5), (300, 1 - 1e-12),
                                 (2000, 0.01)])
def test_binomial_masses_within_the_claimed_bound(m, q):
    first, p = R._binomial(m, q)
    bound = (4 * m + 8) * _U
    with mpmath.workprec(400):
        mq = mpmath.mpf(q)
        for i, v in enumerate(p.tolist()):
            k = first + i
            ex = mpmath.binomial(m, k) * mq ** k * (1 - mq) ** (m - k)
            # (above the truth by at most the bound; below it freely: the masses under
            # 2^-1000 dropped on the way lower the later ones, up to 1e-6 relative here)
            assert mpmath.mpf(v) <= ex * (1 + bound), (k, v, ex)
            if ex > 1e-250:
                assert mpmath.mpf(v) >= ex * (1 - bound), (k, v, ex)


# ---------------------------------------------------------------------------------------
# findings


def _subnormal_products_case():
    n, k_cols = 256, 128
    a = math.ldexp(1 + 2.0 ** -20, -541 + 1001)   # 2^-541 (1 + 2^-20) once scaled by 2^-1001
    big = 2.0 ** 1000                              # the largest entry: 1/2 once scaled
    c = np.zeros((n, n))
    c[k_cols:n - 1, :k_cols] = a                   # 128 identical columns over rows 128..254
    c[n - 1, n - 1] = big
    return DenseStrategy(c), n, k_cols, a, big


def test_regression_subnormal_products_counted_for_every_joinable_step():
    """Columns 0..127 of C are equal (a in rows 128..254), column 255 holds 2^1000 at its
    diagonal; q 0.9, sigma 1e-7 (every mu finite). Scaled, each product a (128 a) is
    2^-1075 (1 + 2^-19): rounded up to 2^-1074, twice its value, and each of the 128 equal
    shifts carries 127 of them; an allowance of (2 * 2 + 2) * 256 * 8 = 12288 half-units
    (58e4fe9) fell short of K * 127 half-units for K > 96. Exact law: A = (g K + G X) / |u|,
    K ~ Bin(128, q), X ~ Bernoulli(q). At 58e4fe9 the witness's CDF fell 0.0947 below."""
    s, n, k_cols, a, big = _subnormal_products_case()
    q, sigma = 0.9, 1e-7
    ws = R.rate_filter_witnesses(s, sigma, q)
    (mech, _), = ws[0].parts
    assert_sane(mech)
    fa, fb, fq = F(a), F(big), F(q)
    g, gb = (n - 1 - k_cols) * k_cols * fa * fa, fb * fb
    norm2 = (n - 1 - k_cols) * (k_cols * fa) ** 2 + fb * fb
    law: dict = {}
    for k in range(k_cols + 1):
        pk = comb(k_cols, k) * fq ** k * (1 - fq) ** (k_cols - k)
        for x in (0, 1):
            v = g * k + gb * x
            law[v] = law.get(v, F(0)) + pk * (fq if x else 1 - fq)
    gap = shortfall(np.array(mech.sensitivities), np.array(mech.probabilities), law, norm2)
    assert gap <= 0, float(gap)


@pytest.mark.parametrize("omega", [1e-160, 2.5e-147, 1.5e-147, 1e-300])
def test_regression_blt_coeff_error_covers_each_coefficient(omega):
    """BLT theta 0.3, tiny omega, 8 steps: at 58e4fe9 coeff_error was 0.0 for 1e-160 and
    1.5e-147 (the squares of the bounds underflowed) and 2.22e-162 < 2.50e-162 (the bound of
    c_1) for 2.5e-147, while c_2 = fl(omega * 0.3) lies above the exact product (1e-160).
    Now every computed coefficient less coeff_error is below the exact one, and the BLT is
    not read as exact."""
    s = BLT((0.3,), (omega,), 8)
    exact = exact_blt(s.buffer_decays, s.output_scales, 8)
    got = s.toeplitz()
    e = F(s.coeff_error)
    assert e > 0 and not _usable(s)
    assert e >= F(9 * _U) * F(omega)          # at least c_1's relative bound
    assert all(F(float(got[k])) - e <= exact[k] for k in range(8))


def test_regression_no_numerical_warning_for_a_huge_output_scale():
    """BLT theta 0.99, omega 1e300 (valid: finite), 6 steps: at 58e4fe9 reaching the proxy
    warned 'overflow encountered in multiply' (BLT.coeff_error), an error under the
    project's filterwarnings. Now no warning (this module runs under that filter), and the
    witness, if any, is below the exact law."""
    s = BLT((0.99,), (1e300,), 6)
    assert math.isfinite(s.coeff_error)
    gap = check_rate(s, 1e-3, 0.7, 2)
    assert gap is None or gap <= 0, float(gap)
