"""The declared protocol: what a mechanism family and a sampling scheme provide, in one place.

A mechanism *family* (a :class:`~dpamp.mechanisms.base.Mechanism` subclass) is declared once,
with :func:`declare`, by a :class:`Family` record of hooks: how it yields each representation
it has (its dominating privacy-loss pair, privacy-profile pair, zCDP rho) and its words (the plan
word and keys, the dp-accounting event, a one-line description). The Rényi-DP curve and the pure
epsilon stay methods of the class (``_rdp``, ``pure_epsilon``): they are formulas of the
description's own parameters. A *sampling scheme* is declared with :func:`declare_scheme` by an
:class:`Amplification` record: how it amplifies each representation of the mechanism it
subsamples.

The layers that compute (``pld``, ``profiles``, ``theorems``, ``io``) look a family up here and
never switch on concrete mechanism classes; :func:`supports` answers "does this family have
representation X" from the declarations alone, without computing anything. The declarations of
dpamp's own families live in :mod:`dpamp.families`, one module per family, above the
representation layers they call into (the describe layer below never imports them).

The model is numpy's ``_polybase`` (the hooks a new type provides, in one list) and
dp-accounting's split of events (what ran) from accountants (how it is accounted).
"""
from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Any, Callable, Iterator

__all__ = ["Rep", "Support", "Family", "Amplification", "EpochAmplification", "ProfileHooks",
           "declare", "is_binary", "describe",
           "declare_scheme", "family_of", "amplification_of", "families", "schemes",
           "supports_rep"]


class Rep(enum.Enum):
    """The representations a family may have."""

    RDP = "rdp"            #: Rényi-DP curve epsilon(alpha) (``Mechanism._rdp``)
    LOSS = "loss"          #: dominating privacy-loss pair: a PLD source, upper and lower
    PROFILE = "profile"    #: privacy-profile pair (hockey-stick curves of the dominating pair)
    ZCDP = "zcdp"          #: a zCDP rho
    PURE = "pure"          #: a finite pure epsilon


@dataclasses.dataclass(frozen=True)
class Support:
    """A yes, or a no with the reason. ``bool(s)`` is the answer."""

    ok: bool
    why: str = ""

    def __bool__(self) -> bool:
        return self.ok

    @classmethod
    def yes(cls, why: str = "") -> Support:
        return cls(True, why)

    @classmethod
    def no(cls, why: str) -> Support:
        return cls(False, why)


@dataclasses.dataclass(frozen=True)
class ProfileHooks:
    """The privacy-profile handlers of a family (log of the hockey-stick rows, see
    :mod:`dpamp.profiles.core` for the conventions): ``pair(m, eps)`` the two upper rows,
    ``lower(m, eps)`` the rows of one actual pair or None, ``group(m, k, eps)`` the k-group
    curve (None: the black-box bound), ``binary(m)`` randomized response of a bit (Balle et al.
    2018, Lemma 12 applies), ``symmetric(m)`` both rows are one curve by construction."""

    pair: Callable[..., Any]
    lower: Callable[..., Any] | None = None
    group: Callable[..., Any] | None = None
    binary: Callable[[Any], bool] | None = None
    symmetric: Callable[[Any], bool] | None = None
    source: str = "Balle, Barthe & Gaboardi 2018, Sec. 2 (privacy profile)"


