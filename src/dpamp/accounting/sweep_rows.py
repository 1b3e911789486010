"""The work of a sweep: one row's answer, and rows packed into chunks (the tasks the backends
run, in a local process, a process pool or on Dask workers).

A row is a plan of DP-SGD: ``steps`` runs of a Gaussian of std ``noise_multiplier`` (in units
of the clipping norm) on a batch sampled by ``sampler``:

| sampler               | sampling                          | relation   | sensitivity |
|-----------------------|-----------------------------------|------------|-------------|
| "poisson"             | Poisson, rate batch_size / dataset_size (or sample_rate) | add/remove | 1 |
| "without_replacement" | batch_size of dataset_size        | substitution | 2 (a replaced record moves a clipped sum by 2C) |
| "with_replacement"    | batch_size draws from dataset_size, with replacement | substitution | 2 |
| "allocation"          | one random batch of dataset_size // batch_size per epoch | add/remove | 1 |
| "shuffle"             | reshuffled batches of batch_size, one pass per epoch | substitution | 2 |
| "truncated_poisson"   | Poisson at batch_size / dataset_size, cut to at most max_batch_size | add/remove | 1 |

(the samplers table of :mod:`dpamp.core.samplers`; allocation and shuffle run whole epochs)

``epochs`` become steps exactly as :func:`dpamp.calibrate.epochs` counts them (ceil(epochs /
rate), in exact arithmetic: ``dpamp.core.samplers.count``). The target decides what is computed: the epsilon bracket
at delta (``mechanism.epsilon``), the delta bracket at epsilon (``mechanism.delta``), or a
calibration (:func:`dpamp.calibrate.sigma`, :func:`dpamp.calibrate.epochs`).

Chunks keep the rows of one step mechanism (same noise, sampling, method, tol) together, so that
one process answers them one after the other: the PLD cache serves the queries of a composition
at several deltas or epsilons, and the step's RDP tables serve its compositions of several
lengths. Each chunk starts from an empty PLD cache, so a row's answer depends only on its chunk,
never on what a worker computed before: sequential, process-pool and Dask runs of the same
chunks give identical rows.
"""
from __future__ import annotations

import contextlib
import math
import threading
import time

from .sweep_grid import COLUMNS, row_key

__all__ = ["compute_row", "plan_chunks", "run_chunk", "iter_chunk", "error_row",
           "estimated_cost"]

#: one chunk runs at a time in a process: dpamp's caches are per process, not per thread
_LOCK = threading.Lock()

#: rough seconds per row, to size chunks (only the packing depends on them, never an answer)
_CHEAP_METHODS = ("rdp", "rdp-classic", "zcdp", "kov", "advanced", "basic")
_COST_CHEAP, _COST_PLD, _CALIBRATION_FACTOR = 0.002, 0.03, 15.0
MAX_CHUNK_ROWS = 1000


def estimated_cost(inputs: dict) -> float:
    cost = _COST_CHEAP if inputs["method"] in _CHEAP_METHODS else _COST_PLD
    return cost * (_CALIBRATION_FACTOR if inputs["target"] in ("sigma", "epochs") else 1.0)


def _group(inputs: dict) -> tuple:
    """Rows with one step mechanism (and one method): the cache serves them together."""
    return tuple(inputs.get(k) for k in ("sampler", "noise_multiplier", "sample_rate",
                                         "batch_size", "dataset_size", "max_batch_size", "method",
                                         "tol"))


