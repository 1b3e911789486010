"""``dpamp calibrate``: the smallest noise, the most steps/epochs, the largest rate/batch for a
target (epsilon, delta) (see :mod:`dpamp.accounting.calibrate`).

    dpamp calibrate sigma  --epsilon 3 --delta 1e-5 --poisson 0.01 --steps 10000 [--method pld]
    dpamp calibrate steps  --epsilon 3 --delta 1e-5 --sigma 1.1 --poisson 0.01
    dpamp calibrate epochs --epsilon 3 --delta 1e-5 --sigma 1.1 --batch 256 --population 60000
    dpamp calibrate rate   --epsilon 3 --delta 1e-5 --sigma 1.1 --steps 10000
    dpamp calibrate batch  --epsilon 3 --delta 1e-5 --sigma 1.1 --steps 10000 --population 60000

Several ``--epsilon`` values calibrate each in turn (a progress bar shows on a terminal).
Sensitivity defaults as in ``dpamp epsilon``: 1 (add/remove) for Poisson or no sampling, 2
(substitution) for ``--batch``/``--population`` sampling without replacement.
"""
from __future__ import annotations

import json

WHAT = ("sigma", "steps", "epochs", "rate", "batch")


def _sampling(args):
    import dpamp as dp
    if args.batch is not None:
        if args.population is None:
            raise ValueError("--batch needs --population (sampling without replacement)")
        return dp.WithoutReplacement(args.batch, args.population)
    if args.poisson is not None:
        return dp.Poisson(args.poisson)
    return None


def cmd_calibrate(args):
    import dpamp as dp
    from ..accounting import calibrate as C
    family = dp.Laplace if args.laplace else None
    wor = args.what == "batch" or args.batch is not None
    from ..core.sampling import clip_sensitivity
    sens = args.sensitivity if args.sensitivity is not None else \
        clip_sensitivity(dp.SUBSTITUTION if wor else dp.ADD_REMOVE)
    common = dict(delta=args.delta, method=args.method, sensitivity=sens, family=family)
    if args.tol is not None:
        common["tol"] = args.tol
    if args.what != "sigma" and args.epochs is not None:
        raise ValueError(f"calibrate {args.what} does not take --epochs"
                         + (" (use --steps)" if args.what in ("rate", "batch") else ""))
    if args.what in ("steps", "epochs") and args.steps is not None:
        raise ValueError(f"calibrate {args.what} searches the number of steps: do not give "
                         "--steps")
    if args.what in ("sigma", "steps", "epochs"):
        if args.population is not None and args.batch is None:
            raise ValueError("--population goes with --batch (sampling without replacement)")
        if args.sigma is not None and args.what == "sigma":
            raise ValueError("calibrate sigma searches sigma: do not give --sigma")
        common["sampling"] = _sampling(args)
    if args.what == "sigma":
        fn = C.sigma
        common.update(steps=args.steps, epochs=args.epochs)
    elif args.what in ("steps", "epochs"):
        fn = C.steps if args.what == "steps" else C.epochs
        common.update(sigma=_need(args, "sigma"))
    else:
        fn = C.rate
        if args.poisson is not None or args.batch is not None:
            raise ValueError(f"calibrate {args.what} searches the sampling: do not give "
                             "--poisson or --batch")
        common.update(sigma=_need(args, "sigma"), steps=_need(args, "steps"),
                      population=args.population)
        if args.what == "batch":
            if args.population is None:
                raise ValueError("calibrate batch needs --population (the dataset size)")
            common["scheme"] = "without_replacement"
    results = C.sweep(fn, "epsilon", args.epsilon, **common)
    if args.json:
        out = [r.as_dict() for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return
    for r in results:
        print(r)


def _need(args, name):
    v = getattr(args, name)
    if v is None:
        raise ValueError(f"calibrate {args.what} needs --{name}")
    return v


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="smallest sigma / most steps / largest rate "
                                                "for a target (epsilon, delta)")
    p.add_argument("what", choices=WHAT, help="the parameter to calibrate")
    p.add_argument("--epsilon", type=float, nargs="+", required=True,
                   help="target epsilon (several values: one calibration each)")
    p.add_argument("--delta", type=float, required=True, help="target delta")
    p.add_argument("--sigma", type=float, default=None, help="noise (for steps/epochs/rate/"
                                                             "batch)")
    p.add_argument("--sensitivity", type=float, default=None)
    p.add_argument("--laplace", action="store_true",
                   help="Laplace noise (sigma is its scale) instead of Gaussian")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--poisson", type=float, metavar="Q", help="Poisson sampling rate")
    g.add_argument("--batch", type=int, metavar="M", help="batch size, sampling without "
                   "replacement (needs --population)")
    p.add_argument("--population", type=int, metavar="N", help="dataset size")
    c = p.add_mutually_exclusive_group()
    c.add_argument("--steps", type=int, default=None)
    c.add_argument("--epochs", type=float, default=None)
    p.add_argument("--method", default="auto")
    p.add_argument("--tol", type=float, default=None, help="tolerance option of the method "
                                                           "(PLD)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate)
