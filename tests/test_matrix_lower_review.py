"""An independent review of the amplified route's lower end (dpamp.amplification.matrix.lower):
the witnesses against the strategy's EXACT entries (a BLT's coefficients in rational
arithmetic), their structure (disjoint read sets, the orthogonal spacing) over adversarial C
(negative entries, non-Toeplitz bands, cyclic Poisson with n not divisible by p), and the
family's answer against the exact delta of actual pairs of neighbours (mpmath, n <= 3)."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.amplification.matrix import lower as LW
from dpamp.families.matrix import amplified_delta, amplified_epsilon, lower_witnesses

from oracles.mixture_1d import bernoulli_mixture_delta
from test_matrix_amplified_lower import exact_delta_mp


def _exact_blt(s: dp.BLT) -> list[Fraction]:
    """c_0 = 1, c_k = sum_i omega_i theta_i^(k - 1) in rational arithmetic (the BLT the
    floats name)."""
    th = [Fraction(t) for t in s.buffer_decays]
    om = [Fraction(w) for w in s.output_scales]
    return [Fraction(1)] + [sum(w * t ** (k - 1) for w, t in zip(om, th))
                            for k in range(1, s.n)]


def _pattern_shifts(vals):
    """The exact shifts sum_j v_j s_j over s in {0, 1}^k, with their probabilities' patterns'
    sizes."""
    return sorted(sum(v * b for v, b in zip(vals, bits))
                  for bits in itertools.product((0, 1), repeat=len(vals)))


# --- a BLT's computed coefficients: the fixed-direction witness must round them ---------------

#: theta_2 one part in 10^6 above theta_1 and omega = (w, -w): c_2 = w (theta_1 - theta_2)
#: cancels, and its computed value is 1.1e-12 (relative) ABOVE the exact one in magnitude
_CANCEL = ((0.2286814667553363, 0.2286824667553363), (0.0574374359878381, -0.0574374359878381))


def test_blt_fixed_direction_shifts_are_below_the_exact_ones():
    """Cyclic Poisson, 2 groups, n = 3: group 0 (steps 0 and 2) is read by row 2 through c_2
    and c_0. Every positive shift of the witness's mixture must be at most the exact shift of
    the same rank (a stochastically smaller law): the computed c_2 is above the exact one by
    far more than the 64 ulps the shifts are rounded by, so the entries must be rounded by
    the strategy's coefficient error."""
    s = dp.BLT(*_CANCEL, 3)
    exact = _exact_blt(s)
    m = dp.MatrixMechanism(s, 1.0, participation=dp.CyclicPoisson(0.3, 2))
    fixed = [w for w in lower_witnesses(m) if w.name == LW.FIXED][0]
    assert fixed.group == 0
    for part, _ in fixed.parts:
        built = sorted(Fraction(x) for x in part.sensitivities)
        want = _pattern_shifts([abs(exact[2]), abs(exact[0])])
        assert len(built) <= len(want)
        # rank by rank from the top: the built law is below the exact one
        for a, b in zip(built[::-1], want[::-1]):
            assert a <= b


def test_blt_read_sets_follow_the_exact_coefficients():
    """theta = (0.9, 0.9 + 1 ulp), omega = (0.3, -0.3): c_2 computes to exactly 0 while the
    exact c_2 is -3.3e-17, so row 2 reads step 0 as row 0 does. The kept rows must have
    disjoint read sets under the EXACT C (else the kept coordinates share s_0 and the product
    is not the pair's law): at most one of rows 0 and 2, or a part without step 0."""
    s = dp.BLT((0.9, math.nextafter(0.9, 1.0)), (0.3, -0.3), 3)
    exact = _exact_blt(s)
    assert s.toeplitz()[2] == 0.0 and exact[2] != 0
    m = dp.MatrixMechanism(s, 1.0, participation=dp.Poisson(0.3))
    fixed = [w for w in lower_witnesses(m) if w.name == LW.FIXED][0]
    # rows 0, 1, 2 each kept would be three single-step parts (3 mixtures of 2 shifts)
    singles = sum(k for part, k in fixed.parts if len(part.sensitivities) == 2)
    assert singles <= 2


