"""The lower end of the amplified route (dpamp.amplification.matrix.lower) against independent
truths: DP-SGD's PLD (b = 1), the exact delta(eps) of each witness's full pair by mpmath
integration (n <= 3), brute force over row choices and over the participation patterns, and
the proven upper bounds (conditional composition, no-amplification) above it everywhere."""
from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.amplification.matrix import lower as LW
from dpamp.amplification.matrix import query as Q
from dpamp.amplification.matrix.toeplitz_view import LowerToeplitzAbs
from dpamp.families.matrix import amplified_delta, amplified_epsilon, bsr_coefficients


def _banded(n, co):
    return sum(np.diag(np.full(n - k, v), -k) for k, v in enumerate(co) if k < n)


def _witnesses(c, sigma, q, partitions=1):
    c = np.asarray(c, float)
    bands = int(max(i - j for i, j in zip(*np.nonzero(c)))) + 1
    return LW.witnesses(c, np.sum(c * c, axis=0), bands, sigma, q, partitions)


def _lower(ws, name, field, x):
    w = [w for w in ws if w.name == name][0]
    return LW.lower_end([w], field, x).value


# --- the exact delta of a witness's full pair, by mpmath --------------------------------------

def exact_delta_mp(c, sigma, q, eps, nodes=32):
    """max over both orders of H_{e^eps}(P || Q) for P = sum_B pi_B N(C B, sigma^2 I), Q =
    N(0, sigma^2 I), B ~ Bernoulli(q)^n, C >= 0 lower triangular (n <= 3), at 20 digits: the
    last coordinate in closed form at any threshold t (the loss increases in it, so the value
    is largest at its root), the others by mpmath.quad over the real line (tanh-sinh); the root
    placed in floats (an error there lowers the value, to second order: safe for the checks
    below, which want the truth above a lower bound)."""
    mp.mp.dps = 20
    cm = np.asarray(c, float) / sigma
    n = cm.shape[0]
    pats = list(itertools.product((0, 1), repeat=n))
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    logw = [sum(p) * lq + (n - sum(p)) * l1q for p in pats]
    means = [[mp.fsum(mp.mpf(cm[t, j]) * p[j] for j in range(n)) for t in range(n)]
             for p in pats]
    e = mp.exp(eps)
    b = [m[n - 1] for m in means]
    bf = [float(v) for v in b]

    def inner_t(outer, remove):
        """(a, t): the patterns' log-weights at ``outer`` and the root (None: no region)."""
        a = [logw[i] + mp.fsum(means[i][t] * outer[t] for t in range(n - 1))
             - mp.fsum(m * m for m in means[i]) / 2 for i in range(len(pats))]
        lev = mp.mpf(eps) if remove else -mp.mpf(eps)

        af = [float(v) for v in a]
        top = max(af)

        def ff(y):   # the float loss minus the level (only to place the root)
            m = max(x + c * y for x, c in zip(af, bf))
            return m + math.log(math.fsum(math.exp(x + c * y - m) for x, c in zip(af, bf))) \
                - float(lev)
        lo, hi = -60.0, 60.0 + max(0.0, -top)
        if ff(lo) > 0:                      # the level is below the loss on all of [-60, 60]
            if not remove:
                return a, None
            hi = lo
        elif ff(hi) < 0:
            lo = hi
        for _ in range(64 if lo < hi else 0):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if ff(mid) > 0 else (mid, hi)
        # a root off by rounding only lowers the value, to second order: E[(L - e^eps) 1{y > t}]
        # is largest at the root
        t = mp.mpf(0.5 * (lo + hi))
        return a, t

    def inner(outer, remove):
        a, t = inner_t(outer, remove)
        if t is None:
            return mp.mpf(0)
        if remove:      # E_Q[(L - e^eps)_+]
            v = mp.fsum(mp.exp(a[i] + b[i] ** 2 / 2) * mp.ncdf(b[i] - t)
                        for i in range(len(pats))) - e * mp.ncdf(-t)
        else:           # E_Q[(1 - e^eps L)_+]
            v = mp.ncdf(t) - e * mp.fsum(mp.exp(a[i] + b[i] ** 2 / 2) * mp.ncdf(t - b[i])
                                         for i in range(len(pats)))
        return max(v, mp.mpf(0))

    out = []
    for remove in (True, False):
        if n == 1:
            out.append(inner([], remove))
        elif n == 2:
            def g(x, remove=remove):
                return inner([x], remove) * mp.npdf(x)
            out.append(mp.quad(g, [-mp.inf, 0, mp.inf]))
        else:
            out.append(_two_outer(inner_t, pats, logw, means, e, remove, nodes))
    return float(max(out))


