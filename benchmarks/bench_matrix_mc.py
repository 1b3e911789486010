"""Monte Carlo ESTIMATES of eps(delta) for banded matrix mechanisms under Poisson sampling, beside
the proven no-amplification upper bound (and, where one exists, the certified bracket).

The strategy is the banded square root with b bands (b = 1: DP-SGD), scaled to column norm 1;
every step Poisson-samples the whole data set at rate q; noise multiplier z. For each cell:
the MC estimate of the fixed-direction pair's eps at delta = 1e-6 with its 4-standard-error
interval (``dpamp.accounting.montecarlo_matrix.estimate_epsilon``: an estimate, not a
guarantee), its effective sample size, largest single share (``(!)``: the diagnostics fail,
``MonteCarloEstimate.trusted``) and wall time; beside it dpamp's
proven bound for the mechanism: the certified bracket of DP-SGD for b = 1, and the
no-amplification upper bound otherwise (the worst pattern: every step).

``--check`` adds the cyclic-Poisson rows (b groups, each step sampling its group at rate q):
there dpamp's reduction (Choquette-Choo et al. NeurIPS 2023) is exact when b divides n, so the
certified bracket and the MC interval must overlap: the check of the estimator at scale.

``--balls-in-bins`` adds rows with balls in bins of about 1 / q steps (the divisor of n
nearest 1 / q: the same expected share of steps, whole epochs), beside the no-amplification bound (the only proven one dpamp has there today).

``--fixed-bins`` instead prints the table under balls in bins drawn once (``dp.FixedBins``:
each record in every step of one of ``bins`` bins; n = 1000 by default, bins 10 and 100, z 1
and 3): the MC estimate [interval], ess, its CPU and wall seconds, and dpamp's proven upper
bound (``m.epsilon(delta)``: its value and method; its proven lower end where it has one) with
the ratio upper / MC.

``--coverage SEEDS`` instead counts how often the interval holds the certified eps over that
many seeds, on two cases where dpamp's bracket is exact.

    python benchmarks/bench_matrix_mc.py [--n 100 1000] [--bands 1 2 4 8] [--samples 4000]
        [--rates 0.01 0.03 0.1] [--check] [--balls-in-bins]
    python benchmarks/bench_matrix_mc.py --fixed-bins [--n 1000] [--bins 10 100] [--z 1 3]
    python benchmarks/bench_matrix_mc.py --coverage 40
"""
from __future__ import annotations

import argparse
import math
import time

import dpamp as dp
from dpamp.accounting.montecarlo_matrix import estimate_epsilon
from dpamp.families.matrix import bsr_coefficients

DELTA = 1e-6
#: noise multiplier per sampling rate (DP-SGD over 1000 steps near eps 2 to 4)
NOISE = {0.01: 1.0, 0.03: 1.5, 0.1: 3.0}


def strategy(bands: int, n: int):
    """The banded square root with ``bands`` bands, scaled to column norm 1."""
    co = bsr_coefficients(bands) if bands > 1 else [1.0]
    norm = math.sqrt(sum(c * c for c in co))
    return dp.BandedToeplitz([c / norm for c in co], n)


def row(bands: int, n: int, q: float, samples: int, cyclic: bool, bins: int = 0) -> str:
    """One table row; ``bins`` > 0: balls in bins of that many steps instead (rate 1 / bins,
    the noise of the nearest listed rate)."""
    z = NOISE.get(q, 1.0)
    part = dp.BallsInBins(bins) if bins else \
        dp.CyclicPoisson(q, bands) if cyclic else dp.Poisson(q)
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=part)
    t0 = time.perf_counter()
    r = estimate_epsilon(m, DELTA, samples=samples, seed=0)
    t_mc = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = m.epsilon(DELTA)
    t_dp = time.perf_counter() - t0
    low = f"{g.lower:.4f}" if g.lower is not None else "-"
    proven = f"[{low}, {g.epsilon:.4f}] {m.route}"
    overlap = "" if g.lower is None else \
        ("  ok" if r.lo <= g.epsilon and g.lower <= r.hi else "  DISAGREE")
    kind = f"bins {bins}" if bins else "cyclic" if cyclic else "poisson"
    return (f"| {kind} | {bands} | {n} | {q:g} | {z:g} | "
            f"{r.estimate:.4f} | [{r.lo:.4f}, {r.hi:.4f}] | {r.ess:.0f}{'' if r.trusted else ' (!)'} | "
            f"{r.max_share:.4f} | "
            f"{t_mc:.1f} | {proven} | {t_dp:.2f} |{overlap}")


