"""The proven lower bound of k-out-of-t random allocation, 1 < k < t
(dpamp.amplification.allocation.lower_k): brute force over every output of tiny epochs of
discrete bases, the laws of T against 40-digit convolutions, the k = 1 and k = t cross-checks,
and properties of DP-SGD-sized plans."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.amplification.allocation import lower_k as LK
from dpamp.pld.query import delta_bracket
from dpamp.pld.sources import loss_distribution, parts_of


def _brute_pair(base, k, t):
    """Every output of one k-out-of-t epoch of a purely atomic base (an output of a step is
    one atom of its dominating pair; the loss +inf atom is an output Q0 never gives), 50
    digits: P(y) = mean over k-subsets S of prod_{i in S} P0(y_i) prod_{i not in S} Q0(y_i),
    Q(y) = prod Q0(y_i). Independent of the code under test but for the base's atoms."""
    import mpmath as mp
    mp.mp.dps = 50
    L = loss_distribution(base)
    p0 = [mp.mpf(float(v)) for v in L.atom_p]
    q0 = [mp.mpf(float(v)) for v in L.atom_q]
    subsets = list(itertools.combinations(range(t), k))
    P, Q = [], []
    for y in itertools.product(range(len(p0)), repeat=t):
        q = mp.fprod(q0[j] for j in y)
        p = mp.fsum(mp.fprod(p0[y[i]] if i in S else q0[y[i]] for i in range(t))
                    for S in subsets) / len(subsets)
        P.append(p)
        Q.append(q)
    return P, Q


def _delta(P, Q, eps):
    import mpmath as mp
    x = mp.e ** mp.mpf(eps)
    rem = mp.fsum(max(p - x * q, 0) for p, q in zip(P, Q))
    add = mp.fsum(max(q - x * p, 0) for p, q in zip(P, Q))
    return max(rem, add)


def _epsilon(P, Q, delta):
    """epsilon(delta) of the exact pair by bisection (the curve is non-increasing)."""
    lo, hi = 0.0, 50.0
    if _delta(P, Q, 0.0) <= delta:
        return 0.0
    if _delta(P, Q, hi) > delta:
        return math.inf            # the mass at +inf alone exceeds delta
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _delta(P, Q, mid) > delta else (lo, mid)
    return hi


def _directions(P, Q, eps):
    import mpmath as mp
    x = mp.e ** mp.mpf(eps)
    return (float(mp.fsum(max(p - x * q, 0) for p, q in zip(P, Q))),
            float(mp.fsum(max(q - x * p, 0) for p, q in zip(P, Q))))


@pytest.mark.parametrize("t,k", [(3, 2), (4, 2), (4, 3)])
@pytest.mark.parametrize("base", [dp.PureDP(1.0), dp.EpsDelta(0.5, 0.01)])
def test_tiny_epochs_against_brute_force(t, k, base):
    P, Q = _brute_pair(base, k, t)
    m = base.subsample(dp.RandomAllocation(k, t))
    tp = LK._TPair(loss_distribution(base), k, t)
    rr = isinstance(base, dp.PureDP)
    for eps in (0.2, 0.8):
        rem, add = _directions(P, Q, eps)
        exact = max(rem, add)
        b = delta_bracket(m, eps, max_rounds=3)
        assert b.lower is not None and b.lower > 0
        assert b.lower <= exact * (1 + 1e-12)
        assert exact <= b.upper * (1 + 1e-12)
        # the post-processed pair itself, per direction: below the truth; for randomized
        # response T (the number of high values) is sufficient, so it is the truth
        for remove, truth in ((True, rem), (False, add)):
            low = _atoms_delta(tp.pair(0.01, remove), eps)
            assert low <= truth * (1 + 1e-12)
            if rr:
                assert low >= truth * (1 - 1e-7)
        # the bracket's lower end is that of the direction with the larger upper end
        # (dpamp.pld.query), within the grid's error of it
        if rr:
            assert b.lower >= 0.97 * min(rem, add), (b.lower, rem, add, b.upper)
    exact_e = _epsilon(P, Q, 1e-3)
    g = m.epsilon(1e-3, method="pld")
    assert g.lower <= exact_e + 1e-9
    if rr:
        assert exact_e <= g.epsilon + 1e-9
        assert g.lower >= 0.9 * exact_e


