"""``funcgrad.experimental.sparse``: sparse arrays as ``jax.experimental.sparse``.

Layer: surface. Imports its submodules.

- ``BCOO`` (batched COO, any rank, batch/sparse/dense dimensions; ``+``/``-`` of two BCOO,
  ``*`` and ``@`` with dense arrays, ``.T``, ``.sum``, ``.reshape``, ``.update_layout``) and
  ``bcoo_*`` functions (``_bcoo``; arithmetic in ``_kernels`` and ``_dot``, NOTE: [BCOO
  layout], NOTE: [sparse dot_general]);
- structural BCOO operations -- broadcast_in_dim, concatenate, slice, dynamic_slice, gather, rev,
  squeeze, conv_general_dilated, multiply_sparse, dot_general_sampled (``_structural``, NOTE:
  [structural BCOO operations through the dense form]);
- ``BCSR`` (batched CSR) and ``bcsr_*`` functions, through the BCOO of the same elements (``_bcsr``);
- ``COO``, ``CSR``, ``CSC`` (2-d) and ``coo_*``/``csr_*`` functions (``_matrix``);
- ``todense``, ``empty``, ``eye``, ``random_bcoo`` (``_api``);
- ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``jacobian`` with respect to sparse
  arguments (``_ad``, NOTE: [sparse gradients]);
- ``sparsify`` (``_transform``, NOTE: [sparsify]);
- the submodule ``linalg``: ``lobpcg_standard`` (top-k eigenpairs of a Hermitian operator).

Every operation is a composition of funcgrad.numpy/funcgrad.lax (gathers, scatter-adds,
dot_general, sorts): no new primitive, so ``jit``, ``vmap`` and ``grad`` go through all of it.

>>> import funcgrad.numpy as jnp
>>> x = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
>>> (x.T @ jnp.array([1.0, 1.0])).tolist()
[2.0, 1.0]
"""

from funcgrad.experimental.sparse import (
    _ad,
    _api,
    _base,
    _bcoo,
    _bcsr,
    _matrix,
    _structural,
    _transform,
    linalg,  # noqa: F401 - the submodule (lobpcg_standard)
)
from funcgrad.experimental.sparse._ad import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.experimental.sparse._api import *  # noqa: F403
from funcgrad.experimental.sparse._base import *  # noqa: F403
from funcgrad.experimental.sparse._bcoo import *  # noqa: F403
from funcgrad.experimental.sparse._bcsr import *  # noqa: F403
from funcgrad.experimental.sparse._matrix import *  # noqa: F403
from funcgrad.experimental.sparse._structural import *  # noqa: F403
from funcgrad.experimental.sparse._transform import *  # noqa: F403

# The namespace is the union of the modules' __all__, never listed a second time.
__all__ = sorted(
    {name for m in (_ad, _api, _base, _bcoo, _bcsr, _matrix, _structural, _transform) for name in m.__all__}
)

# JAX's submodules of the same names (``from jax.experimental.sparse import bcoo``), derived from
# the namespace above.
from funcgrad.experimental.sparse import bcoo, bcsr  # noqa: E402, F401


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
