"""``funcgrad.dtypes``: dtype utilities under JAX's ``jax.dtypes`` names.

Layer: surface. ``float0`` and ``bfloat16`` come from the kernel's dtype rules
(``funcgrad/kernel/dtypes.py``, NOTE: [weak types]); the rest are the NumPy surface's functions,
which follow NumPy 2's promotion (NEP 50).

>>> import numpy as np
>>> result_type(np.float32, 2.0)
dtype('float32')
>>> canonicalize_dtype(np.int32)
dtype('int32')
"""

from __future__ import annotations

import re

import numpy as np

from funcgrad.kernel.dtypes import bfloat16, float0
from funcgrad.numpy._core import TypePromotionError
from funcgrad.numpy._dtypes import canonicalize_dtype, finfo, iinfo, issubdtype, result_type

__all__ = [
    "TypePromotionError",
    "bfloat16",
    "canonicalize_dtype",
    "finfo",
    "float0",
    "iinfo",
    "issubdtype",
    "itemsize_bits",
    "result_type",
    "scalar_type_of",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def itemsize_bits(dtype) -> int:
    """The number of bits one element of ``dtype`` takes (4 for ``int4`` and ``float4_e2m1fn``,
    whose NumPy itemsize is a whole byte; 8 for ``bool``).

    >>> itemsize_bits(np.float32), itemsize_bits("int4"), itemsize_bits(bool)
    (32, 4, 8)
    """
    dt = canonicalize_dtype(dtype)
    narrow = re.fullmatch(r"u?int([24])|float([4-8])_\w+", dt.name)
    if narrow:
        return int(narrow.group(1) or narrow.group(2))
    return dt.itemsize * 8


def scalar_type_of(x) -> type:
    """The Python scalar type (``bool``, ``int``, ``float`` or ``complex``) of ``x``'s dtype.

    >>> scalar_type_of(np.uint8(1)), scalar_type_of(np.ones(2, np.float32)), scalar_type_of(1j)
    (<class 'int'>, <class 'float'>, <class 'complex'>)
    """
    if type(x) in (bool, int, float, complex):
        return type(x)
    dt = np.dtype(x.dtype) if hasattr(x, "dtype") else result_type(x)
    if dt == np.bool_:
        return bool
    if issubdtype(dt, np.integer):
        return int
    if issubdtype(dt, np.complexfloating):
        return complex
    if issubdtype(dt, np.floating) or "float" in dt.name:  # ml_dtypes' narrow floats too
        return float
    raise TypeError(f"scalar_type_of: {dt} has no Python scalar type")
