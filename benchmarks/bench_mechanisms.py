"""Every mechanism family of dpamp on a few realistic plans (one step, composed, and Poisson-
subsampled where dpamp supports it), against dp-accounting 0.6's PLD accountant and its RDP
accountant on the same DpEvent, in one process, cold.

Run: python benchmarks/bench_mechanisms.py [--only SUBSTRING] [--repeat N] [--pld-interval X]

Columns:
  plan                     family and parameters; delta of the epsilon(delta) query
  dpamp [lo, hi]           dpamp's proven bracket at its default tolerance (method "auto"),
                           lo "-" where dpamp proves no lower bound
  meth                     the method dpamp's auto chose
  cpu/wall ms              dpamp's CPU time (time.process_time, all threads) and wall time,
                           best wall of --repeat runs, each with every dpamp cache cleared
  dp-acc PLD / RDP         dp-accounting's epsilon, its wall time, that time over dpamp's
                           wall time, and where it lies against
                           dpamp's bracket: "in", "+x" above hi (relative), "BELOW -x" under lo
                           (relative; a value under a proven lower bound is not a valid epsilon
                           of the plan), "n/a" when it has no account of the event

dp-accounting's events are dp.to_dp_event(plan) where dp-accounting has the event; the discrete
Gaussian (no event in 0.6.0) is built directly with privacy_loss_distribution.
from_discrete_gaussian_mechanism. Its PLD accountant runs at value_discretization_interval 1e-4
(its default; --pld-interval to change) and reports its pessimistic estimate; its RDP accountant
uses its default orders. Tree aggregation is accounted by dp-accounting only under REPLACE_SPECIAL
(a record replaced by a zero one), which moves a node as much as add/remove does.

Truncated Poisson sampling is read from dp-accounting's TruncatedSubsampledGaussianDpEvent;
user-level DP-SGD is written as the MixtureOfGaussiansDpEvent of its binomial mixture.
"""
from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import dpamp as dp  # noqa: E402
from _timing import clear_caches, clock  # noqa: E402  (benchmarks/_timing.py, on the path)

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION


class Row:
    """One plan: its label, the dpamp mechanism, delta, and how dp-accounting gets it."""

    def __init__(self, family, label, mech, delta=1e-6, event=None, direct_pld=None, note=""):
        self.family, self.label, self.mech, self.delta = family, label, mech, delta
        self.event = event              # a DpEvent; None: dp.to_dp_event(mech) if it has one
        self.direct_pld = direct_pld    # (interval) -> dp-accounting PLD, where no event exists
        self.note = note


def _dg_pld(sigma, steps, sensitivity=1, q=1.0):
    def build(interval):
        from dp_accounting.pld import privacy_loss_distribution as PLD
        pld = PLD.from_discrete_gaussian_mechanism(
            sigma, sensitivity, value_discretization_interval=interval, sampling_prob=q)
        return pld.self_compose(steps)
    return build