def test_blt_lower_end_below_the_upper_end():
    for th, om in (_CANCEL, ((0.9, math.nextafter(0.9, 1.0)), (0.3, -0.3)),
                   ((0.95, 0.5), (0.4, -0.3))):
        m = dp.MatrixMechanism(dp.BLT(th, om, 6), 1.2, participation=dp.Poisson(0.2))
        g = amplified_delta(m, 0.5)
        assert g.lower is not None and g.lower <= g.delta


# --- structure over adversarial C ---------------------------------------------------------------

def _random_banded(rng, n, b, negative=True):
    c = np.zeros((n, n))
    for t in range(n):
        for j in range(max(0, t - b + 1), t + 1):
            v = rng.uniform(0.1, 1.5) * (rng.choice([-1.0, 1.0]) if negative else 1.0)
            c[t, j] = 0.0 if (rng.random() < 0.15 and j != t) else v
    return c


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 13), b=st.integers(1, 6),
       p=st.integers(1, 5))
def test_orthogonal_witness_spacing_and_norms(seed, n, b, p):
    """The docstring's assignment (the k-th joinable step of the group on e_(k mod D), D =
    the witness's dimensions): steps on one vector have columns with disjoint row supports,
    so the pair is the product over the group's steps; and each mu is at most the exact
    column norm / sigma (rank by rank), one per joinable step with a non-zero column."""
    rng = np.random.default_rng(seed)
    b = min(b, n)
    c = _random_banded(rng, n, b)
    bands = int(max(i - j for i, j in zip(*np.nonzero(c)))) + 1
    sigma = 1.3
    w = LW.orthogonal(np.sum(c * c, axis=0), bands, sigma, 0.2, p)
    steps = [j for j in range(n) if j % p == w.group]
    d = w.dimensions
    assert d <= max(1, len(steps))
    for i in range(d):
        mine = steps[i::d]
        for a, a2 in itertools.combinations(mine, 2):
            assert not (np.flatnonzero(c[:, a]).tolist() and
                        set(np.flatnonzero(c[:, a])) & set(np.flatnonzero(c[:, a2])))
    mus = sorted(float(part.base.sensitivity) for part, k in w.parts for _ in range(k))
    norms = sorted(math.sqrt(math.fsum(x * x for x in c[:, j])) / sigma for j in steps)
    norms = [v for v in norms if v > 0]
    assert len(mus) <= len(norms)
    for a, v in zip(mus[::-1], norms[::-1]):
        assert a <= v


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 13), b=st.integers(1, 6),
       p=st.integers(1, 5))
def test_fixed_direction_rows_are_disjoint_and_dominated(seed, n, b, p):
    """The kept rows of the chosen group (recomputed as fixed_direction does) read disjoint
    sets of the group's steps under the exact C, and the witness's parts are those rows'
    sorted |C| values with each shift at most the exact pattern shift of the same rank."""
    rng = np.random.default_rng(seed)
    b = min(b, n)
    c = _random_banded(rng, n, b)
    bands = int(max(i - j for i, j in zip(*np.nonzero(c)))) + 1
    w = LW.fixed_direction(c, bands, 1.0, 0.3, p)
    e = np.arange(n) % p == w.group
    view = np.where(e[None, :], np.abs(c), 0.0)
    rows = LW.select_rows(LW.offset_rows(view, bands))
    reads = [set(np.flatnonzero(view[t])) for t in rows]
    for a, a2 in itertools.combinations(reads, 2):
        assert not a & a2
    want = sorted(tuple(sorted((float(x) for x in view[t] if x > 0), reverse=True))
                  for t in rows)
    got = []
    for part, k in w.parts:
        got += [part] * k
    assert len(got) == len(want)
    # each part dominated by some distinct kept row's exact law (matched by sorted shifts)
    built = sorted(tuple(sorted(Fraction(x) for x in part.sensitivities)) for part in got)
    exact = sorted(tuple(_pattern_shifts([Fraction(v) for v in row])) for row in want)
    for bb, ee in zip(built, exact):
        assert len(bb) <= len(ee)
        for x, y in zip(bb[::-1], ee[::-1]):
            assert x <= y


