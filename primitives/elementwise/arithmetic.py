"""Elementwise arithmetic: negation, absolute value, rounding, powers by integers, the binary
arithmetic and bitwise operators, comparisons, select and clamp, with their rules (dtype
conversion, ``stop_gradient`` and ``copy`` are in ``conversion.py``); the Taylor rules that are
recurrences on series (square, integer_pow, abs, mul, div) are with the series arithmetic the
family's Taylor rules share, in ``series.py``.

Layer: primitives. Imports the funcgrad kernel, numpy and the family's ``conversion``. Part of the
``elementwise`` family (``primitives/elementwise/``, one family split by subject; its
transcendental functions are in ``transcendental.py``). Each primitive is declared once with its
impl, abstract eval, JVP and batch rule (``_rules.unop`` / ``naryop``); derivative rules are one
line where the math is one line.
Operands follow NOTE: [elementwise operand contract].
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import complex as _cx
from funcgrad.primitives._rules import (
    JET_OF_SELECTION,
    aval_of,
    broadcast_operand_shapes,
    broadcast_to_shape,
    coerce_pair,
    complex_extremum,
    const_like,
    elementwise_batch,
    naryop,
    naryop_abstract_eval,
    no_derivative,
    scalar_like,
    to_front,
    unbroadcast,
    unop,
    xla_extremum,
)
from funcgrad.primitives.elementwise.conversion import convert

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import (
    Zero,
    defjvp,
    deflinear,
    instantiate,
    is_undefined_primal,
    linear_taylor,
)
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray


def _float_or_complex(dtype) -> bool:
    return _dt.is_inexact(dtype)


def _numeric(dtype) -> bool:
    return _dt.kind(dtype) in "iufc"


def _ordered(dtype) -> bool:
    # Complex numbers have no order: lt/le/gt/ge, rem refuse them (funcgrad.numpy compares complex
    # values lexicographically, as NumPy and jax.numpy do, from real/imag parts).
    return _dt.kind(dtype) in "biuf"


def _real_numeric(dtype) -> bool:
    return _dt.kind(dtype) in "iuf"


def _integer_or_bool(dtype) -> bool:
    return _dt.kind(dtype) in "biu"


def _integer(dtype) -> bool:
    return _dt.kind(dtype) in "iu"


# ----------------------------------------------------------------------------------------------
# Helpers rules use (thin binds that accept Python scalars)


def neg(x):
    return neg_p.bind(x)


def add(x, y):
    return add_p.bind(*coerce_pair(x, y))


def sub(x, y):
    return sub_p.bind(*coerce_pair(x, y))


def mul(x, y):
    return mul_p.bind(*coerce_pair(x, y))


def div(x, y):
    return div_p.bind(*coerce_pair(x, y))


def square(x):
    return square_p.bind(x)


def select(pred, on_true, on_false):
    return select_n_p.bind(pred, on_false, on_true)


# ----------------------------------------------------------------------------------------------
# Unary


neg_p = Primitive("neg")
neg_p.def_traits(sparse="zero_preserving_linear")
neg_p.def_impl(np.negative)
neg_p.def_abstract_eval(lambda x: x)
neg_p.def_batch(lambda axis_size, vals, dims: (neg(vals[0]), dims[0]))
deflinear(neg_p, lambda ct, x: [neg(ct)])


def _sign(x):
    # (XLA's sign of a real -0 is -0, of NaN NaN; NumPy's np.sign(-0.0) is +0)
    out = np.sign(x)
    if np.dtype(out.dtype).kind == "f" or out.dtype in _dt.HALF_FLOATS:
        return np.where(np.equal(x, 0), x, out).astype(out.dtype, copy=False)
    return out


sign_p = unop("sign", _sign, None, accepted=_numeric, sparse="zero_preserving")
floor_p = unop("floor", np.floor, None, accepted=_dt.is_float, sparse="zero_preserving")
ceil_p = unop("ceil", np.ceil, None, accepted=_dt.is_float, sparse="zero_preserving")


def _round_impl(x, rounding_method=0):
    # rounding_method 0: half away from zero (C's round); 1: half to even (NumPy's round).
    if rounding_method == 1:
        return np.round(x)
    # Not floor(x + 0.5): that rounds 0.49999999999999994 up, because the sum rounds to 1.0.
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole).astype(np.result_type(x))


round_p = unop("round", _round_impl, None, accepted=_dt.is_float, sparse="zero_preserving")
is_finite_p = unop("is_finite", np.isfinite, None, accepted=_dt.is_float, result_dtype=np.bool_)


def _abs_jvp(t, ans, x):
    if aval_of(x).dtype.kind != "c":
        # abs'(0) is 1, as in JAX: the right derivative, select(x >= 0, t, -t).
        return select(ge_p.bind(x, scalar_like(0, x)), instantiate(t), neg(t))
    # d|z| = Re(conj(z) dz) / |z|, and 0 at z == 0 (JAX's rule). 1/|z| is taken on the real |z|
    # (double where: no inf at 0) and scales conj(z): cheaper than a complex division.
    is_zero = eq_p.bind(ans, np.zeros((), aval_of(ans).dtype))
    inv = div(1, select(is_zero, hooks.full_like(ans, 1), ans))
    inv = select(is_zero, hooks.full_like(ans, 0), inv)
    return _cx.real(mul(t, mul(_cx.conj(x), convert(inv, aval_of(x).dtype))))


def _abs_abstract_eval(x: ShapedArray) -> ShapedArray:
    if not _numeric(x.dtype):
        raise TypeError(f"abs does not accept dtype {x.dtype.name}")
    if _dt.kind(x.dtype) in "iu" and _dt.bit_width(x.dtype) < 8:  # (JAX's abs refuses int4/int2/...)
        raise TypeError(
            f"abs does not accept dtype {x.dtype.name}. Support for narrow-width integers is "
            "platform-dependent and limited to a few specific operations, e.g. basic arithmetic "
            "and type casting."
        )
    return ShapedArray(x.shape, _dt.real_dtype(x.dtype), x.weak_type)


abs_p = unop("abs", np.abs, _abs_jvp, uses_answer=True, accepted=_numeric, sparse="zero_preserving")
abs_p.def_abstract_eval(_abs_abstract_eval)  # |complex| is real
abs_p.weak_type_rule = lambda params: True  # |weak complex| is a weak float


def sign(x):
    return sign_p.bind(x)


_const = const_like  # (JAX's lax._const: the rules below write their constants with it)


square_p = unop(
    "square",
    np.square,
    lambda t, x: mul(t, mul(x, _const(x, 2))),
    accepted=_numeric,
    sparse="zero_preserving",
)


def _integer_pow_impl(x, y):
    # Repeated squaring, as XLA lowers integer_pow: NumPy's float power calls libm's pow per
    # element, which takes a slow path for negative bases (x**3 of a (8, 128, 1024) float32
    # activation: ~50 ms against ~0.7 ms for x*x*x; a GELU's cube dominated an eager transformer
    # gradient).
    x = np.asarray(x)
    n = abs(y)
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    if result is None:  # y == 0
        return np.ones_like(x)
    if result is x:
        result = x.copy()
    return result if y >= 0 else (1 / result).astype(np.result_type(x))


def _integer_pow_abstract_eval(x, *, y):
    if not isinstance(y, int):
        raise TypeError(f"integer_pow: the exponent must be a Python int, got {y!r}")
    if x.dtype == np.bool_ or (_integer(x.dtype) and y < 0):
        raise TypeError(
            f"integer_pow: cannot raise {x.str_short()} to the power {y}"
            + (" (integers cannot be raised to negative powers)" if y < 0 else "")
        )
    return x


integer_pow_p = Primitive("integer_pow")
integer_pow_p.def_traits(may_produce_nan=True, sparse="positive_power")
integer_pow_p.def_impl(_integer_pow_impl)
integer_pow_p.def_abstract_eval(_integer_pow_abstract_eval)
integer_pow_p.def_batch(lambda axis_size, vals, dims, *, y: (integer_pow_p.bind(vals[0], y=y), dims[0]))
defjvp(
    integer_pow_p,
    lambda t, x, *, y: (
        Zero.from_primal_value(x) if y == 0 else mul(t, mul(integer_pow(x, y - 1), _const(x, y)))
    ),
)


def integer_pow(x, y: int):
    """``x ** y`` for a static Python int ``y`` (``lax.integer_pow``).

    >>> float(integer_pow(np.float64(2.0), -2))
    0.25
    """
    if y == 1:
        return x
    return integer_pow_p.bind(x, y=int(y))


not_p = unop("not", np.invert, None, accepted=_integer_or_bool)

# ----------------------------------------------------------------------------------------------
# Binary


def _add_transpose(ct, x, y):
    return [
        unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
        unbroadcast(ct, y.aval) if is_undefined_primal(y) else None,
    ]


def _sub_transpose(ct, x, y):
    return [
        unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
        unbroadcast(neg(ct), y.aval) if is_undefined_primal(y) else None,
    ]


add_p = Primitive("add")
add_p.def_traits(may_produce_nan=True, sparse="sum")
add_p.def_impl(np.add)
add_p.def_abstract_eval(naryop_abstract_eval("add", None))
add_p.def_batch(elementwise_batch(add_p))
deflinear(add_p, _add_transpose)

sub_p = Primitive("sub")
sub_p.def_traits(may_produce_nan=True, sparse="difference")
sub_p.def_impl(np.subtract)
sub_p.def_abstract_eval(naryop_abstract_eval("sub", None))
sub_p.def_batch(elementwise_batch(sub_p))
deflinear(sub_p, _sub_transpose)

# add_any: adds tangents/cotangents (same avals); kept apart from `add` so backward programs say
# where accumulation happens.
add_any_p = Primitive("add_any")
add_any_p.def_traits(sparse="sum")
add_any_p.def_impl(np.add)
_add_any_avals = naryop_abstract_eval("add_any", None)


def _add_any_abstract_eval(x, y):
    # JAX's (ad_util.add_abstract): the first operand's type, its weak type included -- the
    # cotangent accumulated so far, whose weak type a later strong one does not change
    return _add_any_avals(x, y).update(weak_type=x.weak_type)


add_any_p.def_abstract_eval(_add_any_abstract_eval)
add_any_p.def_batch(elementwise_batch(add_any_p))
deflinear(add_any_p, _add_transpose)


def _additive_jvp(primitive, negate_second: bool):
    """JVP of ``x + y`` / ``x - y`` that adds nothing for a symbolic-zero tangent (NOTE: [symbolic
    zeros]): ``t_x`` alone passes through, so ``x + const`` costs no equation in the tangent
    program."""

    def jvp(primals, tangents):
        out = primitive.bind(*primals)
        tx, ty = tangents
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero.from_primal_value(out)
        if type(ty) is Zero:
            return out, _to_shape_of(tx, out)
        if type(tx) is Zero:
            return out, _to_shape_of(neg(ty) if negate_second else ty, out)
        return out, primitive.bind(tx, ty)

    return jvp


def _to_shape_of(t, out):
    # An operand's tangent may be 0-d or have size-1 dimensions (NOTE: [elementwise operand contract]).
    return broadcast_to_shape(t, aval_of(out).shape)


add_p.def_jvp(_additive_jvp(add_p, negate_second=False))
sub_p.def_jvp(_additive_jvp(sub_p, negate_second=True))
add_any_p.def_jvp(_additive_jvp(add_any_p, negate_second=False))


def _mul_transpose(ct, x, y):
    if is_undefined_primal(x):
        return [unbroadcast(mul(ct, y), x.aval), None]
    return [None, unbroadcast(mul(x, ct), y.aval)]


def _mul_impl(x, y):
    out = np.multiply(x, y)
    if out.dtype.kind == "c":  # (XLA's complex product at infinities, NaNs: NOTE: [complex special values])
        return _complex_at_specials(mul_p, (x, y), {}, out)
    return out


# (the cached-program interpreter's step for real operands: the bare ufunc)
_mul_impl.real_step = np.multiply

mul_p = Primitive("mul")
mul_p.def_traits(may_produce_nan=True, sparse="product")
mul_p.def_impl(_mul_impl)
mul_p.def_traits(identity_element=1)  # (x * 1 is x for every float, nan and -0.0 included)
mul_p.def_abstract_eval(naryop_abstract_eval("mul", None))
mul_p.def_batch(elementwise_batch(mul_p))
defjvp(mul_p, lambda t, x, y: mul(t, y), lambda t, x, y: mul(x, t))
mul_p.def_transpose(lambda ct, x, y: _mul_transpose(instantiate(ct), x, y))


_RECIPROCAL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _div_impl(x, y):
    kind = _dt.kind(np.result_type(x))
    if kind in "iu":
        return _int_div_rem(x, y)[0]
    y_shape = np.shape(y)
    # (a divisor of the dividend's shape is no broadcast: the common case skips broadcast_shapes)
    if (
        y_shape != np.shape(x)
        and np.result_type(y) in _RECIPROCAL_DTYPES
        and y_shape != np.broadcast_shapes(np.shape(x), y_shape)
    ):
        # XLA's algebraic simplifier rewrites A / broadcast(B) as A * broadcast(1 / B), the
        # reciprocal rounded to the dtype (jax's x / 3.0 and x / row, eager or jitted, and funcgrad's
        # under jit): an ulp from the quotient in about a third of the elements, so the eager step
        # computes that product too (the fuzzer's float16 softmax; bfloat16, computed in float32
        # there, rounds once, as the quotient)
        return np.multiply(x, np.divide(np.ones((), np.result_type(y)), y))
    out = np.divide(x, y)
    if kind == "c":  # (XLA's complex division at infinities, NaNs: NOTE: [complex special values])
        return _complex_at_specials(div_p, (x, y), {}, out)
    return out


def _complex_at_specials(primitive, vals, params, out):
    """``out``, NumPy's complex result of ``primitive`` at ``vals``, or XLA's where the two may
    differ (NOTE: [complex special values]; set by ``complex_specials``, which imports this)."""
    return out


def _int_div_rem(x, y):
    """XLA's integer division: the quotient rounds toward zero (C, not NumPy's floor), the
    remainder has the dividend's sign, and the undefined cases give what XLA computes:
    ``x / 0 == -1``, ``x % 0 == x``, ``INT_MIN / -1 == INT_MIN``, ``INT_MIN % -1 == 0``."""
    dtype = np.result_type(x)
    x, y = np.asarray(x, dtype), np.asarray(y, dtype)
    zero = y == 0
    overflow = (x == _dt.iinfo(dtype).min) & (y == -1) if _dt.kind(dtype) == "i" else np.zeros((), bool)
    safe_y = np.where(zero | overflow, np.ones((), dtype), y)
    rem = np.fmod(x, safe_y)
    quot = ((x - rem) // safe_y).astype(dtype)  # exact: x - rem is a multiple of safe_y
    quot = np.where(zero, np.asarray(-1).astype(dtype), np.where(overflow, x, quot)).astype(dtype)
    rem = np.where(zero, x, np.where(overflow, np.zeros((), dtype), rem)).astype(dtype)
    return quot, rem


div_p = Primitive("div")
div_p.def_traits(may_produce_nan=True, sparse="quotient")
div_p.def_impl(_div_impl)
div_p.def_abstract_eval(naryop_abstract_eval("div", None))
div_p.def_batch(elementwise_batch(div_p))
# JAX's rule, term for term (so grad's jaxpr and its rounding are jax's): -t * x * y**-2.
defjvp(div_p, lambda t, x, y: div(t, y), lambda t, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))
div_p.def_transpose(lambda ct, x, y: [unbroadcast(div(instantiate(ct), y), x.aval), None])


def _rem_impl(x, y):
    # Sign of the dividend, like C fmod and XLA's remainder.
    if _dt.kind(np.result_type(x)) in "iu":
        return _int_div_rem(x, y)[1]
    return np.fmod(x, y)


def _broadcast_like(t, *operands):
    """``t`` broadcast to the shape of the operands' result (an operand's tangent takes the
    result's shape; see NOTE: [elementwise operand contract])."""
    return broadcast_to_shape(t, broadcast_operand_shapes("broadcast", [aval_of(o) for o in operands]))


