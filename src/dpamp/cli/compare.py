"""``dpamp compare``: the plan of ``dpamp epsilon`` accounted by every applicable method.

    dpamp compare --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 \\
                  --delta 1e-5 [--json|--markdown]

Every format states the plan as read (sampler, relation, sensitivity, steps and epochs);
``--json`` gives the ``inputs`` as given, the plan as read (``assumed``), the mechanism as
structured JSON (``dp.to_json``'s form, read back by ``dp.from_json``) and every method's row.
"""
from __future__ import annotations

import json


def cmd_compare(args):
    from ._args import build_stage, describe, inputs, options as _options
    from ..accounting.compare import compare_rows
    from ..io.plan import Plan
    stage = build_stage(args)
    mech = stage.mechanism
    rows = compare_rows(mech, args.delta, **_options(args))
    plan = Plan((stage,), args.delta, title="The plan below", source="command line")
    if args.markdown:
        from ..io.report import markdown
        print(markdown(rows, args.delta, plan=plan))
        return
    if args.json:
        from ..io.report import result_dicts
        from ..io.serialize import to_dict
        print(json.dumps({"inputs": inputs(args, delta=args.delta),
                          "assumed": dict(stage.assumed), "mechanism": to_dict(mech),
                          "delta": args.delta, "results": result_dicts(rows)}))
        return
    from ..core.rounding import round_down, round_up
    print(f"plan: {describe(stage, args.delta)}")
    print(f"{'method':14s} {'epsilon':>12s} {'lower':>12s} {'time':>11s}  source")
    for name, g, s in rows:
        if isinstance(g, str):
            print(f"{name:14s} {'n/a':>12s} {'':>12s} {s * 1e3:9.2f}ms  {g}")
            continue
        low = "" if g.lower is None else round_down(g.lower, 6)
        print(f"{name:14s} {round_up(g.epsilon, 6):>12s} {low:>12s} {s * 1e3:9.2f}ms  "
              f"{g.source}")
    for name, g, _ in rows:
        if not isinstance(g, str) and g.tol_missed:
            print(f"{name}: tol not met: {g.tol_missed}")


def add_parser(subparsers) -> None:
    from ._args import add_plan_args as _add_plan_args, delta_type
    p = subparsers.add_parser("compare", help="epsilon for a target delta by every method")
    _add_plan_args(p)  # --method is accepted for symmetry with `dpamp epsilon` and ignored
    p.add_argument("--delta", type=delta_type, required=True)
    p.add_argument("--markdown", action="store_true",
                   help="a Markdown block to paste into a paper (parameters, methods, theorems)")
    p.set_defaults(func=cmd_compare)
