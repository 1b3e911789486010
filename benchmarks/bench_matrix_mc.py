"""Monte Carlo ESTIMATES of eps(delta) for banded matrix mechanisms under Poisson sampling, beside
dpamp's proven answer for the mechanism: its amplified upper bound (and the route that gave it)
and its proven lower end.

The strategy is the banded square root with b bands (b = 1: DP-SGD), scaled to column norm 1;
every step Poisson-samples the whole data set at rate q; noise multiplier z. For each cell:
the MC estimate of the fixed-direction pair's eps at delta = 1e-6 with its 4-standard-error
interval (``dpamp.accounting.montecarlo_matrix.estimate_epsilon``: an estimate, not a
guarantee), its effective sample size, largest single share (``(!)``: the diagnostics fail,
``MonteCarloEstimate.trusted``), CPU (``time.process_time``, all threads) and wall seconds;
beside it dpamp's answer ``m.epsilon(delta)`` (cold caches): the proven upper end and the route
that gave it (``noise-split``, ``conditional-composition``, ``no-amplification``; for b = 1 and
the cyclic rows the mechanism's own exact route), the proven lower end (``-``: none), the ratio
upper / MC estimate, and its CPU and wall seconds. The check column: ``ok`` where the MC
interval reaches below the upper end (the pair is an actual pair of neighbours, so its eps is
at most the mechanism's) and, where the route is exact (b = 1, cyclic), above the lower end;
``DISAGREE`` otherwise; ``MC<lower`` (not a disagreement) where the MC interval lies below a
lower end that comes from another pair (the orthogonal witness).

``--check`` adds the cyclic-Poisson rows (b groups, each step sampling its group at rate q):
there dpamp's reduction (Choquette-Choo et al. NeurIPS 2023) is exact when b divides n, so the
certified bracket and the MC interval must overlap: the check of the estimator at scale.

``--balls-in-bins`` adds rows with balls in bins of about 1 / q steps (the divisor of n
nearest 1 / q: the same expected share of steps, whole epochs); ``--sampling`` picks the row
kinds directly (e.g. ``--sampling bins`` for balls-in-bins rows alone). ``--z`` replaces the
noise multiplier of each rate (default 1, 1.5, 3 for q = 0.01, 0.03, 0.1) by each of the given
ones; ``--samples 0`` skips the Monte Carlo estimate (its columns ``-``), e.g. where its
recursion over 2^(b - 1) states is too slow (b = 8 at n = 10^4) or not taken (b > 13).

``--fixed-bins`` instead prints the table under balls in bins drawn once (``dp.FixedBins``:
each record in every step of one of ``bins`` bins; n = 1000 by default, bins 10 and 100, z 1
and 3): the MC estimate [interval], ess, its CPU and wall seconds, and dpamp's proven upper
bound (``m.epsilon(delta)``: its value and method; its proven lower end where it has one) with
the ratio upper / MC.

``--opake`` adds opake-accounting's Monte Carlo PLD (imported through ``tools/opake_compat.py``)
for the same cells, in the same process: its eps at delta, the confidence it states (one minus
its failure probability) and its unresolved-mass budget, CPU and wall seconds. Where it has
one: under ``--fixed-bins`` ``bnb_mc_pld`` (Choquette-Choo et al. 2024, Alg. 2: one bin drawn
for the whole run, the bins' b x b Gram, here built from dpamp's own strategy object, so both
libraries read one matrix); in the ``minsep`` rows (``dp.MinSepSampling(q, b, warm_start)``, b =
the bands) ``bandmf_b_min_sep_warm_mc_pld`` on the strategy's b coefficients (its separation
is the number of coefficients); in the Poisson rows with b = 1 the same with one coefficient
(1-min-separation sampling is Poisson sampling); elsewhere ``-`` (opake has no MC for Poisson
sampling on more than one band, nor for balls in bins redrawn every epoch). Its cost grows as
1 / resolution: ``--opake-resolution`` (default delta / 2; opake answers eps = inf where
delta is not above it) and ``--opake-failure`` (default 1e-6, opake's) set its sample count;
``--delta`` moves every row's delta (e.g. where opake's sample count at 1e-6 is out of reach).
In the ``minsep`` rows dpamp's Monte Carlo is that of the min-separation chain's own pair (warm
start, the chain's pattern law in the loss recursion); dpamp's proven answer there is its upper
bound (the Poisson plan at rate q, or no-amplification), whose slack both estimates show.

``--coverage SEEDS`` instead counts how often the interval holds the certified eps over that
many seeds, on two cases where dpamp's bracket is exact.

    python benchmarks/bench_matrix_mc.py [--n 100 1000] [--bands 1 2 4 8] [--samples 4000]
        [--rates 0.01 0.03 0.1] [--z Z ...] [--check] [--balls-in-bins]
        [--sampling poisson cyclic bins] [--notes] [--split-alone] [--no-header]
    python benchmarks/bench_matrix_mc.py --fixed-bins [--n 1000] [--bins 10 100] [--z 1 3]
        [--opake [--opake-resolution R] [--opake-failure F]] [--delta D]
    python benchmarks/bench_matrix_mc.py --sampling minsep --bands 2 8 --rates 0.1 --z 1 3
        --opake --delta 1e-4
    python benchmarks/bench_matrix_mc.py --coverage 40
"""
from __future__ import annotations

