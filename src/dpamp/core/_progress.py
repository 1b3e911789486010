"""A tiny progress bar for long computations (sweeps, calibration over grids).

It writes to standard error only when standard error is a terminal, so piped or captured output
(``dpamp ... | jq``, cron jobs, tests) stays clean. No dependency: one carriage-return line.
"""
from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def progress(items: Iterable[T], total: int | None = None, label: str = "",
             stream=None, width: int = 30) -> Iterator[T]:
    """Yield ``items`` unchanged, drawing ``label [#####.....] k/n`` on ``stream`` (default
    ``sys.stderr``) when it is a terminal; silent otherwise. The line is cleared at the end."""
    out = sys.stderr if stream is None else stream
    if not _is_tty(out):
        yield from items
        return
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    t0 = time.perf_counter()
    done = 0

    def draw():
        if total:
            filled = int(width * done / total)
            bar = "#" * filled + "." * (width - filled)
            text = f"\r{label} [{bar}] {done}/{total} {time.perf_counter() - t0:5.1f}s"
        else:
            text = f"\r{label} {done} {time.perf_counter() - t0:5.1f}s"
        out.write(text)
        out.flush()

    draw()
    try:
        for item in items:
            yield item
            done += 1
            draw()
    finally:
        out.write("\r" + " " * (len(label) + width + 30) + "\r")
        out.flush()
