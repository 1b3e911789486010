"""Sweeps (dp.sweep, dpamp sweep, dpamp plot frontier): the same rows on every backend
(sequential, process pool, any executor, a real Dask LocalCluster), resume after an
interruption, rows that fail, the grid file's errors, JSON lines and CSV, calibration targets."""
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

import dpamp as dp
from dpamp import cli
from dpamp.accounting import sweep_rows
from dpamp.io.sweep import COLUMNS, GridError, SweepInterrupted, expand, row_key
from dpamp.io.grid import load_grid, parse_grid_text
from dpamp.io.results import latest_rows, read_results

SRC = os.path.join(os.path.dirname(__file__), "..", "src")

#: cheap rows of every kind: brackets by rdp and by a loose pld, delta brackets under both
#: samplers, sigma calibrations, and two rows that fail (delta = 1.5, a batch too large)
GRID = [
    {"noise_multiplier": [0.8, 1.2], "sample_rate": [0.01, 0.02], "steps": [100, 400],
     "delta": [1e-5, 1e-6], "method": ["rdp", "pld"], "tol": 0.01},
    {"target": "delta", "noise_multiplier": 1.0, "batch_size": 64, "dataset_size": 6400,
     "sampler": ["poisson", "without_replacement"], "epochs": [1, 2], "epsilon": [1.0, 2.0],
     "method": "rdp"},
    {"target": "sigma", "sample_rate": 0.01, "steps": 200, "epsilon": [1.0, 2.0],
     "delta": 1e-5, "method": "rdp"},
    {"noise_multiplier": 1.0, "batch_size": [64, 7000], "dataset_size": 6400, "epochs": 1,
     "delta": [1e-5, 1.5], "method": "rdp"},
]
N_ROWS = 32 + 8 + 2 + 4


def strip(rows):
    """Rows without their time: what must agree between backends."""
    return [{k: v for k, v in r.items() if k != "time"} for r in rows]


@pytest.fixture(scope="module")
def reference():
    return dp.sweep(GRID, workers=1, chunk_size=3)


# --- the grid ---------------------------------------------------------------------------------

def test_expand_order_defaults_and_keys():
    rows = expand({"noise_multiplier": [1, 2], "sample_rate": 0.01, "steps": [10, 20],
                   "delta": 1e-5})
    assert [(r["noise_multiplier"], r["steps"]) for r in rows] == \
        [(1.0, 10), (1.0, 20), (2.0, 10), (2.0, 20)]  # the last key varies fastest
    assert rows[0] == {"target": "epsilon", "sampler": "poisson", "method": "auto",
                       "noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10,
                       "delta": 1e-5}
    # the key depends on the inputs only: not on their order, nor on 1 vs 1.0
    same = expand({"delta": 1e-5, "steps": 10, "sample_rate": 0.01, "noise_multiplier": 1.0,
                   "method": "auto"})[0]
    assert row_key(same) == row_key(rows[0])
    assert len(expand({"noise_multiplier": [1, 1.0], "sample_rate": 0.01, "steps": 1,
                       "delta": 1e-5})) == 1


def test_expand_several_targets_drop_what_a_target_does_not_use():
    rows = expand({"target": ["epsilon", "delta"], "noise_multiplier": 1.0,
                   "sample_rate": 0.01, "steps": 100, "delta": 1e-5, "epsilon": [1.0, 2.0]})
    assert [(r["target"], r.get("epsilon"), r.get("delta")) for r in rows] == \
        [("epsilon", None, 1e-5), ("delta", 1.0, None), ("delta", 2.0, None)]


