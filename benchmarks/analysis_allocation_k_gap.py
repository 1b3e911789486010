"""Where the k > 1 random-allocation bracket is loose (analysis, not a bound; dpamp issue 14).

dpamp's upper bound for one epoch of k-out-of-t allocation (1 < k < t) is the block bound: the
uniform k-subset is a mixture over relabellings of k blocks of sizes ~t/k with one uniform step
per block, so (joint convexity) the epoch is at most the product of k 1-out-of-(t/k)
allocations. Two independent checks of how far that is from the truth, Gaussian base (noise
sigma, sensitivity 1), remove direction:

1. ``moments``: exact integer-order Rényi moments. With X_i = dN(1, sigma^2)/dN(0, sigma^2)(y_i)
   and L = E_S prod_{i in S} X_i, E_Q[L^a] = E exp(sum_{u<v} |S_u ∩ S_v| / sigma^2) over a iid
   subsets S_1..S_a of the scheme (E_Q[X_i^j] = e^{j(j-1)/(2 sigma^2)}). For a = 2, 3 the law of
   that statistic is enumerated exactly for uniform k-subsets (hypergeometric overlaps; for
   a = 3 the counts of the 8 membership patterns) and for "hybrid" schemes: the k blocks merged
   j at a time into groups with a uniform j-subset per group (j = 1: the block bound, j = k:
   exact). The hybrids are valid upper bounds by the same mixture argument if j-of-(jm) could be
   computed exactly; the printout is the fraction of the block bound's excess in D_a they
   would close (about (1 - 1/j) k / (k - 1)).
2. ``mc``: importance-sampled Monte Carlo of H_x = E_Q[(F - x)_+] (delta of the remove
   direction at eps = log x), one epoch, for F = the true L = e_k(X)/C(t, k), the block
   L_b = prod_b (mean of X over block b), and two candidate refinements on the event N = 1
   (exactly one X_i above b; N != 1 keeps L_b). There, with Y the large coordinate,
   L = (k/t) Y u + (1 - k/t) v, u and v the (k-1)- and k-out-of-(t-1) ratios of the rest;
   "Maclaurin, k-1 blocks": v <= u^{k/(k-1)} (Maclaurin's inequality) and u by k - 1 blocks of
   the rest (pointwise Jensen over relabellings of the rest: the function is convex increasing
   in u); "k blocks jointly": (u, v) = E_pi (e_{k-1}(M)/k, e_k(M)), M the means of k blocks of
   the rest (a uniform (k-1)-subset is a uniform k-subset less a uniform element). Proposal:
   one uniform coordinate shifted by mu_s (weights q/prop exact); ``--proposal allocation``:
   the allocation itself with its k coordinates shifted by mu_s (weight C(t, k) / e_k(X'),
   X'_i = dN(mu_s, sigma^2)/dN(0, sigma^2)(y_i)), for small t / k, where several coordinates
   are large at once (sigma 0.8, t 100, k 2: the truth is about 2.78, where dpamp brackets
   [2.776, 2.885] and pld-accounting's block pair is [2.855, 2.916]).

    python benchmarks/analysis_allocation_k_gap.py moments
    python benchmarks/analysis_allocation_k_gap.py mc --sigma 0.8 -k 2 --eps 0.8748,0.8765,0.8799,0.8818 -n 2000000
    python benchmarks/analysis_allocation_k_gap.py mc --sigma 0.8 -t 100 -k 2 --eps 2.776,2.8,2.855 --proposal allocation --mu-s 2.5 -n 1000000
"""
from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
from scipy.special import gammaln


def _lchoose(n, r):
    return gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1)


def law2(t: int, k: int) -> np.ndarray:
    """Law of |S_1 ∩ S_2| for two iid uniform k-subsets of [t] (index = value)."""
    o = np.arange(k + 1)
    return np.exp(_lchoose(k, o) + _lchoose(t - k, k - o) - _lchoose(t, k))


