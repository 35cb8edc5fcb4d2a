"""``jax._src.dtypes`` under the alias: funcgrad's ``dtypes`` module (``TypePromotionError``,
``finfo``, ``issubdtype``, ...), the same objects, and the few internal names libraries subclass
or call at import (flax's fp8 helpers): ``DType``, ``extended`` and ``ExtendedDType`` (the category and base
class of dtypes with a custom physical representation; funcgrad defines none, so these are bare
classes that no funcgrad dtype belongs to) and ``supports_inf``.

>>> supports_inf("float32"), supports_inf("int32")
(True, False)
"""

import numpy as np

from funcgrad.dtypes import *  # noqa: F403
from funcgrad.dtypes import __all__ as _public

__all__ = [*_public, "DType", "ExtendedDType", "extended", "supports_inf"]

DType = np.dtype  # (JAX's type alias for a dtype)


class extended(np.generic):  # noqa: N801 - JAX's name
    """The abstract scalar category of extended dtypes (none in funcgrad)."""


class ExtendedDType:
    """Base class of an extended dtype's description (``type``, ``name``, rules)."""


def supports_inf(dtype) -> bool:
    """Whether ``dtype`` has infinities: the inexact (floating and complex) dtypes."""
    return bool(np.issubdtype(np.dtype(dtype), np.inexact))
