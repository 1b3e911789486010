"""Neighbouring relations (Balle et al. 2018, Sec. 2, Steinke 2022, Sec. 6.2).

A mechanism's sensitivity and its privacy guarantees always refer to one relation. Sampling
schemes need a particular relation for the inner mechanism and produce a guarantee under a
(possibly different) outer relation; mixing them silently is the most common accounting bug, so
the relation travels with every mechanism.
"""
from __future__ import annotations

import enum


class Relation(enum.Enum):
    """``ADD_REMOVE``: datasets differ by adding or removing one record.
    ``SUBSTITUTION``: datasets of equal size differ in one record (replace-one)."""

    ADD_REMOVE = "add_remove"
    SUBSTITUTION = "substitution"

    def __str__(self) -> str:  # shown in error messages and reports
        return self.value

    @property
    def words(self) -> str:
        """The relation as people write it: "add/remove" or "substitution"."""
        return "add/remove" if self is Relation.ADD_REMOVE else "substitution"


ADD_REMOVE = Relation.ADD_REMOVE
SUBSTITUTION = Relation.SUBSTITUTION


def as_relation(value) -> Relation:
    if isinstance(value, Relation):
        return value
    try:
        return Relation(str(value).lower().replace("-", "_").replace("/", "_"))
    except ValueError:
        raise ValueError(
            f"relation must be dp.ADD_REMOVE or dp.SUBSTITUTION (got {value!r})") from None
