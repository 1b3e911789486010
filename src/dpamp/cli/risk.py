"""``dpamp risk``: operational privacy risk of one plan (docs/risk.md): the largest
true-positive rate of any membership-inference attack at a few false-positive rates, the
membership advantage and the dominating Gaussian-DP mu, each a proven bracket.

    dpamp risk --sigma 1.1 --poisson 0.0042667 --steps 14062 [--fpr 0.001 0.01 0.1] [--json]
"""
from __future__ import annotations

import json
import time

from ._args import add_plan_args, build_mechanism


def _assumed(mech) -> list[str]:
    """One line per part: mechanism, sampling, count, relation, sensitivity."""
    from ..io.report import describe_mechanism
    rel = "add/remove" if str(mech.relation) == "add_remove" else "substitution"
    return [f"{describe_mechanism(m)}; {c} steps; {rel} neighbours" for m, c in mech.parts()]


def cmd_risk(args):
    from ..accounting import risk
    if args.tol is not None:
        raise ValueError("dpamp risk has no --tol: its curves are refined to a fixed accuracy")
    if args.method not in risk.METHODS:
        raise ValueError(f"--method for risk must be one of {', '.join(risk.METHODS)} "
                         f"(got {args.method!r})")
    mech = build_mechanism(args)
    t0 = time.perf_counter()
    s = risk.summary(mech, args.fpr, method=args.method)
    seconds = time.perf_counter() - t0
    if args.json:
        from ..io.serialize import to_dict
        s = {"mechanism": to_dict(mech), "assumed": _assumed(mech), **s, "seconds": seconds}
        print(json.dumps(s))
        return
    print("\n".join(text(s, _assumed(mech))) + f"\n({seconds * 1e3:.0f} ms)")


def text(s: dict, assumed: list[str]) -> list[str]:
    """The human lines of a risk summary (also used by the report). Bounds are rounded
    outwards: an upper bound up, a lower bound down."""
    from ..core._rounding import round_down, round_up
    out = ["privacy risk (any membership-inference attack, any pair of neighbours)"]
    out += [f"  assumed: {a}" for a in assumed]
    out.append(f"  {'FPR':>8s}  {'TPR <=':>10s}  {'TPR reached':>11s}")
    for r in s["tpr_at_fpr"]:
        out.append(f"  {r['fpr']:>8g}  {round_up(r['tpr_upper'], 4):>10s}  "
                   f"{round_down(r['tpr_lower'], 4):>11s}")
    adv = s["advantage"]
    out.append(f"  advantage (max TPR - FPR) <= {round_up(adv['upper'], 4)} "
               f"(reached: {round_down(adv['lower'], 4)})")
    mu = s["gdp_mu"]
    if mu["upper"] == float("inf"):
        mid = s["gdp_mu_range"]
        a, b = mid["fpr_range"]
        out.append(f"  Gaussian DP: no mu certified for every FPR (needs at least "
                   f"{round_down(mu['lower'], 4)})")
        if mid["upper"] != float("inf"):
            out.append(f"  Gaussian DP for FPR in [{a:g}, 1 - {1 - b:.0e}]: mu <= "
                       f"{round_up(mid['upper'], 4)} (no mu below {round_down(mid['lower'], 4)})")
    else:
        out.append(f"  Gaussian DP: mu <= {round_up(mu['upper'], 6)} "
                   f"(no mu below {round_down(mu['lower'], 6)})")
    out.append(f"  method: {s['method']}" + (f"; {s['note']}" if s["note"] else ""))
    return out


def add_parser(sub) -> None:
    p = sub.add_parser("risk", help="attack TPR at given FPRs, advantage and GDP mu "
                                    "(trade-off curve; docs/risk.md)")
    add_plan_args(p)
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1],
                   help="false-positive rates (default 0.001 0.01 0.1)")
    p.set_defaults(func=cmd_risk)
