"""Sweeps: a grid of DP-SGD plans answered on one core, a process pool or a Dask cluster.

    rows = dp.sweep({"noise_multiplier": [0.8, 1.0, 1.2], "batch_size": [256, 512],
                     "dataset_size": 60_000, "epochs": [1, 10, 100], "delta": 1e-5},
                    output="results.jsonl")
    rows[0]["epsilon_upper"], rows.to_pandas()

The grid (:mod:`.sweep_grid`; a TOML grid file: :mod:`dpamp.io.grid`) expands into rows; the
rows are packed into chunks (:func:`.sweep_rows.plan_chunks`: rows of one step mechanism
together, about a second of work each) and run by a backend (:mod:`.sweep_backends`). Every
finished row is appended to ``output`` at once (JSON lines or CSV, :mod:`dpamp.io.results`);
rerunning the same sweep skips the rows already there. docs/sweeps.md has the whole story.
"""
from __future__ import annotations

import concurrent.futures
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..accounting.sweep_grid import COLUMNS, GridError, expand, row_key
from ..accounting.sweep_rows import compute_row

if TYPE_CHECKING:
    from .grid import Grid

__all__ = ["sweep", "SweepResult", "SweepInterrupted", "GridError", "expand", "row_key",
           "compute_row", "COLUMNS"]


