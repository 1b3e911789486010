"""Samplers of real training loops: Poisson vs random allocation (balls-in-bins) vs shuffling.

For sigma in {0.6, 0.8, 1, 2}, t in {100, 1000, 10 000} steps per epoch and {1, 10, 100}
epochs, at delta = 1e-6 (one process, cold caches per cell):

* Poisson: epsilon of t x epochs Poisson-subsampled Gaussian steps at rate 1/t (PLD, the upper
  end of dpamp's bracket);
* random allocation (k = 1): dpamp's certified bracket [lower, upper] and its time;
* shuffle: the proven lower bound of Chua et al. (substitution relation; helper B's
  ``shuffle_lower_epsilon``) where the module is present;
* with ``--peers``: pld-accounting 2.0's bracket and time on a few cells (it takes seconds to
  minutes per cell), and the ratios.

    python benchmarks/bench_samplers.py [--quick] [--peers]
    python benchmarks/bench_samplers.py --sigmas 0.2,0.3,0.35 --rdp --no-shuffle
"""
from __future__ import annotations

import argparse
import math
import time

import dpamp as dp

DELTA = 1e-6
SIGMAS = (0.6, 0.8, 1.0, 2.0)
STEPS = (100, 1000, 10_000)
EPOCHS = (1, 10, 100)
#: the cells pld-accounting is run on with --peers (sigma, t, epochs)
PEER_CELLS = ((2.0, 100, 1), (2.0, 1000, 10), (1.0, 1000, 1))


def _fresh():
    """Empty dpamp's PLD cache, so that every cell is timed cold."""
    from dpamp.pld import query
    from dpamp.amplification.allocation import pld
    query._CACHE = type(query._CACHE)()
    pld._epoch.cache_clear()


def ours(sigma, t, epochs):
    """dpamp's random-allocation bracket by the PLD; where the PLD is out of reach (small
    sigma: see allocation.pld), ``auto``'s answer (the RDP route), marked with a '*'."""
    from dpamp.core.errors import OutOfReach
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(1, t)) * epochs
    t0 = time.perf_counter()
    try:
        g = m.epsilon(DELTA, method="pld")
        how = ""
    except OutOfReach:
        g = m.epsilon(DELTA)
        how = "*"
    return g.epsilon, g.lower, time.perf_counter() - t0, how


def _rdp(sigma, t, epochs):
    m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(1, t)) * epochs
    return m.epsilon(DELTA, method="rdp").epsilon


def poisson(sigma, t, epochs):
    from dpamp.core.errors import OutOfReach
    _fresh()
    m = dp.Gaussian(sigma).subsample(dp.Poisson(1.0 / t)) * (t * epochs)
    t0 = time.perf_counter()
    try:
        g = m.epsilon(DELTA, method="pld")
    except OutOfReach:             # (tiny sigma, many steps) auto's answer: RDP
        g = m.epsilon(DELTA)
    return g.epsilon, time.perf_counter() - t0


def shuffle_lower(sigma, t, epochs):
    try:
        from dpamp.amplification.allocation.shuffle import shuffle_lower_epsilon
    except ImportError:
        return None, 0.0
    t0 = time.perf_counter()
    try:
        v = shuffle_lower_epsilon(sigma, t, epochs, DELTA)
    except Exception as exc:  # the table goes on; the cell says why
        return f"({type(exc).__name__})", time.perf_counter() - t0
    return v, time.perf_counter() - t0


def peer(sigma, t, epochs):
    from PLD_accounting import gaussian_allocation_epsilon_range
    t0 = time.perf_counter()
    up, low = gaussian_allocation_epsilon_range(delta=DELTA, sigma=sigma, num_steps=t,
                                                num_epochs=epochs)
    return up, low, time.perf_counter() - t0


def _f(v, d=5):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return "inf" if math.isinf(v) else f"{v:.{d}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sigma 1 and 2, 1 and 10 epochs")
    ap.add_argument("--peers", action="store_true", help="pld-accounting on PEER_CELLS")
    ap.add_argument("--no-shuffle", action="store_true")
    ap.add_argument("--sigmas", type=lambda v: tuple(float(x) for x in v.split(",")),
                    help="comma-separated sigmas instead of the default (e.g. 0.2,0.3,0.35)")
    ap.add_argument("--rdp", action="store_true",
                    help="also the RDP route's epsilon (what small sigma fell back to)")
    ap.add_argument("--peer-cell", action="append", default=[], metavar="SIGMA,T,EPOCHS",
                    type=lambda v: (float(v.split(",")[0]), int(v.split(",")[1]),
                                    int(v.split(",")[2])),
                    help="with --peers: these cells instead of PEER_CELLS (repeatable)")
    args = ap.parse_args()
    sigmas = args.sigmas or ((1.0, 2.0) if args.quick else SIGMAS)
    epochs_list = (1, 10) if args.quick else EPOCHS
    print(f"delta = {DELTA:g}; times in seconds; ratio = random-allocation upper / Poisson")
    print("| sigma | t | epochs | Poisson eps | allocation [lower, upper] | gap/eps | time |"
          " ratio | shuffle lower (subst.) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("(* = PLD out of reach for the linear grid; auto's answer, the RDP route, upper only)")
    for sigma in sigmas:
        for t in STEPS:
            for e in epochs_list:
                pe, _ = poisson(sigma, t, e)
                up, low, dt, how = ours(sigma, t, e)
                sh = None if args.no_shuffle else shuffle_lower(sigma, t, e)[0]
                gap = (up - low) / up if low is not None and up > 0 else float("nan")
                rdp = f" RDP {_f(_rdp(sigma, t, e))} |" if args.rdp else ""
                print(f"| {sigma:g} | {t} | {e} | {_f(pe)} | [{_f(low)}, {_f(up)}]{how} | "
                      f"{gap:.1e} | {dt:.2f} | {up / pe:.3f} | {_f(sh)} |{rdp}", flush=True)
    if args.peers:
        print("\npld-accounting 2.0 (gaussian_allocation_epsilon_range, default accuracy)")
        print("| sigma | t | epochs | pld-accounting [lower, upper] | time | dpamp [lower, upper] "
              "| time | speed-up | width ratio (theirs / ours) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for sigma, t, e in args.peer_cell or PEER_CELLS:
            pu, pl, pt = peer(sigma, t, e)
            up, low, dt, how = ours(sigma, t, e)
            print(f"| {sigma:g} | {t} | {e} | [{_f(pl)}, {_f(pu)}] | {pt:.1f} | "
                  f"[{_f(low)}, {_f(up)}] | {dt:.2f} | {pt / dt:.0f}x | "
                  f"{(pu - pl) / max(up - low, 1e-300):.0f} |", flush=True)


if __name__ == "__main__":
    main()
