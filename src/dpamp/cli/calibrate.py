"""``dpamp calibrate``: the smallest noise multiplier, the most steps/epochs, the largest sample
rate/batch size for a target (epsilon, delta) (see :mod:`dpamp.accounting.calibrate`).

    dpamp calibrate noise-multiplier --epsilon 3 --delta 1e-5 --batch-size 256 \\
                                     --dataset-size 60000 --epochs 60 [--method pld]
    dpamp calibrate steps       --epsilon 3 --delta 1e-5 --noise-multiplier 1.1 --sample-rate 0.01
    dpamp calibrate epochs      --epsilon 3 --delta 1e-5 --noise-multiplier 1.1 \\
                                --batch-size 256 --dataset-size 60000 [--sampler without-replacement]
    dpamp calibrate sample-rate --epsilon 3 --delta 1e-5 --noise-multiplier 1.1 --steps 10000
    dpamp calibrate batch-size  --epsilon 3 --delta 1e-5 --noise-multiplier 1.1 --steps 10000 \\
                                --dataset-size 60000

The words are those of ``dpamp epsilon`` (cli/_args.py): the sampler (default Poisson at rate
B/N) sets the relation and the sensitivity of the clipped sum (1 add/remove, 2 substitution);
``--epochs`` is ceil(E N / B) steps. ``sigma`` and ``rate`` are the older names of
``noise-multiplier`` and ``sample-rate`` (same meaning); ``batch`` meant a batch drawn without
replacement and is an error that says what to write now. Several ``--epsilon`` values calibrate
each in turn (a progress bar shows on a terminal).
"""
from __future__ import annotations

import json
from typing import Callable

WHAT = ("noise-multiplier", "steps", "epochs", "sample-rate", "batch-size", "sigma", "rate",
        "batch")
_SAME = {"sigma": "noise-multiplier", "rate": "sample-rate"}


def _sampling(args, what):
    """(sampler or None, per-step scheme or None) from the flags; for what the search varies
    (the rate, the batch size) only the sampler."""
    from ..core import samplers
    from ..core.sampling import Poisson
    sized = args.batch_size is not None or args.dataset_size is not None
    rate = args.sample_rate if args.sample_rate is not None else args.poisson
    if args.sampler is not None:
        smp = None if args.sampler == "none" else samplers.sampler(args.sampler)
    else:
        smp = samplers.sampler(samplers.DEFAULT_SAMPLER) \
            if sized or rate is not None or what in ("sample-rate", "batch-size") else None
    if getattr(args, "max_batch_size", None) is not None and \
            (smp is None or "max_batch_size" not in smp.extra):
        raise ValueError("--max-batch-size is a word of --sampler truncated-poisson")
    if what in ("sample-rate", "batch-size"):
        if rate is not None or args.batch_size is not None:
            raise ValueError(f"calibrate {what} searches the sampling: do not give "
                             "--sample-rate or --batch-size")
        return smp, None
    if smp is None:
        if sized or rate is not None:
            raise ValueError("--batch-size / --dataset-size / --sample-rate need a sampler "
                             "(not --sampler none)")
        return None, None
    if rate is not None:
        if sized:
            raise ValueError("give either --sample-rate or --batch-size + --dataset-size")
        if not smp.rate_alone:
            raise ValueError(f"sampler {smp.name!r} takes --batch-size and --dataset-size, "
                             "not a rate")
        return smp, Poisson(rate)
    if args.batch_size is None or args.dataset_size is None:
        raise ValueError(f"sampler {smp.name!r} needs --batch-size and --dataset-size"
                         + (" (or --sample-rate)" if smp.rate_alone else ""))
    extra = {k: getattr(args, k, None) for k in smp.extra}
    for k, v in extra.items():
        if v is None:
            raise ValueError(f"sampler {smp.name!r} needs --{k.replace('_', '-')}")
    return smp, smp.scheme(args.batch_size, args.dataset_size, **extra)


def _noise(args, need: bool):
    z = args.noise_multiplier if args.noise_multiplier is not None else args.sigma
    if need and z is None:
        raise ValueError(f"calibrate {args.what} needs --noise-multiplier")
    if not need and z is not None:
        raise ValueError(f"calibrate {args.what} searches the noise multiplier: do not give "
                         "--noise-multiplier")
    return z


