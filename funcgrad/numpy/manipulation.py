"""Shape manipulation of funcgrad.numpy: reshape, transpose, concatenate, stack, split, ... (tile,
repeat, flip, roll, rot90 are in ``rearrangement``).

Layer: surface. Imports ``funcgrad.numpy._core``, ``funcgrad.numpy.indexing`` and the primitive
catalog (structure, indexing, sorting, reductions, elementwise families).

Every function here is linear in its array arguments and lowers to the structural primitives
(reshape, transpose, broadcast_in_dim, concatenate, slice, rev, pad), whose transposes make them
differentiable. Sizes and axes are static Python ints; NumPy's exceptions are raised for bad ones.
"""

from __future__ import annotations

import builtins

import numpy as np

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import core
from funcgrad.kernel.array import Array
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy._core import (
    as_sequence,
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    concrete_int,
    concrete_or_error,
    normalize_axes,
    normalize_axis,
    promote_args,
    static_shape,
)
from funcgrad.numpy._dtypes import ExtendedArray, extended_in
from funcgrad.primitives import stacking as sk
from funcgrad.primitives import structure as st
from funcgrad.primitives._reshape_sharding import check_reshape
from funcgrad.primitives._sharding_rules import ShardingTypeError

__all__ = [
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "column_stack",
    "concat",
    "concatenate",
    "dstack",
    "expand_dims",
    "hsplit",
    "hstack",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "ravel",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
    "unstack",
    "vsplit",
    "vstack",
]


@takes_out_sharding(typed_result=True, unreduced="operand")
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshape ``a`` to ``shape`` (one entry may be -1); ``order='F'`` reads and writes column-major.

    >>> reshape(np.arange(6), (2, -1)).tolist()
    [[0, 1, 2], [3, 4, 5]]
    >>> reshape(np.arange(6), (2, 3), order="F").tolist()
    [[0, 2, 4], [1, 3, 5]]
    """
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    if isinstance(a, ExtendedArray):  # typed PRNG keys (ExtendedArray)
        return a._numpy_function(reshape, (a, shape), {"order": order})
    a = asarray(a)
    shape = _resolve_shape(shape, a.shape)
    if order == "F":
        return transpose(st.reshape(transpose(a), shape[::-1]))
    if order == "A":  # (JAX's type and words; K too is refused, as an unexpected value)
        raise NotImplementedError("np.reshape order=A is not implemented.")
    if order != "C":
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    check_reshape(aval(a), shape)  # (JAX's refusals of an ambiguous reshape)
    return st.reshape(a, shape)


def _shown(shape) -> tuple:
    """A shape as JAX prints it, a symbolic export's traced sizes as their expressions."""
    return tuple(getattr(d, "expr", d) for d in shape)


def _product(dims):
    out = 1
    for d in dims:
        out = out * d  # (traced sizes multiply into their expression)
    return out


