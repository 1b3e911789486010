"""Plans in a file: a TOML description of what was run, read by ``dpamp report PLAN.toml``.

    delta = 1e-5
    [[stage]]
    mechanism = "gaussian"
    noise_multiplier = 1.1
    sampling = "poisson"
    batch_size = 256
    dataset_size = 60000
    epochs = 60

The full format is documented in docs/plans.md. ``load_plan`` reads and validates a whole plan
before anything is computed or written; every error names the stage (1-based) and the key:
``plan.toml: stage 2, key 'rate': must be in (0, 1] (got 3)``.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import sys
from fractions import Fraction

from ..core import _validate as V
from ..core.relations import ADD_REMOVE, SUBSTITUTION, Relation
from ..core.sampling import clip_sensitivity
from ._files import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Plan", "Stage", "PlanError", "load_plan", "parse_plan", "default_plan",
           "DEFAULT_PLAN_PATH"]


class PlanError(ValueError):
    """A plan that cannot be read; the message names the file, stage and key."""


#: keys of each mechanism (besides "mechanism" itself); "|" separates alternatives
_MECHANISM_KEYS = {
    "gaussian": ("noise_multiplier", "sigma", "sensitivity"),
    "laplace": ("noise_multiplier", "scale", "sensitivity"),
    "randomized_response": ("p", "epsilon"),
    "pure_dp": ("epsilon",),
    "zcdp": ("rho",),
    "eps_delta": ("epsilon", "delta"),
}
_SAMPLING_KEYS = {
    "none": (),
    "poisson": ("rate", "batch_size", "dataset_size"),
    "without_replacement": ("batch_size", "dataset_size"),
    "with_replacement": ("batch_size", "dataset_size"),
}
_COMMON_KEYS = ("name", "mechanism", "sampling", "relation", "steps", "epochs")
_TOP_KEYS = ("title", "delta", "methods", "tol", "stage")
_ALL_STAGE_KEYS = sorted(set(_COMMON_KEYS).union(*_MECHANISM_KEYS.values(),
                                                 *_SAMPLING_KEYS.values()))


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a plan: ``step`` run ``steps`` times; ``params`` are the keys as written."""

    name: str
    step: object  # a dpamp Mechanism: one step of this stage
    steps: int
    params: dict = dataclasses.field(compare=False, hash=False)

    @property
    def mechanism(self):
        return self.step * self.steps

    def describe(self) -> dict:
        """Human-readable columns: mechanism, sampling, steps, relation."""
        return _describe_stage(self.params, self.steps, self.step.relation)


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
    def mechanism(self):
        """The composition of every stage (all stages must share one neighbouring relation)."""
        from ..mechanisms.composition import compose_counts
        return compose_counts([(s.step, s.steps) for s in self.stages])

    @property
    def relation(self) -> Relation:
        return self.stages[0].step.relation

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)

    def prefix(self, steps: int):
        """The composition of the first ``steps`` steps of the plan, stages in order."""
        from ..mechanisms.composition import compose_prefix
        return compose_prefix([(s.step, s.steps) for s in self.stages], steps)

    @property
    def options(self) -> dict:
        return {} if self.tol is None else {"tol": self.tol}

    def as_dict(self) -> dict:
        return {"title": self.title, "delta": self.delta, "source": self.source,
                "relation": str(self.relation),
                "methods": None if self.methods is None else list(self.methods),
                "stages": [{**s.params, "name": s.name, "steps": s.steps} for s in self.stages]}


# --- reading ---------------------------------------------------------------------------------

def _where(stage: int | None, key: str | None) -> str:
    parts = []
    if stage is not None:
        parts.append(f"stage {stage}")
    if key is not None:
        parts.append(f"key {key!r}")
    return ", ".join(parts)


class _Reader:
    def __init__(self, origin: str):
        self.origin = origin

    def fail(self, stage, key, msg):
        where = _where(stage, key)
        raise PlanError(f"{self.origin}: {where + ': ' if where else ''}{msg}")

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
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.fail(stage, key, f"unknown key{hint}; {what}: {', '.join(sorted(allowed))}")


def load_plan(path) -> Plan:
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
        return V.delta(value)
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


