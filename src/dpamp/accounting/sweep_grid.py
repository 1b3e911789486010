"""The grid of a sweep: its vocabulary, its expansion into rows, and the key of a row.

A grid maps keys to a value or a list of values; its rows are the Cartesian product of the
lists, in the order the keys are written (the last key varies fastest). Several grids (the
``[[grid]]`` tables of a grid file, or a list of dicts) are expanded one after the other and may
share defaults. The format is documented in docs/sweeps.md; :mod:`dpamp.io.grid` reads it from
TOML.

Structural mistakes are errors of the whole grid, raised before anything is computed
(:class:`GridError`, naming the key): an unknown key, a value of the wrong type, a key no
target of its grid uses, a missing or conflicting parameter. Values out of range (delta = 2, a
batch larger than the dataset, fewer epochs than one step) are errors of their row only: the
row records its error and the sweep goes on.
"""
from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from numbers import Integral, Real

__all__ = ["GridError", "KEYS", "TARGETS", "SAMPLERS", "COLUMNS", "COLUMN_TYPES", "expand",
           "row_key"]

#: what a row computes: an epsilon bracket at delta, a delta bracket at epsilon, or the
#: calibrated noise multiplier / number of epochs meeting (epsilon, delta)
TARGETS = ("epsilon", "delta", "sigma", "epochs")
#: every sampler of the command line, plans and dp.dpsgd (core/samplers.py; a test checks that
#: the lists agree), written with "_" ("-" is read the same): "poisson": rate batch_size /
#: dataset_size, add/remove, sensitivity 1; "without_replacement" and "with_replacement":
#: batch_size of dataset_size each step, substitution, sensitivity 2; "allocation", "shuffle":
#: epoch samplers; "truncated_poisson": Poisson cut to at most max_batch_size records
SAMPLERS = ("poisson", "without_replacement", "with_replacement", "allocation", "shuffle",
            "truncated_poisson")

#: the keys of a grid and their types ("real", "integer", "count": an integer-valued real is
#: stored as an integer, or a choice of strings)
KEYS = {
    "target": TARGETS,
    "noise_multiplier": "real",
    "sampler": SAMPLERS,
    "batch_size": "integer",
    "dataset_size": "integer",
    "max_batch_size": "integer",
    "sample_rate": "real",
    "epochs": "count",
    "steps": "integer",
    "delta": "real",
    "epsilon": "real",
    "method": "method",
    "tol": "real",
}
DEFAULTS = {"target": "epsilon", "sampler": "poisson", "method": "auto"}

#: keys that only some targets use (the others are used by every target)
_USED_BY = {
    "noise_multiplier": ("epsilon", "delta", "epochs"),
    "epochs": ("epsilon", "delta", "sigma"),
    "steps": ("epsilon", "delta", "sigma"),
    "delta": ("epsilon", "sigma", "epochs"),
    "epsilon": ("delta", "sigma", "epochs"),
}
_WHY_NOT = {
    ("noise_multiplier", "sigma"): "target 'sigma' calibrates the noise multiplier",
    ("epochs", "epochs"): "target 'epochs' calibrates the number of epochs",
    ("steps", "epochs"): "target 'epochs' calibrates the number of epochs",
    ("delta", "delta"): "target 'delta' computes delta (at 'epsilon')",
    ("epsilon", "epsilon"): "target 'epsilon' computes epsilon (at 'delta')",
}

#: the columns of every row, in order: the inputs, what is derived from them, the answer
COLUMNS = ("target", "noise_multiplier", "sampler", "batch_size", "dataset_size",
           "max_batch_size", "sample_rate", "epochs", "steps", "delta", "epsilon", "method", "tol",
           "relation", "sensitivity",
           "epsilon_upper", "epsilon_lower", "delta_upper", "delta_lower", "method_used",
           "evaluations", "source", "note", "error", "time", "key")
COLUMN_TYPES = {c: "real" for c in ("noise_multiplier", "sample_rate", "delta", "epsilon",
                                    "tol", "sensitivity", "epsilon_upper", "epsilon_lower",
                                    "delta_upper", "delta_lower", "time")}
COLUMN_TYPES.update({c: "integer" for c in ("batch_size", "dataset_size", "max_batch_size",
                                            "steps",
                                            "evaluations")})
COLUMN_TYPES["epochs"] = "count"

