"""The shape rules of ``gather`` and ``scatter`` as JAX checks them, in its order and words (JAX
0.10's ``_gather_shape_rule`` / ``_scatter_shape_rule``, which follow XLA's ShapeInference): a
malformed set of dimension numbers is a ``TypeError`` naming the first rule it breaks, as JAX's
(``offset_dims in gather op must be sorted``, ``Invalid start_index_map; domain is ...``). The
primitives' own checks in ``gather.py`` run after these, for what they do not cover.

Layer: primitives (reads avals only).

>>> import numpy as np
>>> from funcgrad.kernel.ir import ShapedArray
>>> op, idx = ShapedArray((10, 9), np.dtype("float32")), ShapedArray((5, 1), np.dtype("int32"))
>>> check_gather(op, idx, offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(1,),
...              operand_batching_dims=(), start_indices_batching_dims=(), slice_sizes=(1, 9))
>>> check_gather(op, idx, offset_dims=(1, 1), collapsed_slice_dims=(0,), start_index_map=(1,),
...              operand_batching_dims=(), start_indices_batching_dims=(), slice_sizes=(1, 9))
Traceback (most recent call last):
TypeError: offset_dims in gather op must not repeat; got: (1, 1).
"""

from __future__ import annotations

__all__ = ["check_gather", "check_scatter"]


def _is_sorted(dims, op_name, name):
    for i in range(1, len(dims)):
        if dims[i] < dims[i - 1]:
            raise TypeError(f"{name} in {op_name} op must be sorted; got {dims}")


def _dims_in_range(dims, rank, op_name, name):
    for dim in dims:
        if dim < 0 or dim >= rank:
            raise TypeError(f"Invalid {name} set in {op_name} op; valid range is [0, {rank}); got: {dim}.")


def _sorted_dims_in_range(dims, rank, op_name, name):
    if not dims:
        return
    invalid = dims[0] if dims[0] < 0 else dims[-1] if dims[-1] >= rank else None
    if invalid:  # (as JAX: a first dimension of 0 that is out of range goes unreported here)
        raise TypeError(f"Invalid {name} set in {op_name} op; valid range is [0, {rank}); got: {invalid}.")


def _no_duplicate_dims(dims, op_name, name):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op_name} op must not repeat; got: {dims}.")


def _disjoint_dims(dims1, dims2, op_name, name1, name2):
    if not set(dims1).isdisjoint(set(dims2)):
        raise TypeError(f"{name1} and {name2} in {op_name} op must be disjoint; got: {dims1} and {dims2}.")


def _index_vector_dim(indices, op_name: str) -> int:
    index_vector_dim = indices.ndim - 1
    if index_vector_dim < 0:
        raise TypeError(
            f"{op_name} index leaf dimension must be within [0, rank(indices) + 1). rank(indices) is "
            f"{indices.ndim} and {op_name.lower()} index leaf dimension is {index_vector_dim}."
        )
    return index_vector_dim


def _batching_dims(op, operand, indices, operand_batching_dims, indices_batching_dims, index_vector_dim, gap):
    """JAX's checks of gather's or scatter's (``op``) batching dimensions: the indices' ones distinct,
    in range and not the index vector dimension, as many as the operand's, of the same sizes.
    Returns the operand's batch shape. ``gap``: JAX's texts differ by one space."""
    name = f"{'start' if op == 'gather' else 'scatter'}_indices_batching_dims"
    _no_duplicate_dims(indices_batching_dims, op, name)
    _dims_in_range(indices_batching_dims, indices.ndim, op, name)
    title = op.capitalize()
    if index_vector_dim in indices_batching_dims:
        raise TypeError(
            f"{title} op cannot have the index vector dimension as a batching dimension; got "
            f"{indices_batching_dims}."
        )
    if len(operand_batching_dims) != len(indices_batching_dims):
        raise TypeError(
            f"{title} op requires equal numbers of operand_batching_dims and {name}, "
            f"got {operand_batching_dims} and{gap}{indices_batching_dims}."
        )
    operand_batch_shape = tuple(operand.shape[i] for i in operand_batching_dims)
    indices_batch_shape = tuple(indices.shape[i] for i in indices_batching_dims)
    if operand_batch_shape != indices_batch_shape:
        raise TypeError(
            f"{title} op requires operand batching dimensions and indices batching dimensions to have the "
            f"same shape, got {operand_batch_shape} and {indices_batch_shape}."
        )
    return operand_batch_shape


