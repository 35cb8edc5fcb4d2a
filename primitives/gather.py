"""Gather and scatter-add (each other's transpose) and the machinery every gather/scatter shares:
dimension numbers, modes, window arithmetic and shape checks.

Layer: primitives. Imports the funcgrad kernel, numpy and the sibling families ``structure`` and
``elementwise``. The other scatters are in ``primitives.scatter``; the public vocabulary (with
dynamic_slice and friends) is ``primitives.indexing``.

# NOTE: [gather and scatter modes]
# ``mode`` is a ``GatherScatterMode`` parameter of gather and of every scatter, with jax.lax's
# meaning and defaults. The *window* of an index is the block ``start .. start + size`` along each
# indexed dimension; it is in bounds when ``0 <= start <= dim - size`` for every dimension of
# ``start_index_map`` / ``scatter_dims_to_operand_dims``.
# - CLIP: starts are clamped into bounds first (XLA's native gather does this too).
# - FILL_OR_DROP (the default of the scatters, mode=None): a gather returns ``fill_value`` for the
#   *whole* window of an out-of-bounds index (the public ``gather`` resolves ``fill_value=None``
#   with ``default_fill_value``: NaN for inexact dtypes, the minimum of signed integer types, the
#   maximum of unsigned ones, True for bool); a scatter drops the whole window of an out-of-bounds
#   update (XLA's native scatter does this).
# - PROMISE_IN_BOUNDS (the default of ``gather``, mode=None, as in jax.lax): the caller promises
#   in-bounds indices; the NumPy impls clamp (gather) and drop (scatter), as XLA does natively.
# The XLA lowering must give the same results: native gather/scatter for CLIP (after clamping the
# indices) and PROMISE_IN_BOUNDS, and for FILL_OR_DROP a native gather whose windows are replaced by
# ``fill_value`` where the window check above fails (a scatter's native behaviour already drops).
# Gather's transpose is scatter-add with the same mode, so the pairs stay consistent.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np
from funcgrad.primitives._gather_checks import check_gather, check_scatter
from funcgrad.primitives._rules import aval_of, checked_impl, move_to_front, to_front

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal, linear_taylor
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# Dimension numbers and modes


class GatherDimensionNumbers(NamedTuple):
    """XLA's gather dimension numbers (``index_vector_dim`` is always the last axis of indices).

    - ``offset_dims``: output axes holding the window (slice) axes, in increasing order.
    - ``collapsed_slice_dims``: operand axes of slice size 1 dropped from the window.
    - ``start_index_map``: operand axis indexed by each component of an index vector.
    - ``operand_batching_dims`` / ``start_indices_batching_dims``: paired axes of the operand and of
      the indices that act as a batch (element ``b`` of indices reads element ``b`` of operand).
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """XLA's scatter dimension numbers (``index_vector_dim`` is always the last axis of indices).

    - ``update_window_dims``: axes of ``updates`` that are window axes, in increasing order.
    - ``inserted_window_dims``: operand axes of window size 1 that updates do not have.
    - ``scatter_dims_to_operand_dims``: operand axis indexed by each component of an index vector.
    - ``operand_batching_dims`` / ``scatter_indices_batching_dims``: paired batch axes.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """How gather/scatter treat out-of-bounds indices (see NOTE: [gather and scatter modes])."""

    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2

    @staticmethod
    def from_any(mode) -> GatherScatterMode:
        """``None``/"fill"/"drop" -> FILL_OR_DROP, "clip" -> CLIP, "promise_in_bounds".

        (``gather`` maps ``mode=None`` to PROMISE_IN_BOUNDS before calling this, as jax.lax does.)
        """
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode is None or mode in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        # Another library's enum (jax.lax.GatherScatterMode) maps by name.
        name = getattr(mode, "name", None)
        if name in GatherScatterMode.__members__:
            return GatherScatterMode[name]
        raise ValueError(
            f'Unknown gather/scatter mode "{mode}"; use "clip", "fill", "drop" or "promise_in_bounds"'
        )


def _tuple(xs) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _dimension_numbers(cls, dn):
    """``dn`` (a ``cls``, JAX's own, or a dict of its fields) as a ``cls`` of int tuples; the
    batching fields, which older objects lack, default to ``()``."""
    if isinstance(dn, dict):
        dn = cls(**dn)
    defaults = cls._field_defaults
    return cls(
        *[_tuple(getattr(dn, f, defaults[f]) if f in defaults else getattr(dn, f)) for f in cls._fields]
    )


def _gather_dnums(dn) -> GatherDimensionNumbers:
    return _dimension_numbers(GatherDimensionNumbers, dn)


def _scatter_dnums(dn) -> ScatterDimensionNumbers:
    return _dimension_numbers(ScatterDimensionNumbers, dn)


def default_fill_value(dtype):
    """The value an out-of-bounds gather window is filled with when ``fill_value`` is None."""
    dtype = np.dtype(dtype)
    if _dt.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    return int(np.iinfo(dtype).max)


class _IndexDtypeError(ValueError, TypeError):
    """JAX's ValueError for non-integer gather/scatter indices; a TypeError too, as funcgrad's
    dtype errors were."""


def _index_dtype_check(name, aval):
    if aval.dtype.kind not in "iu":  # (JAX's type and words first)
        raise _IndexDtypeError(f"indices must have an integer type ({name}: got {aval.str_short()})")


# ----------------------------------------------------------------------------------------------
# Shared helpers: rules that are linear in some operands and take integer indices in others


def _linear_jvp(primitive, linear: tuple[int, ...], tangent_params=None):
    """JVP of a primitive linear (jointly) in the operands at ``linear``: bind it on their tangents
    (zeros instantiated) with the other operands (indices) as they are."""

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(type(tangents[i]) is Zero for i in linear):
            return out, Zero.from_primal_value(out)
        args = [instantiate(tangents[i]) if i in linear else p for i, p in enumerate(primals)]
        tparams = params if tangent_params is None else {**params, **tangent_params}
        return out, primitive.bind(*args, **tparams)

    return jvp


def _zeros_like_aval(aval):
    return hooks.zeros(ShapedArray(aval.shape, aval.dtype, sharding=aval._sharding))


def _window_starts(operand_shape, indices, sizes, index_map, operand_batching, indices_batching, clip):
    """Per operand axis, the start of each window (arrays of the indices' batch shape, int64), and
    the mask of windows that are in bounds (see NOTE: [gather and scatter modes])."""
    batch_shape = indices.shape[:-1]
    starts = [np.zeros(batch_shape, np.int64) for _ in operand_shape]
    in_bounds = np.ones(batch_shape, np.bool_)
    for k, d in enumerate(index_map):
        s = indices[..., k].astype(np.int64)
        upper = operand_shape[d] - sizes[d]
        in_bounds &= (s >= 0) & (s <= upper)
        starts[d] = np.clip(s, 0, upper) if clip else s
    for od, idim in zip(operand_batching, indices_batching):
        ramp_shape = [1] * len(batch_shape)
        ramp_shape[idim] = batch_shape[idim]
        starts[od] = np.broadcast_to(np.arange(batch_shape[idim]).reshape(ramp_shape), batch_shape)
    return starts, in_bounds


def _window_index(starts, sizes, n_batch):
    """Index arrays (one per operand axis) of shape ``batch + sizes`` addressing every window."""
    nd = len(sizes)
    out = []
    for d, (s, size) in enumerate(zip(starts, sizes)):
        ramp = np.arange(size).reshape([size if e == d else 1 for e in range(nd)])
        out.append(s.reshape(s.shape + (1,) * nd) + ramp.reshape((1,) * n_batch + ramp.shape))
    return tuple(out)


def _window_sizes(operand_ndim, updates_shape, dn: ScatterDimensionNumbers):
    sizes, pos = [], 0
    for d in range(operand_ndim):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(
                updates_shape[dn.update_window_dims[pos]] if pos < len(dn.update_window_dims) else -1
            )
            pos += 1
    return tuple(sizes)


def _gather_dnums_of_scatter(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather reading exactly the windows a scatter writes (its transpose)."""
    return GatherDimensionNumbers(
        dn.update_window_dims,
        dn.inserted_window_dims,
        dn.scatter_dims_to_operand_dims,
        dn.operand_batching_dims,
        dn.scatter_indices_batching_dims,
    )


def _scatter_dnums_of_gather(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        dn.offset_dims,
        dn.collapsed_slice_dims,
        dn.start_index_map,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
    )


def _check_sorted_unique(name, what, dims, bound):
    if list(dims) != sorted(set(dims)) or any(not 0 <= d < bound for d in dims):
        raise TypeError(f"{name}: {what} {dims} must be sorted, distinct and in [0, {bound})")


def _check_batching(name, operand, indices, operand_batching, indices_batching, what):
    if len(operand_batching) != len(indices_batching):
        raise TypeError(
            f"{name}: operand_batching_dims {operand_batching} and {what} {indices_batching} must "
            "have the same length"
        )
    _check_sorted_unique(name, "operand_batching_dims", operand_batching, operand.ndim)
    if len(set(indices_batching)) != len(indices_batching) or any(
        not 0 <= d < indices.ndim - 1 for d in indices_batching
    ):
        raise TypeError(
            f"{name}: {what} {indices_batching} must be distinct axes of the indices {indices.str_short()} "
            "other than the last (the index vector)"
        )
    for od, idim in zip(operand_batching, indices_batching):
        if operand.shape[od] != indices.shape[idim]:
            raise TypeError(
                f"{name}: operand batching dimension {od} (size {operand.shape[od]}) and indices "
                f"batching dimension {idim} (size {indices.shape[idim]}) must have the same size"
            )


# ----------------------------------------------------------------------------------------------
# gather(operand, indices): windows of operand at the index vectors in the last axis of indices


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value, **_):
    name, dn = "gather", dimension_numbers
    _index_dtype_check(name, indices)
    check_gather(operand, indices, **dn._asdict(), slice_sizes=slice_sizes)  # (JAX's words first)
    if indices.ndim == 0:
        raise TypeError(
            f"gather: indices must have at least one axis (the index vector), got {indices.str_short()}"
        )
    n_batch = indices.ndim - 1
    out_rank = n_batch + len(dn.offset_dims)
    _check_sorted_unique(name, "offset_dims", dn.offset_dims, out_rank)
    _check_sorted_unique(name, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim)
    if len(dn.start_index_map) != indices.shape[-1]:
        raise TypeError(
            f"gather: start_index_map {dn.start_index_map} needs one entry per component of the index "
            f"vector (last axis of {indices.str_short()})"
        )
    if len(set(dn.start_index_map)) != len(dn.start_index_map) or any(
        not 0 <= d < operand.ndim for d in dn.start_index_map
    ):
        raise TypeError(
            f"gather: start_index_map {dn.start_index_map} must be distinct axes of {operand.str_short()}"
        )
    _check_batching(
        name,
        operand,
        indices,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        "start_indices_batching_dims",
    )
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims) or set(dn.start_index_map) & set(
        dn.operand_batching_dims
    ):
        raise TypeError(
            f"gather: operand_batching_dims {dn.operand_batching_dims} may not be collapsed or indexed"
        )
    if len(slice_sizes) != operand.ndim:
        raise TypeError(
            f"gather: slice_sizes {slice_sizes} needs one size per dimension of {operand.str_short()}"
        )
    if len(dn.offset_dims) + len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims) != operand.ndim:
        raise TypeError(
            f"gather: every operand axis must be an offset, collapsed or batching axis: offset_dims "
            f"{dn.offset_dims}, collapsed_slice_dims {dn.collapsed_slice_dims}, operand_batching_dims "
            f"{dn.operand_batching_dims} for {operand.str_short()}"
        )
    empty = any(k == 0 for k in indices.shape)  # (JAX checks slice sizes only when there are indices)
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not empty and not 0 <= s <= n:
            raise TypeError(
                f"gather: slice size {s} of dimension {d} must be in [0, {n}] for {operand.str_short()}"
            )
        if d in dn.collapsed_slice_dims and s != 1:
            raise TypeError(f"gather: collapsed dimension {d} must have slice size 1, got {s}")
        if d in dn.operand_batching_dims and s > 1:
            raise TypeError(f"gather: operand batching dimension {d} must have slice size 1, got {s}")
    if not isinstance(mode, GatherScatterMode):
        raise TypeError(f"gather: mode must be a GatherScatterMode, got {mode!r}")
    window = [
        s
        for d, s in enumerate(slice_sizes)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    ]
    batch = iter(indices.shape[:-1])
    win = iter(window)
    shape = [next(win) if d in dn.offset_dims else next(batch) for d in range(out_rank)]
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _batch_then_offset_perm(n_batch, offset_dims):
    """Permutation putting (batch axes..., window axes...) at their output positions."""
    out_rank = n_batch + len(offset_dims)
    batch = iter(range(n_batch))
    return [n_batch + offset_dims.index(d) if d in offset_dims else next(batch) for d in range(out_rank)]


