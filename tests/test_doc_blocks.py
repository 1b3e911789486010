"""Every ```python block of the README and of docs/ runs, and where a line's comment shows a
guarantee (``# (2.38253, 1e-5)-DP by pld (lower bound 2.38117)``) the line prints exactly that.

The blocks of one page run in order in one namespace, in a scratch directory (files a block
writes go there). A block that imports a library dpamp does not install (opacus, TensorFlow
Privacy) is skipped when that library is absent. (```console and ```pycon examples are checked
with their full outputs by tests/test_readme.py.)"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^(\s*)```python\s*$")
_SHOWN = re.compile(r"#\s*(\(.*\)-DP by .*)$")


#: the line before a block that is a template to fill in: it must compile, it is not run
TEMPLATE = "<!-- template:"


def blocks(page: Path) -> list[tuple[int, str, bool]]:
    """(line, source, is a template) of each ```python block of ``page``, dedented to its
    fence."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, j = m.group(1), i + 1
        while lines[j].strip() != "```":
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j]]
        template = i > 0 and lines[i - 1].strip().startswith(TEMPLATE)
        out.append((i + 2, "\n".join(body), template))
        i = j + 1
    return out


def _absent_imports(src: str) -> list[str]:
    tree = ast.parse(src)
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    return [n for n in names if importlib.util.find_spec(n.split(".")[0]) is None]


def run_block(page: Path, line: int, src: str, ns: dict) -> None:
    """Run one block statement by statement; an expression whose line's comment shows a
    guarantee must print as shown."""
    tree = ast.parse(src)
    lines = src.splitlines()
    for stmt in tree.body:
        where = f"{page.name}:{line + stmt.lineno - 1}"
        with contextlib.redirect_stdout(io.StringIO()):
            if isinstance(stmt, ast.Expr):
                value = eval(compile(ast.Expression(stmt.value), where, "eval"), ns)
            else:
                exec(compile(ast.Module([stmt], []), where, "exec"), ns)
                continue
        shown = _SHOWN.search(lines[stmt.end_lineno - 1])
        if shown:
            assert str(value).splitlines()[0] == shown.group(1).strip(), where


def _pages():
    for page in PAGES:
        if blocks(page):
            yield pytest.param(page, id=str(page.relative_to(ROOT)))


@pytest.mark.parametrize("page", list(_pages()))
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPAMP_PROGRESS", "0")
    ns: dict = {"__name__": "__doc_block__"}
    for line, src, template in blocks(page):
        if template:
            compile(src, f"{page.name}:{line}", "exec")
            continue
        if _absent_imports(src):
            continue            # opacus, TensorFlow Privacy: not dpamp's dependencies
        run_block(page, line, src, ns)


def test_every_page_with_python_is_checked():
    assert len(list(_pages())) >= 14


def toml_blocks(page: Path) -> list[tuple[int, str]]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```toml":
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            out.append((i + 2, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if toml_blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_toml_blocks_are_read(page):
    """A ```toml block is a plan (a stage alone gets the delta it is reported at), or on the
    sweeps page a grid: the reader accepts it as written."""
    from dpamp.io.grid import parse_grid_text
    from dpamp.io.plan import parse_plan_text
    for line, text in toml_blocks(page):
        where = f"{page.name}:{line}"
        if page.name == "sweeps.md":
            assert parse_grid_text(text, where).rows, where
            continue
        if "delta" not in text.split("[[stage]]")[0]:
            text = "delta = 1e-5\n" + text
        assert parse_plan_text(text, where).stages, where


def _command_lines(page: Path) -> list[tuple[int, str]]:
    """(line, text) of every ``dpamp ...`` command shown in a ```sh or ```console block
    (continuation lines joined, comments dropped)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, inside = [], None
    for i, raw in enumerate(lines, start=1):
        s = raw.strip()
        if s.startswith("```"):
            inside = None if inside else s[3:].strip()
            continue
        if inside not in ("sh", "console"):
            continue
        s = s[2:] if s.startswith("$ ") else s
        if s.startswith("dpamp "):
            out.append((i, s))
        elif out and out[-1][1].endswith("\\") and out[-1][0] == i - 1:
            out[-1] = (i, out[-1][1][:-1] + " " + s)
    return [(i, t.split("#")[0]) for i, t in out]


@pytest.mark.parametrize("page", [p for p in PAGES if _command_lines(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_shown_use_real_subcommands_and_flags(page):
    """A shown command names a subcommand dpamp has, and only flags that subcommand takes
    (the words of a choice such as ``steps|epochs`` each a valid choice)."""
    import argparse
    from dpamp.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for line, text in _command_lines(page):
        words = text.replace("[", " ").replace("]", " ").replace("|", " | ").split()
        command = words[1]
        assert command in sub.choices, f"{page.name}:{line}: no command {command!r}"
        parser = sub.choices[command]
        flags = {s for a in parser._actions for s in a.option_strings}
        choices = {c for a in parser._actions if a.choices and not a.option_strings
                   for c in a.choices}
        for w in words[2:]:
            if w.startswith("-") and not w[1:2].isdigit():
                assert w.split("=")[0] in flags, f"{page.name}:{line}: {command} has no {w}"
        second = text.split()[2] if len(text.split()) > 2 else ""
        if choices and not second.startswith("-"):
            for c in second.split("|"):
                assert c in choices, f"{page.name}:{line}: {command} has no {c!r}"
