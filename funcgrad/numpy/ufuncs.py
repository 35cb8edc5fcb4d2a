"""Arithmetic, comparison, logical and bitwise ufuncs of funcgrad.numpy.

Layer: surface. Imports ``funcgrad.numpy._core`` and the primitive catalog (elementwise family).

Each function follows NOTE: [numpy operand preparation]. Values follow NumPy: ``//`` and ``%``
round toward negative infinity (the primitives' ``div``/``rem`` round toward zero, as XLA does),
``bool + bool`` is logical or, integer ``**`` is exact. Piecewise-constant functions (``//``,
comparisons, bitwise operations) have zero derivatives.
"""

from __future__ import annotations

import builtins

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.core import Tracer, concrete_value
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy._core import (
    aval,
    broadcast_args,
    broadcast_full,
    broadcast_shapes,
    constant,
    constant_like,
    elementwise,
    elementwise_inexact,
    keys_refused,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    rank_promote,
    select,
    shape_of,
)
from funcgrad.numpy._dtypes import extended_in
from funcgrad.numpy.complexes import lexicographic, reject_complex
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import elementwise as ew

__all__ = [
    "abs",
    "absolute",
    "bitwise_not",
    "clip",
    "divide",
    "divmod",
    "equal",
    "float_power",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "greater",
    "greater_equal",
    "invert",
    "left_shift",
    "less",
    "less_equal",
    "logical_not",
    "mod",
    "not_equal",
    "positive",
    "pow",
    "power",
    "reciprocal",
    "remainder",
    "right_shift",
    "sign",
    "square",
    "true_divide",
]


def _doc(f, name, summary, example):
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{summary}\n\n{example}\n"
    return f


def _is_bool(x) -> bool:
    return aval(x).dtype == np.bool_


def _is_int(x) -> bool:
    return _dt.kind(aval(x).dtype) in "iu"


def _is_unsigned(x) -> bool:
    return _dt.kind(aval(x).dtype) == "u"


# ----------------------------------------------------------------------------------------------
# Arithmetic


def add(x1, x2, /):
    """Elementwise ``x1 + x2`` with NumPy broadcasting and NEP 50 promotion (bools: logical or).

    >>> add(1, 2.5)
    Array(3.5, dtype=float64, weak_type=True)
    >>> add(np.float32(1), 2.0).dtype
    dtype('float32')
    """
    try:
        x1, x2 = rank_promote(*promote_args(x1, x2), name="add")
    except (TypeError, ValueError) as e:  # (typed PRNG keys: JAX's error, at no cost otherwise)
        raise keys_refused("add", (x1, x2), e) from None
    return (ew.or_p if _is_bool(x1) else ew.add_p).bind(x1, x2)


def subtract(x1, x2, /):
    """Elementwise ``x1 - x2``.

    >>> subtract(np.array([3, 4]), 1).tolist()
    [2, 3]
    """
    return ew.sub_p.bind(*rank_promote(*promote_args_numeric("subtract", x1, x2), name="sub"))


def multiply(x1, x2, /):
    """Elementwise ``x1 * x2`` (bools: logical and).

    >>> multiply(np.array([1.0, 2.0]), 3).tolist()
    [3.0, 6.0]
    """
    masks = [x for x in (x1, x2) if _is_bool(x)]
    try:
        x1, x2 = rank_promote(*promote_args(x1, x2), name="mul")
    except (TypeError, ValueError) as e:
        raise keys_refused("multiply", (x1, x2), e) from None
    if _is_bool(x1):
        return ew.and_p.bind(x1, x2)
    out = ew.mul_p.bind(x1, x2)
    if len(masks) == 1 and _dt.is_inexact(aval(out).dtype) and aval(masks[0]).shape == aval(out).shape:
        # A boolean mask times a float: 0 where the mask is False even at NaN/inf, as jax's (its
        # multiply is one XLA computation, whose simplifier makes mul(convert(mask), x) a select
        # where the mask is not broadcast; funcgrad's eager NumPy gave 0 * NaN = NaN there).
        return select(masks[0], out, constant_like(0, out))
    return out


