"""The registry of accounting methods behind ``x.epsilon(delta)`` and ``x.delta(epsilon)``.

A method is a pair of functions (epsilon query, delta query) plus a predicate saying whether it
applies to a mechanism. Other modules register theirs (PLD, zCDP, composition theorems, ...);
``method="auto"`` runs the applicable method of highest rank (tightest first).
"""
from __future__ import annotations

import dataclasses
import math
import threading
from typing import TYPE_CHECKING, Callable

from ..core import validate as V
from ..core.errors import OutOfReach
from ..core.guarantee import Guarantee
from ..mechanisms.family import Rep, Support, family_of, supports_rep

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    epsilon: Callable[..., Guarantee]
    delta: Callable[..., Guarantee]
    applies: Callable[[object], bool]
    rank: int = 100  # lower = preferred by "auto"
    summary: str = ""
    options: tuple[str, ...] = ()  # the keyword options its queries take (e.g. "tol")
    #: yes, or no with the reason, from the declarations alone (dpamp.mechanisms.family);
    #: None: ``applies`` decides (a cheap predicate of the mechanism)
    supports: Callable[[object], Support] | None = None


_REGISTRY: dict[str, Method] = {}

#: the names of the methods the plugins register, known without importing them (the command
#: line checks ``--method`` before any heavy import; tests/test_cli check they agree)
METHOD_NAMES = ("auto", "bounded-range", "noise-split", "conditional-composition", "mixing",
                "profile", "pld", "rdp", "rdp-classic", "zcdp", "kov", "advanced", "basic")

#: one line on each method, known without importing it (``dpamp methods`` prints them)
SUMMARIES = {
    "bounded-range": "adaptive compositions of eps-bounded-range mechanisms (exponential "
                     "mechanism): optimal, by dynamic programming (Dong, Durfee & Rogers 2020)",
    "noise-split": ("matrix mechanisms under Poisson sampling or balls in bins: the smaller of "
                    "the noise split (DP-SGD or random allocation at per-step sensitivities) "
                    "and no-amplification, with a proven lower end"),
    "conditional-composition": ("matrix mechanisms under Poisson sampling or balls in bins: "
                                "the smallest of conditional composition (Choquette-Choo, "
                                "Ganesh, Steinke & Thakurta 2024), the noise split and "
                                "no-amplification"),
    "mixing": ("amplification by post-processing with a mixing kernel (Balle, Barthe, Gaboardi & "
               "Geumlek 2019, Thm 1)"),
    "profile": ("exact privacy profile of one mechanism (Balle, Barthe & Gaboardi 2018, Thms 3-4, "
                "8-14)"),
    "pld": "privacy-loss distributions: certified tight bracket (Steinke 2022, Sec. 3-4)",
    "rdp": "Rényi DP, improved conversion (Steinke 2022, Lemma 33.8)",
    "rdp-classic": "Rényi DP, classic conversion (Wang, Balle & Kasiviswanathan 2019, Lemma 6)",
    "zcdp": "zero-concentrated DP: rho adds, improved conversion (Steinke 2022, Prop. 14)",
    "kov": "optimal homogeneous (eps, delta) composition (Steinke 2022, Sec. 7, KOV15)",
    "advanced": "advanced composition (Steinke 2022, Thms 18, 22)",
    "basic": "basic composition (Steinke 2022, Thm 1)",
}


def register(method: Method) -> Method:
    if not method.summary:
        method = dataclasses.replace(method, summary=SUMMARIES.get(method.name, ""))
    _REGISTRY[method.name] = method
    return method


def available(mechanism: Mechanism | None = None) -> list[str]:
    return list(_applicable(mechanism))


def _applicable(mechanism: Mechanism | None = None):
    """The names of :func:`available`, in rank order, each decided when it is reached (auto
    asks the next one only where the one before could not answer)."""
    _load_plugins()
    for m in sorted(_REGISTRY.values(), key=lambda m: m.rank):
        if mechanism is None or _safe_applies(m, mechanism):
            yield m.name


def _safe_applies(m: Method, mechanism) -> bool:
    if m.supports is not None:
        return bool(m.supports(mechanism))
    try:
        return bool(m.applies(mechanism))
    except Exception:  # a predicate that cannot decide does not apply
        return False


def supports(mechanism: Mechanism, method: str) -> Support:
    """Whether ``method`` applies to ``mechanism``: yes, or no with the reason. Decided from
    what the families and schemes declare (:mod:`dpamp.mechanisms.family`), without building a
    representation, for the methods that declare it (rdp, pld, profile); the others answer by
    their cheap predicate."""
    _load_plugins()
    if method not in _REGISTRY:
        raise ValueError(f"method must be one of {sorted(_REGISTRY)} (got {method!r})")
    m = _REGISTRY[method]
    if m.supports is not None:
        return m.supports(mechanism)
    if _safe_applies(m, mechanism):
        return Support.yes()
    return Support.no(f"{method}: its conditions do not hold for this mechanism")


