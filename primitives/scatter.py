"""The scatters other than scatter-add: scatter (set), scatter-mul, scatter-min, scatter-max.

Layer: primitives. Imports the funcgrad kernel, numpy and the sibling families ``gather`` (dimension
numbers, shared scatter rules, gather and scatter-add, which these derivatives use),
``structure`` and ``elementwise``.

# NOTE: [scatter with duplicate indices]
# ``scatter`` (set) with duplicate indices keeps one of the colliding updates (NumPy's impl: the
# last; XLA: unspecified). Its JVP follows JAX: with ``unique_indices=True`` the tangent is the same
# scatter of the tangents (and the transpose rule applies); otherwise each update element gets a
# unique id, the ids are scattered and gathered back, and only the winning element (whose id came
# back) passes its tangent, through a scatter-add. So the derivative agrees with whichever update
# won, duplicates or not. ``scatter_min``/``scatter_max`` share the tangent equally among all the
# values (operand and updates) tied at the result, like ``max``. ``scatter_mul``'s derivative with
# respect to ``updates`` needs ``unique_indices=True`` (as in JAX).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import JET_OF_SELECTION, aval_of
from funcgrad.primitives.gather import (
    ScatterDimensionNumbers,  # noqa: F401 - named in the doctests
    _declare_scatter,
    _inverse_gather,
    _linear_jvp,
    _scatter_batch,
    _scatter_binder,
    _zero_cts,
    _zeros_like_aval,
    scatter_add_p,
)
from funcgrad.primitives.structure import iota, reshape

from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal, linear_taylor
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, **flags):
    if not flags["unique_indices"]:
        raise NotImplementedError("scatter transpose is only implemented where unique_indices=True")
    if type(ct) is Zero:
        return _zero_cts(operand, updates)
    update_aval = updates.aval if is_undefined_primal(updates) else aval_of(updates)
    ct_operand = ct_updates = None
    if is_undefined_primal(operand):
        # The written windows do not reach the operand: zero them in the cotangent.
        zeros = _zeros_like_aval(update_aval)
        ct_operand = scatter_p.bind(
            ct, indices, zeros, dimension_numbers=dimension_numbers, mode=mode, **flags
        )
    if is_undefined_primal(updates):
        ct_updates = _inverse_gather(ct, indices, update_aval.shape, dimension_numbers, mode, 0, flags)
    return [ct_operand, None, ct_updates]


def _scatter_jvp(primals, tangents, *, dimension_numbers, mode, **flags):
    # See NOTE: [scatter with duplicate indices].
    params = dict(dimension_numbers=dimension_numbers, mode=mode, **flags)
    if flags["unique_indices"]:
        return _linear_jvp(scatter_p, (0, 2))(primals, tangents, **params)
    operand, indices, updates = primals
    t_operand, _, t_updates = tangents
    out = scatter_p.bind(operand, indices, updates, **params)
    if type(t_operand) is Zero and type(t_updates) is Zero:
        return out, Zero.from_primal_value(out)
    updates_aval, operand_aval = aval_of(updates), aval_of(operand)
    id_dtype = np.dtype(np.int32 if updates_aval.size < np.iinfo(np.int32).max else np.int64)
    ids = ew.add(reshape(iota(id_dtype, updates_aval.size), updates_aval.shape), np.ones((), id_dtype))
    # (typed as the updates on explicit mesh axes, as JAX's ids: ``ones_like(updates)`` added)
    ids = hooks.typed_as(ids, ShapedArray(updates_aval.shape, id_dtype, sharding=updates_aval._sharding))
    no_id = hooks.zeros(ShapedArray(operand_aval.shape, id_dtype, sharding=operand_aval._sharding))
    scattered_ids = scatter_p.bind(no_id, indices, ids, **params)
    won = ew.eq_p.bind(
        ids, _inverse_gather(scattered_ids, indices, updates_aval.shape, dimension_numbers, mode, 0, flags)
    )
    untouched = ew.eq_p.bind(scattered_ids, np.zeros((), id_dtype))
    t_operand, t_updates = instantiate(t_operand), instantiate(t_updates)
    t_operand = ew.select(untouched, t_operand, hooks.zeros(aval_of(t_operand)))
    t_updates = ew.select(won, t_updates, hooks.zeros(aval_of(t_updates)))
    return out, scatter_add_p.bind(t_operand, indices, t_updates, **params)


scatter_p = Primitive("scatter")
scatter_p.def_traits(may_produce_nan=True)
_declare_scatter(scatter_p, None, numeric_only=False)
scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)
scatter_p.def_batch(_scatter_batch(scatter_p))
scatter_p.def_traits(linear=True)  # jointly in operand and updates (its JVP uses it only with unique indices)
scatter_p.def_taylor(linear_taylor(scatter_p))  # (linear in its inexact operands)


def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, mode, **flags):
    params = dict(dimension_numbers=dimension_numbers, mode=mode, **flags)
    operand, indices, updates = primals
    t_operand, _, t_updates = tangents
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    total = Zero.from_primal_value(out)
    if type(t_operand) is not Zero:
        total = scatter_mul_p.bind(t_operand, indices, updates, **params)
    if type(t_updates) is not Zero:
        if not flags["unique_indices"]:
            raise NotImplementedError(  # (JAX's words, then funcgrad's)
                "scatter_mul gradients are only implemented if `unique_indices=True` (with respect "
                "to the updates; pass unique_indices=True if the indices are unique)"
            )
        zeros = hooks.zeros(aval_of(t_operand) if type(t_operand) is not Zero else t_operand.aval)
        term = ew.mul(operand, scatter_add_p.bind(zeros, indices, t_updates, **params))
        total = term if type(total) is Zero else ew.add_any_p.bind(total, term)
    return out, total


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, **flags):
    if is_undefined_primal(updates):
        raise NotImplementedError("scatter_mul is linear in its operand only, not in its updates")
    if type(ct) is Zero:
        return _zero_cts(operand, updates)
    return [
        scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dimension_numbers, mode=mode, **flags),
        None,
        None,
    ]


scatter_mul_p = Primitive("scatter-mul")
scatter_mul_p.def_traits(
    taylor_from_jvp="its JVP rule is a scatter-mul of the tangents", may_produce_nan=True
)
_declare_scatter(scatter_mul_p, np.multiply, numeric_only=True)
scatter_mul_p.def_jvp(_scatter_mul_jvp)
scatter_mul_p.def_transpose(_scatter_mul_transpose)
scatter_mul_p.def_batch(_scatter_batch(scatter_mul_p))
scatter_mul_p.def_traits(linear=True)  # in the operand (its JVP scales operand tangents by the updates)
# (its JVP refuses differentiated updates without unique_indices: kept when dead, as JAX removes
# nothing while tracing, so jvp of a jit or checkpoint holding an unused one refuses as JAX's)
scatter_mul_p.def_traits(kept_when_dead=lambda params: not params["unique_indices"])


def _scatter_extremal_jvp(primitive):
    # JAX's rule (_scatter_extremal_jvp): ties share the tangent equally among the operand and the
    # updates equal to the result, and the coefficients are computed at the scattered windows only,
    # so an element no update reaches keeps its tangent (at a NaN too: the share was 0/0 there,
    # NaN, where jax passes the tangent through), and a window that neither the operand nor an
    # update matches (a NaN result) gets the tangent 0, as jax's.
    def jvp(primals, tangents, *, dimension_numbers, mode, **flags):
        params = dict(dimension_numbers=dimension_numbers, mode=mode, **flags)
        operand, indices, updates = primals
        t_operand, _, t_updates = tangents
        out = primitive.bind(operand, indices, updates, **params)
        if type(t_operand) is Zero and type(t_updates) is Zero:
            return out, Zero.from_primal_value(out)
        t_operand, t_updates = instantiate(t_operand), instantiate(t_updates)
        dtype, up_shape = aval_of(out).dtype, aval_of(updates).shape

        def at(v):  # the scattered windows of v, shaped as the updates
            return _inverse_gather(v, indices, up_shape, dimension_numbers, mode, None, flags)

        target = at(out)
        successful = ew.eq_p.bind(updates, target)
        retained = ew.eq_p.bind(at(operand), target)
        # (typed as the result and the updates are on explicit mesh axes, as JAX's zeros_like)
        zeros = hooks.zeros(ShapedArray(aval_of(out).shape, dtype, sharding=aval_of(out)._sharding))
        zeros_up = hooks.zeros(ShapedArray(up_shape, dtype, sharding=aval_of(updates)._sharding))
        num_updates = at(scatter_add_p.bind(zeros, indices, ew.convert(successful, dtype), **params))
        num_refs = at(scatter_add_p.bind(zeros, indices, ew.add(zeros_up, 1), **params))
        one_more = ew.div(1, ew.add(num_updates, 1))
        updates_coef = ew.select(successful, ew.select(retained, one_more, ew.div(1, num_updates)), zeros_up)
        operand_coef = ew.div(ew.add(ew.select(retained, one_more, zeros_up), -1), num_refs)
        tangent_updates = ew.add(ew.mul(at(t_operand), operand_coef), ew.mul(t_updates, updates_coef))
        return out, scatter_add_p.bind(t_operand, indices, tangent_updates, **params)

    return jvp


scatter_min_p = Primitive("scatter-min")
scatter_min_p.def_traits(taylor_from_jvp=JET_OF_SELECTION, may_produce_nan=True)
_declare_scatter(scatter_min_p, np.minimum, numeric_only=False)
scatter_min_p.def_jvp(_scatter_extremal_jvp(scatter_min_p))
scatter_min_p.def_batch(_scatter_batch(scatter_min_p))

scatter_max_p = Primitive("scatter-max")
scatter_max_p.def_traits(taylor_from_jvp=JET_OF_SELECTION, may_produce_nan=True)
_declare_scatter(scatter_max_p, np.maximum, numeric_only=False)
scatter_max_p.def_jvp(_scatter_extremal_jvp(scatter_max_p))
scatter_max_p.def_batch(_scatter_batch(scatter_max_p))


scatter = _scatter_binder(scatter_p, "scatter")
scatter.__doc__ = """XLA's Scatter with replacement (``lax.scatter``): ``operand`` with the windows at
``scatter_indices`` set to ``updates``; see ``ScatterDimensionNumbers``, NOTE: [gather and scatter
modes] and NOTE: [scatter with duplicate indices].

