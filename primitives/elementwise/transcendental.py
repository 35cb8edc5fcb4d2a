"""Elementwise transcendental and special functions: exp, log, powers, roots, the trigonometric
and hyperbolic functions and their inverses, logistic, erf and its relatives, the gamma-family
functions, with their rules (Taylor recurrences included).

Layer: primitives. Imports the funcgrad kernel, numpy, (lazily, for import time) scipy.special and
the arithmetic of the family (``elementwise/arithmetic.py``, which imports nothing from here). Part
of the ``elementwise`` family (``primitives/elementwise/``, one family split by subject).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from funcgrad.primitives._rules import (
    JET_OF_SPECIAL_FUNCTION,
    aval_of,
    coerce_pair,
    full_series,
    naryop,
    split_series,
    unop,
)
from funcgrad.primitives.elementwise.arithmetic import (
    _broadcast_like,
    _const,
    _float_or_complex,
    add,
    and_p,
    div,
    eq_p,
    integer_pow,
    mul,
    neg,
    select,
    square,
    sub,
)
from funcgrad.primitives.elementwise.series import (
    _add,
    _affine,
    _integer_pow,
    _mul,
    _product,
    _reciprocal,
    _scale,
    _square,
    _square_term,
    _total,
    def_unary,
)

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import (
    Zero,
)
from funcgrad.kernel.hooks import hooks


def _special(name, odd: bool = False):
    """scipy.special functions, imported on first use (scipy.special takes ~0.2 s to import).
    ``odd``: an odd function, whose value at -0 is -0 (XLA's; SciPy's erfinv(-0.0) is +0)."""

    def impl(*args):
        import scipy.special  # noqa: PLC0415 - deferred for import time, not for a cycle

        # In the operands' dtype: SciPy computes float16 in float32 and returns that.
        out = np.asarray(getattr(scipy.special, name)(*args)).astype(np.result_type(*args), copy=False)
        return np.where(np.equal(args[0], 0), args[0], out).astype(out.dtype, copy=False) if odd else out

    impl.__name__ = name
    return impl


exp_p = unop(
    "exp", np.exp, lambda t, ans, x: mul(t, ans), uses_answer=True, may_produce_nan=True, sparse="densifying"
)
exp2_p = unop(
    "exp2",
    np.exp2,
    lambda t, ans, x: mul(np.log(2.0).astype(aval_of(x).dtype), mul(t, ans)),  # (JAX's order)
    uses_answer=True,
)
expm1_p = unop(
    "expm1",
    np.expm1,
    lambda t, ans, x: mul(t, add(ans, 1)),
    uses_answer=True,
    may_produce_nan=True,
    sparse="zero_preserving",
)
log_p = unop("log", np.log, lambda t, x: div(t, x), may_produce_nan=True, sparse="densifying")


def _log1p(x):
    """``log(1 + x)``; for complex ``x`` accurate near 0 as XLA's (NumPy's complex log1p is
    ``log(1 + x)``, which loses the digits of a small ``x``: 1.0014e-05 for 1e-05 in complex64).
    The real part is ``log|1 + x| = log1p(x.re * (2 + x.re) + x.im**2) / 2`` for small ``x``."""
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return np.log1p(x)
    re, im = x.real, x.imag
    with np.errstate(all="ignore"):
        near = np.log1p(re * (2 + re) + im * im) * re.dtype.type(0.5)
        far = np.log(np.abs(1 + x))
    out = np.empty(x.shape, x.dtype)
    out.real = np.where(np.abs(x) < 0.5, near, far)
    out.imag = np.arctan2(im, 1 + re)
    return out


log1p_p = unop(
    "log1p", _log1p, lambda t, x: div(t, add(x, 1)), may_produce_nan=True, sparse="zero_preserving"
)
sqrt_p = unop(
    "sqrt",
    np.sqrt,
    # (JAX's form, t * (0.5 / ans): its rounding, and its higher derivatives' graph, in float16)
    lambda t, ans, x: mul(t, div(_const(x, 0.5), ans)),
    uses_answer=True,
    may_produce_nan=True,
    sparse="zero_preserving",
)
rsqrt_p = unop(
    "rsqrt",
    lambda x: (1 / np.sqrt(x)).astype(np.result_type(x)),
    lambda t, ans, x: mul(t, mul(div(ans, x), _const(x, -0.5))),
    uses_answer=True,
    may_produce_nan=True,
)
cbrt_p = unop(
    "cbrt",
    np.cbrt,
    # t / 3 * ans**-2, as JAX's: at 0 the second derivative is -inf (+inf at -0.0), not 0 * inf / 0
    lambda t, ans, x: mul(t, mul(integer_pow(ans, -2), _const(x, 1 / 3))),
    uses_answer=True,
    accepted=_dt.is_float,
    may_produce_nan=True,
    sparse="zero_preserving",
)


def _zero_real_part_kept(fn, part):
    """NumPy's complex ``fn`` with JAX's value where the real part is (+-)0: its formula selects a
    +0 ``part`` there ("real" for sine, "imag" for cosine; C99's, NumPy's, keeps the sign of -0)."""

    def impl(x):
        out = fn(x)
        if np.iscomplexobj(out):
            out = np.array(out, copy=True)
            view = out.real if part == "real" else out.imag
            view[np.real(x) == 0] = 0.0
        return out

    impl.__name__ = fn.__name__
    return impl


sin_p = unop(
    "sin",
    _zero_real_part_kept(np.sin, "real"),
    lambda t, x: mul(t, cos(x)),
    may_produce_nan=True,
    sparse="zero_preserving",
)
cos_p = unop(
    "cos",
    _zero_real_part_kept(np.cos, "imag"),
    lambda t, x: neg(mul(t, sin(x))),
    may_produce_nan=True,
    sparse="densifying",
)
tan_p = unop(
    "tan",
    np.tan,
    lambda t, ans, x: mul(t, add(square(ans), _const(x, 1))),
    uses_answer=True,
    may_produce_nan=True,
    sparse="zero_preserving",
)
asin_p = unop(
    "asin",
    np.arcsin,
    lambda t, x: mul(t, rsqrt(sub(_const(x, 1), square(x)))),
    may_produce_nan=True,
    sparse="zero_preserving",
)
acos_p = unop(
    "acos",
    np.arccos,
    lambda t, x: neg(mul(t, rsqrt(sub(_const(x, 1), square(x))))),
    may_produce_nan=True,
    sparse="densifying",
)
atan_p = unop(
    "atan",
    np.arctan,
    lambda t, x: div(t, add(square(x), _const(x, 1))),
    may_produce_nan=True,
    sparse="zero_preserving",
)
sinh_p = unop("sinh", np.sinh, lambda t, x: mul(t, cosh(x)), may_produce_nan=True, sparse="zero_preserving")
cosh_p = unop("cosh", np.cosh, lambda t, x: mul(t, sinh(x)), may_produce_nan=True, sparse="densifying")


def _tanh_jvp(t, ans, x):
    # float16/bfloat16: JAX's (t + t y)(1 - y), its roundings (the derivatives of every order are
    # jax's bits); wider floats and complex: t (1 - y^2), one residual where JAX's form keeps two
    # (y and 1 - y: the saved bytes of a tanh network), the same value within a rounding
    if aval_of(ans).dtype in _dt.HALF_FLOATS:
        return mul(add(t, mul(t, ans)), sub(1, ans))
    return mul(t, sub(1, square(ans)))


tanh_p = unop(
    "tanh",
    np.tanh,
    _tanh_jvp,
    uses_answer=True,
    may_produce_nan=True,
    sparse="zero_preserving",
)
asinh_p = unop(
    "asinh",
    np.arcsinh,
    lambda t, x: mul(t, rsqrt(add(square(x), 1))),
    may_produce_nan=True,
    sparse="zero_preserving",
)
# x**2 - 1 as JAX's (the domain is x >= 1; at x = -1 the tangent is +inf, not rsqrt(-0.0) = -inf)
acosh_p = unop(
    "acosh",
    np.arccosh,
    lambda t, x: mul(t, rsqrt(sub(square(x), 1))),
    may_produce_nan=True,
    sparse="densifying",
)


def _atanh_jvp(t, x):
    # float16/bfloat16: JAX's (1 / (1 + x)) (t / (1 - x)), its roundings; wider floats and complex:
    # t (1 / (1 + x) / (1 - x)), one residual where JAX's form keeps two. Either way the second
    # derivative at x = 1 is -inf + inf = nan, as JAX's (1 / (1 - x^2) gave 2x / 0 = inf)
    if aval_of(x).dtype in _dt.HALF_FLOATS:
        return mul(div(1, add(1, x)), div(t, sub(1, x)))
    return mul(t, div(div(1, add(1, x)), sub(1, x)))


atanh_p = unop(
    "atanh",
    np.arctanh,
    _atanh_jvp,
    may_produce_nan=True,
    sparse="zero_preserving",
)


def _logistic_impl(x):
    if np.result_type(x).kind == "c":  # holomorphic 1 / (1 + e^-z) (as jax.nn.sigmoid of complex)
        return (1 / (1 + np.exp(-np.asarray(x)))).astype(np.result_type(x))
    # exp(-|x|) never overflows: 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) for x < 0.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(np.result_type(x))


logistic_p = unop(
    "logistic",
    _logistic_impl,
    lambda t, ans, x: mul(t, mul(ans, sub(1, ans))),
    uses_answer=True,
    accepted=_float_or_complex,
    may_produce_nan=True,
)
# Python floats, not np.float64 (an np.float64 made float32 derivatives fail to bind: erf's second
# derivative in float32); ``_const`` gives them the operand's dtype. The products in JAX's order,
# c (t e): t (e c) rounded float32 gradients of erf/erfc/erfinv (and ndtr/ndtri) differently from
# jax's in about a third of the entries.
_two_over_sqrt_pi = float(2 / np.sqrt(np.pi))
_sqrt_pi_over_two = float(np.sqrt(np.pi) / 2)
erf_p = unop(
    "erf",
    _special("erf"),
    lambda t, x: mul(_const(x, _two_over_sqrt_pi), mul(t, exp(neg(square(x))))),  # (JAX's order)
    accepted=_dt.is_float,
    may_produce_nan=True,
    sparse="zero_preserving",
)
erfc_p = unop(
    "erfc",
    _special("erfc"),
    lambda t, x: mul(_const(x, -_two_over_sqrt_pi), mul(t, exp(neg(square(x))))),  # (JAX's order)
    accepted=_dt.is_float,
    may_produce_nan=True,
)
erf_inv_p = unop(
    "erf_inv",
    _special("erfinv", odd=True),
    lambda t, ans, x: mul(_const(x, _sqrt_pi_over_two), mul(t, exp(square(ans)))),  # (JAX's order)
    uses_answer=True,
    accepted=_dt.is_float,
    may_produce_nan=True,
    sparse="zero_preserving",
)
lgamma_p = unop(
    "lgamma",
    _special("gammaln"),
    lambda t, x: mul(t, digamma(x)),
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
    may_produce_nan=True,
)
digamma_p = unop(
    "digamma",
    _special("digamma"),
    lambda t, x: mul(t, polygamma1(x)),
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
    may_produce_nan=True,
)


def _polygamma1_impl(x):
    import scipy.special  # noqa: PLC0415 - deferred for import time

    return scipy.special.polygamma(1, x).astype(np.result_type(x))


def _polygamma_impl(m, x):
    import scipy.special  # noqa: PLC0415 - deferred for import time

    return np.asarray(scipy.special.polygamma(np.asarray(m).astype(np.int64), x)).astype(np.result_type(x))


def _polygamma_jvp_m(t, m, x):
    # (JAX's words: polygamma is defined at integer orders m only, so it has no derivative in m)
    raise ValueError("polygamma gradient with respect to m is not supported")


# polygamma(m, x), the m-th derivative of digamma (m a non-negative integer value of x's dtype,
# as in jax.lax); d/dx polygamma(m, x) = polygamma(m + 1, x), so every order is differentiable.
polygamma_p = naryop(
    "polygamma",
    _polygamma_impl,
    _polygamma_jvp_m,
    lambda t, m, x: mul(t, polygamma_p.bind(*coerce_pair(add(m, 1), x))),
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
)

# trigamma, polygamma(1, x): digamma's derivative (kept as its own primitive for its lowering).
polygamma1_p = unop(
    "trigamma",
    _polygamma1_impl,
    lambda t, x: mul(t, polygamma_p.bind(_const(x, 2), x)),
    accepted=_dt.is_float,
    taylor_from_jvp=JET_OF_SPECIAL_FUNCTION,
)

exp = exp_p.bind
cos = cos_p.bind
sin = sin_p.bind
cosh = cosh_p.bind
sinh = sinh_p.bind
rsqrt = rsqrt_p.bind
digamma = digamma_p.bind
polygamma1 = polygamma1_p.bind


def _pow_jvp_x(t, x, y):
    # d/dx x^y = y x^(y-1), JAX's rule for a float exponent, except at x == y == 0, where it is taken
    # as 0 (x^0 is constant; jax's 0 * inf gives nan there). Only that point is masked, by the
    # double-where trick (x becomes 1 there before the power, so no inf is ever formed at any order):
    # masking all of y == 0 would cut the rule's dependence on y and zero the mixed derivative
    # d/dy (y x^(y-1)) = 1/x at y == 0 (issue 33).
    dtype = aval_of(x).dtype
    zero_zero = and_p.bind(eq_p.bind(x, np.zeros((), dtype)), eq_p.bind(y, np.zeros((), dtype)))
    x = _broadcast_like(x, x, y)
    safe_x = select(zero_zero, hooks.full_like(x, 1), x)
    jac = mul(y, pow_(safe_x, sub(y, 1)))
    return mul(t, select(zero_zero, hooks.full_like(jac, 0), jac))


def _pow_jvp_y(t, x, y):
    # d/dy x^y = log(x) x^y, taken as 0 where x == 0 (the limit for y > 0), never nan.
    is_zero = eq_p.bind(x, np.zeros((), aval_of(x).dtype))
    safe_x = select(is_zero, hooks.full_like(x, 1), x)
    log_x = select(is_zero, hooks.full_like(x, 0), log_p.bind(safe_x))
    return mul(t, mul(log_x, pow_(x, y)))


def _pow_impl(x, y):
    """NumPy's ``power`` without its paths for one exponent of 0.5 (``sqrt``) or -1 (``reciprocal``),
    so eager values are XLA's (C's ``pow``): ``pow(-inf, 0.5)`` is inf and ``pow(-0.0, 0.5)`` is
    +0.0, where ``sqrt`` gives nan and -0.0. NumPy takes those paths for an exponent given once (0-d
    or broadcast, a stride of 0): such an exponent is made a full array. (Its other paths, 2 as
    ``square`` among them, give ``pow``'s values: kept, they are fast.)"""
    x, y = np.asarray(x), np.asarray(y)
    once = y.size == 1 and y.dtype.kind in "fc" and y.reshape(-1)[0] in (0.5, -1.0)
    if once or (y.size > 1 and 0 in y.strides):
        shape = np.broadcast_shapes(x.shape, y.shape) or (1,)
        out = np.power(np.broadcast_to(x, shape), np.array(np.broadcast_to(y, shape)))
        return out.reshape(np.broadcast_shapes(x.shape, y.shape))
    return np.power(x, y)


pow_p = naryop("pow", _pow_impl, _pow_jvp_x, _pow_jvp_y, accepted=_float_or_complex, may_produce_nan=True)


def pow_(x, y):
    return pow_p.bind(*coerce_pair(x, y))


def _atan2_impl(y, x):
    """NumPy's ``arctan2``; of complex values XLA's formula (its CPU emitter's, as jax computes
    ``lax.atan2``/``jnp.arctan2`` of complex numbers): ``-i log((x + i y) / sqrt(x^2 + y^2))``."""
    y, x = np.asarray(y), np.asarray(x)
    if y.dtype.kind != "c":
        return np.arctan2(y, x)
    with np.errstate(all="ignore"):
        return (-1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))).astype(y.dtype)


