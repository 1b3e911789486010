"""``dpamp plot``: figures of a plan (needs the ``plot`` extra: matplotlib).

    dpamp plot epsilon-vs-steps --plan PLAN.toml -o eps.png
    dpamp plot epsilon-vs-steps --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 \\
                                --epochs 60 -o eps.png
    dpamp plot profile  --noise-multiplier 1.1 --sample-rate 0.0042667 --steps 14062 -o p.svg
    dpamp plot rdp      --noise-multiplier 1.1 --sample-rate 0.0042667 --steps 14062 -o rdp.png
    dpamp plot tradeoff --noise-multiplier 2 --steps 1 -o tradeoff.png
    dpamp plot frontier results.jsonl -o frontier.png   # a sweep's results (dpamp sweep)

The plan comes from ``--plan`` (a TOML plan, docs/plans.md) or from the flags of
``dpamp epsilon``. ``--json`` also prints the plotted data.
"""
from __future__ import annotations

import json
import math
import sys
from typing import Sequence

import numpy as np

KINDS = ("profile", "epsilon-vs-steps", "rdp", "tradeoff", "samplers", "matrix-vs-dpsgd")


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, float):
        return x if np.isfinite(x) else None
    if isinstance(x, (np.floating, np.integer)):
        return _jsonable(x.item())
    return x


def cmd_plot(args):
    if args.kind == "frontier":  # the figure of a sweep's results: dpamp.cli.sweep
        from .sweep import cmd_frontier
        return cmd_frontier(args)
    if args.results is not None:
        raise ValueError("a results file is for 'dpamp plot frontier RESULTS' only")
    from ..io.files import check_target
    from ._args import build_stage, describe, inputs, options as _options, plan_given
    from ..io.plot import check_output
    from ..io import plot
    out = check_target(check_output(args.output))
    options = _options(args)
    delta = args.delta
    if args.kind == "samplers":
        return _plot_samplers(args, out, options)
    if args.plan is not None:
        if plan_given(args):
            raise ValueError("give either --plan or the plan's flags (--noise-multiplier, ...), "
                             "not both")
        from ..io.plan import load_plan
        p = load_plan(args.plan)
        x = p.mechanism
        delta = p.delta if delta is None else delta
        options = {**p.options, **options}
        methods: Sequence[str] | None = p.methods
        stated = {"plan": p.as_dict()}
    else:
        if not plan_given(args):
            raise ValueError("give --plan PLAN.toml or the plan's flags (--noise-multiplier Z, "
                             "--batch-size B --dataset-size N, --epochs E or --steps T)")
        stage = build_stage(args)
        x = stage.mechanism
        methods = None
        stated = {"inputs": inputs(args), "assumed": dict(stage.assumed)}
        if not args.json:
            print(f"plan: {describe(stage)}", file=sys.stderr)
    delta = 1e-5 if delta is None else delta
    if args.methods:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.kind == "profile":
        data = plot.profile(x, method=args.method, output=out, **options)
    elif args.kind == "epsilon-vs-steps":
        data = plot.epsilon_vs_steps(p if args.plan is not None else x, delta,
                                     methods=methods, output=out, **options)
    elif args.kind == "rdp":
        data = plot.rdp(x, output=out)
    elif args.kind == "matrix-vs-dpsgd":
        data = plot.matrix_vs_dpsgd(x, delta, output=out)
    else:
        data = plot.tradeoff(x, method=args.method, output=out, **options)
    if args.json:  # the plotted data, and the plan it is of
        print(json.dumps(_jsonable({**data, **stated} if isinstance(data, dict) else data)))
    else:
        print(f"figure: {out} ({args.kind})", file=sys.stderr)


def _plot_samplers(args, out, options):
    """epsilon against epochs under Poisson, random allocation and shuffled batches
    (io/samplers_compare.py): needs the DP-SGD words, not a plan file."""
    from ..core import validate as V
    from ..io import samplers_compare
    missing = [f for f, v in (("--noise-multiplier", args.noise_multiplier),
                              ("--batch-size", args.batch_size),
                              ("--dataset-size", args.dataset_size), ("--epochs", args.epochs))
               if v is None]
    if missing or args.plan is not None or args.sampler is not None:
        raise ValueError("plot samplers draws one DP-SGD run under every sampler: give "
                         "--noise-multiplier, --batch-size, --dataset-size and --epochs (and "
                         f"no --plan or --sampler); missing: {', '.join(missing) or 'none'}")
    epochs = V.integer("--epochs", math.ceil(args.epochs), low=1)
    data = samplers_compare.plot(args.noise_multiplier, args.batch_size, args.dataset_size,
                                 epochs, 1e-5 if args.delta is None else args.delta,
                                 output=out, method=args.method, **options)
    if args.json:
        print(json.dumps(_jsonable(data)))
    else:
        print("\n".join(samplers_compare.lines(data)), flush=True)
        print(f"figure: {out} (samplers)", file=sys.stderr)


def add_parser(subparsers) -> None:
    from ._args import add_plan_args as _add_plan_args, delta_type
    p = subparsers.add_parser("plot", help="draw a figure of a plan (needs dpamp[plot])")
    p.add_argument("kind", choices=(*KINDS, "frontier"))  # frontier: a sweep's results
    p.add_argument("results", nargs="?", default=None, metavar="RESULTS",
                   help="frontier: the results file of `dpamp sweep` (.jsonl or .csv)")
    p.add_argument("--plan", metavar="PLAN.toml", default=None, help="a TOML plan")
    _add_plan_args(p)
    p.add_argument("--delta", type=delta_type, default=None,
                   help="delta for epsilon-vs-steps (default: the plan's, else 1e-5)")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods for epsilon-vs-steps (default: all)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the figure: FILE.png, FILE.svg or FILE.pdf")
    p.set_defaults(func=cmd_plot)