def core_rows() -> list[Row]:
    from dp_accounting import dp_event as E
    G, L, P = dp.Gaussian, dp.Laplace, dp.Poisson
    mog1 = ((0.0, 1.0, 2.0), (0.81, 0.18, 0.01))
    # a banded matrix mechanism's mixture (Choquette-Choo et al. 2024): shifts of the columns
    mog2 = ((0.0, 0.5, 1.0, 1.5), (0.9, 0.05, 0.03, 0.02))
    return [
        Row("gaussian", "gauss s=2", G(2.0), 1e-5),
        Row("gaussian", "gauss s=5 T=100", G(5.0) * 100, 1e-5),
        Row("gaussian", "gauss s=1.1 q=.01 T=1000", G(1.1).subsample(P(0.01)) * 1000, 1e-5),
        Row("gaussian", "gauss s=.8 q=.004 T=10000", G(0.8).subsample(P(0.004)) * 10000, 1e-6),
        Row("gaussian", "gauss s=1.5 WOR 10/1000 T=500 (subst)",
            G(1.5, 1.0, S).subsample(dp.WithoutReplacement(10, 1000)) * 500, 1e-5),
        Row("laplace", "laplace b=1", L(1.0), 1e-6),
        Row("laplace", "laplace b=10 T=50", L(10.0) * 50, 1e-6),
        Row("laplace", "laplace b=2 q=.02 T=300", L(2.0).subsample(P(0.02)) * 300, 1e-6),
        Row("discrete_laplace", "dlap a=1 D=1", dp.DiscreteLaplace(1.0), 1e-6),
        Row("discrete_laplace", "dlap a=.1 D=1 T=50", dp.DiscreteLaplace(0.1) * 50, 1e-6),
        Row("discrete_laplace", "dlap a=.5 q=.05 T=200",
            dp.DiscreteLaplace(0.5).subsample(P(0.05)) * 200, 1e-6),
        Row("discrete_gaussian", "dgauss s=2", dp.DiscreteGaussian(2.0), 1e-6,
            direct_pld=_dg_pld(2.0, 1)),
        Row("discrete_gaussian", "dgauss s=5 T=100", dp.DiscreteGaussian(5.0) * 100, 1e-6,
            direct_pld=_dg_pld(5.0, 100)),
        Row("discrete_gaussian", "dgauss s=1.5 q=.01 T=1000",
            dp.DiscreteGaussian(1.5).subsample(P(0.01)) * 1000, 1e-5,
            direct_pld=_dg_pld(1.5, 1000, q=0.01)),
        Row("skellam", "skellam mu=4", dp.Skellam(4.0), 1e-6),
        Row("skellam", "skellam mu=25 T=100", dp.Skellam(25.0) * 100, 1e-6),
        Row("skellam", "skellam mu=2 q=.01 T=1000", dp.Skellam(2.0).subsample(P(0.01)) * 1000,
            1e-5),
        Row("mixture_of_gaussians", "mog s=1 (0,1,2) T=1", dp.MixtureOfGaussians(1.0, *mog1),
            1e-6),
        Row("mixture_of_gaussians", "mog s=1 (0,1,2) T=100",
            dp.MixtureOfGaussians(1.0, *mog1) * 100, 1e-6),
        Row("mixture_of_gaussians", "mog s=1 banded(4) T=1000",
            dp.MixtureOfGaussians(1.0, *mog2) * 1000, 1e-5),
        Row("mixture_of_gaussians", "mog s=1 (0,1,2) q=.1 T=100",
            dp.MixtureOfGaussians(1.0, *mog1).subsample(P(0.1)) * 100, 1e-6),
        Row("selection", "exp mech eps=1", dp.ExponentialMechanism(1.0), 1e-6),
        Row("selection", "exp mech eps=.5 T=20", dp.ExponentialMechanism(0.5) * 20, 1e-6),
        Row("selection", "RNM gumbel eps=.5 T=20", dp.ReportNoisyMax(0.5) * 20, 1e-6),
        Row("selection", "RNM expon eps=.5 T=20",
            dp.ReportNoisyMax(0.5, noise="exponential") * 20, 1e-6),
        Row("selection", "permute-flip eps=.5 T=20", dp.PermuteAndFlip(0.5) * 20, 1e-6),
        Row("selection", "exp mech eps=1 q=.05 T=100",
            dp.ExponentialMechanism(1.0).subsample(P(0.05)) * 100, 1e-6),
        Row("selection", "permute-flip eps=1 q=.05 T=100",
            dp.PermuteAndFlip(1.0).subsample(P(0.05)) * 100, 1e-6),
        Row("repeat_select", "RAS poisson(10) of gauss s=2", dp.RepeatAndSelect(G(2.0), 10.0),
            1e-6),
        Row("repeat_select", "RAS geom(5) of gauss s=1 q=.1 T=10",
            dp.RepeatAndSelect(G(1.0).subsample(P(0.1)) * 10, 5.0, "geometric"), 1e-6),
        Row("tree_aggregation", "tree z=5 n=1000", dp.TreeAggregation(5.0, 1000), 1e-6),
        Row("tree_aggregation", "tree z=2 n=100 x5 epochs", dp.TreeAggregation(2.0, 100) * 5,
            1e-6),
        Row("randomized_response", "RR p=.75 (subst)", dp.RandomizedResponse(0.75, S), 1e-6),
        Row("randomized_response", "RR p=.55 T=100 (subst)",
            dp.RandomizedResponse(0.55, S) * 100, 1e-6, note=_RR_COUNT),
        Row("randomized_response", "RR k=3 p=.9 T=1000 (event)",
            dp.from_dp_event(E.SelfComposedDpEvent(E.RandomizedResponseDpEvent(0.9, 3), 1000)),
            1e-6, event=E.SelfComposedDpEvent(E.RandomizedResponseDpEvent(0.9, 3), 1000),
            note="k-ary RR, read as dp.KaryRandomizedResponse (its exact three-outcome "
                 "pair); " + _RR_COUNT),
    ]


