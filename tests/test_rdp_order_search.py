"""The RDP order search (dpamp.rdp.conversion._minimise): integer sweep, integer brackets,
tenths around the best integer, parabola vertices. Every order gives a valid bound, so the
search can only cost tightness; these tests check that it costs none against dp-accounting's
order grid, against dense order grids, and that its answer is deterministic.

Independent references: dp-accounting 0.6.0's RdpAccountant (its default orders: tenths on
(1, 11), integers to 63, then 128 ... 1024, and its own evaluation of the Mironov, Talwar &
Zhang 2019 series) and the minimum of the same objective over dense grids of orders."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import dpamp as dp
from dpamp.rdp.conversion import (eps_at_orders, epsilon_from_rdp, log_delta_at_orders,
                                  delta_from_rdp, upper_curve)

R = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")

#: dp-accounting's default orders, tenths of a unit up to order 64 and integers up to 1100:
#: the orders the search contains near its best one (the claim of _minimise's docstring)
LATTICE = np.unique(np.concatenate([np.asarray(R.DEFAULT_RDP_ORDERS, dtype=float),
                                    1.0 + np.arange(1, 631) / 10.0,
                                    np.arange(65.0, 1101.0)]))
#: twenty orders a unit up to 64, as a finer grid than any the search lays down
FINE = np.unique(np.concatenate([LATTICE, 1.0 + np.arange(1, 1261) / 20.0,
                                 1.0 + np.geomspace(1e-3, 0.1, 60)]))

# dpamp's reported bound carries a relative 1e-10 margin (accounting/methods/rdp.py) over the
# raw minimum, and both libraries evaluate the same series in floating point: 1e-9 relative
# is that margin with room for their rounding, far below any gain of the search (a tenth of
# an order is worth 1e-6 .. 1e-2 relative on these plans)
SLACK = 1e-9


def _theirs(sigma, q, n, delta):
    import dp_accounting as dpa
    acc = R.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), n)
    return acc.get_epsilon(delta), acc.get_delta


PLANS = [(s, q, n, d) for s in (0.6, 1.1, 2.0, 5.0) for q in (1e-4, 256 / 60000, 0.05)
         for n, d in ((10, 1e-5), (1000, 1e-9), (100_000, 1e-5))]


@pytest.mark.parametrize("sigma,q,n,delta", PLANS)
def test_rdp_never_looser_than_dp_accounting(sigma, q, n, delta):
    mech = dp.Gaussian(sigma).subsample(dp.Poisson(q)) * n
    ours = mech.epsilon(delta, method="rdp").epsilon
    theirs, their_delta = _theirs(sigma, q, n, delta)
    assert ours <= theirs * (1 + SLACK) + 1e-15, (ours, theirs)
    if theirs > 0:
        assert mech.delta(theirs, method="rdp").delta <= their_delta(theirs) * (1 + SLACK)


def test_w1_strictly_tighter_than_dp_accounting():
    """W1 (the DP-SGD plan): dp-accounting's best order is 8.1; the real optimum, near 8.122,
    is worth 5e-6 of epsilon (both libraries evaluate the same exact series)."""
    ours = (dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062).epsilon(
        1e-5, method="rdp").epsilon
    theirs, _ = _theirs(1.1, 256 / 60000, 14062, 1e-5)
    assert ours < theirs * (1 - 4e-6)
    assert ours > 2.38          # the true value (tight PLD) is about 2.3816


def _dense(curve, orders, delta):
    up = upper_curve(curve)
    return float(eps_at_orders(orders, up(orders), -math.log(delta)).min())


MECHS = {
    "poisson gaussian": lambda s, q, n: dp.Gaussian(s).subsample(dp.Poisson(q)) * n,
    "gaussian": lambda s, q, n: dp.Gaussian(s / math.sqrt(q * 10)) * n,
    "poisson laplace": lambda s, q, n: dp.Laplace(s).subsample(dp.Poisson(q)) * n,
    "wor gaussian": lambda s, q, n: dp.Gaussian(s, relation=dp.SUBSTITUTION).subsample(
        dp.WithoutReplacement(max(1, round(q * 60000)), 60000)) * n,
}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(MECHS)), sigma=st.floats(0.4, 8.0),
       log_q=st.floats(-5.0, -0.5), log_n=st.floats(0.0, 5.0), log_delta=st.floats(-12.0, -2.0))
@example(kind="poisson gaussian", sigma=1.507495317809016, log_q=-5.0, log_n=0.0,
         log_delta=-12.0)
@example(kind="poisson laplace", sigma=1.1484375, log_q=-1.5, log_n=4.3203125,
         log_delta=-2.0)
def test_search_never_above_the_dense_lattice(kind, sigma, log_q, log_n, log_delta):
    """The searched minimum is no larger than the same objective's minimum over dp-accounting's
    orders, tenths up to 64 and integers up to 1100 (rounding aside); and within 1e-6 of the
    minimum over a grid twice as fine (never above it on 300 random plans of these ranges).
    The explicit example turns up sharply at its best order (the one-step curve grows
    10^7-fold from order 52 to 54), where parabola vertices alone stopped 1.1e-6 above the
    finer grid; the orders tried around each vertex bring it below. The second (found by a CI
    run) has two basins, the integer 2 and order 1.755, 0.1 % lower, with the tenths between
    them higher than both: the search refines the second basin too."""
    mech = MECHS[kind](sigma, 10.0 ** log_q, max(1, round(10.0 ** log_n)))
    delta = 10.0 ** log_delta
    ours, alpha = epsilon_from_rdp(mech._rdp, delta)
    if ours == 0.0:
        return                   # certified by the Bretagnolle-Huber test; nothing is lower
    assert ours <= _dense(mech._rdp, LATTICE, delta) * (1 + 1e-12)
    assert ours <= _dense(mech._rdp, FINE, delta) * (1 + 1e-6)
    # the reported value is attained: it is the objective at the returned order
    assert ours == pytest.approx(_dense(mech._rdp, np.array([alpha]), delta), rel=1e-15)


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.5, 4.0), log_q=st.floats(-4.0, -1.0), log_n=st.floats(0.0, 4.5),
       epsilon=st.floats(0.05, 8.0))
def test_delta_search_never_above_the_dense_lattice(sigma, log_q, log_n, epsilon):
    mech = dp.Gaussian(sigma).subsample(dp.Poisson(10.0 ** log_q)) * round(10.0 ** log_n)
    d, _ = delta_from_rdp(mech._rdp, epsilon)
    up = upper_curve(mech._rdp)
    dense = float(np.exp(log_delta_at_orders(LATTICE, up(LATTICE), epsilon).min()))
    assert d <= max(dense * (1 + 1e-12), 2.0 ** -1074)


def test_same_question_same_answer():
    """Nothing carried between queries: a fresh mechanism, the same mechanism asked again, and
    a mechanism warmed up on other orders give the same bits."""
    make = lambda: dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062  # noqa: E731
    first = make().epsilon(1e-5, method="rdp").epsilon
    warm = make()
    warm.rdp(np.linspace(1.01, 300.0, 777))
    warm.epsilon(1e-9, method="rdp")
    assert warm.epsilon(1e-5, method="rdp").epsilon == first
    assert make().epsilon(1e-5, method="rdp").epsilon == first


def test_pure_curve_runs_to_the_top_without_listing_it():
    """A pure curve's best order is the largest tried: the doubling stops at 1e6 and the
    bracket is not listed order by order (it once asked for 4e9 of them)."""
    mech = dp.RandomizedResponse(0.85, relation=dp.SUBSTITUTION) * 30
    g = mech.epsilon(1e-5, method="rdp-classic")
    assert g.epsilon <= mech.pure_epsilon() * (1 + 1e-9)
