"""Random allocation with 1 < k < t: dpamp's bracket [lower, upper] (lower: the post-processed
pair of allocation.lower_k; upper: k blocks of 1-out-of-t/k allocations), next to Poisson
subsampling at rate k/t (the PLD's upper end), at delta = 1e-6, one cold process per cell.

For sigma in {0.8, 1, 2}, t = 1000, k in {2, 5, 10}, epochs in {1, 10}:

    python benchmarks/bench_allocation_k.py [--quick]

(--quick: sigma 1 only). width/eps = (upper - lower) / upper.
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
    lower_k._tpair.cache_clear()


def allocation(sigma, k, epochs):
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(k, T)) * epochs
    t0 = time.perf_counter()
    g = m.epsilon(DELTA, method="pld")
    return g.lower, g.epsilon, time.perf_counter() - t0


def poisson(sigma, k, epochs):
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.Poisson(k / T)) * (T * epochs)
    t0 = time.perf_counter()
    g = m.epsilon(DELTA, method="pld")
    return g.epsilon, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sigma 1 only")
    args = ap.parse_args()
    sigmas = (1.0,) if args.quick else (0.8, 1.0, 2.0)
    print(f"delta = {DELTA:g}, t = {T}; times in seconds")
    print("| sigma | k | epochs | allocation [lower, upper] | width/eps | time | "
          "Poisson (k/t) eps | time | upper / Poisson |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sigma in sigmas:
        for k in (2, 5, 10):
            for e in (1, 10):
                low, up, dt = allocation(sigma, k, e)
                pe, pt = poisson(sigma, k, e)
                w = (up - low) / up if low is not None else float("nan")
                lo_s = "-" if low is None else f"{low:.5f}"
                print(f"| {sigma:g} | {k} | {e} | [{lo_s}, {up:.5f}] | {w:.1e} | {dt:.2f} | "
                      f"{pe:.5f} | {pt:.2f} | {up / pe:.3f} |", flush=True)


if __name__ == "__main__":
    main()
