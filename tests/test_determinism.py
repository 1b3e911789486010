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


HISTORY = r"""
import sys
import dpamp as dp
m = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 2000
a = dp.Gaussian(0.9).subsample(dp.RandomAllocation(1, 50)) * 3
if sys.argv[1] == "after":
    # other questions about the same plans first: their compositions must not be reused
    m.epsilon(delta=1e-7), m.delta(1.0), a.epsilon(delta=1e-3), m.epsilon(delta=1e-5, tol=1e-2)
for g in (m.epsilon(delta=1e-5), a.epsilon(delta=1e-6), m.delta(0.8)):
    print(g.epsilon.hex(), g.delta.hex(), None if g.lower is None else g.lower.hex())
"""


def test_answers_do_not_depend_on_what_was_asked_before():
    """The PLD cache holds every input of a query in its key: the same question asked first in
    a fresh process or after other questions about the same plans gives the same bits."""
    out = {}
    for mode in ("fresh", "after"):
        r = subprocess.run([sys.executable, "-c", HISTORY, mode], capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        out[mode] = r.stdout
    assert out["fresh"] == out["after"]


def test_a_budgeted_state_is_not_reused_without_a_budget():
    """A time budget makes a query clock-dependent; its cached state must not be handed to the
    same query asked without one (the key holds the budget)."""
    import dpamp as dp
    from dpamp.pld.query import _CACHE, _query_key
    m = dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100
    assert _query_key(m, "epsilon", 1e-5, None, 7, 0.001) != _query_key(m, "epsilon", 1e-5, None, 7)
    _CACHE.store.clear()
    fresh = m.epsilon(1e-5, method="pld", tol=1e-7)
    _CACHE.store.clear()
    m.epsilon(1e-5, method="pld", tol=1e-7, budget=1e-9)   # cut short by the clock, cached
    again = m.epsilon(1e-5, method="pld", tol=1e-7)
    assert (again.epsilon, again.lower) == (fresh.epsilon, fresh.lower)
