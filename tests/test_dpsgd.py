"""dp.dpsgd / dpamp dpsgd, and one DP-SGD plan through every door: the command line, dp.dpsgd,
a TOML plan and the opacus-style accountant give the same epsilon."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dpamp as dp
from dpamp import cli
from dpamp.core.rounding import round_up
from dpamp.io.opacus import OpacusAccountant
from dpamp.io.plan import parse_plan_text

SRC = os.path.join(os.path.dirname(__file__), "..", "src")
Z, B, N, E, DELTA = 1.1, 256, 60000, 3, 1e-5
T = 704  # ceil(3 * 60000 / 256) = ceil(703.125)
REF = dp.Gaussian(Z).subsample(dp.Poisson(B / N)) * T
#: opacus' RDPAccountant.DEFAULT_ALPHAS
OPACUS_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def by_cli(capsys, method):
    assert cli.main(["dpsgd", "--noise-multiplier", str(Z), "--batch-size", str(B),
                     "--dataset-size", str(N), "--epochs", str(E), "--delta", str(DELTA),
                     "--method", method, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["epsilon"]


def by_epsilon_cli(capsys, method):
    assert cli.main(["epsilon", "--noise-multiplier", str(Z), "--batch-size", str(B),
                     "--dataset-size", str(N), "--epochs", str(E), "--delta", str(DELTA),
                     "--method", method, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["epsilon"]


def by_plan(method):
    p = parse_plan_text(textwrap.dedent(f"""\
        delta = {DELTA}
        [[stage]]
        mechanism = "gaussian"
        noise_multiplier = {Z}
        sampler = "poisson"
        batch_size = {B}
        dataset_size = {N}
        epochs = {E}
    """))
    assert p.mechanism == REF
    return p.mechanism.epsilon(p.delta, method=method).epsilon


def by_opacus(method):
    acc = OpacusAccountant(method=method)
    for _ in range(T):  # opacus' training loop: one step() per optimiser step
        acc.step(noise_multiplier=Z, sample_rate=B / N)
    assert acc.history == [(Z, B / N, T)]
    return acc.get_epsilon(DELTA)


@pytest.mark.parametrize("method", ["rdp", "auto"])
def test_one_plan_one_epsilon_through_every_door(method, capsys):
    g = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=E, delta=DELTA,
                 method=method)
    answers = {"dp.dpsgd": g.epsilon, "dpamp dpsgd": by_cli(capsys, method),
               "dpamp epsilon": by_epsilon_cli(capsys, method), "TOML plan": by_plan(method),
               "OpacusAccountant": by_opacus(method)}
    assert len(set(answers.values())) == 1, answers
    assert g.epsilon == REF.epsilon(DELTA, method=method).epsilon
    if method == "auto":
        assert g.method == "pld" and g.lower is not None and g.lower <= g.epsilon


def test_dpsgd_states_what_it_assumed():
    g = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=E, delta=DELTA,
                 method="rdp")
    assert g.note.startswith("DP-SGD assumed: noise multiplier 1.1, sampler poisson (batch 256 "
                             "of 60000), add/remove relation, sensitivity 1 x the clipping norm"
                             ", 704 steps (= 3 epochs, rounded up to whole steps)")
    w = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, steps=T, delta=DELTA,
                 sampler="without-replacement", method="rdp")
    assert "substitution relation, sensitivity 2" in w.note
    assert w.epsilon == (dp.Gaussian(Z, 2.0, dp.SUBSTITUTION).subsample(
        dp.WithoutReplacement(B, N)) * T).epsilon(DELTA, method="rdp").epsilon


def test_dpsgd_other_forms():
    # a rate alone, steps instead of epochs, delta at epsilon
    g = dp.dpsgd(noise_multiplier=Z, sample_rate=0.01, steps=100, delta=DELTA, method="rdp")
    assert g.epsilon == (dp.Gaussian(Z).subsample(dp.Poisson(0.01)) * 100).epsilon(
        DELTA, method="rdp").epsilon
    d = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=E, epsilon=1.0,
                 method="rdp")
    assert d.query == "delta" and d.delta == REF.delta(1.0, method="rdp").delta
    # steps and epochs that agree are accepted
    assert dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=E, steps=T,
                    delta=DELTA, method="rdp").epsilon == REF.epsilon(DELTA, "rdp").epsilon


@pytest.mark.parametrize("kw, msg", [
    (dict(batch_size=B, dataset_size=N, delta=DELTA), "argument 'steps': missing: give 'steps'"),
    (dict(batch_size=B, dataset_size=N, epochs=1, steps=3, delta=DELTA),
     "steps 3 and epochs 1 disagree"),
    (dict(batch_size=B, epochs=1, delta=DELTA), "argument 'dataset_size': missing"),
    (dict(batch_size=B, dataset_size=N, epochs=1), "give delta"),
    (dict(batch_size=B, dataset_size=N, epochs=1, delta=DELTA, epsilon=1.0), "give delta"),
    (dict(batch_size=B, dataset_size=N, epochs=1, delta=DELTA, sampler="shuffled"),
     "argument 'sampler': must be 'none' or one of"),
    (dict(batch_size=N + 1, dataset_size=N, epochs=1, delta=DELTA), "argument 'batch_size'"),
])
def test_dpsgd_errors_name_the_argument(kw, msg):
    with pytest.raises(ValueError, match=msg):
        dp.dpsgd(noise_multiplier=Z, **kw)
    with pytest.raises(TypeError):
        dp.dpsgd(Z, B, N, E, DELTA)  # keyword-only: no order to get wrong


def test_dpsgd_is_lazy():
    code = ("import sys, dpamp\nassert 'dpamp.io.dpsgd' not in sys.modules\n"
            "assert 'dpamp.io.plan' not in sys.modules\nassert callable(dpamp.dpsgd)\n"
            "assert 'dpsgd' in dir(dpamp)")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr


def test_cli_dpsgd_human_output(capsys):
    assert cli.main(["dpsgd", "--noise-multiplier", "1.1", "--batch-size", "256",
                     "--dataset-size", "60000", "--epochs", "3", "--delta", "1e-5",
                     "--method", "rdp"]) == 0
    first, second = capsys.readouterr().out.strip().splitlines()
    eps = REF.epsilon(DELTA, method="rdp").epsilon
    assert first.startswith(f"DP-SGD is ({round_up(eps, 6)}, 1e-5)-DP, by rdp")
    assert second == ("assumed: noise multiplier 1.1, sampler poisson (batch 256 of 60000), "
                      "add/remove relation, sensitivity 1 x the clipping norm, 704 steps "
                      "(= 3 epochs, rounded up to whole steps)")
    assert cli.main(["dpsgd", "--sigma", "1.1", "--steps", "3", "--delta", "1e-5"]) == 2
    assert "needs --noise-multiplier" in capsys.readouterr().err


# --- the opacus-style accountant's get_privacy_spent --------------------------------------------

def _acc(steps=T):
    acc = OpacusAccountant()
    acc.history = [(Z, B / N, steps)]
    return acc


def test_get_privacy_spent_at_opacus_orders_is_opacus_rdp_answer():
    """With opacus' orders: the RDP bound minimised over them, and the order, as opacus'
    RDPAccountant computes it; here against dp-accounting's RDP accountant at the same orders
    (the same analysis and conversion as opacus')."""
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.rdp.RdpAccountant(orders=OPACUS_ALPHAS)
    acc.compose(dpa.PoissonSampledDpEvent(B / N, dpa.GaussianDpEvent(Z)), T)
    ref_eps, ref_alpha = acc.get_epsilon_and_optimal_order(DELTA)
    eps, alpha = _acc().get_privacy_spent(DELTA, alphas=OPACUS_ALPHAS)
    assert alpha == ref_alpha and isinstance(alpha, float)
    assert eps == pytest.approx(ref_eps, rel=1e-8) and eps >= ref_eps * (1 - 1e-12)
    # one order only: that order's bound
    e1, a1 = _acc().get_privacy_spent(DELTA, [2.0])
    assert a1 == 2.0 and e1 > eps


def test_get_privacy_spent_default_is_the_pld_and_tighter_than_opacus():
    eps, alpha = _acc().get_privacy_spent(DELTA)
    assert alpha is None  # the PLD is attained at no order
    g = _acc().get_guarantee(DELTA)
    assert eps == g.epsilon and g.method == "pld"
    rdp_eps, rdp_alpha = _acc().get_privacy_spent(DELTA, method="rdp")
    opacus_eps, _ = _acc().get_privacy_spent(DELTA, alphas=OPACUS_ALPHAS)
    assert g.epsilon < rdp_eps <= opacus_eps * (1 + 1e-9) and rdp_alpha > 1
    assert rdp_eps == REF.epsilon(DELTA, method="rdp").epsilon
    # the PLD's lower bound: opacus' answer is provably above the true epsilon
    assert opacus_eps > 1.05 * g.lower


def test_get_privacy_spent_edges():
    assert OpacusAccountant().get_privacy_spent(DELTA) == (0.0, None)
    with pytest.raises(ValueError, match="delta"):
        OpacusAccountant().get_privacy_spent(2.0)
    with pytest.raises(ValueError, match="alphas must be orders in"):
        _acc().get_privacy_spent(DELTA, alphas=[0.5, 2])
    eps, alpha = _acc(1).get_privacy_spent(DELTA, alphas=np.array([2.0, 4.0, np.inf]))
    assert np.isfinite(eps) and alpha in (2.0, 4.0)