def _filler(fill, dtype):
    # fill_value converted as lax converts (JAX fills with full_like): -7 in uint32 wraps to 2**32 - 7,
    # as the lowering's constant does, where NumPy 2's asarray(-7, uint32) raises OverflowError
    with np.errstate(all="ignore"):
        return np.asarray(fill).astype(dtype)


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value, **_):
    dn = dimension_numbers
    operand, indices = np.asarray(operand), np.asarray(indices)
    n_batch = indices.ndim - 1
    starts, in_bounds = _window_starts(
        operand.shape,
        indices,
        slice_sizes,
        dn.start_index_map,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        clip=True,
    )
    out = operand[_window_index(starts, slice_sizes, n_batch)]
    if mode is GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
        out = np.where(
            in_bounds.reshape(in_bounds.shape + (1,) * operand.ndim), out, _filler(fill, operand.dtype)
        )
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    out = out.reshape(indices.shape[:-1] + tuple(s for d, s in enumerate(slice_sizes) if d not in dropped))
    return np.transpose(out, _batch_then_offset_perm(n_batch, list(dn.offset_dims)))


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value, **flags):
    if is_undefined_primal(indices):
        raise ValueError("gather is not linear in its indices")
    if type(ct) is Zero:
        return [Zero(operand.aval), None]
    # (zeros of the cotangent's dtype, as JAX's rule: a custom_vjp may give a bfloat16 cotangent
    # for a float8 operand, and the scatter-add takes it as it is)
    zeros = _zeros_like_aval(operand.aval.update(dtype=aval_of(ct).dtype))
    sdn = _scatter_dnums_of_gather(dimension_numbers)
    return [scatter_add_p.bind(zeros, indices, ct, dimension_numbers=sdn, mode=mode, **flags), None]


