"""``funcgrad.typing``: annotations for functions of arrays (``jax.typing``).

Layer: surface. Imports numpy and the kernel's Array.

``ArrayLike``: what funcgrad's functions accept as an array -- funcgrad Arrays (and the traced
values a transformed function sees), NumPy arrays and scalars, and Python scalars.
``DTypeLike``: what they accept as a dtype -- a NumPy dtype, a type such as ``float`` or
``fnp.float32``, or a name such as ``"float32"``.

>>> import funcgrad.numpy as fnp
>>> def scale(x: ArrayLike, dtype: DTypeLike = "float32"):
...     return fnp.asarray(x, dtype) * 2
>>> scale([1, 2]).tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Tracer

__all__ = ["ArrayLike", "DTypeLike"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


ArrayLike = Union[Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex]  # noqa: UP007
DTypeLike = Union[str, type[Any], np.dtype]  # noqa: UP007
