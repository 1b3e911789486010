"""One epoch (or several) of 2-out-of-t random allocation of the Gaussian: dpamp's bracket with the
epoch's own curves from the joint law of (sum X, sum X^2) (allocation.two_of_t_pld, the route the
engine takes where the 2-D window is affordable) beside the bracket with the block upper bound
(the route it replaces), both with the post-processed lower bound, each cold, in one process.

    python benchmarks/analysis_two_of_t.py                       # the cases below
    python benchmarks/analysis_two_of_t.py --case 1,100,1,1e-9   # sigma,t,epochs,delta
    python benchmarks/analysis_two_of_t.py --small               # sigma 0.45 .. 0.7

width = (upper - lower) / upper.
"""
from __future__ import annotations

import argparse
import time

import dpamp as dp
from dpamp.amplification.allocation import lower_k, pld, two_of_t_pld
from dpamp.pld import query
from dpamp.pld.query import epsilon_bracket
from dpamp.pld.sources import loss_distribution

CASES = ["1,1000,1,1e-6", "1,1000,10,1e-6", "1,100,1,1e-6", "1,100,10,1e-6", "1,10000,1,1e-6",
         "2,1000,1,1e-6", "2,10,1,1e-6", "1,40,1,1e-6", "1,100,1,1e-9", "1,1000,1,1e-12",
         "0.8,1000,1,1e-6", "0.8,1000,10,1e-6", "0.8,1000,1,1e-10", "0.8,100,1,1e-6",
         "0.8,300,1,1e-6", "0.8,100,1,1e-10", "0.7,1000,1,1e-6", "0.7,1000,1,1e-10"]
#: heavier tails (--small): where the gates of two_of_t_pld.applies were widened
SMALL = ["0.7,300,1,1e-6", "0.7,30,1,1e-6", "0.65,300,1,1e-6", "0.6,1000,1,1e-6",
         "0.6,1000,10,1e-6", "0.6,1000,1,1e-10", "0.6,300,1,1e-6", "0.6,100,1,1e-6",
         "0.6,10000,1,1e-6", "0.6,100,100,1e-10", "0.55,1000,1,1e-6", "0.5,1000,1,1e-6",
         "0.5,100,1,1e-6", "0.5,10000,10,1e-6", "0.45,1000,1,1e-6", "0.8,10,1,1e-6"]


def _fresh():
    query._CACHE = type(query._CACHE)()
    pld._epoch.cache_clear()
    pld._two_grid.cache_clear()
    lower_k._tpair.cache_clear()


def bracket(sigma, t, epochs, delta, blocks: bool):
    _fresh()
    applies = two_of_t_pld.applies
    if blocks:
        two_of_t_pld.applies = lambda loss, t: False
    try:
        m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(2, t)) * epochs
        t0 = time.perf_counter()
        b = epsilon_bracket(m, delta)
        return b, time.perf_counter() - t0
    finally:
        two_of_t_pld.applies = applies


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="sigma,t,epochs,delta (repeatable)")
    ap.add_argument("--small", action="store_true", help="the heavy-tail cases (sigma <= 0.7)")
    a = ap.parse_args(argv)
    print("k = 2, add/remove; 2-D: the epoch's own curves, blocks: two 1-out-of-t/2 epochs")
    print(f"{'sigma':>5} {'t':>6} {'ep':>3} {'delta':>6} | {'2-D bracket':>21} {'width':>8} "
          f"{'s':>5} | {'blocks bracket':>21} {'width':>8} {'s':>5}")
    for case in a.case or (SMALL if a.small else CASES):
        sigma, t, epochs, delta = case.split(",")
        sigma, t, epochs, delta = float(sigma), int(t), int(epochs), float(delta)
        loss = loss_distribution(dp.Gaussian(sigma))
        row = f"{sigma:5g} {t:6d} {epochs:3d} {delta:6.0e} |"
        for blocks in (False, True):
            if not blocks and not two_of_t_pld.applies(loss, t):
                row += f" {'(blocks: no 2-D)':>21} {'':>8} {'':>5} |"
                continue
            b, s = bracket(sigma, t, epochs, delta, blocks)
            row += (f" [{b.lower:9.5f}, {b.upper:9.5f}] {(b.upper - b.lower) / b.upper:8.1e}"
                    f" {s:5.1f} |")
        print(row.rstrip(" |"), flush=True)


if __name__ == "__main__":
    main()
