"""``funcgrad.lax`` elementwise operations, conversions, reductions and contractions: thin, checked
wrappers of the primitives with ``jax.lax``'s names and signatures (the shape operations are
``funcgrad.lax.shapes``').

Layer: surface. Imports the kernel, the primitive catalog, ``funcgrad.numpy._core`` (conversion
helpers only), ``funcgrad.numpy._dtypes`` (``extended_in``: typed PRNG keys) and, a floor below,
``funcgrad.lax._checks`` (the operand checks every wrapper shares) and ``funcgrad.lax.shapes``;
nothing here adds rules.

Unlike ``funcgrad.numpy``, lax does not promote or broadcast: operands of a binary operation must
have one dtype and one shape (a 0-d operand, or a Python scalar, which takes the other operand's
dtype, is allowed). Each wrapper checks its operands with the primitive's abstract evaluation
before binding, so a mistake raises a ``TypeError`` in eager mode too, as in JAX.
"""

from __future__ import annotations

import enum

import numpy as np

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.lax._checks import _bind, _bind_check, _operands
from funcgrad.lax.accuracy import AccuracyMode, check_accuracy
from funcgrad.lax.shapes import full_like
from funcgrad.numpy._core import (
    asarray,
    aval,
    canonicalize_dtype,
    check_user_dtype,
    constant,
)
from funcgrad.numpy._dtypes import ExtendedArray, _is_extended, extended_in
from funcgrad.primitives import bitcast as bc
from funcgrad.primitives import complex as cx
from funcgrad.primitives import dot as dt
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red

__all__ = [
    "DotAlgorithm",
    "DotAlgorithmPreset",
    "Precision",
    "PrecisionLike",
    "RoundingMethod",
    "abs",
    "acos",
    "acosh",
    "add",
    "argmax",
    "argmin",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "batch_matmul",
    "bitcast_convert_type",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "cbrt",
    "ceil",
    "clamp",
    "complex",
    "conj",
    "convert_element_type",
    "cos",
    "cosh",
    "digamma",
    "div",
    "dot",
    "dot_general",
    "eq",
    "erf",
    "erf_inv",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "ge",
    "gt",
    "imag",
    "integer_pow",
    "is_finite",
    "le",
    "lgamma",
    "log",
    "log1p",
    "logistic",
    "lt",
    "max",
    "min",
    "mul",
    "ne",
    "neg",
    "nextafter",
    "polygamma",
    "pow",
    "real",
    "reduce_and",
    "reduce_max",
    "reduce_min",
    "reduce_or",
    "reduce_prod",
    "reduce_sum",
    "rem",
    "round",
    "rsqrt",
    "select",
    "select_n",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "stop_gradient",
    "sub",
    "tan",
    "tanh",
]