def plan_chunks(rows: list[dict], chunk_size: int | None = None,
                chunk_seconds: float = 1.0) -> list[list[dict]]:
    """Pack rows into chunks: the rows of a group (:func:`_group`) together and in grid order,
    whole groups packed into one chunk while the chunk stays under ``chunk_seconds`` of
    estimated work (or ``chunk_size`` rows, when given); a larger group is split. The packing
    depends on the rows only (never on the backend), so every backend runs the same chunks."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(_group(r), []).append(r)
    if chunk_size is not None:
        budget, max_rows = math.inf, chunk_size
    else:
        budget, max_rows = chunk_seconds, MAX_CHUNK_ROWS
    chunks: list[list[dict]] = []
    cur: list[dict] = []
    cost = 0.0
    for members in groups.values():
        total = sum(estimated_cost(r) for r in members)
        if cur and (cost + total > budget or len(cur) + len(members) > max_rows):
            chunks.append(cur)
            cur, cost = [], 0.0
        for r in members:
            c = estimated_cost(r)
            if cur and (cost + c > budget or len(cur) >= max_rows):
                chunks.append(cur)
                cur, cost = [], 0.0
            cur.append(r)
            cost += c
    if cur:
        chunks.append(cur)
    return chunks


@contextlib.contextmanager
def _own_pld_cache():
    """An empty PLD cache for the duration of a chunk (the caller's cache is put back).
    tests/test_sweep.py checks that a chunk's answers do not depend on the caller's cache."""
    from ..pld import query
    saved = query._CACHE
    query._CACHE = type(saved)(saved.size)
    try:
        yield
    finally:
        query._CACHE = saved


def iter_chunk(chunk: list[dict]):
    """The rows of a chunk, one by one as they are computed."""
    with _LOCK, _own_pld_cache():
        steps: dict = {}
        for inputs in chunk:
            yield compute_row(inputs, steps)


def run_chunk(chunk: list[dict]) -> list[dict]:
    """The rows of a chunk (the task a worker runs)."""
    return list(iter_chunk(chunk))


def error_row(inputs: dict, error: str) -> dict:
    """The row of ``inputs`` that could not be computed (e.g. its worker died)."""
    row = dict.fromkeys(COLUMNS)
    row.update(inputs)
    row["error"] = error
    row["key"] = row_key(inputs)
    return row


def compute_row(inputs: dict, steps_cache: dict | None = None) -> dict:
    """The row of ``inputs`` (see :data:`~.sweep_grid.COLUMNS`): the inputs, the derived
    sampling rate, steps, relation and sensitivity, and the answer. A row that raises records
    ``"error": "Type: message"`` (its answer columns stay None) instead of raising."""
    row: dict = dict.fromkeys(COLUMNS)
    row.update(inputs)
    row["key"] = row_key(inputs)
    t0 = time.perf_counter()
    try:
        _answer(inputs, row, {} if steps_cache is None else steps_cache)
    except Exception as e:  # noqa: BLE001 - a failing row records its error; the sweep goes on
        row["error"] = f"{type(e).__name__}: {e}"
    row["time"] = time.perf_counter() - t0
    for k, v in row.items():  # plain Python numbers (numpy scalars print and pickle noisily)
        if type(v) not in (int, float, str, bool, type(None)) and hasattr(v, "item"):
            row[k] = v.item()
    return row


def _sampling(inputs: dict, row: dict):
    """The sampling scheme, relation and clipped sensitivity of a row (validated, naming the
    grid's keys)."""
    from ..core import validate as V
    from ..core import samplers
    from ..core.relations import ADD_REMOVE
    from ..core.sampling import Poisson, SamplingScheme, clip_sensitivity
    scheme: SamplingScheme
    if "sample_rate" in inputs:
        q = V.probability("sample_rate", inputs["sample_rate"], low_open=True)
        scheme, relation = Poisson(q), ADD_REMOVE
    else:
        # the samplers table of the CLI, plans and dp.dpsgd (core/samplers.py)
        n = V.integer("dataset_size", inputs["dataset_size"], low=1)
        m = V.integer("batch_size", inputs["batch_size"], low=1, high=n)
        s = samplers.sampler(inputs["sampler"])
        extra = {w: V.integer(w, inputs[w], low=1) for w in s.extra}   # max_batch_size
        scheme, relation = s.scheme(m, n, **extra), s.relation
    sensitivity = clip_sensitivity(relation)
    row.update(sample_rate=scheme.rate, relation=relation.value, sensitivity=sensitivity)
    return scheme, relation, sensitivity


def _answer(inputs: dict, row: dict, steps_cache: dict) -> None:
    from ..core import validate as V
    from ..core import samplers as _samplers
    from ..mechanisms import Gaussian
    from . import calibrate as C
    scheme, relation, sens = _sampling(inputs, row)
    target, method = inputs["target"], inputs["method"]
    options = {} if inputs.get("tol") is None else {"tol": inputs["tol"]}
    runs = None
    if target != "epochs":
        # epochs -> steps as dp.calibrate counts them (ceil(epochs / rate), exact arithmetic);
        # an epoch sampler runs whole epochs of steps_per_run steps
        runs = C._count(inputs.get("steps"), inputs.get("epochs"), scheme)
        row["steps"] = runs * _samplers.steps_per_run(scheme)
    if target in ("epsilon", "delta"):
        z = V.positive("noise_multiplier", inputs["noise_multiplier"])
        step = steps_cache.get((z, scheme))
        if step is None:  # one object per step mechanism: its RDP tables serve every length
            step = steps_cache[(z, scheme)] = \
                Gaussian(z, sensitivity=sens, relation=relation).subsample(scheme)
        assert runs is not None                # counted above (the target is not epochs)
        plan = step * runs
        if target == "epsilon":
            g = plan.epsilon(V.delta(inputs["delta"], allow_zero=True), method=method, **options)
            row.update(epsilon_upper=g.epsilon, epsilon_lower=g.lower)
        else:
            eps = V.nonnegative("epsilon", inputs["epsilon"])
            g = plan.delta(eps, method=method, **options)
            row.update(delta_upper=g.delta, delta_lower=g.lower)
        evaluations = 1
    elif target == "sigma":
        c = C.sigma(inputs["epsilon"], inputs["delta"], sampling=scheme, steps=row["steps"],
                    method=method, sensitivity=sens, relation=relation, **options)
        g, evaluations = c.guarantee, c.evaluations
        row.update(noise_multiplier=float(c.value), epsilon_upper=g.epsilon,
                   epsilon_lower=g.lower)
    else:  # epochs
        z = V.positive("noise_multiplier", inputs["noise_multiplier"])
        c = C.epochs(inputs["epsilon"], inputs["delta"], sigma=z, sampling=scheme,
                     method=method, sensitivity=sens, relation=relation, **options)
        g, evaluations = c.guarantee, c.evaluations
        assert c.steps is not None             # an epochs calibration counts its steps
        row.update(epochs=int(c.value), steps=int(c.steps), epsilon_upper=g.epsilon,
                   epsilon_lower=g.lower)
    row.update(method_used=g.method, evaluations=evaluations, source=g.source or None,
               note=getattr(g, "note", "") or None)
