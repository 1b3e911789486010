"""User-level DP-SGD (dp.UserLevelGaussian, plan words records_per_user / user_sampling /
user_clipping): the pair against an mpmath quadrature, the composition against dp-accounting's
PLD of the same mixture event, the classic group-privacy route (above ours) and TF-Privacy's
user-level numbers (reproduced by that route), m = 1 equal to ordinary DP-SGD bit for bit."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.mechanisms.user_level import binomial_weights
from dpamp.rdp.group import group_exponent, group_rdp_curve, group_rdp_epsilon
from dpamp.theorems.group_privacy import classic_user_epsilon, group_eps_delta

Q = 256 / 60000


# --- m = 1 is ordinary DP-SGD ------------------------------------------------------------------

def test_m1_is_ordinary_dpsgd_bit_for_bit():
    kw = dict(noise_multiplier=1.1, batch_size=256, dataset_size=60000, epochs=1, delta=1e-5)
    a = dp.dpsgd(**kw)
    b = dp.dpsgd(**kw, records_per_user=1)
    c = dp.dpsgd(**kw, records_per_user=7, user_sampling=True, user_clipping=True)
    assert (a.epsilon, a.lower) == (b.epsilon, b.lower) == (c.epsilon, c.lower)
    assert "user-level" in b.note and "at most 1 record" in b.note


@pytest.mark.parametrize("method", ["pld", "rdp"])
@pytest.mark.parametrize("kw, sens", [
    (dict(records_per_user=1), 1.0),
    (dict(records_per_user=5, user_sampling=True, user_clipping=True), 1.0),
    (dict(records_per_user=5, user_sampling=True), 5.0)])
def test_exact_cases_equal_the_poisson_gaussian(method, kw, sens):
    u = dp.UserLevelGaussian(1.1, sample_rate=Q, **kw) * 50
    g = dp.Gaussian(1.1, sensitivity=sens).subsample(dp.Poisson(Q)) * 50
    a, b = u.epsilon(1e-5, method=method), g.epsilon(1e-5, method=method)
    assert (a.epsilon, a.lower) == (b.epsilon, b.lower)


# --- the single step against an mpmath quadrature ---------------------------------------------

def _exact_delta(sigma, m, q, eps):
    """max of both orders' hockey-stick divergence of sum_k Bin(k; m, q) N(k, s^2) and
    N(0, s^2), by mpmath quadrature split at the roots of the (monotone) privacy loss."""
    with mp.workdps(40):
        qq = mp.mpf(q)
        w = [mp.binomial(m, k) * qq ** k * (1 - qq) ** (m - k) for k in range(m + 1)]
        mus = [mp.mpf(k) / sigma for k in range(m + 1)]
        p = lambda z: sum(wk * mp.npdf(z, mu, 1) for wk, mu in zip(w, mus))  # noqa: E731
        qd = lambda z: mp.npdf(z, 0, 1)                                      # noqa: E731
        def loss(z):                        # log p/q = log sum_k w_k e^{mu_k z - mu_k^2/2}
            return mp.log(sum(wk * mp.exp(mu * z - mu * mu / 2) for wk, mu in zip(w, mus)))

        def root(t):                        # the loss increases: bisection
            lo, hi = mp.mpf(-80), mp.mpf(80)
            for _ in range(160):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if loss(mid) < t else (lo, mid)
            return lo
        e = mp.mpf(eps)
        z1 = root(e)
        remove = mp.quad(lambda z: p(z) - mp.exp(e) * qd(z), [z1, z1 + 10, z1 + 40, mp.inf])
        add = mp.mpf(0)
        if loss(mp.mpf(-80)) < -e:                 # the loss reaches -eps (log p_0 < -eps)
            z2 = root(-e)
            add = mp.quad(lambda z: qd(z) - mp.exp(e) * p(z), [-mp.inf, z2 - 40, z2 - 10, z2])
        return float(max(remove, add))


@pytest.mark.parametrize("sigma, m, q", [(1.0, 3, 0.05), (0.8, 2, 0.3), (2.0, 8, 0.01)])
@pytest.mark.parametrize("eps", [0.25, 1.0, 2.0])
def test_single_step_delta_against_quadrature(sigma, m, q, eps):
    truth = _exact_delta(sigma, m, q, eps)
    g = dp.UserLevelGaussian(sigma, m, q).delta(eps)
    assert g.lower is not None
    assert g.lower <= truth * (1 + 1e-12) and truth <= g.delta * (1 + 1e-12), (g, truth)
    assert g.delta - g.lower <= 1e-6 * truth + 1e-15


# --- T steps against dp-accounting's PLD of the same mixture event -----------------------------

def _dp_accounting_epsilon(sigma, m, q, steps, delta, interval):
    dpa = pytest.importorskip("dp_accounting")
    from scipy import stats
    probs = stats.binom.pmf(range(m + 1), m, q)            # TF-Privacy builds it the same way
    event = dpa.dp_event.MixtureOfGaussiansDpEvent(sigma, list(range(m + 1)), list(probs))
    acc = dpa.pld.PLDAccountant(value_discretization_interval=interval)
    acc.compose(event, steps)
    return acc.get_epsilon(delta)                   # pessimistic discretisation: above the truth


@pytest.mark.parametrize("interval, rel", [
    (1e-2, 2e-3), pytest.param(1e-4, 2e-4, marks=pytest.mark.slow)])
def test_composition_against_dp_accounting_mixture_event(interval, rel):
    """dp-accounting's PLD of MixtureOfGaussiansDpEvent with the same binomial weights (its
    value 4.731345 at interval 1e-4; ours [4.7307, 4.7322])."""
    sigma, m, q, steps, delta = 1.0, 3, 0.02, 100, 1e-5
    theirs = _dp_accounting_epsilon(sigma, m, q, steps, delta, interval)
    ours = (dp.UserLevelGaussian(sigma, m, q) * steps).epsilon(delta, method="pld")
    assert ours.lower <= theirs
    assert abs(ours.epsilon - theirs) <= rel * theirs, (ours, theirs)
    assert ours.epsilon - ours.lower <= 1e-3 * ours.epsilon


# --- the classic route: group privacy of (eps, delta) and of RDP -------------------------------

def test_group_eps_delta_formula():
    e, d = group_eps_delta(0.5, 1e-6, 3)
    assert e == pytest.approx(1.5, rel=1e-15)
    exact = 1e-6 * (1 + math.exp(0.5) + math.exp(1.0))     # the chain's sum (Vadhan 2017)
    assert exact <= d <= exact * (1 + 1e-13)
    assert d <= 3 * math.exp(2 * 0.5) * 1e-6                 # the looser k e^{(k-1) eps} delta
    assert group_eps_delta(0.5, 1e-6, 1) == (0.5, 1e-6)


def test_group_rdp_mironov_prop2():
    assert [group_exponent(k) for k in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]
    curve = dp.Gaussian(2.0).rdp                           # alpha / (2 sigma^2)
    g4 = group_rdp_curve(curve, 4)                         # c = 2: 9 eps(4 beta)
    assert float(g4(np.array([3.0]))[0]) == pytest.approx(9 * 12 / 8, rel=1e-14)
    assert math.isinf(float(g4(np.array([1.5]))[0]))       # orders below 2: none
    # the exact group curve of a Gaussian (sensitivity 4) lies below Mironov's bound
    assert (dp.Gaussian(2.0, sensitivity=4.0).rdp(3.0) <= float(g4(np.array([3.0]))[0]))


@pytest.mark.parametrize("m", [2, 4])
def test_group_privacy_conversion_is_above_ours(m):
    sigma, q, steps, delta = 1.1, Q, 235, 1e-5
    record = dp.Gaussian(sigma).subsample(dp.Poisson(q)) * steps
    ours = (dp.UserLevelGaussian(sigma, m, q) * steps).epsilon(delta)
    classic, d1 = classic_user_epsilon(lambda d: record.epsilon(d).epsilon, m, delta,
                                       iterations=12)
    assert classic >= ours.epsilon
    assert group_eps_delta(classic / m, d1, m)[1] <= delta * (1 + 1e-12)
    by_rdp = group_rdp_epsilon(record.rdp, m, delta)
    assert by_rdp >= ours.epsilon


# --- TF-Privacy's user-level statement ---------------------------------------------------------
# tensorflow/privacy, tensorflow_privacy/privacy/analysis/compute_dp_sgd_privacy_test.py,
# test_dp_sgd_privacy_statement_user_dp_with_rdp / _infinite_with_rdp / _user_dp_with_pld:
# 10000 examples, batch 64, 5 epochs, noise multiplier 2.0 with microbatching (sensitivity
# doubled: sigma 1.0 per unit shift), delta 1e-6, Poisson rate 64/10000, ceil(5 / q) = 782 steps:
#   example level, RDP: 1.616; user level by group privacy (RDP): 6.425 at 3 examples per user,
#   inf at 10; by the binomial mixture's PLD (Ganesh 2024 Thm 3.1): 2.532 at 2.
TFP = dict(sigma=1.0, q=64 / 10000, steps=782, delta=1e-6)


def _tfp_rdp_epsilon(delta):
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(
        TFP["q"], dpa.GaussianDpEvent(TFP["sigma"])), TFP["steps"]))
    return acc.get_epsilon(delta)


def test_tf_privacy_user_level_numbers_and_ours_below():
    assert math.ceil(5 / TFP["q"]) == TFP["steps"]
    assert round(_tfp_rdp_epsilon(TFP["delta"]), 3) == 1.616
    eps3, _ = classic_user_epsilon(_tfp_rdp_epsilon, 3, TFP["delta"])
    assert round(eps3, 3) == 6.425
    assert math.isinf(classic_user_epsilon(_tfp_rdp_epsilon, 10, TFP["delta"])[0])
    step = dp.UserLevelGaussian(TFP["sigma"], 3, TFP["q"])
    ours = (step * TFP["steps"]).epsilon(TFP["delta"])
    assert ours.epsilon < 0.65 * eps3                     # 3.94 against 6.425
    two = (dp.UserLevelGaussian(TFP["sigma"], 2, TFP["q"]) * TFP["steps"]).epsilon(TFP["delta"])
    assert two.lower <= 2.5325 and two.epsilon >= 2.5315  # TF-Privacy's 2.532, 3 decimals
    ten = (dp.UserLevelGaussian(TFP["sigma"], 10, TFP["q"]) * TFP["steps"]).epsilon(TFP["delta"])
    assert math.isfinite(ten.epsilon)                     # where the classic route has none


def test_tf_privacy_without_sampling():
    """TF-Privacy's 'each example occurring once per epoch' lines (same tests): 5 steps of the
    Gaussian with sensitivity m; example level 12.595 (PLD) and 13.376 (RDP), user level 30.579
    at m = 2 (PLD), 56.224 at m = 3 (RDP, group privacy). dpamp's bracket holds the PLD values
    (3 decimals) and lies below the RDP ones. Also the sampler 'none' line of dp.dpsgd."""
    kw = dict(noise_multiplier=1.0, steps=5, delta=1e-6, sampler="none")
    one = dp.dpsgd(**kw)
    assert one.lower <= 12.5955 and one.epsilon >= 12.5945 and one.epsilon < 13.376
    two = dp.dpsgd(**kw, records_per_user=2)
    assert two.lower <= 30.5795 and two.epsilon >= 30.5785
    assert dp.dpsgd(**kw, records_per_user=3).epsilon < 56.224
    assert "whole dataset" in two.note and "at most 2 records" in two.note


# --- the weights: outward rounding of the exact binomial ---------------------------------------

def _tails(w):
    """Exact tail sums of the weights as the mixture uses them (normalised in floating point,
    MixtureOfGaussians.components)."""
    m = dp.MixtureOfGaussians(1.0, tuple(float(k) for k in range(len(w))), w)
    mus, ps = m.components()
    ws = dict(zip(np.rint(mus).astype(int), ps))
    f = [Fraction(float(ws.get(k, 0.0))) for k in range(len(w))]
    return [sum(f[j:]) for j in range(len(w))]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.floats(1e-6, 0.3))
def test_binomial_weights_bracket_the_exact_tails(m, q):
    up, low = binomial_weights(m, q)
    qq = Fraction(q)
    tu, tl = _tails(up), _tails(low)
    exact = [math.comb(m, k) * qq ** k * (1 - qq) ** (m - k) for k in range(m + 1)]
    for j in range(1, m + 1):
        tail = sum(exact[j:])
        assert tl[j] <= tail <= tu[j]


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 6), st.floats(0.001, 0.2), st.floats(0.3, 3.0))
def test_delta_grows_with_records_per_user(m, q, eps):
    """Bin(m, q) dominates Bin(m - 1, q) stochastically: the larger group's pair dominates."""
    small = dp.UserLevelGaussian(1.0, m - 1, q).delta(eps)
    big = dp.UserLevelGaussian(1.0, m, q).delta(eps)
    assert small.lower <= big.delta


