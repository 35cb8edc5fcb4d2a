"""``BCOO``, the batched-COO sparse array, and its functions ``bcoo_*`` (as
``jax.experimental.sparse``).

Layer: surface. Imports funcgrad.numpy, funcgrad.tree_util, funcgrad.kernel (tracer check) and the
sparse kernels (``_kernels``, ``_dot``), which hold the arithmetic (NOTE: [BCOO layout]).

A ``BCOO`` is a registered pytree: ``data`` and ``indices`` are its leaves, ``shape`` and the two
layout flags are static, so ``jit``, ``vmap`` and ``grad`` pass through it. ``vmap`` over a BCOO
with batch dimensions maps over its first batch dimension, and ``vmap`` of a function returning a
BCOO gives a BCOO with one more batch dimension (``tree_unflatten`` follows the rank of the
indices), which is how jax batches sparse arrays.

>>> import funcgrad.numpy as jnp
>>> x = BCOO.fromdense(jnp.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
>>> x
BCOO(float64[2, 3], nse=3)
>>> (x @ jnp.ones(3)).tolist()
[3.0, 3.0]
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

import funcgrad.numpy as jnp
from funcgrad.experimental.sparse import _dot, _kernels
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.kernel.core import Tracer
from funcgrad.tree_util import register_pytree_node_class

__all__ = [
    "BCOO",
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
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
]


def _concrete(x) -> bool:
    return not isinstance(x, Tracer)


def _index(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a Python int, got {value!r}") from None


@register_pytree_node_class
class BCOO(JAXSparse):
    """A batched-COO sparse array: ``BCOO((data, indices), shape=shape)``.

    ``data`` has shape ``batch + (nse,) + dense`` and ``indices`` has shape
    ``batch + (nse, n_sparse)``; ``shape`` is ``batch + sparse + dense``.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO((jnp.array([5.0, 6.0]), jnp.array([[0, 1], [2, 0]])), shape=(3, 2))
    >>> x.todense().tolist()
    [[0.0, 5.0], [0.0, 0.0], [6.0, 0.0]]
    """

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        try:
            data, indices = args
        except (TypeError, ValueError):
            raise TypeError("BCOO: the first argument must be the pair (data, indices)") from None
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.shape = tuple(_index(s, "BCOO: shape entries") for s in shape)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        self._index_ndim = self.indices.ndim
        self._validate()

    def _validate(self):
        data, indices, shape = self.data, self.indices, self.shape
        if not jnp.issubdtype(indices.dtype, jnp.integer):
            raise TypeError(f"BCOO: indices must be integers, got dtype {indices.dtype}")
        if indices.ndim < 2:
            raise ValueError(f"BCOO: indices must have shape batch + (nse, n_sparse), got {indices.shape}")
        n_batch, n_sparse, nse = indices.ndim - 2, indices.shape[-1], indices.shape[-2]
        n_dense = len(shape) - n_batch - n_sparse
        problem = None
        if n_dense < 0:
            problem = f"indices of shape {indices.shape} need at least {n_batch + n_sparse} dimensions"
        elif data.ndim != n_batch + 1 + n_dense:
            problem = f"data must have {n_batch + 1 + n_dense} dimensions (batch + (nse,) + dense)"
        elif data.shape[n_batch] != nse:
            problem = f"data has {data.shape[n_batch]} slots but indices have nse={nse}"
        elif tuple(data.shape[n_batch + 1 :]) != tuple(shape[n_batch + n_sparse :]):
            problem = f"dense dimensions {data.shape[n_batch + 1 :]} differ from shape[{n_batch + n_sparse}:]"
        else:
            for k in range(n_batch):
                if data.shape[k] not in (1, shape[k]) or indices.shape[k] not in (1, shape[k]):
                    problem = f"batch dimension {k} of data/indices does not broadcast to {shape[k]}"
        if problem:
            raise ValueError(
                f"BCOO: inconsistent data {tuple(data.shape)}, indices {tuple(indices.shape)} and "
                f"shape {shape}: {problem}"
            )

    # -- pytree ---------------------------------------------------------------------------------
    def tree_flatten(self):
        aux = (self.shape, self.indices_sorted, self.unique_indices, self._index_ndim)
        return (self.data, self.indices), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, indices_sorted, unique_indices, index_ndim = aux
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape, obj.indices_sorted, obj.unique_indices = shape, indices_sorted, unique_indices
        # vmap moves leading dimensions of the leaves in and out of view: mapped over (in_axes=0)
        # a batch dimension disappears from the indices, returned (out_axes=0) one appears. The
        # shape follows the indices' rank, so a BCOO with n_batch >= 1 maps to its elements and
        # a BCOO returned from vmap gains a batch dimension. (Leaves that are not arrays --
        # placeholders of tree utilities -- keep the aux as is.)
        ndim = getattr(obj.indices, "ndim", None)
        obj._index_ndim = ndim if isinstance(ndim, int) else index_ndim
        if isinstance(ndim, int) and ndim > index_ndim:
            extra = ndim - index_ndim
            obj.shape = tuple(obj.indices.shape[:extra]) + tuple(shape)
        elif isinstance(ndim, int) and 2 <= ndim < index_ndim:
            obj.shape = tuple(shape[index_ndim - ndim :])
        return obj

    # -- properties -----------------------------------------------------------------------------
    dtype = property(lambda self: self.data.dtype)
    nse = property(lambda self: self.indices.shape[-2])
    n_batch = property(lambda self: self.indices.ndim - 2)
    n_sparse = property(lambda self: self.indices.shape[-1])
    n_dense = property(lambda self: len(self.shape) - self.indices.ndim + 2 - self.indices.shape[-1])
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))
    T = property(lambda self: self.transpose())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d BCOO")
        return self.shape[0]

    def __repr__(self):
        extra = "".join(f", {k}={getattr(self, k)}" for k in ("n_batch", "n_dense") if getattr(self, k))
        try:
            dtype = np.dtype(self.dtype).name
        except TypeError:
            dtype = str(self.dtype)
        return f"BCOO({dtype}{list(self.shape)}, nse={self.nse}{extra})"

    # -- conversions ----------------------------------------------------------------------------
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """``bcoo_fromdense``: the BCOO form of a dense array.

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.eye(3), nse=4).indices.tolist()
        [[0, 0], [1, 1], [2, 2], [3, 3]]
        """
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        """The BCOO form of a ``scipy.sparse`` array or matrix (its elements in SciPy's COO order,
        not marked sorted or unique, as JAX's).

        >>> import scipy.sparse as sps
        >>> BCOO.from_scipy_sparse(sps.eye(2, format="csr")).todense().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        data = jnp.asarray(mat.data)
        indices = jnp.column_stack((mat.row, mat.col)).astype(index_dtype or jnp.int32)
        return cls((data, indices), shape=mat.shape, indices_sorted=False, unique_indices=False)

    def todense(self):
        """The dense array (``bcoo_todense``).

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.array([0.0, 2.0])).todense().tolist()
        [0.0, 2.0]
        """
        return bcoo_todense(self)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(shape)
        n_sparse = len(shape) - n_batch - n_dense
        if n_sparse < 0 or n_batch < 0 or n_dense < 0:
            raise ValueError(f"BCOO: invalid n_batch={n_batch}, n_dense={n_dense} for shape {shape}")
        batch, sparse, dense = _kernels.split_shape(shape, n_batch, n_sparse)
        data = jnp.zeros((*batch, nse, *dense), dtype or jnp.float64)
        indices = jnp.broadcast_to(jnp.asarray(sparse, index_dtype), (*batch, nse, n_sparse))
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        diag = min(N, M - k) if k > 0 else min(N + k, M)
        if n_batch or n_dense or diag <= 0:
            dense = jnp.eye(N, M, k, dtype=dtype)
            nse = max(diag, 0) if not (n_batch or n_dense) else None
            return cls.fromdense(dense, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)
        rows = np.arange(diag) - min(k, 0)
        indices = jnp.asarray(np.stack([rows, rows + k], axis=1), index_dtype)
        data = jnp.ones(diag, dtype or jnp.float64)
        return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)

    # -- layout ---------------------------------------------------------------------------------
    def transpose(self, axes=None):
        """``bcoo_transpose``; ``axes=None`` reverses the axes. As in jax, batch, sparse and dense
        dimensions can each be permuted only among themselves.

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.array([[0.0, 1.0]])).T.todense().tolist()
        [[0.0], [1.0]]
        """
        if axes is None:
            axes = tuple(reversed(range(self.ndim)))
        return bcoo_transpose(self, permutation=axes)

    def sum(self, axis=None):
        """``x.sum(axis)`` as a BCOO (``bcoo_reduce_sum``); over every dimension, a dense scalar, as
        JAX's.

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.array([[1.0, 0.0], [2.0, 3.0]])).sum(0).todense().tolist()
        [3.0, 3.0]
        """
        if axis is None:
            axes = tuple(range(self.ndim))
        elif isinstance(axis, int | np.integer):
            axes = (int(axis),)
        else:
            axes = tuple(axis)
        out = bcoo_reduce_sum(self, axes=axes)
        return out.todense() if out.shape == () else out

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """One slot per distinct index, values summed (``bcoo_sum_duplicates``); ``remove_zeros`` is
        accepted for jax's signature, explicit zeros stay stored.

        >>> import funcgrad.numpy as jnp
        >>> x = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [1]])), shape=(3,))
        >>> x.sum_duplicates().data.tolist()
        [3.0]
        """
        return bcoo_sum_duplicates(self, nse=nse)

    def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
        """``bcoo_update_layout``: the same array with another number of batch/dense dimensions.

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.ones((2, 3)), n_dense=1).update_layout(n_dense=0).nse
        6
        """
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient)

    def sort_indices(self):
        """The slots in row-major index order (``bcoo_sort_indices``).

        >>> import funcgrad.numpy as jnp
        >>> x = BCOO((jnp.array([1.0, 2.0]), jnp.array([[2], [0]])), shape=(3,))
        >>> x.sort_indices().indices.ravel().tolist()
        [0, 2]
        """
        return bcoo_sort_indices(self)

    def astype(self, dtype):
        """The same pattern with ``data`` cast to ``dtype``."""
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape, **self._flags())

    def _flags(self):
        return {"indices_sorted": self.indices_sorted, "unique_indices": self.unique_indices}

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, BCOO):
            return add_bcoo(self, other)
        return self.todense() + other  # as jax: sparse + dense is dense

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, BCOO):
            return add_bcoo(self, -other)
        return self.todense() - other

    def __rsub__(self, other):
        return other - self.todense()

    def reshape(self, *new_sizes):
        """``bcoo_reshape``: the same elements in a new shape (``-1`` allowed).

        >>> import funcgrad.numpy as jnp
        >>> BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]])).reshape(4).todense().tolist()
        [1.0, 0.0, 0.0, 2.0]
        """
        if len(new_sizes) == 1 and not isinstance(new_sizes[0], int | np.integer):
            new_sizes = tuple(new_sizes[0])
        return bcoo_reshape(self, new_sizes=new_sizes)

    def __neg__(self):
        return BCOO((-self.data, self.indices), shape=self.shape, **self._flags())

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, BCOO):
            if other.shape == self.shape and other.indices is self.indices:
                return BCOO((self.data * other.data, self.indices), shape=self.shape, **self._flags())
            raise TypeError("BCOO * BCOO is supported only for operands sharing one indices array")
        return bcoo_multiply_dense(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, BCOO):  # (JAX's refusal and words)
            raise NotImplementedError(
                "Division by a sparse array is not implemented because it would result in dense "
                "output. If this is your intent, use sparse.todense() to convert your arguments to "
                "a dense array."
            )
        if jnp.ndim(other) != 0:  # (a dense divisor keeps the pattern: x times 1 / y, as JAX's)
            return bcoo_multiply_dense(self, 1.0 / jnp.asarray(other))
        return BCOO((self.data / other, self.indices), shape=self.shape, **self._flags())

    # (``__pow__``, JAX's power through sparsify, is installed by ``_transform``, which sits above)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)