def true_divide(x1, x2, /):
    """Elementwise ``x1 / x2``; integers divide in the default float, as in NumPy.

    >>> true_divide(np.array([1, 2]), 4).tolist()
    [0.25, 0.5]
    """
    return elementwise_inexact(ew.div_p, x1, x2)


divide = _doc(
    lambda x1, x2, /: true_divide(x1, x2),
    "divide",
    "Alias of ``true_divide``.",
    ">>> divide(1.0, 4.0).item()\n0.25",
)


def negative(x, /):
    """Elementwise ``-x``.

    >>> negative(np.array([1, -2])).tolist()
    [-1, 2]
    """
    (x,) = promote_args_numeric("negative", x)
    return ew.neg_p.bind(x)


def positive(x, /):
    """Elementwise ``+x`` (a copy of ``x``; booleans stay booleans, as in JAX, where NumPy refuses).

    >>> positive(np.array([1, -2])).tolist()
    [1, -2]
    """
    (x,) = promote_args(x)
    return x


def absolute(x, /):
    """Elementwise ``|x|``; for real ``x`` the derivative at 0 is 1 (the right derivative), as in
    JAX: ``grad(abs)(0.0) == 1.0``. For complex ``x`` it is ``Re(conj(x) dx) / |x|``, and 0 at 0.

    >>> absolute(np.array([-1.5, 0.0, 2.0])).tolist()
    [1.5, 0.0, 2.0]
    """
    (x,) = promote_args(x)
    if _is_bool(x) or _is_unsigned(x):
        return x
    return ew.abs_p.bind(x)


abs = _doc(
    lambda x, /: absolute(x),
    "abs",
    "Alias of ``absolute`` (derivative 1 at 0 for real ``x``, as in JAX).",
    ">>> abs(-2).item()\n2",
)


