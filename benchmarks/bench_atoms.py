"""Queries at a discrete plan's largest loss: delta(eps) with eps 1e-9 below the plan's largest
finite loss, eps(delta) at the mass at +inf. Where the PLD grid is not aligned to the atoms (an
enumerated epoch of random allocation; more than grid.MAX_ANCHORS distinct losses) these spent
every grid refinement (10-40 s) before the exact composition of the atoms (dpamp.pld.atomic).
Beside them, ordinary plans whose brackets must not change (compare two runs' output).

Run: python benchmarks/bench_atoms.py [--src PATH] [--only slow|ordinary]
(--src: the dpamp source tree to time, e.g. another checkout's src/, for a before/after.)
Each row: the public call, CPU (time.process_time, all threads) and wall seconds (cold caches),
the proven bracket [lower, upper] with every digit, whether tol was met, and the method.
"""
from __future__ import annotations

import argparse
import os
import sys


def _cases(dp):
    rr, pure, ed = dp.RandomizedResponse(0.999), dp.PureDP(8.0), dp.EpsDelta(8.0, 1e-12)
    top = rr.pure_epsilon()

    def alloc(b, k, t, epochs=1):
        m = b.subsample(dp.RandomAllocation(k, t))
        return m if epochs == 1 else m * epochs
    five = dp.PureDP(1.0) + dp.PureDP(1.1) + dp.PureDP(1.2) + dp.PureDP(1.3) + dp.PureDP(1.4)
    five_ed = (dp.EpsDelta(1.0, 1e-9) + dp.EpsDelta(1.1, 1e-9) + dp.EpsDelta(1.2, 1e-9)
               + dp.EpsDelta(1.3, 1e-9) + dp.EpsDelta(1.4, 1e-9))
    slow = [
        ("RR(.999) alloc(1,3): delta(top - 1e-9)", lambda: alloc(rr, 1, 3).delta(top - 1e-9)),
        ("RR(.999) alloc(2,4): delta(2 top - 1e-9)",
         lambda: alloc(rr, 2, 4).delta(2 * top - 1e-9)),
        ("RR(.999) alloc(1,3) x2: delta(2 top - 1e-9)",
         lambda: alloc(rr, 1, 3, 2).delta(2 * top - 1e-9)),
        ("PureDP(8) alloc(1,3): delta(8 - 1e-9)", lambda: alloc(pure, 1, 3).delta(8.0 - 1e-9)),
        ("EpsDelta(8,1e-12) alloc(1,3): epsilon(1e-12)",
         lambda: alloc(ed, 1, 3).epsilon(1e-12)),
        ("PureDP(1..1.4): delta(6 - 1e-9)", lambda: five.delta(6.0 - 1e-9)),
        ("EpsDelta(1..1.4, 1e-9): epsilon(5e-9 (1 + 1e-6))",
         lambda: five_ed.epsilon(5e-9 * (1 + 1e-6))),
    ]
    ordinary = [
        ("Gaussian(1) x10: epsilon(1e-5)", lambda: (dp.Gaussian(1.0) * 10).epsilon(1e-5)),
        ("Gaussian(1.1) Poisson(.01) x1000: epsilon(1e-5)",
         lambda: (dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 1000).epsilon(1e-5)),
        ("Laplace(1) x5: epsilon(1e-6)", lambda: (dp.Laplace(1.0) * 5).epsilon(1e-6)),
        ("Laplace(1) x5: delta(3)", lambda: (dp.Laplace(1.0) * 5).delta(3.0)),
        ("RR(.75) x10: delta(2)", lambda: (dp.RandomizedResponse(0.75) * 10).delta(2.0)),
        ("RR(.75) x10: epsilon(1e-6)",
         lambda: (dp.RandomizedResponse(0.75) * 10).epsilon(1e-6)),
        ("RR(.999) x3: delta(3 top - 1e-9)",
         lambda: (rr * 3).delta(3 * top - 1e-9, method="pld")),
    ]
    return slow, ordinary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--only", choices=("slow", "ordinary"))
    args = ap.parse_args(argv)
    sys.path.insert(0, args.src)
    sys.path.insert(0, os.path.dirname(__file__))
    import dpamp as dp
    from _timing import clear_caches, clock
    slow, ordinary = _cases(dp)
    rows = {"slow": slow, "ordinary": ordinary}
    for group in ("slow", "ordinary"):
        if args.only not in (None, group):
            continue
        print(f"-- {group}")
        for name, fn in rows[group]:
            clear_caches()
            g, cpu, wall = clock(fn)
            low = getattr(g, "lower", None)
            val = g.delta if "delta(" in name else g.epsilon
            print(f"{name:50s} cpu {cpu:7.2f} s  wall {wall:7.2f} s  [{low!r}, {float(val)!r}]"
                  f"  met {getattr(g, 'tol_met', None)}  {g.method}", flush=True)


if __name__ == "__main__":
    main()
