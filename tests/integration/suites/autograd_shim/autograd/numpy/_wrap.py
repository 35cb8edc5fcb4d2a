"""autograd.numpy on plain values is NumPy: its functions return (mutable) NumPy arrays, and only
traced inputs give traced outputs. ``wrap_namespace`` gives funcgrad's functions that contract."""

from __future__ import annotations

import functools
import types

import numpy as onp

import funcgrad
from funcgrad.core import Tracer

_Array = funcgrad.kernel.array.Array  # the concrete class (funcgrad.Array is the isinstance type)
_ufunc = funcgrad.numpy.ufunc


# NumPy returns 0-d arrays only from its array constructors; its functions return scalars.
_ARRAY_CONSTRUCTORS = {
    "array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "copy", "atleast_1d", "atleast_2d", "atleast_3d", "reshape", "expand_dims",
}  # fmt: skip


def _to_numpy(x, scalars=True):
    if type(x) is _Array:
        a = onp.array(x)
        return a[()] if scalars and a.ndim == 0 else a
    if type(x) in (tuple, list):
        return type(x)(_to_numpy(v, scalars) for v in x)
    return x


def host_results(f, scalars=True):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return _to_numpy(f(*args, **kwargs), scalars)

    return wrapped


# funcgrad.numpy refuses list and tuple operands where JAX's check_arraylike does; autograd.numpy
# takes them as NumPy does, so the shim calls the functions without JAX's check (each public
# function keeps its module's function as ``__wrapped_unchecked__``, NOTE: [array-like arguments])
# and makes the ufunc objects' list operands arrays first.
def _lists_as_arrays(f):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        args = [funcgrad.numpy.asarray(a) if type(a) in (list, tuple) else a for a in args]
        return f(*args, **kwargs)

    return wrapped


def wrap_namespace(src, dst: dict, skip=()):
    for name in dir(src):
        if name.startswith("__") or name in dst or name in skip:
            continue
        value = getattr(src, name)
        # funcgrad.numpy.add, maximum, ... are ufunc objects (as in jax.numpy); autograd's are functions.
        if isinstance(value, types.FunctionType | types.BuiltinFunctionType | functools.partial | _ufunc):
            if isinstance(value, _ufunc):
                value = _lists_as_arrays(value)
            value = getattr(value, "__wrapped_unchecked__", value)
            value = host_results(value, scalars=name not in _ARRAY_CONSTRUCTORS)
        dst[name] = value


__all__ = ["wrap_namespace", "host_results", "Tracer"]
