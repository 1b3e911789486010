"""Privacy reports: a plain-text table, JSON for machines, and a Markdown block for a paper.

Every format lists, for each applicable accounting method, the proven upper bound on epsilon,
the proven lower bound where the method has one, the time taken and the theorem it rests on.
The headline guarantee is the smallest upper bound (each one is proven, so their minimum is)
and the largest lower bound.

Printed numbers are rounded *outwards*: an upper bound is rounded up and a lower bound down at
the printed precision, so a number copied from a report into a paper is still proven.
"""
from __future__ import annotations

import json
from ..core.rounding import round_down, round_up
from ..core.guarantee import Guarantee

__all__ = ["text", "markdown", "as_json", "best", "round_up", "round_down",
           "describe_mechanism"]


def best(rows):
    """(smallest upper bound Guarantee, largest lower bound or None) over the rows."""
    gs = [g for _, g, _ in rows if isinstance(g, Guarantee)]
    if not gs:
        return None, None
    top = min(gs, key=lambda g: g.epsilon)
    lows = [g.lower for g in gs if g.lower is not None]
    return top, (max(lows) if lows else None)


def describe_mechanism(m) -> str:
    """A short human description of one mechanism: its family's words (falls back to its
    repr)."""
    from ..mechanisms.family import describe
    return describe(m)


def _stage_rows(plan=None, mechanism=None):
    """[(name, mechanism, sampling, steps, relation)] for the parameter table."""
    if plan is not None:
        out = []
        for s in plan.stages:
            d = s.describe()
            out.append((s.name, d["mechanism"], d["sampling"], d["steps"], d["relation"]))
        return out
    rel = mechanism.relation.words
    out = []
    for i, (m, c) in enumerate(mechanism.parts(), start=1):
        desc = describe_mechanism(m)
        mech, _, samp = desc.partition(", on a ")
        out.append((f"part {i}", mech, samp or "none", f"{c} steps", rel))
    return out


def _header(plan):
    if plan is not None:
        return plan.title or "privacy plan"
    return "The mechanism below"


def _d(x: float) -> str:
    """delta as written by people: 1e-5, not 1e-05 (the one format, core.rounding.fmt)."""
    from ..core.rounding import fmt
    return fmt(x)


def text(rows, delta: float, plan=None, mechanism=None) -> str:
    """The plain-text report: the parameters, then one line per method."""
    lines = ["dpamp privacy report"]
    lines.append(f"plan: {_header(plan)}")
    for name, mech, samp, steps, rel in _stage_rows(plan, mechanism):
        lines.append(f"  {name}: {mech}; sampling {samp}; {steps}; {rel}")
    lines.append(f"delta: {_d(delta)}")
    lines.append(f"{'method':14s} {'epsilon':>10s} {'lower':>10s} {'time':>10s}  source")
    for name, g, s in rows:
        if isinstance(g, str):
            lines.append(f"{name:14s} {'n/a':>10s} {'':>10s} {s * 1e3:8.2f}ms  {g}")
            continue
        low = "" if g.lower is None else round_down(g.lower, 6)
        lines.append(f"{name:14s} {round_up(g.epsilon, 6):>10s} {low:>10s} "
                     f"{s * 1e3:8.2f}ms  {g.source}")
    top, low = best(rows)
    if top is not None:
        lo = "" if low is None else f"; true epsilon >= {round_down(low, 6)}"
        lines.append(f"best: ({round_up(top.epsilon, 6)}, {_d(delta)})-DP by {top.method}{lo}")
        lines += [f"  {name}: tol not met: {g.tol_missed}" for name, g, _ in rows
                  if not isinstance(g, str) and g.tol_missed]
    if plan is not None:
        lines += risk_section(plan.mechanism)
        lines += _samplers_lines(plan, delta)
    return "\n".join(lines)


def _samplers(plan, delta):
    """The same DP-SGD run under every sampler (io/samplers_compare.py), or None."""
    from .samplers_compare import for_plan
    return for_plan(plan, delta)