def fixed_bins_row(bands: int, n: int, bins: int, z: float, samples: int) -> str:
    """One row of the ``--fixed-bins`` table: the MC estimate (CPU and wall seconds) beside
    dpamp's proven upper bound and the ratio upper / MC."""
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=dp.FixedBins(bins))
    c0, w0 = time.process_time(), time.perf_counter()
    r = estimate_epsilon(m, DELTA, samples=samples, seed=0)
    c_mc, w_mc = time.process_time() - c0, time.perf_counter() - w0
    c0, w0 = time.process_time(), time.perf_counter()
    g = m.epsilon(DELTA)
    c_dp, w_dp = time.process_time() - c0, time.perf_counter() - w0
    low = "-" if g.lower is None else f"{g.lower:.4f}"
    return (f"| {bands} | {n} | {bins} | {z:g} | {r.estimate:.4f} [{r.lo:.4f}, {r.hi:.4f}] | "
            f"{r.ess:.0f}{'' if r.trusted else ' (!)'} | {r.max_share:.4f} | "
            f"{c_mc:.1f} ({w_mc:.1f}) | {g.epsilon:.4f} {g.method} | {low} | "
            f"{c_dp:.2f} ({w_dp:.2f}) | {g.epsilon / r.estimate:.2f} |")


def fixed_bins_table(ns: list[int], bands_list: list[int], bins_list: list[int],
                     zs: list[float], samples: int) -> None:
    print(f"eps at delta {DELTA:g} under dp.FixedBins: MC estimate [4-se interval] (seed 0, "
          f"{samples} samples per direction) beside dpamp's proven upper bound; seconds are CPU "
          f"(process_time), wall in parentheses")
    print("| b | n | bins | z | MC eps [interval] | ess | max share | MC CPU s (wall) | "
          "proven upper, method | proven lower | dpamp CPU s (wall) | upper / MC |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        for bins in bins_list:
            for z in zs:
                for bands in bands_list:
                    print(fixed_bins_row(bands, n, bins, z, samples), flush=True)


def coverage(seeds: int, samples: int) -> None:
    """How often the interval holds the certified eps, over ``seeds`` seeds, where dpamp's
    bracket is exact: DP-SGD (100 steps, q 0.01, z 1) and cyclic Poisson (4 bands of the
    banded square root, 100 steps, 4 groups at q 0.01, z 1)."""
    cases = [("DP-SGD n 100 q 0.01 z 1", strategy(1, 100), dp.Poisson(0.01)),
             ("cyclic b 4 n 100 q 0.01 z 1", strategy(4, 100), dp.CyclicPoisson(0.01, 4))]
    for name, c, part in cases:
        m = dp.MatrixMechanism(c, 1.0, participation=part)
        g = m.epsilon(DELTA)
        ests, held, trusted = [], 0, 0
        for seed in range(100, 100 + seeds):
            r = estimate_epsilon(m, DELTA, samples=samples, seed=seed)
            ests.append(r.estimate)
            held += r.lo <= g.epsilon and g.lower <= r.hi
            trusted += r.trusted
        mean = sum(ests) / len(ests)
        sd = math.sqrt(sum((e - mean) ** 2 for e in ests) / (len(ests) - 1))
        print(f"{name}: certified [{g.lower:.4f}, {g.epsilon:.4f}]; interval held {held}/{seeds}; "
              f"mean estimate {mean:.4f} (bias {100 * (mean / g.epsilon - 1):+.2f} % +- "
              f"{100 * sd / math.sqrt(seeds) / g.epsilon:.2f} %), sd {100 * sd / g.epsilon:.2f} %"
              f"; trusted {trusted}/{seeds}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--bands", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--rates", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    ap.add_argument("--samples", type=int, default=4000)
    ap.add_argument("--check", action="store_true", help="add the cyclic-Poisson rows")
    ap.add_argument("--balls-in-bins", action="store_true",
                    help="add balls-in-bins rows (bins: the divisor of n nearest 1 / q)")
    ap.add_argument("--fixed-bins", action="store_true",
                    help="only the table under dp.FixedBins (bins drawn once)")
    ap.add_argument("--bins", type=int, nargs="+", default=[10, 100],
                    help="--fixed-bins: the numbers of bins")
    ap.add_argument("--z", type=float, nargs="+", default=[1.0, 3.0],
                    help="--fixed-bins: the noise multipliers")
    ap.add_argument("--coverage", type=int, default=0, metavar="SEEDS",
                    help="only the coverage check over this many seeds")
    a = ap.parse_args()
    if a.coverage:
        coverage(a.coverage, a.samples)
        return
    if a.fixed_bins:
        ns = a.n if a.n != [100, 1000] else [1000]
        fixed_bins_table(ns, a.bands, a.bins, a.z, a.samples)
        return
    print(f"eps at delta {DELTA:g}: MC estimate (4-se interval, seed 0, {a.samples} samples "
          f"per direction) beside dpamp's proven bound")
    print("| sampling | b | n | q | z | MC eps | MC interval | ess | max share | MC s | "
          "proven [lower, upper] route | dpamp s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in a.n:
        for bands in a.bands:
            for q in a.rates:
                print(row(bands, n, q, a.samples, False), flush=True)
                if a.check and bands > 1:
                    print(row(bands, n, q, a.samples, True), flush=True)
                if a.balls_in_bins:
                    # whole epochs only: a shorter last epoch of one step would be a
                    # certain, unamplified participation
                    bins = min((d for d in range(1, n + 1) if n % d == 0),
                               key=lambda d: abs(d - 1 / q))
                    print(row(bands, n, q, a.samples, False, bins), flush=True)


if __name__ == "__main__":
    main()