def _two_outer(inner_t, pats, logw, means, e, remove, nodes=32):
    """n = 3: the outer two coordinates by Gauss-Hermite, ``nodes`` each, after the change of
    measure that makes every integrand bounded: E_Q[e^{a_B + b_B^2/2} h] = pi_B E_{N(m_B)}[h]
    (m_B the pattern's first two means), h a Gaussian CDF at the root."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    grid = [(mp.mpf(w[i] * w[j]), (x[i], x[j])) for i in range(x.size) for j in range(x.size)]

    def avg(shift, h):
        return mp.fsum(wt * h(*inner_t([mp.mpf(u + shift[0]), mp.mpf(v + shift[1])], remove))
                       for wt, (u, v) in grid)
    terms = []
    for i, _ in enumerate(pats):
        sh = (float(means[i][0]), float(means[i][1]))
        bb = means[i][2]
        if remove:
            terms.append(mp.exp(logw[i]) * avg(sh, lambda a, t, bb=bb: mp.ncdf(bb - t)))
        else:
            terms.append(mp.exp(logw[i]) * avg(
                sh, lambda a, t, bb=bb: mp.mpf(0) if t is None else mp.ncdf(t - bb)))
    if remove:
        base = avg((0.0, 0.0), lambda a, t: mp.ncdf(-t))
        return max(mp.fsum(terms) - e * base, mp.mpf(0))
    base = avg((0.0, 0.0), lambda a, t: mp.mpf(0) if t is None else mp.ncdf(t))
    return max(base - e * mp.fsum(terms), mp.mpf(0))


def test_exact_delta_mp_is_the_subsampled_gaussian():
    """n = 1: the helper against dpamp's exact profile of the Poisson-subsampled Gaussian."""
    g = dp.Subsampled(dp.Gaussian(1.0, 1.0), dp.Poisson(0.3))
    for eps in (0.2, 1.0):
        want = g.delta(eps, method="profile").delta
        assert exact_delta_mp([[1.0]], 1.0, 0.3, eps) == pytest.approx(want, rel=1e-6)


CASES = [(np.array([[1.0, 0.0], [0.6, 1.0]]), 1.0, 0.3, 0.5),
         (np.array([[1.0, 0.0], [0.6, 1.0]]), 0.7, 0.1, 1.5),
         (np.array([[0.8, 0.0], [0.0, 0.8]]), 1.0, 0.2, 0.3)]


@pytest.mark.parametrize("c, sigma, q, eps", CASES)
def test_each_witness_is_below_its_exact_pair(c, sigma, q, eps):
    """n = 2: the fixed-direction witness (rows post-processed) is below the exact delta of
    the record with a fixed gradient direction; the orthogonal one is below the exact delta
    of its own pair, the product of subsampled Gaussians at the column norms (C = diag of
    the column norms), and within the PLD's discretisation of it."""
    ws = _witnesses(c, sigma, q)
    fixed = _lower(ws, LW.FIXED, "delta", eps)
    assert fixed <= exact_delta_mp(c, sigma, q, eps)
    ortho = _lower(ws, LW.ORTHOGONAL, "delta", eps)
    truth = exact_delta_mp(np.diag(np.linalg.norm(c, axis=0)), sigma, q, eps)
    assert ortho <= truth
    assert ortho >= truth * (1 - 1e-3)               # (the witness is its pair: tight)


def test_negative_entries_take_the_signs_of_the_kept_row():
    """C with a negative entry: the fixed-direction witness signs the record's gradient as
    the kept row (row 1 reads steps 0 and 1: signs -1, +1), and stays below the exact delta
    of that signed record's full pair C diag(signs)."""
    c, sigma, q, eps = np.array([[1.0, 0.0], [-0.6, 1.0]]), 1.0, 0.3, 0.5
    ws = _witnesses(c, sigma, q)
    fixed = _lower(ws, LW.FIXED, "delta", eps)
    signed = c @ np.diag([-1.0, 1.0])
    assert fixed <= exact_delta_mp(signed, sigma, q, eps)
    # the same as the non-negative C's (|C| on the kept row)
    assert fixed == _lower(_witnesses(np.abs(c), sigma, q), LW.FIXED, "delta", eps)


