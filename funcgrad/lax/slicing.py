"""``funcgrad.lax`` slicing, indexing, padding, sorting and scans: ``jax.lax``'s names and signatures
over the catalog's structural, indexing and sorting primitives.

Layer: surface. Imports the primitive catalog, ``funcgrad.numpy._core`` (conversion helpers) and
``funcgrad.lax.ops``.

Static slices (``slice``, ``slice_in_dim``) take Python ints; ``dynamic_slice`` takes traced start
indices (clamped so the window fits, negative ones counting from the end) with static sizes.
``gather``/``scatter`` take XLA dimension numbers and a ``mode`` (see NOTE: [gather and scatter
modes] in ``primitives/gather.py``).
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ad import jvp_flat
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.lax import windowed
from funcgrad.numpy._core import asarray, aval, constant, constant_like, convert, select
from funcgrad.numpy._dtypes import extended_in, keys_by_word
from funcgrad.numpy.index_update import _apply_counted
from funcgrad.numpy.sorting import top_k_last
from funcgrad.numpy.transcendental import logaddexp
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import sorting as srt
from funcgrad.primitives import stacking as sk
from funcgrad.primitives import structure as st
from funcgrad.primitives._sharding_rules import cut_spec
from funcgrad.primitives.gather import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "associative_scan",
    "concatenate",
    "cumlogsumexp",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "gather",
    "index_in_dim",
    "pad",
    "rev",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "slice",
    "slice_in_dim",
    "sort",
    "split",
    "scatter_apply",
    "sort_key_val",
    "top_k",
]


@functools.partial(keys_by_word, key_reuse="slice")
def slice(operand, start_indices, limit_indices, strides=None):
    """``operand[start:limit:stride]`` in every dimension, with static bounds.

    >>> slice(np.arange(10), (1,), (8,), (3,)).tolist()
    [1, 4, 7]
    """
    return st.slice_(asarray(operand), start_indices, limit_indices, strides)


@functools.partial(keys_by_word, key_reuse="slice")
def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """``slice`` along one ``axis`` (``None`` bounds mean the whole axis; negative ones count from
    the end).

    >>> slice_in_dim(np.arange(6).reshape(2, 3), 1, 3, axis=1).tolist()
    [[1, 2], [4, 5]]
    """
    operand = asarray(operand)
    ints = all(type(i) is int or i is None for i in (start_index, limit_index))
    if ints and type(axis) is int and -operand.ndim <= axis < operand.ndim:
        # (JAX's: None is the axis's bound, a negative index counts from the end, and then no
        # clamping: bounds outside the axis are lax.slice's TypeError, not Python's clipped slice)
        n = operand.shape[axis]
        start = 0 if start_index is None else start_index + n if start_index < 0 else start_index
        limit = n if limit_index is None else limit_index + n if limit_index < 0 else limit_index
        if not 0 <= start <= limit <= n:
            starts, limits = [0] * operand.ndim, list(operand.shape)
            starts[axis], limits[axis] = start, limit
            return slice(operand, starts, limits)
    return st.slice_in_dim(operand, start_index, limit_index, stride, axis)


@functools.partial(keys_by_word, key_reuse="slice")
def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """Element ``index`` along ``axis`` (static; negative counts from the end).

    >>> index_in_dim(np.arange(6).reshape(2, 3), -1, axis=1, keepdims=False).tolist()
    [2, 5]
    """
    return st.index_in_dim(asarray(operand), index, axis, keepdims)


def _start_indices(start_indices, refusal: str):
    """The start indices as a list; a sequence of scalars must share one integer dtype (a Python
    int the default one), else a TypeError of ``refusal`` followed by their dtypes (the caller's
    words: JAX's texts for its two functions differ)."""
    if hasattr(start_indices, "ndim") and start_indices.ndim == 1:
        return [start_indices[i] for i in range(start_indices.shape[0])]
    out = list(start_indices)
    if out:  # (JAX's check)
        dtypes = [
            np.dtype(_dt.python_scalar_dtype(i)) if type(i) in _dt.python_scalar_types else aval(i).dtype
            for i in out
        ]
        if any(d != dtypes[0] or d.kind not in "iu" for d in dtypes):
            raise TypeError(f"{refusal} " + ", ".join(d.name for d in dtypes))
    return out


@keys_by_word
def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices: bool = True):
    """The window of static ``slice_sizes`` at (possibly traced) ``start_indices``, clamped to fit.

    >>> dynamic_slice(np.arange(10), (8,), (3,)).tolist()
    [7, 8, 9]
    """
    return ix.dynamic_slice(
        asarray(operand),
        _start_indices(
            start_indices, "index arguments to dynamic_slice must be integers of the same type, got:"
        ),
        tuple(slice_sizes),
        allow_negative_indices=allow_negative_indices,
    )


