"""``dpamp epsilon`` and ``dpamp delta``: one query of one plan.

    dpamp epsilon --sigma 1.1 --poisson 0.0042667 --steps 14062 --delta 1e-5 [--method rdp] [--json]
    dpamp delta   --sigma 1.1 --batch 256 --population 60000 --steps 14062 --epsilon 2.0
"""
from __future__ import annotations

import json
import time

from ._args import add_plan_args, build_mechanism, options


def _print_guarantee(g, as_json: bool, seconds: float):
    if as_json:
        d = g.as_dict()
        d["seconds"] = seconds
        print(json.dumps(d))
    else:
        from ..core._rounding import round_down, round_up
        low = "" if g.lower is None else f"  lower bound {round_down(g.lower, 6)}"
        print(f"epsilon {round_up(g.epsilon, 6)}  delta {round_up(g.delta, 6)}{low}  "
              f"method {g.method}  ({seconds * 1e3:.2f} ms)")


def cmd_epsilon(args):
    mech = build_mechanism(args)
    t0 = time.perf_counter()
    g = mech.epsilon(args.delta, method=args.method, **options(args))
    _print_guarantee(g, args.json, time.perf_counter() - t0)


def cmd_delta(args):
    mech = build_mechanism(args)
    t0 = time.perf_counter()
    g = mech.delta(args.epsilon, method=args.method, **options(args))
    _print_guarantee(g, args.json, time.perf_counter() - t0)


def add_parser(sub) -> None:
    p = sub.add_parser("epsilon", help="epsilon for a target delta")
    add_plan_args(p)
    p.add_argument("--delta", type=float, required=True)
    p.set_defaults(func=cmd_epsilon)
    p = sub.add_parser("delta", help="delta for a target epsilon")
    add_plan_args(p)
    p.add_argument("--epsilon", type=float, required=True)
    p.set_defaults(func=cmd_delta)