# ----------------------------------------------------------------------------------------------
# functions


def _check_bcoo(x, fn):
    if not isinstance(x, BCOO):
        raise TypeError(f"{fn}: expected a BCOO array, got {type(x).__name__}")


def bcoo_todense(mat):
    """The dense array of a BCOO ``mat``; duplicate indices add up, padding is dropped.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [1]])), shape=(3,))
    >>> bcoo_todense(x).tolist()
    [0.0, 3.0, 0.0]
    """
    _check_bcoo(mat, "bcoo_todense")
    return _kernels.todense(mat.data, mat.indices, mat.shape, mat.n_batch)


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """The BCOO form of dense ``mat`` with ``n_batch`` leading batch and ``n_dense`` trailing dense
    dimensions. ``nse`` (slots per batch element) defaults to the largest count of nonzeros, which
    needs a concrete ``mat``: pass ``nse`` under ``jit``/``vmap``.

    >>> import funcgrad.numpy as jnp
    >>> x = bcoo_fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]), n_batch=1)
    >>> x.data.tolist(), x.indices.tolist()
    ([[1.0], [2.0]], [[[0]], [[1]]])
    """
    mat = jnp.asarray(mat)
    n_batch, n_dense = _index(n_batch, "bcoo_fromdense: n_batch"), _index(n_dense, "bcoo_fromdense: n_dense")
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > mat.ndim:
        raise ValueError(
            f"bcoo_fromdense: invalid n_batch={n_batch}, n_dense={n_dense} for shape {mat.shape}"
        )
    if nse is None:
        if not _concrete(mat):
            raise TypeError(
                "bcoo_fromdense: nse (the number of stored elements) cannot be computed from a traced "
                "array under jit/vmap/grad; pass nse= explicitly"
            )
        nse = _kernels.count_nonzero(mat, n_batch, n_dense)
    nse = _index(nse, "bcoo_fromdense: nse")
    data, indices = _kernels.fromdense(mat, nse, n_batch, n_dense, np.dtype(index_dtype))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr, arr, *, assume_unique=None):
    """A BCOO with the pattern of ``sparr`` and values taken from dense ``arr`` (``sparr`` may also be
    an ``indices`` array, as in older jax). With ``assume_unique=False`` (the default unless
    ``sparr.unique_indices``) a repeated index takes the value once.

    >>> import funcgrad.numpy as jnp
    >>> pattern = BCOO.fromdense(jnp.array([0.0, 1.0, 1.0]))
    >>> bcoo_extract(pattern, jnp.array([7.0, 8.0, 9.0])).data.tolist()
    [8.0, 9.0]
    """
    arr = jnp.asarray(arr)
    if isinstance(sparr, BCOO):
        indices, flags = sparr.indices, sparr._flags()
        if assume_unique is None:
            assume_unique = sparr.unique_indices
        if tuple(arr.shape) != sparr.shape:
            raise ValueError(f"bcoo_extract: arr has shape {tuple(arr.shape)}, the pattern {sparr.shape}")
    else:
        indices, flags = jnp.asarray(sparr), {}
        assume_unique = bool(assume_unique)
    n_batch = indices.ndim - 2
    data = _kernels.extract(indices, arr, n_batch, assume_unique)
    return BCOO((data, indices), shape=arr.shape, **flags)