def check_gather(
    operand,
    indices,
    *,
    offset_dims,
    collapsed_slice_dims,
    start_index_map,
    operand_batching_dims,
    start_indices_batching_dims,
    slice_sizes,
) -> None:
    """JAX's checks of a gather's dimension numbers and slice sizes (avals in, nothing out)."""
    index_vector_dim = _index_vector_dim(indices, "Gather")
    _is_sorted(offset_dims, "gather", "offset_dims")
    _no_duplicate_dims(offset_dims, "gather", "offset_dims")
    output_shape_rank = len(offset_dims) + indices.ndim - 1
    for i, offset_dim in enumerate(offset_dims):
        if offset_dim < 0 or offset_dim >= output_shape_rank:
            raise TypeError(
                f"Offset dimension {i} in gather op is out of bounds; got {offset_dim}, but should have "
                f"been in [0, {output_shape_rank})"
            )
    if len(start_index_map) != indices.shape[index_vector_dim]:
        raise TypeError(
            f"Gather op has {len(start_index_map)} elements in start_index_map and the bound of "
            f"dimension {index_vector_dim=} of indices is {indices.shape[index_vector_dim]}. These two "
            "numbers must be equal."
        )
    for i, dim in enumerate(start_index_map):
        if dim < 0 or dim >= operand.ndim:
            raise TypeError(f"Invalid start_index_map; domain is [0, {operand.ndim}), got: {i}->{dim}.")
    _no_duplicate_dims(start_index_map, "gather", "start_index_map")
    _is_sorted(collapsed_slice_dims, "gather", "collapsed_slice_dims")
    _sorted_dims_in_range(collapsed_slice_dims, operand.ndim, "gather", "collapsed_slice_dims")
    _no_duplicate_dims(collapsed_slice_dims, "gather", "collapsed_slice_dims")
    _no_duplicate_dims(operand_batching_dims, "gather", "operand_batching_dims")
    _is_sorted(operand_batching_dims, "gather", "operand_batching_dims")
    _sorted_dims_in_range(operand_batching_dims, operand.ndim, "gather", "operand_batching_dims")
    _disjoint_dims(
        collapsed_slice_dims, operand_batching_dims, "gather", "collapsed_slice_dims", "operand_batching_dims"
    )
    _disjoint_dims(
        start_index_map, operand_batching_dims, "gather", "start_index_map", "operand_batching_dims"
    )
    _batching_dims(
        "gather", operand, indices, operand_batching_dims, start_indices_batching_dims, index_vector_dim, ""
    )  # (sic: JAX's gather text has no space before the indices' batching dimensions)
    if operand.ndim != len(slice_sizes):
        raise TypeError(
            "Gather op must have one slice size for every input dimension; got: "
            f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}"
        )
    if len(slice_sizes) != len(offset_dims) + len(collapsed_slice_dims) + len(operand_batching_dims):
        raise TypeError(
            "All components of the offset index in a gather op must either be a offset dimension or "
            f"explicitly collapsed/batching; got len(slice_sizes)={len(slice_sizes)}, "
            f"output_slice_sizes={offset_dims}, collapsed_slice_dims={collapsed_slice_dims}, "
            f"operand_batching_dims={operand_batching_dims}."
        )
    indices_empty = any(d == 0 for d in indices.shape)
    for i, (slice_size, input_size) in enumerate(zip(slice_sizes, operand.shape)):
        if not indices_empty and not (slice_size >= 0 and input_size >= slice_size):
            raise TypeError(
                f"Slice size at index {i} in gather op is out of range, must be within "
                f"[0, {input_size} + 1), got {slice_size}."
            )
    for i, d in enumerate(collapsed_slice_dims):
        if slice_sizes[d] != 1:
            raise TypeError(
                "Gather op can only collapse slice dims with bound 1, but bound is "
                f"{slice_sizes[d]} for index {d} at position {i}."
            )
    for i, d in enumerate(operand_batching_dims):
        if slice_sizes[d] > 1:
            raise TypeError(
                "Gather op can only have operand batching dims with bound 0/1, but bound is "
                f"{slice_sizes[d]} for index {d} at position {i}."
            )