rem_p = naryop(
    "rem",
    _rem_impl,
    lambda t, x, y: _broadcast_like(t, x, y),
    lambda t, x, y: mul(neg(t), mul(sign(div(x, y)), floor(abs_(div(x, y))))),
    accepted=_real_numeric,
    taylor_from_jvp="x - y * trunc(x / y): its JVP rule is linear with a piecewise-constant factor",
    may_produce_nan=True,
)


def abs_(x):
    return abs_p.bind(x)


def floor(x):
    return floor_p.bind(x)


def _balanced_eq(x, ans, y):
    # JAX's balanced_eq, op for op: 1 where x is the answer, halved where y is too (a tie splits the
    # derivative equally, as JAX documents for max/min); each operand's weight is computed on its
    # own, so where either is NaN (the answer equals neither) both are 0 (issue 33). Complex values
    # compare lexicographically, and the rule holds as it is.
    on = select(eq_p.bind(x, ans), _full_like(ans, 1), _full_like(ans, 0))
    return div(on, select(eq_p.bind(y, ans), _full_like(ans, 2), _full_like(ans, 1)))


def _full_like(x, value):
    # JAX's full_like: weak where x is (so the tangent of a weak max stays weak, as jax's).
    return hooks.broadcast_in_dim(scalar_like(value, x), aval_of(x).shape, ())


