"""Bounded memory: routes size their grids from the memory budget (dpamp.core.memory) before
they allocate, and answer (a coarser grid, a wider proven bracket) where a finer one would not
fit. Random allocation over very many steps used to grow without bound (t = 10^9: 17 GB)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpamp.core import memory
from dpamp.core.errors import SoundnessError
from dpamp.core.guarantee import Guarantee

ROOT = os.path.join(os.path.dirname(__file__), "..")

_CHILD = """
import json, sys
import dpamp as dp
t = int(sys.argv[1])
g = dp.Gaussian(1.0).subsample(dp.RandomAllocation(1, t)).epsilon(delta=1e-5)
# (VmHWM, the peak of this process's own memory map: ru_maxrss keeps the parent's across exec)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({"eps": g.epsilon, "lower": g.lower, "method": g.method, "note": g.note,
                  "rss": int(hwm) * 1024}))
"""


def _run(t: int, limit: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    env.pop("DPAMP_MAX_MEMORY", None)
    if limit:
        env["DPAMP_MAX_MEMORY"] = limit
    out = subprocess.run([sys.executable, "-c", _CHILD, str(t)], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_budget_is_validated_and_named():
    with pytest.raises(ValueError, match="DPAMP_MAX_MEMORY"):
        memory._parse("lots")
    with pytest.raises(ValueError, match="at least"):
        memory._parse("1K")
    assert memory._parse("2G") == 2 << 30 and memory._parse("512MiB") == 512 << 20
    with pytest.raises(ValueError, match="memory limit"):
        memory.set_memory_limit(10)
    memory.set_memory_limit("1G")
    try:
        assert memory.memory_limit() == 1 << 30
    finally:
        memory.set_memory_limit(None)
    assert memory.memory_limit() in (memory.DEFAULT_BYTES,
                                      memory._parse(os.environ.get("DPAMP_MAX_MEMORY", "2G")))


def test_a_small_budget_still_answers_with_a_proven_bracket():
    """Under a 256 MiB budget a million-step allocation answers by the PLD with a bracket that
    contains the default budget's (both proven: they must overlap), and the process stays
    within the budget plus the interpreter's own ~0.2 GB."""
    small = _run(10**6, "256M")
    ref = _run(10**6, None)
    assert small["method"] == ref["method"] == "pld"
    assert small["lower"] <= ref["eps"] and ref["lower"] <= small["eps"]
    assert small["eps"] >= ref["eps"] * (1 - 1e-9) or small["lower"] <= ref["lower"]
    assert small["rss"] < (256 << 20) + (400 << 20), small["rss"] / 2**20


@pytest.mark.slow
def test_a_billion_steps_answer_within_the_default_budget():
    """t = 10^9 (once 17 GB and no answer): a finite proven bracket, PLD, a few seconds. The
    Poisson estimate at rate 1/t (mu = sqrt((e - 1) / t), eps about 1.9e-5) is inside it."""
    r = _run(10**9, None)
    assert r["method"] == "pld" and 0 < r["lower"] <= r["eps"] < 1e-4, r
    assert r["lower"] <= 1.9e-5 <= r["eps"]
    assert r["rss"] < memory.DEFAULT_BYTES + (600 << 20), r["rss"] / 2**20


def test_a_lower_bound_above_the_upper_bound_is_an_internal_error():
    with pytest.raises(SoundnessError, match="internal error"):
        Guarantee(1.0, 1e-5, lower=1.01, method="pld")
    with pytest.raises(SoundnessError):
        Guarantee(1.0, 1e-5, lower=2e-5, query="delta")
    # rounding of the last digits only: the lower end is set to the upper one
    g = Guarantee(1.0, 1e-5, lower=1.0 + 1e-13)
    assert g.lower == 1.0


def test_holders_beyond_the_budget_release_the_oldest_first():
    """core.memory.hold: the budget bounds what all caches hold together; the oldest other
    holders release theirs (the newest keeps its own, even alone above the budget)."""
    import numpy as np
    released = []
    owners = [object() for _ in range(4)]
    memory.set_memory_limit(100 << 20)
    try:
        for i, o in enumerate(owners[:3]):
            memory.hold(o, 40 << 20, lambda i=i: released.append(i))
        assert released == [0]                   # 120 MiB > 100: the oldest goes
        memory.hold(owners[3], 150 << 20, lambda: released.append(3))
        assert released == [0, 1, 2]             # alone above the budget: all others go
    finally:
        memory.set_memory_limit(None)
        for o in owners:
            memory._HOLDERS.pop(id(o), None)
    a = np.zeros(1000)
    assert memory.nbytes({"x": [a, a], "y": (np.zeros(10),)}) == 8000 + 80
