"""``dot_general`` with a BCOO operand: sparse x dense, dense x sparse and sparse x sparse, on
``(data, indices, shape)`` triples.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and the sparse kernels.

# NOTE: [sparse dot_general]
# Batch dimensions are first turned into sparse ones (``unbatch``), so only ``n_batch == 0`` is
# handled. For sparse x dense, each stored slot ``k`` with index ``idx[k]`` and dense block
# ``data[k]`` meets the rhs *gathered* at ``idx[k]`` along the rhs dimensions paired with the
# lhs's sparse contracting/batch dimensions; one ``lax.dot_general`` (slot as a batch dimension)
# contracts the dense dimensions; a scatter-add at the remaining sparse coordinates (lhs sparse
# batch and free dimensions) places the products. The result is laid out as lax.dot_general's
# (batch, lhs free, rhs free) by one final transpose. Work is O(nse * rhs block), never
# O(dense size of the lhs). Padding slots gather 0 and scatter nowhere (NOTE: [BCOO layout]).
"""

from __future__ import annotations

import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad.experimental.sparse._kernels import unbatch


def _check_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(
            f"bcoo_dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}"
        ) from None
    lc, rc, lb, rb = (tuple(int(d) for d in x) for x in (lc, rc, lb, rb))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"bcoo_dot_general: unpaired dimension_numbers {dimension_numbers!r}")
    for name, dims, shape in (("lhs", lc + lb, lhs_shape), ("rhs", rc + rb, rhs_shape)):
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            raise TypeError(
                f"bcoo_dot_general: {name} dimensions {dims} repeat or fall outside a "
                f"{len(shape)}-d operand of shape {tuple(shape)}"
            )
    for a, b in zip(lc + lb, rc + rb):
        if lhs_shape[a] != rhs_shape[b]:
            raise TypeError(
                f"bcoo_dot_general: lhs dimension {a} (size {lhs_shape[a]}) is paired with rhs "
                f"dimension {b} (size {rhs_shape[b]}); shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}"
            )
    return lc, rc, lb, rb


def _out_shape(lhs_shape, rhs_shape, lc, rc, lb, rb):
    lf = [d for d in range(len(lhs_shape)) if d not in lc + lb]
    rf = [d for d in range(len(rhs_shape)) if d not in rc + rb]
    return tuple(lhs_shape[d] for d in lb) + tuple(lhs_shape[d] for d in lf) + tuple(rhs_shape[d] for d in rf)


def sparse_dense(data, indices, shape, n_batch, rhs, dimension_numbers, preferred_element_type=None):
    """``lax.dot_general(todense(lhs), rhs, dimension_numbers)`` without densifying the lhs."""
    shape = tuple(shape)
    lc, rc, lb, rb = _check_dimension_numbers(shape, rhs.shape, dimension_numbers)
    data, indices = unbatch(data, indices, shape, n_batch)
    ns = indices.shape[-1]
    dtype = preferred_element_type or jnp.result_type(data.dtype, rhs.dtype)
    data, rhs = data.astype(dtype), rhs.astype(dtype)

    # rhs dimensions paired with a sparse lhs dimension are indexed by the slot's coordinates.
    pairs = list(zip(lc, rc)) + list(zip(lb, rb))
    sp_pairs = [(l, r) for l, r in pairs if l < ns]
    gathered_r = [r for _, r in sp_pairs]
    rest_r = [d for d in range(rhs.ndim) if d not in gathered_r]
    rhs_t = jnp.transpose(rhs, gathered_r + rest_r)
    # Dense lhs dimensions: data axis 1 + (d - ns); rhs axes by position in rest_r.
    d_axis = {d: 1 + d - ns for d in range(ns, len(shape))}
    if sp_pairs:  # each slot meets its own slice of the rhs: the slot is a dot batch dimension
        cols = tuple(indices[:, l] for l, _ in sp_pairs)
        rhs_g = rhs_t.at[cols].get(mode="fill", fill_value=0)  # (nse, *rest_r)
        r_axis = {r: 1 + i for i, r in enumerate(rest_r)}
        slot = ([0], [0])
    else:  # every slot meets the whole rhs: the slot is a free dimension (no copy per slot)
        rhs_g = rhs_t
        r_axis = {r: i for i, r in enumerate(rest_r)}
        slot = ([], [])
    dense_c = [(d_axis[l], r_axis[r]) for l, r in zip(lc, rc) if l >= ns]
    dense_b = [(d_axis[l], r_axis[r]) for l, r in zip(lb, rb) if l >= ns]
    prod = lax.dot_general(
        data,
        rhs_g,
        (
            ([a for a, _ in dense_c], [b for _, b in dense_c]),
            ([*slot[0], *(a for a, _ in dense_b)], [*slot[1], *(b for _, b in dense_b)]),
        ),
    )
    if not sp_pairs and dense_b:  # (dense batch, nse, ...) -> (nse, dense batch, ...)
        prod = jnp.moveaxis(prod, len(dense_b), 0)
    # prod: (nse, dense batch (lb order), lhs dense free, rhs free) -- lax.dot_general's layout.
    dense_b_dims = [l for l in lb if l >= ns]
    dense_f = [d for d in range(ns, len(shape)) if d not in lc + lb]
    rf = [d for d in range(rhs.ndim) if d not in rc + rb]
    sparse_out = [l for l in lb if l < ns] + [d for d in range(ns) if d not in lc + lb]
    if sparse_out:
        out_shape = tuple(shape[d] for d in sparse_out) + tuple(prod.shape[1:])
        cols = tuple(indices[:, d] for d in sparse_out)
        out = jnp.zeros(out_shape, prod.dtype).at[cols].add(prod, mode="drop")
    else:
        out = prod.sum(0)
    # Axes of ``out``: sparse_out, dense batch, dense free, rhs free; put them in dot_general order.
    labels = (
        [("l", d) for d in sparse_out] + [("l", d) for d in dense_b_dims + dense_f] + [("r", d) for d in rf]
    )
    lf = [d for d in range(len(shape)) if d not in lc + lb]
    want = [("l", d) for d in lb] + [("l", d) for d in lf] + [("r", d) for d in rf]
    perm = [labels.index(w) for w in want]
    return jnp.transpose(out, perm) if perm != list(range(len(perm))) else out


