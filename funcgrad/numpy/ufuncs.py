"""Elementwise functions of funcgrad.numpy (NumPy's ufuncs), as compositions of primitives.

Layer: surface. Imports funcgrad.numpy._core and the primitive catalog.
"""

from __future__ import annotations

import numpy as np

from funcgrad import dtypes as _dt
from funcgrad.numpy._core import aval, elementwise, promote_dtypes, broadcast_args
from primitives import elementwise as ew


def _unary_inexact(prim, name):
    def f(x, /):
        return elementwise(prim, x, inexact=True)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy semantics; integers become the default float)."
    return f


sin = _unary_inexact(ew.sin_p, "sin")
cos = _unary_inexact(ew.cos_p, "cos")
tan = _unary_inexact(ew.tan_p, "tan")
arcsin = _unary_inexact(ew.asin_p, "arcsin")
arccos = _unary_inexact(ew.acos_p, "arccos")
arctan = _unary_inexact(ew.atan_p, "arctan")
sinh = _unary_inexact(ew.sinh_p, "sinh")
cosh = _unary_inexact(ew.cosh_p, "cosh")
tanh = _unary_inexact(ew.tanh_p, "tanh")
arcsinh = _unary_inexact(ew.asinh_p, "arcsinh")
arccosh = _unary_inexact(ew.acosh_p, "arccosh")
arctanh = _unary_inexact(ew.atanh_p, "arctanh")
exp = _unary_inexact(ew.exp_p, "exp")
exp2 = _unary_inexact(ew.exp2_p, "exp2")
expm1 = _unary_inexact(ew.expm1_p, "expm1")
log = _unary_inexact(ew.log_p, "log")
log1p = _unary_inexact(ew.log1p_p, "log1p")
sqrt = _unary_inexact(ew.sqrt_p, "sqrt")
cbrt = _unary_inexact(ew.cbrt_p, "cbrt")


def add(x, y, /):
    """Elementwise ``x + y`` with NumPy broadcasting and NEP 50 promotion.

    >>> add(1, 2.5)
    Array(3.5, dtype=float64, weak_type=True)
    """
    x, y = broadcast_args(*promote_dtypes(x, y))
    if aval(x).dtype == np.bool_:
        return ew.or_p.bind(x, y)
    return ew.add_p.bind(x, y)


def subtract(x, y, /):
    """Elementwise ``x - y``."""
    return elementwise(ew.sub_p, x, y)


def multiply(x, y, /):
    """Elementwise ``x * y``."""
    x, y = broadcast_args(*promote_dtypes(x, y))
    if aval(x).dtype == np.bool_:
        return ew.and_p.bind(x, y)
    return ew.mul_p.bind(x, y)


def true_divide(x, y, /):
    """Elementwise ``x / y`` (integers divide to the default float, as in NumPy)."""
    return elementwise(ew.div_p, x, y, inexact=True)


divide = true_divide


def negative(x, /):
    """Elementwise ``-x``."""
    return elementwise(ew.neg_p, x)


def power(x, y, /):
    """Elementwise ``x ** y``; a Python int exponent becomes repeated multiplication."""
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = promote_dtypes(x)
        if y == 0:
            from funcgrad.numpy.creation import ones_like  # noqa: PLC0415

            return ones_like(x)
        if _dt.is_inexact(aval(x).dtype) or y > 0:
            return ew.integer_pow(x, y)
    x, y = broadcast_args(*promote_dtypes(x, y))
    if not _dt.is_inexact(aval(x).dtype):
        return _integer_power(x, y)
    return ew.pow_p.bind(x, y)


def _integer_power(x, y):
    raise NotImplementedError("integer ** integer array is not supported yet")


def maximum(x, y, /):
    """Elementwise maximum (NaN-propagating; ties split the gradient equally)."""
    return elementwise(ew.max_p, x, y)


def minimum(x, y, /):
    """Elementwise minimum."""
    return elementwise(ew.min_p, x, y)


def square(x, /):
    """Elementwise ``x * x``."""
    return elementwise(ew.square_p, x)


def absolute(x, /):
    """Elementwise ``|x|`` (gradient ``sign(x)``, 0 at 0)."""
    return elementwise(ew.abs_p, x)


abs = absolute


def _compare(prim, name):
    def f(x, y, /):
        return elementwise(prim, x, y)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` comparison (boolean result, zero gradient)."
    return f


equal = _compare(ew.eq_p, "equal")
not_equal = _compare(ew.ne_p, "not_equal")
less = _compare(ew.lt_p, "less")
less_equal = _compare(ew.le_p, "less_equal")
greater = _compare(ew.gt_p, "greater")
greater_equal = _compare(ew.ge_p, "greater_equal")


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` else ``y`` (with broadcasting).

    >>> where(asarray_bool([True, False]), 1.0, 2.0).tolist()
    [1.0, 2.0]
    """
    if x is None or y is None:
        raise ValueError("funcgrad.numpy.where needs x and y; the one-argument form is nonzero()")
    x, y = promote_dtypes(x, y)
    condition = _as_bool(condition)
    condition, x, y = broadcast_args(condition, x, y)
    shape = aval(x).shape or aval(y).shape or aval(condition).shape
    from funcgrad.numpy._core import broadcast_to  # noqa: PLC0415

    if aval(x).shape != shape:
        x = broadcast_to(x, shape)
    if aval(y).shape != shape:
        y = broadcast_to(y, shape)
    return ew.select_n_p.bind(condition, y, x)


def _as_bool(c):
    from funcgrad.numpy._core import asarray  # noqa: PLC0415

    c = asarray(c) if not hasattr(c, "dtype") else c
    if aval(c).dtype != np.bool_:
        c = ew.ne_p.bind(*promote_dtypes(c, 0))
    return c


def asarray_bool(x):
    from funcgrad.numpy._core import asarray  # noqa: PLC0415

    return asarray(x, bool)