def test_user_clipping_is_the_poisson_pair_at_the_group_rate():
    m, q = 4, 0.01
    u = dp.UserLevelGaussian(1.0, m, q, user_clipping=True)
    g = 1 - (1 - q) ** m
    ref = dp.Gaussian(1.0).subsample(dp.Poisson(g)).delta(1.0).delta
    d = u.delta(1.0)
    assert d.lower <= ref * (1 + 1e-9) and ref <= d.delta * (1 + 1e-9)
    # clipping the user's sum never costs more than clipping each record
    assert d.delta <= dp.UserLevelGaussian(1.0, m, q).delta(1.0).lower


# --- validation, plans, the command line, JSON -------------------------------------------------

@pytest.mark.parametrize("kw, name", [
    (dict(records_per_user=0), "records_per_user"),
    (dict(sample_rate=1.5), "sample_rate"),
    (dict(user_sampling="yes"), "user_sampling"),
    (dict(sample_rate=None, user_sampling=True), "user_sampling"),
    (dict(relation=dp.SUBSTITUTION), "relation"),
    (dict(records_per_user=5000), "records_per_user"),
    (dict(records_per_user=500, sample_rate=0.2), "records_per_user"),
])
def test_validation_names_the_parameter(kw, name):
    args = dict(noise_multiplier=1.0, records_per_user=3, sample_rate=0.01)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        dp.UserLevelGaussian(**args)


