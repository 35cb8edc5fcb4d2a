"""Reductions: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, argmax, argmin.

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families.

Gradient conventions (as JAX documents): at ties, ``reduce_max``/``reduce_min`` share the
cotangent equally among the tied elements; ``reduce_prod`` is exact with zeros in the input (the
derivative is the product of the *other* elements, computed without dividing by ``x``).
"""

from __future__ import annotations

import numpy as np

from funcgrad import dtypes as _dt
from funcgrad.ad import Zero, defjvp_zero, deflinear
from funcgrad.core import Primitive, ShapedArray
from primitives import elementwise as ew
from primitives._rules import aval_of
from primitives.structure import broadcast_in_dim, reshape


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


def _minmax_jvp(primitive, cmp):
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = primitive.bind(x, axes=axes)
        if type(t) is Zero:
            return ans, Zero.from_primal_value(ans)
        shape = aval_of(x).shape
        location = ew.convert(ew.eq_p.bind(x, expand_reduced(ans, shape, axes)), aval_of(x).dtype)
        counts = reduce_sum(location, axes)
        return ans, ew.div(reduce_sum(ew.mul(t, location), axes), counts)

    return jvp


def _max_identity(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or _dt.is_float(dtype):
        return -np.inf
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min


def _min_identity(dtype):
    dtype = np.dtype(dtype)
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
reduce_max_p.def_jvp(_minmax_jvp(reduce_max_p, ew.eq_p))
reduce_max_p.def_batch(_batch_reduction(reduce_max_p))

reduce_min_p = Primitive("reduce_min")
reduce_min_p.def_impl(_reduce_impl(np.min, _min_identity))
reduce_min_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_min", x, axes))
reduce_min_p.def_jvp(_minmax_jvp(reduce_min_p, ew.eq_p))
reduce_min_p.def_batch(_batch_reduction(reduce_min_p))


def reduce_max(x, axes):
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_max_p.bind(x, axes=axes) if axes else x


def reduce_min(x, axes):
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_min_p.bind(x, axes=axes) if axes else x


# ----------------------------------------------------------------------------------------------
# reduce_prod: derivative = product of the other elements (exact with zeros)


def _prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if type(t) is Zero:
        return ans, Zero.from_primal_value(ans)
    others = _product_of_others(x, axes)
    return ans, reduce_sum(ew.mul(t, others), axes)


def _product_of_others(x, axes):
    """For each element, the product of the *other* elements of its reduction group, exact when
    the group contains zeros (no division by a zero element).

    With ``z`` zeros in a group: if ``z == 0`` it is ``prod / x``; if ``z == 1`` it is the product
    of the non-zero elements at the zero and 0 elsewhere; if ``z > 1`` it is 0. (Derivatives of
    this expression are exact away from zeros; at a zero, second derivatives treat the other
    elements' factor as constant.)
    """
    dtype = aval_of(x).dtype
    shape = aval_of(x).shape
    zero = np.zeros((), dtype)
    one = np.ones((), dtype)
    is_zero = ew.eq_p.bind(x, zero)
    safe = ew.select(is_zero, broadcast_in_dim(one, shape, ()), x)
    prod_nonzero = expand_reduced(reduce_prod(safe, axes), shape, axes)
    n_zeros = expand_reduced(reduce_sum(ew.convert(is_zero, dtype), axes), shape, axes)
    zeros_full = broadcast_in_dim(zero, shape, ())
    at_zero = ew.select(ew.eq_p.bind(n_zeros, one), prod_nonzero, zeros_full)
    at_nonzero = ew.select(ew.eq_p.bind(n_zeros, zero), ew.div(prod_nonzero, safe), zeros_full)
    return ew.select(is_zero, at_zero, at_nonzero)


reduce_prod_p = Primitive("reduce_prod")
reduce_prod_p.def_impl(lambda x, *, axes: np.asarray(np.prod(x, axis=axes, dtype=np.result_type(x))))
reduce_prod_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_prod", x, axes))
reduce_prod_p.def_jvp(_prod_jvp)
reduce_prod_p.def_batch(_batch_reduction(reduce_prod_p))


def reduce_prod(x, axes):
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

__all__ = [
    "argmax_p",
    "argmin_p",
    "keep_dims_shape",
    "reduce_and_p",
    "reduce_max",
    "reduce_min",
    "reduce_or_p",
    "reduce_prod",
    "reduce_sum",
]
