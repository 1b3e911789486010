"""Log-space arithmetic shared by every family of bounds (RDP moments, profiles, PLD windows):
vectorised, warning-free, and exact at the ends (-inf for zero, +inf for infinity)."""
from __future__ import annotations

import numpy as np


def log1mexp(x):
    """log(1 - e^x) for x <= 0, accurate on both sides of -log 2; -inf at 0."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(x > -0.6931471805599453, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def log_expm1(x):
    """log(e^x - 1) for x >= 0 without overflow (x + log1p(-e^{-x}) for large x); -inf at 0,
    inf at inf."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out = np.where(x > 1.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(x)))
    return np.where(np.isposinf(x), np.inf, out)


def logaddexp(a, b):
    """log(e^a + e^b), -inf when both are -inf (no warning)."""
    with np.errstate(invalid="ignore"):
        out = np.logaddexp(a, b)
    return np.where(np.isneginf(a) & np.isneginf(b), -np.inf, out)


def logsumexp(a, axis=None):
    """log sum exp along ``axis`` (all elements for None, giving a float): -inf for an empty or
    all -inf sum, +inf if any term is +inf. Plain numpy: scipy's version carries array-API
    overhead that dominates on the small arrays of the hot paths."""
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return -np.inf if axis is None else np.full(np.delete(a.shape, axis), -np.inf)
    m = np.max(a, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        s = np.log(np.sum(np.exp(a - m_safe), axis=axis, keepdims=True)) + m_safe
    out = np.where(np.isneginf(m), -np.inf, np.where(np.isposinf(m), np.inf, s))
    return float(out.squeeze()) if axis is None else np.squeeze(out, axis=axis)
