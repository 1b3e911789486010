"""The privacy frontier of a sweep: the figure of ``dpamp plot frontier results.jsonl``.

One panel per target found in the rows (needs the ``plot`` extra, matplotlib, imported when a
figure is drawn):

| target    | x axis                        | y axis                      | one line per            |
|-----------|-------------------------------|-----------------------------|-------------------------|
| "epsilon" | epochs (steps if some row has none) | epsilon, upper bound at delta | noise multiplier, sampling, delta, method |
| "delta"   | epochs (or steps)             | delta, upper bound (log)    | noise multiplier, sampling, epsilon, method |
| "sigma"   | target epsilon                | calibrated noise multiplier | sampling, epochs (or steps), delta, method |
| "epochs"  | target epsilon                | calibrated epochs           | noise multiplier, sampling, delta, method |

Rows with an error are left out. The legend names what differs between the lines; what all
lines share goes in the panel's title. Returns the data drawn, and writes ``output`` (PNG, SVG
or PDF) all-or-nothing.
"""
from __future__ import annotations

import os

import numpy as np

from .plot import check_output, _save

__all__ = ["frontier", "PANELS"]

_RATE = ("sampler", "batch_size", "dataset_size", "sample_rate")
_COMMON = ("method", "tol")
#: target -> (x column, y column, y label, columns that tell the lines apart, log y)
PANELS: dict[str, tuple[str, str, str, tuple[str, ...], bool]] = {
    "epsilon": ("epochs", "epsilon_upper", "ε  (upper bound)",
                ("noise_multiplier", *_RATE, "delta", *_COMMON), False),
    "delta": ("epochs", "delta_upper", "δ  (upper bound)",
              ("noise_multiplier", *_RATE, "epsilon", *_COMMON), True),
    "sigma": ("epsilon", "noise_multiplier", "calibrated noise multiplier",
              (*_RATE, "epochs", "delta", *_COMMON), False),
    "epochs": ("epsilon", "epochs", "calibrated epochs",
               ("noise_multiplier", *_RATE, "delta", *_COMMON), False),
}
_SHORT = {"noise_multiplier": "σ", "sample_rate": "q", "batch_size": "B", "dataset_size": "N",
          "delta": "δ", "epsilon": "ε", "epochs": "epochs", "steps": "steps", "sampler": "",
          "method": "", "tol": "tol"}
_TITLES = {"epsilon": "ε against training length", "delta": "δ against training length",
           "sigma": "noise needed for a target ε", "epochs": "epochs allowed by a target ε"}


def _fmt(key, v) -> str:
    text = f"{v:.4g}" if isinstance(v, float) else str(v)
    return f"{_SHORT[key]}={text}" if _SHORT.get(key, key) else text


def _rows(rows) -> list[dict]:
    if isinstance(rows, (str, os.PathLike)):
        from .results import latest_rows, read_results
        return list(latest_rows(read_results(rows)).values())
    return list(rows)


def _panel(target, rows) -> dict | None:
    xcol, ycol, ylabel, by, logy = PANELS[target]
    mine = [r for r in rows if r.get("target") == target and not r.get("error")
            and r.get(ycol) is not None]
    if not mine:
        return None
    if xcol == "epochs" and any(r.get("epochs") is None for r in mine):
        xcol = "steps"
    if target == "sigma" and any(r.get("epochs") is None for r in mine):
        by = tuple("steps" if k == "epochs" else k for k in by)
    if all(r.get("batch_size") is not None for r in mine):  # the rate follows from them
        by = tuple(k for k in by if k != "sample_rate")
    mine = [r for r in mine if r.get(xcol) is not None]
    groups: dict = {}
    for r in mine:
        groups.setdefault(tuple(r.get(k) for k in by), []).append(r)
    varying = [i for i in range(len(by)) if len({g[i] for g in groups}) > 1]
    first = next(iter(groups))
    title = ", ".join(_fmt(by[i], first[i]) for i in range(len(by))
                      if i not in varying and first[i] is not None)
    series = {}
    for gkey in sorted(groups, key=lambda g: tuple((v is None, 0 if v is None else v)
                                                   for v in g)):
        pts = sorted((float(r[xcol]), float(r[ycol])) for r in groups[gkey])
        label = ", ".join(_fmt(by[i], gkey[i]) for i in varying if gkey[i] is not None)
        series[label or ycol] = {"x": np.array([p[0] for p in pts]),
                                 "y": np.array([p[1] for p in pts])}
    return {"target": target, "x": xcol, "y": ycol, "ylabel": ylabel, "log_y": logy,
            "title": title, "series": series}


def frontier(rows, output=None, target: str | None = None) -> dict:
    """Draw the frontier of a sweep's rows (a results file's path, a
    :class:`~dpamp.io.sweep.SweepResult` or any list of row dicts): one panel per
    target (or only ``target``). Returns {"panels": [{"target", "x", "y", "series": {label:
    {"x": array, "y": array}}, ...}]}."""
    out_path = check_output(output)
    rows = _rows(rows)
    targets = list(PANELS) if target is None else [target]
    if target is not None and target not in PANELS:
        raise ValueError(f"target must be one of {', '.join(PANELS)} (got {target!r})")
    panels = [p for p in (_panel(t, rows) for t in targets) if p is not None]
    if not panels:
        raise ValueError("no row to draw: every row has an error, or none has the target "
                         "asked for")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ValueError("plotting needs matplotlib: pip install 'dpamp[plot]'") from None
    fig = Figure(figsize=(6.4 * len(panels), 4.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, p in zip(axes, panels):
        xs = np.concatenate([s["x"] for s in p["series"].values()])
        for label, s in p["series"].items():
            ax.plot(s["x"], s["y"], marker="o", markersize=3, label=label)
        if xs.size and xs.min() > 0 and xs.max() / xs.min() > 20:
            ax.set_xscale("log")
        if p["log_y"]:
            ax.set_yscale("log")
        xlabel = {"epochs": "epochs", "steps": "steps", "epsilon": "target ε"}[p["x"]]
        ax.set_xlabel(xlabel)
        ax.set_ylabel(p["ylabel"])
        heading = _TITLES[p["target"]]
        ax.set_title(heading + (f"\n{p['title']}" if p["title"] else ""), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if len(p["series"]) > 1:
            ax.legend(fontsize=7, ncol=1 + len(p["series"]) // 12)
    _save(fig, out_path)
    return {"panels": panels}
