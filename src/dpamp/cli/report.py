"""``dpamp report [PLAN.toml]``: every applicable method on a plan, as text, JSON or Markdown,
with an optional figure. The plan is a TOML file, or the flags of ``dpamp epsilon``
(``--noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5``),
or by default the built-in DP-SGD plan (``dpamp/data/default_plan.toml``: noise multiplier
1.1, Poisson rate 256/60000, 60 epochs = 14063 steps, delta 1e-5)."""
from __future__ import annotations

import sys


def _emit(text: str, output):
    """Print ``text``, or write it to ``output`` all-or-nothing (temporary file + rename)."""
    if output is None:
        print(text)
        return
    from ..io.files import atomic_write
    atomic_write(output, text + "\n")


def _plan(args):
    from ._args import build_stage, plan_given
    from ..io.plan import Plan, default_plan, load_plan
    if plan_given(args):
        if args.plan is not None:
            raise ValueError("give either PLAN.toml or the plan's flags (--noise-multiplier, "
                             "...), not both")
        delta = 1e-5 if args.delta is None else args.delta
        return Plan((build_stage(args),), delta, title="The plan below",
                    source="command line")
    if args.delta is not None:
        raise ValueError("--delta goes with the plan's flags; a plan file states its delta")
    return default_plan() if args.plan is None else load_plan(args.plan)


def cmd_report(args):
    from ..io import report
    # read and validate everything before computing or writing anything
    plan = _plan(args)
    from ..io.files import check_target
    if args.plot is not None:
        from ..io.plot import check_output
        check_target(check_output(args.plot))
    if args.output is not None:
        check_target(args.output)
    from ..accounting.compare import compare_rows
    options = {**plan.options, **({} if args.tol is None else {"tol": args.tol})}
    rows = compare_rows(plan.mechanism, plan.delta, plan.methods, **options)
    fmt = report.as_json if args.json else report.markdown if args.markdown else report.text
    _emit(fmt(rows, plan.delta, plan=plan), args.output)
    if args.plot is not None:
        from ..io.plot import epsilon_vs_steps
        methods = [n for n, g, _ in rows if not isinstance(g, str)]
        epsilon_vs_steps(plan, plan.delta, methods=methods or None,
                         output=args.plot, **options)
        note = f"figure: {args.plot} (epsilon against steps)"
        print(note, file=sys.stderr if (args.json or args.output) else sys.stdout)


def add_parser(sub) -> None:
    from ._args import add_plan_args, delta_type
    p = sub.add_parser("report", help="privacy report of a plan: a TOML file, the flags of "
                                      "`dpamp epsilon`, or the built-in DP-SGD plan "
                                      "(docs/plans.md)")
    p.add_argument("plan", nargs="?", default=None, metavar="PLAN.toml",
                   help="the plan file (default: the built-in DP-SGD plan)")
    add_plan_args(p, method=False, json=False)
    p.add_argument("--delta", type=delta_type, default=None,
                   help="delta, with the plan's flags (default 1e-5)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object")
    fmt.add_argument("--markdown", action="store_true",
                     help="a Markdown block to paste into a paper")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also write a figure of epsilon against steps (.png, .svg or .pdf)")
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the report to FILE instead of standard output")
    p.set_defaults(func=cmd_report)
