"""``funcgrad.typing``: annotations for functions of arrays (``jax.typing``).

Layer: surface. Imports numpy and the public ``Array`` type (funcgrad/numpy/_dtypes.py).

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

from funcgrad.numpy._dtypes import PublicArray as Array  # funcgrad.Array (jax.Array)

__all__ = ["ArrayLike", "DTypeLike"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# JAX's members, in its order: a traced value is an ``Array`` (``isinstance(tracer, Array)`` holds),
# so it needs no member of its own (jaxtyping builds one annotation per member: Float[ArrayLike, ""]).
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]  # noqa: UP007
DTypeLike = Union[str, type[Any], np.dtype]  # noqa: UP007
