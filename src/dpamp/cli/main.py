"""The ``dpamp`` command line: the parser assembled from one module per command.

Errors in the input are printed on one line and the exit status is 2.
"""
from __future__ import annotations

import argparse
import importlib
import re
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


class _UsageError(Exception):
    """A flag the command line cannot read: printed on one line by :func:`main`."""


class _Parser(argparse.ArgumentParser):
    """Errors on one line, as every other input error of the command line: the command, the
    flag and what it must be (``dpamp epsilon: error: argument --delta: must be in [0, 1)``),
    exit status 2; ``--help`` shows the usage."""

    def error(self, message: str):
        raise _UsageError(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    parser = _Parser(prog="dpamp", description="Differential-privacy accounting")
    parser.add_argument("--version", action="version", version=f"dpamp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in SUBCOMMAND_MODULES:
        importlib.import_module(mod).add_parser(sub)
    return parser


#: a negative number, which argparse would read as an option (``--delta -1e-5``)
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--flag -1e-5`` as ``--flag=-1e-5``, so that a negative value reaches the flag's own
    check (which names the flag and the valid range) instead of argparse's "expected one
    argument"."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" not in a and i + 1 < len(argv) and \
                _NEGATIVE.match(argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(_join_negative_values(list(sys.argv[1:] if argv is None
                                                             else argv)))
    except _UsageError as e:
        print(e, file=sys.stderr)
        return 2
    try:
        args.func(args)
    except (ValueError, NotImplementedError) as e:
        print(_as_flag_error(str(e), args), file=sys.stderr)
        return 2
    return 0


#: a library error that names a Python parameter: "delta must be in (0, 1) (got 0)"
_PARAMETER = re.compile(r"^(--)?([a-z][a-z0-9_-]*) (must|should) ")


def _as_flag_error(message: str, args) -> str:
    """An error of the library, in the command line's words: where it names a parameter that
    is one of the command's flags (``delta must be ...`` for ``--delta``), the flag, as an
    argument error names it (``dpamp calibrate: error: argument --delta: must be ...``)."""
    m = _PARAMETER.match(message)
    name = m.group(2).replace("-", "_") if m else ""
    if m and name in vars(args) and name not in ("func", "command"):
        flag = "--" + name.replace("_", "-")
        return f"dpamp {args.command}: error: argument {flag}: {message[m.end(2) + 1:]}"
    return f"dpamp: error: {message}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
