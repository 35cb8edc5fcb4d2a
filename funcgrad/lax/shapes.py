"""``funcgrad.lax`` shape operations with ``jax.lax``'s names: ``broadcast_in_dim``,
``broadcast``, ``broadcast_shapes``, ``broadcast_to_rank``, ``reshape``, ``squeeze``,
``expand_dims``, ``transpose``, ``collapse``, ``iota``, ``broadcasted_iota``, ``full``,
``full_like``, ``zeros_like_array``.

Layer: surface. Imports the kernel, the primitive catalog (``structure``), ``funcgrad.numpy._core``
(conversion helpers), ``funcgrad._placement`` (``out_sharding=``) and ``funcgrad.lax._checks``;
nothing here adds rules.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from funcgrad._api_util import abstractify, is_abstract
from funcgrad._meshes import Mesh
from funcgrad._placement import (
    device_put_sharded,
    takes_out_sharding,  # out_sharding= (JAX 0.10's explicit sharding)
)
from funcgrad._shardings import NamedSharding, PartitionSpec, Sharding
from funcgrad.kernel.array import Array
from funcgrad.kernel.hooks import hooks
from funcgrad.lax._checks import _bind_check
from funcgrad.numpy import creation as _creation
from funcgrad.numpy._core import asarray, aval, check_user_dtype, static_shape
from funcgrad.numpy._core import broadcast_shapes as _np_broadcast_shapes
from funcgrad.numpy._dtypes import ExtendedArray, _is_extended, keys_by_word
from funcgrad.primitives import structure as st
from funcgrad.primitives._reshape_sharding import check_reshape
from funcgrad.primitives.elementwise.conversion import convert_element_type

__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "broadcast_shapes",
    "broadcast_to_rank",
    "broadcasted_iota",
    "collapse",
    "expand_dims",
    "full",
    "full_like",
    "iota",
    "reshape",
    "squeeze",
    "transpose",
    "zeros_like_array",
]


@takes_out_sharding
@keys_by_word
def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast ``operand`` to ``shape``; operand dim ``i`` becomes result dim
    ``broadcast_dimensions[i]``.

    >>> broadcast_in_dim(np.array([1, 2]), (3, 2), (1,)).tolist()
    [[1, 2], [1, 2], [1, 2]]
    >>> broadcast_in_dim(np.array([[1], [2]]), (3, 2), (1, 0)).tolist()
    [[1, 2], [1, 2], [1, 2]]
    """
    operand = asarray(operand)
    shape = static_shape(shape, "lax.broadcast_in_dim's shape")  # traced: jax's TypeError
    dims = tuple(int(d) for d in broadcast_dimensions)
    if len(dims) == operand.ndim and len(set(dims)) == len(dims) and list(dims) != sorted(dims):
        # JAX accepts result dimensions in any order (its docstring's (1, 0) example): the operand
        # is transposed to increasing order first, the primitive's own invariant.
        order = sorted(range(len(dims)), key=dims.__getitem__)
        operand, dims = st.transpose(operand, tuple(order)), tuple(sorted(dims))
    _bind_check(st.broadcast_in_dim_p, "broadcast_in_dim", operand, shape=shape, broadcast_dimensions=dims)
    return st.broadcast_in_dim(operand, shape, dims)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (NumPy's rules); shapes that do not broadcast raise
    JAX's ``ValueError`` (``Incompatible shapes for broadcasting: shapes=[...]``).

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    for s in shapes:  # (JAX's TypeErrors for what is not a shape)
        if not isinstance(s, tuple | list) or not all(isinstance(d, int | np.integer) for d in s):
            raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {s}.")
        if any(d < 0 for d in s):
            raise TypeError(
                "Only non-negative indices are allowed when broadcasting static shapes, but got shape "
                f"{tuple(s)}."
            )
    return _np_broadcast_shapes(*[tuple(s) for s in shapes])


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 axes added up to ``rank`` dimensions.

    >>> broadcast_to_rank(np.ones(3), 3).shape
    (1, 1, 3)
    """
    x = asarray(x)
    if x.ndim >= rank:
        return x
    return st.reshape(x, (1,) * (rank - x.ndim) + tuple(x.shape))


@takes_out_sharding
@keys_by_word
def broadcast(operand, sizes):
    """Add leading dimensions of ``sizes``.

    >>> broadcast(np.array([1, 2]), (3,)).shape
    (3, 2)
    """
    operand = asarray(operand)
    sizes = tuple(int(s) for s in sizes)
    dims = tuple(range(len(sizes), len(sizes) + operand.ndim))
    _nonnegative_shape((*sizes, *operand.shape))
    return st.broadcast_in_dim(operand, (*sizes, *operand.shape), dims)


def _nonnegative_shape(shape) -> None:
    if any(type(d) is int and d < 0 for d in shape):  # (JAX's type and words)
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {tuple(shape)}.")


@takes_out_sharding(typed_result=True, unreduced="operand")
@keys_by_word
def reshape(operand, new_sizes, dimensions=None):
    """Reshape (row-major) to ``new_sizes``, after permuting by ``dimensions`` if given.

    >>> reshape(np.arange(6), (2, 3)).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    operand = asarray(operand)
    if dimensions is not None:
        dimensions = tuple(dimensions)
        if sorted(dimensions) != list(range(operand.ndim)):  # (JAX's type and words)
            raise TypeError(
                "reshape dimensions must be a permutation of operand dimensions, got dimensions "
                f"{dimensions} for shape {tuple(operand.shape)}."
            )
        operand = st.transpose(operand, dimensions)
    new_sizes = static_shape(new_sizes, "lax.reshape's new_sizes")  # traced: jax's TypeError
    if any(type(d) is int and d < 0 for d in new_sizes):  # (JAX's type and words)
        raise TypeError(f"reshape new_sizes must all be positive, got {tuple(new_sizes)}.")
    size, new_size = math.prod(operand.shape), math.prod(new_sizes)
    if size != new_size:  # jax's lax.reshape raises ValueError here (issue 30)
        raise ValueError(
            f"lax.reshape: total size must be unchanged, got new_sizes {new_sizes} (of total size "
            f"{new_size}) for shape {tuple(operand.shape)} (of total size {size})"
        )
    _bind_check(st.reshape_p, "reshape", operand, new_sizes=new_sizes)
    if dimensions is None:  # (JAX's refusals of an ambiguous reshape: NOTE: [reshape's refusals at the API])
        check_reshape(aval(operand), new_sizes)
    return st.reshape(operand, new_sizes)


def _canonical_axis(axis, ndim: int) -> int:
    """JAX's ``canonicalize_axis``: an axis in [-ndim, ndim) as one in [0, ndim)."""
    axis = operator.index(axis)  # (TypeError: 'NoneType' object cannot be interpreted as an integer)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis + ndim if axis < 0 else axis


@keys_by_word
def squeeze(array, dimensions):
    """Remove the size-1 ``dimensions``.

    >>> squeeze(np.ones((1, 3, 1)), (0, 2)).shape
    (3,)
    """
    array = asarray(array)
    dims = tuple(_canonical_axis(d, array.ndim) for d in dimensions)  # (JAX's checks and words)
    if len(set(dims)) != len(dims):
        raise ValueError(f"dimensions are not unique: {tuple(sorted(dims))}")
    if any(array.shape[d] != 1 for d in dims):  # (JAX's ValueError)
        raise ValueError(
            "cannot select an axis to squeeze out which has size not equal to one, got "
            f"shape={tuple(array.shape)} and dimensions={tuple(dimensions)}"
        )
    _bind_check(st.squeeze_p, "squeeze", array, dimensions=tuple(sorted(dims)))
    return st.squeeze(array, dims)


@keys_by_word
def expand_dims(array, dimensions):
    """Insert size-1 axes at ``dimensions`` (positions in the result).

    >>> expand_dims(np.ones(3), (0,)).shape
    (1, 3)
    """
    array = asarray(array)
    ndim = array.ndim + len(dimensions)
    for d in dimensions:
        if not -ndim <= int(d) < ndim:  # (JAX's ValueError)
            raise ValueError(f"axis {int(d)} is out of bounds for array of dimension {ndim}")
    return st.expand_dims(array, tuple(int(d) for d in dimensions))


@keys_by_word
def transpose(operand, permutation):
    """Permute the axes: result axis ``i`` is operand axis ``permutation[i]``.

    >>> transpose(np.ones((2, 3)), (1, 0)).shape
    (3, 2)
    """
    operand = asarray(operand)
    perm = tuple(int(p) for p in permutation)
    _bind_check(st.transpose_p, "transpose", operand, permutation=perm)
    return st.transpose(operand, perm)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merge dimensions ``start_dimension`` to ``stop_dimension`` (exclusive) into one.

    >>> collapse(np.ones((2, 3, 4)), 0, 2).shape
    (6, 4)
    """
    operand = asarray(operand)
    stop = operand.ndim if stop_dimension is None else stop_dimension
    shape = operand.shape
    size = int(np.prod(shape[start_dimension:stop], dtype=np.int64))
    return st.reshape(operand, (*shape[:start_dimension], size, *shape[stop:]))


def iota(dtype, size: int):
    """``[0, 1, ..., size - 1]`` of ``dtype``.

    >>> iota(np.int32, 3).tolist()
    [0, 1, 2]
    """
    try:
        size = operator.index(size)
    except TypeError:  # (JAX's words: a float size is refused, not truncated)
        raise TypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got ({size!r},)."
        ) from None
    return st.iota(check_user_dtype(dtype, "broadcasted_iota"), size)


@takes_out_sharding
def broadcasted_iota(dtype, shape, dimension: int):
    """An array of ``shape`` counting 0, 1, ... along ``dimension``.

    >>> broadcasted_iota(np.int32, (2, 2), 0).tolist()
    [[0, 0], [1, 1]]
    """
    dtype = check_user_dtype(dtype, "broadcasted_iota")
    shape, dimension = tuple(int(s) for s in shape), int(dimension)
    if not 0 <= dimension < len(shape):  # (JAX's words and type; a negative dimension is refused too)
        raise ValueError(
            f"iota dimension must be between 0 and len(shape), got dimension={dimension} for shape={shape}"
        )
    return st.broadcasted_iota(dtype, shape, dimension)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with the scalar ``fill_value``, laid out as ``sharding`` when
    given (as ``device_put``: under a trace, a sharding constraint).

    >>> full((2,), 3.0).tolist()
    [3.0, 3.0]
    """
    if _is_extended(dtype) or (isinstance(fill_value, ExtendedArray) and dtype is None):
        if getattr(fill_value, "ndim", 0):  # typed PRNG keys: jnp.full's keys (JAX's lax.full of keys)
            raise TypeError(f"lax.full: fill_value must be a scalar, got shape {fill_value.shape}")
        out = _creation.full(tuple(int(s) for s in shape), fill_value, dtype)
        return out if sharding is None else device_put_sharded(out, sharding)
    _nonnegative_shape(tuple(int(s) for s in shape))
    value = asarray(fill_value) if dtype is None else asarray(fill_value, check_user_dtype(dtype, "full"))
    if value.ndim:
        raise TypeError(f"lax.full: fill_value must be a scalar, got shape {value.shape}")
    out = st.broadcast_in_dim(value, tuple(int(s) for s in shape), ())
    if sharding is None or (
        type(out) is not Array and isinstance(getattr(sharding, "mesh", None) or sharding, Mesh | Sharding)
    ):
        return out  # (JAX's: a sharding over devices "ignored in jitted mode", its traced fill unplaced)
    if type(out) is Array and out.weak_type and isinstance(sharding, Sharding):
        # (a concrete value for a concrete sharding is built strongly typed, as JAX's
        # make_array_from_callback: lax.full((2,), 2.0, sharding=s) is not weak there)
        out = convert_element_type(out, out.dtype, weak_type=False)
    spec = getattr(sharding, "spec", None)
    if type(out) is Array and spec is not None and len(spec) > out.ndim and not any(spec[out.ndim :]):
        # (JAX's eager full takes a spec longer than the rank whose extra entries are None: its
        # blocks are the shard shape's leading dimensions; multi_device_test's test_lax_full_sharding)
        kind = sharding.memory_kind
        sharding = NamedSharding(sharding.mesh, PartitionSpec(*spec[: out.ndim]), memory_kind=kind)
    return device_put_sharded(out, sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """``full`` with the shape and dtype of ``x`` (unless given), weakly typed when ``x`` is and no
    ``dtype`` is given, and, as JAX's, on ``x``'s devices: a committed, strongly typed Array
    ``x`` lends its sharding when the shape is its own or the sharding replicates it.

    >>> full_like(np.ones(2, np.int32), 7).tolist()
    [7, 7]
    """
    if isinstance(x, ExtendedArray) and dtype is None and sharding is None:  # typed PRNG keys (JAX's)
        return _creation.full_like(x, fill_value, shape=shape)
    if is_abstract(x):
        # A ShapeDtypeStruct (JAX takes any duck-typed array): its shape and dtype; its sharding
        # only over a concrete mesh (over an abstract one the result is on the default device).
        a = abstractify(x)
        given = getattr(x, "sharding", None)
        if sharding is None and isinstance(getattr(given, "mesh", None), Mesh) and shape is None:
            sharding = given
    else:
        a = aval(x)
    weak = dtype is None and bool(getattr(a, "weak_type", False))
    fill_shape = a.shape if shape is None else static_shape(shape)
    if (
        sharding is None
        and isinstance(x, Array)
        and x.committed
        and not weak
        and (fill_shape == a.shape or x.sharding.is_fully_replicated)
    ):
        sharding = x.sharding
    out = full(fill_shape, fill_value, a.dtype if dtype is None else dtype, sharding=sharding)
    out = convert_element_type(out, out.dtype, weak_type=True) if weak else out
    return hooks.vary_like(out, x)  # (typed as x in a checked shard_map body, as JAX's)


def zeros_like_array(x):
    """Zeros of ``x``'s shape and dtype.

    >>> zeros_like_array(np.ones(2)).tolist()
    [0.0, 0.0]
    """
    return full_like(x, 0)