# --- the family's answer against actual pairs of neighbours (mpmath) --------------------------

def product_delta(mus, q, eps):
    """The exact delta(eps) (largest of both orders) of the product of Poisson-subsampled
    Gaussians at ``mus`` (1 to 3 steps; add/remove): the last step in closed form at the root
    of its loss (increasing in its outcome), the others by scipy's adaptive quadrature
    against N(0, 1) (accurate to ~1e-8 here, far inside the gaps checked)."""
    from scipy import integrate
    from scipy.stats import norm
    *outer, mu = [float(m) for m in mus]

    def log_l(y, m):
        return math.log1p(q * math.expm1(m * y - m * m / 2))

    def inner(a, remove):
        # a: the outer steps' log-likelihood ratio; L3(y) = 1 - q + q e^{mu y - mu^2/2}
        if remove:              # E_Q[(e^a L3 - e^eps)_+]
            r = math.exp(eps - a)
            if r <= 1 - q:
                return math.exp(a) - math.exp(eps)
            y = (math.log((r - (1 - q)) / q) + mu * mu / 2) / mu
            return max(math.exp(a) * ((1 - q) * norm.sf(y) + q * norm.sf(y - mu))
                       - math.exp(eps) * norm.sf(y), 0.0)
        r = math.exp(-eps - a)  # E_Q[(1 - e^eps e^a L3)_+]: region L3 < r
        if r <= 1 - q:
            return 0.0
        y = (math.log((r - (1 - q)) / q) + mu * mu / 2) / mu
        return max(norm.cdf(y) - math.exp(eps + a) * ((1 - q) * norm.cdf(y)
                                                      + q * norm.cdf(y - mu)), 0.0)

    out = []
    for remove in (True, False):
        if not outer:
            out.append(inner(0.0, remove))
            continue

        def f(*ys, remove=remove):
            a = sum(log_l(y, m) for y, m in zip(ys, outer))
            return inner(a, remove) * math.prod(norm.pdf(y) for y in ys)
        lim = [(-12.0, 12.0 + m) for m in outer]
        out.append(integrate.nquad(f, lim, opts={"epsabs": 1e-11, "epsrel": 1e-8})[0])
    return max(out)


def test_product_delta_against_the_subsampled_gaussian():
    """The helper against dpamp's closed-form profile (one step) and against composing two
    steps by the PLD bracket (two steps)."""
    g = dp.Subsampled(dp.Gaussian(1.0, 0.8), dp.Poisson(0.3))
    assert product_delta([0.8], 0.3, 0.5) == pytest.approx(
        g.delta(0.5, method="profile").delta, rel=1e-9)
    two = dp.compose(g, dp.Subsampled(dp.Gaussian(1.0, 1.1), dp.Poisson(0.3))).delta(
        0.5, method="pld")
    v = product_delta([0.8, 1.1], 0.3, 0.5)
    assert two.lower <= v * (1 + 1e-8) and v <= two.delta * (1 + 1e-8)


def row_delta(vals, sigma, q, eps):
    """The exact delta(eps) (largest of both orders) of one output row alone, signed as C (a
    post-processing of an actual pair): sum_s pi(s) N(sum_j v_j s_j, sigma^2) against
    N(0, sigma^2), v_j >= 0 (:mod:`oracles.mixture_1d`)."""
    mp.mp.dps = 30
    return bernoulli_mixture_delta([mp.mpf(float(x)) / mp.mpf(float(sigma)) for x in vals],
                                   q, eps)


def test_row_delta_is_the_subsampled_gaussian():
    g = dp.Subsampled(dp.Gaussian(1.0, 0.8), dp.Poisson(0.3))
    assert row_delta([1.6], 2.0, 0.3, 0.5) == pytest.approx(
        g.delta(0.5, method="profile").delta, rel=1e-9)


