"""Reductions of funcgrad.numpy: sum, prod, mean, var, std, max, min, argmax, all, any, ...

Layer: surface. Imports ``funcgrad.numpy._core``, ``ufuncs``, ``transcendental`` and the primitive
catalog (reductions, elementwise, structure families).

Signatures are NumPy 2's (``axis`` may be an int, a tuple or None; ``keepdims``; ``dtype``;
``initial`` and ``where`` masks). Result dtypes follow NumPy: sums and products of booleans and small
integers accumulate in int64 (uint64 for unsigned), means of integers are float64. Gradient
conventions are the primitives': ``max``/``min`` split the gradient equally among tied elements,
``prod`` is exact with zeros in the input.
"""

from __future__ import annotations

import builtins

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import named_alias, template_public_functions
from funcgrad.numpy._core import (
    asarray,
    broadcast_args,
    broadcast_to,
    check_user_dtype,
    constant,
    convert,
    normalize_axes,
    normalize_axis,
    promote_args,
    select,
    shape_of,
)
from funcgrad.numpy._dtypes import extended_in
from funcgrad.numpy.complexes import abs_squared
from funcgrad.numpy.transcendental import isclose, isnan, safe_sqrt
from funcgrad.numpy.ufuncs import as_bool, less_equal, subtract, true_divide, where3
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st

__all__ = [
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "array_equal",
    "average",
    "count_nonzero",
    "max",
    "mean",
    "min",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "prod",
    "ptp",
    "std",
    "sum",
    "var",
]


def _prepare(name, a, axis):
    a = asarray(a)  # (the public functions refuse lists: NOTE: [array-like arguments])
    if core.get_aval(a).weak_type:
        # a reduction's result is strong, as JAX's (jnp.sum(2.0) is a float64 that promotes as one)
        a = ew.convert_element_type(a, a.dtype, weak_type=False)
    return a, normalize_axes(axis, a.ndim)


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    shape = core.get_aval(out).shape
    if len(shape) != len(in_shape) - len(axes):  # (a larger where mask broadcast the array: _masked)
        shape = list(shape)
        for ax in sorted(axes):  # (JAX's lax.expand_dims(result, pos_dims))
            shape.insert(ax, 1)
        return st.reshape(out, tuple(shape))
    return st.reshape(out, red.keep_dims_shape(in_shape, axes))


def accumulation_dtype(dtype) -> np.dtype:
    """The dtype NumPy sums and multiplies ``dtype`` in (int64 for bools and small integers)."""
    # NumPy accumulates booleans and small integers in the default integer of their signedness.
    dtype = np.dtype(dtype)
    if dtype == np.bool_ or (dtype.kind == "i" and dtype.itemsize < 8):
        return _dt.default_int
    if dtype.kind == "u" and dtype.itemsize < 8:
        return _dt.default_uint
    return dtype


def _numeric(dtype) -> np.dtype:
    # promote_integers=False keeps integer widths, but booleans are still counted in the default
    # integer (JAX's sum/prod cast bool operands to a numeric dtype first): sum([True] * 4) == 4.
    dtype = np.dtype(dtype)
    return np.dtype(_dt.default_int) if dtype == np.bool_ else dtype


def _computation_dtype(dtype, requested=None) -> np.dtype:
    # Half-precision floats are summed in float32 and rounded once at the end, as jax.numpy does
    # (NumPy would round every partial sum of a float16 reduction) -- unless a dtype was asked for:
    # jnp.sum/prod/mean(x, dtype=float16) accumulate in float16 (upcast_f16_for_computation=(dtype
    # is None)).
    return np.dtype(np.float32) if dtype in _dt.HALF_FLOATS and requested is None else dtype


def _round_to(res, dtype):
    a = core.get_aval(res)
    return res if a.dtype == dtype else ew.convert_element_type(res, dtype, weak_type=a.weak_type)


