"""``dpamp methods``: the accounting methods, tightest first."""
from __future__ import annotations


def cmd_methods(args):
    from ..accounting import registry as methods
    methods._load_plugins()
    for name in methods.available():
        print(f"{name:14s} {methods._REGISTRY[name].summary}")


def add_parser(sub) -> None:
    p = sub.add_parser("methods", help="list accounting methods")
    p.set_defaults(func=cmd_methods)
