"""The process's memory budget: the largest grids a route may hold at once.

Routes estimate what they will hold before they allocate it and, beyond the budget, take a
coarser grid (as sound, wider) or say why they cannot answer; the budget never changes a bound's
soundness, only how fine the grid may be. Default 2 GiB (fits a laptop beside the rest of a
training job); raise it with :func:`set_memory_limit` or the environment variable
``DPAMP_MAX_MEMORY`` (bytes, or with a suffix K, M, G: ``DPAMP_MAX_MEMORY=8G``). The answer to a
query depends on the budget (a finer grid, a narrower bracket), never on the machine's load.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Callable

import numpy as np

DEFAULT_BYTES = 2 << 30
_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_limit: int | None = None


def _parse(text: str) -> int:
    s = text.strip().upper().rstrip("B").rstrip("I")
    mult = _SUFFIX.get(s[-1:], 1)
    num = s[:-1] if s[-1:] in _SUFFIX else s
    try:
        value = int(float(num) * mult)
    except ValueError:
        raise ValueError(f"DPAMP_MAX_MEMORY={text!r}: expected bytes, e.g. 2147483648 or 2G") \
            from None
    if value < 1 << 26:
        raise ValueError(f"DPAMP_MAX_MEMORY={text!r}: at least 64M")
    return value


def memory_limit() -> int:
    """The budget in bytes (set_memory_limit, else DPAMP_MAX_MEMORY, else 2 GiB)."""
    if _limit is not None:
        return _limit
    env = os.environ.get("DPAMP_MAX_MEMORY")
    return _parse(env) if env else DEFAULT_BYTES


def set_memory_limit(nbytes: int | str | None) -> None:
    """Set the budget (bytes, or a string such as "8G"); None restores the default."""
    global _limit
    if nbytes is None:
        _limit = None
    elif isinstance(nbytes, str):
        _limit = _parse(nbytes)
    else:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1 << 26:
            raise ValueError(f"memory limit: expected an int of at least 2**26 bytes, got "
                             f"{nbytes!r}")
        _limit = nbytes


#: who holds large computed results, oldest first: key -> (bytes, release)
_HOLDERS: "OrderedDict[int, tuple[int, Callable[[], None]]]" = OrderedDict()
_HOLD_LOCK = threading.Lock()


def nbytes(obj, _seen=None) -> int:
    """The bytes of the numpy arrays reachable from ``obj`` (dicts, lists, tuples and objects'
    attributes, in ``__dict__`` or in slots), each array once."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(nbytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v, seen) for v in obj)
    attrs = getattr(obj, "__dict__", None)
    total = sum(nbytes(v, seen) for v in attrs.values()) if attrs else 0
    # (the PLD engine's state types are dataclasses with slots: no __dict__)
    for cls in type(obj).__mro__:
        names = getattr(cls, "__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if hasattr(obj, name):
                total += nbytes(getattr(obj, name), seen)
    return total


def hold(owner, held: int, release: Callable[[], None]) -> None:
    """Record that ``owner`` now holds about ``held`` bytes of cached results, and have the
    oldest other holders ``release`` theirs while all of them together exceed the budget: the
    budget bounds the process, not each cache (eight cached allocation epochs at the limit each
    would hold eight times it). Released results are recomputed if asked for again (the same
    bits: a cache never changes a number)."""
    key = id(owner)
    with _HOLD_LOCK:
        _HOLDERS.pop(key, None)
        _HOLDERS[key] = (held, release)
        total = sum(b for b, _ in _HOLDERS.values())
        victims = []
        for k in list(_HOLDERS):
            if total <= memory_limit() or k == key:
                break
            b, rel = _HOLDERS.pop(k)
            total -= b
            victims.append(rel)
    for rel in victims:
        rel()
