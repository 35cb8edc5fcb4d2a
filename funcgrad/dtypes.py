"""``funcgrad.dtypes``: dtype utilities under JAX's ``jax.dtypes`` names.

Layer: surface. ``float0`` and ``bfloat16`` come from the kernel's dtype rules
(``funcgrad/kernel/dtypes.py``, NOTE: [weak types]); the rest are the NumPy surface's functions,
which follow NumPy 2's promotion (NEP 50). As JAX's, ``bfloat16`` is the scalar type (ml_dtypes'),
so ``isinstance(x, bfloat16)`` and ``bfloat16(1.5)`` work; ``np.dtype(bfloat16)`` is the dtype.

>>> import numpy as np
>>> result_type(np.float32, 2.0)
dtype('float32')
>>> canonicalize_dtype(np.int32)
dtype('int32')
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel.dtypes import bfloat16 as _bfloat16_dtype
from funcgrad.kernel.dtypes import float0
from funcgrad.numpy._core import TypePromotionError
from funcgrad.numpy._dtypes import (
    canonicalize_dtype,
    extended,
    finfo,
    iinfo,
    issubdtype,
    prng_key,
    result_type,
)

bfloat16 = _bfloat16_dtype.type  # the scalar type, as jax.dtypes.bfloat16

__all__ = [
    "TypePromotionError",
    "bfloat16",
    "canonicalize_dtype",
    "extended",
    "finfo",
    "float0",
    "iinfo",
    "issubdtype",
    "itemsize_bits",
    "prng_key",
    "result_type",
    "scalar_type_of",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("float0",)


def itemsize_bits(dtype) -> int:
    """The number of bits one element of ``dtype`` occupies (4 for ``int4``, 8 for ``bool``).

    >>> itemsize_bits(np.float32), itemsize_bits(np.bool_)
    (32, 8)
    """
    if dtype is None:  # (JAX's error; np.dtype(None) would be float64)
        raise ValueError("dtype cannot be None.")
    dtype = np.dtype(dtype)
    if dtype == float0:
        raise TypeError("itemsize_bits: float0 (the tangent type of integers) has no storage size")
    # ml_dtypes' sub-byte types (int4, uint2, float4_e2m1fn, ...) store one element per byte but
    # hold fewer bits, which their iinfo/finfo report.
    if dtype.itemsize == 1 and dtype.kind != "b":
        info = iinfo(dtype) if dtype.name.startswith(("int", "uint")) else finfo(dtype)
        return int(info.bits)
    return dtype.itemsize * 8


def scalar_type_of(x) -> type:
    """The Python scalar type (``bool``, ``int``, ``float`` or ``complex``) of ``x``'s dtype.

    >>> scalar_type_of(np.float32(1)), scalar_type_of(np.array([1, 2])), scalar_type_of(True)
    (<class 'float'>, <class 'int'>, <class 'bool'>)
    """
    dtype = np.dtype(x) if isinstance(x, np.dtype | type) else np.result_type(getattr(x, "dtype", x))
    if dtype == np.bool_:
        return bool
    if issubdtype(dtype, np.integer):
        return int
    if issubdtype(dtype, np.floating):
        return float
    if issubdtype(dtype, np.complexfloating):
        return complex
    raise TypeError(f"scalar_type_of: no Python scalar type for dtype {dtype}")


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
