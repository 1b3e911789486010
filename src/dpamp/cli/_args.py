"""The plan on the command line, in DP-SGD's words (the same as in TOML plans and ``dp.dpsgd``):

    --noise-multiplier Z   noise std / clipping norm (the sensitivity follows from the sampler)
    --batch-size B --dataset-size N   the sampler's batch (Poisson: rate B/N)
    --sample-rate Q        a Poisson rate alone (``--poisson Q`` is the same)
    --sampler NAME         poisson (default), without-replacement, with-replacement,
                           allocation (random allocation), shuffle, truncated-poisson
                           (core/samplers.py's table)
    --max-batch-size B     truncated-poisson: the largest batch kept
    --epochs E | --steps T the length of the run (epochs: ceil(E N / B) steps)
    --records-per-user M   user-level DP: a user holds at most M records (docs/user-level.md)
    --user-sampling        users, not records, are drawn at the rate (with --records-per-user)
    --user-clipping        each user's summed contribution is clipped, not each record

``--sigma S`` is the Gaussian's standard deviation with ``--sensitivity`` (default 1 under
add/remove, where it equals the noise multiplier; under substitution the sensitivity must be
given). The words ``--batch`` and ``--population`` meant sampling without replacement with the
substitution relation, not the Poisson sampling that ``--batch-size`` means: they are errors
that say what to write now. Every word is read by :func:`dpamp.io.plan.parse_stage`, the reader
of a plan file's stage, so a word means one thing everywhere.
"""
from __future__ import annotations

import argparse
import math

#: flag -> the plan file's key
_WORDS = {"noise_multiplier": "noise_multiplier", "sigma": "sigma",
          "sensitivity": "sensitivity", "sampler": "sampler", "batch_size": "batch_size",
          "dataset_size": "dataset_size", "sample_rate": "sample_rate", "poisson": "sample_rate",
          "steps": "steps", "epochs": "epochs", "max_batch_size": "max_batch_size",
          "records_per_user": "records_per_user", "user_sampling": "user_sampling",
          "user_clipping": "user_clipping"}

#: the matrix mechanism's flags (docs/matrix-mechanisms.md): flag -> the plan file's key
_MATRIX_WORDS = {k: k for k in ("strategy", "bands", "coeffs", "buffer_decays", "output_scales",
                                "matrix_file", "participation", "participations",
                                "min_separation", "partitions", "sampling_prob", "bins")}
_LISTS = ("coeffs", "buffer_decays", "output_scales")

_OLD = ("{flag} is no longer accepted: --batch M --population N meant M records drawn without "
        "replacement (substitution relation, sensitivity 2), while --batch-size B "
        "--dataset-size N means Poisson sampling at rate B/N (add/remove, sensitivity 1), as in "
        "opacus, dp-accounting and TF-Privacy. Write --batch-size and --dataset-size, and add "
        "--sampler without-replacement for the old meaning")


class _Retired(argparse.Action):
    """An old word whose meaning changed: an error saying what to write now."""

    def __call__(self, parser, namespace, values, option_string=None):
        def refuse(args):  # run in place of the command: one line on standard error, status 2
            raise ValueError(_OLD.format(flag=option_string))
        namespace.func = refuse


def _sampler_help() -> str:
    """--sampler's help: every name of the samplers table with the relation it is under (the
    table is the one source of the names, so a sampler added there is listed here)."""
    from ..core import samplers
    names = ", ".join(f"{s.name} ({s.relation.words})" for s in samplers.SAMPLERS.values())
    return (f"how the batches are drawn: {names}; default {samplers.DEFAULT_SAMPLER} at "
            "rate B/N. allocation and shuffle are epoch samplers (t = floor(N/B) batches "
            "an epoch)")


def delta_type(text: str) -> float:
    """``--delta``: a number in [0, 1) (0: the pure epsilon, as in plans and Python), checked
    when the command line is read, so the error names the flag and comes before any heavy
    import."""
    return _number(text, lambda v: 0.0 <= v < 1.0, "in [0, 1)")


def epsilon_type(text: str) -> float:
    """``--epsilon``: a finite number >= 0, checked when the command line is read."""
    return _number(text, lambda v: 0.0 <= v < math.inf, "a finite number >= 0")


