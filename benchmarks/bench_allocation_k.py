"""Random allocation with 1 < k < t: dpamp's bracket [lower, upper] (lower: the post-processed
pair of allocation.lower_split; upper: k/2 blocks of 2-out-of-2t/k allocations from the joint law
of (sum X, sum X^2) where allocation.two_of_t_pld applies, for k = 2 the epoch itself, else k
blocks of 1-out-of-t/k allocations), next to Poisson
subsampling at rate k/t (the PLD's upper end), at delta = 1e-6, one cold process per cell.

For sigma in {0.8, 1, 2}, t = 1000, k in {2, 5, 10}, epochs in {1, 10}:

    python benchmarks/bench_allocation_k.py [--quick] [--peers] [-t T] [--ks 2,5] [--epochs 1]

(--quick: sigma 1 only; -t: another number of steps; --ks, --epochs: a subset of the cells). width/eps = (upper - lower) / upper.
--peers adds pld-accounting 2.0 (``gaussian_allocation_epsilon_range`` at its default
accuracy), in the same process after ours, and ours again with its width as our tol (the
issue's "equal width" comparison). Read its pair with care: for 1 < k < t it computes
k blocks of 1-out-of-t/k allocations for both ends, and the blocks bound the allocation from
ABOVE, so its "lower" end is a lower bound of the blocks' epsilon, not of the allocation's (at
t = 3, k = 2, sigma 1, delta 1e-3 it is 4.241 where the exact epsilon is 4.016:
tests/test_allocation_quadrature.py).
"""
from __future__ import annotations

import argparse
import time

import dpamp as dp

DELTA = 1e-6
T = 1000


def _fresh():
    """Empty dpamp's PLD caches, so that every cell is timed cold."""
    from dpamp.amplification.allocation import lower_k, pld
    from dpamp.pld import query
    query._CACHE = type(query._CACHE)()
    pld._epoch.cache_clear()
    pld._two_grid.cache_clear()
    lower_k._tpair.cache_clear()


def allocation(sigma, k, epochs, t, tol=None):
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(k, t)) * epochs
    opts = {} if tol is None else {"tol": tol}
    t0 = time.perf_counter()
    g = m.epsilon(DELTA, method="pld", **opts)
    return g.lower, g.epsilon, time.perf_counter() - t0


def poisson(sigma, k, epochs, t):
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.Poisson(k / t)) * (t * epochs)
    t0 = time.perf_counter()
    g = m.epsilon(DELTA, method="pld")
    return g.epsilon, time.perf_counter() - t0


def peer(sigma, k, epochs, t):
    """pld-accounting 2.0's (lower, upper) and its time (see the module docstring)."""
    from PLD_accounting.random_allocation_api import gaussian_allocation_epsilon_range
    t0 = time.perf_counter()
    up, low = gaussian_allocation_epsilon_range(delta=DELTA, sigma=sigma, num_steps=t,
                                                num_selected=k, num_epochs=epochs)
    return low, up, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sigma 1 only")
    ap.add_argument("--peers", action="store_true", help="also pld-accounting 2.0")
    ap.add_argument("-t", type=int, default=T, help="steps per epoch (default 1000)")
    ap.add_argument("--ks", default="2,5,10", help="the k to run (default 2,5,10)")
    ap.add_argument("--epochs", default="1,10", help="the epochs to run (default 1,10)")
    args = ap.parse_args()
    t = args.t
    sigmas = (1.0,) if args.quick else (0.8, 1.0, 2.0)
    ks = [k for k in (int(v) for v in args.ks.split(",")) if 1 < k < t]
    epochs = [int(v) for v in args.epochs.split(",")]
    print(f"delta = {DELTA:g}, t = {t}; times in seconds")
    head = ("| sigma | k | epochs | allocation [lower, upper] | width/eps | time | "
            "Poisson (k/t) eps | time | upper / Poisson |")
    if args.peers:
        head += (" pld-accounting [blocks' lower, upper] | time | time ratio | ours at its "
                 "width | time | time ratio |")
    # the imports (and the method registry's plugins) once, outside every cell's time
    dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, 10)).epsilon(DELTA, method="pld")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for sigma in sigmas:
        for k in ks:
            for e in epochs:
                low, up, dt = allocation(sigma, k, e, t)
                pe, pt = poisson(sigma, k, e, t)
                w = (up - low) / up if low is not None else float("nan")
                lo_s = "-" if low is None else f"{low:.5f}"
                row = (f"| {sigma:g} | {k} | {e} | [{lo_s}, {up:.5f}] | {w:.1e} | {dt:.2f} | "
                       f"{pe:.5f} | {pt:.2f} | {up / pe:.3f} |")
                if args.peers:
                    plo, pup, ptime = peer(sigma, k, e, t)
                    row += f" [{plo:.5f}, {pup:.5f}] | {ptime:.1f} | {ptime / dt:.0f}x |"
                    # equal width: ours asked for the peer's (upper - lower) as its tol
                    elo, eup, edt = allocation(sigma, k, e, t, tol=pup - plo)
                    row += f" [{elo:.5f}, {eup:.5f}] | {edt:.2f} | {ptime / edt:.0f}x |"
                print(row, flush=True)


if __name__ == "__main__":
    main()
