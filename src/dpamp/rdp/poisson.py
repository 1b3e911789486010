"""Tight RDP of Poisson subsampling under add/remove (Steinke 2022, Thm 34)."""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..core.logspace import log_expm1

#: orders above this are not summed exactly (O(alpha) terms each); callers cap instead
MAX_EXACT_ORDER = 4096


def poisson_log_moments(base_eps: np.ndarray, q: float, orders: np.ndarray) -> np.ndarray:
    """log of the moment in Steinke 2022, Thm 34 for integer orders alpha >= 2:

        A(alpha) = (1-q)^{alpha-1} (1 + (alpha-1) q)
                   + sum_{k=2}^{alpha} C(alpha,k) (1-q)^{alpha-k} q^k e^{(k-1) eps(k)},

    so that eps'(alpha) = log A(alpha) / (alpha - 1). ``base_eps[k-2]`` is the inner mechanism's
    RDP at order k, for k = 2 .. max(orders).

    Since the binomial weights sum to one and the k = 0, 1 terms carry e^0,
        A(alpha) - 1 = sum_{k=2}^{alpha} C(alpha,k) (1-q)^{alpha-k} q^k (e^{(k-1) eps(k)} - 1),
    a sum of non-negative terms; we evaluate log A = log1p(A - 1) with a log-sum-exp of those
    terms (expm1 inside), which keeps full relative precision when A is close to 1 (tiny rates,
    large sigma) and never overflows for large orders."""
    orders = np.asarray(orders, dtype=np.int64)
    kmax = int(orders.max())
    k = np.arange(2, kmax + 1)
    a = orders[:, None].astype(float)
    kk = k[None, :].astype(float)
    log1mq = np.log1p(-q) if q < 1 else -np.inf
    # log n! for n = 0 .. kmax, looked up: the same gammaln values as on the whole matrix
    lfact = gammaln(np.arange(kmax + 1, dtype=float) + 1.0)
    above = np.clip(orders[:, None] - k[None, :], 0, kmax)     # alpha - k where k <= alpha
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # (alpha-k) log(1-q): 0 * -inf must be 0 at k = alpha when q = 1
        tail = np.where(a - kk == 0, 0.0, (a - kk) * log1mq)
        terms = (lfact[orders][:, None] - lfact[k][None, :] - lfact[above] + tail
                 + kk * np.log(q) + log_expm1((k - 1) * base_eps[: kmax - 1])[None, :])
    terms = np.where(kk <= a, terms, -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(terms, axis=1)
        m_safe = np.where(np.isfinite(m), m, 0.0)
        log_s = np.log(np.sum(np.exp(terms - m_safe[:, None]), axis=1)) + m_safe
        out = np.logaddexp(0.0, log_s)
    return np.where(np.isnan(out), np.inf, out)