def parts_support(mechanism, rep: Rep, method: str) -> Support:
    """Every part of the composition has ``rep`` (the first one that has not, with why)."""
    for part, count in mechanism.parts():
        if count > 0:
            s = supports_rep(part, rep) if _declared(part) else _built(part, rep)
            if not s:
                return Support.no(f"{method}: {s.why}")
    return Support.yes()


def _declared(part) -> bool:
    """Declared all the way down (a subsampled or epoch mechanism: its base too)."""
    while part is not None:
        if family_of(part) is None:
            return False
        part = getattr(part, "base", None)
    return True


def _built(part, rep: Rep) -> Support:
    """A mechanism of a family not declared yet (the post-processing families of
    dpamp.amplification): whether the representation builds, by building it."""
    if rep is Rep.RDP:
        ok = part.has_rdp()
    else:
        from ..pld.sources import has_pld
        ok = has_pld(part)
    return Support.yes() if ok else Support.no(
        f"{type(part).__name__} has no {'Rényi-DP curve' if rep is Rep.RDP else 'PLD'}")


def _pick(mechanism, method: str) -> Method:
    _load_plugins()
    if not isinstance(method, str):
        raise ValueError(f"method must be a method name, one of {['auto'] + available()} "
                         f"(got {method!r})")
    if method == "auto":
        for name in available(mechanism):
            return _REGISTRY[name]
        raise ValueError(f"no accounting method applies to {mechanism!r}")
    if method not in _REGISTRY:
        raise ValueError(f"method must be one of {['auto'] + available()} (got {method!r})")
    m = _REGISTRY[method]
    if not _safe_applies(m, mechanism):
        why = supports(mechanism, method).why
        raise ValueError(f"method {method!r} does not apply to this {type(mechanism).__name__} "
                         f"({why}); applicable: {', '.join(available(mechanism)) or 'none'}")
    return m


def _check_options(options: dict) -> None:
    """Unknown options are errors (a misspelt ``tolerance=`` must not be ignored): a TypeError
    naming the option and listing the valid ones. An option that some method takes is valid
    with any method (a plan's or comparison's options go to every method); each method is given
    only its own."""
    if not options:
        return
    _load_plugins()
    valid = sorted({o for m in _REGISTRY.values() for o in m.options})
    unknown = sorted(set(options) - set(valid))
    if unknown:
        owners = {o: [m.name for m in _REGISTRY.values() if o in m.options] for o in valid}
        listed = "; ".join(f"{o} ({', '.join(owners[o])})" for o in valid) or "none"
        raise TypeError(f"unknown option{'s' * (len(unknown) > 1)} {', '.join(unknown)}; "
                        f"valid options: {listed}")


def epsilon(mechanism, delta, method: str = "auto", **options) -> Guarantee:
    d = V.delta(delta, allow_zero=True)
    _check_options(options)
    return _run(mechanism, method, lambda m: m.epsilon(mechanism, d, **_own(m, options)))


def delta(mechanism, epsilon, method: str = "auto", **options) -> Guarantee:
    e = V.real("epsilon", epsilon, low=0.0, allow_inf=False)
    _check_options(options)
    return _run(mechanism, method, lambda m: m.delta(mechanism, e, **_own(m, options)))


def _own(m: Method, options: dict) -> dict:
    return {k: v for k, v in options.items() if k in m.options}


def _run(mechanism, method: str, query) -> Guarantee:
    """The named method's answer; for "auto", the first applicable method in rank order that
    can answer this query. A method that is out of reach (OutOfReach) or fails numerically
    (overflow, a grid too large for memory: reported as OutOfReach) is passed over by "auto",
    which says so in the Guarantee's ``note``; a named method's OutOfReach propagates."""
    if method != "auto":
        return witness_lower(mechanism, _ask(_pick(mechanism, method), query))
    # (the applicable methods in rank order, each decided when reached: _pick's "auto" is the
    # first of them)
    refused, skipped, tried = None, [], False
    for name in _applicable(mechanism):
        tried = True
        try:
            g = witness_lower(mechanism, _ask(_REGISTRY[name], query))
        except OutOfReach as e:
            refused = refused or e
            skipped.append(f"{name} could not answer ({_first_line(e)})")
            continue
        if skipped:
            g = dataclasses.replace(g, note="; ".join(
                [g.note] * bool(g.note) + [f"auto: {s}; answered by {name}" for s in skipped]))
        if g.tol_met is False or g.value == math.inf:
            # (an infinite upper bound, e.g. a closed form overflowing at sigma 1e-150, is an
            # answer that another method may improve on: RDP's stays finite there)
            g = _best_upper(mechanism, g, name, query)
        return g
    if not tried:
        raise ValueError(f"no accounting method applies to {mechanism!r}")
    assert refused is not None      # a method applies, and every one was out of reach
    raise refused