def _samplers_lines(plan, delta) -> list[str]:
    from .samplers_compare import lines
    res = _samplers(plan, delta)
    return [] if res is None else lines(res)


def result_dicts(rows) -> list:
    """Each (method, Guarantee or error message, seconds) row as a JSON-ready dict."""
    return [{"method": name, "error": g, "seconds": s} if isinstance(g, str)
            else dict(g.as_dict(), seconds=s) for name, g, s in rows]


def as_json(rows, delta: float, plan=None, mechanism=None) -> str:
    """One JSON object: the plan (or mechanism), delta, the best bounds and every row."""
    results = result_dicts(rows)
    top, low = best(rows)
    out: dict
    out = {"delta": delta,
           "best": None if top is None else {"epsilon": top.as_dict()["epsilon"],
                                             "method": top.method, "lower": low},
           "results": results}
    if plan is not None:
        out = {"plan": plan.as_dict(), **out, "risk": _risk_summary(plan.mechanism),
               "samplers": _samplers(plan, delta)}
    else:
        from .serialize import to_dict
        try:
            out = {"mechanism": to_dict(mechanism), **out}
        except ValueError:
            out = {"mechanism": repr(mechanism), **out}
    return json.dumps(out)


def markdown(rows, delta: float, plan=None, mechanism=None) -> str:
    """A Markdown block to paste into a paper: a sentence stating the guarantee, the
    parameters, and every method's bounds with its theorem."""
    from .. import __version__
    top, low = best(rows)
    stage_rows = _stage_rows(plan, mechanism)
    rel = stage_rows[0][4]
    out = ["#### Privacy guarantee", ""]
    if top is None:
        out.append("No accounting method gave a guarantee for this plan.")
    else:
        lo = ("" if low is None else
              f" The analysis cannot certify less: the true ε at this δ is at least "
              f"{round_down(low)}.")
        out.append(
            f"{_header(plan)} satisfies (ε, δ)-differential privacy with "
            f"**ε = {round_up(top.epsilon)}** and **δ = {_d(delta)}** under the {rel} "
            f"neighbouring relation. ε is a proven upper bound computed with dpamp "
            f"{__version__} by the `{top.method}` method ({top.source}).{lo}")
    out += ["", "| stage | mechanism | sampling | count | relation |",
            "|---|---|---|---|---|"]
    for r in stage_rows:
        out.append("| " + " | ".join(r) + " |")
    out += ["", "| method | ε (upper bound) | lower bound | δ | source |", "|---|---|---|---|---|"]
    for name, g, _ in rows:
        if isinstance(g, str):
            out.append(f"| {name} | n/a | | {_d(delta)} | {g} |")
        else:
            low_s = "–" if g.lower is None else round_down(g.lower)
            out.append(f"| {name} | {round_up(g.epsilon)} | {low_s} | {_d(delta)} | {g.source} |")
    missed = [f"- {name}: tol not met: {g.tol_missed}" for name, g, _ in rows
              if not isinstance(g, str) and g.tol_missed]
    out += [""] + missed if missed else []
    if plan is not None:
        out += risk_markdown(plan.mechanism)
        lines = _samplers_lines(plan, delta)
        if lines:
            out += ["", "#### The same run under other samplers", "", "```", *lines, "```"]
    return "\n".join(out)


# --- privacy risk (docs/risk.md) -------------------------------------------------------------

def risk_assumed(mech) -> list[str]:
    """One line per part: mechanism (with its sensitivity), sampling, count, relation."""
    rel = mech.relation.words

    from ..mechanisms.family import family_of

    def count(m, c) -> str:
        fam = family_of(m)
        # a matrix mechanism (c runs of n steps), the best of repeated runs: runs, not steps
        if fam is not None and (fam.whole_run or fam.name == "RepeatAndSelect"):
            return f"{c} run{'s' * (c != 1)}"
        scheme = getattr(m, "scheme", None)
        if getattr(scheme, "per_epoch", False):     # an epoch sampler: the part is an epoch
            t = int(getattr(scheme, "steps"))
            return f"{c} epoch{'s' * (c != 1)} ({c * t} steps)"
        return f"{c} step{'s' * (c != 1)}"
    return [f"{describe_mechanism(m)}; {count(m, c)}; {rel} neighbours" for m, c in mech.parts()]


