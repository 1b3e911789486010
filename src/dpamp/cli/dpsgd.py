"""``dpamp dpsgd``: the guarantee of a DP-SGD run in its own words (``dp.dpsgd``).

    dpamp dpsgd --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 \\
                --delta 1e-5 [--sampler without-replacement] [--method rdp] [--json]

One sentence: the guarantee, its proven lower bound, and what was assumed (sampler, relation,
sensitivity, steps = epochs); ``--json`` gives the Guarantee's fields, the ``inputs`` and the
plan as read (``assumed``). The flags are those of ``dpamp epsilon`` (cli/_args.py).
"""
from __future__ import annotations

import json
import time


def cmd_dpsgd(args):
    from ._args import build_stage, fmt_delta, inputs, options
    from ..io.dpsgd import describe
    if args.noise_multiplier is None:
        raise ValueError("dpamp dpsgd needs --noise-multiplier Z (noise std / clipping norm)")
    stage = build_stage(args)
    t0 = time.perf_counter()
    g = stage.mechanism.epsilon(args.delta, method=args.method, **options(args))
    seconds = time.perf_counter() - t0
    if args.json:
        d = g.as_dict()
        d.update(query="epsilon", seconds=seconds,
                 inputs=inputs(args, delta=args.delta, method=args.method),
                 assumed=dict(stage.assumed))
        print(json.dumps(d))
        return
    from ..core.rounding import round_down, round_up
    low = "" if g.lower is None else f" (the true epsilon is at least {round_down(g.lower, 6)})"
    print(f"DP-SGD is ({round_up(g.epsilon, 6)}, {fmt_delta(args.delta)})-DP{low}, by {g.method} in "
          f"{seconds * 1e3:.0f} ms")
    for line in g.explanation():      # a missed tol, why another method answered
        print(line)
    print(f"assumed: {describe(stage)}")


def add_parser(sub) -> None:
    from ._args import add_plan_args, delta_type
    p = sub.add_parser("dpsgd", help="epsilon of a DP-SGD run: noise multiplier, batch size, "
                                     "dataset size, epochs, delta (like TF-Privacy's "
                                     "compute_dp_sgd_privacy)")
    add_plan_args(p)
    p.add_argument("--delta", type=delta_type, required=True)
    p.set_defaults(func=cmd_dpsgd)
