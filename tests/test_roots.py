"""The root finders of dpamp.core.roots: each keeps its bracket's invariant (pred false at lo,
true at hi, every end an evaluated point), narrows it as its docstring says, and takes a number
of steps fixed by its arguments (counted here by the evaluations, never timed)."""
import math

import numpy as np
from hypothesis import example, given, settings, strategies as st

from dpamp.core import roots

finite = st.floats(-1e6, 1e6, allow_nan=False)


class Counted:
    """pred(x) = x >= root, recording every point it is asked about."""

    def __init__(self, root, array=False):
        self.root, self.seen, self.array = root, [], array

    def __call__(self, x):
        self.seen.append(np.copy(x) if self.array else x)
        return x >= self.root


@st.composite
def brackets(draw):
    """(root, lo, hi) with lo < root <= hi, so pred(lo) is false and pred(hi) true."""
    a, b, c = sorted(draw(st.lists(finite, min_size=3, max_size=3, unique=True)))
    return b, a, draw(st.sampled_from([b, c]))


@settings(max_examples=200, deadline=None)
@given(brackets(), st.integers(0, 80))
def test_bisect_keeps_the_bracket_and_halves_it(bracket, n):
    root, lo0, hi0 = bracket
    pred = Counted(root)
    lo, hi = roots.bisect(pred, lo0, hi0, iterations=n)
    assert len(pred.seen) == n                     # exactly n steps without rtol
    assert lo < root <= hi and not lo >= root
    assert lo in [lo0] + pred.seen and hi in [hi0] + pred.seen
    # each step halves the width, up to the rounding of the midpoint
    assert hi - lo <= (hi0 - lo0) * 0.5 ** n * (1 + 1e-12) + 4 * math.ulp(max(abs(lo0), abs(hi0)))


@settings(max_examples=200, deadline=None)
@given(brackets(), st.integers(0, 80))
def test_bisect_of_a_reversed_bracket(bracket, n):
    """The true end may be the lower one: pred(x) = x < root, lo above it, hi below."""
    root, a, b = bracket
    lo, hi = roots.bisect(lambda x: x < root, b, a, iterations=n)
    assert hi < root <= lo
    assert lo - hi <= (b - a) * 0.5 ** n * (1 + 1e-12) + 4 * math.ulp(max(abs(a), abs(b)))


@settings(max_examples=200, deadline=None)
@given(brackets(), st.floats(1e-12, 0.4), st.floats(0.0, 1e-3), st.integers(1, 200))
def test_bisect_stops_at_the_tolerance(bracket, rtol, atol, n):
    root, lo0, hi0 = bracket
    pred = Counted(root)
    lo, hi = roots.bisect(pred, lo0, hi0, iterations=n, rtol=rtol, atol=atol)
    assert lo < root <= hi
    narrow = lambda a, b: b - a <= rtol * b + atol  # noqa: E731
    # it stops at the first narrow bracket, or after n steps
    assert len(pred.seen) == n or narrow(lo, hi)
    assert len(pred.seen) <= n
    # no step was taken from a bracket already narrow: replay the steps
    a, b = lo0, hi0
    for x in pred.seen:
        assert not narrow(a, b)
        a, b = (a, x) if x >= root else (x, b)
    assert (a, b) == (lo, hi)


def test_bisect_is_deterministic_and_bitwise_the_loop_it_replaces():
    f = lambda x: math.exp(x) - 3.0  # noqa: E731
    lo, hi = 0.0, 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if f(mid) >= 0 else (mid, hi)
    assert roots.bisect(lambda x: f(x) >= 0, 0.0, 2.0, iterations=60) == (lo, hi)
    assert roots.bisect(lambda x: f(x) >= 0, 0.0, 2.0, iterations=60) == (lo, hi)