class RoundingMethod(enum.IntEnum):
    """How ``round`` treats halves: away from zero (C's ``round``) or to the nearest even integer."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


Precision = dt.Precision  # declared with the contraction primitives, which carry it as a parameter
DotAlgorithm, DotAlgorithmPreset = dt.DotAlgorithm, dt.DotAlgorithmPreset  # precision= of the products
# What ``precision=`` accepts (``dot_general``, ``conv_general_dilated``, ``numpy.matmul``, ...).
PrecisionLike = Precision | str | tuple | None


def _unary(prim, name, doc_in, doc_out, accuracy: bool = False):
    if accuracy:  # JAX's accuracy= request, checked; XLA:CPU has one implementation (lax/accuracy.py)

        def f(x, *, accuracy=None):
            check_accuracy(name, accuracy)
            return _bind(prim, name, *_operands(name, x))

    else:

        def f(x):
            return _bind(prim, name, *_operands(name, x))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"Elementwise ``{name}`` (``lax.{name}``); no promotion.\n\n"
        f">>> {name}(np.array([{doc_in}])).tolist()\n[{doc_out}]\n"
    )
    return f


def _binary(prim, name, doc_args, doc_out):
    def f(x, y):
        return _bind(prim, name, *_operands(name, x, y, ones=True))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"Elementwise ``{name}`` of two operands of one dtype and shape (``lax.{name}``).\n\n"
        f">>> {name}({doc_args}).tolist()\n{doc_out}\n"
    )
    return f


neg = _unary(ew.neg_p, "neg", "1.0", "-1.0")
sign = _unary(ew.sign_p, "sign", "-2.0", "-1.0")
floor = _unary(ew.floor_p, "floor", "1.5", "1.0")
ceil = _unary(ew.ceil_p, "ceil", "1.5", "2.0")
_abs = _unary(ew.abs_p, "abs", "-2.0", "2.0")


def abs(x):
    """Elementwise ``abs`` (``lax.abs``): floating, complex (the real modulus) and signed integer
    operands; unsigned ones raise JAX's TypeError (``numpy.abs`` takes them).

    >>> abs(np.array([-2.0])).tolist()
    [2.0]
    """
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "u":
        raise TypeError(
            f"abs does not accept dtype {np.dtype(dtype).name}. Accepted dtypes are subtypes of floating, "
            "complexfloating, signedinteger."
        )
    return _abs(x)


exp = _unary(ew.exp_p, "exp", "0.0", "1.0", accuracy=True)
exp2 = _unary(ew.exp2_p, "exp2", "3.0", "8.0", accuracy=True)
_expm1 = _unary(ew.expm1_p, "expm1", "0.0", "0.0", accuracy=True)


@custom_jvp
def _expm1_highest(x):
    return ew.expm1_p.bind(x)


@_expm1_highest.defjvp
def _expm1_highest_jvp(primals, tangents):
    # JAX's rule under AccuracyMode.HIGHEST: the derivative is exp(x), not expm1(x) + 1 (which
    # rounds to 0 below about -17 in float32, where exp(x) is still ~4e-8)
    (x,), (t,) = primals, tangents
    return ew.expm1_p.bind(x), ew.mul(t, ew.exp_p.bind(x))


def expm1(x, *, accuracy=None):
    """Elementwise ``expm1`` (``lax.expm1``): ``exp(x) - 1``, accurate near 0; no promotion. Its
    derivative is ``expm1(x) + 1``, or ``exp(x)`` under ``accuracy=AccuracyMode.HIGHEST`` (JAX's).

    >>> expm1(np.array([0.0])).tolist()
    [0.0]
    """
    if accuracy is AccuracyMode.HIGHEST:
        check_accuracy("expm1", accuracy)
        (x,) = _operands("expm1", x)
        _bind_check(ew.expm1_p, "expm1", x)
        return _expm1_highest(x)
    return _expm1(x, accuracy=accuracy)


log = _unary(ew.log_p, "log", "1.0", "0.0", accuracy=True)
log1p = _unary(ew.log1p_p, "log1p", "0.0", "0.0", accuracy=True)
sqrt = _unary(ew.sqrt_p, "sqrt", "4.0", "2.0", accuracy=True)
rsqrt = _unary(ew.rsqrt_p, "rsqrt", "4.0", "0.5", accuracy=True)
cbrt = _unary(ew.cbrt_p, "cbrt", "8.0", "2.0", accuracy=True)
sin = _unary(ew.sin_p, "sin", "0.0", "0.0", accuracy=True)
cos = _unary(ew.cos_p, "cos", "0.0", "1.0", accuracy=True)
tan = _unary(ew.tan_p, "tan", "0.0", "0.0", accuracy=True)
asin = _unary(ew.asin_p, "asin", "0.0", "0.0")
acos = _unary(ew.acos_p, "acos", "1.0", "0.0")
atan = _unary(ew.atan_p, "atan", "0.0", "0.0")
sinh = _unary(ew.sinh_p, "sinh", "0.0", "0.0")
cosh = _unary(ew.cosh_p, "cosh", "0.0", "1.0")
tanh = _unary(ew.tanh_p, "tanh", "0.0", "0.0", accuracy=True)
asinh = _unary(ew.asinh_p, "asinh", "0.0", "0.0")
acosh = _unary(ew.acosh_p, "acosh", "1.0", "0.0")
atanh = _unary(ew.atanh_p, "atanh", "0.0", "0.0")
logistic = _unary(ew.logistic_p, "logistic", "0.0", "0.5", accuracy=True)
erf = _unary(ew.erf_p, "erf", "0.0", "0.0")
erfc = _unary(ew.erfc_p, "erfc", "0.0", "1.0")
erf_inv = _unary(ew.erf_inv_p, "erf_inv", "0.0", "0.0")
lgamma = _unary(ew.lgamma_p, "lgamma", "1.0", "0.0")
digamma = _unary(ew.digamma_p, "digamma", "1.0", repr(float(-np.euler_gamma)))
is_finite = _unary(ew.is_finite_p, "is_finite", "1.0, np.inf", "True, False")
square = _unary(ew.square_p, "square", "3.0", "9.0")
bitwise_not = _unary(ew.not_p, "bitwise_not", "0", "-1")

add = _binary(ew.add_p, "add", "np.array([1.0]), 2.0", "[3.0]")
sub = _binary(ew.sub_p, "sub", "np.array([1.0]), 2.0", "[-1.0]")
_mul = _binary(ew.mul_p, "mul", "np.array([3.0]), 2.0", "[6.0]")


def mul(x, y, *, out_dtype=None):
    """Elementwise product of two operands of one dtype and shape (``lax.mul``); with
    ``out_dtype`` both are converted to it first (then they may differ in dtype), as JAX's.

    >>> mul(np.array([3.0]), 2.0).tolist()
    [6.0]
    >>> mul(np.array([3], np.int32), np.array([0.5], np.float32), out_dtype=np.float32).tolist()
    [1.5]
    """
    if out_dtype is not None:
        x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
    return _mul(x, y)


div = _binary(ew.div_p, "div", "np.array([-7]), 2", "[-3]")
rem = _binary(ew.rem_p, "rem", "np.array([-7]), 2", "[-1]")


def pow(x, y):
    """Elementwise ``x ** y`` (``lax.pow``): ``x`` floating or complex, ``y`` of ``x``'s dtype or an
    integer array (as in jax; it is converted to ``x``'s dtype, and, being an integer, has no tangent).

    >>> pow(np.array([2.0]), 3.0).tolist()
    [8.0]
    >>> pow(np.array([2.0, 4.0]), np.array([3, -1], np.int32)).tolist()
    [8.0, 0.25]
    """
    if type(y) is int and type(x) in python_scalar_types and not isinstance(x, int):  # (float, complex)
        # (a Python float base and a Python int exponent: weak, as JAX's lax.pow(0.5, 3) = 0.125)
        x = constant(x, _dt.python_scalar_dtype(x), weak_type=True)
        dtype = aval(x).dtype
        return _bind(ew.pow_p, "pow", x, ew.convert_element_type(np.asarray(y, dtype), dtype, True))
    if type(y) is int and type(x) not in python_scalar_types and _dt.is_inexact(aval(x).dtype):
        y = constant(y, _dt.python_scalar_dtype(y))  # (a Python int exponent is an int64 array)
    if type(y) not in python_scalar_types and _dt.kind(aval(y).dtype) in "iu":
        if type(x) in python_scalar_types:  # a Python base keeps its own kind (2.0 ** int32 is a float)
            x = constant(x, _dt.python_scalar_dtype(x))
        if _dt.is_inexact(aval(x).dtype):
            y = ew.convert_element_type(y, aval(x).dtype)
    return _bind(ew.pow_p, "pow", *_operands("pow", x, y, ones=True))


max = _binary(ew.max_p, "max", "np.array([1.0, 5.0]), np.array([3.0, 2.0])", "[3.0, 5.0]")
min = _binary(ew.min_p, "min", "np.array([1.0, 5.0]), np.array([3.0, 2.0])", "[1.0, 2.0]")
atan2 = _binary(ew.atan2_p, "atan2", "np.array([0.0]), 1.0", "[0.0]")
nextafter = _binary(ew.nextafter_p, "nextafter", "np.array([0.0]), 0.0", "[0.0]")
bitwise_and = _binary(ew.and_p, "bitwise_and", "np.array([12]), 10", "[8]")
bitwise_or = _binary(ew.or_p, "bitwise_or", "np.array([12]), 10", "[14]")
bitwise_xor = _binary(ew.xor_p, "bitwise_xor", "np.array([12]), 10", "[6]")
shift_left = _binary(ew.shift_left_p, "shift_left", "np.array([1]), 3", "[8]")
shift_right_arithmetic = _binary(
    ew.shift_right_arithmetic_p, "shift_right_arithmetic", "np.array([-8]), 1", "[-4]"
)
shift_right_logical = _binary(ew.shift_right_logical_p, "shift_right_logical", "np.array([8]), 1", "[4]")
eq = _binary(ew.eq_p, "eq", "np.array([1, 2]), 2", "[False, True]")
ne = _binary(ew.ne_p, "ne", "np.array([1, 2]), 2", "[True, False]")
lt = _binary(ew.lt_p, "lt", "np.array([1, 2]), 2", "[True, False]")
le = _binary(ew.le_p, "le", "np.array([1, 2]), 2", "[True, True]")
gt = _binary(ew.gt_p, "gt", "np.array([1, 2]), 2", "[False, False]")
ge = _binary(ew.ge_p, "ge", "np.array([1, 2]), 2", "[False, True]")


def polygamma(m, x):
    """The ``m``-th derivative of digamma (``m`` integer-valued, of ``x``'s dtype).

    >>> bool(abs(float(polygamma(1.0, np.array(1.0))) - np.pi**2 / 6) < 1e-12)
    True
    """
    m, x = _operands("polygamma", m, x)
    return _bind(ew.polygamma_p, "polygamma", m, x)


def real(x):
    """The real part of a complex array (``lax.real``; real operands are refused, as in JAX).

    >>> real(np.array([1.5 + 2j])).tolist()
    [1.5]
    """
    return _bind(cx.real_p, "real", *_operands("real", x))


def imag(x):
    """The imaginary part of a complex array (``lax.imag``; real operands are refused).

    >>> imag(np.array([1.5 + 2j])).tolist()
    [2.0]
    """
    return _bind(cx.imag_p, "imag", *_operands("imag", x))


def complex(x, y):
    """``x + 1j * y`` from two real operands of one dtype, float32 or float64 (``lax.complex``).

    >>> complex(np.array([1.0]), 2.0).tolist()
    [(1+2j)]
    """
    return _bind(cx.complex_p, "complex", *_operands("complex", x, y, ones=True))


def conj(x):
    """The complex conjugate (``lax.conj``); a real float operand gives a complex result, as in JAX.

    >>> conj(np.array([1.5 + 2j])).tolist()
    [(1.5-2j)]
    >>> conj(np.array([1.5])).dtype
    dtype('complex128')
    """
    (x,) = _operands("conj", x)
    if aval(x).dtype.kind != "c":
        if not _dt.is_float(aval(x).dtype):
            raise TypeError(f"lax.conj requires a float or complex operand, got {aval(x).str_short()}")
        x = ew.convert_element_type(x, _dt.complex_dtype(aval(x).dtype), weak_type=aval(x).weak_type)
    return cx.conj_p.bind(x)


def integer_pow(x, y: int):
    """``x ** y`` for a static integer ``y`` (repeated multiplication; exact derivative at 0).

    >>> integer_pow(np.array([2.0, -3.0]), 3).tolist()
    [8.0, -27.0]
    """
    (x,) = _operands("integer_pow", x)
    if not isinstance(y, int | np.integer) or isinstance(y, bool):  # (JAX's TypeError)
        raise TypeError(
            f"lax.integer_pow: the exponent must be a Python int, got {y!r} of type {type(y).__name__}"
        )
    y = int(y)
    if y == 0:
        return full_like(x, 1)
    return _bind(ew.integer_pow_p, "integer_pow", x, y=y)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Round to the nearest integer: halves away from zero (default) or to even.

    >>> round(np.array([0.5, 1.5, -0.5])).tolist()
    [1.0, 2.0, -1.0]
    >>> round(np.array([0.5, 1.5]), RoundingMethod.TO_NEAREST_EVEN).tolist()
    [0.0, 2.0]
    """
    (x,) = _operands("round", x)
    return _bind(ew.round_p, "round", x, rounding_method=int(rounding_method))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (``pred`` boolean, of the cases' shape or 0-d).

    >>> select(np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])).tolist()
    [1.0, 4.0]
    """
    keys = extended_in((on_true, on_false))
    if keys is not None:  # typed PRNG keys: each word of their data selected, as JAX's select of keys
        return keys._numpy_function(select, (pred, on_true, on_false), {})
    on_true, on_false = _operands("select", on_true, on_false)
    return _bind(ew.select_n_p, "select", asarray(pred), on_false, on_true)


def select_n(which, *cases):
    """``cases[which]`` elementwise (``which`` boolean for two cases, else int32).

    >>> select_n(np.array([0, 2, 1], np.int32), np.zeros(3), np.ones(3), np.full(3, 2.0)).tolist()
    [0.0, 2.0, 1.0]
    """
    if not cases:
        raise ValueError("select_n() must have at least one case")
    keys = extended_in(cases)
    if keys is not None:  # typed PRNG keys (as in select)
        return keys._numpy_function(select_n, (which, *cases), {})
    cases = _operands("select_n", *cases)
    return _bind(ew.select_n_p, "select_n", asarray(which), *cases)


def clamp(min, x, max):
    """``x`` clipped to ``[min, max]`` (bounds 0-d or of ``x``'s shape; one dtype).

    >>> clamp(0.0, np.array([-1.0, 0.5, 2.0]), 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    lo, x, hi = _operands("clamp", min, x, max)
    return _bind(ew.clamp_p, "clamp", lo, x, hi)


def convert_element_type(operand, new_dtype):
    """``operand`` converted to ``new_dtype`` (float to int truncates toward zero).

    >>> convert_element_type(np.array([1.7, -1.7]), np.int32).tolist()
    [1, -1]
    """
    source = getattr(operand, "dtype", None)
    if _ext.is_extended(new_dtype) or _ext.is_extended(source):  # a library's extended dtype
        if source == new_dtype:
            return operand
        return ew.convert_element_type(operand if _ext.is_extended(source) else asarray(operand), new_dtype)
    if isinstance(operand, ExtendedArray) or _is_extended(new_dtype):  # typed PRNG keys (JAX's words)
        if source == new_dtype:
            return operand
        if source is None:
            source = asarray(operand).dtype
        target = new_dtype if _is_extended(new_dtype) else check_user_dtype(new_dtype, "convert_element_type")
        raise ValueError(f"Cannot convert_element_type from {source} to {target}")
    new_dtype = check_user_dtype(new_dtype, "convert_element_type")
    if type(operand) is int and new_dtype != _dt.float0:
        # As JAX's: a Python int goes straight to new_dtype through NumPy (2 ** 100 to float32 is
        # 1.27e30; 2 ** 32 to int32 wraps to 0), not through the default integer first, whose range
        # it may leave (an OverflowError there).
        return Array._from_owned(np.asarray(operand).astype(new_dtype), False)
    # (a NumPy operand enters as an Array: already of new_dtype it is returned, an Array as JAX's,
    # and in 32-bit mode a float64 one is float32 first)
    return ew.convert_element_type(asarray(operand), new_dtype)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (a narrower type adds a last axis).

    >>> bitcast_convert_type(np.array([1.0], np.float32), np.int32).tolist()
    [1065353216]
    """
    operand = asarray(operand)
    new_dtype = check_user_dtype(new_dtype, "bitcast_convert_type")
    old_dtype = aval(operand).dtype
    if old_dtype != new_dtype and any(np.dtype(d).kind in "bc" for d in (old_dtype, new_dtype)):
        raise TypeError(  # (JAX's words: bool and complex bits have no defined layout here)
            "lax.bitcast_convert_type does not support bool or complex values unless the operand and "
            f"destination types match. Got operand dtype={old_dtype}, new_dtype={np.dtype(new_dtype)!r}. "
            "Consider using the arr.view() method instead."
        )
    return bc.bitcast_convert_type(operand, new_dtype)


def stop_gradient(x):
    """The identity, with a zero derivative (applied to every leaf of a pytree).

    >>> import funcgrad
    >>> float(funcgrad.grad(lambda v: stop_gradient(v) * v)(3.0))
    3.0
    """
    return tu.tree_map(lambda leaf: ew.stop_gradient_p.bind(asarray(leaf)), x)


# ----------------------------------------------------------------------------------------------
# Reductions


def _axes(axes, ndim, name):
    axes = tuple(int(a) for a in axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"lax.{name}: axis {a} is out of bounds for an array of rank {ndim}")
    return tuple(sorted(a % ndim for a in axes))


@takes_out_sharding(unreduced="rule")
def reduce_sum(operand, axes):
    """Sum over ``axes`` (no dtype change).

    >>> reduce_sum(np.ones((2, 3), np.int32), (1,)).tolist()
    [3, 3]
    """
    operand = asarray(operand)
    return red.reduce_sum(operand, _axes(axes, operand.ndim, "reduce_sum"))


def reduce_max(operand, axes):
    """Maximum over ``axes`` (ties share the derivative equally).

    >>> reduce_max(np.array([[1.0, 5.0], [3.0, 2.0]]), (0,)).tolist()
    [3.0, 5.0]
    """
    operand = asarray(operand)
    return red.reduce_max(operand, _axes(axes, operand.ndim, "reduce_max"))


def reduce_min(operand, axes):
    """Minimum over ``axes``.

    >>> reduce_min(np.array([[1.0, 5.0], [3.0, 2.0]]), (1,)).tolist()
    [1.0, 2.0]
    """
    operand = asarray(operand)
    return red.reduce_min(operand, _axes(axes, operand.ndim, "reduce_min"))


def reduce_prod(operand, axes):
    """Product over ``axes`` (exact derivative with zeros).

    >>> reduce_prod(np.array([2.0, 3.0]), (0,)).item()
    6.0
    """
    operand = asarray(operand)
    return red.reduce_prod(operand, _axes(axes, operand.ndim, "reduce_prod"))


def reduce_and(operand, axes):
    """Logical and over ``axes`` of a boolean array; bitwise of an integer one (JAX's).

    >>> reduce_and(np.array([True, False]), (0,)).item()
    False
    """
    operand = asarray(operand)
    axes = _axes(axes, operand.ndim, "reduce_and")
    return _bind(red.reduce_and_p, "reduce_and", operand, axes=axes) if axes else operand


def reduce_or(operand, axes):
    """Logical or over ``axes`` of a boolean array; bitwise of an integer one (JAX's).

    >>> reduce_or(np.array([True, False]), (0,)).item()
    True
    """
    operand = asarray(operand)
    axes = _axes(axes, operand.ndim, "reduce_or")
    return _bind(red.reduce_or_p, "reduce_or", operand, axes=axes) if axes else operand


def argmax(operand, axis: int, index_dtype):
    """Index of the first maximum along ``axis``, of ``index_dtype``.

    >>> argmax(np.array([1.0, 3.0, 3.0]), 0, np.int32).item()
    1
    """
    operand = asarray(operand)
    return red.argmax(operand, axis, _argminmax_check(operand, axis, index_dtype, "argmax"))


def argmin(operand, axis: int, index_dtype):
    """Index of the first minimum along ``axis``, of ``index_dtype``.

    >>> argmin(np.array([2.0, 1.0, 1.0]), 0, np.int32).item()
    1
    """
    operand = asarray(operand)
    return red.argmin(operand, axis, _argminmax_check(operand, axis, index_dtype, "argmin"))


def _argminmax_check(operand, axis, index_dtype, name):
    """JAX's checks of lax.argmin/argmax in its order and words (lax takes no negative axis, as
    JAX's; funcgrad.numpy's argmin/argmax do); the index dtype."""
    axis = int(axis)
    shape = tuple(operand.shape)
    if not 0 <= axis < len(shape):
        raise ValueError(f"Invalid axis {axis} for operand shape {shape}")
    if shape[axis] < 1:
        raise ValueError(
            f"argmin and argmax require non-empty reduced dimension. operand.shape={shape} {axis=}"
        )
    index_dtype = check_user_dtype(index_dtype, name)
    if np.dtype(index_dtype).kind not in "iu":
        raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
    return index_dtype


# ----------------------------------------------------------------------------------------------
# Contractions


@takes_out_sharding(typed_result=True)
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """General tensor contraction: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch,
    rhs_batch))``; the result has the batch dims, then lhs's free dims, then rhs's. ``precision``
    (``None``, a ``Precision``, a string such as ``'highest'``, or a pair) is validated and carried to
    XLA's ``precision_config`` as in JAX; the CPU computes float32 in full precision either way.

    >>> dot_general(np.ones((2, 3)), np.ones((3, 4)), (((1,), (0,)), ((), ()))).shape
    (2, 4)
    """
    pet = None if preferred_element_type is None else canonicalize_dtype(preferred_element_type)
    lhs, rhs = asarray(lhs), asarray(rhs)
    if lhs.dtype != rhs.dtype and _no_common_float(lhs.dtype, rhs.dtype):
        # Two float8 formats have no promotion; JAX's dot_general takes them as they are (XLA
        # computes in a wider type) and gives the more precise format, or preferred_element_type.
        # Both convert exactly to a wider float here, so that is where the contraction runs.
        out = pet or sorted([lhs.dtype, rhs.dtype], key=_float_rank)[-1]
        wide = (
            pet if pet is not None and _dt.is_float(pet) and _dt.finfo(pet).bits > 8 else np.dtype(np.float32)
        )
        res = dot_general(lhs.astype(wide), rhs.astype(wide), dimension_numbers, precision, wide)
        return res.astype(out)
    _check_upcast(
        _dot_result_type(lhs.dtype, rhs.dtype) if lhs.dtype != rhs.dtype else lhs.dtype, pet, precision
    )
    if lhs.dtype != rhs.dtype:
        # Mixed input dtypes: JAX's dot_general takes the "larger" type by XLA's order (complex,
        # exponent range, precision, width, signed), no promotion lattice: float32 x int32 is float32
        # (NEP 50 gave float64 in 64-bit mode) and strict promotion does not refuse it.
        # With preferred_element_type, JAX's CPU lowering converts both operands to it first
        # (float64 x float16 -> int32 multiplies the int32 conversions).
        out = pet if pet is not None else _dot_result_type(lhs.dtype, rhs.dtype)
        lhs, rhs = lhs.astype(out), rhs.astype(out)
    precision = dt.canonicalize_precision(precision, "lax.dot_general")
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    params = dict(dimension_numbers=dn, precision=precision, preferred_element_type=pet)
    _bind_check(dt.dot_general_p, "dot_general", lhs, rhs, **params)
    return dt.dot_general(lhs, rhs, dn, pet, precision)


def _bit_width(d) -> int:
    kind = _dt.kind(d)
    if kind in "fc":
        return _dt.finfo(_dt.real_dtype(d)).bits
    return 1 if kind == "b" else _dt.iinfo(d).bits


def _check_upcast(result, pet, precision) -> None:
    """JAX's ``_maybe_upcast`` (XLA's MaybeUpcast): a ``preferred_element_type`` other than the
    contraction's type may not be narrower than a non-floating one (int32 inputs with float16,
    bool-times-int8 with bool), unless ``precision`` names a dot algorithm.

    >>> _check_upcast(np.dtype("int32"), np.dtype("float16"), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: `preferred_element_type` must not be narrower than the original type, got ...
    """
    if pet is None or result == pet or isinstance(precision, (dt.DotAlgorithm, dt.DotAlgorithmPreset)):
        return
    if _dt.kind(result) != "f" and _bit_width(pet) < _bit_width(result):
        raise TypeError(
            "`preferred_element_type` must not be narrower than the original type, got "
            f"preferred_element_type of {pet} for result type of {result}."
        )


def _no_common_float(a, b) -> bool:
    """Whether two floating dtypes have no implicit promotion (two float8 formats)."""
    if not (_dt.is_float(a) and _dt.is_float(b)):
        return False
    try:
        _dt.promote_types(a, b)
    except TypeError:
        return True
    return False


def _dot_result_type(a, b):
    """JAX's result type of a contraction of two dtypes: the one greater in (complex, exponent
    range, mantissa bits, width, signed); two different types that tie are an error.

    >>> f32, i32, u32 = np.dtype("float32"), np.dtype("int32"), np.dtype("uint32")
    >>> _dot_result_type(f32, i32), _dot_result_type(i32, u32)
    (dtype('float32'), dtype('int32'))
    """

    def props(d):
        c = _dt.finfo(d).dtype if _dt.kind(d) == "c" else d  # (a complex type's real part)
        fl = _dt.kind(c) == "f"
        bits = _dt.finfo(c).bits if fl else (1 if _dt.kind(c) == "b" else _dt.iinfo(c).bits)
        return (_dt.kind(d) == "c", _dt.finfo(c).maxexp if fl else -1, _dt.finfo(c).nmant if fl else -1, bits,
                _dt.kind(c) != "u")  # fmt: skip

    pa, pb = props(a), props(b)
    if pa == pb:
        raise TypeError(f"dot_general argument type error: {a}, {b}")
    return a if pa > pb else b


def _float_rank(d):
    """XLA's order of float types for a mixed contraction's result: range, then precision."""
    info = _dt.finfo(d)
    return (info.maxexp, info.nmant, info.bits)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix products: ``(..., n, k) @ (..., k, m)`` with equal leading (batch) shapes.

    >>> batch_matmul(np.ones((5, 2, 3)), np.ones((5, 3, 4))).shape
    (5, 2, 4)
    """
    lhs, rhs = asarray(lhs), asarray(rhs)
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim or lhs.shape[:-2] != rhs.shape[:-2]:
        raise ValueError(f"batch_matmul: incompatible shapes {lhs.shape} and {rhs.shape}")
    batch = tuple(range(lhs.ndim - 2))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), (batch, batch)), precision)


@takes_out_sharding(typed_result=True)
def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None):
    """Vector/matrix products of rank-1 and rank-2 operands (``lax.dot``); with
    ``dimension_numbers`` any contraction, as ``dot_general``. Everything after the operands is
    keyword-only, as in JAX (a positional precision is a TypeError).

    >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0])).item()
    11.0
    >>> dot(np.ones((2, 2, 3)), np.ones((2, 3)), dimension_numbers=(((2,), (1,)), ((0,), (0,)))).shape
    (2, 2)
    """
    lhs, rhs = asarray(lhs), asarray(rhs)
    if dimension_numbers is None:
        if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2) or lhs.shape[-1] != rhs.shape[0]:
            raise ValueError(  # (JAX's ValueError)
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={tuple(lhs.shape)} rhs_shape={tuple(rhs.shape)}"
            )
        dimension_numbers = (((lhs.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
