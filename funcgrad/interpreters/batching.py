"""``funcgrad.interpreters.batching``: JAX's ``jax.interpreters.batching`` over funcgrad's ``vmap``.

Layer: surface. Imports the kernel (``batching``, ``core``, ``hooks``), ``funcgrad.primitives``
(``structure``: moving and broadcasting axes) and the rule-table views (NOTE: [rule tables are
views]).

``primitive_batchers[p] = rule`` sets the batching slot of the funcgrad primitive ``p``. JAX's
signature, ``rule(batched_args, batch_dims, **params) -> (out, out_dim)`` (``out_dims``, one per
result, when ``p.multiple_results``), with ``not_mapped`` (``None``) for an unbatched value, is
adapted to funcgrad's, which also passes the axis size. ``fancy_primitive_batchers`` rules receive
an ``AxisData`` first (``size``, ``name``); ``axis_primitive_batchers`` rules (a shim JAX keeps)
``(axis_size, axis_name, trace_type, args, dims, **params)``.

>>> import numpy as np, funcgrad
>>> from funcgrad.extend.core import Primitive
>>> square_p = Primitive("square_demo")
>>> _ = square_p.def_impl(np.square)
>>> _ = square_p.def_abstract_eval(lambda x: x)
>>> defvectorized(square_p)
>>> funcgrad.vmap(square_p.bind)(np.arange(3.0)).tolist()
[0.0, 1.0, 4.0]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# (custom types that ``vmap`` maps, JAX's ``vmappables``: NOTE: [vmappable types])
from funcgrad._vmappables import register_vmappable, unregister_vmappable, vmappables  # noqa: F401
from funcgrad.interpreters._rule_table import RuleTable, WriteOnlyTable
from funcgrad.kernel import batching as _batching
from funcgrad.kernel import core as _core
from funcgrad.kernel.batching import BatchTrace, BatchTracer
from funcgrad.kernel.hooks import hooks
from funcgrad.primitives import structure as _structure

__all__ = [
    "AxisData",
    "BatchTrace",
    "BatchTracer",
    "axis_primitive_batchers",
    "bdim_at_front",
    "broadcast",
    "defbroadcasting",
    "defreducer",
    "defvectorized",
    "fancy_primitive_batchers",
    "moveaxis",
    "not_mapped",
    "primitive_batchers",
    "register_vmappable",
    "unregister_vmappable",
]

not_mapped = None  # the batch dimension of a value that is the same for every lane


class AxisData(NamedTuple):
    """The vmapped axis a ``fancy_primitive_batchers`` rule sees: its ``name`` (``None``:
    anonymous), ``size``, and the SPMD/mesh names (``None`` in funcgrad's vmap)."""

    name: Any
    size: int
    spmd_name: Any = None
    explicit_mesh_axis: Any = None


def _axis_size(vals, dims) -> int:
    for x, d in zip(vals, dims):
        if d is not None:
            return _core.get_aval(x).shape[d]
    raise ValueError("a batching rule was called with no batched operand")


def _unbatched(p, vals, params):
    out = p.bind(*vals, **params)
    return (out, [None] * len(out)) if p.multiple_results else (out, None)


# ----------------------------------------------------------------------------------------------
# The registries (NOTE: [rule tables are views])


def _from_plain(p, rule):
    def batch(axis_size, vals, dims, **params):
        if all(d is None for d in dims):
            return _unbatched(p, vals, params)
        return rule(tuple(vals), tuple(dims), **params)

    return batch


def _to_plain(p, slot):
    return lambda vals, dims, **params: slot(_axis_size(vals, dims), list(vals), list(dims), **params)


def _from_fancy(p, rule):
    def batch(axis_size, vals, dims, **params):
        axis_data = AxisData(_batching.current_axis_name(), axis_size)
        return rule(axis_data, tuple(vals), tuple(dims), **params)

    return batch


def _to_fancy(p, slot):
    return lambda axis_data, vals, dims, **params: slot(axis_data.size, list(vals), list(dims), **params)


def _from_axis(p, rule):
    def batch(axis_size, vals, dims, **params):
        return rule(axis_size, _batching.current_axis_name(), None, tuple(vals), tuple(dims), **params)

    return batch


primitive_batchers = RuleTable("batching.primitive_batchers", "batch", _from_plain, _to_plain)
fancy_primitive_batchers = RuleTable("batching.fancy_primitive_batchers", "batch", _from_fancy, _to_fancy)
axis_primitive_batchers = WriteOnlyTable("batching.axis_primitive_batchers", "batch", _from_axis)


# ----------------------------------------------------------------------------------------------
# Helpers


def moveaxis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to ``dst`` (unchanged when they are equal).

    >>> moveaxis(np.zeros((2, 3)), 0, 1).shape
    (3, 2)
    """
    return x if src == dst else _structure.moveaxis(x, src, dst)


def broadcast(x, sz: int, axis: int, mesh_axis=None):
    """``x`` repeated ``sz`` times along a new axis at position ``axis``.

    >>> broadcast(np.ones(2), 3, 1).shape
    (2, 3)
    """
    del mesh_axis
    ndim = np.ndim(x) + 1
    return hooks.broadcast_batch(x, sz, axis % ndim)


def bdim_at_front(x, bdim: int | None, size: int, mesh_axis=None):
    """``x`` with its batch dimension first: moved there, or made by broadcasting when ``x`` is
    unbatched (``bdim`` ``None``).

    >>> bdim_at_front(np.ones((2, 3)), 1, 3).shape, bdim_at_front(np.ones(2), None, 4).shape
    ((3, 2), (4, 2))
    """
    if bdim is None:
        return broadcast(x, size, 0, mesh_axis)
    return moveaxis(x, bdim, 0)


def defvectorized(prim) -> None:
    """``prim`` acts on each element independently, with one operand: its batched result has the
    batch dimension where the operand had it. Example: this module's docstring."""

    def rule(axis_data, args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(x, **params), d

    fancy_primitive_batchers[prim] = rule


def defbroadcasting(prim) -> None:
    """``prim`` is elementwise over operands of equal shapes (or 0-d ones): batched operands go
    to the front (an unbatched operand of rank > 0 is broadcast along the batch), operands of
    lower rank get trailing axes.

    >>> import funcgrad
    >>> from funcgrad.extend.core import Primitive
    >>> add_p = Primitive("add_demo"); _ = add_p.def_impl(np.add)
    >>> _ = add_p.def_abstract_eval(lambda x, y: x if x.ndim >= y.ndim else y)
    >>> defbroadcasting(add_p)
    >>> funcgrad.vmap(add_p.bind, in_axes=(1, None))(np.ones((2, 3)), np.arange(2.0)).tolist()
    [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]
    """

    def rule(axis_data, args, dims, **params):
        shapes = {(np.shape(x), d) for x, d in zip(args, dims) if d is not None}
        if len(shapes) == 1 and all(d is not None or np.ndim(x) == 0 for x, d in zip(args, dims)):
            ((_, d),) = shapes
            out = prim.bind(*args, **params)
            return (out, [d] * len(out)) if prim.multiple_results else (out, d)
        size = axis_data.size
        args = [bdim_at_front(x, d, size) if np.ndim(x) else x for x, d in zip(args, dims)]
        ndim = max(np.ndim(x) for x in args)
        args = [
            x
            if d is None or np.ndim(x) == ndim
            else _structure.reshape(x, np.shape(x) + (1,) * (ndim - np.ndim(x)))
            for x, d in zip(args, dims)
        ]
        out = prim.bind(*args, **params)
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)

    fancy_primitive_batchers[prim] = rule


def defreducer(prim) -> None:
    """``prim`` reduces its one operand over the axes in its ``axes`` parameter: the batched
    reduction skips the batch dimension, which stays in the result.

    >>> import funcgrad
    >>> from funcgrad.extend.core import Primitive
    >>> from funcgrad.kernel.ir import ShapedArray
    >>> sum_p = Primitive("sum_demo"); _ = sum_p.def_impl(lambda x, axes: np.sum(x, axes))
    >>> _ = sum_p.def_abstract_eval(
    ...     lambda x, axes: ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype))
    >>> defreducer(sum_p)
    >>> funcgrad.vmap(lambda x: sum_p.bind(x, axes=(0,)), in_axes=1)(np.ones((4, 3))).tolist()
    [4.0, 4.0, 4.0]
    """

    def rule(axis_data, args, dims, *, axes, **params):
        (x,), (d,) = args, dims
        ndim = np.ndim(x)
        axes = tuple(a + 1 if a >= d else a for a in (ax % (ndim - 1) for ax in axes))
        kept = [i for i in range(ndim) if i not in axes]
        out = prim.bind(x, axes=axes, **params)
        return out, kept.index(d)

    fancy_primitive_batchers[prim] = rule