@dataclasses.dataclass(frozen=True)
class Family:
    """How one mechanism class yields its representations and its words.

    Hooks take the mechanism; a hook left None means the family does not have that
    representation (``supports`` says so with ``why_not``).

    - ``loss(m)``: the dominating privacy-loss pair as a PLD source (:mod:`dpamp.pld.loss`),
      from which the PLD method builds both the pessimistic and the optimistic discretisation;
    - ``profile``: :class:`ProfileHooks`;
    - ``zcdp(m)``: rho, or None where the instance has none;
    - ``gaussian_mu(m)``: the mechanism is the Gaussian mechanism N(0, 1) vs N(mu, 1) (its
      parts merge exactly, Steinke 2022, Cor. 8; Poisson sampling has an exact fractional series);
    - ``poisson_gaussian(m)``: (mu, q) where the mechanism is that Gaussian mechanism under
      Poisson sampling of rate q with add/remove (its loss is ``gaussian(mu).poisson(q)``;
      many such parts are built together), else None;
    - ``loss_parts(m)``: [(PLD source, count)] for a mechanism that is a product of parts
      of its own (an epoch of random allocation), instead of one ``loss``;
    - ``eps_delta(m)``: the (eps, delta) guarantee it is stated by, where that is its
      description (an (eps, delta) mechanism; pure families give (pure epsilon, 0) anyway);
    - ``additive_noise(m)``: ("gaussian" | "laplace", noise scale, sensitivity) of a query
      plus continuous noise on the real line (the couplings of amplification by mixing and
      the Bernoulli witnesses use the noise law itself);
    - ``group(m, k)``: the same family on a k-record group, where that is again one of its
      mechanisms (a sum query's sensitivity times k: Gaussian, Laplace, discrete Laplace);
    - ``has(m, rep)``: a per-instance answer for families whose support depends on their
      parameters or parts (a subsampled mechanism: its base and scheme), else None;
    - ``word``, ``keys``, ``from_words(reader, stage_index, stage, relation)``: the plan / CLI
      word, the stage keys it takes, and how to build one step from them;
    - ``whole_run``: the mechanism ``from_words`` builds is the stage's whole run of ``steps``
      steps (it reads them itself: a matrix mechanism), so the stage runs it once;
    - ``bounded_range(m)``: eps where the mechanism is eps-bounded-range (its privacy loss on
      every pair of neighbours lies in an interval of width eps; Durfee & Rogers 2019), else
      None: the ``bounded-range`` method composes such mechanisms optimally (Dong, Durfee &
      Rogers 2020; :mod:`dpamp.theorems.bounded_range`);
    - ``event`` (a dp-accounting event class name), ``from_event(event, relation,
      sensitivity)`` and ``to_event(m)``; a family that runs another mechanism (a field
      ``base``: subsampled, repeat-and-select) reads and writes an event that wraps another,
      so it is handed the inner one: ``from_event(event, relation, sensitivity, inner)``
      gets the wrapped event's mechanism, ``to_event(m, inner)`` the base's event
      (:mod:`dpamp.io.dp_events` walks the nesting);
    - ``describe(m)``: the words of a report row ("Gaussian noise, sigma 1.1, sensitivity 1");
    - ``example(relation)``: a typical instance under ``relation`` (the capability matrix);
    - ``own_samplers()``: for a family whose sampling is one of its own parameters (a matrix
      mechanism's participation, user-level DP-SGD's sampling), typical instances by sampler
      label: the capability matrix's table of such families.
    """

    name: str
    loss: Callable[[Any], Any] | None = None
    profile: ProfileHooks | None = None
    zcdp: Callable[[Any], float | None] | None = None
    has: Callable[[Any, Rep], Support | None] | None = None
    loss_parts: Callable[[Any], Any] | None = None
    eps_delta: Callable[[Any], tuple[float, float]] | None = None
    additive_noise: Callable[[Any], tuple[str, float, float]] | None = None
    group: Callable[[Any, int], Any] | None = None
    gaussian_mu: Callable[[Any], float] | None = None
    bounded_range: Callable[[Any], float | None] | None = None
    poisson_gaussian: Callable[[Any], tuple[float, float] | None] | None = None
    word: str | None = None
    keys: tuple[str, ...] = ()
    from_words: Callable[..., Any] | None = None
    whole_run: bool = False
    event: str | None = None
    from_event: Callable[..., Any] | None = None
    to_event: Callable[..., Any] | None = None
    describe: Callable[[Any], str] | None = None
    example: Callable[[Any], Any] | None = None
    own_samplers: Callable[[], dict[str, Any]] | None = None
    why_not: str = ""


