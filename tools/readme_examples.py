"""Check, or refresh in place, the examples of README.md (or other Markdown files).

    python tools/readme_examples.py                 # check README.md; exit 1 on a stale example
    python tools/readme_examples.py --update        # rewrite the stale expected outputs
    python tools/readme_examples.py docs/x.md ...   # other files

tests/test_readme.py runs the same check, one test per example.

Two kinds of fenced block are examples; every other block is left alone:

* ```` ```console ````: a line ``$ dpamp ARGS`` is a command (a trailing backslash continues it
  on the next line); the lines after it, up to the next ``$`` line or the end of the block, are
  its expected output, standard output and standard error together. ``dpamp`` runs as
  ``python -m dpamp`` with this interpreter, in the repository's root, with the repository's
  ``src`` first on the path and progress bars off (``DPAMP_PROGRESS=0``). Other programs are
  not run: an example whose command is not ``dpamp`` is an error.
* ```` ```pycon ````: an interactive session (``>>>`` and ``...`` prompts, then the output),
  run as doctest runs one (each statement compiled in "single" mode, so an expression prints
  its repr); the sessions of one file share one namespace, in order.

Outputs are compared after normalisation, on both sides: timings (``680.82 ms``, ``19.74ms``,
``(1.2 s)``) become ``<time>``, runs of spaces become one space (so that a column's width may
follow a timing's), trailing spaces and blank lines at the end go. An expected line ``...``
matches any number of lines, and ``...`` inside a line matches any text (doctest's ELLIPSIS):
use them, sparingly, for output that is not deterministic. Numbers are otherwise compared
exactly: a changed digit is a stale example. ``--update`` keeps an example's expected output
where it still matches (and so its ellipses) and replaces it with the actual output where not.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^(`{3,})(console|pycon)\s*$")
_TIME = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b")
_SPACES = re.compile(r"[ \t]+")
TIMEOUT = 300


@dataclass
class Example:
    """One command (console) or one statement (pycon) and its expected output."""

    path: Path
    kind: str                     # "console" | "pycon"
    line: int                     # 1-based line of the command / statement in the file
    source: str                   # the command without "$ ", or the statement without prompts
    expected: list[str]           # expected output lines
    span: tuple[int, int]         # 0-based [start, end) of the expected lines in the file
    indent: str = ""
    prompt_lines: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}: {self.source.splitlines()[0][:60]}"


def parse(path: Path) -> list[Example]:
    """The examples of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        fence, kind = m.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                for ln in lines[i + 1:end]]
        parse_block = _parse_console if kind == "console" else _parse_pycon
        out.extend(parse_block(path, body, i + 1, indent))
        i = end + 1
    return out


def _parse_console(path, body, first, indent):
    out, j = [], 0
    while j < len(body):
        if not body[j].startswith("$ "):
            if body[j].strip():
                raise ValueError(f"{path}:{first + j + 1}: output before any '$ ' command")
            j += 1
            continue
        start = j
        cmd = body[j][2:]
        while cmd.endswith("\\") and j + 1 < len(body):
            j += 1
            cmd = cmd[:-1].rstrip() + " " + body[j].strip()
        j += 1
        k = j
        while k < len(body) and not body[k].startswith("$ "):
            k += 1
        out.append(Example(path, "console", first + start + 1, cmd.strip(), body[j:k],
                           (first + j, first + k), indent))
        j = k
    return out


def _parse_pycon(path, body, first, indent):
    out, j = [], 0
    while j < len(body):
        if not body[j].startswith(">>>"):
            if body[j].strip():
                raise ValueError(f"{path}:{first + j + 1}: output before any '>>>' prompt")
            j += 1
            continue
        start = j
        src = [body[j][4:]]
        j += 1
        while j < len(body) and (body[j].startswith("... ") or body[j] == "..."):
            src.append(body[j][4:])
            j += 1
        k = j
        while k < len(body) and not body[k].startswith(">>>") and body[k].strip():
            k += 1
        out.append(Example(path, "pycon", first + start + 1, "\n".join(src), body[j:k],
                           (first + j, first + k), indent))
        j = k
    return out


