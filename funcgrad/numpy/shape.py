"""Shape manipulation of funcgrad.numpy: reshape, transpose, stack, concatenate, ...

Layer: surface. Imports funcgrad.numpy._core and the primitive catalog.
"""

from __future__ import annotations

import numpy as np

from funcgrad.numpy._core import asarray, aval, normalize_axis, promote_dtypes
from primitives import structure as st


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshape ``a`` to ``shape`` (one entry may be -1).

    >>> reshape(asarray([1, 2, 3, 4]), (2, -1)).shape
    (2, 2)
    """
    if shape is None:
        shape = newshape
    a = asarray(a)
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    size = aval(a).size
    if sum(1 for s in shape if s == -1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return st.reshape(a, shape)


def ravel(a, order="C"):
    """Flatten ``a`` to 1-D."""
    return reshape(a, (-1,))


def transpose(a, axes=None):
    """Permute axes (reverse them by default)."""
    a = asarray(a)
    ndim = aval(a).ndim
    perm = tuple(reversed(range(ndim))) if axes is None else tuple(normalize_axis(x, ndim) for x in axes)
    if sorted(perm) != list(range(ndim)):
        raise ValueError(f"axes {axes} don't match array of dimension {ndim}")
    return st.transpose(a, perm)


def expand_dims(a, axis):
    """Insert size-1 axes at ``axis`` (an int or tuple)."""
    a = asarray(a)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    ndim = aval(a).ndim + len(axes)
    return st.expand_dims(a, tuple(normalize_axis(x, ndim) for x in axes))


def stack(arrays, axis=0):
    """Join arrays along a new axis.

    >>> stack([asarray([1, 2]), asarray([3, 4])]).shape
    (2, 2)
    """
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {aval(x).shape for x in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    arrays = promote_dtypes(*arrays)
    ndim = aval(arrays[0]).ndim + 1
    axis = normalize_axis(axis, ndim)
    return concatenate([st.expand_dims(x, (axis,)) for x in arrays], axis)


def concatenate(arrays, axis=0):
    """Join arrays along an existing axis."""
    from primitives import indexing as ix  # noqa: PLC0415 - catalog family added with indexing

    arrays = promote_dtypes(*[asarray(x) for x in arrays])
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    axis = normalize_axis(axis, aval(arrays[0]).ndim)
    return ix.concatenate(arrays, axis)
