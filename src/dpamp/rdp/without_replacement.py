"""RDP of sampling without replacement under substitution (Wang et al. 2019, Thm 9, Thm 19, Prop.
20).

A batch of m of the n records is drawn uniformly without replacement (gamma = m / n) and the
inner mechanism runs on it; neighbouring datasets differ by substituting one record.

Upper bound (Wang et al. 2019, Thm 9), for integer orders alpha >= 2, K(alpha-1) = (alpha-1)
eps'(alpha) =

    log( 1 + gamma^2 C(alpha,2) min{4(e^{eps(2)} - 1), e^{eps(2)} min{2, (e^{eps(inf)} - 1)^2}}
           + sum_{j=3}^{alpha} gamma^j C(alpha,j) c_j ),
    c_j = e^{(j-1) eps(j)} min{2, (e^{eps(inf)} - 1)^j}.

When the inner RDP curve is tight and self-consistent (Wang et al. 2019, Def. 18; the Gaussian by
Wang et al. 2019, Lemma 27, binary randomized response trivially: it has a single pair of
neighbouring outputs up to swap), Wang et al. 2019, Thm 19 allows c_j to be replaced by 4 sqrt(B(2
floor(j/2)) B(2 ceil(j/2))) with the forward difference (errata: the sign is (-1)^{l-i})

    B(l) = sum_{i=0}^{l} (-1)^{l-i} C(l,i) e^{(i-1) eps(i)}    (e^{(i-1)eps(i)} := 1 for i = 0, 1),

i.e. B(l) = E_q[(p/q - 1)^l] of the tight pair. We take the per-term minimum of the two, which
is valid because each is a valid bound on the same ternary |chi|^j term of the proof.

B(l) is an alternating sum with heavy cancellation. It is evaluated in scaled floating point
together with a rigorous bound on its rounding error, and the upper end of the resulting interval
is used; where the error swamps the value, the Thm 9 term wins the minimum, so soundness never
depends on the cancellation behaving.

Lower bound (Wang et al. 2019, Prop. 20): with the pair that attains eps(.) (all records x, one x'),

    K(alpha-1) >= log( (1-gamma)^alpha (1 + alpha gamma/(1-gamma)
                        + sum_{j>=2} C(alpha,j) (gamma/(1-gamma))^j e^{(j-1) eps(j)}) ),

which is the Poisson moment A(alpha) of Steinke 2022, Thm 34 with q = gamma, so it reuses that code.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..core.logspace import log_expm1, logsumexp
from .poisson import poisson_log_moments

#: Orders above this are not evaluated by the O(alpha^2) sums (Wang et al. 2019, Sec. 4 computes
#: exactly only up to a threshold); there the caller's caps (base RDP, amplified pure DP) apply.
MAX_EXACT_ORDER = 512

_U = 2.0 ** -53  # unit roundoff of float64


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def log_moments_exp(base_eps: np.ndarray, kmax: int) -> np.ndarray:
    """a_i = (i-1) eps(i) = log E_q[(p/q)^i] for i = 0..kmax (a_0 = a_1 = 0)."""
    i = np.arange(2, kmax + 1, dtype=float)
    return np.concatenate([[0.0, 0.0], (i - 1.0) * base_eps[: kmax - 1]])


def log_forward_differences_upper(a: np.ndarray, lmax: int) -> np.ndarray:
    """Upper bounds on log B(l) for even l = 2, 4, ..., lmax (index l // 2 - 1), where
    B(l) = sum_i (-1)^{l-i} C(l,i) e^{a_i} >= 0 (a tight pair's E_q[(p/q-1)^l], l even).

    Each term is evaluated in log space, scaled by the largest, summed with its sign; the
    rounding error of the sum is bounded by sum_i |term_i| * r_i with r_i = 8u(|log term_i| + l + 4)
    (exp, gammaln and accumulated additions, all relative to the term's magnitude), and the
    returned value is log(max(sum + error, 0)) (-inf when the bound is 0)."""
    ls = np.arange(2, lmax + 1, 2)
    if ls.size == 0:
        return np.zeros(0)
    i = np.arange(0, lmax + 1, dtype=float)
    L = ls[:, None].astype(float)
    inside = i[None, :] <= L
    with np.errstate(invalid="ignore"):
        logt = np.where(inside, _log_binom(L, np.minimum(i[None, :], L)) + a[None, : lmax + 1],
                        -np.inf)
    sign = np.where((L - i[None, :]) % 2 == 0, 1.0, -1.0)
    m = np.max(logt, axis=1)
    scaled = np.exp(logt - m[:, None])
    s = np.sum(sign * scaled, axis=1)
    rel = 8.0 * _U * (np.abs(np.where(inside, logt, 0.0)) + L + 4.0)
    err = np.sum(scaled * rel, axis=1)
    upper = s + err
    with np.errstate(divide="ignore"):
        return np.where(upper > 0, m + np.log(np.maximum(upper, 1e-300)), -np.inf)


def wor_log_moments(base_eps: np.ndarray, eps_inf: float, gamma: float, orders: np.ndarray,
                    self_consistent: bool = False) -> np.ndarray:
    """K(alpha - 1) = (alpha-1) eps'(alpha) by Wang et al. 2019, Thm 9 (and Thm 19 per term when the
    inner curve is tight and self-consistent), at integer ``orders`` >= 2; +inf above
    MAX_EXACT_ORDER. ``base_eps[k-2]`` is the inner RDP at order k for k = 2..max(orders)."""
    orders = np.asarray(orders, dtype=np.int64)
    out = np.full(orders.shape, np.inf)
    ok = orders <= MAX_EXACT_ORDER
    if not ok.any():
        return out
    orders_ok = orders[ok]
    kmax = int(orders_ok.max())
    j = np.arange(2, kmax + 1, dtype=float)
    eps_j = np.asarray(base_eps[: kmax - 1], dtype=float)
    # log min{2, (e^{eps(inf)} - 1)^j}: log 2 when eps(inf) = inf, -inf when eps(inf) = 0
    with np.errstate(invalid="ignore"):
        log_pure = np.minimum(np.log(2.0), j * float(log_expm1(eps_inf)))
    coeff = (j - 1.0) * eps_j + log_pure                       # log c_j of Thm 9
    # j = 2: min{4(e^{eps(2)} - 1), e^{eps(2)} min{2, (e^{eps_inf} - 1)^2}}
    coeff[0] = min(np.log(4.0) + float(log_expm1(eps_j[0])), eps_j[0] + log_pure[0])
    if self_consistent and kmax >= 3:
        a = log_moments_exp(base_eps, kmax + 1)
        log_b = log_forward_differences_upper(a, 2 * ((kmax + 1) // 2))   # B(2), B(4), ...
        jj = np.arange(3, kmax + 1)
        lo, hi = 2 * (jj // 2), 2 * ((jj + 1) // 2)
        thm19 = np.log(4.0) + 0.5 * (log_b[lo // 2 - 1] + log_b[hi // 2 - 1])
        coeff[1:] = np.minimum(coeff[1:], thm19)
    A = orders_ok[:, None].astype(float)
    J = j[None, :]
    with np.errstate(invalid="ignore"):
        terms = _log_binom(A, np.minimum(J, A)) + J * np.log(gamma) + coeff[None, :]
    terms = np.where(J <= A, terms, -np.inf)
    out[ok] = np.logaddexp(0.0, logsumexp(terms, axis=1))
    return out


def wor_lower_log_moments(base_eps: np.ndarray, gamma: float, orders: np.ndarray) -> np.ndarray:
    """Wang et al. 2019, Prop. 20 lower bound on K(alpha - 1) at integer orders >= 2 (the inner
    curve must be attained by one pair of neighbouring batches). Rounded down by a relative 1e-12 so
    that it stays a lower bound after floating-point error."""
    val = poisson_log_moments(base_eps, gamma, np.asarray(orders, dtype=np.int64))
    return val * (1.0 - 1e-12)
