"""b-min-separation sampling of a banded matrix mechanism: dpamp's proven upper bounds, the
split's Poisson plan at rate q beside the separation blocks (``dpamp.mechanisms.
matrix_separation``), and the answer ``m.epsilon(delta)``: its proven lower end (the
windowed witnesses at the chain's least favourable entry state, ``dpamp.amplification.matrix.
lower_minsep``), its upper end with the route, and its cost (cold, CPU and wall seconds). The strategy is the banded square root with b bands at column norm 1,
separation b, warm start (opake's ``bandmf_b_min_sep_warm_mc_pld`` case; its estimates are in
``bench_matrix_mc.py --sampling minsep --opake``).

    python benchmarks/bench_matrix_minsep.py [--n 1000] [--bands 2 8] [--rates 0.1 0.01]
        [--z 1 3] [--delta 1e-4]
"""
from __future__ import annotations

import argparse
import math

from _timing import clear_caches, clock

import dpamp as dp
from dpamp.families.matrix import bsr_coefficients


def mechanism(n: int, bands: int, q: float, z: float) -> dp.MatrixMechanism:
    co = bsr_coefficients(bands) if bands > 1 else [1.0]
    norm = math.sqrt(sum(c * c for c in co))
    return dp.MatrixMechanism(dp.BandedToeplitz([c / norm for c in co], n), z,
                              participation=dp.MinSepSampling(q, bands, warm_start=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--bands", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.01])
    ap.add_argument("--z", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--delta", type=float, default=1e-4)
    a = ap.parse_args()
    print("| b | q | z | split, Poisson at q | separation blocks | answer [lower, upper] "
          "(route) | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for q in a.rates:
        for b in a.bands:
            for z in a.z:
                m = mechanism(a.n, b, q, z)
                split = m.split_reduction().epsilon(a.delta, method="pld").epsilon
                blocks = m.blocks_reduction().epsilon(a.delta, method="pld").epsilon \
                    if m.separation_blocks is not None else math.inf
                clear_caches()
                m = mechanism(a.n, b, q, z)
                r, cpu, wall = clock(m.epsilon, a.delta)
                route = "no-amplification" if r.method == "profile" else r.method
                low = "–" if r.lower is None else f"{r.lower:.4f}"
                print(f"| {b} | {q:g} | {z:g} | {split:.4f} | {blocks:.4f} | "
                      f"[{low}, {r.epsilon:.4f}] ({route}) | {cpu:.2f} | {wall:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
