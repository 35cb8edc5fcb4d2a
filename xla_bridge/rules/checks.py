"""Lowering rules of the runtime checks (primitives/checks.py).

A ``check`` reaching the compiler was never functionalized: ``jit(f)`` of a function that calls
``checkify.check`` without ``checkify`` around it. Compiled code has no way to raise, so the rule
refuses with jax's functionalization error, which says to wrap the function with ``checkify``
(NOTE: [functionalized checks]). A ``debug_check`` (``debug=True``) is dropped: it runs only
under ``checkify``.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.checks import FUNCTIONALIZATION_ERROR, check_p
from funcgrad.xla_bridge.emitter import register


@register(check_p)
def _check(ctx, *args, msg, fmt_tree, debug, batch_ndim):
    if debug:
        return []
    raise ValueError(FUNCTIONALIZATION_ERROR)