atan2_p = naryop(
    "atan2",
    _atan2_impl,
    lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
    lambda t, x, y: mul(t, div(neg(x), add(square(x), square(y)))),
    accepted=_float_or_complex,
    taylor_from_jvp="its JVP rule is a few products and one quotient",
    may_produce_nan=True,
)


def _from_derivative(x: list, y0, z: Callable[[list, int], object]) -> list:
    """``y`` with ``y' = z x'``: ``y_k = (1/k) sum_(j=1..k) j x_j z_(k-j)``; ``z(y, m)`` gives
    ``z_m`` from ``y_0..y_m``."""
    jx = [None, *(_scale(t, j) for j, t in enumerate(x[1:], start=1))]
    y, zs = [y0], []
    for k in range(1, len(x)):
        zs.append(z(y, k - 1))
        y.append(_scale(_total(_mul(jx[j], zs[k - j]) for j in range(1, k + 1)), 1 / k))
    return y


def _power(x: list, p, y0, ratio=None) -> list:
    """``y = x^p`` (``p`` a constant): ``y_k = (1/(k x_0)) sum_(j=1..k) ((p+1) j - k) x_j y_(k-j)``.

    ``ratio``, when given, is ``y_0 / x_0 = x_0^(p-1)`` written without the division: the first
    term is then ``p x_1 ratio``, the JVP rule's value, also at ``x_0 = 0`` (``sqrt``: ``x_1 / (2 y_0)``
    is inf there, where ``y_0 / x_0`` is 0/0 = nan)."""
    y = [y0]
    for k in range(1, len(x)):
        if k == 1 and ratio is not None:
            y.append(None if x[1] is None else _scale(_mul(x[1], ratio), p))
            continue
        terms = []
        for j in range(1, k + 1):
            if x[j] is None or y[k - j] is None:
                continue
            c = sub(mul(add(p, 1), j), k) if not _is_number(p) else (p + 1) * j - k
            terms.append(_scale(_mul(x[j], y[k - j]), c) if _is_number(c) else mul(_mul(x[j], y[k - j]), c))
        s = _total(terms)
        y.append(None if s is None else div(s, mul(x[0], k)))
    return y


