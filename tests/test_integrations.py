"""dp-accounting DpEvents read into dpamp; the opacus-style accountant without torch."""
import math
import os
import subprocess
import sys
import textwrap

import pytest
from dp_accounting import NeighboringRelation as NR
from dp_accounting import dp_event as E
from dp_accounting.rdp import rdp_privacy_accountant as R

import dpamp as dp
from dpamp.io.opacus import OpacusAccountant
from dpamp.io.plan import parse_plan_text

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION

# (event, its neighbouring relation for dp-accounting, the equivalent dpamp mechanism, the
# equivalent TOML plan stages)
CASES = [
    (E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 1000),
     NR.ADD_OR_REMOVE_ONE,
     dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 1000,
     """mechanism = "gaussian"\nnoise_multiplier = 1.0\nsampling = "poisson"\nrate = 0.01
        steps = 1000"""),
    (E.SelfComposedDpEvent(E.SampledWithoutReplacementDpEvent(1000, 10, E.GaussianDpEvent(1.5)),
                           500),
     NR.REPLACE_ONE,
     dp.Gaussian(1.5, 1.0, S).subsample(dp.WithoutReplacement(10, 1000)) * 500,
     # dp-accounting's z is relative to the replace-one sensitivity: sigma = z, sensitivity 1
     """mechanism = "gaussian"\nsigma = 1.5\nsensitivity = 1\nsampling = "without_replacement"
        batch_size = 10\ndataset_size = 1000\nsteps = 500"""),
    (E.SelfComposedDpEvent(E.GaussianDpEvent(5.0), 20), NR.ADD_OR_REMOVE_ONE,
     dp.Gaussian(5.0) * 20,
     """mechanism = "gaussian"\nnoise_multiplier = 5.0\nsteps = 20"""),
    (E.SelfComposedDpEvent(E.LaplaceDpEvent(3.0), 20), NR.ADD_OR_REMOVE_ONE,
     dp.Laplace(3.0) * 20,
     """mechanism = "laplace"\nscale = 3.0\nsteps = 20"""),
    (E.SelfComposedDpEvent(E.RandomizedResponseDpEvent(0.3, 2), 30), NR.REPLACE_ONE,
     dp.RandomizedResponse(0.85, S) * 30,
     """mechanism = "randomized_response"\np = 0.85\nrelation = "substitution"\nsteps = 30"""),
    (E.SelfComposedDpEvent(E.RandomizedResponseDpEvent(0.4, 5), 30), NR.REPLACE_ONE,
     dp.KaryRandomizedResponse(5, 0.4, S) * 30,
     """mechanism = "kary_randomized_response"\nk = 5\nnoise_parameter = 0.4
        relation = "substitution"\nsteps = 30"""),
    (E.ComposedDpEvent([E.GaussianDpEvent(3.0), E.LaplaceDpEvent(10.0),
                        E.SelfComposedDpEvent(E.ZCDpEvent(0.01), 3)]),
     NR.ADD_OR_REMOVE_ONE,
     dp.compose(dp.Gaussian(3.0), dp.Laplace(10.0), dp.ZCDP(0.01) * 3),
     """mechanism = "gaussian"\nnoise_multiplier = 3.0\nsteps = 1
        [[stage]]\nmechanism = "laplace"\nscale = 10.0\nsteps = 1
        [[stage]]\nmechanism = "zcdp"\nrho = 0.01\nsteps = 3"""),
]


@pytest.mark.parametrize("event, nr, mech, stages", CASES)
def test_events_equal_the_equivalent_dpamp_plan(event, nr, mech, stages):
    x = dp.from_dp_event(event)
    assert x == mech
    plan = parse_plan_text("delta = 1e-5\n[[stage]]\n" + textwrap.dedent(stages)
                           .replace("\n        ", "\n"))
    assert plan.mechanism == mech
    for method in dp.available_methods(mech):
        assert x.epsilon(1e-5, method=method) == plan.mechanism.epsilon(1e-5, method=method)


