"""Rényi DP of one epoch of random allocation (k of t steps) of the Gaussian mechanism.

Random k-out-of-t allocation runs t steps; each record takes part in exactly k of them, a
uniformly random k-subset, independently of the other records. Source: V. Feldman, M. Shenfeld,
*Privacy amplification by random allocation*, arXiv:2502.08202 (2025), "FS25" below.

**The pair.** FS25 reduce an epoch of random allocation of (adaptively chosen) Gaussian steps of
noise sigma and L2 sensitivity Delta under add/remove to one pair of distributions on R^t, with
mu = Delta / sigma and coordinates in units of sigma:

    P = E_S N(mu 1_S, I_t)   (S a uniform k-subset of [t]: the record is present)
    Q = N(0, I_t)                                     (the record is absent)

*remove* is D_alpha(P || Q), *add* is D_alpha(Q || P).

**Remove, k = 1** (FS25 Sec. 6, Cor. 6.2, the exact integer-order RDP, written here through a
generating function). With L_i = dN(mu e_i, I)/dN(0, I) = exp(mu y_i - mu^2/2), the L_i are
independent under Q with E_Q[L^j] = w_j = exp(j (j-1) mu^2 / 2), and dP/dQ = (1/t) sum_i L_i, so
by the multinomial theorem, for an integer order n,

    M_t(n) = E_Q[(dP/dQ)^n] = t^{-n} sum_{|c| = n} n!/(c_1! ... c_t!) prod_i w_{c_i}
           = n! t^{-n} [x^n] F(x)^t,        F(x) = sum_j w_j x^j / j!,

and eps(n) = log M_t(n) / (n - 1). (FS25 sum over the partitions of n; the coefficient of x^n in
F^t is the same sum.) F^t is computed by binary powering of power series truncated at the
largest order, in log space (every term is positive: no cancellation), with a running bound on
the rounding error that is added to the result.

**Remove and add, k >= 1: the block bound** (our argument). Cut [t] into k blocks of sizes
m_b in {floor(t/k), ceil(t/k)}, pick one step uniformly in each block, and relabel the steps by a
uniform random permutation pi. The chosen set has exactly k elements and a law invariant under
permutations, so it is a uniform k-subset: P = E_pi P_pi, where P_pi is the block scheme with
blocks pi(B_b). The Rényi moments int p^a q^{1-a} (a > 1) are jointly convex in (p, q), so both
moments of (P, Q) are at most the average over pi of those of (P_pi, Q), which do not depend on
pi; and (P_pi, Q) is a product over blocks of 1-out-of-m_b pairs, whose moments multiply. Hence

    eps_{k,t}(alpha) <= sum_b eps_{1,m_b}(alpha)     (both directions),

with equality for k = 1 and for k = t (then each block is the base mechanism: t x its RDP).

**Add** (our bound, the RDP form of the "direct" add-direction bound of FS25): the logarithm is
concave, so log((1/m) sum_i L_i) >= (1/m) sum_i log L_i, i.e. the add-direction privacy loss
log(dQ/dP) is at most Z = -(mu/m) sum_i y_i + mu^2/2, and Z ~ N(mu^2/2, mu^2/m) under Q. So
E_Q[(dQ/dP)^{a-1}] <= E_Q[e^{(a-1) Z}], which gives for every real a > 1

    eps_add,1,m(a) <= a mu^2 / (2 m) + (1 - 1/m) mu^2 / 2.

It is exact for m = 1; its second term does not shrink with m. A second bound (ours) that does,
at small orders: with X = (1/m) sum_i (L_i - 1), E_Q X = 0, E_Q X^2 = v = (e^{mu^2} - 1)/m, and
f(x) = (1 + x)^{-lambda}, lambda = a - 1, Taylor's theorem gives f(x) <= 1 - lambda x + K x^2
for x >= x0 (any x0 in (-1, 0)), K = lambda (lambda + 1) (1 + x0)^{-lambda-2} / 2, a quadratic
that is positive for x < 0; below x0 the geometric mean G <= 1 + X bounds f(X) <= G^{-lambda},
with log G ~ N(-mu^2/2, mu^2/m) and {X < x0} within {log G < log(1 + x0)}. So

    E_Q[(dQ/dP)^{a-1}] <= 1 + K v + e^{lambda mu^2/2 + lambda^2 mu^2/(2m)}
                              Phi((log(1 + x0) + mu^2/2 + lambda mu^2/m) / (mu/sqrt m)),

minimised over a grid of x0. Both are conservative (the add direction is not known exactly), so
under add/remove (both directions) the RDP route is a fast *conservative* answer; the PLD route
of :mod:`dpamp.amplification.allocation` is the tight one.

**Real orders.** K(lambda) = log M(lambda + 1) is a cumulant generating function of the privacy
loss, hence convex, with K(0) = 0: between integer orders it lies below the chord (Wang et al. 2019,
Cor. 10), which is what we report at non-integer orders. Above the largest order computed exactly
(:data:`MAX_ORDER`) and as a cap everywhere, eps <= the base's RDP alpha mu^2/2 in both
directions (quasi-convexity of the Rényi divergence: a mixture is no further from Q than its
farthest component).

Only the Gaussian is supported: the reduction above is FS25's for the Gaussian; other bases
raise NotImplementedError.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, log_ndtr

from ...core import validate as V
from ...core.rounding import ulps_up
from ...core.relations import Relation
from .grid import FUNC_ULPS

#: the largest integer order whose remove-direction moment is summed exactly (O(N^2 log t) work);
#: above it only the base's curve bounds the RDP
MAX_ORDER = 1024

_U = 2.0 ** -53
_DIRECTIONS = ("both", "remove", "add")


def _log_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log-coefficients of the product of two power series (log-coefficient arrays of equal
    length N+1, truncated at degree N): out_n = log sum_j exp(a_j + b_{n-j})."""
    n = a.size
    skew = np.full((n, 2 * n - 1), -np.inf)
    rows = np.arange(n)[:, None]
    cols = rows + np.arange(n)[None, :]
    skew[rows, cols] = a[:, None] + b[None, :]
    skew = skew[:, :n]
    m = np.max(skew, axis=0)
    with np.errstate(under="ignore"):
        s = np.sum(np.exp(skew - m[None, :]), axis=0)
    return np.log(s) + m


