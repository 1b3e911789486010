"""Heterogeneous DP-SGD plans (issue 18 item 6): dpamp's PLD against dp-accounting's
PLDAccountant at value_discretization_interval 1e-4 (its default) and 1e-3, in one process,
cold (dpamp's PLD cache and parts memo are cleared and the mechanism rebuilt before each run).

Run: python benchmarks/bench_heterogeneous.py [--no-peers] [--repeat N] [--only NAME]

W4: rng = numpy.random.default_rng(0); sigmas = rng.uniform(0.8, 1.6, 100).round(4), then
rates = rng.uniform(0.002, 0.02, 100).round(5); 100 steps of each (sigma, q) pair in order;
delta = 1e-5. dpamp prints its proven bracket [lower, upper]; the peers one number each.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from _timing import timed  # benchmarks/_timing.py (this folder is on the path)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def w4(n=100, steps=100):
    rng = np.random.default_rng(0)
    sigmas = rng.uniform(0.8, 1.6, n).round(4)
    rates = rng.uniform(0.002, 0.02, n).round(5)
    return [(float(s), float(q), steps) for s, q in zip(sigmas, rates)]


def warmup(n=100, steps=100):
    """A learning-rate-style warm-up: sigma falls from 2 to 1 and q rises over n stages."""
    return [(float(s), float(q), steps) for s, q in
            zip(np.linspace(2.0, 1.0, n).round(4), np.linspace(0.001, 0.01, n).round(5))]


PLANS = {"W4": (w4(), 1e-5), "warm-up 50 stages": (warmup(50), 1e-5)}


def ours(stages, delta):
    import dpamp as dp
    from dpamp.pld import query, sources
    query._CACHE.store.clear()
    sources._PARTS.store.clear()
    mech = dp.compose(*[dp.Gaussian(s).subsample(dp.Poisson(q)) * T for s, q, T in stages])
    g = mech.epsilon(delta, method="pld")
    return g.epsilon, g.lower


def dp_accounting(stages, delta, interval):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    for s, q, T in stages:
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)),
                    T)
    return acc.get_epsilon(delta)


def main(argv):
    peers = "--no-peers" not in argv
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 3
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    ours(w4(3, 10), 1e-5)                                  # imports, first calls
    for name, (stages, delta) in PLANS.items():
        if only not in name:
            continue
        (up, low), t = timed(ours, stages, delta, repeat=repeat)
        print(f"{name}: {len(stages)} stages, delta={delta:g}")
        print(f"  dpamp pld            [{low:.6f}, {up:.6f}]  {t * 1e3:8.1f} ms (best of {repeat})")
        if not peers:
            continue
        for interval in (1e-4, 1e-3):
            v, tp = timed(dp_accounting, stages, delta, interval)
            print(f"  dp-accounting {interval:g}  {v:.6f}{'  BELOW our lower bound' if v < low else ''}"
                  f"{'':13s}{tp * 1e3:8.1f} ms   ratio {tp / t:7.1f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
