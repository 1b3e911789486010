"""core.once.OnceCache: one computation per key however many threads ask, the oldest results
forgotten beyond ``keep``, exceptions passed on and not remembered, empty after a fork."""
from __future__ import annotations

import os
import threading
import time

import pytest

from dpamp.core.once import OnceCache


def test_two_threads_asking_at_once_compute_once():
    cache, calls, results = OnceCache(keep=2), [], []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()
    threads = [threading.Thread(target=lambda: results.append(cache.get(1.0, slow)))
               for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(calls) == 1 and all(r is results[0] for r in results)


def test_keep_forgets_the_oldest_counted_results():
    cache, calls = OnceCache(keep=2, counted=lambda v: v is not None), []

    def make(k, value):
        return lambda: calls.append(k) or value
    for k in (1, 2, 3):
        cache.get(k, make(k, k))
    cache.get(9, make(9, None))              # not counted: nothing more is forgotten
    cache.get(3, make(3, 3)), cache.get(9, make(9, None))
    assert calls == [1, 2, 3, 9]
    cache.get(1, make(1, 1))                 # forgotten: computed again
    assert calls == [1, 2, 3, 9, 1]


def test_an_exception_reaches_every_caller_and_is_not_remembered():
    cache = OnceCache(keep=2)

    def boom():
        raise MemoryError("no room")
    with pytest.raises(MemoryError):
        cache.get(1, boom)
    assert cache.get(1, lambda: "built") == "built"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_empty():
    cache = OnceCache(keep=2)
    cache.get(1, lambda: "parent")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                              # the child: its own computation, not the parent's
        os.write(w, cache.get(1, lambda: "child").encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 16) == b"child"
    assert cache.get(1, lambda: "again") == "parent"