def _log_power(base: np.ndarray, power: int) -> tuple[np.ndarray, float]:
    """log-coefficients of base(x)^power truncated at degree base.size - 1, by binary powering,
    and a bound on the absolute error of every entry. One product adds at most
    u (N + 8 + 4 max|entry|) to the sum of its inputs' errors: the sums of exponentials add
    N + 1 relative roundings, exp adds 1 + |argument|, and the two logarithm-space additions
    and the final log |value| each."""
    n = base.size
    result = None
    err_r = 0.0
    cur, err_c = base.copy(), 0.0
    p = power
    while True:
        if p & 1:
            if result is None:
                result, err_r = cur.copy(), err_c
            else:
                out = _log_mul(result, cur)
                big = max(np.max(np.abs(result)), np.max(np.abs(cur)), np.max(np.abs(out)))
                err_r = err_r + err_c + _U * (n + 8 + 4 * big)
                result = out
        p >>= 1
        if not p:
            break
        out = _log_mul(cur, cur)
        big = max(np.max(np.abs(cur)), np.max(np.abs(out)))
        err_c = 2 * err_c + _U * (n + 8 + 4 * big)
        cur = out
    assert result is not None                     # power >= 1
    return result, err_r


def remove_log_moments(mu: float, m: int, top: int) -> np.ndarray:
    """Upper bounds on log M_m(n) = log E_Q[(dP/dQ)^n], n = 0 .. top, for the 1-out-of-m
    allocation pair of the Gaussian with standardised shift mu (module docstring; FS25 Cor. 6.2):
    M_m(n) = n! m^{-n} [x^n] F(x)^m with F(x) = sum_j exp(j (j-1) mu^2/2) x^j / j!.
    Exact up to the rounding bound that is added."""
    j = np.arange(top + 1, dtype=float)
    quad = j * (j - 1) * (0.5 * mu * mu)
    lg = gammaln(j + 1)
    log_f = quad - lg
    # each log-coefficient of F: gammaln to FUNC_ULPS ulps (scipy's special functions, as the
    # allocation grids take them), the product and the difference to a few ulps of their
    # terms, which may nearly cancel (j (j - 1) mu^2 / 2 against log j!: measured in the
    # thousands where log_f is a few units)
    f_err = float(np.max(FUNC_ULPS * _U * lg + 4 * _U * (quad + np.abs(log_f)))) + 4 * _U
    log_pow, err = _log_power(log_f, m)
    err += m * f_err
    out = lg - j * math.log(m) + log_pow
    out_err = err + FUNC_ULPS * _U * lg + 4 * _U * (lg + j * math.log(m) + np.abs(log_pow))
    res = out + out_err
    res[:2] = 0.0  # M(0) = M(1) = 1 exactly (E_Q of a likelihood ratio)
    return res


def _remove_integer(mu: float, m: int, top: int, cache: dict) -> np.ndarray:
    key = (mu, m)
    have = cache.get(key)
    if have is None or have.size <= top:
        if len(cache) > 512:  # a long sweep over many (sigma, t): keep the memory bounded
            cache.clear()
        size = 2 * have.size if have is not None else 32
        have = remove_log_moments(mu, m, max(top, min(size, MAX_ORDER + 2)))
        cache[key] = have
    return have


_CACHE: dict = {}


def _remove_block(mu: float, m: int, alpha: np.ndarray) -> np.ndarray:
    """Remove-direction RDP of 1-out-of-m allocation at real orders alpha > 1 (upper bound):
    the exact integer moments, the chord of the convex CGF between integers, capped by the
    base's curve."""
    base = alpha * (0.5 * mu * mu)
    if m == 1:
        return base
    out = np.full(alpha.shape, np.inf)
    fin = np.isfinite(alpha) & (alpha <= MAX_ORDER)
    if fin.any():
        a = alpha[fin]
        lam = a - 1.0
        lo = np.floor(lam)
        hi = np.ceil(lam)
        top = int(hi.max()) + 1
        logm = _remove_integer(mu, m, top, _CACHE)
        k_lo = logm[lo.astype(np.int64) + 1]
        k_hi = logm[hi.astype(np.int64) + 1]
        v = lam - lo
        k = np.where(v == 0, k_lo, (1 - v) * k_lo + v * k_hi)
        out[fin] = ulps_up(np.maximum(k, 0.0) / lam, 4)
    return np.minimum(out, base)