def _is_number(c) -> bool:
    return isinstance(c, int | float)


def _from_x(x: list, y0, z_of_x: Callable[[list], list]) -> list:
    """``_from_derivative`` when ``f'`` depends on ``x`` alone: ``z = z_of_x(x)`` to order
    ``K - 1``."""
    z = z_of_x(x[:-1])
    return _from_derivative(x, y0, lambda y, m: z[m])


def _exp(u: list, y0=None) -> list:
    return _from_derivative(u, exp(u[0]) if y0 is None else y0, lambda y, m: y[m])


def _log(x: list, y0=None) -> list:
    """``log x``: ``x y' = x'``, so ``y_k = (x_k - (1/k) sum_(j=1..k-1) j y_j x_(k-j)) / x_0``, JAX's
    recurrence: at ``x_0 = 0`` its infinities are jax's (``y' = x' * (1/x)`` with the reciprocal's
    series made ``inf - inf``, NaN, from the third term on)."""
    y = [log_p.bind(x[0]) if y0 is None else y0]
    for k in range(1, len(x)):
        s = _total(_scale(_mul(y[j], x[k - j]), j / k) for j in range(1, k))
        num = x[k] if s is None else (_scale(s, -1) if x[k] is None else sub(x[k], s))
        y.append(None if num is None else div(num, x[0]))
    return y


