"""Regression tests for the soundness fixes that the battery (test_soundness_battery.py) does
not reach on its own: each failed before its fix."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp
from dpamp.pld.engine import PartPMF, REL_MARGIN, mass_margin
from dpamp.profiles.core import symmetric_pair


def test_unknown_options_are_type_errors_naming_them():
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 10
    for method in ("auto", "rdp", "pld"):
        with pytest.raises(TypeError, match="tolerance.*valid options:.*tol"):
            m.epsilon(1e-5, method=method, tolerance=1e-6)
        with pytest.raises(TypeError, match="bogus_option"):
            m.delta(1.0, method=method, bogus_option=3)
    # an option some method takes is given to that method only
    assert m.epsilon(1e-5, method="rdp", tol=1e-2).method == "rdp"


def test_method_must_be_a_name():
    with pytest.raises(ValueError, match="method must be a method name"):
        dp.Gaussian(1.0).epsilon(1e-5, method=["rdp"])


def test_auto_says_which_method_it_passed_over_and_why():
    """A numerical failure (here: a PLD grid beyond memory) is passed over by auto like
    OutOfReach, and the Guarantee's note says so."""
    m = dp.Laplace(0.001) * 2      # losses of 1000: beyond what the PLD's grid can hold
    g = m.epsilon(1e-5)
    assert g.method != "pld" and "pld could not answer" in g.note and g.note.endswith(g.method)
    assert g.as_dict()["note"] == g.note


def test_profile_pairs_are_symmetric_only_by_construction():
    """Asymmetric profile pairs (000 Thm 8: Poisson, add/remove; Thm 11: with replacement,
    add/remove outer) are composed in both directions; symmetric relations in one."""
    pure = dp.PureDP(0.6, relation=dp.SUBSTITUTION)
    assert not symmetric_pair(pure.subsample(dp.WithReplacement(1, 2, outer=dp.ADD_REMOVE)))
    assert symmetric_pair(pure.subsample(dp.WithReplacement(1, 2)))
    assert symmetric_pair(pure.subsample(dp.WithoutReplacement(1, 2)))
    assert not symmetric_pair(dp.PureDP(0.6).subsample(dp.Poisson(0.5)))
    assert symmetric_pair(dp.Gaussian(1.0))


def test_pld_mass_margin_grows_with_the_steps_and_the_grid():
    """(1 + r)^c - 1 for c steps of masses with relative error r ~ 8u/h."""
    class _D:  # the margin reads only the counts
        pass
    assert mass_margin([PartPMF(_D(), 1000)], 1e-3) == REL_MARGIN
    parts = [PartPMF(_D(), 10 ** 6)]
    h = 1e-6
    assert mass_margin(parts, h) == pytest.approx(math.expm1(1e6 * 8 * 2.0 ** -53 / h))
    assert mass_margin(parts, h) > 100 * REL_MARGIN


@pytest.mark.parametrize("mu", [1e100, 1e149, 2e150, 1e200, 1e300])
def test_gaussian_profile_beyond_mu_1e150_is_not_capped(mu):
    """The upper profile capped mu at 1e150, a smaller (more private) Gaussian: Gaussian(1e-300)
    answered epsilon = 5e299 at delta = 1e-5 (truth: beyond the double range)."""
    g = dp.Gaussian(1.0 / mu).epsilon(1e-5, method="profile").epsilon
    with mp.workdps(30):
        m = mp.mpf(mu)
        truth = m * m / 2 + 4 * m   # epsilon(1e-5) >= mu^2/2 + 4 mu (Gaussian profile)
    assert g == math.inf or mp.mpf(g) >= truth


def test_rdp_near_order_one_is_accurate_and_non_negative():
    """Randomized response's curve cancelled near alpha = 1 (-8.9e-11 at eps0 = 1e-6)."""
    with mp.workdps(60):
        for eps0 in (1e-9, 1e-6, 1e-3, 1.0, 30.0):
            for a in (1 + 1e-12, 1 + 1e-9, 1 + 1e-6, 1.5, 2.0, 1e6):
                x, u = mp.mpf(eps0), mp.mpf(a) - 1
                lp, lq = -mp.log(1 + mp.e ** (-x)), -mp.log(1 + mp.e ** x)
                truth = mp.log(mp.e ** (lp + u * x) + mp.e ** (lq - u * x)) / u
                got = dp.PureDP(eps0).rdp(a)
                assert got >= truth and got <= truth * (1 + 1e-14)