# --- running ------------------------------------------------------------------------------

def _env() -> dict:
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": src + (os.pathsep + path if path else ""),
            "DPAMP_PROGRESS": "0", "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}


def run_console(ex: Example) -> str:
    argv = shlex.split(ex.source)
    if not argv or argv[0] != "dpamp":
        raise ValueError(f"{ex.name}: only dpamp commands are run (got {argv[:1]})")
    proc = subprocess.run([sys.executable, "-m", "dpamp", *argv[1:]], cwd=ROOT, env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", timeout=TIMEOUT)
    return proc.stdout


def run_pycon(ex: Example, namespace: dict) -> str:
    """What an interactive interpreter prints for ``ex.source`` (as doctest runs it)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            code = compile(ex.source + "\n", f"<{ex.path.name}:{ex.line}>", "single")
            exec(code, namespace)
        except Exception as e:  # shown as doctest shows it: the last line of the traceback
            print("Traceback (most recent call last):\n    ...")
            print(traceback.format_exception_only(type(e), e)[-1].rstrip())
    return buf.getvalue()


def run_file(path: Path, examples: list[Example] | None = None):
    """Yield (example, actual output) for every example of ``path``, in order."""
    namespace: dict = {"__name__": "__readme__"}
    sys.path.insert(0, str(ROOT / "src"))
    old = os.environ.get("DPAMP_PROGRESS")
    os.environ["DPAMP_PROGRESS"] = "0"
    try:
        for ex in (parse(path) if examples is None else examples):
            yield ex, run_console(ex) if ex.kind == "console" else run_pycon(ex, namespace)
    finally:
        sys.path.remove(str(ROOT / "src"))
        if old is None:
            os.environ.pop("DPAMP_PROGRESS", None)
        else:
            os.environ["DPAMP_PROGRESS"] = old


# --- comparing ----------------------------------------------------------------------------

def normalise(text: str | list[str]) -> list[str]:
    lines = text.splitlines() if isinstance(text, str) else list(text)
    out = [_SPACES.sub(" ", _TIME.sub("<time>", ln)).strip() for ln in lines]
    while out and not out[-1]:
        out.pop()
    return out


def _line_matches(want: str, got: str) -> bool:
    if "..." not in want:
        return want == got
    pattern = ".*".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got) is not None


def matches(expected: list[str], actual: str) -> bool:
    want, got = normalise(expected), normalise(actual)

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and _line_matches(want[i], got[j]) and match(i + 1, j + 1)
    return match(0, 0)


def diff(ex: Example, actual: str) -> str:
    lines = difflib.unified_diff(ex.expected, actual.rstrip("\n").splitlines(), "expected",
                                 "actual", lineterm="")
    return (f"{ex.name}\n" + "\n".join(lines) +
            "\n(refresh with: python tools/readme_examples.py --update "
            f"{os.path.relpath(ex.path, ROOT)})")


# --- updating -----------------------------------------------------------------------------

def update(path: Path) -> int:
    """Rewrite the stale expected outputs of ``path`` in place; return how many."""
    lines = path.read_text(encoding="utf-8").splitlines()
    stale = [(ex, actual) for ex, actual in run_file(path) if not matches(ex.expected, actual)]
    for ex, actual in reversed(stale):   # from the end: earlier spans stay valid
        new = [ex.indent + ln if ln else "" for ln in actual.rstrip("\n").splitlines()]
        start, end = ex.span
        lines[start:end] = new
    if stale:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(stale)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=["README.md"])
    ap.add_argument("--update", action="store_true",
                    help="rewrite stale expected outputs in place")
    args = ap.parse_args(argv)
    failed = 0
    for name in args.files:
        path = (ROOT / name) if not Path(name).is_absolute() else Path(name)
        if args.update:
            n = update(path)
            print(f"{name}: {n} example(s) updated")
            continue
        for ex, actual in run_file(path):
            if not matches(ex.expected, actual):
                failed += 1
                print(diff(ex, actual), end="\n\n")
    if not args.update:
        print("all examples match" if not failed else f"{failed} stale example(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
