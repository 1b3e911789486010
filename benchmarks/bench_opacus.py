"""The opacus-style accountant (dpamp.io.opacus) against opacus' own RDP accountant, on the
README's DP-SGD plan: noise multiplier 1.1, Poisson rate 256/60000, 60 epochs = 14063 steps,
delta 1e-5.

Run: python benchmarks/bench_opacus.py [path/to/opacus-*.whl]
opacus' RDP analysis (opacus/accountants/analysis/rdp.py: numpy and scipy only) is loaded
from the installed package or the wheel given, without importing opacus itself (which needs
torch). Its RDPAccountant sums compute_rdp over the steps and converts at its default orders;
the same is done here, and set beside dpamp's answers: the PLD bracket (the default, "auto"),
RDP over real orders, and RDP at opacus' orders (get_privacy_spent with alphas).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
import types
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

Z, B, N, EPOCHS, DELTA = 1.1, 256, 60_000, 60, 1e-5
#: opacus' RDPAccountant.DEFAULT_ALPHAS (opacus 1.x)
OPACUS_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
_RDP = "opacus/accountants/analysis/rdp.py"


def opacus_rdp_module(wheel=None):
    if wheel is not None:
        with zipfile.ZipFile(wheel) as z:
            source = z.read(_RDP).decode()
    else:
        spec = importlib.util.find_spec("opacus")
        if spec is None:
            return None
        with open(os.path.join(spec.submodule_search_locations[0], _RDP[len("opacus/"):])) as f:
            source = f.read()
    mod = types.ModuleType("opacus_rdp")
    exec(compile(source, _RDP, "exec"), mod.__dict__)
    return mod


def main():
    import dpamp as dp
    from dpamp.io.opacus import OpacusAccountant
    g = dp.dpsgd(noise_multiplier=Z, batch_size=B, dataset_size=N, epochs=EPOCHS,
                 delta=DELTA, method="rdp")
    from dpamp.core.samplers import steps_of_epochs
    from fractions import Fraction
    T = steps_of_epochs(EPOCHS, Fraction(B, N))
    q = B / N
    print(f"# noise multiplier {Z}, rate {B}/{N}, {EPOCHS} epochs = {T} steps, delta {DELTA:g}")
    acc = OpacusAccountant()
    acc.history = [(Z, q, T)]
    for label, fn in [
        ("dpamp OpacusAccountant.get_epsilon (auto: PLD)",
         lambda: (acc.get_guarantee(DELTA), None)),
        ("dpamp get_privacy_spent(method='rdp'), real orders",
         lambda: acc.get_privacy_spent(DELTA, method="rdp")),
        ("dpamp get_privacy_spent(alphas=opacus' orders)",
         lambda: acc.get_privacy_spent(DELTA, alphas=OPACUS_ALPHAS)),
    ]:
        t0 = time.perf_counter()
        out, alpha = fn()
        dt = time.perf_counter() - t0
        if isinstance(out, dp.Guarantee):
            print(f"{label:52s} epsilon {out.epsilon:.6f}  lower {out.lower:.6f}  "
                  f"{dt * 1e3:8.1f} ms")
        else:
            print(f"{label:52s} epsilon {out:.6f}  alpha {alpha:.4g}  {dt * 1e3:8.1f} ms")
    assert abs(g.epsilon - acc.get_privacy_spent(DELTA, method="rdp")[0]) < 1e-12
    mod = opacus_rdp_module(sys.argv[1] if len(sys.argv) > 1 else None)
    if mod is None:
        print("opacus: not installed (pip install opacus --no-deps, or pass the wheel)")
        return
    t0 = time.perf_counter()
    rdp = mod.compute_rdp(q=q, noise_multiplier=Z, steps=T, orders=OPACUS_ALPHAS)
    eps, alpha = mod.get_privacy_spent(orders=OPACUS_ALPHAS, rdp=rdp, delta=DELTA)
    dt = time.perf_counter() - t0
    print(f"{'opacus RDPAccountant (analysis.rdp, default orders)':52s} epsilon {eps:.6f}  "
          f"alpha {alpha:.4g}  {dt * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
