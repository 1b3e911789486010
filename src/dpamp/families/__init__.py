"""The declarations of dpamp's mechanism families and sampling schemes (the capability
protocol of :mod:`dpamp.mechanisms.family`): one module per family, each stating how its
mechanism yields every representation it has, and its words. Importing this package imports
every module in it, so a new family is a new module here and nothing else to list. It is
imported on the first lookup of a family (:func:`dpamp.mechanisms.family.family_of` and the
others, through :mod:`dpamp.core.door`), so ``import dpamp`` stays light. Adding a family:
docs/adding-a-mechanism.md."""
from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_") and _info.name != "base":
        importlib.import_module(f"{__name__}.{_info.name}")


def declared() -> None:
    """Nothing to do: importing this package declared every family (the door
    ``dpamp.core.door`` calls this on the first lookup of a family)."""