@pytest.mark.parametrize("grid, key, words", [
    ({"noise_multiplyer": 1.0}, "noise_multiplyer", "did you mean 'noise_multiplier'"),
    ({"noise_multiplier": "1.0", "sample_rate": 0.1, "steps": 1, "delta": 1e-5},
     "noise_multiplier", "must be a number"),
    ({"noise_multiplier": 1.0, "batch_size": 2.5, "dataset_size": 10, "steps": 1,
      "delta": 1e-5}, "batch_size", "must be an integer"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1, "delta": []},
     "delta", "empty list"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1}, "delta",
     "missing: target 'epsilon' needs it"),
    ({"target": "delta", "noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1},
     "epsilon", "missing: target 'delta' needs it"),
    ({"target": "sigma", "noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1,
      "epsilon": 1.0, "delta": 1e-5}, "noise_multiplier", "calibrates the noise"),
    ({"target": "epochs", "noise_multiplier": 1.0, "sample_rate": 0.1, "epochs": 3,
      "epsilon": 1.0, "delta": 1e-5}, "epochs", "calibrates the number of epochs"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1, "epochs": 2, "delta": 1e-5},
     "epochs", "steps 1 and epochs 2 disagree"),
    ({"noise_multiplier": 1.0, "sampler": "truncated_poisson", "batch_size": 5,
      "dataset_size": 50, "steps": 1, "delta": 1e-5}, "max_batch_size", "needs"),
    ({"noise_multiplier": 1.0, "sampler": "with-replacement", "batch_size": 5,
      "dataset_size": 50, "max_batch_size": 9, "steps": 1, "delta": 1e-5}, "max_batch_size",
     "only sampler 'truncated_poisson'"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "delta": 1e-5}, "steps", "'epochs' or"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "batch_size": 5, "dataset_size": 50,
      "steps": 1, "delta": 1e-5}, "sample_rate", "either 'sample_rate'"),
    ({"noise_multiplier": 1.0, "sampler": "without_replacement", "sample_rate": 0.1,
      "steps": 1, "delta": 1e-5}, "sample_rate", "not a rate"),
    ({"noise_multiplier": 1.0, "sampler": "poison", "sample_rate": 0.1, "steps": 1,
      "delta": 1e-5}, "sampler", "did you mean 'poisson'"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1, "delta": 1e-5,
      "method": "pdl"}, "method", "did you mean 'pld'"),
    ({"target": "eps", "noise_multiplier": 1.0}, "target", "one of"),
])
def test_grid_errors_name_the_key(grid, key, words):
    with pytest.raises(GridError) as e:
        expand(grid)
    assert e.value.key == key
    assert f"key {key!r}" in str(e.value) and words in str(e.value)


GRID_TOML = """
title = "small DP-SGD sweep"
dataset_size = 6400
batch_size = [64, 128]
delta = 1e-5
method = "rdp"

[[grid]]
noise_multiplier = [0.8, 1.2]
epochs = [1, 2, 4]

[[grid]]
target = "sigma"
epsilon = [1.0, 4.0]
epochs = 2
"""


