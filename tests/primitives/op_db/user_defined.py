"""op_db entries: primitives a *user* defines through JAX's extension API (``funcgrad.extend``).

Not part of the catalog: each is declared here the way a library written for JAX declares one --
``funcgrad.extend.core.Primitive`` with ``def_impl``/``def_abstract_eval``, its JVP, transpose and
batching rules written into ``interpreters.ad.primitive_jvps``/``primitive_transposes``/
``batching.primitive_batchers`` (or made by ``ad.defbilinear`` / ``batching.defbroadcasting``),
its lowering by ``interpreters.mlir.lower_fun`` -- and then passes the same generic checks as a
built-in primitive (values against NumPy, derivatives to second order against finite differences,
vmap against a loop for every ``in_axes``, the dot-product test of its transpose, typed derived
jaxprs, XLA against eager).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import funcgrad.numpy as fnp
from funcgrad.core import ShapedArray
from funcgrad.extend.core import Primitive
from funcgrad.interpreters import ad, batching, mlir
from op_db._base import FLOATS, OpInfo, Sample, _arr, _shapes


def _same_shapes(*avals, **params):
    if len({(a.shape, a.dtype) for a in avals}) != 1:
        raise TypeError(f"operands must have equal shapes and dtypes, got {[a.str_short() for a in avals]}")
    return ShapedArray(avals[0].shape, avals[0].dtype)


def _all_to_front(p):
    # JAX's signature: (batched_args, batch_dims) -> (out, out_dim).
    def rule(args, dims):
        size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not batching.not_mapped)
        return p.bind(*[batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]), 0

    return rule


# x * y + z: JVP and transpose written as JAX's tutorial writes them, in terms of the primitive.
user_multiply_add_p = Primitive("user_multiply_add")
user_multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
user_multiply_add_p.def_abstract_eval(_same_shapes)


def _multiply_add_jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
    return user_multiply_add_p.bind(x, y, z), user_multiply_add_p.bind(
        xt, y, user_multiply_add_p.bind(x, yt, zt)
    )


def _multiply_add_transpose(ct, x, y, z):
    assert not (ad.is_undefined_primal(x) and ad.is_undefined_primal(y)), "bilinear in x and y"
    if type(ct) is ad.Zero:
        return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in (x, y, z)]

    def zeros(a):
        return np.zeros(a.aval.shape, a.aval.dtype)

    return (
        user_multiply_add_p.bind(ct, y, zeros(x)) if ad.is_undefined_primal(x) else None,
        user_multiply_add_p.bind(x, ct, zeros(y)) if ad.is_undefined_primal(y) else None,
        ct if ad.is_undefined_primal(z) else None,
    )


ad.primitive_jvps[user_multiply_add_p] = _multiply_add_jvp
ad.primitive_transposes[user_multiply_add_p] = _multiply_add_transpose
batching.primitive_batchers[user_multiply_add_p] = _all_to_front(user_multiply_add_p)
mlir.register_lowering(user_multiply_add_p, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))

# x * y through the helpers: defbilinear (JVP and transpose), defbroadcasting (batching). As
# defbroadcasting expects of an elementwise primitive, a 0-d operand broadcasts against the other.
user_mul_p = Primitive("user_mul")
user_mul_p.def_impl(np.multiply)


@user_mul_p.def_abstract_eval
def _mul_abstract_eval(x, y):
    if x.dtype != y.dtype or (x.shape != y.shape and () not in (x.shape, y.shape)):
        raise TypeError(f"user_mul: operands {x.str_short()} and {y.str_short()} do not broadcast")
    return ShapedArray(max(x.shape, y.shape, key=len), x.dtype)


def _mul_ct(ct, other, aval):
    out = user_mul_p.bind(ct, other)
    return fnp.sum(out) if aval.shape == () and np.ndim(out) else out


ad.defbilinear(user_mul_p, lambda ct, x, y: _mul_ct(ct, y, x.aval), lambda ct, x, y: _mul_ct(ct, x, y.aval))
batching.defbroadcasting(user_mul_p)
mlir.register_lowering(user_mul_p, mlir.lower_fun(lambda x, y: x * y, multiple_results=False))


def _operands(n):
    def sampler(shape, dtype, rng):
        return Sample(tuple(_arr(rng, shape, dtype) for _ in range(n)), {})

    return sampler


_SHAPES = st.one_of(st.just(()), _shapes(min_dims=1, min_side=1))

OPS = [
    OpInfo("user_multiply_add", user_multiply_add_p, user_multiply_add_p.bind, lambda x, y, z: x * y + z,
           _operands(3), shapes=_SHAPES, dtypes=FLOATS, linear_argnums=((0,), (1,), (2,))),
    OpInfo("user_mul", user_mul_p, user_mul_p.bind, np.multiply, _operands(2), shapes=_SHAPES,
           dtypes=FLOATS, linear_argnums=((0,), (1,))),
]  # fmt: skip
