"""Arguments shared by the commands that describe one plan on the command line (epsilon, delta,
compare): a Gaussian step, its sampling, the number of steps, the method."""
from __future__ import annotations

import argparse


def add_plan_args(p: argparse.ArgumentParser):
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
    from ..core.sampling import clip_sensitivity
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
    from ..core import _validate as V
    steps = V.integer("steps", args.steps, low=1)
    return step * steps


def options(args):
    return {} if args.tol is None else {"tol": args.tol}
