"""Sorting, searching, cumulative and order-statistic functions of funcgrad.numpy: sort, argsort,
lexsort, partition, cumsum, cumprod, searchsorted, digitize, quantile, percentile, median.

Layer: surface. Imports ``funcgrad.numpy._core``, ``indexing``, ``reductions``, ``manipulation``,
``transcendental`` and the primitive catalog (sorting, structure, elementwise families).

Sorting is the catalog's stable multi-operand ``sort`` (NaNs sort last, as in NumPy); ``argsort``
sorts an iota along. Derivatives flow through ``sort`` (its JVP permutes the tangents) and through
the gathers of ``quantile``; indices have zero derivatives. ``searchsorted`` is a branch-free binary
search of ``ceil(log2(n + 1))`` gather-and-compare steps, so it works under ``jit`` and ``vmap``.
"""

from __future__ import annotations

import numpy as np

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    _flags,
    asarray,
    aval,
    broadcast_to,
    check_user_dtype,
    concrete_int,
    constant,
    convert,
    normalize_axis,
    promote_args,
    promote_args_inexact,
    select,
)
from funcgrad.numpy.complexes import imag, lexicographic, real, reject_complex
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import expand_dims, moveaxis, ravel, reshape
from funcgrad.numpy.transcendental import isnan
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import sorting as srt
from funcgrad.primitives import structure as st
from funcgrad.primitives._sharding_rules import check_whole

__all__ = [
    "argpartition",
    "argsort",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "digitize",
    "lexsort",
    "median",
    "nancumprod",
    "nancumsum",
    "partition",
    "percentile",
    "quantile",
    "searchsorted",
    "sort",
]


def _axis_or_flat(a, axis):
    a = asarray(a)
    if axis is None:
        return ravel(a), 0
    if a.ndim == 0:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    return a, normalize_axis(axis, a.ndim)


def _index_dtype(n: int) -> np.dtype:
    return _dt.default_int if n >= 2**31 - 1 else np.dtype(np.int32)


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (the flattened array if ``axis`` is None); NaNs last.

    >>> sort(np.array([3.0, np.nan, 1.0])).tolist()
    [1.0, 3.0, nan]
    >>> sort(np.array([[3, 1], [0, 2]]), axis=None).tolist()
    [0, 1, 2, 3]
    """
    if order is not None:
        raise NotImplementedError("sort: the order argument (structured arrays) is not supported")
    a, axis = _axis_or_flat(a, axis)
    if descending:  # (JAX's: the ascending sort reversed; tied elements, and their tangents, last first)
        return st.rev(srt.sort(a, axis), (axis,))
    return srt.sort(a, axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis`` (stable: ties keep their order), in the default
    integer type or ``dtype`` (JAX's keyword).

    >>> argsort(np.array([3, 1, 2, 1])).tolist()
    [1, 3, 2, 0]
    >>> argsort(np.array([1, 2, 2]), descending=True).tolist()
    [1, 2, 0]
    """
    if order is not None:
        raise NotImplementedError("argsort: the order argument (structured arrays) is not supported")
    a, axis = _axis_or_flat(a, axis)
    n = a.shape[axis]
    idx_dtype = _dt.default_int if dtype is None else check_user_dtype(dtype, "argsort")
    iota = st.broadcasted_iota(idx_dtype, a.shape, axis)
    if not descending or not stable:
        # (unstable descending order is JAX's: the ascending sort reversed, so ties come last first)
        idx = srt.sort((a, iota), axis, is_stable=bool(stable), num_keys=1)[1]
        return st.rev(idx, (axis,)) if descending else idx
    # Stable descending order: sort the reversed array, map indices back, reverse the result.
    _, idx = srt.sort((st.rev(a, (axis,)), iota), axis, num_keys=1)
    return st.rev(ew.sub_p.bind(constant(n - 1, idx_dtype), idx), (axis,))