#: largest number of rows one grid may expand to (a typo such as 1e9 values is refused)
MAX_ROWS = 10_000_000


class GridError(ValueError):
    """A grid that cannot be expanded; the message names the key (and the ``[[grid]]`` table
    and the file where there is one)."""

    def __init__(self, message: str, key: str | None = None, block: int | None = None,
                 origin: str | None = None):
        self.message, self.key, self.block, self.origin = message, key, block, origin
        where = []
        if block is not None:
            where.append(f"[[grid]] {block}")
        if key is not None:
            where.append(f"key {key!r}")
        text = ", ".join(where)
        text = f"{text}: {message}" if text else message
        super().__init__(f"{origin}: {text}" if origin else text)

    def within(self, origin: str) -> "GridError":
        """The same error, located in a file."""
        return GridError(self.message, self.key, self.block, origin)


def _methods() -> tuple[str, ...]:
    from . import registry
    return ("auto", *registry.available())


def _scalar(key: str, value, kind, block):
    """One value of ``key``, checked against its type and normalised (reals as floats,
    integers as ints, counts as ints when whole), so that equal inputs have equal keys."""
    def bad(what):
        raise GridError(f"must be {what} (got {value!r})", key, block)
    if kind in ("real", "count"):
        if isinstance(value, bool) or not isinstance(value, Real):
            bad("a number" if kind == "real" else "a number of epochs")
        x = float(value)
        if kind == "count" and math.isfinite(x) and x.is_integer():
            return int(x)
        return x
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (Integral, float)) or \
                (isinstance(value, float) and not value.is_integer()):
            bad("an integer")
        return int(value)
    choices = _methods() if kind == "method" else kind
    if key == "sampler" and isinstance(value, str):
        value = value.strip().lower().replace("-", "_")     # "_" and "-" alike, as elsewhere
    if not isinstance(value, str) or value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        bad(f"one of {', '.join(map(repr, choices))}{hint}")
    return value


