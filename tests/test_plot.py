"""Figures: every kind rendered to PNG (and SVG), and the data behind it checked."""
import json
import os
import sys

import numpy as np
import pytest
from scipy.stats import norm

import dpamp as dp
from dpamp import cli
from dpamp.io import plot

PNG = b"\x89PNG\r\n\x1a\n"
STEP = dp.Gaussian(1.1).subsample(dp.Poisson(0.01))


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == PNG


def test_profile_png_and_data(tmp_path):
    x = STEP * 500
    out = tmp_path / "profile.png"
    data = plot.profile(x, epsilons=np.linspace(0, 3, 13), method="rdp", output=out)
    assert is_png(out)
    eps, d = data["epsilon"], data["delta"][""]
    assert data["method"][""] == "rdp"
    assert np.all(np.diff(d) <= 0) and np.all((d >= 0) & (d <= 1))  # a profile decreases
    for i in (0, 6, 12):
        assert d[i] == x.delta(float(eps[i]), method="rdp").delta


def test_profile_svg_default_grid(tmp_path):
    out = tmp_path / "profile.svg"
    data = plot.profile({"a": dp.Gaussian(2.0) * 3, "b": dp.Gaussian(4.0) * 3},
                        method="zcdp", output=out)
    assert b"<svg" in out.read_bytes()[:2000]
    top = (dp.Gaussian(2.0) * 3).epsilon(1e-9, method="zcdp").epsilon
    assert data["epsilon"][0] == 0 and data["epsilon"][-1] == pytest.approx(top)
    assert np.all(data["delta"]["b"] <= data["delta"]["a"])  # more noise, smaller delta


def test_epsilon_vs_steps_png_and_data(tmp_path):
    x = STEP * 2000
    out = tmp_path / "eps.png"
    data = plot.epsilon_vs_steps(x, 1e-5, output=out)
    assert is_png(out)
    T = data["steps"]
    assert T[0] == 1 and T[-1] == 2000 and np.all(np.diff(T) > 0)
    assert set(data["epsilon"]) == set(dp.available_methods(x))
    for name, e in data["epsilon"].items():
        assert np.all(np.diff(e) >= 0), name  # epsilon grows with the steps
        j = len(T) // 2
        assert e[j] == (STEP * int(T[j])).epsilon(1e-5, method=name).epsilon
    assert np.all(data["epsilon"]["rdp"] <= data["epsilon"]["rdp-classic"])


def test_epsilon_vs_steps_of_a_multi_stage_plan_runs_stages_in_order():
    a, b = dp.Gaussian(5.0), dp.Laplace(10.0)
    x = dp.compose(a * 3, b * 2)
    data = plot.epsilon_vs_steps(x, 1e-6, steps=[1, 3, 4, 5], methods=["rdp"])
    want = [(a * 1), (a * 3), dp.compose(a * 3, b), dp.compose(a * 3, b * 2)]
    np.testing.assert_array_equal(
        data["epsilon"]["rdp"], [w.epsilon(1e-6, method="rdp").epsilon for w in want])
    with pytest.raises(ValueError, match="steps must be integers in"):
        plot.epsilon_vs_steps(x, 1e-6, steps=[0, 6])


def test_epsilon_vs_steps_of_a_plan_whose_stage_recurs():
    """Stages A, B, A: the plan's mechanism merges the two A stages, so only the plan knows
    that the first 15 steps are 10 x A then 5 x B (the figure once took 15 x A)."""
    from dpamp.io.plan import parse_plan_text
    stage = '[[stage]]\nmechanism = "gaussian"\nsigma = {}\nsteps = 10\n'
    p = parse_plan_text("delta = 1e-5\n" + "".join(stage.format(s) for s in (10.0, 1.0, 10.0)))
    data = plot.epsilon_vs_steps(p, 1e-5, steps=[5, 15, 25, 30], methods=["rdp"])
    want = [p.prefix(t).epsilon(1e-5, method="rdp").epsilon for t in (5, 15, 25, 30)]
    np.testing.assert_array_equal(data["epsilon"]["rdp"], want)
    assert want[1] > 5 * want[0]        # the sigma = 1 steps count from step 11 on
    with pytest.raises(ValueError, match="steps must be integers in"):
        plot.epsilon_vs_steps(p, 1e-5, steps=[31])


def test_epsilon_vs_steps_failing_method_gives_nan():
    data = plot.epsilon_vs_steps(dp.PureDP(0.5) * 4, 1e-6, steps=[1, 4],
                                 methods=["kov", "nonsense"])
    assert np.all(np.isnan(data["epsilon"]["nonsense"]))
    assert np.all(np.isfinite(data["epsilon"]["kov"]))


