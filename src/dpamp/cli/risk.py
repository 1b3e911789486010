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
    from ..io.report import risk_assumed
    return risk_assumed(mech)


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
    from ..io.report import risk_lines
    print("\n".join(risk_lines(s, _assumed(mech))) + f"\n({seconds * 1e3:.0f} ms)")


def add_parser(sub) -> None:
    p = sub.add_parser("risk", help="attack TPR at given FPRs, advantage and GDP mu "
                                    "(trade-off curve; docs/risk.md)")
    add_plan_args(p)
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1],
                   help="false-positive rates (default 0.001 0.01 0.1)")
    p.set_defaults(func=cmd_risk)