def _shift(dims, by=1):
    return tuple(d + by for d in dims)


def _gather_batch(axis_size, vals, dims, *, dimension_numbers, slice_sizes, **params):
    (operand, indices), (od, idim) = vals, dims
    dn = dimension_numbers
    if idim is None:
        # The batch axis becomes the first window axis (output axis 0).
        operand = move_to_front(operand, od)
        new = GatherDimensionNumbers(
            (0, *_shift(dn.offset_dims)),
            _shift(dn.collapsed_slice_dims),
            _shift(dn.start_index_map),
            _shift(dn.operand_batching_dims),
            dn.start_indices_batching_dims,
        )
        sizes = (axis_size, *slice_sizes)
    elif od is None:
        # The batch axis becomes the first batch axis of the indices (output axis 0).
        indices = move_to_front(indices, idim)
        new = GatherDimensionNumbers(
            _shift(dn.offset_dims),
            dn.collapsed_slice_dims,
            dn.start_index_map,
            dn.operand_batching_dims,
            _shift(dn.start_indices_batching_dims),
        )
        sizes = slice_sizes
    else:
        # Both batched: pair the two batch axes as operand/indices batching dimensions.
        operand, indices = move_to_front(operand, od), move_to_front(indices, idim)
        new = GatherDimensionNumbers(
            _shift(dn.offset_dims),
            _shift(dn.collapsed_slice_dims),
            _shift(dn.start_index_map),
            (0, *_shift(dn.operand_batching_dims)),
            (0, *_shift(dn.start_indices_batching_dims)),
        )
        # A batching axis has slice size 1, or 0 when the batch is empty (XLA allows 0 or 1; 1 would
        # not fit in an axis of size 0: vmap over zero cotangents, issue 33).
        sizes = (min(axis_size, 1), *slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes, **params), 0


