"""Shared argument handling of the ``funcgrad.scipy.stats`` distribution modules.

Layer: surface. Imports funcgrad.numpy.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import promote_args_inexact


def promote(name: str, *args) -> list:
    """``args`` as arrays of one inexact dtype (integers become float64, float32 stays float32);
    complex values are refused, naming the function."""
    args = promote_args_inexact(*args)
    if fnp.iscomplexobj(args[0]):
        raise TypeError(f"scipy.stats.{name} does not support complex-valued inputs, got {args[0].dtype}")
    return args


def standardize(name: str, x, loc, scale):
    """``((x - loc) / scale, scale > 0, scale)`` with the arguments promoted as ``promote`` does:
    the standardized variable of a location-scale family and where its parameters are valid."""
    x, loc, scale = promote(name, x, loc, scale)
    return (x - loc) / scale, scale > 0, scale


def lax_const(x, value):
    """JAX's ``lax._const(x, value)``, the constants of its formulas: a Python number where ``x`` is
    a weakly typed scalar, else an array of ``x``'s dtype -- so a result is weakly typed exactly
    where jax's is (a boolean or integer array, weak after promotion, gives a strong result).

    >>> type(lax_const(2.0, 3)), lax_const(np.ones(2, np.float32), 3).dtype
    (<class 'float'>, dtype('float32'))
    """
    weak = getattr(x, "weak_type", type(x) in (int, float, bool, complex))
    dtype = fnp.result_type(x)
    if weak and np.ndim(x) == 0:
        kind = np.dtype(dtype).kind
        return (complex if kind == "c" else float if kind == "f" else int if kind in "iu" else bool)(value)
    return np.asarray(value, dtype)
