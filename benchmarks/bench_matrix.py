"""The matrix mechanism: epsilon against steps beside DP-SGD, and the sensitivity's cost.

Part 1 (epsilon against steps, delta = 1e-6): DP-SGD at Poisson rate q and noise multiplier z
for n steps, beside banded MF with b bands (the banded square root, scaled to max column norm
1 as jax_privacy takes it) under cyclic Poisson with b groups, each step sampling its group at
rate b q (the same expected batch), the same z: by the reduction of Choquette-Choo et al.
(NeurIPS 2023) ceil(n / b) Poisson-subsampled Gaussian steps at rate b q. dpamp's certified
bracket and its CPU time (cold cache), and dp-accounting's PLD of jax_privacy's event for the same plan.

Part 2 (sensitivity under (k, b)-participation, n = 10 000): the route, the bracket and the
CPU time of each strategy.

    python benchmarks/bench_matrix.py [--quick]
"""
from __future__ import annotations

import argparse
import math
import time

import dpamp as dp
from dpamp.families.matrix import bsr_coefficients
from dpamp.mechanisms.matrix_sensitivity import sensitivity

DELTA = 1e-6


def _dpa(z, q, steps):
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)),
                                        steps))
    return acc.get_epsilon(DELTA)


def _fresh():
    """Empty dpamp's PLD cache, so that every cell is timed cold."""
    from dpamp.pld import query
    query._CACHE = type(query._CACHE)()


def _timed(fn):
    _fresh()
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def part1(steps_list, z=1.0, q=0.01, bands=8):
    coeffs = bsr_coefficients(bands)
    norm = math.sqrt(sum(c * c for c in coeffs))
    unit = [c / norm for c in coeffs]
    print(f"epsilon at delta {DELTA:g}: DP-SGD (rate {q}, z {z}) vs banded MF ({bands} bands, "
          f"cyclic Poisson, {bands} groups at rate {bands * q}, z {z})")
    print(f"{'steps':>7} {'DP-SGD [lower, upper]':>26} {'s':>6} {'BandMF [lower, upper]':>26} "
          f"{'s':>6} {'dp-acc BandMF':>14}")
    for n in steps_list:
        sgd = dp.Gaussian(z).subsample(dp.Poisson(q)) * n
        g1, c1, _ = _timed(lambda: sgd.epsilon(DELTA))
        mf = dp.MatrixMechanism(dp.BandedToeplitz(unit, n), z, dp.CyclicPoisson(bands * q, bands))
        g2, c2, _ = _timed(lambda: mf.epsilon(DELTA))
        ref = _dpa(z, bands * q, math.ceil(n / bands))
        print(f"{n:>7} [{g1.lower:.5f}, {g1.epsilon:.5f}]{'':>6} {c1:6.2f} "
              f"[{g2.lower:.5f}, {g2.epsilon:.5f}]{'':>6} {c2:6.2f} {ref:14.5f}")


def part2(n=10_000):
    cases = [("banded 16 (BSR)", dp.BandedToeplitz(bsr_coefficients(16), n), 10, 1000),
             ("Toeplitz square root", dp.Toeplitz(bsr_coefficients(n), n), 100, 100),
             ("BLT 2 buffers", dp.BLT((0.99, 0.9), (0.3, 0.2), n), 10, 1000),
             ("BLT mixed signs", dp.BLT((0.99, 0.9), (0.5, -0.2), n), 10, 1000),
             ("binary tree", dp.BinaryTree(n), 10, 1000)]
    print(f"\nsensitivity under (k, b)-participation, n = {n}")
    print(f"{'strategy':<22} {'k':>4} {'b':>5} {'lower':>12} {'upper':>12} {'route':<18} "
          f"{'CPU s':>6}")
    for name, s, k, b in cases:
        sb, cpu, _ = _timed(lambda: sensitivity(s, k, b))
        print(f"{name:<22} {k:>4} {b:>5} {sb.lower:12.6f} {sb.upper:12.6f} {sb.route:<18} "
              f"{cpu:6.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    part1((1000, 2000) if a.quick else (1000, 2000, 5000, 10_000))
    part2(2000 if a.quick else 10_000)


if __name__ == "__main__":
    main()
