"""RDP of random allocation (amplification.allocation.rdp): brute-force enumeration, mpmath
quadrature, the exact cases t = 1 and k = t, and the comparison with Poisson sampling."""
import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.amplification.allocation.rdp import allocation_rdp


def brute_remove(mu, k, t, n):
    """log E_Q[(dP/dQ)^n] / (n-1) for P = E_S N(mu 1_S, I), S a uniform k-subset, by
    enumerating all n-tuples of subsets: E_Q[prod_j L_{S_j}] = exp(sum_i c_i (c_i-1) mu^2/2)
    with c_i the number of subsets containing step i."""
    subsets = list(itertools.combinations(range(t), k))
    tot = mp.mpf(0)
    for tup in itertools.product(subsets, repeat=n):
        c = np.zeros(t, dtype=int)
        for s in tup:
            c[list(s)] += 1
        tot += mp.e ** (mp.mpf(int(np.sum(c * (c - 1)))) * mu * mu / 2)
    return float(mp.log(tot / len(subsets) ** n) / (n - 1))


@pytest.mark.parametrize("t", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("sigma", [0.7, 2.0])
def test_remove_k1_equals_enumeration(t, n, sigma):
    exact = brute_remove(1 / sigma, 1, t, n)
    ours = allocation_rdp(dp.Gaussian(sigma), 1, t, [n], "remove")[0]
    assert exact <= ours <= exact * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("k,t", [(2, 3), (2, 4), (3, 4), (2, 5)])
def test_block_bound_k_above_one_is_an_upper_bound(k, t):
    g = dp.Gaussian(1.0)
    for n in (2, 3):
        exact = brute_remove(1.0, k, t, n)
        ours = allocation_rdp(g, k, t, [n], "remove")[0]
        assert ours >= exact
        assert ours <= g.rdp(n) * k  # never worse than k steps of the base


def _mp_moment(mu, alpha, power_sign):
    """E_Q[((L1 + L2)/2)^s] for t = 2 by mpmath quadrature; s = alpha (remove) or 1 - alpha
    (add: E_P[(dQ/dP)^alpha] = E_Q[(dP/dQ)^(1-alpha)]). With u = (y1+y2)/sqrt2 and
    v = (y1-y2)/sqrt2 independent N(0,1), (L1+L2)/2 = e^{-mu^2/2} e^{mu u/sqrt2}
    cosh(mu v/sqrt2), so the moment is e^{-s mu^2/2 + s^2 mu^2/4} E[cosh(mu v/sqrt2)^s]."""
    s = mp.mpf(alpha) if power_sign > 0 else 1 - mp.mpf(alpha)
    mu = mp.mpf(mu)
    f = lambda v: mp.e ** (-v * v / 2) / mp.sqrt(2 * mp.pi) * mp.cosh(mu * v / mp.sqrt(2)) ** s
    return mp.e ** (-s * mu ** 2 / 2 + s * s * mu ** 2 / 4) * mp.quad(f, [-mp.inf, 0, mp.inf])


@pytest.mark.parametrize("alpha", [2.0, 2.5, 3.0, 4.5])
def test_t2_against_quadrature(alpha):
    mu = 1.0
    g = dp.Gaussian(1 / mu)
    rem = float(mp.log(_mp_moment(mu, alpha, +1)) / (alpha - 1))
    add = float(mp.log(_mp_moment(mu, alpha, -1)) / (alpha - 1))
    ours_rem = allocation_rdp(g, 1, 2, [alpha], "remove")[0]
    ours_add = allocation_rdp(g, 1, 2, [alpha], "add")[0]
    assert rem <= ours_rem
    assert add <= ours_add
    if alpha == int(alpha):  # exact at integer orders
        assert ours_rem == pytest.approx(rem, rel=1e-8)
    else:  # the chord of the convex CGF: above, but close
        assert ours_rem <= rem * 1.1


@pytest.mark.parametrize("direction", ["remove", "add", "both"])
def test_t1_is_base_and_k_equals_t_is_composition(direction):
    g = dp.Gaussian(0.8)
    a = np.array([1.5, 2, 3.25, 10, 100, 2000])
    assert np.allclose(allocation_rdp(g, 1, 1, a, direction), g.rdp(a), rtol=1e-12)
    assert np.allclose(allocation_rdp(g, 5, 5, a, direction), 5 * g.rdp(a), rtol=1e-12)
    assert np.all(allocation_rdp(g, 5, 5, a, direction) >= 5 * g.rdp(a))


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0])
@pytest.mark.parametrize("t", [10, 100, 1000])
def test_remove_below_poisson_epoch(sigma, t):
    """FS25 compare random allocation with Poisson sampling at rate k/t over the same t
    steps: at integer orders the remove-direction RDP of one epoch is below t x the tight
    Poisson RDP (004 Thm 34) on these DP-SGD plans."""
    a = np.arange(2, 65, dtype=float)
    alloc = allocation_rdp(dp.Gaussian(sigma), 1, t, a, "remove")
    pois = t * dp.Gaussian(sigma).subsample(dp.Poisson(1 / t)).rdp(a)
    assert np.all(alloc <= pois * (1 + 1e-9))