def test_add_direction_with_mass_at_minus_inf():
    """An (eps, delta) base has Q0-mass at loss -inf (X = 0); the add direction reflects X to
    Y = a_K - X, where that atom is Y = a_K. It was dropped (upper 0.0984 below the brute-force
    0.1063, Cells.reflected); the k = 1 PLD and the k > 1 blocks are now above the truth."""
    base = dp.EpsDelta(0.5, 0.01)
    P, Q = _brute_pair(base, 1, 2)
    rem, add = _directions(P, Q, 0.2)          # 0.0697, 0.1063
    b = delta_bracket(base.subsample(dp.RandomAllocation(1, 2)), 0.2, max_rounds=3)
    assert max(rem, add) <= b.upper * (1 + 1e-12)
    assert b.lower <= max(rem, add) * (1 + 1e-12)


@settings(max_examples=12, deadline=None)
@given(eps0=st.floats(0.1, 2.5), t=st.integers(3, 5), data=st.data())
def test_hypothesis_randomized_response(eps0, t, data):
    k = data.draw(st.integers(2, t - 1))
    eps = data.draw(st.floats(0.0, 1.5 * k * eps0))
    base = dp.PureDP(eps0)
    P, Q = _brute_pair(base, k, t)
    exact = float(_delta(P, Q, eps))
    b = delta_bracket(base.subsample(dp.RandomAllocation(k, t)), eps, max_rounds=2)
    assert b.lower <= exact * (1 + 1e-12) + 1e-300
    # the brute force's own rounding: at eps = k eps0 the exact delta is 0 and it gave 5e-17
    assert exact <= b.upper * (1 + 1e-12) + 1e-15


def _mp_cells(mu, knots):
    """P0, Q0 masses of the cells of the loss (-inf, l_1], ..., (l_K, inf] for the Gaussian
    pair N(mu, 1) vs N(0, 1) (loss ~ N(+-mu^2/2, mu^2)), 40 digits."""
    import mpmath as mp
    mp.mp.dps = 40
    mu = mp.mpf(mu)
    ls = [-mp.inf] + [mp.mpf(float(v)) for v in knots] + [mp.inf]
    P = [mp.ncdf((b - mu * mu / 2) / mu) - mp.ncdf((a - mu * mu / 2) / mu)
         for a, b in zip(ls[:-1], ls[1:])]
    Q = [mp.ncdf((b + mu * mu / 2) / mu) - mp.ncdf((a + mu * mu / 2) / mu)
         for a, b in zip(ls[:-1], ls[1:])]
    return P, Q


def _mp_conv(a, b):
    import mpmath as mp
    out = [mp.mpf(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x == 0:
            continue
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def test_laws_of_T_against_40_digit_convolutions():
    """Gaussian sigma = 1, k = 2, t = 4 on coarse cells: every bin's computed bounds bracket
    the law of T (cell masses and convolutions in 40 digits) and are tight where it matters."""
    tp = LK._TPair(loss_distribution(dp.Gaussian(1.0)), 2, 4)
    dy = 0.2
    knots = tp._knots(dy)
    p, q = _mp_cells(1.0, knots)
    PT = _mp_conv(_mp_conv(p, p), _mp_conv(q, q))
    QT = _mp_conv(_mp_conv(q, q), _mp_conv(q, q))
    r = tp.compute(dy)
    for (lo, up), exact in ((r["P"], PT), (r["Q"], QT)):
        n = len(exact)
        lo = np.concatenate([lo, np.zeros(max(0, n - lo.size))])[:n]
        up = np.concatenate([up, np.full(max(0, n - up.size), np.inf)])[:n]
        ex = np.array([float(v) for v in exact])
        assert np.all(lo <= ex * (1 + 1e-14) + 1e-300)
        assert np.all(ex <= up * (1 + 1e-14))
        big = ex > 1e-6
        assert np.all(lo[big] >= ex[big] * (1 - 1e-6))
        assert np.all(up[big] <= ex[big] * (1 + 1e-6))


def _atoms_delta(pair, eps):
    """delta(eps) of a pair of atoms, directly: sum (p - e^eps q)_+."""
    return float(np.sum(np.maximum(pair.atom_p - math.exp(eps) * pair.atom_q, 0.0)))


@pytest.mark.parametrize("t", [3, 6])
def test_k_equals_t_below_the_composition_closed_form(t):
    """For k = t the post-processed pair is one of the t-fold composition of N(1, 1) vs
    N(0, 1), i.e. of N(sqrt(t), 1) vs N(0, 1) (004 Cor. 8): below its closed form, and close."""
    from scipy.special import ndtr
    tp = LK._TPair(loss_distribution(dp.Gaussian(1.0)), t, t)
    mu = math.sqrt(t)
    for eps in (0.5, 2.0, 4.0):
        exact = ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2)
        for remove in (True, False):
            low = _atoms_delta(tp.pair(tp.dx_for(2e-3), remove), eps)
            assert low <= exact * (1 + 1e-12)
            assert low >= 0.7 * exact      # (measured 0.78-0.9: T is not log prod X)


@pytest.mark.slow
def test_k1_is_a_lower_bound_of_the_certified_k1_bracket():
    """For k = 1 the same construction is a valid (looser) lower bound: below the existing
    certified upper bound and near its lower one."""
    t = 50
    tp = LK._TPair(loss_distribution(dp.Gaussian(1.0)), 1, t)
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, t))
    for eps in (0.3, 0.8):
        b = delta_bracket(m, eps, tol=1e-9, max_rounds=4)
        low = max(_atoms_delta(tp.pair(tp.dx_for(1e-3), r), eps) for r in (True, False))
        assert low <= b.upper
        assert low >= 0.9 * b.lower


