"""``jax._src.dtypes`` under the alias: funcgrad's ``dtypes`` module (``TypePromotionError``,
``finfo``, ``issubdtype``, ...), the same objects, and the few internal names libraries subclass
or call at import (flax's fp8 helpers): ``DType``, ``ExtendedDType`` (the base class of a library's
extended dtype, ``funcgrad.kernel.extended``'s: NOTE: [extended dtypes]) and ``supports_inf``.

>>> supports_inf("float32"), supports_inf("int32")
(True, False)
"""

import numpy as np

from funcgrad.dtypes import *  # noqa: F403
from funcgrad.dtypes import __all__ as _public
from funcgrad.kernel.extended import ExtendedDType  # (a library's extended dtype's base: flax's fp8_meta32)

__all__ = [*_public, "DType", "ExtendedDType", "supports_inf"]

DType = np.dtype  # (JAX's type alias for a dtype)


def supports_inf(dtype) -> bool:
    """Whether ``dtype`` has infinities: the inexact (floating and complex) dtypes."""
    return bool(np.issubdtype(np.dtype(dtype), np.inexact))
