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
    "result_type",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
