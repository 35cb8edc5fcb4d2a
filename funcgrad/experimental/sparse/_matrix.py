"""Two-dimensional sparse matrices ``COO``, ``CSR`` and ``CSC`` and their functions (``coo_*``,
``csr_*``), as ``jax.experimental.sparse``.

Layer: surface. Imports funcgrad.numpy, funcgrad.tree_util and funcgrad.kernel (tracer check).

Each format is a registered pytree (its arrays are leaves, ``shape`` static). Products are a
gather of the dense operand at the column indices and a scatter-add at the row indices (a CSR's
rows are recovered from ``indptr`` by ``searchsorted``), so they are O(nse) and differentiable in
``data`` and in the dense operand. ``fromdense`` pads as jax does: COO padding is index ``(0, 0)``
with value 0; CSR padding lies after ``indptr[-1]`` and is never read.

>>> import funcgrad.numpy as jnp
>>> m = CSR.fromdense(jnp.array([[1.0, 0.0], [2.0, 3.0]]))
>>> m.indptr.tolist(), (m @ jnp.ones(2)).tolist()
([0, 1, 3], [1.0, 5.0])
"""

from __future__ import annotations

import operator

import numpy as np

import funcgrad.numpy as jnp
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.kernel.core import Tracer
from funcgrad.tree_util import register_pytree_node_class

__all__ = [
    "COO",
    "CSC",
    "CSR",
    "coo_fromdense",
    "coo_matmat",
    "coo_matvec",
    "coo_todense",
    "csr_fromdense",
    "csr_matmat",
    "csr_matvec",
    "csr_todense",
]


def _shape2(shape, cls):
    shape = tuple(operator.index(s) for s in shape)
    if len(shape) != 2:
        raise ValueError(f"{cls}: shape must be 2-d, got {shape}")
    return shape


def _nonzero(mat, nse, fn):
    mat = jnp.asarray(mat)
    if mat.ndim != 2:
        raise ValueError(f"{fn}: expected a 2-d array, got shape {tuple(mat.shape)}")
    if nse is None:
        if isinstance(mat, Tracer):
            raise TypeError(
                f"{fn}: nse cannot be computed from a traced array under jit/vmap/grad; pass nse="
            )
        nse = int(np.count_nonzero(np.asarray(mat)))
    nse = operator.index(nse)
    row, col = jnp.nonzero(mat, size=nse)
    true = jnp.arange(nse) < (mat != 0).sum()
    data = jnp.where(true, mat.at[row, col].get(mode="fill", fill_value=0), 0)
    return mat, data, row, col, true


def _spmv(data, row, col, n_out, v):
    """``sum_k data[k] * v[col[k]]`` scattered to ``row[k]`` (out-of-range rows dropped)."""
    v = jnp.asarray(v)
    prod = data.reshape(data.shape + (1,) * (v.ndim - 1)) * v.at[col].get(mode="fill", fill_value=0)
    return jnp.zeros((n_out, *v.shape[1:]), prod.dtype).at[row].add(prod, mode="drop")


def _check_operand(v, ndim, n, fn):
    v = jnp.asarray(v)
    if v.ndim != ndim or v.shape[0] != n:
        want = f"({n},)" if ndim == 1 else f"({n}, k)"
        raise ValueError(f"{fn}: the dense operand must have shape {want}, got {tuple(v.shape)}")
    return v


