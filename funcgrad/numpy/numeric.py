"""Differences, integration, convolution and interpolation of funcgrad.numpy (diff, ediff1d, gradient,
trapezoid, convolve, correlate, interp), and the array utilities shape, ndim, size, astype, copy.

Layer: surface. Imports ``funcgrad.numpy._core``, ``indexing``, ``manipulation``, ``contractions``,
``reductions``, ``sorting``, ``ufuncs`` and the primitive catalog.

All are compositions of slicing, elementwise arithmetic, gathers and ``dot_general``; they follow
NumPy's formulas (so values match NumPy to rounding) and are differentiable in their array inputs.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    array_of_stand_in,
    asarray,
    astype_operand,
    aval,
    broadcast_args,
    broadcast_to,
    canonicalize_dtype,
    check_arraylike,
    check_user_dtype,
    concrete_int,
    constant,
    convert,
    normalize_axis,
    promote_args,
    promote_args_inexact,
    warn_complex_to_real,
)
from funcgrad.numpy.complexes import conjugate
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate, moveaxis, ravel, reshape
from funcgrad.numpy.sorting import argsort, searchsorted
from funcgrad.numpy.ufuncs import (
    absolute,
    add,
    greater,
    less,
    less_equal,
    multiply,
    remainder,
    subtract,
    true_divide,
    where3,
)
from funcgrad.primitives import conv as cv
from funcgrad.primitives import dot as dt
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

__all__ = [
    "astype",
    "convolve",
    "copy",
    "correlate",
    "diff",
    "ediff1d",
    "gradient",
    "interp",
    "ndim",
    "shape",
    "size",
    "trapezoid",
]

# ----------------------------------------------------------------------------------------------
# Utilities


def shape(a):
    """The shape of ``a`` (a tuple of ints).

    >>> shape(np.ones((2, 3)))
    (2, 3)
    """
    return tuple(_shape_of(a))


def _shape_of(a, name: str = "shape"):
    # A ShapeDtypeStruct (or another shape-and-dtype stand-in, a Ref) has a shape too, as for
    # np.shape and JAX's jnp.shape/ndim, which read it before their check (flax's summary tables
    # read shapes of abstract parameters); JAX's size checks first.
    s = getattr(a, "shape", None)
    if name != "size" and type(s) is tuple and getattr(a, "dtype", None) is not None:
        return s
    check_arraylike(name, a, emit_warning=True, stacklevel=4)  # (JAX's deprecation for lists)
    a = array_of_stand_in(a)  # (JAX's: an object with __jax_array__ has its array's shape)
    if type(s) is tuple and getattr(a, "dtype", None) is not None and not hasattr(a, "__array__"):
        return s
    return np.shape(a)  # (JAX's, as NumPy's: None and a string are 0-d, a list has its nesting's shape)


def ndim(a):
    """The number of dimensions of ``a``.

    >>> ndim(5.0)
    0
    """
    return len(_shape_of(a, "ndim"))


def size(a, axis=None):
    """The number of elements of ``a`` (along ``axis`` if given).

    >>> size(np.ones((2, 3))), size(np.ones((2, 3)), 1), size(np.ones((2, 3)), (0, 1))
    (6, 3, 6)
    """
    s = _shape_of(a, "size")
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    if isinstance(axis, tuple | list):  # (NumPy 2's and JAX's tuple of axes: their product)
        axes = [normalize_axis(ax, len(s)) for ax in axis]
        if len(set(axes)) != len(axes):  # (NumPy's and JAX's error and words)
            raise ValueError(f"repeated axis in size: {tuple(axis)}")
        return int(np.prod([s[ax] for ax in axes], dtype=np.int64))
    return s[normalize_axis(axis, len(s))]


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (NumPy's casting of out-of-range values).

    >>> astype(np.array([1.7, -1.7]), np.int32).tolist()
    [1, -1]
    """
    # copy=False is the Array API's "only if needed" (never an error); device= places the result.
    if not isinstance(dtype, np.dtype | str | type) and dtype == getattr(x, "dtype", None) and device is None:
        return x  # a key array to its own key dtype (optax's cast_like of PRNG keys), as JAX
    source_extended = _ext.is_extended(getattr(x, "dtype", None))
    if source_extended or _ext.is_extended(dtype):
        # to or from a library's extended dtype: its representation's (NOTE: [extended dtypes])
        return ew.convert_element_type(x if source_extended else asarray(x), dtype)
    dtype = check_user_dtype(dtype, "astype")
    warn_complex_to_real(x, dtype)
    return asarray(astype_operand(x, dtype), dtype, copy=True if copy else None, device=device)


