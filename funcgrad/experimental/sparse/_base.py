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
    __hash__ = None  # (unhashable, as JAX's sparse arrays and Arrays)
    shape: tuple = ()

    def __len__(self) -> int:
        """The size of the first dimension, as an array's ``len``."""
        return self.shape[0]

    def block_until_ready(self):
        """Wait until every buffer of this sparse array is computed; returns it (JAX's method).

        >>> from funcgrad.experimental.sparse import BCOO
        >>> import numpy as np
        >>> len(BCOO.fromdense(np.eye(3)).block_until_ready())
        3
        """
        for name in ("data", "indices", "indptr", "row", "col"):
            leaf = getattr(self, name, None)
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()
        return self