def law3(t: int, k: int) -> np.ndarray:
    """Law of the sum of the three pairwise overlaps of three iid uniform k-subsets: the counts
    n_W of the 8 membership patterns W (multinomial t! / prod n_W!, over C(t, k)^3); the statistic
    is 3 n_111 + n_110 + n_101 + n_011."""
    out = np.zeros(3 * k + 1)
    base = gammaln(t + 1) - 3 * _lchoose(t, k)
    for a in range(k + 1):
        for b in range(k - a + 1):
            for c in range(k - a - b + 1):
                for d in range(k - a - max(b, c) + 1):
                    n = np.array([a, b, c, d, k - a - b - c, k - a - b - d, k - a - c - d])
                    if n.min() < 0 or n.sum() > t:
                        continue
                    lp = base - float(np.sum(gammaln(n + 1))) - gammaln(t - n.sum() + 1)
                    out[3 * a + b + c + d] += math.exp(lp)
    return out


def _brute3(t: int, k: int) -> np.ndarray:
    """law3 by enumeration of all triples of k-subsets (tiny t: an independent check)."""
    subs = [set(s) for s in itertools.combinations(range(t), k)]
    out = np.zeros(3 * k + 1)
    for s1, s2, s3 in itertools.product(subs, repeat=3):
        out[len(s1 & s2) + len(s1 & s3) + len(s2 & s3)] += 1
    return out / len(subs) ** 3


def hybrid(t: int, k: int, j: int, order: int) -> np.ndarray:
    """The statistic's law for the k blocks (sizes floor/ceil(t/k)) merged j at a time into
    groups with a uniform subset of j (the last group may have fewer) per group."""
    small, nb = divmod(t, k)
    sizes = [small + 1] * nb + [small] * (k - nb)
    tot = np.array([1.0])
    for i in range(0, k, j):
        g = sizes[i:i + j]
        tot = np.convolve(tot, (law2 if order == 2 else law3)(sum(g), len(g)))
    return tot


def renyi(law: np.ndarray, sigma: float, order: int) -> float:
    """D_order = log E exp(statistic / sigma^2) / (order - 1)."""
    v = np.arange(law.size)
    return math.log(float(np.sum(law * np.exp(v / sigma ** 2)))) / (order - 1)


def moments(t: int = 1000) -> None:
    assert np.allclose(law3(6, 3), _brute3(6, 3), rtol=1e-12, atol=1e-15)
    assert np.allclose(law3(7, 2), hybrid(7, 2, 2, 3), rtol=1e-12)
    print(f"t = {t}: D_a (Gaussian remove) of uniform k-subsets, blocks (j = 1), hybrids; "
          f"'closed' = share of the block bound's excess removed")
    for sigma in (0.8, 1.0, 2.0):
        for k in (2, 5, 10):
            for order in (2, 3):
                uni = renyi(law2(t, k) if order == 2 else law3(t, k), sigma, order)
                blk = renyi(hybrid(t, k, 1, order), sigma, order)
                cells = [f"blocks {blk:.6f} (+{(blk - uni) / uni:.2%})"]
                for j in sorted({2, 3, 5} & set(range(2, k))):
                    h = renyi(hybrid(t, k, j, order), sigma, order)
                    cells.append(f"j={j} closed {(blk - h) / (blk - uni):.2f}")
                print(f"sigma {sigma} k {k:2d} a {order}: uniform {uni:.6f}  " + "  ".join(cells))


def _esym(M: np.ndarray, k: int) -> np.ndarray:
    """e_0..e_k of the rows of M (the recursion e_j += x e_{j-1}; all terms positive)."""
    e = np.zeros((k + 1, M.shape[0]))
    e[0] = 1.0
    for i in range(M.shape[1]):
        x = M[:, i]
        for j in range(k, 0, -1):
            e[j] += x * e[j - 1]
    return e


def _log_esym_k(LM: np.ndarray, k: int) -> np.ndarray:
    """log e_k of the rows of exp(LM), the same recursion in log space."""
    e = np.full((k + 1, LM.shape[0]), -np.inf)
    e[0] = 0.0
    for i in range(LM.shape[1]):
        x = LM[:, i]
        for j in range(k, 0, -1):
            e[j] = np.logaddexp(e[j], x + e[j - 1])
    return e[k]


