"""Empirical soundness check of dpamp's random-allocation brackets by importance-sampled MC.

The object. ``plan = dp.Gaussian(sigma).subsample(dp.RandomAllocation(k, t)) * epochs``: in each
epoch of t steps the record takes part in a uniformly random k-subset S of the steps, and step i
releases Y_i = 1{i in S} + N(0, sigma^2). Per epoch, P = the law with the record (a mixture over
S), Q = the law without (all N(0, sigma^2)); with l_i = (Y_i - 1/2) / sigma^2 and X_i = e^{l_i},
dP/dQ = e_k(X) / C(t, k) (e_k the elementary symmetric polynomial) and the per-epoch loss is
L = log e_k(X) - log C(t, k). Epochs compose, Lsum = sum of the per-epoch losses.

    remove  delta_{P||Q}(eps) = E_P[(1 - e^{eps - Lsum})_+]
    add     delta_{Q||P}(eps) = E_Q[(1 - e^{eps + Lsum})_+]

dpamp's ``g = plan.epsilon(delta)`` claims g.epsilon >= the true epsilon(delta) and
g.lower <= it, i.e. (sound upper) max(remove, add) at g.epsilon <= delta and (sound lower)
max(remove, add) at g.lower >= delta. This script estimates both directions at both ends with
numpy / scipy only (dpamp is used for the bracket and nothing else).

The estimator (importance sampling, unbiased). Each epoch is drawn from a proposal R and weighted
by w = d(target)/dR, computed exactly in log space; the estimate is the mean of w * f over n iid
samples, f the hockey-stick integrand above; se = sample sd / sqrt(n).

* remove: R_{a,b} = the allocation with the participating coordinates' mean moved from 1 to a and
  the others' from 0 to b, i.e. the mixture over S of N(a 1_S + b 1_{S^c}, sigma^2 I):
  dR/dQ = exp(sum_i (b Y_i - b^2/2) / sigma^2) e_k(Z) / C(t, k), Z_i = exp(((a - b) Y_i -
  (a^2 - b^2)/2) / sigma^2), so w = e_k(X) / (e_k(Z) exp(sum_i (b Y_i - b^2/2) / sigma^2)) per
  epoch. The draws put S at the first k coordinates: every quantity used is symmetric in the
  coordinates, so this has the law of a uniform S up to a permutation.
  The remove direction is drawn from a mixture (multiple importance sampling, balance heuristic:
  w = dP / d(mixture), exact): with probability 0.6 every epoch from R_{a,b}; with probability
  0.4 / E each, epoch e from R_one and the other epochs from P, where R_one has ONE uniformly
  chosen participating coordinate at mean a1 = 1/2 + sigma^2 (eps + log(t / k)) (enough to carry
  the loss eps alone) and the other k - 1 at 1: dR_one/dQ = sum_j V_j e_{k-1}(X without j) /
  (k C(t, k)), V_j = exp((a1 Y_j - a1^2/2) / sigma^2), the derivative of e_k(X + s V) at s = 0,
  by the same recursion. These components cover the "one big jump" paths (one coordinate of one
  epoch carries the loss) that dominate for small sigma, large t and E > 1: with R_{a,b} alone,
  k = 2, t = 1000, sigma = 0.5, E = 3 gave 1.5e-6 +- 36% with one sample holding 36% of the sum;
  with the mixture 0.94e-6 +- 2.2%, largest share 0.5%.
* add: R_b = N(b, sigma^2) in every coordinate, w = exp(-sum_i (b Y_i - b^2/2) / sigma^2).
For k = t (and t = 1) both are the exponential tilts of the Gaussian. The means (a, b) are set by
the multilevel cross-entropy method on a separate pilot sample (n/20, discarded): levels rise
along the (1 - rho) quantile of the loss to eps, and the means move to the weighted means of the
participating / other coordinates under the current optimal-proposal weights (w f at eps). With
small sigma the optimum is a alone (one or a few large participating coordinates); with sigma = 2
it needs b > 0 too (many coordinates moderately high): a fixed "shift the participants only"
proposal there underestimates delta by orders of magnitude with a misleading se, which the
known-answer cases (k = t, t <= 3) would not reveal, so the ``max1`` column (the largest single
sample's share of the remove sum at g.epsilon) is printed as a heavy-tail diagnostic: an
estimate with max1 of a few percent or more is not to be trusted, whatever its se (flagged
above 5%).
Separately, ``add≤`` is a closed-form upper bound on the add direction at g.epsilon: by AM-GM
over S, L >= (k/t) sum_i l_i (a Gaussian), which certifies that direction outright when << delta
(it is loose for small sigma). The add direction's MC is only order-of-magnitude where it is
astronomically below delta (e.g. 1e-80: the product shift is then a poor proposal, and it does
not matter).

e_k(X) is the recursion e_j <- e_j + X_i e_{j-1} over i, vectorised over the samples, on
X_i / c with c the per-sample k-th largest X (so e_k(X / c) >= 1); samples where that could
overflow are redone by the same recursion in log space (logaddexp).

Reading the output (one markdown row per plan). ``rm@up`` / ``add@up``: the MC deltas of the two
directions at g.epsilon, ``rm@lo`` / ``add@lo`` at g.lower, as value(relative se %).
``rm (a, b, a1)``, ``add b``: the proposals' means. ``z_up`` = max over directions of
(delta_MC(upper) - delta) / se: > 0 means the estimate exceeds delta; > 4 is flagged VIOLATION
(upper). ``z_lo`` = min over directions of
(delta - delta_MC(lower)) / se: > 4 (every direction significantly below delta) is flagged
VIOLATION (lower). For a sound, tight bracket expect rm@up slightly below delta and rm@lo
slightly above (z_up, z_lo negative). ``up/δ`` and ``lo/δ``: max-direction MC delta at each end over
delta (how tight each end is). ``t_dp``: dpamp's time, ``t_mc``: the MC time (s).

    python benchmarks/check_allocation_mc.py validate            # known cases first
    python benchmarks/check_allocation_mc.py grid [--ks 1,2 --sigmas 1 --ts 10 --epochs 1 -n 100000]
    python benchmarks/check_allocation_mc.py plan -k 2 -t 100 --sigma 0.7 --epochs 3 \
        -n 400000 --seed 2
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import time

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, logsumexp, ndtr

THRESH = 4.0
PI_SYM = 0.6   # remove direction: the common-shift component's share of the mixture


def lchoose(n: int, r: int) -> float:
    return float(gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1))


# ---------------------------------------------------------------- elementary symmetric polynomial

def _log_ek_logspace(l: np.ndarray, k: int) -> np.ndarray:
    """log e_k(exp(l)) per row, the recursion in log space (slow, always finite)."""
    e = np.full((k + 1, l.shape[0]), -np.inf)
    e[0] = 0.0
    lt = np.ascontiguousarray(l.T)
    for i in range(lt.shape[0]):
        upper = min(i + 1, k)
        e[1:upper + 1] = np.logaddexp(e[1:upper + 1], lt[i] + e[0:upper])
    return e[k]


def log_ek(l: np.ndarray, k: int) -> np.ndarray:
    """log e_k(exp(l)) per row of l (n, t). Linear recursion on exp(l - c), c the row's k-th
    largest l (so the result is >= 1 before the log); rows at risk of overflow go to log space."""
    n, t = l.shape
    if k == 1:
        return logsumexp(l, axis=1)
    c = np.partition(l, t - k, axis=1)[:, t - k]
    d = l - c[:, None]
    # e_j(exp d) <= C(t, j) exp(j max d); keep every j <= k well inside the double range
    lcmax = max(lchoose(t, j) for j in range(k + 1))
    risky = k * d.max(axis=1) + lcmax > 600.0
    out = np.empty(n)
    ok = ~risky
    if ok.any():
        x = np.exp(np.ascontiguousarray(d[ok].T))
        e = np.zeros((k + 1, x.shape[1]))
        e[0] = 1.0
        for i in range(t):
            upper = min(i + 1, k)
            e[1:upper + 1] += x[i] * e[0:upper]
        out[ok] = np.log(e[k]) + k * c[ok]
    if risky.any():
        out[risky] = _log_ek_logspace(l[risky], k)
    return out


def log_ek_and_deriv(l: np.ndarray, lv: np.ndarray, k: int):
    """Per row: log e_k(X) and log sum_j V_j e_{k-1}(X without j) (X = exp(l), V = exp(lv)), the
    second being d/ds e_k(X + s V) at s = 0: the recursion carries d_j <- d_j + X_i d_{j-1} +
    V_i e_{j-1} beside e_j. Scaled as in log_ek (V by its row maximum); risky rows in log space."""
    n, t = l.shape
    if k == 1:
        return logsumexp(l, axis=1), logsumexp(lv, axis=1)
    c = np.partition(l, t - k, axis=1)[:, t - k]
    cv = lv.max(axis=1)
    d0 = l - c[:, None]
    lcmax = max(lchoose(t, j) for j in range(k + 1)) + math.log(k)
    risky = k * d0.max(axis=1) + lcmax > 600.0
    le, ld = np.empty(n), np.empty(n)
    ok = ~risky
    if ok.any():
        x = np.exp(np.ascontiguousarray(d0[ok].T))
        v = np.exp(np.ascontiguousarray((lv[ok] - cv[ok, None]).T))
        e = np.zeros((k + 1, x.shape[1]))
        d = np.zeros((k + 1, x.shape[1]))
        e[0] = 1.0
        for i in range(t):
            u = min(i + 1, k)
            d[1:u + 1] += x[i] * d[0:u] + v[i] * e[0:u]
            e[1:u + 1] += x[i] * e[0:u]
        le[ok] = np.log(e[k]) + k * c[ok]
        ld[ok] = np.log(d[k]) + (k - 1) * c[ok] + cv[ok]
    if risky.any():
        lr, lvr = np.ascontiguousarray(l[risky].T), np.ascontiguousarray(lv[risky].T)
        e = np.full((k + 1, lr.shape[1]), -np.inf)
        d = np.full((k + 1, lr.shape[1]), -np.inf)
        e[0] = 0.0
        for i in range(t):
            u = min(i + 1, k)
            d[1:u + 1] = np.logaddexp(d[1:u + 1], np.logaddexp(lr[i] + d[0:u], lvr[i] + e[0:u]))
            e[1:u + 1] = np.logaddexp(e[1:u + 1], lr[i] + e[0:u])
        le[risky], ld[risky] = e[k], d[k]
    return le, ld


# ---------------------------------------------------------------- the estimator

def draw(direction, shift, sigma, t, k, E, m, rng):
    """m draws of all E epochs from the proposal with parameters shift = (a, b):
    remove: participating coordinates (the first k) N(a, sigma^2), the others N(b, sigma^2), as
    the mixture over S; add: every coordinate N(b, sigma^2) (a unused).
    Returns Lsum (the loss log dP/dQ summed over epochs), logw (log d target / d proposal) and
    the per-sample means of y over participating / other / all coordinates (for the CE update)."""
    a, b = shift
    s2 = sigma * sigma
    lC = lchoose(t, k)
    Lsum, logw = np.zeros(m), np.zeros(m)
    ypart, yrest = np.zeros(m), np.zeros(m)
    for _ in range(E):
        y = rng.standard_normal((m, t))
        y *= sigma
        if direction == "remove":
            y[:, :k] += a
            if b != 0.0:
                y[:, k:] += b
            lx = (y - 0.5) / s2
            if a == 1.0 and b == 0.0:          # the target itself
                le = log_ek(lx, k)
            else:
                # dR/dQ = exp(sum_i (b y_i - b^2/2) / s2) e_k(Z) / C(t, k),
                # Z_i = exp(((a - b) y_i - (a^2 - b^2) / 2) / s2)
                lz = ((a - b) * y - 0.5 * (a * a - b * b)) / s2
                both = log_ek(np.concatenate([lx, lz]), k)
                le, lez = both[:m], both[m:]
                logw += le - lez
                if b != 0.0:
                    logw -= (b * y.sum(axis=1) - t * b * b / 2) / s2
            Lsum += le - lC
        else:
            if b != 0.0:
                y += b
            lx = (y - 0.5) / s2
            Lsum += log_ek(lx, k) - lC
            if b != 0.0:                       # dQ/dR = exp(-sum_i (b y_i - b^2/2) / s2)
                logw -= (b * y.sum(axis=1) - t * b * b / 2) / s2
        ypart += y[:, :k].sum(axis=1)
        yrest += y[:, k:].sum(axis=1)
    yall = (ypart + yrest) / (E * t)
    ypart /= E * k
    yrest = yrest / (E * (t - k)) if t > k else yrest
    return Lsum, logw, ypart, yrest, yall


def draw_mixture(shift, a1, pi_sym, sigma, t, k, E, m, rng):
    """Remove direction, m draws from the mixture (balance-heuristic weights) of
      component 0 (prob pi_sym): every epoch from R_{a,b} (shift = (a, b), as in draw), and
      component e = 1..E (prob (1 - pi_sym) / E each): epoch e from R_one, the others from P,
    where R_one = the allocation with ONE of the k participating coordinates (uniform in S) at
    mean a1 and the other k - 1 at 1: dR_one/dQ = sum_j V_j e_{k-1}(X without j) / (k C(t, k)),
    V_j = exp((a1 Y_j - a1^2 / 2) / sigma^2). Component e covers the "one big jump" paths (one
    coordinate of one epoch carries the loss, the rest typical) that a common shift of every
    epoch misses for small sigma and E > 1; component 0 the paths where the loss is spread.
    w = dP/d(mixture), exact. Returns Lsum and logw."""
    a, b = shift
    s2 = sigma * sigma
    lC = lchoose(t, k)
    probs = np.array([pi_sym] + [(1 - pi_sym) / E] * E)
    comp = rng.choice(E + 1, size=m, p=probs)
    LP, Lsym = np.zeros(m), np.zeros(m)
    lone_minus_p = np.empty((E, m))
    for e in range(E):
        y = rng.standard_normal((m, t))
        y *= sigma
        sym, one = comp == 0, comp == e + 1
        other = ~(sym | one)
        y[sym, :k] += a
        if b != 0.0:
            y[np.ix_(sym, np.arange(k, t))] += b
        y[one, 0] += a1
        if k > 1:
            y[np.ix_(one | other, np.arange(1, k))] += 1.0
        y[other, 0] += 1.0
        lx = (y - 0.5) / s2
        lz = ((a - b) * y - 0.5 * (a * a - b * b)) / s2
        lv = (a1 * y - 0.5 * a1 * a1) / s2
        le, ld = log_ek_and_deriv(lx, lv, k)
        lez = log_ek(lz, k)
        lp = le - lC
        LP += lp
        Lsym += lez - lC + ((b * y.sum(axis=1) - t * b * b / 2) / s2 if b != 0.0 else 0.0)
        lone_minus_p[e] = ld - math.log(k) - lC - lp
    terms = np.vstack([math.log(probs[0]) + Lsym[None, :],
                       np.log(probs[1:])[:, None] + LP[None, :] + lone_minus_p])
    logmix = logsumexp(terms, axis=0)
    return LP, LP - logmix


def integrand(direction, eps, Lsum):
    """f = (1 - e^{eps - Lsum})_+ (remove) or (1 - e^{eps + Lsum})_+ (add); eps an array (r, 1)."""
    z = eps - Lsum[None, :] if direction == "remove" else eps + Lsum[None, :]
    return np.where(z < 0, -np.expm1(np.minimum(z, 0.0)), 0.0)


def sample_values(direction, shift, eps_list, sigma, t, k, E, n, rng, chunk=None, mix=None):
    """n iid values of w * f for each eps in eps_list: array (len(eps_list), n). mix = (a1,
    pi_sym): the remove direction from draw_mixture instead of draw."""
    eps = np.asarray(eps_list, float)[:, None]
    if chunk is None:
        chunk = max(1000, min(n, int(4e6 // t)))
    out = np.empty((len(eps_list), n))
    done = 0
    while done < n:
        m = min(chunk, n - done)
        if mix is not None and direction == "remove":
            Lsum, logw = draw_mixture(shift, mix[0], mix[1], sigma, t, k, E, m, rng)
        else:
            Lsum, logw = draw(direction, shift, sigma, t, k, E, m, rng)[:2]
        out[:, done:done + m] = integrand(direction, eps, Lsum) * np.exp(logw)[None, :]
        done += m
    return out


def _stats(v):
    mean = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("inf")
    return mean, se


def cross_entropy(direction, eps, sigma, t, k, E, n_ce, rng, rho=0.05, max_iter=25, extra=2):
    """The proposal's means by the multilevel cross-entropy method: draw n_ce from the current
    proposal, raise the level gamma to the (1 - rho) quantile of the score (Lsum for remove,
    -Lsum for add; at most eps), and move the means to the (w 1{score >= gamma})-weighted means
    of y (at gamma = eps: (w f)-weighted, the optimal proposal's); `extra` more rounds at eps.
    A heuristic start only saves rounds: the estimate is unbiased whatever the means.
    Remove: a = participating coordinates' mean, b = the others'; add: b = every coordinate's."""
    # start: the target itself (remove); for add the down shift with (mean X)^k ~ e^{-eps / E}
    # under Q shifted by b (X lognormal, E X = e^{b / sigma^2}), right for t >> k
    shift = (1.0, 0.0) if direction == "remove" else (0.0, -eps * sigma ** 2 / (E * k))
    at_eps, gamma = 0, -math.inf
    for _ in range(max_iter):
        Lsum, logw, ypart, yrest, yall = draw(direction, shift, sigma, t, k, E, n_ce, rng)
        score = Lsum if direction == "remove" else -Lsum
        gamma = min(eps, max(gamma, float(np.quantile(score, 1 - rho))))  # levels never drop
        if gamma >= eps:
            u = integrand(direction, np.array([[eps]]), Lsum)[0]
            at_eps += 1
        else:
            u = (score >= gamma).astype(float)
        lu = np.where(u > 0, np.log(np.where(u > 0, u, 1.0)) + logw, -np.inf)
        if not np.isfinite(lu).any():
            break
        wt = np.exp(lu - lu.max())
        wt /= wt.sum()
        if direction == "remove":
            shift = (float(wt @ ypart), float(wt @ yrest) if t > k else 0.0)
        else:
            shift = (0.0, float(wt @ yall))
        if at_eps > extra:
            break
    return shift


def estimate(direction, eps_list, sigma, t, k, E, n, rng, n_ce=None, shift=None, pi_sym=PI_SYM):
    """[(mean, se)] per eps, the proposal's parameters and the largest single sample's share of
    the sum at eps_list[0] (a heavy-tail diagnostic). Remove: the mixture of draw_mixture with
    a1 = 1/2 + sigma^2 (eps + log(t / k)) (one coordinate alone carrying the loss eps: then
    L ~ l_j + log e_{k-1}(rest) - log C(t, k) ~ l_j - log(t / k)); pi_sym = 1 turns it off."""
    if shift is None:
        n_ce = n_ce or max(5000, n // 20)
        shift = cross_entropy(direction, eps_list[0], sigma, t, k, E, n_ce, rng)
    mix = None
    if direction == "remove" and pi_sym < 1:
        mix = (0.5 + sigma ** 2 * (eps_list[0] + math.log(t / k)), pi_sym)
        shift = shift + (mix[0],)
    v = sample_values(direction, shift[:2], eps_list, sigma, t, k, E, n, rng, mix=mix)
    res = [_stats(v[i]) for i in range(len(eps_list))]
    tot = v[0].sum()
    share = float(v[0].max() / tot) if tot > 0 else float("nan")
    return res, shift, share


# ---------------------------------------------------------------- known answers

def gauss_delta(eps, mu):
    """delta(eps) of Gaussian mu-GDP (both directions)."""
    return float(ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2))


def gauss_eps(delta, mu):
    hi = 1.0
    while gauss_delta(hi, mu) > delta:
        hi *= 2
    return brentq(lambda e: gauss_delta(e, mu) - delta, 0.0, hi, xtol=1e-13, rtol=1e-15)


def quadrature_delta(direction, eps, sigma, t, k, m=None):
    """One epoch, t <= 3: the first coordinate integrated in closed form (the region is a
    half-line in X_1 since e_k is affine in X_1), the other t - 1 on a fine grid."""
    from scipy.stats import norm
    s2 = sigma * sigma
    C = math.comb(t, k)
    m = m or (4001 if t <= 2 else 1201)
    g = np.linspace(-12 * sigma, 1 + 12 * sigma, m)
    h = g[1] - g[0]
    grids = np.meshgrid(*([g] * (t - 1)), indexing="ij")
    ys = [G.ravel() for G in grids]
    Xr = np.stack([np.exp((y - 0.5) / s2) for y in ys], 1)  # (M, t-1)
    M = Xr.shape[0]

    def esym(j):
        if j < 0:
            return np.zeros(M)
        if j == 0:
            return np.ones(M)
        e = np.zeros((j + 1, M))
        e[0] = 1.0
        for i in range(t - 1):
            e[1:] += Xr[:, i] * e[:-1]
        return e[j]

    A, B = esym(k - 1), esym(k)                 # dP/dQ = (X_1 A + B) / C
    # q density of the rest, and p = mixture over S: for each S, participation of coords 2..t
    phi0 = [norm.pdf(y, 0, sigma) for y in ys]
    phi1 = [norm.pdf(y, 1, sigma) for y in ys]
    qrest = np.prod(phi0, axis=0) if t > 1 else np.ones(M)
    # p restricted: sum over S of prod; split by whether coord 1 is in S
    p_in, p_out = np.zeros(M), np.zeros(M)      # coordinate 1 in S / not in S
    for S in itertools.combinations(range(t), k):
        pr = np.ones(M)
        for i in range(1, t):
            pr = pr * (phi1[i - 1] if i in S else phi0[i - 1])
        if 0 in S:
            p_in += pr / C
        else:
            p_out += pr / C
    sf = lambda x: norm.sf(x)
    cdf = lambda x: norm.cdf(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        if direction == "remove":
            thr = (C * math.exp(eps) - B) / A       # X_1 > thr
            ystar = np.where(thr > 0, s2 * np.log(np.where(thr > 0, thr, 1.0)) + 0.5, -np.inf)
            val = p_in * sf((ystar - 1) / sigma) + p_out * sf(ystar / sigma) \
                - math.exp(eps) * qrest * sf(ystar / sigma)
        else:
            thr = (C * math.exp(-eps) - B) / A      # X_1 < thr
            ok = thr > 0
            ystar = np.where(ok, s2 * np.log(np.where(ok, thr, 1.0)) + 0.5, -np.inf)
            val = qrest * cdf(ystar / sigma) - math.exp(eps) * (
                p_in * cdf((ystar - 1) / sigma) + p_out * cdf(ystar / sigma))
            val = np.where(ok, val, 0.0)
    return float(val.sum() * h ** (t - 1))


def validate(args):
    rng = np.random.default_rng(args.seed)
    n = args.n
    print("## e_k recursion vs brute force (random extreme inputs)\n")
    worst = 0.0
    for t, k in [(6, 2), (7, 3), (8, 4), (9, 5), (10, 10), (12, 6)]:
        l = rng.normal(0, 40, (200, t))
        l[:50] *= 10                     # force the log-space fallback on some rows
        ref = np.array([logsumexp([row[list(S)].sum() for S in itertools.combinations(range(t), k)])
                        for row in l])
        got = log_ek(l, k)
        worst = max(worst, float(np.max(np.abs(got - ref) / np.maximum(1, np.abs(ref)))))
        lv = rng.normal(0, 40, (200, t))
        lv[:50] *= 10
        refd = np.array([logsumexp([lvr[j] + row[[i for i in S if i != j]].sum()
                                    for S in itertools.combinations(range(t), k) for j in S])
                         for row, lvr in zip(l, lv)])
        le2, ld = log_ek_and_deriv(l, lv, k)
        worst = max(worst, float(np.max(np.abs(le2 - ref) / np.maximum(1, np.abs(ref)))),
                    float(np.max(np.abs(ld - refd) / np.maximum(1, np.abs(refd)))))
    print(f"worst relative error of log e_k and of log sum_j V_j e_(k-1)(X without j): "
          f"{worst:.2e}\n")

    print("## k = t (Gaussian, mu = sqrt(t E) / sigma) and t = 1: MC vs closed form\n")
    print("| t | k | sigma | E | delta | eps | dir | shift (a, b, a1) | MC | rel err | z | max1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    zs = []
    cases = [(1, 1, 1.0, 1), (1, 1, 0.5, 3), (1, 1, 2.0, 1), (4, 4, 1.0, 1), (4, 4, 2.0, 3),
             (10, 10, 2.0, 1), (10, 10, 0.7, 3), (3, 3, 0.5, 1)]
    for (t, k, sigma, E), delta in itertools.product(cases, (1e-3, 1e-6, 1e-9)):
        mu = math.sqrt(t * E) / sigma
        eps = gauss_eps(delta, mu)
        truth = gauss_delta(eps, mu)
        for d in ("remove", "add"):
            (res,), shift, share = estimate(d, [eps], sigma, t, k, E, n, rng)
            m, se = res
            z = (m - truth) / se
            zs.append(z)
            print(f"| {t} | {k} | {sigma} | {E} | {delta:.0e} | {eps:.4f} | {d} | "
                  f"{_fs(d, shift)} | {m:.4e} | {m / truth - 1:+.2%} | {z:+.2f} | {share:.1e} |",
                  flush=True)
    print(f"\nz over {len(zs)} known cases: mean {np.mean(zs):+.2f}, sd {np.std(zs):.2f}, "
          f"max |z| {np.max(np.abs(zs)):.2f}\n")

    print("## 1 <= k < t <= 3, one epoch: MC vs quadrature (first coordinate in closed form)\n")
    print("| t | k | sigma | eps | dir | shift (a, b, a1) | quadrature | MC | rel err | z |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    zq = []
    for (t, k, sigma), eps in itertools.product([(2, 1, 1.0), (3, 1, 0.7), (3, 2, 1.0),
                                                 (3, 2, 0.5)], ("d3", "d6", "d9")):
        # eps near where the remove direction hits 1e-3 / 1e-6 / 1e-9 (found by quadrature)
        target = {"d3": 1e-3, "d6": 1e-6, "d9": 1e-9}[eps]
        e = brentq(lambda x: quadrature_delta("remove", x, sigma, t, k, m=601) - target,
                   0.01, 60.0, xtol=1e-6)
        for d in ("remove", "add"):
            q = quadrature_delta(d, e, sigma, t, k)
            (res,), shift, _ = estimate(d, [e], sigma, t, k, 1, n, rng)
            m, se = res
            z = (m - q) / se if q > 0 or m > 0 else 0.0
            zq.append(z)
            rel = m / q - 1 if q > 0 else float("nan")
            print(f"| {t} | {k} | {sigma} | {e:.4f} | {d} | {_fs(d, shift)} | {q:.4e} | "
                  f"{m:.4e} | {rel:+.2%} | {z:+.2f} |", flush=True)
    print(f"\nz over {len(zq)} quadrature cases: mean {np.mean(zq):+.2f}, sd {np.std(zq):.2f}, "
          f"max |z| {np.max(np.abs(zq)):.2f}")


# ---------------------------------------------------------------- checking dpamp

def add_bound(eps, sigma, t, k, E):
    """A closed-form upper bound on the add direction: by AM-GM over S, L >= (k/t) sum_i l_i,
    and (1 - e^{eps + L})_+ is decreasing in L, so delta_{Q||P}(eps) <= E[(1 - e^{eps + Z})_+]
    with Z = (k/t) sum over epochs and steps of l_i ~ N(-m, v) under Q, m = E k / (2 sigma^2),
    v = E k^2 / (t sigma^2)."""
    m = E * k / (2 * sigma ** 2)
    sd = math.sqrt(E * k * k / t) / sigma
    # E[(1 - e^{eps + Z})_+] = Phi((m - eps)/sd) - e^{eps - m + sd^2/2} Phi((m - eps)/sd - sd)
    a = (m - eps) / sd
    tail = float(ndtr(a))                       # P(Z < -eps), itself an upper bound
    val = tail - math.exp(eps - m + sd * sd / 2) * float(ndtr(a - sd))
    return val if val > 1e-3 * tail else tail   # keep the plain tail where the difference cancels


HEADER = ("| k | t | σ | E | δ | upper | lower | t_dp | rm@up | add@up | z_up | rm@lo | add@lo | "
          "z_lo | up/δ | lo/δ | rm (a, b, a1) | add b | max1 | add≤ | t_mc | flag |")


def fmt(m, se):
    if m == 0:
        return "0"
    return f"{m:.3e}({se / m:.0%})" if se / m >= 0.1 else f"{m:.3e}({se / m:.1%})"


def _fs(direction, shift):
    if direction == "add":
        return f"{shift[1]:.2f}"
    return ", ".join(f"{x:.2f}" for x in shift)


def check_plan(sigma, t, k, E, delta, n, rng, n_ce=None, pi_sym=PI_SYM):
    import dpamp as dp
    t0 = time.perf_counter()
    plan = dp.Gaussian(sigma).subsample(dp.RandomAllocation(k, t))
    if E > 1:
        plan = plan * E
    g = plan.epsilon(delta)
    t_dp = time.perf_counter() - t0
    up = float(g.epsilon)
    lo = float(g.lower) if g.lower is not None and g.lower > 0 else None
    eps_list = [up] + ([lo] if lo is not None else [])
    t0 = time.perf_counter()
    est, shifts, shares = {}, {}, {}
    for d in ("remove", "add"):
        res, shift, share = estimate(d, eps_list, sigma, t, k, E, n, rng, n_ce=n_ce,
                                     pi_sym=pi_sym)
        est[d], shifts[d], shares[d] = res, shift, share
    add_cf = add_bound(up, sigma, t, k, E)
    t_mc = time.perf_counter() - t0
    z_up = max((est[d][0][0] - delta) / est[d][0][1] if est[d][0][1] > 0 else
               (math.inf if est[d][0][0] > delta else -math.inf) for d in est)
    up_ratio = max(est[d][0][0] for d in est) / delta
    if lo is not None:
        z_lo = min((delta - est[d][1][0]) / est[d][1][1] if est[d][1][1] > 0 else
                   (math.inf if est[d][1][0] < delta else -math.inf) for d in est)
        lo_ratio = max(est[d][1][0] for d in est) / delta
    else:
        z_lo, lo_ratio = float("nan"), float("nan")
    flag = []
    if z_up > THRESH:
        flag.append("VIOLATION (upper)")
    if z_lo > THRESH:
        flag.append("VIOLATION (lower)")
    if not shares["remove"] <= 0.05:
        flag.append("heavy tail (max1 > 5%)")
    row = dict(k=k, t=t, sigma=sigma, E=E, delta=delta, up=up, lo=lo, t_dp=t_dp, est=est,
               z_up=z_up, z_lo=z_lo, up_ratio=up_ratio, lo_ratio=lo_ratio, shifts=shifts,
               share=shares["remove"], add_cf=add_cf, t_mc=t_mc, flag=" ".join(flag))
    lo_s = f"{lo:.5f}" if lo is not None else "—"
    rm_lo = fmt(*est["remove"][1]) if lo is not None else "—"
    add_lo = fmt(*est["add"][1]) if lo is not None else "—"
    line = (f"| {k} | {t} | {sigma} | {E} | {delta:.0e} | {up:.5f} | {lo_s} | {t_dp:.2f} | "
            f"{fmt(*est['remove'][0])} | {fmt(*est['add'][0])} | {z_up:+.1f} | {rm_lo} | "
            f"{add_lo} | {z_lo:+.1f} | {up_ratio:.3f} | {lo_ratio:.3f} | "
            f"{_fs('remove', shifts['remove'])} | {_fs('add', shifts['add'])} | "
            f"{shares['remove']:.1e} | {add_cf:.1e} | "
            f"{t_mc:.1f} | "
            f"{row['flag']} |")
    return row, line


def _floats(s):
    return [float(x) for x in s.split(",") if x]


def _ints(s):
    return [int(x) for x in s.split(",") if x]


def _which_dpamp():
    import dpamp
    print(f"dpamp from {dpamp.__file__}\n")


def grid(args):
    rng = np.random.default_rng(args.seed)
    _which_dpamp()
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    rows = []
    for delta in _floats(args.deltas):
        for E in _ints(args.epochs):
            for k in _ints(args.ks):
                for t in _ints(args.ts):
                    if k >= t:
                        continue
                    for sigma in _floats(args.sigmas):
                        n = args.n if t < 1000 else (args.n_big or args.n)
                        row, line = check_plan(sigma, t, k, E, delta, n, rng,
                                               pi_sym=args.pi_sym)
                        rows.append(row)
                        print(line, flush=True)
    print(f"\n{len(rows)} plans; seed {args.seed}.")
    print("\n| k | plans | worst z_up | worst z_lo | max rel se (rm@up) | max max1 (rm@up) | "
          "max add≤/δ |")
    print("|---|---|---|---|---|---|---|")
    for k in sorted({r["k"] for r in rows}):
        rk = [r for r in rows if r["k"] == k]
        zl = [r["z_lo"] for r in rk if not math.isnan(r["z_lo"])]
        rel = max((r["est"]["remove"][0][1] / r["est"]["remove"][0][0]
                   if r["est"]["remove"][0][0] > 0 else math.inf) for r in rk)
        print(f"| {k} | {len(rk)} | {max(r['z_up'] for r in rk):+.2f} | "
              f"{(max(zl) if zl else float('nan')):+.2f} | {rel:.1%} | "
              f"{max(r['share'] for r in rk):.1e} | "
              f"{max(r['add_cf'] / r['delta'] for r in rk):.1e} |")
    bad = [r for r in rows if r["flag"]]
    print(f"\nflagged: {len(bad)}")
    for r in bad:
        print(f"  k={r['k']} t={r['t']} sigma={r['sigma']} E={r['E']} delta={r['delta']}: "
              f"{r['flag']}")


def one_plan(args):
    rng = np.random.default_rng(args.seed)
    _which_dpamp()
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    for delta in _floats(args.deltas):
        _, line = check_plan(args.sigma, args.t, args.k, args.epochs, delta, args.n, rng,
                             pi_sym=args.pi_sym)
        print(line, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="the estimator on known answers (k = t, t = 1, t <= 3)")
    v.add_argument("-n", type=int, default=200000)
    v.add_argument("--seed", type=int, default=1)
    gr = sub.add_parser("grid", help="dpamp's brackets on a grid of plans")
    gr.add_argument("--ks", default="1,2,3,5,10")
    gr.add_argument("--sigmas", default="0.5,0.7,1,2")
    gr.add_argument("--ts", default="10,40,100,1000")
    gr.add_argument("--epochs", default="1,3")
    gr.add_argument("--deltas", default="1e-6")
    gr.add_argument("-n", type=int, default=100000, help="samples per direction")
    gr.add_argument("--n-big", type=int, default=None, help="samples per direction at t >= 1000")
    gr.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("plan", help="one plan (re-runs, e.g. with more samples / another seed)")
    p.add_argument("-k", type=int, required=True)
    p.add_argument("-t", type=int, required=True)
    p.add_argument("--sigma", type=float, required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--deltas", default="1e-6")
    p.add_argument("-n", type=int, default=400000)
    p.add_argument("--seed", type=int, default=2)
    for q in (gr, p):
        q.add_argument("--pi-sym", type=float, default=PI_SYM,
                       help="remove direction: the common-shift component's share of the "
                            "mixture (1: no one-big-jump components)")
    args = ap.parse_args(argv)
    {"validate": validate, "grid": grid, "plan": one_plan}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
