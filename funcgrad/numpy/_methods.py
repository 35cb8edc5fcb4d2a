"""Installs operators and methods on ``Array`` and ``Tracer`` (see NOTE: [array methods]).

Layer: surface. Imports funcgrad.numpy modules and the kernel classes it patches.
"""

from __future__ import annotations

from funcgrad import core
from funcgrad.array import Array
from funcgrad.numpy import _core, linalg_core, reductions, shape, ufuncs


def _swap(f):
    return lambda self, other: f(other, self)


def _astype(self, dtype, copy=False):
    return _core.asarray(self, dtype)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return shape_mod.reshape(self, shape)


shape_mod = shape

_METHODS = {
    "__add__": ufuncs.add,
    "__radd__": _swap(ufuncs.add),
    "__sub__": ufuncs.subtract,
    "__rsub__": _swap(ufuncs.subtract),
    "__mul__": ufuncs.multiply,
    "__rmul__": _swap(ufuncs.multiply),
    "__truediv__": ufuncs.true_divide,
    "__rtruediv__": _swap(ufuncs.true_divide),
    "__pow__": ufuncs.power,
    "__rpow__": _swap(ufuncs.power),
    "__matmul__": linalg_core.matmul,
    "__rmatmul__": _swap(linalg_core.matmul),
    "__neg__": ufuncs.negative,
    "__pos__": lambda self: self,
    "__abs__": ufuncs.absolute,
    "__lt__": ufuncs.less,
    "__le__": ufuncs.less_equal,
    "__gt__": ufuncs.greater,
    "__ge__": ufuncs.greater_equal,
    "__eq__": ufuncs.equal,
    "__ne__": ufuncs.not_equal,
    "sum": reductions.sum,
    "mean": reductions.mean,
    "max": reductions.max,
    "min": reductions.min,
    "prod": reductions.prod,
    "reshape": _reshape,
    "astype": _astype,
    "transpose": lambda self, *axes: shape.transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)),
    "ravel": shape.ravel,
    "flatten": shape.ravel,
    "dot": linalg_core.dot,
}


def install(cls) -> None:
    for name, fn in _METHODS.items():
        setattr(cls, name, fn)
    cls.T = property(lambda self: shape.transpose(self))
    if cls is Array:
        cls.__hash__ = Array.__hash__


for _cls in (Array, core.Tracer):
    install(_cls)