def test_gaussian_k2_t4_bracket():
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(2, 4))
    for eps in (1.0, 3.0):
        b = delta_bracket(m, eps, max_rounds=4)
        assert 0 < b.lower <= b.upper
    g = m.epsilon(1e-6, method="pld")
    assert 0 < g.lower <= g.epsilon and "1 < k < t" in g.note
    # the composition of the two steps a record takes part in bounds the epoch from above
    two = (dp.Gaussian(1.0) * 2).epsilon(1e-6, method="pld")
    assert g.lower <= two.epsilon


@pytest.mark.slow
@pytest.mark.parametrize("k,epochs", [(2, 1), (5, 10), (10, 1)])
def test_dpsgd_sized_plans(k, epochs):
    """sigma 1, t 1000: a positive lower end below the upper one, within a few per cent of it
    (measured: k = 2: 3e-3, k = 5 x 10 epochs: 2e-3, k = 10: 4e-3 of epsilon), and Poisson at
    rate k/t above the lower end (FS25b: allocation is at most Poisson there, asymptotically)."""
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(k, 1000)) * epochs
    g = m.epsilon(1e-6, method="pld")
    assert g.lower is not None and 0 < g.lower <= g.epsilon
    assert (g.epsilon - g.lower) / g.epsilon < 0.03
    d = m.delta(g.lower, method="pld")
    assert d.lower is not None and 0 < d.lower <= d.delta


def test_parts_wiring_and_epochs():
    """The blocks keep their uppers with a trivial lower, one more part carries the lower; an
    epoch count multiplies every part's count."""
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(3, 10))
    parts = parts_of(m * 4)
    kinds = [type(s).__name__ for s, _ in parts]
    assert kinds.count("TLowerSource") == 1 and kinds.count("UpperOnly") == 2
    assert sorted(c for _, c in parts) == [4, 4, 8]
    src = next(s for s, _ in parts if isinstance(s, LK.TLowerSource))
    d = src.discretize(0.01, -300, 500)
    one = np.zeros(801)
    one[300] = 1.0
    assert np.array_equal(d.upper, one) and d.upper_inf == 0.0
    assert d.lower.sum() > 0.99
    u = next(s for s, _ in parts if isinstance(s, LK.UpperOnly)).discretize(0.01, -300, 500)
    assert np.array_equal(u.lower, one) and u.upper.sum() > 0.99
    assert isinstance(src.swapped(), LK.TLowerSource) and not src.swapped().remove


def test_pessimistic_pass_does_not_compute_the_lower_pair(monkeypatch):
    """A pessimistic-only pass reads only the upper PMFs: the lower part's upper is the point
    mass at 0, so its range there is {0} and its (costly) pair is never composed; the
    optimistic pass still sizes it from the pair."""
    from dpamp.pld import batch
    m = dp.Gaussian(1.0).subsample(dp.RandomAllocation(3, 30))
    parts = parts_of(m)
    src = next(s for s, _ in parts if isinstance(s, LK.TLowerSource))
    calls = []
    orig = LK._TPair.pair_fitting
    monkeypatch.setattr(LK._TPair, "pair_fitting",
                        lambda self, *a, **kw: calls.append(a) or orig(self, *a, **kw))
    assert batch._range(src, 1e-12, 0.01, scan=False) == (0.0, 0.0)
    pp = batch.discretize_parts(parts, 0.01, 1e-11, optimistic=False)
    assert calls == []
    one = next(p for p, (s, _) in zip(pp, parts) if s is src)
    assert one.d.upper.sum() == 1.0 and one.d.upper[-one.d.jlo] == 1.0
    lo, hi = batch._range(src, 1e-12, 0.01, scan=True)
    assert calls and hi > 0.1
