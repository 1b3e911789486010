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


def _float(name: str, value, rng: str) -> float:
    """float(value) for a scalar real (bools, strings, complex refused): an int or Fraction
    beyond the float range (10**400) is refused naming the parameter rather than raising
    OverflowError, or being silently rounded to inf."""
    if isinstance(value, (bool, np.bool_)) or \
            not isinstance(value, (Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number (got {_fmt(value)})")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a number in {rng} (got a value of magnitude "
                         "beyond the float range, about 1.8e308)") from None


def real(name: str, value, *, low=-math.inf, high=math.inf, low_open=False, high_open=False,
         allow_inf=False) -> float:
    """A scalar real in the interval [low, high] (ends open as asked); NaN always refused."""
    lo = "(" if low_open else "["
    hi = ")" if high_open or (math.isinf(high) and not allow_inf) else "]"
    rng = f"{lo}{low:g}, {high:g}{hi}"
    x = _float(name, value, rng)
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


#: largest integer accepted by default: integers are used as float counts and numpy int64
#: indices downstream, where 10**400 would overflow (2**53: every smaller integer is a float)
MAX_INTEGER = 2 ** 53


def integer(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (or an integer-valued float) in [low, high]; ``high`` defaults to
    :data:`MAX_INTEGER`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer (got {_fmt(value)})")
    v = int(value)
    top = MAX_INTEGER if high is None else high
    if (low is not None and v < low) or v > top:
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None and v <= top else str(top)
        shown = str(v) if abs(v) < 10 ** 30 else f"an integer with {len(str(abs(v)))} digits"
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}] (got {shown})")
    return v


def real_array(name: str, value) -> np.ndarray:
    """A float array from real input: numbers, sequences or arrays of ints / floats. Strings,
    bools, complex numbers and other objects are refused naming the parameter (a bare
    ``np.asarray(x, dtype=float)`` would read "1" as 1.0, True as 1.0 and drop an imaginary
    part); ints beyond the float range (10**400) too, instead of an OverflowError."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be real numbers (got the string {value!r})")
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):  # ragged nested sequences
        raise ValueError(f"{name} must be a number or an array of numbers "
                         f"(got {_fmt(value)})") from None
    kind = a.dtype.kind
    if kind in "iuf":
        with np.errstate(over="ignore"):
            return a.astype(float)
    if kind == "O":
        flat = [_float(name, v, "the float range") for v in a.ravel().tolist()]
        return np.array(flat, dtype=float).reshape(a.shape)
    what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "strings"}.get(
        kind, f"values of dtype {a.dtype}")
    raise ValueError(f"{name} must be real numbers (got {what}: {_fmt(value)})")


def orders(alpha, name: str = "alpha") -> np.ndarray:
    """Rényi orders: array of reals > 1 (+inf allowed), never NaN."""
    a = real_array(name, alpha)
    if a.size == 0:
        raise ValueError(f"{name} must contain at least one order > 1")
    if np.isnan(a).any():
        raise ValueError(f"{name} must be real orders in (1, inf] (got nan)")
    if (a <= 1).any():
        raise ValueError(f"{name} must be orders in (1, inf] (got {a[a <= 1].ravel()[0]:g})")
    return a


def reals(name: str, value, *, low=-math.inf, allow_inf=True, low_open=False) -> np.ndarray:
    """An array of reals >= low (> low when low_open), never NaN."""
    a = real_array(name, value)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not contain nan")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite")
    bad = a <= low if low_open else a < low
    if bad.any():
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low:g} (got {a[bad].ravel()[0]:g})")
    return a