@pytest.mark.parametrize("words, key", [
    ({"user_clipping": True}, "user_clipping'.*'records_per_user"),
    ({"records_per_user": 2, "user_sampling": "yes"}, "user_sampling"),
    ({"records_per_user": 2.5}, "records_per_user"),
    ({"records_per_user": 2, "sampler": "without-replacement"}, "sampler"),
    ({"records_per_user": 2, "max_batch_size": 80, "sampler": "truncated-poisson"}, "sampler"),
    ({"records_per_user": 2, "relation": "substitution"}, "relation"),
    ({"records_per_user": 2, "mechanism": "laplace"}, "records_per_user"),
    ({"records_per_user": 2, "user_sampling": True, "sampler": "none", "batch_size": None,
      "dataset_size": None}, "user_sampling"),
])
def test_plan_errors_name_the_key(words, key):
    from dpamp.io.plan import PlanError, parse_stage
    s = {"mechanism": "gaussian", "noise_multiplier": 1.0, "batch_size": 64,
         "dataset_size": 10000, "steps": 10, **words}
    s = {k: v for k, v in s.items() if v is not None}
    with pytest.raises(PlanError, match=f"key '{key}'"):
        parse_stage(s, origin="plan.toml", cli=False)


def test_plan_file_and_dpsgd_agree():
    from dpamp.io.plan import parse_plan_text
    plan = parse_plan_text("""
delta = 1e-5
[[stage]]
mechanism = "gaussian"
noise_multiplier = 1.0
batch_size = 64
dataset_size = 10000
steps = 20
records_per_user = 3
""")
    st_ = plan.stages[0]
    assert isinstance(st_.step, dp.UserLevelGaussian) and st_.steps == 20
    assert st_.assumed["unit"] == "user" and st_.assumed["records_per_user"] == 3
    a = plan.mechanism.epsilon(1e-5)
    b = dp.dpsgd(noise_multiplier=1.0, batch_size=64, dataset_size=10000, steps=20,
                 delta=1e-5, records_per_user=3)
    assert (a.epsilon, a.lower) == (b.epsilon, b.lower)
    # user sampling: the Gaussian of the user's sensitivity, any sampler
    u = dp.dpsgd(noise_multiplier=1.0, batch_size=64, dataset_size=10000, steps=20, delta=1e-5,
                 records_per_user=3, user_sampling=True, sampler="without-replacement")
    ref = (dp.Gaussian(1.0, sensitivity=6.0, relation=dp.SUBSTITUTION).subsample(
        dp.WithoutReplacement(64, 10000)) * 20).epsilon(1e-5)
    assert u.epsilon == ref.epsilon