def _risk_summary(mechanism):
    """:func:`dpamp.accounting.risk.summary`, or the reason it is not available (a string)."""
    from ..accounting import risk
    from ..core.errors import OutOfReach
    try:
        return risk.summary(mechanism)
    except (ValueError, NotImplementedError, OutOfReach, MemoryError) as e:
        return f"not available: {e}"


def risk_lines(s: dict, assumed: list[str]) -> list[str]:
    """The human lines of a risk summary, rounded outwards (upper bounds up, lower down)."""
    out = ["privacy risk (any membership-inference attack, any pair of neighbours)"]
    out += [f"  assumed: {a}" for a in assumed]
    out.append(f"  {'FPR':>8s}  {'TPR <=':>10s}  {'TPR reached':>11s}")
    for r in s["tpr_at_fpr"]:
        out.append(f"  {r['fpr']:>8g}  {round_up(r['tpr_upper'], 4):>10s}  "
                   f"{round_down(r['tpr_lower'], 4):>11s}")
    adv = s["advantage"]
    out.append(f"  advantage (max TPR - FPR) <= {round_up(adv['upper'], 4)} "
               f"(reached: {round_down(adv['lower'], 4)})")
    mu, mid = s["gdp_mu"], s["gdp_mu_range"]
    if mu["upper"] != float("inf"):
        out.append(f"  Gaussian DP: mu <= {round_up(mu['upper'], 6)} "
                   f"(no mu below {round_down(mu['lower'], 6)})")
    else:
        # over every FPR the extreme ones set the mu (the range line below leaves them out)
        need = f" (the extreme FPRs need mu >= {round_down(mu['lower'], 4)})" \
            if mu["lower"] > 0 else ""
        out.append(f"  Gaussian DP: no mu certified for every FPR{need}")
        if mid["upper"] != float("inf"):
            a, b = mid["fpr_range"]
            low = f" (no mu below {round_down(mid['lower'], 4)})" if mid["lower"] > 0 else ""
            out.append(f"  Gaussian DP for FPR in [{_d(a)}, 1 - {_d(float(f'{1 - b:.0e}'))}]: "
                       f"mu <= {round_up(mid['upper'], 4)}{low}")
    out.append(f"  method: {s['method']}" + (f"; {s['note']}" if s["note"] else ""))
    return out


def risk_section(mechanism) -> list[str]:
    """The privacy-risk lines of a plain-text report."""
    s = _risk_summary(mechanism)
    return [f"privacy risk: {s}"] if isinstance(s, str) else risk_lines(s, risk_assumed(mechanism))


def risk_markdown(mechanism) -> list[str]:
    """The privacy-risk block of a Markdown report."""
    s = _risk_summary(mechanism)
    out = ["", "#### Privacy risk", ""]
    if isinstance(s, str):
        return out + [f"Privacy risk: {s}."]
    adv = s["advantage"]
    out.append("Any membership-inference attack against any pair of neighbouring datasets has "
               "a true-positive rate (TPR) at most the bound below at each false-positive rate "
               "(FPR), from the trade-off curve of f-DP (Dong, Roth & Su, arXiv:1905.02383); "
               f"its advantage TPR − FPR is at most **{round_up(adv['upper'], 4)}**. The best "
               "attack on some pair of neighbours reaches the last column: no analysis can "
               "certify a bound below it.")
    out += ["", "| FPR | TPR (upper bound) | TPR reached |", "|---|---|---|"]
    for r in s["tpr_at_fpr"]:
        out.append(f"| {_d(r['fpr'])} | {round_up(r['tpr_upper'], 4)} | "
                   f"{round_down(r['tpr_lower'], 4)} |")
    return out