@pytest.mark.parametrize("event, nr, mech, stages", CASES)
def test_rdp_epsilon_agrees_with_dp_accounting(event, nr, mech, stages):
    x = dp.from_dp_event(event)
    acc = R.RdpAccountant(neighboring_relation=nr)
    acc.compose(event)
    for delta in (1e-5, 1e-8):
        ours, theirs = x.epsilon(delta, method="rdp").epsilon, acc.get_epsilon(delta)
        # same RDP curves and the same conversion (004 Lemma 33.8); the orders differ:
        # dp-accounting uses a fixed grid, dpamp searches real orders
        assert ours == pytest.approx(theirs, rel=5e-3), (delta, ours, theirs)


def test_subsampled_composition_of_gaussians_is_one_gaussian():
    inner = E.ComposedDpEvent([E.GaussianDpEvent(2.0), E.SelfComposedDpEvent(
        E.GaussianDpEvent(4.0), 4)])
    x = dp.from_dp_event(E.PoissonSampledDpEvent(0.1, inner))
    # z_eff = (2^-2 + 4 * 4^-2)^(-1/2) = (1/4 + 1/4)^(-1/2) = sqrt(2)
    assert x == dp.Gaussian(math.sqrt(2)).subsample(dp.Poisson(0.1))


def test_k_ary_randomized_response_is_read_with_its_exact_curve():
    p, k = 0.4, 5
    x = dp.from_dp_event(E.RandomizedResponseDpEvent(p, k))
    assert x == dp.KaryRandomizedResponse(k, p, S)
    # the likelihood ratio of the two rows, (1 - p + p/k) / (p/k), is dp-accounting's order inf
    rdp_inf = R._compute_randomized_response_rdp(p, k, [math.inf], NR.REPLACE_ONE)[0]
    assert x.pure_epsilon() == pytest.approx(math.log((1 - p + p / k) / (p / k)), rel=1e-14)
    assert x.pure_epsilon() == pytest.approx(rdp_inf, rel=1e-14)
    # at finite orders the curve is dp-accounting's exact k-ary one (not the binary-RR curve
    # of pure DP, which lies above it)
    alphas = [1.5, 2, 4, 16]
    exact = R._compute_randomized_response_rdp(p, k, alphas, NR.REPLACE_ONE)
    assert x.rdp(alphas) == pytest.approx(exact, rel=1e-12)
    assert all(dp.PureDP(x.pure_epsilon()).rdp(alphas) > exact * (1 + 1e-3))


@pytest.mark.parametrize("event", [
    E.NoOpDpEvent(), E.SelfComposedDpEvent(E.GaussianDpEvent(1.0), 0),
    E.PoissonSampledDpEvent(0.0, E.GaussianDpEvent(1.0)),
    E.RandomizedResponseDpEvent(1.0, 3), E.ComposedDpEvent([]),
])
def test_events_without_privacy_cost(event):
    x = dp.from_dp_event(event)
    assert x.epsilon(1e-6, method="rdp").epsilon == 0.0


def test_no_ops_are_dropped_from_compositions():
    x = dp.from_dp_event(E.ComposedDpEvent([E.NoOpDpEvent(), E.GaussianDpEvent(2.0)]))
    assert x == dp.compose(dp.Gaussian(2.0))


@pytest.mark.parametrize("event, kw, msg", [
    (E.NonPrivateDpEvent(), {}, "not differentially private"),
    (E.UnsupportedDpEvent(), {}, "UnsupportedDpEvent is not supported"),
    (E.GaussianDpEvent(0.0), {}, "not private"),
    (E.ComposedDpEvent([E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)),
                        E.SampledWithoutReplacementDpEvent(10, 2, E.GaussianDpEvent(1.0))]),
     {}, "mixes Poisson sampling"),
    (E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)), {"relation": NR.REPLACE_ONE},
     "needs the add_remove relation"),
    (E.GaussianDpEvent(1.0), {"relation": NR.REPLACE_SPECIAL}, "REPLACE_SPECIAL"),
    (E.ZCDpEvent(0.1, 0.5), {}, "xi"),
    ("gaussian", {}, "must be a dp_accounting DpEvent"),
])
def test_unsupported_events_are_clear_errors(event, kw, msg):
    with pytest.raises(ValueError, match=msg):
        dp.from_dp_event(event, **kw)


