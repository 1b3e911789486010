"""Random allocation at small noise (sigma 0.5-0.7): the tail of X on its geometric grid
(dpamp.amplification.allocation.tail). Truth: the exact curves of t = 2 by quadrature of the
lognormal call / put in closed form (scipy, 1e-11 relative), and t = 3 by a double quadrature;
the brackets of whole queries against them, monotonicity, and the RDP route's upper bound."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize
from scipy.special import ndtr

import dpamp as dp
from dpamp.amplification.allocation import pld as A
from dpamp.amplification.allocation import tail as T
from dpamp.amplification.allocation.chords import chord_points, chords
from dpamp.pld.loss import gaussian


def _call(c, mu):
    """E_Q[(X - c)_+], X = e^L, L ~ N(-mu^2/2, mu^2) (E X = 1); vectorised over c."""
    c = np.asarray(c, dtype=float)
    pos = np.maximum(c, 1e-300)
    d2 = (-0.5 * mu * mu - np.log(pos)) / mu
    return np.where(c > 0, ndtr(d2 + mu) - pos * ndtr(d2), 1.0 - c)


def _put(c, mu):
    """E_Q[(c - X)_+]; vectorised over c."""
    c = np.asarray(c, dtype=float)
    pos = np.maximum(c, 1e-300)
    d2 = (-0.5 * mu * mu - np.log(pos)) / mu
    return np.where(c > 0, pos * ndtr(-d2) - ndtr(-d2 - mu), 0.0)


def truth(sigma, t, x, remove=True):
    """H_x(P || Q) = E_Q[(S/t - x)_+] (remove) or H_x(Q || P) = E_Q[(1 - x S/t)_+] (add) of the
    1-out-of-t allocation of the Gaussian, t = 2 or 3: the last coordinate in closed form, the
    others by quadrature."""
    mu = 1.0 / sigma
    m = -0.5 * mu * mu
    lo, hi = m - 40 * mu, m + 40 * mu

    def inner(u):          # sum of the other coordinates = u
        if remove:
            return _call(t * x - u, mu) / t
        return (x / t) * _put(t / x - u, mu)
    def dens(l):
        return np.exp(-0.5 * ((l - m) / mu) ** 2) / (mu * math.sqrt(2 * math.pi))
    kink = math.log(t * x) if remove else math.log(t / x)
    if t == 2:
        f = lambda l: dens(l) * float(inner(math.exp(l)))  # noqa: E731
        return integrate.quad(f, lo, hi, points=[kink], limit=500, epsabs=1e-16,
                              epsrel=1e-11)[0]
    assert t == 3
    # two coordinates by Gauss-Legendre panels (vectorised; the kinks of the integrand, where
    # the closed form's argument crosses 0, are panel ends), the third in closed form
    nodes, weights = np.polynomial.legendre.leggauss(80)

    def panels(a, b, cuts, n=24):
        pts = np.unique(np.concatenate([np.linspace(a, b, n + 1),
                                        [c for c in cuts if a < c < b]]))
        left, right = pts[:-1, None], pts[1:, None]
        z = (0.5 * (right - left) * nodes + 0.5 * (right + left)).ravel()
        w = (0.5 * (right - left) * weights).ravel()
        return z, w
    vcall = (lambda c: _call(c, mu) / t) if remove else (lambda c: (x / t) * _put(c, mu))
    target = t * x if remove else t / x
    l1, w1 = panels(lo, hi, [math.log(target)])
    total = 0.0
    for a, wa in zip(l1, w1):
        u1 = math.exp(a)
        rest = target - u1
        l2, w2 = panels(lo, hi, [math.log(rest)] if rest > 0 else [], n=12)
        total += wa * dens(a) * float(np.sum(w2 * dens(l2) * vcall(target - u1 - np.exp(l2))))
    return total


def _lower_h(pair, x):
    return np.array([np.sum(np.maximum(pair.atom_p - v * pair.atom_q, 0.0)) for v in x])


@pytest.mark.parametrize("sigma", [0.5, 0.6, 0.7])
def test_curves_contain_the_exact_pair_t2(sigma):
    ep = A._Epoch(gaussian(1.0 / sigma), 2)
    dx = ep.dx_for(0.005)
    assert ep.compute(dx)["tail"] is not None          # the tail path is the one tested
    xs = np.exp(np.linspace(0.0, 4.0, 7))
    for remove in (True, False):
        up = ep.upper_curve(dx, remove, xs)
        lo = _lower_h(ep.lower_pair(dx, remove), xs)
        tr = np.array([truth(sigma, 2, x, remove) for x in xs])
        assert np.all(lo <= tr * (1 + 1e-9)), (remove, lo, tr)
        assert np.all(tr <= up * (1 + 1e-9)), (remove, tr, up)
        # and the bracket is a useful one (the add curve's far tail, decided by the linear
        # grid's resolution of small X, is wider on this grid)
        big = tr > (1e-2 if remove else 0.1)
        assert np.all((up - lo)[big] <= 2e-3 * tr[big]), (remove, lo, tr, up)


def test_curves_contain_the_exact_pair_t3():
    sigma = 0.6
    ep = A._Epoch(gaussian(1.0 / sigma), 3)
    dx = ep.dx_for(0.01)
    assert ep.compute(dx)["tail"] is not None
    xs = np.exp(np.array([0.5, 2.0, 3.5]))
    for remove in (True, False):
        up = ep.upper_curve(dx, remove, xs)
        lo = _lower_h(ep.lower_pair(dx, remove), xs)
        tr = np.array([truth(sigma, 3, x, remove) for x in xs])
        assert np.all(lo <= tr * (1 + 1e-7)) and np.all(tr <= up * (1 + 1e-7)), (lo, tr, up)
        big = tr > (1e-3 if remove else 1e-2)
        assert np.all((up - lo)[big] <= 5e-3 * tr[big]), (remove, lo, tr, up)


def _exact_epsilon(sigma, t, delta):
    """epsilon(delta) of one epoch (t = 2): the larger of the two directions' roots."""
    out = 0.0
    for remove in (True, False):
        f = lambda e: truth(sigma, t, math.exp(e), remove) - delta  # noqa: E731
        if f(0.0) > 0:
            out = max(out, optimize.brentq(f, 0.0, 40.0, xtol=1e-10))
    return out


