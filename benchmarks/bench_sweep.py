"""Sweeps on one core against two workers: a local process pool and a Dask LocalCluster.

Run: python benchmarks/bench_sweep.py [--quick]   (Dask is optional: pip install 'dpamp[sweep]')

Workloads (realistic DP-SGD plans on a dataset of 60000 records, Poisson sampling, PLD at its
default tolerance, 1e-3 of epsilon):
  brackets     1000 rows: noise multiplier 0.8 .. 2.0 (10 values) x batch size 128 .. 4096
               (10 values) x epochs 1 .. 100 (10 values); the epsilon bracket at delta 1e-5
  calibrations  100 rows: the noise multiplier for a target epsilon 0.5 .. 10 (10 values) x
               epochs 1, 2, 5, 10, 20 x batch size 256, 1024; delta 1e-5

Each workload runs sequentially (workers=1, in this process), on a process pool of 2 workers
and on a Dask LocalCluster of 2 worker processes (one thread each; the cluster's start-up is
timed apart: a cluster is started once and serves many sweeps). Every run writes its rows to a
JSON lines file, as `dpamp sweep` does, and the three runs must give identical rows (except
their times). "overhead/row" is (wall time - sum of the rows' own times / workers) / rows: what
the scheduling, the transfer of rows and the writing cost per row, beyond the accounting
itself. "CPU" is the processor time the sweep's processes used (this one and its workers), and
"cores obtained" = CPU / wall: on a machine shared with other jobs it shows how much of the two
cores the sweep got, which bounds its speed-up (needs psutil, which Dask installs); "extra
CPU/row" is the CPU a backend spent per row beyond the sequential run's (start-up, pickling,
scheduling): an overhead that other jobs on the machine do not distort. The process
pool's time includes its start-up (a fork server that imports dpamp once per Python process,
about 1 s, then about 0.1 s per pool).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def _warm():
    """Import what a row needs in a Dask worker (the process pool's fork server does the same
    once): the first chunk then measures accounting, not imports."""
    import importlib
    from dpamp.accounting.sweep_backends import _preload
    for name in _preload():
        importlib.import_module(name)


def workloads(quick: bool):
    import numpy as np
    sigmas = [round(float(s), 3) for s in np.linspace(0.8, 2.0, 10)]
    batches = [128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096]
    epochs = [1, 2, 3, 5, 8, 12, 20, 30, 50, 100]
    targets = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
    if quick:
        sigmas, batches, epochs, targets = sigmas[::3], batches[::3], epochs[::3], targets[::3]
    brackets = {"noise_multiplier": sigmas, "batch_size": batches, "dataset_size": 60000,
                "epochs": epochs, "delta": 1e-5, "method": "pld"}
    calibrations = {"target": "sigma", "epsilon": targets, "epochs": [1, 2, 5, 10, 20],
                    "batch_size": [256, 1024], "dataset_size": 60000, "delta": 1e-5,
                    "method": "pld"}
    return {"brackets": brackets, "calibrations": calibrations}


def _cpu_seconds():
    """CPU seconds used by this process so far."""
    return time.process_time()


def _worker_cpu():  # runs on a Dask worker
    import psutil
    t = psutil.Process().cpu_times()
    return t.user + t.system


def timed(grid, directory, name, kind, client=None):
    """Run one sweep; returns (rows, wall seconds, CPU seconds used by every process of the
    sweep: this one, and the pool's or the cluster's workers)."""
    import dpamp as dp
    out = os.path.join(directory, f"{name}.jsonl")
    cpu0 = _cpu_seconds()
    if kind == "sequential":
        t0 = time.perf_counter()
        rows = dp.sweep(grid, out, resume=False, progress=False, workers=1)
        wall = time.perf_counter() - t0
        return rows, wall, _cpu_seconds() - cpu0
    if kind == "pool":  # the pool dp.sweep makes, made here so that its workers can be seen
        from dpamp.accounting.sweep_backends import process_pool
        t0 = time.perf_counter()
        pool = process_pool(2)
        rows = dp.sweep(grid, out, resume=False, progress=False, executor=pool)
        wall = time.perf_counter() - t0
        try:
            import psutil
            workers = sum(sum(psutil.Process(p.pid).cpu_times()[:2])
                          for p in pool._processes.values())
        except ImportError:
            workers = float("nan")
        pool.shutdown()
        return rows, wall, _cpu_seconds() - cpu0 + workers
    before = client.run(_worker_cpu)
    t0 = time.perf_counter()
    rows = dp.sweep(grid, out, resume=False, progress=False, dask=client)
    wall = time.perf_counter() - t0
    after = client.run(_worker_cpu)
    workers = sum(after[w] - before[w] for w in after)
    return rows, wall, _cpu_seconds() - cpu0 + workers


def strip(rows):
    return [{k: v for k, v in r.items() if k != "time"} for r in rows]


def main(argv):
    quick = "--quick" in argv
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        LocalCluster = None
    cluster = client = None
    started = None
    if LocalCluster is not None:
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                               dashboard_address=None)
        client = Client(cluster)
        client.run(_warm)
        started = time.perf_counter() - t0
    print(f"# dp.sweep: sequential against 2 workers ({os.cpu_count()} cores here; load "
          f"average {os.getloadavg()[0]:.2f} at the start)")
    if started is not None:
        print(f"Dask LocalCluster (2 processes x 1 thread) started in {started:.1f} s "
              "(not counted below)")
    else:
        print("Dask is not installed: its column is skipped (pip install 'dpamp[sweep]')")
    print()
    print("| workload | rows | errors | chunks | backend | wall (s) | speed-up | "
          "sum of row times (s) | overhead/row (ms) | CPU (s) | cores obtained | "
          "extra CPU/row (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    from dpamp.io.sweep import expand
    from dpamp.accounting.sweep_rows import plan_chunks
    with tempfile.TemporaryDirectory() as directory:
        for name, grid in workloads(quick).items():
            n_chunks = len(plan_chunks(expand(grid)))
            runs = [("sequential", 1, "sequential"), ("process pool", 2, "pool")]
            if client is not None:
                runs.append(("Dask LocalCluster", 2, "dask"))
            base = base_cpu = None
            reference = None
            for label, workers, kind in runs:
                rows, wall, cpu = timed(grid, directory, f"{name}-{kind}", kind, client)
                busy = sum(r["time"] or 0.0 for r in rows)
                if reference is None:
                    reference, base, base_cpu = strip(rows), wall, cpu
                elif strip(rows) != reference:
                    raise SystemExit(f"{label}: rows differ from the sequential run")
                overhead = (wall - busy / workers) / len(rows) * 1e3
                print(f"| {name} | {len(rows)} | {rows.errors} | {n_chunks} | {label} | "
                      f"{wall:.2f} | {base / wall:.2f}x | {busy:.2f} | {overhead:.2f} | "
                      f"{cpu:.1f} | {cpu / wall:.2f} | "
                      f"{(cpu - base_cpu) / len(rows) * 1e3:.2f} |", flush=True)
    if client is not None:
        client.close()
        cluster.close()
    print()
    print("Rows are identical (except their times) on every backend. Load average at the "
          f"end: {os.getloadavg()[0]:.2f} (other processes share the cores: speed-ups are "
          "measured against them too).")


if __name__ == "__main__":
    main(sys.argv[1:])
