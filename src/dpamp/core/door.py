"""The one door from the describe layer up to the layers that compute.

A mechanism's convenience methods (``m.epsilon(delta)``, ``m.delta(eps)``, ``m.profile(eps)``,
``m.to_json()``, the risk queries) are a user's shortcut to the query and present layers, which
sit above the mechanisms and import them; and the first lookup of a family's declaration loads
the declarations (``dpamp.families``), which sit above the representations they call. Imports run down the layers, also inside functions
(tests/test_layout.py), so the describe layer never imports those layers; it calls through this
table instead, which names each target once. Nothing else in dpamp calls up.
"""
from __future__ import annotations

import importlib
from typing import Any

#: door name -> (module, attribute), imported on first use
ROUTES = {
    "epsilon": ("dpamp.accounting.registry", "epsilon"),
    "delta": ("dpamp.accounting.registry", "delta"),
    "profile": ("dpamp.accounting.profile", "privacy_profile"),
    "to_json": ("dpamp.io.serialize", "to_json"),
    "tradeoff": ("dpamp.accounting.risk", "tradeoff"),
    "tpr_at_fpr": ("dpamp.accounting.risk", "tpr_at_fpr"),
    "gdp_mu": ("dpamp.accounting.risk", "gdp_mu"),
    "advantage": ("dpamp.accounting.risk", "advantage"),
    # the declarations of dpamp's families (dpamp.mechanisms.family looks them up)
    "declare_families": ("dpamp.families", "declared"),
}


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the function the door ``name`` leads to."""
    module, attr = ROUTES[name]
    return getattr(importlib.import_module(module), attr)(*args, **kwargs)
