"""Reductions: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, argmax, argmin.

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families.

Layer note: ``sorting`` (for ``exclusive_cumprod``) must not import this module.

Gradient conventions (as JAX documents): at ties, ``reduce_max``/``reduce_min`` share the
cotangent equally among the tied elements; ``reduce_prod`` is exact with zeros in the input (the
derivative is the product of the *other* elements, computed from exclusive cumulative products
from both sides, never by dividing by ``x``), at every order. ``argmax``/``argmin`` return the
first maximal/minimal index, and NaN counts as the extreme value (the first NaN wins), like
NumPy and JAX.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, defjvp_zero, deflinear
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray
from primitives import elementwise as ew
from primitives._rules import aval_of
from primitives.sorting import exclusive_cumprod
from primitives.structure import broadcast_in_dim, reshape, transpose


def _reduced_aval(name, x: ShapedArray, axes, dtype=None) -> ShapedArray:
    if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
        raise TypeError(f"{name}: axes {axes} out of range for {x.str_short()}")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, x.dtype if dtype is None else dtype, x.weak_type and dtype is None)


def _batch_reduction(primitive):
    def rule(axis_size, vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_dim = d - sum(a < d for a in axes)
        return primitive.bind(x, axes=new_axes, **params), out_dim

    return rule


def keep_dims_shape(in_shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(in_shape))


def expand_reduced(y, in_shape, axes):
    """Broadcast a reduced value back to ``in_shape`` (the reduced axes are re-inserted)."""
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return broadcast_in_dim(y, in_shape, kept)


# ----------------------------------------------------------------------------------------------
# reduce_sum


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.def_impl(lambda x, *, axes: np.asarray(np.sum(x, axis=axes, dtype=np.result_type(x))))
reduce_sum_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_sum", x, axes))
deflinear(reduce_sum_p, lambda ct, x, *, axes: [expand_reduced(ct, x.aval.shape, axes)])
reduce_sum_p.def_batch(_batch_reduction(reduce_sum_p))


def reduce_sum(x, axes):
    """Sum ``x`` over ``axes`` (a tuple of non-negative ints)."""
    axes = tuple(sorted(int(a) for a in axes))
    if not axes:
        return x
    return reduce_sum_p.bind(x, axes=axes)


# ----------------------------------------------------------------------------------------------
# reduce_max / reduce_min


def _minmax_jvp(primitive):
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = primitive.bind(x, axes=axes)
        if type(t) is Zero:
            return ans, Zero.from_primal_value(ans)
        shape = aval_of(x).shape
        location = ew.convert(ew.eq_p.bind(x, expand_reduced(ans, shape, axes)), aval_of(x).dtype)
        # An empty reduction has no ties to share: divide by max(count, 1), never 0/0.
        counts = ew.max_p.bind(reduce_sum(location, axes), np.ones((), aval_of(x).dtype))
        return ans, ew.div(reduce_sum(ew.mul(t, location), axes), counts)

    return jvp


def _max_identity(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":  # the least value of the lexicographic order
        return complex(-np.inf, -np.inf)
    if dtype.kind == "f" or _dt.is_float(dtype):
        return -np.inf
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min


def _min_identity(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return complex(np.inf, np.inf)
    if dtype.kind == "f" or _dt.is_float(dtype):
        return np.inf
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max


def _reduce_impl(np_fn, identity):
    def impl(x, *, axes):
        x = np.asarray(x)
        if x.size == 0:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
            return np.full(shape, identity(x.dtype), dtype=x.dtype)
        return np.asarray(np_fn(x, axis=axes))

    return impl


reduce_max_p = Primitive("reduce_max")
reduce_max_p.def_impl(_reduce_impl(np.max, _max_identity))
reduce_max_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_max", x, axes))
reduce_max_p.def_jvp(_minmax_jvp(reduce_max_p))
reduce_max_p.def_batch(_batch_reduction(reduce_max_p))

reduce_min_p = Primitive("reduce_min")
reduce_min_p.def_impl(_reduce_impl(np.min, _min_identity))
reduce_min_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_min", x, axes))
reduce_min_p.def_jvp(_minmax_jvp(reduce_min_p))
reduce_min_p.def_batch(_batch_reduction(reduce_min_p))


def reduce_max(x, axes):
    """Maximum of ``x`` over ``axes``; ties share the gradient equally.

    >>> float(reduce_max(np.array([1.0, 3.0, 2.0]), (0,)))
    3.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_max_p.bind(x, axes=axes) if axes else x


