"""Repetition and rearrangement of funcgrad.numpy: tile, repeat, flip, fliplr, flipud, roll, rot90.

Layer: surface. Imports ``funcgrad.numpy._core``, ``funcgrad.numpy.manipulation`` (reshape, ravel,
concatenate), ``funcgrad.numpy.indexing`` and the primitive catalog (structure, indexing,
reductions, elementwise families).

As ``manipulation``'s, every function here is linear in its array arguments and lowers to the
structural primitives (broadcast_in_dim, reshape, rev, slice, concatenate, gather for a traced
``repeats`` or ``shift``); sizes and axes are static Python ints, NumPy's exceptions are raised
for bad ones.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

# out_sharding= (JAX 0.10's explicit sharding)
from funcgrad._placement import switched_ops, takes_out_sharding
from funcgrad._shardings import PartitionSpec, get_abstract_mesh
from funcgrad.kernel import core
from funcgrad.kernel.array import Array
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy._core import (
    as_sequence,
    asarray,
    aval,
    broadcast_to,
    concrete_int,
    concrete_or_error,
    constant,
    normalize_axes,
    normalize_axis,
    select,
)
from funcgrad.numpy._dtypes import ExtendedArray
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate, ravel, reshape
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import reductions as red
from funcgrad.primitives import sorting as srt
from funcgrad.primitives import structure as st
from funcgrad.primitives._sharding_rules import check_whole, spec_of

__all__ = ["flip", "fliplr", "flipud", "repeat", "roll", "rot90", "tile"]


def tile(A, reps):
    """Repeat ``A`` ``reps`` times along each axis.

    >>> tile(np.array([1, 2]), 2).tolist()
    [1, 2, 1, 2]
    >>> tile(np.array([1, 2]), (2, 1)).tolist()
    [[1, 2], [1, 2]]
    """
    if isinstance(A, ExtendedArray):
        return A._numpy_function(tile, (A, reps), {})
    A = asarray(A)
    reps = tuple(concrete_int(r, "tile's reps", TypeError) for r in as_sequence(reps))
    ndim = builtins.max(A.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    A = reshape(A, (1,) * (ndim - A.ndim) + A.shape)
    check_whole(
        aval(A),
        [d for d, r in enumerate(reps) if r != 1],
        "Operand cannot be sharded on dimension {dim} when the tiling is non-trivial. Got input type: "
        "{type} with reps: " + str(reps),
    )
    # Broadcast into interleaved (rep_i, size_i) axes, then merge each pair.
    interleaved = tuple(v for r, s in zip(reps, A.shape) for v in (r, s))
    out = st.broadcast_in_dim(A, interleaved, tuple(range(1, 2 * ndim, 2)))
    return st.reshape(out, tuple(r * s for r, s in zip(reps, A.shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
    """Repeat each element ``repeats`` times (an int, or one count per element along ``axis``).

    >>> repeat(np.array([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> repeat(np.array([[1, 2]]), np.array([1, 2]), axis=1).tolist()
    [[1, 2, 2]]

    Under ``jit`` with traced ``repeats``, pass a static ``total_repeat_length`` (the result's length:
    extra counts are cut, a shortfall repeats the last element). On explicit mesh axes, as JAX,
    the repetition is computed in ``auto_axes`` and typed ``out_sharding`` (by default ``a``'s
    type, whose repeated axis must then be whole: else JAX's ValueError asking for one).
    """
    if isinstance(a, ExtendedArray):
        return a._numpy_function(repeat, (a, repeats, axis), {"total_repeat_length": total_repeat_length})
    if not get_abstract_mesh().explicit_axes:  # (out_sharding= as every function takes it)
        return _placed_repeat(a, repeats, axis, total_repeat_length, out_sharding=out_sharding)
    a = asarray(a)
    if axis is None:  # (JAX ravels first: the flat result is typed)
        a, axis = ravel(a), 0
    if out_sharding is None:
        t = aval(a)._sharding
        if a.ndim and spec_of(aval(a))[normalize_axis(axis, a.ndim)]:
            raise ValueError("Please pass sharding to `jnp.repeat` via `out_sharding` parameter.")
        out_sharding = PartitionSpec() if t is None else t
    auto_axes = switched_ops["auto_axes"]  # (registered by funcgrad.sharding, above numpy)

    # (concrete counts are closed over, as JAX's partial: traced ones are an argument)
    if isinstance(repeats, core.Tracer):
        return auto_axes(lambda r, x: _repeat(x, r, axis, total_repeat_length), out_sharding=out_sharding)(
            repeats, a
        )
    return auto_axes(lambda x: _repeat(x, repeats, axis, total_repeat_length), out_sharding=out_sharding)(a)


@takes_out_sharding
def _placed_repeat(a, repeats, axis, total_repeat_length):
    return _repeat(a, repeats, axis, total_repeat_length)


def _repeat(a, repeats, axis, total_repeat_length):
    if total_repeat_length is not None and getattr(repeats, "traced", False):  # (JAX's words)
        raise ValueError(
            "jnp.repeat with a non-constant `repeats` is supported only when `total_repeat_length` is "
            f"None. (repeats={repeats.expr} total_repeat_length={total_repeat_length})"
        )
    a = asarray(a)
    if axis is None or a.ndim == 0:  # (JAX's repeat of a 0-d array is full([total], a): any axis)
        axis = 0 if axis is None else operator.index(axis) * 0
        a = ravel(a)
    axis = normalize_axis(axis, a.ndim)
    if total_repeat_length is not None:
        if a.shape[axis] == 0 and int(total_repeat_length) != 0:
            return a  # (JAX's: an empty axis has no element to repeat, whatever the length asked)
        # JAX's semantics: extra counts are cut, a shortfall repeats the last element.
        return _repeat_traced(a, repeats, axis, int(total_repeat_length))
    if isinstance(repeats, core.Tracer):
        if total_repeat_length is None:
            raise core.ConcretizationTypeError(
                "repeat with traced repeats needs a static total_repeat_length= (the result's length)"
            )
        return _repeat_traced(a, repeats, axis, int(total_repeat_length))
    counts = concrete_or_error(repeats, "repeat's repeats (or give total_repeat_length)")
    if counts.ndim == 0:
        n = int(counts)
        if n < 0:
            raise ValueError("repeats may not contain negative values")
        shape = a.shape
        expanded = st.broadcast_in_dim(
            a,
            (*shape[: axis + 1], n, *shape[axis + 1 :]),
            tuple(d if d <= axis else d + 1 for d in range(a.ndim)),
        )
        out = st.reshape(expanded, (*shape[:axis], shape[axis] * n, *shape[axis + 1 :]))
    else:
        counts = np.broadcast_to(counts.astype(np.int64), (a.shape[axis],))
        if np.any(counts < 0):
            raise ValueError("repeats may not contain negative values")
        index = np.repeat(np.arange(a.shape[axis]), counts)
        out = (
            getitem(a, (slice(None),) * axis + (index,)) if index.size else st.slice_in_dim(a, 0, 0, 1, axis)
        )
    return out


def _repeat_traced(a, repeats, axis, total):
    """``repeat`` with traced counts: output position p reads element ``#{k : cumsum[k] <= p}``."""
    n = a.shape[axis]
    counts = ew.convert_element_type(broadcast_to(asarray(repeats), (n,)), np.dtype(np.int64))
    ends = srt.cumsum(counts, 0)
    positions = constant(np.arange(total).reshape(total, 1), np.int64)
    passed = ew.le_p.bind(
        broadcast_to(st.reshape(ends, (1, n)), (total, n)), broadcast_to(positions, (total, n))
    )
    source = red.reduce_sum(ew.convert_element_type(passed, np.dtype(np.int64)), (1,))
    source = ew.min_p.bind(source, constant(max(n - 1, 0), np.int64))
    return getitem(a, (slice(None),) * axis + (source,))


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default).

    >>> flip(np.array([[1, 2], [3, 4]]), 1).tolist()
    [[2, 1], [4, 3]]
    """
    if isinstance(m, ExtendedArray):
        return m._numpy_function(flip, (m, axis), {})
    m = asarray(m)
    axes = normalize_axes(axis, m.ndim)
    # (no axes, a 0-d array: still JAX's lax.rev, which makes a value of the mode's type of a raw
    # float64 primal under jvp in 32-bit mode, as jax's; fuzzer find)
    return st.rev(m, axes) if axes else st.rev_p.bind(m, dimensions=())


def fliplr(m):
    """Reverse along axis 1.

    >>> fliplr(np.array([[1, 2]])).tolist()
    [[2, 1]]
    """
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m):
    """Reverse along axis 0.

    >>> flipud(np.array([1, 2])).tolist()
    [2, 1]
    """
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Roll elements along ``axis`` (of the flattened array if ``axis`` is None).

    >>> roll(np.arange(5), 2).tolist()
    [3, 4, 0, 1, 2]
    """
    a = asarray(a)
    if isinstance(a, ExtendedArray):  # typed PRNG keys (ExtendedArray)
        return a._numpy_function(roll, (a, shift, axis), {})
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    if isinstance(shift, Array | core.Tracer) and shift.ndim == 1:
        shift = [shift[i] for i in range(shift.shape[0])]  # (an array of shifts, one per axis)
    if isinstance(shift, core.Tracer) or (
        isinstance(shift, list | tuple) and any(isinstance(v, core.Tracer) for v in shift)
    ):
        return _roll_traced(a, shift, axis)
    shifts = [concrete_int(s, "roll's shift") for s in as_sequence(shift)]
    for s, ax in _paired(shifts, axis, a.ndim):
        n = a.shape[ax]
        if n == 0:
            continue
        # JAX's _roll_static, a shift of 0 included, its slices never elided (their transposes
        # pad with a strong zero, so a weak value's gradient through roll is strong, as in jax)
        i = (-s) % n
        a = concatenate([_slice_along(a, i, n, ax), _slice_along(a, 0, i, ax)], ax)
    return a


def _paired(shifts, axis, ndim: int) -> list:
    """``roll``'s (shift, axis) pairs: one of each, or one shift for every axis, or every shift
    along one axis (NumPy's rule and words)."""
    shifts = list(shifts)
    axes = [normalize_axis(ax, ndim) for ax in as_sequence(axis)]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences of the same length")
    return list(zip(shifts, axes))


def _slice_along(a, start, limit, axis):
    starts, limits = [0] * a.ndim, list(a.shape)
    starts[axis], limits[axis] = start, limit
    return st.slice_p.bind(a, start_indices=tuple(starts), limit_indices=tuple(limits), strides=None)


def _roll_traced(a, shift, axis):
    """``roll`` by traced shifts: a window of the array concatenated with itself."""
    for s, ax in _paired(as_sequence(shift), axis, a.ndim):
        n = a.shape[ax]
        if n == 0:
            continue
        s = ew.convert_element_type(asarray(s), np.dtype(np.int64))
        n_ = constant(n, np.int64)
        r = ew.rem_p.bind(s, n_)
        r = select(ew.lt_p.bind(r, constant(0, np.int64)), ew.add_p.bind(r, n_), r)
        start = ew.rem_p.bind(ew.sub_p.bind(n_, r), n_)
        doubled = st.concatenate([a, a], ax)
        a = ix.dynamic_slice_in_dim(doubled, start, n, ax)
    return a


def rot90(m, k: int = 1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (counter-clockwise).

    >>> rot90(np.array([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """
    m = asarray(m)
    if isinstance(m, ExtendedArray):  # typed PRNG keys (ExtendedArray)
        return m._numpy_function(rot90, (m, k, axes), {})
    if m.ndim < 2:  # (JAX's words)
        raise ValueError(
            "rot90 requires its first argument to have ndim at least two, but got first argument of "
            f"shape {m.shape}, which has ndim {m.ndim}"
        )
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    ax0, ax1 = normalize_axis(axes[0], m.ndim), normalize_axis(axes[1], m.ndim)
    if ax0 == ax1:
        raise ValueError("Axes must be different.")
    k = concrete_int(k, "rot90's k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(m.ndim))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    if k == 1:
        return st.transpose(flip(m, ax1), tuple(perm))
    return flip(st.transpose(m, tuple(perm)), ax1)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
