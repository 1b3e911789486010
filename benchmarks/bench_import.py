"""How long ``import dpamp`` takes (cold interpreter each time), with the heaviest imports,
and what a new user's first commands cost end to end.

    python benchmarks/bench_import.py [runs]

Each run is a fresh ``python -X importtime -c "import dpamp"``; the total is the cumulative
time of the top-level ``dpamp`` entry, set beside ``import numpy`` alone (the target: at most
1.5 x). Also timed: the first query's extra imports (the PLD), and the wall-clock time of fresh
``python -m dpamp --version``, ``--help``, ``methods`` (none may import scipy) and the README's
``dpamp dpsgd`` line (the target: 0.5 s on an idle machine)."""
from __future__ import annotations

import statistics
import subprocess
import sys


def importtime(code: str) -> list[tuple[int, str]]:
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                         text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line[len("import time:"):].split("|")
            if cum.strip().isdigit():
                rows.append((int(cum), name.rstrip()))
    return rows


def main(runs: int = 5) -> None:
    totals = []
    for _ in range(runs):
        rows = importtime("import dpamp")
        totals.append(next(c for c, n in rows if n.strip() == "dpamp") / 1e6)
    print(f"import dpamp: median {statistics.median(totals):.3f} s over {runs} cold runs "
          f"(min {min(totals):.3f} s)")
    print("heaviest cumulative imports (last run):")
    for cum, name in sorted(rows, reverse=True)[:8]:
        print(f"  {cum / 1e6:7.3f} s  {name.strip()}")
    q = "import dpamp as dp; (dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-5)"
    top = (lambda n: len(n) - len(n.lstrip()) == 1)   # one space: imported by the script itself
    first = [sum(c for c, n in importtime(q) if top(n)) / 1e6 for _ in range(3)]
    print(f"imports of a first PLD query (top-level entries): {statistics.median(first):.3f} s")


#: the README's first command
DPSGD = ["dpsgd", "--noise-multiplier", "1.1", "--batch-size", "256", "--dataset-size", "60000",
         "--epochs", "60", "--delta", "1e-5"]


def wall(argv: list[str], runs: int) -> float:
    """Median wall-clock seconds of a fresh ``python -m dpamp ARGV``."""
    import time
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dpamp", *argv], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def commands(runs: int = 5) -> None:
    numpy = [next(c for c, n in importtime("import numpy") if n.strip() == "numpy") / 1e6
             for _ in range(runs)]
    print(f"import numpy alone: median {statistics.median(numpy):.3f} s")
    for argv in (["--version"], ["--help"], ["methods"], DPSGD):
        print(f"python -m dpamp {' '.join(argv)}: median {wall(argv, runs):.3f} s wall "
              f"over {runs} runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
    commands(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