import argparse
import math
import os
import time
import sys

from _timing import clear_caches, clock

import dpamp as dp
from dpamp.accounting.montecarlo_matrix import estimate_epsilon
from dpamp.families.matrix import bsr_coefficients
from dpamp.mechanisms.matrix import CONDITIONAL, NO_AMPLIFICATION, SPLIT

DELTA = 1e-6
#: noise multiplier per sampling rate (DP-SGD over 1000 steps near eps 2 to 4)
NOISE = {0.01: 1.0, 0.03: 1.5, 0.1: 3.0}
KINDS = ("poisson", "cyclic", "bins", "minsep")
#: opake's Monte Carlo settings (``--opake-resolution``, ``--opake-failure``); None: not run
OPAKE: dict | None = None


def strategy(bands: int, n: int):
    """The banded square root with ``bands`` bands, scaled to column norm 1."""
    co = bsr_coefficients(bands) if bands > 1 else [1.0]
    norm = math.sqrt(sum(c * c for c in co))
    return dp.BandedToeplitz([c / norm for c in co], n)


def route(m, g) -> str:
    """The route that gave the upper end: an amplified route's name, no-amplification where
    that (the mechanism's own profile) won, else the mechanism's own (exact) route."""
    if g.method in (SPLIT, CONDITIONAL):
        return g.method
    return NO_AMPLIFICATION if m.route in (SPLIT, NO_AMPLIFICATION) else m.route


def check(r, g, exact: bool) -> str:
    """``ok``, ``DISAGREE`` or ``MC<lower`` (module docstring)."""
    if r.lo > g.epsilon:
        return "DISAGREE"
    if g.lower is not None and r.hi < g.lower:
        return "DISAGREE" if exact else "MC<lower"
    return "ok"


