"""One epoch of 2-out-of-t random allocation of the Gaussian: the remove direction's epsilon from
the joint law of (sum X, sum X^2) (dpamp.amplification.allocation.two_of_t, not yet used by the
PLD engine) beside dpamp's bracket (block upper bound, post-processed lower bound). The add/remove
epsilon's upper bound is the larger of the 2-D remove one and the PLD's add-direction one
(printed as "add up"; the PLD's cache is cleared around it).

    python benchmarks/analysis_two_of_t.py                       # sigma 1, t 1000 and 100
    python benchmarks/analysis_two_of_t.py --case 0.8,100,0.04,150,8

A case is sigma,t,dx,b,dr (the X grid step, the body's end, the R grid step).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import dpamp as dp
from dpamp.amplification.allocation.two_of_t import TwoOfT
from dpamp.pld import query
from dpamp.pld.query import epsilon_bracket
from dpamp.pld.sources import loss_distribution

CASES = ["1,1000,0.04,200,80", "1,100,0.05,150,40", "0.8,100,0.05,150,40"]


def eps_from_curve(curve, delta: float, lo: float, hi: float) -> float:
    """The smallest grid epsilon in [lo, hi] (a grid of 101, then 101 inside the cell found) whose curve value is <= delta: an
    upper bound on epsilon(delta) because the curve bounds delta(eps) from above."""
    grid = np.linspace(max(lo, 0.0), hi, 101)
    v = curve(np.exp(grid))
    ok = np.nonzero(v <= delta)[0]
    if ok.size == 0:
        return math.inf
    j = ok[0]
    if j == 0:
        return float(grid[0])
    fine = np.linspace(grid[j - 1], grid[j], 101)
    w = curve(np.exp(fine))
    return float(fine[np.nonzero(w <= delta)[0][0]])


def add_upper(mech, delta: float) -> float:
    """The PLD's upper bound on the add direction's epsilon alone (the query's list of
    directions restricted to its second, the add one)."""
    directions = query._directions
    query._directions = lambda m: [directions(m)[1]]
    query._CACHE.store.clear()
    try:
        return epsilon_bracket(mech, delta).upper
    finally:
        query._directions = directions
        query._CACHE.store.clear()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="sigma,t,dx,b,dr (repeatable)")
    ap.add_argument("--delta", type=float, default=1e-6)
    a = ap.parse_args(argv)
    print(f"delta {a.delta:g}, one epoch, k = 2, add/remove ('2-D up' = max(2-D remove, add up))")
    print(f"{'sigma':>6} {'t':>6} {'lower':>9} {'2-D up':>9} {'block up':>9} "
          f"{'add up':>9} {'width/eps was':>13} {'now':>9} {'2-D s':>6} {'PLD s':>6}")
    for case in a.case or CASES:
        sigma, t, dx, b, dr = (float(v) for v in case.split(","))
        t = int(t)
        mech = dp.Gaussian(sigma=sigma).subsample(dp.RandomAllocation(2, t))
        t0 = time.perf_counter()
        br = epsilon_bracket(mech, a.delta)
        t_pld = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = TwoOfT(loss_distribution(dp.Gaussian(sigma=sigma)), t, dx=dx, b=b, dr=dr)
        up = eps_from_curve(m.remove_curve, a.delta, br.lower * 0.99, br.upper)
        t_2d = time.perf_counter() - t0
        add = add_upper(mech, a.delta)
        up = min(max(up, add), br.upper)
        print(f"{sigma:6g} {t:6d} {br.lower:9.5f} {up:9.5f} {br.upper:9.5f} {add:9.5f} "
              f"{(br.upper - br.lower) / br.upper:13.2e} {(up - br.lower) / up:9.2e} "
              f"{t_2d:6.1f} {t_pld:6.1f}")


if __name__ == "__main__":
    main()
