"""One small pool of threads for independent work inside a query (e.g. the two directions of a
PLD): numpy's loops and scipy.fft release the GIL, so on a machine with two cores such work
runs side by side. With ``THREADS`` = 1 everything runs in the caller, in order."""
from __future__ import annotations

import concurrent.futures
import os
import threading

#: worker threads of the pool (1: none; the work is done at submission)
THREADS = min(2, os.cpu_count() or 1)
_POOL = None
_LOCK = threading.Lock()


def _forget_pool():
    """In a forked child (a process pool of sweeps): the parent's pool has no threads here,
    and work queued to it would wait forever; a new one is made on first use."""
    global _POOL, _LOCK
    _POOL, _LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def pooled() -> bool:
    """Whether :func:`submit` would hand work to another thread (False with ``THREADS`` = 1
    and inside a pool thread, where it runs the work at once)."""
    return THREADS > 1 and not threading.current_thread().name.startswith("dpamp")


def submit(fn, *args, **kwargs) -> concurrent.futures.Future:
    """A future of fn(*args, **kwargs), run by the pool (or at once when THREADS is 1, or when
    called from a pool thread, which must not wait on its own pool)."""
    global _POOL
    if not pooled():
        fut: concurrent.futures.Future = concurrent.futures.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:     # handed to whoever waits on the future, as a pool does
            fut.set_exception(exc)
        return fut
    with _LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(THREADS, thread_name_prefix="dpamp")
    return _POOL.submit(fn, *args, **kwargs)
