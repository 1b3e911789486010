"""``dpamp report [PLAN.toml]``: every applicable method on a plan (default: the built-in DP-SGD
plan, ``dpamp/data/default_plan.toml``: noise multiplier 1.1, Poisson rate 256/60000, 60 epochs =
14062 steps, delta 1e-5), as text, JSON or Markdown, with an optional figure."""
from __future__ import annotations

import sys


def _emit(text: str, output):
    """Print ``text``, or write it to ``output`` all-or-nothing (temporary file + rename)."""
    if output is None:
        print(text)
        return
    from ..io._files import atomic_write
    atomic_write(output, text + "\n")


def cmd_report(args):
    from ..io import report
    from ..io.plan import default_plan, load_plan
    # read and validate everything before computing or writing anything
    plan = default_plan() if args.plan is None else load_plan(args.plan)
    from ..io._files import check_target
    if args.plot is not None:
        from ..io.plot import _check_output
        check_target(_check_output(args.plot))
    if args.output is not None:
        check_target(args.output)
    from ..accounting.compare import compare_rows
    rows = compare_rows(plan.mechanism, plan.delta, plan.methods, **plan.options)
    fmt = report.as_json if args.json else report.markdown if args.markdown else report.text
    _emit(fmt(rows, plan.delta, plan=plan), args.output)
    if args.plot is not None:
        from ..io.plot import epsilon_vs_steps
        methods = [n for n, g, _ in rows if not isinstance(g, str)]
        epsilon_vs_steps(plan, plan.delta, methods=methods or None,
                         output=args.plot, **plan.options)
        note = f"figure: {args.plot} (epsilon against steps)"
        print(note, file=sys.stderr if (args.json or args.output) else sys.stdout)


def add_parser(sub) -> None:
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
