"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims.

Layer: primitives. Imports the funcgrad kernel and numpy.
"""

from __future__ import annotations

import numpy as np

from funcgrad.ad import deflinear
from funcgrad.core import Primitive, ShapedArray
from funcgrad.kernel_ops import ops
from primitives._rules import aval_of, move_to_front

# ----------------------------------------------------------------------------------------------
# broadcast_in_dim: operand dims map to `broadcast_dimensions` of the result


def _bid_impl(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded_shape = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded_shape[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded_shape), shape)


def _bid_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(
            f"broadcast_in_dim: operand {x.str_short()} needs {x.ndim} broadcast_dimensions, got "
            f"{broadcast_dimensions}"
        )
    if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or list(broadcast_dimensions) != sorted(
        set(broadcast_dimensions)
    ):
        raise TypeError(f"broadcast_in_dim: bad broadcast_dimensions {broadcast_dimensions} for shape {shape}")
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            raise TypeError(
                f"broadcast_in_dim: operand dimension {i} of size {x.shape[i]} cannot broadcast to "
                f"size {shape[d]} (result shape {shape})"
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _bid_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    # Sum over new dims and over dims that were broadcast from size 1.
    summed = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    kept_ones = tuple(
        d for i, d in enumerate(broadcast_dimensions) if in_shape[i] == 1 and shape[d] != 1
    )
    # reduce_sum lives in reductions.py, which imports this module: reach it through the registry.
    out = ops.reduce_sum(ct, tuple(sorted(summed + kept_ones)))
    return [reshape(out, in_shape)]


def _bid_batch(axis_size, vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = move_to_front(x, d)
    new_shape = (axis_size, *shape)
    new_dims = (0, *(b + 1 for b in broadcast_dimensions))
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims), 0


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_impl(_bid_impl)
broadcast_in_dim_p.def_abstract_eval(_bid_abstract_eval)
deflinear(broadcast_in_dim_p, _bid_transpose)
broadcast_in_dim_p.def_batch(_bid_batch)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    """Broadcast ``x`` to ``shape``; operand dim ``i`` becomes result dim ``broadcast_dimensions[i]``."""
    shape = tuple(int(s) for s in shape)
    broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
    if aval_of(x).shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=broadcast_dimensions)


# ----------------------------------------------------------------------------------------------
# reshape


def _reshape_abstract_eval(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape: cannot reshape {x.str_short()} (size {x.size}) into shape {new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_batch(axis_size, vals, dims, *, new_sizes):
    x = move_to_front(vals[0], dims[0])
    return reshape_p.bind(x, new_sizes=(axis_size, *new_sizes)), 0


reshape_p = Primitive("reshape")
reshape_p.def_impl(lambda x, *, new_sizes: np.reshape(x, new_sizes))
reshape_p.def_abstract_eval(_reshape_abstract_eval)
deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape(ct, x.aval.shape)])
reshape_p.def_batch(_reshape_batch)


def reshape(x, new_sizes):
    """Reshape ``x`` (row-major) to ``new_sizes``; no equation when the shape is unchanged."""
    new_sizes = tuple(int(s) for s in new_sizes)
    if aval_of(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


# ----------------------------------------------------------------------------------------------
# transpose


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation of {x.ndim} axes")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_transpose(ct, x, *, permutation):
    inverse = tuple(int(i) for i in np.argsort(permutation))
    return [transpose(ct, inverse)]


def _transpose_batch(axis_size, vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    # Keep the batch dim where it is: map the other axes around it.
    others = [p if p < d else p + 1 for p in permutation]
    perm = (*others[:d], d, *others[d:])
    return transpose_p.bind(x, permutation=tuple(perm)), d


transpose_p = Primitive("transpose")
transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))
transpose_p.def_abstract_eval(_transpose_abstract_eval)
deflinear(transpose_p, _transpose_transpose)
transpose_p.def_batch(_transpose_batch)


def transpose(x, permutation):
    """Permute the axes of ``x``: result axis ``i`` is operand axis ``permutation[i]``."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)


def moveaxis(x, src: int, dst: int):
    ndim = aval_of(x).ndim
    src, dst = src % ndim, dst % ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


# ----------------------------------------------------------------------------------------------
# squeeze and expand_dims (reshape-like, but kept as primitives so jaxprs say what happened)


def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise TypeError(f"squeeze: cannot squeeze dimension {d} of {x.str_short()} (size must be 1)")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype, x.weak_type)


def _squeeze_batch(axis_size, vals, dims, *, dimensions):
    x = move_to_front(vals[0], dims[0])
    return squeeze_p.bind(x, dimensions=tuple(d + 1 for d in dimensions)), 0


squeeze_p = Primitive("squeeze")
squeeze_p.def_impl(lambda x, *, dimensions: np.squeeze(x, axis=dimensions) if dimensions else np.asarray(x))
squeeze_p.def_abstract_eval(_squeeze_abstract_eval)
deflinear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, x.aval.shape)])
squeeze_p.def_batch(_squeeze_batch)


def squeeze(x, dimensions):
    dimensions = tuple(sorted(int(d) % max(aval_of(x).ndim, 1) for d in dimensions))
    if not dimensions:
        return x
    return squeeze_p.bind(x, dimensions=dimensions)


def expand_dims(x, dimensions):
    """Insert size-1 axes at ``dimensions`` (positions in the result)."""
    shape = list(aval_of(x).shape)
    ndim = len(shape) + len(dimensions)
    for d in sorted(int(d) % ndim for d in dimensions):
        shape.insert(d, 1)
    return reshape(x, shape)


__all__ = [
    "broadcast_in_dim",
    "broadcast_in_dim_p",
    "expand_dims",
    "moveaxis",
    "reshape",
    "reshape_p",
    "squeeze",
    "squeeze_p",
    "transpose",
    "transpose_p",
]