@keys_by_word
def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """``dynamic_slice`` along one ``axis``.

    >>> dynamic_slice_in_dim(np.arange(6).reshape(2, 3), 1, 2, axis=1).tolist()
    [[1, 2], [4, 5]]
    """
    return ix.dynamic_slice_in_dim(asarray(operand), start_index, slice_size, axis)


@keys_by_word
def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """Element ``index`` (possibly traced) along ``axis``.

    >>> dynamic_index_in_dim(np.arange(6).reshape(2, 3), 1, axis=1, keepdims=False).tolist()
    [1, 4]
    """
    return ix.dynamic_index_in_dim(asarray(operand), index, axis, keepdims)


@functools.partial(keys_by_word, nkeys=2, key_reuse="update")
def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices: bool = True):
    """``operand`` with the window at ``start_indices`` (clamped to fit) replaced by ``update``.

    >>> dynamic_update_slice(np.zeros(5), np.ones(2), (4,)).tolist()
    [0.0, 0.0, 0.0, 1.0, 1.0]
    """
    return ix.dynamic_update_slice(
        asarray(operand),
        asarray(update),
        _start_indices(
            start_indices, "index arguments to dynamic_update_slice must be integers of the same type, got"
        ),
        allow_negative_indices=allow_negative_indices,
    )


@functools.partial(keys_by_word, nkeys=2, key_reuse="update")
def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """``dynamic_update_slice`` along one ``axis``.

    >>> dynamic_update_slice_in_dim(np.zeros((2, 3)), np.ones((2, 1)), 1, axis=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    """
    return ix.dynamic_update_slice_in_dim(asarray(operand), asarray(update), start_index, axis)


