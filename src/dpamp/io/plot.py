"""Figures: privacy profile, epsilon against steps, RDP curves, the trade-off curve.

Needs the optional extra ``plot`` (``pip install dpamp[plot]``: matplotlib), imported only when a
figure is drawn. Every function computes its data, draws it, writes ``output`` (PNG, SVG or PDF,
all-or-nothing: temporary file + rename) when given, and returns the data it drew as a dict of
numpy arrays, so the numbers behind a figure can be checked or re-plotted.

| function            | x axis          | y axis                     | data from                        |
|---------------------|-----------------|----------------------------|----------------------------------|
| ``profile``         | epsilon         | delta(epsilon), log scale  | ``x.delta(eps, method)`` per point |
| ``epsilon_vs_steps``| steps (log)     | epsilon(delta), per method | first T steps, ``.epsilon(delta, m)`` |
| ``rdp``             | order alpha (log) | RDP epsilon(alpha)       | ``x.rdp(alpha)`` per curve       |
| ``tradeoff``        | type I error alpha | type II error beta      | the (eps, delta(eps)) family     |
| ``tradeoff_bracket``| FPR alpha (log) | attack TPR 1 - beta (log)  | ``x.tradeoff(alpha)``: both bounds |

Trade-off curve from a privacy profile (Kairouz, Oh, Viswanath 2015; Dong, Roth, Su 2019,
Prop. 2.5): a mechanism that is (eps, delta)-DP for every pair of a family has, for every test
of type I error alpha, type II error

    beta(alpha) >= max over eps of max(0, 1 - delta(eps) - e^eps alpha,
                                          e^-eps (1 - delta(eps) - alpha)).

Each term is a valid bound for every (eps, delta(eps)) that holds, so the curve drawn from
upper bounds on delta(eps) is a proven lower bound on the true trade-off curve (the true curve
lies above it); a finer eps grid only makes it tighter.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..core import validate as V
from ..core.rounding import fmt
from ..core.progress import progress

__all__ = ["profile", "epsilon_vs_steps", "rdp", "tradeoff", "tradeoff_from_profile",
           "tradeoff_bracket", "FORMATS"]

FORMATS = (".png", ".svg", ".pdf")


def check_output(output):
    if output is None:
        return None
    path = os.fspath(output)
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"output must end in {', '.join(FORMATS)} (got {path!r})")
    return path


def _figure():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ValueError("plotting needs matplotlib: pip install 'dpamp[plot]'") from None
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    return fig, fig.add_subplot()


def _finish(fig, ax, output, xlabel, ylabel, title, grid_which="both"):
    """Labels, grid and legend of every dpamp plot; then save (if an output was given)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which=grid_which, alpha=0.3)
    ax.legend()
    _save(fig, output)


def _save(fig, output):
    if output is None:
        return
    from .files import atomic_path
    ext = os.path.splitext(output)[1].lower()[1:]
    with atomic_path(output) as tmp:
        fig.savefig(tmp, format=ext, dpi=120)


def _mechanisms(x) -> dict:
    """{label: mechanism} from a mechanism or a dict of them."""
    from ..mechanisms.base import check_mechanism
    if isinstance(x, dict):
        if not x:
            raise ValueError("x must contain at least one mechanism")
        return {str(k): check_mechanism(v, f"x[{k!r}]") for k, v in x.items()}
    return {"": check_mechanism(x, "x")}


def _legend(label: str, method: str) -> str:
    return f"{label} (by {method})" if label else f"by {method}"


def _default_epsilons(x, method, options, n=41):
    try:
        top = x.epsilon(1e-9, method=method, **options).epsilon
    except (ValueError, NotImplementedError):
        top = math.nan
    top = top if math.isfinite(top) and top > 0 else 10.0
    return np.linspace(0.0, min(top, 50.0), n)


