"""``dpamp risk``: operational privacy risk of one plan (docs/risk.md): the largest
true-positive rate of any membership-inference attack at a few false-positive rates, the
membership advantage and the dominating Gaussian-DP mu, each a proven bracket.

    dpamp risk --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 \\
               [--sampler poisson] [--fpr 0.001 0.01 0.1] [--json]

Like every query command it states what it assumed (mechanism and sensitivity, sampler and
rate, steps and epochs, relation); ``--json`` carries the inputs as given and the plan as read.
"""
from __future__ import annotations

import json
import time

from ._args import add_plan_args, build_stage, describe, inputs


def cmd_risk(args):
    from ..accounting import risk
    if args.tol is not None:
        raise ValueError("dpamp risk has no --tol: its curves are refined to a fixed accuracy")
    if args.method not in risk.METHODS:
        raise ValueError(f"--method for risk must be one of {', '.join(risk.METHODS)} "
                         f"(got {args.method!r})")
    stage = build_stage(args)
    mech = stage.mechanism
    t0 = time.perf_counter()
    s = risk.summary(mech, args.fpr, method=args.method)
    seconds = time.perf_counter() - t0
    if args.json:
        from ..io.serialize import to_dict
        s = {"mechanism": to_dict(mech), "inputs": inputs(args, fpr=args.fpr,
                                                          method=args.method),
             "assumed": dict(stage.assumed), **s, "seconds": seconds}
        print(json.dumps(s))
        return
    from ..io.report import risk_lines
    print("\n".join(risk_lines(s, [describe(stage)])) + f"\n({seconds * 1e3:.0f} ms)")


def add_parser(sub) -> None:
    p = sub.add_parser("risk", help="attack TPR at given FPRs, advantage and GDP mu "
                                    "(trade-off curve; docs/risk.md)")
    add_plan_args(p)
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1],
                   help="false-positive rates (default 0.001 0.01 0.1)")
    p.set_defaults(func=cmd_risk)
