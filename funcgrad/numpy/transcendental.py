"""Exponentials, logarithms, trigonometry, rounding and floating-point predicates of funcgrad.numpy.

Layer: surface. Imports ``funcgrad.numpy._core``, ``creation`` (``full``), ``funcgrad.custom_derivatives``
and the primitive catalog (elementwise family).

# NOTE: [no NaN gradients]
# A formula that is fine in value can still have a NaN derivative: ``where(x == 0, 1, sin(x) / x)``
# differentiates *both* branches, and the unselected branch's NaN times a zero cotangent is NaN.
# The fixes used here: the double-where (make the unselected branch's *input* safe, as in
# ``hypot``), or a ``custom_jvp`` that states the derivative (``logaddexp``, ``sinc`` at 0).
# Integer inputs compute in the default float (float64), as ``jax.numpy`` does.
"""

from __future__ import annotations

import operator

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import named_alias, template_public_functions
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_args,
    call_custom,
    constant,
    constant_like,
    convert,
    lax_const,
    promote_args,
    promote_args_inexact,
    rank_promote,
    select,
)
from funcgrad.numpy._dtypes import extended_in
from funcgrad.numpy.complexes import reject_complex
from funcgrad.numpy.creation import full
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew

__all__ = [
    "acos",
    "acosh",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "around",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "deg2rad",
    "degrees",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "floor",
    "heaviside",
    "hypot",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "log",
    "log10",
    "log1p",
    "log2",
    "nan_to_num",
    "rad2deg",
    "radians",
    "rint",
    "round",
    "signbit",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]


def _unary_inexact(prim, name, example_in, summary=None, real_only=False):
    def f(x, /):
        (x,) = promote_args_inexact(x)
        if real_only:
            reject_complex(name, x, why="NumPy defines it for real numbers only")
        return prim.bind(x)

    f.__name__ = f.__qualname__ = name
    expected = getattr(np, name)(np.float64(example_in))
    f.__doc__ = (
        f"{summary or f'Elementwise ``{name}``'} (NumPy semantics; integers compute in float64).\n\n"
        f">>> float({name}({example_in!r}))\n{float(expected)!r}\n"
    )
    return f


exp = _unary_inexact(ew.exp_p, "exp", 0.0)
exp2 = _unary_inexact(ew.exp2_p, "exp2", 3.0)
expm1 = _unary_inexact(ew.expm1_p, "expm1", 0.0)
log = _unary_inexact(ew.log_p, "log", 1.0)
log1p = _unary_inexact(ew.log1p_p, "log1p", 0.0)
sqrt = _unary_inexact(ew.sqrt_p, "sqrt", 4.0)
cbrt = _unary_inexact(ew.cbrt_p, "cbrt", 8.0, real_only=True)
sin = _unary_inexact(ew.sin_p, "sin", 0.0)
cos = _unary_inexact(ew.cos_p, "cos", 0.0)
tan = _unary_inexact(ew.tan_p, "tan", 0.0)
arcsin = _unary_inexact(ew.asin_p, "arcsin", 0.0)
arccos = _unary_inexact(ew.acos_p, "arccos", 1.0)
arctan = _unary_inexact(ew.atan_p, "arctan", 0.0)
sinh = _unary_inexact(ew.sinh_p, "sinh", 0.0)
cosh = _unary_inexact(ew.cosh_p, "cosh", 0.0)
tanh = _unary_inexact(ew.tanh_p, "tanh", 0.0)
arcsinh = _unary_inexact(ew.asinh_p, "arcsinh", 0.0)
arccosh = _unary_inexact(ew.acosh_p, "arccosh", 1.0)
arctanh = _unary_inexact(ew.atanh_p, "arctanh", 0.0)
# Array API spellings.
# (functions of their own names, as JAX's: ``jnp.acos.__name__ == 'acos'``)
asin, acos, atan = (named_alias(f, n) for f, n in ((arcsin, "asin"), (arccos, "acos"), (arctan, "atan")))
asinh, acosh, atanh = (
    named_alias(f, n) for f, n in ((arcsinh, "asinh"), (arccosh, "acosh"), (arctanh, "atanh"))
)