def test_report_of_a_user_level_plan(tmp_path):
    """The report states the unit and leaves out the per-record sampler comparison."""
    plan = tmp_path / "p.toml"
    plan.write_text('delta = 1e-5\nmethods = ["pld"]\n[[stage]]\nmechanism = "gaussian"\n'
                    'noise_multiplier = 1.0\nbatch_size = 64\ndataset_size = 10000\n'
                    'steps = 20\nrecords_per_user = 3\n')
    out = subprocess.run([sys.executable, "-m", "dpamp", "report", str(plan)],
                         capture_output=True, text=True, check=True).stdout
    assert "at most 3 records" in out and "by sampler" not in out


def test_cli_flags_and_json():
    args = [sys.executable, "-m", "dpamp", "dpsgd", "--noise-multiplier", "1.0", "--batch-size",
            "64", "--dataset-size", "10000", "--steps", "20", "--delta", "1e-5", "--json"]
    out = subprocess.run(args + ["--records-per-user", "3", "--user-clipping"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    assert d["assumed"]["records_per_user"] == 3 and d["assumed"]["user_clipping"] is True
    bad = subprocess.run(args + ["--user-sampling"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--records-per-user" in bad.stderr


def test_json_round_trip_and_event():
    u = dp.UserLevelGaussian(1.0, 3, 0.05, user_clipping=True)
    assert dp.from_json(u.to_json()) == u
    ev = dp.to_dp_event(dp.UserLevelGaussian(1.0, 3, 0.05))
    assert type(ev).__name__ == "MixtureOfGaussiansDpEvent"
    assert list(ev.sensitivities) == [0.0, 1.0, 2.0, 3.0]


@given(st.integers(1, 4), st.floats(0.05, 0.95), st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_moving_weight_to_a_larger_shift_dominates(m, frac, seed):
    """The rounding argument: moving mass from shift k to k + 1 never lowers either order's
    hockey-stick divergence against N(0, 1) (midpoint quadrature on [-30, 40])."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m + 1, 0.5))
    k = int(rng.integers(0, m))
    w2 = w.copy()
    w2[k] -= frac * w[k]
    w2[k + 1] += frac * w[k]
    x = np.linspace(-30.0, 40.0, 70_001)
    dx = x[1] - x[0]
    pdf = lambda mu: np.exp(-0.5 * (x - mu) ** 2) / math.sqrt(2 * math.pi)  # noqa: E731
    q0 = pdf(0.0)
    p1 = sum(wi * pdf(i) for i, wi in enumerate(w))
    p2 = sum(wi * pdf(i) for i, wi in enumerate(w2))
    for e in (0.0, 0.5, 1.5, 3.0):
        a = math.exp(e)
        assert np.maximum(p1 - a * q0, 0).sum() * dx <= np.maximum(p2 - a * q0, 0).sum() * dx + 1e-9
        assert np.maximum(q0 - a * p1, 0).sum() * dx <= np.maximum(q0 - a * p2, 0).sum() * dx + 1e-9
