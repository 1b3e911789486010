"""The cache of composed PMFs: repeated queries of one mechanism (plots, sweeps, calibration,
another delta) reuse its composition when the bracket it gives is good enough."""
from __future__ import annotations

from collections import OrderedDict


class PLDCache:
    """The composed PMFs of the last few mechanisms, so that repeated queries (plots, sweeps,
    calibration) reuse them when their bracket is good enough."""

    def __init__(self, size=8):
        self.size = size
        self.store: OrderedDict = OrderedDict()

    def get(self, key):
        v = self.store.get(key)
        if v is not None:
            self.store.move_to_end(key)
        return v

    def put(self, key, value):
        self.store[key] = value
        self.store.move_to_end(key)
        while len(self.store) > self.size:
            self.store.popitem(last=False)


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