def _parse_stage(r: _Reader, i: int, s: dict) -> Stage:
    from .. import mechanisms as mech
    from ..core import sampling as smp
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
    scheme_kind = s.get("sampling", "none")
    if scheme_kind not in _SAMPLING_KEYS:
        r.fail(i, "sampling", f"must be one of {', '.join(_SAMPLING_KEYS)} "
                              f"(got {scheme_kind!r})")
    # keys that belong to neither the mechanism nor the sampling scheme chosen
    mine = set(_COMMON_KEYS) | set(_MECHANISM_KEYS[kind]) | set(_SAMPLING_KEYS[scheme_kind])
    for key in s:
        if key not in mine:
            if any(key in keys for keys in _SAMPLING_KEYS.values()):
                what = f"sampling {scheme_kind!r}"
                allowed = _SAMPLING_KEYS[scheme_kind]
            else:
                what = f"mechanism {kind!r}"
                allowed = _MECHANISM_KEYS[kind]
            r.fail(i, key, f"not a parameter of {what} (its keys: "
                           f"{', '.join(allowed) if allowed else 'none'})")

    # the relation: given, or the one the sampling scheme needs
    needs = {"none": ADD_REMOVE, "poisson": ADD_REMOVE, "without_replacement": SUBSTITUTION,
             "with_replacement": SUBSTITUTION}[scheme_kind]
    relation = needs
    if "relation" in s:
        rel = s["relation"]
        if rel not in ("add_remove", "substitution"):
            r.fail(i, "relation", f"must be 'add_remove' or 'substitution' (got {rel!r})")
        relation = Relation(rel)
        if scheme_kind in ("without_replacement", "with_replacement") and relation is ADD_REMOVE:
            r.fail(i, "relation", f"sampling {scheme_kind!r} needs the substitution relation "
                   "(replace one record; the dataset size is public); use sampling = "
                   "'poisson' for add/remove")

    def need(key):
        if key not in s:
            r.fail(i, key, f"missing: mechanism {kind!r} needs it")
        return s[key]

    def one_of(*keys):
        given = [k for k in keys if k in s]
        if len(given) != 1:
            if not given:
                r.fail(i, keys[0], f"missing: mechanism {kind!r} needs one of "
                                   f"{', '.join(map(repr, keys))}")
            r.fail(i, given[1], f"give only one of {', '.join(map(repr, keys))}")
        return given[0]

    # one step of the mechanism, under ``relation``
    if kind in ("gaussian", "laplace"):
        scale_key = "sigma" if kind == "gaussian" else "scale"
        key = one_of("noise_multiplier", scale_key)
        value = r.check(i, key, V.positive, s[key])
        if key == "noise_multiplier":
            if "sensitivity" in s:
                r.fail(i, "sensitivity", f"not used with 'noise_multiplier' (the noise is "
                       f"relative to the clipping norm); give {scale_key!r} and 'sensitivity'")
            # a record of norm <= C moves a sum by C (add/remove) or 2C (substitution)
            sens = clip_sensitivity(relation)
        else:
            sens = r.check(i, "sensitivity", V.positive, s.get("sensitivity", 1.0))
        cls = mech.Gaussian if kind == "gaussian" else mech.Laplace
        step = cls(value, sensitivity=sens, relation=relation)
    elif kind == "randomized_response":
        key = one_of("p", "epsilon")
        if key == "p":
            p = r.check(i, "p", V.probability, s["p"], low_open=True, high_open=True)
            step = mech.RandomizedResponse(p, relation=relation)
        else:
            e = r.check(i, "epsilon", V.nonnegative, s["epsilon"])
            try:
                step = mech.RandomizedResponse.from_epsilon(e, relation=relation)
            except ValueError as err:
                r.fail(i, "epsilon", str(err))
    elif kind == "pure_dp":
        step = mech.PureDP(r.check(i, "epsilon", V.nonnegative, need("epsilon")),
                           relation=relation)
    elif kind == "zcdp":
        step = mech.ZCDP(r.check(i, "rho", V.nonnegative, need("rho")), relation=relation)
    else:  # eps_delta
        from ..mechanisms.eps_delta import EpsDelta
        e = r.check(i, "epsilon", V.nonnegative, need("epsilon"))
        d = r.check(i, "delta", V.real, need("delta"), low=0.0, high=1.0, high_open=True)
        step = EpsDelta(e, d, relation=relation)

    # the sampling scheme; rate_exact is the sampling rate as an exact fraction (for epochs)
    rate_exact = None
    if scheme_kind == "poisson":
        if "rate" in s:
            for k in ("batch_size", "dataset_size"):
                if k in s:
                    r.fail(i, k, "give either 'rate' or 'batch_size' + 'dataset_size'")
            q = r.check(i, "rate", V.probability, s["rate"], low_open=True)
            rate_exact = Fraction(repr(q))
        else:
            m, n = _batch(r, i, s, "poisson")
            q = m / n
            rate_exact = Fraction(m, n)
        scheme = smp.Poisson(q, relation=relation)
    elif scheme_kind in ("without_replacement", "with_replacement"):
        m, n = _batch(r, i, s, scheme_kind)
        cls = smp.WithoutReplacement if scheme_kind == "without_replacement" else \
            smp.WithReplacement
        scheme = cls(m, n)
        rate_exact = Fraction(m, n)
    else:
        scheme = None
    if scheme is not None:
        try:
            step = step.subsample(scheme)
        except ValueError as e:
            r.fail(i, "relation", str(e))

    # how many times
    if "steps" in s and "epochs" in s:
        r.fail(i, "epochs", "give either 'steps' or 'epochs'")
    if "epochs" in s:
        if rate_exact is None:
            r.fail(i, "epochs", "needs a sampling scheme with a rate (one epoch = 1/rate steps); "
                                "give 'steps' instead")
        epochs = r.check(i, "epochs", V.positive, s["epochs"])
        # floor(epochs / rate) in exact decimal arithmetic, so that e.g. 0.3 epochs at rate
        # 0.1 is 3 steps (in floating point 0.3 / 0.1 = 2.9999999999999996)
        steps = math.floor(Fraction(repr(epochs)) / rate_exact)
        if steps < 1:
            r.fail(i, "epochs", f"{epochs:g} epochs at rate {float(rate_exact):g} is less than "
                                "one step")
    else:
        steps = r.check(i, "steps", V.integer, s.get("steps", 1), low=1)
    params = {k: v for k, v in s.items() if k != "name"}
    return Stage(name, step, steps, params)


