"""Array-level kernels of the batched-COO format: ``(data, indices, shape)`` triples in, arrays out.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and funcgrad.api (``vmap``); knows nothing of
the ``BCOO`` class (funcgrad/experimental/sparse/_bcoo.py wraps these).

# NOTE: [BCOO layout]
# A BCOO array of ``shape = batch + sparse + dense`` keeps ``data`` of shape
# ``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)`` (jax's layout).
# Batch dimensions of ``data`` and ``indices`` may be 1 where ``shape`` is larger (broadcast).
# Unused slots ("padding") hold out-of-bounds indices (the sparse shape itself); every gather here
# reads them as 0 (``mode='fill'``) and every scatter drops them (``mode='drop'``), so padding never
# contributes. Each kernel is written for ``n_batch == 0`` and lifted to batch dimensions by nested
# ``vmap`` (``_over_batch``): batch dimensions are independent sparse arrays sharing ``nse``.
#
# Everything is a composition of funcgrad.numpy / funcgrad.lax (gather, scatter-add, dot_general,
# sort, unique): no new primitive, so jit, vmap and grad see through every kernel; gradients flow
# to ``data`` (indices are integers).
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as jnp
from funcgrad.api import vmap


def split_shape(shape, n_batch, n_sparse):
    """``(batch, sparse, dense)`` parts of ``shape``."""
    return shape[:n_batch], shape[n_batch : n_batch + n_sparse], shape[n_batch + n_sparse :]


def broadcast_batch(data, indices, shape, n_batch):
    """``data`` and ``indices`` with their batch dimensions broadcast to ``shape[:n_batch]``."""
    batch = tuple(shape[:n_batch])
    if tuple(data.shape[:n_batch]) != batch:
        data = jnp.broadcast_to(data, batch + tuple(data.shape[n_batch:]))
    if tuple(indices.shape[:n_batch]) != batch:
        indices = jnp.broadcast_to(indices, batch + tuple(indices.shape[n_batch:]))
    return data, indices


def over_batch(f, n_batch):
    """``f`` of unbatched arrays mapped over ``n_batch`` leading dimensions of every argument."""
    for _ in range(n_batch):
        f = vmap(f)
    return f


def _columns(indices):
    return tuple(indices[:, i] for i in range(indices.shape[-1]))


# ----------------------------------------------------------------------------------------------
# dense <-> sparse


def todense(data, indices, shape, n_batch):
    """The dense array of a BCOO triple."""
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    inner = tuple(shape[n_batch:])

    def one(d, i):
        if i.shape[-1] == 0:  # no sparse dimension: the slots are summed (duplicates add up)
            return d.sum(0)
        return jnp.zeros(inner, d.dtype).at[_columns(i)].add(d, mode="drop")

    return over_batch(one, n_batch)(data, indices)


def count_nonzero(mat, n_batch, n_dense):
    """The largest number of nonzero sparse positions of any batch element (a Python int: ``mat``
    must be concrete)."""
    mask = np.asarray(mat) != 0
    if n_dense:
        mask = mask.any(axis=tuple(range(mask.ndim - n_dense, mask.ndim)))
    n_sparse = mask.ndim - n_batch
    if n_sparse == 0:
        return 1
    counts = mask.reshape(mask.shape[:n_batch] + (-1,)).sum(-1)
    return int(counts.max()) if counts.size else 0


def fromdense(mat, nse, n_batch, n_dense, index_dtype):
    """``(data, indices)`` of ``mat`` with ``nse`` slots per batch element, nonzeros in row-major
    order, padding after them."""
    n_sparse = mat.ndim - n_batch - n_dense

    def one(m):
        if n_sparse == 0:  # one dense block: slot 0 holds it, the rest are zeros
            data = jnp.concatenate([m[None], jnp.zeros((nse - 1, *m.shape), m.dtype)])[:nse]
            return data, jnp.zeros((nse, 0), index_dtype)
        mask = m != 0
        if n_dense:
            mask = mask.any(axis=tuple(range(n_sparse, m.ndim)))
        # a tuple: one index array per dimension (nonzero of a traced mask gives a list, which
        # ``.at[...]`` would read as one array index)
        cols = tuple(jnp.nonzero(mask, size=nse, fill_value=tuple(m.shape[:n_sparse])))
        indices = (
            jnp.stack(cols, axis=1).astype(index_dtype) if nse else jnp.zeros((0, n_sparse), index_dtype)
        )
        data = (
            m.at[cols].get(mode="fill", fill_value=0) if nse else jnp.zeros((0, *m.shape[n_sparse:]), m.dtype)
        )
        return data, indices

    return over_batch(one, n_batch)(mat)


def extract(indices, mat, n_batch, assume_unique):
    """The entries of dense ``mat`` at ``indices`` (``data`` of the pattern); with
    ``assume_unique=False`` a repeated index gets the value once (at its first slot), so that the
    result's dense form is ``mat`` restricted to the pattern."""
    shape = tuple(mat.shape)
    _, indices = broadcast_batch(jnp.zeros(indices.shape[:n_batch], mat.dtype), indices, shape, n_batch)

    def one(i, m):
        nse = i.shape[0]
        if i.shape[-1] == 0:
            return jnp.where((jnp.arange(nse) == 0).reshape((nse,) + (1,) * m.ndim), m[None], 0)
        data = m.at[_columns(i)].get(mode="fill", fill_value=0)
        if not assume_unique and nse > 1:
            _, first, inverse = jnp.unique(i, axis=0, size=nse, return_index=True, return_inverse=True)
            keep = first[inverse.reshape(-1)] == jnp.arange(nse)
            data = jnp.where(keep.reshape((nse,) + (1,) * (data.ndim - 1)), data, 0)
        return data

    return over_batch(one, n_batch)(indices, mat)