class _Matrix(JAXSparse):
    """What COO, CSR and CSC share: dtype/nse/ndim, ``@`` with a dense 1-d or 2-d operand."""

    ndim = 2
    dtype = property(lambda self: self.data.dtype)
    nse = property(lambda self: self.data.shape[0])
    size = property(lambda self: self.shape[0] * self.shape[1])

    def __repr__(self):
        return f"{type(self).__name__}({np.dtype(self.dtype).name}{list(self.shape)}, nse={self.nse})"

    def __matmul__(self, other):
        if isinstance(other, _Matrix):
            raise TypeError(
                f"{type(self).__name__} @ {type(other).__name__}: sparse x sparse is not supported"
            )
        other = jnp.asarray(other)
        if other.ndim not in (1, 2):
            raise ValueError(
                f"{type(self).__name__} @ x: x must be 1-d or 2-d, got shape {tuple(other.shape)}"
            )
        return self._matmul(other, transpose=False)

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        if other.ndim == 1:
            return self._matmul(other, transpose=True)
        if other.ndim == 2:
            return self._matmul(other.T, transpose=True).T
        raise ValueError(f"x @ {type(self).__name__}: x must be 1-d or 2-d, got shape {tuple(other.shape)}")

    def __neg__(self):
        return self._with_data(-self.data)

    def __mul__(self, other):
        if jnp.ndim(other) != 0 or isinstance(other, _Matrix):
            raise TypeError(f"{type(self).__name__} * x: x must be a scalar")
        return self._with_data(self.data * other)

    __rmul__ = __mul__


@register_pytree_node_class
class COO(_Matrix):
    """A 2-d coordinate-format matrix: ``COO((data, row, col), shape=shape)``.

    >>> import funcgrad.numpy as jnp
    >>> COO((jnp.array([1.0, 2.0]), jnp.array([0, 1]), jnp.array([1, 0])), shape=(2, 2)).todense().tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """

    def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
        data, row, col = (jnp.asarray(a) for a in args)
        self.data, self.row, self.col = data, row, col
        self.shape = _shape2(shape, "COO")
        self._rows_sorted, self._cols_sorted = bool(rows_sorted), bool(cols_sorted)
        if not (data.ndim == row.ndim == col.ndim == 1 and data.shape == row.shape == col.shape):
            raise ValueError(
                f"COO: data, row and col must be 1-d of one length, got {tuple(data.shape)}, "
                f"{tuple(row.shape)}, {tuple(col.shape)}"
            )

    def tree_flatten(self):
        return (self.data, self.row, self.col), (self.shape, self._rows_sorted, self._cols_sorted)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.row, obj.col = children
        obj.shape, obj._rows_sorted, obj._cols_sorted = aux
        return obj

    def _with_data(self, data):
        return COO((data, self.row, self.col), shape=self.shape)

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        """``coo_fromdense``."""
        return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

    def todense(self):
        """``coo_todense``."""
        return coo_todense(self)

    @property
    def T(self):
        return COO((self.data, self.col, self.row), shape=self.shape[::-1])

    def transpose(self, axes=None):
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError(f"COO.transpose: axes must be None or (1, 0), got {axes}")
        return self.T

    def _matmul(self, other, transpose):
        return (coo_matvec if other.ndim == 1 else coo_matmat)(self, other, transpose=transpose)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = _shape2(shape, "COO")
        idx = jnp.zeros(0, index_dtype)
        return cls(
            (jnp.zeros(0, dtype or jnp.float64), idx, idx), shape=shape, rows_sorted=True, cols_sorted=True
        )

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        diag = max(min(N, M - k) if k > 0 else min(N + k, M), 0)
        rows = np.arange(diag) - min(k, 0)
        data = jnp.ones(diag, dtype or jnp.float64)
        return cls(
            (data, jnp.asarray(rows, index_dtype), jnp.asarray(rows + k, index_dtype)),
            shape=(N, M),
            rows_sorted=True,
        )


class _Compressed(_Matrix):
    """What CSR and CSC share (their fields, checks and pytree form); neither is the other's
    subclass, as in JAX (``isinstance(csc, CSR)`` is False)."""

    def __init__(self, args, *, shape):
        data, indices, indptr = (jnp.asarray(a) for a in args)
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = _shape2(shape, self._cls)
        rows = self.shape[0] if self._cls == "CSR" else self.shape[1]
        if not (data.ndim == indices.ndim == indptr.ndim == 1 and data.shape == indices.shape):
            raise ValueError(
                f"{self._cls}: data, indices and indptr must be 1-d, data and indices of one length"
            )
        if indptr.shape[0] != rows + 1:
            raise ValueError(f"{self._cls}: indptr must have {rows + 1} entries for shape {self.shape}")

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), self.shape

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = aux
        return obj

    def _with_data(self, data):
        return type(self)((data, self.indices, self.indptr), shape=self.shape)

    def transpose(self, axes=None):
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError(f"{self._cls}.transpose: axes must be None or (1, 0), got {axes}")
        return self.T


