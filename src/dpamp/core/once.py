"""A small cache of computed results keyed by a grid step, safe to share between threads.

The PLD engine discretises a query's two directions on two threads (:mod:`.threads`), and both
may ask a part for the same step at once: a plain dict with "pop the oldest" could then raise
(KeyError, or a dict changed during iteration) and computed the same arrays twice. Here the
first caller of a key computes it and any other waits for that result; the oldest results
beyond ``keep`` are forgotten (recomputed if asked for again: the same arguments give the same
arrays, so which thread computed a result never changes a number). An exception is passed to
the waiters and not remembered. In a forked child (a sweep's process pool) the cache starts
empty: a computation another thread had under way in the parent never finishes there.
"""
from __future__ import annotations

import concurrent.futures
import os
import threading
from typing import Any, Callable


class OnceCache:
    """``get(key, compute)``: compute() once per key, shared by the threads asking for it.

    ``keep``: how many results are remembered (the oldest go first); ``counted(value)``: whether
    a result counts towards ``keep`` (by default every one does; a cheap marker such as None
    for "does not fit" need not push out the results that cost memory)."""

    def __init__(self, keep: int, counted: Callable[[Any], bool] | None = None):
        self.keep = keep
        self.counted = counted
        self._reset()

    def _reset(self) -> None:
        self._items: dict[Any, concurrent.futures.Future[Any]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def get(self, key, compute: Callable[[], Any]):
        if os.getpid() != self._pid:
            self._reset()
        with self._lock:
            fut = self._items.get(key)
            owner = fut is None
            if owner:
                fut = self._items[key] = concurrent.futures.Future()
        assert fut is not None
        if not owner:
            return fut.result()
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                if self._items.get(key) is fut:
                    del self._items[key]
            fut.set_exception(exc)
            raise
        with self._lock:
            fut.set_result(value)
            done = [k for k, f in self._items.items() if f.done() and f.exception() is None
                    and (self.counted is None or self.counted(f.result()))]
            for k in done[:-self.keep] if self.keep > 0 else done:
                del self._items[k]
        return value

    def clear(self):
        with self._lock:
            self._items = {}


__all__ = ["OnceCache"]
