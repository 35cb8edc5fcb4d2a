"""Lowering rules of the naming family (primitives/naming.py): ``name`` (``checkpoint_name``) is
the identity once partial evaluation has read the name.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.naming import name_p
from funcgrad.xla_bridge.emitter import register


@register(name_p)
def _name(ctx, x, *, name):
    return x  # checkpoint_name is the identity once partial evaluation has read the name