def test_pure_epsilons_are_upper_bounds():
    from fractions import Fraction
    assert Fraction(dp.Laplace(3.0).pure_epsilon()) >= Fraction(1, 3)
    assert dp.Laplace(1.0).pure_epsilon() == 1.0            # an exact quotient stays exact
    assert Fraction((dp.PureDP(0.7) * 3).pure_epsilon()) >= 3 * Fraction(0.7)
    with mp.workdps(50):
        for q in (1e-300, 1e-20, 1e-6, 0.3):
            for e in (1e-12, 0.5, 3.0, 800.0):
                got = dp.PureDP(e).subsample(dp.Poisson(q)).pure_epsilon()
                assert got >= mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(e)))


def test_delta_below_the_double_range_is_the_smallest_double_not_zero():
    g = dp.Gaussian(10.0)
    for method in ("rdp", "rdp-classic", "zcdp"):
        assert g.delta(4.134, method=method).delta == 5e-324
    assert (dp.PureDP(0.1) * 30).delta(2.9, method="advanced").delta > 0


def test_huge_orders_answer_without_allocating():
    s = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    assert s.rdp(1e19) >= 5e18 * (1 - 1e-12) and s.rdp(1e12) >= 5e11 * (1 - 1e-12)
    p = dp.PureDP(1.0).subsample(dp.Poisson(0.01))
    assert p.rdp(1e19) == pytest.approx(p.pure_epsilon(), rel=1e-12)


def test_lower_hull_passes_agree_with_the_monotone_chain():
    """The vectorised passes of core.hull return Andrew's monotone chain's hull."""
    from dpamp.core.hull import _monotone_chain, lower_hull
    rng = np.random.default_rng(1)
    for trial in range(200):
        x = np.unique(np.sort(rng.uniform(0, 10, int(rng.integers(1, 80)))))
        y = rng.normal(size=x.size) if trial % 2 else (x - 5) ** 2 + rng.normal(0, 0.1, x.size)
        assert np.array_equal(lower_hull(x, y), _monotone_chain(x, y))


def test_calibrate_steps_with_auto_chooses_per_plan():
    """The one-step plan has an exact profile the compositions have not: resolving "auto" once
    on it ended every calibration of steps with "method 'profile' does not apply"."""
    c = dp.calibrate.steps(epsilon=3.0, delta=1e-5, sigma=1.0, sampling=dp.Poisson(0.01))
    assert c.guarantee.epsilon <= 3.0 and c.value > 1000


def test_an_atom_within_rounding_of_zero_loss_is_on_it():
    """An atom of loss -1e-17 (log(1 - q + q e^0) in floating point: the discrete Laplace's
    zero-loss atom after Poisson sampling) was laid in the cell [-h, 0) at its far end, read
    as loss -h: the upper bound fell below the truth (and below the proven lower bound). The
    exact value here enumerates the 3-atom pair's 2-fold product."""
    import itertools

    from dpamp.families.discrete_laplace import _loss
    sub = _loss(dp.DiscreteLaplace(3.0, 2)).poisson(0.0625)
    assert -1e-15 < sub.atom_loss[1] < 0          # the rounding this test is about
    p, q = sub.atom_p, sub.atom_q
    exact = sum(max(p[i] * p[j] - math.e * q[i] * q[j], 0.0)
                for i, j in itertools.product(range(3), repeat=2))
    g = (dp.DiscreteLaplace(3.0, 2).subsample(dp.Poisson(0.0625)) * 2).delta(1.0, method="pld")
    assert g.lower <= exact * (1 + 1e-12) and exact <= g.delta
    assert np.isfinite(g.delta) and g.delta - exact < 1e-9