@settings(max_examples=100, deadline=None)
@given(st.lists(brackets(), min_size=1, max_size=8), st.integers(0, 60), st.data())
def test_bisect_array_is_the_scalar_bisection_element_by_element(bks, n, data):
    root, lo0, hi0 = (np.array(v) for v in zip(*bks))
    where = np.array(data.draw(st.lists(st.booleans(), min_size=root.size,
                                        max_size=root.size)))
    pred = Counted(root, array=True)
    lo, hi = roots.bisect_array(pred, lo0, hi0, iterations=n, where=where)
    assert len(pred.seen) == n
    for i in range(root.size):
        if where[i]:
            one = roots.bisect(lambda x: x >= root[i], lo0[i], hi0[i], iterations=n)
            assert (lo[i], hi[i]) == one
        else:
            assert (lo[i], hi[i]) == (lo0[i], hi0[i])     # frozen, untouched
    assert np.all(lo < root) and np.all(root <= hi)
    # without a mask every element moves; the inputs are not modified
    lo2, hi2 = roots.bisect_array(lambda x: x >= root, lo0, hi0, iterations=n)
    assert np.all(lo2 < root) and np.all(root <= hi2)
    assert np.all(hi2 - lo2 <= (hi0 - lo0) * 0.5 ** n * (1 + 1e-12)
                  + 4 * np.spacing(np.maximum(np.abs(lo0), np.abs(hi0))))


@settings(max_examples=300, deadline=None)
@given(st.integers(-10 ** 15, 10 ** 15), st.integers(1, 10 ** 15), st.data())
@example(0, 2 ** 49 - 1, None)
def test_bisect_int_finds_the_threshold(lo0, width, data):
    hi0 = lo0 + width
    # (the explicit example: root 1, where 48 steps suffice; a float log2 of 2^49 - 1 rounds
    # to 49 and asked for at least 49)
    root = lo0 + 1 if data is None else data.draw(st.integers(lo0 + 1, hi0))
    pred = Counted(root)
    lo, hi = roots.bisect_int(pred, lo0, hi0)
    assert (lo, hi) == (root - 1, root)
    steps = len(pred.seen)
    # floor and ceil of log2(width) in integers (bit lengths)
    assert width.bit_length() - 1 <= steps <= (width - 1).bit_length() if width > 1 \
        else steps == 0


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-300, 1e300), st.sampled_from([1.25, 2.0, 16.0]))
def test_expand_brackets_the_threshold(x0, root, factor):
    pred = Counted(root)
    lo, hi = roots.expand(pred, 0.0, x0, factor=factor)
    # one evaluation at each point x0, x0 factor, x0 factor^2, ... up to the first at or above
    # the root, and none after it
    assert pred.seen[0] == x0
    assert all(b == a * factor for a, b in zip(pred.seen, pred.seen[1:]))
    assert hi == pred.seen[-1] and hi >= root and all(x < root for x in pred.seen[:-1])
    assert (lo == 0.0) if len(pred.seen) == 1 else (lo == pred.seen[-2] and lo < root)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1.0), st.floats(1e-200, 1e200), st.floats(1.0, 1e100))
def test_expand_stops_past_the_limit(x0, root, limit):
    """(The given hi is evaluated wherever it lies: only the points the growth reaches are
    checked against the limit.)"""
    pred = Counted(root)
    lo, hi = roots.expand(pred, 0.0, x0, limit=limit)
    if abs(hi) > limit:
        assert hi not in pred.seen                # the point past the limit is not evaluated
        assert abs(lo) <= limit or lo == x0
        assert all(not p for p in (x >= root for x in pred.seen))
    else:
        assert hi >= root


def test_expand_downwards_and_negative():
    # halving towards 0 for a predicate true near 0
    lo, hi = roots.expand(lambda x: x <= 1e-3, 1.0, 1.0, factor=0.5)
    assert hi <= 1e-3 < lo and lo == 2 * hi
    # a negative start grows away from 0; the limit bounds |hi|
    _, x = roots.expand(lambda x: x <= -50.0, None, -1.0)
    assert x == -64.0
    _, x = roots.expand(lambda x: False, None, -1.0, limit=1e6)
    assert x == -2.0 ** 20
