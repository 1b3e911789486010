"""2-out-of-t allocation through the PLD engine without blocks (allocation.two_of_t_pld), and the
pieces it reads: the L-histograms (allocation.lhist) against direct sums over the same outcomes,
the l2 charge of the FFT's error against an exact convolution, the r-merge of fft2.

Independent references: a direct sum over the laws' bins (no histogram), scipy's direct 2-D
convolution (no FFT), the post-processed lower pair, and dpamp's block upper bound (the wiring
it replaces). The curves themselves are checked against the quadrature of the exact t = 3 pair
in test_allocation_two_of_t.py (the engine takes the route from t = 10).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import convolve2d

import dpamp as dp
from dpamp.amplification.allocation import pld as APLD
from dpamp.amplification.allocation import two_of_t_pld as P
from dpamp.amplification.allocation.fft2 import _merge_axis, compose2
from dpamp.amplification.allocation.two_of_t import TwoOfT
from dpamp.pld.query import epsilon_bracket
from dpamp.pld.sources import loss_distribution


@pytest.fixture(scope="module")
def t20():
    return TwoOfT(loss_distribution(dp.Gaussian(sigma=1.5)), 20, dx=0.1, b=30.0, dr=8.0,
                  rows_merge=4)


@pytest.fixture(scope="module")
def t20_3():
    # N = 3 summed too, with a body end low enough that three large coordinates count
    return TwoOfT(loss_distribution(dp.Gaussian(sigma=1.5)), 20, dx=0.1, b=6.0, dr=8.0,
                  rows_merge=4, triples=True)


def _direct_calls(m, x, body_masses):
    """E[(L - x)_+] summed bin by bin over the same outcomes as remove_curve (no histogram)."""
    tt = m.t * (m.t - 1.0)
    n0, merged = m.laws()
    (n1, n1m), (n2, n2m) = merged[:2]
    L0 = ((n0.s_up ** 2)[:, None] - n0.r_lo[None, :]) / tt
    out = np.array([np.sum(body_masses * np.maximum(L0 - v, 0.0)) for v in x])
    out += n0.above_s2 / tt + np.maximum(n0.s_lo ** 2 / tt - x, 0.0) * n0.below_mass
    s = n1m.s_up
    for y, w in zip(m.tail.y_up, m.tail.w_up):
        L1 = ((s * s + 2 * y * s)[:, None] - n1m.r_lo[None, :]) / tt
        out += m.t * w * np.array([np.sum(n1m.U * np.maximum(L1 - v, 0.0)) for v in x])
        lo = n1.s_lo
        out += m.t * w * ((n1.above_s2 + 2 * y * n1.above_s1) / tt
                          + np.maximum((lo * lo + 2 * y * lo) / tt - x, 0.0) * n1.below_mass)
    s, lo = n2m.s_up, n2.s_lo
    s_hi = n2.s0 + n2.dx * n2.U.shape[0]
    y, w = m.tail2.y_up, m.tail2.w_up
    for a in range(y.size):            # N = 2: ordered pairs, C(t, 2) / 2 each
        for b in range(y.size):
            ww = 0.25 * m.t * (m.t - 1) * w[a] * w[b] * 2
            y1, y2 = y[a] + y[b], 2 * y[a] * y[b]
            L2 = ((s * s + 2 * y1 * s + y2)[:, None] - n2m.r_lo[None, :]) / tt
            out += ww * np.array([np.sum(n2m.U * np.maximum(L2 - v, 0.0)) for v in x])
            out += ww * ((n2.above_s2 + 2 * y1 * n2.above_s1 + y2 * n2.above_s1 / s_hi) / tt
                         + np.maximum((lo * lo + 2 * y1 * lo + y2) / tt - x, 0.0) * n2.below_mass)
    if m.triples:                      # N = 3: ordered triples, C(t, 3) each
        (n3, n3m), = merged[2:]
        s, lo = n3m.s_up, n3.s_lo
        s_hi = n3.s0 + n3.dx * n3.U.shape[0]
        y, w = m.tail3.y_up, m.tail3.w_up
        for a in range(y.size):
            for b in range(y.size):
                for c in range(y.size):
                    ww = math.comb(m.t, 3) * w[a] * w[b] * w[c]
                    y1 = y[a] + y[b] + y[c]
                    y2 = 2 * (y[a] * y[b] + y[a] * y[c] + y[b] * y[c])
                    L3 = ((s * s + 2 * y1 * s + y2)[:, None] - n3m.r_lo[None, :]) / tt
                    out += ww * np.array([np.sum(n3m.U * np.maximum(L3 - v, 0.0)) for v in x])
                    out += ww * ((n3.above_s2 + 2 * y1 * n3.above_s1 + y2 * n3.above_s1 / s_hi)
                                 / tt + np.maximum((lo * lo + 2 * y1 * lo + y2) / tt - x, 0.0)
                                 * n3.below_mass)
    return out + m.charge_n2 + m.charge_y


@pytest.mark.parametrize("which", ["t20", "t20_3"])
def test_call_histogram_matches_the_direct_sum(which, request):
    t20 = request.getfixturevalue(which)
    x = np.exp(np.array([0.0, 0.3, 0.8, 1.5, 2.5]))
    got = t20.remove_curve(x)
    n0 = t20.laws()[0]
    with_budget = _direct_calls(t20, x, n0.U)
    no_budget = _direct_calls(t20, x, n0.V)
    # the histogram rounds L up (never below the outcomes' own sum without any budget) and
    # takes the better of the two budgets (never above the per-bin one, up to its 2^-17 grid)
    assert np.all(got >= no_budget * (1 - 1e-12))
    assert np.all(got <= with_budget * (1 + 1e-4) + 1e-300), got / with_budget
    assert np.all(np.diff(got) <= 0.0)


@pytest.mark.parametrize("which", ["t20", "t20_3"])
def test_put_histogram_matches_the_direct_sum(which, request):
    t20 = request.getfixturevalue(which)
    x = np.exp(np.array([0.0, 0.2, 0.5, 1.0]))
    y = 1.0 / x
    got = t20.add_curve(x)
    tt = t20.t * (t20.t - 1.0)
    n0, *rests = t20.put_laws()
    assert len(rests) == (3 if t20.triples else 2)
    # the first count not summed is charged by the union bound over its sets
    j = len(rests) + 1
    assert t20.charge_q >= math.comb(t20.t, j) * t20.qq ** j * (1 - 1e-12)
    L0 = ((n0.s_dn ** 2)[:, None] - n0.r_up[None, :]) / tt
    body = np.array([np.sum(n0.U * np.maximum(v - L0, 0.0)) for v in y])
    # the body alone, without the N = 1 event and the charges, is below; all of it within
    # a few parts in 1e6 of the direct sum's scale plus those terms
    assert np.all(got >= x * body * (1 - 1e-12))
    rest = sum(math.comb(t20.t, j) * t20.qq ** j * (1 + law.outside)
               for j, law in enumerate(rests, 1)) + t20.charge_q + n0.outside
    assert np.all(got <= x * (body + y * rest) * (1 + 1e-4) + x * 1e-6)


def test_l2_charge_covers_the_fft_error_against_a_direct_convolution():
    # a small lattice law: its 4-fold sum by direct convolution (float, no FFT) is the
    # reference; the l2 route's masses V and charges must bound every curve built on it
    rng = np.random.default_rng(3)
    K, I = 6, 4
    w = rng.random((K, I)) * (rng.random((K, I)) < 0.7)
    w[0, 0] = 0.3
    w /= w.sum()
    k, i = np.nonzero(w)
    laws = compose2((k, i, w[k, i]), 0.5, 1.0, (4, 3), 1e-8)
    law = laws[4]
    exact = w
    for _ in range(3):
        exact = convolve2d(exact, w)
    rows = law.s0 / 0.5 + np.arange(law.U.shape[0])
    for c in (np.ones_like(law.U), rng.random(law.U.shape)):
        tot = 0.0
        for wr, row in enumerate(rows.astype(int)):
            if 0 <= row < exact.shape[0]:
                n = min(exact.shape[1], law.U.shape[1])
                tot += float(np.sum(exact[row, :n] * c[wr, :n]))
        v = float(np.sum(law.V * c))
        # (np.where squares every entry: the unselected ones of a scaled factor overflow to
        # inf and are dropped; the selected terms are finite, so err is too)
        with np.errstate(over="ignore"):
            err = sum(e2 * math.sqrt(float(np.sum(np.where(law.sel == p, (f[:, None] * c) ** 2,
                                                           0.0))))
                      for p, (f, e2) in enumerate(zip(law.facs, law.e2)))
        assert math.isfinite(err)
        assert tot <= v + err
        assert tot <= float(np.sum(law.U * c))
        # and the l2 charge is below the per-bin one's total (8x on these 1680 bins; the
        # gain grows like the square root of the number of bins)
        assert err < 0.5 * float(np.sum((law.U - law.V) * c))


def test_r_merge_keeps_mass_and_mean():
    U = np.random.default_rng(0).random((5, 11))
    M = _merge_axis(U, 3, 1)
    assert M.sum() == pytest.approx(U.sum(), rel=1e-12)
    r_f, r_c = np.arange(11), 3 * np.arange(M.shape[1])
    assert (M * r_c[None, :]).sum() == pytest.approx((U * r_f[None, :]).sum(), rel=1e-12)
    assert np.all(M.sum(axis=1) == pytest.approx(U.sum(axis=1), rel=1e-12))


def test_applies_where_the_window_is_affordable():
    g = lambda s: loss_distribution(dp.Gaussian(sigma=s))   # noqa: E731
    assert P.applies(g(1.0), 1000) and P.applies(g(2.0), 10)
    # few steps: the puts' lattice L' < 0 outcomes (sigma 2, t 3: eps(1e-6) unbounded)
    assert not P.applies(g(2.0), 3)
    # heavy tails down to sigma ~0.45 (N = 3 summed and the heavy-tail r-step keep the
    # windows bounded); below, and few steps at small sigma (b^2 / t too large), blocks
    assert P.applies(g(0.6), 1000) and P.applies(g(0.6), 10) and P.applies(g(0.8), 10)
    assert P.applies(g(0.45), 1000) and not P.applies(g(0.4), 1000)
    assert P.applies(g(0.5), 100) and not P.applies(g(0.5), 10)
    assert not P.applies(g(1.0), 4)
    # a narrow epoch loss (2 sqrt(Var X / t) < MIN_SD): the blocks are within the tolerance
    assert not P.applies(g(2.0), 1000) and not P.applies(g(1.0), 10000)
    assert not P.applies(loss_distribution(dp.Laplace(1.0)), 1000)
    assert not P.applies(loss_distribution(dp.RandomizedResponse(0.75)), 1000)


def test_body_end_meets_its_charge():
    from dpamp.amplification.allocation.tail import tail_masses
    from dpamp.amplification.allocation.two_of_t import charge_many
    loss = loss_distribution(dp.Gaussian(sigma=1.0))
    t = 1000
    b = P.body_end(loss, t, 1e-12)
    for bb, ok in ((b, True), (b * 0.9, False)):
        pp, qq = tail_masses(loss, math.log(bb))
        assert (charge_many(pp, qq, t, 3) <= 1e-12 * (1 + 1e-9)) == ok
    # the union bound over triples against its terms written out (two P0-coordinates)
    pp, qq = 1e-3, 1e-5
    n = t - 2
    three = pp * pp * n * qq + 2 * pp * math.comb(n, 2) * qq ** 2 + math.comb(n, 3) * qq ** 3
    assert charge_many(pp, qq, t, 3) == pytest.approx(three, rel=1e-12)
    two = pp * pp + 2 * pp * n * qq + math.comb(n, 2) * qq ** 2
    assert charge_many(pp, qq, t, 2) == pytest.approx(two, rel=1e-12)
    # and for m = 2, 3, 4 the union bound enumerated over the m-sets of a small t
    import itertools
    probs = [pp, pp] + [qq] * 7
    for m in (2, 3, 4):
        brute = sum(math.prod(probs[i] for i in c) for c in itertools.combinations(range(9), m))
        assert charge_many(pp, qq, 9, m) == pytest.approx(brute, rel=1e-12)
        assert charge_many(pp, qq, 9, m) >= brute


def test_triples_are_upper_bounds_and_close_to_pairs():
    """N = 3 summed (b from the N >= 4 charge) against N = 3 charged (b from N >= 3): both
    are upper bounds of one curve, above the post-processed lower pair's, and within a few
    percent of each other (the large coordinates' sums are a little looser than the body's)."""
    from dpamp.amplification.allocation.lower_k import _tpair
    loss = loss_distribution(dp.Gaussian(sigma=1.0))
    t = 40
    x = np.exp(np.array([0.5, 1.5, 2.5, 3.5]))
    b3, b4 = P.body_end(loss, t, many=3), P.body_end(loss, t, many=4)
    assert b4 < 0.6 * b3
    kw = dict(dx=0.1, dr=64.0, rows_merge=4)
    m3 = TwoOfT(loss, t, b=b3, **kw)
    m4 = TwoOfT(loss, t, b=b4, triples=True, **kw)
    assert m4.triples and m4.charge_n2 <= 1.001e-15
    r3, r4 = m3.remove_curve(x), m4.remove_curve(x)
    a3, a4 = m3.add_curve(x), m4.add_curve(x)
    from dpamp.pld.discretize import discretize
    h = 0.002
    for remove, c3, c4, rel in ((True, r3, r4, 0.05), (False, a3, a4, 0.5)):
        low = _tpair(dp.Gaussian(1.0), 2, t).pair_fitting(0.01, remove)
        lo = discretize(low, h, -int(6 / h), int(6 / h), optimistic=True)
        ls = -int(6 / h) + np.arange(lo.lower.size)
        for xi, u3, u4 in zip(x, c3, c4):
            # the lower pair's curve at x (its PMF's hockey stick), below both
            lw = float(np.sum(lo.lower * np.maximum(1.0 - xi * np.exp(-ls * h), 0.0)))
            assert lw <= min(u3, u4) * (1 + 1e-9)
            assert u4 == pytest.approx(u3, rel=rel)


def _blocks(monkeypatch):
    monkeypatch.setattr(P, "applies", lambda loss, t: False)
    APLD._two_grid.cache_clear()


def test_engine_parts_and_both_curves_of_the_source():
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(2, 200))
    parts = APLD.allocation_parts(dp.Gaussian(1.0), 2, 200)
    assert [type(s).__name__ for s, _ in parts] == ["TwoOfTSource", "TLowerSource"]
    src, low = parts[0][0], parts[1][0]
    h, jlo, jhi = 0.02, -40, 60
    loss = h * np.arange(jlo, jhi + 1)
    two = src.grid.for_step(h)

    def curve(d, x, lower=False):
        pm, inf = (d.lower, d.lower_inf) if lower else (d.upper, d.upper_inf)
        return float(np.sum(np.maximum(pm * (1 - x * np.exp(-loss)), 0))) + inf

    for s, lo in ((src, low), (src.swapped(), low.swapped())):
        d = s.discretize(h, jlo, jhi)
        assert np.all(d.upper >= 0) and d.upper.sum() + d.upper_inf <= 1 + 1e-9
        # the PMF's curve is the lower convex hull of the 2-D values (at most them at the
        # grid points) and lies above the post-processed pair's (a lower bound of the truth)
        vals = (two.remove_curve if s.remove else two.add_curve)
        dl = lo.discretize(h, jlo, jhi)
        for j in (0, 10, 25):
            x = math.exp(j * h)
            up = curve(d, x)
            assert up >= curve(dl, x, lower=True)
            # (at x = 1 both halves take the larger of their two values: the hull's knot)
            if j > 0:
                assert up <= float(vals(np.array([x]))[0]) * (1 + 1e-9)
    assert m.epsilon(1e-6, method="pld").lower > 0


def test_sigma2_t10_within_its_bracket_and_below_the_blocks(monkeypatch):
    m = dp.Gaussian(2.0).subsample(dp.RandomAllocation(2, 10))
    two = epsilon_bracket(m, 1e-6)
    assert two.met and two.lower > 0
    _blocks(monkeypatch)
    from dpamp.pld import query
    monkeypatch.setattr(query, "_CACHE", type(query._CACHE)())
    blocks = epsilon_bracket(dp.Gaussian(2.0).subsample(dp.RandomAllocation(2, 10)), 1e-6)
    # measured: [1.47297, 1.47377]; the blocks' upper end is well above
    assert two.upper < blocks.upper
    assert blocks.lower <= two.upper


@pytest.mark.slow
def test_sigma1_t100_meets_the_tolerance_and_beats_the_blocks(monkeypatch):
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(2, 100))
    two = epsilon_bracket(m, 1e-6)
    assert two.met and (two.upper - two.lower) <= 1e-3 * two.upper
    _blocks(monkeypatch)
    from dpamp.pld import query
    monkeypatch.setattr(query, "_CACHE", type(query._CACHE)())
    # a new mechanism object: the parts are cached per object
    blocks = epsilon_bracket(dp.Gaussian(1.0).subsample(dp.RandomAllocation(2, 100)), 1e-6)
    # measured: [1.51729, 1.51822] against the blocks' upper end 1.55514
    assert two.upper < blocks.upper - 0.02
    assert two.lower <= blocks.upper and blocks.lower <= two.upper


@settings(max_examples=4, deadline=None)
@given(sigma=st.floats(1.0, 3.0), t=st.integers(10, 120), eps=st.floats(0.0, 3.0))
def test_both_curves_above_the_post_processed_pair(sigma, t, eps):
    # the 2-D curves bound the true pair's from above, the split statistic's pair from below:
    # at any grid the engine would take, both halves must be ordered
    from dpamp.amplification.allocation.lower_split import SplitPair
    loss = loss_distribution(dp.Gaussian(sigma=sigma))
    two = P.Grid(loss, t).for_step(0.05)
    tp = SplitPair(loss, 2, t)
    x = np.array([math.exp(eps)])
    for remove, curve in ((True, two.remove_curve), (False, two.add_curve)):
        pr = tp.pair(tp.dx_for(1e-3), remove)
        low = float(np.sum(np.maximum(pr.atom_p - x[0] * pr.atom_q, 0.0)))
        assert low <= float(curve(x)[0]) * (1 + 1e-9) + 1e-300


def test_paired_blocks_structure():
    # k = 5 of 1000: units of 200 steps, two pairs of 2-out-of-400 and one 1-out-of-200
    parts = APLD.allocation_parts(dp.Gaussian(1.0), 5, 1000)
    kinds = [(type(s).__name__, c) for s, c in parts]
    assert kinds == [("TwoOfTSource", 2), ("UpperOnly", 1), ("TLowerSource", 1)]
    assert parts[0][0].grid.t == 400 and parts[1][0].inner.epoch.t == 200
    # where no pair applies (sigma 0.4: the tail too heavy) the blocks stay as they were
    parts = APLD.allocation_parts(dp.Gaussian(0.4), 4, 1000)
    assert [type(s).__name__ for s, _ in parts] == ["UpperOnly", "TLowerSource"]


@pytest.mark.slow
def test_paired_blocks_below_the_single_draw_blocks(monkeypatch):
    from dpamp.pld import query
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(4, 400))
    paired = epsilon_bracket(m, 1e-6)
    _blocks(monkeypatch)
    monkeypatch.setattr(query, "_CACHE", type(query._CACHE)())
    single = epsilon_bracket(dp.Gaussian(1.0).subsample(dp.RandomAllocation(4, 400)), 1e-6)
    # both are upper bounds of the same epoch; two draws per block are the tighter ones
    assert paired.upper < single.upper
    assert max(paired.lower, single.lower) <= min(paired.upper, single.upper)


def test_histograms_keep_a_nan_mass_as_unbounded():
    # an outcome whose mass is not a number has no bound: +inf where it counts, not dropped
    from dpamp.amplification.allocation.lhist import Calls, Puts
    c = Calls(1.0)
    c.add(np.array([[3.0]]), np.array([[0.0, 0.5]]), np.array([[np.nan, 0.1]]))
    c.finish()
    v = c.calls(np.array([1.5, 2.9, 4.0]))
    assert np.isinf(v[:2]).all() and v[2] == 0.0
    p = Puts(1.0)
    p.add(np.array([[0.3]]), np.array([[0.0]]), np.array([[np.nan]]))
    p.finish()
    w = p.puts(np.array([0.2, 0.5]))
    assert w[0] == 0.0 and np.isinf(w[1])


def test_composed_curve_lies_in_the_engines_bracket_of_the_same_blocks():
    """The blocks' curve (two 1-out-of-m epochs composed) at e^{i h} against the engine's own
    delta bracket of that composition (Gaussian, two epochs of 1-out-of-m allocation): at or
    above its lower end, and close to its upper end."""
    base, m = dp.Gaussian(1.0), 50
    unit = APLD._source(base, m, False)
    h, jlo, jhi = 0.004, -1500, 1500
    eps = np.array([0.5, 1.0, 2.0])
    idx = np.round(eps / h).astype(int)
    for parts, mech in (([(unit, 2)], base.subsample(dp.RandomAllocation(1, m)) * 2),
                        ([(unit.swapped(), 2)], None)):
        curve = P.composed_curve(parts, h, jlo, jhi, int(idx.max()) + 1)
        assert np.all(np.diff(curve) <= 1e-15) and np.all(curve >= 0)
        if mech is None:
            continue
        for e, i in zip(eps, idx):
            g = mech.delta(float(i * h), method="pld")
            assert g.lower <= curve[i] * (1 + 1e-9)
            assert curve[i] <= g.delta * 1.05
    # the composition of two parts equals two counts of one
    one = P.composed_curve([(unit, 1), (unit, 1)], h, jlo, jhi, 600)
    two = P.composed_curve([(unit, 2)], h, jlo, jhi, 600)
    np.testing.assert_allclose(one, two, rtol=1e-12, atol=1e-300)


def test_composed_curve_of_two_gaussians_is_the_closed_form_from_above():
    """Two Gaussian (mu = 1) parts composed: the Gaussian mu = sqrt(2) curve
    Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2), from above and within 1e-5."""
    from scipy.stats import norm
    g = loss_distribution(dp.Gaussian(1.0))
    h = 0.002
    curve = P.composed_curve([(g, 2)], h, -3000, 3000, 2001)
    mu = math.sqrt(2.0)
    for i in (0, 250, 500, 1000, 2000):
        e = i * h
        exact = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
        assert exact <= curve[i] <= exact * (1 + 1e-5)


def test_coarse_curve_by_chords_stays_above_the_closed_form():
    """A grid of more points than the direct convolution takes: the curve on a coarser grid and
    chords between its points (the curve is convex in x), above the exact Gaussian mu =
    sqrt(2) curve at every fine point, and close to it."""
    from scipy.stats import norm
    g = loss_distribution(dp.Gaussian(1.0))
    h, n = 2e-4, 12001
    curve = P.coarse_curve(lambda hc, lo, hi, nc: P.composed_curve([(g, 2)], hc, lo, hi, nc),
                           h, -30000, 30000, n, points=6001)
    mu = math.sqrt(2.0)
    e = h * np.arange(n)
    exact = norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2)
    assert np.all(exact <= curve)
    assert np.all(curve <= exact * (1 + 1e-4) + 1e-12)