def _add_quadratic(mu: float, m: int, alpha: np.ndarray) -> np.ndarray:
    """The second-order add-direction bound (module docstring), minimised over a grid of cut
    points x0 in (-1, 0): log(1 + K v + T) / lambda, lambda = alpha - 1."""
    lam = alpha - 1.0
    mu2 = mu * mu
    log_v = math.log(math.expm1(mu2)) - math.log(m) if mu2 < 700 else mu2 - math.log(m)
    x0 = np.linspace(-0.97, -0.03, 48)[:, None]
    l1p = np.log1p(x0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_k = np.log(lam * (lam + 1) / 2) - (lam + 2) * l1p
        s = mu / math.sqrt(m)
        z = (l1p + mu2 / 2 + lam * mu2 / m) / s
        log_t = lam * mu2 / 2 + lam * lam * mu2 / (2 * m) + log_ndtr(z)
        log_a = np.logaddexp(0.0, np.logaddexp(log_k + log_v, log_t))
        val = np.min(log_a, axis=0) / lam
    # the terms are accurate to a few hundred ulps of their size; 1e-10 relative covers it
    val = np.where(np.isfinite(val), val * (1 + 1e-10) + 1e-300, np.inf)
    return np.where(np.isnan(val), np.inf, val)


def _add_block(mu: float, m: int, alpha: np.ndarray) -> np.ndarray:
    """Add-direction RDP of 1-out-of-m allocation, the smaller of the two bounds of the module
    docstring (concavity; second order), rounded up; the base's curve at m = 1."""
    r = 0.5 * mu * mu
    with np.errstate(invalid="ignore"):
        val = alpha * r / m + (1.0 - 1.0 / m) * r
    out = np.minimum(ulps_up(val, 4), alpha * r)
    if m > 1:
        fin = np.isfinite(alpha)
        out[fin] = np.minimum(out[fin], _add_quadratic(mu, m, alpha[fin]))
    return out


def allocation_rdp(base, k: int, t: int, orders, direction: str = "both") -> np.ndarray:
    """RDP eps(alpha) of ONE epoch of random k-out-of-t allocation of ``base`` (a dpamp
    Gaussian under add/remove), at the orders ``orders`` (reals > 1, inf allowed): a proven
    upper bound, vectorised, shaped like ``orders``.

    ``direction``: "remove" (D_alpha(P || Q), the record present vs absent: exact at integer
    orders for k = 1, FS25 Cor. 6.2), "add" (D_alpha(Q || P): the concavity bound), or "both"
    (the maximum: the add/remove guarantee). See the module docstring for the formulas, the
    block bound for k > 1, and the argument at real orders.

    Epochs compose: E epochs have E times this curve (reshuffled allocations are independent)."""
    from ...mechanisms.base import check_mechanism
    from ...mechanisms.family import family_of
    check_mechanism(base, "base")
    fam = family_of(base)
    if fam is None or fam.gaussian_mu is None:
        raise NotImplementedError(
            f"the RDP of random allocation is implemented for the Gaussian only (FS25 Sec. 6); "
            f"got {type(base).__name__}: use the PLD route for other mechanisms")
    if base.relation is not Relation.ADD_REMOVE:
        raise ValueError("random allocation needs the base mechanism under add/remove (its "
                         "steps compare the record present with the record absent); got "
                         f"{base.relation}")
    t = V.integer("t", t, low=1)
    k = V.integer("k", k, low=1, high=t)
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {_DIRECTIONS} (got {direction!r})")
    a = V.orders(orders, "orders")
    shape = a.shape
    alpha = a.astype(float).ravel()
    mu = fam.gaussian_mu(base)
    if mu == 0.0:
        return np.zeros(shape)
    if not math.isfinite(0.5 * mu * mu):
        return np.full(shape, np.inf)
    low_m, r = divmod(t, k)  # r blocks of size low_m + 1, k - r of size low_m
    blocks = [(low_m + 1, r), (low_m, k - r)]
    wanted = [f for d, f in (("remove", _remove_block), ("add", _add_block))
              if direction in (d, "both")]
    total = np.zeros(alpha.shape)
    for block in wanted:
        one = np.zeros(alpha.shape)
        for m, count in blocks:
            if count:
                one = one + count * block(mu, m, alpha)
        total = np.maximum(total, one)
    # the sum of at most two rounded-up terms: a few ulps up keeps it an upper bound
    total = np.where(np.isfinite(total), ulps_up(total, 4), np.inf)
    inf = np.isinf(alpha)
    total[inf] = np.inf  # the Gaussian is not pure DP, nor is any allocation of it
    return total.reshape(shape)
