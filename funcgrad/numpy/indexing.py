"""NumPy indexing of funcgrad arrays: ``x[idx]`` (the functional updates ``x.at[idx].set(y)``, which
index with the same machinery, are ``funcgrad.numpy.index_update``).

Layer: surface. Imports ``funcgrad.numpy._core`` and the primitive catalog (structure, indexing,
elementwise families).

# NOTE: [indexing semantics]
# ``x[idx]`` supports NumPy's basic and advanced indexing: ints, slices (negative steps too),
# ``None``/``newaxis``, ``Ellipsis``, integer arrays (broadcast together, placed where NumPy places
# them: at the first advanced index if the advanced indices are adjacent, else in front) and boolean
# masks. Out-of-bounds indices follow JAX, not NumPy: a retrieval *clamps* every index (Python ints
# included, so ``arange(10)[11]`` is 9 and behaves the same under ``jit``); an update (``.at[]``)
# *drops* out-of-bounds updates. ``.at[idx].get(mode='fill', fill_value=...)`` returns the fill value
# instead. A boolean mask needs its value to know the result's shape, so it works on concrete
# arrays only; under ``jit``/``vmap`` it raises ``NonConcreteBooleanIndexError`` pointing to
# ``where`` or to the ``size=`` argument of ``nonzero``.
#
# Lowering: static ints and slices become ``slice``/``rev``/``squeeze`` (no gather), a traced scalar
# index becomes ``dynamic_slice``, and all integer-array indices become *one* ``gather``. Updates
# index an iota of ``x``'s flat positions with the same machinery (retrieval semantics with
# ``mode='fill'``, so dropped positions get an out-of-range id) and scatter into the flattened array,
# so every index form that can be read can be written, with the same placement rules.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence

import numpy as np

from funcgrad import _transfer_guard
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    concrete_int,
    constant,
    select,
)
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import size_extremum

__all__ = [
    "NonConcreteBooleanIndexError",
]


_guard = _transfer_guard.state
# (the public indexing entry points: x[idx] here, x.at[idx] in index_update.py)
INDEX_FILES = (__file__, os.path.join(os.path.dirname(__file__), "index_update.py"))


def index_transfer(idx, shape: tuple[int, ...]):
    """NOTE: [transfer guard]: the host value JAX's eager indexing of an array of ``shape`` with
    ``idx`` transfers to the device (its ``dynamic_slice`` starts, gather indices), or None where
    JAX's static route transfers nothing: ``None``, ``...``, whole-axis slices and slices with a
    step other than 1 (``x[:]``, ``x[::2]``, ``x[::-1]``). An int or a step-1 slice that is not the
    whole axis (``x[0]``, ``x[1:]``) is a weak int32 start; a NumPy index array is itself; a
    mask is its int32 positions; an integer Array index transfers a weak int32 too (its bounds
    normalisation), except unsigned ones (no negative indices to wrap).

    >>> index_transfer((slice(None), 1), (2, 3)), index_transfer(slice(None, None, 2), (4,))
    (0, None)
    """
    parts = idx if isinstance(idx, tuple) else (idx,)

    def width(i):
        if i is None or i is Ellipsis or isinstance(i, bool | np.bool_):
            return 0
        if getattr(i, "dtype", None) == np.bool_:
            return np.ndim(i)
        return 1

    dim = 0
    for pos, i in enumerate(parts):
        if i is Ellipsis:
            dim = len(shape) - sum(width(j) for j in parts[pos + 1 :])
            continue
        if isinstance(i, slice):
            if dim < len(shape):
                try:
                    start, stop, step = i.indices(shape[dim])
                except TypeError:  # (a traced bound)
                    return 0
                if step == 1 and (start, stop) != (0, shape[dim]):
                    return 0
        elif isinstance(i, bool | np.bool_):
            if i:
                return np.zeros(1, np.int32)
        elif isinstance(i, int | np.integer):
            return 0
        elif isinstance(i, np.ndarray):
            return np.flatnonzero(i).astype(np.int32) if i.dtype == np.bool_ else i
        elif getattr(i, "dtype", None) == np.bool_:
            value = core.concrete_value(i)
            return np.zeros(0 if value is None else int(np.count_nonzero(value)), np.int32)
        elif hasattr(i, "dtype") and np.issubdtype(i.dtype, np.signedinteger):
            return 0
        dim += width(i)
    return None


class NonConcreteBooleanIndexError(core.JAXIndexError):
    """A boolean mask with a traced value was used as an index (its result shape is unknown)."""


# ``jax_check_static_indices`` (funcgrad.config): a static int index out of bounds raises
# IndexError instead of being clamped.
check_static_indices = False


def _check_static(entries, shape):
    axis = 0
    for kind, value in entries:
        if kind == _INT and not -shape[axis] <= value < shape[axis]:
            raise IndexError(f"index {value} out of bounds for axis {axis} with size {shape[axis]}")
        axis += kind in (_SLICE, _INT, _SCALAR, _ARRAY)


def _oob_ints_dynamic(entries, shape):
    """An int index out of bounds of a nonempty axis as a dynamic (scalar) index: JAX's static-slice
    route refuses it, so it is a ``dynamic_slice`` (clamped), which checkify's index checks see."""
    out, axis = [], 0
    for kind, value in entries:
        if kind == _INT and shape[axis] and not -shape[axis] <= value < shape[axis]:
            kind = _SCALAR
        out.append((kind, value))
        axis += kind in (_SLICE, _INT, _SCALAR, _ARRAY)
    return out


