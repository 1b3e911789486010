"""core._threads: the PLD's directions on a second thread give the same brackets as in order,
and a failure reaches whoever waits, as it would in order."""
import pytest

import dpamp as dp
from dpamp.core import _threads
from dpamp.pld import query


def _bracket():
    query._CACHE.store.clear()
    m = dp.compose(dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 50,
                   dp.Gaussian(0.9).subsample(dp.Poisson(0.004)) * 80)
    b = query.epsilon_bracket(m, 1e-6)
    return b.upper, b.lower


def test_threads_or_not_same_bracket(monkeypatch):
    together = _bracket()
    monkeypatch.setattr(_threads, "THREADS", 1)
    assert _bracket() == together


@pytest.mark.parametrize("threads", [1, 2])
def test_submit_hands_over_results_and_errors(monkeypatch, threads):
    monkeypatch.setattr(_threads, "THREADS", threads)
    assert _threads.submit(lambda a, b=0: a + b, 2, b=3).result() == 5

    def fail():
        raise MemoryError(7)
    with pytest.raises(MemoryError):
        _threads.submit(fail).result()


def test_a_forked_child_gets_a_pool_of_its_own():
    """After a fork (process pools of sweeps) the parent's pool has no threads in the child:
    work queued to it there would never run. The child makes its own."""
    import multiprocessing as mp
    _threads.submit(lambda: 1).result()                 # the parent's pool exists
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(_in_child).get(timeout=60) == 3


def _in_child():
    return _threads.submit(lambda: 3).result(timeout=30)
