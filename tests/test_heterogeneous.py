"""Heterogeneous compositions (many different parts): the PLD engine's batched per-part work
(tilted PMFs, spectra, log-MGFs of all parts at once) against the per-part path it replaces,
and the brackets of small heterogeneous plans against the grid-free MGF oracle."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dpamp as dp
from dpamp.core.logspace import logsumexp
from dpamp.pld import engine as E
from dpamp.pld import query as Qy
from dpamp.pld import sources as S
from dpamp.pld.loss import gaussian, laplace

import oracle_mgf as O


# --- the per-part path (the engine's loops before batching), for reference ----------------

def _tilted_ref(parts, h, lam, upper):
    ws, ts, lMs = [], [], []
    for p in parts:
        m = p.mass(upper)
        t = h * (p.d.jlo + np.arange(m.size))
        with np.errstate(divide="ignore"):
            lw = np.log(np.maximum(m, 0.0)) + lam * t
        lM = float(logsumexp(lw)) if m.size and m.max() > 0 else -math.inf
        ws.append(np.exp(lw - lM) if math.isfinite(lM) else np.zeros(m.size))
        ts.append(t)
        lMs.append(lM)
    return ws, ts, lMs


def _spectra_ref(parts, ws, lMs, N):
    for p, w, lM in zip(parts, ws, lMs):
        if math.isfinite(lM):
            arr = np.zeros(N)
            arr[(p.d.jlo + np.arange(w.size)) % N] = w
            yield np.fft.rfft(arr)


def _many_ref(ms, jlos, h, s):
    return np.array([E.grid_log_mgf(m, h * j, h, s) for m, j in zip(ms, jlos)])


def _clear():
    Qy._CACHE.store.clear()
    S._PARTS.store.clear()


@pytest.fixture
def per_part(monkeypatch):
    """Switch the engine to the per-part path for the duration of a test."""
    def use():
        monkeypatch.setattr(E, "_tilted", _tilted_ref)
        monkeypatch.setattr(E, "_spectra", _spectra_ref)
        monkeypatch.setattr(E, "grid_log_mgf_many", _many_ref)
        monkeypatch.setattr(Qy, "grid_log_mgf_many", _many_ref)
        layout = lambda ms, jlos: lambda h, s: _many_ref(ms, jlos, h, s)  # noqa: E731
        monkeypatch.setattr(E, "mgf_layout", layout)
        monkeypatch.setattr(Qy, "mgf_layout", layout)
        _clear()
    return use


def _mixed():
    return dp.compose(
        dp.Gaussian(1.2) * 20,
        dp.Laplace(2.0) * 10,
        dp.Gaussian(1.0).subsample(dp.Poisson(0.05)) * 30,
        dp.Gaussian(0.9).subsample(dp.Poisson(0.02)) * 25,
        dp.Laplace(1.5).subsample(dp.Poisson(0.1)) * 20,
        dp.EpsDelta(0.5, 1e-7) * 3,
    )


def _close(a, b, rtol=1e-9):
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-300)


# --- pieces ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_log_mgf_of_many_parts_equals_one_at_a_time(seed, monkeypatch):
    if seed == 3:
        monkeypatch.setattr(E, "_MGF_BATCH", 2048)       # in halves, down to single parts
    rng = np.random.default_rng(seed)
    h = float(rng.choice([1e-3, 0.01, 0.2]))
    ms, jlos = [], []
    for k in range(int(rng.integers(1, 9))):
        n = int(rng.integers(1, 3000))
        m = rng.random(n) * np.exp(-rng.uniform(0, 40, n))
        m[rng.random(n) < 0.3] = 0.0
        m[rng.random(n) < 0.02] = -1e-17          # rounding-level negatives are clipped
        if k == 1:
            m[:] = 0.0                            # a part without mass: -inf
        ms.append(m)
        jlos.append(int(rng.integers(-n, 1)))
    s = np.concatenate([np.geomspace(1e-2, 1e3, 31), -np.geomspace(1e-2, 50, 7), [0.0]])
    got = E.grid_log_mgf_many(ms, jlos, h, s)
    want = _many_ref(ms, jlos, h, s)
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    # the e^-700 floor of the batched sums can only raise them, by far less than this
    assert np.allclose(got[fin], want[fin], rtol=1e-12, atol=1e-12)


def test_log_mgf_of_many_parts_against_a_direct_sum():
    rng = np.random.default_rng(7)
    h = 0.01
    ms = [rng.random(500), rng.random(37) * 1e-30]
    jlos = [-250, 3]
    s = np.array([-2.0, 0.5, 3.0])
    got = E.grid_log_mgf_many(ms, jlos, h, s)
    for m, j, row in zip(ms, jlos, got):
        t = h * (j + np.arange(m.size))
        want = [math.log(float(np.sum(m * np.exp(v * t)))) for v in s]
        assert np.allclose(row, want, rtol=1e-13)


def _some_parts(h=0.01):
    mech = _mixed()
    parts = S.parts_of(mech)
    return Qy._discretize(parts, h, 1e-12)


@pytest.mark.parametrize("upper", [True, False])
def test_tilted_pmfs_equal_the_per_part_ones(upper):
    pp = _some_parts()
    pp[2].d.lower = np.zeros_like(pp[2].d.lower)        # a part without mass
    ws, ts, lMs = E._tilted(pp, 0.01, 1.3, upper)
    rw, rt, rl = _tilted_ref(pp, 0.01, 1.3, upper)
    for a, b in zip(ts, rt):
        assert np.array_equal(a, b)
    for a, b in zip(lMs, rl):
        assert (a == b == -math.inf) or abs(a - b) <= 1e-14 * (1 + abs(b))
    for a, b in zip(ws, rw):
        assert np.allclose(a, b, rtol=1e-13, atol=1e-300)


def test_spectra_equal_the_per_part_ones(monkeypatch):
    pp = _some_parts()
    ws, _, lMs = _tilted_ref(pp, 0.01, 1.0, True)
    lMs[1] = -math.inf                                   # skipped, as in the engine
    N = 4096
    monkeypatch.setattr(E, "_FFT_BATCH", 3 * N)          # several batches
    got = list(E._spectra(pp, ws, lMs, N))
    want = list(_spectra_ref(pp, ws, lMs, N))
    assert len(got) == len(want) == len(pp) - 1
    for a, b in zip(got, want):
        assert np.allclose(a, b, rtol=0, atol=1e-14)


def test_parts_memo_is_by_identity_and_safe_to_mutate():
    _clear()
    a = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 10 + dp.Laplace(1.0) * 2
    b = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 10 + dp.Laplace(1.0) * 2
    first = S.parts_of(a)
    first.append(("junk", 1))
    again = S.parts_of(a)
    assert len(again) == 2 and all(x is y for x, y in zip(again, first[:2]))
    other = S.parts_of(b)
    assert other[0][0] is not again[0][0]


def _swap_moments_direct(kind, scale, q):
    """Mean and variance of -L' under Q for the Poisson-subsampled pair, by a dense
    trapezoid over the output x (Q = N(0, 1) or Lap(0, 1); P the shifted one)."""
    x = np.linspace(-40.0, 40.0, 400001)
    if kind == "gauss":
        mu = scale
        dq = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        lp = mu * x - 0.5 * mu * mu
    else:
        t0 = scale
        dq = 0.5 * np.exp(-np.abs(x))
        lp = np.abs(x) - np.abs(x - t0)
    z = -np.logaddexp(math.log1p(-q), math.log(q) + lp)
    w = dq * (x[1] - x[0])
    m = float(np.sum(w * z) / np.sum(w))
    return m, float(np.sum(w * (z - m) ** 2) / np.sum(w))


@pytest.mark.parametrize("kind,scale", [("gauss", 1.0 / 0.7), ("gauss", 0.8), ("lap", 0.6)])
@pytest.mark.parametrize("q", [0.003, 0.05, 0.4])
def test_swapped_moments_from_the_subsampling_quadrature(kind, scale, q):
    """The swapped pair's moments (they only size grids), now taken from the subsampled pair's
    own quadrature of the base, against a dense quadrature over the output; the mean is
    KL(Q || P') >= 0 (the swap's separate quadrature, used before, got its sign wrong at
    q = 0.003)."""
    base = gaussian(scale) if kind == "gauss" else laplace(scale)
    sub = base.poisson(q)
    assert sub.swap_moments is not None
    m, v = sub.swap_moments
    m_ref, v_ref = _swap_moments_direct(kind, scale, q)
    assert m > 0
    assert abs(m - m_ref) <= 1e-2 * math.sqrt(v_ref)
    assert abs(v - v_ref) <= 1e-2 * v_ref
    sw = sub.swapped()
    assert (sw.mean, sw.var) == (m, v)
    assert (sw.swapped().mean, sw.swapped().var) == (sub.mean, sub.var)


# --- whole queries: batched vs per-part ---------------------------------------------------------

@pytest.mark.parametrize("query", ["eps", "delta"])
def test_mixed_plan_brackets_equal_the_per_part_path(per_part, query):
    def run():
        _clear()
        mech = _mixed()
        if query == "eps":
            return Qy.epsilon_bracket(mech, 1e-6)
        return Qy.delta_bracket(mech, 3.0)
    new = run()
    per_part()
    old = run()
    for a, b in ((new.upper, old.upper), (new.lower, old.lower)):
        assert _close(a, b, 1e-8), (new, old)
    assert new.lower <= new.upper and old.lower <= old.upper
    # each bracket holds the other's midpoint: they describe the same interval
    assert max(new.lower, old.lower) <= min(new.upper, old.upper)


def test_w4_like_plan_brackets_equal_the_per_part_path(per_part):
    rng = np.random.default_rng(3)
    sig = rng.uniform(0.8, 1.6, 12).round(4)
    qs = rng.uniform(0.002, 0.02, 12).round(5)

    def run():
        _clear()
        mech = dp.compose(*[dp.Gaussian(float(s)).subsample(dp.Poisson(float(q))) * 40
                            for s, q in zip(sig, qs)])
        return Qy.epsilon_bracket(mech, 1e-5)
    new = run()
    per_part()
    old = run()
    assert _close(new.upper, old.upper, 1e-9) and _close(new.lower, old.lower, 1e-9)


# --- against the MGF oracle -----------------------------------------------------------------

HETERO = [(0.9, 0.02, 30), (1.3, 0.01, 50), (1.6, 0.005, 40), (1.1, 0.015, 20)]


def _oracle_eps(stages, delta):
    out = []
    for direction in ("remove", "add"):
        comps = [(O.subsampled_gaussian(s, q, direction), T) for s, q, T in stages]
        out.append(O.epsilon_for_delta(comps, delta, rtol=1e-10))
    return max(out)


@pytest.mark.parametrize("delta", [1e-5, pytest.param(1e-9, marks=pytest.mark.slow)])
def test_heterogeneous_gaussian_plan_brackets_the_oracle(delta):
    _clear()
    mech = dp.compose(*[dp.Gaussian(s).subsample(dp.Poisson(q)) * T for s, q, T in HETERO])
    b = Qy.epsilon_bracket(mech, delta)
    truth = _oracle_eps(HETERO, delta)
    assert b.met
    assert b.lower <= truth * (1 + 1e-9) and truth <= b.upper * (1 + 1e-9), (b, truth)
    assert b.upper - b.lower <= 1e-3 * b.upper


def test_heterogeneous_plan_with_plain_gaussians_brackets_the_oracle():
    """Plain Gaussians merge into one part; the subsampled ones stay apart."""
    _clear()
    stages = HETERO[:2]
    mech = dp.compose(dp.Gaussian(8.0) * 10, dp.Gaussian(12.0) * 5,
                      *[dp.Gaussian(s).subsample(dp.Poisson(q)) * T for s, q, T in stages])
    b = Qy.epsilon_bracket(mech, 1e-6)
    out = []
    for direction in ("remove", "add"):
        comps = [(O.gaussian(8.0), 10), (O.gaussian(12.0), 5)]
        comps += [(O.subsampled_gaussian(s, q, direction), T) for s, q, T in stages]
        out.append(O.epsilon_for_delta(comps, 1e-6, rtol=1e-10))
    truth = max(out)
    assert b.lower <= truth * (1 + 1e-9) and truth <= b.upper * (1 + 1e-9), (b, truth)


@pytest.mark.parametrize("mech,delta,eps", [
    (lambda: dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 1000, 1e-5, 2.0),
    (lambda: dp.Laplace(2.0) * 10 + dp.EpsDelta(1.0, 1e-6) * 2, 1e-8, 3.0),
    (lambda: dp.Gaussian(0.3).subsample(dp.Poisson(0.01)) * 100, 1e-5, 0.5),
    (_mixed, 1e-6, 4.0),
])
def test_saddle_searches_find_the_full_grid_minimum(mech, delta, eps):
    """The coarse-then-near saddle searches, and those from a guess, pick the same grid point
    as a scan of all of _S."""
    pp = Qy._discretize(S.parts_of(mech()), 0.01, 1e-12)
    K = Qy._log_mgf(pp, s=Qy._S)
    e = (K - math.log(delta)) / Qy._S
    i = int(np.argmin(e))
    assert Qy.saddle_for_delta(pp, delta) == (float(e[i]), float(Qy._S[i]))
    v = K - Qy._S * eps
    j = int(np.argmin(v))
    assert Qy.saddle_for_epsilon(pp, eps) == (float(Qy._S[j]), min(float(v[j]), 0.0))
    # from a guess (another direction's saddle): near it, at the ends of _S and far from it,
    # the same point (the window moves towards it, or the search starts from scratch)
    n = Qy._S.size
    for k in sorted({0, 1, n - 1, max(0, i - 2), min(n - 1, i + 3), max(0, i - 12),
                     min(n - 1, i + 40), max(0, j - 5), min(n - 1, j + 9)}):
        near = float(Qy._S[k])
        assert Qy.saddle_for_delta(pp, delta, near) == (float(e[i]), float(Qy._S[i]))
        assert Qy.saddle_for_epsilon(pp, eps, near) == (float(Qy._S[j]),
                                                        min(float(v[j]), 0.0))


@pytest.mark.parametrize("mech, delta", [
    (dp.Gaussian(5) * 10, 0.245),                                   # eps 0.0085: near the TV
    (dp.Gaussian(1).subsample(dp.Poisson(0.01)) * 100, 0.05),       # eps 0.0015
])
def test_tail_budget_keeps_flat_answers_in_reach(mech, delta):
    """Where delta(eps) is flat (the answer near the total variation distance, eps << the
    loss's spread) the mass the grids leave out moves epsilon by about its share of delta over
    the slope: the tail-regime share (1e-4 of delta) kept tol out of reach there (brackets 1.8e-2
    and 1.2e-2 wide), so above TAIL_REGIME the grids keep 1e-6 of delta."""
    from dpamp.pld import grid, query
    query._CACHE.store.clear()
    b = query.epsilon_bracket(mech, delta)
    assert b.met and b.upper - b.lower <= 1e-3 * b.upper
    assert grid.tail_fraction(delta) == grid.TAIL_FRACTION
    assert grid.tail_fraction(1e-5) == grid.TAIL_FRACTION_TAIL


def test_tail_budget_follows_a_tighter_tol():
    """The tails the grids leave out cost the bracket a fixed width that no refinement
    narrows: a caller's tol tighter than the default shrinks their share with it (with the
    tail regime's share fixed, tol 1e-6 stopped at a width of 2.3e-5 after every refinement)."""
    from dpamp.pld import grid, query
    query._CACHE.store.clear()
    b = query.epsilon_bracket(dp.Gaussian(0.61).subsample(dp.Poisson(0.0213)) * 1000, 1e-5,
                              tol=1e-6)
    assert b.met and b.upper - b.lower <= 1e-6
    assert grid.tail_fraction(1e-5, 1e-5) == pytest.approx(1e-6)
    assert grid.tail_fraction(1e-5, 1e-1) == grid.TAIL_FRACTION_TAIL
