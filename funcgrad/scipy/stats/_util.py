"""Shared argument handling of the ``funcgrad.scipy.stats`` distribution modules.

Layer: surface. Imports funcgrad.numpy.

NOTE: [stats formulas as JAX's]
Each distribution function promotes its arguments with ``promote_args_inexact(name, ...)`` (JAX's
helper of that name and signature: lists refused in JAX's words, one inexact dtype, JAX's rank
promotion) and writes the constants of its formula as JAX's does, through ``lax_const(example,
value)`` (JAX's ``lax._const``) where JAX's formula does and as Python numbers where JAX's does,
taking the same argument as the example. That is what makes a result weakly typed exactly where
jax's is: after promotion a boolean or integer array beside Python numbers is a weakly typed float
array, and a ``lax_const`` of a weak array that is not 0-d is a strong constant, so such inputs give
a strong result wherever JAX's formula has one (``tests/surface/scipy/test_scipy_dtypes.py``
compares dtypes, weak types, shapes, values and errors with jax's).
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad.numpy import _core


def promote_args_inexact(name: str, *args) -> list:
    """JAX's ``promote_args_inexact(fun_name, *args)``: ``args`` as arrays of one inexact dtype
    (integers and booleans become the default float, float32 stays float32), lower-rank operands
    given leading size-1 axes (JAX's ``promote_shapes``); a list or tuple is JAX's TypeError naming
    ``name``, and complex values are refused.

    >>> promote_args_inexact("norm.pdf", [1.0])
    Traceback (most recent call last):
    TypeError: norm.pdf requires ndarray or scalar arguments, got <class 'list'> at position 0.
    """
    return _core.rank_promote(*promote_dtypes_inexact(name, *args), name=name)


def promote_dtypes_inexact(name: str, *args) -> list:
    """``promote_args_inexact`` without the rank promotion, for the functions JAX writes with its
    ``promote_dtypes_inexact`` (arguments of different ranks by design: ``dirichlet``,
    ``multivariate_normal``); a list or tuple is still a TypeError, as jax's."""
    _core.check_arraylike(name, *args)
    args = _core.promote_args_inexact(*args)
    if fnp.iscomplexobj(args[0]):
        raise TypeError(f"scipy.stats.{name} does not support complex-valued inputs, got {args[0].dtype}")
    return args