def lexsort(keys, axis=-1):
    """Indices that sort by several keys; the *last* key is the primary one (NumPy's ``lexsort``).

    >>> lexsort((np.array([1, 0, 1]), np.array([2, 2, 1]))).tolist()
    [2, 1, 0]
    """
    keys = list(keys) if not hasattr(keys, "ndim") else [keys[i] for i in range(len(keys))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = [asarray(k) for k in keys]
    shape = keys[0].shape
    if any(k.shape != shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    if not shape:
        return constant(0, _dt.default_int)
    axis = normalize_axis(axis, len(shape))
    iota = st.broadcasted_iota(_dt.default_int, shape, axis)
    out = srt.sort((*keys[::-1], iota), axis, num_keys=len(keys))
    return out[-1]


def partition(a, kth, axis=-1):
    """``a`` rearranged so the ``kth`` element is in its sorted place, smaller ones before it and
    larger ones after, in JAX's arrangement (two ``top_k`` calls): the ``kth + 1`` smallest ascending,
    then the others descending, ties and zeros' signs in XLA's total order (-0.0 before 0.0).

    >>> partition(np.array([9, 4, 1, 7, 3]), 2).tolist()
    [1, 3, 4, 9, 7]
    """
    a, axis, kth = _partition_args(a, kth, axis, "partition")
    arr = moveaxis(a, axis, -1)
    n = arr.shape[-1]
    bottom = _unflip(top_k_last(_flip(arr), kth + 1)[0], aval(arr).dtype)
    top = top_k_last(arr, n - kth - 1)[0]
    return moveaxis(st.concatenate([bottom, top], arr.ndim - 1), -1, axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` (see ``partition``), in JAX's arrangement: the indices of the
    ``kth + 1`` smallest in sorted order, then the other indices in increasing order.

    >>> argpartition(np.array([9, 4, 1, 7, 3]), 1).tolist()
    [2, 4, 0, 1, 3]
    """
    a, axis, kth = _partition_args(a, kth, axis, "argpartition")
    arr = moveaxis(a, axis, -1)
    last, n = arr.ndim - 1, arr.shape[-1]
    bottom = top_k_last(_flip(arr), kth + 1)[1]
    # (the others: a proxy of ones with the bottom's places zeroed, its top_k; JAX's)
    iota = st.broadcasted_iota(np.int32, arr.shape, last)
    chosen = reductions.any(ew.eq_p.bind(expand_dims(iota, -1), expand_dims(bottom, -2)), axis=-1)
    proxy = select(chosen, constant(0.0, np.float32, arr.shape), constant(1.0, np.float32, arr.shape))
    top = top_k_last(proxy, n - kth - 1)[1]
    return moveaxis(st.concatenate([bottom, top], last), -1, axis)


def _flip(arr):
    # -arr (unsigned: -(arr + 1), so 0 ranks first), whose top_k is arr's bottom (JAX's)
    dtype = aval(arr).dtype
    if dtype.kind == "u":
        arr = ew.add_p.bind(arr, constant(1, dtype, arr.shape))
    return ew.neg_p.bind(arr)


def _unflip(v, dtype):
    v = ew.neg_p.bind(v)
    return ew.sub_p.bind(v, constant(1, dtype, v.shape)) if dtype.kind == "u" else v


def top_k_last(operand, k: int):
    """``lax.top_k`` along the last axis (``k`` checked by the caller): values and int32 indices of
    the ``k`` largest in XLA's TopK order (floats in their total order; ties: lower index first)."""
    n = operand.shape[-1]
    axis = operand.ndim - 1
    iota = st.broadcasted_iota(np.int32, operand.shape, axis)
    keys = operand
    dtype = aval(operand).dtype
    if _dt.is_float(dtype):
        # XLA's TopK (jax) ranks floats in their total order: -NaN < -inf < ... < -0.0 < 0.0 < ...
        # < inf < NaN, where sort makes the zeros equal and every NaN largest. The bits as a signed
        # integer, negative ones with the magnitude bits flipped, are that order.
        int_dtype = np.dtype(f"int{dtype.itemsize * 8}")
        bits = bc.bitcast_convert_type(operand, int_dtype)
        flipped = ew.xor_p.bind(bits, constant(np.iinfo(int_dtype).max, int_dtype))
        keys = select(ew.lt_p.bind(bits, constant(0, int_dtype)), flipped, bits)
    # Stable descending order: sort the reversed array ascending, then reverse back.
    rev = lambda v: st.rev(v, (axis,))  # noqa: E731
    _, values, idx = srt.sort((rev(keys), rev(operand), iota), axis, num_keys=1)
    values = rev(values)
    idx = ew.sub_p.bind(constant(n - 1, np.int32), rev(idx))
    # (a list, as JAX's bind of the two-result primitive gives: a pytree of the two is a list's)
    return [st.slice_in_dim(values, 0, k, 1, axis), st.slice_in_dim(idx, 0, k, 1, axis)]


def _partition_args(a, kth, axis, name: str):
    if axis is None:  # (JAX's type and words: its canonicalize_axis takes no None, NumPy's flattening)
        raise TypeError(f"'NoneType' object cannot be interpreted as an integer (jnp.{name}'s axis)")
    a, axis = _axis_or_flat(a, axis)
    dtype = aval(a).dtype
    if dtype.kind == "c":  # (JAX's refusals: its two top_k's rank -a, and neither is defined there)
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    if dtype.kind == "b":
        raise TypeError(
            "neg does not accept dtype bool. Accepted dtypes are subtypes of integer, floating, "
            "complexfloating."
        )
    kth = concrete_int(kth, f"{name}'s kth")
    n = a.shape[axis]
    if not -n <= kth < n:
        raise ValueError(f"kth(={kth}) out of bounds ({n})")
    return a, axis, kth % n


# ----------------------------------------------------------------------------------------------
# Cumulative functions


def _cumulative(primitive, identity, a, axis, dtype, promote_integers=False):
    if dtype is not None and np.dtype(dtype) == np.bool_:
        # JAX's: a boolean result is computed in the default integer, each nonzero input counting
        # 1, then converted (a running sum is True once any element was; a product while all are)
        a = asarray(a)
        if a.dtype != np.bool_:
            a = ew.ne_p.bind(a, constant(0, a.dtype, a.shape))
        out = _cumulative(primitive, identity, a, axis, None, promote_integers=True)
        return ew.convert_element_type(out, np.dtype(np.bool_))
    a = asarray(a)
    if a.ndim == 0 and aval(a).weak_type:  # JAX's: a weak scalar (2.0, not float32(2)) is raveled
        a = ravel(a)
    if axis is None and a.ndim:
        check_whole(
            aval(a),
            range(a.ndim),
            f"The input should be fully replicated when axis is not specified to {primitive.__name__}. Got "
            "input type={type}",
        )
    a, axis = _axis_or_flat(a, axis)
    if dtype is not None:
        target = np.dtype(dtype)
    elif not _dt.jax_rules or promote_integers or a.dtype == np.bool_:
        target = reductions.accumulation_dtype(a.dtype)
    else:
        # NOTE: [x64 mode]: in 32-bit mode, JAX's rule: cumsum/cumprod keep an integer's dtype and
        # wrap (int8 100 + 100 is -56); the Array API's cumulative_sum promotes as NumPy does.
        target = a.dtype
    a = ew.convert_element_type(a, target, weak_type=False)  # (strong, as JAX's: cumsum(2.0))
    if a.shape[axis] == 0:
        return a
    return primitive(a, axis)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (the flattened array if None); small integers accumulate in int64
    (in 32-bit mode they keep their dtype, as in JAX).

    >>> cumsum(np.array([[1, 2], [3, 4]])).tolist()
    [1, 3, 6, 10]
    >>> cumsum(np.array([[1, 2], [3, 4]]), axis=0).tolist()
    [[1, 2], [4, 6]]
    """
    return _cumulative(srt.cumsum, 0, a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (exact derivatives with zeros).

    >>> cumprod(np.array([1.0, 2.0, 3.0])).tolist()
    [1.0, 2.0, 6.0]
    """
    return _cumulative(srt.cumprod, 1, a, axis, dtype)


def _array_api_cumulative(name, scan, identity, x, axis, dtype, include_initial):
    """The Array API's cumulative functions: ``scan`` along ``axis`` (required beyond one
    dimension), optionally starting with the ``identity``."""
    x = asarray(x)
    what = "sum" if name == "cumulative_sum" else "product"
    if x.ndim == 0:  # (JAX's words)
        raise ValueError(
            f"The input must be non-scalar to take a cumulative {what}, however a scalar value or "
            "scalar array was given."
        )
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                f"The input array has rank {x.ndim}, however axis was not set to an explicit "
                "value. The axis argument is only optional for one-dimensional arrays."
            )
        axis = 0
    out = scan(x, axis, dtype)
    if include_initial:
        pad = [(0, 0, 0)] * out.ndim
        pad[normalize_axis(axis, x.ndim)] = (1, 0, 0)
        out = st.pad(out, constant(identity, out.dtype), pad)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative sum (``axis`` required for arrays of more than one dimension).

    >>> cumulative_sum(np.array([1, 2, 3]), include_initial=True).tolist()
    [0, 1, 3, 6]
    """

    def scan(x, axis, dtype):
        return _cumulative(srt.cumsum, 0, x, axis, dtype, promote_integers=True)

    return _array_api_cumulative("cumulative_sum", scan, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative product (``axis`` required beyond one dimension).

    >>> cumulative_prod(np.array([1, 2, 3]), include_initial=True).tolist()
    [1, 1, 2, 6]
    """
    return _array_api_cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``cumsum`` treating NaNs as zero.

    >>> nancumsum(np.array([1.0, np.nan, 2.0])).tolist()
    [1.0, 1.0, 3.0]
    """
    a = asarray(a)
    if _dt.is_inexact(a.dtype):
        a = select(isnan(a), constant(0, a.dtype, weak_type=aval(a).weak_type), a)  # (lax._const's)
    return cumsum(a, axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``cumprod`` treating NaNs as one.

    >>> nancumprod(np.array([2.0, np.nan, 3.0])).tolist()
    [2.0, 2.0, 6.0]
    """
    a = asarray(a)
    if _dt.is_inexact(a.dtype):
        a = select(isnan(a), constant(1, a.dtype, weak_type=aval(a).weak_type), a)  # (lax._const's)
    return cumprod(a, axis, dtype)


# ----------------------------------------------------------------------------------------------
# Searching


def _nan_aware_less(x, y):
    """``x < y`` in NumPy's sort order (NaN after every number; complex values by real part, then
    imaginary part)."""
    if aval(x).dtype.kind == "c":
        rx, ry, ix, iy = real(x), real(y), imag(x), imag(y)
        real_less, real_greater = _nan_aware_less(rx, ry), _nan_aware_less(ry, rx)
        real_tie = ew.not_p.bind(ew.or_p.bind(real_less, real_greater))
        return ew.or_p.bind(real_less, ew.and_p.bind(real_tie, _nan_aware_less(ix, iy)))
    lt = ew.lt_p.bind(x, y)
    if not _dt.is_inexact(aval(x).dtype):
        return lt
    return ew.or_p.bind(lt, ew.and_p.bind(isnan(y), ew.not_p.bind(isnan(x))))


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` to keep it sorted.

    ``side='left'`` gives the first suitable position, ``'right'`` the last. ``method`` is
    ``'scan'`` (a branch-free binary search; ``'scan_unrolled'`` and ``'sort'`` are accepted as JAX's
    and give the same answers) or ``'compare_all'`` (one comparison per pair).

    >>> searchsorted(np.array([1, 2, 2, 3]), np.array([2, 0, 5])).tolist()
    [1, 0, 4]
    >>> searchsorted(np.array([1, 2, 2, 3]), 2, side="right").item()
    3
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("searchsorted: a must be one-dimensional")
    if sorter is not None:
        a = getitem(a, asarray(sorter))
    a, v = promote_args(a, v)
    n = a.shape[0]
    # (JAX's index dtype: int32 where the positions fit, in either mode; NOTE: [JAX's dtype rules in
    # 64-bit mode])
    if not _dt.jax_rules:
        dtype = _dt.default_int
    else:  # (past int32, JAX asks for int64 explicitly: in 32-bit mode its warning, then an overflow)
        dtype = np.dtype(np.int32) if n < 2**31 else check_user_dtype(np.int64, "searchsorted")
    if side == "left":
        goes_after = lambda elem, val: _nan_aware_less(elem, val)  # noqa: E731 - elem < val
    else:
        goes_after = lambda elem, val: ew.not_p.bind(_nan_aware_less(val, elem))  # noqa: E731
    if method == "compare_all" or n == 0:
        elems = reshape(a, (n,) + (1,) * v.ndim)
        vals = expand_dims(v, 0)
        shape = (n, *v.shape)
        hits = goes_after(broadcast_to(elems, shape), broadcast_to(vals, shape))
        return reductions.sum(hits, axis=0, dtype=dtype)
    if method not in ("scan", "scan_unrolled", "sort"):  # (the same answers, as in JAX)
        raise ValueError(f"searchsorted: unknown method {method!r}")
    lo = constant(0, dtype, v.shape)
    hi = constant(n, dtype, v.shape)
    one = constant(1, dtype)
    for _ in range(int(np.ceil(np.log2(n + 1)))):
        mid = ew.div_p.bind(ew.add_p.bind(lo, hi), constant(2, dtype))
        elem = getitem(a, ew.min_p.bind(mid, constant(n - 1, dtype)))
        right = ew.and_p.bind(goes_after(elem, v), ew.lt_p.bind(lo, hi))
        lo = select(right, ew.add_p.bind(mid, one), lo)
        hi = select(right, hi, ew.min_p.bind(mid, hi))
    return lo


def digitize(x, bins, right=False, *, method=None):
    """Indices of the bins (increasing or decreasing edges) to which each value of ``x`` belongs.

    >>> digitize(np.array([0.5, 1.0, 2.5]), np.array([0.0, 1.0, 2.0])).tolist()
    [1, 2, 3]
    >>> digitize(np.array([0.5, 1.0, 2.5]), np.array([0.0, 1.0, 2.0]), right=True).tolist()
    [1, 1, 3]
    """
    bins = asarray(bins)
    if bins.ndim != 1:
        raise ValueError("digitize: bins must be one-dimensional")
    x = asarray(x)
    # (complex values: jax's searchsorted order, real parts then imaginary parts)
    n = bins.shape[0]
    if n == 0:  # (JAX's: int32 under its rules, NOTE: [JAX's dtype rules in 64-bit mode])
        return constant(0, np.int32 if _dt.jax_rules else _dt.default_int, x.shape)
    side = "left" if right else "right"
    method = method or "scan"
    increasing = searchsorted(bins, x, side=side, method=method)
    decreasing = ew.sub_p.bind(
        constant(n, aval(increasing).dtype), searchsorted(st.rev(bins, (0,)), x, side=side, method=method)
    )
    first, last = getitem(bins, 0), getitem(bins, -1)
    return select(lexicographic(ew.ge_p, *promote_args(last, first)), increasing, decreasing)


# ----------------------------------------------------------------------------------------------
# Order statistics


_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf")


def _lerp(a, b, t):
    # JAX's weights, a * (1 - t) + b * t (NumPy's _lerp, a + (b - a) * t and b - (b - a) * (1 - t)
    # for t >= 0.5, gave NaN for quantile([-3, inf], 0.5), inf - inf, where jax's is inf; it is
    # exact at both ends where jax's is not: quantile([1, inf], 0) is inf * 0 = NaN in jax too)
    dtype = aval(a).dtype
    return ew.add_p.bind(ew.mul_p.bind(a, ew.sub_p.bind(constant(1, dtype), t)), ew.mul_p.bind(b, t))


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def quantile(
    a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None
):
    """The ``q``-th quantiles (``0 <= q <= 1``) along ``axis``, with NumPy's interpolation methods.

    ``q``'s dimensions come first in the result. A slice containing NaN gives NaN.

    >>> quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.5).item()
    2.5
    >>> quantile(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 1.0]), method="lower").tolist()
    [1.0, 4.0]
    """
    return nan_aware_quantile(a, q, axis, method, keepdims, ignore_nan=False, weights=weights)


def nan_aware_quantile(a, q, axis, method, keepdims, ignore_nan: bool, weights=None):
    """``quantile``; with ``ignore_nan`` each slice ranks only its non-NaN values (``nanquantile``:
    NaNs sort last, the positions come from each slice's count, an all-NaN slice gives NaN).
    ``weights`` (JAX's, with ``method="inverted_cdf"`` only): the quantile is the first sorted value
    whose cumulative weight reaches ``q`` of the slice's total."""
    name = "nanquantile" if ignore_nan else "quantile"
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    if weights is not None and method != "inverted_cdf":
        raise NotImplementedError(
            f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights."
        )
    # In 32-bit (JAX's) mode, and under 'strict' promotion, as JAX's: the result is in a's
    # (inexact) dtype, q converted to it, so nothing is promoted. In 64-bit mode as NumPy's
    # (funcgrad's design, NOTE: [x64 mode]): the interpolating methods promote a with q (a float64
    # q makes a float32 a compute in float64); the others return elements of a.
    numpy_promotion = not _dt.jax_rules and _flags["dtype_promotion"] == "standard"
    if method in ("linear", "midpoint") and numpy_promotion and weights is None:
        a, q = promote_args_inexact(a, q)
    elif weights is not None:
        a, weights = promote_args_inexact(a, weights)
        q = asarray(q)
        if _dt.kind(weights.dtype) == "c":
            raise ValueError("Weights cannot be complex types.")
    else:
        (a,) = promote_args_inexact(a)
        q = asarray(q)
    reject_complex(name, a, why="complex numbers have no order to rank them by (as in jax.numpy)")
    q_value = q._numpy() if hasattr(q, "_numpy") else None
    if q_value is not None and (np.any(q_value < 0) or np.any(q_value > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    in_ndim = a.ndim
    if weights is not None and weights.shape != a.shape:
        reduced_shape = None if axis is None else tuple(a.shape[d] for d in _quantile_axes(axis, in_ndim))
        if weights.shape != reduced_shape:
            raise ValueError(
                f"{name}: weights of shape {weights.shape} must have a's shape {a.shape}"
                + ("" if axis is None else f" or the reduced axes' shape {reduced_shape}")
            )
        axes_ = _quantile_axes(axis, in_ndim)
        kept = [a.shape[d] if d in axes_ else 1 for d in range(in_ndim)]
        weights = broadcast_to(reshape(weights, tuple(kept)), a.shape)
    if axis is None:
        axes = tuple(range(in_ndim))
        work = ravel(a)
        w_work = None if weights is None else ravel(weights)
    else:
        axes = tuple(
            sorted(
                {normalize_axis(ax, in_ndim) for ax in (axis if isinstance(axis, tuple | list) else (axis,))}
            )
        )
        others = [d for d in range(in_ndim) if d not in axes]
        work = st.transpose(a, (*others, *axes))
        # The reduced length is spelled out, not -1: with an empty kept axis, -1 is ambiguous
        # (median of a (2, 0) array along axis 0 is an empty (0,) array, as in NumPy; issue 33).
        reduced = int(np.prod([a.shape[d] for d in axes], dtype=np.int64))
        work = reshape(work, (*[a.shape[d] for d in others], reduced))
        w_work = None
        if weights is not None:
            w_work = reshape(st.transpose(weights, (*others, *axes)), work.shape)
    n = work.shape[-1]
    if n == 0:
        if 0 not in work.shape[:-1] or not ignore_nan:
            raise ValueError(f"{name} of an empty array (or empty axis)")
        # The result is empty too (a kept axis is empty): each of its no slices ranks one NaN, which
        # gives the empty result's shape and dtype, as NumPy and jax's nanquantile/nanmedian return
        # it (jax's quantile/median/percentile raise there: an empty reduced axis, whatever is kept).
        work = broadcast_to(constant(np.nan, work.dtype), (*work.shape[:-1], 1))
        n = 1
    work = moveaxis(work, -1, 0)
    if method == "inverted_cdf":
        result = _inverted_cdf(work, None if w_work is None else moveaxis(w_work, -1, 0), q, ignore_nan)
        if keepdims:
            # (JAX's: a 0-d input keeps the axis it was raveled to, shape (1,))
            kept = [1 if d in axes else a.shape[d] for d in range(in_ndim)] or [1]
            result = reshape(result, (*q.shape, *kept))
        return result
    sorted_ = srt.sort(work, 0)  # NaN sorts last
    dtype = sorted_.dtype
    qf = convert(q, dtype)
    nan = isnan(work)
    if ignore_nan:  # per slice: q's dimensions first, then the slices'
        count = reductions.sum(ew.not_p.bind(nan), axis=0)
        last = convert(ew.max_p.bind(count, constant(1, count.dtype)) - 1, dtype)
        qf = reshape(qf, qf.shape + (1,) * last.ndim)
        last = reshape(last, (1,) * q.ndim + last.shape)  # (same rank: no implicit rank promotion)
    else:
        last = constant(n - 1, dtype)
    pos = qf * last  # (broadcasting: q, or q against the slices)
    lo_f = ew.floor_p.bind(pos)
    hi_f = ew.ceil_p.bind(pos)
    if method == "nearest":
        # JAX's tie rule (its quantile takes the lower neighbour when pos is halfway, where NumPy
        # rounds to even): percentile(arange(7), 25, method='nearest') is 1, as its docstring shows
        halfway_or_less = ew.le_p.bind(ew.sub_p.bind(pos, lo_f), constant(0.5, dtype))
        lo_f = hi_f = select(halfway_or_less, lo_f, hi_f)
    elif method == "lower":
        hi_f = lo_f
    elif method == "higher":
        lo_f = hi_f
    lo = ew.convert_element_type(lo_f, _dt.default_int)
    hi = ew.convert_element_type(hi_f, _dt.default_int)
    if ignore_nan:
        lo_vals, hi_vals = _per_slice(sorted_, lo), _per_slice(sorted_, hi)
    else:
        lo_vals, hi_vals = getitem(sorted_, lo), getitem(sorted_, hi)
    if method == "linear":
        t = ew.sub_p.bind(pos, lo_f)
        t = reshape(t, t.shape + (1,) * (lo_vals.ndim - t.ndim))
        result = _lerp(lo_vals, hi_vals, broadcast_to(t, lo_vals.shape))
    elif method == "midpoint":
        result = ew.div_p.bind(ew.add_p.bind(lo_vals, hi_vals), constant(2, dtype))
    else:
        result = lo_vals
    undefined = ew.eq_p.bind(count, constant(0, count.dtype)) if ignore_nan else reductions.any(nan, axis=0)
    result = select(broadcast_to(undefined, result.shape), constant(np.nan, dtype), result)
    if keepdims:
        # (JAX's: a 0-d input keeps the axis it was raveled to, shape (1,))
        kept = [1 if d in axes else a.shape[d] for d in range(in_ndim)] or [1]
        result = reshape(result, (*q.shape, *kept))
    return result


def _quantile_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(
        sorted({normalize_axis(ax, ndim) for ax in (axis if isinstance(axis, tuple | list) else (axis,))})
    )


def _inverted_cdf(work, weights, q, ignore_nan: bool):
    """JAX's ``inverted_cdf`` quantile of each slice of ``work`` (N, *B): the first sorted value whose
    cumulative weight reaches ``q * total``; NaN where a weight is negative or NaN, where the slice
    has a NaN (``ignore_nan``: where it is all NaN; its NaNs weigh nothing). (*Q, *B)."""
    dtype = work.dtype
    if weights is None:
        weights = constant(1, dtype, work.shape)
    sorted_, sorted_w = srt.sort((work, weights), 0, num_keys=1)  # NaN sorts last
    nan = isnan(sorted_)
    bad = ew.or_p.bind(ew.lt_p.bind(sorted_w, constant(0, dtype)), isnan(sorted_w))
    clean = select(ew.or_p.bind(bad, nan), constant(0, dtype, sorted_w.shape), sorted_w)
    cum = cumsum(clean, axis=0)
    n, batch, qshape = work.shape[0], work.shape[1:], q.shape
    total = getitem(cum, n - 1)
    target = ew.mul_p.bind(
        broadcast_to(reshape(convert(q, dtype), qshape + (1,) * len(batch)), qshape + batch),
        broadcast_to(total, qshape + batch),
    )
    below = ew.lt_p.bind(
        broadcast_to(reshape(cum, (n,) + (1,) * len(qshape) + batch), (n, *qshape, *batch)),
        broadcast_to(target, (n, *qshape, *batch)),
    )
    idx = reductions.sum(convert(below, _dt.default_int), axis=0)
    valid = reductions.sum(convert(ew.not_p.bind(nan), _dt.default_int), axis=0) if ignore_nan else None
    limit = (
        constant(n - 1, _dt.default_int)
        if valid is None
        else ew.sub_p.bind(valid, constant(1, _dt.default_int))
    )
    idx = ew.max_p.bind(
        ew.min_p.bind(idx, broadcast_to(limit, idx.shape)), constant(0, _dt.default_int, idx.shape)
    )
    result = _per_slice(sorted_, idx)
    undefined = reductions.any(bad, axis=0)
    if ignore_nan:
        undefined = ew.or_p.bind(undefined, ew.eq_p.bind(valid, constant(0, valid.dtype)))
    else:
        undefined = ew.or_p.bind(undefined, reductions.any(nan, axis=0))
    return select(broadcast_to(undefined, result.shape), constant(np.nan, dtype), result)


def _per_slice(sorted_, idx):
    """``sorted_[idx[..., b], b]`` for each slice ``b``: ``sorted_`` is (N, *B), ``idx`` (*Q, *B)."""
    batch = sorted_.shape[1:]
    # Advanced indexing: idx picks along axis 0, an iota per slice axis picks the slice.
    iotas = [np.arange(b).reshape((b,) + (1,) * (len(batch) - 1 - k)) for k, b in enumerate(batch)]
    return getitem(sorted_, (idx, *iotas))


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
@takes_out_sharding(in_auto_axes=True)  # (JAX: a sort along a split axis, laid out by XLA)
def percentile(
    a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None
):
    """The ``q``-th percentiles (``0 <= q <= 100``) along ``axis`` (see ``quantile``).

    >>> percentile(np.array([1.0, 2.0, 3.0, 4.0]), 50).item()
    2.5
    """
    q = asarray(q)
    q_value = q._numpy() if hasattr(q, "_numpy") else None
    if q_value is not None and (np.any(q_value < 0) or np.any(q_value > 100)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    (qf,) = promote_args(q)
    if not _dt.is_inexact(aval(qf).dtype):  # (a Python number stays weak: percentile(f32, 50) is f32)
        qf = ew.convert_element_type(qf, _dt.inexact_of(aval(qf).dtype), weak_type=aval(qf).weak_type)
    return quantile(
        a,
        ew.div_p.bind(qf, Array._from_owned(np.asarray(100, aval(qf).dtype), aval(qf).weak_type)),
        axis,
        out,
        overwrite_input,
        method,
        keepdims,
        weights=weights,
    )


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis`` (the mean of the two middle values for even lengths).

    >>> median(np.array([3.0, 1.0, 4.0, 2.0])).item()
    2.5
    """
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)
