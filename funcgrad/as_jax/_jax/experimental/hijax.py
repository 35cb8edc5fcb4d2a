"""``jax.experimental.hijax`` under the alias: the names flax's nnx defines its (opt-in) hijax
``Variable`` with, so that ``import flax.nnx`` works; funcgrad does not implement JAX's high-level
types, so *using* them (binding a ``HiPrimitive``, flax's ``flax_hijax`` mode) raises
``NotImplementedError`` naming what is missing. flax's default ``Variable`` never reaches them.

>>> p = HiPrimitive("demo")
>>> p.name
'demo'
"""

from __future__ import annotations

from funcgrad.core import AbstractValue
from funcgrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal

__all__ = [
    "AbstractValue",
    "AvalMutableQDD",
    "AvalQDD",
    "HiPrimitive",
    "MutableHiType",
    "Zero",
    "aval_method",
    "aval_property",
    "control_flow_allowed_effects",
    "instantiate_zeros",
    "is_undefined_primal",
    "register_hitype",
]

_MISSING = (
    "jax.experimental.hijax (high-level types) is not implemented by funcgrad: flax's hijax "
    "Variables (flax.config flax_hijax / nnx.var_defaults(hijax=True)) need it; use flax's default Variables"
)


class HiPrimitive:
    """A primitive over high-level types: can be defined, not bound, in funcgrad."""

    def __init__(self, name: str):
        self.name = name

    def bind(self, *args, **params):
        raise NotImplementedError(_MISSING)

    def __repr__(self):
        return self.name


class MutableHiType(AbstractValue):
    """The abstract value of a mutable high-level type."""


class AvalQDD:
    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD(AvalQDD):
    pass


def aval_method(fun):
    """Mark ``fun`` as callable on the abstract value too (here: the function itself)."""
    return fun


class aval_property(property):  # noqa: N801 - JAX's name
    """A property readable on the abstract value too (here: a plain property)."""


class _EffectTypes(set):
    def add_type(self, effect_type) -> None:
        self.add(effect_type)


control_flow_allowed_effects = _EffectTypes()
_HITYPES: dict = {}


def register_hitype(cls, to_aval) -> None:
    """Record ``cls``'s abstraction; funcgrad never traces such values (see the module docstring)."""
    _HITYPES[cls] = to_aval
