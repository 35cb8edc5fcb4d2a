"""funcgrad.numpy array editing: ``block``, ``insert``, ``delete``, ``dsplit``, ``rollaxis``,
``resize``, ``put``, ``place``, ``apply_over_axes``.

Layer: surface. Imports the other funcgrad.numpy modules.

The editors return new arrays (funcgrad's arrays are immutable): ``put`` and ``place`` refuse
``inplace=True`` (the NumPy default) with JAX's message. Output shapes are static, so the positions
given to ``insert``/``delete`` are concrete (``delete`` also takes traced positions with
``assume_unique_indices=True``).
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.numpy._core import (
    asarray,
    broadcast_to,
    concrete_int,
    concrete_or_error,
    normalize_axis,
    promote_args,
    static_shape,
)
from funcgrad.numpy._dtypes import ExtendedArray
from funcgrad.numpy.creation import arange, full, ones, zeros
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.lookup import nonzero, take, where
from funcgrad.numpy.manipulation import (
    concatenate,
    moveaxis,
    ravel,
    reshape,
    split,
)
from funcgrad.numpy.rearrangement import tile
from funcgrad.numpy.sorting import argsort, cumsum
from funcgrad.numpy.ufuncs import clip

__all__ = ["apply_over_axes", "block", "delete", "dsplit", "insert", "place", "put", "resize", "rollaxis"]


def _block_depth(x, depth=0):
    if isinstance(x, list):
        if not x:
            raise ValueError("block: lists cannot be empty")
        depths = {_block_depth(e, depth + 1) for e in x}
        if len(depths) != 1:
            raise ValueError("block: list depths are mismatched")
        return depths.pop()
    if isinstance(x, tuple):
        raise TypeError("block: arrays are nested in lists, not tuples")
    return depth


def block(arrays):
    """Assemble an array from nested lists of blocks (the innermost lists along the last axis).

    >>> block([[np.zeros((1, 2)), np.ones((1, 1))], [np.ones((1, 3))]]).tolist()
    [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    """
    depth = _block_depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for e in x:
                collect(e)
        else:
            leaves.append(asarray(x))

    collect(arrays)
    ndim = max(depth, *(a.ndim for a in leaves)) if leaves else depth

    def assemble(x, level):
        if isinstance(x, list):
            parts = [assemble(e, level + 1) for e in x]
            return concatenate(promote_args(*parts), axis=-(depth - level))
        a = asarray(x)
        return reshape(a, (1,) * (ndim - a.ndim) + a.shape)

    return assemble(arrays, 0)


def _positions(obj, n, what):
    """Concrete integer positions (negative ones counted from the end) of a slice, int or array."""
    if isinstance(obj, slice):
        return np.arange(n)[obj], False
    value = concrete_or_error(obj, f"{what}'s positions (the output shape depends on them)")
    scalar = value.ndim == 0
    if value.dtype == np.bool_:
        if value.shape != (n,):
            raise ValueError(f"{what}: a boolean mask must have the axis length {n}, got shape {value.shape}")
        return np.flatnonzero(value), False
    if value.dtype.kind not in "iu":
        raise IndexError(f"{what}: positions must be integers, got {value.dtype}")
    return np.atleast_1d(value).astype(np.int64), scalar


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries at positions ``obj`` (a slice, int, integer array or boolean
    mask) along ``axis`` (flattened if None). With ``assume_unique_indices=True`` the positions may
    be traced (they must be unique and in range).

    >>> delete(np.array([1, 2, 3, 4]), [0, 2]).tolist()
    [2, 4]
    """
    arr = asarray(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim)
    n = arr.shape[axis]
    if (
        assume_unique_indices
        and isinstance(obj, core.Tracer | np.ndarray | list)
        or (assume_unique_indices and hasattr(obj, "shape") and not isinstance(obj, slice))
    ):
        idx = ravel(asarray(obj))  # (positions of any shape: (1, 4) or (3, 0) are 4 and 0 of them)
        idx = where(idx < 0, idx + n, idx)
        keep_n = n - idx.shape[0]
        # The kept positions are the first keep_n positions that are not deleted, in order.
        hit = ones((n,), int).at[idx].set(0)
        order = argsort(1 - hit, stable=True)
        return take(arr, getitem(order, slice(0, keep_n)), axis=axis)
    pos, _ = _positions(obj, n, "delete")
    pos = np.where(pos < 0, pos + n, pos)
    if ((pos < 0) | (pos >= n)).any():
        raise IndexError(
            f"delete: positions {pos[(pos < 0) | (pos >= n)].tolist()} are out of bounds for axis of size {n}"
        )
    keep = np.setdiff1d(np.arange(n), pos)
    return take(arr, asarray(keep), axis=axis)


def _insert_traced(arr, obj, values, axis):
    """``insert`` at traced positions, JAX's way: the output's size depends only on how many
    positions there are; scatters place the values and the original entries."""
    indices = asarray(obj)
    if indices.ndim > 1:
        raise ValueError(
            f"jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; got {obj}"
        )
    if indices.dtype.kind not in "iu":
        raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    values = asarray(values).astype(arr.dtype)
    values = (
        reshape(values, (1,) * (arr.ndim - values.ndim) + values.shape) if values.ndim < arr.ndim else values
    )
    if indices.size == 1:
        index = ravel(indices)[0]
        if indices.ndim == 0:
            values = moveaxis(values, 0, axis)
        indices = full((values.shape[axis],), index, dtype=indices.dtype)
    n_input = arr.shape[axis]
    n_insert = np.broadcast_shapes(indices.shape, (values.shape[axis],))[0]
    out_shape = list(arr.shape)
    out_shape[axis] += n_insert
    out = zeros(tuple(out_shape), arr.dtype)
    indices = clip(where(indices < 0, indices + n_input, indices), 0, n_input)
    values_ind = indices.at[argsort(indices)].add(arange(n_insert, dtype=indices.dtype))
    arr_mask = ones((n_input + n_insert,), bool).at[values_ind].set(False)
    arr_ind = nonzero(arr_mask, size=n_input)[0]
    out = out.at[(slice(None),) * axis + (values_ind,)].set(values)
    return out.at[(slice(None),) * axis + (arr_ind,)].set(arr)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis`` (flattened if
    None), with NumPy's broadcasting of ``values``; positions are concrete.

    >>> insert(np.array([1, 2, 3]), 1, 9).tolist()
    [1, 9, 2, 3]
    >>> insert(np.array([[1, 2], [3, 4]]), 1, [7, 8], axis=1).tolist()
    [[1, 7, 2], [3, 8, 4]]
    """
    if isinstance(arr, ExtendedArray) and isinstance(values, ExtendedArray):  # typed PRNG keys (JAX's)
        return arr._numpy_function(lambda a, v: insert(a, obj, v, axis), (arr, values), {})
    arr = asarray(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim)
    if isinstance(obj, core.Tracer):
        return _insert_traced(arr, obj, values, axis)
    n = arr.shape[axis]
    values = asarray(values).astype(arr.dtype)
    if isinstance(obj, slice):
        pos, scalar = np.arange(*obj.indices(n)), False
    else:
        pos, scalar = _positions(obj, n + 1, "insert")
    pos = np.where(pos < 0, pos + n, pos)
    if ((pos < 0) | (pos > n)).any():
        raise IndexError(f"insert: positions {pos.tolist()} are out of bounds for an axis of size {n}")

    def block_of(v, count):
        shape = list(arr.shape)
        shape[axis] = count
        return broadcast_to(v, tuple(shape))

    def insert_block(p, v):
        before = getitem(arr, (slice(None),) * axis + (slice(0, p),))
        after = getitem(arr, (slice(None),) * axis + (slice(p, None),))
        return concatenate([before, block_of(v, v.shape[axis]), after], axis=axis)

    if pos.shape[0] == 1 and not isinstance(obj, slice):
        # NumPy: the values are made arr.ndim-dimensional (leading 1s); for a scalar position their
        # first axis becomes the inserted axis, for a one-element array they are used as they are.
        v = (
            reshape(values, (1,) * (arr.ndim - values.ndim) + values.shape)
            if values.ndim < arr.ndim
            else values
        )
        if scalar:
            v = moveaxis(v, 0, axis)
        return insert_block(int(pos[0]), v)
    k = pos.shape[0]
    # NumPy's rule: value i goes before the original position pos[i]; equal positions keep order.
    new_pos = pos.copy()
    new_pos[np.argsort(pos, kind="stable")] += np.arange(k)
    total = n + k
    src = np.empty(total, np.int64)
    old = np.ones(total, bool)
    old[new_pos] = False
    src[old] = np.arange(n)
    src[new_pos] = n + np.arange(k)
    stacked = concatenate([arr, block_of(values, k)], axis=axis)
    return take(stacked, asarray(src), axis=axis)


def dsplit(ary, indices_or_sections):
    """Split along the third axis (depth).

    >>> [a.shape for a in dsplit(np.zeros((1, 1, 4)), 2)]
    [(1, 1, 2), (1, 1, 2)]
    """
    ary = asarray(ary)
    if ary.ndim < 3:
        raise ValueError(f"dsplit only works on arrays of 3 or more dimensions, got shape {ary.shape}")
    return split(ary, indices_or_sections, axis=2)


def rollaxis(a, axis: int, start: int = 0):
    """Move ``axis`` to before position ``start`` (NumPy's legacy ``rollaxis``; prefer ``moveaxis``).

    >>> rollaxis(np.zeros((3, 4, 5)), 2).shape
    (5, 3, 4)
    """
    a = asarray(a)
    n = a.ndim
    axis = normalize_axis(axis, n)
    start = concrete_int(start, "rollaxis: start")
    if not -n <= start <= n:
        raise np.exceptions.AxisError(
            f"rollaxis: start {start} is out of bounds for an array of dimension {n}"
        )
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def resize(a, new_shape):
    """An array of ``new_shape`` filled by repeating the flattened ``a`` (NumPy's ``resize``).

    >>> resize(np.array([1, 2, 3]), (2, 4)).tolist()
    [[1, 2, 3, 1], [2, 3, 1, 2]]
    """
    a = ravel(asarray(a))
    shape = static_shape(new_shape, "resize: new_shape")
    size = int(np.prod(shape))
    if a.shape[0] == 0:
        return reshape(asarray(np.zeros(size, a.dtype)), shape)
    reps = -(-size // a.shape[0])
    return reshape(getitem(tile(a, reps), slice(0, size)), shape)


_INPLACE = (
    "{name}: funcgrad arrays are immutable, so inplace=True (NumPy's default) cannot be honoured; "
    "pass inplace=False to get the modified copy, or use x.at[...].set(...)"
)


def put(a, ind, v, mode=None, *, inplace: bool = True):
    """A copy of ``a`` with the flat positions ``ind`` set to ``v`` (repeated as needed);
    ``mode``: ``"raise"`` (concrete indices), ``"wrap"`` or ``"clip"``. ``inplace=False`` is
    required (funcgrad arrays are immutable).

    >>> put(np.arange(5), [0, 2], [9, 8], inplace=False).tolist()
    [9, 1, 8, 3, 4]
    """
    if inplace:
        raise ValueError(_INPLACE.format(name="put"))
    a = asarray(a)
    flat = ravel(a)
    ind = ravel(asarray(ind))
    v = ravel(asarray(v)).astype(a.dtype)
    if a.size == 0 or ind.shape[0] == 0 or v.shape[0] == 0:
        return a  # (nothing to put: JAX's, and NumPy's for empty values)
    v = getitem(tile(v, -(-ind.shape[0] // v.shape[0])), slice(0, ind.shape[0]))
    n = flat.shape[0]
    if mode is None or mode == "raise":
        value = (
            concrete_or_error(ind, "put(mode='raise') (out-of-bounds indices raise)")
            if mode == "raise"
            else None
        )
        if value is not None and ((value < -n) | (value >= n)).any():
            raise IndexError(f"put: indices out of bounds for an array of size {n}")
        ind = where(ind < 0, ind + n, ind)
        out = flat.at[ind].set(v, mode="drop")
    elif mode == "wrap":
        out = flat.at[ind % n].set(v)
    elif mode == "clip":
        out = flat.at[where(ind < 0, 0, where(ind >= n, n - 1, ind))].set(v)
    else:
        raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return reshape(out, a.shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """A copy of ``arr`` where the entries under ``mask`` take ``vals`` in order (repeated as
    needed), NumPy's ``place``; ``inplace=False`` is required.

    >>> place(np.arange(5), np.arange(5) % 2 == 1, [7], inplace=False).tolist()
    [0, 7, 2, 7, 4]
    """
    if inplace:
        raise ValueError(_INPLACE.format(name="place"))
    arr = asarray(arr)
    flat = ravel(arr)
    m = ravel(broadcast_to(asarray(mask, bool), arr.shape))
    vals = ravel(asarray(vals)).astype(arr.dtype)
    if vals.shape[0] == 0:
        return arr
    # The k-th masked entry takes vals[k % len(vals)].
    rank = cumsum(m.astype(int)) - 1
    taken = take(vals, rank % vals.shape[0])
    return reshape(where(m, taken, flat), arr.shape)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn; each result keeps ``a``'s rank (a reduced
    axis is kept with length 1).

    >>> import funcgrad.numpy as fnp
    >>> apply_over_axes(fnp.sum, np.arange(24).reshape(2, 3, 4), [0, 2]).tolist()
    [[[60], [92], [124]]]
    """
    a = asarray(a)
    for axis in [axes] if np.ndim(axes) == 0 else axes:
        axis = normalize_axis(axis, a.ndim)
        res = asarray(func(a, axis))
        if res.ndim == a.ndim:
            a = res
        elif res.ndim == a.ndim - 1:
            a = reshape(res, res.shape[:axis] + (1,) + res.shape[axis:])
        else:
            raise ValueError("apply_over_axes: the function must keep the rank or remove one axis")
    return a
