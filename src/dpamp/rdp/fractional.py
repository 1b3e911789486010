"""Exact Rényi DP of the Poisson-subsampled Gaussian at real orders (Mironov, Talwar & Zhang
2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism", arXiv:1908.10530, Sec. 3.3),
as a proven upper bound.

The pair. Standardise the Gaussian: mu0 = N(0, 1), mu1 = N(m, 1) with m = Delta / sigma, and
mu = (1-q) mu0 + q mu1. Under add/remove the two orders of the pair are (mu || mu0) and
(mu0 || mu); MTZ 2019 Thm 4 bounds the RDP by log max(A_a, B_a) / (a-1) with
A_a = E_{mu0}[(mu/mu0)^a], B_a = E_{mu}[(mu0/mu)^a], and Thm 5 shows A_a >= B_a for every real
a >= 1. So eps(a) = log A_a / (a-1) bounds both orders (at integer orders it is Steinke 2022, Thm
34, whose moment is A_a). The tests check B_a <= A_a by 50-digit quadrature as well.

The series. With L = mu1/mu0 = e^{mz - m^2/2} and b = 1-q, the ratio r = qL/b equals 1 at
z0 = m/2 + log(b/q)/m. Expanding (b + qL)^a in powers of r on z <= z0 and of 1/r on z > z0
(binomial series, absolutely convergent there since sum |C(a,i)| < inf for a > 0) and
integrating term by term (MTZ Sec. 3.3):

    A_a = sum_i C(a,i) q^i b^{a-i} e^{i(i-1)m^2/2} Phi(z0 - i m)                      (part 1)
        + sum_i C(a,i) q^{a-i} b^i e^{(a-i)(a-i-1)m^2/2} Phi(-(z0 - (a-i) m))         (part 2).

Using m z0 - m^2/2 = log(b/q), both terms are C(a,i) b^a e^{(x^2 - z0^2)/2} Phi(-x) with
x = i m - z0 (part 1) and x = z0 - (a-i) m (part 2); e^{x^2/2} Phi(-x) = erfcx(x/sqrt 2)/2 is
Mills' ratio (times a constant), so the terms decay only like i^{-a-2}. Two facts make this
cheap and provable:

* Signs. C(a,i) > 0 for i <= K = floor(a) + 1 and alternates from K on (for integer a it
  vanishes from K on, and the series are the finite sums of Steinke 2022, Thm 34).
* Tails (Cohen, Rodriguez Villegas & Zagier 2000, "Convergence acceleration of alternating
  series", Prop. 1). For i = K + j the magnitudes are Hausdorff moment sequences in j:
  |C(a, K+j)| = (|sin pi a|/pi) int_0^1 t^j t^{K-a-1}(1-t)^a dt (reflection formula and the
  Beta integral), Mills' ratio M(x) = int_0^inf e^{-x s - s^2/2} ds with x linear in j, and
  (q/b)^j; a product of moment sequences is one. For such a sequence the alternating tail
  S = sum_j (-1)^j a_j is approximated by S_n = sum_{j<n} w_j (-1)^j a_j, with fixed weights
  w_j in (0, 1] built from the Chebyshev polynomial T_n(1 - 2t), and |S - S_n| <= a_0 / T_n(3).
  With n = 24, T_n(3) = 1.2e18: each order costs K + 24 terms, and the truncation bound
  a_0 / T_n(3) (a_0 the first tail term) is added.

Cancellation. A_a - 1 can be far below A_a (tiny q, large sigma, a near 1), and eps(a) needs
it to full relative precision. The binomial series sum_i C(a,i) q^i b^{a-i} = (b+q)^a = 1
converges absolutely for q <= 1/2 (geometric in q/b), so A_a - 1 = sum_i C(a,i) q^i b^{a-i}
(e^{u_i} - 1) + part 2, u_i = i(i-1)m^2/2 + log Phi(z0 - i m), with each difference evaluated
by expm1: the leading terms are then of the order of A_a - 1 itself. For q > 1/2 the same is
done with sum_i C(a,i) q^{a-i} b^i = 1 inside part 2 (geometric in b/q). Both subtracted
sequences are moment sequences too, so their tails carry the same bound.

Rounding, outwards. z0 is known only to within dz (a few ulps of log q, log b, and of their
quotient by m), so part 1 is summed with the split at a float s1 <= z0 and part 2 at a float
s2 >= z0: the ratio stays <= 1 on each part (the series and the moment sequences above hold as
they are), and the sliver (s1, s2) adds at most (s2 - s1) max phi (b (1 + e^{m (s2 - s1)}))^a.
Where the identity m z0 - m^2/2 = log(b/q) is used with s1 or s2 for z0, the log of a term moves
by at most i m (s2 - s1) (part 1) or |a-i| m (s2 - s1) (part 2), which is added. Each term is
exp of a sum of a few evaluated pieces (log |C(a,i)| as a product of i factors below i = 40 and
by gammaln above, log Phi(t) by log_ndtr for t <= 0 and as log1p(-erfcx(t/sqrt 2) e^{-t^2/2}/2)
for t > 0, erfcx, products): the absolute error of its log is bounded by 16 ulps of the sum of
the pieces' magnitudes (2i + 2 ulps for the product; t^2/2 + 32 ulps of log Phi(t) for t > 0,
the exponent's rounding), plus (|x| + 1) times the rounding of its argument x (a bound on
|d log term / dx|); the difference terms carry the error of u_i through e^{u_i}. The float
sums add 3 ulps of each term and (N + 2) ulps of the sum of the magnitudes of the paired terms
(sequential summation of N; the weights w_j are the correctly rounded exact rationals). The
bound on A_a - 1 is the computed sum plus all of these, plus both tail bounds and the sliver;
log A_a = log1p of it is moved up by a few ulps of the magnitudes involved, and
eps = log A_a / (a-1) by 8 ulps. The shift m is
rounded up, which is sound since the RDP grows with m (data processing: x -> (m'/m) x +
N(0, 1 - (m'/m)^2) maps N(m, 1), N(0, 1) to N(m', 1), N(0, 1) for m' < m, and the mixtures
alike).

Accuracy. Against 50-digit quadrature of A_a - 1 (tests/test_rdp_fractional.py, sigma in
0.2 .. 10, q in 1e-6 .. 0.5, a in 1.01 .. 256.5) the excess is below 1e-9 relative: at most
9e-10, at sigma = 10, q = 1/2, a = 1.01, where A_a - 1 ~ (a-1) q^2 m^2 / 2 is the difference of
terms of size 1/4 and the rounding margin is what remains (it grows like 1/(a-1) there).
Typically it is 1e-14 .. 1e-11.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx, gammaln, log_ndtr

from ..core.logspace import log1mexp, log_expm1
from ..core.rounding import ulps_up

#: orders above this are not summed (O(alpha) terms each); callers keep their other bounds
MAX_FRACTIONAL_ORDER = 4096.0
#: the order up to which Subsampled uses the series: above it the chord of Wang et al. 2019, Cor. 10
#: between integer orders is within 1e-6 relative of the exact curve (about 1/(4 alpha^2),
#: measured), while each order costs alpha + 24 terms (about 0.3 ms at alpha = 512)
ACCOUNTING_MAX_ORDER = 512.0

_ULP = 2.0 ** -52
_REL = 2.0 ** -48  # error of a log-term per unit magnitude of its pieces (16 ulps)
_SQRT1_2 = math.sqrt(0.5)


def _crvz_weights(n: int):
    """Weights w_j (j < n) and T_n(3) of CRVZ 2000 Algorithm 1 / Prop. 1, exactly: with
    P(t) = T_n(1 - 2t) = sum_k p_k t^k (integer coefficients, (-1)^k p_k > 0) and
    d = P(-1) = T_n(3) = sum_k |p_k|, S_n = sum_j w_j (-1)^j a_j with w_j = sum_{k>j} |p_k| / d."""
    t0, t1 = [1], [1, -2]
    for _ in range(n - 1):
        nxt = [0] * (len(t1) + 1)
        for k, c in enumerate(t1):
            nxt[k] += 2 * c
            nxt[k + 1] -= 4 * c
        for k, c in enumerate(t0):
            nxt[k] -= c
        t0, t1 = t1, nxt
    mags = [abs(c) for c in t1]
    d = sum(mags)
    from fractions import Fraction
    w = np.array([float(Fraction(sum(mags[j + 1:]), d)) for j in range(n)])
    return w, float(d) * (1 - 2 * _ULP)  # d rounded down: the bound a_0 / d rounded up


_N = 24
_SMALL_I = 40  # log C(a, i) by a product below this index
_W, _TN3 = _crvz_weights(_N)


#: terms evaluated per batch (bounds the memory of the vectorised sums)
_BATCH = 1 << 17


def _dlogphi(t):
    """Bound on |d/dt log Phi(t)| = phi(t)/Phi(t): |t| + 1 for t < 0 (Mills' ratio),
    2 phi(t) <= 0.8 e^{-t^2/2} for t >= 0."""
    with np.errstate(over="ignore", under="ignore"):
        return np.where(t < 0, np.abs(t) + 1.0, 0.8 * np.exp(-0.5 * np.minimum(t, 1e154) ** 2))


def _log_ndtr(t):
    """log Phi(t) and a bound on its absolute error. t <= 0: scipy's log_ndtr (within 3 ulps of
    its size there, checked against mpmath; 16 are allowed). t > 0: log1p(-Phi(-t)) with
    Phi(-t) = erfcx(t/sqrt 2) e^{-t^2/2} / 2, whose relative error is that of the exponent,
    t^2/2 ulps, plus erfcx's (4 ulps measured, 16 allowed) and a few roundings (scipy's
    log_ndtr is off by as much there, e.g. 500 ulps at t = 37)."""
    t = np.asarray(t, dtype=float)
    v = np.empty_like(t)
    err = np.empty_like(t)
    neg = t <= 0
    vn = log_ndtr(t[neg])
    v[neg] = vn
    err[neg] = 16 * _ULP * np.abs(vn)
    tp = t[~neg]
    with np.errstate(under="ignore"):
        vp = np.log1p(-0.5 * erfcx(tp * _SQRT1_2) * np.exp(-0.5 * tp * tp))
    v[~neg] = vp
    err[~neg] = (0.5 * tp * tp + 32.0) * _ULP * np.abs(vp) + 4 * 2.0 ** -1074
    return v, err


def _log_gauss(x, dprod, z0sq_half):
    """log(e^{(x^2 - z0^2)/2} Phi(-x)) and a bound on its absolute error:
    -z0^2/2 + log(erfcx(x/sqrt 2)/2) for x >= 0, dprod/2 + log Phi(-x) for x < 0, where
    dprod = (x - z0)(x + z0) is passed formed as a product (no cancellation)."""
    out = np.empty_like(x)
    err = np.empty_like(x)
    pos = x >= 0
    with np.errstate(divide="ignore"):
        lp = np.log(0.5 * erfcx(x[pos] * _SQRT1_2))
    out[pos] = lp - z0sq_half
    err[pos] = _REL * (np.abs(lp) + z0sq_half + 1.0)
    neg = ~pos
    half = 0.5 * dprod[neg]
    ln, ln_err = _log_ndtr(-x[neg])
    out[neg] = half + ln
    err[neg] = _REL * np.abs(half) + ln_err + _ULP * np.abs(out[neg])
    return out, err


def _mag(x):
    """|x|, 0 where x is not finite (a zero term's log, -inf, carries no error)."""
    return np.where(np.isfinite(x), np.abs(x), 0.0)


def _plain(log_c, c_err, sign, log_base, base_mag, f, f_err, sens):
    """Terms C(a,i) * base * e^{f}: (log magnitude, sign, error of the log, None)."""
    lg = log_c + log_base + f
    return lg, sign, c_err + _REL * base_mag + f_err + sens + _ULP * _mag(lg), None


def _difference(log_c, c_err, sign, log_base, base_mag, c, log_phi, sens):
    """Terms C(a,i) * base * expm1(u), u = c + log Phi (log_phi = (value, error)):
    (log magnitude, sign, error of log |C base|, (log |C base|, u, error of u))."""
    lcb = log_c + log_base
    u = c + log_phi[0]
    lg = lcb + np.where(u > 0, log_expm1(np.maximum(u, 0.0)), log1mexp(np.minimum(u, 0.0)))
    du = _REL * np.abs(c) + log_phi[1] + _ULP * np.abs(u) + sens
    return lg, np.where(u < 0, -sign, sign), c_err + _REL * base_mag + _ULP * _mag(lcb), \
        (lcb, u, du)


def _log_binom(alpha, K, row, i):
    """log |C(a, i)| per term and the bound on its absolute error. Below _SMALL_I the
    product prod_{k<i} (a-k)/(k+1) (relative error <= 2 ulps a factor; at most 4096^40/40!,
    far inside the double range); above it gammaln, whose three values of up to a few
    thousand cancel (16 ulps of their magnitudes)."""
    ga = gammaln(alpha + 1.0)[row]
    gi = gammaln(i + 1.0)
    gr = gammaln(alpha[row] - i + 1.0)      # inf where C(a,i) = 0 (integer a, i > a)
    ok = np.isfinite(gr)
    with np.errstate(invalid="ignore"):
        log_c = np.where(ok, ga - gi - gr, -np.inf)
    err = _REL * (np.abs(ga) + gi + np.where(ok, np.abs(gr), 0.0))
    k = np.arange(_SMALL_I - 1, dtype=float)
    width = int(min(_SMALL_I, K.max() + _N))
    prod = np.ones((alpha.size, width))
    prod[:, 1:] = np.cumprod((alpha[:, None] - k[None, :width - 1]) / (k[None, :width - 1] + 1),
                             axis=1)
    small = i < width
    ii = i[small].astype(np.int64)
    with np.errstate(divide="ignore"):
        lsm = np.log(np.abs(prod[row[small], ii]))
    log_c[small] = lsm
    err[small] = _ULP * (2.0 * ii + 2.0 + np.where(np.isfinite(lsm), np.abs(lsm), 0.0))
    return log_c, err


def _log_moment_minus_one(m: float, q: float, alpha: np.ndarray):
    """Upper bound on log(A_alpha - 1) for each order (1-d array of finite orders > 1), and the
    magnitude of the pieces of that log (for its final rounding)."""
    n_o = alpha.size
    K = np.floor(alpha).astype(np.int64) + 1
    counts = K + _N
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    row = np.repeat(np.arange(n_o), counts)
    ii = np.arange(row.size) - starts[row]
    i = ii.astype(float)
    a = alpha[row]
    j = ii - K[row]                     # position in the alternating tail (>= 0 there)
    tail = j >= 0
    w = np.where(tail, _W[np.clip(j, 0, _N - 1)], 1.0)
    sign = np.where(tail & (j % 2 == 1), -1.0, 1.0)

    log_c, c_err = _log_binom(alpha, K, row, i)

    log_b, log_q = math.log1p(-q), math.log(q)
    ell = log_q - log_b                 # log(q/b) = m^2/2 - m z0
    zh = 0.5 * m - ell / m
    # |zh - z0| <= dz; the series are split at s1 <= z0 (part 1) and s2 >= z0 (part 2), exact
    # floats, so that r <= 1 on part 1 and 1/r <= 1 on part 2; the sliver (s1, s2) is bounded
    dz = 4 * _ULP * ((abs(log_q) + abs(log_b) + abs(ell)) / m + abs(zh) + m)
    s1 = math.nextafter(zh - 2 * dz, -math.inf)
    s2 = math.nextafter(zh + 2 * dz, math.inf)
    im = i * m
    am = (a - i) * m
    x1 = im - s1                        # part 1: Phi(s1 - i m) = Phi(-x1)
    x2 = s2 - am                        # part 2: Phi(-(s2 - (a-i) m)) = Phi(-x2)
    ex1 = 2 * _ULP * (im + abs(s1))     # rounding of x1, x2
    ex2 = 3 * _ULP * (np.abs(am) + abs(s2))
    a_log_b = a * log_b

    if q <= 0.5:
        # part 1 minus sum_i C(a,i) q^i b^{a-i} (= 1): C q^i b^{a-i} expm1(u)
        p1 = _difference(log_c, c_err, sign, a_log_b + i * ell, np.abs(a_log_b) + np.abs(i * ell),
                         0.5 * i * (i - 1.0) * m * m, _log_ndtr(-x1), _dlogphi(-x1) * ex1)
        # e^{c'} q^{a-i} b^i = b^a e^{am(am/2 - z0)}: with s2 for z0 the log moves by
        # |am| (s2 - z0) <= |am| 4 dz
        f2, f2e = _log_gauss(x2, -am * (2.0 * s2 - am), 0.5 * s2 * s2)
        p2 = _plain(log_c, c_err, sign, a_log_b, np.abs(a_log_b), f2, f2e,
                    np.abs(am) * 4 * dz + (np.abs(x2) + 1.0) * ex2)
    else:
        # part 2 minus sum_i C(a,i) q^{a-i} b^i (= 1): C q^{a-i} b^i expm1(u)
        f1, f1e = _log_gauss(x1, im * (im - 2.0 * s1), 0.5 * s1 * s1)
        p1 = _plain(log_c, c_err, sign, a_log_b, np.abs(a_log_b), f1, f1e,
                    im * 4 * dz + (np.abs(x1) + 1.0) * ex1)
        a_log_q = a * log_q
        p2 = _difference(log_c, c_err, sign, a_log_q - i * ell, np.abs(a_log_q) + np.abs(i * ell),
                         0.5 * (a - i) * (a - i - 1.0) * m * m, _log_ndtr(-x2),
                         _dlogphi(-x2) * ex2)
    # sliver: int_{s1}^{s2} phi (b + qL)^a <= (s2 - s1) phi_max (b (1 + e^{m (s2 - s1)}))^a
    width = (s2 - s1) * (1 + 4 * _ULP)
    near = 0.0 if s1 <= 0.0 <= s2 else min(abs(s1), abs(s2))
    log_sliver = (math.log(width) - 0.5 * near * near - 0.9189385332046727
                  + alpha * (log_b + math.log1p(math.exp(m * width))))
    log_sliver = log_sliver + 1e-12 * (1.0 + np.abs(log_sliver))
    return _assemble((p1, p2), w, j == 0, row, starts, counts, log_sliver)


def _gap(lg, top):
    """|lg - top|, 0 where lg = -inf (a zero term carries no rounding error)."""
    return np.where(np.isfinite(lg), np.abs(lg - top), 0.0)


def _assemble(parts, w, first, row, starts, counts, log_sliver):
    """Sum the weighted terms of both parts per order, with every error bound added (and the
    bound on the sliver between the two split points)."""
    tops = []
    for lg, _, _, diff in parts:
        tops.append(lg)
        if diff is not None:
            lcb, u = diff[0], diff[1]
            with np.errstate(invalid="ignore"):
                tops.append(lcb + np.maximum(u, 0.0))
    top = np.maximum.reduceat(np.where(np.isnan(tops[0]), -np.inf, tops[0]), starts)
    for t in tops[1:]:
        top = np.maximum(top, np.maximum.reduceat(np.where(np.isnan(t), -np.inf, t), starts))
    top = np.maximum(top, log_sliver)
    M = np.where(np.isfinite(top), top, 0.0)
    Mr = M[row]
    signed = np.zeros(row.size)
    absval = np.zeros(row.size)
    err = np.zeros(row.size)
    first_tail = np.zeros(row.size)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for lg, sg, dl, diff in parts:
            if diff is None:
                sc = np.exp(lg - Mr)
                e = sc * np.expm1(dl + _ULP * (_gap(lg, Mr) + 4.0))
                a0 = sc
            else:
                lcb, u, du = diff
                eb = np.expm1(dl + _ULP * (_gap(lcb, Mr) + np.abs(u) + 8.0))
                sc = np.exp(lg - Mr)
                e = sc * eb + np.exp(lcb - Mr + u + du) * du * (1.0 + eb)
                a0 = np.exp(lcb - Mr + np.logaddexp(0.0, u))
            signed += w * sg * sc
            absval += w * sc
            err += w * e
            first_tail += np.where(first, a0, 0.0)
    # rounding of the sums: the weight, the product and the addition of both parts cost
    # <= 3 ulps of each element's magnitudes; the sequential segment sum adds < (n + 2) ulps
    # of the sum of the absolute elements
    n = counts.astype(float)
    tot = np.add.reduceat(signed, starts)
    rnd = (3 * np.add.reduceat(absval, starts)
           + (n + 2) * np.add.reduceat(np.abs(signed), starts)) * _ULP
    bound = (tot + np.add.reduceat(err, starts) * (1 + 2.0 ** -40) + rnd
             + np.add.reduceat(first_tail, starts) * (1 + 2.0 ** -40) / _TN3
             + np.exp(log_sliver - M))
    bad = ~(bound > 0) | ~np.isfinite(top)
    with np.errstate(divide="ignore", invalid="ignore"):
        lu = np.log(np.where(bad, 1.0, bound))
    log_up = np.where(bad, np.inf, M + lu)
    return log_up, np.abs(M) + np.abs(lu)


def poisson_gaussian_rdp(mu: float, q: float, alpha) -> np.ndarray:
    """Upper bound on the RDP at real orders alpha > 1 of the Gaussian with standardised shift
    ``mu`` = Delta / sigma under Poisson sampling of rate ``q`` (0 < q < 1), add/remove: both
    orders of the pair (MTZ 2019 Thms 4-5, Sec. 3.3; see the module docstring). Orders above
    MAX_FRACTIONAL_ORDER, at or below 1, or not finite give inf (no bound from here); so does a
    shift above 1e4 (the terms leave the double range; the plain Gaussian curve is as good)."""
    a = np.asarray(alpha, dtype=float)
    flat = a.ravel()
    out = np.full(flat.shape, np.inf)
    mu, q = float(mu), float(q)
    if not (0.0 < q < 1.0) or not (mu >= 0.0) or mu > 1e4:
        return out.reshape(a.shape)
    use = np.isfinite(flat) & (flat > 1.0) & (flat <= MAX_FRACTIONAL_ORDER)
    if mu == 0.0:
        out[use] = 0.0
        return out.reshape(a.shape)
    m = float(np.nextafter(mu, math.inf))  # mu may be Delta / sigma rounded down
    idx = np.nonzero(use)[0]
    if idx.size == 0:
        return out.reshape(a.shape)
    orders = flat[idx]
    per = np.floor(orders) + 1 + _N
    start = 0
    while start < idx.size:
        stop = start + max(1, int(np.searchsorted(np.cumsum(per[start:]), _BATCH)))
        sel = slice(start, min(stop, idx.size))
        o = orders[sel]
        log_up, mag = _log_moment_minus_one(m, q, o)
        with np.errstate(over="ignore", invalid="ignore"):
            lu = log_up + 4 * _ULP * (mag + 1.0)
            log_a = ulps_up(np.logaddexp(0.0, lu), 4)
            eps = ulps_up(log_a / (o - 1.0), 8)
        out[idx[sel]] = np.where(np.isnan(eps), np.inf, eps)
        start = sel.stop
    return out.reshape(a.shape)
