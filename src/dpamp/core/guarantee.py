"""The answer type of every privacy query."""
from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta)-DP statement about a mechanism or composition.

    ``epsilon``/``delta``: the proven upper bound (the guarantee itself).
    ``lower``: a proven lower bound on the *true* value of the queried quantity (epsilon for an
    epsilon(delta) query, delta for a delta(epsilon) query) where the method gives one, else None.
    ``method``: which accounting method produced it; ``source``: paper and theorem;
    ``note``: what the accountant did on the way, where it matters (e.g. ``method="auto"``
    passing over a method that could not answer this query, and why). ``tol_met``: whether
    the method met its tolerance (None for methods without one); ``tol_why`` (and
    ``tol_missed``) why not, where it did not; ``width``: upper - lower.

    It behaves like the number it answers where that is what a caller wants: ``float(g)`` and
    format specs (``f"{g:.3f}"``) give the queried value (epsilon for an epsilon query, delta
    for a delta query) -- a format spec rounds to nearest, so print with ``str(g)`` (rounded
    outwards) where the printed number must stay proven; the fields are plain Python floats.
    """

    epsilon: float
    delta: float
    lower: float | None = None
    method: str = ""
    source: str = ""
    query: str = "epsilon"  # which of epsilon/delta was computed (the other was given)
    note: str = ""
    #: whether the method met its tolerance (None: it has none); where it did not, ``tol_why``
    #: says which method and why (the bounds are proven either way, only wider)
    tol_met: bool | None = None
    tol_why: str = ""

    def __post_init__(self):
        # sources in authors-and-year words, whatever the method wrote (core.citations)
        from .citations import cite
        object.__setattr__(self, "source", cite(self.source))
        object.__setattr__(self, "note", cite(self.note))
        object.__setattr__(self, "tol_why", cite(self.tol_why))
        # plain Python floats in the fields (numpy scalars leak from the methods' arithmetic)
        for name in ("epsilon", "delta", "lower"):
            v = getattr(self, name)
            if v is not None and type(v) is not float:
                object.__setattr__(self, name, float(v))
        # the bracket is checked where every answer is made: lower <= upper by construction,
        # so a violation beyond rounding of the last digits is a bug, never printed
        low, up = self.lower, self.value
        if low is not None and low > up:
            if low > up * (1 + 1e-9) + 1e-300:
                from .errors import SoundnessError
                raise SoundnessError(
                    f"internal error: proven lower bound {low!r} above the proven upper bound "
                    f"{up!r} of {self.query} ({self.method}); please report this plan")
            object.__setattr__(self, "lower", up)       # equal up to rounding

    @property
    def tol_missed(self) -> str:
        """Why the bracket stopped short of the method's tolerance ("" where it met it, or
        has none): what every output prints beside the numbers."""
        return self.tol_why if self.tol_met is False else ""

    @property
    def why_method(self) -> str:
        """Why a method other than the default answered (``method="auto"`` passing over one
        that could not answer, or taking another's smaller upper bound): the ``auto:`` part of
        ``note``, "" where the default answered. Every text output prints it beside the
        numbers, as it prints :attr:`tol_missed`."""
        i = self.note.find("auto: ")
        return "" if i < 0 else self.note[i + len("auto: "):]

    @property
    def lower_assumes(self) -> str:
        """What the lower bound assumed, where the method states it (the ``lower end:`` part
        of ``note``, up to a following ``auto:`` part), else "": a lower end from a witness
        that needs more than the mechanism's description (the amplified matrix mechanism's,
        a model of at least so many parameters)."""
        i = self.note.find("lower end: ")
        if i < 0 or self.lower is None:
            return ""
        rest = self.note[i + len("lower end: "):]
        j = rest.find("; auto: ")
        return rest if j < 0 else rest[:j]

    def explanation(self) -> list[str]:
        """The lines every text output prints under the numbers where they apply: the tol the
        bracket missed, why another method answered and what the lower bound assumed (none in
        the common case)."""
        out = []
        if self.tol_missed:
            out.append(f"tol not met (every bound printed is proven): {self.tol_missed}")
        if self.why_method:
            out.append(f"method {self.method}: {self.why_method}")
        if self.lower_assumes:
            out.append(f"lower bound from {self.lower_assumes}")
        return out

    @property
    def width(self) -> float | None:
        """upper - lower of the queried quantity (None without a lower bound)."""
        return None if self.lower is None else self.value - self.lower

    @property
    def value(self) -> float:
        return self.epsilon if self.query == "epsilon" else self.delta

    def __float__(self) -> float:
        return float(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else str(self)

    def _pair(self) -> str:
        """"epsilon, delta" as every output prints them: the computed value rounded up to 6
        significant digits (as its lower bound is printed, rounded down), the given one as
        given, both in the one number format (core.rounding.fmt: 1e-5, not 0.00001)."""
        from .rounding import fmt, round_up
        if self.query == "epsilon":
            return f"{round_up(self.epsilon, 6)}, {fmt(self.delta)}"
        return f"{fmt(self.epsilon)}, {round_up(self.delta, 6)}"

    def _repr_markdown_(self) -> str:
        """Notebook display: the guarantee, the lower bound, the method and its source."""
        from .rounding import round_down
        low = "" if self.lower is None else f"; true value ≥ {round_down(self.lower, 6)}"
        note = f"  \n*{self.note}*" if self.note else ""
        return f"**({self._pair()})-DP** by `{self.method}`{low}  \n{self.source}{note}"

    def as_dict(self) -> dict:
        def clean(x):
            return None if x is None else (float(x) if math.isfinite(x) else str(x))
        return {"epsilon": clean(self.epsilon), "delta": clean(self.delta),
                "lower": clean(self.lower), "method": self.method, "source": self.source,
                "note": self.note, "tol_met": self.tol_met}

    def __str__(self) -> str:
        """Rounded outwards: the computed epsilon or delta up (a weaker claim), the lower bound
        down, both to 6 digits; then what the user must know to read them: the tolerance the
        bracket missed, and why a method other than the default answered (``note``)."""
        from .rounding import round_down
        low = "" if self.lower is None else f" (lower bound {round_down(self.lower, 6)})"
        return "\n  ".join([f"({self._pair()})-DP by {self.method}{low}",
                            *self.explanation()])
