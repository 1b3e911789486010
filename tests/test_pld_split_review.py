"""An independent soundness review of the split composition (dpamp.pld.split): its brackets
against exact references.

* Finite pairs (KaryRandomizedResponse, EpsDelta with mass at +inf, hand-made pairs with a rare
  large loss and masses at +-inf) composed a few times, forced through ``split.plan`` /
  ``compose_split`` at every cut and at several K, against the exact composed hockey-stick
  divergence sum over outcomes (P - e^eps Q)_+ in mpmath (the source's atoms taken as exact
  numbers): the upper bound must never be below it, the lower never above, at any epsilon, and
  ``SplitPMF.epsilon`` must return proven ends.
* A subsampled Gaussian at q = 1e-3 against tests/oracle_mgf.py (only where the oracle's value
  does not move with its contour: at q = 1e-4, T = 1000, delta 1e-12 it moves by ~1e-4 with
  the abscissa c, so it is no reference there), and at q = 1e-4 the dominant term against an
  independent direct convolution of the same discretised measure.
* Findings: the lower slack charged per term from the upper halves' masses (the lower halves'
  can be far larger; fixed: the terms are composed without slack and the sum is charged the
  plain composition's c s once, tested); a half without positive lower (or upper) mass made the engine raise
  OutOfReach (the plan now declines there: tested).
"""
from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dpamp as dp
from dpamp.core.errors import OutOfReach
from dpamp.pld import loss as LL
from dpamp.pld import query as Qy
from dpamp.pld import split as S
from dpamp.pld.discretize import Discretized
from dpamp.pld.engine import PartPMF, compose
from dpamp.pld.grid import tail_fraction
from dpamp.pld.state import Bound

import oracle_mgf as O


# ---------------------------------------------------------------- exact references (mpmath)

def _count_vectors(c, n):
    """Every (k_1, ..., k_n) of non-negative integers summing to c (stars and bars)."""
    for bars in itertools.combinations(range(c + n - 1), n - 1):
        edges = (-1,) + bars + (c + n - 1,)
        yield tuple(b - a - 1 for a, b in zip(edges, edges[1:]))


def _outcomes(parts, dps=40):
    """[(P, Q)] of the composition's outcomes grouped by how often each atom is drawn (all
    outcomes of a group share P and Q, so (P - x Q)_+ sums group by group exactly): parts are
    (LossDistribution with atoms only, count); the float masses are taken as exact numbers."""
    with mp.workdps(dps):
        tabs = []
        for src, c in parts:
            P = [mp.mpf(float(x)) for x in src.atom_p]
            Q = [mp.mpf(float(x)) for x in src.atom_q]
            rows = []
            for v in _count_vectors(c, len(P)):
                mult, pp, qq = mp.factorial(c), mp.mpf(1), mp.mpf(1)
                for ni, pi, qi in zip(v, P, Q):
                    mult /= mp.factorial(ni)
                    pp *= pi ** ni
                    qq *= qi ** ni
                if pp > 0:
                    rows.append((mult * pp, mult * qq))
            tabs.append(rows)
        out = []
        for combo in itertools.product(*tabs):
            pp, qq = mp.mpf(1), mp.mpf(1)
            for a, b in combo:
                pp *= a
                qq *= b
            out.append((pp, qq))
        return out


def _exact_delta(outs, eps, dps=40) -> float:
    """sum over outcomes of (P - e^eps Q)_+ (Steinke 2022, Prop. 7), rounded to a double."""
    with mp.workdps(dps):
        x = mp.exp(mp.mpf(float(eps)))
        return float(mp.fsum(p - x * q for p, q in outs if p > x * q))


def _pair(losses, p, pinf=0.0, qinf=0.0):
    """A finite pair with the given finite losses and P-masses, Q = P e^{-loss} (in mpmath,
    rounded), optional masses at +inf (P only) and -inf (Q only)."""
    q = [float(mp.mpf(float(pi)) * mp.exp(-mp.mpf(float(li)))) for li, pi in zip(losses, p)]
    L, P, Q = [float(x) for x in losses], [float(x) for x in p], q
    if pinf:
        L, P, Q = L + [math.inf], P + [pinf], Q + [0.0]
    if qinf:
        L, P, Q = L + [-math.inf], P + [0.0], Q + [qinf]
    La, Pa, Qa = np.array(L), np.array(P), np.array(Q)
    fin = np.isfinite(La)
    m = float(np.sum(Pa[fin] * La[fin]))
    v = float(np.sum(Pa[fin] * (La[fin] - m) ** 2))
    return LL.LossDistribution(La, Pa, Qa, mean=m, var=v, name="pair")