def _values(key: str, value, block) -> list:
    """The list of values of a key (a scalar is a list of one)."""
    if key not in KEYS:
        close = difflib.get_close_matches(key, list(KEYS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise GridError(f"unknown key{hint}; grid keys are: {', '.join(KEYS)}", key, block)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise GridError("an empty list: give at least one value", key, block)
    out = []
    for v in values:
        if isinstance(v, (list, tuple, dict)):
            raise GridError(f"must be a value or a list of values (got {value!r})", key, block)
        v = _scalar(key, v, KEYS[key], block)
        if v not in out:  # repeated values would only repeat rows
            out.append(v)
    return out


def _row(values: dict, block, inherited: set) -> dict:
    """The inputs of one row: the keys its target uses (inherited defaults it does not use
    are dropped; keys written in its own grid must all be used by some target, checked by the
    caller), checked for missing and conflicting parameters."""
    target = values["target"]
    row = {}
    for key, v in values.items():
        if target not in _USED_BY.get(key, TARGETS):
            continue
        row[key] = v

    def need(key, why):
        if key not in row:
            raise GridError(f"missing: {why}", key, block)

    def conflict(key, other, why):
        if key in row and other in row:
            raise GridError(why, key if key not in inherited else other, block)

    for key in ("noise_multiplier", "delta", "epsilon"):
        if target in _USED_BY[key]:
            need(key, f"target {target!r} needs it")
    if target != "epochs":
        if "epochs" not in row:
            need("steps", f"target {target!r} needs 'epochs' or 'steps'")
        elif "steps" in row:
            _agree(row, block, inherited)
    if row["sampler"] == "truncated_poisson":
        need("max_batch_size", "sampler 'truncated_poisson' needs 'max_batch_size' (the "
                               "largest batch kept)")
    else:       # the other samplers' rows of a grid listing several samplers do without it
        row.pop("max_batch_size", None)
    if row["sampler"] != "poisson":
        name = row["sampler"]
        if "sample_rate" in row:
            raise GridError(f"sampler {name!r} takes 'batch_size' and 'dataset_size', not a "
                            "rate", "sample_rate", block)
        need("batch_size", f"sampler {name!r} needs 'batch_size' and 'dataset_size'")
        need("dataset_size", f"sampler {name!r} needs 'batch_size' and 'dataset_size'")
    else:
        for k in ("batch_size", "dataset_size"):
            conflict("sample_rate", k, "give either 'sample_rate' or 'batch_size' + "
                                       "'dataset_size'")
        if "sample_rate" not in row:
            need("batch_size", "sampler 'poisson' needs 'sample_rate' or 'batch_size' + "
                               "'dataset_size'")
            need("dataset_size", "sampler 'poisson' needs 'sample_rate' or 'batch_size' + "
                                 "'dataset_size'")
    return row


def _agree(row: dict, block, inherited: set) -> None:
    """'steps' and 'epochs' both given: they must make the same count (core.samplers.count,
    as on the command line and in plans), else an error of the grid naming the key. A row
    whose sampling is itself invalid (a batch larger than the dataset) is left to its own
    row error."""
    from ..core import samplers
    from ..core.sampling import Poisson, SamplingScheme
    scheme: SamplingScheme
    try:
        if "sample_rate" in row:
            scheme = Poisson(row["sample_rate"])
        else:
            extra = {"max_batch_size": row["max_batch_size"]} \
                if row["sampler"] == "truncated_poisson" else {}
            scheme = samplers.sampler(row["sampler"]).scheme(
                row["batch_size"], row["dataset_size"], **extra)
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        return
    try:
        samplers.count(row["steps"], row["epochs"], scheme)
    except ValueError as e:
        key = "steps" if "epochs" in inherited and "steps" not in inherited else "epochs"
        raise GridError(str(e), key, block) from None


def expand(grid, defaults: Mapping | None = None) -> list[dict]:
    """The rows of a grid: the inputs of each, in grid order, without duplicates.

    ``grid``: a mapping of keys (:data:`KEYS`) to a value or a list of values, or a list of
    such mappings (expanded one after the other); ``defaults``: keys shared by every mapping of
    the list (each mapping overrides them; a default that a row's target does not use is
    dropped from that row). Unset keys (or None) take :data:`DEFAULTS`. Raises
    :class:`GridError`."""
    blocks = [grid] if isinstance(grid, Mapping) else list(grid)
    if not blocks or not all(isinstance(b, Mapping) for b in blocks):
        raise GridError("a grid must be a mapping of keys to values (or lists of values), "
                        "or a list of such mappings")
    several = not isinstance(grid, Mapping)
    shared = {k: _values(k, v, None) for k, v in (defaults or {}).items() if v is not None}
    used_defaults: set = set()
    rows, seen = [], set()
    for i, block in enumerate(blocks, start=1):
        label = i if several else None
        own = {k: _values(k, v, label) for k, v in block.items() if v is not None}
        merged = {k: [v] for k, v in DEFAULTS.items() if k not in own and k not in shared}
        merged.update({k: v for k, v in shared.items() if k not in own})
        merged.update(own)
        inherited = set(merged) - set(own)
        targets = merged["target"]
        for key in own:  # a key written here that no target of this grid uses is a mistake
            users = _USED_BY.get(key, TARGETS)
            if not any(t in users for t in targets):
                why = _WHY_NOT.get((key, targets[0]), "no target of this grid uses it")
                raise GridError(f"not used: {why}", key, label)
        size = math.prod(len(v) for v in merged.values())
        if size > MAX_ROWS:
            raise GridError(f"the grid has {size} rows (at most {MAX_ROWS})", None, label)
        keys = list(merged)
        if "max_batch_size" in own and "truncated_poisson" not in merged["sampler"]:
            raise GridError("not used: only sampler 'truncated_poisson' takes it",
                            "max_batch_size", label)
        for combo in itertools.product(*(merged[k] for k in keys)):
            row = _row(dict(zip(keys, combo)), label, inherited)
            used_defaults.update(k for k in row if k in shared and k not in own)
            key = row_key(row)
            if key not in seen:
                seen.add(key)
                rows.append(row)
    for key in shared:
        if key not in used_defaults and key not in DEFAULTS:
            raise GridError("not used by any [[grid]] table (no target uses it)", key)
    return rows


def canonical(inputs: Mapping) -> str:
    """The inputs of a row as sorted, compact JSON: the identity of the row."""
    return json.dumps(dict(inputs), sort_keys=True, separators=(",", ":"))


def row_key(inputs: Mapping) -> str:
    """A stable key of a row's inputs (the first 16 hex digits of the SHA-256 of
    :func:`canonical`): equal inputs, whatever their order, have equal keys."""
    return hashlib.sha256(canonical(inputs).encode("utf-8")).hexdigest()[:16]