def _batch(r, i, s, scheme_kind):
    for k in ("batch_size", "dataset_size"):
        if k not in s:
            r.fail(i, k, f"missing: sampling {scheme_kind!r} needs 'batch_size' and "
                         "'dataset_size'" + (" (or 'rate')" if scheme_kind == "poisson" else ""))
    n = r.check(i, "dataset_size", V.integer, s["dataset_size"], low=1)
    high = n if scheme_kind != "with_replacement" else None
    m = r.check(i, "batch_size", V.integer, s["batch_size"], low=1, high=high)
    return m, n


# --- describing ----------------------------------------------------------------------------

def _g(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _describe_stage(p: dict, steps: int, relation: Relation) -> dict:
    kind = p["mechanism"]
    if kind in ("gaussian", "laplace"):
        name = "Gaussian" if kind == "gaussian" else "Laplace"
        if "noise_multiplier" in p:
            mech = f"{name}, noise multiplier {_g(p['noise_multiplier'])}"
        else:
            key = "sigma" if kind == "gaussian" else "scale"
            mech = (f"{name}, {'σ' if kind == 'gaussian' else 'scale'} {_g(p[key])}, "
                    f"sensitivity {_g(p.get('sensitivity', 1.0))}")
    elif kind == "randomized_response":
        mech = ("randomized response, " +
                (f"p = {_g(p['p'])}" if "p" in p else f"ε = {_g(p['epsilon'])}"))
    elif kind == "pure_dp":
        mech = f"ε-DP mechanism, ε = {_g(p['epsilon'])}"
    elif kind == "zcdp":
        mech = f"ρ-zCDP mechanism, ρ = {_g(p['rho'])}"
    else:
        mech = f"(ε, δ)-DP mechanism, ε = {_g(p['epsilon'])}, δ = {_g(p['delta'])}"
    sk = p.get("sampling", "none")
    if sk == "none":
        samp = "none (full dataset)"
    elif sk == "poisson":
        if "rate" in p:
            samp = f"Poisson, rate {_g(p['rate'])}"
        else:
            samp = (f"Poisson, rate {p['batch_size']}/{p['dataset_size']} "
                    f"≈ {p['batch_size'] / p['dataset_size']:.6g}")
    else:
        how = "without" if sk == "without_replacement" else "with"
        samp = f"{p['batch_size']} of {p['dataset_size']}, {how} replacement"
    count = f"{steps} steps" + (f" ({_g(p['epochs'])} epochs)" if "epochs" in p else "")
    return {"mechanism": mech, "sampling": samp, "steps": count,
            "relation": "add/remove" if relation is ADD_REMOVE else "substitution"}


# --- the built-in plan -------------------------------------------------------------------

DEFAULT_PLAN_PATH = os.path.join(os.path.dirname(__file__), "data", "default_plan.toml")


def default_plan() -> Plan:
    """The plan of ``make run``: DP-SGD, Poisson rate 256/60000, noise multiplier 1.1,
    60 epochs (= floor(60 * 60000 / 256) = 14062 steps), delta 1e-5."""
    from importlib import resources
    try:
        text = resources.files("dpamp").joinpath("data", "default_plan.toml").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError, TypeError):  # pragma: no cover
        with open(DEFAULT_PLAN_PATH, encoding="utf-8") as f:
            text = f.read()
    return parse_plan_text(text, origin="default_plan.toml")
