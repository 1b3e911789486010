"""``dpamp methods``: the accounting methods, tightest first; ``--matrix``: which method
applies to which mechanism family under which sampler (the capability matrix)."""
from __future__ import annotations


def cmd_methods(args):
    from ..accounting import registry as methods
    if args.matrix:
        from ..accounting.capabilities import capabilities
        caps = capabilities()
        print(caps.markdown() if args.markdown else caps)
        return
    from ..core.citations import cite
    # the names and summaries are known without importing the methods (nor scipy)
    for name in methods.METHOD_NAMES[1:]:
        print(f"{name:14s} {cite(methods.SUMMARIES[name])}")


def add_parser(sub) -> None:
    p = sub.add_parser("methods", help="list accounting methods (--matrix: what applies where)")
    p.add_argument("--matrix", action="store_true",
                   help="print the capability matrix: mechanism family x sampler x method")
    p.add_argument("--markdown", action="store_true",
                   help="with --matrix: Markdown tables with the reason of every 'no'")
    p.set_defaults(func=cmd_methods)