# ----------------------------------------------------------------------------------------------
# layout


def in_bounds(indices, sparse_shape):
    """``[..., nse]`` mask of the slots whose index lies inside ``sparse_shape`` (not padding)."""
    if not sparse_shape:
        return jnp.ones(indices.shape[:-1], bool)
    # (the bounds at the indices' rank: no implicit rank promotion, which a user's
    # jax_numpy_rank_promotion='raise' refuses -- the library's internals must not depend on it)
    bounds = jnp.asarray(sparse_shape, indices.dtype).reshape((1,) * (indices.ndim - 1) + (-1,))
    return jnp.all(indices < bounds, axis=-1)


def sum_duplicates(data, indices, shape, n_batch, nse):
    """Sorted unique indices (padding last) and the summed data, ``nse`` slots (``None``: as many as
    the input has)."""
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    n_sparse = indices.shape[-1]
    sparse_shape = tuple(shape[n_batch : n_batch + n_sparse])
    nse_in = indices.shape[-2]
    nse = nse_in if nse is None else nse

    def one(d, i):
        if n_sparse == 0:
            out = jnp.zeros((nse, *d.shape[1:]), d.dtype).at[0].add(d.sum(0)) if nse else d[:0]
            return out, jnp.zeros((nse, 0), i.dtype)
        fill = jnp.asarray(sparse_shape, i.dtype)
        valid = in_bounds(i, sparse_shape)
        i = jnp.where(valid[:, None], i, fill)
        uniq, inverse = jnp.unique(i, axis=0, size=nse_in, fill_value=fill, return_inverse=True)
        inverse = jnp.where(valid, inverse.reshape(-1), nse)  # padding is dropped
        if nse <= nse_in:
            uniq = uniq[:nse]
        else:
            uniq = jnp.concatenate([uniq, jnp.broadcast_to(fill, (nse - nse_in, n_sparse))])
        out = jnp.zeros((nse, *d.shape[1:]), d.dtype).at[inverse].add(d, mode="drop")
        return out, uniq

    return over_batch(one, n_batch)(data, indices)


def unique_count(indices, shape, n_batch):
    """The largest number of distinct in-bounds indices of any batch element (concrete input)."""
    ind = np.asarray(indices)
    n_sparse = ind.shape[-1]
    if n_sparse == 0:
        return 1
    sparse_shape = np.asarray(shape[n_batch : n_batch + n_sparse])
    flat = ind.reshape((-1,) + ind.shape[-2:])
    best = 0
    for rows in flat:
        rows = rows[np.all(rows < sparse_shape, axis=-1)]
        best = max(best, len(np.unique(rows, axis=0)) if len(rows) else 0)
    return best


def sort_indices(data, indices, shape, n_batch):
    """Slots reordered so that the indices are in lexicographic (row-major) order."""
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    if indices.shape[-1] == 0:
        return data, indices

    def one(d, i):
        perm = jnp.lexsort(tuple(i[:, k] for k in reversed(range(i.shape[-1]))))
        return d[perm], i[perm]

    return over_batch(one, n_batch)(data, indices)


