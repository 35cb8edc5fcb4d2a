"""``jax._src.hijax`` for JAX's hijax_test: the public names (``HiPrimitive``, ``HiType``,
``register_hitype``, ``VJPHiPrimitive``, ``HiPspec`` from ``funcgrad.experimental.hijax``) and,
written here over that public API, JAX's internal mutable ``Box`` (``Box``, ``new_box``,
``box_get``, ``box_set``): a mutable high-level type whose quasi-dynamic data is its pytree's
structure and leaf types, which funcgrad's jit threads as state (NOTE: [mutable high-level values]
in funcgrad/_ref_scopes.py). ``custom_vjp3``, ``MappingSpec`` and ``Log`` stand in for names the
file imports; using them raises.
"""

from __future__ import annotations

import dataclasses
import itertools as it
from typing import Any

import funcgrad
from funcgrad.core import ShapedArray
from funcgrad.experimental.hijax import (
    AbstractValue,
    HiPrimitive,
    HiPspec,
    HiType,
    MutableHiType,
    VJPHiPrimitive,
    register_hitype,
)
from funcgrad.tree_util import tree_flatten, tree_leaves, tree_unflatten

Ty = AbstractValue

__all__ = [
    "Box",
    "BoxTy",
    "BoxTypeState",
    "HiPrimitive",
    "HiPspec",
    "HiType",
    "Log",
    "MappingSpec",
    "MutableHiType",
    "ShapedArray",
    "Ty",
    "VJPHiPrimitive",
    "box_effect",
    "box_get",
    "box_set",
    "custom_vjp3",
    "new_box",
    "register_hitype",
]


@dataclasses.dataclass(frozen=True)
class BoxTypeState:
    """A box's quasi-dynamic data: the types of its leaves and its tree structure."""

    leaf_avals: tuple
    treedef: Any


def _lo_types(aval) -> list:
    return list(aval.lo_ty()) if getattr(aval, "is_high", False) else [aval]


def _raise(aval, lo_vals):
    return aval.raise_val(*lo_vals) if getattr(aval, "is_high", False) else lo_vals[0]


def _lower(aval, val) -> list:
    return list(aval.lower_val(val)) if getattr(aval, "is_high", False) else [val]


def _hi_vals(state: BoxTypeState, lo_vals) -> list:
    rest = iter(lo_vals)
    return [_raise(a, list(it.islice(rest, len(_lo_types(a))))) for a in state.leaf_avals]


class BoxTy(MutableHiType):
    """The type of a ``Box``."""

    def __hash__(self):
        return hash(BoxTy)

    def __eq__(self, other):
        return isinstance(other, BoxTy)

    def str_short(self, short_dtypes=False, **_) -> str:
        return "BoxTy"

    def lo_ty_qdd(self, state: BoxTypeState) -> list:
        return [t for a in state.leaf_avals for t in _lo_types(a)]

    def new_from_loval(self, state: BoxTypeState, *lo_vals) -> Box:
        return Box._new(tree_unflatten(state.treedef, _hi_vals(state, lo_vals)))

    def read_loval(self, state: BoxTypeState, box) -> list:
        leaves = tree_leaves(box._val)
        return [lo for a, v in zip(state.leaf_avals, leaves) for lo in _lower(a, v)]

    def update_from_loval(self, state: BoxTypeState, box, *lo_vals) -> None:
        box._val = tree_unflatten(state.treedef, _hi_vals(state, lo_vals))

    def to_tangent_aval(self):
        return BoxTy()


class _NewBox(HiPrimitive):
    def impl(self, *, treedef):
        return Box._new(None)

    to_lojax = impl


class _BoxSet(HiPrimitive):
    multiple_results = True

    def impl(self, box, *leaves, treedef):
        box._val = tree_unflatten(treedef, list(leaves))
        return []

    to_lojax = impl


class _BoxGet(HiPrimitive):
    multiple_results = True

    def impl(self, box, *, avals):
        return tree_leaves(box._val)

    to_lojax = impl


new_box_p, box_set_p, box_get_p = _NewBox("new_box"), _BoxSet("box_set"), _BoxGet("box_get")


class _BoxEffect:
    pass


box_effect = _BoxEffect()


def new_box():
    return new_box_p.bind(treedef=tree_flatten(None)[1])


def box_get(box):
    state = box.cur_qdd()
    return tree_unflatten(state.treedef, box_get_p.bind(box, avals=state.leaf_avals))


def box_set(box, val) -> None:
    leaves, treedef = tree_flatten(val)
    box_set_p.bind(box, *leaves, treedef=treedef)


class Box:
    """A mutable box holding a pytree (JAX's internal ``jax._src.hijax.Box``)."""

    _val: Any

    def __new__(cls, init_val=None):
        box = new_box()
        box.set(init_val)
        return box

    @classmethod
    def _new(cls, init_val):
        new = super().__new__(cls)
        new._val = init_val
        return new

    def get(self):
        return box_get(self)

    def set(self, val) -> None:
        box_set(self, val)

    def cur_qdd(self) -> BoxTypeState:
        return self.type_state()

    @property
    def ty(self):
        return BoxTy()

    def type_state(self) -> BoxTypeState:
        leaves, treedef = tree_flatten(self._val)
        return BoxTypeState(tuple(map(funcgrad.typeof, leaves)), treedef)


register_hitype(Box, lambda b: b.ty)


class MappingSpec:
    """JAX's internal base class of a high-level type's mapping spec (not used by funcgrad)."""


def custom_vjp3(*args, **kwargs):
    raise NotImplementedError("jax._src.hijax.custom_vjp3: not provided by funcgrad")


class Log:
    """JAX's internal hijax ``Log`` (not provided by funcgrad)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("jax._src.hijax.Log: not provided by funcgrad")