@pytest.mark.parametrize("sigma", [0.5, 0.7])
def test_bracket_contains_the_exact_epsilon(sigma):
    delta = 1e-4
    exact = _exact_epsilon(sigma, 2, delta)
    g = (dp.Gaussian(sigma).subsample(dp.RandomAllocation(1, 2))).epsilon(delta, method="pld")
    assert g.lower is not None
    assert g.lower <= exact <= g.epsilon
    assert g.epsilon - g.lower <= 2e-3 * g.epsilon


def test_small_sigma_is_answered_monotone_and_below_rdp():
    q = lambda s, t, e: (dp.Gaussian(s).subsample(dp.RandomAllocation(1, t)) * e)  # noqa: E731
    g5 = q(0.5, 100, 1).epsilon(1e-6, method="pld")
    g6 = q(0.6, 100, 1).epsilon(1e-6, method="pld")
    g6t = q(0.6, 1000, 1).epsilon(1e-6, method="pld")
    for g in (g5, g6, g6t):
        assert g.lower is not None and g.lower <= g.epsilon
        assert g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g5.lower > g6.epsilon          # less noise: more loss
    assert g6.lower > g6t.epsilon         # more steps per epoch: less loss
    rdp = q(0.6, 100, 1).epsilon(1e-6, method="rdp")
    assert g6.epsilon <= rdp.epsilon


def test_charge_and_split_points():
    # the charge of three or more large coordinates is a union bound: zero below t = 3
    assert T.charge(0.5, 0.1, 2) == 0.0
    # it is increasing in pi and in t
    assert T.charge(1e-3, 1e-6, 100) < T.charge(1e-3, 2e-6, 100) < T.charge(1e-3, 2e-6, 1000)
    loss = gaussian(1 / 0.6)
    bs = T.split_points(loss, 1000, (1e-14, 1e-12, 1e-10), 1e7)
    assert bs[0] >= bs[1] >= bs[2] > 1.0
    for b, target in zip(bs, (1e-14, 1e-12, 1e-10)):
        p, q = T.tail_masses(loss, math.log(b))
        assert T.charge(p, q, 1000) <= target * 1.01 and 999 * q <= T.TPI_MAX * 1.01