def _ref_delta(c, sigma, q, eps, p, blocks=True):
    """A lower bound on the mechanism's true delta(eps) from actual pairs of neighbours: for
    each group, (a) the orthogonal pair (each step its own unit vector: the product of
    subsampled Gaussians at the column norms, <= 3 steps), (b) one output row alone, (c) a
    fixed direction signed as the last row, the outputs of two rows (a post-processing) whose
    columns on the group form a lower-triangular 2 x 2 block (``blocks``: the slowest); the
    largest of these exact deltas."""
    n = c.shape[0]
    best = 0.0
    for g in range(min(p, n)):
        steps = [j for j in range(n) if j % p == g]
        for t in range(n):
            vals = [abs(x) for x in c[t, steps] if x != 0]
            if vals:
                best = max(best, row_delta(vals, sigma, q, eps))
        norms = np.linalg.norm(c[:, steps], axis=0) / sigma
        best = max(best, product_delta(norms[norms > 0], q, eps))
        for rows in itertools.combinations(range(n), min(2, len(steps)) if blocks else 0):
            sub = c[np.ix_(rows, steps[:2])] if len(steps) >= 2 else c[np.ix_(rows, steps)]
            if sub.shape[0] != sub.shape[1] or np.triu(sub, 1).any():
                continue
            signs = np.where(sub[-1] < 0, -1.0, 1.0)
            best = max(best, exact_delta_mp(sub * signs[None, :], sigma, q, eps))
    return best


FAMILY = [  # (C, sigma, q, p, eps): dense non-Toeplitz banded C, negative entries, n % p != 0
    (np.array([[1.0, 0.0], [-0.8, 0.6]]), 0.9, 0.3, 1, 0.4),
    # three steps on one group: the reference's 2-D quadrature takes ~12 s (the lower end is
    # 3e-5 below it: the orthogonal witness is that pair)
    pytest.param(np.array([[0.5, 0.0, 0.0], [1.0, -0.7, 0.0], [0.0, 0.4, 1.1]]), 1.0, 0.4, 1,
                 0.3, marks=pytest.mark.slow),
    (np.array([[1.0, 0.0, 0.0], [-0.9, 0.7, 0.0], [0.5, 0.3, 1.2]]), 0.8, 0.35, 2, 0.5),
    (np.array([[1.0, 0.0, 0.0], [0.9, 1.0, 0.0], [-0.6, 0.9, 1.0]]), 1.0, 0.5, 2, 0.2),
    # a heavy coherent row: the fixed-direction witness (row 2 alone) answers
    # (slow: the three-step orthogonal reference's 2-D quadrature)
    pytest.param(np.array([[0.1, 0.0, 0.0], [1.0, 0.1, 0.0], [1.0, -1.0, 0.1]]), 1.0, 0.9, 1,
                 2.0, marks=pytest.mark.slow),
    # the same heavy row with its step 1 in the other group: the fixed-direction witness
    (np.array([[0.1, 0.0, 0.0], [1.0, 0.1, 0.0], [1.0, -1.0, 0.1]]), 1.0, 0.9, 2, 2.0),
]


@pytest.mark.parametrize("c, sigma, q, p, eps", FAMILY)
def test_family_lower_end_is_below_actual_pairs(c, sigma, q, p, eps):
    """The lower end the family reports (both fields) is at most the exact delta of actual
    pairs of neighbours of the mechanism (so at most its true delta), and at most its upper
    end."""
    m = dp.MatrixMechanism(c, sigma, participation=dp.CyclicPoisson(q, p))
    g = amplified_delta(m, eps)
    assert g.lower is not None and g.lower <= g.delta
    assert g.lower <= _ref_delta(c, sigma, q, eps, p)
    # the epsilon field: eps_lo(delta) <= the true eps(delta), i.e. the actual pairs' delta
    # at eps_lo is still >= delta (else the truth would be below eps_lo)
    delta = 0.5 * g.lower
    ge = amplified_epsilon(m, delta)
    assert ge.lower is not None and ge.lower <= ge.epsilon
    assert (_ref_delta(c, sigma, q, ge.lower, p, blocks=False) >= delta * (1 - 1e-9)
            or _ref_delta(c, sigma, q, ge.lower, p) >= delta * (1 - 1e-9))


