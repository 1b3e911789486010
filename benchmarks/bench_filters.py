"""Privacy filters at equal budgets: how many steps each allows, dpamp's and OpenDP's.

    python benchmarks/bench_filters.py          (OpenDP columns need `pip install opendp`)

For each sequence (the same mechanism repeated, which any fully adaptive filter must handle as
a special case) and budget (epsilon, delta), the number of steps each filter accepts before the
first refusal, with the CPU time (time.process_time) beside the wall time of the whole count.

OpenDP (0.16) offers fully adaptive composition (``make_fully_adaptive_composition``) with a
privacy filter (``make_privacy_filter``) over a privacy measure; its filters sum the steps'
losses (basic composition in that measure). The columns:

- ``opendp zcdp``: the zCDP measure, budget the largest rho whose OpenDP conversion
  (``make_zCDP_to_approxDP`` + ``make_fix_delta``) gives (epsilon, delta); Gaussian steps charged
  rho = 1/(2 sigma^2), Laplace steps converted by ``make_pureDP_to_zCDP``;
- ``opendp pure``: the pure-DP measure (Laplace steps only), budget epsilon.

The fixed-plan column is what dpamp's PLD proves for a plan fixed in advance (not a filter):
the most steps any valid filter could allow on that sequence.
"""
from __future__ import annotations

import math
import time

import dpamp as dp


def count(make, m, limit=200_000):
    f = make()
    n = 0
    while n < limit and f.try_spend(m):
        n += 1
    return n


def fixed_plan(m, eps, delta, hi=200_000):
    from dpamp.core.roots import bisect_int
    if (m * 1).epsilon(delta).epsilon > eps:
        return 0
    lo, _ = bisect_int(lambda n: (m * n).epsilon(delta).epsilon > eps, 1, hi)
    return lo


def opendp_counts(kind, scale, eps, delta, limit=200_000):
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    dom, met = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)
    out = {}
    if kind == "gaussian":
        meas_step = odp.m.make_gaussian(dom, met, scale=scale)
    else:
        meas_step = odp.c.make_pureDP_to_zCDP(odp.m.make_laplace(dom, met, scale=scale))

    def eps_of_rho(rho):
        g = odp.m.make_gaussian(dom, met, scale=math.sqrt(1 / (2 * rho)))
        return odp.c.make_fix_delta(odp.c.make_zCDP_to_approxDP(g), delta).map(1.0)[0]

    lo, hi = 1e-8, 100.0
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps_of_rho(mid) <= eps else (lo, mid)
    measures = [("opendp zcdp", odp.zero_concentrated_divergence(), lo, meas_step)]
    if kind == "laplace":
        measures.append(("opendp pure", odp.max_divergence(), eps,
                         odp.m.make_laplace(dom, met, scale=scale)))
    for name, measure, budget, step in measures:
        t0, c0 = time.perf_counter(), time.process_time()
        od = odp.c.make_fully_adaptive_composition(dom, met, measure)
        qbl = odp.c.make_privacy_filter(od, d_in=1.0, d_out=budget)(1.0)
        n = 0
        while n < limit:
            try:
                qbl(step)
            except Exception:
                break
            n += 1
        out[name] = (n, time.process_time() - c0, time.perf_counter() - t0)
    return out


CASES = [("gaussian", 20.0, 1.0, 1e-5), ("gaussian", 20.0, 2.0, 1e-6),
         ("gaussian", 5.0, 8.0, 1e-6), ("laplace", 200.0, 1.0, 1e-6),
         ("laplace", 20.0, 2.0, 1e-6)]


def main():
    rows = []
    for kind, scale, eps, delta in CASES:
        m = dp.Gaussian(scale) if kind == "gaussian" else dp.Laplace(scale)
        cols = {}
        methods = ("rdp", "zcdp", "gdp") if kind == "gaussian" else \
            ("rdp", "zcdp", "advanced", "rruv", "basic")
        for meth in methods:
            t0, c0 = time.perf_counter(), time.process_time()
            n = count(lambda: dp.Filter(eps, delta, method=meth), m)
            cols[f"dpamp {meth}"] = (n, time.process_time() - c0, time.perf_counter() - t0)
        cols.update(opendp_counts(kind, scale, eps, delta) or {})
        rows.append((f"{kind} {scale:g}", eps, delta, fixed_plan(m, eps, delta), cols))
    for label, eps, delta, fixed, cols in rows:
        print(f"\n{label}, budget ({eps:g}, {delta:g}); fixed plan (PLD): {fixed} steps")
        print(f"  {'filter':<16}{'steps':>8}{'cpu s':>9}{'wall s':>9}")
        for name, (n, cpu, wall) in cols.items():
            print(f"  {name:<16}{n:>8}{cpu:>9.3f}{wall:>9.3f}")


if __name__ == "__main__":
    main()