def test_tail_cells_keep_mass_and_mean():
    """The split keeps every cell's mass and mean (up to its error bound, raised); the lower
    cells are below both."""
    loss = gaussian(1 / 0.6)
    lb = math.log(500.0)
    tail = T.tail_cells(loss, lb, 1e6, 1e-3, 10)
    sP, sQ = (float(v[0]) for v in loss.sf(np.array([lb])))
    eP, eQ = (float(v[0]) for v in loss.sf(np.array([math.log(1e6)])))
    q, p = sQ - eQ, sP - eP
    # (each cell's error bound is its sf values' 16 ulps over the cell's relative width)
    assert float(np.sum(tail.w_up)) >= q and float(np.sum(tail.w_up)) <= q * (1 + 1e-7)
    assert float(np.sum(tail.w_up * tail.y_up)) >= p * (1 - 1e-12)
    assert float(np.sum(tail.q_lo)) <= q and float(np.sum(tail.q_lo * tail.y_lo)) <= p
    assert float(np.sum(tail.q_lo * tail.y_lo)) >= p * (1 - 1e-3)


def test_lower_pair_keeps_its_mass():
    """The remove lower pair loses no more than rounding-level mass: the events with one large
    coordinate are in it (.tail.lower_atoms), and the untilted composition's per-bin charge for
    wrapped mass is small (it was e^-20 per bin, ~6e-5 in all here)."""
    ep = A._Epoch(gaussian(1.0), 10_000)
    dx = ep.dx_for(8e-4)
    lp = ep.lower_pair(dx, True)
    assert 1.0 - float(np.sum(lp.atom_p)) < 1e-6
    assert float(np.sum(lp.atom_p)) <= 1.0 and float(np.sum(lp.atom_q)) <= 1.0


def test_small_noise_is_answered_by_the_pld():
    """sigma 0.3 (X's standard deviation 259): the add direction on its own grid up to t
    (.capped) and the remove lower pair on a fine grid give a bracket within 1e-3 of epsilon,
    below the RDP route's upper bound (it was refused, and auto answered 18.01 by RDP alone)."""
    m = dp.Gaussian(0.3).subsample(dp.RandomAllocation(1, 100))
    g = m.epsilon(1e-6, method="pld")
    assert g.lower is not None and 0.0 < g.epsilon - g.lower <= 1e-3 * g.epsilon
    r = m.epsilon(1e-6, method="rdp")
    assert g.epsilon < r.epsilon
    a = m.epsilon(1e-6)
    assert (a.method, a.epsilon, a.lower) == ("pld", g.epsilon, g.lower)


def _short_pld(monkeypatch, upper, lower):
    """The registry's PLD replaced by one that answers [lower, upper] short of its tol (as the
    PLD does where its grids cannot resolve a plan)."""
    import dataclasses

    from dpamp.accounting import registry
    from dpamp.core.guarantee import Guarantee
    note = f"pld did not reach tol: test; proven bracket [{lower}, {upper}]"

    short = {"tol_met": False, "tol_why": "pld: test"}

    def eps(mech, delta, **kw):
        return Guarantee(upper, delta, lower, "pld", "test", "epsilon", note, **short)

    def dlt(mech, epsilon, **kw):
        return Guarantee(epsilon, 0.5, 1e-9, "pld", "test", "delta", note, **short)
    monkeypatch.setitem(registry._REGISTRY, "pld", dataclasses.replace(
        registry._REGISTRY["pld"], epsilon=eps, delta=dlt))
    return registry


def test_auto_keeps_the_smaller_upper_bound_where_the_pld_falls_short(monkeypatch):
    """Where the PLD answers short of its tol, auto also asks the next method (RDP) and keeps
    the smaller upper bound and the larger lower bound, for both kinds of query."""
    m = dp.Gaussian(0.4).subsample(dp.RandomAllocation(1, 3))
    r = m.epsilon(1e-6, method="rdp")
    rd = m.delta(12.0, method="rdp")
    _short_pld(monkeypatch, 26.9, 5.0)
    a = m.epsilon(1e-6)
    assert a.method == "rdp" and a.epsilon == r.epsilon < 26.9 and a.lower == 5.0
    assert "the upper bound is rdp's" in a.note and "pld did not reach tol" in a.note
    d = m.delta(12.0)
    assert d.method == "rdp" and d.delta == rd.delta < 0.5 and d.lower == 1e-9
    assert m.epsilon(1e-6, method="pld").epsilon == 26.9       # a named method is left alone


