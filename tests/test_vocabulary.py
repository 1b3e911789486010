"""One meaning per word: DP-SGD's vocabulary on the command line, in TOML plans and in Python;
the sampler table; epochs -> steps (ceil, exact); every output states what it assumed."""
import json
import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp import cli
from dpamp.core import samplers
from dpamp.io.plan import PlanError, parse_plan_text, parse_stage

SRC = os.path.join(os.path.dirname(__file__), "..", "src")
S = dp.SUBSTITUTION
PLAN = ["--noise-multiplier", "1.1", "--batch-size", "256", "--dataset-size", "60000"]


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def eps_json(argv, capsys):
    code, out, err = run(["epsilon", *argv, "--delta", "1e-5", "--method", "rdp", "--json"],
                         capsys)
    assert code == 0, err
    return json.loads(out)


def rdp(m):
    return m.epsilon(1e-5, method="rdp").epsilon


# --- the sampler table and the count ----------------------------------------------------------

def test_table_entries_state_relation_and_sensitivity():
    assert list(samplers.SAMPLERS)[0] == samplers.DEFAULT_SAMPLER == "poisson"
    want = {"poisson": (dp.ADD_REMOVE, 1.0, dp.Poisson(256 / 60000)),
            "without-replacement": (S, 2.0, dp.WithoutReplacement(256, 60000)),
            "with-replacement": (S, 2.0, dp.WithReplacement(256, 60000))}
    for name, (rel, sens, scheme) in want.items():
        s = samplers.sampler(name)
        assert (s.relation, s.sensitivity, s.scheme(256, 60000)) == (rel, sens, scheme)
        assert samplers.sampler(name.replace("-", "_").upper()) is s
    with pytest.raises(ValueError, match="sampler must be one of 'poisson'"):
        samplers.sampler("bootstrap")


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2 ** 26), st.data())
def test_a_float_rate_stands_for_its_fraction(n, data):
    b = data.draw(st.integers(1, n))
    assert samplers.exact(b / n) == Fraction(b, n)


@pytest.mark.parametrize("x, f", [(0.1, Fraction(1, 10)), (0.768, Fraction(96, 125)),
                                  (0.0042667, Fraction(42667, 10 ** 7)), (60.0, 60),
                                  (2.5, Fraction(5, 2)), (1e-9, Fraction(1, 10 ** 9))])