def _scaled_log(name, base, op, c):
    def f(x, /):
        (x,) = promote_args_inexact(x)
        dtype = aval(x).dtype
        if dtype.kind == "c":  # (JAX's: each part of log(x) scaled by a real constant, so log10(0j)
            r = ew.log_p.bind(x)  # is -inf+0j, where a complex product gives -inf+nanj)
            k = constant(c, _dt.real_dtype(dtype))
            return cx.complex_p.bind(op.bind(cx.real_p.bind(r), k), op.bind(cx.imag_p.bind(r), k))
        return op.bind(ew.log_p.bind(x), constant(c, dtype))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise base-{base} logarithm.\n\n>>> float({name}({float(base) ** 3}))\n3.0\n"
    return f


# log2 is JAX's log(x) / log(2), which XLA (and the eager division of an array by a constant, as
# XLA's) computes as log(x) * (1 / log(2)): jax's log2(8.0) is 2.9999999999999996, and so is ours.
# log(x) / log(10) is off NumPy's by up to 2 ulp (log10(1000.0) gave 2.9999999999999996): log10
# multiplies by log10(e) instead, within 1 ulp and exact at the powers of 10 up to 1e14.
log2 = _scaled_log("log2", 2, ew.div_p, np.log(2))
log10 = _scaled_log("log10", 10, ew.mul_p, np.log10(np.e))


def safe_sqrt(s):
    """``sqrt(s)`` whose derivative at ``s == 0`` is 0 instead of infinite (a double where: NOTE:
    [no NaN gradients]). Used where a root of a sum of squares is differentiated (``std``, norms)."""
    dtype = aval(s).dtype
    zero = constant(0, dtype)
    is_zero = ew.eq_p.bind(s, zero)
    safe = select(is_zero, constant(1, dtype), s)
    return select(is_zero, zero, ew.sqrt_p.bind(safe))


def arctan2(x1, x2, /):
    """Elementwise arctangent of ``x1 / x2`` choosing the quadrant correctly.

    >>> float(arctan2(1.0, -1.0)) == float(np.arctan2(1.0, -1.0))
    True
    """
    x1, x2 = rank_promote(*promote_args_inexact(x1, x2), name="atan2")
    # (complex values as JAX's: XLA's -i log((x2 + i x1) / sqrt(x2^2 + x1^2)); NumPy refuses them)
    return ew.atan2_p.bind(x1, x2)


atan2 = named_alias(arctan2, "atan2")


def _scale(name, factor_name, factor, example):
    def f(x, /):
        (x,) = promote_args_inexact(x)
        # (complex x scales as JAX's, where NumPy refuses it. JAX's lax._const: a weak array that is
        # not 0-d gives a strong result; fuzzer find)
        return ew.mul_p.bind(x, lax_const(x, factor))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Multiply by {factor_name}.\n\n>>> float({name}({example!r}))\n{float(example * factor)!r}\n"
    return f


deg2rad = _scale("deg2rad", "pi / 180", np.pi / 180, 180.0)
radians = _scale("radians", "pi / 180", np.pi / 180, 180.0)
rad2deg = _scale("rad2deg", "180 / pi", 180 / np.pi, np.pi)
degrees = _scale("degrees", "180 / pi", 180 / np.pi, np.pi)


# ----------------------------------------------------------------------------------------------
# logaddexp: stable in value, and a custom JVP so (-inf, -inf) gives no NaN (NOTE: [no NaN gradients])