def check_scatter(
    operand,
    indices,
    updates,
    *,
    update_window_dims,
    inserted_window_dims,
    scatter_dims_to_operand_dims,
    operand_batching_dims,
    scatter_indices_batching_dims,
) -> None:
    """JAX's checks of a scatter's dimension numbers and of the updates' shape (avals in)."""
    index_vector_dim = _index_vector_dim(indices, "Scatter")
    expanded_indices_shape = list(indices.shape)
    expected_updates_rank = len(expanded_indices_shape) - 1 + len(update_window_dims)
    if updates.ndim != expected_updates_rank:
        raise TypeError(f"Updates tensor must be of rank {expected_updates_rank}; got {updates.ndim}.")
    _is_sorted(update_window_dims, "scatter", "update_window_dims")
    _no_duplicate_dims(update_window_dims, "scatter", "update_window_dims")
    _sorted_dims_in_range(update_window_dims, updates.ndim, "scatter", "update_window_dims")
    _is_sorted(inserted_window_dims, "scatter", "inserted_window_dims")
    _no_duplicate_dims(inserted_window_dims, "scatter", "inserted_window_dims")
    _sorted_dims_in_range(inserted_window_dims, operand.ndim, "scatter", "inserted_window_dims")
    _is_sorted(operand_batching_dims, "scatter", "operand_batching_dims")
    _no_duplicate_dims(operand_batching_dims, "scatter", "operand_batching_dims")
    _sorted_dims_in_range(operand_batching_dims, operand.ndim, "scatter", "operand_batching_dims")
    _disjoint_dims(
        inserted_window_dims,
        operand_batching_dims,
        "scatter",
        "inserted_window_dims",
        "operand_batching_dims",
    )
    _disjoint_dims(
        scatter_dims_to_operand_dims,
        operand_batching_dims,
        "scatter",
        "scatter_dims_to_operand_dims",
        "operand_batching_dims",
    )
    operand_batch_shape = _batching_dims(
        "scatter",
        operand,
        indices,
        operand_batching_dims,
        scatter_indices_batching_dims,
        index_vector_dim,
        " ",
    )
    in_updates: list = list(range(index_vector_dim))  # (JAX's _get_updates_batching_dims)
    for i in update_window_dims:
        in_updates.insert(i, None)
    if len(in_updates) == updates.ndim:
        updates_batch_shape = tuple(updates.shape[in_updates.index(i)] for i in scatter_indices_batching_dims)
        if operand_batch_shape != updates_batch_shape:
            raise TypeError(
                "Scatter op requires operand batching dimensions and updates batching dimensions to have "
                f"the same shape, got {operand_batch_shape} and {updates_batch_shape}."
            )
    window_size = len(update_window_dims) + len(inserted_window_dims) + len(operand_batching_dims)
    if operand.ndim != window_size:
        raise TypeError(
            f"Scatter op has window of size {window_size}; doesn't match operand of rank {operand.ndim}."
        )
    if len(scatter_dims_to_operand_dims) != indices.shape[index_vector_dim]:
        raise TypeError(
            f"Scatter op has {len(scatter_dims_to_operand_dims)} elements in scatter_dims_to_operand_dims "
            f"and the bound of dimension {index_vector_dim=} of indices is "
            f"{indices.shape[index_vector_dim]}. These two numbers must be equal"
        )
    for i, dim in enumerate(scatter_dims_to_operand_dims):
        if dim < 0 or dim >= operand.ndim:
            raise TypeError(
                "Invalid scatter_dims_to_operand_dims mapping; domain is "
                f"[0, {operand.ndim}), got: {i}->{dim}."
            )
    _no_duplicate_dims(scatter_dims_to_operand_dims, "scatter", "scatter_dims_to_operand_dims")
    implicit = set(inserted_window_dims) | set(operand_batching_dims)
    max_update_slice_sizes = [n for i, n in enumerate(operand.shape) if i not in implicit]
    for i, d in enumerate(update_window_dims):
        if max_update_slice_sizes[i] < updates.shape[d]:
            raise TypeError(
                "Bounds of the window dimensions of updates must not exceed the bounds of the "
                f"corresponding dimensions of operand. For dimension {d}, updates bound is "
                f"{updates.shape[d]}, operand bound is {max_update_slice_sizes[i]}."
            )
    seen = 0
    for i in (d for d in range(updates.ndim) if d not in set(update_window_dims)):
        if seen == index_vector_dim:
            seen += 1
        if updates.shape[i] != expanded_indices_shape[seen]:
            raise TypeError(
                "Bounds of the scatter dimensions of updates must be the same as the bounds of the "
                f"corresponding dimensions of scatter indices. For scatter dimension {i}, updates bound is "
                f"{updates.shape[i]}, indices bound is {expanded_indices_shape[seen]}."
            )
        seen += 1