def _number(text: str, ok, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number {what} (got {text!r})") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"must be {what} (got {text})")
    return v


def add_plan_args(p: argparse.ArgumentParser, *, method: bool = True, json: bool = True):
    g = p.add_argument_group("the plan (DP-SGD's words; docs/plans.md)")
    noise = g.add_mutually_exclusive_group()
    noise.add_argument("--noise-multiplier", type=float, metavar="Z",
                       help="Gaussian noise std / clipping norm; the sensitivity of the clipped "
                            "sum follows from the sampler (1 add/remove, 2 substitution)")
    noise.add_argument("--sigma", type=float, metavar="S",
                       help="Gaussian noise std, with --sensitivity (default 1 under "
                            "add/remove, where it is the noise multiplier)")
    g.add_argument("--sensitivity", type=float, default=None,
                   help="L2 sensitivity for --sigma, under the sampler's relation")
    g.add_argument("--sampler", default=None, metavar="NAME", help=_sampler_help())
    g.add_argument("--batch-size", type=int, metavar="B", help="batch size (Poisson: expected)")
    g.add_argument("--dataset-size", type=int, metavar="N", help="dataset size")
    g.add_argument("--max-batch-size", type=int, metavar="B",
                   help="the largest batch kept (sampler truncated-poisson: a larger Poisson "
                        "sample is cut to a uniformly random subset of B records)")
    rate = g.add_mutually_exclusive_group()
    rate.add_argument("--sample-rate", type=float, metavar="Q",
                      help="Poisson sampling rate, instead of --batch-size/--dataset-size")
    rate.add_argument("--poisson", type=float, metavar="Q", help="the same as --sample-rate")
    g.add_argument("--steps", type=int, default=None, metavar="T", help="number of steps")
    g.add_argument("--epochs", type=float, default=None, metavar="E",
                   help="passes over the dataset: ceil(E x N / B) steps")
    for old in ("--batch", "--population"):
        g.add_argument(old, action=_Retired, help=argparse.SUPPRESS)
    _add_user_args(p)
    _add_matrix_args(p)
    if method:
        from ..accounting.registry import METHOD_NAMES
        p.add_argument("--method", default="auto", choices=METHOD_NAMES, metavar="METHOD",
                       help="accounting method (default: auto): " + ", ".join(METHOD_NAMES))
    p.add_argument("--tol", type=float, default=None,
                   help="target width of the [lower, epsilon] bracket (PLD method)")
    if json:
        p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_matrix_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("correlated noise: a matrix mechanism (docs/matrix-mechanisms.md)")
    g.add_argument("--strategy", choices=("banded", "toeplitz", "blt", "tree", "dense"),
                   help="the strategy matrix C of --steps steps: banded (Toeplitz, --bands; "
                        "default coefficients: the banded square root), toeplitz (default: the "
                        "square root of the prefix sums), blt (--buffer-decays, "
                        "--output-scales), tree (binary tree), dense (--matrix-file)")
    g.add_argument("--bands", type=int, metavar="B", help="bands of a banded strategy")
    g.add_argument("--coeffs", metavar="C0,C1,...", help="Toeplitz coefficients c_0, c_1, ...")
    g.add_argument("--buffer-decays", metavar="T1,T2,...", help="a BLT's buffer decays theta")
    g.add_argument("--output-scales", metavar="W1,W2,...", help="a BLT's output scales omega")
    g.add_argument("--matrix-file", metavar="FILE.npy", help="a dense C (columns = steps)")
    g.add_argument("--participation",
                   choices=("single-epoch", "min-separation", "poisson", "cyclic-poisson",
                            "balls-in-bins", "fixed-bins", "min-sep-sampling"),
                   help="how records enter the steps (default single-epoch; poisson is "
                        "cyclic-poisson with one group)")
    g.add_argument("--participations", type=int, metavar="K",
                   help="min-separation: at most K steps per record")
    g.add_argument("--min-separation", type=int, metavar="B",
                   help="min-separation, min-sep-sampling: any two of a record's steps at "
                        "least B apart")
    g.add_argument("--partitions", type=int, metavar="P",
                   help="cyclic-poisson: groups of records cycled over the steps (default 1)")
    g.add_argument("--sampling-prob", type=float, metavar="Q",
                   help="poisson, cyclic-poisson: Poisson rate of each step (within its "
                        "group); "
                        "min-sep-sampling: the rate of an eligible record")
    g.add_argument("--bins", type=int, metavar="B",
                   help="balls-in-bins: steps per epoch (a fresh draw each); fixed-bins: the "
                        "bins, one drawn per record for the whole run (jax_privacy's)")


def _add_user_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("user-level DP: the privacy unit is a user (docs/user-level.md)")
    g.add_argument("--records-per-user", type=int, metavar="M",
                   help="a user holds at most M records; the guarantee is for adding or "
                        "removing one whole user")
    g.add_argument("--user-sampling", action="store_true", default=None,
                   help="users, not records, are drawn at the sampling rate")
    g.add_argument("--user-clipping", action="store_true", default=None,
                   help="each user's summed contribution is clipped to the clipping norm "
                        "(not each record)")


def _list(text: str, flag: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--{flag.replace('_', '-')} must be numbers separated by commas "
                         f"(got {text!r})") from None


def given(args) -> dict:
    """The plan flags given, as the plan file's keys."""
    out = {}
    for flag, key in {**_WORDS, **_MATRIX_WORDS}.items():
        v = getattr(args, flag, None)
        if v is not None:
            out[key] = _list(v, flag) if flag in _LISTS else v
    return out


def plan_given(args) -> bool:
    return bool(given(args))


def build_stage(args):
    """The :class:`~dpamp.io.plan.Stage` the flags describe (a Gaussian step)."""
    from ..io.plan import parse_stage
    words = given(args)
    if "noise_multiplier" not in words and "sigma" not in words:
        raise ValueError("give --noise-multiplier Z (or --sigma S with --sensitivity)")
    kind = "matrix" if "strategy" in words else "gaussian"
    if kind == "gaussian":
        for key in _MATRIX_WORDS:
            if key in words:
                flag = "--" + key.replace("_", "-")
                raise ValueError(f"{flag} describes a matrix mechanism: give --strategy too")
    return parse_stage({"mechanism": kind, **words}, origin="", cli=True)


def build_mechanism(args):
    return build_stage(args).mechanism


def inputs(args, **query) -> dict:
    """The inputs as given (plan flags by their plan-file key, then the query's own)."""
    d = given(args)
    d.update({k: v for k, v in query.items() if v is not None})
    if getattr(args, "tol", None) is not None:
        d["tol"] = args.tol
    return d


def describe(stage, delta=None) -> str:
    """One line stating what was assumed: mechanism and sensitivity, sampler and rate, steps
    (epochs), relation, delta."""
    d = stage.describe()
    text = (f"{d['mechanism']}; sampler {d['sampling']}; {d['steps']}; "
            f"relation {d['relation']}")
    return text if delta is None else f"{text}; delta {fmt_delta(delta)}"


def fmt_delta(x: float) -> str:
    """delta as people write it: 1e-5, not 1e-05 (the one format, core.rounding.fmt)."""
    from ..core.rounding import fmt
    return fmt(x)


def options(args):
    return {} if args.tol is None else {"tol": args.tol}
