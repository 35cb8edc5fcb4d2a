"""autograd.numpy on plain values is NumPy: its functions return (mutable) NumPy arrays, and only
traced inputs give traced outputs. ``wrap_namespace`` gives funcgrad's functions that contract."""

from __future__ import annotations

import functools
import types

import numpy as onp

import funcgrad
from funcgrad.core import Tracer

_Array = funcgrad.Array


def _to_numpy(x):
    if type(x) is _Array:
        return onp.array(x)
    if type(x) in (tuple, list):
        return type(x)(_to_numpy(v) for v in x)
    return x


def host_results(f):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return _to_numpy(f(*args, **kwargs))

    return wrapped


def wrap_namespace(src, dst: dict, skip=()):
    for name in dir(src):
        if name.startswith("__") or name in dst or name in skip:
            continue
        value = getattr(src, name)
        if isinstance(value, types.FunctionType | types.BuiltinFunctionType | functools.partial):
            value = host_results(value)
        dst[name] = value


__all__ = ["wrap_namespace", "host_results", "Tracer"]