def _logaddexp_weights(x1, x2, out, base_exp):
    """``d out / d x_i`` of ``out = logaddexp(x1, x2)``: ``exp(x_i - out)`` where ``out`` is finite;
    for ``out == +inf`` the infinite operands share the weight; for ``out == -inf`` (both -inf) the
    weights are 1/2 each (the limit along ``x1 == x2``). Computed without inf - inf."""
    dtype = aval(out).dtype
    zero, one, half = constant(0, dtype), constant(1, dtype), constant(0.5, dtype)
    inf = constant(np.inf, dtype)
    finite = ew.is_finite_p.bind(out)
    safe_out = select(finite, out, zero)
    is_pos = ew.eq_p.bind(out, inf)
    is_neg = ew.eq_p.bind(out, ew.neg_p.bind(inf))
    is_nan = ew.ne_p.bind(out, out)
    hit1, hit2 = ew.eq_p.bind(x1, inf), ew.eq_p.bind(x2, inf)
    n_hits = ew.add_p.bind(ew.convert_element_type(hit1, dtype), ew.convert_element_type(hit2, dtype))
    n_hits = ew.max_p.bind(n_hits, one)
    weights = []
    for x, hit in ((x1, hit1), (x2, hit2)):
        w = base_exp(ew.sub_p.bind(select(finite, x, zero), safe_out))
        w = select(is_pos, ew.div_p.bind(ew.convert_element_type(hit, dtype), n_hits), w)
        w = select(is_neg, half, w)
        weights.append(select(is_nan, out, w))
    return weights


def _logaddexp_impl(x1, x2, log1p_exp_neg, log_two):
    # Where x1 == x2 (equal infinities included) the result is x1 + log(2) exactly, as in NumPy, and
    # the difference is computed as 0 (no inf - inf).
    zero = constant_like(0, x1)  # (weak where x1 is, as JAX's logaddexp of Python scalars)
    equal = ew.eq_p.bind(x1, x2)
    delta = ew.sub_p.bind(select(equal, zero, x1), select(equal, zero, x2))
    amax = ew.max_p.bind(x1, x2)
    general = ew.add_p.bind(amax, log1p_exp_neg(ew.neg_p.bind(ew.abs_p.bind(delta))))
    return select(equal, ew.add_p.bind(x1, constant_like(log_two, x1)), general)


def _log1p_exp(v):
    return ew.log1p_p.bind(ew.exp_p.bind(v))


def _log1p_exp2_over_ln2(v):
    return ew.div_p.bind(ew.log1p_p.bind(ew.exp2_p.bind(v)), constant_like(np.log(2), v))


def _logaddexp_jvp(fn, base_exp):
    """The JVP rule of ``fn`` (logaddexp in base e or 2): ``t1 w1 + t2 w2`` with
    ``_logaddexp_weights`` (named ``<fn>_jvp``, as a jaxpr shows it)."""

    def jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        w1, w2 = _logaddexp_weights(x1, x2, out, base_exp)
        return out, ew.add_p.bind(*broadcast_args(ew.mul_p.bind(t1, w1), ew.mul_p.bind(t2, w2)))

    jvp.__name__ = jvp.__qualname__ = f"{fn.__name__}_jvp"
    return jvp


@custom_jvp
def _logaddexp(x1, x2):
    return _logaddexp_impl(x1, x2, _log1p_exp, np.log(2))


@custom_jvp
def _logaddexp2(x1, x2):
    return _logaddexp_impl(x1, x2, _log1p_exp2_over_ln2, 1.0)


_logaddexp.defjvp(_logaddexp_jvp(_logaddexp, ew.exp_p.bind))
_logaddexp2.defjvp(_logaddexp_jvp(_logaddexp2, ew.exp2_p.bind))


