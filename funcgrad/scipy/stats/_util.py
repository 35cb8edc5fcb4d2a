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