def _deltas(x, eps, method, options, label):
    out = np.empty(eps.size)
    used = set()
    for i, e in enumerate(progress(eps, total=eps.size, label=label)):
        g = x.delta(float(e), method=method, **options)
        out[i] = g.delta
        used.add(g.method)
    return out, ",".join(sorted(used))


def profile(x, epsilons=None, method: str = "auto", output=None, **options) -> dict:
    """Privacy profile delta(epsilon) (Balle et al. 2018, Sec. 2) of each mechanism of ``x`` (a
    mechanism or {label: mechanism}) on a grid of epsilons (default: 41 points from 0 to
    epsilon(1e-9)), each point an upper bound ``x.delta(eps, method=method)``. Returns
    {"epsilon": grid, "delta": {label: array}, "method": {label: name}}."""
    out_path = check_output(output)
    mechs = _mechanisms(x)
    first = next(iter(mechs.values()))
    eps = (_default_epsilons(first, method, options) if epsilons is None
           else V.reals("epsilons", epsilons, low=0.0, allow_inf=False).ravel())
    data: dict = {"epsilon": eps, "delta": {}, "method": {}}
    for label, m in mechs.items():
        data["delta"][label], data["method"][label] = _deltas(m, eps, method, options,
                                                              f"profile {label}".strip())
    fig, ax = _figure()
    for label, d in data["delta"].items():
        pos = d > 0
        ax.semilogy(eps[pos], d[pos], label=_legend(label, data["method"][label]))
    _finish(fig, ax, out_path, "ε", "δ(ε)  (upper bound)",
            "Privacy profile")
    return data


def epsilon_vs_steps(x, delta: float, steps=None, methods=None, output=None,
                     **options) -> dict:
    """epsilon(delta) after the first T steps of ``x``, for each T of ``steps`` (default: 20
    log-spaced counts up to the total) and each method of ``methods`` (default: every method
    that applies). ``x`` is a :class:`~dpamp.io.plan.Plan` (its stages run in order; a stage that
    recurs later counts where it runs) or a mechanism, whose parts run in the order of
    ``parts()`` (which merges equal mechanisms: pass the plan when the order matters).
    Returns {"steps": T grid, "delta": delta, "epsilon": {method: array}}; a method that fails
    at some T has nan there."""
    from ..accounting import registry as M
    from ..mechanisms.base import check_mechanism
    from ..mechanisms.composition import compose_prefix
    from .plan import Plan
    out_path = check_output(output)
    if isinstance(x, Plan):
        runs: list | tuple = [(s.step, s.steps) for s in x.stages]
        x = x.mechanism
    else:
        runs = check_mechanism(x, "x").parts()
    d = V.delta(delta)
    total = sum(c for _, c in runs)
    if steps is None:
        grid = np.unique(np.round(np.geomspace(1, total, min(total, 20))).astype(np.int64))
    else:
        grid = np.unique(np.asarray(steps, dtype=np.int64))
        if grid.size == 0 or grid[0] < 1 or grid[-1] > total:
            raise ValueError(f"steps must be integers in [1, {total}]")
    names = list(M.available(x) if methods is None else methods)
    if not names:
        raise ValueError(f"no accounting method applies to {x!r}")
    eps = {n: np.full(grid.size, np.nan) for n in names}
    jobs = [(j, n) for j in range(grid.size) for n in names]
    for j, n in progress(jobs, total=len(jobs), label="epsilon vs steps"):
        try:
            eps[n][j] = compose_prefix(runs, int(grid[j])).epsilon(d, method=n,
                                                                   **options).epsilon
        except (ValueError, NotImplementedError):
            pass
    fig, ax = _figure()
    for n, e in eps.items():
        ok = np.isfinite(e)
        if ok.any():
            ax.plot(grid[ok], e[ok], marker=".", label=n)
    ax.set_xscale("log")
    _finish(fig, ax, out_path, "steps", f"ε  (upper bound at δ = {fmt(d)})",
            "ε against steps")
    return {"steps": grid, "delta": d, "epsilon": eps}