def transpose(data, indices, shape, n_batch, permutation):
    """The triple of ``transpose(x, permutation)``; batch, sparse and dense dimensions must each be
    permuted among themselves."""
    n_sparse = indices.shape[-1]
    ndim = len(shape)
    batch_perm = permutation[:n_batch]
    sparse_perm = permutation[n_batch : n_batch + n_sparse]
    dense_perm = permutation[n_batch + n_sparse :]
    if (
        sorted(batch_perm) != list(range(n_batch))
        or sorted(sparse_perm) != list(range(n_batch, n_batch + n_sparse))
        or sorted(dense_perm) != list(range(n_batch + n_sparse, ndim))
    ):
        raise ValueError(
            f"bcoo_transpose: permutation {tuple(permutation)} mixes batch, sparse and dense "
            f"dimensions (n_batch={n_batch}, n_sparse={n_sparse}, n_dense={ndim - n_batch - n_sparse}); "
            "each kind must be permuted among itself (convert with bcoo_update_layout or todense)"
        )
    data = jnp.transpose(data, [*batch_perm, n_batch, *(d - n_sparse + 1 for d in dense_perm)])
    indices = jnp.transpose(indices, [*batch_perm, n_batch, n_batch + 1])
    if n_sparse:
        indices = indices[..., np.asarray([d - n_batch for d in sparse_perm], dtype=int)]
    return data, indices, tuple(shape[p] for p in permutation)


def reduce_sum(data, indices, shape, n_batch, axes):
    """The triple of ``x.sum(axes)``: dense axes sum ``data``, sparse axes drop their index column
    (duplicates add up when densified), batch axes fold into ``nse``."""
    n_sparse = indices.shape[-1]
    axes = sorted(set(axes))
    dense_axes = tuple(a - n_sparse + 1 for a in axes if a >= n_batch + n_sparse)
    if dense_axes:
        data = data.sum(dense_axes)
    if n_sparse:  # padding would gain an in-bounds index once a column is dropped
        mask = in_bounds(indices, tuple(shape[n_batch : n_batch + n_sparse]))
        data = jnp.where(mask.reshape(mask.shape + (1,) * (data.ndim - mask.ndim)), data, 0)
    keep = [k for k in range(n_sparse) if n_batch + k not in axes]
    indices = indices[..., np.asarray(keep, dtype=int)] if keep else indices[..., :0]
    batch_axes = [a for a in axes if a < n_batch]
    if batch_axes:
        data, indices = broadcast_batch(data, indices, shape, n_batch)
        kept = [a for a in range(n_batch) if a not in batch_axes]
        order = kept + batch_axes
        nse = indices.shape[n_batch] * math.prod(shape[a] for a in batch_axes)
        data = jnp.transpose(data, order + list(range(n_batch, data.ndim)))
        data = data.reshape(tuple(shape[a] for a in kept) + (nse,) + tuple(data.shape[n_batch + 1 :]))
        indices = jnp.transpose(indices, order + [n_batch, n_batch + 1])
        indices = indices.reshape(tuple(shape[a] for a in kept) + (nse, indices.shape[-1]))
    out_shape = tuple(s for a, s in enumerate(shape) if a not in axes)
    return data, indices, out_shape


def unbatch(data, indices, shape, n_batch):
    """The same array with its batch dimensions turned into leading sparse dimensions
    (``n_batch == 0``): batch coordinates join the index columns, slots are flattened."""
    if n_batch == 0:
        return data, indices
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    batch = tuple(shape[:n_batch])
    nse = indices.shape[n_batch]
    grids = jnp.meshgrid(*(jnp.arange(s, dtype=indices.dtype) for s in batch), indexing="ij")
    coords = [jnp.broadcast_to(g[..., None], batch + (nse,)) for g in grids]
    full = jnp.concatenate([jnp.stack(coords, axis=-1), indices], axis=-1)
    total = math.prod(batch) * nse
    return data.reshape((total,) + tuple(data.shape[n_batch + 1 :])), full.reshape((total, full.shape[-1]))