def test_three_steps_against_the_exact_pair():
    """n = 3, 2 bands: the fixed-direction witness below the exact pair (the inner coordinate
    in closed form at 20 digits, the outer two by Gauss-Hermite after a change of measure:
    accurate to ~0.3 % here, the root's log singularity where the region starts; the witness
    is far below). The orthogonal witness is its product of subsampled Gaussians, whose
    exact delta the quadrature does not resolve to its PLD bracket's width: it is checked
    against that bracket's upper end (the pessimistic discretisation, the other side)."""
    c, sigma, q, eps = _banded(3, [1.0, 0.7]), 1.0, 0.25, 0.6
    ws = _witnesses(c, sigma, q)
    fixed = _lower(ws, LW.FIXED, "delta", eps)
    assert fixed <= 0.99 * exact_delta_mp(c, sigma, q, eps)
    norms = np.linalg.norm(c, axis=0)
    comp = dp.compose(*[dp.Subsampled(dp.Gaussian(1.0, float(m)), dp.Poisson(q))
                        for m in norms])
    up = comp.delta(eps, method="pld").delta
    ortho = _lower(ws, LW.ORTHOGONAL, "delta", eps)
    assert up * (1 - 1e-3) <= ortho <= up


# --- b = 1: DP-SGD ------------------------------------------------------------------------------

def test_diagonal_c_is_dpsgd_in_structure():
    """b = 1 (C = I): both witnesses are the n Poisson-subsampled Gaussians of DP-SGD (the
    same PLD pairs, mu and q rounded down by a few ulps): equal to DP-SGD's lower end and
    below its upper end."""
    from dpamp.pld.sources import loss_distribution
    n, q, z = 60, 0.05, 1.2
    ws = _witnesses(np.eye(n), z, q)
    ref = (dp.Subsampled(dp.Gaussian(1.0, 1.0 / z), dp.Poisson(q)) * n).epsilon(1e-6,
                                                                                  method="pld")
    for w in ws:
        (part, count), = w.parts
        assert count == n and w.dimensions == 1
        assert loss_distribution(part).name.startswith("poisson(gaussian(")
        low = LW.lower_end([w], "epsilon", 1e-6).value
        assert low == pytest.approx(ref.lower, rel=1e-9)
        assert low <= ref.epsilon


# --- the row choice and the rounding ------------------------------------------------------------

def _reads(r, t):
    return {t - k for k in range(r.shape[1]) if r[t, k] > 0}


@pytest.mark.parametrize("n, b", [(5, 2), (7, 3), (8, 3), (9, 4), (6, 6)])
def test_row_choice_is_the_best_disjoint_set(n, b):
    """Weighted interval scheduling against brute force over every set of rows with disjoint
    read sets (small n); for a Toeplitz C the rows are one offset mod b."""
    co = np.array(bsr_coefficients(b))
    r = LW.offset_rows(LowerToeplitzAbs(co, n), b)
    rows = LW.select_rows(r)
    w = np.sum(r * r, axis=1)
    best = 0.0
    for k in range(1, n + 1):
        for s in itertools.combinations(range(n), k):
            sets = [_reads(r, t) for t in s]
            if all(not (a & c) for a, c in itertools.combinations(sets, 2)):
                best = max(best, float(w[list(s)].sum()))
    assert all(not (_reads(r, a) & _reads(r, c)) for a, c in itertools.combinations(rows, 2))
    assert float(w[rows].sum()) == pytest.approx(best, rel=1e-12)
    assert len({int(t) % b for t in rows}) == 1
    want = (n % b) - 1 if n % b else b - 1
    assert int(rows[0]) % b == want


def test_row_mixture_is_dominated_by_the_exact_law():
    """Every tail Pr[shift >= t] of the built mixture is at most the exact one (2^b patterns,
    fractions), both with and without the reduction to MAX_COMPONENTS shifts."""
    from fractions import Fraction
    for b, q in ((3, 0.2), (10, 0.05)):
        v = np.array(bsr_coefficients(b))
        sh, pr = LW.row_mixture(v, q)
        assert sh.size <= LW.MAX_COMPONENTS and math.fsum(pr) == pytest.approx(1.0, abs=1e-12)
        pats = list(itertools.product((0, 1), repeat=b))
        ex = [(sum(Fraction(float(x)) * s for x, s in zip(v, p)),
               Fraction(q) ** sum(p) * (1 - Fraction(q)) ** (b - sum(p))) for p in pats]
        for t in sh[sh > 0]:
            built = sum(Fraction(float(p)) for s, p in zip(sh, pr) if s >= t)
            exact = sum(p for s, p in ex if s >= Fraction(float(t)))
            assert built <= exact


# --- below every proven upper bound ---------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 10), b=st.integers(1, 4), q=st.sampled_from([0.02, 0.1, 0.4]),
       sigma=st.sampled_from([0.8, 1.5, 4.0]), eps=st.sampled_from([0.3, 1.0, 3.0]))
