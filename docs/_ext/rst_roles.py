"""A griffe extension for the API pages: the docstrings are written with reST roles
(``:func:`dpamp.x```, ``:class:`~.Guarantee```), which Markdown would print literally; each role
becomes inline code of its target (the ``~`` and leading dots dropped). The docstrings
themselves are unchanged."""
from __future__ import annotations

import re

from griffe import Extension

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const):`~?\.*([^`]+)`")


class RstRoles(Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        doc = getattr(obj, "docstring", None)
        if doc is not None and ":`" in doc.value:
            doc.value = _ROLE.sub(lambda m: f"`{m[1]}`", doc.value)