def bcoo_transpose(mat, *, permutation):
    """``transpose(mat, permutation)`` as a BCOO; batch, sparse and dense dimensions are each
    permuted among themselves.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[1.0, 2.0]]))
    >>> bcoo_transpose(x, permutation=(1, 0)).shape
    (2, 1)
    """
    _check_bcoo(mat, "bcoo_transpose")
    permutation = [int(p) + (mat.ndim if int(p) < 0 else 0) for p in permutation]
    if sorted(permutation) != list(range(mat.ndim)):
        raise ValueError(f"bcoo_transpose: {tuple(permutation)} is not a permutation of {mat.ndim} axes")
    data, indices, shape = _kernels.transpose(mat.data, mat.indices, mat.shape, mat.n_batch, permutation)
    return BCOO((data, indices), shape=shape)


def bcoo_reduce_sum(mat, *, axes):
    """``mat.sum(axes)`` as a BCOO.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[1.0, 0.0], [2.0, 3.0]]))
    >>> bcoo_reduce_sum(x, axes=(1,)).todense().tolist()
    [1.0, 5.0]
    """
    _check_bcoo(mat, "bcoo_reduce_sum")
    norm = []
    for a in axes:
        a = _index(a, "bcoo_reduce_sum: axes")
        if not -mat.ndim <= a < mat.ndim:
            raise ValueError(f"bcoo_reduce_sum: axis {a} is out of range for a {mat.ndim}-d array")
        norm.append(a % mat.ndim)
    data, indices, shape = _kernels.reduce_sum(mat.data, mat.indices, mat.shape, mat.n_batch, norm)
    return BCOO((data, indices), shape=shape)