gather_p = Primitive("gather")
gather_p.def_impl(checked_impl(_gather_abstract_eval, _gather_impl))
gather_p.def_abstract_eval(_gather_abstract_eval)


# Eagerly as staged (the abstract evals): the result's weak type is the operand's, whatever the
# indices' (an eager update of a weak array was strong; JAX's gather and scatter keep it weak).
def _operand_weak_type(params, args) -> bool:
    return aval_of(args[0]).weak_type


gather_p.weak_type_of = _operand_weak_type
gather_p.def_jvp(_linear_jvp(gather_p, (0,), tangent_params={"fill_value": 0}))
gather_p.def_transpose(_gather_transpose)
gather_p.def_batch(_gather_batch)
gather_p.def_traits(linear=True, sparse="gather")  # in the operand; the indices are integers
gather_p.def_taylor(linear_taylor(gather_p, {"fill_value": 0}))  # (linear in the operand)


def gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    mode=None,
    fill_value=None,
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
):
    """XLA's Gather (``lax.gather``): the ``slice_sizes`` windows of ``operand`` starting at the index
    vectors in the last axis of ``start_indices``; see ``GatherDimensionNumbers`` and NOTE: [gather
    and scatter modes] for ``mode``/``fill_value``.

    Rows 2 and 0 of a matrix:

    >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> np.asarray(gather(np.arange(6).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2))).tolist()
    [[4, 5], [0, 1]]
    """
    mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(aval_of(operand).dtype) if fill_value is None else fill_value
        fill = fill.item() if isinstance(fill, np.ndarray | np.generic) else fill
    else:
        fill = None  # ignored by the other modes; None keeps the params canonical
    return gather_p.bind(
        operand,
        start_indices,
        dimension_numbers=_gather_dnums(dimension_numbers),
        slice_sizes=_tuple(slice_sizes),
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=mode,
        fill_value=fill,
    )


