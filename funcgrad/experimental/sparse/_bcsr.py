"""``BCSR``: batched compressed sparse rows, as ``jax.experimental.sparse.BCSR``, and the
``bcsr_*`` functions.

Layer: surface. Imports funcgrad.numpy and the BCOO functions.

A BCSR of shape ``batch + (rows, cols) + dense`` holds ``data`` (``batch + (nse,) + dense``),
``indices`` (``batch + (nse,)``: column of each stored element) and ``indptr`` (``batch + (rows +
1,)``: the stored elements of row ``r`` are ``indptr[r]:indptr[r + 1]``). Its operations go
through the BCOO of the same elements (``to_bcoo``/``from_bcoo``: the row of element ``j`` is the
number of ``indptr[1:]`` entries ``<= j``, and back, ``indptr[r]`` counts the elements of rows
``< r``), so everything BCOO does -- jit, vmap, grad -- BCSR does. Padding elements sit after
``indptr[-1]`` with row index ``rows`` in BCOO form (out of bounds: dropped by ``todense``).
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as jnp
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import (
    BCOO,
    bcoo_dot_general,
    bcoo_extract,
    bcoo_fromdense,
    bcoo_sort_indices,
    bcoo_sum_duplicates,
    bcoo_todense,
)
from funcgrad.experimental.sparse._structural import bcoo_broadcast_in_dim, bcoo_concatenate
from funcgrad.tree_util import register_pytree_node_class

__all__ = [
    "BCSR",
    "bcsr_broadcast_in_dim",
    "bcsr_concatenate",
    "bcsr_dot_general",
    "bcsr_extract",
    "bcsr_fromdense",
    "bcsr_sum_duplicates",
    "bcsr_todense",
]


@register_pytree_node_class
class BCSR(JAXSparse):
    """A batched-CSR sparse array: ``BCSR((data, indices, indptr), shape=shape)``.

    >>> x = BCSR.fromdense(jnp.array([[0.0, 1.0], [2.0, 3.0]]))
    >>> x.indices.tolist(), x.indptr.tolist()
    ([1, 0, 1], [0, 1, 3])
    >>> (x @ jnp.array([1.0, 1.0])).tolist()
    [1.0, 5.0]
    """

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        try:
            data, indices, indptr = args
        except (TypeError, ValueError):
            raise TypeError("BCSR: the first argument must be (data, indices, indptr)") from None
        self.data, self.indices, self.indptr = jnp.asarray(data), jnp.asarray(indices), jnp.asarray(indptr)
        self.shape = tuple(int(s) for s in shape)
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)
        self._index_ndim = self.indices.ndim
        nb = self.indices.ndim - 1
        if len(self.shape) < nb + 2:
            raise ValueError(f"BCSR: shape {self.shape} needs the batch dimensions and two sparse ones")
        if tuple(self.indptr.shape) != (*self.shape[:nb], self.shape[nb] + 1):
            raise ValueError(
                f"BCSR: indptr has shape {tuple(self.indptr.shape)}, expected "
                f"{(*self.shape[:nb], self.shape[nb] + 1)} (rows + 1 per batch element)"
            )
        if tuple(self.data.shape[: nb + 1]) != tuple(self.indices.shape):
            raise ValueError(
                f"BCSR: data {tuple(self.data.shape)} and indices {tuple(self.indices.shape)} disagree"
            )

    def tree_flatten(self):
        aux = (self.shape, self.indices_sorted, self.unique_indices, self._index_ndim)
        return (self.data, self.indices, self.indptr), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, indices_sorted, unique_indices, index_ndim = aux
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape, obj.indices_sorted, obj.unique_indices = shape, indices_sorted, unique_indices
        # (as BCOO's: the shape follows the indices' rank, so vmap maps a BCSR with batch
        # dimensions to its elements and one returned from vmap gains a batch dimension; leaves
        # that are not arrays keep the shape)
        ndim = getattr(obj.indices, "ndim", None)
        obj._index_ndim = ndim if isinstance(ndim, int) else index_ndim
        if isinstance(ndim, int) and ndim > index_ndim:
            obj.shape = tuple(obj.indices.shape[: ndim - index_ndim]) + tuple(shape)
        elif isinstance(ndim, int) and 1 <= ndim < index_ndim:
            obj.shape = tuple(shape[index_ndim - ndim :])
        return obj

    dtype = property(lambda self: self.data.dtype)
    nse = property(lambda self: self.indices.shape[-1])
    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: len(self.shape) - self.n_batch - 2)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __repr__(self):
        return f"BCSR({np.dtype(self.dtype).name}{list(self.shape)}, nse={self.nse})"

    # -- conversions ----------------------------------------------------------------------------
    def to_bcoo(self) -> BCOO:
        """The BCOO of the same elements.

        >>> BCSR.fromdense(jnp.eye(2)).to_bcoo().indices.tolist()
        [[0, 0], [1, 1]]
        """
        slots = jnp.arange(self.nse, dtype=self.indptr.dtype)
        slots = slots.reshape((1,) * self.indptr.ndim + (-1,))  # (at the same rank: no rank promotion)
        rows = jnp.sum(self.indptr[..., 1:, None] <= slots, axis=-2).astype(self.indices.dtype)
        indices = jnp.stack([rows, self.indices], axis=-1)
        return BCOO(
            (self.data, indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """The BCSR of a BCOO with two sparse dimensions (its elements sorted by row).

        >>> BCSR.from_bcoo(BCOO.fromdense(jnp.eye(2))).indptr.tolist()
        [0, 1, 2]
        """
        if not isinstance(arr, BCOO) or arr.n_sparse != 2:
            raise ValueError(f"BCSR.from_bcoo: needs a BCOO with two sparse dimensions, got {arr!r}")
        arr = bcoo_sort_indices(arr)
        rows, cols = arr.indices[..., 0], arr.indices[..., 1]
        nrows = arr.shape[arr.n_batch]
        bounds = jnp.arange(nrows + 1, dtype=rows.dtype)
        bounds = bounds.reshape((1,) * (rows.ndim - 1) + (-1, 1))  # (at the same rank: no rank promotion)
        indptr = jnp.sum(rows[..., None, :] < bounds, axis=-1).astype(arr.indices.dtype)
        return cls(
            (arr.data, cols, indptr), shape=arr.shape, indices_sorted=True, unique_indices=arr.unique_indices
        )

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        """An all-zero BCSR (``sparse.empty(..., sparse_format="bcsr")``, as JAX's)."""
        empty = BCOO._empty(
            shape, dtype=dtype, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch, nse=nse
        )
        return cls.from_bcoo(empty)

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0) -> BCSR:
        """``bcsr_fromdense``."""
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0) -> BCSR:
        """The BCSR of a 2-d ``scipy.sparse`` array or matrix (SciPy's CSR form of it: its
        elements, order and explicit zeros), as JAX's.

        >>> import scipy.sparse as sps
        >>> BCSR.from_scipy_sparse(sps.coo_matrix(([5.0], ([1], [0])), shape=(2, 2))).indptr.tolist()
        [0, 0, 1]
        """
        if n_dense != 0 or n_batch != 0:  # (JAX's errors)
            raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
        if mat.ndim != 2:
            raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
        mat = mat.tocsr()
        index_dtype = index_dtype or jnp.int32
        data = jnp.asarray(mat.data)
        indices = jnp.asarray(mat.indices).astype(index_dtype)
        indptr = jnp.asarray(mat.indptr).astype(index_dtype)
        return cls((data, indices, indptr), shape=mat.shape)

    def todense(self):
        """``bcsr_todense``."""
        return bcsr_todense(self)

    def sum_duplicates(self, nse=None, remove_zeros=True) -> BCSR:
        """``bcsr_sum_duplicates``."""
        del remove_zeros
        return bcsr_sum_duplicates(self, nse=nse)

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("Tranpose is not implemented.")  # JAX's BCSR has none either

    def __matmul__(self, other):
        other = jnp.asarray(other)
        contract = ([self.ndim - 1], [0 if other.ndim <= 2 else other.ndim - 2])
        return bcsr_dot_general(self, other, dimension_numbers=(contract, ([], [])))

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        return bcsr_dot_general(other, self, dimension_numbers=(([other.ndim - 1], [0]), ([], [])))