def test_short_decimals_are_read_as_written(x, f):
    assert samplers.exact(x) == f


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10 ** 6), st.data(), st.integers(1, 10 ** 4), st.integers(1, 1000))
def test_epochs_to_steps_is_the_integer_ceiling(n, data, e_num, e_den):
    b = data.draw(st.integers(1, n))
    epochs = e_num / e_den
    e = samplers.exact(epochs)  # the decimal the float stands for
    want = -(-(e.numerator * n) // (e.denominator * b))  # ceil in integers
    assert samplers.steps_of_epochs(epochs, dp.WithoutReplacement(b, n)) == max(1, want)
    assert samplers.steps_of_epochs(epochs, dp.Poisson(b / n)) == max(1, want)


def test_the_three_counts_agree_where_float_rates_did_not():
    # 0.768 epochs at 256/60000 is exactly 180 steps; read through the float rate's decimal
    # repr it was 179.99999999999998 (calibrate once counted 179 where plans counted 180)
    assert Fraction("0.768") / Fraction(repr(256 / 60000)) < 180
    stage = parse_stage({"mechanism": "gaussian", "noise_multiplier": 1.1, "batch_size": 256,
                         "dataset_size": 60000, "epochs": 0.768})
    c = dp.calibrate.sigma(3.0, 1e-5, sampling=dp.Poisson(256 / 60000), epochs=0.768,
                           method="rdp")
    assert stage.steps == c.steps == 180
    stage = parse_stage({"mechanism": "gaussian", "noise_multiplier": 1.1, "batch_size": 256,
                         "dataset_size": 60000, "epochs": 60})
    assert stage.steps == 14063 == math.ceil(60 * 60000 / 256)


def test_count_errors_name_both_words():
    with pytest.raises(ValueError, match="steps .* or epochs"):
        samplers.count()
    with pytest.raises(ValueError, match="steps 7 and epochs 1 disagree.* 10 steps"):
        samplers.count(7, 1, dp.Poisson(0.1))
    assert samplers.count(10, 1, dp.Poisson(0.1)) == 10  # agreeing: accepted
    assert samplers.count(None, 3, None) == 3  # no sampling: one epoch is one step


def test_one_table_entry_is_a_sampler_everywhere(monkeypatch, capsys):
    """A new entry (e.g. random allocation) is offered by the CLI, plans and dp.dpsgd at once."""
    entry = samplers.Sampler("every-other", S, lambda b, n: dp.WithoutReplacement(b, n),
                             "a test entry", "none")
    monkeypatch.setitem(samplers.SAMPLERS, "every-other", entry)
    want = dp.Gaussian(1.0, 2.0, S).subsample(dp.WithoutReplacement(10, 100)) * 30
    p = parse_plan_text("delta = 1e-5\n[[stage]]\nmechanism = 'gaussian'\nnoise_multiplier = 1"
                        "\nsampler = 'every_other'\nbatch_size = 10\ndataset_size = 100\n"
                        "epochs = 3")
    assert p.mechanism == want
    g = dp.dpsgd(noise_multiplier=1, batch_size=10, dataset_size=100, epochs=3, delta=1e-5,
                 sampler="every-other", method="rdp")
    out = eps_json(["--noise-multiplier", "1", "--batch-size", "10", "--dataset-size", "100",
                    "--epochs", "3", "--sampler", "every-other"], capsys)
    assert g.epsilon == out["epsilon"] == rdp(want)
    assert out["assumed"]["sampler"] == "every-other" and out["assumed"]["sensitivity"] == 2


# --- the command line's words ----------------------------------------------------------------

def test_batch_size_means_poisson_by_default(capsys):
    out = eps_json([*PLAN, "--steps", "100"], capsys)
    assert out["epsilon"] == rdp(dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 100)
    a = out["assumed"]
    assert (a["sampler"], a["relation"], a["sensitivity"]) == ("poisson", "add_remove", 1.0)
    assert a["sample_rate"] == 256 / 60000 and a["steps"] == 100
    assert out["inputs"] == {"noise_multiplier": 1.1, "batch_size": 256, "dataset_size": 60000,
                             "steps": 100, "delta": 1e-5, "method": "rdp"}


@pytest.mark.parametrize("name, scheme", [
    ("without-replacement", dp.WithoutReplacement(256, 60000)),
    ("without_replacement", dp.WithoutReplacement(256, 60000)),
    ("with-replacement", dp.WithReplacement(256, 60000))])
def test_sampler_by_name_with_its_relation_and_sensitivity(name, scheme, capsys):
    code, out, err = run(["epsilon", *PLAN, "--steps", "3", "--delta", "1e-5", "--sampler",
                          name, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    want = dp.Gaussian(1.1, 2.0, S).subsample(scheme) * 3
    assert d["epsilon"] == want.epsilon(1e-5).epsilon
    assert (d["assumed"]["relation"], d["assumed"]["sensitivity"]) == ("substitution", 2.0)
    assert d["assumed"]["sampler"] == name.replace("_", "-")


def test_sample_rate_and_its_older_spelling(capsys):
    a = eps_json(["--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps", "50"], capsys)
    b = eps_json(["--sigma", "1.1", "--poisson", "0.01", "--steps", "50"], capsys)
    assert a["epsilon"] == b["epsilon"] == rdp(dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 50)
    assert a["assumed"]["sample_rate"] == b["assumed"]["sample_rate"] == 0.01


def test_sigma_is_the_noise_with_its_sensitivity(capsys):
    # add/remove: --sigma alone is the noise multiplier
    assert eps_json(["--sigma", "1.1", "--sample-rate", "0.01", "--steps", "5"], capsys)[
        "epsilon"] == eps_json(["--noise-multiplier", "1.1", "--sample-rate", "0.01",
                                "--steps", "5"], capsys)["epsilon"]
    # substitution: --sigma needs --sensitivity (it used to mean 2 here and 1 in plans)
    code, _, err = run(["epsilon", "--sigma", "1.1", "--batch-size", "10", "--dataset-size",
                        "100", "--sampler", "without-replacement", "--steps", "5", "--delta",
                        "1e-5"], capsys)
    assert code == 2 and "--sigma: under substitution give --sensitivity too" in err
    d = eps_json(["--sigma", "2.2", "--sensitivity", "2", "--batch-size", "10",
                  "--dataset-size", "100", "--sampler", "without-replacement", "--steps", "5"],
                 capsys)
    assert d["epsilon"] == rdp(dp.Gaussian(2.2, 2.0, S).subsample(
        dp.WithoutReplacement(10, 100)) * 5)
    code, _, err = run(["epsilon", "--noise-multiplier", "1", "--sensitivity", "2", "--steps",
                        "1", "--delta", "1e-5"], capsys)
    assert code == 2 and "--sensitivity: not used with --noise-multiplier" in err


@pytest.mark.parametrize("argv", [
    ["epsilon", "--sigma", "1.1", "--batch", "256", "--population", "60000", "--steps", "10",
     "--delta", "1e-5"],
    ["delta", "--sigma", "1.1", "--population", "60000", "--steps", "10", "--epsilon", "2"],
    ["compare", "--sigma", "1.1", "--batch", "256", "--steps", "10", "--delta", "1e-5"],
    ["calibrate", "steps", "--epsilon", "1", "--delta", "1e-5", "--sigma", "1", "--batch", "2"],
])
def test_old_words_with_another_meaning_are_errors_that_say_what_to_write(argv):
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    r = subprocess.run([sys.executable, "-m", "dpamp", *argv], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert "is no longer accepted" in line and "meant M records drawn without replacement" in line
    assert "--batch-size" in line and "--sampler without-replacement" in line


def test_calibrate_batch_is_an_error_batch_size_is_the_word(capsys):
    code, _, err = run(["calibrate", "batch", "--epsilon", "3", "--delta", "1e-5",
                        "--noise-multiplier", "1", "--steps", "10", "--dataset-size", "100"],
                       capsys)
    assert code == 2 and "calibrate batch-size" in err and "--sampler without-replacement" in err


@pytest.mark.parametrize("argv, msg", [
    (["--noise-multiplier", "1.1", "--sample-rate", "0.01"], "--steps: missing: give --steps"),
    (PLAN, "or --epochs (passes over the dataset)"),
    ([*PLAN, "--steps", "100", "--epochs", "1"], "--steps 100 and --epochs 1 disagree: 1 epochs "
                                                 "at rate 8/1875 are ceil(1 x 1875/8) = 235"),
    (["--noise-multiplier", "1", "--batch-size", "3", "--steps", "1"],
     "--dataset-size: missing: sampler 'poisson' needs --batch-size and --dataset-size"),
    (["--noise-multiplier", "1", "--sample-rate", "0.1", "--sampler", "without-replacement",
      "--steps", "1"], "--sample-rate: sampler 'without-replacement' takes --batch-size"),
    (["--noise-multiplier", "1", "--sampler", "shuffled", "--steps", "1", "--batch-size", "1",
      "--dataset-size", "2"], "--sampler: must be 'none' or one of 'poisson'"),
    (["--batch-size", "3", "--dataset-size", "9", "--steps", "1"], "give --noise-multiplier"),
])
def test_plan_errors_name_the_flags(argv, msg, capsys):
    code, out, err = run(["epsilon", *argv, "--delta", "1e-5"], capsys)
    assert code == 2 and out == "" and msg in err, err


# --- epochs everywhere ------------------------------------------------------------------------

def test_epochs_everywhere_mean_the_same_steps(capsys, tmp_path):
    E = ["--epochs", "0.768"]  # = 180 steps exactly
    want = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 180
    assert eps_json([*PLAN, *E], capsys)["assumed"]["steps"] == 180
    code, out, _ = run(["delta", *PLAN, *E, "--epsilon", "1", "--method", "rdp", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["delta"] == want.delta(1.0, method="rdp").delta
    code, out, _ = run(["compare", *PLAN, *E, "--delta", "1e-5", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["assumed"]["steps"] == 180
    assert dp.from_json(json.dumps(d["mechanism"])) == want  # structured, not a repr
    code, out, _ = run(["report", *PLAN, *E, "--json"], capsys)
    assert code == 0 and json.loads(out)["plan"]["stages"][0]["steps"] == 180
    code, out, _ = run(["calibrate", "noise-multiplier", "--epsilon", "3", "--delta", "1e-5",
                        "--batch-size", "256", "--dataset-size", "60000", *E, "--method",
                        "rdp", "--json"], capsys)
    assert code == 0 and json.loads(out)["steps"] == 180
    code, out, _ = run(["dpsgd", *PLAN, *E, "--delta", "1e-5", "--json", "--method", "rdp"],
                       capsys)
    assert code == 0 and json.loads(out)["epsilon"] == rdp(want)
    pytest.importorskip("matplotlib")
    code, out, _ = run(["plot", "rdp", *PLAN, *E, "-o", str(tmp_path / "r.png"), "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["assumed"]["steps"] == 180


# --- what every output states ------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [["epsilon", "--delta", "1e-5"], ["delta", "--epsilon", "2"],
                                 ["compare", "--delta", "1e-5"], ["dpsgd", "--delta", "1e-5"],
                                 ["report"]])
def test_human_outputs_state_sampler_relation_sensitivity(cmd, capsys):
    code, out, err = run([cmd[0], "--noise-multiplier", "1.1", "--batch-size", "100",
                          "--dataset-size", "1000", "--epochs", "2", "--sampler",
                          "without-replacement", *cmd[1:]], capsys)
    assert code == 0, err
    text = out.replace("sensitivity 2 x the clipping norm", "L2 sensitivity 2")
    assert "without-replacement" in text and "substitution" in text
    assert "sensitivity 2" in text and "20 steps" in text and "2 epochs" in text


@pytest.mark.parametrize("cmd", [["epsilon", "--delta", "1e-5"], ["delta", "--epsilon", "2"],
                                 ["compare", "--delta", "1e-5"], ["dpsgd", "--delta", "1e-5"]])
def test_json_outputs_carry_inputs_and_assumptions(cmd, capsys):
    code, out, err = run([cmd[0], "--noise-multiplier", "1.1", "--batch-size", "100",
                          "--dataset-size", "1000", "--epochs", "2", *cmd[1:], "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["inputs"]["noise_multiplier"] == 1.1 and d["inputs"]["epochs"] == 2
    assert d["inputs"]["batch_size"] == 100 and d["inputs"]["dataset_size"] == 1000
    query = cmd[1][2:]
    assert d["inputs"][query] == float(cmd[2])
    a = d["assumed"]
    assert (a["sampler"], a["relation"], a["sensitivity"], a["steps"], a["epochs"]) == \
        ("poisson", "add_remove", 1.0, 20, 2.0)


def test_toml_sampler_words(tmp_path):
    def stage(body):
        return parse_plan_text("delta = 1e-5\n[[stage]]\nmechanism = 'gaussian'\n"
                               "noise_multiplier = 1\n" + textwrap.dedent(body)).stages[0]
    a = stage("batch_size = 10\ndataset_size = 100\nepochs = 2")   # no sampler: Poisson
    b = stage("sampler = 'poisson'\nsample_rate = 0.1\nsteps = 20")
    c = stage("sampling = 'poisson'\nrate = 0.1\nsteps = 20")      # the older spellings
    assert a.step == b.step == c.step == dp.Gaussian(1.0).subsample(dp.Poisson(0.1))
    assert a.steps == b.steps == c.steps == 20
    d = stage("sampler = 'without-replacement'\nbatch_size = 10\ndataset_size = 100\nsteps = 1")
    assert d.step == dp.Gaussian(1.0, 2.0, S).subsample(dp.WithoutReplacement(10, 100))
    with pytest.raises(PlanError, match="stage 1, key 'steps': missing"):
        stage("sample_rate = 0.1")