# ----------------------------------------------------------------------------------------------
# The scatter family: scatter (set), scatter-add, scatter-mul, scatter-min, scatter-max


def _scatter_abstract_eval(name, numeric_only):
    def abstract_eval(operand, indices, updates, *, dimension_numbers, mode, **_):
        dn = dimension_numbers
        _index_dtype_check(name, indices)
        check_scatter(operand, indices, updates, **dn._asdict())  # (JAX's words first)
        if operand.dtype != updates.dtype:
            raise TypeError(
                f"{name}: updates {updates.str_short()} must have the operand's dtype ({operand.str_short()})"
            )
        if numeric_only and operand.dtype == np.bool_:
            raise TypeError(f"{name} does not accept boolean operands ({operand.str_short()})")
        if indices.ndim == 0:
            raise TypeError(f"{name}: indices must have at least one axis (the index vector)")
        _check_sorted_unique(name, "update_window_dims", dn.update_window_dims, updates.ndim)
        _check_sorted_unique(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim)
        _check_batching(
            name,
            operand,
            indices,
            dn.operand_batching_dims,
            dn.scatter_indices_batching_dims,
            "scatter_indices_batching_dims",
        )
        to_operand = dn.scatter_dims_to_operand_dims
        if len(to_operand) != indices.shape[-1] or len(set(to_operand)) != len(to_operand):
            raise TypeError(
                f"{name}: scatter_dims_to_operand_dims {to_operand} needs one distinct operand axis per "
                f"component of the index vector (last axis of {indices.str_short()})"
            )
        if any(not 0 <= d < operand.ndim or d in dn.operand_batching_dims for d in to_operand):
            raise TypeError(
                f"{name}: bad scatter_dims_to_operand_dims {to_operand} for {operand.str_short()}"
            )
        if (
            len(dn.update_window_dims) + len(dn.inserted_window_dims) + len(dn.operand_batching_dims)
            != operand.ndim
        ):
            raise TypeError(
                f"{name}: every operand axis must be a window, inserted or batching axis: "
                f"update_window_dims {dn.update_window_dims}, "
                f"inserted_window_dims {dn.inserted_window_dims}, "
                f"operand_batching_dims {dn.operand_batching_dims} for {operand.str_short()}"
            )
        if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
            raise TypeError(f"{name}: inserted_window_dims and operand_batching_dims must be disjoint")
        scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        if [updates.shape[d] for d in scatter_axes] != list(indices.shape[:-1]):
            raise TypeError(
                f"{name}: the scatter axes of updates {updates.str_short()} (those not in update_window_dims "
                f"{dn.update_window_dims}) must match the batch axes of the indices {indices.str_short()}"
            )
        sizes = _window_sizes(operand.ndim, updates.shape, dn)
        # XLA bounds the window axes of updates only: an inserted or batching axis (implicit size 1)
        # may be empty, as the batch axis of a vmap over a batch of size 0 is (issue 33).
        implicit = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        if any(s > n for d, (s, n) in enumerate(zip(sizes, operand.shape)) if d not in implicit):
            raise TypeError(f"{name}: update windows {sizes} do not fit in {operand.str_short()}")
        if not isinstance(mode, GatherScatterMode):
            raise TypeError(f"{name}: mode must be a GatherScatterMode, got {mode!r}")
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)

    return abstract_eval


