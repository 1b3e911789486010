"""DP-SGD in one call, in DP-SGD's words: ``dp.dpsgd`` (and ``dpamp dpsgd`` on the command line).

    dp.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60000, epochs=60, delta=1e-5)

is the guarantee of training with per-record gradients clipped to norm C, Gaussian noise of
standard deviation ``noise_multiplier`` x C added to each step's sum, each step's batch drawn by
``sampler`` (default "poisson": every record independently at rate batch_size / dataset_size,
add/remove relation, the clipped sum's sensitivity C; "without-replacement": a fixed batch,
substitution, 2C; the table is :mod:`dpamp.core.samplers`), for ``epochs`` passes over the data
(ceil(epochs x dataset_size / batch_size) steps) or ``steps`` steps. It plays the part of
TF-Privacy's ``compute_dp_sgd_privacy`` (which counts steps the same way and accounts by RDP);
here ``method="auto"`` answers with the tightest method that applies (the PLD for this plan,
with a proven lower bound), and every answer is a proven upper bound.

The arguments are read exactly as a TOML plan's stage and the command line's flags are
(:func:`dpamp.io.plan.parse_stage`), so the three give the same epsilon for the same plan.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..core.relations import as_relation

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..core.guarantee import Guarantee
    from .plan import Stage

__all__ = ["dpsgd", "dpsgd_stage"]


def dpsgd_stage(*, noise_multiplier: float, batch_size: int | None = None,
                dataset_size: int | None = None, epochs: float | None = None,
                steps: int | None = None, sampler: str = "poisson",
                sample_rate: float | None = None, max_batch_size: int | None = None,
                records_per_user: int | None = None, user_sampling: bool | None = None,
                user_clipping: bool | None = None) -> Stage:
    """The plan's :class:`~dpamp.io.plan.Stage`: ``.mechanism`` (the composition),
    ``.steps`` and ``.assumed`` (sampler, relation, sensitivity, rate, steps, epochs; at user
    level the unit, records_per_user, user_sampling, user_clipping)."""
    from .plan import PlanError, parse_stage
    words = {"mechanism": "gaussian", "noise_multiplier": noise_multiplier,
             "sampler": sampler, "batch_size": batch_size, "dataset_size": dataset_size,
             "sample_rate": sample_rate, "epochs": epochs, "steps": steps,
             "max_batch_size": max_batch_size, "records_per_user": records_per_user,
             "user_sampling": user_sampling, "user_clipping": user_clipping}
    try:
        return parse_stage({k: v for k, v in words.items() if v is not None},
                           origin="dpsgd", cli=False)
    except PlanError as e:  # name the keyword arguments, not plan-file keys
        raise ValueError(str(e).replace("stage 1, key '", "argument '")) from None


def dpsgd(*, noise_multiplier: float, batch_size: int | None = None,
          dataset_size: int | None = None, epochs: float | None = None,
          steps: int | None = None, delta: float | None = None, epsilon: float | None = None,
          sampler: str = "poisson", sample_rate: float | None = None, method: str = "auto",
          max_batch_size: int | None = None, records_per_user: int | None = None,
          user_sampling: bool | None = None, user_clipping: bool | None = None,
          **options: Any) -> Guarantee:
    """The (epsilon, delta) guarantee of a DP-SGD run (module docstring): epsilon at ``delta``
    (or delta at ``epsilon``), a :class:`~dpamp.Guarantee` whose ``note`` states what was
    assumed. Give ``batch_size`` and ``dataset_size`` (or ``sample_rate`` for the Poisson
    sampler), and ``epochs`` or ``steps`` (both: they must agree). ``options`` go to the
    accounting method (e.g. ``tol`` for the PLD).

    User level (docs/user-level.md): ``records_per_user`` m makes the privacy unit a user
    holding at most m records; ``user_sampling`` (users, not records, are drawn at the rate)
    and ``user_clipping`` (each user's summed contribution is clipped to C, not each record).
    Records drawn by Poisson sampling with per-record clipping give the binomial mixture of
    Gaussians (:class:`dpamp.UserLevelGaussian`)."""
    if (delta is None) == (epsilon is None):
        raise ValueError("give delta (for epsilon at delta) or epsilon (for delta at epsilon)")
    stage = dpsgd_stage(noise_multiplier=noise_multiplier, batch_size=batch_size,
                        dataset_size=dataset_size, epochs=epochs, steps=steps, sampler=sampler,
                        sample_rate=sample_rate, max_batch_size=max_batch_size,
                        records_per_user=records_per_user, user_sampling=user_sampling,
                        user_clipping=user_clipping)
    mech = stage.mechanism
    if delta is not None:
        g = mech.epsilon(delta, method=method, **options)
    else:
        assert epsilon is not None                 # exactly one of them (checked above)
        g = mech.delta(epsilon, method=method, **options)
    note = f"DP-SGD assumed: {describe(stage)}"
    return dataclasses.replace(g, note=f"{note}. {g.note}" if g.note else note)


def describe(stage: Stage) -> str:
    """What a DP-SGD stage assumes, in one line."""
    from ..core.rounding import fmt
    a = stage.assumed
    rel = as_relation(a["relation"]).words
    if "batch_size" in a:
        how = f"batch {a['batch_size']} of {a['dataset_size']}" + (
            f", cut to at most {a['max_batch_size']}" if "max_batch_size" in a else "")
    elif "sample_rate" in a:
        how = f"rate {fmt(a['sample_rate'])}"
    else:                                   # sampler "none": every record in every step
        how = "the whole dataset every step"
    given = stage.params.get("epochs")
    count = f"{a['steps']} steps" + ("" if given is None else
                                     f" (= {fmt(float(given))} epochs, rounded up to whole steps)")
    text = (f"noise multiplier {fmt(float(a['noise_multiplier']))}, sampler {a['sampler']} "
            f"({how}), {rel} relation, sensitivity {fmt(float(a['sensitivity']))} x the "
            f"clipping norm, {count}")
    if a.get("unit") == "user":
        from ._describe import user_words
        text += "; " + user_words(a)
    return text