@register_pytree_node_class
class CSR(_Compressed):
    """A 2-d compressed-sparse-row matrix: ``CSR((data, indices, indptr), shape=shape)``.

    >>> import funcgrad.numpy as jnp
    >>> CSR((jnp.array([1.0, 2.0]), jnp.array([1, 0]), jnp.array([0, 1, 2])), shape=(2, 2)).todense().tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """

    _cls = "CSR"

    def _rows(self):
        """The row of each slot (``len(indptr) - 1`` for padding past ``indptr[-1]``)."""
        slots = jnp.arange(self.data.shape[0], dtype=self.indptr.dtype)
        return jnp.searchsorted(self.indptr, slots, side="right") - 1

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        """``csr_fromdense``."""
        return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

    def todense(self):
        """``csr_todense``."""
        return csr_todense(self)

    @property
    def T(self):
        return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _matmul(self, other, transpose):
        return (csr_matvec if other.ndim == 1 else csr_matmat)(self, other, transpose=transpose)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = _shape2(shape, "CSR")
        data, indices = jnp.zeros(0, dtype or jnp.float64), jnp.zeros(0, index_dtype)
        return cls((data, indices, jnp.zeros(shape[0] + 1, index_dtype)), shape=shape)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        diag = max(min(N, M - k) if k > 0 else min(N + k, M), 0)
        rows = np.arange(diag) - min(k, 0)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=N))])
        data = jnp.ones(diag, dtype or jnp.float64)
        return cls((data, jnp.asarray(rows + k, index_dtype), jnp.asarray(indptr, index_dtype)), shape=(N, M))


@register_pytree_node_class
class CSC(_Compressed):
    """A 2-d compressed-sparse-column matrix: ``CSC((data, indices, indptr), shape=shape)``, the
    transpose of a CSR (``indices`` are rows, ``indptr`` runs over columns).

    >>> import funcgrad.numpy as jnp
    >>> CSC.fromdense(jnp.array([[1.0, 0.0], [2.0, 3.0]])).indptr.tolist()
    [0, 2, 3]
    """

    _cls = "CSC"

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        return csr_fromdense(jnp.asarray(mat).T, nse=nse, index_dtype=index_dtype).T

    def todense(self):
        return self.T.todense().T

    @property
    def T(self):
        return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _matmul(self, other, transpose):
        return (csr_matvec if other.ndim == 1 else csr_matmat)(self.T, other, transpose=not transpose)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        return CSR._empty(tuple(shape)[::-1], dtype=dtype, index_dtype=index_dtype).T

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T


def _check(x, cls, fn):
    if type(x) is not cls:
        raise TypeError(f"{fn}: expected a {cls.__name__}, got {type(x).__name__}")


def coo_fromdense(mat, *, nse=None, index_dtype=np.int32):
    """The COO form of a 2-d dense ``mat`` (``nse`` defaults to its count of nonzeros).

    >>> import funcgrad.numpy as jnp
    >>> coo_fromdense(jnp.array([[0.0, 5.0]])).col.tolist()
    [1]
    """
    mat, data, row, col, _ = _nonzero(mat, nse, "coo_fromdense")
    return COO((data, row.astype(index_dtype), col.astype(index_dtype)), shape=mat.shape, rows_sorted=True)


def coo_todense(mat):
    """The dense form of a COO matrix (duplicates add up).

    >>> import funcgrad.numpy as jnp
    >>> coo_todense(COO((jnp.array([1.0, 2.0]), jnp.array([0, 0]), jnp.array([1, 1])), shape=(1, 2))).tolist()
    [[0.0, 3.0]]
    """
    _check(mat, COO, "coo_todense")
    return jnp.zeros(mat.shape, mat.dtype).at[mat.row, mat.col].add(mat.data, mode="drop")


