"""Sorting and cumulative reductions: sort (multi-operand, by keys), cumsum, cumprod, cummax, cummin.

Layer: primitives. Imports the funcgrad kernel (``ad.jvp_flat`` for the cumulative JVPs), numpy
and the sibling families ``structure``, ``elementwise`` and ``gather``.

Semantics follow ``jax.lax`` (and XLA, which lowers the same primitives):

- ``sort`` orders all its operands along ``dimension`` by the first ``num_keys`` of them,
  lexicographically. NaNs go last and ``-0.0`` equals ``0.0`` (NumPy's order, and the order JAX
  gives XLA's comparator). Its JVP sorts an iota along as an extra operand and gathers each tangent
  with the resulting permutation, so ties move tangents exactly as they move values.
- ``cumsum`` is linear; its transpose is the cumsum in the other direction.
- ``cumprod``/``cummax``/``cummin`` differentiate, as JAX does, through an associative scan built
  from primitives (``associative_scan`` below): the JVP is the JVP of that scan, exact with zeros
  (no division) and differentiable again to any order; ties in ``cummax``/``cummin`` split the
  tangent like ``max``/``min`` do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import JET_OF_SELECTION, aval_of, checked_impl, to_front, xla_zero_of_extremum
from funcgrad.primitives.gather import GatherDimensionNumbers, GatherScatterMode, gather_p
from funcgrad.primitives.structure import (
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    reshape,
    rev,
    slice_in_dim,
)

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, deflinear, jvp_flat
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# sort


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort: needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise TypeError(
            "sort: operands must have one shape, got " + ", ".join(o.str_short() for o in operands)
        )
    if not 0 <= dimension < len(shape):
        raise TypeError(f"sort: dimension {dimension} out of range for operands of shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise TypeError(
            f"sort: num_keys={num_keys} must be between 1 and the number of operands ({len(operands)})"
        )
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


def _sort_impl(*operands, dimension, is_stable, num_keys):
    operands = [np.asarray(o) for o in operands]
    # ml_dtypes' bfloat16 sorts NaN among the numbers: its keys sort as the float32 values they are.
    keys = [o.astype(np.float32) if o.dtype == _dt.bfloat16 else o for o in operands[:num_keys]]
    if num_keys == 1:
        perm = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        # lexsort's *last* key is the primary one.
        perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


def take_along_axis(x, indices, axis: int):
    """``x`` reordered along ``axis`` by ``indices`` (same shape as ``x``), as one gather whose other
    axes are batching dimensions; differentiable in ``x`` (its transpose is a scatter-add).

    >>> np.asarray(take_along_axis(np.array([[5, 6, 7]]), np.array([[2, 0, 1]]), 1)).tolist()
    [[7, 5, 6]]
    """
    shape = aval_of(x).shape
    axis = int(axis) % len(shape)
    if 0 in shape:
        return x  # nothing to reorder (and no valid gather window into an empty axis)
    others = tuple(d for d in range(len(shape)) if d != axis)
    dn = GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
        operand_batching_dims=others,
        start_indices_batching_dims=others,
    )
    return gather_p.bind(
        x,
        reshape(indices, (*shape, 1)),
        dimension_numbers=dn,
        slice_sizes=(1,) * len(shape),
        indices_are_sorted=False,
        unique_indices=True,
        mode=GatherScatterMode.PROMISE_IN_BOUNDS,
        fill_value=None,
    )


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = aval_of(primals[0]).shape
    index_dtype = np.int32 if shape[dimension] < np.iinfo(np.int32).max else np.int64
    # Sorting an iota along gives the permutation that moved each value; tangents follow it.
    *outs, perm = sort_p.bind(
        *primals,
        broadcasted_iota(index_dtype, shape, dimension),
        dimension=dimension,
        is_stable=is_stable,
        num_keys=num_keys,
    )
    out_tangents = [
        Zero.from_primal_value(o) if type(t) is Zero else take_along_axis(t, perm, dimension)
        for o, t in zip(outs, tangents)
    ]
    return outs, out_tangents


def _sort_batch(axis_size, vals, dims, *, dimension, **params):
    operands = [to_front(v, d, axis_size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*operands, dimension=dimension + 1, **params)
    return outs, [0] * len(outs)


sort_p = Primitive("sort", multiple_results=True)
sort_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
sort_p.def_impl(checked_impl(_sort_abstract_eval, _sort_impl))
sort_p.def_abstract_eval(_sort_abstract_eval)
sort_p.def_jvp(_sort_jvp)
sort_p.def_batch(_sort_batch)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along ``dimension`` (``lax.sort``). ``operand`` is one array, or a sequence of arrays of
    one shape that are all reordered by the lexicographic order of the first ``num_keys``; the result
    has the same structure (an array, or a tuple).

    >>> np.asarray(sort(np.array([3.0, 1.0, 2.0]))).tolist()
    [1.0, 2.0, 3.0]
    >>> keys, vals = sort((np.array([2, 1, 2]), np.array([0.0, 1.0, 2.0])))
    >>> np.asarray(vals).tolist()
    [1.0, 0.0, 2.0]
    """
    single = not isinstance(operand, tuple | list)
    operands = [operand] if single else list(operand)
    if not operands:
        raise TypeError("sort: needs at least one operand")
    ndim = aval_of(operands[0]).ndim
    if ndim == 0:
        raise TypeError("sort: operands must have at least one dimension")
    if not -ndim <= int(dimension) < ndim:
        raise TypeError(f"sort: dimension {dimension} out of range for rank-{ndim} operands")
    outs = sort_p.bind(
        *operands, dimension=int(dimension) % ndim, is_stable=bool(is_stable), num_keys=int(num_keys)
    )
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort ``keys`` along ``dimension`` and reorder ``values`` the same way (``lax.sort_key_val``).

    >>> [np.asarray(a).tolist() for a in sort_key_val(np.array([2, 0, 1]), np.array([7, 8, 9]))]
    [[0, 1, 2], [8, 9, 7]]
    """
    return sort((keys, values), dimension, is_stable, 1)


# ----------------------------------------------------------------------------------------------
# Associative scan from primitives (the differentiable definition of cumprod/cummax/cummin)


def _interleave(a, b, axis):
    """``a[0], b[0], a[1], b[1], ...`` along ``axis``; ``a`` may be one longer than ``b``."""
    a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
    extra = a_shape[axis] - b_shape[axis]
    head = slice_in_dim(a, 0, b_shape[axis], axis=axis) if extra else a

    def split(v, shape):
        return reshape(v, (*shape[:axis], shape[axis], 1, *shape[axis + 1 :]))

    pairs = concatenate([split(head, b_shape), split(b, b_shape)], axis + 1)
    merged = reshape(pairs, (*b_shape[:axis], 2 * b_shape[axis], *b_shape[axis + 1 :]))
    if extra:
        merged = concatenate([merged, slice_in_dim(a, a_shape[axis] - 1, a_shape[axis], axis=axis)], axis)
    return merged


def associative_scan(fn: Callable, x, axis: int = 0, reverse: bool = False):
    """Inclusive scan of ``x`` along ``axis`` with the associative ``fn(a, b)`` (elementwise), made
    of slices, concatenates and reshapes (the parallel prefix scan of ``lax.associative_scan``).
    ``x`` may be a list of arrays of one length along ``axis``; ``fn`` then maps two lists to one.

    >>> np.asarray(associative_scan(ew.add, np.arange(1.0, 6.0))).tolist()
    [1.0, 3.0, 6.0, 10.0, 15.0]
    """
    many = isinstance(x, list | tuple)
    xs = list(x) if many else [x]
    combine = fn if many else (lambda a, b: [fn(a[0], b[0])])
    shapes = [aval_of(v).shape for v in xs]
    ndim = len(shapes[0])
    if not -ndim <= axis < ndim:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for an array of rank {ndim}")
    # A non-negative axis: the slices and concatenates below take it as their primitives' parameter,
    # which batching shifts (a negative one under vmap named the wrong dimension).
    axis = axis % ndim
    if any(len(s) <= axis or s[axis] != shapes[0][axis] for s in shapes):
        raise ValueError(f"associative_scan: the elements differ in their length along axis {axis}: {shapes}")
    if reverse:
        xs = [rev(v, (axis,)) for v in xs]

    def cut(vs, start, stop, stride=1):
        return [slice_in_dim(v, start, stop, stride, axis) for v in vs]

    def scan(elems):
        n = aval_of(elems[0]).shape[axis]
        if n < 2:
            return elems
        # Combine adjacent pairs, scan the half-size result, then fill in the even positions.
        odd = scan(list(combine(cut(elems, 0, n - 1, 2), cut(elems, 1, None, 2))))
        firsts = cut(odd, 0, -1) if n % 2 == 0 else odd
        even = list(combine(firsts, cut(elems, 2, None, 2)))
        even = [concatenate([head, e], axis) for head, e in zip(cut(elems, 0, 1), even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(xs)
    out = [rev(v, (axis,)) for v in out] if reverse else out
    return out if many else out[0]


# ----------------------------------------------------------------------------------------------
# Cumulative reductions


def _cumulative_abstract_eval(name, numeric):
    def abstract_eval(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for {x.str_short()}")
        if numeric and x.dtype == np.bool_:
            raise TypeError(
                f"{name} does not accept boolean operands ({x.str_short()}); convert to an integer first"
            )
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return abstract_eval


def _cumulative_impl(ufunc):
    def scan(op, x, axis, reverse, dtype):
        if reverse:
            return np.flip(op.accumulate(np.flip(x, axis), axis=axis, dtype=dtype), axis)
        return op.accumulate(x, axis=axis, dtype=dtype)

    def impl(x, *, axis, reverse):
        x = np.asarray(x)
        out = scan(ufunc, x, axis, reverse, x.dtype)
        if ufunc is np.add and x.dtype.kind in "fc" and x.shape[axis] > 1:
            # (XLA's scan starts from +0: never -0; a window of one element is the element)
            return out + np.zeros((), x.dtype)
        if ufunc in (np.maximum, np.minimum):  # NOTE: [XLA's signed zeros in max and min]
            seen = lambda z: scan(np.logical_or, z, axis, reverse, bool)  # noqa: E731
            return xla_zero_of_extremum(out, x, seen, for_max=ufunc is np.maximum)
        return out

    return impl


def _cumulative_batch(primitive):
    def rule(axis_size, vals, dims, *, axis, reverse):
        (x,), (d,) = vals, dims
        return primitive.bind(x, axis=axis + (axis >= d), reverse=reverse), d

    return rule


def _scan_jvp(primitive, combine):
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero:
            return out, Zero.from_primal_value(out)
        _, (t_out,) = jvp_flat(lambda v: [associative_scan(combine, v, axis, reverse)], [x], [t])
        return out, t_out

    return jvp


def _declare(name, ufunc, numeric):
    p = Primitive(name)
    abstract_eval = _cumulative_abstract_eval(name, numeric)
    p.def_impl(checked_impl(abstract_eval, _cumulative_impl(ufunc)))
    p.def_abstract_eval(abstract_eval)
    p.def_batch(_cumulative_batch(p))
    return p


cumsum_p = _declare("cumsum", np.add, numeric=True)
cumsum_p.def_traits(may_produce_nan=True)
deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum_p.bind(ct, axis=axis, reverse=not reverse)])
cumprod_p = _declare("cumprod", np.multiply, numeric=True)
cumprod_p.def_traits(taylor_from_jvp="its JVP rule is a cumulative sum of quotients", may_produce_nan=True)
cumprod_p.def_jvp(_scan_jvp(cumprod_p, ew.mul))
cummax_p = _declare("cummax", np.maximum, numeric=False)
cummax_p.def_traits(taylor_from_jvp=JET_OF_SELECTION, may_produce_nan=True)
cummax_p.def_jvp(_scan_jvp(cummax_p, lambda a, b: ew.max_p.bind(a, b)))
cummin_p = _declare("cummin", np.minimum, numeric=False)
cummin_p.def_traits(taylor_from_jvp=JET_OF_SELECTION, may_produce_nan=True)
cummin_p.def_jvp(_scan_jvp(cummin_p, lambda a, b: ew.min_p.bind(a, b)))
# (XLA's reduce_window adds in its own order and precision; NumPy's accumulate rounds each partial
# result of a half type in sequence, several ulps apart after a few dozen terms)
cumsum_p.def_traits(half_floats_compiled=True)
cumprod_p.def_traits(half_floats_compiled=True)


def _cumulative(primitive, x, axis, reverse):
    ndim = aval_of(x).ndim
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{primitive.name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return primitive.bind(x, axis=int(axis) % ndim, reverse=bool(reverse))


def cumsum(x, axis: int = 0, reverse: bool = False):
    """Inclusive cumulative sum along ``axis`` (from the end if ``reverse``), as ``lax.cumsum``.

    >>> np.asarray(cumsum(np.array([1, 2, 3]), reverse=True)).tolist()
    [6, 5, 3]
    """
    return _cumulative(cumsum_p, x, axis, reverse)


def cumprod(x, axis: int = 0, reverse: bool = False):
    """Inclusive cumulative product along ``axis`` (``lax.cumprod``); its derivative is exact with
    zeros.

    >>> np.asarray(cumprod(np.array([1.0, 2.0, 3.0]))).tolist()
    [1.0, 2.0, 6.0]
    """
    return _cumulative(cumprod_p, x, axis, reverse)


def cummax(x, axis: int = 0, reverse: bool = False):
    """Running maximum along ``axis`` (``lax.cummax``); NaNs propagate.

    >>> np.asarray(cummax(np.array([1, 3, 2]))).tolist()
    [1, 3, 3]
    """
    return _cumulative(cummax_p, x, axis, reverse)


def cummin(x, axis: int = 0, reverse: bool = False):
    """Running minimum along ``axis`` (``lax.cummin``); NaNs propagate.

    >>> np.asarray(cummin(np.array([3, 1, 2]))).tolist()
    [3, 1, 1]
    """
    return _cumulative(cummin_p, x, axis, reverse)


def exclusive_cumprod(x, axis: int, reverse: bool = False):
    """``prod(x[:i])`` at position ``i`` (``prod(x[i+1:])`` if ``reverse``); 1 at the first position.

    >>> np.asarray(exclusive_cumprod(np.array([2.0, 3.0, 4.0]), 0)).tolist()
    [1.0, 2.0, 6.0]
    """
    shape = aval_of(x).shape
    n = shape[axis]
    if n == 0:
        return x
    one_shape = (*shape[:axis], 1, *shape[axis + 1 :])
    ones = broadcast_in_dim(np.ones((), aval_of(x).dtype), one_shape, ())
    if reverse:
        shifted = concatenate([slice_in_dim(x, 1, n, axis=axis), ones], axis)
    else:
        shifted = concatenate([ones, slice_in_dim(x, 0, max(n - 1, 0), axis=axis)], axis)
    return cumprod(shifted, axis, reverse)


__all__ = [
    "associative_scan",
    "cummax",
    "cummax_p",
    "cummin",
    "cummin_p",
    "cumprod",
    "cumprod_p",
    "cumsum",
    "cumsum_p",
    "exclusive_cumprod",
    "sort",
    "sort_key_val",
    "sort_p",
    "take_along_axis",
]
