"""Further NumPy functions of funcgrad.numpy beyond the first-wave list: append, bincount, isin,
unique, histogram, vander, polyval, cov, corrcoef, nan-aware arg reductions and order statistics,
index conversions, fill_diagonal and small predicates (``vectorize`` and ``apply_along_axis`` are
``vectorization``'s).

Layer: surface. Imports the other funcgrad.numpy modules, the kernel's batching (``vmap_flat``, for
``vectorize`` and ``apply_along_axis``) and the primitive catalog.

Functions whose output shape depends on values (``unique``, ``histogram`` with computed edges)
need concrete inputs, or a static ``size=``/``length=`` under ``jit``, as in jax.numpy.
"""

from __future__ import annotations

import numpy as np

from funcgrad._shardings import NamedSharding, resolve
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import reductions, sorting
from funcgrad.numpy._core import (
    array_of_stand_in,
    asarray,
    aval,
    broadcast_to,
    check_user_dtype,
    concrete_int,
    concrete_or_error,
    constant,
    convert,
    normalize_axis,
    promote_args,
    promote_args_inexact,
    select,
)
from funcgrad.numpy._dtypes import result_type
from funcgrad.numpy.complexes import conjugate, imag, real, reject_complex
from funcgrad.numpy.contractions import matmul
from funcgrad.numpy.creation import linspace
from funcgrad.numpy.index_update import IndexUpdateHelper
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.lookup import diagonal
from funcgrad.numpy.manipulation import concatenate, moveaxis, ravel, reshape, stack
from funcgrad.numpy.sorting import argsort, searchsorted
from funcgrad.numpy.transcendental import isnan, sqrt
from funcgrad.numpy.ufuncs import add, as_bool, clip, floor_divide, multiply, remainder, subtract, where3
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._sharding_rules import ShardingTypeError

__all__ = [
    "append",
    "array_equiv",
    "bincount",
    "choose",
    "compress",
    "corrcoef",
    "cov",
    "extract",
    "fabs",
    "fill_diagonal",
    "histogram",
    "iscomplexobj",
    "isin",
    "isrealobj",
    "isscalar",
    "nanargmax",
    "nanargmin",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "polyval",
    "ravel_multi_index",
    "unravel_index",
    "vander",
]


def append(arr, values, axis=None):
    """``arr`` with ``values`` appended (both flattened if ``axis`` is None).

    >>> append(np.array([1, 2]), [3, 4]).tolist()
    [1, 2, 3, 4]
    """
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis)


def fabs(x, /):
    """Absolute values of a real array, computed in floating point.

    >>> fabs(np.array([-1, 2])).tolist()
    [1.0, 2.0]
    """
    (x,) = promote_args_inexact(x)
    reject_complex("fabs", x, why="it is the magnitude of real numbers (use abs(z))")
    return ew.abs_p.bind(x)


# ----------------------------------------------------------------------------------------------
# Counting and set-like functions