def _minmax(name, impl):
    p = naryop(name, impl, taylor_from_jvp=JET_OF_SELECTION)
    defjvp(
        p,
        lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
        lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)),
        uses_answer=True,
    )
    return p


def _extremum(ufunc, x, y, for_max):
    if np.iscomplexobj(x) or np.iscomplexobj(y):  # (JAX's lexicographic pick, NaN parts included)
        return complex_extremum(x, y, for_max=for_max)
    return xla_extremum(ufunc(x, y), x, y, for_max=for_max)


# (NOTE: [XLA's signed zeros in max and min])
max_p = _minmax("max", lambda x, y: _extremum(np.maximum, x, y, True))
min_p = _minmax("min", lambda x, y: _extremum(np.minimum, x, y, False))


# (kept_when_dead: JAX removes nothing while tracing, so jvp of a jit or checkpoint holding an
# unused nextafter of a differentiated value refuses, as JAX's; the fuzzer's leftovers)
def _nextafter(x, y):
    # y where x == y (+0 toward -0 is -0), as XLA's and C's; NumPy's float16 loop returns x there
    out = np.nextafter(x, y)
    return np.where(np.equal(x, y), y, out).astype(out.dtype)


nextafter_p = naryop(
    "nextafter", _nextafter, accepted=_dt.is_float, differentiable=False, kept_when_dead=True
)
no_derivative(nextafter_p)  # (JAX defines none: a nonzero tangent raises; the fuzzer: funcgrad gave zeros)
and_p = naryop("and", np.bitwise_and, accepted=_integer_or_bool, differentiable=False)
or_p = naryop("or", np.bitwise_or, accepted=_integer_or_bool, differentiable=False)
xor_p = naryop("xor", np.bitwise_xor, accepted=_integer_or_bool, differentiable=False, sparse="densifying")