def bcoo_multiply_dense(sp_mat, v):
    """``sp_mat * v`` for a dense ``v`` (scalar or broadcastable to ``sp_mat.shape``); the result
    keeps the pattern of ``sp_mat``.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([1.0, 0.0, 2.0]))
    >>> bcoo_multiply_dense(x, jnp.array([3.0, 4.0, 5.0])).todense().tolist()
    [3.0, 0.0, 10.0]
    """
    _check_bcoo(sp_mat, "bcoo_multiply_dense")
    data = _kernels.multiply_dense(sp_mat.data, sp_mat.indices, sp_mat.shape, sp_mat.n_batch, v)
    return BCOO((data, sp_mat.indices), shape=sp_mat.shape, **sp_mat._flags())


def bcoo_sum_duplicates(mat, nse=None):
    """One slot per distinct index (values summed, indices sorted, padding last). ``nse`` defaults to
    the number of distinct indices when ``mat`` is concrete, to ``mat.nse`` under a trace.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO((jnp.array([1.0, 2.0, 4.0]), jnp.array([[2], [0], [2]])), shape=(3,))
    >>> y = bcoo_sum_duplicates(x)
    >>> y.data.tolist(), y.indices.ravel().tolist()
    ([2.0, 5.0], [0, 2])
    """
    _check_bcoo(mat, "bcoo_sum_duplicates")
    if nse is None and _concrete(mat.indices):
        nse = _kernels.unique_count(mat.indices, mat.shape, mat.n_batch)
    if nse is not None:
        nse = _index(nse, "bcoo_sum_duplicates: nse")
    data, indices = _kernels.sum_duplicates(mat.data, mat.indices, mat.shape, mat.n_batch, nse)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_sort_indices(mat):
    """The slots of ``mat`` reordered so its indices are in row-major order.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1, 0], [0, 1]])), shape=(2, 2))
    >>> bcoo_sort_indices(x).data.tolist()
    [2.0, 1.0]
    """
    _check_bcoo(mat, "bcoo_sort_indices")
    data, indices = _kernels.sort_indices(mat.data, mat.indices, mat.shape, mat.n_batch)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)


