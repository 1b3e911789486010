"""Figures for docs/bernoulli.md: dp.bernoulli.exact for d = 2, 3 (paper 001) with its default
budget (rtol 2e-2, 6000 cells per (epsilon, alpha)), against the closed-form bracket.

    PYTHONPATH=src python benchmarks/bench_bernoulli.py [max_cells]

Prints, per instance, the closed-form bracket [lower_bound, upper_bound], the certified bracket
[value, upper], their relative widths, whether it is certified and the wall time."""
import sys
import time

from dpamp.amplification import bernoulli as B

CASES = [(2, 1, 5.0, 0.1), (2, 2, 3.0, 0.3), (2, 1, 50.0, 0.3), (2, 3, 10.0, 0.2),
         (3, 1, 5.0, 0.1), (3, 1, 20.0, 0.3)]


def main(max_cells=None):
    print("d k alpha c eps | closed [low, up] width | certified [value, upper] width | cert time")
    for d, k, a, c in CASES:
        for e in (0.1, 0.5, 2.0):
            t = time.perf_counter()
            r = B.exact(e, a, c, d, k, max_cells=max_cells)
            dt = time.perf_counter() - t
            lo, up = B.lower_bound(e, a, c, d, k), B.upper_bound(e, a, c, d, k)
            print(f"{d} {k} {a:g} {c:g} {e:g} | [{lo:.5g}, {up:.5g}] {up / lo - 1:.3f} | "
                  f"[{r.value:.5g}, {r.upper:.5g}] {r.upper / r.value - 1:.3f} | "
                  f"{r.certified} {dt:.1f}s", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else None)