#: dp-accounting 0.6.0's PLDAccountant composes a RandomizedResponseDpEvent once whatever the
#: count of the SelfComposedDpEvent around it (its RR branch never reads ``count``)
_RR_COUNT = "dp-acc PLD ignores the count of a self-composed RR event"


def truncated_poisson_rows() -> list[Row]:
    """Slot: Gaussian with truncated Poisson sampling (dp-accounting's
    TruncatedSubsampledGaussianDpEvent, Dong et al. 2025, arXiv:2508.15089). Rows appear once
    dp.from_dp_event reads the event."""
    from dp_accounting import dp_event as E
    out = []
    for n, q, b, z, T in ((60000, 256 / 60000, 300, 1.1, 14062), (10000, 0.01, 120, 1.0, 1000)):
        ev = E.SelfComposedDpEvent(E.TruncatedSubsampledGaussianDpEvent(n, q, b, z), T)
        try:
            mech = dp.from_dp_event(ev)
        except ValueError as exc:
            print(f"  [slot truncated Poisson: not yet read by dpamp: {str(exc)[:70]}]")
            return []
        out.append(Row("truncated_poisson", f"trunc gauss s={z:g} q={q:.3g} B={b} T={T}", mech,
                       1e-5, event=ev))
    return out


def user_level_rows() -> list[Row]:
    """User-level DP-SGD with record sampling and per-record clipping: dpamp's binomial
    mixture of Gaussians; dp-accounting gets the same mixture as a MixtureOfGaussiansDpEvent
    (dp.to_dp_event)."""
    q = 256 / 60000
    return [Row("user_level", f"user-level m={m} s=1.1 q=256/60000 T={T}",
                dp.UserLevelGaussian(1.1, m, q) * T, 1e-5)
            for m, T in ((2, 2340), (4, 2340), (8, 234))]


# --- running ------------------------------------------------------------------------------------

def ours(row, repeat):
    best = None
    for _ in range(repeat):
        clear_caches()
        g, cpu, wall = clock(row.mech.epsilon, row.delta)
        if best is None or wall < best[2]:
            best = (g, cpu, wall)
    return best


def _relation(mech):
    from dp_accounting import NeighboringRelation as NR
    return NR.REPLACE_ONE if mech.relation is S else NR.ADD_OR_REMOVE_ONE


def _event(row):
    if row.event is not None:
        return row.event, None
    try:
        return dp.to_dp_event(row.mech), None
    except ValueError:
        return None, "no event"


def peer_pld(row, interval):
    from dp_accounting.pld import pld_privacy_accountant as PA
    if row.direct_pld is not None:
        return row.direct_pld(interval).get_epsilon_for_delta(row.delta), None
    ev, why = _event(row)
    if ev is None:
        return None, why
    acc = PA.PLDAccountant(_relation(row.mech), value_discretization_interval=interval)
    if not acc.supports(ev):
        return None, "refused"
    acc.compose(ev)
    return acc.get_epsilon(row.delta), None


