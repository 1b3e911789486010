"""The answer of a calibration (:mod:`.calibrate`): the parameter's value, the guarantee of the
plan at that value, and how the search got there."""
from __future__ import annotations

import dataclasses
import math

from ..core.guarantee import Guarantee


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The answer of a calibration.

    ``value``: the calibrated parameter (float for sigma and rate, int for steps, epochs and
    batch). ``guarantee``: epsilon(delta) of ``mechanism`` (the plan at ``value``) by
    ``guarantee.method``; ``guarantee.epsilon <= target_epsilon``. ``evaluations``: how many
    accounting queries the search made. ``search``: for sigma and rate, the search's last
    bracket (the value that meets the target, and the nearest one that did not), and ``rtol``
    the resolution asked: where the evaluated plans' own brackets are wider, the search stops
    at an eighth of their width, and the printout says so. ``options``: the method's options
    the certificate was computed with (a bracket that straddled the target was refined to a
    finer tol): ``mechanism.epsilon(target_delta, method=..., **options)`` reproduces
    ``guarantee``; the default options may give a wider bracket reaching over the target."""

    parameter: str
    value: float | int
    guarantee: Guarantee
    target_epsilon: float
    target_delta: float
    mechanism: object = dataclasses.field(repr=False)
    evaluations: int = 0
    steps: int | None = None
    search: tuple | None = None
    rtol: float | None = None
    options: dict = dataclasses.field(default_factory=dict)

    @property
    def resolution(self) -> float | None:
        """The relative width of the search's last bracket (None without one)."""
        if not self.search or None in self.search:
            return None
        lo, hi = sorted(float(v) for v in self.search)
        return hi / lo - 1.0 if lo > 0 else math.inf

    @property
    def epsilon(self) -> float:
        return self.guarantee.epsilon

    @property
    def method(self) -> str:
        return self.guarantee.method

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def as_dict(self) -> dict:
        d = {"parameter": self.parameter, "value": self.value,
             "target_epsilon": self.target_epsilon, "target_delta": self.target_delta,
             "evaluations": self.evaluations, "guarantee": self.guarantee.as_dict()}
        if self.steps is not None:
            d["steps"] = self.steps
        if self.resolution is not None:
            d["resolution"] = self.resolution
        d["options"] = dict(self.options)
        return d

    def __str__(self) -> str:
        """Rounded so that the printed value still meets the target: sigma up (more noise),
        a rate or a number of epochs down; the achieved epsilon up."""
        from ..core.rounding import fmt, round_down, round_up
        if isinstance(self.value, float):
            v = (round_up if self.parameter == "sigma" else round_down)(self.value, 6)
        else:
            v = str(self.value)
        extra = "" if self.steps is None or self.parameter == "steps" else \
            f" ({self.steps} steps)"
        # six digits, or as many as show the achieved epsilon below the target (2.999997 is
        # not printed as "3 <= 3")
        e, digits = self.guarantee.epsilon, 6
        while digits < 17 and e < self.target_epsilon <= float(round_up(e, digits)):
            digits += 1
        eps = round_up(e, digits)
        out = (f"{self.parameter} = {v}{extra}: epsilon {eps} <= "
               f"{fmt(self.target_epsilon)} at delta {fmt(self.target_delta)} by "
               f"{self.guarantee.method}")
        res = self.resolution
        if res is not None and self.rtol is not None and res > self.rtol * (1 + 1e-9):
            out += (f" (the search stopped at a relative resolution of {res:.2g}, above rtol "
                    f"{self.rtol:g}: the evaluated plans' brackets are wider than that)")
        if "tol" in self.options and self.parameter in ("steps", "epochs"):
            out += f" (certified with tol {self.options['tol']:.3g})"
        if self.guarantee.tol_missed:
            out += f" (tol not met: {self.guarantee.tol_missed})"
        return out