def test_relation_and_replace_one_sensitivity():
    ev = E.GaussianDpEvent(2.0)
    assert dp.from_dp_event(ev, relation=NR.REPLACE_ONE) == dp.Gaussian(2.0, 1.0, S)
    assert dp.from_dp_event(ev, relation="substitution", replace_one_sensitivity=2) == \
        dp.Gaussian(2.0, 2.0, S)
    assert dp.from_dp_event(ev, relation=NR.ADD_OR_REMOVE_ONE) == dp.Gaussian(2.0)
    wr = E.SampledWithReplacementDpEvent(100, 5, E.LaplaceDpEvent(3.0))
    assert dp.from_dp_event(wr) == dp.Laplace(3.0, 1.0, S).subsample(dp.WithReplacement(5, 100))


def test_opacus_accountant_history_and_epsilon():
    acc = OpacusAccountant()
    assert acc.get_epsilon(1e-5) == 0.0 and len(acc) == 0
    for _ in range(300):
        acc.step(noise_multiplier=1.1, sample_rate=0.01)
    for _ in range(200):
        acc.step(noise_multiplier=0.9, sample_rate=0.02)
    acc.step(noise_multiplier=0.9, sample_rate=1.0)
    assert acc.history == [(1.1, 0.01, 300), (0.9, 0.02, 200), (0.9, 1.0, 1)] and len(acc) == 3
    want = dp.compose(dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 300,
                      dp.Gaussian(0.9).subsample(dp.Poisson(0.02)) * 200, dp.Gaussian(0.9))
    assert acc.mechanism() == want
    assert acc.get_epsilon(1e-5) == want.epsilon(1e-5).epsilon
    assert acc.get_epsilon(1e-5, method="rdp") == want.epsilon(1e-5, method="rdp").epsilon
    # against dp-accounting's RDP accountant on the same steps
    ref = R.RdpAccountant()
    ref.compose(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.1)), 300)
    ref.compose(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(0.9)), 200)
    ref.compose(E.GaussianDpEvent(0.9))
    # 1%: here the best order is fractional (about 4.5); dpamp searches real orders with the
    # exact series, dp-accounting evaluates its fixed grid
    assert acc.get_epsilon(1e-5, method="rdp") == pytest.approx(ref.get_epsilon(1e-5), rel=1e-2)
    g = acc.get_guarantee(1e-5, method="rdp")
    assert g.method == "rdp" and g.source
    other = OpacusAccountant()
    other.load_state_dict(acc.state_dict())
    assert other.history == acc.history


def test_opacus_accountant_validates():
    acc = OpacusAccountant()
    with pytest.raises(ValueError, match="noise_multiplier"):
        acc.step(noise_multiplier=0, sample_rate=0.1)
    with pytest.raises(ValueError, match="sample_rate"):
        acc.step(noise_multiplier=1, sample_rate=1.5)
    with pytest.raises(TypeError):
        acc.step(1.0, 0.1)  # keyword-only, as in opacus
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(0)


def test_no_torch_needed():
    code = ("import sys, dpamp\nfrom dpamp.io.opacus import OpacusAccountant\n"
            "a = OpacusAccountant()\na.step(noise_multiplier=1.0, sample_rate=0.01)\n"
            "a.get_epsilon(1e-5)\nassert 'torch' not in sys.modules\n"
            "assert 'dp_accounting' not in sys.modules\n")
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "src")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