def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow; finite derivatives at ``-inf``.

    >>> float(logaddexp(1000.0, 1000.0)) == 1000.0 + float(np.log(2))
    True
    >>> float(logaddexp(-np.inf, -np.inf))
    -inf
    """
    x1, x2 = broadcast_args(*promote_args_inexact(x1, x2))
    if aval(x1).dtype.kind == "c":
        return call_custom(_complex_logaddexp_e, x1, x2)
    return call_custom(_logaddexp, x1, x2)


def logaddexp2(x1, x2, /):
    """``log2(2**x1 + 2**x2)`` without overflow.

    >>> float(logaddexp2(3.0, 3.0))
    4.0
    """
    x1, x2 = broadcast_args(*promote_args_inexact(x1, x2))
    if aval(x1).dtype.kind == "c":
        return call_custom(_complex_logaddexp_2, x1, x2)
    return call_custom(_logaddexp2, x1, x2)


def _replace_inf(x):
    # JAX's: 0 where the real part is +inf (so inf - inf never reaches the weights)
    re = cx.real_p.bind(x)
    return select(ew.eq_p.bind(re, constant_like(np.inf, re)), constant_like(0, x), x)


def _complex_logaddexp_jvp(fn, exp_p):
    # JAX's rule for complex operands too (its logaddexp is one custom_jvp): t1 exp(x1 - out) +
    # t2 exp(x2 - out), infinities replaced; derivatives of the rule at ties are then jax's.
    def jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        w1, w2 = (exp_p.bind(ew.sub_p.bind(_replace_inf(x), _replace_inf(out))) for x in (x1, x2))
        return out, ew.add_p.bind(ew.mul_p.bind(t1, w1), ew.mul_p.bind(t2, w2))

    return jvp


@custom_jvp
def _complex_logaddexp_e(x1, x2):
    return _complex_logaddexp(x1, x2, ew.exp_p, 1.0)


@custom_jvp
def _complex_logaddexp_2(x1, x2):
    return _complex_logaddexp(x1, x2, ew.exp2_p, 1 / np.log(2), np.pi / np.log(2))


_complex_logaddexp_e.defjvp(_complex_logaddexp_jvp(_complex_logaddexp_e, ew.exp_p))
_complex_logaddexp_2.defjvp(_complex_logaddexp_jvp(_complex_logaddexp_2, ew.exp2_p))


def _complex_logaddexp(x1, x2, exp_p, scale, half=np.pi):
    """JAX's complex ``logaddexp``/``logaddexp2`` (NumPy has none): with ``m`` the larger operand
    in the lexicographic order, ``m + scale * log1p(exp(x1 + x2 - 2 m))``, its imaginary part
    wrapped into ``[-half, half]`` (``pi``, or ``pi / log(2)`` for base 2), the principal branch."""
    m = ew.max_p.bind(x1, x2)
    delta = ew.sub_p.bind(ew.add_p.bind(x1, x2), ew.mul_p.bind(m, constant_like(2, m)))
    out = ew.log1p_p.bind(exp_p.bind(delta))
    if scale != 1.0:
        out = ew.mul_p.bind(out, constant_like(scale, out))
    out = ew.add_p.bind(m, out)
    im = cx.imag_p.bind(out)
    # (the constants exactly as JAX writes them: pi / log(2), not pi * (1 / log(2)), which differs by
    # an ulp, and the wrap of an imaginary part near 1e30 turns that ulp into a different angle)
    half, period, zero = (constant_like(v, im) for v in (half, 2 * half, 0))
    rem = ew.rem_p.bind(ew.add_p.bind(im, half), period)
    rem = select(ew.lt_p.bind(rem, zero), ew.add_p.bind(rem, period), rem)
    return cx.complex_p.bind(cx.real_p.bind(out), ew.sub_p.bind(rem, half))


# ----------------------------------------------------------------------------------------------
# hypot and sinc


@jitted_eagerly
def hypot(x1, x2, /):
    """``sqrt(x1**2 + x2**2)`` without overflow; the derivative at (0, 0) is 0, not NaN.

    >>> float(hypot(3.0, 4.0))
    5.0
    >>> float(hypot(1e300, 1e300)) == 1e300 * float(np.sqrt(2))
    True
    """
    x1, x2 = broadcast_args(*promote_args_inexact(x1, x2))
    reject_complex(  # (JAX's ValueError and words)
        "hypot",
        x1,
        why="jnp.hypot is not well defined for complex-valued inputs (it takes the real sides of a triangle: "
        "use abs(z))",
        error=ValueError,
    )
    dtype, weak = aval(x1).dtype, aval(x1).weak_type  # (hypot(3, 4) is weak, as JAX's)
    zero, one = (Array._from_owned(np.asarray(v, dtype), weak) for v in (0, 1))
    a, b = ew.abs_p.bind(x1), ew.abs_p.bind(x2)
    # scale * sqrt((x1/scale)**2 + (x2/scale)**2) equals hypot for any constant scale; the largest
    # magnitude (a constant to AD: stop_gradient) avoids overflow, and the derivative is the exact
    # (x1 dx1 + x2 dx2) / r at every order. (max/min of |x1|, |x2| in the formula would split the
    # derivative at the tie |x1| == |x2| and make the second derivative wrong there.)
    scale = ew.stop_gradient_p.bind(ew.max_p.bind(a, b))
    is_zero = ew.eq_p.bind(scale, zero)
    # Double where: the scale and the sum are 1 (not 0) where both sides are 0 (NOTE: [no NaN gradients]).
    scale = select(is_zero, one, scale)
    q = ew.add_p.bind(ew.square_p.bind(ew.div_p.bind(x1, scale)), ew.square_p.bind(ew.div_p.bind(x2, scale)))
    out = ew.mul_p.bind(scale, ew.sqrt_p.bind(select(is_zero, one, q)))
    out = select(is_zero, zero, out)
    # (JAX's inf is lax._const(x, inf): a Python float for a 0-d weak x, else a strong NumPy array,
    # so hypot of weak arrays of rank >= 1 is strong: hypot(1e3, uint32 array))
    inf = Array._from_owned(np.asarray(np.inf, dtype), weak and not aval(out).shape)
    is_inf = ew.or_p.bind(*broadcast_args(ew.eq_p.bind(a, inf), ew.eq_p.bind(b, inf)))
    return select(is_inf, inf, out)


def _sinc_taylor_coefficient(k: int) -> float:
    # The k-th derivative of sin(u)/u at u = 0.
    return 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1)


def _sinc_maclaurin_impl(k, x):
    # A constant of x's shape: the k-th Taylor coefficient's derivative structure lives in the JVP.
    a = aval(x)
    return constant(_sinc_taylor_coefficient(k), a.dtype, a.shape, weak_type=a.weak_type)


_sinc_maclaurin = custom_jvp(_sinc_maclaurin_impl, nondiff_argnums=(0,))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_maclaurin(k, x), ew.mul_p.bind(t, _sinc_maclaurin(k + 1, x))


@jitted_eagerly
def sinc(x, /):
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0, with exact derivatives of every order at 0.

    >>> float(sinc(0.0)), float(sinc(0.5)) == float(np.sinc(0.5))
    (1.0, True)
    """
    (x,) = promote_args_inexact(x)
    # (JAX's constants, lax._const: weak for a weak 0-d x only, so a weak array's sinc is strong)
    is_zero = ew.eq_p.bind(x, lax_const(x, 0))
    pi_x = ew.mul_p.bind(lax_const(x, np.pi), x)
    safe = select(is_zero, lax_const(x, 1), pi_x)
    return select(is_zero, call_custom(_sinc_maclaurin, 0, pi_x), ew.div_p.bind(ew.sin_p.bind(safe), safe))