def copy(a, order=None):
    """A copy of ``a``: a new Array with the same value (donating one to a jitted call leaves the
    other usable).

    >>> copy([1, 2]).tolist()
    [1, 2]
    """
    return asarray(a, copy=True)


# ----------------------------------------------------------------------------------------------
# Differences


@jitted_eagerly(static_argnames=("n", "axis"))
def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (booleans: ``!=``, as NumPy).

    >>> diff(np.array([1, 4, 9, 16])).tolist()
    [3, 5, 7]
    >>> diff(np.array([1, 4, 9, 16]), n=2).tolist()
    [2, 2]
    """
    a = asarray(a)
    n = concrete_int(n, "diff's n")
    if n == 0:  # (JAX's order: before the checks of the axis and the rank; prepend/append unused)
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is not None:
            e = asarray(extra)
            if e.ndim == 0:
                shp = list(a.shape)
                shp[axis] = 1
                e = broadcast_to(e, tuple(shp))
            parts.append(e)
        else:
            parts.append(None)
    pieces = [p for p in (parts[0], a, parts[1]) if p is not None]
    if len(pieces) > 1:
        a = concatenate(pieces, axis)
    for _ in range(n):
        m = a.shape[axis]
        if m == 0:
            break
        hi = st.slice_in_dim(a, 1, m, 1, axis)
        lo = st.slice_in_dim(a, 0, m - 1, 1, axis)
        a = ew.ne_p.bind(hi, lo) if a.dtype == np.bool_ else subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with optional values around.

    >>> ediff1d(np.array([1, 2, 4, 7]), to_begin=-99).tolist()
    [-99, 1, 2, 3]
    """
    flat = ravel(ary)
    out = diff(flat) if flat.shape[0] else flat
    pieces = []
    if to_begin is not None:
        pieces.append(convert(ravel(to_begin), out.dtype))
    pieces.append(out)
    if to_end is not None:
        pieces.append(convert(ravel(to_end), out.dtype))
    return concatenate(pieces) if len(pieces) > 1 else out


def _slice(a, start, stop, axis):
    n = a.shape[axis]
    start, stop, _ = slice(start, stop).indices(n)
    return st.slice_in_dim(a, start, max(stop, start), 1, axis)


@jitted_eagerly(static_argnames=("axis", "edge_order"))
def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """Second-order accurate central differences in the interior and first- or second-order
    one-sided differences at the boundaries (NumPy's ``gradient``).

    >>> gradient(np.array([1.0, 2.0, 4.0, 7.0])).tolist()
    [1.0, 1.5, 2.5, 3.0]
    >>> [g.shape for g in gradient(np.ones((3, 4)))]
    [(3, 4), (3, 4)]
    """
    # (the values and the spacings promoted together, as JAX's promote_dtypes_inexact(f, *varargs):
    # float16 values with float32 coordinates give float32, integers with a Python float spacing
    # the default float)
    f, *varargs = promote_args_inexact(asarray(f), *varargs)
    axes = (
        tuple(range(f.ndim))
        if axis is None
        else tuple(normalize_axis(ax, f.ndim) for ax in (axis if isinstance(axis, tuple | list) else (axis,)))
    )
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    outs = [_gradient_axis(f, ax, h, edge_order) for ax, h in zip(axes, spacings)]
    if f.weak_type:  # (weak as the promoted values are, as JAX's: bool values, a Python float spacing)
        outs = [ew.convert_element_type(o, o.dtype, weak_type=True) for o in outs]
    return outs[0] if len(outs) == 1 else outs


