"""``funcgrad.experimental.sparse``: sparse arrays as ``jax.experimental.sparse``.

Layer: surface. Imports its submodules.

- ``BCOO`` (batched COO, any rank, batch/sparse/dense dimensions; ``+``/``-`` of two BCOO,
  ``*`` and ``@`` with dense arrays, ``.T``, ``.sum``, ``.reshape``, ``.update_layout``) and
  ``bcoo_*`` functions (``_bcoo``; arithmetic in ``_kernels`` and ``_dot``, NOTE: [BCOO
  layout], NOTE: [sparse dot_general]);
- ``COO``, ``CSR``, ``CSC`` (2-d) and ``coo_*``/``csr_*`` functions (``_matrix``);
- ``todense``, ``empty``, ``eye``, ``random_bcoo`` (``_api``);
- ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``jacobian`` with respect to sparse
  arguments (``_ad``, NOTE: [sparse gradients]);
- ``sparsify`` (``_transform``, NOTE: [sparsify]).

Every operation is a composition of funcgrad.numpy/funcgrad.lax (gathers, scatter-adds,
dot_general, sorts): no new primitive, so ``jit``, ``vmap`` and ``grad`` go through all of it.

>>> import funcgrad.numpy as jnp
>>> x = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
>>> (x.T @ jnp.array([1.0, 1.0])).tolist()
[2.0, 1.0]
"""

from funcgrad.experimental.sparse._ad import grad, jacfwd, jacobian, jacrev, value_and_grad
from funcgrad.experimental.sparse._api import empty, eye, random_bcoo, todense
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import (
    BCOO,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    bcoo_dot_general,
    bcoo_extract,
    bcoo_fromdense,
    bcoo_multiply_dense,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_sort_indices,
    bcoo_sum_duplicates,
    bcoo_todense,
    bcoo_transpose,
    bcoo_update_layout,
)
from funcgrad.experimental.sparse._matrix import (
    COO,
    CSC,
    CSR,
    coo_fromdense,
    coo_matmat,
    coo_matvec,
    coo_todense,
    csr_fromdense,
    csr_matmat,
    csr_matvec,
    csr_todense,
)
from funcgrad.experimental.sparse._transform import sparsify

__all__ = [
    "BCOO",
    "COO",
    "CSC",
    "CSR",
    "JAXSparse",
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
    "bcoo_dot_general",
    "bcoo_extract",
    "bcoo_fromdense",
    "bcoo_multiply_dense",
    "bcoo_reduce_sum",
    "bcoo_reshape",
    "bcoo_sort_indices",
    "bcoo_sum_duplicates",
    "bcoo_todense",
    "bcoo_transpose",
    "bcoo_update_layout",
    "coo_fromdense",
    "coo_matmat",
    "coo_matvec",
    "coo_todense",
    "csr_fromdense",
    "csr_matmat",
    "csr_matvec",
    "csr_todense",
    "empty",
    "eye",
    "grad",
    "jacfwd",
    "jacobian",
    "jacrev",
    "random_bcoo",
    "sparsify",
    "todense",
    "value_and_grad",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
