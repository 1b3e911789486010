"""The capability matrix: mechanism family x sampler x method, each cell yes or no with the
reason, from the declarations alone (:func:`dpamp.accounting.registry.supports`; nothing is
computed). ``dp.capabilities()`` returns it, ``dpamp methods --matrix`` prints it, and
docs/capabilities.md is generated from it by the test suite, so a gap is visible, not silent.
"""
from __future__ import annotations

import dataclasses

from ..core.relations import SUBSTITUTION
from ..core.sampling import (Poisson, RandomAllocation, Shuffled, TruncatedPoisson,
                             WithoutReplacement, WithReplacement)
from ..mechanisms.family import Support, families
from . import registry

#: the samplers of the matrix, each as a typical instance (None: no sampling)
SAMPLERS = {
    "none": None,
    "poisson": Poisson(0.01),
    "poisson (substitution)": Poisson(0.01, relation=SUBSTITUTION, population=10_000),
    "without replacement": WithoutReplacement(100, 10_000),
    "with replacement": WithReplacement(100, 10_000),
    "random allocation": RandomAllocation(1, 100),
    "shuffled": Shuffled(100, 10_050),
    "truncated poisson": TruncatedPoisson(0.01, 110, 10_000),
}


@dataclasses.dataclass(frozen=True)
class Cell:
    family: str
    sampler: str
    method: str
    support: Support


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """The matrix as cells; ``str`` is a table per method (rows: families, columns:
    samplers), ``markdown()`` the same for docs."""

    cells: tuple[Cell, ...]
    #: families that sample themselves (``Family.own_samplers``): their own sampler labels
    own: tuple[Cell, ...] = ()

    def __iter__(self):
        return iter(self.cells)

    def lookup(self, family: str, sampler: str, method: str) -> Support:
        for c in self.cells:
            if (c.family, c.sampler, c.method) == (family, sampler, method):
                return c.support
        raise KeyError((family, sampler, method))

    def _names(self):
        fams = list(dict.fromkeys(c.family for c in self.cells))
        methods = list(dict.fromkeys(c.method for c in self.cells))
        return fams, list(SAMPLERS), methods

    def __str__(self) -> str:
        fams, samplers, methods = self._names()
        width = max(len(f) for f in fams) + 2
        lines = []
        for m in methods:
            lines.append(f"method {m}:")
            lines.append(" " * width + " ".join(f"{s[:11]:>11s}" for s in samplers))
            for f in fams:
                row = " ".join(f"{('yes' if self.lookup(f, s, m) else 'no'):>11s}"
                               for s in samplers)
                lines.append(f"{f:<{width}s}{row}")
        return "\n".join(lines)

    def markdown(self) -> str:
        """One table per method, "no" cells numbered by their reason, listed below it."""
        fams, samplers, methods = self._names()
        out = []
        for m in methods:
            reasons: dict[str, int] = {}
            out += [f"### {m}", "", "| family | " + " | ".join(samplers) + " |",
                    "|---" * (len(samplers) + 1) + "|"]
            for f in fams:
                cells = []
                for s in samplers:
                    sup = self.lookup(f, s, m)
                    if sup:
                        cells.append("yes")
                    else:
                        n = reasons.setdefault(sup.why, len(reasons) + 1)
                        cells.append(f"no ({n})")
                out.append(f"| {f} | " + " | ".join(cells) + " |")
            out.append("")
            out += [f"{n}. {why}" for why, n in reasons.items()]
            out.append("")
        return "\n".join(out + self._own_markdown(methods))

    def _own_markdown(self, methods) -> list[str]:
        """The families whose sampling is a parameter of the mechanism: a row per family and
        own sampler, a column per method."""
        if not self.own:
            return []
        rows = list(dict.fromkeys((c.family, c.sampler) for c in self.own))
        find = {(c.family, c.sampler, c.method): c.support for c in self.own}
        reasons: dict[str, int] = {}
        out = ["### families that sample themselves", "",
               "| family | sampler | " + " | ".join(methods) + " |",
               "|---" * (len(methods) + 2) + "|"]
        for f, s in rows:
            cells = []
            for m in methods:
                sup = find[(f, s, m)]
                cells.append("yes" if sup else f"no ({reasons.setdefault(sup.why, len(reasons) + 1)})")
            out.append(f"| {f} | {s} | " + " | ".join(cells) + " |")
        out.append("")
        out += [f"{n}. {why}" for why, n in reasons.items()]
        out.append("")
        return out


def example(family_cls, fam, sampler: str):
    """The family's example under the relation the sampler needs, subsampled by it."""
    from ..core.relations import ADD_REMOVE
    scheme = SAMPLERS[sampler]
    base = fam.example(ADD_REMOVE if scheme is None else scheme.needs)
    return base if scheme is None else base.subsample(scheme)


def capabilities(methods: list[str] | None = None) -> Capabilities:
    """The capability matrix of every declared mechanism family (those with an ``example``)
    under every sampler, for every accounting method (or those named)."""
    registry._load_plugins()
    names = methods or registry.available()
    cells = []
    for cls, fam in families():
        if fam.example is None:
            continue
        for sampler in SAMPLERS:
            try:
                mech = example(cls, fam, sampler)
            except ValueError as e:       # the sampler does not take this family at all
                cells += [Cell(fam.name, sampler, name, Support.no(str(e))) for name in names]
                continue
            for name in names:
                cells.append(Cell(fam.name, sampler, name, registry.supports(mech, name)))
    own = [Cell(fam.name, label, name, registry.supports(mech, name))
           for _, fam in families() if fam.own_samplers is not None
           for label, mech in fam.own_samplers().items() for name in names]
    return Capabilities(tuple(cells), tuple(own))