def add_bcoo(x, y):
    """``x + y`` for two BCOO arrays of one shape and layout: their slots side by side (duplicates
    are kept, as in jax; ``sum_duplicates`` merges them).

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([1.0, 0.0, 2.0]))
    >>> s = add_bcoo(x, x)
    >>> s.nse, s.todense().tolist()
    (4, [2.0, 0.0, 4.0])
    """
    _check_bcoo(x, "add_bcoo")
    _check_bcoo(y, "add_bcoo")
    if x.shape != y.shape or x.n_batch != y.n_batch or x.n_dense != y.n_dense:
        raise ValueError(
            f"add_bcoo: operands must share shape and layout, got {x!r} and {y!r} "
            "(convert one with BCOO.fromdense(y.todense(), n_batch=..., n_dense=...))"
        )
    xd, xi = _kernels.broadcast_batch(x.data, x.indices, x.shape, x.n_batch)
    yd, yi = _kernels.broadcast_batch(y.data, y.indices, y.shape, y.n_batch)
    dtype, itype = jnp.result_type(xd.dtype, yd.dtype), jnp.result_type(xi.dtype, yi.dtype)
    data = jnp.concatenate([xd.astype(dtype), yd.astype(dtype)], axis=x.n_batch)
    indices = jnp.concatenate([xi.astype(itype), yi.astype(itype)], axis=x.n_batch)
    return BCOO((data, indices), shape=x.shape)


