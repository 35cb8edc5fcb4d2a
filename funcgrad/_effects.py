"""JAX's effect types: ``Effect`` (``jax.extend.core.Effect``) and the debug effects
``DebugEffect`` / ``OrderedDebugEffect`` (``jax.debug``).

Layer: surface. Imports nothing of funcgrad (``funcgrad.extend.core`` and ``funcgrad.debug``
re-export these classes).

In JAX an effect is an object on a jaxpr's equations (``jaxpr.effects``) that orders side effects
and threads runtime tokens through the lowered program; ``jax.debug.callback``'s equations carry
``DebugEffect()`` (``OrderedDebugEffect()`` with ``ordered=True``). funcgrad orders side effects by
data dependence and a primitive's traits (``traits.has_side_effects``, NOTE: [primitive traits]),
so its jaxprs carry no effect objects: these classes exist for code that names or subclasses
them (a user primitive declaring its effect type), with JAX's printed names.

>>> str(DebugEffect()), str(OrderedDebugEffect()), isinstance(OrderedDebugEffect(), Effect)
('Debug', 'OrderedDebug', True)
"""

from __future__ import annotations

__all__ = ["DebugEffect", "Effect", "OrderedDebugEffect"]


class Effect:
    """Base class of JAX's effect types; a funcgrad jaxpr carries no effects (a primitive with a
    side effect says so in ``traits.has_side_effects``)."""


class DebugEffect(Effect):
    """The effect of an unordered ``debug.callback``/``debug.print`` (JAX's; printed ``Debug``)."""

    def __str__(self):
        return "Debug"


class OrderedDebugEffect(Effect):
    """The effect of an ordered ``debug.callback``/``debug.print`` (JAX's; printed
    ``OrderedDebug``)."""

    def __str__(self):
        return "OrderedDebug"