def _opake():
    """opake-accounting's native module (``tools/opake_compat.py`` imports it on CPython
    3.11), or SystemExit saying why not."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    from opake_compat import import_opake
    if import_opake() is None:
        raise SystemExit("--opake: opake-accounting is not installed or does not import "
                         "(pip install opake-accounting, a test extra)")
    from opake.api.accounting.core import opake_accounting as oa
    return oa


def _fixed_bins_gram(c, n: int, bins: int) -> list[float]:
    """G[i, j] = <C 1_pi_i, C 1_pi_j> over the bins pi_j = (j, j + bins, ...), from dpamp's
    strategy object (``pattern_sums``): opake's ``bnb_mc_pld`` input (row-major b x b), the
    same as its ``toeplitz_gram_matrix(..., normalized=False)`` (tests/test_matrix_opake.py)."""
    import numpy as np
    m = np.stack([c.pattern_sums(range(j, n, bins))[0] for j in range(bins)])
    return [float(v) for v in (m @ m.T).ravel()]


def opake_cell(kind: str, bands: int, n: int, q: float, z: float, bins: int) -> str:
    """opake's Monte Carlo PLD of the cell (module docstring): ``eps | confidence (failure) |
    resolution | CPU s | wall s``, or dashes where opake has no Monte Carlo for it."""
    if OPAKE is None:
        return ""
    dash = " - | - | - | - | - |"
    if not (kind in ("fixed", "minsep") or (kind == "poisson" and bands == 1)):
        return dash
    oa = _opake()
    cfg = oa.DiscretizationConfig(mc_resolution=OPAKE["resolution"],
                                  mc_failure_probability=OPAKE["failure"])
    c = strategy(bands, n)
    if kind == "fixed":
        gram = _fixed_bins_gram(c, n, bins)
        run = lambda: oa.bnb_mc_pld(gram, bins, z, cfg)  # noqa: E731
    else:        # b-min-separation (b = the number of coefficients; b = 1: Poisson)
        co = [float(v) for v in c.coeffs]
        run = lambda: oa.bandmf_b_min_sep_warm_mc_pld(co, n, q, z, cfg)  # noqa: E731
    pld, cpu, wall = clock(run)
    return (f" {pld.epsilon_at(DELTA):.4f} | {pld.mc_confidence:.6g} "
            f"({pld.mc_failure_probability:.3g}) | {pld.mc_resolution:.3g} | {cpu:.1f} | "
            f"{wall:.1f} |")


OPAKE_HEADER = " opake MC eps | opake confidence (failure) | opake resolution | opake CPU s | " \
    "opake wall s |"


def split_alone(bands: int, n: int, z: float, part) -> str:
    """The noise split's epsilon alone (its plan by the certified PLD, cold caches, a fresh
    mechanism) and its CPU seconds: what the route costs without the other candidates."""
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=part)
    clear_caches()
    try:
        g, cpu, _ = clock(lambda: m.split_reduction().epsilon(DELTA, method="pld"))
    except (ValueError, ArithmeticError) as err:      # not applicable, or out of reach
        return f" - ({type(err).__name__}) | - |"
    return f" {g.epsilon:.4f} | {cpu:.2f} |"


def row(bands: int, n: int, q: float, z: float, samples: int, kind: str, bins: int = 0,
        notes: bool = False, split: bool = False) -> str:
    """One table row; ``kind`` poisson, cyclic (``bands`` groups at rate q) or bins (balls in
    bins of ``bins`` steps); ``notes``: the answer's note (the other routes' values, the lower
    end's witness) to stderr; ``split``: two more columns, the noise split alone
    (:func:`split_alone`)."""
    part = dp.BallsInBins(bins) if kind == "bins" else \
        dp.CyclicPoisson(q, bands) if kind == "cyclic" else \
        dp.MinSepSampling(q, bands, warm_start=True) if kind == "minsep" else dp.Poisson(q)
    m = dp.MatrixMechanism(strategy(bands, n), z, participation=part)
    if samples:
        r, mc_cpu, mc_wall = clock(lambda: estimate_epsilon(m, DELTA, samples=samples, seed=0))
        mc = (f"{r.estimate:.4f} | [{r.lo:.4f}, {r.hi:.4f}] | "
              f"{r.ess:.0f}{'' if r.trusted else ' (!)'} | {r.max_share:.4f} | "
              f"{mc_cpu:.1f} | {mc_wall:.1f}")
    else:
        r, mc = None, "- | - | - | - | - | -"
    clear_caches()
    g, cpu, wall = clock(lambda: m.epsilon(DELTA))
    how = route(m, g)
    if notes:
        print(f"note ({kind} b {bands} n {n} q {q:g} z {z:g}): {g.note}", file=sys.stderr)
    low = f"{g.lower:.4f}" if g.lower is not None else "-"
    ratio = f"{g.epsilon / r.estimate:.3g}" if r is not None and r.estimate > 0 else "-"
    ok = check(r, g, how == m.route and how not in (SPLIT, NO_AMPLIFICATION)) \
        if r is not None else "-"
    label = f"bins {bins}" if kind == "bins" else kind
    return (f"| {label} | {bands} | {n} | {q:g} | {z:g} | {mc} | {g.epsilon:.4f} | {how} | "
            f"{low} | {ratio} | {cpu:.2f} | {wall:.2f} | {ok} |"
            + (split_alone(bands, n, z, part) if split else "")
            + opake_cell(kind, bands, n, q, z, bins))


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
            f"{c_dp:.2f} ({w_dp:.2f}) | {g.epsilon / r.estimate:.2f} |"
            + opake_cell("fixed", bands, n, 0.0, z, bins))


def fixed_bins_table(ns: list[int], bands_list: list[int], bins_list: list[int],
                     zs: list[float], samples: int) -> None:
    print(f"eps at delta {DELTA:g} under dp.FixedBins: MC estimate [4-se interval] (seed 0, "
          f"{samples} samples per direction) beside dpamp's proven upper bound; seconds are CPU "
          f"(process_time), wall in parentheses" + _opake_words())
    print("| b | n | bins | z | MC eps [interval] | ess | max share | MC CPU s (wall) | "
          "proven upper, method | proven lower | dpamp CPU s (wall) | upper / MC |"
          + (OPAKE_HEADER if OPAKE else ""))
    print("|---" * (12 + 5 * bool(OPAKE)) + "|")
    for n in ns:
        for bins in bins_list:
            for z in zs:
                for bands in bands_list:
                    print(fixed_bins_row(bands, n, bins, z, samples), flush=True)


def _opake_words() -> str:
    if OPAKE is None:
        return ""
    from opake_compat import opake_version
    return (f"; opake-accounting {opake_version()} Monte Carlo PLD beside it (resolution "
            f"{OPAKE['resolution']:g}, failure probability {OPAKE['failure']:g}, default seed)")


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


def nearest_bins(n: int, q: float) -> int:
    """The divisor of n nearest 1 / q: whole epochs only (a shorter last epoch of one step
    would be a certain, unamplified participation)."""
    return min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - 1 / q))


def main() -> None:
    global DELTA, OPAKE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--bands", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--rates", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    ap.add_argument("--z", type=float, nargs="+", default=None,
                    help="noise multipliers for every rate (default: one per rate, NOISE)")
    ap.add_argument("--samples", type=int, default=4000,
                    help="MC samples per direction (0: no Monte Carlo estimate)")
    ap.add_argument("--check", action="store_true", help="add the cyclic-Poisson rows")
    ap.add_argument("--balls-in-bins", action="store_true",
                    help="add balls-in-bins rows (bins: the divisor of n nearest 1 / q)")
    ap.add_argument("--fixed-bins", action="store_true",
                    help="only the table under dp.FixedBins (bins drawn once)")
    ap.add_argument("--bins", type=int, nargs="+", default=[10, 100],
                    help="--fixed-bins: the numbers of bins")
    ap.add_argument("--sampling", nargs="+", choices=KINDS, default=None,
                    help="the row kinds (default: poisson, plus --check's and "
                         "--balls-in-bins')")
    ap.add_argument("--notes", action="store_true",
                    help="each answer's note (the other routes' values) to stderr")
    ap.add_argument("--split-alone", action="store_true",
                    help="two more columns: the noise split's epsilon alone and its CPU s")
    ap.add_argument("--no-header", action="store_true", help="rows only (runs in pieces)")
    ap.add_argument("--opake", action="store_true",
                    help="opake-accounting's Monte Carlo PLD beside each cell where it has one")
    ap.add_argument("--opake-resolution", type=float, default=None,
                    help="--opake: its unresolved-mass budget (default delta / 2)")
    ap.add_argument("--opake-failure", type=float, default=1e-6,
                    help="--opake: its failure probability (default 1e-6)")
    ap.add_argument("--delta", type=float, default=DELTA, help="delta of every row")
    ap.add_argument("--coverage", type=int, default=0, metavar="SEEDS",
                    help="only the coverage check over this many seeds")
    a = ap.parse_args()
    if a.samples < 0 or (0 < a.samples < 100):
        ap.error("--samples: 0 (no Monte Carlo) or at least 100")
    if not 0 < a.delta < 1:
        ap.error("--delta: in (0, 1)")
    DELTA = a.delta
    if a.opake:
        res = a.opake_resolution if a.opake_resolution is not None else a.delta / 2
        if not (0 < res < 1 and 0 < a.opake_failure < 1):
            ap.error("--opake-resolution and --opake-failure: in (0, 1)")
        _opake()
        OPAKE = {"resolution": res, "failure": a.opake_failure}
    elif a.opake_resolution is not None:
        ap.error("--opake-resolution: only with --opake")
    if a.coverage:
        coverage(a.coverage, a.samples)
        return
    if a.fixed_bins:
        ns = a.n if a.n != [100, 1000] else [1000]
        fixed_bins_table(ns, a.bands, a.bins, a.z or [1.0, 3.0], a.samples)
        return
    kinds = a.sampling or (["poisson"] + ["cyclic"] * a.check + ["bins"] * a.balls_in_bins)
    if not a.no_header:
        mc = f"{a.samples} samples per direction" if a.samples else "not run"
        print(f"eps at delta {DELTA:g}: MC estimate (4-se interval, seed 0, {mc}) beside "
              f"dpamp's proven answer m.epsilon(delta)" + _opake_words())
        extra = (" split alone | split CPU s |" if a.split_alone else "") + \
            (OPAKE_HEADER if a.opake else "")
        print("| sampling | b | n | q | z | MC eps | MC interval | ess | max share | MC CPU s | "
              "MC wall s | upper | route | lower | upper / MC | dpamp CPU s | dpamp wall s | "
              "check |" + extra)
        print("|---" * (18 + 2 * a.split_alone + 5 * a.opake) + "|")
    for n in a.n:
        for bands in a.bands:
            for q in a.rates:
                for z in a.z or [NOISE.get(q, 1.0)]:
                    for kind in kinds:
                        if kind in ("cyclic", "minsep") and bands == 1:
                            continue     # the same as the Poisson row
                        print(row(bands, n, q, z, a.samples, kind,
                                  nearest_bins(n, q) if kind == "bins" else 0, a.notes,
                                  a.split_alone), flush=True)


if __name__ == "__main__":
    main()
