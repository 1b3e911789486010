"""The README's examples cannot go stale: every ```console example (``$ dpamp ...`` then its
expected output) is run as ``python -m dpamp ...`` and every ```pycon session as doctest runs
one, and their outputs must match (timings and column padding aside; see
tools/readme_examples.py, which also refreshes them: ``--update``)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("readme_examples",
                                               ROOT / "tools" / "readme_examples.py")
R = importlib.util.module_from_spec(_spec)
sys.modules["readme_examples"] = R
_spec.loader.exec_module(R)

README = ROOT / "README.md"
#: the files whose examples are checked: the README and every page of the site that has one
FILES = (README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if R.parse(p)))
EXAMPLES = R.parse(README)
ALL = [ex for f in FILES for ex in R.parse(f)]


def test_readme_has_examples_of_both_kinds():
    kinds = [ex.kind for ex in EXAMPLES]
    assert kinds.count("console") >= 3 and kinds.count("pycon") >= 3


@pytest.mark.parametrize("ex", [e for e in ALL if e.kind == "console"],
                         ids=lambda e: e.name)
def test_console_example(ex):
    actual = R.run_console(ex)
    assert R.matches(ex.expected, actual), R.diff(ex, actual)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_pycon_session(path):
    # the statements of a file share one namespace, in order: one test per file's session
    pycon = [e for e in ALL if e.kind == "pycon" and e.path == path]
    stale = [R.diff(ex, actual) for ex, actual in R.run_file(path, pycon)
             if not R.matches(ex.expected, actual)]
    assert not stale, "\n\n".join(stale)


# --- the machinery itself ---------------------------------------------------------------------

SAMPLE = '''# t

```console
$ dpamp methods --json \\
    --x
line one  (12.5 ms)
$ dpamp other
```

```sh
$ dpamp not-an-example
```

    ```pycon
    >>> x = 1 + \\
    ...     1
    >>> x
    2
    >>> print("a"); print("b")
    a
    b
    ```
'''


def test_parse(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(SAMPLE)
    exs = R.parse(p)
    assert [(e.kind, e.line, e.source, e.expected) for e in exs] == [
        ("console", 4, "dpamp methods --json --x", ["line one  (12.5 ms)"]),
        ("console", 7, "dpamp other", []),
        ("pycon", 15, "x = 1 + \\\n    1", []),
        ("pycon", 17, "x", ["2"]),
        ("pycon", 19, 'print("a"); print("b")', ["a", "b"]),
    ]
    assert [ex.indent for ex in exs] == ["", "", "    ", "    ", "    "]


def test_matching_rules():
    assert R.matches(["eps 2.38  (680.82 ms)"], "eps 2.38  (1.2 s)\n")
    assert R.matches(["pld   2.3    19.74ms  x"], "pld   2.3   112.30ms  x")
    assert not R.matches(["eps 2.38"], "eps 2.39")        # a changed digit is stale
    assert not R.matches(["a", "b"], "a\n")               # a missing line too
    assert not R.matches(["a"], "a\nb\n")                 # and an extra one
    assert R.matches(["a", "...", "z"], "a\nb\nc\nz\n")   # "..." lines: any lines
    assert R.matches(["a", "...", "z"], "a\nz")
    assert R.matches(["took ... here"], "took 3 whole seconds here")
    assert not R.matches(["10000 steps"], "10001 steps")  # "steps" is not a timing


def test_pycon_runs_like_doctest():
    ns: dict = {}
    ex = R.Example(Path("x.md"), "pycon", 1, "1 + 1", [], (0, 0))
    assert R.run_pycon(ex, ns) == "2\n"
    ex = R.Example(Path("x.md"), "pycon", 1, "y = 3", [], (0, 0))
    assert R.run_pycon(ex, ns) == "" and ns["y"] == 3
    ex = R.Example(Path("x.md"), "pycon", 1, "1 / 0", [], (0, 0))
    assert R.run_pycon(ex, ns).splitlines()[-1] == "ZeroDivisionError: division by zero"


def test_update_rewrites_only_stale_outputs(tmp_path, monkeypatch):
    p = tmp_path / "t.md"
    p.write_text("```console\n$ dpamp a\nold\n$ dpamp b\nsame ...\n```\n\n```pycon\n"
                 ">>> 1 + 1\n3\n>>> 2\n2\n```\n")
    outputs = {"dpamp a": "new 1\nnew 2\n", "dpamp b": "same as before\n"}
    monkeypatch.setattr(R, "run_console", lambda ex: outputs[ex.source])
    assert R.update(p) == 2
    assert p.read_text() == ("```console\n$ dpamp a\nnew 1\nnew 2\n$ dpamp b\nsame ...\n```\n"
                             "\n```pycon\n>>> 1 + 1\n2\n>>> 2\n2\n```\n")
    assert R.update(p) == 0


def test_only_dpamp_commands_run():
    ex = R.Example(Path("x.md"), "console", 1, "rm -rf /", [], (0, 0))
    with pytest.raises(ValueError, match="only dpamp commands"):
        R.run_console(ex)
