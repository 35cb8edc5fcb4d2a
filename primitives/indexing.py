"""The indexing vocabulary of ``jax.lax``: dynamic_slice and dynamic_update_slice (defined here),
gather and the scatters (``primitives.gather``, ``primitives.scatter``) and the static structural
ops (``primitives.structure``), re-exported so ``funcgrad.numpy`` indexing and ``funcgrad.lax``
import one module.

Layer: primitives. Imports the funcgrad kernel, numpy and the sibling families ``structure``,
``elementwise``, ``gather`` and ``scatter``.

``dynamic_slice``/``dynamic_update_slice`` follow XLA: start indices are integer scalars (one
operand each, of one dtype) clamped so the window fits; the public wrappers first let negative
starts count from the end, as ``jax.lax`` does. With batched start indices their batch rules
become a gather (CLIP) and a scatter (CLIP, unique indices).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import aval_of, checked_impl, to_front
from funcgrad.primitives.gather import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _gather_batch,
    _linear_jvp,
    _scatter_batch,
    _tuple,
    _zeros_like_aval,
    default_fill_value,
    gather,
    gather_p,
    scatter_add,
    scatter_add_p,
)
from funcgrad.primitives.scatter import (
    scatter,
    scatter_max,
    scatter_max_p,
    scatter_min,
    scatter_min_p,
    scatter_mul,
    scatter_mul_p,
    scatter_p,
)
from funcgrad.primitives.structure import (
    axis_in_range,
    broadcasted_iota,
    concatenate,
    index_in_dim,
    iota,
    pad,
    reshape,
    rev,
    slice_,
    slice_in_dim,
)

from funcgrad.kernel.ad import Zero, ct_aval, is_undefined_primal, linear_taylor
from funcgrad.kernel.core import Primitive, Tracer
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# dynamic_slice(operand, *start_indices, slice_sizes): starts are clamped into bounds (XLA)


def _check_start_indices(name, operand, starts):
    if len(starts) != operand.ndim:
        raise TypeError(
            f"{name}: needs one start index per dimension of {operand.str_short()}, got {len(starts)}"
        )
    for s in starts:
        if s.ndim != 0 or s.dtype.kind not in "iu":
            raise TypeError(f"{name}: start indices must be integer scalars, got {s.str_short()}")
    if len({s.dtype for s in starts}) > 1:
        raise TypeError(
            f"{name}: start indices must share one dtype, got " + ", ".join(s.str_short() for s in starts)
        )


def _dynamic_slice_abstract_eval(operand, *starts, slice_sizes):
    _check_start_indices("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim or any(not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise TypeError(
            f"dynamic_slice: slice_sizes {slice_sizes} must give one size in [0, dim] per dimension "
            f"of {operand.str_short()}"
        )
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


def _clamped_starts(shape, starts, sizes):
    return [int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, shape, sizes)]


def _dynamic_slice_impl(operand, *starts, slice_sizes):
    operand = np.asarray(operand)
    lo = _clamped_starts(operand.shape, starts, slice_sizes)
    return operand[tuple(slice(a, a + k) for a, k in zip(lo, slice_sizes))]


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    if type(ct) is Zero:
        return [Zero(operand.aval)] + [None] * len(starts)
    # (zeros of the cotangent's type: unreduced where the operand is reduced, as JAX's)
    zeros = _zeros_like_aval(ct_aval(operand.aval))
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _index_vector(axis_size, starts, dims):
    """Stack scalar start indices (batched or not) into one batched ``(axis_size, n)`` array."""
    cols = [reshape(to_front(s, d, axis_size), (axis_size, 1)) for s, d in zip(starts, dims)]
    return concatenate(cols, 1)


def _dynamic_slice_batch(axis_size, vals, dims, *, slice_sizes):
    operand, *starts = vals
    od, *sds = dims
    if all(d is None for d in sds):
        # Only the operand is batched: slice the whole batch axis.
        zero = np.zeros((), aval_of(starts[0]).dtype) if starts else np.int32(0)
        new_starts = [*starts[:od], zero, *starts[od:]]
        sizes = (*slice_sizes[:od], axis_size, *slice_sizes[od:])
        return dynamic_slice_p.bind(operand, *new_starts, slice_sizes=sizes), od
    # Batched starts: a gather of one clamped window per lane (XLA's dynamic_slice clamps like CLIP).
    index = _index_vector(axis_size, starts, sds)
    nd = len(slice_sizes)
    dn = GatherDimensionNumbers(tuple(range(nd)), (), tuple(range(nd)))
    params = dict(
        dimension_numbers=dn,
        slice_sizes=slice_sizes,
        indices_are_sorted=True,
        unique_indices=True,
        mode=GatherScatterMode.CLIP,
        fill_value=None,
    )
    return _gather_batch(axis_size, [operand, index], [od, 0], **params)


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.def_impl(checked_impl(_dynamic_slice_abstract_eval, _dynamic_slice_impl))
dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract_eval)
dynamic_slice_p.def_jvp(_linear_jvp(dynamic_slice_p, (0,)))
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)
dynamic_slice_p.def_batch(_dynamic_slice_batch)
dynamic_slice_p.def_traits(sparse="dynamic_slice")
dynamic_slice_p.def_traits(linear=True)  # in the operand; the start indices are integers
dynamic_slice_p.def_taylor(linear_taylor(dynamic_slice_p))  # (linear in its inexact operands)


def _start_index_operands(name, x, start_indices, allow_negative_indices=True):
    """Start indices as scalar operands of one integer dtype; negative ones count from the end
    (as ``jax.lax.dynamic_slice`` does before XLA clamps)."""
    shape = aval_of(x).shape
    if isinstance(start_indices, np.ndarray | Tracer) or hasattr(start_indices, "_numpy"):
        if aval_of(start_indices).ndim != 1:
            raise TypeError(f"{name}: start_indices must be a sequence of scalars or a 1-D array")
        n = aval_of(start_indices).shape[0]
        start_indices = [reshape(slice_(start_indices, (i,), (i + 1,)), ()) for i in range(n)]
    start_indices = list(start_indices)
    if len(start_indices) != len(shape):
        raise TypeError(
            f"{name}: needs one start index per dimension of an operand of shape {shape}, got "
            f"{len(start_indices)}"
        )
    typed = [
        aval_of(s).dtype
        for s in start_indices
        if type(s) not in (int, bool) and not isinstance(s, np.integer)
    ]
    typed += [np.dtype(type(s)) for s in start_indices if isinstance(s, np.integer)]
    dtype = np.result_type(*typed) if typed else np.dtype(np.int32)
    if dtype.kind not in "iu":
        raise TypeError(f"{name}: start indices must be integers, got dtype {dtype.name}")
    out = []
    for s, n in zip(start_indices, shape):
        if type(s) in (int, bool) or isinstance(s, np.integer):
            s = int(s)
            out.append(np.asarray(s + n if s < 0 and allow_negative_indices else s, dtype))
            continue
        s = ew.convert_element_type(s, dtype)
        if allow_negative_indices and dtype.kind == "i":
            s = ew.select(ew.lt_p.bind(s, np.zeros((), dtype)), ew.add(s, np.asarray(n, dtype)), s)
        out.append(s)
    return out


def dynamic_slice(x, start_indices, slice_sizes, *, allow_negative_indices: bool = True):
    """The ``slice_sizes`` window of ``x`` at traced ``start_indices`` (``lax.dynamic_slice``).

    Negative starts count from the end; starts are then clamped so the window fits (XLA).

    >>> np.asarray(dynamic_slice(np.arange(5), [3], [3])).tolist()
    [2, 3, 4]
    """
    starts = _start_index_operands("dynamic_slice", x, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(x, *starts, slice_sizes=_tuple(slice_sizes))


def dynamic_slice_in_dim(x, start_index, slice_size: int, axis: int = 0):
    """``dynamic_slice`` along one axis (the others are taken whole).

    >>> dynamic_slice_in_dim(np.zeros((4, 5)), 2, 2, axis=1).shape
    (4, 2)
    """
    shape = aval_of(x).shape
    axis = axis_in_range("dynamic_slice_in_dim", axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(x, index, axis: int = 0, keepdims: bool = True):
    """Element ``index`` (traced) of ``axis``, keeping the axis unless ``keepdims=False``.

    >>> dynamic_index_in_dim(np.zeros((4, 5)), 1, keepdims=False).shape
    (5,)
    """
    out = dynamic_slice_in_dim(x, index, 1, axis)
    if keepdims:
        return out
    shape = list(aval_of(out).shape)
    del shape[axis_in_range("dynamic_index_in_dim", axis, len(shape))]
    return reshape(out, shape)


# ----------------------------------------------------------------------------------------------
# dynamic_update_slice(operand, update, *start_indices)


def _dus_abstract_eval(operand, update, *starts):
    _check_start_indices("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype:
        raise TypeError(
            f"dynamic_update_slice: update {update.str_short()} must have the operand's dtype "
            f"({operand.str_short()})"
        )
    if update.ndim != operand.ndim or any(u > n for u, n in zip(update.shape, operand.shape)):
        raise TypeError(
            f"dynamic_update_slice: update {update.str_short()} must have the operand's rank and fit "
            f"inside it ({operand.str_short()})"
        )
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


def _dus_impl(operand, update, *starts):
    out = np.array(operand, copy=True)
    update = np.asarray(update)
    lo = _clamped_starts(out.shape, starts, update.shape)
    out[tuple(slice(a, a + k) for a, k in zip(lo, update.shape))] = update
    return out


def _dus_transpose(ct, operand, update, *starts):
    no_starts = [None] * len(starts)
    if type(ct) is Zero:
        return [
            Zero(operand.aval) if is_undefined_primal(operand) else None,
            Zero(update.aval) if is_undefined_primal(update) else None,
            *no_starts,
        ]
    update_aval = update.aval if is_undefined_primal(update) else aval_of(update)
    ct_operand = ct_update = None
    if is_undefined_primal(operand):
        ct_operand = dynamic_update_slice_p.bind(ct, _zeros_like_aval(update_aval), *starts)
    if is_undefined_primal(update):
        ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
    return [ct_operand, ct_update, *no_starts]


def _dus_batch(axis_size, vals, dims):
    operand, update, *starts = vals
    od, ud, *sds = dims
    operand, update = to_front(operand, od, axis_size), to_front(update, ud, axis_size)
    if all(d is None for d in sds):
        zero = np.zeros((), aval_of(starts[0]).dtype) if starts else np.int32(0)
        return dynamic_update_slice_p.bind(operand, update, zero, *starts), 0
    # Batched starts: a scatter of one clamped window per lane (CLIP is XLA's dus clamping).
    index = _index_vector(axis_size, starts, sds)
    nd = len(starts)
    dn = ScatterDimensionNumbers(tuple(range(nd)), (), tuple(range(nd)))
    params = dict(
        dimension_numbers=dn, indices_are_sorted=True, unique_indices=True, mode=GatherScatterMode.CLIP
    )
    return _scatter_batch(scatter_p)(axis_size, [operand, index, update], [0, 0, 0], **params)


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_impl(checked_impl(_dus_abstract_eval, _dus_impl))
dynamic_update_slice_p.def_abstract_eval(_dus_abstract_eval)
dynamic_update_slice_p.def_jvp(_linear_jvp(dynamic_update_slice_p, (0, 1)))
dynamic_update_slice_p.def_transpose(_dus_transpose)
dynamic_update_slice_p.def_batch(_dus_batch)
dynamic_update_slice_p.def_traits(linear=True)  # jointly in operand and update
dynamic_update_slice_p.def_taylor(linear_taylor(dynamic_update_slice_p))  # (linear in its inexact operands)


def dynamic_update_slice(x, update, start_indices, *, allow_negative_indices: bool = True):
    """``x`` with the window at ``start_indices`` replaced by ``update`` (``lax.dynamic_update_slice``).

    Negative starts count from the end; starts are clamped so the update fits (XLA).

    >>> np.asarray(dynamic_update_slice(np.zeros(4), np.ones(2), [3])).tolist()
    [0.0, 0.0, 1.0, 1.0]
    """
    starts = _start_index_operands("dynamic_update_slice", x, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(x, update, *starts)


def dynamic_update_slice_in_dim(x, update, start_index, axis: int):
    """``dynamic_update_slice`` at ``start_index`` along ``axis`` (0 along the other axes).

    >>> dynamic_update_slice_in_dim(np.zeros((3, 4)), np.ones((3, 1)), 2, axis=1).shape
    (3, 4)
    """
    ndim = aval_of(x).ndim
    starts = [0] * ndim
    starts[axis_in_range("dynamic_update_slice_in_dim", axis, ndim)] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(x, update, index, axis: int):
    """Replace element ``index`` of ``axis`` by ``update`` (which may lack that axis)."""
    axis = axis_in_range("dynamic_update_index_in_dim", axis, aval_of(x).ndim)
    if aval_of(update).ndim == aval_of(x).ndim - 1:
        shape = list(aval_of(update).shape)
        shape.insert(axis, 1)
        update = reshape(update, shape)
    return dynamic_update_slice_in_dim(x, update, index, axis)


__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "broadcasted_iota",
    "concatenate",
    "default_fill_value",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_slice_p",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "dynamic_update_slice_p",
    "gather",
    "gather_p",
    "index_in_dim",
    "iota",
    "pad",
    "rev",
    "scatter",
    "scatter_add",
    "scatter_add_p",
    "scatter_max",
    "scatter_max_p",
    "scatter_min",
    "scatter_min_p",
    "scatter_mul",
    "scatter_mul_p",
    "scatter_p",
    "slice_",
    "slice_in_dim",
]
