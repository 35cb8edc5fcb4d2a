"""Array creation in funcgrad.numpy: zeros, ones, full, arange, ...

Layer: surface. Imports funcgrad.numpy._core and the primitive catalog.
"""

from __future__ import annotations

import numpy as np

from funcgrad import dtypes as _dt
from funcgrad.array import Array
from funcgrad.numpy._core import aval
from primitives import structure as st


def _shape(shape):
    return (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)


def zeros(shape, dtype=None):
    """An Array of zeros (default float64)."""
    return Array._from_owned(np.zeros(_shape(shape), dtype or _dt.default_float))


def ones(shape, dtype=None):
    """An Array of ones (default float64)."""
    return Array._from_owned(np.ones(_shape(shape), dtype or _dt.default_float))


def full(shape, fill_value, dtype=None):
    """An Array of ``shape`` filled with ``fill_value`` (traced fill values broadcast)."""
    if hasattr(fill_value, "dtype") and not isinstance(fill_value, np.ndarray | np.generic):
        from primitives import elementwise as ew  # noqa: PLC0415

        v = fill_value if dtype is None else ew.convert_element_type(fill_value, dtype)
        return st.broadcast_in_dim(v, _shape(shape), tuple(range(len(_shape(shape)) - aval(v).ndim, len(_shape(shape)))))
    return Array._from_owned(np.full(_shape(shape), fill_value, dtype))


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of ``a``."""
    av = aval(a)
    return Array._from_owned(np.zeros(av.shape if shape is None else _shape(shape), dtype or av.dtype))


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype of ``a``."""
    av = aval(a)
    return Array._from_owned(np.ones(av.shape if shape is None else _shape(shape), dtype or av.dtype))


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (NumPy semantics)."""
    for v in (start, stop, step):
        if hasattr(v, "_trace"):
            raise TypeError("arange needs concrete (non-traced) bounds; use static_argnums under jit")
    return Array._from_owned(np.arange(start, stop, step, dtype=dtype))
