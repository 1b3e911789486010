"""The ``dpamp`` command line.

    dpamp epsilon --sigma 1.1 --poisson 0.0042667 --steps 14062 --delta 1e-5 [--method rdp] [--json]
    dpamp delta   --sigma 1.1 --batch 256 --population 60000 --steps 14062 --epsilon 2.0
    dpamp report [PLAN.toml] [--json | --markdown] [--plot FILE.png]
                            # a plan (default: the built-in DP-SGD plan), every method

Errors in the input are printed on one line and the exit status is 2.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time

#: modules that add sub-commands: each defines add_parser(subparsers) -> None
SUBCOMMAND_MODULES = ("dpamp.cli_compare", "dpamp.cli_calibrate", "dpamp.cli_plot",
                      "dpamp.cli_bernoulli")

#: The built-in plan is the TOML file dpamp/data/default_plan.toml (see dpamp.plan.default_plan):
#: DP-SGD, noise multiplier 1.1, Poisson rate 256/60000, 60 epochs = 14062 steps, delta 1e-5.


def _add_plan_args(p: argparse.ArgumentParser):
    p.add_argument("--sigma", type=float, required=True, help="Gaussian noise multiplier")
    p.add_argument("--sensitivity", type=float, default=None,
                   help="L2 sensitivity under the relation the sampling needs (default 1 for "
                        "Poisson/no sampling, add/remove; 2 for --batch/--population, "
                        "substitution: replacing a record clipped to norm 1 moves a sum by 2)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--poisson", type=float, metavar="Q", help="Poisson sampling rate in (0, 1]")
    g.add_argument("--batch", type=int, metavar="M", help="batch size, sampling without "
                   "replacement (needs --population)")
    p.add_argument("--population", type=int, metavar="N", help="dataset size for --batch")
    p.add_argument("--steps", type=int, default=1, help="number of steps (compositions)")
    p.add_argument("--method", default="auto", help="accounting method (default: auto); "
                   "see `dpamp methods`")
    p.add_argument("--tol", type=float, default=None,
                   help="target width of the [lower, epsilon] bracket (PLD method)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def build_mechanism(args):
    import dpamp as dp
    from .sampling import clip_sensitivity
    if args.batch is not None or args.population is not None:
        if args.batch is None or args.population is None:
            raise ValueError("--batch and --population go together (sampling without replacement)")
        sens = clip_sensitivity(dp.SUBSTITUTION) if args.sensitivity is None else \
            args.sensitivity
        base = dp.Gaussian(args.sigma, sensitivity=sens, relation=dp.SUBSTITUTION)
        step = base.subsample(dp.WithoutReplacement(args.batch, args.population))
    else:
        sens = clip_sensitivity(dp.ADD_REMOVE) if args.sensitivity is None else \
            args.sensitivity
        base = dp.Gaussian(args.sigma, sensitivity=sens)
        step = base if args.poisson is None else base.subsample(dp.Poisson(args.poisson))
    from . import _validate as V
    steps = V.integer("steps", args.steps, low=1)
    return step * steps


def _options(args):
    return {} if args.tol is None else {"tol": args.tol}


def _print_guarantee(g, as_json: bool, seconds: float):
    if as_json:
        d = g.as_dict()
        d["seconds"] = seconds
        print(json.dumps(d))
    else:
        from ._rounding import round_down, round_up
        low = "" if g.lower is None else f"  lower bound {round_down(g.lower, 6)}"
        print(f"epsilon {round_up(g.epsilon, 6)}  delta {round_up(g.delta, 6)}{low}  "
              f"method {g.method}  ({seconds * 1e3:.2f} ms)")


def cmd_epsilon(args):
    mech = build_mechanism(args)
    t0 = time.perf_counter()
    g = mech.epsilon(args.delta, method=args.method, **_options(args))
    _print_guarantee(g, args.json, time.perf_counter() - t0)


def cmd_delta(args):
    mech = build_mechanism(args)
    t0 = time.perf_counter()
    g = mech.delta(args.epsilon, method=args.method, **_options(args))
    _print_guarantee(g, args.json, time.perf_counter() - t0)


def cmd_methods(args):
    from . import methods
    methods._load_plugins()
    for name in methods.available():
        print(f"{name:14s} {methods._REGISTRY[name].summary}")


def _emit(text: str, output):
    """Print ``text``, or write it to ``output`` all-or-nothing (temporary file + rename)."""
    if output is None:
        print(text)
        return
    from ._io import atomic_write
    atomic_write(output, text + "\n")


def cmd_report(args):
    from . import report
    from .plan import default_plan, load_plan
    # read and validate everything before computing or writing anything
    plan = default_plan() if args.plan is None else load_plan(args.plan)
    from ._io import check_target
    if args.plot is not None:
        from .plot import _check_output
        check_target(_check_output(args.plot))
    if args.output is not None:
        check_target(args.output)
    from .compare import compare_rows
    rows = compare_rows(plan.mechanism, plan.delta, plan.methods, **plan.options)
    fmt = report.as_json if args.json else report.markdown if args.markdown else report.text
    _emit(fmt(rows, plan.delta, plan=plan), args.output)
    if args.plot is not None:
        from .plot import epsilon_vs_steps
        methods = [n for n, g, _ in rows if not isinstance(g, str)]
        epsilon_vs_steps(plan, plan.delta, methods=methods or None,
                         output=args.plot, **plan.options)
        note = f"figure: {args.plot} (epsilon against steps)"
        print(note, file=sys.stderr if (args.json or args.output) else sys.stdout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpamp", description="Differential-privacy accounting")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("epsilon", help="epsilon for a target delta")
    _add_plan_args(p)
    p.add_argument("--delta", type=float, required=True)
    p.set_defaults(func=cmd_epsilon)
    p = sub.add_parser("delta", help="delta for a target epsilon")
    _add_plan_args(p)
    p.add_argument("--epsilon", type=float, required=True)
    p.set_defaults(func=cmd_delta)
    p = sub.add_parser("report", help="privacy report of a TOML plan (default: the built-in "
                                      "DP-SGD plan); format: docs/plans.md")
    p.add_argument("plan", nargs="?", default=None, metavar="PLAN.toml",
                   help="the plan file (default: the built-in DP-SGD plan)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object")
    fmt.add_argument("--markdown", action="store_true",
                     help="a Markdown block to paste into a paper")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also write a figure of epsilon against steps (.png, .svg or .pdf)")
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the report to FILE instead of standard output")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("methods", help="list accounting methods")
    p.set_defaults(func=cmd_methods)
    for mod in SUBCOMMAND_MODULES:
        try:
            importlib.import_module(mod).add_parser(sub)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ValueError, NotImplementedError) as e:
        print(f"dpamp: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
