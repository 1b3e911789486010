"""Tight RDP of Poisson subsampling under add/remove (004 Thm 34)."""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp


def poisson_log_moments(base_eps: np.ndarray, q: float, orders: np.ndarray) -> np.ndarray:
    """log of the moment in 004 Thm 34 for integer orders alpha >= 2:

        A(alpha) = (1-q)^{alpha-1} (1 + (alpha-1) q)
                   + sum_{k=2}^{alpha} C(alpha,k) (1-q)^{alpha-k} q^k e^{(k-1) eps(k)},

    so that eps'(alpha) = log A(alpha) / (alpha - 1). ``base_eps[k-2]`` is the inner mechanism's
    RDP at order k, for k = 2 .. max(orders). Computed as one log-sum-exp per order (rows of a
    masked matrix) so that nothing overflows for large orders or tiny q."""
    orders = np.asarray(orders, dtype=np.int64)
    kmax = int(orders.max())
    k = np.arange(2, kmax + 1)
    a = orders[:, None].astype(float)
    kk = k[None, :].astype(float)
    log1mq = np.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # (alpha-k) log(1-q): 0 * -inf must be 0 at k = alpha when q = 1
        tail = np.where(a - kk == 0, 0.0, (a - kk) * log1mq)
        terms = (gammaln(a + 1) - gammaln(kk + 1) - gammaln(a - kk + 1) + tail
                 + kk * np.log(q) + (kk - 1) * base_eps[None, : kmax - 1])
    terms = np.where(kk <= a, terms, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        head = np.where(orders - 1 == 0, 0.0, (orders - 1) * log1mq) + np.log1p((orders - 1) * q)
    allterms = np.concatenate([head[:, None], terms], axis=1)
    with np.errstate(invalid="ignore"):
        out = logsumexp(allterms, axis=1)
    return np.where(np.isnan(out), np.inf, out)
