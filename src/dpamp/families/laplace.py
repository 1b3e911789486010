"""The Laplace mechanism's declaration: Laplace(b) noise on a query of L1 sensitivity Delta.

Privacy-loss pair of Laplace(0, b) vs Laplace(Delta, b), eps0 = Delta / b; closed-form profile
(Balle et al. 2018, Thm 3); pure eps0-DP, so rho = eps0^2 / 2 (derived from the pure epsilon)."""
from __future__ import annotations

from ..mechanisms.family import Family, declare
from ..mechanisms.laplace import Laplace
from .base import (closed_form_profile, noise_event, noise_to_event, noise_words,
                   sensitivity_group)


def _loss(m: Laplace):
    from ..pld import loss as L
    return L.laplace(m.eps0)


declare(Laplace, Family(
    "Laplace", loss=_loss, profile=closed_form_profile("laplace", ("Balle, Barthe & Gaboardi "
                                                                   "2018, Thm 3")),
    additive_noise=lambda m: ("laplace", m.scale, m.sensitivity),
    group=sensitivity_group,
    word="laplace", keys=("noise_multiplier", "scale", "sensitivity"),
    from_words=noise_words(Laplace, "scale"),
    event="LaplaceDpEvent", from_event=noise_event(Laplace, "LaplaceDpEvent"),
    to_event=noise_to_event("LaplaceDpEvent", "scale"),
    example=lambda rel: Laplace(1.0, relation=rel),
    describe=lambda m: f"Laplace, scale {m.scale:g}, L1 sensitivity {m.sensitivity:g}"))
