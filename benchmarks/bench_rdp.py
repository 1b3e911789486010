"""RDP accounting of the default DP-SGD plan: dpamp against dp-accounting, opacus and autodp.

Run: python benchmarks/bench_rdp.py  (peers are optional; missing ones are reported as such)
Prints epsilon and median wall time per peer, and the time ratio peer / dpamp. Each accountant
starts from scratch in each repetition (a fresh object, so no cached curves), after one warm-up
call that pays for imports.
"""
from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

Q, SIGMA, STEPS, DELTA = 256 / 60_000, 1.1, 14_062, 1e-5
REPEAT = 20


def timed(fn, repeat=REPEAT):
    fn()  # warm-up (imports, JIT-free but caches of modules)
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def ours():
    import dpamp as dp
    step = dp.Gaussian(SIGMA).subsample(dp.Poisson(Q))  # fresh object: no cached curve
    return (step * STEPS).epsilon(DELTA, method="rdp").epsilon


def dp_accounting_rdp():
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant
    acc = RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)), STEPS)
    return acc.get_epsilon(DELTA)


def opacus_rdp():
    # opacus' RDP analysis module needs only numpy/scipy; load it without importing torch.
    spec = importlib.util.find_spec("opacus")
    if spec is None:
        raise ImportError("opacus not installed")
    path = os.path.join(os.path.dirname(spec.origin), "accountants", "analysis", "rdp.py")
    mspec = importlib.util.spec_from_file_location("_opacus_rdp", path)
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))  # opacus defaults
    rdp = mod.compute_rdp(q=Q, noise_multiplier=SIGMA, steps=STEPS, orders=orders)
    eps, _ = mod.get_privacy_spent(orders=orders, rdp=rdp, delta=DELTA)
    return eps


def autodp_rdp():
    from autodp import mechanism_zoo, transformer_zoo
    m = mechanism_zoo.GaussianMechanism(sigma=SIGMA)
    sub = transformer_zoo.AmplificationBySampling(PoissonSampling=True)(m, Q, improved_bound_flag=True)
    comp = transformer_zoo.Composition()([sub], [STEPS])
    return comp.get_approxDP(DELTA)


def main():
    eps0, t0 = timed(ours)
    print(f"default plan: Poisson rate {Q:.6g}, sigma {SIGMA}, {STEPS} steps, delta {DELTA:g}")
    print(f"{'accountant':22s} {'epsilon':>10s} {'time (ms)':>10s} {'time ratio':>11s}")
    print(f"{'dpamp rdp':22s} {eps0:10.5f} {t0 * 1e3:10.3f} {1.0:10.1f}x")
    for name, fn, rep in [("dp-accounting rdp", dp_accounting_rdp, REPEAT),
                          ("opacus rdp", opacus_rdp, REPEAT), ("autodp rdp", autodp_rdp, 3)]:
        try:
            eps, t = timed(fn, rep)
        except Exception as e:  # a missing peer is reported, not fatal
            print(f"{name:22s} {'n/a':>10s} {'':>10s} {'':>11s}  ({type(e).__name__}: {e})")
            continue
        print(f"{name:22s} {eps:10.5f} {t * 1e3:10.3f} {t / t0:10.1f}x")


if __name__ == "__main__":
    main()