# Unary


def _sin_cos(x: list, sin0, cos0) -> tuple[list, list]:
    """``s' = c x'``, ``c' = -s x'`` together."""
    jx = [None, *(_scale(t, j) for j, t in enumerate(x[1:], start=1))]
    s, c = [sin0], [cos0]
    for k in range(1, len(x)):
        s.append(_scale(_total(_mul(jx[j], c[k - j]) for j in range(1, k + 1)), 1 / k))
        c.append(_scale(_total(_mul(jx[j], s[k - j]) for j in range(1, k + 1)), -1 / k))
    return s, c


def _sinh_cosh(x: list, sinh0, cosh0) -> tuple[list, list]:
    jx = [None, *(_scale(t, j) for j, t in enumerate(x[1:], start=1))]
    s, c = [sinh0], [cosh0]
    for k in range(1, len(x)):
        s.append(_scale(_total(_mul(jx[j], c[k - j]) for j in range(1, k + 1)), 1 / k))
        c.append(_scale(_total(_mul(jx[j], s[k - j]) for j in range(1, k + 1)), 1 / k))
    return s, c


def _one_minus_square(y, m):  # z = 1 - y^2 (tanh)
    sq = _square_term(y, m)
    return sub(1, sq) if m == 0 else _scale(sq, -1)