def bcoo_reshape(mat, *, new_sizes, dimensions=None):
    """``mat.reshape(new_sizes)`` for a BCOO without dense dimensions: each index is flattened in
    row-major order and unflattened in the new shape (batch dimensions first become sparse ones,
    so the result has ``n_batch == 0``; padding stays padding).

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]]))
    >>> bcoo_reshape(x, new_sizes=(3, 2)).todense().tolist()
    [[0.0, 1.0], [0.0, 2.0], [0.0, 0.0]]
    """
    _check_bcoo(mat, "bcoo_reshape")
    if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
        raise ValueError("bcoo_reshape: dimensions (a transpose before reshaping) are not supported")
    if mat.n_dense:
        raise ValueError(f"bcoo_reshape: {mat!r} has dense dimensions; only n_dense == 0 is supported")
    sizes = [_index(s, "bcoo_reshape: new_sizes") for s in new_sizes]
    total = int(np.prod(mat.shape))
    if sizes.count(-1) == 1:
        rest = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = total // rest if rest else 0
    if int(np.prod(sizes)) != total or any(s < 0 for s in sizes):
        raise ValueError(f"bcoo_reshape: cannot reshape {mat.shape} into {tuple(new_sizes)}")
    data, indices = _kernels.unbatch(mat.data, mat.indices, mat.shape, mat.n_batch)
    new_indices = _kernels.reshape_indices(indices, mat.shape, tuple(sizes))
    return BCOO((data, new_indices), shape=tuple(sizes))


class SparseEfficiencyError(ValueError):
    """A layout change would store many explicit zeros (``bcoo_update_layout``)."""


