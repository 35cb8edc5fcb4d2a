"""The Python Array API standard's namespace hooks: ``__array_api_version__``,
``__array_namespace_info__()`` and ``Array.__array_namespace__()`` (so array-API-generic code, e.g.
``array_api_compat``, finds ``funcgrad.numpy`` from an array).

Layer: surface. Imports the kernel (to install the method) and funcgrad's device list.

funcgrad's defaults differ from JAX's without x64: the default float is float64 and the default
integer int64 (NumPy's), and every dtype of the standard is available. Boolean-mask indexing and
data-dependent shapes (``unique``, ``nonzero``) work on concrete values only, not under ``jit``,
so the capability flags report them False (as JAX does).

>>> import funcgrad.numpy as fnp
>>> fnp.arange(3).__array_namespace__() is fnp, fnp.__array_api_version__
(True, '2024.12')
"""

from __future__ import annotations

import sys

import numpy as np

from funcgrad import (
    _placement,  # noqa: F401 - installs Array.device, .to_device (the Array API's)
    kernel,
)
from funcgrad._devices import devices
from funcgrad.kernel import dtypes as _dt

# Nothing for ``import *``: funcgrad.numpy binds the two hooks by name (``dir()`` lists public names).
__all__: list[str] = []

__array_api_version__ = "2024.12"

_DTYPES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KIND_GROUPS = {"integral": ("signed integer", "unsigned integer"), "numeric": tuple(_DTYPES)[1:]}


class ArrayNamespaceInfo:
    """What the Array API's inspection utilities report about funcgrad.numpy."""

    def capabilities(self) -> dict:
        """Boolean masking and data-dependent shapes work eagerly but not under ``jit``."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        """None, as JAX's: a new array is uncommitted (placed on the first device, free to move)."""
        return None

    def devices(self) -> list:
        """The devices arrays can be placed on, after None (uncommitted), as JAX lists them."""
        return [None, *devices()]

    def default_dtypes(self, *, device=None) -> dict:
        """funcgrad's defaults: NumPy's (64-bit), or JAX's 32-bit ones in 32-bit mode."""
        canon = _dt.canonical
        return {
            "real floating": canon(np.dtype(np.float64)),
            "complex floating": canon(np.dtype(np.complex128)),
            "integral": canon(np.dtype(np.int64)),
            "indexing": canon(np.dtype(np.int64)),
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The dtypes of a kind (a name of the standard, a tuple of them, or None for all).

        >>> list(ArrayNamespaceInfo().dtypes(kind="real floating"))
        ['float32', 'float64']
        """
        kinds = (kind,) if isinstance(kind, str) else tuple(kind) if kind is not None else tuple(_DTYPES)
        names = []
        for k in kinds:
            for group in _KIND_GROUPS.get(k, (k,)):
                if group not in _DTYPES:
                    raise ValueError(f"dtypes: unknown kind {k!r}")
                names.extend(_DTYPES[group])
        # (in 32-bit mode the 64-bit types are not available, as in JAX)
        wide = ("int64", "uint64", "float64", "complex128")
        return {name: np.dtype(name) for name in names if _dt.x64_enabled or name not in wide}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API's inspection namespace for funcgrad.numpy.

    >>> __array_namespace_info__().default_dtypes()["integral"]
    dtype('int64')
    """
    return ArrayNamespaceInfo()


def _array_namespace(self, /, *, api_version: str | None = None):
    """``x.__array_namespace__()``: funcgrad.numpy, which implements the 2024.12 standard; another
    ``api_version`` is JAX's ValueError (2023.12 included, as JAX 0.10.2 has only 2024.12)."""
    if api_version is not None and api_version != "2024.12":
        raise ValueError(f"{api_version=!r} is not available; available versions are: ['2024.12']")
    return sys.modules["funcgrad.numpy"]


kernel.register(array_methods={"__array_namespace__": _array_namespace})
