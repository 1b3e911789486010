"""The proven lower end of Poisson-sampled banded matrix mechanisms, witness by witness, beside
the Monte Carlo estimate of the fixed-direction pair and dpamp's proven upper end.

The strategy is the banded square root with b bands scaled to column norm 1 (as in
``bench_matrix_mc.py``), ``dp.Poisson(q)``, noise multiplier z, delta = 1e-6. Columns: the
witnesses' epsilon (dpamp.amplification.matrix.lower: orthogonal, DP-SGD at the column norms;
fixed-direction, every b-th output row; dpamp.amplification.matrix.lower_block: windowed and
alternating-windows, the best window length and its refinement), the lower end before the
windowed witnesses (the larger of the first two); the whole run's matched filter
(dpamp.amplification.matrix.lower_run_rates); the lower end now (the family's, ``m.epsilon(delta)``'s
``lower``), the Monte Carlo estimate with its 4-standard-error interval (``--mc S`` samples
per direction, seed 0; an estimate, never a guarantee; ``(!)``: its diagnostics fail), the
proven upper end, and the CPU seconds of the family's lower end alone (cold caches).

``--pair S`` instead prints, where the alternating-windows witness answers, the Monte Carlo
estimate of its own pair before the projection (the record's gradient alternating between two
directions every L steps: the 2n x n mean matrix [C diag(even windows); C diag(odd windows)]
as a dense strategy), what the projection on one direction per window costs.

    python benchmarks/bench_matrix_lower.py [--n 1000] [--bands 2 4 8] [--rates 0.01 0.1]
                                            [--z 1 3] [--mc S] [--pair S]
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from _timing import clear_caches, clock

import dpamp as dp
from dpamp.amplification.matrix import lower as LW
from dpamp.families.matrix import amplified_c, bsr_coefficients, lower_witnesses

DELTA = 1e-6


def strategy(bands: int, n: int):
    co = bsr_coefficients(bands) if bands > 1 else [1.0]
    norm = math.sqrt(sum(c * c for c in co))
    return dp.BandedToeplitz([c / norm for c in co], n)


def row(bands: int, n: int, q: float, z: float, mc: int) -> str:
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=dp.Poisson(q))
    old = LW.witnesses(amplified_c(m), m.strategy.column_norms_sq(), bands, z, q)
    before = dict(LW.lower_end(old, "epsilon", DELTA).values)
    clear_caches()
    low, cpu, _ = clock(lambda: LW.lower_end(lower_witnesses(m), "epsilon", DELTA))
    vals = dict(low.values)
    upper = m.epsilon(DELTA)
    cols = [before.get(LW.ORTHOGONAL, math.nan), before.get(LW.FIXED, math.nan),
            vals.get(LW.WINDOWED, math.nan), vals.get(LW.ALTERNATING, math.nan),
            vals.get(LW.RUN, math.nan)]
    win = f"{low.witness.name} L={low.witness.window}" if low.witness.window else \
        low.witness.name
    if mc:
        from dpamp.accounting.montecarlo_matrix import estimate_epsilon
        r = estimate_epsilon(m, DELTA, samples=mc, seed=0)
        est = f"{r.estimate:.4f} [{r.lo:.4f}, {r.hi:.4f}]{'' if r.trusted else ' (!)'}"
        ratio = f"{r.estimate / low.value:.2f}"
    else:
        est, ratio = "-", "-"
    return (f"| {bands} | {n} | {q:g} | {z:g} | "
            + " | ".join(f"{v:.4f}" for v in cols)
            + f" | {max(cols[:2]):.4f} | {low.value:.4f} ({win}) | {est} | {ratio} | "
            f"{upper.epsilon:.4f} | {cpu:.2f} |")


def pair_row(bands: int, n: int, q: float, z: float, samples: int) -> str:
    """The alternating-windows witness against the MC estimate of its unprojected pair."""
    from dpamp.accounting.montecarlo_matrix import estimate_epsilon
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=dp.Poisson(q))
    low = LW.lower_end(lower_witnesses(m), "epsilon", DELTA)
    if low.witness.name != LW.ALTERNATING:
        return f"| {bands} | {n} | {q:g} | {z:g} | {low.witness.name} | - | - |"
    c = np.asarray(m.strategy.dense(), dtype=float)
    even = (np.arange(n) // low.witness.window) % 2 == 0
    pair = dp.MatrixMechanism(np.vstack([c * even, c * ~even]), z, participation=dp.Poisson(q))
    r = estimate_epsilon(pair, DELTA, samples=samples, seed=0)
    return (f"| {bands} | {n} | {q:g} | {z:g} | {low.value:.4f} (L={low.witness.window}) | "
            f"{r.estimate:.4f} [{r.lo:.4f}, {r.hi:.4f}]{'' if r.trusted else ' (!)'} | "
            f"{r.estimate / low.value:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000])
    ap.add_argument("--bands", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--rates", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--z", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--mc", type=int, default=0, metavar="S",
                    help="Monte Carlo samples per direction (0: no estimate)")
    ap.add_argument("--pair", type=int, default=0, metavar="S",
                    help="only the MC estimate of the alternating witness's own pair")
    a = ap.parse_args()
    if a.mc < 0 or 0 < a.mc < 100 or a.pair < 0 or 0 < a.pair < 100:
        ap.error("--mc, --pair: 0 (no Monte Carlo) or at least 100")
    # (in the order n, rate, z, bands)
    cells = [(bands, n, q, z) for n in a.n for q in a.rates for z in a.z for bands in a.bands]
    if a.pair:
        print("| b | n | q | z | alternating witness | MC of its pair [4-se] | MC / witness |")
        print("|---" * 7 + "|")
        for bands, n, q, z in cells:
            print(pair_row(bands, n, q, z, a.pair), flush=True)
        return
    print(f"eps at delta {DELTA:g}: the lower end's witnesses, before and now, beside the MC "
          f"estimate of the fixed-direction pair and the proven upper end")
    print("| b | n | q | z | orthogonal | fixed-direction | windowed | alternating | "
          "whole-run filter | lower before | lower now (witness) | MC [4-se] | MC / lower | "
          "upper | lower CPU s |")
    print("|---" * 15 + "|")
    for bands, n, q, z in cells:
        print(row(bands, n, q, z, a.mc), flush=True)


if __name__ == "__main__":
    main()
