"""Input validation at the library boundary.

Every public entry point funnels its numeric arguments through these helpers so that a bad value
is refused early with a ValueError naming the parameter and its valid range (DESIGN invariant 5).
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np


def _fmt(value) -> str:
    return repr(value) if not isinstance(value, np.ndarray) else f"array with {value.size} values"


def real(name: str, value, *, low=-math.inf, high=math.inf, low_open=False, high_open=False,
         allow_inf=False) -> float:
    """A scalar real in the interval [low, high] (ends open as asked); NaN always refused."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number (got {_fmt(value)})")
    x = float(value)
    lo = "(" if low_open else "["
    hi = ")" if high_open or (math.isinf(high) and not allow_inf) else "]"
    rng = f"{lo}{low:g}, {high:g}{hi}"
    if math.isnan(x):
        raise ValueError(f"{name} must be a number in {rng} (got nan)")
    if math.isinf(x) and not allow_inf:
        raise ValueError(f"{name} must be finite, in {rng} (got {x})")
    if x < low or x > high or (low_open and x == low) or (high_open and x == high):
        raise ValueError(f"{name} must be in {rng} (got {x:g})")
    return x


def positive(name: str, value, *, allow_inf=False) -> float:
    return real(name, value, low=0.0, low_open=True, allow_inf=allow_inf)


def nonnegative(name: str, value, *, allow_inf=False) -> float:
    return real(name, value, low=0.0, allow_inf=allow_inf)


def probability(name: str, value, *, low_open=False, high_open=False) -> float:
    return real(name, value, low=0.0, high=1.0, low_open=low_open, high_open=high_open)


def delta(value, name: str = "delta", *, allow_zero=False) -> float:
    """delta in (0, 1) ([0, 1) when allow_zero)."""
    return real(name, value, low=0.0, high=1.0, low_open=not allow_zero, high_open=True)


def integer(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer (got {_fmt(value)})")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None else str(high)
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}] (got {v})")
    return v


def orders(alpha, name: str = "alpha") -> np.ndarray:
    """Rényi orders: array of reals > 1 (+inf allowed), never NaN."""
    a = np.asarray(alpha, dtype=float)
    if a.size == 0:
        raise ValueError(f"{name} must contain at least one order > 1")
    if np.isnan(a).any():
        raise ValueError(f"{name} must be real orders in (1, inf] (got nan)")
    if (a <= 1).any():
        raise ValueError(f"{name} must be orders in (1, inf] (got {a[a <= 1].ravel()[0]:g})")
    return a


def reals(name: str, value, *, low=-math.inf, allow_inf=True, low_open=False) -> np.ndarray:
    """An array of reals >= low (> low when low_open), never NaN."""
    a = np.asarray(value, dtype=float)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not contain nan")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite")
    bad = a <= low if low_open else a < low
    if bad.any():
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low:g} (got {a[bad].ravel()[0]:g})")
    return a
