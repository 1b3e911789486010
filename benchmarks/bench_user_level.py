"""User-level DP-SGD: dpamp's bracket against the classic group-privacy route.

DP-SGD with noise multiplier 1.1, Poisson sampling of records at rate 256/60000, per-record
clipping, every user holding m records (m = 1, 2, 4, 8), delta = 1e-5, for 1, 10 and 60 epochs
(235, 2344 and 14063 steps):

* ours: the certified PLD bracket [lower, upper] of the binomial mixture of Gaussians
  (dp.UserLevelGaussian; Ganesh 2024 Thm 3.1, Schuchardt et al. 2024), CPU and wall time;
* classic (eps, delta): the per-record guarantee by dpamp's PLD, then group privacy
  (k eps_1, delta_1 (e^{k eps_1} - 1)/(e^{eps_1} - 1)), delta_1 searched as TF-Privacy does;
* classic RDP: the per-record RDP curve, Mironov 2017 Prop. 2 for groups of 2^c >= m, then
  dpamp's RDP conversion.

    python benchmarks/bench_user_level.py [--epochs 1,10,60] [--ms 1,2,4,8]
"""
from __future__ import annotations

import argparse
import math
import time

import dpamp as dp
from dpamp.rdp.group import group_rdp_epsilon
from dpamp.theorems.group_privacy import classic_user_epsilon

SIGMA, Q, DELTA = 1.1, 256 / 60000, 1e-5


def _fresh():
    """Empty dpamp's PLD cache, so that each bracket is timed cold."""
    from dpamp.pld import query
    query._CACHE = type(query._CACHE)()


def _clocked(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def row(m: int, steps: int) -> dict:
    """One cell: our bracket and the two classic routes, each with CPU and wall seconds."""
    _fresh()
    ours, cpu, wall = _clocked(
        lambda: (dp.UserLevelGaussian(SIGMA, m, Q) * steps).epsilon(DELTA))
    record = dp.Gaussian(SIGMA).subsample(dp.Poisson(Q)) * steps
    (classic, _), c_cpu, _ = _clocked(
        lambda: classic_user_epsilon(lambda d: record.epsilon(d).epsilon, m, DELTA,
                                     iterations=30))
    by_rdp, r_cpu, _ = _clocked(lambda: group_rdp_epsilon(record.rdp, m, DELTA))
    return dict(m=m, steps=steps, lower=ours.lower, upper=ours.epsilon, cpu=cpu, wall=wall,
                classic=classic, classic_cpu=c_cpu, rdp=by_rdp, rdp_cpu=r_cpu)


def _fmt(x: float, up: bool = True) -> str:
    """4 decimals rounded outward (an upper end up, a lower end down)."""
    if math.isinf(x):
        return "inf"
    v = (math.ceil if up else math.floor)(x * 1e4) / 1e4
    return f"{v:.4f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", default="1,10,60")
    ap.add_argument("--ms", default="1,2,4,8")
    args = ap.parse_args(argv)
    print(f"sigma {SIGMA}, q = 256/60000, delta {DELTA:g}, per-record clipping, records "
          "sampled (Poisson)")
    print("| epochs | m | ours: lower | ours: upper | CPU s | wall s | group (eps, delta) "
          "| group RDP (Mironov) | upper / classic |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in (float(x) for x in args.epochs.split(",")):
        steps = math.ceil(e * 60000 / 256)
        for m in (int(x) for x in args.ms.split(",")):
            r = row(m, steps)
            best = min(r["classic"], r["rdp"])
            ratio = r["upper"] / best if math.isfinite(best) else 0.0
            print(f"| {e:g} | {m} | {_fmt(r['lower'], up=False)} | {_fmt(r['upper'])} | "
                  f"{r['cpu']:.2f} | "
                  f"{r['wall']:.2f} | {_fmt(r['classic'])} | {_fmt(r['rdp'])} | "
                  f"{ratio:.3f} |", flush=True)


if __name__ == "__main__":
    main()
