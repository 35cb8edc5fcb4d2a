"""``funcgrad.dlpack``: exchanging arrays with other libraries through DLPack (``jax.dlpack``).

Layer: surface. Imports funcgrad.numpy (``from_dlpack``) and numpy.

Going out, every funcgrad Array has ``__dlpack__``/``__dlpack_device__`` (``np.from_dlpack(x)``,
``torch.from_dlpack(x)``); coming in, ``from_dlpack`` reads any object that has them.

>>> import numpy as np
>>> from_dlpack(np.arange(3.0)).tolist(), is_supported_dtype(np.float32)
([0.0, 1.0, 2.0], True)
"""

from __future__ import annotations

import numpy as np

from funcgrad.numpy import from_dlpack

__all__ = ["from_dlpack", "is_supported_dtype"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# The dtypes DLPack carries (jax.dlpack's list): bool, the integers, the floats incl. bfloat16,
# and the complex types.
_SUPPORTED = frozenset(
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
        np.float16, np.float32, np.float64, np.complex64, np.complex128,
    )
)  # fmt: skip


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack.

    >>> is_supported_dtype("float64"), is_supported_dtype("float8_e4m3fn")
    (True, False)
    """
    import ml_dtypes  # noqa: PLC0415 - only here: bfloat16 is the one ml_dtypes type DLPack carries

    dt = np.dtype(dtype)
    return dt in _SUPPORTED or dt == np.dtype(ml_dtypes.bfloat16)
