"""The first queries of a fresh interpreter from several threads, and from forked and spawned
processes, give the same answer as one query alone (the registry loads under a lock)."""
import os
import subprocess
import sys
import tempfile

SCRIPT = r"""
import concurrent.futures, multiprocessing as mp, sys
import dpamp as dp

def ask(_=None):
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 100
    g = m.epsilon(delta=1e-5)
    return (g.method, g.epsilon.hex(), None if g.lower is None else g.lower.hex())

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "threads":
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            out = list(ex.map(ask, range(8)))
    else:
        ctx = mp.get_context(mode)
        if mode == "fork":
            ask()                      # the parent has loaded and cached before forking
        with ctx.Pool(2) as pool:
            out = pool.map(ask, range(4))
    print(len(set(out)), out[0])
"""


def _run(mode):
    # a file, not ``-c``: spawned workers import the main module to find ``ask``
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ask_threads.py")
        with open(path, "w") as f:
            f.write(SCRIPT)
        r = subprocess.run([sys.executable, path, mode], capture_output=True, text=True,
                           timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(maxsplit=1)


def test_eight_threads_on_a_fresh_interpreter_agree():
    n, first = _run("threads")
    assert n == "1"
    assert "'pld'" in first


def test_forked_and_spawned_processes_agree_with_threads():
    answers = {mode: _run(mode) for mode in ("threads", "fork", "spawn")}
    assert all(n == "1" for n, _ in answers.values())
    assert len({first for _, first in answers.values()}) == 1


def _brackets():
    import dpamp as dp
    from dpamp.pld.query import _CACHE
    plans = [(dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062, "epsilon", 1e-5),
             (dp.Gaussian(0.9).subsample(dp.Poisson(1e-4)) * 10 ** 5, "epsilon", 1e-7),
             (dp.Laplace(1.0).subsample(dp.Poisson(0.05)) * 200, "delta", 1.0)]
    out = []
    for m, what, arg in plans:
        _CACHE.store.clear()
        g = getattr(m, what)(arg, method="pld")
        out.append((g.epsilon.hex(), g.delta.hex(), g.lower.hex()))
    return out


def test_the_pool_changes_no_bit(monkeypatch):
    """The work beside a composition runs on another thread only above an FFT length
    (query.PARALLEL_N), and in the caller, on first need, below it: the brackets are the same
    bits with every composition's side work on the pool, with none, and by default."""
    from dpamp.core import threads
    from dpamp.pld import query
    default = _brackets()
    monkeypatch.setattr(query, "PARALLEL_N", 0)
    assert _brackets() == default
    monkeypatch.setattr(threads, "THREADS", 1)
    assert _brackets() == default