# ----------------------------------------------------------------------------------------------
# Rounding


def _integer_passthrough(x, name=None):
    (x,) = promote_args(x)
    if name is not None:
        reject_complex(name, x)
    return x, aval(x).dtype.kind in "biu"


def _by_parts(f, x):
    """``f`` applied to the real and imaginary parts of a complex ``x`` (NumPy's complex rounding)."""
    return cx.complex_p.bind(f(cx.real_p.bind(x)), f(cx.imag_p.bind(x)))


def floor(x, /):
    """Elementwise floor (integers are returned unchanged, as in NumPy 2); zero derivative.

    >>> floor(np.array([-1.5, 1.5])).tolist()
    [-2.0, 1.0]
    """
    x, passthrough = _integer_passthrough(x, "floor")
    return x if passthrough else ew.floor_p.bind(x)


def ceil(x, /):
    """Elementwise ceiling (integers are returned unchanged); zero derivative.

    >>> ceil(np.array([-1.5, 1.5])).tolist()
    [-1.0, 2.0]
    """
    x, passthrough = _integer_passthrough(x, "ceil")
    return x if passthrough else ew.ceil_p.bind(x)


def trunc(x, /):
    """Round toward zero (integers are returned unchanged); zero derivative.

    >>> trunc(np.array([-1.7, 1.7])).tolist()
    [-1.0, 1.0]
    """
    x, passthrough = _integer_passthrough(x, "trunc")
    if passthrough:
        return x
    negative = ew.lt_p.bind(x, constant(0, aval(x).dtype))
    return select(negative, ew.ceil_p.bind(x), ew.floor_p.bind(x))


