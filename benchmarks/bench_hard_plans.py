"""The hard plans of issue 18 ("every plan answered"): dpamp's proven bracket against
dp-accounting (PLD at value_discretization_interval 1e-4 and 1e-3, RDP) and prv-accountant where
it applies, each answer's error against the grid-free MGF oracle's truth
(tests/oracle_mgf.py; values recorded in tests/test_mgf_oracle.py and tests/test_hard_plans.py),
times and ratios, in one process, cold (dpamp's PLD cache is cleared before each run).

Run: python benchmarks/bench_hard_plans.py [--no-peers] [--repeat N] [--only SUBSTRING]

A peer's answer below the truth (an epsilon too small, or a delta too small) is flagged
"BELOW": it is not a valid guarantee. dpamp reports [lower, upper]; its error column is the
width relative to the truth.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

from _timing import timed  # benchmarks/_timing.py (this folder is on the path)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def _w4():
    rng = np.random.default_rng(0)
    sigmas = rng.uniform(0.8, 1.6, 100).round(4)
    rates = rng.uniform(0.002, 0.02, 100).round(5)
    return [(float(s), float(r), 100) for s, r in zip(sigmas, rates)]


# name: (stages [(family, scale, q or None, steps)], query, argument, truth or None)
PLANS = {
    "laplace b=2 q=.02 T=3000 d=1e-12": ([("laplace", 2.0, 0.02, 3000)], "eps", 1e-12,
                                         3.5962267902490783),
    "gauss s=.12 q=.01 T=100 d=1e-5": ([("gauss", 0.12, 0.01, 100)], "eps", 1e-5,
                                       239.89425074438282),
    "gauss s=.2 q=.01 T=100 d=1e-5": ([("gauss", 0.2, 0.01, 100)], "eps", 1e-5,
                                      75.09699720254906),
    "gauss s=.3 q=.01 T=100 d=1e-5": ([("gauss", 0.3, 0.01, 100)], "eps", 1e-5,
                                      26.834714485313345),
    "gauss s=1 q=.01 T=5000 d=1e-12": ([("gauss", 1.0, 0.01, 5000)], "eps", 1e-12,
                                       7.3284100824943055),
    "gauss s=100 T=1e4 delta(10)": ([("gauss", 100.0, None, 10 ** 4)], "delta", 10.0, None),
    "gauss s=.05 q=.01 T=100 d=1e-5": ([("gauss", 0.05, 0.01, 100)], "eps", 1e-5, None),
    "W1 s=1.1 q=256/6e4 T=14062 d=1e-5": ([("gauss", 1.1, 256 / 60000, 14062)], "eps", 1e-5,
                                          2.3815969214243187),
    "W4 (100 x (s, q) x 100) d=1e-5": ([("gauss", s, q, T) for s, q, T in _w4()], "eps", 1e-5,
                                       None),
}


def _truth(name, stages, query, x):
    """The oracle's value where it is not recorded above (closed form for plain Gaussians)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    import oracle_mgf as O
    if len(stages) != 1:
        return None
    fam, s, q, T = stages[0]
    if q is None and fam == "gauss":
        mu = math.sqrt(T) / s
        return float(O.gaussian_delta_exact(mu, x)) if query == "delta" else \
            float(O.gaussian_epsilon_exact(mu, x))
    if fam == "gauss" and query == "eps" and T <= 20000:
        pairs = [O.subsampled_gaussian(s, q, d) for d in ("remove", "add")]
        return O.epsilon_max(pairs, x, T, rtol=1e-10)
    return None


def ours(stages, query, x):
    import dpamp as dp
    from dpamp.pld.query import _CACHE
    _CACHE.store.clear()
    parts = []
    for fam, s, q, T in stages:
        base = dp.Gaussian(s) if fam == "gauss" else dp.Laplace(s)
        parts.append((base if q is None else base.subsample(dp.Poisson(q))) * T)
    mech = dp.compose(*parts) if len(parts) > 1 else parts[0]
    g = mech.epsilon(x, method="pld") if query == "eps" else mech.delta(x, method="pld")
    return (g.epsilon if query == "eps" else g.delta), g.lower, g.note


