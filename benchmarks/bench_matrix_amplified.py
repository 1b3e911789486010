"""Poisson-sampled banded matrix mechanisms: the conditional-composition upper bound (route
conditional-composition, dpamp.amplification.matrix) beside the no-amplification bound it
replaces, and DP-SGD at the same rate and noise for scale.

b-banded Toeplitz C (the banded square root of Kalinin & Lampert 2024, scaled to column norm
1), n steps, each step a Poisson sample at rate q of the whole data set (``dp.Poisson(q)``:
n q expected participations per record), noise multiplier z, delta = 1e-6. Columns: our
epsilon, the slack delta' spent on the bad histories, no-amplification's epsilon, DP-SGD's, CPU
and wall seconds of our bound (cold PLD cache); with ``--lower``, the proven lower end
(dpamp.amplification.matrix.lower: the orthogonal witness, DP-SGD at the column norms, and the
fixed-direction witness, every b-th output row) and its CPU seconds; with ``--mc S``, the Monte
Carlo estimate of the fixed-direction pair (dpamp.accounting.montecarlo_matrix, S samples per
direction, seed 0; an estimate with its 4-standard-error interval, never a guarantee).

    python benchmarks/bench_matrix_amplified.py [--quick] [--z Z] [--q Q] [--n N] [--bands B]
                                                [--lower] [--mc S]

C is read from its coefficients (``LowerToeplitzAbs``, the route's own reading of a Toeplitz
strategy), so n may exceed the dense limit of 4096 steps.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import dpamp as dp
from dpamp.amplification.matrix import query
from dpamp.amplification.matrix.toeplitz_view import LowerToeplitzAbs
from dpamp.families.matrix import bsr_coefficients

DELTA = 1e-6


def banded(bands: int) -> np.ndarray:
    co = np.array(bsr_coefficients(bands))
    return co / np.linalg.norm(co)


def _fresh():
    from dpamp.pld import query as pq
    pq._CACHE = type(pq._CACHE)()


def lower_cols(n: int, co, z: float, q: float) -> str:
    """The lower end: (orthogonal, fixed-direction) witnesses' epsilon and CPU seconds."""
    from dpamp.amplification.matrix import lower as LW
    _fresh()
    c0 = time.process_time()
    ws = LW.witnesses(LowerToeplitzAbs(co, n), dp.BandedToeplitz(tuple(co), n).column_norms_sq(),
                      len(co), z, q)
    vals = dict(LW.lower_end(ws, "epsilon", DELTA).values)
    cpu = time.process_time() - c0
    return (f" {vals.get(LW.ORTHOGONAL, math.nan):>9.4f} {vals.get(LW.FIXED, math.nan):>9.4f} "
            f"{cpu:>6.2f}")


def mc_col(n: int, co, z: float, q: float, samples: int) -> str:
    from dpamp.accounting.montecarlo_matrix import estimate_epsilon
    m = dp.MatrixMechanism(dp.BandedToeplitz(tuple(co), n), z, participation=dp.Poisson(q))
    r = estimate_epsilon(m, DELTA, samples=samples, seed=0)
    eps, lo, hi = r
    return f" {eps:>8.4f} [{lo:.4f}, {hi:.4f}]{'' if r.trusted else ' (!)'}"


def row(n: int, bands: int, z: float, q: float, lower: bool = False, mc: int = 0) -> str:
    co = banded(bands)
    _fresh()
    c0, w0 = time.process_time(), time.perf_counter()
    ours = query.epsilon(LowerToeplitzAbs(co, n), z, q, DELTA)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    strategy = dp.BandedToeplitz(tuple(float(x) for x in co), n)
    plain = dp.MatrixMechanism(strategy, z, participation=dp.Poisson(q)).epsilon(
        DELTA, method="profile").epsilon
    sgd = (dp.Gaussian(z).subsample(dp.Poisson(q)) * n).epsilon(DELTA).epsilon
    return (f"{bands:>3} {n:>6} {z:>5g} {q:>6g} {ours.epsilon:>10.4g} {ours.slack:>9.2g} "
            f"{plain:>12.4g} {sgd:>8.4g} {cpu:>7.2f} {wall:>7.2f}"
            + (lower_cols(n, co, z, q) if lower else "")
            + (mc_col(n, co, z, q, mc) if mc else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 100 only")
    ap.add_argument("--z", type=float, nargs="*", default=[1.0, 4.0], help="noise multipliers")
    ap.add_argument("--q", type=float, nargs="*", default=[0.01], help="sampling rates")
    ap.add_argument("--n", type=int, nargs="*", default=[100, 1000], help="steps")
    ap.add_argument("--bands", type=int, nargs="*", default=[2, 4, 8], help="bands")
    ap.add_argument("--lower", action="store_true", help="the proven lower end's columns")
    ap.add_argument("--mc", type=int, default=0, metavar="S",
                    help="the Monte Carlo estimate with S samples per direction (0: none)")
    a = ap.parse_args()
    print(f"epsilon at delta {DELTA:g} (ours = route conditional-composition)")
    print(f"{'b':>3} {'n':>6} {'z':>5} {'q':>6} {'ours':>10} {'slack':>9} "
          f"{'no-amplif.':>12} {'DP-SGD':>8} {'cpu s':>7} {'wall s':>7}"
          + (f" {'low orth.':>9} {'low fixed':>9} {'cpu s':>6}" if a.lower else "")
          + (f" {'MC':>8} [4-se interval]" if a.mc else ""))
    for z in a.z:
        for q in a.q:
            for n in ([100] if a.quick else a.n):
                for bands in a.bands:
                    print(row(n, bands, z, q, a.lower, a.mc), flush=True)
    print(f"(DP-SGD: z, q, n steps; banded C with column norm 1 at the same z costs at least "
          f"as much: {math.nan} where not run)" if False else "")


if __name__ == "__main__":
    main()
