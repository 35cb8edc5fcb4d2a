"""Lowering rules of the elementwise family (primitives/elementwise/: arithmetic and transcendental).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``.

Semantics follow the primitives' NumPy impls, which follow XLA where NumPy differs: integer
``div`` truncates toward zero and ``rem`` takes the dividend's sign (StableHLO ``divide`` /
``remainder``), shifts by a negative or too-large amount give 0 (or the sign for arithmetic right
shifts), like StableHLO. Transcendental functions without a StableHLO op use CHLO (XLA expands
them with the same algorithms JAX gets).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives.structure import broadcast_in_dim
from funcgrad.xla_bridge.emitter import aval_type, compare_type, register, tensor_type, xla_dtype
from funcgrad.xla_bridge.rules import _cotangent_sums as cotangent_sums
from funcgrad.xla_bridge.rules import _pad_sums as pad_sums
from funcgrad.xla_bridge.rules._complex_order import complex_select
from funcgrad.xla_bridge.rules._lapack import lower_fun

from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel import extended as _ext

# ----------------------------------------------------------------------------------------------
# Unary ops with a direct StableHLO or CHLO counterpart

_UNARY = {
    ew.floor_p: "stablehlo.floor",
    ew.ceil_p: "stablehlo.ceil",
    ew.exp_p: "stablehlo.exponential",
    ew.expm1_p: "stablehlo.exponential_minus_one",
    ew.log_p: "stablehlo.log",
    ew.log1p_p: "stablehlo.log_plus_one",
    ew.sqrt_p: "stablehlo.sqrt",
    ew.rsqrt_p: "stablehlo.rsqrt",
    ew.cbrt_p: "stablehlo.cbrt",
    ew.tanh_p: "stablehlo.tanh",
    ew.not_p: "stablehlo.not",
}
# Generic form (no pretty syntax needed): CHLO decompositions.
_CHLO_UNARY = {
    ew.tan_p: "chlo.tan",
    ew.asin_p: "chlo.asin",
    ew.acos_p: "chlo.acos",
    ew.atan_p: "chlo.atan",
    ew.sinh_p: "chlo.sinh",
    ew.cosh_p: "chlo.cosh",
    ew.asinh_p: "chlo.asinh",
    ew.acosh_p: "chlo.acosh",
    ew.atanh_p: "chlo.atanh",
    ew.erf_p: "chlo.erf",
    ew.erfc_p: "chlo.erfc",
    ew.erf_inv_p: "chlo.erf_inv",
    ew.lgamma_p: "chlo.lgamma",
    ew.digamma_p: "chlo.digamma",
}


def _unary_rule(op):
    def rule(ctx, x):
        return ctx.fb.unary(op, x, ctx.avals_in[0])

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


def _chlo_rule(op):
    def rule(ctx, x):
        t = aval_type(ctx.avals_in[0])
        return ctx.fb.generic(op, [x], [t], [t])

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


for _p, _op in _UNARY.items():
    register(_p)(_unary_rule(_op))
for _p, _op in _CHLO_UNARY.items():
    register(_p)(_chlo_rule(_op))


def _complex_sin_cos(x, is_sin: bool):
    # JAX's complex sine and cosine (its _sin_complex/_cos_complex): real sin/cos times cosh/sinh
    # built from expm1 (no cancellation near 0), a zero real part kept exactly zero, so
    # sin(infj) is infj and cos(infj) inf+0j where XLA's complex sine/cosine give NaN parts.
    a, b = cx.real_p.bind(x), cx.imag_p.bind(x)
    dtype = np.dtype(_fdt.real_dtype(x.aval.dtype))
    zero, two = np.zeros((), dtype), np.asarray(2, dtype)
    sn, cs = ew.sin_p.bind(a), ew.cos_p.bind(a)
    e1m, e2m = ew.expm1_p.bind(b), ew.expm1_p.bind(ew.neg_p.bind(b))
    snh = ew.div_p.bind(ew.sub_p.bind(e1m, e2m), two)
    csh = ew.div_p.bind(ew.add_p.bind(ew.add_p.bind(e1m, e2m), two), two)
    a_is_zero = ew.eq_p.bind(a, zero)
    # (a's shape; +0 where a is 0, the only place used: 0 * a would be -0 at a = -0, and jax's
    # zero is +0 there, sin(-0+0j) = 0+0j)
    zeros = ew.mul_p.bind(ew.abs_p.bind(a), zero)
    if is_sin:
        re, im = ew.mul_p.bind(sn, csh), ew.mul_p.bind(cs, snh)
        return [ew.select(a_is_zero, cx.complex_p.bind(zeros, im), cx.complex_p.bind(re, im))]
    re, im = ew.mul_p.bind(cs, csh), ew.mul_p.bind(ew.neg_p.bind(sn), snh)
    return [ew.select(a_is_zero, cx.complex_p.bind(re, zeros), cx.complex_p.bind(re, im))]


def _sin_cos_rule(op, is_sin):
    def rule(ctx, x):
        aval = ctx.avals_in[0]
        if aval.dtype.kind != "c":
            return ctx.fb.unary(op, x, aval)
        return lower_fun(ctx.fb, lambda z: _complex_sin_cos(z, is_sin), [aval], [x])[0]

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


@register(ew.logistic_p)
def _logistic(ctx, x):
    # JAX's lowering: 1 / (1 + exp(-x)) written out (its logistic_impl), not XLA's logistic op,
    # whose expansion rounds bfloat16 otherwise (94 of 300 values a bfloat16 ulp apart)
    def expanded(v):
        one = broadcast_in_dim(np.ones((), v.aval.dtype), v.aval.shape, ())
        return [ew.div_p.bind(one, ew.add_p.bind(one, ew.exp_p.bind(ew.neg_p.bind(v))))]

    return lower_fun(ctx.fb, expanded, [ctx.avals_in[0]], [x])[0]


register(ew.sin_p)(_sin_cos_rule("stablehlo.sine", True))
register(ew.cos_p)(_sin_cos_rule("stablehlo.cosine", False))


@register(ew.neg_p)
def _neg(ctx, x):
    return ctx.fb.unary("stablehlo.negate", x, ctx.avals_in[0])


@register(ew.stop_gradient_p)
@register(ew.copy_p)  # (a new value to the program, the same data to XLA: as JAX lowers it)
def _identity(ctx, x):
    return x


@register(ew.sign_p)
def _sign(ctx, x):
    aval, fb = ctx.avals_in[0], ctx.fb
    if _fdt.kind(aval.dtype) in "ub":
        # StableHLO sign wants signed or float operands: sign(u) = (u != 0).
        zero = fb.const(0, aval.dtype, aval.shape)
        nz = fb.compare("NE", x, zero, aval.dtype, aval.shape)
        return fb.convert(nz, ctx.avals_out[0].update(dtype=np.bool_), aval.dtype)
    return fb.unary("stablehlo.sign", x, aval)


@register(ew.abs_p)
def _abs(ctx, x):
    aval = ctx.avals_in[0]
    if _fdt.kind(aval.dtype) in "ub":
        return x
    return ctx.fb.unary("stablehlo.abs", x, aval, ctx.avals_out[0].dtype)


@register(ew.round_p)
def _round(ctx, x, rounding_method=0):
    op = "stablehlo.round_nearest_even" if rounding_method == 1 else "stablehlo.round_nearest_afz"
    return ctx.fb.unary(op, x, ctx.avals_in[0])


@register(ew.is_finite_p)
def _is_finite(ctx, x):
    aval = ctx.avals_in[0]
    return ctx.fb.emit(
        f"stablehlo.is_finite {x} : ({aval_type(aval)}) -> {tensor_type(aval.shape, np.bool_)}"
    )


@register(ew.exp2_p)
def _exp2(ctx, x):
    # exp2(x) = exp(x * ln 2), as JAX lowers it.
    aval, fb = ctx.avals_in[0], ctx.fb
    ln2 = fb.const(np.log(2.0), aval.dtype, aval.shape)
    return fb.unary("stablehlo.exponential", fb.binary("stablehlo.multiply", x, ln2, aval), aval)


@register(ew.polygamma1_p)
def _trigamma(ctx, x):
    aval, fb = ctx.avals_in[0], ctx.fb
    one = fb.const(1, aval.dtype, aval.shape)
    t = aval_type(aval)
    return fb.generic("chlo.polygamma", [one, x], [t, t], [t])


@register(ew.polygamma_p)
def _polygamma(ctx, m, x):
    m, x = ctx.operands([m, x])
    t = aval_type(ctx.avals_out[0])
    return ctx.fb.generic("chlo.polygamma", [m, x], [t, t], [t])


@register(ew.square_p)
def _square(ctx, x):
    aval, fb = ctx.avals_in[0], ctx.fb
    if aval.dtype.kind != "c":
        return fb.binary("stablehlo.multiply", x, x, aval)
    # chlo.square, as JAX lowers it: (a - b)(a + b) + 2ab i with a real part of 0 where |a| = |b|,
    # so (inf+1e30j) ** 2 is inf+infj and (max+maxj) ** 2 in complex64 0+infj (x * x gives NaN and
    # -inf real parts)
    t = aval_type(aval)
    return fb.generic("chlo.square", [x], [t], [t])


@register(ew.integer_pow_p)
def _integer_pow(ctx, x, *, y):
    # Binary exponentiation: O(log y) multiplies; a negative power is 1 / x^-y.
    aval, fb = ctx.avals_in[0], ctx.fb
    n = abs(int(y))
    acc = None
    base = x
    while n:
        if n & 1:
            acc = base if acc is None else fb.binary("stablehlo.multiply", acc, base, aval)
        n >>= 1
        if n:
            base = fb.binary("stablehlo.multiply", base, base, aval)
    if acc is None:
        acc = fb.const(1, aval.dtype, aval.shape)
    if y < 0:
        acc = fb.binary("stablehlo.divide", fb.const(1, aval.dtype, aval.shape), acc, aval)
    return acc


# ----------------------------------------------------------------------------------------------
# Binary ops (scalar and size-1 operands are broadcast: NOTE: [elementwise operand contract])

_BINARY = {
    ew.add_p: "stablehlo.add",
    ew.add_any_p: "stablehlo.add",
    ew.sub_p: "stablehlo.subtract",
    ew.mul_p: "stablehlo.multiply",  # (div and rem: _integer_division_rule below)
    ew.pow_p: "stablehlo.power",
    ew.atan2_p: "stablehlo.atan2",
    ew.and_p: "stablehlo.and",
    ew.or_p: "stablehlo.or",
    ew.xor_p: "stablehlo.xor",
    ew.shift_left_p: "stablehlo.shift_left",
    ew.shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    ew.shift_right_logical_p: "stablehlo.shift_right_logical",
}


def _binary_rule(op):
    def rule(ctx, x, y):
        a, b = ctx.operands([x, y])
        return ctx.fb.binary(op, a, b, ctx.avals_out[0])

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


for _p, _op in _BINARY.items():
    register(_p)(_binary_rule(_op))


def _integer_division_rule(op: str, by_zero):
    # NOTE: [integer division by a constant zero]: XLA computes x / 0 (all bits set) and x % 0 (x)
    # at run time, but its constant folder divides in C++ and the whole process dies of SIGFPE
    # when both operands are constants (jit(lambda: jnp.zeros(3, int) // 0)(); jax crashes too).
    # Integer divisions divide by a divisor with its zeros replaced by 1, then put XLA's
    # by-zero answer back: the same values, and nothing left for the folder to trap on.
    def rule(ctx, x, y):
        fb, out = ctx.fb, ctx.avals_out[0]
        if out.dtype.kind not in "iu":
            # (a half divisor broadcast per use: NOTE: [one broadcast per operand])
            own = op == "stablehlo.divide" and out.dtype in _fdt.HALF_FLOATS
            a, b = ctx.operands([x, y], shared=(True, not own))
            return fb.binary(op, a, b, out)
        a, b = ctx.operands([x, y])
        is_zero = fb.compare("EQ", b, fb.const(0, out.dtype, out.shape), out.dtype, out.shape)
        safe = fb.select(is_zero, fb.const(1, out.dtype, out.shape), b, out.shape, out)
        quotient = fb.binary(op, a, safe, out)
        return fb.select(is_zero, by_zero(fb, a, out), quotient, out.shape, out)

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


register(ew.div_p)(
    _integer_division_rule("stablehlo.divide", lambda fb, a, out: fb.const(-1, out.dtype, out.shape))
)
register(ew.rem_p)(_integer_division_rule("stablehlo.remainder", lambda fb, a, out: a))


def _add_rule(ctx, x, y):
    a, b = ctx.operands([x, y])
    s = pad_sums.sum_of_pads(ctx, a, b)  # NOTE: [sums of zero pads]
    return s if s is not None else ctx.fb.binary("stablehlo.add", a, b, ctx.avals_out[0])


register(ew.add_p)(_add_rule)


@register(ew.add_any_p)
def _add_any(ctx, x, y):
    a, b = ctx.operands([x, y])
    s = pad_sums.sum_of_pads(ctx, a, b)  # NOTE: [sums of zero pads]
    if s is not None:
        return s
    return cotangent_sums.add_any(
        ctx.fb, a, b, ctx.avals_out[0]
    )  # NOTE: [a broadcast last in a cotangent sum]


def _minmax_rule(op: str, direction: str):
    # Complex operands compare lexicographically, as JAX's lowering picks (``complex_select``).
    def rule(ctx, x, y):
        a, b = ctx.operands([x, y])
        out = ctx.avals_out[0]
        if out.dtype.kind == "c":
            return complex_select(ctx.fb, direction, a, b, out)
        return ctx.fb.binary(op, a, b, out)

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


register(ew.max_p)(_minmax_rule("stablehlo.maximum", "GT"))
register(ew.min_p)(_minmax_rule("stablehlo.minimum", "LT"))


@register(ew.nextafter_p)
def _nextafter(ctx, x, y):
    a, b = ctx.operands([x, y])
    t = aval_type(ctx.avals_out[0])
    return ctx.fb.generic("chlo.next_after", [a, b], [t, t], [t])


_DIRECTIONS = {ew.eq_p: "EQ", ew.ne_p: "NE", ew.lt_p: "LT", ew.le_p: "LE", ew.gt_p: "GT", ew.ge_p: "GE"}


def _compare_rule(direction):
    def rule(ctx, x, y):
        a, b = ctx.operands([x, y])
        out = ctx.avals_out[0]
        return ctx.fb.compare(direction, a, b, ctx.avals_in[0].dtype, out.shape)

    rule.__name__ = f"_compare_{direction.lower()}"
    return rule


for _p, _d in _DIRECTIONS.items():
    register(_p)(_compare_rule(_d))


# ----------------------------------------------------------------------------------------------
# select_n, clamp, convert_element_type


@register(ew.select_n_p)
def _select_n(ctx, which, *cases):
    fb, out = ctx.fb, ctx.avals_out[0]
    w_aval = ctx.avals_in[0]
    if len(cases) == 1:
        return cases[0]
    if w_aval.dtype == np.bool_:
        return fb.select(which, cases[1], cases[0], w_aval.shape, out)

    # n-way with an integer index: a balanced tree of selects on `which < mid`.
    def pick(lo, hi):  # cases[lo:hi]
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        bound = fb.const(mid, w_aval.dtype, w_aval.shape)
        pred = fb.compare("LT", which, bound, w_aval.dtype, w_aval.shape)
        return fb.select(pred, pick(lo, mid), pick(mid, hi), w_aval.shape, out)

    return pick(0, len(cases))


@register(ew.clamp_p)
def _clamp(ctx, lo, x, hi):
    out = ctx.avals_out[0]
    lo_a, x_a, hi_a = ctx.avals_in
    if tuple(x_a.shape) != tuple(out.shape):
        lo, x, hi = ctx.operands([lo, x, hi])
        types = [aval_type(out)] * 3
    else:
        types = [aval_type(lo_a), aval_type(x_a), aval_type(hi_a)]
    return ctx.fb.emit(f"stablehlo.clamp {lo}, {x}, {hi} : ({', '.join(types)}) -> {aval_type(out)}")


@register(ew.convert_element_type_p)
def _convert_element_type(ctx, x, *, new_dtype, weak_type=False):
    aval = ctx.avals_in[0]
    if _ext.is_extended(new_dtype) or _ext.is_extended(aval.dtype):
        return x  # (the representation as it is: NOTE: [extended dtypes])
    if np.dtype(aval.dtype).kind == "c" and np.dtype(new_dtype) == np.bool_:
        # complex -> bool is the real part's != 0, as JAX's (which drops the imaginary part of a
        # complex -> real conversion first) and the eager impl: 1j gives False
        real = np.dtype(np.float32 if np.dtype(aval.dtype) == np.complex64 else np.float64)
        x = ctx.fb.convert(x, aval, real)
        aval = aval.update(dtype=real)
    return ctx.fb.convert(x, aval, new_dtype)


__all__ = ["compare_type", "xla_dtype"]