def _resolve_shape(shape, a_shape) -> tuple[int, ...]:
    size = int(np.prod(a_shape, dtype=np.int64))
    given = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
    shape = static_shape(shape, "the new shape")
    unknown = [i for i, s in enumerate(shape) if s == -1]
    # jax.numpy raises TypeError for an impossible new shape (NumPy: ValueError); issue 30. (JAX's
    # words; where a zero-size known part would make JAX divide by zero, the same TypeError.)
    if len(unknown) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
    if unknown:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if (known == 0 or size % known) and any(getattr(d, "traced", False) for d in (*a_shape, *given)):
            # (a symbolic export's sizes: JAX's divide_shape_sizes refusal, in its words)
            rest = _product(given)  # (JAX's divmod of the two products, the -1 included)
            raise core.InconclusiveDimensionOperation(
                f"Cannot divide evenly the sizes of shapes {_shown(a_shape)} and {_shown(given)}. "
                f"The remainder {_shown([_product(a_shape) % rest])[0]} should be 0."
            )
        if known == 0 or size % known:
            raise TypeError(
                f"cannot reshape array of shape {tuple(a_shape)} (size {size}) into shape {shape} because "
                f"the product of specified axis sizes ({known}) does not evenly divide {size}"
            )
        shape = tuple(size // known if s == -1 else s for s in shape)
    new_size = int(np.prod(shape, dtype=np.int64))
    if new_size != size:
        shown = f"array of shape {tuple(a_shape)} (size {size})"
        raise TypeError(f"cannot reshape {shown} into shape {shape} (size {new_size})")
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions not allowed in shape {shape}")
    return shape


@takes_out_sharding
def ravel(a, order="C"):
    """Flatten ``a`` to 1-D.

    >>> ravel(np.array([[1, 2], [3, 4]])).tolist()
    [1, 2, 3, 4]
    """
    if order == "K":  # (JAX's type and words)
        raise NotImplementedError("Ravel not implemented for order='K'.")
    a = asarray(a)
    return reshape(a, (a.size,), order=order)


def transpose(a, axes=None):
    """Permute the axes of ``a`` (reverse them by default).

    >>> transpose(np.ones((2, 3, 4)), (1, 0, 2)).shape
    (3, 2, 4)
    """
    if isinstance(a, ExtendedArray):
        return a._numpy_function(transpose, (a, axes), {})
    a = asarray(a)
    if axes is None:
        return st.transpose(a, tuple(reversed(range(a.ndim))))
    axes = tuple(as_sequence(axes))
    # TypeError for a bad permutation, as jax.numpy (NumPy: ValueError); issue 30
    if len(axes) != a.ndim:
        raise TypeError(f"axes don't match array: {axes} for an array of dimension {a.ndim}")
    perm = tuple(normalize_axis(x, a.ndim) for x in axes)
    if len(set(perm)) != len(perm):
        raise TypeError(f"repeated axis in transpose: {axes}")
    return st.transpose(a, perm)


def permute_dims(a, /, axes):
    """The Array API's ``transpose``.

    >>> permute_dims(np.ones((2, 3)), (1, 0)).shape
    (3, 2)
    """
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes (a stack of matrices transposed).

    >>> matrix_transpose(np.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {x.shape}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    """Interchange two axes.

    >>> swapaxes(np.ones((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    if isinstance(a, ExtendedArray):  # typed PRNG keys (ExtendedArray)
        return a._numpy_function(swapaxes, (a, axis1, axis2), {})
    a = asarray(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return st.transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """Move axes ``source`` to positions ``destination`` (ints or sequences).

    >>> moveaxis(np.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    if isinstance(a, ExtendedArray):
        return a._numpy_function(moveaxis, (a, source, destination), {})
    a = asarray(a)
    src = [normalize_axis(s, a.ndim, "source") for s in as_sequence(source)]
    dst = [normalize_axis(d, a.ndim, "destination") for d in as_sequence(destination)]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("repeated axis in moveaxis")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return st.transpose(a, tuple(order))


def expand_dims(a, axis):
    """Insert size-1 axes at ``axis`` (an int or a tuple of positions in the result).

    >>> expand_dims(np.ones(3), (0, 2)).shape
    (1, 3, 1)
    """
    if isinstance(a, ExtendedArray):
        return a._numpy_function(expand_dims, (a, axis), {})
    a = asarray(a)
    axes = as_sequence(axis)
    ndim = a.ndim + len(axes)
    positions = [normalize_axis(ax, ndim) for ax in axes]
    if len(set(positions)) != len(positions):  # (JAX's words, lax.expand_dims')
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(positions)}")
    axes = normalize_axes(axes, ndim)
    return st.expand_dims(a, tuple(axes))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``, which must have size 1).

    >>> squeeze(np.ones((1, 3, 1))).shape
    (3,)
    """
    if isinstance(a, ExtendedArray):
        return a._numpy_function(squeeze, (a, axis), {})
    a = asarray(a)
    if axis is None:
        if any(getattr(s, "traced", False) for s in a.shape):  # (a symbolic export's sizes; JAX's words)
            raise ValueError("jnp.squeeze with axis=None is not supported with shape polymorphism")
        axes = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        axes = normalize_axes(axis, a.ndim)
        if any(a.shape[ax] != 1 for ax in axes):
            raise ValueError(  # (JAX's words)
                "cannot select an axis to squeeze out which has size not equal to one, got "
                f"shape={_shown(a.shape)} and dimensions={axes}"
            )
    return st.squeeze(a, axes) if axes else a


def broadcast_arrays(*args):
    """Broadcast arrays against each other (NumPy rules); returns a list.

    >>> [x.shape for x in broadcast_arrays(np.ones((2, 1)), np.ones(3))]
    [(2, 3), (2, 3)]
    """
    arrays = [asarray(x) for x in args]
    shape = broadcast_shapes(*[x.shape for x in arrays])
    return [broadcast_to(x, shape) for x in arrays]


# ----------------------------------------------------------------------------------------------
# Joining


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens them first).

    >>> concatenate([np.array([1, 2]), np.array([3])]).tolist()
    [1, 2, 3]
    """
    if isinstance(arrays, np.ndarray | Array | core.Tracer) and not isinstance(arrays, ExtendedArray):
        return _concatenate_array(asarray(arrays, dtype), axis)
    arrays = list(arrays)
    if (keys := extended_in(arrays)) is not None:  # typed PRNG keys (ExtendedArray)
        return keys._numpy_function(concatenate, (arrays, axis), {})
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    arrays = promote_args(*arrays)
    if dtype is not None:
        arrays = [asarray(x, dtype) for x in arrays]
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, x in enumerate(arrays):
        if x.ndim != ndim:  # TypeError as jax.numpy's (NumPy: ValueError); issue 30
            raise TypeError(
                "all the input arrays must have same number of dimensions, but the array at index 0 has "
                f"{ndim} dimension(s) and the array at index {i} has {x.ndim} dimension(s)"
            )
    axis = normalize_axis(axis, ndim)
    for i, x in enumerate(arrays):
        for d in range(ndim):
            if d != axis and x.shape[d] != arrays[0].shape[d]:
                raise TypeError(
                    "all the input array dimensions except for the concatenation axis must match exactly, "
                    f"but along dimension {d}, the array at index 0 has size {arrays[0].shape[d]} and the "
                    f"array at index {i} has size {x.shape[d]}"
                )
    if len(arrays) == 1:
        return arrays[0]
    return st.concatenate(arrays, axis)


def _concatenate_array(arr, axis):
    """JAX's fast path for one array whose leading axis is the sequence: a reshape (after moving
    that axis next to ``axis``), so its rows are never sliced out one by one (a leading dimension
    split over a mesh axis stays so)."""
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return reshape(arr, (arr.size,))
    if arr.ndim == 1:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = normalize_axis(axis, arr.ndim - 1)
    shape = arr.shape[1 : axis + 1] + (arr.shape[0] * arr.shape[axis + 1],) + arr.shape[axis + 2 :]
    dimensions = (*range(1, axis + 1), 0, *range(axis + 1, arr.ndim))
    if dimensions != tuple(range(arr.ndim)):
        a = core.get_aval(arr)
        if a._sharding is not None and any(a._sharding.spec):
            # (JAX's lax.reshape with dimensions= over a sharded operand)
            raise ShardingTypeError(
                "This reshape is not supported. Please specify the sharding of the output via the "
                f"`out_sharding` argument of jax.lax.reshape. Got operand type: {a}, new sizes: {shape}"
            )
        arr = st.transpose(arr, dimensions)
    return st.reshape(arr, shape)


def concat(arrays, /, *, axis=0):
    """The Array API's ``concatenate``.

    >>> concat([np.ones((1, 2)), np.zeros((1, 2))]).shape
    (2, 2)
    """
    return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays of one shape along a new axis.

    >>> stack([np.array([1, 2]), np.array([3, 4])], axis=1).tolist()
    [[1, 3], [2, 4]]
    """
    if isinstance(arrays, np.ndarray | Array | core.Tracer) and not isinstance(arrays, ExtendedArray):
        # (as JAX's: one array's leading axis is the sequence; its rows are never sliced out, so
        # a leading dimension split over a mesh axis stays so)
        arrays = asarray(arrays)
        if arrays.ndim == 0:
            raise TypeError("len() of unsized object")
        axis = normalize_axis(axis, arrays.ndim)
        return concatenate(expand_dims(arrays, axis + 1), axis, dtype=dtype)
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if extended_in(arrays) is not None:  # typed PRNG keys: concatenated as keys
        shapes = {x.shape for x in arrays}
        if len(shapes) != 1:
            raise ValueError("all input arrays must have the same shape")
        axis = normalize_axis(axis, arrays[0].ndim + 1)
        return concatenate([expand_dims(x, axis) for x in arrays], axis, dtype=dtype)
    # (as JAX 0.10's: promoted, then one stack equation, JAX's stack_p)
    arrays = [asarray(x, dtype) for x in arrays] if dtype is not None else promote_args(*arrays)
    axis = normalize_axis(axis, arrays[0].ndim + 1)
    return sk.stack(arrays, axis)


def atleast_1d(*arys):
    """View inputs as arrays with at least one dimension (a list for several inputs).

    >>> atleast_1d(1.0).shape
    (1,)
    """
    out = [asarray(x) for x in arys]
    out = [reshape(x, (1,)) if x.ndim == 0 else x for x in out]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """View inputs as arrays with at least two dimensions (new axes in front).

    >>> atleast_2d(np.ones(3)).shape
    (1, 3)
    """
    out = [asarray(x) for x in arys]
    out = [reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x for x in out]
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """View inputs as arrays with at least three dimensions (NumPy's placement: ``(1, N, 1)``).

    >>> atleast_3d(np.ones(3)).shape, atleast_3d(np.ones((2, 3))).shape
    ((1, 3, 1), (2, 3, 1))
    """
    out = []
    for x in arys:
        x = asarray(x)
        if x.ndim == 0:
            x = reshape(x, (1, 1, 1))
        elif x.ndim == 1:
            x = reshape(x, (1, x.shape[0], 1))
        elif x.ndim == 2:
            x = reshape(x, (*x.shape, 1))
        out.append(x)
    return out[0] if len(out) == 1 else out


def hstack(tup, dtype=None):
    """Stack horizontally (along axis 1; axis 0 for 1-D inputs).

    >>> hstack([np.array([1, 2]), np.array([3])]).tolist()
    [1, 2, 3]
    """
    arrs = [atleast_1d(x) for x in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Stack vertically (along axis 0, after ``atleast_2d``).

    >>> vstack([np.array([1, 2]), np.array([3, 4])]).shape
    (2, 2)
    """
    return concatenate([atleast_2d(x) for x in tup], 0, dtype=dtype)


def dstack(tup, dtype=None):
    """Stack along the third axis (after ``atleast_3d``).

    >>> dstack([np.array([1, 2]), np.array([3, 4])]).shape
    (1, 2, 2)
    """
    return concatenate([atleast_3d(x) for x in tup], 2, dtype=dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array (2-D arrays are stacked as they are).

    >>> column_stack([np.array([1, 2]), np.array([3, 4])]).tolist()
    [[1, 3], [2, 4]]
    """
    arrs = []
    for x in tup:
        x = asarray(x)
        arrs.append(reshape(x, (x.size, 1)) if x.ndim < 2 else x)
    return concatenate(arrs, 1)


# ----------------------------------------------------------------------------------------------
# Splitting


def _split_points(n: int, indices_or_sections, strict: bool) -> list[int]:
    if isinstance(indices_or_sections, int | np.integer) or (
        hasattr(indices_or_sections, "ndim") and np.ndim(indices_or_sections) == 0
    ):
        sections = concrete_int(indices_or_sections, "the number of sections", convert=int)  # (JAX's int())
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if strict and n % sections:
            raise ValueError("array split does not result in an equal division")
        size, extra = divmod(n, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        return list(np.cumsum([0, *sizes]))
    if isinstance(indices_or_sections, list | tuple):  # (each may be traced: JAX's concretization error)
        points = [concrete_int(i, "split indices", convert=int) for i in indices_or_sections]
    else:
        points = [int(i) for i in np.asarray(concrete_or_error(indices_or_sections, "split indices")).ravel()]
    return [0, *points, n]


def _split(ary, indices_or_sections, axis, strict):
    ary = asarray(ary)
    axis = normalize_axis(axis, ary.ndim)
    n = ary.shape[axis]
    if getattr(indices_or_sections, "traced", False):  # (a symbolic export's size; JAX's words)
        raise ValueError(
            f"jax.numpy.{'split' if strict else 'array_split'} with a symbolic number of sections is not "
            "supported"
        )
    points = _split_points(n, indices_or_sections, strict)
    if not isinstance(ary, ExtendedArray):
        # JAX's: one lax.split of the differences of the points (negative ones, of indices out of
        # order or negative, raise its ValueError where NumPy would clamp)
        return sk.split(ary, [int(b) - int(a) for a, b in zip(points[:-1], points[1:])], axis)
    out = []
    for start, stop in zip(points[:-1], points[1:]):
        start = builtins.min(builtins.max(start if start >= 0 else start + n, 0), n)
        stop = builtins.min(builtins.max(stop if stop >= 0 else stop + n, 0), n)
        stop = builtins.max(stop, start)
        out.append(_slice_in_dim(ary, start, stop, axis))
    return out


def _slice_in_dim(a, start, stop, axis):
    if isinstance(a, ExtendedArray):  # typed PRNG keys: sliced as keys (their data has more axes)
        return a[(slice(None),) * axis + (slice(start, stop),)]
    return st.slice_in_dim(a, start, stop, 1, axis)


def split(ary, indices_or_sections, axis: int = 0):
    """Split into equal sections (an int) or at the given indices (a sequence).

    >>> [x.tolist() for x in split(np.arange(6), 3)]
    [[0, 1], [2, 3], [4, 5]]
    >>> [x.tolist() for x in split(np.arange(5), [2, 3])]
    [[0, 1], [2], [3, 4]]
    """
    return _split(ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis: int = 0):
    """Like ``split``, allowing sections of unequal size (the first ones are one longer).

    >>> [x.tolist() for x in array_split(np.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    return _split(ary, indices_or_sections, axis, strict=False)


def hsplit(ary, indices_or_sections):
    """Split horizontally (axis 1; axis 0 for 1-D arrays).

    >>> [x.shape for x in hsplit(np.ones((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    ary = asarray(ary)
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split vertically: along axis 0 (a 1-D array too, as in JAX; NumPy refuses it).

    >>> [x.shape for x in vsplit(np.ones((4, 2)), 2)]
    [(2, 2), (2, 2)]
    >>> [x.tolist() for x in vsplit(np.array([1, 2, 3, 4]), 2)]
    [[1, 2], [3, 4]]
    """
    ary = asarray(ary)
    if ary.ndim < 1:
        raise ValueError("vsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 0)


def unstack(x, /, *, axis: int = 0):
    """Split along ``axis`` into a tuple of arrays of one dimension less.

    >>> [v.tolist() for v in unstack(np.array([[1, 2], [3, 4]]))]
    [[1, 2], [3, 4]]
    """
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = normalize_axis(axis, x.ndim)
    if isinstance(x, ExtendedArray):  # typed PRNG keys: indexed as keys
        return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))
    return sk.unstack(x, axis)  # (JAX's unstack_p, its sharding rule JAX's refusal)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
