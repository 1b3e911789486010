"""The same DP-SGD run under each sampler people use, side by side: Poisson sampling at rate
B/N (what opacus, dp-accounting and TF-Privacy report), random allocation (each record in one
random batch of the t = N // B batches of an epoch: balls in bins; Feldman & Shenfeld, arXiv
2502.08202, 2602.17284) and shuffled fixed-size batches (each record once per epoch; upper
bound: one substitution per epoch, without amplification; lower bound: Chua et al., ICML
2024). Each is a proven bracket on epsilon at delta, per number of epochs, under the relation
the sampler gives (add/remove for Poisson and allocation, substitution for shuffling), with the
clipped sum's sensitivity (1 x C add/remove, 2 x C substitution).

    dp.io.samplers_compare.compare(noise_multiplier=1, batch_size=64, dataset_size=60000,
                                   epochs=[1, 2, 5, 10], delta=1e-6)

``dpamp plot samplers`` draws it (``plot``); reports of a DP-SGD plan include it.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..core import validate as V

__all__ = ["SAMPLERS", "compare", "plot"]

#: the samplers compared, in the order drawn
SAMPLERS = ("poisson", "allocation", "shuffle")


def _run(noise_multiplier: float, batch_size: int, dataset_size: int, sampler: str,
         epochs: int):
    from .dpsgd import dpsgd_stage
    return dpsgd_stage(noise_multiplier=noise_multiplier, batch_size=batch_size,
                       dataset_size=dataset_size, epochs=epochs, sampler=sampler)


def compare(noise_multiplier: float, batch_size: int, dataset_size: int,
            epochs: int | Sequence[int], delta: float, samplers: Sequence[str] = SAMPLERS,
            method: str = "auto", announce: bool = False, **options: Any) -> dict:
    """For each sampler and each number of epochs, the proven bracket on epsilon(delta):
    ``{"epochs": [...], "delta": delta, "samplers": {name: {"upper": [...], "lower": [...],
    "relation": ..., "sensitivity": ..., "steps_per_epoch": ...}}}`` (a lower end is NaN where
    none is known). A sampler that cannot answer has NaN there and its error in "error".
    ``announce``: show each sampler as it starts (a bar on a terminal, else a line on
    standard error: core.progress.stages), for the long figure."""
    from ..core.progress import stages
    d = V.delta(delta, allow_zero=True)     # delta 0: pure epsilon, as everywhere else
    es = [V.integer("epochs", e, low=1) for e in np.atleast_1d(epochs).tolist()]
    out: dict[str, Any] = {"epochs": es, "delta": d, "samplers": {}}
    for name in (stages(samplers, "samplers") if announce else samplers):
        row: dict[str, Any] = {"upper": [], "lower": [], "error": None}
        for e in es:
            try:
                stage = _run(noise_multiplier, batch_size, dataset_size, name, e)
                g = stage.mechanism.epsilon(d, method=method, **options)
                row["upper"].append(float(g.epsilon))
                row["lower"].append(math.nan if g.lower is None else float(g.lower))
                row.update(relation=stage.assumed["relation"],
                           sensitivity=stage.assumed["sensitivity"],
                           steps_per_epoch=stage.assumed.get(
                               "steps_per_epoch", round(dataset_size / batch_size, 6)))
            except (ValueError, NotImplementedError) as err:
                row["upper"].append(math.nan)
                row["lower"].append(math.nan)
                row["error"] = str(err)
        out["samplers"][name] = row
    return out


def lines(result: dict) -> list[str]:
    """The comparison as text lines (uppers rounded up, lowers down)."""
    from ..core.rounding import round_down, round_up
    from ..core.rounding import fmt
    out = [f"epsilon at delta {fmt(result['delta'])} by sampler (proven brackets):",
           f"  {'epochs':>6}  " + "  ".join(f"{n:>24}" for n in result["samplers"])]
    for j, e in enumerate(result["epochs"]):
        cells = []
        for row in result["samplers"].values():
            up, lo = row["upper"][j], row["lower"][j]
            low = "?" if math.isnan(lo) else round_down(lo, 4)
            cells.append("-" if math.isnan(up) else f"[{low}, {round_up(up, 4)}]")
        out.append(f"  {e:>6}  " + "  ".join(f"{c:>24}" for c in cells))
    for n, row in result["samplers"].items():
        if "relation" in row:
            out.append(f"  {n}: {row['relation'].replace('_', '/')} relation, sensitivity "
                       f"{row['sensitivity']:g} x C, {row['steps_per_epoch']} steps per epoch")
    return out


def plot(noise_multiplier: float, batch_size: int, dataset_size: int, epochs: int,
         delta: float, output=None, method: str = "auto", **options: Any) -> dict:
    """epsilon against epochs (1 .. ``epochs``, about 12 log-spaced counts) for each sampler:
    the upper bound as a line, the proven bracket shaded (so the gap between the samplers is
    seen, not read). Returns :func:`compare`'s result; saves to ``output`` if given."""
    from ..core.rounding import fmt
    from .plot import check_output, _figure, _finish
    out_path = check_output(output)
    E = V.integer("epochs", epochs, low=1)
    grid = np.unique(np.round(np.geomspace(1, E, min(E, 12))).astype(int)).tolist()
    res = compare(noise_multiplier, batch_size, dataset_size, grid, delta, method=method,
                  announce=True, **options)
    fig, ax = _figure()
    x = np.asarray(res["epochs"], dtype=float)
    for name, row in res["samplers"].items():
        up, lo = np.asarray(row["upper"]), np.asarray(row["lower"])
        ok = np.isfinite(up)
        if not ok.any():
            continue
        label = {"poisson": f"Poisson, rate {batch_size}/{dataset_size}",
                 "allocation": "random allocation (balls in bins)",
                 "shuffle": "shuffled batches"}.get(name, name)
        low_ok = ok & np.isfinite(lo)
        # one short legend entry a sampler, the reading in the title (six entries covered the
        # shuffle's curve)
        line, = ax.plot(x[ok], up[ok], marker=".", label=label)
        if low_ok.any():
            ax.fill_between(x[low_ok], lo[low_ok], up[low_ok], color=line.get_color(),
                            alpha=0.25)
            ax.plot(x[low_ok], lo[low_ok], ls="--", color=line.get_color(), lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(fig, ax, out_path, "epochs", f"epsilon at delta = {fmt(res['delta'])}",
            f"DP-SGD, noise multiplier {noise_multiplier:g}, batch {batch_size} of "
            f"{dataset_size}\n(lines: proven upper bounds; bands: down to proven lower bounds)")
    return res


def for_plan(plan, delta: float) -> dict | None:
    """:func:`compare` at the plan's epochs when the plan is one DP-SGD stage (a Gaussian with
    a noise multiplier on batches of B of N records, any of :data:`SAMPLERS`), else None: how
    the same run fares under the other samplers, for reports. Not for a user-level stage
    (``records_per_user``): the comparison accounts per record."""
    if len(plan.stages) != 1 or plan.stages[0].assumed.get("unit") == "user":
        return None
    st = plan.stages[0]
    p, a = st.params, st.assumed
    # a run repeated a random number of times (repeat_and_select) is not the DP-SGD run the
    # table compares: its samplers' brackets would be read as the plan's own
    if p.get("mechanism") != "gaussian" or "noise_multiplier" not in p or \
            "batch_size" not in a or a.get("sampler") not in SAMPLERS or "sensitivity" in p or \
            "repeat_and_select" in p:
        return None
    epochs = max(1, math.ceil(p.get("epochs", a["epochs"])))
    return compare(p["noise_multiplier"], a["batch_size"], a["dataset_size"], [epochs], delta)