>>> dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
...                              scatter_dims_to_operand_dims=(0,))
>>> np.asarray(scatter(np.zeros(4), np.array([[1], [3]]), np.array([5.0, 7.0]), dn)).tolist()
[0.0, 5.0, 0.0, 7.0]
"""
scatter_mul = _scatter_binder(scatter_mul_p, "scatter_mul")
scatter_mul.__doc__ = """Scatter with multiplication (``lax.scatter_mul``).

>>> dn = ScatterDimensionNumbers((), (0,), (0,))
>>> np.asarray(scatter_mul(np.ones(3), np.array([[1], [1]]), np.array([2.0, 3.0]), dn)).tolist()
[1.0, 6.0, 1.0]
"""
scatter_min = _scatter_binder(scatter_min_p, "scatter_min")
scatter_min.__doc__ = """Scatter keeping the minimum (``lax.scatter_min``).

>>> dn = ScatterDimensionNumbers((), (0,), (0,))
>>> np.asarray(scatter_min(np.zeros(2), np.array([[0], [1]]), np.array([-1.0, 1.0]), dn)).tolist()
[-1.0, 0.0]
"""
scatter_max = _scatter_binder(scatter_max_p, "scatter_max")
scatter_max.__doc__ = """Scatter keeping the maximum (``lax.scatter_max``).

>>> dn = ScatterDimensionNumbers((), (0,), (0,))
>>> np.asarray(scatter_max(np.zeros(2), np.array([[0], [1]]), np.array([-1.0, 1.0]), dn)).tolist()
[0.0, 1.0]
"""


__all__ = [
    "scatter",
    "scatter_max",
    "scatter_max_p",
    "scatter_min",
    "scatter_min_p",
    "scatter_mul",
    "scatter_mul_p",
    "scatter_p",
]
