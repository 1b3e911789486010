"""Plans in a file: a TOML description of what was run, read by ``dpamp report PLAN.toml``.

    delta = 1e-5
    [[stage]]
    mechanism = "gaussian"
    noise_multiplier = 1.1
    sampler = "poisson"
    batch_size = 256
    dataset_size = 60000
    epochs = 60

The full format is documented in docs/plans.md. The words are DP-SGD's, the same as on the
command line and in ``dp.dpsgd``: a sampler from core/samplers.py's table (Poisson at rate
batch_size / dataset_size when none is named), its relation and the sensitivity of a clipped
sum under it, and ``epochs`` counted as ceil(epochs x dataset_size / batch_size) steps.
``load_plan`` reads and validates a whole plan before anything is computed or written; every error
names the stage (1-based) and the key: ``plan.toml: stage 2, key 'rate': must be in (0, 1] (got
3)``.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, NoReturn

from ..core import validate as V
from ..core.relations import ADD_REMOVE, SUBSTITUTION, Relation
from ..core import samplers
from ..core import sampling as smp
from ..mechanisms.family import families
from ._describe import describe_stage
from .files import read_text

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Plan", "Stage", "PlanError", "load_plan", "parse_plan", "parse_stage", "default_plan",
           "DEFAULT_PLAN_PATH"]


class PlanError(ValueError):
    """A plan that cannot be read; the message names the file, stage and key."""


def _word_families() -> dict:
    """{plan word: family} of every declared family with a word (dpamp.families)."""
    return {fam.word: fam for _, fam in families() if fam.word and fam.from_words}


#: keys of each mechanism (besides "mechanism" itself), from the families' declarations
_MECHANISM_KEYS = {word: fam.keys for word, fam in _word_families().items()}
#: the sampling words of a stage; "sampling" and "rate" are the older spellings of "sampler"
#: and "sample_rate" (same meaning); the samplers themselves are core/samplers.py's table
_SAMPLING_WORDS = ("sampler", "sampling", "sample_rate", "rate", "batch_size", "dataset_size",
                   "max_batch_size")
_COMMON_KEYS = ("name", "mechanism", "relation", "steps", "epochs", "repeat_and_select")
#: user-level DP-SGD (a user holds at most records_per_user records; dp.UserLevelGaussian)
_USER_WORDS = ("records_per_user", "user_sampling", "user_clipping")
_TOP_KEYS = ("title", "delta", "methods", "tol", "stage")
_ALL_STAGE_KEYS = sorted(set(_COMMON_KEYS + _SAMPLING_WORDS + _USER_WORDS).union(
    *_MECHANISM_KEYS.values()))


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a plan: ``step`` run ``steps`` times; ``params`` are the keys as written,
    ``assumed`` what they were read as (sampler, relation, sensitivity, rate, steps, epochs)."""

    name: str
    step: Mechanism  # one run of this stage (a step, or an epoch: ``unit``)
    steps: int    # how many runs of ``step``
    params: dict = dataclasses.field(compare=False, hash=False)
    assumed: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)
    #: steps one run of ``step`` takes: 1, or t for an epoch sampler (allocation, shuffle)
    unit: int = 1

    @property
    def mechanism(self) -> Mechanism:
        return self.step * self.steps

    @property
    def total_steps(self) -> int:
        """The steps the stage runs (runs x unit)."""
        return self.steps * self.unit

    def describe(self) -> dict:
        """Human-readable columns: mechanism (with its sensitivity), sampling (the sampler and
        its rate), steps (and epochs), relation."""
        return describe_stage(self.params, self.assumed, self.total_steps, self.step.relation)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A privacy plan: stages run in order, and the delta at which epsilon is reported."""

    stages: tuple[Stage, ...]
    delta: float
    title: str = ""
    methods: tuple[str, ...] | None = None
    tol: float | None = None
    source: str = "<plan>"

    @property
    def mechanism(self) -> Mechanism:
        """The composition of every stage (all stages must share one neighbouring relation)."""
        from ..mechanisms.composition import compose_counts
        return compose_counts([(s.step, s.steps) for s in self.stages])

    @property
    def relation(self) -> Relation:
        return self.stages[0].step.relation

    @property
    def total_steps(self) -> int:
        return sum(s.total_steps for s in self.stages)

    def prefix(self, steps: int) -> Mechanism:
        """The composition of the first ``steps`` runs of the plan, stages in order (a run is a
        step, or an epoch for an epoch sampler)."""
        from ..mechanisms.composition import compose_prefix
        return compose_prefix([(s.step, s.steps) for s in self.stages], steps)

    @property
    def options(self) -> dict:
        return {} if self.tol is None else {"tol": self.tol}

    def as_dict(self) -> dict:
        """The plan as JSON: each stage's keys as written, its steps, and under "assumed" what
        they were read as (sampler, relation, sensitivity, sample rate, steps, epochs)."""
        return {"title": self.title, "delta": self.delta, "source": self.source,
                "relation": str(self.relation),
                "methods": None if self.methods is None else list(self.methods),
                "stages": [{**s.params, "name": s.name, "steps": s.total_steps,
                            "assumed": dict(s.assumed)} for s in self.stages]}


# --- reading ---------------------------------------------------------------------------------

class _Reader:
    """Errors name the origin, the stage and the key, as a TOML key (``key 'batch_size'``) or,
    for a stage given on the command line, as its flag (``--batch-size``)."""

    def __init__(self, origin: str, cli: bool = False):
        self.origin, self.cli = origin, cli

    def k(self, key: str) -> str:
        return "--" + key.replace("_", "-") if self.cli else repr(key)

    def fail(self, stage, key, msg) -> NoReturn:
        if self.cli:
            where = "" if key is None else self.k(key)
        else:
            where = ", ".join(([f"stage {stage}"] if stage is not None else []) +
                              ([f"key {key!r}"] if key is not None else []))
        origin = f"{self.origin}: " if self.origin else ""
        raise PlanError(f"{origin}{where + ': ' if where else ''}{msg}")

    def check(self, stage, key, fn, *args, **kw):
        """Run a _validate helper and re-label its error with the stage and key."""
        try:
            return fn(key, *args, **kw)
        except ValueError as e:
            msg = str(e)
            if msg.startswith(key + " "):
                msg = msg[len(key) + 1:]
            self.fail(stage, key, msg)

    def unknown(self, stage, key, allowed, what):
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean {self.k(close[0])}?)" if close else ""
        self.fail(stage, key, f"unknown key{hint}; {what}: {', '.join(sorted(allowed))}")


def load_plan(path: str | os.PathLike) -> Plan:
    """Read and validate a TOML plan file (see docs/plans.md)."""
    path = os.fspath(path)
    try:
        text = read_text(path)
    except OSError as e:
        raise PlanError(f"{path}: cannot read the plan: {e.strerror or e}") from None
    return parse_plan_text(text, origin=path)


def parse_plan_text(text: str, origin: str = "<plan>") -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{origin}: not valid TOML: {e}") from None
    return parse_plan(data, origin=origin)


def parse_plan(data: dict, origin: str = "<plan>") -> Plan:
    """Validate a plan given as a dict (the parsed TOML) and build its mechanisms."""
    r = _Reader(origin)
    if not isinstance(data, dict):
        r.fail(None, None, "a plan must be a table of keys")
    for key in data:
        if key not in _TOP_KEYS:
            r.unknown(None, key, _TOP_KEYS, "top-level keys are")
    if "delta" not in data:
        r.fail(None, "delta", "missing: the delta at which epsilon is reported, e.g. "
                              "delta = 1e-5")
    delta = _check_delta(r, data["delta"])
    title = data.get("title", "")
    if not isinstance(title, str):
        r.fail(None, "title", f"must be a string (got {title!r})")
    methods = data.get("methods")
    if methods is not None:
        methods = _check_methods(r, methods)
    tol = None
    if "tol" in data:
        tol = r.check(None, "tol", V.positive, data["tol"])
    raw = data.get("stage")
    if raw is None:
        r.fail(None, "stage", "missing: a plan needs at least one [[stage]] table")
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(s, dict) for s in raw):
        r.fail(None, "stage", "must be one or more [[stage]] tables")
    stages = tuple(_parse_stage(r, i + 1, s) for i, s in enumerate(raw))
    first = stages[0].step.relation
    for i, s in enumerate(stages, start=1):
        if s.step.relation is not first:
            r.fail(i, "relation", f"this stage is under {s.step.relation} but stage 1 is under "
                   f"{first}; all stages of a plan must share one neighbouring relation "
                   "(an add/remove sensitivity s is at most 2s under substitution)")
    return Plan(stages, delta, title, methods, tol, origin)


def _check_delta(r, value):
    try:
        return V.delta(value, allow_zero=True)     # delta 0: the pure epsilon, as in Python
    except ValueError as e:
        r.fail(None, "delta", str(e)[len("delta "):])


def _check_methods(r, methods):
    from ..accounting import registry as M
    if isinstance(methods, str):
        methods = [methods]
    if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
        r.fail(None, "methods", f"must be a list of method names (got {methods!r})")
    known = M.available()
    for m in methods:
        if m not in known:
            r.fail(None, "methods", f"unknown method {m!r}; known: {', '.join(known)}")
    return tuple(methods)


def parse_stage(s: dict, origin: str = "command line", cli: bool = True, index: int = 1) -> Stage:
    """One stage from its keys (the TOML words, e.g. ``{"mechanism": "gaussian",
    "noise_multiplier": 1.1, "batch_size": 256, "dataset_size": 60000, "epochs": 60}``); with
    ``cli`` its errors name the keys as command-line flags. The command line, ``dp.dpsgd`` and
    plan files all read a stage here, so a word means one thing everywhere."""
    if not isinstance(s, dict):
        raise PlanError(f"{origin}: a stage must be a table of keys")
    return _parse_stage(_Reader(origin, cli), index, s)


def _one_of(r, i, s, *keys, needed=True):
    """The one key of ``keys`` present in ``s`` (None if none and not ``needed``)."""
    given = [k for k in keys if k in s]
    if len(given) > 1:
        r.fail(i, given[1], f"give only one of {', '.join(map(r.k, keys))}")
    if not given and needed:
        r.fail(i, keys[0], f"missing: give one of {', '.join(map(r.k, keys))}")
    return given[0] if given else None


def _parse_stage(r: _Reader, i: int, s: dict) -> Stage:
    for key in s:
        if key not in _ALL_STAGE_KEYS:
            r.unknown(i, key, _ALL_STAGE_KEYS, "stage keys are")
    name = s.get("name", f"stage {i}")
    if not isinstance(name, str):
        r.fail(i, "name", f"must be a string (got {name!r})")
    kind = s.get("mechanism")
    if kind is None:
        r.fail(i, "mechanism", f"missing; one of {', '.join(_MECHANISM_KEYS)}")
    if kind not in _MECHANISM_KEYS:
        r.fail(i, "mechanism", f"must be one of {', '.join(_MECHANISM_KEYS)} (got {kind!r})")
    for key in s:  # a key of another mechanism
        if key not in _COMMON_KEYS + _SAMPLING_WORDS + _USER_WORDS and \
                key not in _MECHANISM_KEYS[kind]:
            r.fail(i, key, f"not a parameter of mechanism {kind!r} (its keys: "
                           f"{', '.join(_MECHANISM_KEYS[kind])})")
    sampler = _sampler_of(r, i, s)
    relation = _relation_of(r, i, s, sampler)
    step, assumed = _mechanism_of(r, i, s, kind, relation)
    scheme, rate, sizes = _scheme_of(r, i, s, sampler, relation)
    step, sampled = _user_level(r, i, s, kind, step, scheme, assumed)
    if sampled is not None:
        try:
            step = step.subsample(sampled)
        except ValueError as e:
            r.fail(i, "relation", str(e))
    runs = _steps_of(r, i, s, scheme)
    unit = samplers.steps_per_run(scheme)
    whole = _word_families()[kind].whole_run
    if whole:                   # the mechanism is the whole run of ``steps`` (matrix)
        runs, unit = 1, runs
    assumed.update(sampler="none" if sampler is None else sampler.name,
                   relation=relation.value, **sizes)
    if scheme is not None:
        assumed["sample_rate"] = float(rate)
    if whole:
        assumed.update(steps=unit)
    elif unit > 1:        # an epoch sampler: runs are epochs of ``unit`` steps
        assumed.update(steps=runs * unit, steps_per_epoch=unit, epochs=runs)
    else:
        assumed.update(steps=runs, epochs=samplers.epochs_of_steps(runs, rate))
    params = {k: v for k, v in s.items() if k != "name"}
    if "repeat_and_select" in s:             # the whole stage, run a random number of times
        step = _repeat_and_select(r, i, s["repeat_and_select"], step * runs, assumed)
        return Stage(name, step, 1, params, assumed, runs * unit)
    return Stage(name, step, runs, params, assumed, unit)


def _flag(name, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false (got {value!r})")
    return value


def _user_level(r, i, s, kind, step, scheme, assumed):
    """(step, scheme to subsample it by) at user level, where ``records_per_user`` is given
    (dp.UserLevelGaussian, docs/user-level.md): with user sampling, or without sampling, the
    Gaussian's sensitivity becomes the user's (m records, or 1 with user clipping); with
    Poisson sampling of records the step is the user-level mixture, its sampling inside it.
    m = 1 changes nothing (ordinary DP-SGD, bit for bit)."""
    given = [k for k in _USER_WORDS if k in s]
    if not given:
        return step, scheme
    if "records_per_user" not in s:
        r.fail(i, given[0], f"needs {r.k('records_per_user')} (the most records one user "
                            "holds)")
    if kind != "gaussian":
        r.fail(i, "records_per_user", f"user-level accounting is for the Gaussian mechanism "
                                      f"(DP-SGD), not {kind!r}")
    m = r.check(i, "records_per_user", V.integer, s["records_per_user"], low=1)
    users = r.check(i, "user_sampling", _flag, s.get("user_sampling", False))
    clip = r.check(i, "user_clipping", _flag, s.get("user_clipping", False))
    if users and scheme is None:
        r.fail(i, "user_sampling", "needs a sampler (users are drawn by it)")
    assumed.update(unit="user", records_per_user=m, user_sampling=users, user_clipping=clip,
                   user_sensitivity=float(step.sensitivity * (1 if clip else m)))
    if m == 1:
        return step, scheme
    if users or scheme is None:
        return dataclasses.replace(step, sensitivity=assumed["user_sensitivity"]), scheme
    if type(scheme) is not smp.Poisson:
        r.fail(i, "sampler", "record sampling at user level is accounted for the 'poisson' "
                             f"sampler; sample users ({r.k('user_sampling')}) for another "
                             "sampler")
    if step.relation is not ADD_REMOVE:
        r.fail(i, "relation", "record sampling at user level is accounted under add/remove of "
                              f"a whole user; sample users ({r.k('user_sampling')}) for "
                              "substitution")
    from ..mechanisms.user_level import UserLevelGaussian
    z = step.sigma / step.sensitivity
    if z * step.sensitivity != step.sigma:      # rounded: take the smaller noise multiplier
        z = math.nextafter(z, 0.0)
    try:
        return UserLevelGaussian(z, m, scheme.rate, user_clipping=clip), None
    except ValueError as e:
        r.fail(i, "records_per_user", str(e))


_REPEAT_KEYS = ("mean", "distribution", "shape")


def _repeat_and_select(r, i, table, run, assumed):
    """A stage's ``repeat_and_select`` table: the stage's whole run (``run``) repeated a random
    number of times, K with mean ``mean`` from ``distribution`` (Poisson by default; or
    "geometric", "logarithmic", "truncated_negative_binomial" with ``shape``), the best run
    released (Papernot & Steinke 2022; dp.RepeatAndSelect)."""
    from ..mechanisms.repeat_select import DISTRIBUTIONS, RepeatAndSelect
    key = "repeat_and_select"
    if not isinstance(table, dict):
        r.fail(i, key, "must be a table of keys: mean, distribution, shape")
    for k in table:
        if k not in _REPEAT_KEYS:
            r.unknown(i, f"{key}.{k}", [f"{key}.{x}" for x in _REPEAT_KEYS],
                      f"the keys of {key} are")
    if "mean" not in table:
        r.fail(i, f"{key}.mean", "missing: the mean number of runs (at least 1)")
    mean = r.check(i, f"{key}.mean", V.real, table["mean"], low=1.0)
    dist = table.get("distribution", "poisson")
    if dist not in DISTRIBUTIONS:
        r.fail(i, f"{key}.distribution", f"must be one of {', '.join(map(repr, DISTRIBUTIONS))}"
                                          f" (got {dist!r})")
    shape = table.get("shape")
    try:
        step = RepeatAndSelect(run, mean, dist, shape)
    except ValueError as e:
        r.fail(i, f"{key}.shape", str(e))
    assumed[key] = {"mean": mean, "distribution": dist, **({"shape": shape} if shape is not None
                                                           else {})}
    return step


def _sampler_of(r, i, s):
    """The stage's sampler (core/samplers.py), None for no sampling: the one named by
    'sampler' (or its older spelling 'sampling'), else Poisson when a batch size or a rate is
    given (as in opacus, dp-accounting and TF-Privacy), else none."""
    key = _one_of(r, i, s, "sampler", "sampling", needed=False)
    if key is None:
        sized = any(k in s for k in ("batch_size", "dataset_size", "sample_rate", "rate"))
        return samplers.sampler(samplers.DEFAULT_SAMPLER) if sized else None
    if s[key] == "none":
        for k in ("batch_size", "dataset_size", "sample_rate", "rate"):
            if k in s:
                r.fail(i, k, f"not used without a sampler ({r.k(key)} is 'none')")
        return None
    try:
        return samplers.sampler(s[key])
    except ValueError as e:
        r.fail(i, key, f"must be 'none' or one of {', '.join(map(repr, samplers.SAMPLERS))}"
                       f" ({str(e).rpartition('(')[2][:-1]})")


def _relation_of(r, i, s, sampler) -> Relation:
    """The relation given, or the one the sampler's guarantee is under (add/remove without
    sampling). Poisson sampling may be restated under substitution (Balle et al. 2018, Thm 14)."""
    needs = ADD_REMOVE if sampler is None else sampler.relation
    if "relation" not in s:
        return needs
    rel = s["relation"]
    if rel not in ("add_remove", "substitution"):
        r.fail(i, "relation", f"must be 'add_remove' or 'substitution' (got {rel!r})")
    relation = Relation(rel)
    if needs is SUBSTITUTION and relation is ADD_REMOVE:
        r.fail(i, "relation", f"sampler {sampler.name!r} needs the substitution relation "
               "(replace one record; the dataset size is public); use the 'poisson' sampler "
               "for add/remove")
    return relation


class _Words:
    """A stage's keys as a family's ``from_words`` reads them: values checked by the
    validators of dpamp.core.validate, errors naming the stage and the key (or flag)."""

    def __init__(self, reader: _Reader, index: int, stage: dict, kind: str):
        self.r, self.i, self.s, self.kind = reader, index, stage, kind

    def has(self, key: str) -> bool:
        return key in self.s

    def k(self, key: str) -> str:
        return self.r.k(key)

    def one_of(self, *keys: str) -> str:
        return _one_of(self.r, self.i, self.s, *keys)

    def get(self, key: str, check, *args, required: bool = False, **kw):
        if key not in self.s:
            if required:
                self.r.fail(self.i, key, f"missing: mechanism {self.kind!r} needs it")
            return None
        return self.r.check(self.i, key, check, self.s[key], *args, **kw)

    def fail(self, key: str, msg: str) -> NoReturn:
        self.r.fail(self.i, key, msg)


def _mechanism_of(r, i, s, kind, relation):
    """One step of the mechanism under ``relation``, and what was assumed of it: read by the
    family that declares the word (dpamp.families)."""
    step, assumed = _word_families()[kind].from_words(_Words(r, i, s, kind), relation)
    return step, {"mechanism": kind, **assumed}


def _scheme_of(r, i, s, sampler, relation):
    """(per-step sampling scheme or None, exact rate, {batch_size, dataset_size} given)."""
    extra = _sampler_extra(r, i, s, sampler)
    if sampler is None:
        return None, Fraction(1), {}
    rate_key = _one_of(r, i, s, "sample_rate", "rate", needed=False)
    if rate_key is not None:
        if not sampler.rate_alone:
            r.fail(i, rate_key, f"sampler {sampler.name!r} takes {r.k('batch_size')} and "
                                f"{r.k('dataset_size')}, not a rate")
        for k in ("batch_size", "dataset_size"):
            if k in s:
                r.fail(i, k, f"give either {r.k(rate_key)} or {r.k('batch_size')} + "
                             f"{r.k('dataset_size')}")
        q = r.check(i, rate_key, V.probability, s[rate_key], low_open=True)
        return smp.Poisson(q, relation=relation), samplers.exact(q), {}
    for k in ("batch_size", "dataset_size"):
        if k not in s:
            alt = f" (or {r.k('sample_rate')})" if sampler.rate_alone else ""
            r.fail(i, k, f"missing: sampler {sampler.name!r} needs {r.k('batch_size')} and "
                         f"{r.k('dataset_size')}{alt}")
    n = r.check(i, "dataset_size", V.integer, s["dataset_size"], low=1)
    high = None if sampler.name == "with-replacement" else n
    m = r.check(i, "batch_size", V.integer, s["batch_size"], low=1, high=high)
    if relation is not sampler.relation:  # Poisson restated under substitution
        scheme = smp.Poisson(m / n, relation=relation)
    else:
        scheme = sampler.scheme(m, n, **extra)
    return scheme, Fraction(m, n), {"batch_size": m, "dataset_size": n, **extra}


def _sampler_extra(r, i, s, sampler) -> dict:
    """The further words the sampler takes (``Sampler.extra``: max_batch_size for
    truncated-poisson), each an integer >= 1; such a word given to another sampler is an
    error naming it."""
    wants = () if sampler is None else sampler.extra
    for k in ("max_batch_size",):
        if k in s and k not in wants:
            name = "no sampler" if sampler is None else f"sampler {sampler.name!r}"
            r.fail(i, k, f"not used by {name} (it is a word of 'truncated-poisson')")
    out = {}
    for k in wants:
        if k not in s:
            r.fail(i, k, f"missing: sampler {sampler.name!r} needs it (the largest batch kept)")
        out[k] = r.check(i, k, V.integer, s[k], low=1)
    return out


def _steps_of(r: _Reader, i, s, scheme) -> int:
    """The stage's steps from 'steps' or 'epochs' (both: they must agree): core/samplers.py's
    count, ceil(epochs x N / B) in exact arithmetic."""
    steps = r.check(i, "steps", V.integer, s["steps"], low=1) if "steps" in s else None
    epochs = r.check(i, "epochs", V.positive, s["epochs"]) if "epochs" in s else None
    if steps is None and epochs is None:
        r.fail(i, "steps", f"missing: give {r.k('steps')} (the number of steps; 1 for a "
                           f"single release) or {r.k('epochs')} (passes over the dataset)")
    try:
        names = ("--steps", "--epochs") if r.cli else ("steps", "epochs")
        return samplers.count(steps, epochs, scheme, steps_name=names[0], epochs_name=names[1])
    except ValueError as e:
        msg = str(e)    # "epochs must ..." after "key 'epochs': " says the key twice
        r.fail(i, "epochs", msg[len(names[1]) + 1:] if msg.startswith(names[1] + " must ")
               else msg)


# --- the built-in plan -------------------------------------------------------------------

DEFAULT_PLAN_PATH = os.path.join(os.path.dirname(__file__), "data", "default_plan.toml")


def default_plan() -> Plan:
    """The plan of ``make run``: DP-SGD, Poisson rate 256/60000, noise multiplier 1.1,
    60 epochs (= ceil(60 * 60000 / 256) = 14063 steps), delta 1e-5."""
    from importlib import resources
    try:
        text = resources.files("dpamp").joinpath("data").joinpath("default_plan.toml").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError, TypeError):  # pragma: no cover
        with open(DEFAULT_PLAN_PATH, encoding="utf-8") as f:
            text = f.read()
    return parse_plan_text(text, origin="default_plan.toml")