def peer_rdp(row):
    from dp_accounting import NeighboringRelation as NR
    from dp_accounting.rdp import rdp_privacy_accountant as RA
    ev, why = _event(row)
    if ev is None:
        return None, why
    for nr in (_relation(row.mech), NR.REPLACE_SPECIAL):
        acc = RA.RdpAccountant(neighboring_relation=nr)
        if acc.supports(ev):
            acc.compose(ev)
            return acc.get_epsilon(row.delta), None
        if row.family != "tree_aggregation":
            break
    return None, "refused"


def where(v, lo, hi):
    """dp-accounting's value against dpamp's bracket [lo, hi]."""
    tol = 1e-9
    if lo is not None and v < lo * (1 - tol):
        return f"BELOW {v / lo - 1:+.1e}"
    if v > hi * (1 + tol):
        return f"{v / hi - 1:+.1e}"
    return "in" if lo is not None else "<= hi"


def _peer_cell(fn, args, lo, hi, t_ours):
    try:
        (v, why), cpu, wall = clock(fn, *args)
    except Exception as exc:                        # a peer failing is reported, not fatal
        return f"{'error ' + type(exc).__name__:>41s}"
    if v is None:
        return f"{'n/a (' + why + ')':>41s}"
    ratio = f"{wall / t_ours:6.1f}x"
    if not math.isfinite(v):
        return f"{v:>10.4g} {wall * 1e3:8.1f}ms {ratio} {'':>13s}"
    return f"{v:10.5g} {wall * 1e3:8.1f}ms {ratio} {where(v, lo, hi):>13s}"


def main(argv):
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 2
    interval = float(argv[argv.index("--pld-interval") + 1]) if "--pld-interval" in argv \
        else 1e-4
    try:                           # dp-accounting's RDP logs every order it skips
        from absl import logging as absl_logging
        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass
    # imports and first-call overheads of both libraries, outside every timing
    dp.Gaussian(1.0).subsample(dp.Poisson(0.1)).epsilon(1e-5)
    peer_pld(Row("gaussian", "warm-up", dp.Gaussian(1.0) * 2), 1e-2)
    peer_rdp(Row("gaussian", "warm-up", dp.Gaussian(1.0) * 2))
    rows = core_rows() + truncated_poisson_rows() + user_level_rows()
    print(f"dp-accounting PLD at value_discretization_interval {interval:g}; dpamp best of "
          f"{repeat} cold runs; eps(delta)")
    head = (f"{'plan':38s} {'delta':>6s} {'dpamp [lo, hi]':>27s} {'meth':>8s} "
            f"{'cpu/wall ms':>15s} | {'dp-acc PLD':>10s} {'time':>10s} {'/dpamp':>7s} {'vs bracket':>13s} | "
            f"{'dp-acc RDP':>10s} {'time':>10s} {'/dpamp':>7s} {'vs bracket':>13s}")
    print(head)
    print("-" * len(head))
    for row in rows:
        if only not in row.label and only not in row.family:
            continue
        g, cpu, wall = ours(row, repeat)
        lo, hi = g.lower, g.epsilon
        bracket = f"[{'-' if lo is None else f'{lo:.6g}'}, {hi:.6g}]"
        line = (f"{row.label:38s} {row.delta:6.0e} {bracket:>27s} {g.method[:8]:>8s} "
                f"{cpu * 1e3:7.1f}/{wall * 1e3:7.1f} | "
                f"{_peer_cell(peer_pld, (row, interval), lo, hi, wall)} | "
                f"{_peer_cell(peer_rdp, (row,), lo, hi, wall)}")
        print(line + (f"   ({row.note})" if row.note else ""), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
