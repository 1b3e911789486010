"""Random allocation over many steps: time and peak memory of one epoch, t = 10^3 .. 10^9.

Each cell runs in a fresh interpreter (cold caches; the peak is that process's own VmHWM), and
prints dpamp's certified PLD bracket, its CPU time (``time.process_time``) beside the wall time,
the peak resident memory, and beside it dpamp's RDP bound (FS25a's RDP of the epoch) and the
Poisson plan at rate 1/t over t steps (the upper end by method auto; not a bound for allocation,
the scale it approaches as t grows). With ``--peers``, pld-accounting 2.0 on the cell t = 10^3 (about two
minutes; it takes far longer beyond), in the same child process, with the ratio of CPU times.

    python benchmarks/bench_allocation_many_steps.py [--sigma 1.0] [--delta 1e-5] [--peers]
        [--max-exp 9]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
import dpamp as dp
sigma, t, delta, peers = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
m = dp.Gaussian(sigma).subsample(dp.RandomAllocation(1, t))
c0, w0 = time.process_time(), time.perf_counter()
g = m.epsilon(delta=delta, method="pld")
out = {"up": g.epsilon, "low": g.lower, "cpu": time.process_time() - c0,
       "wall": time.perf_counter() - w0, "met": not g.tol_missed}
out["hwm"] = int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
out["rdp"] = m.epsilon(delta=delta, method="rdp").epsilon
# (auto: at 1e8 steps the PLD's grid for the default tol exceeds its limit, and RDP answers)
out["poisson"] = (dp.Gaussian(sigma).subsample(dp.Poisson(1.0 / t)) * t).epsilon(
    delta=delta).epsilon
if peers == "1":
    from PLD_accounting import gaussian_allocation_epsilon_range
    c0 = time.process_time()
    up, low = gaussian_allocation_epsilon_range(delta=delta, sigma=sigma, num_steps=t,
                                                num_epochs=1)
    out["peer"] = (low, up, time.process_time() - c0)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--max-exp", type=int, default=9, help="largest t is 10^this")
    ap.add_argument("--peers", action="store_true", help="pld-accounting at t = 10^3")
    args = ap.parse_args()
    print(f"one epoch of RandomAllocation(1, t), Gaussian sigma {args.sigma}, "
          f"delta {args.delta:g}")
    print(f"{'t':>6s} {'dpamp PLD [lower, upper]':>30s} {'cpu s':>7s} {'wall s':>7s} "
          f"{'peak MB':>8s} {'RDP':>9s} {'Poisson 1/t':>12s}  peer")
    for e in range(3, args.max_exp + 1):
        t = 10 ** e
        peers = "1" if args.peers and e == 3 else "0"
        r = subprocess.run([sys.executable, "-c", CHILD, str(args.sigma), str(t),
                            str(args.delta), peers], capture_output=True, text=True)
        if r.returncode:
            print(f"1e{e}: failed: {r.stderr.strip().splitlines()[-1]}")
            continue
        d = json.loads(r.stdout.strip().splitlines()[-1])
        br = f"[{d['low']:.6g}, {d['up']:.6g}]" + ("" if d["met"] else "*")
        peer = ""
        if "peer" in d:
            lo, up, cpu = d["peer"]
            peer = f"pld-accounting [{lo:.6g}, {up:.6g}] {cpu:.1f} s cpu ({cpu / d['cpu']:.0f}x)"
        print(f"  1e{e} {br:>30s} {d['cpu']:7.2f} {d['wall']:7.2f} {d['hwm'] / 1024:8.0f} "
              f"{d['rdp']:9.4g} {d['poisson']:12.4g}  {peer}")
    print("(* tol not met: the proven bracket the memory budget affords)")


if __name__ == "__main__":
    main()
