"""The profile interface (profile_pair / profile_pair_lower / privacy_profile), the "profile"
accounting method, relation errors, and hypothesis properties of all profile bounds."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.profiles import core


def test_shapes_and_scalars():
    g = dp.Gaussian(1.0)
    assert dp.profile_pair(g, 1.0).shape == (2,)
    assert dp.profile_pair(g, [[0.0, 1.0], [2.0, 3.0]]).shape == (2, 2, 2)
    assert isinstance(g.profile(1.0), float)
    assert g.profile([0.5, 1.0]).shape == (2,)
    assert dp.profile_pair_lower(g, [1.0, 2.0]).shape == (2, 2)
    with pytest.raises(ValueError, match="epsilon"):
        dp.profile_pair(g, -1.0)
    with pytest.raises(ValueError, match="nan"):
        g.profile(float("nan"))


def test_no_profile_raises_clearly():
    for m in [dp.ZCDP(0.5), dp.RDPCurve(lambda a: 0.1 * a),
              dp.ZCDP(0.5).subsample(dp.Poisson(0.1))]:
        with pytest.raises(NotImplementedError, match="profile"):
            dp.profile_pair(m, 1.0)
        assert dp.profile_pair_lower(m, 1.0) is None or isinstance(m, dp.Subsampled)


def test_composition_profile_goes_to_the_pld_engine():
    comp = dp.Gaussian(1.0) * 3
    try:
        import dpamp.pld as pld
        has_engine = hasattr(pld, "pld_profile")
    except ImportError:
        has_engine = False
    if has_engine:
        v = comp.profile(1.0)
        assert 0 <= v <= 1
    else:
        with pytest.raises(NotImplementedError, match="PLD"):
            comp.profile(1.0)
    # a composition of one part used once is that part
    np.testing.assert_array_equal(dp.compose(dp.Gaussian(1.0)).profile([0.5, 1.0]),
                                  dp.Gaussian(1.0).profile([0.5, 1.0]))


def test_mismatched_scheme_and_relation_is_an_error():
    with pytest.raises(ValueError, match="substitution"):
        dp.Gaussian(1.0).subsample(dp.WithoutReplacement(10, 100))
    with pytest.raises(ValueError, match="substitution"):
        dp.Gaussian(1.0).subsample(dp.WithReplacement(10, 100))
    with pytest.raises(ValueError, match="add_remove"):
        dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.Poisson(0.1))
    with pytest.raises(ValueError, match="substitution"):
        dp.Gaussian(1.0).subsample(dp.WithReplacement(10, 100, outer=dp.ADD_REMOVE))
    with pytest.raises(ValueError, match="population"):
        dp.Poisson(0.1, relation=dp.SUBSTITUTION, population=0)


# --- the "profile" method --------------------------------------------------------------------

def test_profile_method_is_auto_for_single_mechanisms():
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    assert dp.available_methods(m)[0] == "profile"
    g = m.epsilon(1e-5)
    assert g.method == "profile" and "Thm 8" in g.source
    assert g.lower is not None and g.lower <= g.epsilon <= g.lower * (1 + 1e-9)
    assert m.profile(g.epsilon) <= 1e-5
    # the profile beats the RDP conversion on a single mechanism
    assert g.epsilon < m.epsilon(1e-5, method="rdp").epsilon
    d = m.delta(1.0)
    assert d.method == "profile" and d.lower <= d.delta
    np.testing.assert_allclose(d.delta, m.profile(1.0))
    assert "profile" not in dp.available_methods(m * 2)


@pytest.mark.parametrize("mech", [
    dp.Gaussian(2.0), dp.Laplace(0.5), dp.RandomizedResponse(0.9), dp.PureDP(1.0),
    dp.EpsDelta(0.5, 1e-6),
    dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.WithoutReplacement(50, 1000)),
    dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(dp.WithReplacement(50, 1000)),
    dp.Gaussian(1.0, relation=dp.SUBSTITUTION).subsample(
        dp.Poisson(0.05, relation=dp.SUBSTITUTION, population=1000)),
    dp.RandomizedMembership.from_epsilon_delta(1.0, 1e-3).subsample(dp.Poisson(0.1)),
])
def test_epsilon_delta_inversion(mech):
    for delta in [1e-3, 1e-7]:
        g = mech.epsilon(delta, method="profile")
        if math.isinf(g.epsilon):  # delta below the mass at infinity
            assert mech.profile(np.inf) > delta and g.lower == math.inf
            continue
        assert mech.profile(g.epsilon) <= delta or g.epsilon == 0
        if g.epsilon > 1e-9:  # slightly smaller epsilon violates the (upper) profile
            assert mech.profile(g.epsilon * (1 - 1e-9)) > delta or g.lower == g.epsilon
        if g.lower is not None:
            assert g.lower <= g.epsilon
            low = dp.profiles.privacy_profile_lower(mech, g.lower)
            assert low >= delta or g.lower == 0.0


def test_pure_and_infinite_epsilon():
    assert dp.Laplace(1.0).epsilon(0.0, method="profile").epsilon == pytest.approx(1.0, rel=1e-12)
    ed = dp.EpsDelta(1.0, 1e-3)
    assert ed.epsilon(1e-4, method="profile").epsilon == math.inf  # below the mass at infinity
    assert ed.epsilon(2e-3, method="profile").epsilon < 1.0


# --- the randomized membership mechanism -------------------------------------------------------

def test_randomized_membership():
    rm = dp.RandomizedMembership.from_epsilon_delta(1.0, 0.01)
    np.testing.assert_allclose(rm.profile(1.0), 0.01, rtol=1e-12)  # phi_p(e^eps) = delta
    np.testing.assert_allclose(dp.profiles.phi(rm.p, math.e), 0.01, rtol=1e-12)
    assert rm.pure_epsilon() == pytest.approx(math.log(rm.p / (1 - rm.p)))
    np.testing.assert_allclose(dp.profiles.phi(0.3, [1.0, 2.0]), dp.profiles.phi(0.7, [1.0, 2.0]))
    with pytest.raises(ValueError):
        dp.RandomizedMembership(1.0)


# --- hypothesis properties -------------------------------------------------------------------

def _base(kind, x, rel):
    return {"gauss": lambda: dp.Gaussian(0.2 + 4 * x, relation=rel),
            "laplace": lambda: dp.Laplace(0.1 + 3 * x, relation=rel),
            "rr": lambda: dp.RandomizedResponse(0.5 + 0.49 * x, relation=rel),
            "pure": lambda: dp.PureDP(0.05 + 3 * x, relation=rel),
            "epsdelta": lambda: dp.EpsDelta(3 * x, 1e-6 + 0.1 * x, relation=rel)}[kind]()


def _scheme(kind, rate, n, mb):
    mb = min(mb, n)
    return {"poisson": (dp.Poisson(rate), dp.ADD_REMOVE),
            "wor": (dp.WithoutReplacement(mb, n), dp.SUBSTITUTION),
            "wr": (dp.WithReplacement(mb, n), dp.SUBSTITUTION),
            "wr_ar": (dp.WithReplacement(mb, n, outer=dp.ADD_REMOVE), dp.SUBSTITUTION),
            "poisson_sub": (dp.Poisson(rate, relation=dp.SUBSTITUTION, population=n),
                            dp.SUBSTITUTION)}[kind]


EPS = np.array([0.0, 0.01, 0.1, 0.3, 1.0, 2.0, 4.0, 8.0, 16.0, np.inf])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["gauss", "laplace", "rr", "pure", "epsdelta"]),
       st.floats(0.0, 1.0),
       st.sampled_from(["poisson", "wor", "wr", "wr_ar", "poisson_sub"]),
       st.floats(1e-4, 1.0), st.integers(1, 300), st.integers(1, 20))
def test_profile_properties(kind, x, scheme_kind, rate, n, mb):
    scheme, rel = _scheme(scheme_kind, rate, n, mb)
    base = _base(kind, x, rel)
    m = base.subsample(scheme)
    up = dp.profile_pair(m, EPS)
    assert np.isfinite(up).all() and (up >= 0).all() and (up <= 1).all()
    prof = np.maximum(up[0], up[1])
    # non-increasing in epsilon (envelopes make the non-monotone bounds monotone on a grid)
    assert (np.diff(prof) <= 1e-12).all()
    low = dp.profile_pair_lower(m, EPS)
    assert low is not None and (low <= up * (1 + 1e-12)).all()
    assert (np.diff(low, axis=1) <= 1e-15).all()
    # amplified <= base: subsampling never hurts (where the bound is the amplified one; the
    # with-replacement bounds use group profiles and may exceed the base for large batches)
    base_prof = base.profile(EPS)
    if scheme_kind in ("poisson", "wor", "poisson_sub") or kind == "rr":
        assert (prof <= base_prof * (1 + 1e-9) + 1e-300).all()


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 5.0), st.floats(1e-5, 1.0), st.floats(0.0, 30.0))
def test_poisson_rows_monotone_in_rate(sigma, rate, eps):
    """More sampling never helps privacy: both rows non-decreasing in the rate (the pair with a
    smaller rate is a post-processing of the one with a larger rate)."""
    g = dp.Gaussian(sigma)
    a = dp.profile_pair(g.subsample(dp.Poisson(rate)), eps)
    b = dp.profile_pair(g.subsample(dp.Poisson(min(1.0, rate * 1.5))), eps)
    assert (a <= b * (1 + 1e-9) + 1e-300).all()


def test_register_extension_api():
    """A new mechanism type gets profiles by registration, without touching its class."""
    import dataclasses
    from dpamp.mechanisms.base import Mechanism

    @dataclasses.dataclass(frozen=True)
    class Coin(Mechanism):
        relation: dp.Relation = dp.ADD_REMOVE

        def _rdp(self, a):
            return dp.PureDP(1.0)._rdp(a)

    core.register(Coin, pair=lambda m, e: core.log_pair(dp.PureDP(1.0), e))
    np.testing.assert_array_equal(dp.profile_pair(Coin(), [0.5]),
                                  dp.profile_pair(dp.PureDP(1.0), [0.5]))
    assert dp.profile_pair_lower(Coin(), [0.5]) is None
    s = Coin().subsample(dp.Poisson(0.1))
    assert dp.profile_pair(s, 0.5).shape == (2,)
    assert dp.profile_pair_lower(s, 0.5) is None


def test_privacy_profile_object():
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.02))
    prof = dp.profiles.PrivacyProfile(m)
    eps = np.array([0.0, 0.5, 1.0])
    np.testing.assert_array_equal(prof(eps), m.profile(eps))
    np.testing.assert_array_equal(prof.pair(eps), dp.profile_pair(m, eps))
    assert (prof.lower(eps) <= prof(eps)).all()
    up, low = prof.epsilon(1e-6)
    assert low <= up and prof(up) <= 1e-6
