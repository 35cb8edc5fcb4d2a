"""The elementwise family's Taylor rules (jet): the arithmetic of Taylor series that the family's
rules share (Cauchy products, squares, quotients, reciprocals; ``def_unary``), and the rules of the
arithmetic primitives that are recurrences on it (square, integer_pow, abs, mul, div).

Layer: primitives. Imports the funcgrad kernel, numpy and the family's ``arithmetic`` (whose
primitives these rules are, and whose thin binds they compute with); ``transcendental`` builds its
own Taylor rules on this module. Part of the ``elementwise`` family (``primitives/elementwise/``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from funcgrad.primitives._rules import full_series, split_series
from funcgrad.primitives.elementwise.arithmetic import (
    abs_p,
    add,
    div,
    div_p,
    integer_pow_p,
    lt_p,
    mul,
    mul_p,
    select,
    square_p,
)

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.taylor import taylor_from_jvp

# ----------------------------------------------------------------------------------------------
# Taylor rules (jet): recurrences on Taylor coefficients (NOTE: [Taylor coefficients] in
# funcgrad/kernel/taylor.py). A series is one list ``[x0, x1, ..., xK]`` (primal first) where
# ``None`` is a zero term, so the Cauchy sums skip products with a zero factor (NOTE: [zero
# series]); each rule is one line where the math is one line.
#
# The recurrences come from one identity: for ``y = f(x)``, ``y' = f'(x) x'``, i.e.
# ``k y_k = sum_(j=1..k) j x_j z_(k-j)`` with ``z = f'(x)`` (``_from_derivative``). ``z`` is a
# series of ``x`` alone (``atan``: ``1/(1+x^2)``) or of ``y`` itself (``exp``: ``y``; ``tanh``:
# ``1 - y^2``), computed one term ahead of ``y``. Powers use ``x y' = p y x'``, quotients
# ``b q = a``. The selections (max, min, clamp, ...) and the special functions state in their
# traits that their jet is the kernel's rule from the JVP rule (``taylor_from_jvp``); linear maps act
# term by term (``linear_taylor``).


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


def _mul(a, b):
    return None if a is None or b is None else mul(a, b)


def _scale(a, c):
    if a is None or c == 1:
        return a
    return mul(a, c)


def _total(terms):
    out = None
    for t in terms:
        out = _add(out, t)
    return out


def _cauchy(a: list, b: list, k: int, lo: int = 0):
    """``sum_(j=lo..k) a_j b_(k-j)``."""
    return _total(_mul(a[j], b[k - j]) for j in range(lo, k + 1))


def _product(a: list, b: list, y0=None) -> list:
    return [mul(a[0], b[0]) if y0 is None else y0] + [_cauchy(a, b, k) for k in range(1, len(a))]


def _square_term(a: list, k: int):
    """``(a * a)_k`` with each symmetric pair once: ``2 sum_(j<k/2) a_j a_(k-j) + a_(k/2)^2``."""
    half = _scale(_total(_mul(a[j], a[k - j]) for j in range((k + 1) // 2)), 2)
    return _add(half, _mul(a[k // 2], a[k // 2]) if k % 2 == 0 else None)


def _square(a: list, y0=None) -> list:
    return [mul(a[0], a[0]) if y0 is None else y0] + [_square_term(a, k) for k in range(1, len(a))]


def _quotient(a: list, b: list, q0=None) -> list:
    """``a / b``: ``q_k = (a_k - sum_(j=1..k) b_j q_(k-j)) / b_0``."""
    q = [div(a[0], b[0]) if q0 is None else q0]
    for k in range(1, len(a)):
        num = _add(a[k], _scale(_cauchy(b, q, k, lo=1), -1))
        q.append(None if num is None else div(num, b[0]))
    return q


def _affine(a: list, scale, shift) -> list:
    """``scale * a + shift`` (``shift`` a constant: only the primal moves)."""
    head = add(mul(a[0], scale) if scale != 1 else a[0], shift) if shift != 0 else _scale(a[0], scale)
    return [head, *(_scale(t, scale) for t in a[1:])]


def _reciprocal(u: list) -> list:
    return _quotient([np.ones((), core.get_aval(u[0]).dtype)] + [None] * (len(u) - 1), u)


def def_unary(primitive, series_fn: Callable) -> None:
    """Give a unary primitive the Taylor rule ``series_fn(x, y0, **params) -> y`` (full series,
    ``y0`` the primal output)."""

    def rule(primals, series, **params):
        (x0,), (s,) = primals, series
        return split_series(series_fn(full_series(x0, s), primitive.bind(x0, **params), **params))

    primitive.def_taylor(rule)


def_unary(square_p, lambda x, y0: _square(x, y0))


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


def_unary(integer_pow_p, _integer_pow)


def _abs_rule(primals, series):
    (x0,), (s,) = primals, series
    if core.get_aval(x0).dtype.kind == "c":  # |z| of complex z: from the JVP rule
        return taylor_from_jvp(abs_p, primals, series, {})
    # The factor is -1 below 0 and +1 from 0 on (not sign(x0), which is 0 at 0): the JVP rule's
    # right derivative abs'(0) = 1, which jax.experimental.jet's rule also takes.
    dtype = core.get_aval(x0).dtype
    below = lt_p.bind(x0, np.zeros((), dtype))
    sign = select(below, hooks.full_like(x0, -1), hooks.full_like(x0, 1))
    return split_series([abs_p.bind(x0), *(_mul(t, sign) for t in full_series(x0, s)[1:])])


abs_p.def_taylor(_abs_rule)


# Binary


def _mul_rule(primals, series):
    (a0, b0), (sa, sb) = primals, series
    return split_series(_product(full_series(a0, sa), full_series(b0, sb), mul_p.bind(a0, b0)))


def _div_rule(primals, series):
    (a0, b0), (sa, sb) = primals, series
    q0 = div_p.bind(a0, b0)
    if not _dt.is_inexact(core.get_aval(q0).dtype):
        return q0, [Zero.from_primal_value(q0)] * len(sa)
    return split_series(_quotient(full_series(a0, sa), full_series(b0, sb), q0))


mul_p.def_taylor(_mul_rule)
div_p.def_taylor(_div_rule)
