"""The mixture-of-Gaussians mechanism's declaration (its description and RDP:
:mod:`dpamp.mechanisms.mixture_of_gaussians`).

PLD: one shift is the Gaussian pair (merged with other Gaussians, Steinke 2022, Cor. 8); a zero
shift and one other is the Poisson-subsampled Gaussian's pair; any other mixture is the continuous
pair of
:func:`dpamp.pld.mixture.gaussian_mixture` (both orders composed). Profile: exact, both orders
(:mod:`dpamp.profiles.mixture`). rho = mu^2/2 for one shift; none otherwise (the RDP curve is
used as it is)."""
from __future__ import annotations

from ..core import validate as V
from ..core.relations import SUBSTITUTION
from ..mechanisms.family import Family, ProfileHooks, declare
from ..mechanisms.mixture_of_gaussians import MixtureOfGaussians


def _loss(m: MixtureOfGaussians):
    from ..pld import loss as L
    mus, ps = m.components()
    pos = mus > 0
    if not pos.any():
        return L.eps_delta(0.0, 0.0)                    # P = Q: the loss is 0
    if pos.sum() == 1:
        mu, q = float(mus[pos][0]), float(ps[pos][0])
        return L.gaussian(mu) if q >= 1.0 else L.gaussian(mu).poisson(q)
    from ..pld.mixture import gaussian_mixture
    return gaussian_mixture(mus, ps, name=f"mixture_of_gaussians({m.sigma:g}, {mus.size})")


def _rows(m: MixtureOfGaussians, eps, upper: bool):
    import numpy as np

    from ..profiles.mixture import mixture_log_rows
    mus, ps = m.components()
    if not (mus > 0).any():
        return np.full((2,) + np.shape(eps), -np.inf)
    return mixture_log_rows(mus, ps, eps, upper=upper)


def _rho(m: MixtureOfGaussians) -> float | None:
    """mu^2/2 where the mixture is one shift (the Gaussian mechanism), else None."""
    from ..core.rounding import ulps_up
    mus, ps = m.components()
    pos = mus > 0
    if pos.sum() == 1 and ps[pos][0] >= 1.0:
        return ulps_up(float(mus[pos][0]) ** 2 / 2.0, 4)
    return 0.0 if not pos.any() else None


def _words(words, relation):
    sigma = words.get("sigma", V.positive, required=True)
    c = tuple(float(v) for v in words.get("sensitivities", V.reals, required=True, low=0.0))
    p = tuple(float(v) for v in words.get("probabilities", V.reals, required=True, low=0.0))
    try:
        m = MixtureOfGaussians(sigma, c, p, relation=relation)
    except ValueError as e:
        words.fail("probabilities", str(e))
    return m, {"sigma": sigma, "sensitivities": list(c), "probabilities": list(p)}


def _from_event(event, relation, sensitivity):
    """dp-accounting's ``MixtureOfGaussiansDpEvent(standard_deviation, sensitivities,
    sampling_probs)``: for the add/remove relation, as dp-accounting's accountants take it (they
    refuse REPLACE_ONE); a single zero sensitivity is no privacy cost (None)."""
    if relation is SUBSTITUTION:
        raise ValueError("MixtureOfGaussiansDpEvent is accounted under add/remove "
                         "(dp-accounting refuses REPLACE_ONE for it)")
    c = [float(v) for v in event.sensitivities]
    if len(c) == 1 and c[0] == 0.0:
        return None
    sd = float(event.standard_deviation)
    if sd <= 0:
        raise ValueError(f"MixtureOfGaussiansDpEvent with standard_deviation {sd:g} is not "
                         "private")
    return MixtureOfGaussians(sd, tuple(c), tuple(float(v) for v in event.sampling_probs),
                              relation=relation)


def _to_event(m: MixtureOfGaussians):
    """``MixtureOfGaussiansDpEvent(sigma, sensitivities, probabilities)``, for an accountant
    under add/remove (dp-accounting refuses REPLACE_ONE for this event, and so does the
    reader)."""
    if m.relation is SUBSTITUTION:
        raise ValueError("dp-accounting accounts MixtureOfGaussiansDpEvent under "
                         "ADD_OR_REMOVE_ONE only; this mixture is stated under substitution")
    from dp_accounting import dp_event
    return dp_event.MixtureOfGaussiansDpEvent(m.sigma, list(m.sensitivities),
                                              list(m.probabilities))


def _describe(m: MixtureOfGaussians) -> str:
    parts = ", ".join(f"{p:g}: {c:g}" for c, p in zip(m.sensitivities, m.probabilities))
    return f"mixture of Gaussians, σ = {m.sigma:g}, shifts (probability: shift) {parts}"


declare(MixtureOfGaussians, Family(
    "MixtureOfGaussians", loss=_loss,
    profile=ProfileHooks(pair=lambda m, eps: _rows(m, eps, True),
                         lower=lambda m, eps: _rows(m, eps, False),
                         source=("mixture of Gaussian curves (Balle, Barthe & Gaboardi 2018, Thm "
                                 "4 per component)")),
    zcdp=_rho,
    word="mixture_of_gaussians", keys=("sigma", "sensitivities", "probabilities"),
    from_words=_words, event="MixtureOfGaussiansDpEvent", from_event=_from_event, to_event=_to_event,
    example=lambda rel: MixtureOfGaussians(1.0, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01),
                                           relation=rel),
    describe=_describe))
