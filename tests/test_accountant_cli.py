"""The analytical moments accountant and the command line."""
import json
import subprocess
import sys

import numpy as np
import pytest

import dpamp as dp
from dpamp import cli


def test_accountant_keeps_unique_mechanisms_with_counts():
    step = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000))
    acc = dp.Accountant()
    for _ in range(100):
        acc.compose(step, times=10)
    acc.compose(dp.Laplace(3.0))
    assert len(acc.composition.components) == 2 and acc.steps == 1001
    direct = dp.compose(step * 1000, dp.Laplace(3.0))
    alphas = [2, 4.5, 32]
    np.testing.assert_allclose(acc.rdp(alphas), direct.rdp(alphas))
    assert acc.epsilon(1e-5).epsilon == pytest.approx(direct.epsilon(1e-5, method="auto").epsilon)
    assert acc.delta(2.0).delta == pytest.approx(direct.delta(2.0).delta)


def test_accountant_rdp_is_sum_of_parts():
    a, b = dp.Gaussian(2.0), dp.Laplace(1.0).subsample(dp.Poisson(0.1))
    acc = dp.Accountant().compose(a, 3).compose(b, 2)
    alphas = np.array([1.5, 2, 10])
    np.testing.assert_allclose(acc.rdp(alphas), 3 * a.rdp(alphas) + 2 * b.rdp(alphas))


def test_accountant_refuses_mixed_relations_and_empty():
    acc = dp.Accountant().compose(dp.Gaussian(1.0))
    with pytest.raises(ValueError, match="relation"):
        acc.compose(dp.Gaussian(1.0, relation=dp.SUBSTITUTION))
    with pytest.raises(ValueError, match="empty"):
        dp.Accountant().epsilon(1e-5)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dpamp.cli", *args], capture_output=True,
                          text=True, env={**__import__("os").environ,
                                          "PYTHONPATH": __import__("os").path.join(
                                              __import__("os").path.dirname(__file__), "..", "src")})


def test_cli_epsilon_json(capsys):
    assert cli.main(["epsilon", "--sigma", "1.1", "--poisson", str(256 / 60000), "--steps",
                     "14062", "--delta", "1e-5", "--method", "rdp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"epsilon", "delta", "lower", "method"} <= set(out)
    ref = (dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062).epsilon(1e-5, method="rdp")
    assert out["epsilon"] == pytest.approx(ref.epsilon) and out["method"] == "rdp"


def test_cli_delta_without_replacement(capsys):
    assert cli.main(["delta", "--noise-multiplier", "1.1", "--sampler", "without-replacement",
                     "--batch-size", "256", "--dataset-size", "60000", "--steps", "100",
                     "--epsilon", "2", "--method", "rdp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 <= out["delta"] <= 1
    assert out["assumed"]["relation"] == "substitution" and out["assumed"]["sensitivity"] == 2


@pytest.mark.parametrize("args", [
    ["epsilon", "--sigma", "-1", "--steps", "3", "--delta", "1e-5"],
    ["epsilon", "--sigma", "1", "--poisson", "2", "--steps", "3", "--delta", "1e-5"],
    ["epsilon", "--sigma", "1", "--batch", "300", "--population", "200", "--delta", "1e-5"],
    ["epsilon", "--noise-multiplier", "1", "--batch-size", "300", "--dataset-size", "200",
     "--steps", "3", "--delta", "1e-5"],
    ["epsilon", "--sigma", "1", "--steps", "3", "--delta", "1"],
    ["epsilon", "--sigma", "1", "--steps", "3", "--delta=-1e-5"],
    ["epsilon", "--sigma", "1", "--steps", "3", "--delta", "1e-5", "--method", "nonsense"],
    ["epsilon", "--sigma", "1", "--delta", "1e-5"],
])
def test_cli_bad_input_one_line_exit_2(args):
    r = run_cli(*args)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr


def test_cli_report_lists_methods_with_times(capsys):
    assert cli.main(["report"]) == 0
    out = capsys.readouterr().out
    assert "rdp" in out and "ms" in out


def test_cli_errors_name_the_flag_before_heavy_imports():
    """A bad --delta (negative, as written after the flag) or --method is refused when the
    command line is read: one line naming the flag, and scipy is never imported."""
    code = ("import sys\nfrom dpamp import cli as m\n"
            "for argv in (['epsilon', '--sigma', '1', '--steps', '3', '--delta', '-1e-5'],\n"
            "             ['epsilon', '--sigma', '1', '--steps', '3', '--delta', '1e-5',\n"
            "              '--method', 'foo']):\n"
            "    assert m.main(argv) == 2\n"
            "print('scipy' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"
    lines = r.stderr.strip().splitlines()
    assert lines == ["dpamp epsilon: error: argument --delta: must be in [0, 1) (got -1e-5)",
                     "dpamp epsilon: error: argument --method: invalid choice: 'foo' (choose "
                     "from 'auto', 'bounded-range', 'noise-split', 'conditional-composition', "
                     "'mixing', "
                     "'profile', 'pld', 'rdp', "
                     "'rdp-classic', 'zcdp', 'kov', 'advanced', 'basic')"]


def test_the_method_names_the_cli_knows_are_the_registry_s():
    from dpamp.accounting import registry
    assert list(registry.METHOD_NAMES) == ["auto"] + sorted(
        registry.available(), key=lambda n: registry._REGISTRY[n].rank)


def test_delta_zero_is_the_pure_epsilon_everywhere(capsys):
    """delta = 0 means the same on the command line, in plans and in Python: the pure epsilon
    (infinite for the Gaussian)."""
    from dpamp.io.plan import parse_plan_text
    plan = parse_plan_text("delta = 0\n[[stage]]\nmechanism = 'laplace'\nscale = 2\nsteps = 3\n")
    assert plan.delta == 0.0
    assert (dp.Laplace(2.0) * 3).epsilon(0.0).epsilon == pytest.approx(1.5)


def test_dpamp_methods_lists_without_importing_the_methods():
    """`dpamp methods` is answered from the registry's table of names and summaries, in the
    order auto tries them, without importing the methods (nor scipy)."""
    code = ("import sys\nfrom dpamp import cli\nassert cli.main(['methods']) == 0\n"
            "print('scipy' in sys.modules, 'dpamp.pld' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "False False"
    from dpamp.accounting import registry
    assert [ln.split()[0] for ln in lines[:-1]] == registry.available()
    assert all(registry._REGISTRY[n].summary == registry.SUMMARIES[n] for n in registry.available())