def dense_sparse(lhs, data, indices, shape, n_batch, dimension_numbers, preferred_element_type=None):
    """``lax.dot_general(lhs, todense(rhs), dimension_numbers)``: the sparse x dense product with
    the operands swapped, then its free dimensions put back in order."""
    shape = tuple(shape)
    lc, rc, lb, rb = _check_dimension_numbers(lhs.shape, shape, dimension_numbers)
    swapped = sparse_dense(data, indices, shape, n_batch, lhs, ((rc, lc), (rb, lb)), preferred_element_type)
    nb = len(lb)
    n_rf = len(shape) - len(rc) - len(rb)
    n_lf = lhs.ndim - len(lc) - len(lb)
    perm = list(range(nb)) + list(range(nb + n_rf, nb + n_rf + n_lf)) + list(range(nb, nb + n_rf))
    return jnp.transpose(swapped, perm)


def sparse_sparse(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """``(data, indices, shape)`` of the product of two BCOO triples without dense dimensions: every
    pair of slots whose contracting and batch coordinates agree contributes the product of its values
    at (batch, lhs free, rhs free). The result has ``nse = lhs.nse * rhs.nse`` slots (duplicates
    and zeros are kept, as in jax; ``sum_duplicates`` compacts it)."""
    (ld, li, ls, lnb), (rd, ri, rs, rnb) = lhs, rhs
    ls, rs = tuple(ls), tuple(rs)
    lc, rc, lb, rb = _check_dimension_numbers(ls, rs, dimension_numbers)
    if ld.ndim - lnb != 1 or rd.ndim - rnb != 1:
        raise ValueError("bcoo_dot_general: a product of two sparse arrays needs n_dense == 0 on both sides")
    ld, li = unbatch(ld, li, ls, lnb)
    rd, ri = unbatch(rd, ri, rs, rnb)
    dtype = preferred_element_type or jnp.result_type(ld.dtype, rd.dtype)
    match = jnp.ones((li.shape[0], ri.shape[0]), bool)
    for a, b in zip(lc + lb, rc + rb):
        match = match & (li[:, a][:, None] == ri[:, b][None, :])
    lvalid = jnp.all(li < jnp.asarray(ls, li.dtype)[None, :], axis=-1) if ls else jnp.ones(li.shape[0], bool)
    rvalid = jnp.all(ri < jnp.asarray(rs, ri.dtype)[None, :], axis=-1) if rs else jnp.ones(ri.shape[0], bool)
    match = match & lvalid[:, None] & rvalid[None, :]
    values = jnp.where(match, ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :], 0)
    lf = [d for d in range(len(ls)) if d not in lc + lb]
    rf = [d for d in range(len(rs)) if d not in rc + rb]
    out_shape = _out_shape(ls, rs, lc, rc, lb, rb)
    n1, n2 = li.shape[0], ri.shape[0]
    itype = jnp.result_type(li.dtype, ri.dtype)
    cols = [jnp.broadcast_to(li[:, d][:, None], (n1, n2)) for d in [*lb, *lf]]
    cols += [jnp.broadcast_to(ri[:, d][None, :], (n1, n2)) for d in rf]
    if cols:
        out_idx = jnp.stack([c.astype(itype) for c in cols], axis=-1).reshape((n1 * n2, len(cols)))
        # a non-matching pair points outside the array (padding)
        out_idx = jnp.where(match.reshape(-1)[:, None], out_idx, jnp.asarray(out_shape, itype))
    else:
        out_idx = jnp.zeros((n1 * n2, 0), itype)
    return values.reshape(-1), out_idx, out_shape
