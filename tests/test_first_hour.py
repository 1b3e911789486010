"""What a new user meets around the answers: every input error names the flag (command line),
the file and key (plan, grid) or the parameter (Python), on one line without a traceback; one
number format for delta; sources by authors and year."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import dpamp as dp

SRC = os.path.join(os.path.dirname(__file__), "..", "src")

PLAN = """delta = {delta}
[[stage]]
mechanism = "gaussian"
noise_multiplier = 1.0
batch_size = 100
dataset_size = 10000
{length}
"""


def run_cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    return subprocess.run([sys.executable, "-m", "dpamp", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def one_line_error(r) -> str:
    """The single error line of a refused command (exit status 2, nothing on stdout)."""
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# --- a number of epochs beyond what dpamp counts (2^53 steps) --------------------------------

@pytest.mark.parametrize("length", ["epochs = 1e15", "epochs = 1.7e308",
                                    "epochs = 9007199254740993"])
def test_plan_epochs_beyond_2_53_names_file_and_key(tmp_path, length):
    f = tmp_path / "big.toml"
    f.write_text(PLAN.format(delta="1e-5", length=length))
    line = one_line_error(run_cli("report", str(f)))
    assert str(f) in line and "key 'epochs'" in line and "2^53" in line


def test_plan_non_integer_steps_names_the_key(tmp_path):
    f = tmp_path / "half.toml"
    f.write_text(PLAN.format(delta="1e-5", length="steps = 2.5"))
    line = one_line_error(run_cli("report", str(f)))
    assert str(f) in line and "key 'steps'" in line and "integer" in line


def test_cli_epochs_beyond_2_53_names_the_flag():
    line = one_line_error(run_cli("epsilon", "--noise-multiplier", "1", "--batch-size", "100",
                                  "--dataset-size", "10000", "--epochs", "1e15",
                                  "--delta", "1e-5"))
    assert "--epochs" in line and "2^53" in line


def test_python_epochs_beyond_2_53_names_the_parameter():
    with pytest.raises(ValueError, match="epochs.*2\\^53"):
        dp.dpsgd(noise_multiplier=1, batch_size=100, dataset_size=10000, epochs=1e15,
                 delta=1e-5)


# --- one number format for delta ------------------------------------------------------------

def test_one_format_for_delta_everywhere(capsys):
    from dpamp import cli
    from dpamp.core.rounding import fmt
    from dpamp.io import report
    assert [fmt(x) for x in (1e-5, 1e-6, 2.5e-7, 1e-4, 0.001, 60.0, 1e15)] == \
        ["1e-5", "1e-6", "2.5e-7", "0.0001", "0.001", "60", "1e+15"]
    step = dp.Gaussian(1.1).subsample(dp.Poisson(0.01))
    g = (step * 100).epsilon(1e-5)
    assert str(g).startswith("(") and ", 1e-5)-DP" in str(g)
    assert ", 1e-5)-DP" in g._repr_markdown_()
    # a delta query: the computed delta to 6 digits, as its lower bound
    d = (step * 100).delta(1.0)
    from dpamp.core.rounding import round_down, round_up
    assert str(d).startswith(f"(1, {round_up(d.delta, 6)})-DP by ")
    assert f"lower bound {round_down(d.lower, 6)}" in str(d)
    outputs = []
    for argv in (["epsilon", "--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps",
                  "100", "--delta", "1e-5"],
                 ["dpsgd", "--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps",
                  "100", "--delta", "1e-5"],
                 ["report", "--noise-multiplier", "1.1", "--batch-size", "100",
                  "--dataset-size", "10000", "--steps", "100", "--delta", "1e-5", "--markdown"],
                 ["calibrate", "noise-multiplier", "--epsilon", "3", "--delta", "1e-5",
                  "--sample-rate", "0.01", "--steps", "100", "--method", "rdp"]):
        assert cli.main(argv) in (0, None)
        outputs.append(capsys.readouterr().out)
    m = dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100
    outputs.append(report.text([("rdp", m.epsilon(1e-5, method="rdp"), 0.0)], 1e-5,
                               mechanism=m))
    for out in outputs:
        assert "1e-05" not in out and "0.00001" not in out and "1e-06" not in out, out
        assert "1e-5" in out, out
    assert "1e-5" in report._d(1e-5)


# --- why a method other than the default answered, where the user looks -----------------------

def test_text_says_why_the_pld_did_not_answer(capsys):
    from dpamp import cli
    argv = ["epsilon", "--noise-multiplier", "1e-9", "--batch-size", "100", "--dataset-size",
            "10000", "--epochs", "1", "--delta", "1e-6"]
    assert cli.main(argv) in (0, None)
    out = capsys.readouterr().out.splitlines()
    assert "method rdp" in out[0] and out[1].startswith("method rdp: pld could not answer")
    g = (dp.Gaussian(1e-9).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-6)
    assert g.method == "rdp" and "pld could not answer" in g.why_method
    assert "\n  method rdp: pld could not answer" in str(g)
    # the default answering: one line, nothing to explain
    h = (dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-6)
    assert h.why_method == "" and "\n" not in str(h)


# --- delta = 0: the same rule on the command line, in plans, sweeps and Python -----------------

def test_delta_zero_is_accepted_everywhere(tmp_path, capsys):
    from dpamp import cli
    f = tmp_path / "pure.toml"
    f.write_text(PLAN.format(delta="0", length="steps = 10"))
    assert cli.main(["report", str(f)]) in (0, None)
    out = capsys.readouterr().out
    assert "delta: 0" in out and "epsilon at delta 0 by sampler" in out
    assert cli.main(["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps",
                     "10", "--delta", "0"]) in (0, None)
    assert "epsilon ∞  delta 0" in capsys.readouterr().out
    assert dp.load_plan(f).delta == 0.0
    assert dp.Laplace(1.0).epsilon(0).epsilon == pytest.approx(1.0, rel=1e-4)
    rows = dp.sweep({"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10, "delta": 0.0},
                    workers=1, progress=False)
    assert not rows.errors, rows.errors
    assert rows[0]["epsilon_upper"] == float("inf")


@pytest.mark.parametrize("value", ["-1e-5", "1", "nan"])
def test_delta_out_of_range_names_the_flag(value):
    line = one_line_error(run_cli("epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01",
                                  "--steps", "10", "--delta", value))
    assert "--delta" in line and "[0, 1)" in line


def test_plan_delta_out_of_range_names_file_and_key(tmp_path):
    f = tmp_path / "neg.toml"
    f.write_text(PLAN.format(delta="-1e-5", length="steps = 10"))
    line = one_line_error(run_cli("report", str(f)))
    assert str(f) in line and "key 'delta'" in line and "[0, 1)" in line


# --- every part knows every sampler, and steps with agreeing epochs ----------------------------

def test_sweeps_know_every_sampler():
    from dpamp.accounting.sweep_grid import SAMPLERS, expand
    from dpamp.core.samplers import SAMPLERS as CORE
    assert {s.replace("_", "-") for s in SAMPLERS} == set(CORE)
    rows = expand({"noise_multiplier": 1.0, "batch_size": 5, "dataset_size": 50,
                   "sampler": ["with-replacement", "truncated-poisson"], "max_batch_size": 9,
                   "steps": 10, "epochs": 1, "delta": 1e-5})
    assert [r["sampler"] for r in rows] == ["with_replacement", "truncated_poisson"]
    assert "max_batch_size" not in rows[0] and rows[1]["max_batch_size"] == 9


def test_sweep_steps_and_epochs_must_agree(tmp_path):
    g = tmp_path / "grid.toml"
    g.write_text("noise_multiplier = 1.0\nbatch_size = 256\ndataset_size = 60000\n"
                 "delta = 1e-5\nsteps = 200\nepochs = 1\n")
    line = one_line_error(run_cli("sweep", str(g), "-o", str(tmp_path / "r.jsonl")))
    assert str(g) in line and "key 'epochs'" in line and "235 steps" in line \
        and "give one of them" in line


def test_plans_doc_lists_every_sampler():
    from dpamp.core.samplers import SAMPLERS
    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "plans.md"),
                encoding="utf-8").read()
    sampler_row = next(line for line in text.splitlines() if line.startswith("| `sampler`"))
    for name in SAMPLERS:
        assert f"`{name}`" in sampler_row, name
        assert f"\n| `{name}` |" in text, name          # a row of the sampling table
    sweeps = open(os.path.join(os.path.dirname(__file__), "..", "docs", "sweeps.md"),
                  encoding="utf-8").read()
    row = next(line for line in sweeps.splitlines() if line.startswith("| `sampler`"))
    for name in SAMPLERS:
        assert f'"{name.replace("-", "_")}"' in row, name


# --- sources by authors and year in every output ---------------------------------------------

def _strings_outside_docstrings(path):
    import ast
    tree = ast.parse(open(path, encoding="utf-8").read())
    docs = {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_no_paper_numbers_in_what_the_code_prints():
    # docstrings and comments cite the papers by file number (docs/papers/index.md); every
    # string the code can print (errors, warnings, sources, help) names authors and year
    import pathlib
    import re
    number = re.compile(r"(?<![\w.])00[0-4](?![\w.])")
    root = pathlib.Path(SRC) / "dpamp"
    hits = [f"{p.relative_to(root)}:{line}: {s[:60]!r}"
            for p in root.rglob("*.py") if p.name != "citations.py"
            for line, s in _strings_outside_docstrings(p) if number.search(s)]
    assert not hits, hits


def test_bernoulli_command_names_the_paper(capsys):
    from dpamp import cli
    assert cli.main(["bernoulli", "--c", "0.1", "--alpha", "5", "--epsilon", "1"]) in (0, None)
    out = capsys.readouterr().out
    assert "Imola & Chaudhuri 2021" in out and "(001)" not in out


# --- a report says what its plan is, in words -------------------------------------------------

def test_report_of_a_repeated_run_describes_it_in_words(tmp_path, capsys):
    from dpamp import cli
    f = tmp_path / "tuned.toml"
    f.write_text(PLAN.format(delta="1e-5", length='epochs = 2\n'
                             'repeat_and_select = { mean = 10, distribution = "geometric" }'))
    assert cli.main(["report", str(f)]) in (0, None)
    out = capsys.readouterr().out
    assert "Relation." not in out and "compose(" not in out and "1 steps" not in out
    assert "of: 200 steps of Gaussian" in out and "; 1 run;" in out
    # the samplers table compares plain DP-SGD runs: not shown beside a repeated one
    assert "by sampler" not in out


# --- a library error in the command line's words ---------------------------------------------

@pytest.mark.parametrize("argv, flag", [
    (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10",
      "--delta", "1e-5", "--tol", "-1"], "--tol"),
    (["calibrate", "noise-multiplier", "--epsilon", "3", "--delta", "0", "--sample-rate",
      "0.01", "--steps", "100"], "--delta"),
    (["risk", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10", "--fpr",
      "2"], "--fpr"),
    (["bernoulli", "--c", "0.7", "--alpha", "5", "--epsilon", "1"], "--c"),
    (["plot", "samplers", "--noise-multiplier", "1", "--batch-size", "64", "--dataset-size",
      "60000", "--epochs", "0", "-o", "x.png"], "--epochs"),
    (["epsilon", "--noise-multiplier", "1", "--batch-size", "70000", "--dataset-size",
      "60000", "--epochs", "1", "--delta", "1e-5"], "--batch-size"),
    (["epsilon", "--noise-multiplier", "1", "--batch-size", "10", "--dataset-size", "100",
      "--steps", "10", "--epochs", "2", "--delta", "1e-5"], "--epochs"),
    (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10",
      "--delta", "1e-5", "--method", "foo"], "--method"),
])
def test_cli_errors_name_the_flag(argv, flag, capsys):
    from dpamp import cli
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0] and "Traceback" not in err[0], err
    name = flag[2:].replace("-", "_")
    assert f"{name} must" not in err[0]          # the flag, not the Python parameter


def test_unknown_method_is_refused_before_heavy_imports():
    code = ("import sys\nfrom dpamp.cli import main\n"
            "rc = main(['epsilon', '--noise-multiplier', '1', '--sample-rate', '0.01', "
            "'--steps', '10', '--delta', '1e-5', '--method', 'foo'])\n"
            "assert rc == 2 and 'scipy' not in sys.modules, sorted(sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.path.abspath(SRC)}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--method" in r.stderr and "invalid choice" in r.stderr


# --- long work is never silent -----------------------------------------------------------------

def test_stages_print_a_line_each_when_not_on_a_terminal(monkeypatch):
    import io
    from dpamp.core.progress import stages
    monkeypatch.delenv("DPAMP_PROGRESS", raising=False)
    out = io.StringIO()
    assert list(stages(["poisson", "shuffle"], "samplers", stream=out)) == ["poisson", "shuffle"]
    assert out.getvalue().splitlines() == ["samplers: poisson (1/2)", "samplers: shuffle (2/2)"]
    monkeypatch.setenv("DPAMP_PROGRESS", "0")
    out = io.StringIO()
    assert list(stages(["poisson"], "samplers", stream=out)) == ["poisson"]
    assert out.getvalue() == ""


def test_samplers_table_shuffle_part_is_quick():
    # the shuffled-batches lower bound's 60-digit cells are computed once per cut and shared
    # by both candidate pairs: the report's shuffle column stays cheap (it took ~5 s of CPU)
    import time
    from dpamp.io.samplers_compare import compare
    compare(1.1, 256, 60000, [1], 1e-5, samplers=["poisson"])      # imports, warm-up
    t0 = time.process_time()
    r = compare(1.1, 256, 61000, [60], 1e-5, samplers=["shuffle"])
    assert time.process_time() - t0 < 3.0
    assert 12 < r["samplers"]["shuffle"]["lower"][0] < r["samplers"]["shuffle"]["upper"][0]


def test_the_api_reference_leads_with_what_dp_offers():
    page = open(os.path.join(os.path.dirname(__file__), "..", "docs", "api", "public.md"),
                encoding="utf-8").read()
    missing = [n for n in dp.__all__ if f"`dp.{n}`" not in page]
    assert not missing, missing
    nav = open(os.path.join(os.path.dirname(__file__), "..", "mkdocs.yml"),
               encoding="utf-8").read()
    api = nav[nav.index("  - API:"):].splitlines()
    assert api[1].strip() == "- api/public.md"


def test_a_dpsgd_query_loads_no_optimizer():
    code = ("import sys\nimport dpamp as dp\n"
            "dp.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60000, epochs=1, "
            "delta=1e-5)\n"
            "assert 'scipy.optimize' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.path.abspath(SRC)}, timeout=60)
    assert r.returncode == 0, r.stderr


def test_report_risk_line_counts_an_epoch_samplers_steps(tmp_path, capsys):
    from dpamp import cli
    f = tmp_path / "alloc.toml"
    f.write_text(PLAN.format(delta="1e-5", length='sampler = "allocation"\nepochs = 3')
                 .replace("dataset_size = 10000", "dataset_size = 9700"))
    assert cli.main(["report", str(f)]) in (0, None)
    out = capsys.readouterr().out
    assert "291 steps (3 epochs)" in out and "3 epochs (291 steps)" in out
    assert "; 3 steps;" not in out


def test_import_dpamp_defines_only_the_common_mechanisms():
    # the other families load when first named (import dpamp was 1.7 x import numpy)
    code = ("import sys, dpamp as dp\n"
            "lazy = ['dpamp.mechanisms.matrix', 'dpamp.mechanisms.matrix_strategies', "
            "'dpamp.mechanisms.mixture_of_gaussians', 'dpamp.mechanisms.selection', "
            "'dpamp.mechanisms.skellam', 'dpamp.mechanisms.discrete_gaussian']\n"
            "assert not [m for m in lazy if m in sys.modules], sys.modules\n"
            "assert dp.MatrixMechanism.__module__ == 'dpamp.mechanisms.matrix'\n"
            "assert (dp.Skellam(50.0) * 3).epsilon(1e-5).epsilon > 0\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.path.abspath(SRC)}, timeout=60)
    assert r.returncode == 0, r.stderr