def _best_upper(mechanism, g: Guarantee, name: str, query) -> Guarantee:
    """auto, where ``name`` gave a bracket short of its tol: the next method that answers may
    prove a smaller upper bound (e.g. RDP where the PLD's grid cannot resolve the plan). Both
    are proven, so the smaller upper bound and the larger lower bound stand together. A next
    method that cannot answer leaves ``g`` as it is (it is an answer already)."""
    names = available(mechanism)
    for other in names[names.index(name) + 1:]:
        try:
            h = witness_lower(mechanism, _ask(_REGISTRY[other], query))
        except (OutOfReach, ValueError, NotImplementedError):
            continue
        if h.value < g.value:
            lows = [v for v in (g.lower, h.lower) if v is not None]
            field = "epsilon" if g.query == "epsilon" else "delta"
            from ..core.rounding import round_up
            g = dataclasses.replace(
                g, **{field: h.value}, lower=max(lows) if lows else None, method=other,  # type: ignore[arg-type]  # epsilon or delta: a float
                source=f"{h.source}; lower bound: {g.source}",
                note="; ".join([g.note] * bool(g.note) + [
                    f"auto: the upper bound is {other}'s ({round_up(h.value, 6)}), smaller "
                    f"than {name}'s ({round_up(g.value, 6)}); the lower bound is the larger of "
                    "both"]))
        return g
    return g


def _ask(m: Method, query) -> Guarantee:
    """One method's answer; its numerical failures become OutOfReach, naming the method."""
    try:
        return query(m)
    except MemoryError as e:
        raise OutOfReach(f"method {m.name!r} would need more memory than it may use "
                         f"({e or 'allocation refused'})") from None
    except ArithmeticError as e:
        raise OutOfReach(f"method {m.name!r} failed numerically ({type(e).__name__}: {e})") \
            from None
    except NotImplementedError as e:
        # a declaration said yes and the representation could not be built after all (a
        # corner the declarations do not see): auto passes over it to the next method
        raise OutOfReach(f"method {m.name!r} could not build its representation ({e})") \
            from None


def _first_line(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def witness_lower(mechanism, g: Guarantee) -> Guarantee:
    """``g`` with ``lower`` raised to what the mechanism's witness proves, where that is more
    (``Mechanism.witnesses``: mechanisms whose one pair of outputs is known exactly and is
    attained by this mechanism on some pair of neighbours, so their true epsilon(delta) is at
    most this one's; the best is kept). A witness's own bracket comes from the PLD method.

    Rounding: every atom of the witness's T-fold product pair carries a relative error of at
    most eta = expm1(sum of count x rel_err over its parts). In
    delta(eps) = sum_i (P_i - e^eps Q_i)_+ only atoms with e^eps Q_i <= P_i (1 + eta)/(1 - eta)
    count, each moving by at most eta (P_i + e^eps Q_i) <= 2 eta P_i / (1 - eta), so delta moves
    by at most 3 eta in all (eta < 1/4). So for an epsilon query the witness is asked at
    delta + 3 eta (a lower epsilon there is a lower epsilon at delta), and for a delta query
    its lower delta is reduced by 3 eta."""
    from .sampler_lower import sampler_lower
    g = sampler_lower(mechanism, g)
    try:
        ws = mechanism.witnesses()
    except (ValueError, NotImplementedError):
        return g
    best, why = g.lower, None
    for w in ws:
        low = _witness_bound(w, g)
        if low is not None and (best is None or low > best):
            best, why = low, "; ".join(sorted({part.source for part, _ in w.parts()}))
    if why is None:
        return g
    return dataclasses.replace(g, lower=best, source=f"{g.source}; lower bound: {why}")


def _witness_bound(w, g: Guarantee):
    """The lower bound one witness gives for the query answered by ``g`` (see
    :func:`witness_lower`), or None."""
    eta = math.expm1(sum(count * part.rel_err for part, count in w.parts()))
    if not eta < 0.25:
        return None
    try:
        if g.query == "epsilon":
            d_star = g.delta + 3.0 * eta
            if d_star >= 1.0:
                return None
            low = _REGISTRY["pld"].epsilon(w, d_star).lower
            return None if low is None else min(low, g.epsilon)
        low = _REGISTRY["pld"].delta(w, g.epsilon).lower
        return None if low is None else min(max(low - 3.0 * eta, 0.0), g.delta)
    except (OutOfReach, ValueError, NotImplementedError, KeyError):
        return None


_PLUGINS = tuple(f"dpamp.accounting.methods.{name}"
                 for name in ("rdp", "pld", "zcdp", "theorems", "profile", "mixing",
                              "bounded_range", "conditional", "noise_split"))
_loaded = False
#: held while the method modules are imported: a thread that finds the registry not yet loaded
#: waits for the one loading it (marked loaded only once every module has registered; before,
#: the first queries of 8 threads at once saw a half-filled registry and answered by RDP or
#: refused). An RLock: a method module's import may itself ask the registry.
_load_lock = threading.RLock()


def _load_plugins():
    """Import the modules that register methods (lazily, to keep ``import dpamp`` light)."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        import importlib
        for mod in _PLUGINS:
            try:
                importlib.import_module(mod)
            except ModuleNotFoundError as e:  # a method family not built yet
                if e.name != mod:
                    raise
        _loaded = True
