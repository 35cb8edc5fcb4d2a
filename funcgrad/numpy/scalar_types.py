"""Further scalar types of ``jax.numpy``: ``bool`` and ``uint`` (the default-width aliases), the
narrow types of ml_dtypes (``int4``, ``uint2``, ``float8_e5m2``, ``float4_e2m1fn``, ...), NumPy's
abstract ``character``/``flexible``/``object_`` and ``ComplexWarning``.

Layer: surface. Imports ``funcgrad.numpy._dtypes`` and ml_dtypes.

The narrow types are funcgrad scalar types like ``float32``: ``fnp.int4(3)`` is a 0-d Array of
dtype int4, they work as ``dtype=`` arguments (``astype``, ``zeros``), ``issubdtype`` places them
among NumPy's abstract types and ``finfo``/``iinfo`` give their limits. Arithmetic on them runs
eagerly through ml_dtypes; compiled programs (``jit``) take the 8-bit floats XLA's CPU backend
stores (``float8_e4m3fn``, ``float8_e5m2``); the others raise an error naming the supported
dtypes there.

>>> import funcgrad.numpy as fnp
>>> fnp.int4(7).dtype, fnp.issubdtype(fnp.float8_e5m2, fnp.floating), int(fnp.iinfo(fnp.uint2).max)
(dtype(int4), True, 3)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from funcgrad.numpy._dtypes import _scalar_type, bool_, uint64

__all__ = [
    "ComplexWarning",
    "bool",
    "character",
    "flexible",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "int1",
    "int2",
    "int4",
    "object_",
    "uint",
    "uint1",
    "uint2",
    "uint4",
]

bool = bool_  # noqa: A001 - jax.numpy's name (NumPy 2's spelling of bool_)
uint = uint64  # the default-width unsigned integer (64-bit: funcgrad's default integers are 64-bit)

int1 = _scalar_type(ml_dtypes.int1)
int2 = _scalar_type(ml_dtypes.int2)
int4 = _scalar_type(ml_dtypes.int4)
uint1 = _scalar_type(ml_dtypes.uint1)
uint2 = _scalar_type(ml_dtypes.uint2)
uint4 = _scalar_type(ml_dtypes.uint4)
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)

# NumPy's abstract types and warning, shared with NumPy as jax.numpy does.
character = np.character
flexible = np.flexible
object_ = np.object_
ComplexWarning = np.exceptions.ComplexWarning
