"""The add direction's grid for small noise (:mod:`dpamp.amplification.allocation.capped`)."""

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

from dpamp.amplification.allocation import capped as C


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-18, 0.3), st.floats(1e-18, 0.9), st.integers(1, 100_000))
def test_merged_atom_masses_bound_the_exact_ones(q, p, t):
    """Q[N >= 1] = 1 - (1 - q)^t from below, P[N >= 1] = 1 - (1 - p)(1 - q)^(t-1) from above,
    against 50-digit arithmetic."""
    mpmath.mp.dps = 50
    m_q, m_p = C.merged_atom(q, p, t)
    eq = 1 - (1 - mpmath.mpf(q)) ** t
    ep = 1 - (1 - mpmath.mpf(p)) * (1 - mpmath.mpf(q)) ** (t - 1)
    assert m_q <= eq and m_p >= ep
    assert m_q >= eq * (1 - 1e-10) and m_p <= ep * (1 + 1e-10)


def test_merged_atom_edges():
    assert C.merged_atom(0.0, 0.0, 10) == (0.0, 0.0)
    m_q, m_p = C.merged_atom(1.0, 0.5, 3)
    assert m_p == 1.0 and 0.99 < m_q <= 1.0


@pytest.mark.parametrize("c,dx,max_k", [(1000.0, 0.0158, 1 << 17), (1e4, 0.05, 1 << 17),
                                        (3.0, 1e-3, 1 << 17), (7.0, 3.0, 8)])
def test_step_reaches_the_cap(c, dx, max_k):
    step, K = C.step_for(c, dx, max_k)
    assert K * step >= c > (K - 1) * step and 2 <= K <= max_k
    assert step <= max(dx, c / max_k) * (1 + 1e-12)


def test_cap_is_t_unless_the_body_ends_first():
    assert C.cap_for(1000, 1e5) == 1000.0 and C.cap_for(1000, 10.0) == 10.0
    assert C.needs_own_grid(259.0, 30.0) and not C.needs_own_grid(1.3, 30.0)


@pytest.mark.parametrize("sigma,t", [(0.3, 5), (0.3, 40), (0.5, 3)])
def test_max_bound_is_above_the_largest_coordinates_integral(sigma, t):
    """max_bound >= int_0^1 F(r t/x)^t dr = E_Q[(1 - x M/t)_+] (adaptive quadrature of the
    Gaussian's F(m) = Phi((sigma^2 log m + 1/2) / sigma)), and close to it: the sum's knots
    are 1 % apart in m, so the excess grows only with F^t's slope (1.24 at sigma 0.3, t 40,
    eps 20, where the integral is 1.7e-130; the former 9 % grid was 3.6x there)."""
    import numpy as np
    from scipy import integrate, special

    from dpamp.pld.sources import loss_distribution
    import dpamp as dp
    loss = loss_distribution(dp.Gaussian(sigma))

    def F(m):
        return 0.5 * special.erfc(-(sigma ** 2 * np.log(m) + 0.5) / sigma / np.sqrt(2.0))
    epss = (0.0, 3.0, 10.0, 20.0)
    together = C.max_bound(loss, t, np.exp(np.linspace(0.0, 40.0, 4001)))
    for eps, slack in zip(epss, (1.01, 1.02, 1.1, 1.5)):
        x = np.exp(eps)
        direct = integrate.quad(lambda r: F(r * t / x) ** t, 0.0, 1.0, epsabs=1e-300,
                                epsrel=1e-10, limit=400, points=[1e-6, 1e-3, 0.1])[0]
        mb = float(C.max_bound(loss, t, [x])[0])
        assert direct * (1 - 1e-8) <= mb <= slack * direct + 1e-300, (eps, direct, mb)
        # one grid for many x: the same sum at each (knots shared, not per x)
        many = float(together[int(round(eps * 100))])
        assert direct * (1 - 1e-8) <= many <= slack * direct + 1e-300, (eps, direct, many)


def test_max_bound_edges():
    """x = 1 (whole range) and x up to 1e300: finite, in [0, 1], non-increasing in x."""
    import numpy as np

    from dpamp.pld.sources import loss_distribution
    import dpamp as dp
    loss = loss_distribution(dp.Gaussian(0.4))
    x = np.concatenate([[1.0], np.geomspace(1.0001, 1e300, 300)])
    mb = C.max_bound(loss, 10, x)
    assert np.all(np.isfinite(mb)) and np.all((mb >= 0) & (mb <= 1))
    assert np.all(np.diff(mb) <= 1e-12)
