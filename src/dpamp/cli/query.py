"""``dpamp epsilon`` and ``dpamp delta``: one query of one plan.

    dpamp epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 \\
                  --delta 1e-5 [--sampler poisson] [--method rdp] [--json]
    dpamp delta   --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 \\
                  --epsilon 2.0 --sampler without-replacement

The answer is followed by what was assumed (mechanism and sensitivity, sampler and rate, steps
and epochs, relation, delta); ``--json`` prints the Guarantee's fields, the ``inputs`` as given
and the plan as read (``assumed``).
"""
from __future__ import annotations

import json
import time

from ._args import (add_plan_args, build_stage, delta_type, describe, epsilon_type, fmt_delta,
                    inputs, options)


def print_guarantee(g, args, stage, seconds: float, **query):
    if args.json:
        d = g.as_dict()
        d.update(query=g.query, seconds=seconds, inputs=inputs(args, **query),
                 assumed=dict(stage.assumed))
        print(json.dumps(d))
        return
    from ..core.rounding import round_down, round_up
    low = "" if g.lower is None else f"  lower bound {round_down(g.lower, 6)}"
    # the given value as given; the computed one rounded up (a weaker, still proven claim)
    delta = fmt_delta(g.delta) if g.query == "epsilon" else round_up(g.delta, 6)
    print(f"epsilon {round_up(g.epsilon, 6)}  delta {delta}{low}  "
          f"method {g.method}  ({seconds * 1e3:.2f} ms)")
    for line in g.explanation():      # a missed tol, why another method answered
        print(line)
    print(f"assumed: {describe(stage)}")


def cmd_epsilon(args):
    stage = build_stage(args)
    t0 = time.perf_counter()
    g = stage.mechanism.epsilon(args.delta, method=args.method, **options(args))
    print_guarantee(g, args, stage, time.perf_counter() - t0, delta=args.delta,
                    method=args.method)


def cmd_delta(args):
    stage = build_stage(args)
    t0 = time.perf_counter()
    g = stage.mechanism.delta(args.epsilon, method=args.method, **options(args))
    print_guarantee(g, args, stage, time.perf_counter() - t0, epsilon=args.epsilon,
                    method=args.method)


def add_parser(sub) -> None:
    p = sub.add_parser("epsilon", help="epsilon for a target delta")
    add_plan_args(p)
    p.add_argument("--delta", type=delta_type, required=True)
    p.set_defaults(func=cmd_epsilon)
    p = sub.add_parser("delta", help="delta for a target epsilon")
    add_plan_args(p)
    p.add_argument("--epsilon", type=epsilon_type, required=True)
    p.set_defaults(func=cmd_delta)
