"""The ``dpamp`` command line: the parser assembled from one module per command.

Errors in the input are printed on one line and the exit status is 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

#: modules that add sub-commands, in the order `dpamp --help` lists them: each defines
#: add_parser(subparsers) -> None
SUBCOMMAND_MODULES = (
    "dpamp.cli.query",
    "dpamp.cli.dpsgd",
    "dpamp.cli.report",
    "dpamp.cli.methods",
    "dpamp.cli.compare",
    "dpamp.cli.calibrate",
    "dpamp.cli.plot",
    "dpamp.cli.bernoulli",
    "dpamp.cli.sweep",
    "dpamp.cli.risk",
    "dpamp.cli.filter",
)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    parser = argparse.ArgumentParser(prog="dpamp", description="Differential-privacy accounting")
    parser.add_argument("--version", action="version", version=f"dpamp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in SUBCOMMAND_MODULES:
        importlib.import_module(mod).add_parser(sub)
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
