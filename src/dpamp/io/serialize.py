"""JSON serialisation of mechanisms, sampling schemes and compositions.

Generic by construction: every mechanism and sampling scheme is a frozen dataclass, so
``to_dict`` walks the arguments of its constructor recursively and writes
``{"type": ClassName, arg: value, ...}``; ``from_dict`` looks the class up in a registry built
from the subclasses of the known roots -- :class:`~dpamp.mechanisms.base.Mechanism`,
:class:`~dpamp.core.sampling.SamplingScheme` and the post-processing kernels
(:class:`~dpamp.amplification.mixing.kernels.MixingKernel`,
:class:`~dpamp.amplification.bernoulli.mechanism.BernoulliSampling`) -- recursively, at call
time, so a new mechanism family serialises without registering anything. A name is never
imported: a document can only name a class that is already defined under one of those roots.

Encodings (JSON has no tuples, enums or infinities):

| Python value                    | JSON                                              |
|---------------------------------|---------------------------------------------------|
| mechanism / sampling scheme     | ``{"type": "Gaussian", "sigma": 1.1, ...}``       |
| tuple or list                   | list (decoded as a tuple: the objects are frozen) |
| enum member (``dp.ADD_REMOVE``) | ``{"enum": "Relation", "value": "add_remove"}``   |
| inf, -inf                       | ``{"float": "inf"}``, ``{"float": "-inf"}``       |
| numpy array                     | ``{"ndarray": [...], "dtype": "float64"}``        |
| bool, int, float, str, None     | themselves                                        |

Only registered classes are ever instantiated, and every value goes through the class's own
constructor, so a document is validated exactly like hand-written code: the checks that relate
arguments (a scheme's relation and its mechanism's, a composition's counts and relations) live
in the constructors, not in the API helpers that call them. A Python callable (the ``func`` of
:class:`~dpamp.RDPCurve`) cannot be written and raises a ``ValueError`` naming it. Malformed
documents (not JSON text, non-standard NaN / Infinity tokens, nesting deeper than
:data:`MAX_DEPTH`, unknown keys or types) raise ``ValueError``.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import math
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..core.sampling import SamplingScheme
    from ..mechanisms.base import Mechanism

__all__ = ["to_dict", "to_json", "from_dict", "from_json", "registry", "MAX_DEPTH"]

#: deepest nesting of lists and objects a document may have: real descriptions need about 10
#: (a composition of a subsampled, post-processed mechanism); deeper ones are refused with a
#: ValueError before the decoder's recursion could run out of stack
MAX_DEPTH = 64


def _subclasses(cls) -> list[type]:
    out, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out.append(sub)
                todo.append(sub)
    return out


def _roots() -> tuple[type, ...]:
    """The base classes whose (dataclass) subclasses a document may name."""
    from ..amplification.bernoulli.mechanism import BernoulliSampling
    from ..amplification.mixing.kernels import MixingKernel
    from ..core.sampling import SamplingScheme
    from ..mechanisms.base import Mechanism
    from ..mechanisms.matrix_strategies import Strategy
    from ..mechanisms.participation import Participation
    return Mechanism, SamplingScheme, MixingKernel, BernoulliSampling, Strategy, Participation


def registry() -> dict[str, type]:
    """{class name: class} for every mechanism, sampling scheme and post-processing kernel
    (mixing kernels, Bernoulli sampling) defined so far.

    Names defined twice (in different modules) map to ``None``: decoding them is refused as
    ambiguous rather than guessed."""
    import dpamp
    dpamp._load_all()   # defines the built-in families
    reg: dict[str, type] = {}
    for cls in [c for root in _roots() for c in [root] + _subclasses(root)]:
        if not dataclasses.is_dataclass(cls):
            continue
        name = cls.__name__
        reg[name] = None if name in reg and reg[name] is not cls else cls  # type: ignore
    return reg


def _enums() -> dict[str, type]:
    from ..core.relations import Relation
    return {"Relation": Relation}


def _init_params(cls) -> list[inspect.Parameter]:
    """The constructor's named parameters, without ``self`` and private (``_x``) ones."""
    sig = inspect.signature(cls.__init__)
    return [p for p in list(sig.parameters.values())[1:]
            if not p.name.startswith("_")
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _field_for(obj, param: str) -> str:
    """The attribute that stores constructor argument ``param``: the field of the same name, or
    ``param_`` (PureDP / EpsDelta store ``epsilon_`` since ``epsilon()`` is a query)."""
    names = {f.name for f in dataclasses.fields(obj)}
    for cand in (param, param + "_"):
        if cand in names:
            return cand
    raise ValueError(f"cannot serialise {type(obj).__name__}: its constructor argument "
                     f"{param!r} is not stored in a field ({param!r} or {param + '_'!r})")


def _encode(value, where: str):
    if isinstance(value, enum.Enum):
        return {"enum": type(value).__name__, "value": value.value}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (Integral, np.integer)):
        return int(value)
    if isinstance(value, (Real, np.floating)):
        x = float(value)
        if math.isnan(x):
            raise ValueError(f"cannot serialise {where}: it is nan")
        return x if math.isfinite(x) else {"float": "inf" if x > 0 else "-inf"}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise ValueError(f"cannot serialise {where}: array of dtype {value.dtype}")
        return {"ndarray": [_encode(v, where) for v in value.ravel().tolist()],
                "shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, (tuple, list)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if callable(value):
        raise ValueError(f"cannot serialise {where}: it is a Python callable ({value!r}); "
                         "only mechanisms described by parameters can be written to JSON "
                         "(e.g. describe an RDPCurve's mechanism by its family instead)")
    raise ValueError(f"cannot serialise {where}: unsupported value of type "
                     f"{type(value).__name__}")


def to_dict(obj) -> dict:
    """``{"type": ClassName, **constructor arguments}`` of a mechanism or sampling scheme,
    recursively (JSON-ready: only dicts, lists, str, numbers, bools and None)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise ValueError(f"cannot serialise {type(obj).__name__}: only dpamp mechanisms and "
                         "sampling schemes (dataclasses) can be written to JSON")
    name = type(obj).__name__
    out = {"type": name}
    for p in _init_params(type(obj)):
        value = getattr(obj, _field_for(obj, p.name))
        # an argument left at its default is omitted: shorter documents that stay readable when
        # a class gains optional parameters (e.g. Poisson's population for Balle et al. 2018, Thm
        # 14)
        if p.default is not inspect.Parameter.empty and p.default is None and value is None:
            continue
        out[p.name] = _encode(value, f"{name}.{p.name}")
    return out


def to_json(obj: Mechanism | SamplingScheme, indent: int | None = None) -> str:
    """JSON text of a mechanism, composition or sampling scheme (see the module docstring)."""
    return json.dumps(to_dict(obj), indent=indent, allow_nan=False)


def _decode(value, reg, where: str, depth: int = 0):
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: the document is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, list):
        return tuple(_decode(v, reg, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    if not isinstance(value, dict):
        return value
    if "type" in value:
        return _build(value, reg, where, depth + 1)
    if set(value) == {"enum", "value"}:
        cls = _enums().get(value["enum"]) if isinstance(value["enum"], str) else None
        if cls is None:
            raise ValueError(f"{where}: unknown enum {value['enum']!r}")
        try:
            return cls(value["value"])
        except (ValueError, TypeError):
            raise ValueError(f"{where}: {value['value']!r} is not a {value['enum']}") from None
    if set(value) == {"float"}:
        if value["float"] not in ("inf", "-inf"):
            raise ValueError(f"{where}: 'float' must be 'inf' or '-inf' (got {value['float']!r})")
        return float(value["float"])
    if set(value) == {"ndarray", "shape", "dtype"}:
        return _decode_array(value, reg, where, depth)
    raise ValueError(f"{where}: an object needs a 'type' (a dpamp class), or is one of "
                     f"{{'enum','value'}}, {{'float'}}, {{'ndarray','shape','dtype'}} "
                     f"(got keys {sorted(value)})")


def _decode_array(value, reg, where: str, depth: int) -> np.ndarray:
    """A numeric array: a flat list of numbers, a shape and a dtype that ``_encode`` writes
    (booleans, integers, floats)."""
    flat, shape, dtype = value["ndarray"], value["shape"], value["dtype"]
    if not isinstance(flat, list):
        raise ValueError(f"{where}: 'ndarray' must be a flat list of numbers")
    if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                            and n >= 0 for n in shape)):
        raise ValueError(f"{where}: 'shape' must be a list of integers >= 0 (got {shape!r})")
    try:
        dt = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biuf":
        raise ValueError(f"{where}: 'dtype' must name a boolean, integer or float dtype "
                         f"(got {dtype!r})")
    items = [_decode(v, reg, where, depth + 1) for v in flat]
    if not all(isinstance(v, (int, float)) for v in items):
        raise ValueError(f"{where}: 'ndarray' must hold numbers only")
    try:
        return np.array(items, dtype=dt).reshape(shape)
    except (ValueError, OverflowError) as e:
        raise ValueError(f"{where}: cannot build an array of shape {shape} and dtype {dtype} "
                         f"from {len(items)} values ({e})") from None


def _build(d: dict, reg, where: str, depth: int = 0):
    name = d["type"]
    if not isinstance(name, str):
        raise ValueError(f"{where}: 'type' must be a class name (a string), got {name!r}")
    if name not in reg:
        raise ValueError(f"{where}: unknown type {name!r}; known: {sorted(reg)}")
    cls = reg[name]
    if cls is None:
        raise ValueError(f"{where}: type name {name!r} is defined by more than one class")
    params = {p.name for p in _init_params(cls)}
    extra = set(d) - params - {"type"}
    if extra:
        raise ValueError(f"{where}: unknown key(s) {sorted(extra)} for {name}; "
                         f"expected {sorted(params)}")
    kwargs = {k: _decode(v, reg, f"{where}.{k}", depth + 1) for k, v in d.items() if k != "type"}
    try:
        return cls(**kwargs)
    except (TypeError, AttributeError, KeyError, IndexError, OverflowError) as e:
        # a missing argument, or a value of the wrong kind that the constructor did not expect
        raise ValueError(f"{where}: cannot build {name}: {e}") from None


def from_dict(d: dict):
    """Inverse of :func:`to_dict`."""
    if not isinstance(d, dict) or "type" not in d:
        raise ValueError("expected a JSON object with a 'type' key (a dpamp mechanism)")
    return _build(d, registry(), d["type"] if isinstance(d["type"], str) else "document")


def _no_constant(token: str):
    raise ValueError(f"not valid JSON: {token} is not a JSON number (write infinities as "
                     '{"float": "inf"}; NaN is never a valid parameter)')


def from_json(text: str | bytes) -> Mechanism | SamplingScheme:
    """Inverse of ``x.to_json()``: ``dp.from_json(x.to_json()) == x``. ``text`` is a JSON
    document (str, or UTF-8 bytes)."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise ValueError(f"text must be a JSON string (got {type(text).__name__}); to decode "
                         "an already parsed document use dpamp.io.serialize.from_dict")
    try:
        d = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"text is not UTF-8 JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"the document is nested more than {MAX_DEPTH} levels deep "
                         "(too deep for the JSON parser)") from None
    return from_dict(d)