@functools.partial(keys_by_word, nkeys=2, key_reuse="update")
def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """``operand`` with element ``index`` along ``axis`` replaced by ``update``.

    >>> dynamic_update_index_in_dim(np.zeros((2, 2)), np.ones(2), 0, axis=0).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    return ix.dynamic_update_index_in_dim(asarray(operand), asarray(update), index, axis)


def gather(
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
    """XLA's Gather: windows of ``slice_sizes`` starting at the index vectors in the last axis of
    ``start_indices`` (``mode=None`` promises in-bounds indices, which are clamped).

    >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> gather(np.arange(6).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2)).tolist()
    [[4, 5], [0, 1]]
    """
    return ix.gather(
        asarray(operand),
        asarray(start_indices),
        dimension_numbers,
        slice_sizes,
        mode=mode,
        fill_value=fill_value,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
    )


def _scatter_wrapper(binder, name, example):
    def f(
        operand,
        scatter_indices,
        updates,
        dimension_numbers,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
    ):
        return binder(
            asarray(operand),
            asarray(scatter_indices),
            asarray(updates),
            dimension_numbers,
            mode,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
        )

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"XLA's Scatter combining with ``{name}`` (``lax.{name}``); out-of-bounds updates are dropped "
        "unless ``mode='clip'``.\n\n"
        ">>> dn = ScatterDimensionNumbers((), (0,), (0,))\n"
        f">>> {name}(np.ones(3), np.array([[1], [1]]), np.array([2.0, 3.0]), dn).tolist()\n{example}\n"
    )
    return f


scatter = _scatter_wrapper(ix.scatter, "scatter", "[1.0, 3.0, 1.0]")
scatter_add = _scatter_wrapper(ix.scatter_add, "scatter_add", "[1.0, 6.0, 1.0]")
scatter_mul = _scatter_wrapper(ix.scatter_mul, "scatter_mul", "[1.0, 6.0, 1.0]")
scatter_min = _scatter_wrapper(ix.scatter_min, "scatter_min", "[1.0, 1.0, 1.0]")
scatter_max = _scatter_wrapper(ix.scatter_max, "scatter_max", "[1.0, 3.0, 1.0]")


def split(operand, sizes, axis: int = 0):
    """Split ``operand`` along ``axis`` into pieces of the given ``sizes`` (summing to the axis size).

    >>> [x.tolist() for x in split(np.arange(5), (2, 3))]
    [[0, 1], [2, 3, 4]]
    """
    operand = asarray(operand)
    axis = int(axis)  # (JAX's checks and words)
    if not -operand.ndim <= axis < operand.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {operand.ndim}")
    axis %= operand.ndim
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
    if sum(sizes) != operand.shape[axis]:
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
            f"{list(operand.shape)}"
        )
    for n in sizes:  # (JAX's rule: each piece must still split evenly over the dimension's axes)
        cut_spec(aval(operand), (*operand.shape[:axis], n, *operand.shape[axis + 1 :]), "split")
    if extended_in([operand]):  # (typed keys: sliced as keys, their data has more axes)
        starts = np.cumsum([0, *sizes])
        return [st.slice_in_dim(operand, int(a), int(b), 1, axis) for a, b in zip(starts[:-1], starts[1:])]
    return sk.split(operand, sizes, axis)  # (one split equation, as JAX's: its transpose keeps weak types)


def scatter_apply(
    operand,
    scatter_indices,
    func,
    dimension_numbers,
    *,
    update_shape=(),
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """``operand`` with ``func`` applied to the elements the scatter windows select, as many times
    as they are selected (XLA's scatter applies its combiner once per update, as ``ufunc.at``).

    >>> dn = ScatterDimensionNumbers((), (0,), (0,))
    >>> scatter_apply(np.ones(3), np.array([[0], [2], [2]]), lambda v: v * 5, dn, update_shape=(3,)).tolist()
    [5.0, 1.0, 25.0]
    """
    operand = asarray(operand)
    indices = asarray(scatter_indices)
    # Count the selections of each position with a scatter-add of ones, then apply func that often.
    # update_shape is the updates' whole shape (JAX's); the window's alone is taken too.
    update_shape = tuple(update_shape)
    if len(update_shape) != indices.ndim - 1 + len(dimension_numbers.update_window_dims):
        update_shape = indices.shape[:-1] + update_shape
    ones = st.broadcast_in_dim(constant(1, np.int32), update_shape, ())
    counts = ix.scatter_add(
        constant(0, np.int32, operand.shape),
        indices,
        ones,
        dimension_numbers,
        mode,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
    )
    return _apply_counted(operand, counts, func)


def pad(operand, padding_value, padding_config):
    """Pad with the scalar ``padding_value``; ``padding_config`` has one ``(low, high, interior)``
    per dimension (negative low/high crop).

    >>> pad(np.array([1.0, 2.0]), 0.0, [(1, 2, 1)]).tolist()
    [0.0, 1.0, 0.0, 2.0, 0.0, 0.0]
    """
    operand = asarray(operand)
    value = padding_value if type(padding_value) in (int, float, bool) else asarray(padding_value)
    # (a Python scalar is bound at its kind's default dtype, weak: JAX's dtype rule then compares
    # dtypes, so lax.pad(uint8 array, 0, ...) or a float32 array padded with 0.0 in 64-bit mode is
    # JAX's TypeError -- its shape rule's ValueErrors come first)
    vdtype = value.dtype if hasattr(value, "dtype") else _dt.python_scalar_dtype(value)
    _check_pad(operand, value, padding_config)
    if vdtype != operand.dtype:
        raise TypeError(
            f"pad operand and padding_value must be same dtype: got {operand.dtype} and {vdtype}."
        )
    return st.pad(operand, value, padding_config)


def _check_pad(operand, value, padding_config):
    """JAX's checks of lax.pad's arguments, in its order, words and type (ValueError)."""
    if np.shape(value) != ():
        raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)={np.shape(value)}")
    config = tuple(tuple(int(v) for v in p) for p in padding_config)
    if len(config) != operand.ndim:
        raise ValueError(
            "length of padding_config must equal the number of axes of operand, got padding_config "
            f"{config} for operand shape {operand.shape}"
        )
    if any(i < 0 for _, _, i in config):
        raise ValueError(
            f"interior padding in padding_config must be nonnegative, got padding_config {config}"
        )
    out = tuple(lo + hi + n + max(0, n - 1) * i for n, (lo, hi, i) in zip(operand.shape, config))
    if any(d < 0 for d in out):
        raise ValueError(
            f"Dimension size after padding is not at least 0, got result shape {out}, for padding_config "
            f"{config} and operand shape {operand.shape}"
        )


def concatenate(operands, dimension: int):
    """Join operands of one dtype along ``dimension``.

    >>> concatenate([np.array([1, 2]), np.array([3])], 0).tolist()
    [1, 2, 3]
    """
    keys = extended_in(list(operands))
    if keys is not None:  # typed PRNG keys: joined word by word, with keys only (JAX's)
        return keys._numpy_function(concatenate, (list(operands), dimension), {})
    operands = [asarray(x) for x in operands]
    if len(operands) == 1:
        return operands[0]
    return st.concatenate(operands, dimension)


@keys_by_word
def rev(operand, dimensions):
    """Reverse along each of ``dimensions``.

    >>> rev(np.array([[1, 2], [3, 4]]), (1,)).tolist()
    [[2, 1], [4, 3]]
    """
    operand = asarray(operand)
    return st.rev(operand, _rev_dimensions(operand, dimensions))


def _rev_dimensions(operand, dimensions):
    """JAX's checks of ``rev``'s dimensions (its shape rule: TypeErrors, the dimensions not
    normalised -- a negative one is refused).

    >>> _rev_dimensions(np.ones((2, 3)), [1])
    (1,)
    """
    dimensions = tuple(dimensions)  # (JAX's bind takes the tuple: an int is not iterable)
    try:
        dims = tuple(operator.index(d) for d in dimensions)
    except TypeError as err:
        kinds = tuple(map(type, dimensions))
        raise TypeError(f"rev dimensions must have every element be an integer type, got {kinds}.") from err
    if not all(d >= 0 for d in dims):
        raise TypeError(f"rev dimensions must have every element be nonnegative, got {dimensions}.")
    if len(set(dims)) != len(dims):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if dims and not max(dims) < operand.ndim:
        raise TypeError(
            f"rev dimensions must all be less than operand ndim, got dimensions {dimensions} for "
            f"operand ndim {operand.ndim}."
        )
    return dims


# ----------------------------------------------------------------------------------------------
# Sorting and scans


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along ``dimension`` (NaNs last); a sequence of operands is reordered by the
    lexicographic order of its first ``num_keys``.

    >>> sort(np.array([3.0, 1.0, 2.0])).tolist()
    [1.0, 2.0, 3.0]
    """
    operands = (
        tuple(asarray(x) for x in operand) if isinstance(operand, tuple | list) else (asarray(operand),)
    )
    # (JAX's checks, in its order and types: the operands and num_keys, then the dimension)
    if isinstance(operand, tuple | list):
        if not operands:
            raise TypeError("Sort requires at least one operand")
        if not 1 <= num_keys <= len(operands):
            raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operands)}")
    elif num_keys != 1:
        raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
    ndim = operands[0].ndim if operands else 0
    if not -max(ndim, 1) <= int(dimension) < max(ndim, 1):  # (JAX's ValueError)
        raise ValueError(f"axis {int(dimension)} is out of bounds for array of dimension {ndim}")
    if isinstance(operand, tuple | list):
        return srt.sort(operands, dimension, is_stable, num_keys)
    return srt.sort(operands[0], dimension, is_stable, num_keys)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort ``keys`` along ``dimension`` and reorder ``values`` the same way.

    >>> [x.tolist() for x in sort_key_val(np.array([2, 1]), np.array([10.0, 20.0]))]
    [[1, 2], [20.0, 10.0]]
    """
    return srt.sort_key_val(asarray(keys), asarray(values), dimension, is_stable)


def top_k(operand, k: int, *, axis: int = -1):
    """The ``k`` largest entries along ``axis`` (the last by default) and their indices (ties:
    lower index first).

    >>> [x.tolist() for x in top_k(np.array([1.0, 3.0, 2.0, 3.0]), 2)]
    [[3.0, 3.0], [1, 3]]
    >>> [x.tolist() for x in top_k(np.array([[1.0, 4.0], [3.0, 2.0]]), 1, axis=0)]
    [[[3.0, 4.0]], [[1, 0]]]
    """
    operand = asarray(operand)
    if _dt.kind(operand.dtype) == "c":  # (JAX's type and words: its shape rule's first check)
        raise ValueError("top_k is not compatible with complex inputs.")
    ax = int(axis)
    if not -operand.ndim <= ax < operand.ndim:  # (JAX's words first; a scalar has no axis)
        raise ValueError(
            f"axis {axis} is out of bounds for array of dimension {operand.ndim} (top_k: an operand of "
            f"rank {operand.ndim})"
        )
    ax %= operand.ndim
    int32_max = np.iinfo(np.int32).max
    if operand.shape[ax] > int32_max + 1:  # (JAX's words; the indices could not be int32)
        raise ValueError(
            "top_k returns int32 indices, which will overflow for array dimensions larger than the maximum "
            f"int32 ({int32_max}). Got operand.shape={tuple(operand.shape)}"
        )
    k = int(k)
    if k < 0:  # (JAX's words)
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > operand.shape[ax]:
        raise ValueError(
            "k argument to top_k must be no larger than size along axis; got "
            f"k={k} with shape={list(operand.shape)} and axis={ax}"
        )
    if ax != operand.ndim - 1:  # along another axis: that axis moved last and back
        perm = tuple(i for i in range(operand.ndim) if i != ax) + (ax,)
        back = tuple(int(i) for i in np.argsort(perm))
        values, idx = top_k(st.transpose(operand, perm), k)
        return [st.transpose(values, back), st.transpose(idx, back)]
    return top_k_last(operand, k)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Inclusive cumulative sum along ``axis`` (from the end if ``reverse``).

    >>> cumsum(np.array([1, 2, 3])).tolist()
    [1, 3, 6]
    """
    operand = asarray(operand)
    return srt.cumsum(operand, _cumulative_axis("cumsum", operand, axis), reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Inclusive cumulative product along ``axis``.

    >>> cumprod(np.array([1.0, 2.0, 3.0]), reverse=True).tolist()
    [6.0, 6.0, 3.0]
    """
    operand = asarray(operand)
    return srt.cumprod(operand, _cumulative_axis("cumprod", operand, axis), reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Running maximum along ``axis``.

    >>> cummax(np.array([1, 3, 2])).tolist()
    [1, 3, 3]
    """
    operand = asarray(operand)
    return srt.cummax(operand, _cumulative_axis("cummax", operand, axis), reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Running minimum along ``axis``.

    >>> cummin(np.array([3, 1, 2])).tolist()
    [3, 1, 1]
    """
    operand = asarray(operand)
    return srt.cummin(operand, _cumulative_axis("cummin", operand, axis), reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Running ``logsumexp`` along ``axis`` (JAX's: a window reduction of ``logaddexp``, its
    derivatives those of an associative scan of it).

    >>> cumlogsumexp(np.array([0.0, 0.0])).tolist() == [0.0, float(np.log(2))]
    True
    """
    operand = asarray(operand)
    axis = _cumulative_axis("cumlogsumexp", operand, axis)
    if not _dt.is_inexact(operand.dtype):
        # (JAX's lowering writes -inf as the window's initial value of an integer dtype)
        raise OverflowError("cannot convert float infinity to integer")
    if type(core.current_trace()) is core.EvalTrace:
        # (eagerly one compiled program, as JAX's primitive runs: NumPy's log1p/exp differed from
        # XLA's in 251 of 512 float32 values; its derivatives, the scan's, stay op by op: as one
        # program, eager grad of 8 x 256 compiled for 13 s, against 0.1 s)
        return _window_logsumexp_compiled(operand, axis, bool(reverse))
    return _cumlogsumexp(operand, axis, bool(reverse))


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _cumlogsumexp(operand, axis, reverse):
    return _window_logsumexp(operand, axis, reverse)


def _window_logsumexp(operand, axis, reverse):
    # JAX lowers its cumlogsumexp primitive as XLA's O(n^2) window reduction of logaddexp from -inf
    # (cumred_reduce_window_impl): its values, bit for bit (the associative scan's differed from
    # jit's in 138 of 512 float32 entries, and its -0 from jax's +0)
    n = operand.shape[axis]
    if n == 0:
        return operand
    dims, padding = [1] * operand.ndim, [(0, 0)] * operand.ndim
    dims[axis], padding[axis] = n, ((0, n - 1) if reverse else (n - 1, 0))
    out = windowed.reduce_window(
        operand, constant_like(-np.inf, operand), _logaddexp_reducer, dims, None, padding
    )
    return convert(out, operand.dtype, weak_type=True) if aval(operand).weak_type else out


_window_logsumexp_compiled = jitted_eagerly(_window_logsumexp, static_argnames=("axis", "reverse"))


@_cumlogsumexp.defjvp
def _cumlogsumexp_jvp(axis, reverse, primals, tangents):
    # (JAX's rule: the JVP of an associative scan of logaddexp -- with JAX's custom JVP,
    # t1 exp(x1 - out) + t2 exp(x2 - out) -- its primal too: the derivative through max/abs/log1p of
    # the formula rounded float32 gradients differently in 352 of 512 entries)
    outs, tangent_outs = jvp_flat(
        lambda x: [srt.associative_scan(logaddexp, x, axis, reverse)], primals, tangents
    )
    return outs[0], tangent_outs[0]


def _logaddexp_reducer(x1, x2):
    """JAX's ``lax.logaddexp`` of two scalars, the reduction's body: for real operands
    ``amax + log1p(exp(-|x1 - x2|))``, ``x1 + x2`` where the difference is NaN (NaNs, infinities of
    one sign); complex ones take ``logaddexp``'s formula (JAX's too)."""
    if _dt.kind(aval(x1).dtype) == "c":
        return logaddexp(x1, x2)
    delta = ew.sub_p.bind(x1, x2)
    general = ew.add_p.bind(
        ew.max_p.bind(x1, x2), ew.log1p_p.bind(ew.exp_p.bind(ew.neg_p.bind(ew.abs_p.bind(delta))))
    )
    return select(ew.ne_p.bind(delta, delta), ew.add_p.bind(x1, x2), general)


def _cumulative_axis(name, operand, axis):
    """JAX's checks of a cumulative reduction's arguments (its shape rule, then its dtype rule):
    the axis is not normalised, a negative one is XLA's refusal; operands are numbers.

    >>> _cumulative_axis("cumsum", np.ones(2), -1)
    Traceback (most recent call last):
    ValueError: XLA operations do not allow negative axes
    """
    axis = int(axis)
    if axis < 0:
        raise ValueError("XLA operations do not allow negative axes")
    if axis >= operand.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of shape {operand.shape}")
    if _dt.kind(operand.dtype) not in "iufc":
        raise TypeError(
            f"{name} does not accept dtype {np.dtype(operand.dtype).name}. Accepted dtypes are subtypes "
            "of number."
        )
    return axis


@_api_boundary  # NOTE: [traceback boundaries]
def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of the associative binary ``fn`` along ``axis`` (parallel prefix); ``elems``
    may be a pytree of arrays of one length along ``axis``, which ``fn`` combines as trees.

    >>> associative_scan(lambda a, b: a + b, np.array([1, 2, 3])).tolist()
    [1, 3, 6]
    >>> pair = lambda a, b: (a[0] + b[0], a[1] * b[1])
    >>> [v.tolist() for v in associative_scan(pair, (np.arange(1, 4), np.arange(1, 4)))]
    [[1, 3, 6], [1, 2, 6]]
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tu.tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems holds no arrays")
    if reverse and int(axis) < 0:
        # (JAX's type and words: its reversed scan reverses the elements with lax.rev, which takes
        # no negative dimension; forward, a negative axis counts from the end, as below)
        raise TypeError(f"rev dimensions must have every element be nonnegative, got ({int(axis)},).")

    def combine(a, b):  # fn over the trees, on lists of their leaves
        out, out_tree = tu.tree_flatten(fn(tu.tree_unflatten(tree, a), tu.tree_unflatten(tree, b)))
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn returned the tree {out_tree}, not the elements' {tree}")
        return [asarray(v) for v in out]

    return tu.tree_unflatten(tree, srt.associative_scan(combine, [asarray(v) for v in leaves], axis, reverse))
