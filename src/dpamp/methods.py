"""The registry of accounting methods behind ``x.epsilon(delta)`` and ``x.delta(epsilon)``.

A method is a pair of functions (epsilon query, delta query) plus a predicate saying whether it
applies to a mechanism. Other modules register theirs (PLD, zCDP, composition theorems, ...);
``method="auto"`` runs the applicable method of highest rank (tightest first).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable

from . import _validate as V
from .guarantee import Guarantee


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    epsilon: Callable[..., Guarantee]
    delta: Callable[..., Guarantee]
    applies: Callable[[object], bool]
    rank: int = 100  # lower = preferred by "auto"
    summary: str = ""


_REGISTRY: dict[str, Method] = {}


class OutOfReach(ValueError):
    """A method applies but cannot produce a bound for this query within its numerical limits
    (a grid too fine, losses too large for its floating point). ``method="auto"`` then uses the
    next applicable method."""


def register(method: Method) -> Method:
    _REGISTRY[method.name] = method
    return method


def available(mechanism=None) -> list[str]:
    _load_plugins()
    ms = sorted(_REGISTRY.values(), key=lambda m: m.rank)
    return [m.name for m in ms if mechanism is None or _safe_applies(m, mechanism)]


def _safe_applies(m: Method, mechanism) -> bool:
    try:
        return bool(m.applies(mechanism))
    except Exception:  # a predicate that cannot decide does not apply
        return False


def _pick(mechanism, method: str) -> Method:
    _load_plugins()
    if method == "auto":
        for name in available(mechanism):
            return _REGISTRY[name]
        raise ValueError(f"no accounting method applies to {mechanism!r}")
    if method not in _REGISTRY:
        raise ValueError(f"method must be one of {['auto'] + available()} (got {method!r})")
    m = _REGISTRY[method]
    if not _safe_applies(m, mechanism):
        raise ValueError(f"method {method!r} does not apply to {mechanism!r}; "
                         f"applicable: {available(mechanism)}")
    return m


def epsilon(mechanism, delta, method: str = "auto", **options) -> Guarantee:
    d = V.delta(delta, allow_zero=True)
    return _run(mechanism, method, lambda m: m.epsilon(mechanism, d, **options))


def delta(mechanism, epsilon, method: str = "auto", **options) -> Guarantee:
    e = V.real("epsilon", epsilon, low=0.0, allow_inf=False)
    return _run(mechanism, method, lambda m: m.delta(mechanism, e, **options))


def _run(mechanism, method: str, query) -> Guarantee:
    """The named method's answer; for "auto", the first applicable method in rank order that
    is not out of reach for this query (a named method's OutOfReach propagates)."""
    first = _pick(mechanism, method)
    if method != "auto":
        return query(first)
    refused = None
    for name in available(mechanism):
        try:
            return query(_REGISTRY[name])
        except OutOfReach as e:
            refused = refused or e
    raise refused


_PLUGINS = ("dpamp.rdp.methods", "dpamp.pld.methods", "dpamp.zcdp", "dpamp.composition_methods",
            "dpamp.profiles.methods", "dpamp.mixing.methods")
_loaded = False


def _load_plugins():
    """Import the modules that register methods (lazily, to keep ``import dpamp`` light)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    for mod in _PLUGINS:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:  # a method family not built yet
            if e.name != mod:
                raise


def timed(fn):
    """Run fn() and return (result, seconds)."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def finite_or_inf(x: float) -> float:
    return x if math.isfinite(x) else math.inf
