"""Progress bars for long computations, drawn by tqdm (an optional extra: ``dpamp[progress]``).

Three shapes: :func:`progress` wraps an iterable (a calibration over values, a figure's points,
PLD refinement rounds); :func:`ticks` is a context manager for loops that are not an iteration
(the certified Bernoulli search), ticked by ``bar.update()``; :func:`open_bar` is a bar with no
block, for an object that ticks on its own calls and closes it when done (the calibration's
oracle). Each keeps the call sites free of tqdm and of the rules below.

When a bar is drawn (:func:`wanted`): by default only when its stream (standard error) is a
terminal, so piped or captured output (``dpamp ... | jq``, cron jobs, notebooks, tests) stays
clean; never in a worker process (a sweep's pool shares the terminal with its own bar); never
inside another bar (a calibration's evaluations each run a PLD refinement: only the outer bar
shows); and never without tqdm, which is imported only when a bar is drawn. The environment
variable ``DPAMP_PROGRESS`` overrides the terminal test: ``1`` (also ``on``, ``true``, ``yes``)
draws even when the stream is not a terminal, ``0`` (``off``, ``false``, ``no``) never draws;
a call's ``enabled=True`` / ``False`` overrides both. ``delay`` (seconds) hides a bar until the
work has lasted that long, so quick answers print nothing.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: the environment variable that forces progress bars on (1) or off (0)
ENV = "DPAMP_PROGRESS"
_ON = {"1", "on", "true", "yes"}
_OFF = {"0", "off", "false", "no"}


class _Silent:
    """What :func:`open_bar` and :func:`ticks` give when no bar is drawn: the methods of a
    tqdm bar that the call sites use, doing nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def _env_setting() -> bool | None:
    """True / False when ``DPAMP_PROGRESS`` forces bars on / off, None when unset or empty."""
    raw = os.environ.get(ENV, "").strip().lower()
    if not raw:
        return None
    if raw in _ON:
        return True
    if raw in _OFF:
        return False
    raise ValueError(f"environment variable {ENV} must be one of 1, on, true, yes, 0, off, "
                     f"false, no (got {os.environ[ENV]!r})")


def _tqdm_class():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _other_bar_open() -> bool:
    """Whether a tqdm bar is open in this process (ours, a sweep's, a user's): tqdm keeps the
    open ones in a weak set, which drops a bar when it is closed or garbage-collected."""
    tqdm = sys.modules.get("tqdm")
    instances = getattr(getattr(tqdm, "tqdm", None), "_instances", None) or ()
    return any(not getattr(bar, "disable", True) for bar in list(instances))


def wanted(stream=None, enabled: bool | None = None) -> bool:
    """Whether a bar would be drawn on ``stream`` (default standard error): see the module
    docstring for the rules (``enabled``, ``DPAMP_PROGRESS``, terminal, worker process, nesting,
    tqdm installed)."""
    if enabled is False or _other_bar_open():
        return False
    if enabled is None:
        enabled = _env_setting()
        if enabled is False:
            return False
        import multiprocessing  # (not at import: dpamp's import time)
        if multiprocessing.parent_process() is not None:
            return False
        if enabled is None and not _is_tty(sys.stderr if stream is None else stream):
            return False
    return _tqdm_class() is not None


def open_bar(label: str = "", total: int | None = None, *, unit: str = "it",
             delay: float = 0.0, stream=None, enabled: bool | None = None,
             width: int | None = None):
    """A tqdm bar (cleared when closed) when :func:`wanted`, else an object whose ``update``,
    ``refresh``, ``set_postfix_str`` and ``close`` do nothing. The caller closes it; one that is
    garbage-collected unclosed is closed by tqdm."""
    if not wanted(stream, enabled):
        return _Silent()
    fmt = None if width is None else "{l_bar}{bar:%d}{r_bar}" % int(width)
    return _tqdm_class()(total=total, desc=label or None, file=sys.stderr if stream is None
                         else stream, unit=unit, delay=delay, leave=False, bar_format=fmt,
                         dynamic_ncols=width is None, smoothing=0.1)


@contextlib.contextmanager
def ticks(label: str = "", total: int | None = None, *, unit: str = "it", delay: float = 0.0,
          stream=None, enabled: bool | None = None, width: int | None = None):
    """A progress bar to tick by hand: ``with ticks("PLD", unit="round", delay=1) as bar:
    ... bar.update()``. Yields a tqdm bar when :func:`wanted`, else an object whose ``update``
    and ``set_postfix_str`` do nothing. The bar is cleared when the block ends."""
    bar = open_bar(label, total, unit=unit, delay=delay, stream=stream, enabled=enabled,
                   width=width)
    try:
        yield bar
        # the final count (for a forced bar written to a log), where the bar has shown: a bar
        # still hidden by its delay stays hidden (tqdm would not clear it)
        shown = getattr(bar, "last_print_t", -1.0) >= getattr(bar, "start_t", 0.0) + \
            getattr(bar, "delay", 0.0)
        if shown:
            bar.refresh()
    finally:
        bar.close()


def progress(items: Iterable[T], total: int | None = None, label: str = "", stream=None,
             width: int | None = None, *, unit: str = "it", delay: float = 0.0,
             enabled: bool | None = None) -> Iterator[T]:
    """Yield ``items`` unchanged, with a bar ``label: k/n`` on ``stream`` (default standard
    error) when :func:`wanted`; silent otherwise. ``total`` defaults to ``len(items)`` where
    it has one; ``width`` fixes the bar's width (default: the terminal's)."""
    if not wanted(stream, enabled):
        yield from items
        return
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with ticks(label, total, unit=unit, delay=delay, stream=stream, enabled=True,
               width=width) as bar:
        for item in items:
            yield item
            bar.update()


def stages(items: Iterable[T], label: str, stream=None) -> Iterator[T]:
    """Yield ``items`` (the few long stages of one command: a figure's samplers), with a bar
    where :func:`wanted`, else -- on any other output, a pipe or a log -- one line per stage
    on ``stream`` (default standard error) as it starts: ``label: item (k/n)``, so that work
    of tens of seconds is never silent. ``DPAMP_PROGRESS=0`` and worker processes print
    nothing."""
    items = list(items)
    if wanted(stream):
        yield from progress(items, label=label, stream=stream)
        return
    import multiprocessing
    if _env_setting() is False or multiprocessing.parent_process() is not None:
        yield from items
        return
    out = sys.stderr if stream is None else stream
    for k, item in enumerate(items, start=1):
        print(f"{label}: {item} ({k}/{len(items)})", file=out, flush=True)
        yield item