def _event(fam, s, q):
    import dp_accounting
    base = dp_accounting.GaussianDpEvent(s) if fam == "gauss" else \
        dp_accounting.LaplaceDpEvent(s)
    return base if q is None else dp_accounting.PoissonSampledDpEvent(q, base)


def dp_accounting_pld(stages, query, x, interval):
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    for fam, s, q, T in stages:
        acc.compose(_event(fam, s, q), T)
    return acc.get_epsilon(x) if query == "eps" else acc.get_delta(x)


def dp_accounting_rdp(stages, query, x):
    from dp_accounting import rdp
    acc = rdp.RdpAccountant()
    for fam, s, q, T in stages:
        acc.compose(_event(fam, s, q), T)
    return acc.get_epsilon(x) if query == "eps" else acc.get_delta(x)


def prv(stages, query, x):
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import (
        GaussianMechanism, PoissonSubsampledGaussianMechanism)
    if any(fam != "gauss" for fam, *_ in stages):
        raise NotImplementedError("no subsampled Laplace in prv-accountant")
    if any(s < 0.1 for _, s, *_ in stages):
        # its loss grid overflows there, and the process died (out of memory) in our runs
        raise NotImplementedError("sigma < 0.1: prv-accountant overflows")
    prvs = [GaussianMechanism(noise_multiplier=s) if q is None else
            PoissonSubsampledGaussianMechanism(noise_multiplier=s, sampling_probability=q)
            for _, s, q, _ in stages]
    counts = [T for *_, T in stages]
    if query == "eps":
        acc = PRVAccountant(prvs=prvs, max_self_compositions=counts, eps_error=0.01,
                            delta_error=x * 1e-3)
        return acc.compute_epsilon(delta=x, num_self_compositions=counts)[2]
    acc = PRVAccountant(prvs=prvs, max_self_compositions=counts, eps_error=0.01,
                        delta_error=1e-30)
    return acc.compute_delta(epsilon=x, num_self_compositions=counts)[2]


def _err(v, truth):
    if truth is None or not math.isfinite(v):
        return ""
    e = v / truth - 1.0
    return f"{e:+.1e}" + (" BELOW" if e < -1e-9 else "")


def main(argv):
    peers = "--no-peers" not in argv
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 3
    ours(*PLANS["W1 s=1.1 q=256/6e4 T=14062 d=1e-5"][:3])          # imports, first calls
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    for name, (stages, query, x, truth) in PLANS.items():
        if only not in name:
            continue
        if truth is None:
            try:
                truth = _truth(name, stages, query, x)
            except Exception:                      # the oracle's own limits: no truth
                truth = None
        (up, lo, note), t = timed(ours, stages, query, x, repeat=repeat)
        print(f"\n{name}   truth {truth if truth is not None else 'n/a'}")
        width = (up - lo) / (truth or up) if lo is not None else math.nan
        inside = "" if truth is None else ("  contains truth" if lo <= truth * (1 + 1e-9)
                                           and truth <= up * (1 + 1e-9) else "  MISSES truth")
        print(f"  dpamp            [{lo:.10g}, {up:.10g}] width {width:.1e}{inside}  "
              f"{t * 1e3:8.1f} ms  {note}")
        if not peers:
            continue
        runs = [("dp-acc PLD 1e-4", dp_accounting_pld, (1e-4,)),
                ("dp-acc PLD 1e-3", dp_accounting_pld, (1e-3,)),
                ("dp-acc RDP", dp_accounting_rdp, ()),
                ("prv-accountant", prv, ())]
        for label, fn, extra in runs:
            try:
                v, pt = timed(fn, stages, query, x, *extra, repeat=1)
                print(f"  {label:16s} {v:<26.10g} err {_err(v, truth):>14s}  {pt * 1e3:8.1f} ms"
                      f"  {pt / t:7.1f}x dpamp's time")
            except Exception as exc:            # a missing or failing peer is reported
                print(f"  {label:16s} n/a ({type(exc).__name__}: {str(exc)[:60]})")


if __name__ == "__main__":
    main(sys.argv[1:])