def _scatter_impl(ufunc):
    def impl(operand, indices, updates, *, dimension_numbers, mode, **_):
        dn = dimension_numbers
        out = np.array(operand, copy=True, order="C")  # C order: `flat` below must be a view
        if out.size == 0:  # nothing to write into (every window is out of bounds)
            return out
        indices, updates = np.asarray(indices), np.asarray(updates, out.dtype)
        sizes = _window_sizes(out.ndim, updates.shape, dn)
        clip = mode is GatherScatterMode.CLIP
        starts, in_bounds = _window_starts(
            out.shape,
            indices,
            sizes,
            dn.scatter_dims_to_operand_dims,
            dn.operand_batching_dims,
            dn.scatter_indices_batching_dims,
            clip=clip,
        )
        if clip:
            in_bounds[...] = True
        scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        upd = np.transpose(updates, scatter_axes + list(dn.update_window_dims)).reshape(
            indices.shape[:-1] + sizes
        )
        mask = np.broadcast_to(in_bounds.reshape(in_bounds.shape + (1,) * out.ndim), upd.shape)
        vals = upd[mask]
        if out.ndim:
            where = tuple(
                np.broadcast_to(i, upd.shape)[mask] for i in _window_index(starts, sizes, indices.ndim - 1)
            )
            flat_index = np.ravel_multi_index(where, out.shape)
        else:
            flat_index = np.zeros(vals.shape, np.intp)
        flat = out.reshape(-1)
        if ufunc is None:
            flat[flat_index] = vals  # duplicates: the last update wins (XLA: unspecified)
        else:
            ufunc.at(flat, flat_index, vals)
        return out

    return impl


