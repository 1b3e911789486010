"""The ``dpamp`` command line.

    dpamp epsilon --sigma 1.1 --poisson 0.0042667 --steps 14062 --delta 1e-5 [--method rdp] [--json]
    dpamp delta   --sigma 1.1 --batch 256 --population 60000 --steps 14062 --epsilon 2.0
    dpamp report            # the default DP-SGD plan, epsilon by every available method

Errors in the input are printed on one line and the exit status is 2.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time

#: modules that add sub-commands: each defines add_parser(subparsers) -> None
SUBCOMMAND_MODULES = ("dpamp.cli_compare", "dpamp.cli_calibrate", "dpamp.cli_plot")

#: The embedded default plan: DP-SGD on MNIST-sized data (60 epochs of batch 256 out of 60000).
DEFAULT_PLAN = {"sigma": 1.1, "poisson": 256 / 60_000, "steps": 14_062, "delta": 1e-5}


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
    if args.batch is not None or args.population is not None:
        if args.batch is None or args.population is None:
            raise ValueError("--batch and --population go together (sampling without replacement)")
        sens = 2.0 if args.sensitivity is None else args.sensitivity
        base = dp.Gaussian(args.sigma, sensitivity=sens, relation=dp.SUBSTITUTION)
        step = base.subsample(dp.WithoutReplacement(args.batch, args.population))
    else:
        sens = 1.0 if args.sensitivity is None else args.sensitivity
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
        low = "" if g.lower is None else f"  lower bound {g.lower:.6g}"
        print(f"epsilon {g.epsilon:.6g}  delta {g.delta:.6g}{low}  method {g.method}"
              f"  ({seconds * 1e3:.2f} ms)")


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


def report_rows(mech, delta):
    """[(method, Guarantee or error text, seconds)] for every method that applies."""
    from . import methods
    rows = []
    for name in methods.available(mech):
        t0 = time.perf_counter()
        try:
            g = mech.epsilon(delta, method=name)
        except (ValueError, NotImplementedError) as e:
            g = str(e)
        rows.append((name, g, time.perf_counter() - t0))
    return rows


def cmd_report(args):
    import dpamp as dp
    plan = dict(DEFAULT_PLAN)
    step = dp.Gaussian(plan["sigma"]).subsample(dp.Poisson(plan["poisson"]))
    mech = step * plan["steps"]
    rows = report_rows(mech, plan["delta"])
    if args.json:
        print(json.dumps({"plan": plan, "results": [
            dict(g.as_dict(), seconds=s) if not isinstance(g, str) else
            {"method": n, "error": g, "seconds": s} for n, g, s in rows]}))
        return
    print("dpamp privacy report")
    print(f"plan: DP-SGD, Gaussian noise multiplier {plan['sigma']}, Poisson rate "
          f"{plan['poisson']:.6g} (256/60000), {plan['steps']} steps, delta {plan['delta']:g}")
    print(f"{'method':14s} {'epsilon':>10s} {'lower':>10s} {'time':>10s}  source")
    for name, g, s in rows:
        if isinstance(g, str):
            print(f"{name:14s} {'n/a':>10s} {'':>10s} {s * 1e3:8.2f}ms  {g}")
            continue
        low = "" if g.lower is None else f"{g.lower:.6g}"
        print(f"{name:14s} {g.epsilon:10.6g} {low:>10s} {s * 1e3:8.2f}ms  {g.source}")


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
    p = sub.add_parser("report", help="privacy report for the built-in DP-SGD plan")
    p.add_argument("--json", action="store_true")
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
_ = math