def bincount(x, weights=None, minlength: int = 0, *, length=None, out_sharding=None):
    """Counts (or summed ``weights``) of each non-negative integer in ``x``; negative values count
    as 0, as in JAX.

    The result has ``max(x) + 1`` entries (at least ``minlength``), which needs a concrete ``x``;
    under ``jit`` pass ``length=`` (values at or past it are dropped). ``out_sharding=``, fully
    replicated (or unreduced), is the scatter's, as JAX's (``x`` may be split over mesh axes).

    >>> bincount(np.array([0, 1, 1, 3])).tolist()
    [1, 2, 0, 1]
    >>> bincount(np.array([0, 1, 1]), weights=np.array([0.5, 1.0, 2.0]), length=3).tolist()
    [0.5, 3.0, 0.0]
    >>> bincount(np.array([-1, -1, 1, 3, 10]), length=5).tolist()
    [2, 1, 0, 1, 0]
    """
    x = asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "biu":
        raise ValueError("bincount: x must be a one-dimensional array of non-negative integers")
    if x.dtype == np.bool_:  # (counts of 0 and 1, as JAX; not a boolean mask)
        x = convert(x, np.int32)
    if length is None:
        value = concrete_or_error(x, "bincount without length=")
        length = max(max(int(value.max()), 0) + 1 if value.size else 0, int(minlength))
    length = concrete_int(length, "bincount's length")
    if weights is None:
        w = constant(1, _dt.default_int, x.shape)
    else:
        (w,) = promote_args(weights)
        w = broadcast_to(w, x.shape)
        if w.dtype == np.bool_:
            w = convert(w, _dt.default_int)
    zeros = constant(0, aval(w).dtype, (length,))
    if x.dtype.kind == "i":  # JAX clips negative values to 0 (NumPy raises); past length drops
        x = select(ew.lt_p.bind(x, constant(0, x.dtype)), constant(0, x.dtype, x.shape), x)
    if out_sharding is None:
        return IndexUpdateHelper(zeros)[x].add(w, mode="drop")
    s = resolve(out_sharding, "bincount", "out_sharding")
    if isinstance(s, NamedSharding) and any(d is not None for d in s.spec):
        raise ShardingTypeError(
            "out_sharding passed to `jnp.bincount` can only be fully replicated or fully unreduced along "
            "all mesh axes"
        )
    return IndexUpdateHelper(zeros)[x].add(w, mode="drop", out_sharding=s)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of ``element`` occurs in ``test_elements`` (same shape as ``element``).

    ``method`` (JAX's: ``'auto'``, ``'compare_all'``, ``'binary_search'``, ``'sort'``) names an
    algorithm; all give the same answer (NaN is in nothing), so here every one compares all pairs.

    >>> isin(np.array([1, 2, 3]), [2, 5]).tolist()
    [False, True, False]
    """
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(
            f"method={method!r} is not implemented; options are "
            "'compare_all', 'binary_search', 'sort', and 'auto'"
        )
    element, test = promote_args(asarray(element), asarray(test_elements))
    flat = ravel(test)
    shape = element.shape
    expanded = reshape(element, (*shape, 1))
    hits = ew.eq_p.bind(
        broadcast_to(expanded, (*shape, flat.shape[0])),
        broadcast_to(reshape(flat, (1,) * len(shape) + flat.shape), (*shape, flat.shape[0])),
    )
    found = reductions.any(hits, axis=-1) if flat.shape[0] else constant(False, np.bool_, shape)
    return ew.not_p.bind(found) if invert else found


# An empty a with a bin count and no range: JAX's histogram takes the data's minimum and raises
# (NumPy bins over [0, 1]).
_EMPTY_RANGE = "zero-size array to reduction operation min which has no identity"


def count_bin_edges(a, bins: int, range=None):
    """The ``bins + 1`` edges of a bin count, JAX's ``histogram_bin_edges`` formula, the same eager
    and traced: ``range`` (default the data's minimum and maximum) in ``a``'s (inexact) dtype,
    widened by 0.5 on each side where its width ``hi - lo`` is 0, then ``linspace`` in that dtype
    (no NumPy checks of the bounds: an infinite or reversed range spaces as jax's does)."""
    if range is None:
        if not a.shape[0]:  # (the data's minimum: JAX's error, eager and traced)
            raise ValueError(_EMPTY_RANGE)
        lo, hi = reductions.min(a), reductions.max(a)
    else:
        if np.shape(range) != (2,):
            raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
        lo, hi = (convert(asarray(v), a.dtype) for v in range)
    flat = ew.eq_p.bind(
        ew.sub_p.bind(reductions.max(stack([lo, hi])), reductions.min(stack([lo, hi]))), constant(0, a.dtype)
    )
    half = constant(0.5, a.dtype)
    lo, hi = select(flat, ew.sub_p.bind(lo, half), lo), select(flat, ew.add_p.bind(hi, half), hi)
    return linspace(lo, hi, int(bins) + 1, dtype=a.dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts (or summed ``weights``) of ``a`` in ``bins`` (a count with a static ``range``, or the
    edges), and the edges; the last bin includes its right edge, as in NumPy.

    >>> [x.tolist() for x in histogram(np.array([0.0, 0.5, 1.0, 2.0]), bins=2, range=(0, 2))]
    [[2.0, 2.0], [0.0, 1.0, 2.0]]
    """
    a = ravel(asarray(a))
    (a,) = promote_args_inexact(a)
    if a.dtype.kind == "c" and (a.shape[0] or range is not None or not isinstance(bins, int | np.integer)):
        return _complex_histogram(a, bins, range, weights, density)
    if isinstance(bins, int | np.integer):
        edges = count_bin_edges(a, bins, range)
    else:
        edges = convert(asarray(bins), a.dtype)
    n_bins = edges.shape[0] - 1
    position = searchsorted(edges, a, side="right")
    idx_dtype = aval(position).dtype  # (int32 under JAX's rules, NOTE: [JAX's dtype rules in 64-bit mode])
    # JAX's counting: a value equal to the last edge is in the last bin; one below the first edge
    # lands at 0 (cut off after), one above the last past the end (dropped), and a value the
    # comparisons cannot place (NaN, or any with NaN edges) where searchsorted puts it
    at_end = ew.eq_p.bind(a, getitem(edges, -1))
    position = select(at_end, constant(n_bins, idx_dtype), position)
    w = constant(1, a.dtype, a.shape) if weights is None else convert(ravel(asarray(weights)), a.dtype)
    counts = IndexUpdateHelper(constant(0, a.dtype, (n_bins + 1,)))[position].add(w, mode="drop")
    counts = getitem(counts, slice(1, None))
    if density:
        widths = ew.sub_p.bind(getitem(edges, slice(1, None)), getitem(edges, slice(None, -1)))
        counts = ew.div_p.bind(ew.div_p.bind(counts, widths), reductions.sum(counts))  # (JAX's order)
    return counts, edges


def _complex_histogram(a, bins, range, weights, density):
    # JAX's formula, whose comparisons (searchsorted's) order complex values lexicographically: the
    # edges span [min, max] of a in that order, real and imaginary parts both (the real path's
    # float(min)/ge dropped the imaginary parts, eager, and refused complex under jit)
    if isinstance(bins, int | np.integer):
        if range is None:
            lo, hi = reductions.min(a), reductions.max(a)
        else:
            lo, hi = (asarray(v, a.dtype) for v in range)
        same = ew.eq_p.bind(lo, hi)
        half = constant(0.5, a.dtype)
        lo, hi = select(same, ew.sub_p.bind(lo, half), lo), select(same, ew.add_p.bind(hi, half), hi)
        edges = linspace(lo, hi, int(bins) + 1, dtype=a.dtype)
    else:
        edges = convert(asarray(bins), a.dtype)
    n_edges = edges.shape[0]
    position = searchsorted(edges, a, side="right")
    idx_dtype = aval(position).dtype
    at_end = ew.eq_p.bind(a, getitem(edges, -1))
    position = select(at_end, constant(n_edges - 1, idx_dtype, a.shape), position)
    w = constant(1, a.dtype, a.shape) if weights is None else convert(ravel(asarray(weights)), a.dtype)
    counts = getitem(
        IndexUpdateHelper(constant(0, a.dtype, (n_edges,)))[position].add(w, mode="drop"), slice(1, None)
    )
    if density:
        widths = ew.sub_p.bind(getitem(edges, slice(1, None)), getitem(edges, slice(None, -1)))
        counts = ew.div_p.bind(ew.div_p.bind(counts, widths), reductions.sum(counts))
    return counts, edges


# ----------------------------------------------------------------------------------------------
# NaN-aware arg reductions and order statistics


def nanargmax(a, axis=None, out=None, keepdims=False):
    """Index of the maximum ignoring NaNs (-1 for an all-NaN slice).

    >>> nanargmax(np.array([1.0, np.nan, 3.0])).item()
    2
    """
    return _nanarg(reductions.argmax, -np.inf, a, axis, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=False):
    """Index of the minimum ignoring NaNs (-1 for an all-NaN slice).

    >>> nanargmin(np.array([1.0, np.nan, -3.0])).item()
    2
    """
    return _nanarg(reductions.argmin, np.inf, a, axis, keepdims)


def _nanarg(fn, fill, a, axis, keepdims):
    a = asarray(a)
    if not _dt.is_inexact(a.dtype):
        return fn(a, axis, keepdims=keepdims)
    nan = isnan(a)
    res = fn(select(nan, constant(fill, a.dtype), a), axis, keepdims=keepdims)
    all_nan = reductions.all(nan, axis, keepdims=keepdims)
    return select(all_nan, constant(-1, res.dtype), res)


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanquantile(
    a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None
):
    """``quantile`` ignoring NaNs: each slice ranks its non-NaN values (an all-NaN slice gives
    NaN). Traceable and differentiable, like ``quantile``.

    >>> nanquantile(np.array([1.0, np.nan, 3.0]), 0.5).item()
    2.0
    """
    reductions._no_out(out, "nanquantile")
    return sorting.nan_aware_quantile(a, q, axis, method, keepdims, ignore_nan=True, weights=weights)


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanpercentile(
    a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None
):
    """``percentile`` ignoring NaNs.

    >>> nanpercentile(np.array([1.0, np.nan, 3.0]), 50).item()
    2.0
    """
    q = asarray(q)
    if not _dt.is_inexact(q.dtype):  # (a Python number stays weak, as in percentile)
        q = ew.convert_element_type(q, _dt.inexact_of(q.dtype), weak_type=q.weak_type)
    return nanquantile(a, q / 100, axis, out, overwrite_input, method, keepdims, weights=weights)


@jitted_eagerly(static_argnames=("axis", "overwrite_input", "keepdims"))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``median`` ignoring NaNs.

    >>> nanmedian(np.array([1.0, np.nan, 3.0, 4.0])).item()
    3.0
    """
    return nanquantile(a, 0.5, axis, method="midpoint", keepdims=keepdims)


# ----------------------------------------------------------------------------------------------
# Polynomials and statistics


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the vector ``x`` (columns are powers of ``x``).

    >>> vander(np.array([1, 2, 3]), 3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else concrete_int(N, "vander's N")
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    cols = [_power(x, int(p)) for p in powers]
    return stack(cols, axis=1) if cols else constant(0, x.dtype, (x.shape[0], 0))


def _power(x, p: int):
    if p == 0:
        return constant(1, aval(x).dtype, aval(x).shape)
    return ew.integer_pow(x, p)


@jitted_eagerly(static_argnames=("unroll",))
def polyval(p, x, *, unroll: int = 16):
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x`` (Horner).
    As in NumPy, ``p`` may have more dimensions: the coefficients run along its first axis and
    the rest broadcasts against ``x``. ``unroll`` (JAX's parameter) is accepted; the loop is always
    unrolled here (the degree is static).

    >>> polyval(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0])).tolist()
    [3.0, 6.0, 11.0]
    >>> polyval(np.array([[1.0, 0.0], [0.0, 1.0]]), 2.0).tolist()
    [2.0, 1.0]
    """
    p, x = promote_args(asarray(p), asarray(x))
    if p.ndim == 0:
        raise ValueError("polyval: p must have at least one dimension (the coefficients)")
    shape = np.broadcast_shapes(x.shape, p.shape[1:])
    out = constant(0, x.dtype, shape)
    xb = broadcast_to(x, shape)
    for i in range(p.shape[0]):
        out = ew.add_p.bind(ew.mul_p.bind(out, xb), broadcast_to(getitem(p, i), shape))
    return out


@jitted_eagerly(static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``, optionally
    with integer frequency weights ``fweights`` and observation weights ``aweights`` (NumPy's
    normalisation), computed in ``dtype`` (inexact) if given. No samples give NaNs, no variables
    an empty matrix (JAX's).

    >>> cov(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    >>> round(float(cov(np.array([0.0, 1.0, 2.0]), aweights=np.array([1.0, 1.0, 2.0]))), 12)
    1.1
    """
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    (m,) = promote_args_inexact(m)
    if dtype is not None and _dt.kind(np.dtype(dtype)) not in "fc":
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    x = reshape(m, (1, -1)) if m.ndim < 2 else m
    if not rowvar and m.ndim != 1:  # (a 1-D m is one variable either way, as in JAX)
        x = moveaxis(x, 0, 1)
    if x.shape[0] == 0:
        return reshape(constant(0, x.dtype, (0,)), (0, 0))
    if y is not None:
        (yy,) = promote_args_inexact(asarray(y))
        yy = reshape(yy, (1, -1)) if yy.ndim < 2 else yy
        if not rowvar and yy.shape[0] != 1:
            yy = moveaxis(yy, 0, 1)
        x, yy = promote_args(x, yy)
        x = concatenate([x, yy], 0)
    n = x.shape[1]
    if n == 0:  # no samples: every covariance is NaN (0/0), as JAX's
        return constant(np.nan, x.dtype, () if x.shape[0] == 1 else (x.shape[0], x.shape[0]))
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    w = None
    if fweights is not None:
        fw = asarray(fweights)
        if fw.ndim > 1 or fw.shape[0] != n or not np.issubdtype(fw.dtype, np.integer):
            raise ValueError(
                f"cov: fweights must be a one-dimensional integer array of length {n}, got "
                f"{fw.dtype}{fw.shape}"
            )
        w = fw
    if aweights is not None:
        aw = asarray(aweights)
        if aw.ndim > 1 or aw.shape[0] != n:
            raise ValueError(
                f"cov: aweights must be a one-dimensional array of length {n}, got shape {aw.shape}"
            )
        w = aw if w is None else w * aw
    if dtype is not None:
        x = convert(x, np.dtype(dtype))
    if w is None:
        centred = ew.sub_p.bind(x, broadcast_to(reductions.mean(x, axis=1, keepdims=True), x.shape))
        c = matmul(centred, conjugate(moveaxis(centred, 0, 1)))  # X X^H: Hermitian for complex X
        out = ew.div_p.bind(c, constant(n - ddof, c.dtype))
        return reshape(out, ()) if out.shape == (1, 1) else out
    # The weights broadcast along the variables explicitly (jax_numpy_rank_promotion="raise" is
    # for the caller's operands, not cov's own).
    w = broadcast_to(reshape(asarray(w).astype(x.dtype), (1, n)), x.shape)
    w_sum = reductions.sum(getitem(w, 0))
    avg = reductions.sum(x * w, axis=1, keepdims=True) / w_sum
    if ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * reductions.sum(getitem(w, 0) * asarray(aweights).astype(x.dtype)) / w_sum
    centred = x - broadcast_to(avg, x.shape)
    out = matmul(centred * w, conjugate(moveaxis(centred, 0, 1))) / fact
    return reshape(out, ()) if out.shape == (1, 1) else out


@jitted_eagerly(static_argnames=("rowvar", "dtype"))
def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients (``cov`` normalised by the standard deviations), in
    ``dtype`` (a float or complex type, JAX's keyword) when given.

    >>> corrcoef(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    if dtype is not None and _dt.kind(check_user_dtype(dtype, "corrcoef")) not in "fc":
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got {dtype=}")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return ew.div_p.bind(c, c)
    d = sqrt(real(diagonal(c)))
    if c.dtype.kind == "c":
        d = convert(d, c.dtype)
    c = ew.div_p.bind(c, broadcast_to(reshape(d, (-1, 1)), c.shape))
    c = ew.div_p.bind(c, broadcast_to(reshape(d, (1, -1)), c.shape))
    if c.dtype.kind == "c":  # NumPy clips the real and imaginary parts on their own
        return cx.complex_p.bind(_clip_unit(real(c)), _clip_unit(imag(c)))
    return _clip_unit(c)


def _clip_unit(c):
    one = constant(1, c.dtype)
    return ew.max_p.bind(ew.min_p.bind(c, one), ew.neg_p.bind(one))


# ----------------------------------------------------------------------------------------------
# Index conversions, diagonals, predicates


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """Flat indices of the index tuples ``multi_index`` into an array of shape ``dims``, as JAX's:
    ``mode='raise'`` needs concrete indices, ``'clip'``/``'wrap'`` handle out-of-range ones,
    ``'ignore'`` trusts them; the result is in ``dtype`` or the indices' integer type (with a
    Python int weak: int16 indices give int16).

    >>> ravel_multi_index((np.array([0, 1]), np.array([2, 0])), (2, 3)).tolist()
    [2, 3]
    """
    if len(multi_index) != len(dims):
        raise ValueError("parameter multi_index must be a sequence of length len(dims)")
    dims = tuple(concrete_int(d, "dims") for d in dims)
    idx = [asarray(i) for i in multi_index]
    out_dtype = result_type(int, *idx) if dtype is None else check_user_dtype(dtype, "ravel_multi_index")
    if _dt.kind(out_dtype) not in "iu":
        raise ValueError(f"dtype={out_dtype} is not an integer type.")
    if int(np.prod(dims, dtype=object)) - 1 > int(_dt.iinfo(out_dtype).max):
        raise ValueError(
            f"jnp.ravel_multi_index: dtype={out_dtype} not large enough to hold flattened index for "
            f"dims={dims}. Use the dtype argument to pass a suitable dtype."
        )
    for i in idx:
        if _dt.kind(i.dtype) not in "iu":
            raise TypeError("only int indices permitted")
    if mode == "raise":
        for i in idx:
            if isinstance(i, core.Tracer):  # (JAX's words)
                raise core.ConcretizationTypeError(
                    "Abstract tracer value encountered where concrete value is expected: traced array "
                    f"with shape {i.aval.str_short()}.\nThe error occurred because ravel_multi_index was "
                    "jit-compiled with mode='raise'. Use mode='wrap' or mode='clip' instead."
                )
        values = [concrete_or_error(i, "ravel_multi_index with mode='raise'") for i in idx]
        if any(np.any((v < 0) | (v >= d)) for v, d in zip(values, dims)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [remainder(i, d) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order == "F":
        strides = np.cumprod((1, *dims[:-1]))
    elif order == "C":
        strides = np.cumprod((1, *dims[1:][::-1]))[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    total = constant(0, out_dtype)
    for i, stride in zip(idx, strides):
        total = add(total, multiply(i.astype(out_dtype), int(stride)))
    return total


def unravel_index(indices, shape):
    """The index tuple of each flat index into an array of ``shape`` (out-of-range ones clip).

    >>> [x.tolist() for x in unravel_index(np.array([2, 3]), (2, 3))]
    [[0, 1], [2, 0]]
    """
    if any(isinstance(d, core.Tracer) for d in shape):
        return _unravel_traced_shape(asarray(indices), shape)
    shape = tuple(concrete_int(d, "shape") for d in shape)
    indices = asarray(indices)
    idx = convert(indices, _dt.default_int)
    size = int(np.prod(shape, dtype=np.int64))
    idx = select(
        ew.lt_p.bind(idx, constant(0, idx.dtype)), ew.add_p.bind(idx, constant(size, idx.dtype)), idx
    )
    idx = ew.max_p.bind(ew.min_p.bind(idx, constant(max(size - 1, 0), idx.dtype)), constant(0, idx.dtype))
    outs = []
    for d in reversed(shape):
        outs.append(ew.rem_p.bind(idx, constant(d, idx.dtype)))
        idx = ew.div_p.bind(idx, constant(d, idx.dtype))
    if _dt.kind(indices.dtype) in "iu" and (indices.dtype != idx.dtype or indices.weak_type):
        # JAX's: the coordinates in the indices' own integer dtype and weak type (computed wide)
        outs = [convert(o, indices.dtype, indices.weak_type) for o in outs]
    return tuple(reversed(outs))


def _unravel_traced_shape(indices, shape):
    """``unravel_index`` with traced dimensions (JAX takes them): JAX's floor divisions, an index
    past the end giving the last position and one before ``-size`` the first."""
    idx, outs = indices, [None] * len(shape)
    for i in reversed(range(len(shape))):
        idx, outs[i] = floor_divide(idx, shape[i]), remainder(idx, shape[i])
    too_big = idx > 0
    too_small = idx < -1 if _dt.kind(idx.dtype) == "i" else idx != idx
    return tuple(where3(too_big, subtract(s, 1), where3(too_small, 0, o)) for s, o in zip(shape, outs))


def fill_diagonal(a, val, wrap=False, *, inplace=False):
    """``a`` with its main diagonal set to ``val`` (a new array: ``inplace`` must be False).

    >>> fill_diagonal(np.zeros((2, 2)), 5.0).tolist()
    [[5.0, 0.0], [0.0, 5.0]]
    """
    if inplace:
        raise ValueError("fill_diagonal: funcgrad arrays are immutable; pass inplace=False")
    a = asarray(a)
    if a.ndim < 2 or (a.ndim > 2 and len(set(a.shape)) != 1):
        raise ValueError("array must be at least 2-d (and all dimensions equal beyond 2-d)")
    n = min(a.shape)
    idx = tuple(np.arange(n) for _ in range(a.ndim))
    val = ravel(asarray(val))
    vals = getitem(val, np.arange(n) % max(val.shape[0], 1))
    return IndexUpdateHelper(a)[idx].set(vals, unique_indices=True)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast to one shape with equal elements (a 0-d boolean Array).

    >>> bool(array_equiv(np.array([1, 2]), np.array([[1, 2], [1, 2]])))
    True
    """
    a1, a2 = asarray(a1), asarray(a2)
    try:
        shape = np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return constant(False, np.bool_)
    a1, a2 = promote_args(a1, a2)
    return reductions.all(ew.eq_p.bind(broadcast_to(a1, shape), broadcast_to(a2, shape)))


def isscalar(element):
    """True for Python scalars, NumPy scalars and 0-d arrays (as in jax.numpy).

    >>> isscalar(1.0), isscalar(np.ones(2))
    (True, False)
    """
    if isinstance(element, (*python_scalar_types, np.generic)):
        return True
    if isinstance(element, list | tuple):
        return False
    element = array_of_stand_in(element)  # (JAX's: an object with __jax_array__ is its array)
    return hasattr(element, "shape") and len(element.shape) == 0


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype.

    >>> iscomplexobj(np.ones(2))
    False
    """
    if x is None:
        return False
    if isinstance(x, list | tuple):  # (element by element: an element may be traced under jit)
        return any(iscomplexobj(v) for v in x)
    x = array_of_stand_in(x)
    dtype = getattr(x, "dtype", None)  # as JAX: anything with a dtype (a ShapeDtypeStruct, an aval)
    if isinstance(dtype, np.dtype):
        return dtype.kind == "c"
    # (a typed PRNG key's dtype is an extended one, without a kind: not complex, as in JAX)
    return getattr(aval(x).dtype, "kind", None) == "c"


def isrealobj(x):
    """Whether ``x`` does not have a complex dtype.

    >>> isrealobj(np.ones(2))
    True
    """
    return not iscomplexobj(x)


def compress(condition, a, axis=None, *, out=None, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` (the flattened ``a`` if None) where the 1-D
    ``condition`` is true. ``condition`` must be concrete, unless ``size`` fixes the output length:
    then the first ``size`` selected slices are kept and missing ones are ``fill_value``, so it
    works under ``jit`` and ``vmap`` (``jax.numpy.compress``'s semantics).

    >>> compress(np.array([True, False, True]), np.array([1, 2, 3])).tolist()
    [1, 3]
    >>> compress(np.array([False, True, False]), np.array([1, 2, 3]), size=2, fill_value=-1).tolist()
    [2, -1]
    """
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported (arrays are immutable)")
    cond = as_bool(asarray(condition))
    a = asarray(a)
    if cond.ndim != 1:
        raise ValueError(f"compress: condition must be a 1-D array, got shape {cond.shape}")
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    a = moveaxis(a, axis, 0)
    n = min(a.shape[0], cond.shape[0])
    cond, extra = getitem(cond, slice(0, n)), getitem(cond, slice(n, None))
    a = getitem(a, slice(0, n))
    if size is None:
        picked = np.asarray(concrete_or_error(cond, "compress's condition (or pass size=)"))
        if np.any(concrete_or_error(extra, "compress's condition (or pass size=)")):
            raise ValueError("compress: condition contains entries that are out of bounds")
        result = getitem(a, np.nonzero(picked)[0])
    else:
        size = concrete_int(size, "compress's size")
        if not 0 <= size <= n:
            raise ValueError(f"compress: size must be in [0, {n}] (the length of the axis), got size={size}")
        mask = reshape(cond, (n,) + (1,) * (a.ndim - 1))
        filled = select(mask, a, asarray(fill_value, a.dtype))
        order = argsort(cond, stable=True, descending=True)
        result = getitem(getitem(filled, order), slice(0, size))
    return moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is true, flattened (concrete ``condition``
    unless ``size`` fixes the output length, as in ``compress``).

    >>> extract(np.array([[True, False], [False, True]]), np.array([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    return compress(ravel(asarray(condition)), ravel(asarray(arr)), size=size, fill_value=fill_value)


def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` for each position (``mode='clip'``/``'wrap'`` for out-of-range ``a``).

    >>> choose(np.array([0, 1, 0]), [np.array([1, 2, 3]), np.array([10, 20, 30])]).tolist()
    [1, 20, 3]
    """
    a = convert(asarray(a), _dt.default_int)
    choices = promote_args(*[asarray(c) for c in choices])
    n = len(choices)
    if mode == "wrap":
        a = ew.rem_p.bind(
            ew.add_p.bind(ew.rem_p.bind(a, constant(n, a.dtype)), constant(n, a.dtype)), constant(n, a.dtype)
        )
    else:
        a = ew.max_p.bind(ew.min_p.bind(a, constant(n - 1, a.dtype)), constant(0, a.dtype))
    shape = np.broadcast_shapes(a.shape, *[c.shape for c in choices])
    out = broadcast_to(choices[0], shape)
    a = broadcast_to(a, shape)
    for k, c in enumerate(choices[1:], start=1):
        out = select(ew.eq_p.bind(a, constant(k, a.dtype)), broadcast_to(c, shape), out)
    return out