def test_grid_file(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(GRID_TOML)
    g = load_grid(path)
    assert g.title == "small DP-SGD sweep" and len(g) == 2 * 2 * 3 + 2 * 2
    assert g.rows[0] == {"target": "epsilon", "sampler": "poisson", "method": "rdp",
                         "dataset_size": 6400, "batch_size": 64, "delta": 1e-5,
                         "noise_multiplier": 0.8, "epochs": 1}
    assert {r["target"] for r in g.rows[12:]} == {"sigma"}
    assert list(g.rows) == expand([{"noise_multiplier": [0.8, 1.2], "epochs": [1, 2, 4]},
                                   {"target": "sigma", "epsilon": [1.0, 4.0], "epochs": 2}],
                                  defaults={"dataset_size": 6400, "batch_size": [64, 128],
                                            "delta": 1e-5, "method": "rdp"})


@pytest.mark.parametrize("text, words", [
    ("delta = 1e-5\nnoise_multipler = 1", "g.toml: key 'noise_multipler': unknown key "
                                          "(did you mean 'noise_multiplier'?)"),
    ("titel = 'x'", "g.toml: key 'titel': unknown key (did you mean 'title'?)"),
    ("delta = 'small'", "g.toml: key 'delta': must be a number (got 'small')"),
    ("sample_rate = 0.1\nsteps = 1\ndelta = 1e-5\n[[grid]]\nnoise_multiplier = 1\n"
     "[[grid]]\ntarget = 'delta'\nnoise_multiplier = 1",
     "g.toml: [[grid]] 2, key 'epsilon': missing: target 'delta' needs it"),
    ("epsilon = 1.0\n[[grid]]\nnoise_multiplier = 1\nsample_rate = 0.1\nsteps = 1\n"
     "delta = 1e-5", "g.toml: key 'epsilon': not used by any [[grid]] table"),
    ("delta = [1e-5,", "g.toml: not valid TOML"),
    ("grid = 3", "g.toml: key 'grid': must be one or more [[grid]] tables"),
])
def test_grid_file_errors_name_the_file_and_key(text, words):
    with pytest.raises(GridError) as e:
        parse_grid_text(text, origin="g.toml")
    assert words in str(e.value)


def test_grid_file_error_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "grid.toml"
    path.write_text("noise_multiplier = 1.0\nsample_rate = 0.1\nsteps = 10\ndelta = 1e-5\n"
                    "tol = 'tight'\n")
    assert cli.main(["sweep", str(path), "-o", str(tmp_path / "r.jsonl")]) == 2
    assert f"dpamp: error: {path}: key 'tol': must be a number" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


# --- rows -------------------------------------------------------------------------------------

def test_rows_match_the_library(reference):
    assert len(reference) == N_ROWS and reference.computed == N_ROWS
    assert all(list(r) == list(COLUMNS) for r in reference)
    by = {(r["target"], r["noise_multiplier"], r["sample_rate"], r["steps"], r["delta"],
           r["method"]): r for r in reference if r["target"] == "epsilon" and not r["error"]}
    r = by[("epsilon", 1.2, 0.02, 400, 1e-6, "pld")]
    g = (dp.Gaussian(1.2).subsample(dp.Poisson(0.02)) * 400).epsilon(1e-6, method="pld",
                                                                       tol=0.01)
    assert r["epsilon_upper"] == pytest.approx(g.epsilon, abs=0.01)
    assert r["epsilon_lower"] <= g.epsilon and r["epsilon_upper"] >= g.lower
    assert (r["relation"], r["sensitivity"], r["method_used"]) == ("add_remove", 1.0, "pld")
    g = (dp.Gaussian(0.8).subsample(dp.Poisson(0.01)) * 100).epsilon(1e-5, method="rdp")
    assert by[("epsilon", 0.8, 0.01, 100, 1e-5, "rdp")]["epsilon_upper"] == g.epsilon
    # sampling without replacement: substitution, sensitivity 2, 2 epochs = 200 steps
    (wor,) = [r for r in reference if r["sampler"] == "without_replacement"
              and r["epochs"] == 2 and r["epsilon"] == 1.0]
    step = dp.Gaussian(1.0, sensitivity=2, relation=dp.SUBSTITUTION).subsample(
        dp.WithoutReplacement(64, 6400))
    assert (wor["relation"], wor["sensitivity"], wor["steps"], wor["sample_rate"]) == \
        ("substitution", 2.0, 200, 0.01)
    assert wor["delta_upper"] == (step * 200).delta(1.0, method="rdp").delta


def test_calibration_targets(reference):
    sig = [r for r in reference if r["target"] == "sigma"]
    assert [r["epsilon"] for r in sig] == [1.0, 2.0]
    for r in sig:
        c = dp.calibrate.sigma(r["epsilon"], 1e-5, sampling=dp.Poisson(0.01), steps=200,
                               method="rdp")
        assert r["noise_multiplier"] == c.value and r["epsilon_upper"] == c.epsilon
        assert r["epsilon_upper"] <= r["epsilon"] and r["evaluations"] == c.evaluations
    rows = dp.sweep({"target": "epochs", "noise_multiplier": 1.0, "batch_size": 256,
                     "dataset_size": 60000, "epsilon": [1.0, 3.0], "delta": 1e-5,
                     "method": "rdp"}, workers=1)
    for r in rows:
        c = dp.calibrate.epochs(r["epsilon"], 1e-5, sigma=1.0,
                                sampling=dp.Poisson(256 / 60000), method="rdp")
        assert (r["epochs"], r["steps"], r["epsilon_upper"]) == (c.value, c.steps, c.epsilon)


def test_epochs_become_steps_as_plans_count_them():
    (r,) = dp.sweep({"noise_multiplier": 1.1, "batch_size": 256, "dataset_size": 60000,
                     "epochs": 60, "delta": 1e-5, "method": "rdp"}, workers=1)
    assert r["steps"] == dp.default_plan().total_steps == 14063
    assert r["sample_rate"] == 256 / 60000


def test_a_bad_row_records_its_error_and_the_others_finish(reference):
    bad = [r for r in reference if r["error"]]
    assert {r["error"] for r in bad} == {
        "ValueError: delta must be in [0, 1) (got 1.5)",
        "ValueError: batch_size must be an integer in [1, 6400] (got 7000)"}
    assert len(bad) == 3 and reference.errors == 3
    assert all(r["epsilon_upper"] is None for r in bad)
    good = [r for r in reference if not r["error"]]
    assert len(good) == N_ROWS - 3
    assert all(r["epsilon_upper"] is not None or r["delta_upper"] is not None for r in good)
    # a calibration that cannot meet its target is an error of its row too
    (r,) = dp.sweep({"target": "epochs", "noise_multiplier": 0.5, "sample_rate": 0.5,
                     "epsilon": 0.01, "delta": 1e-5, "method": "rdp"}, workers=1)
    assert r["error"].startswith("ValueError: even one epoch exceeds the target")


# --- backends ---------------------------------------------------------------------------------

def test_chunks_keep_a_step_mechanism_together():
    rows = expand(GRID)
    chunks = sweep_rows.plan_chunks(rows)
    assert sorted(row_key(r) for c in chunks for r in c) == sorted(map(row_key, rows))
    # rows with one step mechanism (and method) are adjacent in the chunk order
    seen, last = set(), None
    for r in (r for c in chunks for r in c):
        g = sweep_rows._group(r)
        assert g == last or g not in seen
        seen.add(g)
        last = g
    # a fixed number of rows: at most 5 a chunk, and a group that fits is not split
    fixed = sweep_rows.plan_chunks(rows, chunk_size=5)
    assert max(len(c) for c in fixed) == 5
    where = {}
    for i, c in enumerate(fixed):
        for r in c:
            where.setdefault(sweep_rows._group(r), set()).add(i)
    sizes = {}
    for r in rows:
        sizes[sweep_rows._group(r)] = sizes.get(sweep_rows._group(r), 0) + 1
    assert all(len(where[g]) == 1 for g, n in sizes.items() if n <= 5)
    # about a second of work: rdp brackets share one chunk, pld calibrations do not
    many = expand({"noise_multiplier": [0.5 + i / 10 for i in range(20)],
                   "sample_rate": [0.01, 0.02], "steps": [10, 20, 40], "delta": 1e-5,
                   "method": "rdp"})
    assert len(sweep_rows.plan_chunks(many)) == 1
    cal = expand({"target": "sigma", "sample_rate": [0.01, 0.02], "steps": [10, 20, 40],
                  "epsilon": 1.0, "delta": 1e-5, "method": "pld"})
    assert 2 <= len(sweep_rows.plan_chunks(cal)) <= 6


def test_a_chunk_starts_from_an_empty_pld_cache():
    """What this process computed before (a cached PLD of the same composition) does not
    change a row's answer, and the caller's cache is left as it was. (The PLD cache's key
    holds the whole query, so another delta's composition is not reused anyway:
    tests/test_determinism.py.)"""
    from dpamp.pld import query
    plan = dp.Gaussian(1.0).subsample(dp.Poisson(0.004)) * 14062
    (inputs,) = expand({"noise_multiplier": 1.0, "sample_rate": 0.004, "steps": 14062,
                        "delta": 1e-8, "method": "pld"})
    query._CACHE.store.clear()
    fresh = plan.epsilon(1e-8, method="pld")
    query._CACHE.store.clear()
    plan.epsilon(1e-5, method="pld")  # caches the composition of another query
    cached = plan.epsilon(1e-8, method="pld")
    assert (cached.epsilon, cached.lower) == (fresh.epsilon, fresh.lower)
    before = dict(query._CACHE.store)
    (row,) = sweep_rows.run_chunk([inputs])
    assert (row["epsilon_upper"], row["epsilon_lower"]) == (fresh.epsilon, fresh.lower)
    assert dict(query._CACHE.store) == before


def test_process_pool_gives_the_same_rows(reference):
    rows = dp.sweep(GRID, workers=2, chunk_size=3)
    assert rows.backend == "process pool" and rows.workers == 2
    assert strip(rows) == strip(reference)


def test_any_executor_gives_the_same_rows(reference):
    with ProcessPoolExecutor(2) as ex:
        assert strip(dp.sweep(GRID, executor=ex, chunk_size=3)) == strip(reference)
    with ThreadPoolExecutor(2) as ex:  # one chunk at a time per process: still the same
        assert strip(dp.sweep(GRID, executor=ex, chunk_size=3)) == strip(reference)


def test_a_broken_pool_stops_the_sweep(tmp_path):
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    class Broken(ThreadPoolExecutor):
        """A pool whose workers have died: every task fails at once."""
        def submit(self, fn, *args, **kwargs):
            f = Future()
            f.set_exception(BrokenProcessPool("a worker died"))
            return f
    out = tmp_path / "results.jsonl"
    with Broken(1) as ex, pytest.raises(RuntimeError, match="its worker processes died "
                                        r"\(BrokenProcessPool: a worker died\)"):
        dp.sweep(GRID, out, executor=ex)
    assert read_results(out) == []  # no row records the pool's death as its own error


def test_bad_backend_arguments():
    with pytest.raises(ValueError, match="at most one of workers, executor and dask"):
        dp.sweep(GRID, workers=2, dask="tcp://localhost:1")
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        dp.sweep(GRID, workers=0)
    with pytest.raises(ValueError, match="concurrent.futures.Executor"):
        dp.sweep(GRID, executor=object())


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield cluster, client
    client.close()
    cluster.close()


def test_dask_local_cluster_gives_the_same_rows(reference, dask_cluster):
    cluster, client = dask_cluster
    rows = dp.sweep(GRID, dask=client, chunk_size=3)  # futures
    assert rows.backend == "dask" and rows.workers == 2
    assert strip(rows) == strip(reference)
    rows = dp.sweep(GRID, executor=client.get_executor(), chunk_size=3)  # its executor
    assert strip(rows) == strip(reference)
    # a scheduler address and nothing else: the way to a remote cluster
    rows = dp.sweep(GRID, dask=cluster.scheduler_address, chunk_size=3)
    assert strip(rows) == strip(reference)
    assert client.status == "running"  # a client that was given is left open


# --- files, resume, interruption --------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_results_file_round_trip(tmp_path, reference, suffix):
    out = tmp_path / f"results{suffix}"
    rows = dp.sweep(GRID, out, workers=1, chunk_size=3)
    back = read_results(out)
    assert len(back) == N_ROWS
    assert strip(sorted(back, key=lambda r: r["key"])) == \
        strip(sorted(rows, key=lambda r: r["key"]))
    assert strip(rows) == strip(reference)
    text = out.read_text()
    if suffix == ".csv":
        assert text.splitlines()[0] == ",".join(COLUMNS)
        assert text.count("target,noise_multiplier") == 1
    else:
        assert all(json.loads(line)["key"] for line in text.splitlines())
    again = dp.sweep(GRID, out, workers=1, chunk_size=3, retry_errors=False)
    assert (again.computed, again.skipped) == (0, N_ROWS)
    assert strip(again) == strip(rows)
    if suffix == ".csv":
        assert out.read_text().count("target,noise_multiplier") == 1  # header once


REAL_COMPUTE_ROW = sweep_rows.compute_row


def _counting(monkeypatch, stop_after=None):
    """Count the rows computed (in this process: workers=1); optionally act as if Ctrl-C
    were pressed before row ``stop_after + 1``."""
    calls = []
    real = REAL_COMPUTE_ROW

    def counted(inputs, cache=None):
        if stop_after is not None and len(calls) == stop_after:
            raise KeyboardInterrupt
        calls.append(row_key(inputs))
        return real(inputs, cache)
    monkeypatch.setattr(sweep_rows, "compute_row", counted)
    return calls


def test_resume_after_an_interruption(tmp_path, monkeypatch, reference):
    out = tmp_path / "results.jsonl"
    calls = _counting(monkeypatch, stop_after=10)
    with pytest.raises(SweepInterrupted) as e:
        dp.sweep(GRID, out, workers=1, chunk_size=3)
    assert isinstance(e.value, KeyboardInterrupt)
    assert e.value.result.computed == 10 == len(read_results(out)) == len(calls)
    first = set(calls)
    calls = _counting(monkeypatch)
    rows = dp.sweep(GRID, out, workers=1, chunk_size=3)
    # only the missing rows and the rows with an error were computed
    errors = {r["key"] for r in reference if r["error"]}
    assert set(calls) == {r["key"] for r in reference} - (first - errors)
    assert rows.skipped == len(first - errors) and len(rows) == N_ROWS
    assert strip(rows) == strip(reference)
    calls = _counting(monkeypatch)
    rows = dp.sweep(GRID, out, workers=1, retry_errors=False)
    assert calls == [] and rows.skipped == N_ROWS and rows.errors == 3
    rows = dp.sweep(GRID, out, workers=1)  # errors are retried by default
    assert sorted(calls) == sorted(errors)
    assert len(latest_rows(read_results(out))) == N_ROWS


def test_fresh_run_replaces_the_file_and_torn_lines_are_dropped(tmp_path, monkeypatch):
    out = tmp_path / "results.jsonl"
    small = {"noise_multiplier": [1.0, 2.0], "sample_rate": 0.01, "steps": 10,
             "delta": 1e-5, "method": "rdp"}
    dp.sweep(small, out, workers=1)
    with open(out, "a") as f:
        f.write('{"target": "epsilon", "noise_mul')  # a crash in the middle of a write
    assert len(read_results(out)) == 2
    calls = _counting(monkeypatch)
    dp.sweep(dict(small, noise_multiplier=[1.0, 2.0, 3.0]), out, workers=1)
    assert len(calls) == 1
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x) for x in lines)
    dp.sweep(small, out, workers=1, resume=False)
    assert len(out.read_text().splitlines()) == 2 and len(calls) == 3


