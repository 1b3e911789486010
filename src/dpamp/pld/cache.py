"""The cache of composed PMFs: a query asked again (plots, sweeps, calibration) reuses its
composition; the key holds every input of the query, so an answer never depends on what was
asked before in the process."""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict


class PLDCache:
    """The composed PMFs of the last few queries, reused by the same query asked again."""

    def __init__(self, size=8) -> None:
        self.size = size
        self.store: OrderedDict = OrderedDict()
        # queries from several threads: an OrderedDict's reordering is not atomic
        self._lock = threading.Lock()
        _ALL.add(self)

    def _new_lock(self):
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            v = self.store.get(key)
            if v is not None:
                self.store.move_to_end(key)
            return v

    def put(self, key, value):
        with self._lock:
            self.store[key] = value
            self.store.move_to_end(key)
            while len(self.store) > self.size:
                self.store.popitem(last=False)


#: every cache, for the fork hook: a child forked while another thread held a cache's lock
#: would wait forever on it, so each child starts with new locks (weakly held: no leak)
_ALL: "weakref.WeakSet[PLDCache]" = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [c._new_lock() for c in list(_ALL)])


class ByIdentity:
    """Cache key of an unhashable mechanism: equal only to itself, and holding the object, so
    that its id cannot be reused by another one while the entry lives (a bare id() could)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, ByIdentity) and other.obj is self.obj


def cache_key(mechanism):
    """The cache key: the mechanism itself (frozen dataclasses hash by value), else its
    identity (:class:`ByIdentity`)."""
    try:
        hash(mechanism)
        return mechanism
    except TypeError:
        return ByIdentity(mechanism)