def coo_matvec(mat, v, transpose=False):
    """``mat @ v`` (``mat.T @ v`` with ``transpose=True``) for a COO ``mat`` and a 1-d ``v``.

    >>> import funcgrad.numpy as jnp
    >>> m = COO((jnp.array([2.0]), jnp.array([1]), jnp.array([0])), shape=(2, 2))
    >>> coo_matvec(m, jnp.array([1.0, 1.0])).tolist()
    [0.0, 2.0]
    """
    _check(mat, COO, "coo_matvec")
    row, col, (n_out, n_in) = mat.row, mat.col, mat.shape
    if transpose:
        row, col, n_out, n_in = col, row, n_in, n_out
    return _spmv(mat.data, row, col, n_out, _check_operand(v, 1, n_in, "coo_matvec"))


def coo_matmat(mat, B, transpose=False):
    """``mat @ B`` (``mat.T @ B`` with ``transpose=True``) for a COO ``mat`` and a 2-d ``B``.

    >>> import funcgrad.numpy as jnp
    >>> m = COO((jnp.array([2.0]), jnp.array([1]), jnp.array([0])), shape=(2, 2))
    >>> coo_matmat(m, jnp.eye(2)).tolist()
    [[0.0, 0.0], [2.0, 0.0]]
    """
    _check(mat, COO, "coo_matmat")
    row, col, (n_out, n_in) = mat.row, mat.col, mat.shape
    if transpose:
        row, col, n_out, n_in = col, row, n_in, n_out
    return _spmv(mat.data, row, col, n_out, _check_operand(B, 2, n_in, "coo_matmat"))


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32):
    """The CSR form of a 2-d dense ``mat`` (``nse`` defaults to its count of nonzeros).

    >>> import funcgrad.numpy as jnp
    >>> csr_fromdense(jnp.array([[0.0, 5.0], [6.0, 0.0]])).indices.tolist()
    [1, 0]
    """
    mat, data, row, col, true = _nonzero(mat, nse, "csr_fromdense")
    m = mat.shape[0]
    row = jnp.where(true, row, m)
    counts = jnp.zeros(m + 1, index_dtype).at[row].add(jnp.ones_like(row, dtype=index_dtype), mode="drop")
    indptr = jnp.concatenate([jnp.zeros(1, index_dtype), jnp.cumsum(counts[:m]).astype(index_dtype)])
    return CSR((data, col.astype(index_dtype), indptr), shape=mat.shape)


def csr_todense(mat):
    """The dense form of a CSR matrix.

    >>> import funcgrad.numpy as jnp
    >>> csr_todense(CSR((jnp.array([4.0]), jnp.array([0]), jnp.array([0, 0, 1])), shape=(2, 1))).tolist()
    [[0.0], [4.0]]
    """
    _check(mat, CSR, "csr_todense")
    return jnp.zeros(mat.shape, mat.dtype).at[mat._rows(), mat.indices].add(mat.data, mode="drop")


def _csr_product(mat, v, transpose, ndim, fn):
    _check(mat, CSR, fn)
    row, col, (n_out, n_in) = mat._rows(), mat.indices, mat.shape
    if transpose:  # padding rows (== n_rows) become columns: make them out of range as well
        row, col, n_out, n_in = jnp.where(row < n_out, col, n_in), row, n_in, n_out
    return _spmv(mat.data, row, col, n_out, _check_operand(v, ndim, n_in, fn))


def csr_matvec(mat, v, transpose=False):
    """``mat @ v`` (``mat.T @ v`` with ``transpose=True``) for a CSR ``mat`` and a 1-d ``v``.

    >>> import funcgrad.numpy as jnp
    >>> m = csr_fromdense(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> csr_matvec(m, jnp.array([1.0, 1.0]), transpose=True).tolist()
    [1.0, 5.0]
    """
    return _csr_product(mat, v, transpose, 1, "csr_matvec")


def csr_matmat(mat, B, transpose=False):
    """``mat @ B`` (``mat.T @ B`` with ``transpose=True``) for a CSR ``mat`` and a 2-d ``B``.

    >>> import funcgrad.numpy as jnp
    >>> m = csr_fromdense(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> csr_matmat(m, jnp.eye(2)).tolist()
    [[1.0, 2.0], [0.0, 3.0]]
    """
    return _csr_product(mat, B, transpose, 2, "csr_matmat")