def test_ctrl_c_between_rows_releases_this_process(tmp_path, monkeypatch):
    """Ctrl-C while a row is being written (the chunk suspended in this process): the chunk is
    closed at once, so the next sweep in this interpreter runs (it would wait for the chunk's
    lock otherwise), even while the first interruption's traceback is kept."""
    from dpamp.io import results
    out = tmp_path / "results.jsonl"
    real = results.ResultWriter.write
    written = []

    def write(self, row):
        if len(written) == 3:
            raise KeyboardInterrupt
        written.append(row)
        real(self, row)
    monkeypatch.setattr(results.ResultWriter, "write", write)
    small = {"noise_multiplier": [1.0, 2.0, 3.0, 4.0, 5.0], "sample_rate": 0.01,
             "steps": 10, "delta": 1e-5, "method": "rdp"}
    with pytest.raises(SweepInterrupted) as e:
        dp.sweep(small, out, workers=1)
    assert e.value.result.computed == 3 == len(read_results(out))
    assert not sweep_rows._LOCK.locked()
    monkeypatch.setattr(results.ResultWriter, "write", real)
    rows = dp.sweep(small, out, workers=1)
    assert (rows.computed, rows.skipped) == (2, 3)


def test_two_sweeps_cannot_append_to_one_file(tmp_path):
    from dpamp.io.results import ResultWriter
    out = tmp_path / "results.jsonl"
    with ResultWriter(out):
        with pytest.raises(ValueError, match="another sweep is writing to this file"):
            dp.sweep({"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10,
                      "delta": 1e-5, "method": "rdp"}, out, workers=1)


