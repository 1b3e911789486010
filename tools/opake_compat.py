"""Import opake-accounting on CPython 3.11, for the benchmarks and the peer tests only.

opake-accounting 0.16's wheel is built for the stable ABI from 3.11 and declares
``Requires-Python >=3.11``, but its pure-Python layer declares frozen dataclasses with
``slots=True, weakref_slot=True`` on classes whose bases already carry a ``__weakref__`` slot.
CPython 3.11's ``dataclasses._add_slots`` refuses that ("__weakref__ slot disallowed"); 3.12
accepts it, keeping the inherited slot. Where a base already has one, asking for it again adds
nothing, so :func:`import_opake` makes 3.11 do what 3.12 does (drop the redundant request)
and then imports ``opake.accounting``. The patch is installed only on 3.11 and only while the
import runs, so nothing else in the process sees it.

dpamp itself never imports this module (opake is a peer, not a dependency).
"""
from __future__ import annotations

import dataclasses
import importlib
import sys
from types import ModuleType


def _patched_add_slots(original):
    def add_slots(cls, is_frozen, weakref_slot):
        if weakref_slot and any(hasattr(base, "__weakref__") for base in cls.__mro__[1:]):
            weakref_slot = False          # the inherited slot serves (3.12's behaviour)
        return original(cls, is_frozen, weakref_slot)
    return add_slots


def import_opake() -> ModuleType | None:
    """``opake.accounting``, or None where it is not installed or does not import."""
    original = getattr(dataclasses, "_add_slots", None)
    patch = sys.version_info < (3, 12) and original is not None
    if patch:
        dataclasses._add_slots = _patched_add_slots(original)  # type: ignore[attr-defined]
    try:
        return importlib.import_module("opake.accounting")
    except Exception:  # noqa: BLE001  (a peer that does not import is skipped, whatever why)
        return None
    finally:
        if patch:
            dataclasses._add_slots = original  # type: ignore[attr-defined]


def opake_version() -> str:
    """The installed opake-accounting's version, or "not installed"."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("opake-accounting")
    except PackageNotFoundError:
        return "not installed"
