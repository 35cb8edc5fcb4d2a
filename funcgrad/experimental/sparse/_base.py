"""``JAXSparse``: the base class of the sparse formats (BCOO, COO, CSR, CSC), as in
``jax.experimental.sparse``, so ``isinstance(x, JAXSparse)`` tells a sparse array.

Layer: surface. Imports nothing of the project.

>>> issubclass(int, JAXSparse)
False
"""

from __future__ import annotations

__all__ = ["JAXSparse"]


class JAXSparse:
    """Base class of the sparse array formats: each has ``data``, a static ``shape``, ``dtype``,
    ``nse``, ``ndim`` and ``todense()``."""

    __array_priority__ = 100  # NumPy arrays defer ``ndarray @ sparse`` to the sparse operand
    __array_ufunc__ = None
    shape: tuple = ()
