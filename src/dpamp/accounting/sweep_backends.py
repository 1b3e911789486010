"""Where the chunks of a sweep run: in this process, on a process pool (the default), on any
``concurrent.futures.Executor``, or on a Dask cluster (its futures).

Each backend is a context manager whose ``results(chunks)`` yields lists of finished rows as
they come (in completion order). Leaving the context early (Ctrl-C, an error) cancels the chunks
not yet started; a pool or a Dask client the backend made itself is shut down, one it was given
is left running. A chunk whose task fails as a whole (a worker died, a pickling error) yields its
rows with that error, and the sweep goes on; a pool whose processes died (``BrokenExecutor``)
stops the sweep with a RuntimeError (every chunk left would fail the same way).
"""
from __future__ import annotations

import os

from .sweep_rows import error_row, iter_chunk, run_chunk

__all__ = ["make_backend", "default_workers", "Sequential", "ExecutorBackend", "DaskBackend"]


def default_workers() -> int:
    """The cores this process may use."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _failed(chunk, exc) -> list[dict]:
    return [error_row(inputs, f"{type(exc).__name__}: {exc}") for inputs in chunk]


class Sequential:
    """Every chunk in this process, one row after another (each row is yielded as soon as it
    is computed, so an interruption loses nothing that finished)."""

    name = "sequential"
    workers = 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def results(self, chunks):
        for chunk in chunks:
            rows = iter_chunk(chunk)
            try:
                for row in rows:
                    yield [row]
            finally:
                rows.close()  # releases the chunk's lock and cache at once, even on Ctrl-C


def _ignore_sigint():  # pragma: no cover - runs in the pool's worker processes
    """Pool workers leave Ctrl-C to the parent, which cancels the sweep and stops them."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _preload() -> list[str]:
    """What a worker needs, imported once by the fork server rather than by each worker's
    first row (about 0.25 s): the accounting methods (which register themselves when
    imported) and the PLD engine."""
    from .registry import _PLUGINS
    return ["dpamp.accounting.sweep_rows", *_PLUGINS, "dpamp.pld.query"]


def process_pool(workers: int):
    """A process pool for ``workers`` processes. On POSIX the workers are forked from a
    fork server that has already imported dpamp (fast to start, and safe in a process that
    runs threads); elsewhere they are spawned."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    methods = multiprocessing.get_all_start_methods()
    ctx: multiprocessing.context.BaseContext
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_preload())
    else:  # pragma: no cover - Windows
        ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_ignore_sigint)


class ExecutorBackend:
    """Chunks submitted to a ``concurrent.futures.Executor`` (a process pool, or a Dask
    ``client.get_executor()``); ``own``: the backend shuts it down when done."""

    def __init__(self, executor, workers: int | None = None, own: bool = False):
        self.executor, self.own = executor, own
        self.workers = workers
        self.name = "process pool" if own else type(executor).__name__
        self.futures: list = []

    def __enter__(self):
        return self

    def results(self, chunks):
        from concurrent.futures import BrokenExecutor, as_completed
        owner = {}
        try:
            for chunk in chunks:
                f = self.executor.submit(run_chunk, chunk)
                owner[f] = chunk
                self.futures.append(f)
            for f in as_completed(owner):
                try:
                    rows = f.result()
                except BrokenExecutor:
                    raise
                except Exception as e:  # noqa: BLE001 - the chunk as a whole failed
                    rows = _failed(owner[f], e)
                yield rows
        except BrokenExecutor as e:
            raise RuntimeError(
                f"the sweep stopped: its worker processes died ({type(e).__name__}: {e}). "
                "The rows finished so far are saved; rerun to resume. A worker dies when it "
                "runs out of memory, or when a script that calls dp.sweep lacks "
                "`if __name__ == '__main__':` (the workers import it)") from e

    def __exit__(self, kind, exc, tb):
        interrupted = kind is not None
        if interrupted:
            for f in self.futures:
                f.cancel()
        if self.own:
            if interrupted:
                stop = getattr(self.executor, "terminate_workers", None)  # Python >= 3.14
                if stop is not None:
                    stop()
                else:
                    for p in list(getattr(self.executor, "_processes", {}).values()):
                        p.terminate()
            self.executor.shutdown(wait=not interrupted, cancel_futures=True)
        return False


class DaskBackend:
    """Chunks submitted as Dask futures (``client.submit``), gathered as they complete. The
    client is given, or made from a scheduler address (then closed at the end). The workers need
    dpamp installed (the same version)."""

    name = "dask"

    def __init__(self, client) -> None:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ValueError("a Dask sweep needs dask.distributed: pip install "
                             "'dpamp[sweep]'") from None
        self.own = isinstance(client, str)
        if self.own:
            try:
                client = Client(client, timeout="20s")
            except (OSError, TimeoutError) as e:
                raise ValueError(f"cannot reach the Dask scheduler at {client}: {e}") from None
        self.client = client
        self.futures: list = []
        try:
            self.workers = sum(self.client.nthreads().values()) or None
        except Exception:  # noqa: BLE001 - informational only
            self.workers = None

    def __enter__(self):
        return self

    def results(self, chunks):
        from dask.distributed import as_completed
        owner = {}
        for chunk in chunks:
            f = self.client.submit(run_chunk, chunk, pure=False)
            owner[f.key] = chunk
            self.futures.append(f)
        for f in as_completed(self.futures):
            try:
                rows = f.result()
            except Exception as e:  # noqa: BLE001 - the chunk as a whole failed
                rows = _failed(owner[f.key], e)
            yield rows
            f.release()

    def __exit__(self, kind, exc, tb):
        try:
            if kind is not None and self.futures:
                self.client.cancel(self.futures)
        finally:
            if self.own:
                self.client.close()
        return False


def make_backend(n_chunks: int, workers: int | None = None, executor=None, dask=None):
    """The backend for these arguments: ``dask`` (a ``dask.distributed.Client`` or a
    scheduler address such as ``"tcp://host:8786"``), else ``executor``, else a process pool
    of ``workers`` processes (default: the cores available), or this process when one worker
    (or one chunk) suffices."""
    if sum(x is not None for x in (workers, executor, dask)) > 1:
        raise ValueError("give at most one of workers, executor and dask")
    if dask is not None:
        return DaskBackend(dask)
    if executor is not None:
        from concurrent.futures import Executor
        if not isinstance(executor, Executor):
            raise ValueError(f"executor must be a concurrent.futures.Executor (got "
                             f"{executor!r}); for Dask pass dask=client or "
                             "executor=client.get_executor()")
        return ExecutorBackend(executor)
    if workers is None:
        workers = default_workers()
    elif isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1 (got {workers!r})")
    workers = min(workers, n_chunks)
    if workers <= 1:
        return Sequential()
    return ExecutorBackend(process_pool(workers), workers=workers, own=True)