def _shift_left(x, y):
    bits = np.dtype(np.result_type(x)).itemsize * 8
    out = np.left_shift(x, np.where((y < 0) | (y >= bits), 0, y))
    return np.where((y < 0) | (y >= bits), 0, out).astype(np.result_type(x))


def _shift_right_arithmetic(x, y):
    dtype = np.dtype(np.result_type(x))
    bits = dtype.itemsize * 8
    y = np.where((y < 0) | (y >= bits), bits - 1, y)
    if dtype.kind == "u":
        # XLA shifts an unsigned value's bits as a signed one's (the top bit fills in: uint32
        # 0xFFFFFFFF >> 40 is 0xFFFFFFFF, as jax's; NumPy's unsigned shift is logical). Fuzzer find.
        signed = np.dtype(f"i{dtype.itemsize}")
        sx = np.asarray(np.asarray(x, dtype).view(signed))
        return np.asarray(np.right_shift(sx, np.asarray(y).astype(signed))).astype(signed).view(dtype)
    return np.right_shift(x, y).astype(dtype)


def _shift_right_logical(x, y):
    dtype = np.dtype(np.result_type(x))
    bits = dtype.itemsize * 8
    unsigned = np.dtype(f"u{dtype.itemsize}")
    ux = np.asarray(x).view(unsigned) if np.ndim(x) else np.asarray(x).astype(dtype).view(unsigned)
    out = np.right_shift(ux, np.where((y < 0) | (y >= bits), 0, y).astype(unsigned))
    out = np.where((y < 0) | (y >= bits), 0, out).astype(unsigned)
    return out.view(dtype) if out.ndim else out.astype(unsigned).view(dtype)