def reduce_min(x, axes):
    """Minimum of ``x`` over ``axes``; ties share the gradient equally.

    >>> float(reduce_min(np.array([1.0, 3.0, 2.0]), (0,)))
    1.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_min_p.bind(x, axes=axes) if axes else x


# ----------------------------------------------------------------------------------------------
# reduce_prod: derivative = product of the other elements (exact with zeros)


def _prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if type(t) is Zero:
        return ans, Zero.from_primal_value(ans)
    # The reduced axes become one trailing axis of length n; each element's derivative is the
    # product of the *other* elements of its group = (product before it) * (product after it),
    # two exclusive cumprods. No division, so it is exact with zeros, and cumprod's own JVP keeps
    # it exact at every order.
    shape = aval_of(x).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    grouped = (*(shape[d] for d in kept), n)
    x2 = reshape(transpose(x, (*kept, *axes)), grouped)
    t2 = reshape(transpose(t, (*kept, *axes)), grouped)
    last = len(kept)
    others = ew.mul(exclusive_cumprod(x2, last), exclusive_cumprod(x2, last, reverse=True))
    return ans, reduce_sum(ew.mul(t2, others), (last,))


reduce_prod_p = Primitive("reduce_prod")
reduce_prod_p.def_impl(lambda x, *, axes: np.asarray(np.prod(x, axis=axes, dtype=np.result_type(x))))
reduce_prod_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_prod", x, axes))
reduce_prod_p.def_jvp(_prod_jvp)
reduce_prod_p.def_batch(_batch_reduction(reduce_prod_p))


def reduce_prod(x, axes):
    """Product of ``x`` over ``axes``; its derivative is exact when ``x`` has zeros.

    >>> float(reduce_prod(np.array([2.0, 3.0]), (0,)))
    6.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_prod_p.bind(x, axes=axes) if axes else x


# ----------------------------------------------------------------------------------------------
# Boolean reductions and arg reductions (not differentiable)


def _bool_reduction(name, np_fn):
    p = Primitive(name)
    p.def_impl(lambda x, *, axes: np.asarray(np_fn(x, axis=axes)))

    def abstract_eval(x, *, axes):
        if x.dtype != np.bool_:
            raise TypeError(f"{name} requires a boolean operand, got {x.str_short()}")
        return _reduced_aval(name, x, axes)

    p.def_abstract_eval(abstract_eval)
    defjvp_zero(p)
    p.def_batch(_batch_reduction(p))
    return p


reduce_and_p = _bool_reduction("reduce_and", np.all)
reduce_or_p = _bool_reduction("reduce_or", np.any)


def _arg_reduction(name, np_fn):
    p = Primitive(name)

    def impl(x, *, axes, index_dtype):
        (axis,) = axes
        return np.asarray(np_fn(x, axis=axis)).astype(index_dtype)

    def abstract_eval(x, *, axes, index_dtype):
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: attempt to get {name} of an empty axis (shape {x.shape})")
        return _reduced_aval(name, x, axes, np.dtype(index_dtype))

    p.def_impl(impl)
    p.def_abstract_eval(abstract_eval)
    defjvp_zero(p)
    p.def_batch(_batch_reduction(p))
    return p


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)


def _arg(primitive, x, axis, index_dtype):
    ndim = aval_of(x).ndim
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{primitive.name}: axis {axis} is out of bounds for an array of rank {ndim}")
    index_dtype = np.dtype(index_dtype)
    if index_dtype.kind not in "iu":
        raise TypeError(f"{primitive.name}: index_dtype must be an integer dtype, got {index_dtype.name}")
    return primitive.bind(x, axes=(int(axis) % ndim,), index_dtype=index_dtype)


def argmax(x, axis: int, index_dtype):
    """Index of the first maximum along ``axis`` (NaN counts as the maximum), as ``lax.argmax``.

    >>> int(argmax(np.array([1.0, 3.0, 3.0]), 0, np.int32))
    1
    """
    return _arg(argmax_p, x, axis, index_dtype)


def argmin(x, axis: int, index_dtype):
    """Index of the first minimum along ``axis`` (NaN counts as the minimum), as ``lax.argmin``.

    >>> int(argmin(np.array([2.0, 1.0, 1.0]), 0, np.int32))
    1
    """
    return _arg(argmin_p, x, axis, index_dtype)


__all__ = [
    "argmax",
    "argmax_p",
    "argmin",
    "argmin_p",
    "keep_dims_shape",
    "reduce_and_p",
    "reduce_max",
    "reduce_min",
    "reduce_max_p",
    "reduce_min_p",
    "reduce_or_p",
    "reduce_prod",
    "reduce_prod_p",
    "reduce_sum",
    "reduce_sum_p",
]