def test_rdp_png_and_data(tmp_path):
    inner = dp.Gaussian(2.0, 2.0, dp.SUBSTITUTION)
    x = {"wor": inner.subsample(dp.WithoutReplacement(10, 100)) * 5, "plain": inner * 5}
    out = tmp_path / "rdp.png"
    data = plot.rdp(x, output=out)
    assert is_png(out)
    a = data["alpha"]
    np.testing.assert_array_equal(data["epsilon"]["wor"], x["wor"].rdp(a))
    np.testing.assert_allclose(data["epsilon"]["plain"], 5 * a * 4 / 8, rtol=1e-12)
    orders, low = data["lower"]["wor"]  # 003 Prop. 20 lower bound, integer orders
    assert np.all(low <= x["wor"].rdp(orders) * (1 + 1e-9)) and "plain" not in data["lower"]


def exact_gaussian_tradeoff(mu, alpha):
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu): the Gaussian trade-off curve (Dong, Roth,
    Su 2019), computed independently of the profile."""
    return norm.cdf(norm.ppf(1 - alpha) - mu)


def exact_gaussian_profile(mu, eps):
    """delta(eps) of N(mu, 1) vs N(0, 1) (004 Cor. 8)."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def test_tradeoff_from_exact_profile_recovers_the_gaussian_curve():
    mu = 1.0
    eps = np.linspace(0, 8, 2001)
    alpha = np.linspace(0, 1, 101)
    beta = plot.tradeoff_from_profile(eps, exact_gaussian_profile(mu, eps), alpha)
    exact = exact_gaussian_tradeoff(mu, alpha)
    assert np.all(beta <= exact + 1e-12)  # a lower bound on the true curve
    assert np.max(exact - beta) < 2e-3  # and tight on a fine grid


def test_tradeoff_from_profile_matches_brute_force():
    rng = np.random.default_rng(1)
    eps = np.sort(rng.uniform(0, 3, 7))
    dl = np.sort(rng.uniform(0, 0.3, 7))[::-1]
    alpha = rng.uniform(0, 1, 23)
    beta = plot.tradeoff_from_profile(eps, dl, alpha)
    for j, a in enumerate(alpha):
        best = 0.0
        for e, d in zip(eps, dl):
            best = max(best, 1 - d - np.exp(e) * a, np.exp(-e) * (1 - d - a))
        assert beta[j] == pytest.approx(best, abs=1e-15)


def test_tradeoff_png_and_data(tmp_path):
    mu = 0.5
    x = dp.Gaussian(1 / mu)
    out = tmp_path / "tradeoff.png"
    data = plot.tradeoff(x, method="rdp", output=out)
    assert is_png(out)
    a, b = data["alpha"], data["beta"][""]
    assert b[0] <= 1 and b[-1] == 0 and np.all(np.diff(b) <= 1e-15)  # decreasing
    assert np.all(b <= exact_gaussian_tradeoff(mu, a) + 1e-12)  # sound against the exact curve
    assert np.all(b <= 1 - a + 1e-12)
    np.testing.assert_array_equal(b, plot.tradeoff_from_profile(data["epsilon"],
                                                                data["delta"][""], a))


def test_cli_plot_every_kind(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('delta = 1e-5\n[[stage]]\nmechanism = "gaussian"\nnoise_multiplier = 1.5\n'
                    'sampling = "poisson"\nrate = 0.02\nsteps = 300\n')
    for kind in plot_kinds():
        if kind in ("samplers", "matrix-vs-dpsgd"):   # a DP-SGD run under every sampler, a
            continue       # matrix mechanism (tests/test_samplers_integration.py, test_matrix_mechanism.py)
        out = tmp_path / f"{kind}.png"
        assert cli.main(["plot", kind, "--plan", str(plan), "-o", str(out)]) == 0, kind
        assert is_png(out)
    assert cli.main(["plot", "rdp", "--sigma", "2", "--steps", "3", "-o",
                     str(tmp_path / "r.svg"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(data["epsilon"][""], 3 * np.array(data["alpha"]) / 8)


def plot_kinds():
    from dpamp.cli.plot import KINDS
    return KINDS


def test_cli_plot_bad_extension_refused_early(tmp_path, capsys):
    assert cli.main(["plot", "profile", "--sigma", "1", "-o", str(tmp_path / "x.jpg")]) == 2
    assert ".png" in capsys.readouterr().err and os.listdir(tmp_path) == []


def test_report_writes_its_figure(tmp_path, capsys):
    out = tmp_path / "dpamp-report.png"
    assert cli.main(["report", "--plot", str(out)]) == 0
    assert "rdp" in capsys.readouterr().out and is_png(out)
    assert os.listdir(tmp_path) == ["dpamp-report.png"]  # no temporary file left


def test_missing_matplotlib_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ValueError, match=r"pip install 'dpamp\[plot\]'"):
        plot.rdp(dp.Gaussian(1.0), output=tmp_path / "x.png")
    assert os.listdir(tmp_path) == []