def _declare_scatter(primitive, ufunc, numeric_only):
    """Impl and abstract eval of a scatter (``ufunc=None``: replace)."""
    abstract_eval = _scatter_abstract_eval(primitive.name, numeric_only)
    primitive.def_impl(checked_impl(abstract_eval, _scatter_impl(ufunc)))
    primitive.def_abstract_eval(abstract_eval)
    primitive.weak_type_of = _operand_weak_type


def _scatter_batch(primitive):
    def rule(axis_size, vals, dims, *, dimension_numbers, **params):
        # All three operands get the batch axis first, paired as operand/indices batching dims.
        operand, indices, updates = (to_front(v, d, axis_size) for v, d in zip(vals, dims))
        dn = dimension_numbers
        new = ScatterDimensionNumbers(
            _shift(dn.update_window_dims),
            _shift(dn.inserted_window_dims),
            _shift(dn.scatter_dims_to_operand_dims),
            (0, *_shift(dn.operand_batching_dims)),
            (0, *_shift(dn.scatter_indices_batching_dims)),
        )
        return primitive.bind(operand, indices, updates, dimension_numbers=new, **params), 0

    return rule


def _inverse_gather(x, indices, updates_shape, dimension_numbers, mode, fill_value, flags):
    """Gather from ``x`` exactly the windows a scatter with these dimension numbers writes: the
    result has the shape of the scatter's ``updates``."""
    shape = aval_of(x).shape
    sizes = _window_sizes(len(shape), updates_shape, dimension_numbers)
    # An empty batching axis is read with slice size 0, not 1 (see _gather_batch).
    sizes = tuple(
        0 if d in dimension_numbers.operand_batching_dims and shape[d] == 0 else s
        for d, s in enumerate(sizes)
    )
    return gather_p.bind(
        x,
        indices,
        dimension_numbers=_gather_dnums_of_scatter(dimension_numbers),
        slice_sizes=sizes,
        mode=mode,
        fill_value=fill_value,
        **flags,
    )


def _zero_cts(operand, updates):
    return [
        Zero(operand.aval) if is_undefined_primal(operand) else None,
        None,
        Zero(updates.aval) if is_undefined_primal(updates) else None,
    ]


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, **flags):
    if type(ct) is Zero:
        return _zero_cts(operand, updates)
    ct_updates = None
    if is_undefined_primal(updates):
        ct_updates = _inverse_gather(ct, indices, updates.aval.shape, dimension_numbers, mode, 0, flags)
    return [ct if is_undefined_primal(operand) else None, None, ct_updates]


scatter_add_p = Primitive("scatter-add")
scatter_add_p.def_traits(may_produce_nan=True)
_declare_scatter(scatter_add_p, np.add, numeric_only=True)
scatter_add_p.def_jvp(_linear_jvp(scatter_add_p, (0, 2)))
scatter_add_p.def_transpose(_scatter_add_transpose)
scatter_add_p.def_batch(_scatter_batch(scatter_add_p))
scatter_add_p.def_traits(linear=True)  # jointly in operand and updates
scatter_add_p.def_taylor(linear_taylor(scatter_add_p))  # (linear in its inexact operands)


def _scatter_binder(primitive, doc_name):
    def bind(
        operand,
        scatter_indices,
        updates,
        dimension_numbers,
        mode=None,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
    ):
        return primitive.bind(
            operand,
            scatter_indices,
            updates,
            dimension_numbers=_scatter_dnums(dimension_numbers),
            indices_are_sorted=bool(indices_are_sorted),
            unique_indices=bool(unique_indices),
            mode=GatherScatterMode.from_any(mode),
        )

    bind.__name__ = bind.__qualname__ = doc_name
    return bind


scatter_add = _scatter_binder(scatter_add_p, "scatter_add")
scatter_add.__doc__ = """Scatter with addition (``lax.scatter_add``): duplicate indices accumulate.

>>> dn = ScatterDimensionNumbers((), (0,), (0,))
>>> np.asarray(scatter_add(np.zeros(3), np.array([[1], [1]]), np.array([2.0, 3.0]), dn)).tolist()
[0.0, 5.0, 0.0]
"""