def _masked(a, where, fill):
    """``a`` where the (broadcastable) mask is true, ``fill`` elsewhere, at their broadcast shape:
    as JAX's ``_where`` in its reductions, a mask of more dimensions broadcasts ``a``, and the
    reduction's axes, counted on ``a``, apply to that (``sum(x, where=m)`` of a 0-d ``x`` and a
    (2, 1) ``m`` is the (2, 1) masked ``x``; ``mean``/``var`` refuse it in ``_count``, as JAX's)."""
    if where is None:
        return a
    mask = as_bool(where)
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(core.get_aval(mask).shape)))
    mask = broadcast_to(mask, shape)
    if shape != tuple(a.shape):
        a = broadcast_to(a, shape)
    return select(mask, a, constant(fill, a.dtype))


def _count(a, axes, where):
    """How many elements each reduction group has (a Python int, or an Array with a mask)."""
    if where is None:
        return int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    mask = broadcast_to(as_bool(where), a.shape)
    return red.reduce_sum(ew.convert_element_type(mask, _dt.default_int), axes)


# ----------------------------------------------------------------------------------------------
# Sums and products


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    """Sum of the elements over ``axis``.

    >>> sum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0).tolist()
    [4.0, 6.0]
    >>> sum(np.array([True, True, False])).item(), sum(np.ones(2, np.int32)).dtype
    (2, dtype('int64'))
    """
    return _accumulated("sum", a, axis, dtype, out, keepdims, initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    """Product of the elements over ``axis`` (exact derivatives when some elements are zero).

    >>> prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1).tolist()
    [2.0, 12.0]
    """
    return _accumulated("prod", a, axis, dtype, out, keepdims, initial, where, promote_integers)


# sum and prod: the neutral element masked elements take, the reduction, and how initial joins
_ACCUMULATIONS = {"sum": (0, red.reduce_sum, ew.add_p), "prod": (1, red.reduce_prod, ew.mul_p)}


def _accumulated(name, a, axis, dtype, out, keepdims, initial, where, promote_integers):
    """``sum`` or ``prod`` (``name``): in the accumulation dtype (int32 sums in int64, as JAX's
    ``promote_integers``), or the requested ``dtype``, computed in a type XLA reduces exactly."""
    _no_out(out, name)
    _check_where_initial(name, where, initial)
    neutral, reduce, combine = _ACCUMULATIONS[name]
    a, axes = _prepare(name, a, axis)
    target = (
        check_user_dtype(dtype, name)
        if dtype is not None
        else accumulation_dtype(a.dtype)
        if promote_integers
        else _numeric(a.dtype)
    )
    compute = _computation_dtype(target, dtype)
    a = ew.convert_element_type(a, compute, weak_type=a.weak_type and dtype is None)
    in_shape = a.shape
    a = _masked(a, where, neutral)
    res = reduce(a, axes)
    if initial is not None:
        res = combine.bind(res, _initial_as(initial, compute))
    return _keepdims(_round_to(res, target), in_shape, axes, keepdims)


def _initial_as(initial, dtype):
    """``initial`` as a 0-d value of ``dtype``, converted as jax's ``lax.convert_element_type``
    converts it: a Python int wraps into ``dtype`` (through NumPy), anything else converts as an
    array does (a float out of an integer type's range saturates: -1.5 to uint16 is 0). It may be
    traced (JAX's reductions take a traced initial: ``jit(lambda x, i: jnp.sum(x, initial=i))``)."""
    if (
        type(initial) in (int, bool)
        or (type(initial) is float and np.dtype(dtype).kind in "fc")
        or (type(initial) is complex and np.dtype(dtype).kind == "c")
    ):
        # (a constant, no convert equation: jax_debug_infs does not flag max(x, initial=-inf), as
        # JAX's, which converts a Python scalar at trace time -- scipy's logsumexp under debug_infs)
        return constant(np.asarray(initial).astype(dtype), dtype)
    return convert(asarray(initial), dtype)


def _check_where_initial(name, where=None, initial=None):
    # JAX's checks: a mask must be boolean (an integer mask is not read as one), initial a scalar
    if where is not None and np.dtype(getattr(where, "dtype", None) or asarray(where).dtype) != np.bool_:
        raise ValueError(
            f"jnp.{name}: where must be None or a boolean array; got dtype={asarray(where).dtype}."
        )
    if initial is not None and np.ndim(initial) != 0:
        raise ValueError(f"initial value must be a scalar. Got array of shape {np.shape(initial)}")


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(
            f"{name}: the out argument is not supported (funcgrad Arrays are immutable)"
        )


# ----------------------------------------------------------------------------------------------
# Extrema


def _extremum(name, prim_reduce, identity_name, a, axis, out, keepdims, initial, where):
    _no_out(out, name)
    _check_where_initial(name, where, initial)
    a, axes = _prepare(name, a, axis)
    if where is not None and initial is None:  # (JAX's words: the function's name, max or min)
        raise ValueError(
            f"reduction operation {name} does not have an identity, so to use a where mask "
            "one has to specify 'initial'"
        )
    if initial is None and builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    in_shape = a.shape
    if initial is not None:
        # (initial takes the array's dtype, as in NumPy and JAX: max(int array, initial=2.5) counts
        # from 2, an int)
        init = _initial_as(initial, a.dtype)
        a = _masked(a, where, _identity(a.dtype, identity_name == "maximum"))
    res = prim_reduce(a, axes)
    if initial is not None:
        # (JAX's op(initial, result): for complex values the order decides a NaN's fate)
        res = (ew.max_p if identity_name == "maximum" else ew.min_p).bind(init, res)
    return _keepdims(res, in_shape, axes, keepdims)


def _identity(dtype, for_max: bool):
    """The identity of max (smallest value) or min (largest value) for ``dtype``."""
    return _dt.extremum_identity(dtype, for_max)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis``; tied maxima share the gradient equally. NaNs propagate.

    >>> max(np.array([[1.0, 5.0], [3.0, 2.0]]), axis=1).tolist()
    [5.0, 3.0]
    """
    return _extremum("max", red.reduce_max, "maximum", a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis``; tied minima share the gradient equally. NaNs propagate.

    >>> min(np.array([[1.0, 5.0], [3.0, 2.0]]), axis=0).tolist()
    [1.0, 2.0]
    """
    return _extremum("min", red.reduce_min, "minimum", a, axis, out, keepdims, initial, where)


amax = named_alias(max, "amax")  # (functions of their own names, as JAX's)
amin = named_alias(min, "amin")


def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values (``max - min``) over ``axis``.

    >>> ptp(np.array([[1, 5], [3, 2]]), axis=1).tolist()
    [4, 1]
    """
    return ew.sub_p.bind(max(a, axis, out, keepdims), min(a, axis, out, keepdims))


def _arg_extremum(prim, name, a, axis, out, keepdims):
    _no_out(out, name)
    a, _ = _prepare(name, a, None)
    if _dt.kind(a.dtype) == "c":  # (JAX's argmin/argmax compare with lax.lt/gt, which refuse complex)
        op = "lt" if name == "argmin" else "gt"
        raise TypeError(
            f"{op} does not accept dtype {a.dtype} at position 0. Accepted dtypes at position 0 are "
            "subtypes of integer, floating, bool."
        )
    if axis is None:
        flat = st.reshape(a, (a.size,))
        if a.size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        res = prim.bind(flat, axes=(0,), index_dtype=_dt.default_int)
        return st.reshape(res, (1,) * a.ndim) if keepdims else res
    ax = normalize_axis(axis, a.ndim)
    if a.shape[ax] == 0:
        raise ValueError(
            f"attempt to get {name} of an empty sequence (axis {ax} of shape {a.shape} is empty)"
        )
    if a.dtype == np.bool_:
        a = ew.convert_element_type(a, np.int8)
    res = prim.bind(a, axes=(ax,), index_dtype=_dt.default_int)
    return _keepdims(res, a.shape, (ax,), keepdims)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum along ``axis`` (of the flattened array if ``axis`` is None).

    >>> argmax(np.array([[1, 5], [7, 2]]), axis=1).tolist()
    [1, 0]
    """
    return _arg_extremum(red.argmax_p, "argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum along ``axis`` (of the flattened array if ``axis`` is None).

    >>> argmin(np.array([3, 1, 1])).item()
    1
    """
    return _arg_extremum(red.argmin_p, "argmin", a, axis, out, keepdims)


# ----------------------------------------------------------------------------------------------
# Boolean reductions


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether all elements over ``axis`` are true.

    >>> all(np.array([[True, False], [True, True]]), axis=1).tolist()
    [False, True]
    """
    _no_out(out, "all")
    _check_where_initial("all", where)
    a, axes = _prepare("all", a, axis)
    b = _masked(as_bool(a), where, True)
    return _keepdims(red.reduce_and_p.bind(b, axes=axes) if axes else b, a.shape, axes, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element over ``axis`` is true.

    >>> any(np.array([[0, 0], [0, 3]]), axis=1).tolist()
    [False, True]
    """
    _no_out(out, "any")
    _check_where_initial("any", where)
    a, axes = _prepare("any", a, axis)
    b = _masked(as_bool(a), where, False)
    return _keepdims(red.reduce_or_p.bind(b, axes=axes) if axes else b, a.shape, axes, keepdims)


@jitted_eagerly(static_argnames=("axis", "keepdims"))
def count_nonzero(a, axis=None, keepdims=False):
    """Number of non-zero elements over ``axis`` (an int64 count).

    >>> count_nonzero(np.array([[0, 1], [2, 3]]), axis=0).tolist()
    [1, 2]
    """
    a, axes = _prepare("count_nonzero", a, axis)
    counts = red.reduce_sum(ew.convert_element_type(as_bool(a), _dt.default_int), axes)
    return _keepdims(counts, a.shape, axes, keepdims)


@jitted_eagerly(static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether all elements of ``a`` and ``b`` are close (see ``isclose``); a 0-d boolean Array.

    >>> bool(allclose(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-10])))
    True
    """
    return all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether ``a1`` and ``a2`` have the same shape and elements; a 0-d boolean Array.

    >>> bool(array_equal(np.array([1, 2]), np.array([1, 2]))), bool(array_equal([1, 2], [1, 2, 3]))
    (True, False)
    """
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return constant(False, np.bool_)
    if extended_in((a1, a2)) is not None:  # typed PRNG keys: compared as keys
        return all(a1 == a2)
    a1, a2 = promote_args(a1, a2)
    eq = ew.eq_p.bind(a1, a2)
    if equal_nan and _dt.is_inexact(a1.dtype):
        eq = ew.or_p.bind(eq, ew.and_p.bind(isnan(a1), isnan(a2)))
    return all(eq)


# ----------------------------------------------------------------------------------------------
# Statistics


def _float_dtype(dtype, requested=None) -> np.dtype:
    if requested is not None:
        return check_user_dtype(requested, "mean")
    return _dt.inexact_of(dtype)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (integers average in float64).

    >>> mean(np.array([1, 2, 3, 4])).item()
    2.5
    """
    _no_out(out, "mean")
    _check_where_initial("mean", where)
    a, axes = _prepare("mean", a, axis)
    target = _float_dtype(a.dtype, dtype)
    compute = _computation_dtype(target, dtype)
    a = ew.convert_element_type(a, compute, weak_type=a.weak_type and dtype is None)
    total = red.reduce_sum(_masked(a, where, 0), axes)
    n = _count(a, axes, where)
    if isinstance(n, int):
        # (an empty mean is 0 / 0, NaN, through the division as JAX's: its derivatives are NaN too)
        res = ew.div_p.bind(total, constant(n, compute))
    else:
        res = ew.div_p.bind(total, ew.convert_element_type(n, compute))
    return _keepdims(_round_to(res, target), a.shape, axes, keepdims)


def var(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None
):
    """Variance over ``axis`` with ``ddof`` (or the Array API's ``correction``) degrees of freedom.

    >>> var(np.array([1.0, 2.0, 3.0, 4.0])).item()
    1.25
    >>> var(np.array([1.0, 2.0, 3.0, 4.0]), ddof=1).item() == float(np.var([1, 2, 3, 4], ddof=1))
    True
    """
    _no_out(out, "var")
    _check_where_initial("var", where)
    return _variance(a, axis, dtype, ddof, keepdims, where, mean, correction)


def _variance(a, axis, dtype, ddof, keepdims, where, mean, correction, divide_by_one=False):
    """``var``'s computation; ``divide_by_one``: ``nanvar``'s, which divides by 1 where no degree
    of freedom is left (JAX's two functions differ there: see below)."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")  # (JAX's words)
        ddof = correction
    a, axes = _prepare("var", a, axis)
    requested = _float_dtype(a.dtype, dtype)
    if dtype is not None and not _dt.is_inexact(requested) and _dt.kind(a.dtype) != "c":
        return _integer_variance(a, axes, requested, ddof, keepdims, where, mean, divide_by_one)
    if dtype is not None and _dt.kind(a.dtype) == "c" and _dt.kind(requested) != "c":
        raise ValueError(
            f"var: a real dtype ({requested}) for the variance of complex values ({a.dtype}) is not "
            "supported (as in JAX); pass a complex dtype or none"
        )
    # An explicit dtype is the result's, complex included (JAX's); else the real part's dtype.
    result_dtype = requested if dtype is not None else _dt.real_dtype(requested)
    target = _computation_dtype(requested)
    a = ew.convert_element_type(a, target)
    centre = _mean_fn(a, axes, keepdims=True, where=where) if mean is None else asarray(mean, target)
    centred = ew.sub_p.bind(*broadcast_args(a, broadcast_to(centre, a.shape)))
    # The variance of complex values is the mean of |x - mean|^2: real (NumPy's definition).
    sq = _masked(abs_squared(centred), where, 0)
    total = red.reduce_sum(sq, axes)
    target = _dt.real_dtype(target)
    n = _count(a, axes, where)
    if isinstance(n, int) and n - ddof > 0:
        res = ew.div_p.bind(total, constant(n - ddof, target))
    else:
        # NaN where no degree of freedom is left, through a select as JAX's (so forward-mode
        # tangents are 0 there): var divides by n - ddof first (a cotangent meets 0 / 0 at
        # n == ddof: grad is NaN), nanvar by 1 (grad 0).
        if isinstance(n, int):
            denom = constant(n - ddof, target, shape_of(total))
        else:
            denom = ew.sub_p.bind(ew.convert_element_type(n, target), constant(ddof, target))
        left = ew.gt_p.bind(denom, constant(0, target, shape_of(total)))
        if divide_by_one:
            denom = select(left, denom, constant(1, target, shape_of(total)))
        res = select(left, ew.div_p.bind(total, denom), constant(np.nan, target, shape_of(total)))
    return _keepdims(_round_to(res, result_dtype), a.shape, axes, keepdims)


def _integer_variance(a, axes, dtype, ddof, keepdims, where, centre, divide_by_one):
    """JAX's ``var(a, dtype=<an integer dtype>)``: computed in that dtype (the mean, the squares and
    the division truncate), then NaN where no degree of freedom is left through a ``where`` with a
    Python float, which makes the result the default float dtype; ``nanvar``'s stays integer."""
    a = ew.convert_element_type(a, dtype)
    axis = tuple(axes)
    if centre is None:
        centre = _mean_fn(a, axis, dtype=dtype, keepdims=True, where=where)
    centred = ew.sub_p.bind(*broadcast_args(a, convert(asarray(centre), dtype)))
    squares = ew.mul_p.bind(centred, centred)
    n = _count(a, axes, where)
    if divide_by_one:  # (JAX's nanvar: the count in the default int, the sum promoted, a float quotient)
        n = np.int64(n) if isinstance(n, int) else n
        n = subtract(n if not keepdims or not shape_of(n) else _keepdims(n, a.shape, axes, keepdims), ddof)
        empty = less_equal(n, 0)
        total = where3(empty, np.nan, sum(squares, axis, keepdims=keepdims, where=where))
        res = true_divide(total, where3(empty, 1, n))
        return ew.convert_element_type(asarray(res), dtype)
    total = sum(squares, axis, dtype=dtype, keepdims=keepdims, where=where)
    n = constant(n, dtype) if isinstance(n, int) else ew.convert_element_type(n, dtype)
    n = ew.sub_p.bind(n, constant(ddof, dtype))
    if keepdims and shape_of(n):
        n = _keepdims(n, a.shape, axes, keepdims)
    res = ew.div_p.bind(*broadcast_args(total, n))
    return where3(ew.gt_p.bind(*broadcast_args(n, constant(0, dtype))), res, np.nan)


_mean_fn = mean


def std(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None
):
    """Standard deviation over ``axis`` (the square root of ``var``; derivative 0, not NaN, where
    the variance is 0).

    >>> std(np.array([1.0, 3.0])).item()
    1.0
    """
    _check_where_initial("std", where)
    if dtype is not None and not _dt.is_inexact(check_user_dtype(dtype, "std")):
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {np.dtype(dtype)}")
    return safe_sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted average over ``axis``; with ``returned`` also the sum of the weights.

    >>> average(np.array([1.0, 2.0, 3.0]), weights=np.array([3.0, 1.0, 0.0])).item()
    1.25
    """
    a = asarray(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        axes = normalize_axes(axis, a.ndim)
        count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
        scl = constant(count, avg.dtype, shape_of(avg))
        return (avg, scl) if returned else avg
    w = asarray(weights)
    a, w = promote_args(a, w)
    dtype = _float_dtype(a.dtype)
    a, w = convert(a, dtype), convert(w, dtype)
    if a.shape != w.shape:
        if axis is None:
            raise TypeError("average: axis must be specified when shapes of a and weights differ")
        # weights along the reduced axes, in the order ``axis`` names them (JAX's N-D weights)
        axes_ = tuple(
            normalize_axis(ax, a.ndim) for ax in (axis if isinstance(axis, tuple | list) else (axis,))
        )
        if w.ndim != len(axes_):
            raise TypeError(
                f"average: weights of shape {w.shape} must have one dimension per axis in {axis} when "
                "shapes of a and weights differ"
            )
        if w.shape != tuple(a.shape[ax] for ax in axes_):
            raise ValueError("average: shape of weights not compatible with specified axis")
        order = tuple(int(i) for i in np.argsort(axes_))
        w = st.broadcast_in_dim(st.transpose(w, order), a.shape, tuple(axes_[i] for i in order))
    scl = sum(w, axis, keepdims=keepdims)
    avg = ew.div_p.bind(*broadcast_args(sum(ew.mul_p.bind(a, w), axis, keepdims=keepdims), scl))
    return (avg, broadcast_to(scl, shape_of(avg))) if returned else avg


# ----------------------------------------------------------------------------------------------
# NaN-ignoring reductions


def _nan_replaced(a, fill):
    a = asarray(a)
    if not _dt.is_inexact(a.dtype):
        return a
    return select(isnan(a), constant(fill, a.dtype), a)


@jitted_eagerly(static_argnames=("axis", "dtype", "keepdims"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaNs as zero.

    >>> nansum(np.array([1.0, np.nan, 2.0])).item()
    3.0
    """
    _check_where_initial("nansum", where, initial)
    return sum(_nan_replaced(a, 0), axis, dtype, out, keepdims, initial, where)


@jitted_eagerly(static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaNs as one.

    >>> nanprod(np.array([2.0, np.nan, 3.0])).item()
    6.0
    """
    _check_where_initial("nanprod", where, initial)
    return prod(_nan_replaced(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extremum(fn, for_max, a, axis, out, keepdims, initial, where):
    _check_where_initial("nanmax" if for_max else "nanmin", where, initial)
    a = asarray(a)
    if not _dt.is_inexact(a.dtype):
        return fn(a, axis, out, keepdims, initial, where)
    res = fn(_nan_replaced(a, _identity(a.dtype, for_max)), axis, out, keepdims, initial, where)
    if initial is not None:  # with ``initial`` an all-NaN (or empty) slice gives it, as JAX's
        return res
    # All-NaN slices give NaN, as in NumPy and JAX: the whole slice, whatever ``where`` selects.
    all_nan = all(isnan(a), axis, keepdims=keepdims)
    return select(all_nan, constant(np.nan, a.dtype), res)


@jitted_eagerly(static_argnames=("axis", "keepdims"))
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``max`` ignoring NaNs (NaN for all-NaN slices).

    >>> nanmax(np.array([1.0, np.nan, 3.0])).item()
    3.0
    """
    return _nan_extremum(max, True, a, axis, out, keepdims, initial, where)


@jitted_eagerly(static_argnames=("axis", "keepdims"))
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``min`` ignoring NaNs (NaN for all-NaN slices).

    >>> nanmin(np.array([1.0, np.nan, 3.0])).item()
    1.0
    """
    return _nan_extremum(min, False, a, axis, out, keepdims, initial, where)


def _not_nan_mask(a, where):
    a = asarray(a)
    keep = ew.not_p.bind(isnan(a)) if _dt.is_inexact(a.dtype) else constant(True, np.bool_, a.shape)
    if where is not None:
        keep = ew.and_p.bind(keep, broadcast_to(as_bool(where), a.shape))
    return keep


@jitted_eagerly(static_argnames=("axis", "dtype", "keepdims"))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):  # (JAX's: where positional)
    """``mean`` ignoring NaNs.

    >>> nanmean(np.array([1.0, np.nan, 3.0])).item()
    2.0
    """
    _check_where_initial("nanmean", where)
    a = asarray(a)
    if not _dt.is_inexact(a.dtype):
        return mean(a, axis, dtype, out, keepdims, where=where)
    # (JAX's: the sum of the non-NaN elements over their count, both in the result's dtype --
    # float16 accumulates in float16 there, where mean would accumulate in float32)
    dtype = a.dtype if dtype is None else check_user_dtype(dtype, "mean")
    count = sum(_not_nan_mask(a, None), axis, dtype, out, keepdims, where=where)
    total = nansum(a, axis, dtype, out, keepdims, where=where)
    return ew.div_p.bind(total, count)


@jitted_eagerly(static_argnames=("axis", "dtype", "keepdims", "ddof"))
def nanvar(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, *, correction=None
):
    """``var`` ignoring NaNs.

    >>> nanvar(np.array([1.0, np.nan, 3.0])).item()
    1.0
    """
    _no_out(out, "nanvar")
    _check_where_initial("nanvar", where)
    keep = _not_nan_mask(a, where)
    return _variance(
        _nan_replaced(a, 0), axis, dtype, ddof, keepdims, keep, mean, correction, divide_by_one=True
    )


@jitted_eagerly(static_argnames=("axis", "dtype", "keepdims", "ddof"))
def nanstd(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, *, correction=None
):
    """``std`` ignoring NaNs.

    >>> nanstd(np.array([1.0, np.nan, 3.0])).item()
    1.0
    """
    _check_where_initial("nanstd", where)
    var_ = nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return safe_sqrt(var_)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