def sign(x, /):
    """Elementwise sign: -1, 0 or 1 (NaN for NaN); zero derivative.

    >>> sign(np.array([-3.0, 0.0, 2.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    (x,) = promote_args_numeric("sign", x)
    return ew.sign_p.bind(x)


def square(x, /):
    """Elementwise ``x * x``.

    >>> square(np.array([2, -3])).tolist()
    [4, 9]
    """
    (x,) = promote_args(x)
    if _is_bool(x):
        if not _dt.jax_rules:
            return x  # NumPy: a bool squared is itself
        # NOTE: [x64 mode]: under JAX's rules, a bool is squared as an int32 (in either mode)
        x = ew.convert_element_type(x, np.dtype(np.int32), weak_type=False)
    return ew.square_p.bind(x)


def reciprocal(x, /):
    """Elementwise ``1 / x``, computed in floating point (integers promote, as in jax.numpy).

    >>> reciprocal(np.array([2.0, 4.0])).tolist()
    [0.5, 0.25]
    """
    (x,) = promote_args_inexact(x)
    # integer_pow(x, -1) as JAX's (its jaxpr; its derivative's constant is strong as JAX's)
    return ew.integer_pow(x, -1)


# ----------------------------------------------------------------------------------------------
# Floor division and remainders (NumPy rounds toward -inf; rem/div round toward zero)


def _int_floor_divide(x1, x2):
    # div rounds toward zero; step down by one where the remainder is non-zero and the signs differ.
    # (Signs as sign() has them, as JAX's: by a zero divisor, where XLA's quotient is -1, a nonzero
    # x1 steps down to -2.)
    zero = constant(0, aval(x1).dtype)
    q = ew.div_p.bind(x1, x2)
    r = ew.rem_p.bind(x1, x2)
    if _is_unsigned(x1):
        return q
    fix = ew.and_p.bind(ew.ne_p.bind(r, zero), ew.ne_p.bind(ew.sign_p.bind(x1), ew.sign_p.bind(x2)))
    return ew.sub_p.bind(q, ew.convert_element_type(fix, aval(q).dtype, aval(q).weak_type))


def _nonzero_int_divisor(x2):
    # An integer remainder by 0 is 0, as JAX's remainder and fmod (they divide by 1 there; XLA's
    # rem by 0 gives x1).
    return select(
        ew.eq_p.bind(x2, constant(0, aval(x2).dtype)),
        constant(1, aval(x2).dtype, aval(x2).shape, weak_type=aval(x2).weak_type),
        x2,
    )


def _float_floor_divide(x1, x2):
    # NumPy's algorithm (npy_divmod): exact for ``1 // 0.1 == 9.0``, unlike ``floor(x1 / x2)``.
    dtype, weak = aval(x1).dtype, aval(x1).weak_type and aval(x2).weak_type
    zero = constant(0, dtype, weak_type=weak)
    mod = ew.rem_p.bind(x1, x2)
    div = ew.div_p.bind(ew.sub_p.bind(x1, mod), x2)
    adjust = ew.and_p.bind(
        ew.ne_p.bind(mod, zero), ew.ne_p.bind(ew.lt_p.bind(x2, zero), ew.lt_p.bind(mod, zero))
    )
    div = select(adjust, ew.sub_p.bind(div, constant(1, dtype, weak_type=weak)), div)
    floor_div = ew.floor_p.bind(div)
    floor_div = select(
        ew.gt_p.bind(ew.sub_p.bind(div, floor_div), constant(0.5, dtype)),
        ew.add_p.bind(floor_div, constant(1, dtype, weak_type=weak)),
        floor_div,
    )
    # A zero quotient takes the sign of the true quotient (NumPy gives -0.0 for -1 // inf); a zero
    # divisor gives the true quotient (+-inf or NaN), as NumPy's divmod does.
    true_div = ew.div_p.bind(x1, x2)
    signed_zero = ew.mul_p.bind(zero, true_div)
    out = select(ew.ne_p.bind(div, zero), floor_div, signed_zero)
    return select(ew.eq_p.bind(x2, zero), true_div, out)


@jitted_eagerly
def floor_divide(x1, x2, /):
    """Elementwise ``x1 // x2``, rounding toward negative infinity (NumPy semantics); zero derivative.

    >>> floor_divide(np.array([7, -7]), 2).tolist()
    [3, -4]
    >>> floor_divide(1.0, 0.1).item()
    9.0
    """
    x1, x2 = broadcast_args(*promote_args(x1, x2))
    reject_complex("floor_divide", x1)
    if _is_bool(x1):  # booleans divide as int32 values, as JAX's (promote_args_numeric)
        x1, x2 = ew.convert_element_type(x1, np.int32), ew.convert_element_type(x2, np.int32)
    x1, x2 = ew.stop_gradient_p.bind(x1), ew.stop_gradient_p.bind(x2)
    return _int_floor_divide(x1, x2) if _is_int(x1) else _float_floor_divide(x1, x2)


@jitted_eagerly
def remainder(x1, x2, /):
    """Elementwise remainder with the sign of the divisor (Python's and NumPy's ``%``).

    The derivative is 1 in ``x1`` and ``-floor(x1 / x2)`` in ``x2``.

    >>> remainder(np.array([7, -7]), 3).tolist()
    [1, 2]
    >>> remainder(-1.5, 1.0).item()
    0.5
    """
    x1, x2 = broadcast_args(*promote_args(x1, x2))
    reject_complex("remainder", x1)
    if _is_bool(x1):  # booleans divide as int32 values, as JAX's (promote_args_numeric)
        x1, x2 = ew.convert_element_type(x1, np.int32), ew.convert_element_type(x2, np.int32)
    if _is_int(x1):
        x2 = _nonzero_int_divisor(x2)
    r = ew.rem_p.bind(x1, x2)
    if _is_unsigned(x1):
        return r
    zero = constant(0, aval(r).dtype)
    fix = ew.and_p.bind(ew.ne_p.bind(r, zero), ew.ne_p.bind(ew.lt_p.bind(r, zero), ew.lt_p.bind(x2, zero)))
    r = select(fix, ew.add_p.bind(r, x2), r)
    if _is_int(r):
        return r
    # A zero remainder takes the sign of the divisor (NumPy's copysign(0, x2)).
    negative_divisor = ew.lt_p.bind(
        bc.bitcast_convert_type(x2, _same_width_int(aval(x2).dtype)),
        constant(0, _same_width_int(aval(x2).dtype)),
    )
    weak = aval(r).weak_type
    signed_zero = select(
        negative_divisor,
        constant(-0.0, aval(r).dtype, weak_type=weak),
        constant(0, aval(r).dtype, weak_type=weak),
    )
    # The fix-up changes only the sign of a zero, so it keeps r's derivative (1 in x1, -x1/x2 in x2,
    # as jax): signed_zero - (stop_gradient(r) - r) has signed_zero's value (subtracting +0.0 keeps a
    # -0.0) and r's tangent. A plain select would zero the derivative at exact multiples (issue 33).
    keep_tangent = ew.sub_p.bind(ew.stop_gradient_p.bind(r), r)
    return select(ew.eq_p.bind(r, zero), ew.sub_p.bind(signed_zero, keep_tangent), r)


def _same_width_int(dtype) -> np.dtype:
    return _dt.int_of_width(_dt.bit_width(dtype))


mod = _doc(lambda x1, x2, /: remainder(x1, x2), "mod", "Alias of ``remainder``.", ">>> mod(-7, 3).item()\n2")


def fmod(x1, x2, /):
    """Elementwise remainder with the sign of the dividend (C's ``fmod``).

    >>> fmod(np.array([7, -7]), 3).tolist()
    [1, -1]
    """
    x1, x2 = broadcast_args(*promote_args(x1, x2))
    reject_complex("fmod", x1)
    if _is_bool(x1):  # booleans divide as int32 values, as JAX's (promote_args_numeric)
        x1, x2 = ew.convert_element_type(x1, np.int32), ew.convert_element_type(x2, np.int32)
    return ew.rem_p.bind(x1, _nonzero_int_divisor(x2) if _is_int(x1) else x2)


def divmod(x1, x2, /):
    """``(floor_divide(x1, x2), remainder(x1, x2))``.

    >>> [a.tolist() for a in divmod(np.array([7, -7]), 2)]
    [[3, -4], [1, 1]]
    """
    return floor_divide(x1, x2), remainder(x1, x2)


# ----------------------------------------------------------------------------------------------
# Powers


def _integer_power(x, y):
    """``x ** y`` for integer arrays by binary exponentiation, as JAX's: exact (wrapping) for
    exponents 0..63; others, which overflow or (negative) have no integer answer, use the exponent's
    low 6 bits, JAX's implementation-defined value (NumPy raises for negative ones), eager and jit
    alike."""
    dtype = aval(x).dtype
    yv = concrete_value(y)
    # A concrete exponent in 0..63 needs only as many squarings as its largest value has bits.
    small = yv is not None and np.all((yv >= 0) & (yv < 64))
    bits = builtins.max(int(np.max(yv, initial=0)).bit_length(), 1) if small else 6
    one, zero = constant(1, dtype), constant(0, dtype)
    shape = broadcast_shapes(shape_of(x), shape_of(y))
    # 0 ** y is 0 for every nonzero y (also one whose low 6 bits are 0, as JAX's)
    zero_base = ew.and_p.bind(ew.eq_p.bind(x, zero), ew.ne_p.bind(y, zero))
    acc = select(zero_base, constant(0, dtype, shape), constant(1, dtype, shape))
    for _ in range(bits):
        acc = select(ew.ne_p.bind(ew.and_p.bind(y, one), zero), ew.mul_p.bind(acc, x), acc)
        x = ew.mul_p.bind(x, x)
        y = ew.shift_right_logical_p.bind(y, one)
    return acc


def _as_python_int(x):
    """A concrete integer scalar (a 0-d integer Array or NumPy value, not a tracer) as a Python
    int, as JAX's ``power`` reads its exponent with ``operator.index``: ``x ** jnp.asarray(2)``
    is then an ``integer_pow`` (exact, keeping ``x``'s weak type); anything else as it is."""
    if type(x) is int or isinstance(x, bool | np.bool_ | Tracer) or np.ndim(x) != 0:
        return x
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype).kind not in "iu":
        return x
    return int(concrete_value(x))


class _NegativeIntegerPower(TypeError, ValueError):
    """An integer to a negative Python int power: JAX's TypeError (and NumPy's ValueError)."""


def power(x1, x2, /):
    """Elementwise ``x1 ** x2``. A Python int exponent is exact repeated multiplication (with a
    correct derivative at 0); integer arrays use exact integer powers.

    >>> power(np.array([2.0, 3.0]), 2).tolist()
    [4.0, 9.0]
    >>> power(np.array([2, 3]), np.array([3, 2])).tolist()
    [8, 9]
    """
    x2 = _as_python_int(x2)
    if type(x2) is int:
        (x1,) = promote_args(x1)
        if _is_bool(x1):
            x1 = ew.convert_element_type(x1, _dt.default_int)
        if x2 == 0:  # (ones, weak where x1 is: JAX's integer_pow(x, 0))
            a = aval(x1)
            return constant(1, a.dtype, a.shape, weak_type=a.weak_type)
        if x2 > 0 or _dt.is_inexact(aval(x1).dtype):
            return ew.integer_pow(x1, x2)
        raise _NegativeIntegerPower(f"Integers cannot be raised to negative powers, got integer_pow(x, {x2})")
    # (JAX's float or complex base with an integer exponent array is lax.pow of the two unpromoted:
    # weak only where both are, so 2.0 ** int_array is strong)
    int_exponent, strong_exponent = _is_int(x2), not aval(x2).weak_type
    x1, x2 = rank_promote(*promote_args(x1, x2), name="pow")
    if _is_bool(x1):
        x1, x2 = ew.convert_element_type(x1, _dt.default_int), ew.convert_element_type(x2, _dt.default_int)
    if _is_int(x1):
        return _integer_power(*broadcast_args(x1, x2))
    out = ew.pow_p.bind(x1, x2)
    if int_exponent and strong_exponent and aval(out).weak_type:
        out = ew.convert_element_type(out, aval(out).dtype, weak_type=False)
    return out


pow = _doc(lambda x1, x2, /: power(x1, x2), "pow", "Alias of ``power``.", ">>> pow(2.0, 3).item()\n8.0")


def float_power(x1, x2, /):
    """``x1 ** x2`` computed in float64 (or complex128), as NumPy's ``float_power``.

    >>> float_power(np.array([2], np.int32), 3).dtype
    dtype('float64')
    """
    if _dt.jax_rules:  # (JAX's: the operands' inexact type; NOTE: [JAX's dtype rules in 64-bit mode])
        return ew.pow_p.bind(*broadcast_args(*promote_args_inexact(x1, x2)))
    x1, x2 = promote_args(x1, x2)
    target = np.dtype(np.complex128) if aval(x1).dtype.kind == "c" else np.dtype(np.float64)
    weak = aval(x1).weak_type and aval(x2).weak_type  # (float_power(-3, 1.7) is weak, as JAX's)
    x1, x2 = (ew.convert_element_type(x, target, weak_type=weak) for x in (x1, x2))
    return ew.pow_p.bind(*broadcast_args(x1, x2))


# ----------------------------------------------------------------------------------------------
# Extrema


def maximum(x1, x2, /):
    """Elementwise maximum, propagating NaNs; at ties the derivative is split equally.

    >>> maximum(np.array([1.0, 5.0]), 3.0).tolist()
    [3.0, 5.0]
    """
    return elementwise(ew.max_p, x1, x2)


def minimum(x1, x2, /):
    """Elementwise minimum, propagating NaNs; at ties the derivative is split equally.

    >>> minimum(np.array([1.0, 5.0]), 3.0).tolist()
    [1.0, 3.0]
    """
    return elementwise(ew.min_p, x1, x2)


def _isnan(x):
    return ew.ne_p.bind(x, x)


def _nan_ignoring_extremum(order_p, x1, x2):
    """``x1`` where it wins by ``order_p`` (``gt_p`` for fmax, ``lt_p`` for fmin) or ``x2`` is NaN,
    else ``x2``: one select, as jax.numpy writes it. A tie therefore goes to ``x2``, and so does its
    whole derivative (not split like ``maximum``'s): the divergence issue 33 found, decided for jax's
    convention, since the derivative of a select is what a user who wrote the same ``where`` gets."""
    x1, x2 = broadcast_args(*promote_args(x1, x2))
    wins = lexicographic(order_p, x1, x2)
    if _dt.is_inexact(aval(x1).dtype):
        wins = ew.or_p.bind(wins, _isnan(x2))
    return select(wins, x1, x2)


def fmax(x1, x2, /):
    """Elementwise maximum ignoring NaNs (NaN only where both are NaN); at a tie the derivative goes
    to ``x2``, as in jax.numpy.

    >>> fmax(np.array([np.nan, 1.0]), np.array([2.0, np.nan])).tolist()
    [2.0, 1.0]
    """
    return _nan_ignoring_extremum(ew.gt_p, x1, x2)


def fmin(x1, x2, /):
    """Elementwise minimum ignoring NaNs (NaN only where both are NaN); at a tie the derivative goes
    to ``x2``, as in jax.numpy.

    >>> fmin(np.array([np.nan, 1.0]), np.array([2.0, np.nan])).tolist()
    [2.0, 1.0]
    """
    return _nan_ignoring_extremum(ew.lt_p, x1, x2)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Clip values to ``[min, max]`` (either bound may be None), as ``minimum(maximum(arr, min), max)``.

    The Array API's (and JAX's) parameter names; NumPy's older keywords ``a=``, ``a_min=`` and
    ``a_max=`` are accepted too (HIPS autograd programs use them).

    >>> clip(np.array([-2.0, 0.5, 3.0]), 0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    >>> clip(np.array([1, 5]), max=3).tolist()
    [1, 3]
    """
    for new, old, old_name, new_name in (
        (arr, a, "a", "arr"),
        (min, a_min, "a_min", "min"),
        (max, a_max, "a_max", "max"),
    ):
        if new is not None and old is not None:
            raise TypeError(f"clip: pass {new_name} or its older name {old_name}=, not both")
    a = arr if a is None else a
    if a is None:
        raise TypeError("clip: missing the array to clip (the first argument)")
    lo = min if a_min is None else a_min
    hi = max if a_max is None else a_max
    # As jax.numpy: complex values have no order to clip by (NumPy's lexicographic clip is refused).
    reject_complex(  # (JAX's ValueError and words)
        "clip",
        *[v for v in (a, lo, hi) if v is not None],
        why="Complex values have no ordering and cannot be clipped",
        error=ValueError,
    )
    if lo is not None:
        a = maximum(a, lo)
    if hi is not None:
        a = minimum(a, hi)
    if lo is None and hi is None:
        (a,) = promote_args(a)
    return a


# ----------------------------------------------------------------------------------------------
# Comparisons (boolean results, zero derivatives)


_SYM_DUNDER = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _compare(prim, name, sym, f=None):
    def elementwise_compare(x1, x2, /):
        if (keys := extended_in((x1, x2))) is not None:  # typed PRNG keys: their own == and != (JAX's)
            return getattr(keys, f"__{_SYM_DUNDER[sym]}__")(x2 if keys is x1 else x1)
        return elementwise(prim, x1, x2)

    f = f or elementwise_compare

    return _doc(
        f,
        name,
        f"Elementwise ``x1 {sym} x2`` (a boolean Array; zero derivative).",
        f">>> {name}(np.array([1, 2, 3]), 2).tolist()\n"
        + repr([bool(getattr(np, name)(v, 2)) for v in (1, 2, 3)]),
    )


def _order(prim, name, sym):
    # Complex values compare lexicographically (real part, then imaginary part), as in NumPy.
    def f(x1, x2, /):
        return lexicographic(prim, *rank_promote(*promote_args(x1, x2), name=prim.name))

    return _compare(prim, name, sym, f)


equal = _compare(ew.eq_p, "equal", "==")
not_equal = _compare(ew.ne_p, "not_equal", "!=")
less = _order(ew.lt_p, "less", "<")
less_equal = _order(ew.le_p, "less_equal", "<=")
greater = _order(ew.gt_p, "greater", ">")
greater_equal = _order(ew.ge_p, "greater_equal", ">=")


# ----------------------------------------------------------------------------------------------
# Logical functions (operate on truth values)


def as_bool(x):
    """``x != 0`` as a boolean Array (identity for booleans)."""
    (x,) = promote_args(x)
    if _is_bool(x):
        return x
    return ew.ne_p.bind(x, constant_like(0, x))  # (weak where x is: JAX's logical_not(2.0))


def _logical(prim, name, sym):
    def f(x1, x2, /):
        # (promoted together first, as JAX's: two weakly typed booleans give a strong result)
        x1, x2 = promote_args(x1, x2)
        return prim.bind(*rank_promote(as_bool(x1), as_bool(x2), name=prim.name))

    return _doc(
        f,
        name,
        f"Elementwise logical {sym} of the truth values of ``x1`` and ``x2``.",
        f">>> {name}(np.array([0, 1, 2]), np.array([1, 1, 0])).tolist()\n"
        + repr(getattr(np, name)([0, 1, 2], [1, 1, 0]).tolist()),
    )


logical_and = _logical(ew.and_p, "logical_and", "and")
logical_or = _logical(ew.or_p, "logical_or", "or")
logical_xor = _logical(ew.xor_p, "logical_xor", "xor")


def logical_not(x, /):
    """Elementwise logical not of the truth value of ``x``.

    >>> logical_not(np.array([0, 2])).tolist()
    [True, False]
    """
    return ew.not_p.bind(as_bool(x))


# ----------------------------------------------------------------------------------------------
# Bitwise functions (integers and booleans)


def _bitwise_args(name, *args):
    args = rank_promote(*promote_args(*args), name=name.replace("bitwise_", ""))
    if _dt.kind(aval(args[0]).dtype) not in "biu":
        raise TypeError(f"{name} is only supported for integer and boolean types, got {aval(args[0]).dtype}")
    return args


def _bitwise(prim, name, sym):
    def f(x1, x2, /):
        return prim.bind(*_bitwise_args(name, x1, x2))

    return _doc(
        f,
        name,
        f"Elementwise bitwise ``x1 {sym} x2`` of integers or booleans.",
        f">>> {name}(np.array([12, 10]), 6).tolist()\n" + repr(getattr(np, name)([12, 10], 6).tolist()),
    )


bitwise_and = _bitwise(ew.and_p, "bitwise_and", "&")
bitwise_or = _bitwise(ew.or_p, "bitwise_or", "|")
bitwise_xor = _bitwise(ew.xor_p, "bitwise_xor", "^")


def bitwise_not(x, /):
    """Elementwise bitwise ``~x`` (logical not for booleans).

    >>> bitwise_not(np.array([0, 5])).tolist()
    [-1, -6]
    """
    (x,) = _bitwise_args("bitwise_not", x)
    return ew.not_p.bind(x)


invert = _doc(
    lambda x, /: bitwise_not(x),
    "invert",
    "Alias of ``bitwise_not``.",
    ">>> invert(np.array([True])).tolist()\n[False]",
)


def left_shift(x1, x2, /):
    """Elementwise ``x1 << x2`` (integers).

    >>> left_shift(np.array([1, 3]), 2).tolist()
    [4, 12]
    """
    x1, x2 = _bitwise_args("left_shift", x1, x2)
    if _is_bool(x1):  # booleans shift as int32 values, as JAX's (promote_args_numeric)
        x1, x2 = ew.convert_element_type(x1, np.int32), ew.convert_element_type(x2, np.int32)
    return ew.shift_left_p.bind(x1, x2)


def right_shift(x1, x2, /):
    """Elementwise ``x1 >> x2`` (arithmetic for signed integers, logical for unsigned).

    >>> right_shift(np.array([16, -16]), 2).tolist()
    [4, -4]
    """
    x1, x2 = _bitwise_args("right_shift", x1, x2)
    if _is_bool(x1):  # booleans shift as int32 values, as JAX's (promote_args_numeric)
        x1, x2 = ew.convert_element_type(x1, np.int32), ew.convert_element_type(x2, np.int32)
    prim = ew.shift_right_logical_p if _is_unsigned(x1) else ew.shift_right_arithmetic_p
    return prim.bind(x1, x2)


# ----------------------------------------------------------------------------------------------
# where / select


def where3(condition, x, y):
    """Three-argument ``where``: promote ``x`` and ``y``, broadcast all three, select."""
    x, y = promote_args(x, y)
    condition = as_bool(condition)
    # JAX's where broadcasts its operands without the rank-promotion check (a 0-d condition
    # stays 0-d: select takes it as it is)
    if shape_of(condition):
        condition, x, y = broadcast_full(condition, x, y)
    else:
        x, y = broadcast_full(x, y)
    if 0 in shape_of(x):
        # JAX's: an empty result is x itself, no select built, so no derivative flows from y (a
        # while_loop carrying it then has a zero tangent and goes under vjp, as in jax)
        return x
    return select(condition, x, y)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
