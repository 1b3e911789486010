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
