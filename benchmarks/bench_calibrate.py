"""Calibration over the whole target range of issue 18: sigma, steps, epochs, rate and batch for
every target epsilon in {0.01, ..., 1000} and delta in {1e-12, 1e-5, 0.1} with method "auto",
on DP-SGD-sized plans (sigma 1, Poisson rate 0.01, 1000 steps, 60 000 records), one process,
cold (PLD cache cleared before each). Prints each time, the evaluations, the answer and the
method, then the slowest; with ``--peers`` also dp-accounting's sigma calibration
(``dp_accounting.calibrate_dp_mechanism`` with its PLD accountant, default discretisation) on
the sigma rows where it answers.

    python benchmarks/bench_calibrate.py [--peers] [--only rate]
"""
from __future__ import annotations

import argparse
import time

import dpamp as dp
from dpamp.pld.query import _CACHE

EPSILONS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
DELTAS = (1e-12, 1e-5, 0.1)
Q, STEPS, SIGMA, N = 0.01, 1000, 1.0, 60000


def runs():
    P = dp.Poisson(Q)
    return {
        "sigma": lambda e, d: dp.calibrate.sigma(e, d, sampling=P, steps=STEPS),
        "steps": lambda e, d: dp.calibrate.steps(e, d, sigma=SIGMA, sampling=P),
        "epochs": lambda e, d: dp.calibrate.epochs(e, d, sigma=SIGMA, sampling=P),
        "rate": lambda e, d: dp.calibrate.rate(e, d, sigma=SIGMA, steps=STEPS),
        "batch": lambda e, d: dp.calibrate.rate(e, d, sigma=SIGMA, steps=STEPS, population=N),
    }


def peer_sigma(e, d):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    def event(s):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(s)), STEPS)
    return dp_accounting.calibrate_dp_mechanism(
        pld_privacy_accountant.PLDAccountant, event, e, d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--only", choices=list(runs()))
    a = ap.parse_args()
    slow = []
    for name, fn in runs().items():
        if a.only and name != a.only:
            continue
        for d in DELTAS:
            for e in EPSILONS:
                _CACHE.store.clear()
                t0 = time.perf_counter()
                try:
                    c = fn(e, d)
                    out = f"{c.value!s:>14} by {c.guarantee.method:<5} {c.evaluations:3d} evals"
                except ValueError as err:
                    out = f"no answer: {str(err)[:60]}"
                dt = time.perf_counter() - t0
                slow.append((dt, name, e, d))
                line = f"{name:7} eps {e:<7g} delta {d:<6g} {dt:7.2f} s  {out}"
                if a.peers and name == "sigma":
                    t0 = time.perf_counter()
                    try:
                        s = peer_sigma(e, d)
                        line += f" | dp-accounting {s:.6g} in {time.perf_counter() - t0:.2f} s"
                    except Exception as err:  # noqa: BLE001 - a peer's failure is a result
                        line += f" | dp-accounting failed: {type(err).__name__}"
                print(line, flush=True)
    slow.sort(reverse=True)
    print("slowest:", ", ".join(f"{n} eps {e:g} delta {d:g}: {t:.2f} s"
                                for t, n, e, d in slow[:5]))


if __name__ == "__main__":
    main()