def _gradient_axis(f, axis, h, edge_order):
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements "
            "are required."
        )
    dtype = f.dtype
    s = lambda start, stop: _slice(f, start, stop, axis)  # noqa: E731
    if np.ndim(h) == 0:
        h = constant(h, dtype) if not hasattr(h, "dtype") else convert(h, dtype)
        two_h = ew.mul_p.bind(h, constant(2, dtype))
        interior = ew.div_p.bind(ew.sub_p.bind(s(2, None), s(None, -2)), two_h)
        if edge_order == 1:
            first = ew.div_p.bind(ew.sub_p.bind(s(1, 2), s(0, 1)), h)
            last = ew.div_p.bind(ew.sub_p.bind(s(-1, None), s(-2, -1)), h)
        else:
            c = [constant(v, dtype) for v in (-1.5, 2.0, -0.5)]
            first = ew.div_p.bind(_lin3(c, s(0, 1), s(1, 2), s(2, 3)), h)
            c = [constant(v, dtype) for v in (0.5, -2.0, 1.5)]
            last = ew.div_p.bind(_lin3(c, s(-3, -2), s(-2, -1), s(-1, None)), h)
        return concatenate([first, interior, last], axis)
    # Coordinates: NumPy's non-uniform formulas.
    x = convert(asarray(h), dtype)
    if x.ndim != 1 or x.shape[0] != n:
        raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    dx = diff(x)
    shape = [1] * f.ndim
    shape[axis] = n - 2
    dx1 = reshape(st.slice_in_dim(dx, 0, n - 2, 1, 0), shape)
    dx2 = reshape(st.slice_in_dim(dx, 1, n - 1, 1, 0), shape)
    div = lambda p, q: ew.div_p.bind(*promote_args(p, q))  # noqa: E731
    mul = lambda p, q: ew.mul_p.bind(*_bcast(p, q))  # noqa: E731
    a = ew.neg_p.bind(div(dx2, ew.mul_p.bind(dx1, ew.add_p.bind(dx1, dx2))))
    b = div(ew.sub_p.bind(dx2, dx1), ew.mul_p.bind(dx1, dx2))
    c = div(dx1, ew.mul_p.bind(dx2, ew.add_p.bind(dx1, dx2)))
    interior = ew.add_p.bind(
        *_bcast(ew.add_p.bind(*_bcast(mul(a, s(None, -2)), mul(b, s(1, -1)))), mul(c, s(2, None)))
    )
    d = lambda i: getitem(dx, i)  # noqa: E731
    if edge_order == 1:
        first = ew.div_p.bind(*_bcast(ew.sub_p.bind(s(1, 2), s(0, 1)), d(0)))
        last = ew.div_p.bind(*_bcast(ew.sub_p.bind(s(-1, None), s(-2, -1)), d(-1)))
    else:
        d1, d2 = d(0), d(1)
        a0 = ew.neg_p.bind(
            div(
                ew.add_p.bind(ew.mul_p.bind(d1, constant(2, dtype)), d2),
                ew.mul_p.bind(d1, ew.add_p.bind(d1, d2)),
            )
        )
        b0 = div(ew.add_p.bind(d1, d2), ew.mul_p.bind(d1, d2))
        c0 = ew.neg_p.bind(div(d1, ew.mul_p.bind(d2, ew.add_p.bind(d1, d2))))
        first = _lin3([a0, b0, c0], s(0, 1), s(1, 2), s(2, 3))
        d1, d2 = d(-2), d(-1)
        a1 = div(d2, ew.mul_p.bind(d1, ew.add_p.bind(d1, d2)))
        b1 = ew.neg_p.bind(div(ew.add_p.bind(d2, d1), ew.mul_p.bind(d1, d2)))
        c1 = div(
            ew.add_p.bind(ew.mul_p.bind(d2, constant(2, dtype)), d1), ew.mul_p.bind(d2, ew.add_p.bind(d1, d2))
        )
        last = _lin3([a1, b1, c1], s(-3, -2), s(-2, -1), s(-1, None))
    return concatenate([first, interior, last], axis)


def _bcast(p, q):
    return broadcast_args(p, q)


def _lin3(coefs, u, v, w):
    terms = [ew.mul_p.bind(*_bcast(c, t)) for c, t in zip(coefs, (u, v, w))]
    return ew.add_p.bind(*_bcast(ew.add_p.bind(*_bcast(terms[0], terms[1])), terms[2]))


# ----------------------------------------------------------------------------------------------
# Integration