def _one_plus_square(y, m):  # z = 1 + y^2 (tan)
    sq = _square_term(y, m)
    return add(sq, 1) if m == 0 else sq


def _logistic_z(y, m):  # z = y - y^2
    return _add(y[m], _scale(_square_term(y, m), -1))


def _sq_plus(c):
    """``x^2 + c`` as a series."""
    return lambda x: _affine(_square(x), 1, c)


def _one_minus_sq(x):
    return _affine(_square(x), -1, 1)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

def_unary(exp_p, lambda x, y0: _exp(x, y0))
def_unary(exp2_p, lambda x, y0: _exp(_affine(x, math.log(2.0), 0), y0))
def_unary(expm1_p, lambda x, y0: _from_derivative(x, y0, lambda y, m: add(y[0], 1) if m == 0 else y[m]))
def_unary(log_p, lambda x, y0: _log(x, y0))
def_unary(log1p_p, lambda x, y0: _log(_affine(x, 1, 1), y0))
def_unary(sqrt_p, lambda x, y0: _power(x, 0.5, y0, div(1, y0)))
def_unary(rsqrt_p, lambda x, y0: _power(x, -0.5, y0, mul(y0, square(y0))))
def_unary(cbrt_p, lambda x, y0: _power(x, 1 / 3, y0, div(1, square(y0))))
def_unary(sin_p, lambda x, y0: _sin_cos(x, y0, cos(x[0]))[0])
def_unary(cos_p, lambda x, y0: _sin_cos(x, sin(x[0]), y0)[1])
def_unary(sinh_p, lambda x, y0: _sinh_cosh(x, y0, cosh(x[0]))[0])
def_unary(cosh_p, lambda x, y0: _sinh_cosh(x, sinh(x[0]), y0)[1])
def_unary(tan_p, lambda x, y0: _from_derivative(x, y0, _one_plus_square))
def_unary(tanh_p, lambda x, y0: _from_derivative(x, y0, _one_minus_square))
def_unary(logistic_p, lambda x, y0: _from_derivative(x, y0, _logistic_z))
def_unary(atan_p, lambda x, y0: _from_x(x, y0, lambda u: _reciprocal(_sq_plus(1)(u))))
def_unary(atanh_p, lambda x, y0: _from_x(x, y0, lambda u: _reciprocal(_one_minus_sq(u))))
def_unary(asin_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_one_minus_sq(u))))
def_unary(
    acos_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_rsqrt(_one_minus_sq(u)), -1, 0)),
)
def_unary(asinh_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_sq_plus(1)(u))))
def_unary(acosh_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_sq_plus(-1)(u))))
def_unary(
    erf_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_exp(_affine(_square(u), -1, 0)), _TWO_OVER_SQRT_PI, 0)),
)
def_unary(
    erfc_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_exp(_affine(_square(u), -1, 0)), -_TWO_OVER_SQRT_PI, 0)),
)


