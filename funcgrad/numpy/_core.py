"""Shared machinery of funcgrad.numpy: conversion, NEP 50 dtype promotion, broadcasting, axes.

Layer: surface. Imports the kernel (core, dtypes, array) and the primitive catalog.
"""

from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from funcgrad import core
from funcgrad import dtypes as _dt
from funcgrad.array import Array
from primitives import elementwise as ew
from primitives import structure as st

_PY_SCALARS = (bool, int, float, complex)


def aval(x) -> core.ShapedArray:
    return core.get_aval(x)


def is_traced_or_array(x) -> bool:
    return isinstance(x, Array | core.Tracer)


def asarray(a, dtype=None, order=None, *, copy=None):
    """Convert ``a`` (array, scalar, nested list, Array or traced value) to an Array.

    >>> asarray([1, 2]).dtype
    dtype('int64')
    """
    if dtype is not None:
        dtype = _dt.canonicalize(dtype)
    if isinstance(a, core.Tracer):
        return a if dtype is None else ew.convert_element_type(a, dtype)
    if isinstance(a, Array):
        if dtype is None or a.dtype == dtype:
            return a
        return ew.convert_element_type(a, dtype)
    if isinstance(a, list | tuple) and any(isinstance(x, core.Tracer | Array) for x in _iter_nested(a)):
        from funcgrad.numpy.shape import stack  # noqa: PLC0415 - shape imports this module

        return stack([asarray(x, dtype) for x in a])
    value = np.asarray(a, dtype=dtype)
    if value.dtype == object:
        raise TypeError(f"funcgrad.numpy.asarray: cannot convert {type(a).__name__} {a!r:.80} to an array")
    if value.dtype.kind == "U" or value.dtype.kind == "S":
        raise TypeError("funcgrad arrays hold numbers, not strings")
    return Array(value)


def array(object, dtype=None, copy=True, order=None, ndmin: int = 0):
    """Create an Array (always a new value; ``ndmin`` prepends axes).

    >>> array([[1.0, 2.0]]).shape
    (1, 2)
    """
    out = asarray(object, dtype)
    if ndmin > out.ndim:
        out = st.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _iter_nested(xs):
    for x in xs:
        if isinstance(x, list | tuple):
            yield from _iter_nested(x)
        else:
            yield x


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    if type(x) in _PY_SCALARS:
        return _dt.python_scalar_dtype(x), True
    a = aval(x)
    return a.dtype, a.weak_type


def result_type(*args) -> np.dtype:
    """The NumPy 2 (NEP 50) result dtype of ``args`` (arrays, scalars, dtypes).

    >>> result_type(np.float32, 2.0)
    dtype('float32')
    """
    pairs = []
    for a in args:
        if isinstance(a, np.dtype | type) and not (isinstance(a, type) and a in _PY_SCALARS):
            pairs.append((np.dtype(a), False))
        elif isinstance(a, str):
            pairs.append((np.dtype(a), False))
        elif isinstance(a, type) and a in _PY_SCALARS:
            pairs.append((_dt.python_scalar_dtype(a()), True))
        else:
            pairs.append(dtype_and_weak(a))
    return _dt.result_type(*pairs)[0]


def promote_dtypes(*args) -> list:
    """Convert ``args`` to one dtype (NEP 50). Python scalars become 0-d constants."""
    pairs = [dtype_and_weak(a) for a in args]
    dtype, weak = _dt.result_type(*pairs)
    out = []
    for a, (d, w) in zip(args, pairs):
        if type(a) in _PY_SCALARS:
            out.append(_scalar_const(a, dtype))
        elif isinstance(a, np.ndarray | np.generic | list | tuple):
            out.append(np.asarray(a, dtype=dtype))
        elif d != dtype:
            out.append(ew.convert_element_type(a, dtype, weak_type=weak))
        else:
            out.append(a)
    return out


def _scalar_const(value, dtype):
    try:
        return np.asarray(value, dtype=dtype)
    except OverflowError:
        raise OverflowError(f"Python integer {value} out of bounds for {np.dtype(dtype).name}") from None


def promote_inexact(*args) -> list:
    """Like ``promote_dtypes`` but integer/bool results become the default float (``np.sin(1)``)."""
    args = promote_dtypes(*args)
    dtype = aval(args[0]).dtype
    if not _dt.is_inexact(dtype):
        args = [ew.convert_element_type(a, _dt.default_float) for a in args]
    return args


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy broadcasting of shapes, with a clear error.

    >>> broadcast_shapes((3, 1), (4,))
    (3, 4)
    """
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(
            "operands could not be broadcast together with shapes "
            + " ".join(str(tuple(s)) for s in shapes)
        ) from None


def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` (NumPy rules).

    >>> broadcast_to(asarray([1, 2]), (3, 2)).shape
    (3, 2)
    """
    x = x if is_traced_or_array(x) or isinstance(x, np.ndarray) else asarray(x)
    shape = tuple(int(s) for s in (shape if isinstance(shape, Sequence) else (shape,)))
    xs = aval(x).shape
    if xs == shape:
        return x
    if len(xs) > len(shape) or broadcast_shapes(xs, shape) != shape:
        raise ValueError(f"cannot broadcast array of shape {xs} to shape {shape}")
    lead = len(shape) - len(xs)
    # Squeeze size-1 dims that stretch, then broadcast_in_dim maps the rest.
    keep = [i for i, s in enumerate(xs) if not (s == 1 and shape[lead + i] != 1)]
    if len(keep) != len(xs):
        x = st.reshape(x, tuple(xs[i] for i in keep))
    return st.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def broadcast_args(*args) -> list:
    """Broadcast to a common shape; 0-d operands stay scalars (the elementwise contract)."""
    shapes = [aval(a).shape for a in args]
    shape = broadcast_shapes(*shapes)
    return [a if (s == shape or s == ()) else broadcast_to(a, shape) for a, s in zip(args, shapes)]


def elementwise(prim, *args, inexact: bool = False):
    """Promote, broadcast and bind an elementwise primitive."""
    args = promote_inexact(*args) if inexact else promote_dtypes(*args)
    args = broadcast_args(*args)
    if len(args) > 1 and all(aval(a).shape == () for a in args[1:]) is False:
        pass
    return prim.bind(*args)


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {axis!r}") from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise np.exceptions.AxisError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """``None`` → all axes; an int or tuple → sorted non-negative axes (duplicates rejected)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int | np.integer):
        return (normalize_axis(axis, ndim),)
    axes = tuple(normalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(axes))