fix = trunc


def round(a, decimals: int = 0, out=None):
    """Round to ``decimals`` decimals, halves to even (NumPy's ``round``); zero derivative.

    >>> round(np.array([1.234, 5.678]), 1).tolist()
    [1.2000000000000002, 5.7]
    >>> round(np.array([0.5, 1.5, 2.5])).tolist()
    [0.0, 2.0, 2.0]
    """
    if out is not None:
        raise NotImplementedError("round: the out argument is not supported (Arrays are immutable)")
    a, passthrough = _integer_passthrough(a)
    decimals = operator.index(decimals)  # (JAX's TypeError for round(x, 1.5): not truncated)
    if passthrough:
        if decimals >= 0:
            return a
        scale = constant(10 ** (-decimals), aval(a).dtype)
        f = ew.convert_element_type(a, _dt.default_float)
        q = ew.round_p.bind(
            ew.div_p.bind(f, constant(10 ** (-decimals), _dt.default_float)), rounding_method=1
        )
        return ew.mul_p.bind(ew.convert_element_type(q, aval(a).dtype), scale)
    dtype = aval(a).dtype
    if decimals > 0 and decimals > np.log10(float(_dt.finfo(dtype).max)):
        return a  # (beyond the type's precision: 10**decimals would overflow to inf, as in JAX)
    if dtype.kind == "c":
        return _by_parts(lambda part: round(part, decimals), a)
    if decimals == 0:
        return ew.round_p.bind(a, rounding_method=1)
    # float16 scales in float32, as JAX's (x * 10**decimals rounded to float16 can cross a half:
    # round(float16(3.35), 1) would be 3.4).
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    a = ew.convert_element_type(a, work) if work != dtype else a
    factor = constant(10.0**decimals, work, weak_type=aval(a).weak_type)  # (round(2.25, 1): weak, as JAX's)
    out = ew.div_p.bind(ew.round_p.bind(ew.mul_p.bind(a, factor), rounding_method=1), factor)
    return ew.convert_element_type(out, dtype) if work != dtype else out


around = named_alias(round, "around")


def rint(x, /):
    """Round to the nearest integer, halves to even; integers become float64 as in NumPy.

    >>> rint(np.array([0.5, 1.5, -2.5])).tolist()
    [0.0, 2.0, -2.0]
    """
    integer = not _dt.is_inexact(aval(asarray(x)).dtype)
    if integer and _dt.jax_rules:
        # (JAX's: booleans and integers convert to the default float, strong -- float64 in 64-bit
        # mode whatever the integer's width, where its promotion gives int32 float32)
        return ew.convert_element_type(asarray(x), _dt.default_float, weak_type=False)
    (x,) = promote_args_inexact(x)
    if aval(x).dtype.kind == "c":
        return _by_parts(lambda part: ew.round_p.bind(part, rounding_method=1), x)
    if integer and aval(x).weak_type:  # (an integer converted to float is strong: JAX's rint(2))
        x = ew.convert_element_type(x, aval(x).dtype, weak_type=False)
    return ew.round_p.bind(x, rounding_method=1)


# ----------------------------------------------------------------------------------------------
# Floating-point predicates (boolean results, zero derivatives)