def test_auto_keeps_the_pld_answer_when_the_next_method_fails(monkeypatch):
    """The next method is only asked for a better upper bound: if it raises, auto still
    answers with the PLD's bracket."""
    import dataclasses
    registry = _short_pld(monkeypatch, 26.9, 5.0)

    def broken(*args, **kwargs):
        raise ValueError("no answer here")
    for name in ("rdp", "rdp-classic"):
        monkeypatch.setitem(registry._REGISTRY, name,
                            dataclasses.replace(registry._REGISTRY[name], epsilon=broken))
    m = dp.Gaussian(0.4).subsample(dp.RandomAllocation(1, 3))
    a = m.epsilon(1e-6)
    assert (a.method, a.epsilon, a.lower) == ("pld", 26.9, 5.0)


def test_few_steps_at_small_noise_are_answered_by_the_pld():
    """sigma 0.4, t 3 (few steps: the add curve also from the largest coordinate,
    .capped.max_bound): within 1e-3 of epsilon and below RDP's 14.23 (the grid alone gave
    [5.0, 26.9])."""
    m = dp.Gaussian(0.4).subsample(dp.RandomAllocation(1, 3))
    g = m.epsilon(1e-6, method="pld")
    assert g.lower is not None and g.epsilon - g.lower <= 1e-3 * g.epsilon
    assert g.epsilon < m.epsilon(1e-6, method="rdp").epsilon


def test_tiny_delta_bracket_within_tolerance():
    """delta 1e-12 (the epoch's tail charges at 1e-17, not 1e-14, which were ~1 % of delta):
    one and ten epochs of balls-in-bins at sigma 1, t 1000 within 1e-3 of epsilon (they were
    1.3e-3 and 8e-3 wide, the second after 9.5 s)."""
    import dpamp as dp
    from dpamp.amplification.allocation import pld as A
    from dpamp.pld.query import _CACHE
    for epochs in (1, 10):
        A._epoch.cache_clear()
        _CACHE.store.clear()
        g = (dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, 1000)) * epochs).epsilon(
            1e-12, method="pld")
        assert g.epsilon - g.lower <= 1e-3 * g.epsilon, (epochs, g)


def test_dense_points_take_chords_above_the_exact_pair_t2():
    """Points closer than CHORD_LOG_STEP in log x get chords of the tail sums (a plan whose grid
    other parts set asked ~17000 points): above the exact curve at every point, and within
    1e-6 of evaluating every point."""
    sigma = 0.6
    ep = A._Epoch(gaussian(1.0 / sigma), 2)
    dx = ep.dx_for(0.005)
    r = ep.compute(dx)
    xs = np.exp(np.arange(0.0, 1.2, 1e-4))             # ~12 points per CHORD_LOG_STEP
    assert chord_points(xs, T.CHORD_LOG_STEP) is not None and chord_points(xs, T.CHORD_LOG_STEP).size < xs.size / 8
    up = ep.upper_curve(dx, True, xs)
    every = T._upper_tail_at(xs, 2, r["tail"], r["callR"])
    chords = T.upper_tail(xs, 2, r["tail"], r["callR"])
    assert np.all(np.abs(chords - every) <= 1e-6 * every)
    sample = xs[::397]
    tr = np.array([truth(sigma, 2, x) for x in sample])
    assert np.all(tr <= up[::397] * (1 + 1e-9)), (tr, up[::397])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 3.0), st.floats(0.0, 5.0)), min_size=1, max_size=6),
       st.floats(1e-6, 2e-3))
def test_chords_bound_a_convex_function(hinges, step):
    """The chords of a convex function's values (here a sum of hinges w (x - c)_+ and of e^x)
    are at least the function at every point between."""
    x = np.exp(np.arange(0.0, 3.0, step))
    f = np.exp(x / 20.0) + sum(w * np.maximum(x - c, 0.0) for c, w in hinges)
    at = chord_points(x, T.CHORD_LOG_STEP)
    if at is None:
        return
    out = chords(x, at, f[at])
    assert np.all(out >= f), float(np.max(f - out))