@jitted_eagerly(static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x`` or spacing ``dx``).

    >>> trapezoid(np.array([1.0, 2.0, 3.0])).item()
    4.0
    >>> trapezoid(np.array([1.0, 2.0, 3.0]), x=np.array([0.0, 1.0, 3.0])).item()
    6.5
    """
    # The result has the promoted dtype of y and the spacing (x, or an array dx; a Python dx is weak),
    # as NumPy and jax.numpy: a float32 y with float64 x integrates in float64 (issue 33).
    if x is None:
        # (y made inexact alone first, as JAX's promote_dtypes_inexact(y): an int32 y with the
        # Python dx is float32 under JAX's 64-bit rules, not the default float)
        (y,) = promote_args_inexact(asarray(y))
        y, d = promote_args_inexact(y, dx)
        if d.ndim > 0:  # (JAX's: leading axes up to y's rank, then the integration axis last)
            d = reshape(d, (1,) * (y.ndim - d.ndim) + tuple(d.shape))
            d = moveaxis(d, normalize_axis(axis, y.ndim), -1)
    else:
        y, x = promote_args_inexact(asarray(y), asarray(x))
        d = diff(x) if x.ndim == 1 else moveaxis(diff(x, axis=axis), normalize_axis(axis, x.ndim), -1)
    y = moveaxis(y, normalize_axis(axis, y.ndim), -1)
    if d.ndim == 0 or d.shape[-1] == 1:
        # JAX's formula when the spacing does not vary along the axis: dx * (sum - (y0 + yn) / 2)
        # (an empty axis: JAX's IndexError; with sample points x of no spacings, the general form's
        # zeros)
        first, last = getitem(y, (Ellipsis, 0)), getitem(y, (Ellipsis, -1))
        d = d if d.ndim == 0 else getitem(d, (Ellipsis, 0))
        return multiply(d, subtract(reductions.sum(y, axis=-1), multiply(0.5, add(first, last))))
    inner = add(getitem(y, (Ellipsis, slice(1, None))), getitem(y, (Ellipsis, slice(None, -1))))
    return multiply(0.5, reductions.sum(multiply(d, inner), axis=-1))


# ----------------------------------------------------------------------------------------------
# Convolution


def _convolve(a, v, mode, name, precision, preferred_element_type):
    """``name`` ('convolve' or 'correlate') of 1-D arrays as one ``conv_general_dilated`` (JAX's
    ``_conv``): the kernel is ``v`` reversed (convolve) or conjugated (correlate); the longer operand
    slides; dtypes follow NumPy (integers stay integers), in 32-bit mode JAX (inexact: float32)."""
    # (NOTE: [x64 mode]: the 32-bit mode is JAX's, whose convolutions promote to an inexact dtype)
    # (JAX's: integers promote to an inexact type unless a preferred_element_type is given)
    inexact = _dt.jax_rules and preferred_element_type is None
    a, v = (promote_args_inexact if inexact else promote_args)(asarray(a), asarray(v))
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only supports 1-dimensional inputs, got shapes {a.shape} and {v.shape}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}")
    if a.dtype == np.bool_:
        a, v = convert(a, _dt.default_int), convert(v, _dt.default_int)
    reverse_out = False
    if name == "correlate":
        if v.dtype.kind == "c":
            v = conjugate(v)
        if a.shape[0] < v.shape[0]:
            # NumPy swaps the operands and reverses the result.
            a, v, reverse_out = v, a, True
    else:
        if a.shape[0] < v.shape[0]:
            a, v = v, a
        v = st.rev(v, (0,))
    m = v.shape[0]
    pads = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}
    if mode not in pads:
        raise ValueError(f"{name}: mode must be one of 'full', 'same' or 'valid', got {mode!r}")
    pet = None if preferred_element_type is None else canonicalize_dtype(preferred_element_type)
    dn = cv.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    out = cv.conv_general_dilated(
        reshape(a, (1, 1, a.shape[0])),
        reshape(v, (1, 1, m)),
        window_strides=(1,),
        padding=(pads[mode],),
        lhs_dilation=(1,),
        rhs_dilation=(1,),
        dimension_numbers=dn,
        precision=dt.canonicalize_precision(precision, name),
        preferred_element_type=pet,
    )
    out = reshape(out, (out.shape[-1],))
    return st.rev(out, (0,)) if reverse_out else out


@jitted_eagerly(static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D arrays (modes ``full``, ``same``, ``valid``), as one
    convolution primitive; ``precision``/``preferred_element_type`` as in ``lax.conv``.

    >>> convolve(np.array([1, 2, 3]), np.array([0, 1, 0.5])).tolist()
    [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    return _convolve(a, v, mode, "convolve", precision, preferred_element_type)


@jitted_eagerly(static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D arrays: ``c[k] = sum_n a[n + k] * conj(v[n])`` (NumPy's modes).

    >>> correlate(np.array([1, 2, 3]), np.array([0, 1, 0.5])).tolist()
    [3.5]
    """
    return _convolve(a, v, mode, "correlate", precision, preferred_element_type)


