"""``dpamp sweep``: a grid of plans (a TOML grid file, docs/sweeps.md) answered on a process
pool or a Dask cluster, each row appended to the results file as it finishes.

    dpamp sweep GRID.toml -o results.jsonl [--workers N] [--dask tcp://host:port]
    dpamp plot frontier results.jsonl -o frontier.png

Rerunning the same command resumes: rows already in the results file are skipped (rows that
recorded an error are computed again, unless --no-retry-errors). Ctrl-C keeps every finished
row and exits with status 130. A row that fails records its error; the sweep goes on, and the
exit status stays 0 (the summary on standard error counts the errors).
"""
from __future__ import annotations

import json
import sys


def cmd_sweep(args):
    from ..io.sweep import SweepInterrupted, sweep
    from ..io.files import check_target
    from ..io.grid import load_grid
    from ..io.results import format_of
    grid = load_grid(args.grid)  # the whole grid is validated before anything runs
    check_target(args.output)
    format_of(args.output, args.format)
    try:
        result = sweep(grid, args.output, workers=args.workers, dask=args.dask,
                       format=args.format, resume=not args.fresh,
                       retry_errors=not args.no_retry_errors, chunk_size=args.chunk_size,
                       progress=False if args.quiet else None)
    except SweepInterrupted as e:
        r = e.result
        print(f"dpamp sweep: interrupted; {r.computed} new rows saved ({len(r)} of "
              f"{len(grid)} in {args.output}): run the same command again to resume",
              file=sys.stderr)
        raise SystemExit(130) from None
    except RuntimeError as e:  # the workers died: the finished rows are saved
        print(f"dpamp sweep: error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    if not args.quiet:
        title = f"{grid.title}: " if grid.title else ""
        print(f"dpamp sweep: {title}{result.summary()}; results in {args.output}",
              file=sys.stderr)
        errors = [r for r in result if r.get("error")]
        for r in errors[:5]:
            print(f"  error in row {r['key']}: {r['error']}", file=sys.stderr)
        if len(errors) > 5:
            print(f"  ... and {len(errors) - 5} more (the 'error' column)", file=sys.stderr)


def cmd_frontier(args):
    """``dpamp plot frontier RESULTS -o FIG``: called by ``dpamp plot``."""
    from ..io.files import check_target
    from ..io.frontier import frontier
    from ..io.plot import check_output
    if args.results is None:
        raise ValueError("dpamp plot frontier needs the results file of a sweep: "
                         "dpamp plot frontier results.jsonl -o FIG.png")
    out = check_target(check_output(args.output))
    data = frontier(args.results, output=out)
    if args.json:
        from .plot import _jsonable
        print(json.dumps(_jsonable(data)))
    else:
        print(f"figure: {out} (frontier)", file=sys.stderr)


def _positive_int(text: str) -> int:
    import argparse
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 (got {text!r})")
    return n


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="answer a grid of plans (a TOML grid file, "
                                            "docs/sweeps.md) in parallel, resumably")
    p.add_argument("grid", metavar="GRID.toml", help="the grid file")
    p.add_argument("-o", "--output", required=True, metavar="RESULTS",
                   help="results file, RESULTS.jsonl or RESULTS.csv; appended to as rows "
                        "finish, and read to skip the rows already done")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                       help="local worker processes (default: the cores available; 1: run "
                            "in this process)")
    where.add_argument("--dask", default=None, metavar="ADDRESS",
                       help="a Dask scheduler, e.g. tcp://host:8786 (needs dpamp[sweep], "
                            "and dpamp on the workers)")
    p.add_argument("--format", choices=("jsonl", "csv"), default=None,
                   help="results format (default: from the file name)")
    p.add_argument("--fresh", action="store_true",
                   help="replace the results file instead of resuming it")
    p.add_argument("--no-retry-errors", action="store_true",
                   help="keep rows that recorded an error instead of computing them again")
    p.add_argument("--chunk-size", type=_positive_int, default=None, metavar="ROWS",
                   help="rows per task (default: about one second of work)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary")
    p.set_defaults(func=cmd_sweep)