def _rsqrt(u: list) -> list:
    return _power(u, -0.5, rsqrt(u[0]))


def _erf_inv(x: list, y0) -> list:
    """``y' = (sqrt(pi)/2) e x'`` with ``e = exp(y^2)``, which grows one term ahead of ``y``:
    ``e_m = (1/m) sum_(j=1..m) j (y^2)_j e_(m-j)``."""
    sq: list = []
    e: list = []

    def z(y, m):
        sq.append(_square_term(y, m))
        if m == 0:
            e.append(exp(sq[0]))
        else:
            e.append(_scale(_total(_mul(_scale(sq[j], j), e[m - j]) for j in range(1, m + 1)), 1 / m))
        return _scale(e[m], math.sqrt(math.pi) / 2)

    return _from_derivative(x, y0, z)


def_unary(erf_inv_p, _erf_inv)


def _pow_rule(primals, series):
    (x0, p0), (sx, sp) = primals, series
    y0 = pow_p.bind(x0, p0)
    x = full_series(x0, sx)
    if all(type(t) is Zero for t in sp):
        c = core.concrete_value(p0)
        if c is not None and c.ndim == 0 and c.dtype.kind == "f" and float(c).is_integer() and abs(c) <= 64:
            # x ** 2.0: products, exact where x == 0 (x y' = p y x' divides by x)
            return split_series(_integer_pow(x, y0, y=int(c)))
        return split_series(_power(x, p0, y0))  # a constant exponent: x y' = p y x'

    # x^p = exp(p log x)
    return split_series(_exp(_product(full_series(p0, sp), _log(x)), y0))