class SparseEfficiencyWarning(UserWarning):
    """The warning form of ``SparseEfficiencyError`` (``on_inefficient='warn'``)."""


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """The same array with ``n_batch`` batch and ``n_dense`` dense dimensions. Making batch or
    dense dimensions sparse is cheap; making sparse dimensions (of size > 1) batch or dense stores
    explicit zeros, which raises ``SparseEfficiencyError`` unless ``on_inefficient`` is ``'warn'``
    or ``None``.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]), n_batch=1)
    >>> y = bcoo_update_layout(x, n_batch=0)
    >>> y, y.indices.tolist()
    (BCOO(float64[2, 2], nse=2), [[0, 0], [1, 1]])
    """
    _check_bcoo(mat, "bcoo_update_layout")
    n_batch = mat.n_batch if n_batch is None else _index(n_batch, "bcoo_update_layout: n_batch")
    n_dense = mat.n_dense if n_dense is None else _index(n_dense, "bcoo_update_layout: n_dense")
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(
            f"bcoo_update_layout: on_inefficient={on_inefficient!r}; expected 'error', 'warn' or None"
        )
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > mat.ndim:
        raise ValueError(
            f"bcoo_update_layout: invalid n_batch={n_batch}, n_dense={n_dense} for shape {mat.shape}"
        )
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    grown = []
    if n_dense > mat.n_dense and any(d > 1 for d in mat.shape[mat.ndim - n_dense : mat.ndim - mat.n_dense]):
        grown.append(f"increasing n_dense from {mat.n_dense} to {n_dense}")
    if n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch : n_batch]):
        grown.append(f"increasing n_batch from {mat.n_batch} to {n_batch}")
    if grown and on_inefficient is not None:
        msg = f"bcoo_update_layout: for shape {mat.shape}, {' and '.join(grown)} stores explicit zeros."
        if on_inefficient == "error":
            raise SparseEfficiencyError(msg + " Pass on_inefficient='warn' or None to allow it.")
        warnings.warn(
            msg + " Pass on_inefficient=None to silence this.", SparseEfficiencyWarning, stacklevel=2
        )
    data, indices = _kernels.update_layout(
        mat.data, mat.indices, mat.shape, mat.n_batch, mat.n_dense, n_batch, n_dense
    )
    return BCOO((data, indices), shape=mat.shape)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    """``lax.dot_general`` where one or both operands are BCOO: sparse x dense and dense x sparse
    give a dense array, sparse x sparse (no dense dimensions) a BCOO.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> bcoo_dot_general(x, jnp.array([[1.0], [1.0]]), dimension_numbers=(([1], [0]), ([], []))).tolist()
    [[1.0], [2.0]]
    """
    lsp, rsp = isinstance(lhs, BCOO), isinstance(rhs, BCOO)
    if lsp and rsp:
        data, indices, shape = _dot.sparse_sparse(
            (lhs.data, lhs.indices, lhs.shape, lhs.n_batch),
            (rhs.data, rhs.indices, rhs.shape, rhs.n_batch),
            dimension_numbers,
            preferred_element_type,
        )
        return BCOO((data, indices), shape=shape)
    if lsp:
        rhs = jnp.asarray(rhs)
        return _dot.sparse_dense(
            lhs.data, lhs.indices, lhs.shape, lhs.n_batch, rhs, dimension_numbers, preferred_element_type
        )
    if rsp:
        lhs = jnp.asarray(lhs)
        return _dot.dense_sparse(
            lhs, rhs.data, rhs.indices, rhs.shape, rhs.n_batch, dimension_numbers, preferred_element_type
        )
    raise TypeError("bcoo_dot_general: neither operand is a BCOO array (use lax.dot_general)")


def _matmul(a, b):
    """``a @ b`` with NumPy's matmul rules for 1-d and 2-d operands and for equal-rank stacks."""
    if not isinstance(a, BCOO):
        a = jnp.asarray(a)
    if not isinstance(b, BCOO):
        b = jnp.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: a scalar operand is not allowed (use *)")
    perm = None
    if a.ndim > 2 and b.ndim > 2:
        if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
            raise ValueError(
                f"matmul with a BCOO operand: stacked operands need the same leading dimensions, "
                f"got {tuple(a.shape)} and {tuple(b.shape)}"
            )
        batch = list(range(a.ndim - 2))
        dn = (([a.ndim - 1], [b.ndim - 2]), (batch, batch))
    else:
        dn = (([a.ndim - 1], [0 if b.ndim <= 2 else b.ndim - 2]), ([], []))
        if a.ndim == 2 and b.ndim > 2:  # (n, stack..., m) -> (stack..., n, m)
            perm = [*range(1, b.ndim - 1), 0, b.ndim - 1]
    if a.shape[dn[0][0][0]] != b.shape[dn[0][1][0]]:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not align")
    out = bcoo_dot_general(a, b, dimension_numbers=dn)
    if perm is not None:
        out = out.transpose(perm)
    return out