def _rdp_lower(m, orders):
    """A proven lower bound on the RDP of m at integer orders where it says something the
    upper curve does not (``Mechanism.renyi``: a part's ``rdp_lower``, times the count for a
    self-composition), else None. A curve that is attained (lower == upper up to the ulps of
    their outward rounding) is not drawn twice."""
    br = m.renyi(orders)
    if br.lower is None:
        return None
    low = np.asarray(br.lower, dtype=float)
    up = np.asarray(br.upper, dtype=float)
    return None if np.allclose(low, up, rtol=1e-13, atol=0.0) else low


def rdp(x, orders=None, output=None) -> dict:
    """Rényi-DP curves epsilon(alpha) (Wang et al. 2019, Sec. 2, Steinke 2022, Sec. 6) of each
    mechanism of ``x`` (a mechanism or {label: mechanism}) at ``orders`` (default: 200 log-spaced
    orders in (1.01, 1025]). Where a mechanism gives a proven lower bound (``rdp_lower``, Wang et
    al. 2019, Prop. 20, integer orders) it is drawn dashed. Returns {"alpha": orders, "epsilon":
    {label: array}, "lower": {label: (integer orders, array)}}."""
    out_path = check_output(output)
    mechs = _mechanisms(x)
    alpha = (1.0 + np.geomspace(1e-2, 1024, 200)) if orders is None else \
        V.orders(orders).astype(float).ravel()
    data: dict = {"alpha": alpha, "epsilon": {}, "lower": {}}
    for label, m in mechs.items():
        if not m.has_rdp():
            raise ValueError(f"{m!r} has no Rényi-DP curve")
        data["epsilon"][label] = np.asarray(m.rdp(alpha), dtype=float).reshape(alpha.shape)
        ints = np.unique(np.floor(alpha[alpha >= 2])).astype(np.int64)
        if ints.size:
            low = _rdp_lower(m, ints)
            if low is not None:
                data["lower"][label] = (ints, np.asarray(low, dtype=float))
    fig, ax = _figure()
    for label, e in data["epsilon"].items():
        ok = np.isfinite(e)
        (line,) = ax.plot(alpha[ok], e[ok], label=label or "RDP upper bound")
        if label in data["lower"]:
            a, low = data["lower"][label]
            ax.plot(a, low, "--", color=line.get_color(),
                    label=f"{label} lower bound".strip())
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(fig, ax, out_path, "order α", "ε(α)",
            "Rényi-DP curve")
    return data


