"""Errors shared by every layer."""


class OutOfReach(ValueError):
    """A method applies but cannot produce a bound for this query within its numerical limits
    (a grid too fine, losses too large for its floating point). ``method="auto"`` then uses the
    next applicable method."""