# --- the rounding of one row's mixture, at extreme rates, as the engine reads it ---------------

@pytest.mark.parametrize("k, q", [(6, 1e-6), (6, 0.999999), (5, 1.0), (9, 0.5), (11, 0.03)])
def test_row_mixture_as_normalised_is_dominated(k, q):
    """Every tail Pr[shift >= t] of the mixture MixtureOfGaussians builds from row_mixture
    (its components after normalisation, sigma = 1) is at most the exact one (fractions;
    k = 11 goes through the reduction to MAX_COMPONENTS shifts)."""
    rng = np.random.default_rng(k)
    v = np.sort(rng.uniform(0.05, 1.0, k))[::-1]
    sh, pr = LW.row_mixture(v, q)
    mus, ps = dp.MixtureOfGaussians(1.0, tuple(sh.tolist()), tuple(pr.tolist())).components()
    fq = Fraction(q)
    ex = sorted((sum(Fraction(float(x)) * b for x, b in zip(v, bits)),
                 fq ** sum(bits) * (1 - fq) ** (k - sum(bits)))
                for bits in itertools.product((0, 1), repeat=k))
    shifts = [s for s, _ in ex]
    tails = list(itertools.accumulate([p for _, p in ex][::-1]))[::-1]   # Pr[S >= shifts[i]]
    import bisect
    order = np.argsort(mus)
    built = list(itertools.accumulate([Fraction(float(ps[i])) for i in order[::-1]]))[::-1]
    for i, t in zip(range(len(order)), mus[order]):
        if t <= 0:
            continue
        j = bisect.bisect_left(shifts, Fraction(float(t)))
        exact = tails[j] if j < len(tails) else Fraction(0)
        assert built[i] <= exact


def test_row_buckets_are_dominated_by_distinct_rows():
    """More than MAX_ROW_PARTS distinct kept rows (a dense, non-Toeplitz 2-banded C of 200
    steps with negative entries): the buckets' parts match distinct kept rows one to one, each
    part's values at most the row's (sorted, entrywise)."""
    from scipy.optimize import linear_sum_assignment
    rng = np.random.default_rng(7)
    n, b = 200, 2
    c = _random_banded(rng, n, b)
    r = LW.offset_rows(np.abs(c), b)
    rows = LW.select_rows(r)
    keys = LW._row_keys(r, rows)
    assert len(np.unique(-np.sort(-r[rows], axis=1), axis=0)) > LW.MAX_ROW_PARTS
    assert len(keys) <= LW.MAX_ROW_PARTS and sum(keys.values()) == rows.size
    parts = [key for key, cnt in keys.items() for _ in range(cnt)]
    vals = [sorted((x for x in r[t] if x > 0), reverse=True) for t in rows]

    def dominated(key, row):
        return len(key) <= len(row) and all(a <= x for a, x in zip(key, row))
    cost = np.array([[0.0 if dominated(key, row) else 1.0 for row in vals] for key in parts])
    i, j = linear_sum_assignment(cost)
    assert cost[i, j].sum() == 0


# --- the family's answer: lower <= upper over adversarial small cases ---------------------------

@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(2, 9), b=st.integers(2, 4),
       p=st.integers(1, 3), q=st.sampled_from([0.05, 0.3, 1.0]),
       sigma=st.sampled_from([0.7, 1.5, 4.0]), eps=st.sampled_from([0.2, 1.0, 3.0]))
def test_family_lower_below_upper_adversarial(seed, n, b, p, q, sigma, eps):
    """Dense non-Toeplitz banded C with negative entries, cyclic Poisson (n not divisible by
    p among them): where the amplified route answers, its lower end is below its upper end,
    in both fields."""
    rng = np.random.default_rng(seed)
    b = min(b, n)
    c = _random_banded(rng, n, b)
    m = dp.MatrixMechanism(c, sigma, participation=dp.CyclicPoisson(q, p))
    if m.route != "no-amplification":
        return
    g = amplified_delta(m, eps)
    assert g.lower is not None and 0 <= g.lower <= g.delta
    ge = amplified_epsilon(m, 1e-5)
    assert ge.lower is not None and 0 <= ge.lower <= ge.epsilon