shift_left_p = naryop("shift_left", _shift_left, accepted=_integer, differentiable=False)
shift_right_arithmetic_p = naryop(
    "shift_right_arithmetic", _shift_right_arithmetic, accepted=_integer, differentiable=False
)
shift_right_logical_p = naryop(
    "shift_right_logical", _shift_right_logical, accepted=_integer, differentiable=False
)

eq_p = naryop("eq", np.equal, result_dtype=np.bool_, differentiable=False, sparse="densifying")
ne_p = naryop("ne", np.not_equal, result_dtype=np.bool_, differentiable=False, sparse="densifying")
# (sparse="densifying": a comparison of zeros is true or false everywhere, a dense result, which
# sparsify refuses as JAX's)
_compare = dict(accepted=_ordered, result_dtype=np.bool_, differentiable=False, sparse="densifying")
lt_p = naryop("lt", np.less, **_compare)
le_p = naryop("le", np.less_equal, **_compare)
gt_p = naryop("gt", np.greater, **_compare)
ge_p = naryop("ge", np.greater_equal, **_compare)

# ----------------------------------------------------------------------------------------------
# select_n and clamp


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(np.shape(which), np.shape(cases[0]))).copy()
    if np.result_type(which) == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which, cases) if np.ndim(which) else cases[int(which)]


