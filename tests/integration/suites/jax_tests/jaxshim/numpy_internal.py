"""``jax._src.numpy`` / ``jax._src.numpy.util`` for JAX's test files: ``promote_dtypes`` and
``promote_dtypes_inexact`` / ``_complex`` over funcgrad.numpy's public promotion."""

import numpy as np

import funcgrad.numpy as jnp

from . import dtypes as _dtypes


def _promote(args, to):
    if not args:
        return []
    dtype = np.dtype(jnp.result_type(*args))
    dtype = to(dtype)
    return [jnp.asarray(a, dtype) for a in args]


def promote_dtypes(*args):
    return _promote(args, lambda d: d)


def promote_dtypes_inexact(*args):
    return _promote(args, _dtypes.to_inexact_dtype)


def promote_dtypes_complex(*args):
    return _promote(args, _dtypes.to_complex_dtype)


def promote_dtypes_numeric(*args):
    return _promote(args, _dtypes.to_numeric_dtype)


def __getattr__(name):
    if name == "util":
        import sys

        return sys.modules[__name__]
    raise AttributeError(name)
