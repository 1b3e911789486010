"""Count type dispatch on concrete mechanism and sampling-scheme classes outside their own
modules: ``isinstance(x, C)``, ``type(x) is C`` and ``issubclass(x, C)`` where C is a subclass
of ``Mechanism`` or ``SamplingScheme`` defined in dpamp (the base classes themselves do not
count: checking "is this a mechanism" is validation, not dispatch).

    python tools/count_dispatch.py [-v]
"""
from __future__ import annotations

import ast
import pathlib
import sys

PKG = pathlib.Path(__file__).resolve().parents[1] / "src" / "dpamp"
BASES = {"Mechanism", "SamplingScheme", "PostProcessing"}


def _classes() -> dict[str, str]:
    """{class name: defining module path} for every class deriving (transitively, by name)
    from a base in BASES."""
    defs: dict[str, tuple[str, list[str]]] = {}
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                         for b in node.bases]
                defs.setdefault(node.name, (str(path.relative_to(PKG)), names))
    found = {}
    changed = True
    while changed:
        changed = False
        for name, (where, bases) in defs.items():
            if name not in found and any(b in BASES or b in found for b in bases):
                found[name] = where
                changed = True
    return found


def _named(node) -> list[str]:
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _named(e)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def checks() -> list[str]:
    classes = _classes()
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                names = _named(node.args[1])
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) and \
                    isinstance(node.left.func, ast.Name) and node.left.func.id == "type" and \
                    all(isinstance(o, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for o in node.ops):
                names = [n for c in node.comparators for n in _named(c)]
            hits = [n for n in names if n in classes and classes[n] != rel]
            if hits:
                out.append(f"{rel}:{node.lineno} {','.join(hits)}")
    return out


if __name__ == "__main__":
    found = checks()
    if "-v" in sys.argv:
        print("\n".join(found))
    files = {f.split(":")[0] for f in found}
    print(f"{len(found)} checks on concrete mechanism/scheme classes outside their own module, "
          f"in {len(files)} files")
