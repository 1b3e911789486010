"""Banded MF under cyclic Poisson: jax_privacy's ``amplified_bandmf_event`` (accounted by
dp-accounting's PLD at its default 1e-4) beside dpamp's certified bracket on the same plan (the
banded square root scaled to column norm 1, delta 1e-6), CPU time (process_time) of each.

jax_privacy pulls in jax (~600 MB), so it is not a test extra: run this in an environment that
has it (``pip install jax-privacy``), with dpamp on the path. Where the bands do not divide the
steps, jax_privacy's event counts ceil(n / b) full steps and lies above the truth."""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import dpamp as dp  # noqa: E402
from dpamp.families.matrix import bsr_coefficients  # noqa: E402

PLANS = [(1000, 8, 1.0, 0.08), (10000, 8, 3.0, 0.05), (257, 4, 1.5, 0.01), (1003, 8, 1.0, 0.08)]


def main() -> None:
    try:
        from dp_accounting.pld import pld_privacy_accountant
        from jax_privacy.experimental import accounting as jpa
    except ImportError as e:
        print(f"needs jax_privacy and dp_accounting ({e}): pip install jax-privacy")
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
