"""Progress bars (dpamp.core.progress): tqdm on a terminal, silent when piped, forced on or off
by DPAMP_PROGRESS or an argument, silent inside another bar, in a worker process and without
tqdm; and the long computations (PLD refinement, calibration, the certified Bernoulli search)
tick once per unit of work."""
from __future__ import annotations

import concurrent.futures as cf
import io
import multiprocessing
import sys

import pytest

import dpamp as dp
from dpamp.core import progress as P

tqdm = pytest.importorskip("tqdm")


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)


def test_silent_when_not_a_terminal():
    out = io.StringIO()
    assert list(P.progress(range(5), label="x", stream=out)) == list(range(5))
    with P.ticks("y", 3, stream=out) as bar:
        bar.update()
    assert out.getvalue() == ""
    assert not P.wanted(out)


def test_default_stream_is_stderr_and_silent_under_pytest(capsys):
    assert list(P.progress(range(3), label="x")) == [0, 1, 2]
    assert capsys.readouterr().err == ""  # pytest captures stderr: not a terminal


def test_draws_on_a_terminal_and_clears():
    tty = FakeTTY()
    assert list(P.progress(range(5), label="sweep", stream=tty)) == list(range(5))
    text = tty.getvalue()
    assert "sweep" in text and "5/5" in text and text.endswith("\r")


@pytest.mark.parametrize("value", ["1", "on", "TRUE", "yes"])
def test_forced_on_by_the_environment(monkeypatch, value):
    monkeypatch.setenv(P.ENV, value)
    out = io.StringIO()
    assert list(P.progress(range(4), label="forced", stream=out)) == list(range(4))
    assert "forced" in out.getvalue() and "4/4" in out.getvalue()


@pytest.mark.parametrize("value", ["0", "off", "False", "no"])
def test_forced_off_by_the_environment(monkeypatch, value):
    monkeypatch.setenv(P.ENV, value)
    tty = FakeTTY()
    list(P.progress(range(4), label="x", stream=tty))
    assert tty.getvalue() == ""


def test_bad_environment_value_is_an_error(monkeypatch):
    monkeypatch.setenv(P.ENV, "sometimes")
    with pytest.raises(ValueError, match="DPAMP_PROGRESS"):
        P.wanted()


def test_argument_overrides_terminal_and_environment(monkeypatch):
    out = io.StringIO()
    with P.ticks("arg", 2, stream=out, enabled=True) as bar:
        bar.update(2)
    assert "arg" in out.getvalue() and "2/2" in out.getvalue()
    monkeypatch.setenv(P.ENV, "1")
    tty = FakeTTY()
    list(P.progress(range(3), stream=tty, enabled=False))
    assert tty.getvalue() == ""


def test_inner_bars_are_silent():
    outer, inner = FakeTTY(), FakeTTY()
    for _ in P.progress(range(2), label="outer", stream=outer):
        list(P.progress(range(3), label="inner", stream=inner))
    assert "outer" in outer.getvalue() and inner.getvalue() == ""
    # once the outer bar is closed, a new bar draws again
    list(P.progress(range(3), label="again", stream=inner))
    assert "again" in inner.getvalue()


def test_delay_hides_quick_work():
    tty = FakeTTY()
    with P.ticks("slow?", 3, stream=tty, delay=60.0) as bar:
        bar.update(3)
    assert tty.getvalue() == ""


def test_silent_without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    tty = FakeTTY()
    assert list(P.progress(range(3), stream=tty, enabled=True)) == [0, 1, 2]
    with P.ticks("x", stream=tty, enabled=True) as bar:
        bar.update()
        bar.set_postfix_str("ok")
    assert tty.getvalue() == ""
    P.open_bar("x", enabled=True).close()


def _child_wants(_):
    import os
    os.environ[P.ENV] = "1"
    return P.wanted(FakeTTY())


def test_silent_in_a_worker_process():
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        assert pool.submit(_child_wants, 0).result() is False


def test_import_dpamp_does_not_import_tqdm():
    import subprocess
    code = "import sys, dpamp; print('tqdm' in sys.modules, 'multiprocessing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "False"


# --- the call sites: one tick per unit of work --------------------------------------------------

@pytest.fixture
def recorded(monkeypatch):
    """Bars forced on, shown at once (no delay), into a buffer; returns the list of bars."""
    bars = []

    class Recorded(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["delay"], kwargs["file"] = 0.0, io.StringIO()
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(P, "_tqdm_class", lambda: Recorded)
    monkeypatch.setenv(P.ENV, "1")
    return bars


def test_pld_refinement_ticks_once_per_round(recorded):
    from dpamp.pld.query import epsilon_bracket
    step = dp.Gaussian(0.61).subsample(dp.Poisson(0.0213))  # not in the PLD cache
    b = epsilon_bracket(step * 1000, 1e-5, tol=1e-6)  # two rounds, ~1 s
    pld = [bar for bar in recorded if bar.desc == "PLD epsilon"]
    # a tick for each round that did not answer (the answering round closes the bar)
    assert b.rounds >= 2, "the test needs a refinement"
    assert len(pld) == 1 and pld[0].n == b.rounds - 1 and pld[0].disable  # closed


def test_calibration_ticks_once_per_evaluation(recorded):
    r = dp.calibrate.sigma(epsilon=2.0, delta=1e-5, sampling=dp.Poisson(0.01), steps=100,
                           method="rdp")
    cal = [bar for bar in recorded if bar.desc == "calibrate"]
    assert len(cal) == 1 and cal[0].n == r.evaluations and cal[0].disable


def test_bernoulli_search_ticks_three_times_per_instance(recorded):
    r = dp.bernoulli.exact([2.0], 5, 0.1, 2, max_cells=1000, starts=1)
    bars = [bar for bar in recorded if bar.desc == "Bernoulli exact"]
    assert len(bars) == 1 and bars[0].n == bars[0].total == 3 and bars[0].disable
    assert r.value[0] <= r.upper[0]
