"""Format-generic helpers of ``jax.experimental.sparse``: ``todense``, ``empty``, ``eye``,
and ``random_bcoo``.

Layer: surface. Imports funcgrad.numpy, funcgrad.random and the sparse formats.

``random_bcoo`` follows jax's recipe (one key for the data, one per batch element for the
indices, ``random.choice`` of flat positions), so with the same key it draws jax's array.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import funcgrad.numpy as jnp
from funcgrad import random
from funcgrad.api import vmap
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import BCOO
from funcgrad.experimental.sparse._bcsr import BCSR
from funcgrad.experimental.sparse._matrix import COO, CSC, CSR
from funcgrad.interpreters import ad, batching, mlir
from funcgrad.kernel import core

__all__ = ["empty", "eye", "random_bcoo", "todense"]

_FORMATS = {"bcsr": BCSR, "bcoo": BCOO, "coo": COO, "csr": CSR, "csc": CSC}


def _format(sparse_format, fn):
    formats = [f for f in _FORMATS if not (fn == "eye" and f == "bcsr")]  # (JAX's eye has no BCSR)
    if sparse_format not in formats:
        raise ValueError(f"{fn}: sparse_format={sparse_format!r} not recognized; must be one of {formats}")
    return _FORMATS[sparse_format]


def todense(arr):
    """The dense array of a sparse ``arr`` of any format; a dense array passes through.

    >>> import funcgrad.numpy as jnp
    >>> todense(BCOO.fromdense(jnp.array([0.0, 1.0]))).tolist()
    [0.0, 1.0]
    >>> todense(jnp.array([2.0])).tolist()
    [2.0]
    """
    if isinstance(arr, JAXSparse):
        return arr.todense()
    if isinstance(arr, core.Tracer):  # (staged, so sparsify sees where a sparse argument is densified)
        return todense_p.bind(arr)
    return arr


# JAX's ``todense`` primitive: the identity on a dense value, staged where ``todense`` is applied to
# a traced one. ``sparsify`` traces its function with dense stand-ins for the sparse arguments
# (NOTE: [sparsify]); there the equation's sparse operand is densified (``_transform``'s rule of
# the sparse package's own primitives).
todense_p = core.Primitive("todense")
todense_p.def_impl(lambda x: x)
todense_p.def_abstract_eval(lambda x: x)
ad.deflinear(todense_p, lambda t: [t])
batching.defvectorized(todense_p)
mlir.register_lowering(todense_p, mlir.lower_fun(lambda x: x, multiple_results=False))


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """An all-zero sparse array with no stored elements (``nse == 0``); ``kwds`` go to the format
    (``n_batch``, ``n_dense`` for BCOO).

    >>> empty((2, 3))
    BCOO(float64[2, 3], nse=0)
    """
    cls = _format(sparse_format, "empty")
    return cls._empty(tuple(operator.index(s) for s in shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A sparse 2-d array with ones on the ``k``-th diagonal.

    >>> eye(3, k=1).todense().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    cls = _format(sparse_format, "eye")
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    return cls._eye(N, M, operator.index(k), dtype=dtype, index_dtype=index_dtype, **kwds)


def random_bcoo(
    key,
    shape,
    *,
    dtype=jnp.float64,
    indices_dtype=None,
    nse=0.2,
    n_batch=0,
    n_dense=0,
    unique_indices=True,
    sorted_indices=False,
    generator=random.uniform,
    **kwds,
):
    """A random BCOO array: ``nse`` stored elements per batch element (a fraction of the sparse
    size if ``0 < nse < 1``) at positions drawn by ``random.choice`` (without repeats when
    ``unique_indices``), values drawn by ``generator(key, shape=, dtype=, **kwds)``.

    >>> x = random_bcoo(random.PRNGKey(0), (4, 5), nse=3)
    >>> x.data.shape, x.indices.shape
    ((3,), (3, 2))
    """
    shape = tuple(operator.index(s) for s in shape)
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"random_bcoo: invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
    n_sparse = len(shape) - n_batch - n_dense
    batch, sparse, dense = shape[:n_batch], shape[n_batch : n_batch + n_sparse], shape[n_batch + n_sparse :]
    sparse_size = math.prod(sparse)
    if not 0 <= nse < sparse_size:
        raise ValueError(f"random_bcoo: got nse={nse}, expected to be between 0 and {sparse_size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    indices_dtype = np.dtype(indices_dtype or jnp.int64)

    def draw_indices(k):
        if not sparse:
            return jnp.zeros((nse, n_sparse), indices_dtype)
        flat = random.choice(k, sparse_size, shape=(nse,), replace=not unique_indices).astype(indices_dtype)
        return jnp.stack(jnp.unravel_index(flat, sparse), axis=1).astype(indices_dtype)

    keys = random.split(key, math.prod(batch) + 1)
    data = generator(keys[0], shape=(*batch, nse, *dense), dtype=dtype, **kwds)
    indices = vmap(draw_indices)(keys[1:]).reshape((*batch, nse, n_sparse))
    mat = BCOO((data, indices), shape=shape, unique_indices=unique_indices)
    return mat.sort_indices() if sorted_indices else mat