def _check(mat, fn):
    if not isinstance(mat, BCSR):
        raise TypeError(f"{fn}: expected a BCSR array, got {type(mat).__name__}")


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=jnp.int32) -> BCSR:
    """The BCSR form of dense ``mat`` (two sparse dimensions after ``n_batch`` batch ones).

    >>> bcsr_fromdense(jnp.array([[0.0, 2.0], [0.0, 0.0]])).data.tolist()
    [2.0]
    """
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError(
            f"bcsr_fromdense: a BCSR has 2 sparse dimensions; shape {tuple(mat.shape)} with "
            f"n_batch={n_batch}, "
            f"n_dense={n_dense} leaves {mat.ndim - n_batch - n_dense}"
        )
    return BCSR.from_bcoo(
        bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    )


def bcsr_todense(mat):
    """The dense array of a BCSR.

    >>> bcsr_todense(BCSR.fromdense(jnp.eye(2))).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if isinstance(mat, BCSR):
        return bcoo_todense(mat.to_bcoo())
    raise TypeError(f"bcsr_todense: expected a BCSR array, got {type(mat).__name__}")


def bcsr_extract(indices, indptr, mat):
    """The values of dense ``mat`` at the pattern ``(indices, indptr)``: a BCSR's ``data``, as JAX's.

    >>> x = BCSR.fromdense(jnp.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> bcsr_extract(x.indices, x.indptr, jnp.array([[5.0, 6.0], [7.0, 8.0]])).tolist()
    [6.0, 7.0]
    """
    mat = jnp.asarray(mat)
    pattern = BCSR((jnp.zeros(jnp.shape(indices), mat.dtype), indices, indptr), shape=mat.shape)
    return bcoo_extract(pattern.to_bcoo(), mat, assume_unique=True).data


def bcsr_sum_duplicates(mat, nse=None) -> BCSR:
    """Repeated (row, column) entries summed into one.

    >>> x = BCSR((jnp.array([1.0, 2.0]), jnp.array([0, 0]), jnp.array([0, 2])), shape=(1, 2))
    >>> bcsr_sum_duplicates(x).data.tolist()
    [3.0]
    """
    _check(mat, "bcsr_sum_duplicates")
    return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """``lax.dot_general`` with BCSR operands (the other dense): the result is dense, as JAX's.

    >>> x = BCSR.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> bcsr_dot_general(x, jnp.ones((2, 3)), dimension_numbers=(([1], [0]), ([], []))).tolist()
    [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    """
    del precision, out_sharding
    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    rhs = rhs.to_bcoo() if isinstance(rhs, BCSR) else rhs
    out = bcoo_dot_general(
        lhs, rhs, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type
    )
    return out.todense() if isinstance(out, BCOO) else out


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None) -> BCSR:
    """``lax.broadcast_in_dim`` of a BCSR (new leading dimensions become batch dimensions).

    >>> x = BCSR.fromdense(jnp.eye(2))
    >>> bcsr_broadcast_in_dim(x, shape=(3, 2, 2), broadcast_dimensions=(1, 2)).todense().shape
    (3, 2, 2)
    """
    _check(mat, "bcsr_broadcast_in_dim")
    out = bcoo_broadcast_in_dim(
        mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=sharding
    )
    return BCSR.from_bcoo(out)


def bcsr_concatenate(operands, *, dimension) -> BCSR:
    """``lax.concatenate`` of BCSR arrays of one layout.

    >>> x = BCSR.fromdense(jnp.eye(2))
    >>> bcsr_concatenate([x, x], dimension=0).todense().shape
    (4, 2)
    """
    for op in operands:
        _check(op, "bcsr_concatenate")
    return BCSR.from_bcoo(bcoo_concatenate([op.to_bcoo() for op in operands], dimension=dimension))
