"""The Gaussian mechanism's declaration: N(0, sigma^2) noise on a query of L2 sensitivity Delta.

Privacy-loss pair N(mu, 1) vs N(0, 1), mu = Delta / sigma (Steinke 2022, Cor. 8), closed-form
profile (Balle et al. 2018, Thm 4), rho = Delta^2 / (2 sigma^2) (Bun & Steinke 2016, Lemma 2.4 /
Steinke 2022, Lemma 12)."""
from __future__ import annotations

import math

from ..core.rounding import ulps_up
from ..mechanisms.family import Family, Rep, Support, declare
from ..mechanisms.gaussian import Gaussian
from .base import (closed_form_profile, noise_event, noise_to_event, noise_words,
                   sensitivity_group)


def _loss(m: Gaussian):
    from ..pld import loss as L
    return L.gaussian(m.sensitivity / m.sigma)


def _has(m: Gaussian, rep: Rep) -> Support | None:
    """Its pair is a PLD source unless mu^2 overflows (sigma ~ 1e-300: its losses, mu^2 / 2
    and beyond, are past every double; the RDP and profile methods still answer)."""
    if rep is Rep.LOSS and not math.isfinite(m.mu * m.mu):
        return Support.no(f"Gaussian with mu = Δ/σ = {m.mu:g}: its privacy losses exceed the "
                          "double range of a PLD grid; use the profile or RDP methods")
    return None


declare(Gaussian, Family(
    "Gaussian", loss=_loss, profile=closed_form_profile("gaussian", ("Balle, Barthe & Gaboardi "
                                                                     "2018, Thm 4")),
    zcdp=lambda m: ulps_up(m.rho, 4), gaussian_mu=lambda m: m.mu, has=_has,
    additive_noise=lambda m: ("gaussian", m.sigma, m.sensitivity),
    group=sensitivity_group,
    word="gaussian", keys=("noise_multiplier", "sigma", "sensitivity"),
    from_words=noise_words(Gaussian, "sigma"),
    event="GaussianDpEvent", from_event=noise_event(Gaussian, "GaussianDpEvent"),
    to_event=noise_to_event("GaussianDpEvent", "sigma"),
    example=lambda rel: Gaussian(1.0, relation=rel),
    describe=lambda m: f"Gaussian, σ = {m.sigma:g}, L2 sensitivity {m.sensitivity:g}"))