def tradeoff_from_profile(epsilons, deltas, alphas) -> np.ndarray:
    """beta(alpha) = max(0, max over i of 1 - delta_i - e^{eps_i} alpha,
    e^{-eps_i} (1 - delta_i - alpha)) (Kairouz et al. 2015; Dong, Roth, Su 2019 Prop. 2.5),
    vectorised: a proven lower bound on the trade-off curve of any mechanism that is
    (eps_i, delta_i)-DP for every i."""
    e = np.asarray(epsilons, dtype=float).ravel()[:, None]
    d = np.asarray(deltas, dtype=float).ravel()[:, None]
    a = np.asarray(alphas, dtype=float).ravel()[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        t1 = 1.0 - d - np.exp(e) * a
        t2 = np.exp(-e) * (1.0 - d - a)
    t1 = np.where(np.isnan(t1), -np.inf, t1)  # inf * 0 at eps = inf, alpha = 0
    return np.maximum(0.0, np.maximum(t1, t2).max(axis=0))


def tradeoff(x, method: str = "auto", epsilons=None, alphas=None, output=None,
             **options) -> dict:
    """The hypothesis-testing trade-off curve beta(alpha) implied by the privacy profile of
    each mechanism of ``x`` (see the module docstring): a proven lower bound on the true
    curve (the type II error of the best test at type I error alpha). ``epsilons``: the grid
    of the (eps, delta(eps)) family (default 81 points from 0 to epsilon(1e-9));
    ``alphas``: type I errors (default 201 points in [0, 1]). Returns {"alpha", "beta":
    {label: array}, "epsilon", "delta": {label: array}, "method": {label: name}}."""
    out_path = check_output(output)
    mechs = _mechanisms(x)
    first = next(iter(mechs.values()))
    eps = (_default_epsilons(first, method, options, n=81) if epsilons is None
           else V.reals("epsilons", epsilons, low=0.0, allow_inf=False).ravel())
    a = np.linspace(0.0, 1.0, 201) if alphas is None else np.asarray(alphas, dtype=float)
    if a.ndim != 1 or np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError("alphas must be type I errors in [0, 1]")
    data: dict = {"alpha": a, "beta": {}, "epsilon": eps, "delta": {}, "method": {}}
    for label, m in mechs.items():
        dl, used = _deltas(m, eps, method, options, f"trade-off {label}".strip())
        data["delta"][label], data["method"][label] = dl, used
        data["beta"][label] = tradeoff_from_profile(eps, dl, a)
    fig, ax = _figure()
    ax.plot([0, 1], [1, 0], ":", color="grey", label="perfect privacy")
    for label, b in data["beta"].items():
        ax.plot(a, b, label=_legend(label, data["method"][label]))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    _finish(fig, ax, out_path, "type I error α", "type II error β(α)  (lower bound)",
            "Hypothesis-testing trade-off", grid_which="major")
    return data


def tradeoff_bracket(x, alphas=None, output=None, method: str = "auto") -> dict:
    """The attack's view of the trade-off curve (docs/risk.md): the largest true-positive rate
    1 - beta(alpha) of any membership-inference attack against its false-positive rate alpha,
    log-log as in the attack literature, with both proven bounds of ``x.tradeoff`` (the upper
    is the guarantee, the lower is reached by some attack) and the random guess TPR = FPR.
    ``alphas``: default 121 points from 1e-6 to 1. Returns {"alpha", "tpr_upper",
    "tpr_lower", "method"}."""
    out_path = check_output(output)
    a = np.geomspace(1e-6, 1.0, 121) if alphas is None else np.asarray(alphas, dtype=float)
    if a.ndim != 1 or np.isnan(a).any() or (a <= 0).any() or (a > 1).any():
        raise ValueError("alphas must be false-positive rates in (0, 1]")
    t = x.tradeoff(a, method=method)
    tpr = t.tpr
    data = {"alpha": a, "tpr_upper": np.asarray(tpr.upper), "tpr_lower": np.asarray(tpr.lower),
            "method": t.method}
    fig, ax = _figure()
    ax.plot(a, a, ":", color="grey", label="random guess")
    ax.plot(a, data["tpr_upper"], label=f"TPR upper bound (proven, {t.method})")
    ax.plot(a, data["tpr_lower"], "--", label="TPR reached by some attack")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(fig, ax, out_path, "false-positive rate α", "true-positive rate 1 − β(α)",
            "Membership-inference risk")
    return data


def _first_steps(m, steps: int):
    """The matrix mechanism ``m`` run for its first ``steps`` steps: the same strategy family
    at that length (a dense C: its leading square block, the outputs of those steps)."""
    import dataclasses
    from ..mechanisms.matrix_strategies import DenseStrategy
    s = m.strategy
    if isinstance(s, DenseStrategy):
        if not s.square_lower:
            raise ValueError("a dense strategy must be square and lower triangular to be cut "
                             "to its first steps")
        s = DenseStrategy(s.matrix[:steps, :steps])
    else:
        s = dataclasses.replace(s, n=steps)
    return dataclasses.replace(m, strategy=s)


def _dpsgd_rate(participation) -> float | None:
    """DP-SGD's Poisson rate at the matrix mechanism's expected batch: q / p for cyclic Poisson
    (Poisson is p = 1), 1 / bins for balls in bins, p / (1 + (b - 1) p) for b-min-separation
    sampling; None without sampling."""
    from ..mechanisms.participation import (BallsInBins, CyclicPoisson, FixedBins,
                                            MinSepSampling)
    if isinstance(participation, CyclicPoisson):
        return participation.sampling_prob / participation.partitions
    if isinstance(participation, MinSepSampling):
        # the stationary rate: a geometric wait of mean 1 / p after b - 1 blocked steps
        p, b = participation.sampling_prob, participation.min_separation
        return p / (1.0 + (b - 1) * p)
    if isinstance(participation, (BallsInBins, FixedBins)):
        return 1.0 / participation.bins
    return None


def matrix_vs_dpsgd(m, delta: float, steps=None, output=None) -> dict:
    """epsilon(delta) of a matrix mechanism ``m`` after its first T steps, for T in ``steps``
    (default: up to 12 log-spaced counts up to m.n), beside DP-SGD at equal noise (noise
    multiplier z / the largest column norm of C: the same z once C is scaled to column norm 1,
    jax_privacy's convention) and the same expected batch (Poisson rate q / p under cyclic Poisson,
    1 / bins under balls in bins; no DP-SGD curve without sampling). Each point is the upper bound
    of ``auto`` (which names its route). Returns {"steps", "delta", "epsilon": {"matrix", "dp-sgd"},
    "method": [the matrix's method at each T]}."""
    from ..core.sampling import Poisson
    from ..mechanisms.gaussian import Gaussian
    from ..mechanisms.matrix import MatrixMechanism
    parts = m.parts() if hasattr(m, "parts") else []
    if not isinstance(m, MatrixMechanism) and len(parts) == 1 and parts[0][1] == 1:
        m = parts[0][0]                      # a plan's one matrix stage
    if not isinstance(m, MatrixMechanism):
        raise ValueError("the matrix-vs-dpsgd figure is of a matrix mechanism (--strategy, or "
                         "mechanism = \"matrix\" in a plan)")
    out_path = check_output(output)
    d = V.delta(delta)
    if steps is None:
        grid = np.unique(np.round(np.geomspace(1, m.n, min(m.n, 12))).astype(np.int64))
    else:
        grid = np.unique(np.asarray(steps, dtype=np.int64))
        if grid.size == 0 or grid[0] < 1 or grid[-1] > m.n:
            raise ValueError(f"steps must be integers in [1, {m.n}]")
    rate = _dpsgd_rate(m.participation)
    # equal noise: C scaled to largest column norm 1 (jax_privacy's convention), so DP-SGD's
    # noise multiplier is z / max column norm
    z = m.noise_multiplier / math.sqrt(float(np.max(m.strategy.column_norms_sq())))
    eps = {"matrix": np.full(grid.size, np.nan), "dp-sgd": np.full(grid.size, np.nan)}
    used = []
    for j, t in enumerate(progress(grid, total=grid.size, label="matrix vs DP-SGD")):
        g = _first_steps(m, int(t)).epsilon(d)
        eps["matrix"][j] = g.epsilon
        used.append(g.method)
        if rate is not None:
            sgd = Gaussian(z).subsample(Poisson(rate)) * int(t)
            eps["dp-sgd"][j] = sgd.epsilon(d).epsilon
    labels = {"matrix": f"{m.strategy.describe()}, z {m.noise_multiplier:.3g}",
              "dp-sgd": f"DP-SGD, z {z:.3g}, rate {rate if rate is not None else 0:.3g}"}
    fig, ax = _figure()
    for key, e in eps.items():
        ok = np.isfinite(e)
        if ok.any():
            ax.plot(grid[ok], e[ok], marker=".", label=labels[key])
    ax.set_xscale("log")
    _finish(fig, ax, out_path, "steps", f"ε  (upper bound at δ = {fmt(d)})",
            "Matrix mechanism beside DP-SGD at equal noise")
    return {"steps": grid, "delta": d, "epsilon": eps, "method": used}