def test_a_witness_out_of_the_pld_range_is_skipped_not_raised():
    """z = 0.06, q = 1: the witnesses' losses pass the PLD's range (OutOfReach) while the
    upper routes answer (conditional composition inf, no-amplification finite). The lower end
    is optional: a witness the PLD cannot take is left out, and the amplified answer stands
    (with no lower end, or one of the witnesses that could be composed)."""
    m = dp.MatrixMechanism(dp.BandedToeplitz([1.0, 0.5, 0.3], 30), 0.06,
                           participation=dp.Poisson(1.0))
    g = amplified_epsilon(m, 1e-6)
    assert math.isfinite(g.epsilon)
    assert g.lower is None or g.lower <= g.epsilon
    d = amplified_delta(m, 10.0)
    assert d.lower is None or d.lower <= d.delta


def test_cyclic_fixed_direction_below_the_full_pair():
    """Cyclic Poisson, p = 2, n = 3 (not divisible), a dense non-Toeplitz 3-banded C with a
    negative entry: the fixed-direction witness of group 0 (steps 0 and 2) is below the exact
    delta of the FULL pair of that record (all three output rows, its gradient one unit
    vector signed as the last row; column 1 never joined: 0), at the Gauss-Hermite helper's
    accuracy (~0.3 %, hence the 0.99)."""
    c = np.array([[1.0, 0.0, 0.0], [-0.9, 0.7, 0.0], [0.5, 0.3, 1.2]])
    sigma, q, eps = 0.8, 0.35, 0.5
    w = LW.fixed_direction(c, 3, sigma, q, 2)
    assert w.group == 0
    fixed = LW.lower_end([w], "delta", eps).value
    full = c * np.array([1.0, 0.0, 1.0])[None, :]          # group 0's steps only
    full = full * np.where(full[-1] < 0, -1.0, 1.0)[None, :]
    assert fixed <= 0.99 * exact_delta_mp(full, sigma, q, eps)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(3, 12), p=st.integers(1, 2), kind=st.sampled_from(["blt", "toeplitz"]),
       seed=st.integers(0, 10 ** 6), q=st.sampled_from([0.1, 0.5]),
       eps=st.sampled_from([0.3, 2.0]))
def test_family_lower_below_upper_blt_and_toeplitz(n, p, kind, seed, q, eps):
    """The lazy Toeplitz view's path (a BLT with output scales of both signs, its computed
    coefficients; a banded Toeplitz C with negative coefficients): lower below upper."""
    rng = np.random.default_rng(seed)
    if kind == "blt":
        s = dp.BLT(tuple(rng.uniform(0.1, 0.95, 2)), tuple(rng.uniform(-0.6, 0.6, 2)), n)
    else:
        s = dp.BandedToeplitz(tuple(rng.uniform(-1.0, 1.0, min(n, 4)) + [2.0, 0, 0, 0][:min(n, 4)]),
                              n)
    m = dp.MatrixMechanism(s, 1.0, participation=dp.CyclicPoisson(q, p))
    if m.route != "no-amplification":
        return
    g = amplified_delta(m, eps)
    assert g.lower is not None and 0 <= g.lower <= g.delta


def test_row_mixture_probabilities_below_the_normal_range_round_down():
    """q ~ 2.5e-20, 16 bands: q^16 lies among the subnormal doubles, where a rounding is an
    absolute half-spacing (~2.5e-324) that no relative padding covers: the largest shift's
    probability must still be at most the exact q^16 (0, its mass on the zero shift, is)."""
    v = np.arange(16, 0, -1) * 0.1
    for q in np.geomspace(2.3e-20, 2.7e-20, 40):
        sh, pr = LW.row_mixture(v, float(q))
        top = float(pr[int(np.argmax(sh))])
        assert Fraction(top) <= Fraction(float(q)) ** 16
