"""Shared pieces of the family declarations: profile hooks that import the closed forms only
when first used (so ``import dpamp`` stays light), and the plan-word readers."""
from __future__ import annotations

from ..mechanisms.family import ProfileHooks


def closed_form_profile(name: str, source: str, binary: bool = False) -> ProfileHooks:
    """The closed-form profile hooks ``dpamp.profiles.closed_forms.HOOKS[name]``, loaded on
    first use; both rows are one curve (symmetric closed forms)."""
    def hooks() -> ProfileHooks:
        from ..profiles.closed_forms import HOOKS
        return HOOKS[name]

    def group(m, k, eps):
        g = hooks().group
        if g is None:
            from ..profiles.group import log_group_blackbox
            from ..profiles.core import log_symmetric
            return log_group_blackbox(lambda e: log_symmetric(m, e), k, eps)
        return g(m, k, eps)

    return ProfileHooks(pair=lambda m, eps: hooks().pair(m, eps),
                        lower=lambda m, eps: hooks().lower(m, eps),  # type: ignore[misc]  # every closed form has one
                        group=group, binary=(lambda m: True) if binary else None,
                        symmetric=lambda m: True, source=f"{source} (privacy profile)")


def noise_event(cls, event_name: str):
    """dp-accounting's event of an additive-noise family (``GaussianDpEvent(z)``,
    ``LaplaceDpEvent(z)``): the noise scale z relative to the sensitivity the reader chose
    (1 under add/remove); z <= 0 is not private."""
    def read(event, relation, sensitivity):
        z = float(event.noise_multiplier)
        if z <= 0:
            raise ValueError(f"{event_name} with noise_multiplier {z:g} is not private")
        return cls(z, sensitivity=sensitivity, relation=relation)
    return read


def noise_to_event(event_name: str, scale_attr: str):
    """The writer of an additive-noise family's event (``GaussianDpEvent(z)``,
    ``LaplaceDpEvent(z)``): z = noise scale / sensitivity, the noise relative to the
    sensitivity under the mechanism's relation (dp-accounting's reading of z, for an
    accountant under that relation); a sensitivity of 0 is no privacy cost."""
    def write(m):
        from dp_accounting import dp_event
        if m.sensitivity == 0:
            return dp_event.NoOpDpEvent()
        return getattr(dp_event, event_name)(getattr(m, scale_attr) / m.sensitivity)
    return write


def sensitivity_group(m, k: int):
    """The same mechanism on a group of k records: the query's sensitivity times k."""
    import dataclasses
    return dataclasses.replace(m, sensitivity=k * m.sensitivity)


def noise_words(cls, scale_key: str):
    """The plan / command-line reader of an additive-noise family (Gaussian: ``sigma``,
    Laplace: ``scale``): a noise multiplier (noise relative to the clipping norm, the
    sensitivity following from the relation), or the scale with a sensitivity (1 by default
    under add/remove; required under substitution, where a clipped record moves a sum by 2C)."""
    from ..core import validate as V
    from ..core.relations import SUBSTITUTION
    from ..core.sampling import clip_sensitivity

    def read(words, relation):
        key = words.one_of("noise_multiplier", scale_key)
        value = words.get(key, V.positive)
        if key == "noise_multiplier":
            if words.has("sensitivity"):
                words.fail("sensitivity", f"not used with {words.k('noise_multiplier')} (the "
                           f"noise is relative to the clipping norm); give "
                           f"{words.k(scale_key)} and {words.k('sensitivity')}")
            # a record of norm <= C moves a sum by C (add/remove) or 2C (substitution)
            sens = clip_sensitivity(relation)
        elif words.has("sensitivity"):
            sens = words.get("sensitivity", V.positive)
        elif relation is SUBSTITUTION:
            words.fail(scale_key, f"under substitution give {words.k('sensitivity')} too (a "
                       f"record clipped to norm C moves a sum by 2C), or give "
                       f"{words.k('noise_multiplier')} (noise relative to the clipping norm; "
                       "the sensitivity then follows from the relation)")
        else:
            sens = 1.0
        return cls(value, sensitivity=sens, relation=relation), {key: value, "sensitivity": sens}
    return read


def shifted_group(rows):
    """The k-group profile hook (``ProfileHooks.group``) of an integer-noise family whose curve
    grows with the shift (discrete Gaussian, Skellam): the pair at sensitivity k Delta, k
    records moving the integer query by at most k Delta. The curve grows with the shift because
    the shifted laws of log-concave noise have a monotone likelihood ratio, so one threshold
    test is optimal at every shift and its power grows with the shift. ``rows(m, eps)``: the
    two upper rows; k broadcasts against eps."""
    def group(m, k, eps):
        import dataclasses

        import numpy as np
        kk, ee = np.broadcast_arrays(np.asarray(k), np.asarray(eps, dtype=float))
        out = np.empty(ee.shape)
        for v in np.unique(kk):
            sel = kk == v
            r = rows(dataclasses.replace(m, sensitivity=int(v) * m.sensitivity), ee[sel])
            out[sel] = np.maximum(r[0], r[1])
        return out
    return group