@dataclasses.dataclass(frozen=True)
class Amplification:
    """How a sampling scheme amplifies each representation of the mechanism ``sub.base`` it
    subsamples (hooks take the :class:`~dpamp.mechanisms.subsampled.Subsampled`):

    - ``has_rdp(sub)``: whether an RDP curve is sound here (a Support);
    - ``log_moments(sub, orders)``: K(alpha - 1) = (alpha - 1) eps(alpha) at integer orders;
    - ``extra_rdp(sub, a)``: further upper curves at real orders (inf where none), or None;
    - ``rdp_lower(sub, alpha)``: a proven lower curve, or None;
    - ``pure_epsilon(sub)``: the amplified pure epsilon;
    - ``loss(sub, base_loss)``: the subsampled PLD source from the base's, or None to fall back
      on the profile;
    - ``profile_pair(sub, eps)``, ``profile_symmetric(sub)``, ``member_gamma(scheme)``;
    - ``crude_log_mgf(sub, t)``: a log-MGF bound of the privacy loss by joint convexity over a
      coupling of the samples (None where the scheme's own RDP moments apply);
    - ``u_minus_i``: the U_{-i} coupling of Steinke 2022, Thm 29 is established for the scheme;
    - ``check(sub)``: raises ValueError when the scheme cannot amplify this base (called when
      the subsampled mechanism is built), or None;
    - ``rdp_cap(sub)``: the mechanism whose RDP curve caps the amplified one, where that is not
      the base (a truncated batch can move a sum by twice the base's sensitivity), or None.
    """

    name: str
    has_rdp: Callable[[Any], Support]
    log_moments: Callable[[Any, Any], Any]
    pure_epsilon: Callable[[Any], float]
    profile_pair: Callable[[Any, Any], Any]
    profile_symmetric: Callable[[Any], bool]
    member_gamma: Callable[[Any], float]
    extra_rdp: Callable[[Any, Any], Any] | None = None
    rdp_lower: Callable[[Any, Any], Any] | None = None
    loss: Callable[[Any, Any], Any] | None = None
    profile_source: Callable[[Any], str] = lambda sub: "Balle, Barthe & Gaboardi 2018"
    crude_log_mgf: Callable[[Any, Any], Any] | None = None
    u_minus_i: bool = False
    check: Callable[[Any], None] | None = None
    rdp_cap: Callable[[Any], Any] | None = None


@dataclasses.dataclass(frozen=True)
class EpochAmplification:
    """How a scheme that draws a whole epoch at once (``per_epoch``: random allocation,
    shuffling) accounts for one epoch ``alloc`` (an :class:`~dpamp.mechanisms.allocated.
    Allocated`): ``check(scheme)`` validates what the accounting needs, ``rdp(alloc, alpha)``,
    ``pure_epsilon(alloc)``, ``loss_parts(alloc)`` -> [(PLD source, count)], ``has(alloc,
    rep)`` -> Support, and ``describe(scheme)``."""

    name: str
    rdp: Callable[[Any, Any], Any]
    pure_epsilon: Callable[[Any], float]
    loss_parts: Callable[[Any], Any]
    has: Callable[[Any, Rep], Support | None]
    check: Callable[[Any], None] | None = None
    dominating_step: Callable[[Any], Any] | None = None
    #: each epoch permutes the dataset into fixed-size batches (Chua et al. 2024's lower
    #: bound for Gaussian steps applies)
    reshuffles: bool = False


_FAMILIES: dict[type, Family] = {}
_SCHEMES: dict[type, Amplification | EpochAmplification] = {}
_lock = threading.Lock()


def declare(cls: type, family: Family) -> Family:
    """Declare ``cls``'s family (once; a second declaration of the same class is an error)."""
    with _lock:
        if cls in _FAMILIES and _FAMILIES[cls] != family:
            raise ValueError(f"{cls.__name__} is declared twice")
        _FAMILIES[cls] = family
    return family