def _split_both(pp, h, eps0, delta_scale=1e-6):
    """The plan and both sums; (None, None, None) where no split is made, or where a half
    without positive mass makes the engine raise (the finding tested at the end)."""
    sp = S.plan(pp, h, eps0, delta_scale, Qy.saddle_for_epsilon)
    if sp is None:
        return None, None, None
    try:
        return sp, S.compose_split(sp, h, Bound.UPPER), S.compose_split(sp, h, Bound.LOWER)
    except OutOfReach:
        return None, None, None


def _check_bracket(up, lo, outs, es):
    X = np.array([_exact_delta(outs, e) for e in es])
    U, L = up.delta(es), lo.delta(es)
    assert np.all(U >= X), (es[U < X], U[U < X], X[U < X])
    assert np.all(L <= X), (es[L > X], L[L > X], X[L > X])
    return U, L, X


def _cut_eps0(d, h, j):
    """eps0 whose cut (CUT eps0 on the grid) falls on bin j of d (a loss index)."""
    return (j + 0.5) * h / S.CUT


# ---------------------------------------------------------------- finite pairs, every cut

KARY = dp.KaryRandomizedResponse(5, 0.5)
_KARY_LOSS = math.log(6.0)

CASES = {
    # (parts, h): KaryRR's atoms +-log 6 on the grid (the bounds are then within ~1e-9 of the
    # truth, so a missing term, weight, remainder or mass at +inf shows)
    "kary": (lambda: Qy._directions(KARY * 6)[0], _KARY_LOSS / 16),
    # the same off the grid
    "kary_off": (lambda: Qy._directions(KARY * 6)[0], 0.0937),
    # a rare large loss (P 0.03 at loss 4) with mass at +inf in the expanded part, and another
    # part with mass at +inf (the others' masses enter the remainder and every term)
    "rare_inf": (lambda: [(_pair([4.0, -0.05, 0.0], [0.03, 0.5, 0.469], 1e-3, 2e-3), 8),
                          Qy._directions(dp.EpsDelta(0.5, 1e-2))[0][0]], 0.05),
    # EpsDelta composed, with a KaryRR met twice (others), off the grid
    "epsdelta": (lambda: [(src, c) for src, c in Qy._directions(dp.EpsDelta(1.0, 1e-3) * 7)[0]]
                 + list(Qy._directions(dp.KaryRandomizedResponse(4, 0.3) * 2)[0]), 0.0137),
}