class IndexTypeError(IndexError, TypeError):
    """An index of a type that cannot index (a float, a string): NumPy raises IndexError, JAX
    TypeError; this is both, so either ``except`` catches it."""


def _bool_mask_error(where: str) -> NonConcreteBooleanIndexError:
    return NonConcreteBooleanIndexError(
        f"Array boolean indices must be concrete; got a traced boolean mask in {where}. The shape of "
        "the result depends on the mask's values, which are unknown inside jit/vmap/grad tracing. "
        "Use funcgrad.numpy.where(mask, x, fallback) to keep the shape, or nonzero(mask, size=N) / "
        "argwhere(mask, size=N) to get a fixed number of indices."
    )


# ----------------------------------------------------------------------------------------------
# Index normalization


_SLICE, _INT, _SCALAR, _ARRAY, _NEWAXIS = "slice", "int", "scalar", "array", "newaxis"
# A new size-1 axis indexed by an integer array: NumPy's ``x[False]`` (an empty array: shape
# (0, ...)), and ``True`` among other advanced indices (the array ``[0]``).
_EMPTY_NEWAXIS = "empty-newaxis"
_TRUE = "true"  # a scalar True, until _expand knows whether it is alone (see _scalar_trues)
# An Ellipsis that stands for no axis: it still separates the advanced indices around it, as in
# NumPy (``x[:, [0, 1], ..., [0, 1]]`` of a 3-d x puts the advanced axis in front).
_GAP = "gap"