def declare_scheme(cls: type, amplification: Amplification | EpochAmplification):
    with _lock:
        if cls in _SCHEMES and _SCHEMES[cls] != amplification:
            raise ValueError(f"{cls.__name__} is declared twice")
        _SCHEMES[cls] = amplification
    return amplification


_declared = False


def _ensure_declared() -> None:
    """Load dpamp's own declarations (``dpamp.families``) on the first lookup, through the
    door (they sit above the representation layers they call). Thread-safe: a second thread
    waits on the import until the package has run."""
    global _declared
    if not _declared:
        from ..core import door
        door.call("declare_families")
        _declared = True


def _lookup(table: dict, cls: type):
    _ensure_declared()
    for c in cls.__mro__:
        hit = table.get(c)
        if hit is not None:
            return hit
    return None


def family_of(mechanism: Any) -> Family | None:
    """The declared family of a mechanism (by its class, then its bases), or None."""
    return _lookup(_FAMILIES, type(mechanism))


def amplification_of(scheme: Any) -> Any:
    """The declared amplification of a sampling scheme, or None."""
    return _lookup(_SCHEMES, type(scheme))


def families() -> Iterator[tuple[type, Family]]:
    _ensure_declared()
    return iter(list(_FAMILIES.items()))


def schemes() -> Iterator[tuple[type, Amplification | EpochAmplification]]:
    _ensure_declared()
    return iter(list(_SCHEMES.items()))


_HOOK = {Rep.LOSS: ("loss", "loss_parts"), Rep.PROFILE: ("profile",), Rep.ZCDP: ("zcdp",)}


def supports_rep(mechanism: Any, rep: Rep) -> Support:
    """Whether ``mechanism`` has representation ``rep``, from the declarations alone (nothing
    is computed): the family's per-instance ``has`` where it answers, else the presence of its
    hook (RDP and pure epsilon: the class's ``has_rdp`` / finite ``pure_epsilon``, which are
    formulas of the parameters)."""
    fam = family_of(mechanism)
    name = type(mechanism).__name__
    if fam is not None and fam.has is not None:
        answer = fam.has(mechanism, rep)
        if answer is not None:
            return answer
    if rep is Rep.RDP:
        return Support.yes() if mechanism.has_rdp() else \
            Support.no(f"{name} has no Rényi-DP curve")
    if rep is Rep.PURE:
        try:
            finite = mechanism.pure_epsilon() < float("inf")
        except (NotImplementedError, ValueError):
            finite = False
        return Support.yes() if finite else Support.no(f"{name} is not pure DP")
    if fam is None:
        return Support.no(f"{name} declares no family (dpamp.mechanisms.family.declare)")
    if all(getattr(fam, hook) is None for hook in _HOOK[rep]):
        return Support.no(fam.why_not or f"{fam.name} declares no {rep.value} representation")
    return Support.yes()


def is_binary(mechanism: Any) -> bool:
    """Randomized response of a {0,1}-valued statistic (its family's ``profile.binary``): every
    output distribution is one of two fixed ones, so Balle et al. 2018, Lemma 12 gives its exact
    subsampled profile under any scheme and its RDP stays a mixture of its own pair."""
    fam = family_of(mechanism)
    hooks = None if fam is None else fam.profile
    return bool(hooks is not None and hooks.binary is not None and hooks.binary(mechanism))


def describe(mechanism: Any) -> str:
    """The family's words for one mechanism (a report row); a composition in its parts' words
    ("4688 steps of Gaussian, ..."); else its repr."""
    fam = family_of(mechanism)
    if fam is not None and fam.describe is not None:
        return fam.describe(mechanism)
    parts = mechanism.parts() if hasattr(mechanism, "parts") else ((mechanism, 1),)
    if len(parts) > 1 or parts[0][0] is not mechanism:
        return "; then ".join(f"{c} step{'s' * (c != 1)} of {describe(m)}" for m, c in parts)
    return repr(mechanism)
