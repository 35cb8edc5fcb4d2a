"""Reductions of funcgrad.numpy: sum, mean, max, min, prod, ... (NumPy signatures).

Layer: surface. Imports funcgrad.numpy._core and the primitive catalog.
"""

from __future__ import annotations

import numpy as np

from funcgrad import dtypes as _dt
from funcgrad.numpy._core import asarray, aval, normalize_axes
from primitives import elementwise as ew
from primitives import reductions as red
from primitives import structure as st


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    return st.reshape(out, red.keep_dims_shape(in_shape, axes))


def _sum_dtype(dtype):
    # NumPy sums bools and small ints in the default int.
    dtype = np.dtype(dtype)
    if dtype == np.bool_ or (dtype.kind == "i" and dtype.itemsize < 8):
        return _dt.default_int
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum of elements over ``axis``.

    >>> sum(asarray([[1.0, 2.0], [3.0, 4.0]]), axis=0).tolist()
    [4.0, 6.0]
    """
    a = asarray(a)
    axes = normalize_axes(axis, aval(a).ndim)
    target = np.dtype(dtype) if dtype is not None else _sum_dtype(aval(a).dtype)
    a = ew.convert_element_type(a, target, weak_type=aval(a).weak_type)
    out_ = red.reduce_sum(a, axes)
    if initial is not None:
        out_ = ew.add(out_, np.asarray(initial, target))
    return _keepdims(out_, aval(a).shape, axes, keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Arithmetic mean over ``axis`` (integers average in the default float).

    >>> mean(asarray([1, 2, 3, 4])).item()
    2.5
    """
    a = asarray(a)
    axes = normalize_axes(axis, aval(a).ndim)
    dt = np.dtype(dtype) if dtype is not None else aval(a).dtype
    if not _dt.is_inexact(dt):
        dt = _dt.default_float
    a = ew.convert_element_type(a, dt, weak_type=aval(a).weak_type)
    n = int(np.prod([aval(a).shape[i] for i in axes], dtype=np.int64))
    total = red.reduce_sum(a, axes)
    res = ew.div(total, np.asarray(n, dt))
    return _keepdims(res, aval(a).shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis`` (ties share the gradient equally)."""
    a = asarray(a)
    axes = normalize_axes(axis, aval(a).ndim)
    if aval(a).size == 0 and initial is None:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    res = red.reduce_max(a, axes)
    return _keepdims(res, aval(a).shape, axes, keepdims)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis``."""
    a = asarray(a)
    axes = normalize_axes(axis, aval(a).ndim)
    if aval(a).size == 0 and initial is None:
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    res = red.reduce_min(a, axes)
    return _keepdims(res, aval(a).shape, axes, keepdims)


amax = max
amin = min


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product over ``axis`` (exact gradients with zeros)."""
    a = asarray(a)
    axes = normalize_axes(axis, aval(a).ndim)
    target = np.dtype(dtype) if dtype is not None else _sum_dtype(aval(a).dtype)
    a = ew.convert_element_type(a, target)
    return _keepdims(red.reduce_prod(a, axes), aval(a).shape, axes, keepdims)
