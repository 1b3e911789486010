"""Random allocation and shuffled batches wherever a user meets samplers: the samplers table
(``--sampler allocation|shuffle``), TOML plans, ``dp.dpsgd``, the opacus-style accountant,
calibration, reports and the samplers figure; and the shuffle's accounting (the dominating
step above, Chua et al.'s lower bound below, no PLD lower end claimed for it)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import dpamp as dp
from dpamp.cli import main
from dpamp.core import samplers
from dpamp.profiles.closed_forms import gaussian_log_profile

Z, B, N, E, DELTA = 2.0, 100, 1000, 3, 1e-6        # t = N // B = 10 steps per epoch


def _eps(x, **kw):
    return x.epsilon(DELTA, **kw)


def test_epoch_samplers_count_epochs():
    ra = dp.RandomAllocation(1, 10)
    assert samplers.steps_per_run(ra) == 10 and samplers.steps_per_run(dp.Poisson(0.1)) == 1
    assert samplers.count(None, 3, ra) == 3
    assert samplers.count(25, None, ra) == 3            # a partial epoch counts whole
    assert samplers.count(None, 2.5, ra) == 3
    assert samplers.count(30, 3, ra) == 3
    with pytest.raises(ValueError, match="disagree"):
        samplers.count(40, 3, ra)
    assert samplers.sampler("allocation").scheme(B, N) == dp.RandomAllocation(1, 10)
    # floor: N // B batches, the expected batch is N / t >= B
    assert samplers.sampler("allocation").scheme(300, 1000) == dp.RandomAllocation(1, 3)
    assert samplers.sampler("shuffle").relation is dp.SUBSTITUTION


def _cli_json(capsys, *args):
    assert main(["epsilon", "--noise-multiplier", str(Z), "--batch-size", str(B),
                 "--dataset-size", str(N), "--epochs", str(E), "--delta", str(DELTA),
                 "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_allocation_is_the_same_plan_everywhere(capsys, tmp_path):
    ref = _eps(dp.Gaussian(Z).subsample(dp.RandomAllocation(1, N // B)) * E)
    d = _cli_json(capsys, "--sampler", "allocation")
    assert d["epsilon"] == pytest.approx(ref.epsilon, rel=1e-12)
    assert d["assumed"]["sampler"] == "allocation" and d["assumed"]["relation"] == "add_remove"
    assert d["assumed"]["steps"] == E * N // B and d["assumed"]["steps_per_epoch"] == N // B
    g = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=E, delta=DELTA,
                 sampler="allocation")
    assert g.epsilon == pytest.approx(ref.epsilon, rel=1e-12)
    plan = tmp_path / "p.toml"
    plan.write_text(f"delta = {DELTA}\n[[stage]]\nmechanism = 'gaussian'\n"
                    f"noise_multiplier = {Z}\nsampler = 'allocation'\nbatch_size = {B}\n"
                    f"dataset_size = {N}\nepochs = {E}\n")
    p = dp.load_plan(plan)
    assert p.total_steps == E * N // B
    assert _eps(p.mechanism).epsilon == pytest.approx(ref.epsilon, rel=1e-12)
    acc = dp.OpacusAccountant(sampler="allocation")
    for _ in range(E * N // B):
        acc.step(noise_multiplier=Z, sample_rate=B / N)
    assert acc.get_epsilon(DELTA) == pytest.approx(ref.epsilon, rel=1e-12)
    assert acc.state_dict()["sampler"] == "allocation"


def test_allocation_below_poisson_on_a_dpsgd_plan(capsys):
    alloc = _cli_json(capsys, "--sampler", "allocation")
    poisson = _cli_json(capsys)
    assert alloc["epsilon"] < poisson["epsilon"]
    assert alloc["lower"] is not None and alloc["lower"] <= alloc["epsilon"]


def test_shuffle_bracket_is_the_dominating_step_above_and_chua_below(capsys):
    from dpamp.amplification.allocation.shuffle import shuffle_lower_epsilon
    d = _cli_json(capsys, "--sampler", "shuffle")
    # upper: one substitution per epoch without amplification = Gaussian mu = 2 sqrt(E) / Z
    mu = 2 * math.sqrt(E) / Z
    assert math.exp(gaussian_log_profile(mu, np.array([d["epsilon"]]), upper=True)[0]) \
        <= DELTA * (1 + 1e-6)
    assert math.exp(gaussian_log_profile(mu, np.array([d["epsilon"] * 0.999]),
                                         upper=True)[0]) > DELTA
    # lower: Chua et al.'s construction, not the dominating pair's optimistic PLD
    low = shuffle_lower_epsilon(Z, N // B, E, DELTA, relation="substitution", batch_size=B,
                                dataset_size=N)
    assert d["lower"] == pytest.approx(low, rel=1e-12) and low < d["epsilon"]
    assert "Chua" in d["source"] and "without amplification" in d["note"]
    assert d["assumed"]["relation"] == "substitution" and d["assumed"]["sensitivity"] == 2.0


def test_no_pld_lower_end_for_a_part_that_is_not_attained():
    # a Laplace base has no Chua et al. lower bound here, so nothing may be claimed below
    m = dp.Laplace(1.0, 2.0, dp.SUBSTITUTION).subsample(
        dp.Shuffled(B, N, relation=dp.SUBSTITUTION)) * 2
    g = m.epsilon(DELTA, method="pld")
    assert g.lower is None
    assert g.epsilon >= (dp.Laplace(1.0, 2.0, dp.SUBSTITUTION) * 2).epsilon(
        DELTA, method="pld").lower


def test_shuffle_under_add_remove_needs_a_fixed_number_of_batches():
    ok = dp.Gaussian(Z).subsample(dp.Shuffled(B, N + 7))   # 1006, 1007, 1008: 10 batches
    exact = dp.Gaussian(Z, 2.0).epsilon(DELTA)            # one substitution: sensitivity 2
    assert exact.lower <= ok.epsilon(DELTA).epsilon <= exact.epsilon * (1 + 1e-3)
    with pytest.raises(ValueError, match="number of batches"):     # 999 records: 9 batches
        dp.Gaussian(Z).subsample(dp.Shuffled(B, N))
    assert main(["epsilon", "--noise-multiplier", "1", "--batch-size", "100", "--dataset-size",
                 "1000", "--epochs", "1", "--delta", "1e-6", "--sampler", "shuffle"]) == 0


def test_calibrate_and_report_and_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    c = dp.calibrate.sigma(epsilon=1.0, delta=DELTA, sampling=dp.RandomAllocation(1, 10),
                           epochs=2)
    assert c.guarantee.epsilon <= 1.0 and c.steps == 20
    again = (dp.Gaussian(c.value).subsample(dp.RandomAllocation(1, 10)) * 2).epsilon(DELTA)
    assert again.epsilon <= 1.0
    out = tmp_path / "s.png"
    assert main(["plot", "samplers", "--noise-multiplier", str(Z), "--batch-size", str(B),
                 "--dataset-size", str(N), "--epochs", "2", "--delta", str(DELTA),
                 "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert out.stat().st_size > 0 and set(data["samplers"]) == {"poisson", "allocation",
                                                                 "shuffle"}
    s = data["samplers"]
    assert s["allocation"]["upper"][-1] < s["poisson"]["upper"][-1] < s["shuffle"]["upper"][-1]
    assert s["shuffle"]["lower"][-1] > s["poisson"]["upper"][-1]   # shuffling costs more here
    assert main(["report", "--noise-multiplier", str(Z), "--batch-size", str(B),
                 "--dataset-size", str(N), "--epochs", "2", "--sampler", "allocation"]) == 0
    assert "by sampler (proven brackets)" in capsys.readouterr().out


def test_cli_calibrate_counts_the_epochs_of_an_epoch_sampler(capsys):
    """calibrate noise-multiplier with --epochs under allocation calibrates that many epochs
    (not that many steps, which would be fewer epochs and a noise too small)."""
    assert main(["calibrate", "noise-multiplier", "--epsilon", "1", "--delta", "1e-6",
                 "--batch-size", str(B), "--dataset-size", str(N), "--epochs", "2",
                 "--sampler", "allocation", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    ref = dp.calibrate.sigma(epsilon=1.0, delta=1e-6, sampling=dp.RandomAllocation(1, N // B),
                             epochs=2)
    assert d["value"] == pytest.approx(ref.value, rel=1e-12) and d["steps"] == 2 * N // B
    again = (dp.Gaussian(d["value"]).subsample(dp.RandomAllocation(1, N // B)) * 2)
    assert again.epsilon(1e-6).epsilon <= 1.0


def test_calibrate_steps_under_an_epoch_sampler_counts_whole_epochs():
    c = dp.calibrate.steps(epsilon=1.5, delta=DELTA, sigma=Z, sampling=dp.RandomAllocation(1, 10))
    assert c.value % 10 == 0 and c.steps == c.value
    e = c.value // 10
    step = dp.Gaussian(Z).subsample(dp.RandomAllocation(1, 10))
    assert (step * e).epsilon(DELTA).epsilon <= 1.5 < (step * (e + 1)).epsilon(DELTA).epsilon


@pytest.mark.parametrize("command", ["epsilon", "calibrate sigma", "dpsgd"])
def test_cli_help_names_every_sampler_with_its_relation(command, capsys):
    """--sampler's help is built from the samplers table: every name and its relation."""
    with pytest.raises(SystemExit):
        main(command.split() + ["--help"])
    text = "".join(capsys.readouterr().out.split())      # wrapped anywhere, at any width
    for s in samplers.SAMPLERS.values():
        assert "".join(f"{s.name} ({s.relation.words})".split()) in text