def reshape_indices(indices, shape, new_shape):
    """Indices ``(nse, len(shape))`` of an ``n_batch == 0`` array of ``shape`` as indices into
    ``new_shape`` (row-major order kept; out-of-bounds padding stays out of bounds)."""
    nse = indices.shape[0]
    if not new_shape:
        return jnp.zeros((nse, 0), indices.dtype)
    valid = in_bounds(indices, tuple(shape))
    if shape:
        flat = jnp.ravel_multi_index(  # clip: the indices are traced (mode='raise' needs them concrete)
            tuple(jnp.where(valid, indices[:, k], 0) for k in range(len(shape))), shape, mode="clip"
        )
    else:
        flat = jnp.zeros(nse, indices.dtype)
    cols = jnp.unravel_index(flat, new_shape)
    out = jnp.stack([c.astype(indices.dtype) for c in cols], axis=1)
    return jnp.where(valid[:, None], out, jnp.asarray(new_shape, indices.dtype))


def multiply_dense(data, indices, shape, n_batch, v):
    """``data`` of ``x * v`` for a dense ``v`` broadcastable to ``x.shape`` (same pattern)."""
    v = jnp.asarray(v)
    if v.ndim == 0:
        return data * v
    try:
        full = np.broadcast_shapes(tuple(shape), tuple(v.shape))
    except ValueError:
        full = None
    if full != tuple(shape):
        raise ValueError(
            f"bcoo_multiply_dense: the dense operand's shape {tuple(v.shape)} does not broadcast "
            f"to the sparse shape {tuple(shape)}"
        )
    v = jnp.broadcast_to(v, tuple(shape))
    data, indices = broadcast_batch(data, indices, shape, n_batch)

    def one(d, i, w):
        if i.shape[-1] == 0:
            return d * w[None]
        return d * w.at[_columns(i)].get(mode="fill", fill_value=0)

    return over_batch(one, n_batch)(data, indices, v)


def update_layout(data, indices, shape, n_batch, n_dense, new_batch, new_dense):
    """``(data, indices)`` of the same array with ``new_batch`` batch and ``new_dense`` dense
    dimensions. Dense or batch dimensions turned sparse multiply the slots (one per position);
    sparse dimensions turned batch or dense store explicit zeros."""
    shape = tuple(shape)
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    if new_dense < n_dense:  # the first dense dimensions become the last sparse ones
        k = n_dense - new_dense

        def to_sparse(d, i):
            block = d.shape[1 : 1 + k]
            grids = jnp.meshgrid(*(jnp.arange(s, dtype=i.dtype) for s in block), indexing="ij")
            coords = jnp.stack([g.reshape(-1) for g in grids], axis=-1)  # (P, k)
            p, nse = coords.shape[0], i.shape[0]
            new_i = jnp.concatenate(
                [
                    jnp.broadcast_to(i[:, None, :], (nse, p, i.shape[1])),
                    jnp.broadcast_to(coords[None], (nse, p, k)),
                ],
                axis=-1,
            )
            return d.reshape((nse * p, *d.shape[1 + k :])), new_i.reshape((nse * p, i.shape[1] + k))

        data, indices = over_batch(to_sparse, n_batch)(data, indices)
        n_dense = new_dense
    if new_batch < n_batch:  # the last batch dimensions become the first sparse ones
        inner_shape = shape[new_batch:]
        k = n_batch - new_batch
        data, indices = over_batch(lambda d, i: unbatch(d, i, inner_shape, k), new_batch)(data, indices)
        n_batch = new_batch
    if new_dense > n_dense:  # the last sparse dimensions become the first dense ones
        k = new_dense - n_dense
        n_sparse = indices.shape[-1]
        block = shape[n_batch + n_sparse - k : n_batch + n_sparse]

        def to_dense(d, i):
            nse = i.shape[0]
            cols = (jnp.arange(nse), *(i[:, n_sparse - k + j] for j in range(k)))
            new_d = jnp.zeros((nse, *block, *d.shape[1:]), d.dtype).at[cols].add(d, mode="drop")
            return new_d, i[:, : n_sparse - k]

        data, indices = over_batch(to_dense, n_batch)(data, indices)
        n_dense = new_dense
    if new_batch > n_batch:  # the first sparse dimensions become the last batch ones
        k = new_batch - n_batch
        block = shape[n_batch:new_batch]

        def to_batch(d, i):
            nse = i.shape[0]
            cols = (*(i[:, j] for j in range(k)), jnp.arange(nse))
            new_d = jnp.zeros((*block, nse, *d.shape[1:]), d.dtype).at[cols].add(d, mode="drop")
            return new_d, jnp.broadcast_to(i[:, k:], (*block, nse, i.shape[1] - k))

        data, indices = over_batch(to_batch, n_batch)(data, indices)
    return data, indices