def cmd_calibrate(args):
    import dpamp as dp
    from ..accounting import calibrate as C
    from ..core import samplers
    from ..core.relations import ADD_REMOVE
    from ..core.sampling import clip_sensitivity
    if args.what == "batch":
        raise ValueError("calibrate batch is no longer accepted: it searched a batch drawn "
                         "without replacement (substitution, sensitivity 2). Write calibrate "
                         "batch-size (Poisson, expected batch size, add/remove), and add "
                         "--sampler without-replacement for the old meaning")
    what = _SAME.get(args.what, args.what)
    args.what = what
    if getattr(args, "strategy", None) is not None:
        return _calibrate_matrix(args, what)
    smp, scheme = _sampling(args, what)
    relation = ADD_REMOVE if smp is None else smp.relation
    sens = args.sensitivity if args.sensitivity is not None else clip_sensitivity(relation)
    if args.sigma is not None and args.sensitivity is None and relation is not ADD_REMOVE:
        raise ValueError("--sigma: under substitution give --sensitivity too (a record clipped "
                         "to norm C moves a sum by 2C), or give --noise-multiplier (noise "
                         "relative to the clipping norm; the sensitivity then follows from the "
                         "relation)")
    common = dict(delta=args.delta, method=args.method, sensitivity=sens,
                  family=dp.Laplace if args.laplace else None)
    if args.tol is not None:
        common["tol"] = args.tol
    length = args.steps is not None or args.epochs is not None
    fn: Callable[..., C.Calibration]    # sigma, steps, epochs or rate: different signatures
    if what == "noise-multiplier":
        _noise(args, need=False)
        fn = C.sigma
        # count gives runs of the sampled mechanism (epochs for an epoch sampler), calibrate
        # takes steps: runs x steps per run
        runs = samplers.count(args.steps, args.epochs, scheme, steps_name="--steps",
                              epochs_name="--epochs")
        common.update(sampling=scheme, steps=runs * samplers.steps_per_run(scheme))
    elif what in ("steps", "epochs"):
        if length:
            raise ValueError(f"calibrate {what} searches the length of the run: do not give "
                             "--steps or --epochs")
        fn = C.steps if what == "steps" else C.epochs
        common.update(sigma=_noise(args, need=True), sampling=scheme)
    else:
        if args.epochs is not None:
            raise ValueError(f"calibrate {what} needs --steps (epochs depend on the rate)")
        if args.steps is None:
            raise ValueError(f"calibrate {what} needs --steps")
        fn = C.rate
        common.update(sigma=_noise(args, need=True), steps=args.steps)
        if what == "batch-size":
            if args.dataset_size is None:
                raise ValueError("calibrate batch-size needs --dataset-size")
            common.update(population=args.dataset_size, scheme=smp.name.replace("-", "_"))
        elif smp is not None and not smp.rate_alone:
            raise ValueError(f"calibrate sample-rate is for the Poisson sampler; for "
                             f"{smp.name!r} calibrate batch-size with --dataset-size")
    results = C.sweep(fn, "epsilon", args.epsilon, **common)
    assumed = {"sampler": "none" if smp is None else smp.name, "relation": relation.value,
               "sensitivity": sens, "delta": args.delta}
    if args.json:
        from ._args import inputs
        given = inputs(args, calibrate=what, epsilon=args.epsilon, delta=args.delta,
                       method=args.method)
        out = [{**r.as_dict(), "inputs": given, "assumed": assumed} for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return
    for r in results:
        print(r)
    print(f"assumed: sampler {assumed['sampler']}, relation "
          f"{'add/remove' if relation is ADD_REMOVE else 'substitution'}, sensitivity "
          f"{sens:g} ({'Laplace scale' if args.laplace else 'Gaussian noise'} relative to it)")


def _calibrate_matrix(args, what):
    """The noise multiplier of a matrix mechanism (``--strategy``) for each target epsilon:
    the plan is one run of the mechanism, and epsilon decreases in the noise multiplier."""
    from ..accounting import calibrate as C
    from ._args import build_stage, describe, inputs
    if what != "noise-multiplier":
        raise ValueError(f"calibrate {what} is not offered for a matrix mechanism "
                         "(--strategy); calibrate noise-multiplier")
    _noise(args, need=False)
    args.noise_multiplier = 1.0                  # a placeholder: the search varies it
    stage = build_stage(args)
    mech = stage.step
    common = dict(delta=args.delta, method=args.method, steps=1,
                  family=lambda z, **_: mech.with_noise_multiplier(z))
    if args.tol is not None:
        common["tol"] = args.tol
    import dataclasses
    results = [dataclasses.replace(r, steps=mech.n)
               for r in C.sweep(C.sigma, "epsilon", args.epsilon, **common)]
    args.noise_multiplier = None
    if args.json:
        given = inputs(args, calibrate=what, epsilon=args.epsilon, delta=args.delta,
                       method=args.method)
        out = [{**r.as_dict(), "inputs": given, "assumed": dict(stage.assumed)}
               for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return
    for r in results:   # sigma is the noise multiplier here (rounded up as sigma)
        print(str(r).replace("sigma = ", "noise multiplier = ", 1))
    print("assumed: " + describe(stage).replace("noise multiplier 1, ", "", 1))


def add_parser(subparsers) -> None:
    from ._args import add_plan_args, delta_type, epsilon_type
    p = subparsers.add_parser("calibrate", help="smallest noise multiplier / most steps or "
                                                "epochs / largest rate or batch size for a "
                                                "target (epsilon, delta)")
    p.add_argument("what", choices=WHAT, help="the parameter to calibrate (sigma and rate are "
                                              "the older names of noise-multiplier and "
                                              "sample-rate)")
    p.add_argument("--epsilon", type=epsilon_type, nargs="+", required=True,
                   help="target epsilon (several values: one calibration each)")
    p.add_argument("--delta", type=delta_type, required=True, help="target delta")
    add_plan_args(p)
    p.add_argument("--laplace", action="store_true",
                   help="Laplace noise (the noise multiplier is its scale) instead of Gaussian")
    p.set_defaults(func=cmd_calibrate)