def _select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray):
    if not cases:
        raise TypeError("select_n requires at least one case")
    if which.dtype != np.bool_ and _dt.kind(which.dtype) not in "iu":
        raise TypeError(f"select_n predicate must be bool or int32, got {which.dtype.name}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean predicate takes at most two cases")
    if len({c.dtype for c in cases}) > 1:
        raise TypeError("select_n cases must have one dtype, got " + ", ".join(c.str_short() for c in cases))
    shape = broadcast_select_shape(which, cases)
    return ShapedArray(shape, cases[0].dtype, all(c.weak_type for c in cases))


def broadcast_select_shape(which, cases):
    shapes = {c.shape for c in cases}
    if len(shapes) > 1:
        raise TypeError("select_n cases must have one shape, got " + ", ".join(c.str_short() for c in cases))
    (shape,) = shapes
    if which.shape not in ((), shape):
        raise TypeError(f"select_n predicate shape {which.shape} must be () or the cases' shape {shape}")
    return shape


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero.from_primal_value(out)
    ts = [instantiate(t) if type(t) is not Zero else hooks.zeros(t.aval) for t in case_tangents]
    return out, select_n_p.bind(which, *ts)


def _select_n_transpose(ct, which, *cases):
    if is_undefined_primal(which):
        raise ValueError("select_n is not linear in its predicate")
    ct = instantiate(ct)
    zeros = hooks.zeros(aval_of(ct))
    outs = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            branches = [zeros] * len(cases)
            branches[i] = ct
            outs.append(select_n_p.bind(which, *branches))
        else:
            outs.append(None)
    return outs


select_n_p = Primitive("select_n")
select_n_p.def_impl(_select_n_impl)
select_n_p.def_abstract_eval(_select_n_abstract_eval)
select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)
# Eager results weak as the staged ones: when every case is (the predicate does not count).
select_n_p.weak_type_of = lambda params, args: all(aval_of(c).weak_type for c in args[1:])


