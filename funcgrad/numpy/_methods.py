"""Installs NumPy's operators and methods on ``Array`` and ``Tracer`` (see NOTE: [array methods]).

Layer: surface. Imports the funcgrad.numpy modules whose functions become methods, and the two
kernel classes it patches. ``funcgrad.numpy`` imports this module, so importing ``funcgrad.numpy``
(which ``funcgrad.api`` does) equips every array and every tracer.

Binary operators take NumPy's operand rules (NEP 50 promotion, broadcasting); an operand that is
not array-like makes the operator return ``NotImplemented``, so Python tries the reflected one and
then raises its usual ``TypeError``.
"""

from __future__ import annotations

import numpy as np

from funcgrad import kernel
from funcgrad.kernel import core
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.numpy import (
    complexes,
    contractions,
    indexing,
    lookup,
    manipulation,
    reductions,
    sorting,
    transcendental,
    ufuncs,
)
from funcgrad.numpy._core import asarray, canonicalize_dtype

_ARRAY_LIKE = (Array, core.Tracer, np.ndarray, np.generic, *python_scalar_types, list, tuple)


def _binary(fn, reflected: bool = False):
    if reflected:

        def op(self, other):
            if not isinstance(other, _ARRAY_LIKE):
                return NotImplemented
            return fn(other, self)

    else:

        def op(self, other):
            if not isinstance(other, _ARRAY_LIKE):
                return NotImplemented
            return fn(self, other)

    op.__name__ = fn.__name__
    return op


def _astype(self, dtype, copy: bool = False, device=None):
    """``x.astype(dtype)``: convert (a strong dtype; NumPy's casting of out-of-range values)."""
    return asarray(self, canonicalize_dtype(dtype), copy=True if copy else None, device=device)


def _reshape(self, *shape, order="C"):
    """``x.reshape(shape)`` or ``x.reshape(*shape)``."""
    if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
        shape = shape[0]
    return _shape_mod.reshape(self, shape, order=order)


_shape_mod = manipulation


def _transpose(self, *axes):
    """``x.transpose()``, ``x.transpose(axes)`` or ``x.transpose(*axes)``."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int | np.integer)):
        axes = axes[0]
    return _shape_mod.transpose(self, axes or None)


def _copy(self, order="C"):
    """A new Array with the same value (donating one to a jitted call leaves the other usable)."""
    return asarray(self, copy=True)


def _round(self, decimals=0, out=None):
    return transcendental.round(self, decimals, out)


def _clip(self, min=None, max=None):
    return ufuncs.clip(self, min, max)


def _setitem(self, index, value):
    raise TypeError(
        "funcgrad Arrays are immutable: item assignment is not supported. Use the functional update "
        "x = x.at[index].set(value) instead (it is differentiable and works under jit)."
    )


_METHODS = {
    "__add__": _binary(ufuncs.add),
    "__radd__": _binary(ufuncs.add, True),
    "__sub__": _binary(ufuncs.subtract),
    "__rsub__": _binary(ufuncs.subtract, True),
    "__mul__": _binary(ufuncs.multiply),
    "__rmul__": _binary(ufuncs.multiply, True),
    "__truediv__": _binary(ufuncs.true_divide),
    "__rtruediv__": _binary(ufuncs.true_divide, True),
    "__floordiv__": _binary(ufuncs.floor_divide),
    "__rfloordiv__": _binary(ufuncs.floor_divide, True),
    "__mod__": _binary(ufuncs.remainder),
    "__rmod__": _binary(ufuncs.remainder, True),
    "__divmod__": _binary(ufuncs.divmod),
    "__rdivmod__": _binary(ufuncs.divmod, True),
    "__pow__": _binary(ufuncs.power),
    "__rpow__": _binary(ufuncs.power, True),
    "__matmul__": _binary(contractions.matmul),
    "__rmatmul__": _binary(contractions.matmul, True),
    "__and__": _binary(ufuncs.bitwise_and),
    "__rand__": _binary(ufuncs.bitwise_and, True),
    "__or__": _binary(ufuncs.bitwise_or),
    "__ror__": _binary(ufuncs.bitwise_or, True),
    "__xor__": _binary(ufuncs.bitwise_xor),
    "__rxor__": _binary(ufuncs.bitwise_xor, True),
    "__lshift__": _binary(ufuncs.left_shift),
    "__rlshift__": _binary(ufuncs.left_shift, True),
    "__rshift__": _binary(ufuncs.right_shift),
    "__rrshift__": _binary(ufuncs.right_shift, True),
    "__lt__": _binary(ufuncs.less),
    "__le__": _binary(ufuncs.less_equal),
    "__gt__": _binary(ufuncs.greater),
    "__ge__": _binary(ufuncs.greater_equal),
    "__eq__": _binary(ufuncs.equal),
    "__ne__": _binary(ufuncs.not_equal),
    "__neg__": ufuncs.negative,
    "__pos__": ufuncs.positive,
    "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.bitwise_not,
    "__round__": lambda self, ndigits=None: transcendental.round(self, ndigits or 0),
    "__getitem__": indexing.getitem,
    "__setitem__": _setitem,
    "sum": reductions.sum,
    "prod": reductions.prod,
    "mean": reductions.mean,
    "var": reductions.var,
    "std": reductions.std,
    "max": reductions.max,
    "min": reductions.min,
    "ptp": reductions.ptp,
    "argmax": reductions.argmax,
    "argmin": reductions.argmin,
    "any": reductions.any,
    "all": reductions.all,
    "cumsum": sorting.cumsum,
    "cumprod": sorting.cumprod,
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "searchsorted": sorting.searchsorted,
    "clip": _clip,
    "round": _round,
    "reshape": _reshape,
    "astype": _astype,
    "transpose": _transpose,
    "ravel": manipulation.ravel,
    "flatten": manipulation.ravel,
    "squeeze": manipulation.squeeze,
    "swapaxes": manipulation.swapaxes,
    "repeat": manipulation.repeat,
    "dot": contractions.dot,
    "trace": contractions.trace,
    "diagonal": lookup.diagonal,
    "nonzero": lookup.nonzero,
    "take": lookup.take,
    "conj": complexes.conjugate,
    "conjugate": complexes.conjugate,
    "copy": _copy,
}

_PROPERTIES = {
    "T": lambda self: _shape_mod.transpose(self),
    "mT": manipulation.matrix_transpose,
    "real": complexes.real,
    "imag": complexes.imag,
    "at": indexing.IndexUpdateHelper,
    "itemsize": lambda self: self.dtype.itemsize,
}


# Operators, methods and properties of ``Array`` and of every ``Tracer`` (NOTE: [array methods]).
kernel.register(array_methods=_METHODS, array_properties=_PROPERTIES)