# ----------------------------------------------------------------------------------------------
# Interpolation


def interp(x, xp, fp, left=None, right=None, period=None):
    """One-dimensional piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (NumPy's ``interp``).

    >>> interp(np.array([0.5, 2.5, 5.0]), np.array([0.0, 1.0, 3.0]), np.array([0.0, 10.0, 30.0])).tolist()
    [5.0, 25.0, 30.0]
    >>> interp(np.array([-1.0, 5.0]), np.array([0.0, 1.0]), np.array([0, 10.0]), right="extrapolate").tolist()
    [0.0, 50.0]
    """
    # JAX's extension: left/right='extrapolate' continue the first/last segment's line
    extrapolate = []
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str):
            if v != "extrapolate":
                raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but got: {v!r}")
            extrapolate.append(name)
    left = None if "left" in extrapolate else left
    right = None if "right" in extrapolate else right
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape[0] != fp.shape[0]:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")  # (JAX's words)
    if xp.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    x, xp = promote_args_inexact(x, xp)
    (fp,) = promote_args_inexact(fp)
    if np.issubdtype(aval(x).dtype, np.complexfloating):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        # (left and right are ignored with a period, as NumPy's and JAX's documentation say)
        left = right = None
        extrapolate = []
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = abs(float(np.asarray(period)))
        if period == 0:
            raise ValueError("period must be a non-zero value")
        x = remainder(x, period)
        xp = remainder(xp, period)
        order = argsort(xp)
        xp, fp = getitem(xp, order), getitem(fp, order)
        xp = concatenate(
            [
                ew.sub_p.bind(getitem(xp, slice(-1, None)), constant(period, xp.dtype)),
                xp,
                ew.add_p.bind(getitem(xp, slice(0, 1)), constant(period, xp.dtype)),
            ]
        )
        fp = concatenate([getitem(fp, slice(-1, None)), fp, getitem(fp, slice(0, 1))])
    # JAX's formula, step for step (its dtypes and weak types, and its derivatives: a duplicate
    # xp (dx = 0) selects fp[i - 1], and x reaches the result through delta even then, so a zero
    # cotangent still meets x's own derivative, 0 * NaN included, as in jax); i is clipped as
    # min(max(i, 1), n - 1), so a single sample point gives i = 0 and i - 1 = -1, the same point.
    n = xp.shape[0]
    i = searchsorted(xp, x, side="right")
    i = ew.min_p.bind(ew.max_p.bind(i, constant(1, i.dtype)), constant(n - 1, i.dtype))
    im1 = ew.sub_p.bind(i, constant(1, i.dtype))
    fp_lo = getitem(fp, im1)
    df = subtract(getitem(fp, i), fp_lo)
    dx = subtract(getitem(xp, i), getitem(xp, im1))
    delta = subtract(x, getitem(xp, im1))
    # (JAX's threshold: the spacing of eps, so only (near-)duplicates count as a zero step)
    eps = float(np.spacing(_dt.finfo(aval(xp).dtype).eps))
    dx0 = less_equal(absolute(dx), eps)
    out = where3(dx0, fp_lo, add(fp_lo, multiply(true_divide(delta, where3(dx0, 1, dx)), df)))
    if period is None:
        if "left" not in extrapolate:
            out = where3(less(x, getitem(xp, 0)), getitem(fp, 0) if left is None else left, out)
        if "right" not in extrapolate:
            out = where3(greater(x, getitem(xp, -1)), getitem(fp, -1) if right is None else right, out)
    return out
