"""TOML plans, the report command and its formats, all-or-nothing output."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, strategies as st

import dpamp as dp
from dpamp import cli
from dpamp.io import report
from dpamp.io.plan import PlanError, default_plan, parse_plan_text

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def plan(text):
    return parse_plan_text(textwrap.dedent(text), origin="t.toml")


def test_default_plan_is_the_mnist_dp_sgd_plan():
    p = default_plan()
    assert p.delta == 1e-5 and len(p.stages) == 1
    s = p.stages[0]
    # 60 epochs at rate 256/60000: ceil(60 * 60000 / 256) = ceil(14062.5) = 14063 (a partial
    # last epoch is counted as the steps it runs, as TF-Privacy counts them)
    assert s.steps == 14063 == p.total_steps
    assert s.step == dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000))
    assert p.mechanism == dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14063
    assert s.assumed["sampler"] == "poisson" and s.assumed["relation"] == "add_remove"
    assert s.assumed["sensitivity"] == 1.0 and s.assumed["steps"] == 14063
    assert os.path.isfile(os.path.join(SRC, "dpamp", "data", "default_plan.toml"))


def test_every_mechanism_and_sampling_kind():
    p = plan("""
        title = "all kinds"
        delta = 1e-6
        methods = ["rdp"]
        [[stage]]
        name = "gauss"
        mechanism = "gaussian"
        sigma = 3.0
        sensitivity = 2.0
        sampling = "without_replacement"
        batch_size = 10
        dataset_size = 1000
        epochs = 2
        [[stage]]
        mechanism = "laplace"
        noise_multiplier = 4
        sampling = "with_replacement"
        batch_size = 5
        dataset_size = 100
        steps = 3
        [[stage]]
        mechanism = "randomized_response"
        epsilon = 1.0
        relation = "substitution"
        steps = 1
        [[stage]]
        mechanism = "randomized_response"
        p = 0.75
        relation = "substitution"
        steps = 1
        [[stage]]
        mechanism = "pure_dp"
        epsilon = 0.5
        sampling = "poisson"
        rate = 0.1
        relation = "substitution"
        steps = 7
        [[stage]]
        mechanism = "zcdp"
        rho = 0.01
        relation = "substitution"
        steps = 1
        [[stage]]
        mechanism = "eps_delta"
        epsilon = 0.1
        delta = 1e-9
        relation = "substitution"
        steps = 4
    """)
    S = dp.SUBSTITUTION
    want = [
        (dp.Gaussian(3.0, 2.0, S).subsample(dp.WithoutReplacement(10, 1000)), 200),
        # noise_multiplier under substitution: a record of norm <= C moves a sum by 2C
        (dp.Laplace(4.0, 2.0, S).subsample(dp.WithReplacement(5, 100)), 3),
        (dp.RandomizedResponse.from_epsilon(1.0, S), 1),
        (dp.RandomizedResponse(0.75, S), 1),
        (dp.PureDP(0.5, S).subsample(dp.Poisson(0.1, S)), 7),
        (dp.ZCDP(0.01, S), 1),
        (dp.EpsDelta(0.1, 1e-9, S), 4),
    ]
    assert [(s.step, s.steps) for s in p.stages] == want
    assert p.stages[0].name == "gauss" and p.stages[1].name == "stage 2"
    assert p.methods == ("rdp",) and p.delta == 1e-6 and p.relation is S
    assert p.mechanism == dp.compose(*[m * c for m, c in want])
    assert p.prefix(201) == dp.compose(want[0][0] * 200, want[1][0] * 1)


@pytest.mark.parametrize("epochs, rate, steps", [(0.3, 0.1, 3), (3, 0.1, 30), (60, 0.01, 6000),
                                                 (1, 0.3, 4), (2.5, 0.5, 5), (0.1, 0.5, 1),
                                                 (0.768, 0.00426666666666666667, 180)])
def test_epochs_to_steps_is_exact_ceil(epochs, rate, steps):
    # ceil(epochs / rate) in exact arithmetic: 0.3 / 0.1 is 2.9999999999999996 in floating
    # point and 0.768 / fl(256/60000) is 179.99999999999997; both are exact here
    p = plan(f"""
        delta = 1e-5
        [[stage]]
        mechanism = "gaussian"
        noise_multiplier = 1.0
        sampling = "poisson"
        rate = {rate}
        epochs = {epochs}
    """)
    assert p.stages[0].steps == steps


GOOD = """\
delta = 1e-5
[[stage]]
mechanism = "gaussian"
noise_multiplier = 1.1
sampling = "poisson"
rate = 0.01
steps = 100
[[stage]]
mechanism = "gaussian"
noise_multiplier = 2.0
sampling = "poisson"
{line}
steps = 10
"""


@pytest.mark.parametrize("line, msg", [
    ("rate = 3", "t.toml: stage 2, key 'rate': must be in (0, 1] (got 3)"),
    ("rate = 0", "t.toml: stage 2, key 'rate': must be in (0, 1] (got 0)"),
    ("rate = 'a lot'", "stage 2, key 'rate': must be a real number"),
    ("rtae = 0.1", "stage 2, key 'rtae': unknown key (did you mean 'rate'?)"),
    ("batch_size = 10", "stage 2, key 'dataset_size': missing"),
    ("rate = 0.1\nbatch_size = 3", "stage 2, key 'batch_size': give either 'rate'"),
    ("rate = 0.1\nscale = 3", "stage 2, key 'scale': not a parameter of mechanism 'gaussian'"),
    ("rate = 0.1\nsigma = 3", "stage 2, key 'sigma': give only one of"),
    ("rate = 0.1\nsensitivity = 3", "stage 2, key 'sensitivity': not used with"),
    ("rate = 0.1\nepochs = 3", "stage 2, key 'epochs': steps 10 and epochs 3 disagree"),
    ("rate = 0.1\nsample_rate = 0.1", "stage 2, key 'rate': give only one of 'sample_rate', 'rate'"),
    ("rate = 0.1\nsampler = 'poisson'", "stage 2, key 'sampling': give only one of 'sampler'"),
    ("rate = 0.1\nrelation = 'substitution'",
     "stage 2, key 'relation': this stage is under substitution but stage 1"),
    ("rate = 0.1\nrelation = 'replace'", "stage 2, key 'relation': must be 'add_remove'"),
    ("rate = 0.1\nbatch_size = 3\ndataset_size = 2", "stage 2, key 'batch_size'"),
    ("rate = 0.1\nname = 3", "stage 2, key 'name': must be a string"),
])
def test_broken_plan_names_stage_and_key(line, msg):
    with pytest.raises(PlanError) as e:
        plan(GOOD.format(line=line))
    assert msg in str(e.value)


@pytest.mark.parametrize("text, msg", [
    ("[[stage]]\nmechanism = 'gaussian'\nsigma = 1", "key 'delta': missing"),
    ("delta = 2\n[[stage]]\nmechanism = 'gaussian'\nsigma = 1", "key 'delta': must be in [0, 1)"),
    ("delta = 1e-5", "key 'stage': missing"),
    ("delta = 1e-5\nmethods = ['magic']\n[[stage]]\nmechanism = 'zcdp'\nrho = 1",
     "key 'methods': unknown method 'magic'"),
    ("delta = 1e-5\ndleta = 3\n[[stage]]\nmechanism = 'zcdp'\nrho = 1",
     "key 'dleta': unknown key (did you mean 'delta'?)"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'gausian'\nsigma = 1",
     "stage 1, key 'mechanism': must be one of"),
    ("delta = 1e-5\n[[stage]]\nsigma = 1", "stage 1, key 'mechanism': missing"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'gaussian'", "stage 1, key 'noise_multiplier': "
                                                        "missing"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'zcdp'\nrho = 1",
     "stage 1, key 'steps': missing: give 'steps' (the number of steps; 1 for a single "
     "release) or 'epochs'"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'gaussian'\nsigma = 1\nsampler = "
     "'without-replacement'\nbatch_size = 2\ndataset_size = 10\nsteps = 1",
     "stage 1, key 'sigma': under substitution give 'sensitivity' too"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'zcdp'\nrho = 1\nsampler = 'none'\n"
     "batch_size = 3\nsteps = 1", "stage 1, key 'batch_size': not used without a sampler"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'zcdp'\nrho = 1\nsteps = 0",
     "stage 1, key 'steps': must be an integer in [1, inf]"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'zcdp'\nrho = 1\nsampling = 'bootstrap'",
     "stage 1, key 'sampling': must be 'none' or one of 'poisson'"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'gaussian'\nsigma = 1\nsampling = "
     "'without_replacement'\nbatch_size = 2\ndataset_size = 10\nrelation = 'add_remove'",
     "stage 1, key 'relation': sampler 'without-replacement' needs the substitution"),
    ("delta = [1e-5\n", "not valid TOML"),
    ("delta = 1e-5\n[[stage]]\nmechanism = 'zcdp'\nrho = 1\nsampler = 'without_replacement'\n"
     "sample_rate = 0.1\nsteps = 1",
     "stage 1, key 'sample_rate': sampler 'without-replacement' takes 'batch_size'"),
])
def test_broken_plan_top_level(text, msg):
    with pytest.raises(PlanError) as e:
        plan(text)
    assert msg in str(e.value)


def run_cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    return subprocess.run([sys.executable, "-m", "dpamp.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)


def test_broken_plan_leaves_nothing_behind(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.format(line="rate = 3"))
    r = run_cli("report", str(bad), "-o", str(tmp_path / "out.txt"),
                "--plot", str(tmp_path / "fig.png"))
    assert r.returncode == 2 and r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "stage 2, key 'rate': must be in (0, 1] (got 3)" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["bad.toml"]


def test_missing_output_directory_is_refused_before_computing(tmp_path, capsys):
    assert cli.main(["report", "-o", str(tmp_path / "no" / "such" / "dir.txt")]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "does not exist" in out.err


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    from dpamp.io.files import atomic_path, atomic_write
    target = tmp_path / "fig.png"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"half a fig")
            raise RuntimeError("disk full")
    assert os.listdir(tmp_path) == []
    atomic_write(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            open(tmp, "w").write("new, half")
            raise RuntimeError("crash")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["fig.png"]


def test_report_of_a_plan_file_all_formats(tmp_path, capsys):
    f = tmp_path / "plan.toml"
    f.write_text(GOOD.format(line="rate = 0.02"))
    ref = dp.compose(dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100,
                     dp.Gaussian(2.0).subsample(dp.Poisson(0.02)) * 10)
    rdp = ref.epsilon(1e-5, method="rdp")

    assert cli.main(["report", str(f)]) == 0
    out = capsys.readouterr().out
    assert "rdp" in out and "ms" in out and report.round_up(rdp.epsilon, 6) in out
    assert "stage 2: Gaussian, noise multiplier 2, L2 sensitivity 1; sampling poisson, " \
        "rate 0.02; 10 steps; add/remove" in out

    assert cli.main(["report", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    by = {r["method"]: r for r in d["results"]}
    assert by["rdp"]["epsilon"] == pytest.approx(rdp.epsilon, rel=1e-12)
    assert d["plan"]["stages"][1]["rate"] == 0.02 and d["plan"]["delta"] == 1e-5
    assumed = d["plan"]["stages"][1]["assumed"]
    assert assumed == {"mechanism": "gaussian", "noise_multiplier": 2.0, "sensitivity": 1.0,
                       "sampler": "poisson", "relation": "add_remove", "sample_rate": 0.02,
                       "steps": 10, "epochs": 0.2}
    assert d["best"]["epsilon"] == min(r["epsilon"] for r in d["results"] if "epsilon" in r)

    assert cli.main(["report", str(f), "--markdown", "-o", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("#### Privacy guarantee")
    best = min((ref.epsilon(1e-5, method=m) for m in dp.available_methods(ref)),
               key=lambda g: g.epsilon)
    assert f"**ε = {report.round_up(best.epsilon)}**" in md and "**δ = 1e-5**" in md
    assert "| method | ε (upper bound) | lower bound | δ | source |" in md
    assert "Steinke 2022, Lemma 33 item 8" in md  # the theorem, by authors and year
    assert "| stage 2 | Gaussian, noise multiplier 2, L2 sensitivity 1 | poisson, rate 0.02 | " \
        "10 steps |" in md


def test_compare_markdown(capsys):
    assert cli.main(["compare", "--sigma", "2", "--steps", "10", "--delta", "1e-6",
                     "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| stage 1 | Gaussian, σ 2, L2 sensitivity 1 | none (full dataset) | 10 steps | " \
        "add/remove |" in md
    for name in ("rdp", "zcdp"):
        g = (dp.Gaussian(2.0) * 10).epsilon(1e-6, method=name)
        assert f"| {name} | {report.round_up(g.epsilon)} |" in md


@given(st.floats(min_value=1e-300, max_value=1e300), st.integers(1, 8))
def test_printed_bounds_round_outwards(x, digits):
    up, down = float(report.round_up(x, digits)), float(report.round_down(x, digits))
    assert down <= x <= up  # x's shortest repr is x itself, so this is exact
    assert up - down <= abs(x) * 10 ** (1 - digits) * 1.0000001


def test_best_is_min_upper_and_max_lower():
    g1 = dp.Guarantee(2.0, 1e-5, 1.0, "a")
    g2 = dp.Guarantee(1.5, 1e-5, None, "b")
    g3 = dp.Guarantee(3.0, 1e-5, 1.2, "c")
    top, low = report.best([("a", g1, 0), ("b", g2, 0), ("c", g3, 0), ("d", "failed", 0)])
    assert top is g2 and low == 1.2