pow_p.def_taylor(_pow_rule)


# float16/bfloat16 eagerly as XLA computes them (JAX's bits): these expand into several rounded
# steps of the half type there (exp2 and expm1 too), which NumPy's one rounding does not give
# (exp, erfc, digamma and pow of bfloat16/float16: the lax-parameter fuzzer's half-precision sweep)
for _p in (exp_p, exp2_p, expm1_p, rsqrt_p, asin_p, acos_p, asinh_p, acosh_p, atanh_p, logistic_p, lgamma_p,
           erfc_p, digamma_p, pow_p, atan_p):  # fmt: skip
    _p.def_traits(half_floats_compiled=True)


def _xla_where_not_finite(primitive) -> None:
    """``primitive``'s eager step recomputed by its compiled program (``hooks.eager_compiled``)
    where an operand or the result is not finite: SciPy's gamma-family functions answer at the poles
    and infinities otherwise than XLA's (jax's, eager or jitted): digamma(+-0) is -inf/+inf in SciPy,
    NaN in XLA; lgamma(-inf) -inf, inf; polygamma(1, inf) 0, NaN; polygamma(2, 0) -inf, NaN (the
    lax-parameter fuzzer, seed 20998). Finite values keep SciPy's answer at one finiteness check."""
    impl = primitive.impl

    def step(*vals, **params):
        out = impl(*vals, **params)
        if hooks.eager_compiled is not None and any(
            a.dtype.kind == "f" and not np.isfinite(a).all() for a in map(np.asarray, (*vals, out))
        ):
            return hooks.eager_compiled(primitive, list(vals), params)._numpy()
        return out

    step.__wrapped__ = impl
    step.__name__ = f"{primitive.name}_impl"
    primitive.def_impl(step)


for _p in (digamma_p, lgamma_p, polygamma_p, polygamma1_p):
    _xla_where_not_finite(_p)