def isfinite(x, /):
    """True where ``x`` is neither infinite nor NaN.

    >>> isfinite(np.array([1.0, np.inf, np.nan])).tolist()
    [True, False, False]
    """
    (x,) = promote_args(x)
    if not _dt.is_inexact(aval(x).dtype):
        return _all_true(x)
    if aval(x).dtype.kind == "c":  # both parts finite
        return ew.and_p.bind(isfinite(cx.real_p.bind(x)), isfinite(cx.imag_p.bind(x)))
    return ew.is_finite_p.bind(x)


def _all_true(x):
    return _filled_like(x, True)


def _all_false(x):
    return _filled_like(x, False)


def _filled_like(x, value):
    # JAX's lax.full_like(x, value, dtype=bool) inside its jitted isfinite/isnan/isinf: traced under
    # jit (a concrete constant left the program, so a sharding constraint on it placed one device:
    # the sharded-program fuzzer's seed 17003), and, as a jitted result read from no argument, on
    # one device eagerly whatever x's layout; strong, as full_like given a dtype is (isinf(5),
    # isfinite of a weak bool: only isnan, JAX's x != x, keeps a weak x's weak type)
    return full(aval(x).shape, value, dtype=np.bool_)


def isnan(x, /):
    """True where ``x`` is NaN.

    >>> isnan(np.array([1.0, np.nan])).tolist()
    [False, True]
    """
    (x,) = promote_args(x)
    # (x != x for every dtype, as JAX's: an integer is never NaN, and isnan(6) stays weak)
    return ew.ne_p.bind(x, x)


def isinf(x, /):
    """True where ``x`` is positive or negative infinity.

    >>> isinf(np.array([1.0, -np.inf])).tolist()
    [False, True]
    """
    (x,) = promote_args(x)
    if not _dt.is_inexact(aval(x).dtype):
        return _all_false(x)
    if aval(x).dtype.kind == "c":  # either part infinite
        return ew.or_p.bind(isinf(cx.real_p.bind(x)), isinf(cx.imag_p.bind(x)))
    return ew.eq_p.bind(ew.abs_p.bind(x), constant(np.inf, aval(x).dtype))


def _signed_inf(name, x, inf):
    """Where ``x`` equals ``inf`` (one sign of infinity): ``isposinf`` and ``isneginf``."""
    (x,) = promote_args(x)
    reject_complex(name, x, why="the sign of a complex infinity is ambiguous")
    if not _dt.is_inexact(aval(x).dtype):
        return _all_false(x)
    return ew.eq_p.bind(x, constant(inf, aval(x).dtype))


def isposinf(x, /):
    """True where ``x`` is positive infinity.

    >>> isposinf(np.array([np.inf, -np.inf])).tolist()
    [True, False]
    """
    return _signed_inf("isposinf", x, np.inf)


def isneginf(x, /):
    """True where ``x`` is negative infinity.

    >>> isneginf(np.array([np.inf, -np.inf])).tolist()
    [False, True]
    """
    return _signed_inf("isneginf", x, -np.inf)


def signbit(x, /):
    """True where the sign bit is set (``-0.0`` and negative NaNs included).

    >>> signbit(np.array([-1.0, -0.0, 0.0, 2.0])).tolist()
    [True, True, False, False]
    """
    (x,) = promote_args(x)
    reject_complex("signbit", x, why="complex numbers have no sign bit")
    dtype = aval(x).dtype
    if dtype.kind in "bu":
        return _all_false(x)
    if dtype.kind == "i":
        return ew.lt_p.bind(x, constant(0, dtype))
    # The sign bit is the integer sign of the same bits.
    as_int = np.dtype(f"int{dtype.itemsize * 8}")
    return ew.lt_p.bind(bc.bitcast_convert_type(x, as_int), constant(0, as_int))


