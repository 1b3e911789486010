"""Errors shared by every layer."""


class OutOfReach(ValueError):
    """A method applies but cannot produce a bound for this query within its numerical limits
    (a grid too fine, losses too large for its floating point). ``method="auto"`` then uses the
    next applicable method."""


class SoundnessError(AssertionError):
    """An internal contradiction: a proven lower bound above the proven upper bound of the same
    quantity. One of them is wrong, so neither is printed; this is a bug in dpamp, never a
    limit of a method (please report the plan that raised it)."""
