"""The package's shape: no import cycles at import time, imports run down the layers of the flow
describe -> represent -> compose -> query -> present (docs/architecture.md), one idea per
module; functions at most 80 lines (a short list of reasoned exceptions); no module importing
another package's private names.

The import graph is read from the source (ast), not by importing: an edge is an import
statement that runs when its module is imported (module level, class bodies, ``if`` / ``try``
blocks), not one inside a function (a lazy call up, e.g. ``Mechanism.epsilon`` into the query
side)."""
from __future__ import annotations

import ast
import pathlib


SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "dpamp"

#: lower number = lower layer; a module may import (at import time) only its own layer or lower
LAYERS = {"core": 0, "mechanisms": 1, "rdp": 2, "pld": 2, "profiles": 2, "theorems": 2,
          "amplification": 3, "families": 4, "accounting": 5, "io": 6, "cli": 7}
MAX_FUNCTION_LINES = 80
#: functions allowed over MAX_FUNCTION_LINES, each with why it is one piece
LONG_FUNCTIONS: dict[str, str] = {
}


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_only(node) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): a block only type checkers run."""
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _eager_imports(tree: ast.AST):
    """Import statements executed at import time (not inside a function or lambda, nor in
    an ``if TYPE_CHECKING:`` block, which holds imports for annotations only; its ``else``
    branch does run)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        for node in _eager_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(mod, is_pkg, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            graph[mod] |= {t for t in targets if t in mods and t != mod}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _layer(mod: str):
    parts = mod.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_no_import_cycles():
    assert _cycles(import_graph()) == []


def test_imports_run_down_the_layers():
    bad = [(m, t) for m, ts in import_graph().items() for t in ts
           if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)]
    assert bad == []


def _all_imports(mod: str, is_pkg: bool, tree: ast.AST):
    """Every import target of a module, at any depth (inside functions too), except those in
    ``if TYPE_CHECKING:`` blocks (annotations only)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_pkg, node)
            yield from (f"{base}.{a.name}" for a in node.names)
            yield base
        stack.extend(ast.iter_child_nodes(node))


def test_imports_run_down_also_inside_functions():
    """A lazy import up the layers is still a call up: the describe layer reaches the query
    layer only through dpamp.core.door (importlib, named once), nothing else calls up."""
    mods = _modules()
    bad = []
    for mod, (path, is_pkg) in mods.items():
        for target in _all_imports(mod, is_pkg, ast.parse(path.read_text())):
            t = next((c for c in (target, target.rpartition(".")[0]) if c in mods), None)
            if t and _layer(mod) is not None and _layer(t) is not None \
                    and _layer(t) > _layer(mod):
                bad.append((mod, t))
    assert sorted(set(bad)) == []


def test_no_cycle_between_packages_at_any_depth():
    """Packages of one layer may use each other in one direction only (the PLD engine reads
    profiles; profiles never call the PLD engine)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, (path, is_pkg) in mods.items():
        if mod.count(".") < 1:
            continue
        src = mod.split(".")[1]
        for target in _all_imports(mod, is_pkg, ast.parse(path.read_text())):
            parts = target.split(".")
            if parts[0] == "dpamp" and len(parts) > 1 and parts[1] != src and \
                    f"dpamp.{parts[1]}" in mods:
                graph.setdefault(f"dpamp.{src}", set()).add(f"dpamp.{parts[1]}")
    for node in list(graph):
        graph.setdefault(node, set())
    for ts in list(graph.values()):
        for t in ts:
            graph.setdefault(t, set())
    assert _cycles(graph) == []


def test_every_top_level_module_is_in_a_layer():
    loose = [m for m in _modules() if m.count(".") == 1 and m.split(".")[1] not in LAYERS
             and m != "dpamp.__main__"]       # python -m dpamp: the command line
    assert loose == []


def _functions():
    """(key "path:name", line count) of every function and method in the package."""
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{rel}:{node.name}", node.end_lineno - node.lineno + 1


def test_functions_are_short():
    long = {k: n for k, n in _functions() if n > MAX_FUNCTION_LINES}
    assert sorted(set(long) - set(LONG_FUNCTIONS)) == [], long
    # an exception that no longer needs to be one leaves the list
    assert sorted(set(LONG_FUNCTIONS) - set(long)) == []


def _private_imports(mod: str, is_pkg: bool, tree: ast.AST):
    """(target, name) of every ``from X import _name`` / import of a ``_module`` where X is in
    another top-level package of dpamp than ``mod`` (any depth: inside functions too)."""
    own = mod.split(".")[1] if mod.count(".") else None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _resolve(mod, is_pkg, node)
        parts = target.split(".")
        if parts[0] != "dpamp" or len(parts) < 2 or parts[1] == own:
            continue
        for seg in parts[2:]:
            if seg.startswith("_") and not seg.startswith("__"):
                yield target, "(module)"
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                yield target, alias.name


def test_no_private_names_across_packages():
    bad = [(m, t, n) for m, (path, is_pkg) in _modules().items()
           for t, n in _private_imports(m, is_pkg, ast.parse(path.read_text()))]
    assert bad == []


def test_the_checks_can_fail():
    """The cycle finder and the layer rule on a made-up graph."""
    g = {"dpamp.core.a": {"dpamp.pld.b"}, "dpamp.pld.b": {"dpamp.core.a"}, "dpamp.io.c": set()}
    assert _cycles(g) == [["dpamp.core.a", "dpamp.pld.b"]]
    assert _layer("dpamp.core.a") < _layer("dpamp.pld.b")
    # an import for annotations only does not run; one beside it does
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
                     "else:\n    import b\nif x:\n    import c\n")
    assert sorted(n.names[0].name for n in _eager_imports(tree)) == ["TYPE_CHECKING", "b", "c"]
    # a private name of another package is found, one of the module's own package is not
    tree = ast.parse("from ..core._x import a\nfrom ..core.y import _b\nfrom .z import _c\n")
    found = list(_private_imports("dpamp.pld.q", False, tree))
    assert found == [("dpamp.core._x", "(module)"), ("dpamp.core.y", "_b")]
