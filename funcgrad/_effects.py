"""JAX's effect types: ``Effect`` (``jax.extend.core.Effect``) and the debug effects
``DebugEffect`` / ``OrderedDebugEffect`` (``jax.debug``).

Layer: surface. Imports nothing of funcgrad (``funcgrad.extend.core`` and ``funcgrad.debug``
re-export these classes).

In JAX an effect is an object on a jaxpr's equations (``jaxpr.effects``) that orders side effects
and threads runtime tokens through the lowered program; ``jax.debug.callback``'s equations carry
``DebugEffect()`` (``OrderedDebugEffect()`` with ``ordered=True``). funcgrad orders side effects by
data dependence and a primitive's traits (``traits.has_side_effects``, NOTE: [primitive traits]),
so its jaxprs carry no effect objects: these classes exist for code that names or subclasses
them (a user primitive declaring its effect type), with JAX's printed names. The one exception is
what ``make_jaxpr`` gives for a function that reads or writes Refs (``jaxpr.effects``: a
``ReadEffect``/``WriteEffect`` per Ref, on the input that holds its value, as JAX's; NOTE: [refs
are functionalised at trace time] in funcgrad/ref.py).

>>> str(DebugEffect()), str(OrderedDebugEffect()), isinstance(OrderedDebugEffect(), Effect)
('Debug', 'OrderedDebug', True)
"""

from __future__ import annotations

__all__ = [
    "AccumEffect",
    "DebugEffect",
    "Effect",
    "JaxprInputEffect",
    "OrderedDebugEffect",
    "ReadEffect",
    "RefEffect",
    "WriteEffect",
]


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


class JaxprInputEffect(Effect):
    """An effect on one input of a jaxpr (``input``: its variable, or a position)."""

    def __init__(self, input):  # noqa: A002 (JAX's name)
        self.input = input

    def replace(self, input):  # noqa: A002
        return type(self)(input)

    def __eq__(self, other):
        return type(other) is type(self) and self.input == other.input

    def __hash__(self):
        return hash((type(self), self.input))

    def __repr__(self):
        return f"{type(self).__name__}({self.input!r})"


class RefEffect(JaxprInputEffect):
    """A read, write or accumulation of the Ref whose value is the input ``input`` (JAX's
    ``jax._src.state.types.RefEffect``; printed ``Read<a>``).

    >>> str(WriteEffect(0)), WriteEffect(0) == WriteEffect(0), isinstance(ReadEffect(1), RefEffect)
    ('Write<0>', True, True)
    """

    name = "Ref"

    def __str__(self):
        return f"{self.name}<{self.input}>"


class ReadEffect(RefEffect):
    name = "Read"


class WriteEffect(RefEffect):
    name = "Write"


class AccumEffect(RefEffect):
    name = "Accum"
