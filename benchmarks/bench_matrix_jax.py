"""Banded MF under cyclic Poisson: jax_privacy's ``amplified_bandmf_event`` (accounted by
dp-accounting's PLD at its default 1e-4) beside dpamp's certified bracket on the same plan (the
banded square root scaled to column norm 1, delta 1e-6), CPU time (process_time) of each.

jax_privacy pulls in jax (~600 MB), so it is not a test extra: run this in an environment that
has it (``pip install jax-privacy``), with dpamp on the path. Where the bands do not divide the
steps, jax_privacy's event counts ceil(n / b) full steps and lies above the truth.

``--same-batch Q`` instead compares, at the same expected batch and participations, the
cyclic-Poisson reduction (b groups at rate b Q; jax_privacy's event and dpamp's bracket) with
plain Poisson sampling at rate Q on the same b-banded C, for which jax_privacy has no amplified
accounting: dpamp's answer there (the smallest of the noise split, conditional composition and
no-amplification; route named) and the noise split alone, each with its CPU seconds, on every
(``--n``, ``--bands``, ``--z``).

    python benchmarks/bench_matrix_jax.py
    python benchmarks/bench_matrix_jax.py --same-batch 0.01 --n 10000 --bands 2 4 8 16 --z 1 3
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import dpamp as dp  # noqa: E402
from dpamp.families.matrix import bsr_coefficients  # noqa: E402

PLANS = [(1000, 8, 1.0, 0.08), (10000, 8, 3.0, 0.05), (257, 4, 1.5, 0.01), (1003, 8, 1.0, 0.08)]


def _strategy(b: int, n: int):
    co = np.array(bsr_coefficients(b))
    return dp.BandedToeplitz(tuple(co / np.linalg.norm(co)), n)


def _cpu(fn):
    """(fn(), CPU seconds) from cold dpamp caches."""
    from _timing import clear_caches
    clear_caches()
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def same_batch(q: float, ns, bands, zs) -> None:
    """The table of ``--same-batch`` (module docstring)."""
    from dp_accounting.pld import pld_privacy_accountant
    from jax_privacy.experimental import accounting as jpa
    print(f"eps at delta 1e-6; cyclic: b groups at rate b q; Poisson: rate q = {q:g}")
    print("| n | b | z | cyclic rate | jax_privacy (dp-acc PLD) | CPU s | dpamp cyclic [lower, "
          "upper] | CPU s | dpamp Poisson upper (route) | lower | CPU s | split alone | "
          "CPU s |")
    print("|---" * 13 + "|")
    for n in ns:
        for b in bands:
            for z in zs:
                qc = b * q
                if qc > 1:
                    continue
                t0 = time.process_time()
                acc = pld_privacy_accountant.PLDAccountant()
                acc.compose(jpa.amplified_bandmf_event(z, n, num_bands=b, sampling_prob=qc))
                e_jp, t_jp = acc.get_epsilon(1e-6), time.process_time() - t0
                cyc = dp.MatrixMechanism(_strategy(b, n), z, participation=dp.CyclicPoisson(qc, b))
                gc, t_c = _cpu(lambda: cyc.epsilon(1e-6))
                poi = dp.MatrixMechanism(_strategy(b, n), z, participation=dp.Poisson(q))
                gp, t_p = _cpu(lambda: poi.epsilon(1e-6))
                fresh = dp.MatrixMechanism(_strategy(b, n), z, participation=dp.Poisson(q))
                gs, t_s = _cpu(lambda: fresh.split_reduction().epsilon(1e-6, method="pld"))
                low = f"{gp.lower:.4f}" if gp.lower is not None else "-"
                print(f"| {n} | {b} | {z:g} | {qc:g} | {e_jp:.4f} | {t_jp:.2f} | "
                      f"[{gc.lower:.4f}, {gc.epsilon:.4f}] | {t_c:.2f} | {gp.epsilon:.4f} "
                      f"({gp.method}) | {low} | {t_p:.2f} | {gs.epsilon:.4f} | {t_s:.2f} |",
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--same-batch", type=float, default=None, metavar="Q",
                    help="the Poisson rate of the same-batch comparison (module docstring)")
    ap.add_argument("--n", type=int, nargs="+", default=[10000])
    ap.add_argument("--bands", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--z", type=float, nargs="+", default=[1.0, 3.0])
    a = ap.parse_args()
    try:
        from dp_accounting.pld import pld_privacy_accountant
        from jax_privacy.experimental import accounting as jpa
    except ImportError as e:
        print(f"needs jax_privacy and dp_accounting ({e}): pip install jax-privacy")
        return
    if a.same_batch is not None:
        same_batch(a.same_batch, a.n, a.bands, a.z)
        return
    for n, b, z, q in PLANS:
        co = np.array(bsr_coefficients(b))
        co = co / np.linalg.norm(co)
        t0 = time.process_time()
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(jpa.amplified_bandmf_event(z, n, num_bands=b, sampling_prob=q))
        e_jp, t_jp = acc.get_epsilon(1e-6), time.process_time() - t0
        m = dp.MatrixMechanism(dp.BandedToeplitz(tuple(co), n), z,
                               participation=dp.CyclicPoisson(q, b))
        t0 = time.process_time()
        g = m.epsilon(1e-6)
        t_us = time.process_time() - t0
        print(f"n {n:5d} bands {b} z {z:g} q {q:g}: jax_privacy + dp-acc PLD {e_jp:.6f} "
              f"({t_jp * 1e3:.0f} ms CPU) | dpamp [{g.lower:.6f}, {g.epsilon:.6f}] "
              f"({t_us * 1e3:.0f} ms CPU, {t_jp / t_us:.1f}x)")


if __name__ == "__main__":
    main()
