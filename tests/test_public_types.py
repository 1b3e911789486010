"""The public API carries type hints (PEP 561: the package ships ``py.typed``): every function
and method reachable from ``dpamp.__all__`` (classes, functions and the ``dp.calibrate``
functions) annotates each parameter and its return value, and every annotation is a valid
Python expression whose names the module defines or imports (under ``TYPE_CHECKING`` too)."""
from __future__ import annotations

import ast
import inspect
import sys

import pytest

import dpamp

#: submodules offered in dpamp.__all__ whose functions are part of the one-line API
_MODULES = ("calibrate",)


def _public_callables():
    out = []
    for name in dpamp.__all__:
        obj = getattr(dpamp, name)
        if inspect.ismodule(obj):
            if name in _MODULES:
                out += [(f"{name}.{n}", getattr(obj, n)) for n in obj.__all__
                        if inspect.isfunction(getattr(obj, n))]
        elif inspect.isclass(obj):
            for attr, f in vars(obj).items():
                if isinstance(f, property):
                    f = f.fget
                if inspect.isfunction(f) and (not attr.startswith("_") or attr == "__init__"):
                    out.append((f"{name}.{attr}", f))
        elif inspect.isfunction(obj):
            out.append((name, obj))
    return out


CALLABLES = _public_callables()


def test_there_is_a_public_api_to_check():
    assert len(CALLABLES) > 80


def _missing(name, f):
    sig = inspect.signature(f)
    miss = [p.name for p in sig.parameters.values()
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty and f.__name__ != "__init__":
        miss.append("return")
    return miss


def test_every_public_callable_is_annotated():
    missing = {n: m for n, f in CALLABLES if (m := _missing(n, f))}
    assert not missing, missing


def _names_in_scope(f) -> set[str]:
    """Names a module binds at its top level, including under ``if TYPE_CHECKING:``."""
    mod = sys.modules[f.__module__]
    tree = ast.parse(inspect.getsource(mod))
    names = set(vars(mod)) | set(dir(__builtins__) if isinstance(__builtins__, dict) is False
                                  else __builtins__)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
    return names


@pytest.mark.parametrize("name, f", CALLABLES, ids=[n for n, _ in CALLABLES])
def test_annotations_are_expressions_of_known_names(name, f):
    scope = None
    for ann in f.__annotations__.values():
        text = ann if isinstance(ann, str) else None
        if text is None:
            continue
        tree = ast.parse(text, mode="eval")      # a SyntaxError fails the test
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        scope = scope if scope is not None else _names_in_scope(f) | {"None"}
        assert used <= scope, f"{name}: {sorted(used - scope)} not defined in {f.__module__}"