def _is_int_dtype(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _index_array(i, where):
    """An index that is an array (or a list): an integer Array/ndarray/tracer, or a bool mask."""
    if isinstance(i, list | tuple):
        i = asarray(i) if any(isinstance(v, core.Tracer | Array) for v in _flatten(i)) else np.asarray(i)
        if i.dtype == np.float64 and i.size == 0:
            i = i.astype(np.int64)
    return i


def _flatten(xs):
    for x in xs:
        if isinstance(x, list | tuple):
            yield from _flatten(x)
        else:
            yield x


def _unpacks(i) -> bool:
    return (isinstance(i, np.ndarray | Array | core.Tracer) and np.ndim(i) != 0) or (
        isinstance(i, Sequence | slice) or i is Ellipsis or i is None
    )


def refuse_sequence_index(idx) -> None:
    """JAX's TypeError for a list (any non-tuple sequence) as an index, ``x[[0, 1]]`` and
    ``x.at[[0, 1]]``: NumPy reads it as an index array, or (holding slices, ``None`` or ``...``) as
    a tuple; JAX refuses both, in these words."""
    if type(idx) is tuple or not isinstance(idx, Sequence) or isinstance(idx, str):
        return
    fix = "tuple(seq)" if any(_unpacks(i) for i in idx) else "array(seq)"
    raise TypeError(
        "Using a non-tuple sequence for multidimensional indexing is not allowed; "
        f"use `arr[{fix}]` instead of `arr[seq]`. "
        "See https://github.com/jax-ml/jax/issues/4564 for more information."
    )


def _expand(idx, shape: tuple[int, ...], where: str):
    """The index as a list of ``(kind, value)`` entries covering every dimension of the array."""
    ndim = len(shape)
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = []
    ellipsis_at = None
    consumed = 0
    for position, i in enumerate(idx):
        if i is None:
            entries.append((_NEWAXIS, None))
        elif i is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis_at = len(entries)
        elif isinstance(i, slice):
            entries.append((_SLICE, _static_slice(i)))
            consumed += 1
        elif isinstance(i, bool | np.bool_):
            entries.append((_TRUE, None) if i else (_EMPTY_NEWAXIS, np.zeros(0, np.int64)))
        elif isinstance(i, int | np.integer):
            entries.append((_INT, int(i)))
            consumed += 1
        else:
            if isinstance(i, str):
                raise IndexTypeError(
                    f"JAX does not support string indexing; got index={i!r} (only integers, slices, "
                    "ellipsis, None and integer or boolean arrays are valid indices)"
                )
            arr = _index_array(i, where)
            if not hasattr(arr, "dtype") or isinstance(arr, float | complex):
                raise IndexTypeError(
                    f"Indexer must have integer or boolean type, got indexer with type {type(i).__name__} at "
                    f"position {position}, indexer value {i!r}: only integers, slices (`:`), ellipsis "
                    "(`...`), None (`numpy.newaxis`) and integer or boolean arrays are valid indices"
                )
            if arr.dtype == np.bool_:
                value = core.concrete_value(arr)
                if value is None:
                    raise _bool_mask_error(where)
                if value.ndim == 0:
                    entries.append((_TRUE, None) if value else (_EMPTY_NEWAXIS, np.zeros(0, np.int64)))
                    continue
                if ellipsis_at is None:
                    _check_mask_shape(value.shape, shape[consumed : consumed + value.ndim], consumed)
                for part in np.nonzero(value):
                    entries.append((_ARRAY, part))
                consumed += value.ndim
                continue
            if not _is_int_dtype(arr.dtype):
                raise IndexTypeError(
                    f"Indexer must have integer or boolean type, got indexer with type {arr.dtype} at "
                    f"position {position}: arrays used as indices must be of integer (or boolean) type"
                )
            if arr.ndim == 0:
                value = core.concrete_value(arr)
                entries.append((_INT, int(value)) if value is not None else (_SCALAR, arr))
            else:
                entries.append((_ARRAY, arr))
            consumed += 1
    if consumed > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {consumed} were indexed")
    fill = [(_SLICE, slice(None))] * (ndim - consumed)
    if ellipsis_at is None:
        entries.extend(fill)
    else:
        entries[ellipsis_at:ellipsis_at] = fill or [(_GAP, None)]
    return _scalar_trues(entries)


def _scalar_trues(entries):
    """A scalar ``True`` is a 0-d boolean mask, an advanced index of shape (1,) that consumes no
    axis (NumPy): with other advanced indices (arrays, ints, another boolean) it joins them, so
    ``x[0, :2, True]`` puts its axis in front and ``x[:2, [0, 2], True]`` broadcasts it away; alone
    it is a new axis where it stands (``x[..., True]``), without a gather."""
    trues = sum(kind == _TRUE for kind, _ in entries)
    if not trues:
        return entries
    others = any(kind in (_INT, _SCALAR, _ARRAY, _EMPTY_NEWAXIS) for kind, _ in entries)
    alone = trues == 1 and not others
    new = (_NEWAXIS, None) if alone else (_EMPTY_NEWAXIS, np.zeros(1, np.int64))
    return [new if kind == _TRUE else (kind, value) for kind, value in entries]


def _check_mask_shape(mask_shape, array_shape, first_axis):
    # An empty mask selects nothing whatever its sizes (NumPy's reading, and JAX's): x[m] of a
    # (3, 4) x and a (0, 4) or (3, 0) mask is empty, not an error.
    for k, (m, n) in enumerate(zip(mask_shape, array_shape)):
        if m != n and 0 not in mask_shape:
            raise IndexError(  # (JAX's words, then NumPy's)
                f"boolean index did not match shape of indexed array in index {first_axis}: got "
                f"{tuple(mask_shape)}, expected {tuple(array_shape)}; along axis {first_axis + k} the "
                f"array has size {n} and the boolean index size {m}"
            )
    if len(mask_shape) > len(array_shape):
        raise IndexError(f"too many indices for array: boolean mask of shape {mask_shape}")


def _static_slice(s: slice) -> slice:
    def part(v, name):
        if v is None:
            return None
        value = core.concrete_value(v) if isinstance(v, core.Tracer | Array) else v
        if value is None:
            raise IndexError(
                f"slice {name} must be static (a Python int); got a traced value. Use "
                "funcgrad.lax.dynamic_slice(x, start, size) for a traced start with a static size."
            )
        try:
            return int(np.asarray(value).item()) if not isinstance(value, int) else value
        except (TypeError, ValueError):
            raise TypeError(f"slice indices must be integers or None, got {v!r}") from None

    return slice(part(s.start, "start"), part(s.stop, "stop"), part(s.step, "step"))


# ----------------------------------------------------------------------------------------------
# Dynamic slices: jax.ds


@dataclasses.dataclass(frozen=True)
class Slice:
    """``size`` elements from ``start`` every ``stride`` along one axis; ``start`` may be traced
    (``jax.ds``'s ``Slice``). As an index, ``x[ds(i, n)]`` is ``lax.dynamic_slice_in_dim``: a
    negative start counts from the end and the window is clamped to fit, under ``jit`` too."""

    start: object
    size: int
    stride: int = 1


def dslice(start, size=None, stride=None):
    """``Slice(start, size, stride)`` (``jax.ds``): a slice whose start may be traced.

    >>> x = np.arange(10)
    >>> getitem(x, dslice(4, 2)).tolist()
    [4, 5]
    >>> import funcgrad
    >>> funcgrad.jit(lambda x, i: getitem(x, dslice(i, 3)))(x, 8).tolist()
    [7, 8, 9]
    """
    if start is None:
        return slice(None, None, None)
    if size is None:
        raise TypeError("ds: give a size (a dynamic slice has a static size)")
    stride = 1 if stride is None else int(stride)
    if stride < 0:
        raise ValueError("`stride` must be >= 0.")
    return Slice(start, concrete_int(size, "ds's size"), stride)


def _apply_dslices(x, idx):
    """``x`` with each ``Slice`` of ``idx`` applied as a dynamic slice of its axis, and ``idx``
    with those entries replaced by ``:`` (what remains is ordinary NumPy indexing)."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    if not any(isinstance(i, Slice) for i in items):
        return x, idx

    def consumed(i):
        if i is None or i is Ellipsis:
            return 0
        if isinstance(i, Slice | slice | int | np.integer):
            return 1
        if getattr(i, "dtype", None) == np.bool_:
            return max(np.ndim(i), 1)
        return 1

    explicit = sum(consumed(i) for i in items)
    axis, out = 0, []
    for i in items:
        if i is Ellipsis:
            axis += aval(x).ndim - explicit
        elif isinstance(i, Slice):
            span = (i.size - 1) * i.stride + 1 if i.size else 0
            x = ix.dynamic_slice_in_dim(x, i.start, span, axis)
            i = slice(None, None, i.stride if i.stride > 1 else None)
        out.append(i)
        axis += consumed(i)
    return x, tuple(out)


# ----------------------------------------------------------------------------------------------
# Retrieval


def static_ints_of_empty_axes(shape, entries):
    """JAX's IndexError for static ints into an axis of size 0 where a gather/scatter mode would
    otherwise fill or drop (``x.at[i].get(mode='fill')``, ``x.at[i].add(v, mode='clip')``); with an
    index array among them the ints are advanced indices and nothing is raised (as in jax)."""
    if any(kind == _ARRAY for kind, _ in entries):
        return
    axis = 0
    for kind, _ in entries:
        if kind == _INT and shape[axis] == 0:
            raise IndexError(f"index is out of bounds for axis {axis} with size 0")
        axis += kind in (_INT, _SCALAR, _SLICE)


def getitem(
    x,
    idx,
    *,
    mode=None,
    fill_value=None,
    unique_indices=False,
    indices_are_sorted=False,
    wrap_negative_indices=True,
    _drop_empty=False,
):
    """``x[idx]`` with NumPy's indexing rules and JAX's out-of-bounds conventions (NOTE: [indexing
    semantics]).

    >>> x = np.arange(12).reshape(3, 4)
    >>> getitem(x, (slice(None), [0, 2])).tolist()
    [[0, 2], [4, 6], [8, 10]]
    >>> getitem(x, (slice(None, None, -1), 1)).tolist()
    [9, 5, 1]
    >>> getitem(np.arange(10), 11).item()
    9
    """
    refuse_sequence_index(idx)
    x = asarray(x)
    # (JAX converts the fill value only for a gather: an index of newaxis and whole-axis slices
    # is its static slice, which never reads it -- x.at[None, :].get(mode='fill', fill_value=1j);
    # asked last: without a complex fill value, a traced slice bound reaches its IndexError below)
    if (
        fill_value is not None
        and np.iscomplexobj(fill_value)
        and not np.iscomplexobj(x)
        and not _selects_everything(idx, x.shape)
    ):
        # (JAX converts the fill value to x's dtype: strongly, which refuses a Python complex number
        # (a NumPy array's is one, by .item()); a NumPy complex scalar, or any to a weak x's, by
        # NumPy's astype, which keeps the real part with NumPy's ComplexWarning)
        if not aval(x).weak_type and (type(fill_value) is complex or isinstance(fill_value, np.ndarray)):
            raise TypeError(
                f"float() argument must be a string or a real number, not 'complex' (fill_value {fill_value})"
            )
        warnings.warn(
            "Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning, 2
        )
        fill_value = np.real(fill_value)
    x, idx = _apply_dslices(x, idx)
    entries = _expand(idx, x.shape, "x[...]")
    if _guard.host_to_device:  # NOTE: [transfer guard]: JAX's eager indexing transfers its starts
        transferred = index_transfer(idx, x.shape)
        if transferred is not None:
            _transfer_guard.eager_operand(transferred, INDEX_FILES)
    if check_static_indices:
        _check_static(entries, x.shape)
    entries = _oob_ints_dynamic(entries, x.shape)
    if mode is not None:
        gather_mode = ix.GatherScatterMode.from_any(mode)
    else:
        gather_mode = ix.GatherScatterMode.PROMISE_IN_BOUNDS
    if gather_mode is ix.GatherScatterMode.FILL_OR_DROP and 0 in x.shape:
        static_ints_of_empty_axes(x.shape, entries)
    has_array = any(kind in (_ARRAY, _EMPTY_NEWAXIS) for kind, _ in entries)
    # Ints become 0-d advanced indices when arrays are present (NumPy's placement rule counts them)
    # or when a mode other than clamping is requested (only gather implements fill).
    # (Without wrapping, a negative int is out of bounds: only the gather can say what that gives.)
    as_array = has_array or gather_mode is ix.GatherScatterMode.FILL_OR_DROP or not wrap_negative_indices
    if not as_array and all(kind != _SCALAR for kind, _ in entries):
        return _static_getitem(x, entries)
    y = x
    dim = 0
    advanced = []  # (dim of y, index array, entry position)
    scalars = []  # (dim of y, traced scalar or int index): one dynamic_slice for all, as JAX's
    with_scalars = not as_array and any(kind == _SCALAR for kind, _ in entries)
    for pos, (kind, value) in enumerate(entries):
        if kind == _GAP:
            continue
        if kind == _NEWAXIS:
            y = st.expand_dims(y, (dim,))
            dim += 1
        elif kind == _EMPTY_NEWAXIS:
            y = st.expand_dims(y, (dim,))
            advanced.append((dim, value, pos))
            dim += 1
        elif kind == _SLICE:
            y = _apply_slice(y, value, dim)
            dim += 1
        elif kind in (_INT, _SCALAR) and as_array:
            advanced.append((dim, value, pos))
            dim += 1
        elif kind == _INT:
            n = y.shape[dim]
            if n == 0:
                raise IndexError(f"index {value} is out of bounds for axis {dim} with size 0")
            if with_scalars:  # (a start of the one dynamic_slice below, as JAX's)
                scalars.append((dim, value))
                dim += 1
                continue
            i = value + n if value < 0 else value
            y = st.index_in_dim(y, min(max(i, 0), n - 1), dim, keepdims=False)
        elif kind == _SCALAR:
            if y.shape[dim] == 0:  # (every index is out of bounds: as for a static int)
                axis = sum(k in (_SLICE, _INT, _SCALAR, _ARRAY) for k, _ in entries[:pos])
                raise IndexError(f"index {value} is out of bounds for axis {axis} with size 0")
            scalars.append((dim, value))
            dim += 1
        else:
            advanced.append((dim, value, pos))
            dim += 1
    if scalars:
        # Every traced scalar index (and the ints beside them) in one ``dynamic_slice`` of the
        # indexed array, then a squeeze (JAX's slice route): an out-of-bounds index is reported
        # against its own axis of the array.
        starts, sizes = [0] * len(y.shape), list(y.shape)
        for d, value in scalars:
            starts[d], sizes[d] = value, 1
        gone = [d for d, _ in scalars]
        y = st.squeeze(ix.dynamic_slice(y, starts, sizes), gone)
        advanced = [(d - sum(g < d for g in gone), value, pos) for d, value, pos in advanced]
    if not advanced:
        return y
    return _gather_advanced(
        y,
        advanced,
        gather_mode,
        fill_value,
        unique_indices,
        indices_are_sorted,
        wrap_negative_indices,
        _drop_empty,
    )


def _static_getitem(x, entries):
    """Basic indexing with static ints and slices, staged as JAX's static-slice route: one
    ``slice``, one ``rev`` (negative steps), a ``squeeze`` of the int-indexed axes and an
    ``expand_dims`` (a ``broadcast_in_dim``) for the ``None`` entries; each only where needed."""
    starts, limits, strides, rev_dims, squeezed, new_axes = [], [], [], [], [], []
    dim = 0
    for kind, value in entries:
        if kind == _GAP:
            continue
        if kind == _NEWAXIS:
            # (a position in the result: the axes kept so far and the new ones before it)
            new_axes.append(len(starts) - len(squeezed) + len(new_axes))
            continue
        n = x.shape[dim]
        if kind == _INT:
            if n == 0:
                raise IndexError(f"index {value} is out of bounds for axis {dim} with size 0")
            i = min(max(value + n if value < 0 else value, 0), n - 1)
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeezed.append(dim)
        else:
            _note_symbolic_slice(value, n)
            start, stop, step = value.indices(n)
            if step < 0:
                # The same elements with a positive step from the lowest one, then reversed.
                low = min(n, stop + 1 + abs(start - stop - 1) % -step)
                starts.append(low)
                limits.append(max(low, start + 1))
                strides.append(-step)
                rev_dims.append(dim)
            else:
                starts.append(start)
                limits.append(max(start, stop))
                strides.append(step)
        dim += 1
    y = x
    if starts != [0] * x.ndim or limits != list(x.shape) or any(s != 1 for s in strides):
        y = st.slice_(y, starts, limits, strides if any(s != 1 for s in strides) else None)
    if rev_dims:
        y = st.rev(y, tuple(rev_dims))
    if squeezed:
        y = st.squeeze(y, tuple(squeezed))
    if new_axes:
        y = st.expand_dims(y, tuple(new_axes))
    return y


def _note_symbolic_slice(s: slice, n) -> None:
    """While a symbolic export traces (its sizes carry their expressions, NOTE: [symbolic
    comparisons at sample sizes]): the slice's size as JAX's ``_preprocess_slice`` computes it,
    ``max(0, distance + gap - 1) // gap`` of the clamped bounds, so that the export can write a
    result dimension such as ``floordiv(max(0, b - 2), 2)``; the traced sizes record it."""
    if not any(hasattr(v, "expr") for v in (s.start, s.stop, s.step, n)):
        return
    step = 1 if s.step is None else s.step
    up = step > 0

    def clamp(i):
        if i >= 0:
            return size_extremum(n if up else n - 1, i, "min")
        return size_extremum(0 if up else -1, n + i, "max")

    start = (0 if up else n - 1) if s.start is None else clamp(s.start)
    stop = (n if up else -1) if s.stop is None else clamp(s.stop)
    gap = step if up else -step
    size_extremum(0, (stop - start if up else start - stop) + gap - 1, "max") // gap


def _apply_slice(y, s: slice, dim: int):
    n = y.shape[dim]
    _note_symbolic_slice(s, n)
    start, stop, step = s.indices(n)
    if step == 1:
        return y if (start, stop) == (0, n) else st.slice_in_dim(y, start, max(stop, start), 1, dim)
    count = len(range(start, stop, step))
    if count == 0:
        return st.slice_in_dim(y, 0, 0, 1, dim)
    if step > 0:
        return st.slice_in_dim(y, start, start + (count - 1) * step + 1, step, dim)
    # A negative step: take the same elements with a positive step, then reverse.
    first = start + (count - 1) * step
    return st.rev(st.slice_in_dim(y, first, start + 1, -step, dim), (dim,))


def _normalized_index(arr, n: int, dtype, wrap: bool = True):
    """Negative indices count from the end (``wrap``; otherwise they are out of range); an index
    still out of range stays out of range."""
    value = core.concrete_value(arr) if isinstance(arr, core.Tracer | Array) else np.asarray(arr)
    if value is not None:
        value = np.asarray(value).astype(dtype)
        return constant(np.where(value < 0, value + n, value) if wrap else value, dtype)
    arr = ew.convert_element_type(arr, dtype)
    if not wrap:
        return arr
    negative = ew.lt_p.bind(arr, constant(0, dtype))
    return select(negative, ew.add_p.bind(arr, constant(n, dtype)), arr)


def _index_dtype(arrays) -> np.dtype:
    dtypes = {np.dtype(a.dtype) for a in arrays}
    return (
        np.dtype(np.int32)
        if dtypes
        <= {
            np.dtype(np.int32),
            np.dtype(np.int16),
            np.dtype(np.int8),
            np.dtype(np.uint8),
            np.dtype(np.uint16),
        }
        else _dt.default_int
    )


def _gather_advanced(
    y, advanced, mode, fill_value, unique_indices, indices_are_sorted, wrap=True, drop_empty=False
):
    dims = [d for d, _, _ in advanced]
    positions = [p for _, _, p in advanced]
    arrays = [a for _, a, _ in advanced]
    arrays = [np.asarray(a) if isinstance(a, int) else a for a in arrays]
    dtype = _index_dtype(arrays)
    idx = [_normalized_index(a, y.shape[d], dtype, wrap) for a, d in zip(arrays, dims)]
    batch = broadcast_shapes(*[aval(i).shape for i in idx])
    idx = [st.reshape(broadcast_to(i, batch), (*batch, 1)) for i in idx]
    indices = idx[0] if len(idx) == 1 else st.concatenate(idx, len(batch))
    rest = [d for d in range(y.ndim) if d not in dims]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
    p = sum(1 for d in rest if d < min(dims)) if contiguous else 0
    offset_dims = tuple(range(p)) + tuple(range(p + len(batch), len(batch) + len(rest)))
    dn = ix.GatherDimensionNumbers(
        offset_dims=offset_dims, collapsed_slice_dims=tuple(sorted(dims)), start_index_map=tuple(dims)
    )
    slice_sizes = tuple(1 if d in dims else y.shape[d] for d in range(y.ndim))
    out_shape = tuple(y.shape[d] for d in rest[:p]) + batch + tuple(y.shape[d] for d in rest[p:])
    if any(s == 0 for s in out_shape) or any(y.shape[d] == 0 for d in dims):
        # Nothing to read (an empty index or an empty axis): zeros of the result shape, no gather.
        if drop_empty and not any(s == 0 for s in out_shape):  # (a scatter's positions: all dropped)
            return constant(fill_value, y.dtype, out_shape)
        return _empty_or_fill(y, out_shape, dims)
    return ix.gather(
        y,
        indices,
        dn,
        slice_sizes,
        mode=mode,
        fill_value=fill_value,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
    )


def _empty_or_fill(y, out_shape, dims):
    if any(s == 0 for s in out_shape):
        # an empty piece of y itself (a slice, then a reshape), not a new constant: it keeps y's
        # weak type and devices, as JAX's gather does (x[mask] of a committed x with an all-False
        # mask came back uncommitted on the default device)
        empty = st.slice_(y, (0,) * y.ndim, (0,) * y.ndim)
        return st.reshape(empty, tuple(out_shape))
    # Indices into an empty axis: JAX's gather refuses a slice of 1 there, whatever the mode.
    d = next(d for d in sorted(dims) if y.shape[d] == 0)
    raise TypeError(
        f"Slice size at index {d} in gather op is out of range, must be within [0, 0 + 1), got 1."
    )


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())


def _selects_everything(idx, shape) -> bool:
    """Whether ``idx`` is only newaxis, ``...`` and slices of whole axes (``x[None, :]``).

    >>> _selects_everything((None, slice(None)), (2, 2)), _selects_everything(slice(1, None), (2,))
    (True, False)
    """
    entries = idx if isinstance(idx, tuple) else (idx,)
    if not all(e is None or e is Ellipsis or isinstance(e, slice) for e in entries):
        return False
    sliced = [e for e in entries if isinstance(e, slice)]
    if Ellipsis in entries:
        k = entries.index(Ellipsis)
        before = sum(isinstance(e, slice) for e in entries[:k])
        dims = list(range(before)) + list(range(len(shape) - (len(sliced) - before), len(shape)))
    else:
        dims = list(range(len(sliced)))
    if len(dims) > len(shape):
        return False
    return all(s.indices(shape[d]) == (0, shape[d], 1) for s, d in zip(sliced, dims))
