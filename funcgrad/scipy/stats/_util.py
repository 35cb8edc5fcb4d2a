"""Shared argument handling of the ``funcgrad.scipy.stats`` distribution modules.

Layer: surface. Imports funcgrad.numpy.
"""

from __future__ import annotations

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
