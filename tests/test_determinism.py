"""Same question, same answer: two fresh processes, one of them beside two CPU-burning
processes, give the same bits for a Poisson plan, an allocation plan and a calibration (the
refinement is bounded by rounds and grid points, never by the clock)."""
import subprocess
import sys

SCRIPT = r"""
import dpamp as dp
p = (dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 2000).epsilon(delta=1e-5)
a = (dp.Gaussian(0.9).subsample(dp.RandomAllocation(1, 50)) * 3).epsilon(delta=1e-6)
s = dp.calibrate.sigma(3.0, 1e-5, dp.Poisson(0.01), steps=300)
for g in (p, a):
    print(g.method, g.epsilon.hex(), None if g.lower is None else g.lower.hex(), g.note)
print(repr(s))
"""

BURN = "while True: pass"


def _answer():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_same_bits_idle_and_under_load():
    idle = _answer()
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        loaded = _answer()
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert idle == loaded