def _run_cli(*args, **kw):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-m", "dpamp.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _interrupted_sweep(grid, out):
    """Start the sweep, stop its process group (SIGSTOP) once six rows are on disk, queue a
    SIGINT while it cannot run, continue it: (return code, stderr). None where this process
    saw the file only after the sweep had ended or passed half its rows (starved on a busy
    machine: the whole sweep takes 2-4 s of work)."""
    proc = _run_cli("sweep", str(grid), "-o", str(out), "--workers", "2", "--chunk-size", "2",
                    start_new_session=True)
    deadline, seen = time.monotonic() + 300, 0
    while time.monotonic() < deadline and proc.poll() is None:
        seen = out.read_text().count("\n") if out.exists() else 0
        if seen >= 6:
            os.killpg(proc.pid, signal.SIGSTOP)
            break
        time.sleep(0.01)
    if proc.poll() is not None or seen > 128:
        # (ended, or stopped past half its rows: the interrupt would land near the sweep's end,
        # in the pool's shutdown, which says nothing about Ctrl-C during the work)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)
        proc.communicate(timeout=120)
        return None
    proc.send_signal(signal.SIGINT)
    os.killpg(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, f"{err} (stopped with {seen} rows on disk)"


@pytest.mark.xfail(strict=False, raises=AssertionError,
                   reason="open: in two full-suite runs (never alone) a sweep stopped with 6 of "
                          "256 rows on disk and sent SIGINT finished every row with status 0: "
                          "the interrupt was lost (OPEN_QUESTIONS, Sweeps)")
def test_ctrl_c_keeps_complete_lines_and_a_rerun_finishes(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("noise_multiplier = [0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4]\n"
                    "sample_rate = [0.002, 0.004, 0.008, 0.016]\nsteps = [3000, 12000]\n"
                    "delta = [1e-5, 1e-7, 1e-9, 1e-11]\nmethod = 'pld'\n")
    # The interrupt must come while the work is under way, whatever the machine's speed: the
    # sweep's process group is stopped (SIGSTOP) as soon as the first rows are on disk, the
    # SIGINT queued while it cannot run, and then it is continued: the signal is handled first
    # thing (a fast machine once finished all 64 rows between the sixth line and a SIGINT).
    # A busy machine can starve this process past the sweep's end or most of it (256 rows in
    # 2-4 s): then the attempt says nothing about Ctrl-C during the work, and it is made again
    # on a fresh file
    for attempt in range(4):
        out = tmp_path / f"results{attempt}.jsonl"
        got = _interrupted_sweep(grid, out)
        if got is not None:
            break
    assert got is not None, "the sweep ended before it could be interrupted, four times"
    code, err = got
    assert code == 130, err
    assert "interrupted" in err and "run the same command again" in err
    text = out.read_text()
    assert text.endswith("\n")
    done = [json.loads(line) for line in text.splitlines()]
    assert 6 <= len(done) < 256
    proc = _run_cli("sweep", str(grid), "-o", str(out), "--workers", "2")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    rows = read_results(out)
    assert len(rows) == 256 == len({r["key"] for r in rows})
    assert f"{len(done)} already in" in err


# --- command line and figure ------------------------------------------------------------------

def test_command_line_end_to_end(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID_TOML)
    out = tmp_path / "results.jsonl"
    assert cli.main(["sweep", str(grid), "-o", str(out), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "small DP-SGD sweep: 16 rows: 16 computed" in err
    rows = read_results(out)
    assert len(rows) == 16 and not any(r["error"] for r in rows)
    assert cli.main(["sweep", str(grid), "-o", str(out)]) == 0
    assert "0 computed, 16 already in" in capsys.readouterr().err
    png = tmp_path / "frontier.png"
    assert cli.main(["plot", "frontier", str(out), "-o", str(png), "--json"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(capsys.readouterr().out)
    eps, sig = data["panels"]
    assert (eps["target"], eps["x"], eps["y"]) == ("epsilon", "epochs", "epsilon_upper")
    assert len(eps["series"]) == 4 and "σ=0.8, B=64" in eps["series"]
    line = eps["series"]["σ=0.8, B=64"]
    assert line["x"] == [1, 2, 4] and line["y"] == sorted(line["y"])  # epsilon grows
    assert (sig["x"], sig["y"]) == ("epsilon", "noise_multiplier")
    assert cli.main(["plot", "frontier", "-o", str(png)]) == 2
    assert cli.main(["plot", "rdp", str(out), "--sigma", "1", "-o", str(png)]) == 2


def test_frontier_from_rows(tmp_path, reference):
    pytest.importorskip("matplotlib")
    from dpamp.io.frontier import frontier
    data = frontier(reference, output=tmp_path / "f.svg", target="delta")
    (panel,) = data["panels"]
    assert panel["x"] == "epochs" and panel["log_y"]
    data = frontier(reference)
    assert [p["target"] for p in data["panels"]] == ["epsilon", "delta", "sigma"]
    assert data["panels"][0]["x"] == "steps"  # those rows give steps, not epochs
    with pytest.raises(ValueError, match="no row to draw"):
        frontier([r for r in reference if r["error"]])


def test_to_pandas_and_quiet_by_default(reference):
    pd = pytest.importorskip("pandas")
    frame = reference.to_pandas()
    assert isinstance(frame, pd.DataFrame) and frame.shape == (N_ROWS, len(COLUMNS))
    from dpamp.io.sweep import _progress_bar
    assert _progress_bar(10, None) is None  # standard error is captured: no bar
    pytest.importorskip("tqdm")
    bar = _progress_bar(10, True)
    assert type(bar).__name__ == "tqdm"
    bar.close()


def test_import_dpamp_loads_no_optional_extra():
    code = ("import sys, dpamp; print(sorted(m for m in ('dask', 'distributed', 'tqdm', "
            "'pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_epoch_samplers_in_a_sweep_match_the_direct_plan():
    """allocation and shuffle rows (the samplers table): the same bracket as the plan written
    by hand, whole epochs of N // B steps."""
    rows = dp.sweep({"noise_multiplier": [2.0], "sampler": ["allocation", "shuffle"],
                     "batch_size": [100], "dataset_size": [1000], "epochs": [2],
                     "delta": [1e-6]}, workers=1)
    by = {r["sampler"]: r for r in rows}
    # from an empty PLD cache, as a sweep's chunk starts (a cache that earlier tests filled
    # serves another grid's bracket: as proven, not the same digits)
    with sweep_rows._own_pld_cache():
        alloc = (dp.Gaussian(2.0).subsample(dp.RandomAllocation(1, 10)) * 2).epsilon(1e-6)
        shuf = (dp.Gaussian(2.0, 2.0, dp.SUBSTITUTION).subsample(
            dp.Shuffled(100, 1000, relation=dp.SUBSTITUTION)) * 2).epsilon(1e-6)
    assert by["allocation"]["epsilon_upper"] == pytest.approx(alloc.epsilon, rel=1e-12)
    assert by["allocation"]["steps"] == 20 and by["allocation"]["relation"] == "add_remove"
    assert by["shuffle"]["epsilon_upper"] == pytest.approx(shuf.epsilon, rel=1e-12)
    assert by["shuffle"]["epsilon_lower"] == pytest.approx(shuf.lower, rel=1e-12)
    assert by["shuffle"]["sensitivity"] == 2.0