def test_lower_end_is_below_the_upper_ends(n, b, q, sigma, eps):
    co = np.array(bsr_coefficients(min(b, n)))
    c = _banded(n, co)
    low = LW.lower_end(_witnesses(c, sigma, q), "delta", eps).value
    up = Q.delta(c, sigma, q, eps).delta
    m = dp.MatrixMechanism(c, sigma, participation=dp.Poisson(q))
    # (b = 1: DP-SGD, the cyclic-Poisson route's bracket; else the noise split by the PLD
    # and no-amplification's profile)
    own = m.delta(eps) if b == 1 else m.delta(eps, method="pld")
    plain = 1.0 if b == 1 else dp.Gaussian(1.0, m.mu[1]).delta(eps, method="profile").delta
    assert low <= min(up, plain, own.delta)


def test_the_family_answers_with_the_lower_end_and_says_what_it_assumed():
    co = np.array(bsr_coefficients(4))
    s = dp.BandedToeplitz(tuple(co / np.linalg.norm(co)), 40)
    m = dp.MatrixMechanism(s, 3.0, participation=dp.Poisson(0.05))
    g = amplified_epsilon(m, 1e-6)
    assert g.lower is not None and 0 < g.lower <= g.epsilon
    # the whole run's matched filter: one direction, no model size assumed
    assert "lower end: the whole-run matched-filter witness" in g.note
    assert "parameters" not in g.lower_assumes
    assert "orthogonal" in g.note and "alternating-windows" in g.note and "windowed" in g.note
    # every text output prints what the lower bound assumed under the numbers: where a
    # witness needing a model size gives it (2 bands, z 1), that size
    c = np.eye(30) + 0.5 * np.eye(30, k=-1)
    g1 = amplified_epsilon(dp.MatrixMechanism(c, 1.0, participation=dp.Poisson(0.01)), 1e-6)
    assert "lower bound from the orthogonal witness" in str(g1)
    assert "a model of at least 2 parameters" in g1.lower_assumes
    d = amplified_delta(m, 1.0)
    assert d.lower is not None and 0 < d.lower <= d.delta
    assert amplified_epsilon(m, 1e-6) == g                   # same question, same answer
    # cyclic Poisson with more bands than groups: the group's whole-run filter
    m2 = dp.MatrixMechanism(s, 3.0, participation=dp.CyclicPoisson(0.1, 2))
    g2 = amplified_epsilon(m2, 1e-6)
    assert g2.lower is not None and g2.lower <= g2.epsilon
    assert "whole-run matched-filter witness" in g2.note and "a record of group 0" in g2.note
    # balls in bins: the matched filters' lower end (C >= 0), and it needs no dimensions
    m3 = dp.MatrixMechanism(s, 3.0, participation=dp.BallsInBins(10))
    g3 = amplified_epsilon(m3, 1e-6)
    assert 0 < g3.lower <= g3.epsilon and "whole-run matched-filter witness" in g3.note
    assert "matched-filter" in g3.note and "windowed" in g3.note   # the others' values
    assert "parameters" not in g3.note


def test_cyclic_witness_is_one_group():
    """Cyclic Poisson, p = 2 groups, 3 bands: the orthogonal witness is the group's steps only
    (every other column), the fixed-direction rows read only that group's steps."""
    n, co = 12, [1.0, 0.5, 0.25]
    c = _banded(n, co)
    ws = _witnesses(c, 1.0, 0.1, partitions=2)
    ortho = [w for w in ws if w.name == LW.ORTHOGONAL][0]
    assert sum(k for _, k in ortho.parts) == n // 2 and ortho.dimensions == 2
    fixed = [w for w in ws if w.name == LW.FIXED][0]
    for part, _ in fixed.parts:
        assert len(part.sensitivities) <= 4           # at most 2 of the group's steps per row


def test_a_conditional_route_out_of_reach_answers_by_the_split_under_rdp():
    """At tiny noise the conditional mixtures' losses leave the PLD's range (OutOfReach): the
    noise split's plan answers by RDP (Mironov 2017), which here is below no-amplification's
    proven bound; the note says which route was out of reach, and a lower end comes along."""
    from dpamp.families.matrix import amplified_epsilon
    m = dp.MatrixMechanism(dp.BandedToeplitz([1, .5, .3], 30), 0.05,
                           participation=dp.Poisson(0.5))
    g = amplified_epsilon(m, 1e-6)
    plain = dp.Gaussian(1.0, m.mu[1]).epsilon(1e-6, method="profile")
    assert m.route == "noise-split"
    assert "out of reach" in g.note and "by RDP" in g.note
    assert g.method == "rdp" and g.epsilon <= plain.epsilon
    assert g.lower is not None and g.lower <= g.epsilon