def _case(name):
    make, h = CASES[name]
    parts = make()
    pp = Qy._discretize(parts, h, 1e-14, True)
    j = int(np.argmax([p.count for p in pp]))
    return parts, pp, h, j


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("max_k", [0, 1, 8])
def test_finite_pairs_every_cut_bracket_the_exact_delta(name, max_k, monkeypatch):
    """For every cut between the expanded part's smallest and largest finite loss and K capped
    at 0, 1 or 8 (the remainder charged, or every term kept), the split's upper bound is >= the
    exact composed delta and its lower bound <= it, at epsilons across the whole range."""
    monkeypatch.setattr(S, "MAX_K", max_k)
    parts, pp, h, j = _case(name)
    outs = _outcomes(parts)
    d = pp[j].d
    nz = np.nonzero(d.upper > 0)[0]
    top = (d.jlo + nz[-1]) * h
    es = np.unique(np.concatenate([np.linspace(0.0, top * pp[j].count + 1.0, 23),
                                   h * np.arange(0, 40, 3) + 1e-9]))
    cuts = sorted({int(x) for x in np.linspace(d.jlo + nz[0] + 1, d.jlo + nz[-1], 7)})
    tried = 0
    for jc in cuts:
        eps0 = _cut_eps0(d, h, jc)
        sp, up, lo = _split_both(pp, h, eps0)
        if sp is None:
            continue
        tried += 1
        U, L, X = _check_bracket(up, lo, outs, es)
        if name == "kary" and max_k == 8:
            # on the grid every term kept: the bracket is within the margins from half the
            # epsilon the terms are tilted for on (so the checks above can fail: a dropped
            # term or mass would show; far below the tilt point the budgets grow, as documented)
            big = (X > 1e-6) & (es >= 0.5 * eps0)
            assert np.all(U[big] - L[big] <= 1e-5 * X[big])
    assert tried >= 2


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_epsilon_returns_proven_ends(name):
    """SplitPMF.epsilon: the upper end e_u has exact delta(e_u) <= delta (checked against the
    exact delta, not the bound); the lower end e_l has exact delta(e_l) > delta (or e_l = 0),
    inf only where the exact delta stays above delta for every epsilon."""
    parts, pp, h, j = _case(name)
    outs = _outcomes(parts)
    d = pp[j].d
    nz = np.nonzero(d.upper > 0)[0]
    for jc in (d.jlo + nz[0] + 1, (d.jlo + nz[0] + d.jlo + nz[-1]) // 2):
        sp, up, lo = _split_both(pp, h, _cut_eps0(d, h, jc))
        if sp is None:
            continue
        for delta in (0.3, 1e-2, 1e-4, 1e-7):
            eu, el = up.epsilon(delta), lo.epsilon(delta)
            assert el <= eu
            if math.isfinite(eu):
                assert _exact_delta(outs, eu) <= delta
            if el == math.inf:
                assert _exact_delta(outs, 1e3) > delta
            elif el > 0:
                assert _exact_delta(outs, el) > delta


# ---------------------------------------------------------------- random finite pairs

def _random_pair(draw_losses, draw_p, pinf, qinf):
    losses = np.sort(np.asarray(draw_losses, dtype=float))
    p = np.asarray(draw_p, dtype=float)
    p = p / p.sum() * (1.0 - pinf)
    q = p * np.exp(-losses)
    if q.sum() + qinf > 1.0:          # keep Q a (sub-)probability: shift the losses up
        losses = losses + math.log((q.sum() + qinf) / (1.0 - 1e-3)) + 1e-9
    return _pair(list(losses), list(p), pinf, qinf)


_atoms = st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.lists(st.floats(-3.0, 5.0), min_size=n, max_size=n, unique=True),
    st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(_atoms, st.sampled_from([0.0, 1e-3]), st.sampled_from([0.0, 1e-3]),
       st.integers(2, 8), st.booleans(), st.floats(0.01, 0.3), st.floats(0.0, 1.0),
       st.sampled_from([0, 1, 2, 3, 8]), st.sampled_from([1e-6, 1e-2, 1.0]),
       st.floats(-12.0, -1.0))
def test_random_finite_pairs_bracket_the_exact_delta(atoms, pinf, qinf, c, other, h, u, max_k,
                                                     rem, log_scale):
    """Random finite pairs (masses at +-inf or not), counts, a second part or not, grid step,
    cut position, K cap and remainder target: the split's bounds bracket the exact delta at
    every epsilon tried. (A half without positive mass makes the engine raise OutOfReach:
    a separate finding, skipped here.)"""
    src = _random_pair(atoms[0], atoms[1], pinf, qinf)
    parts = [(src, c)]
    if other:
        parts.append((_pair([0.7, -0.7], [0.6, 0.4]), max(1, c - 1)))
    pp = Qy._discretize(parts, h, 1e-14, True)
    d = pp[0].d
    nz = np.nonzero(d.upper > 0)[0]
    lo_j, hi_j = d.jlo + nz[0] + 1, d.jlo + nz[-1]
    if hi_j < lo_j:
        return
    jc = lo_j + int(u * (hi_j - lo_j))
    old = S.MAX_K, S.REMAINDER
    S.MAX_K, S.REMAINDER = max_k, rem
    try:
        sp = S.plan(pp, h, _cut_eps0(d, h, jc), 10.0 ** log_scale, Qy.saddle_for_epsilon)
        if sp is None:
            return
        try:
            up, lo = S.compose_split(sp, h, Bound.UPPER), S.compose_split(sp, h, Bound.LOWER)
        except OutOfReach:
            return
    finally:
        S.MAX_K, S.REMAINDER = old
    outs = _outcomes(parts)
    top = (d.jlo + nz[-1]) * h
    es = np.concatenate([np.linspace(0.0, top * c + 1.0, 17), [sp.cut, 2 * sp.cut, 1e-9]])
    _check_bracket(up, lo, outs, np.abs(es))


# ---------------------------------------------------------------- subsampled Gaussians

def test_subsampled_gaussian_split_holds_the_oracle():
    """sigma 1, q 1e-3, 300 steps, delta 1e-12 (remove direction: the worse one), forced through
    the split at the oracle's epsilon and at 0.9 of it: the bracket of delta holds the oracle's
    delta to the oracle's own error (its value moves by < tol = 2e-7 with its contour here:
    checked; 1.04e-7 under numpy 2.4 / scipy 1.17, below 1e-7 before)."""
    sigma, q, steps = 1.0, 1e-3, 300
    pair = O.subsampled_gaussian(sigma, q, "remove")
    eps = 0.7779
    tol = 2e-7
    ref, ev = O.delta(pair, eps, steps, info=True)
    assert abs(O.delta(pair, eps, steps, c=0.8 * ev.c) / ref - 1) < tol
    mech = dp.Gaussian(sigma).subsample(dp.Poisson(q)) * steps
    d0 = Qy._directions(mech)[0]
    assert "poisson" in d0[0][0].name
    h = 7.7e-5
    pp = Qy._discretize(d0, h, 1e-12 * tail_fraction(1e-12, None), True)
    for eps0 in (eps, 0.9 * eps):
        sp = S.plan(pp, h, eps0, ref, Qy.saddle_for_epsilon)
        assert sp is not None and len(sp.terms) >= 2
        up = S.compose_split(sp, h, Bound.UPPER).delta(np.array([eps]))[0]
        lo = S.compose_split(sp, h, Bound.LOWER).delta(np.array([eps]))[0]
        assert lo <= ref * (1 + tol) and up >= ref * (1 - tol)
        assert up - lo < 1e-3 * ref


def test_tiny_rate_dominant_term_against_a_direct_convolution():
    """q 1e-4, 1000 steps, delta ~1e-12 at eps 0.0954: delta is C(c, 1) B^{*(c-1)} * R (one
    large loss). That term, composed by the engine with its own tilt, against an independent
    direct computation on the same discretised measure: B^{*(c-1)} by a plain (untilted) FFT
    (its bulk, where a plain FFT is accurate to ~1e-17 absolute) and the sum
    sum_r R_r sum_b M_b (1 - e^{eps - r - b})_+ done directly. (tests/oracle_mgf.py is no
    reference here: its value moves by ~1e-4 with its contour.)"""
    from scipy import fft as sfft
    sigma, q, steps, eps = 1.0, 1e-4, 1000, 0.09541809279044106
    h = 7.692692333335257e-06
    mech = dp.Gaussian(sigma).subsample(dp.Poisson(q)) * steps
    pp = Qy._discretize(Qy._directions(mech)[0], h, 1e-12 * tail_fraction(1e-12, None), True)
    sp = S.plan(pp, h, eps, 1e-12, Qy.saddle_for_epsilon, 0.086)
    assert sp is not None and [p.count for p in sp.terms[1].parts] == [999, 1]
    t1 = compose(sp.terms[1].parts, h, sp.terms[1].lam, target=sp.terms[1].target)
    E = np.array([eps])
    for bound, g in ((Bound.UPPER, t1.upper), (Bound.LOWER, t1.lower)):
        Bp, Rp = sp.terms[1].parts[0].d, sp.terms[1].parts[1].d
        b, r = Bp.upper if bound is Bound.UPPER else Bp.lower, \
            Rp.upper if bound is Bound.UPPER else Rp.lower
        n = 1 << 20          # losses in (-4.03, 4.03): B^{*999} beyond is far below 1e-30

        def circle(m, jlo):
            arr = np.zeros(n)
            i = np.nonzero(m)[0]
            arr[(jlo + i) % n] = m[i]
            return sfft.rfft(arr)
        # B^{*999} * R by plain transforms: the error per bin is ~1e-16 ||B|| ||R|| ~ 1e-27,
        # summed over the bins far below the ~1e-15 of the term
        G = sfft.irfft(circle(b, Bp.jlo) ** (steps - 1) * circle(r, Rp.jlo), n)
        lidx = np.arange(n)
        s = h * np.where(lidx >= n // 2, lidx - n, lidx)
        m = s > eps
        direct = float(np.sum(G[m] * -np.expm1(eps - s[m])))
        val = g.delta(E)[0]
        if bound is Bound.UPPER:
            assert val >= direct * (1 - 1e-9) - 1e-24
        else:
            assert val <= direct * (1 + 1e-9) + 1e-24
        assert abs(val - direct) <= 1e-3 * direct


# ---------------------------------------------------------------- findings

def _slack_counterexample(c):
    """A Discretized that meets the engine's contract: the upper measure V (mass 1 - 1e-12 at
    loss 1, 1e-12 at 0) is the truth itself; the lower one is V moved down a bin (lowering its
    curve) plus s = 1e-2 of mass there and 1e-12 above (its curve is at most s + 1e-12 above
    the truth: lower_slack). Below the cut at loss 1 the upper measure has 1e-12, the lower 1.01."""
    h, jlo, n, s = 0.01, -1, 201, 1e-2
    up = np.zeros(n)
    up[0 - jlo], up[100 - jlo] = 1e-12, 1.0 - 1e-12
    lo = np.zeros(n)
    lo[99 - jlo], lo[100 - jlo] = 1.0 + s, 1e-12
    return h, [PartPMF(Discretized(h, jlo, up, 0.0, lo, 0.0, lower_slack=s + 1e-12), c)]


def test_lower_slack_charged_from_the_lower_halves_masses():
    """The plain engine's lower bound subtracts c s (times the masses) and stays below the
    truth; the split's must too. Here the truth at eps = 9 is F(V^{*10}) = 1 - e^{9 - 10}
    (+ ~1e-11), the lower measure's own curve is (1 + s)^10 (1 - e^{9 - 9.9}) ~ 0.6555, and the
    split (K = 8 < c - 1) charges ~0 because |B_upper| = 1e-12: its lower bound exceeds the
    truth by ~0.024."""
    c, eps = 10, 9.0
    h, pp = _slack_counterexample(c)
    truth = (1 - 1e-12) ** c * -math.expm1(eps - 10.0) + 1e-10
    plain = compose(pp, h, 1.0, target=(eps, -1.0)).lower.delta(np.array([eps]))[0]
    assert plain <= truth
    sp = S.plan(pp, h, 2.0, 1e-3, lambda parts, e: (1.0, -1.0))
    assert sp is not None
    low = S.compose_split(sp, h, Bound.LOWER).delta(np.array([eps]))[0]
    assert low <= truth, (low, truth)


def test_a_half_without_mass_is_not_split():
    """Gaussian(1) Poisson-subsampled at 0.01, 20 steps, h 2e-3: with the cut just below the top
    of the upper PMF (eps0 = 5.54), the upper R has mass but the optimistic PMF's top tail was
    dropped (batch.py), so R's lower measure is 0; a factor without mass made
    engine.tilted_window raise OutOfReach (and the query's round with it:
    Qy._compute_for_eps(dirs, 1e-8, None, 2e-3, 1e-12, 1.0, (eps0, eps0 / 2))). The plan now
    declines (the plain composition is used), and a random pair whose bins all lie above the
    cut in the upper PMF likewise."""
    mech = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 20
    h, delta = 2e-3, 1e-8
    dirs = Qy._directions(mech)
    pp = Qy._discretize(dirs[0], h, delta * 1e-4, True)
    d = pp[0].d
    lo_top = d.jlo + int(np.nonzero(d.lower != 0)[0][-1])
    assert np.any(d.upper[lo_top + 1 - d.jlo:] > 0)
    eps0 = (lo_top + 1.5) * h / S.CUT
    assert S.plan(pp, h, eps0, delta, Qy.saddle_for_epsilon) is None
    state = Qy._compute_for_eps(dirs, delta, None, h, delta * 1e-4, 1.0, (eps0, 0.5 * eps0))
    for x in state.dirs:
        if x.lower_job is not None:
            x.lower_job.result()
    src = _pair([2.2, 2.5, 4.8], [0.5, 0.1, 0.4], qinf=0.0)
    pp = Qy._discretize([(src, 5)], 0.18, 1e-14, True)
    assert S.plan(pp, 0.18, 2 * 1.9, 1e-6, Qy.saddle_for_epsilon) is None