def _select_n_batch(axis_size, vals, dims):
    which, *cases = vals
    wdim, *cdims = dims
    moved_cases = [to_front(c, d, axis_size) for c, d in zip(cases, cdims)]
    if wdim is None and aval_of(which).ndim == 0:
        # A scalar unbatched predicate selects whole arrays: it stays a scalar.
        return select_n_p.bind(which, *moved_cases), 0
    lane_shape = aval_of(moved_cases[0]).shape[1:]
    which = to_front(which, wdim, axis_size)
    if aval_of(which).ndim == 1 and lane_shape:
        which = hooks.broadcast_in_dim(which, (axis_size, *lane_shape), (0,))
    return select_n_p.bind(which, *moved_cases), 0


select_n_p.def_batch(_select_n_batch)
select_n_p.def_taylor(linear_taylor(select_n_p))  # (linear in its inexact operands)


# ----------------------------------------------------------------------------------------------
# clamp(lo, x, hi)

clamp_p = Primitive("clamp")
clamp_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
# min(max(x, lo), hi), as XLA (lo > hi gives hi); np.clip has the same convention.
clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))


def _clamp_abstract_eval(lo, x, hi):
    if lo.dtype != x.dtype or hi.dtype != x.dtype:
        raise TypeError(
            f"clamp requires operands of one dtype, got {lo.str_short()}, {x.str_short()}, {hi.str_short()}"
        )
    for name, bound in (("min", lo), ("max", hi)):
        if bound.shape not in ((), x.shape):
            raise TypeError(
                f"clamp: {name} {bound.str_short()} must be a scalar or have the operand's shape "
                f"({x.str_short()})"
            )
    return ShapedArray(x.shape, x.dtype, x.weak_type and lo.weak_type and hi.weak_type)


clamp_p.def_abstract_eval(_clamp_abstract_eval)


def _masked(t, mask, like):
    """``t`` (broadcast to ``like``'s shape) where ``mask`` holds, else 0."""
    t = _broadcast_like(t, like)
    return select(mask, t, hooks.full_like(t, 0))


# As in JAX: x's tangent passes strictly inside (lo < x < hi), lo's where lo > x (and lo < hi),
# hi's where hi < x; at x == lo or x == hi no tangent passes.
defjvp(
    clamp_p,
    lambda t, lo, x, hi: _masked(t, and_p.bind(gt_p.bind(lo, x), lt_p.bind(lo, hi)), x),
    lambda t, lo, x, hi: _masked(t, and_p.bind(gt_p.bind(x, lo), lt_p.bind(x, hi)), x),
    lambda t, lo, x, hi: _masked(t, lt_p.bind(hi, x), x),
)


def _clamp_batch(axis_size, vals, dims):
    # The operand sets the shape: it gets the batch axis first; a bound is left a scalar if it is
    # unbatched and 0-d, otherwise it takes the operand's batched shape.
    (lo, x, hi), (dlo, dx, dhi) = vals, dims
    x = to_front(x, dx, axis_size)
    shape = aval_of(x).shape
    bounds = []
    for b, d in ((lo, dlo), (hi, dhi)):
        if d is None and aval_of(b).ndim == 0:
            bounds.append(b)
            continue
        b = to_front(b, d, axis_size)
        bounds.append(b if aval_of(b).shape == shape else hooks.broadcast_in_dim(b, shape, (0,)))
    return clamp_p.bind(bounds[0], x, bounds[1]), 0


clamp_p.def_batch(_clamp_batch)


def clamp(lo, x, hi):
    """``x`` clipped to ``[lo, hi]`` (``lax.clamp``; ``lo``/``hi`` scalars or ``x``'s shape).

    >>> np.asarray(clamp(np.float64(0), np.array([-1.0, 0.5, 2.0]), np.float64(1))).tolist()
    [0.0, 0.5, 1.0]
    """
    lo, x = coerce_pair(lo, x)
    hi, x = coerce_pair(hi, x)
    return clamp_p.bind(lo, x, hi)