def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2`` (``-0.0`` counts as negative).

    >>> copysign(np.array([1.0, 2.0]), np.array([-0.0, 3.0])).tolist()
    [-1.0, 2.0]
    """
    x1, x2 = broadcast_args(*promote_args_inexact(x1, x2), explicit=True)
    reject_complex("copysign", x1, why="complex numbers have no sign bit")
    mag = ew.abs_p.bind(x1)
    return select(signbit(x2), ew.neg_p.bind(mag), mag)


@jitted_eagerly
def heaviside(x1, x2, /):
    """The Heaviside step: 0 for ``x1 < 0``, ``x2`` at 0, 1 for ``x1 > 0`` (NaN stays NaN).

    >>> heaviside(np.array([-1.0, 0.0, 2.0]), 0.5).tolist()
    [0.0, 0.5, 1.0]
    """
    x1, x2 = promote_args_inexact(x1, x2)
    # JAX's 0 and 1 are weak only beside a weak scalar x1: a weak array's step is strong.
    strong = aval(x1).weak_type and aval(x1).ndim > 0
    x1, x2 = broadcast_args(x1, x2, explicit=True)
    reject_complex("heaviside", x1)
    zero = constant_like(0, x1)
    pos = select(ew.gt_p.bind(x1, zero), constant_like(1, x1), select(ew.ne_p.bind(x1, x1), x1, x2))
    out = select(ew.lt_p.bind(x1, zero), zero, pos)
    return ew.convert_element_type(out, aval(out).dtype, weak_type=False) if strong else out


@jitted_eagerly(static_argnames=("copy",))
def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's extremes).

    >>> nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0]), posinf=9.0, neginf=-9.0).tolist()
    [0.0, 9.0, -9.0, 1.0]
    """
    if extended_in((x,)) is not None:  # typed PRNG keys are not inexact: as they are (JAX's)
        return x
    (x,) = promote_args(x)
    dtype = aval(x).dtype
    if not _dt.is_inexact(dtype):
        return x
    if dtype.kind == "c":  # each part on its own, as NumPy does
        return _by_parts(lambda part: nan_to_num(part, copy, nan, posinf, neginf), x)
    info = _dt.finfo(dtype)  # (ml_dtypes' too: bfloat16 is not NumPy kind "f")
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    # (``convert``, JAX's ``asarray(v, dtype)``: the replacements may be traced, as JAX's are)
    out = select(ew.ne_p.bind(x, x), convert(nan, dtype), x)
    out = select(ew.eq_p.bind(x, constant(np.inf, dtype)), convert(posinf, dtype), out)
    return select(ew.eq_p.bind(x, constant(-np.inf, dtype)), convert(neginf, dtype), out)


@jitted_eagerly(static_argnames=("equal_nan",))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``, with infinities equal only to themselves.

    >>> isclose(np.array([1.0, 1.1, np.nan]), np.array([1.0 + 1e-9, 1.0, np.nan]), equal_nan=True).tolist()
    [True, False, True]
    """
    if extended_in((a, b)) is not None:  # typed PRNG keys: close is equal, as in JAX
        return a == b
    a, b = broadcast_args(*promote_args(a, b))
    dtype = aval(a).dtype
    if not _dt.is_inexact(dtype):
        a, b = promote_args_inexact(a, b)
        dtype = aval(a).dtype
        close = _close(a, b, rtol, atol, dtype)
        return close
    close = _close(a, b, rtol, atol, dtype)
    either_inf = ew.or_p.bind(*broadcast_args(isinf(a), isinf(b)))
    close = select(either_inf, ew.eq_p.bind(a, b), close)
    if equal_nan:
        both_nan = ew.and_p.bind(*broadcast_args(ew.ne_p.bind(a, a), ew.ne_p.bind(b, b)))
        close = ew.or_p.bind(*broadcast_args(close, both_nan))
    return close


def _close(a, b, rtol, atol, dtype):
    diff = ew.abs_p.bind(ew.sub_p.bind(a, b))
    dtype = _dt.real_dtype(dtype)  # |complex| is real: so are the tolerances
    # (``convert``, JAX's ``lax.convert_element_type``: the tolerances may be traced, as JAX's are)
    tol = ew.add_p.bind(convert(atol, dtype), ew.mul_p.bind(convert(rtol, dtype), ew.abs_p.bind(b)))
    return ew.le_p.bind(*broadcast_args(diff, tol))


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
