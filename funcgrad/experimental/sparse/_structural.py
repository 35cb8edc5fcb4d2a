"""Structural BCOO operations (broadcast, concatenate, slice, dynamic slice, gather, rev, squeeze,
convolution, sparse*sparse products, sampled dot products) and ``CuSparseEfficiencyWarning``, as
``jax.experimental.sparse``.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and the BCOO functions.

# NOTE: [structural BCOO operations through the dense form]
# Each operation here computes its result's values from the dense form of its operands and
# stores it back as a BCOO with JAX's output layout (n_batch, n_dense as jax.experimental.sparse
# derives them) and a static ``nse`` that bounds the result's nonzeros per batch element (the
# operand's nse where the pattern can only shrink or move, the sum where patterns are joined):
# values, shapes and layouts equal JAX's, ``jit``/``vmap``/``grad`` go through (everything is
# funcgrad.numpy), and only the memory of the dense intermediate differs from JAX's index
# arithmetic. ``broadcast_in_dim`` works on the index arrays directly, as JAX's does.
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad.experimental.sparse._bcoo import (
    BCOO,
    SparseEfficiencyWarning,
    bcoo_extract,
    bcoo_fromdense,
    bcoo_todense,
)

__all__ = [
    "CuSparseEfficiencyWarning",
    "bcoo_broadcast_in_dim",
    "bcoo_concatenate",
    "bcoo_conv_general_dilated",
    "bcoo_dot_general_sampled",
    "bcoo_dynamic_slice",
    "bcoo_gather",
    "bcoo_multiply_sparse",
    "bcoo_rev",
    "bcoo_slice",
    "bcoo_squeeze",
]


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """JAX's warning that an operation falls back from cuSPARSE to a slower path on a GPU. funcgrad
    lowers sparse operations to XLA gathers/scatters on every backend, so it is never raised here;
    the class exists so code that filters it runs unchanged."""


def _check(mat, fn):
    if not isinstance(mat, BCOO):
        raise TypeError(f"{fn}: expected a BCOO array, got {type(mat).__name__}")


def _sparse_size(shape, n_batch, n_dense) -> int:
    return math.prod(shape[n_batch : len(shape) - n_dense])


def _restore(dense, *, nse, n_batch, n_dense, index_dtype):
    """``dense`` as a BCOO of this layout with ``nse`` slots (bounded by the sparse size)."""
    nse = max(0, min(int(nse), _sparse_size(dense.shape, n_batch, n_dense)))
    return bcoo_fromdense(dense, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    """``lax.broadcast_in_dim`` of a BCOO: new dimensions before the sparse ones become batch
    dimensions, after the dense ones dense (JAX's rule); the stored elements are the operand's.

    >>> x = BCOO.fromdense(jnp.array([0.0, 2.0]))
    >>> y = bcoo_broadcast_in_dim(x, shape=(3, 2), broadcast_dimensions=(1,))
    >>> y.n_batch, y.todense().tolist()
    (1, [[0.0, 2.0], [0.0, 2.0], [0.0, 2.0]])
    """
    del sharding
    _check(mat, "bcoo_broadcast_in_dim")
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    if len(dims) != mat.ndim:
        raise ValueError(
            f"bcoo_broadcast_in_dim: broadcast_dimensions {dims} must name one output dimension per "
            f"operand dimension ({mat.ndim})"
        )
    nb, nd, ns = mat.n_batch, mat.n_dense, mat.n_sparse
    batch_dims, sparse_dims, dense_dims = dims[:nb], dims[nb : nb + ns], dims[nb + ns :]
    if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
        raise ValueError("bcoo_broadcast_in_dim: cannot mix sparse and dense dimensions")
    new_nb = min(dims[nb:], default=len(shape))
    new_nd = nd and len(shape) - min(dims[len(dims) - nd :])
    new_ns = len(shape) - new_nb - new_nd
    if _sparse_size(mat.shape, nb, nd) != math.prod(shape[new_nb : new_nb + new_ns]):
        raise NotImplementedError(
            "bcoo_broadcast_in_dim: adding a sparse dimension that is not of size 1 (as in JAX); "
            "update_layout the operand so the new dimension is a batch or dense one"
        )
    data = lax.broadcast_in_dim(
        mat.data,
        (*shape[:new_nb], mat.nse, *shape[new_nb + new_ns :]),
        (*batch_dims, new_nb, *(b + 1 - new_ns for b in dense_dims)),
    )
    indices = lax.broadcast_in_dim(
        mat.indices, (*shape[:new_nb], mat.nse, ns), (*batch_dims, new_nb, new_nb + 1)
    )
    if new_ns != ns:  # size-1 sparse dimensions added: index 0 there
        columns = [jnp.zeros(indices.shape[:-1], indices.dtype)] * new_ns
        for k, d in enumerate(sparse_dims):
            columns[d - new_nb] = indices[..., k]
        indices = jnp.stack(columns, axis=-1) if columns else indices[..., :0]
    return BCOO((data, indices), shape=shape)


def bcoo_concatenate(operands, *, dimension):
    """``lax.concatenate`` of BCOO arrays of one layout along ``dimension`` (nse: the largest of
    the operands' along a batch dimension, their sum otherwise).

    >>> a, b = BCOO.fromdense(jnp.array([1.0, 0.0])), BCOO.fromdense(jnp.array([0.0, 3.0]))
    >>> bcoo_concatenate([a, b], dimension=0).todense().tolist()
    [1.0, 0.0, 0.0, 3.0]
    """
    operands = list(operands)
    if not operands:
        raise ValueError("bcoo_concatenate: no operands")
    for op in operands:
        _check(op, "bcoo_concatenate")
    layouts = {(op.n_batch, op.n_dense) for op in operands}
    if len(layouts) != 1:
        raise ValueError(f"bcoo_concatenate: operands must have one layout (n_batch, n_dense), got {layouts}")
    (nb, nd) = layouts.pop()
    dense = lax.concatenate([bcoo_todense(op) for op in operands], dimension)
    nse = max(op.nse for op in operands) if dimension < nb else sum(op.nse for op in operands)
    return _restore(dense, nse=nse, n_batch=nb, n_dense=nd, index_dtype=operands[0].indices.dtype)


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
    """``lax.slice`` of a BCOO (same layout; nse at most the operand's).

    >>> x = BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 0.0]))
    >>> bcoo_slice(x, start_indices=(1,), limit_indices=(3,)).todense().tolist()
    [1.0, 2.0]
    """
    _check(mat, "bcoo_slice")
    dense = lax.slice(bcoo_todense(mat), tuple(start_indices), tuple(limit_indices), strides)
    return _restore(
        dense, nse=mat.nse, n_batch=mat.n_batch, n_dense=mat.n_dense, index_dtype=mat.indices.dtype
    )


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
    """``lax.dynamic_slice`` of a BCOO (traced starts allowed; same layout).

    >>> x = BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 0.0]))
    >>> bcoo_dynamic_slice(x, [jnp.asarray(2)], [2]).todense().tolist()
    [2.0, 0.0]
    """
    _check(mat, "bcoo_dynamic_slice")
    dense = lax.dynamic_slice(bcoo_todense(mat), list(start_indices), tuple(slice_sizes))
    return _restore(
        dense, nse=mat.nse, n_batch=mat.n_batch, n_dense=mat.n_dense, index_dtype=mat.indices.dtype
    )


def bcoo_rev(operand, dimensions):
    """``lax.rev`` of a BCOO (same layout and nse).

    >>> bcoo_rev(BCOO.fromdense(jnp.array([1.0, 0.0, 2.0])), (0,)).todense().tolist()
    [2.0, 0.0, 1.0]
    """
    _check(operand, "bcoo_rev")
    dense = lax.rev(bcoo_todense(operand), tuple(dimensions))
    return _restore(
        dense,
        nse=operand.nse,
        n_batch=operand.n_batch,
        n_dense=operand.n_dense,
        index_dtype=operand.indices.dtype,
    )


def bcoo_squeeze(arr, *, dimensions):
    """``lax.squeeze`` of a BCOO: the size-1 ``dimensions`` removed from whichever part (batch,
    sparse, dense) they are in.

    >>> x = BCOO.fromdense(jnp.array([[0.0, 4.0]]))
    >>> bcoo_squeeze(x, dimensions=(0,)).todense().tolist()
    [0.0, 4.0]
    """
    _check(arr, "bcoo_squeeze")
    dims = tuple(d % arr.ndim for d in dimensions)
    for d in dims:
        if arr.shape[d] != 1:
            raise ValueError(f"bcoo_squeeze: dimension {d} has size {arr.shape[d]}, not 1")
    nb = arr.n_batch - sum(d < arr.n_batch for d in dims)
    nd = arr.n_dense - sum(d >= arr.ndim - arr.n_dense for d in dims)
    dense = lax.squeeze(bcoo_todense(arr), dims)
    return _restore(dense, nse=arr.nse, n_batch=nb, n_dense=nd, index_dtype=arr.indices.dtype)


def bcoo_gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    unique_indices=False,
    indices_are_sorted=False,
    mode=None,
    fill_value=None,
):
    """``lax.gather`` from a BCOO operand (the result is a BCOO without batch or dense dimensions;
    nse bounded by the operand's nse times the number of slices).

    >>> from funcgrad.lax import GatherDimensionNumbers
    >>> x = BCOO.fromdense(jnp.array([0.0, 5.0, 6.0]))
    >>> dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> bcoo_gather(x, jnp.array([[2], [1]]), dn, (1,)).todense().tolist()
    [6.0, 5.0]
    """
    _check(operand, "bcoo_gather")
    dense = lax.gather(
        bcoo_todense(operand),
        start_indices,
        dimension_numbers,
        tuple(slice_sizes),
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
        mode=mode,
        fill_value=fill_value,
    )
    n_slices = math.prod(np.shape(start_indices)[:-1])
    return _restore(
        dense, nse=operand.nse * max(n_slices, 1), n_batch=0, n_dense=0, index_dtype=operand.indices.dtype
    )


def bcoo_multiply_sparse(lhs, rhs):
    """The elementwise product of two BCOO arrays of one shape (nonzero only where both are: nse
    at most the smaller of the two).

    >>> a = BCOO.fromdense(jnp.array([1.0, 2.0, 0.0]))
    >>> b = BCOO.fromdense(jnp.array([3.0, 0.0, 4.0]))
    >>> bcoo_multiply_sparse(a, b).todense().tolist()
    [3.0, 0.0, 0.0]
    """
    _check(lhs, "bcoo_multiply_sparse")
    _check(rhs, "bcoo_multiply_sparse")
    if lhs.shape != rhs.shape:
        raise ValueError(f"bcoo_multiply_sparse: shapes {lhs.shape} and {rhs.shape} differ (no broadcasting)")
    dense = bcoo_todense(lhs) * bcoo_todense(rhs)
    nb = min(lhs.n_batch, rhs.n_batch)
    nd = min(lhs.n_dense, rhs.n_dense)
    return _restore(dense, nse=min(lhs.nse, rhs.nse), n_batch=nb, n_dense=nd, index_dtype=lhs.indices.dtype)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """``lax.dot_general(A, B)`` evaluated only at ``indices`` (a BCOO indices array of the
    result's shape): the BCOO data of the product at that pattern, as JAX's.

    >>> A, B = jnp.arange(4.0).reshape(2, 2), jnp.ones((2, 2))
    >>> dn = (([1], [0]), ([], []))
    >>> bcoo_dot_general_sampled(A, B, jnp.array([[0, 1], [1, 0]]), dimension_numbers=dn).tolist()
    [1.0, 5.0]
    """
    product = lax.dot_general(jnp.asarray(A), jnp.asarray(B), dimension_numbers)
    return bcoo_extract(jnp.asarray(indices), product).data


def bcoo_conv_general_dilated(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """``lax.conv_general_dilated`` with BCOO (or dense) operands, with JAX's limits: a 1-d
    convolution of leading dimensions ``(1, 1)``, unit strides, dilations and group counts.
    The result is a BCOO of the output's size.

    >>> x = BCOO.fromdense(jnp.array([[[0.0, 1.0, 0.0, 2.0]]]))
    >>> k = jnp.array([[[1.0, 10.0]]])
    >>> bcoo_conv_general_dilated(x, k, window_strides=(1,), padding="VALID").todense().tolist()
    [[[10.0, 1.0, 20.0]]]
    """
    del out_sharding
    nd = np.ndim(lhs) if not isinstance(lhs, BCOO) else lhs.ndim
    ones = (1,) * (nd - 2)
    if tuple(window_strides) != ones:
        raise NotImplementedError("bcoo convolution with non-unit window_strides.")
    if tuple(lhs_dilation or ones) != ones:
        raise NotImplementedError("bcoo convolution with lhs_dilation.")
    if tuple(rhs_dilation or ones) != ones:
        raise NotImplementedError("bcoo convolution with rhs_dilation.")
    if batch_group_count != 1 or feature_group_count != 1:
        raise NotImplementedError("bcoo convolution with non-unit group counts.")
    if tuple(lhs.shape[:2]) != (1, 1) or tuple(rhs.shape[:2]) != (1, 1):
        raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1)")
    if nd != 3:
        raise NotImplementedError("bcoo convolution in more than one spatial dimension")
    index_dtype = (
        lhs.indices.dtype
        if isinstance(lhs, BCOO)
        else rhs.indices.dtype
        if isinstance(rhs, BCOO)
        else np.int32
    )
    dense = lax.conv_general_dilated(
        bcoo_todense(lhs) if isinstance(lhs, BCOO) else jnp.asarray(lhs),
        bcoo_todense(rhs) if isinstance(rhs, BCOO) else jnp.asarray(rhs),
        window_strides=tuple(window_strides),
        padding=padding,
        dimension_numbers=dimension_numbers,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    return _restore(dense, nse=dense.size, n_batch=0, n_dense=0, index_dtype=index_dtype)