def _block_means(R: np.ndarray, nb: int) -> np.ndarray:
    sizes = [(R.shape[1] + i) // nb for i in range(nb)]
    cut = np.cumsum([0] + sizes)
    return np.stack([R[:, a:c].mean(1) for a, c in zip(cut[:-1], cut[1:])], 1)


def mc(sigma: float, t: int, k: int, eps: list, n: int, mu_s: float, b: float,
       seed: int, proposal: str = "one") -> None:
    rng = np.random.default_rng(seed)
    xs = np.exp(np.array(eps))
    lC = float(_lchoose(t, k))
    keys = ("true", "block", "N=1: Maclaurin, k-1 blocks", "N=1: k blocks jointly")
    s1 = {key: np.zeros(xs.size) for key in keys}
    s2 = {key: np.zeros(xs.size) for key in keys}
    chunk, done = 10000, 0
    while done < n:
        y = rng.normal(0.0, sigma, (chunk, t))
        if proposal == "one":
            J = rng.integers(0, t, chunk)
            y[np.arange(chunk), J] += mu_s
            lr = (mu_s * y - mu_s ** 2 / 2) / sigma ** 2
            m = lr.max(1)
            w = 1.0 / (np.exp(m) * np.exp(lr - m[:, None]).mean(1))
        else:
            S = np.argsort(rng.random((chunk, t)), axis=1)[:, :k]
            np.put_along_axis(y, S, np.take_along_axis(y, S, 1) + mu_s, 1)
            lr = (mu_s * y - mu_s ** 2 / 2) / sigma ** 2
            w = np.exp(lC - _log_esym_k(lr, k))
        X = np.exp((y - 0.5) / sigma ** 2)
        L = np.exp(np.log(_esym(X, k)[k]) - lC)
        Lb = np.prod(_block_means(X, k), 1)
        one = (X > b).sum(1) == 1
        big = np.argmax(X, 1)
        Y = X[np.arange(chunk), big]
        keep = np.ones(X.shape, bool)
        keep[np.arange(chunk), big] = False
        R = X[keep].reshape(chunk, t - 1)
        # N = 1: L = (k/t) Y u + (1 - k/t) v, u, v the (k-1)- and k-of-(t-1) ratios of the rest
        U = np.prod(_block_means(R, k - 1), 1)
        F2 = (k / t) * Y * U + (1 - k / t) * U ** (k / (k - 1))
        e = _esym(_block_means(R, k), k)
        F3 = (k / t) * Y * e[k - 1] / k + (1 - k / t) * e[k]
        for key, G in zip(keys, (L, Lb, np.where(one, F2, Lb), np.where(one, F3, Lb))):
            v = w[:, None] * np.maximum(G[:, None] - xs[None, :], 0.0)
            s1[key] += v.sum(0)
            s2[key] += (v * v).sum(0)
        done += chunk
    print(f"sigma {sigma}, t {t}, k {k}, one epoch, {done} samples, proposal {proposal}, "
          f"mu_s {mu_s}, b {b}: "
          f"delta_remove(eps) x 1e6; eps* = where it crosses 1e-6 (log-linear)")
    for key in keys:
        mean = s1[key] / done
        se = np.sqrt(np.maximum(s2[key] / done - mean ** 2, 0.0) / done)
        ld = np.log(np.maximum(mean, 1e-300))
        star = float(np.interp(0.0, (ld - math.log(1e-6))[::-1], np.array(eps)[::-1],
                               left=np.nan, right=np.nan))
        print(f"  {key:28s} " + "  ".join(f"{e}: {a * 1e6:.4f}+-{q * 1e6:.4f}"
                                           for e, a, q in zip(eps, mean, se))
              + f"   eps* {star:.5f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("moments", "mc"))
    ap.add_argument("--sigma", type=float, default=0.8)
    ap.add_argument("-t", type=int, default=1000)
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("--eps", default="0.8748,0.8765,0.8818")
    ap.add_argument("-n", type=int, default=400000)
    ap.add_argument("--mu-s", type=float, default=4.5)
    ap.add_argument("-b", type=float, default=373.0, help="the large-coordinate threshold on X")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--proposal", choices=("one", "allocation"), default="one",
                    help="one coordinate shifted, or the allocation's k (small t / k)")
    a = ap.parse_args()
    if a.what == "moments":
        moments(a.t)
    else:
        mc(a.sigma, a.t, a.k, [float(v) for v in a.eps.split(",")], a.n, a.mu_s, a.b, a.seed,
           a.proposal)


if __name__ == "__main__":
    main()