def test_monotone_in_t_and_k():
    g = dp.Gaussian(1.0)
    a = np.arange(2, 40, dtype=float)
    prev = allocation_rdp(g, 1, 2, a, "remove")
    for t in (3, 5, 10, 50, 200):
        cur = allocation_rdp(g, 1, t, a, "remove")
        assert np.all(cur <= prev)
        prev = cur
    for direction in ("remove", "add", "both"):
        vals = [allocation_rdp(g, k, 20, a, direction) for k in (1, 2, 4, 10, 20)]
        for lo, hi in zip(vals, vals[1:]):
            assert np.all(lo <= hi)


def test_add_direction_bound_closed_form():
    g = dp.Gaussian(2.0)  # mu^2/2 = 1/8
    a = np.array([1.5, 2.0, 7.0])
    expect = a * 0.125 / 10 + 0.9 * 0.125  # the concavity bound; the second-order one may
    add = allocation_rdp(g, 1, 10, a, "add")  # be smaller at small orders
    assert np.all(add <= expect * (1 + 1e-14)) and np.all(add > 0)
    assert add[-1] == pytest.approx(expect[-1], rel=1e-14)
    both = allocation_rdp(g, 1, 10, a, "both")
    assert np.all(both >= allocation_rdp(g, 1, 10, a, "remove"))
    assert np.all(both >= add)


def test_edges_and_errors():
    g = dp.Gaussian(1.0)
    out = allocation_rdp(g, 1, 100, [1.0001, 2, 1e4, np.inf])
    assert np.isinf(out[-1]) and np.all(np.isfinite(out[:-1])) and not np.isnan(out).any()
    assert np.all(allocation_rdp(dp.Gaussian(1.0, sensitivity=0.0), 1, 10, [2, 3]) == 0)
    with pytest.raises(NotImplementedError, match="Gaussian only"):
        allocation_rdp(dp.Laplace(1.0), 1, 10, [2])
    with pytest.raises(ValueError, match="add/remove"):
        allocation_rdp(dp.Gaussian(1.0, relation=dp.SUBSTITUTION), 1, 10, [2])
    with pytest.raises(ValueError, match="direction"):
        allocation_rdp(g, 1, 10, [2], "sideways")
    with pytest.raises(ValueError, match="k must be"):
        allocation_rdp(g, 11, 10, [2])
    with pytest.raises(ValueError, match="orders"):
        allocation_rdp(g, 1, 10, [0.5])


@settings(max_examples=30, deadline=None)
@given(sigma=st.floats(0.3, 5.0), t=st.integers(1, 300), k=st.integers(1, 4),
       alpha=st.floats(1.01, 200.0))
def test_properties(sigma, t, k, alpha):
    k = min(k, t)
    g = dp.Gaussian(sigma)
    rem = allocation_rdp(g, k, t, [alpha, math.floor(alpha) + 1], "remove")
    assert 0 <= rem[0] <= k * g.rdp(alpha) * (1 + 1e-12)
    # the chord bound at a real order never exceeds the value at the next integer order
    # times (ceil - 1)/(alpha - 1) >= 1, and the CGF (alpha - 1) eps is nondecreasing
    assert (alpha - 1) * rem[0] <= math.floor(alpha) * rem[1] * (1 + 1e-12)
    both = allocation_rdp(g, k, t, [alpha], "both")[0]
    assert both >= rem[0] and math.isfinite(both)


def _laplace_add_moment(mu, m, lam):
    """log E_Q[(dP/dQ)^{-lam}] / lam, the add-direction RDP at order lam + 1, by the identity
    x^{-lam} = (1/Gamma(lam)) int_0^inf s^{lam-1} e^{-s x} ds: with M the mean of m
    independent L_i, E_Q[M^{-lam}] = (1/Gamma(lam)) int_0^inf s^{lam-1} phi(s/m)^m ds, phi the
    Laplace transform of one L = e^{mu y - mu^2/2} (scipy quadrature, nested)."""
    from scipy import integrate, stats

    def phi(u):
        f = lambda y: stats.norm.pdf(y) * math.exp(-u * math.exp(mu * y - mu * mu / 2))
        return integrate.quad(f, -12, 12, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    g = lambda s: s ** (lam - 1) * phi(s / m) ** m
    val = integrate.quad(g, 0, np.inf, epsabs=1e-13, epsrel=1e-10, limit=400)[0]
    return math.log(val / math.gamma(lam)) / lam


@pytest.mark.parametrize("mu,m,alpha", [(1.0, 50, 2.0), (1.0, 200, 3.0)])
def test_add_direction_bound_above_the_exact_moment(mu, m, alpha):
    """The add-direction bound (the smaller of the concavity and second-order bounds) is above
    the exact add-direction RDP (independent quadrature) and not absurdly loose."""
    exact = _laplace_add_moment(mu, m, alpha - 1)
    ours = allocation_rdp(dp.Gaussian(1 / mu), 1, m, [alpha], "add")[0]
    assert exact <= ours <= 20 * exact
