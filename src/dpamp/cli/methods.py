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
    methods._load_plugins()
    for name in methods.available():
        print(f"{name:14s} {cite(methods._REGISTRY[name].summary)}")


def add_parser(sub) -> None:
    p = sub.add_parser("methods", help="list accounting methods (--matrix: what applies where)")
    p.add_argument("--matrix", action="store_true",
                   help="print the capability matrix: mechanism family x sampler x method")
    p.add_argument("--markdown", action="store_true",
                   help="with --matrix: Markdown tables with the reason of every 'no'")
    p.set_defaults(func=cmd_methods)
