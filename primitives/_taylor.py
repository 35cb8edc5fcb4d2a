"""Taylor rules (``jet``) of the elementwise family, the bilinear primitives and the selections.

Layer: primitives. Imports the funcgrad kernel and sibling primitive modules.

Every rule reads and returns Taylor coefficients (NOTE: [Taylor coefficients] in
``funcgrad/kernel/taylor.py``); inside this module a series is one list ``[x0, x1, ..., xK]``
(primal first) where ``None`` is a zero term, so the Cauchy sums skip products with a zero factor
(NOTE: [zero series]). They are attached here rather than beside each primitive's other rules to
keep the family files under their size budget; each is one line where the math is one line.

The recurrences come from one identity: for ``y = f(x)``, ``y' = f'(x) x'``, i.e.
``k y_k = sum_(j=1..k) j x_j z_(k-j)`` with ``z = f'(x)`` (``_from_derivative``). ``z`` is a
series of ``x`` alone (``atan``: ``1/(1+x^2)``) or of ``y`` itself (``exp``: ``y``; ``tanh``:
``1 - y^2``), computed one term ahead of ``y``. Powers use ``x y' = p y x'``, quotients
``b q = a``. Everything else differentiable uses the kernel's rule from the JVP rule
(``taylor_from_jvp``), and linear maps act term by term (``linear_taylor``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import (
    callbacks,
    collectives,
    dot,
    gather,
    indexing,
    linalg,
    remat,
    scatter,
    sharding,
    windowed,
)
from funcgrad.primitives import conv as _conv
from funcgrad.primitives import elementwise as ew

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, linear_taylor
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.taylor import taylor_from_jvp

# ----------------------------------------------------------------------------------------------
# Series arithmetic on [x0, x1, ..., xK] with None for zero terms


def _full(primal, terms) -> list:
    return [primal, *(None if type(t) is Zero else t for t in terms)]


def _out(series: list):
    """``(primal, kernel terms)`` of a full series."""
    y0 = series[0]
    return y0, [Zero.from_primal_value(y0) if t is None else t for t in series[1:]]


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ew.add(a, b)


def _mul(a, b):
    return None if a is None or b is None else ew.mul(a, b)


def _scale(a, c):
    if a is None or c == 1:
        return a
    return ew.mul(a, c)


def _total(terms):
    out = None
    for t in terms:
        out = _add(out, t)
    return out


def _cauchy(a: list, b: list, k: int, lo: int = 0):
    """``sum_(j=lo..k) a_j b_(k-j)``."""
    return _total(_mul(a[j], b[k - j]) for j in range(lo, k + 1))


def _product(a: list, b: list, y0=None) -> list:
    return [ew.mul(a[0], b[0]) if y0 is None else y0] + [_cauchy(a, b, k) for k in range(1, len(a))]


def _square_term(a: list, k: int):
    """``(a * a)_k`` with each symmetric pair once: ``2 sum_(j<k/2) a_j a_(k-j) + a_(k/2)^2``."""
    half = _scale(_total(_mul(a[j], a[k - j]) for j in range((k + 1) // 2)), 2)
    return _add(half, _mul(a[k // 2], a[k // 2]) if k % 2 == 0 else None)


def _square(a: list, y0=None) -> list:
    return [ew.mul(a[0], a[0]) if y0 is None else y0] + [_square_term(a, k) for k in range(1, len(a))]


def _quotient(a: list, b: list, q0=None) -> list:
    """``a / b``: ``q_k = (a_k - sum_(j=1..k) b_j q_(k-j)) / b_0``."""
    q = [ew.div(a[0], b[0]) if q0 is None else q0]
    for k in range(1, len(a)):
        num = _add(a[k], _scale(_cauchy(b, q, k, lo=1), -1))
        q.append(None if num is None else ew.div(num, b[0]))
    return q


def _affine(a: list, scale, shift) -> list:
    """``scale * a + shift`` (``shift`` a constant: only the primal moves)."""
    head = ew.add(ew.mul(a[0], scale) if scale != 1 else a[0], shift) if shift != 0 else _scale(a[0], scale)
    return [head, *(_scale(t, scale) for t in a[1:])]


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
            c = ew.sub(ew.mul(ew.add(p, 1), j), k) if not _is_number(p) else (p + 1) * j - k
            terms.append(
                _scale(_mul(x[j], y[k - j]), c) if _is_number(c) else ew.mul(_mul(x[j], y[k - j]), c)
            )
        s = _total(terms)
        y.append(None if s is None else ew.div(s, ew.mul(x[0], k)))
    return y


def _is_number(c) -> bool:
    return isinstance(c, int | float)


def _from_x(x: list, y0, z_of_x: Callable[[list], list]) -> list:
    """``_from_derivative`` when ``f'`` depends on ``x`` alone: ``z = z_of_x(x)`` to order
    ``K - 1``."""
    z = z_of_x(x[:-1])
    return _from_derivative(x, y0, lambda y, m: z[m])


def _exp(u: list, y0=None) -> list:
    return _from_derivative(u, ew.exp(u[0]) if y0 is None else y0, lambda y, m: y[m])


def _reciprocal(u: list) -> list:
    return _quotient([np.ones((), core.get_aval(u[0]).dtype)] + [None] * (len(u) - 1), u)


def _log(x: list, y0=None) -> list:
    """``log x``: ``y' = x'/x``."""
    return _from_x(x, ew.log_p.bind(x[0]) if y0 is None else y0, _reciprocal)


def def_unary(primitive, series_fn: Callable) -> None:
    """Give a unary primitive the Taylor rule ``series_fn(x, y0, **params) -> y`` (full series,
    ``y0`` the primal output)."""

    def rule(primals, series, **params):
        (x0,), (s,) = primals, series
        return _out(series_fn(_full(x0, s), primitive.bind(x0, **params), **params))

    primitive.def_taylor(rule)


# ----------------------------------------------------------------------------------------------
# The elementwise family


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
    return ew.sub(1, sq) if m == 0 else _scale(sq, -1)


def _one_plus_square(y, m):  # z = 1 + y^2 (tan)
    sq = _square_term(y, m)
    return ew.add(sq, 1) if m == 0 else sq


def _logistic_z(y, m):  # z = y - y^2
    return _add(y[m], _scale(_square_term(y, m), -1))


def _sq_plus(c):
    """``x^2 + c`` as a series."""
    return lambda x: _affine(_square(x), 1, c)


def _one_minus_sq(x):
    return _affine(_square(x), -1, 1)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

def_unary(ew.exp_p, lambda x, y0: _exp(x, y0))
def_unary(ew.exp2_p, lambda x, y0: _exp(_affine(x, math.log(2.0), 0), y0))
def_unary(ew.expm1_p, lambda x, y0: _from_derivative(x, y0, lambda y, m: ew.add(y[0], 1) if m == 0 else y[m]))
def_unary(ew.log_p, lambda x, y0: _log(x, y0))
def_unary(ew.log1p_p, lambda x, y0: _log(_affine(x, 1, 1), y0))
def_unary(ew.sqrt_p, lambda x, y0: _power(x, 0.5, y0, ew.div(1, y0)))
def_unary(ew.rsqrt_p, lambda x, y0: _power(x, -0.5, y0, ew.mul(y0, ew.square(y0))))
def_unary(ew.cbrt_p, lambda x, y0: _power(x, 1 / 3, y0, ew.div(1, ew.square(y0))))
def_unary(ew.sin_p, lambda x, y0: _sin_cos(x, y0, ew.cos(x[0]))[0])
def_unary(ew.cos_p, lambda x, y0: _sin_cos(x, ew.sin(x[0]), y0)[1])
def_unary(ew.sinh_p, lambda x, y0: _sinh_cosh(x, y0, ew.cosh(x[0]))[0])
def_unary(ew.cosh_p, lambda x, y0: _sinh_cosh(x, ew.sinh(x[0]), y0)[1])
def_unary(ew.tan_p, lambda x, y0: _from_derivative(x, y0, _one_plus_square))
def_unary(ew.tanh_p, lambda x, y0: _from_derivative(x, y0, _one_minus_square))
def_unary(ew.logistic_p, lambda x, y0: _from_derivative(x, y0, _logistic_z))
def_unary(ew.atan_p, lambda x, y0: _from_x(x, y0, lambda u: _reciprocal(_sq_plus(1)(u))))
def_unary(ew.atanh_p, lambda x, y0: _from_x(x, y0, lambda u: _reciprocal(_one_minus_sq(u))))
def_unary(ew.asin_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_one_minus_sq(u))))
def_unary(
    ew.acos_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_rsqrt(_one_minus_sq(u)), -1, 0)),
)
def_unary(ew.asinh_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_sq_plus(1)(u))))
def_unary(ew.acosh_p, lambda x, y0: _from_x(x, y0, lambda u: _rsqrt(_sq_plus(-1)(u))))
def_unary(
    ew.erf_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_exp(_affine(_square(u), -1, 0)), _TWO_OVER_SQRT_PI, 0)),
)
def_unary(
    ew.erfc_p,
    lambda x, y0: _from_x(x, y0, lambda u: _affine(_exp(_affine(_square(u), -1, 0)), -_TWO_OVER_SQRT_PI, 0)),
)
def_unary(ew.square_p, lambda x, y0: _square(x, y0))


def _rsqrt(u: list) -> list:
    return _power(u, -0.5, ew.rsqrt(u[0]))


def _erf_inv(x: list, y0) -> list:
    """``y' = (sqrt(pi)/2) e x'`` with ``e = exp(y^2)``, which grows one term ahead of ``y``:
    ``e_m = (1/m) sum_(j=1..m) j (y^2)_j e_(m-j)``."""
    sq: list = []
    e: list = []

    def z(y, m):
        sq.append(_square_term(y, m))
        if m == 0:
            e.append(ew.exp(sq[0]))
        else:
            e.append(_scale(_total(_mul(_scale(sq[j], j), e[m - j]) for j in range(1, m + 1)), 1 / m))
        return _scale(e[m], math.sqrt(math.pi) / 2)

    return _from_derivative(x, y0, z)


def_unary(ew.erf_inv_p, _erf_inv)


def _integer_pow(x: list, y0, *, y: int) -> list:
    if y == 0:
        return [y0] + [None] * (len(x) - 1)
    n = abs(y)
    result, base = None, x
    while True:  # binary powering by Cauchy products: exact where x0 == 0, unlike x y' = p y x'
        if n & 1:
            result = base if result is None else _product(result, base)
        n >>= 1
        if not n:
            break
        base = _square(base)
    if y < 0:
        result = _reciprocal(result)
    return [y0, *result[1:]]


def_unary(ew.integer_pow_p, _integer_pow)


def _abs_rule(primals, series):
    (x0,), (s,) = primals, series
    if core.get_aval(x0).dtype.kind == "c":  # |z| of complex z: from the JVP rule
        return taylor_from_jvp(ew.abs_p, primals, series, {})
    # The factor is -1 below 0 and +1 from 0 on (not sign(x0), which is 0 at 0): the JVP rule's
    # right derivative abs'(0) = 1, which jax.experimental.jet's rule also takes.
    dtype = core.get_aval(x0).dtype
    below = ew.lt_p.bind(x0, np.zeros((), dtype))
    sign = ew.select(below, hooks.full_like(x0, -1), hooks.full_like(x0, 1))
    return _out([ew.abs_p.bind(x0), *(_mul(t, sign) for t in _full(x0, s)[1:])])


ew.abs_p.def_taylor(_abs_rule)


# ----------------------------------------------------------------------------------------------
# Binary


def _mul_rule(primals, series):
    (a0, b0), (sa, sb) = primals, series
    return _out(_product(_full(a0, sa), _full(b0, sb), ew.mul_p.bind(a0, b0)))


def _div_rule(primals, series):
    (a0, b0), (sa, sb) = primals, series
    q0 = ew.div_p.bind(a0, b0)
    if not _dt.is_inexact(core.get_aval(q0).dtype):
        return q0, [Zero.from_primal_value(q0)] * len(sa)
    return _out(_quotient(_full(a0, sa), _full(b0, sb), q0))


def _pow_rule(primals, series):
    (x0, p0), (sx, sp) = primals, series
    y0 = ew.pow_p.bind(x0, p0)
    x = _full(x0, sx)
    if all(type(t) is Zero for t in sp):
        c = core.concrete_value(p0)
        if c is not None and c.ndim == 0 and c.dtype.kind == "f" and float(c).is_integer() and abs(c) <= 64:
            # x ** 2.0: products, exact where x == 0 (x y' = p y x' divides by x)
            return _out(_integer_pow(x, y0, y=int(c)))
        return _out(_power(x, p0, y0))  # a constant exponent: x y' = p y x'

    # x^p = exp(p log x)
    return _out(_exp(_product(_full(p0, sp), _log(x)), y0))


ew.mul_p.def_taylor(_mul_rule)
ew.div_p.def_taylor(_div_rule)
ew.pow_p.def_taylor(_pow_rule)


def bilinear_taylor(primitive) -> Callable:
    """The Taylor rule of a primitive linear in each of two operands: the Cauchy product
    ``y_k = sum_j f(a_j, b_(k-j))`` (``dot_general``, ``conv_general_dilated``)."""

    def rule(primals, series, **params):
        (a0, b0), (sa, sb) = primals, series
        a, b = _full(a0, sa), _full(b0, sb)
        y0 = primitive.bind(a0, b0, **params)
        out = [y0]
        for k in range(1, len(a)):
            terms = [
                primitive.bind(a[j], b[k - j], **params)
                for j in range(k + 1)
                if a[j] is not None and b[k - j] is not None
            ]
            out.append(_total(terms))
        return _out(out)

    return rule


def _triangular_solve_taylor(primals, series, **params):
    """``op(A) X = B``: ``X_k = op(A_0)^-1 (B_k - sum_(j=1..k) op(A_j) X_(k-j))`` (``X op(A) = B``
    on the right side), with ``A_j`` read as the solve reads ``A`` (its triangle; no diagonal when
    ``unit_diagonal``). One solve per term, where the rule from the JVP rule solves ``2^K`` times."""
    (a0, b0), (sa, sb) = primals, series
    a, b = _full(a0, sa), _full(b0, sb)
    off = 1 if params["unit_diagonal"] else 0

    def op(m):
        m = mx.tril(m, -off) if params["lower"] else mx.triu(m, off)
        m = mx.T(m) if params["transpose_a"] else m
        return mx.conj(m) if params["conjugate_a"] else m

    ops = [None, *(None if t is None else op(t) for t in a[1:])]
    x = [linalg.triangular_solve_p.bind(a0, b0, **params)]
    for k in range(1, len(a)):
        products = [
            mx.matmul(ops[j], x[k - j]) if params["left_side"] else mx.matmul(x[k - j], ops[j])
            for j in range(1, k + 1)
            if ops[j] is not None and x[k - j] is not None
        ]
        rhs = _add(b[k], _scale(_total(products), -1))
        x.append(None if rhs is None else linalg.triangular_solve_p.bind(a0, rhs, **params))
    return _out(x)


linalg.triangular_solve_p.def_taylor(_triangular_solve_taylor)
dot.dot_general_p.def_taylor(bilinear_taylor(dot.dot_general_p))
_conv.conv_general_dilated_p.def_taylor(bilinear_taylor(_conv.conv_general_dilated_p))

# Selections and index maps: linear in their inexact operands, the indices held fixed.
for _p in (
    ew.select_n_p,
    ew.convert_element_type_p,
    gather.scatter_add_p,
    scatter.scatter_p,
    indexing.dynamic_slice_p,
    indexing.dynamic_update_slice_p,
    windowed.reduce_window_sum_p,
    remat.optimization_barrier_p,
    sharding.sharding_constraint_p,
    collectives.all_gather_p,
    collectives.psum_scatter_p,
    collectives.all_to_all_p,
    collectives.ppermute_p,
):
    _p.def_taylor(linear_taylor(_p))
gather.gather_p.def_taylor(linear_taylor(gather.gather_p, {"fill_value": 0}))
# A side effect with no results: it happens once, on the primal values (the rule from the JVP
# rule would run it once per order).
callbacks.debug_callback_p.def_taylor(
    lambda primals, series, **params: (callbacks.debug_callback_p.bind(*primals, **params), [])
)