class SweepResult(list):
    """The rows of a sweep (dicts with the keys :data:`COLUMNS`), in grid order.

    ``computed``: rows computed by this call; ``skipped``: rows found in ``output`` and not
    computed again; ``errors``: rows that record an error; ``backend``, ``workers``,
    ``seconds`` (wall time of the call), ``output`` (the results file, or None)."""

    computed: int = 0
    skipped: int = 0
    backend: str = ""
    workers: int | None = None
    seconds: float = 0.0
    output: str | None = None

    @property
    def errors(self) -> int:
        return sum(1 for r in self if r.get("error"))

    def to_pandas(self):
        """The rows as a ``pandas.DataFrame`` (columns in :data:`COLUMNS` order)."""
        try:
            import pandas
        except ImportError:
            raise ValueError("to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(list(self), columns=list(COLUMNS))

    def summary(self) -> str:
        done = f"{len(self)} rows: {self.computed} computed"
        if self.skipped:
            done += f", {self.skipped} already in {self.output}"
        if self.errors:
            done += f", {self.errors} with an error"
        if self.backend == "sequential":
            where = " in this process"
        else:
            where = f" by {self.backend}" + (f" ({self.workers} workers)" if self.workers
                                             else "")
        return f"{done}{where} in {self.seconds:.1f} s"


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: the pending chunks were cancelled and every finished row is in
    the output file (complete lines only). ``result``: the rows done so far (a
    :class:`SweepResult`, grid order). Rerun the same sweep to compute the others."""

    def __init__(self, result: SweepResult):
        self.result = result
        where = f"; they are in {result.output}: rerun to resume" if result.output else ""
        super().__init__(f"sweep interrupted after {result.computed} new rows{where}")


def _rows_of(grid) -> list[dict]:
    """The rows of a grid given as a mapping, a list of mappings, a loaded grid file (an
    object with ``rows``) or the path of a grid file."""
    if isinstance(grid, (str, os.PathLike)):
        from .grid import load_grid
        return list(load_grid(grid).rows)
    if hasattr(grid, "rows") and not isinstance(grid, (dict, list, tuple)):
        return list(grid.rows)
    return expand(grid)


def _progress_bar(total: int, enabled: bool | None):
    """A tqdm bar on standard error when it is a terminal (``enabled=None``) or when asked
    (``True``), and tqdm is installed; else None."""
    if enabled is False or total == 0:
        return None
    if enabled is None:
        try:
            if not sys.stderr.isatty():
                return None
        except (AttributeError, ValueError):
            return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="row", desc="sweep", file=sys.stderr, smoothing=0.1)


def sweep(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]] | str | os.PathLike | Grid,
          output: str | os.PathLike | None = None, *, workers: int | None = None,
          executor: concurrent.futures.Executor | None = None, dask: Any = None,
          format: str | None = None, resume: bool = True, retry_errors: bool = True,
          chunk_size: int | None = None, chunk_seconds: float = 1.0,
          progress: bool | None = None) -> SweepResult:
    """Answer every row of ``grid`` and return the rows in grid order.

    ``grid``: a mapping of the grid keys (``noise_multiplier``, ``batch_size`` +
    ``dataset_size`` or ``sample_rate``, ``epochs`` or ``steps``, ``sampler``, ``delta``,
    ``epsilon``, ``target``, ``method``, ``tol``) to a value or a list of values (the rows are
    the Cartesian product), a list of such mappings, a grid file's path or
    :func:`dpamp.io.grid.load_grid`'s result. See docs/sweeps.md.

    Where: ``dask`` (a ``dask.distributed.Client`` or a scheduler address
    ``"tcp://host:8786"``), else ``executor`` (any ``concurrent.futures.Executor``, e.g.
    ``client.get_executor()``), else a process pool of ``workers`` processes (default: the
    cores available; ``workers=1``, or a sweep of one chunk, runs in this process). Every
    backend runs the same chunks and returns the same rows (except ``time``).

    ``output``: a results file (``.jsonl`` or ``.csv``, or ``format="jsonl" | "csv"``); each
    row is appended as soon as it is done. With ``resume`` (default) the rows already in it
    are not computed again (those with an error are, unless ``retry_errors=False``);
    ``resume=False`` replaces the file. ``chunk_size``: rows per task (default: about
    ``chunk_seconds`` of work). ``progress``: a tqdm bar (default: when standard error is a
    terminal and tqdm is installed).

    A row that fails records ``"error": "Type: message"`` and the sweep goes on. Ctrl-C
    cancels the pending work and raises :class:`SweepInterrupted` (a KeyboardInterrupt) whose
    ``result`` holds the rows done; the file holds them too. Worker processes that die (a
    broken pool) stop the sweep with a RuntimeError; the finished rows are kept."""
    t0 = time.perf_counter()
    rows = _rows_of(grid)
    keys = [row_key(r) for r in rows]
    position = {k: i for i, k in enumerate(keys)}
    _check_chunking(chunk_size, chunk_seconds)
    done, fmt = _rows_done(output, format, resume, retry_errors, position)
    skipped = len(done)
    todo = [r for r, k in zip(rows, keys) if k not in done]
    from ..accounting.sweep_backends import make_backend
    from ..accounting.sweep_rows import plan_chunks
    chunks = plan_chunks(todo, chunk_size, chunk_seconds)
    backend = make_backend(len(chunks), workers, executor, dask)

    def result() -> SweepResult:
        out = SweepResult(sorted(done.values(), key=lambda r: position[r["key"]]))
        out.computed, out.skipped = len(done) - skipped, skipped
        out.backend, out.workers = backend.name, backend.workers
        out.seconds = time.perf_counter() - t0
        out.output = None if output is None else os.fspath(output)
        return out

    try:
        _run_chunks(backend, chunks, len(todo), done, output, fmt, resume, progress)
    except KeyboardInterrupt:
        raise SweepInterrupted(result()) from None
    return result()


def _check_chunking(chunk_size, chunk_seconds):
    if chunk_size is not None and (isinstance(chunk_size, bool) or
                                   not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be an integer >= 1 (got {chunk_size!r})")
    if not (isinstance(chunk_seconds, (int, float)) and chunk_seconds > 0):
        raise ValueError(f"chunk_seconds must be a positive number (got {chunk_seconds!r})")


def _rows_done(output, format, resume: bool, retry_errors: bool, position: dict) -> tuple:
    """(rows already in ``output`` by key, the file's format): with ``resume``, the rows of
    this grid found there (less those with an error when ``retry_errors``); ({}, None)
    without an output file."""
    done: dict[str, dict] = {}
    if output is None:
        if format is not None:
            raise ValueError("format needs an output file")
        return done, None
    from . import results as R
    fmt = R.format_of(output, format)
    if resume:
        for key, row in R.latest_rows(R.read_results(output, fmt, missing_ok=True)).items():
            if key in position and not (retry_errors and row.get("error")):
                done[key] = row
    return done, fmt


def _run_chunks(backend, chunks, total: int, done: dict, output, fmt, resume: bool,
                progress):
    """Run ``chunks`` on ``backend``: every finished row appended to ``output`` (if any) at
    once and kept in ``done`` by key. The writer and the progress bar are closed however it
    ends (Ctrl-C included: the rows written so far are complete lines)."""
    writer = bar = None
    try:
        with backend:
            if output is not None:
                from . import results as R
                writer = R.ResultWriter(output, fmt, append=resume)
            bar = _progress_bar(total, progress)
            finishing = backend.results(chunks)
            try:
                for finished in finishing:
                    for row in finished:
                        if writer is not None:
                            writer.write(row)
                        done[row["key"]] = row
                    if bar is not None:
                        bar.update(len(finished))
            finally:
                finishing.close()  # at once, even on Ctrl-C: a chunk in this process lets go
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
