"""``funcgrad.scipy.special``: the confluent (``hyp1f1``) and Gauss (``hyp2f1``) hypergeometric
functions, differentiable in every argument.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and the kernel's ``custom_jvp``.

JAX's algorithms (``jax/_src/scipy/special.py``, Apache-2.0, after Cephes): power series, the
asymptotic expansion of 1F1 for ``|x| >= 100``, the terminating polynomial of 2F1 when ``a`` or
``b`` is a non-positive integer, and the digamma transformation of 2F1 near ``x = 1``. Each series
is a masked loop over all elements (at most 250 terms); the derivatives in ``a``, ``b``, ``c`` are
the series differentiated term by term, the one in ``x`` is the contiguous function
``(a b / c) 2F1(a+1, b+1; c+1; x)``.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.jitting import library_jit
from funcgrad.numpy._core import call_custom
from funcgrad.scipy.special._elementary import custom_jvp, real_inexact
from funcgrad.scipy.special._expint import masked_while
from funcgrad.scipy.special._gamma import gamma

__all__ = ["hyp1f1", "hyp2f1"]


def _eps(x) -> float:
    return float(fnp.finfo(x.dtype).eps)


def _series(start, term0, ratio, weight=None, *, relative=True):
    """``start + sum_k term_k (* weight(k))`` with ``term_{k+1} = term_k * ratio(k)``, ``k = 1, 2,
    ...``, up to 250 terms, stopping per element when ``|term| <= eps |sum|`` (JAX's loops)."""
    eps = _eps(term0)

    def going(s):
        serie, k, term = s
        return (k < 250) & (
            fnp.abs(term) / fnp.abs(serie) > eps if relative else fnp.abs(term) > eps * fnp.abs(serie)
        )

    def body(s):
        serie, k, term = s
        serie = serie + (term if weight is None else term * weight(k))
        return serie, k + 1.0, term * ratio(k)

    ones = fnp.ones_like(term0)
    return masked_while(going, body, (start, ones, term0), fnp.full(term0.shape, True))[0]


# ----------------------------------------------------------------------------------------------
# 1F1


def _hyp1f1_value(a, b, x):
    # Kummer's transformation 1F1(a; b; x) = exp(x) 1F1(b - a; b; -x) for x < 0: the series of a
    # positive argument has no cancellation (JAX sums the alternating series: 79.3 for
    # hyp1f1(0.5, 2, -50), whose value is 0.159).
    neg = x < 0
    a_, ax = fnp.where(neg, b - a, a), fnp.abs(x)
    small = ax < 100
    xs = fnp.where(small, ax, 0.5)
    serie = _series(fnp.ones_like(x), a_ / b * xs, lambda k: (a_ + k) / (b + k) * xs / (k + 1))
    xl = fnp.where(small, 200.0, ax)
    asym = _series(
        fnp.ones_like(x), (b - a_) * (1 - a_) / xl, lambda k: (b - a_ + k) * (1 - a_ + k) / (k + 1) / xl
    )
    asym = gamma(b) / gamma(a_) * xl ** (a_ - b) * asym
    # exp(|x|) of the asymptotic form and exp(x) of the transformation, combined in one exponent.
    exponent = fnp.where(small, 0.0, xl) + fnp.where(neg, x, 0.0)
    result = fnp.where(small, serie, asym) * fnp.exp(exponent)
    result = fnp.where((b == 0) & (a != 0), np.inf, result)
    result = fnp.where((a == b) & (a != 0), fnp.exp(x), result)
    return fnp.where(a == 0, 1.0, result)


def _hyp1f1_da(a, b, x):
    ratio = lambda k: (a + k) / (b + k) * x / (k + 1)  # noqa: E731
    return _series(fnp.zeros_like(x), a / b * x, ratio, lambda k: lax.digamma(a + k) - lax.digamma(a))


def _hyp1f1_db(a, b, x):
    ratio = lambda k: (a + k) / (b + k) * x / (k + 1)  # noqa: E731
    return _series(fnp.zeros_like(x), a / b * x, ratio, lambda k: lax.digamma(b) - lax.digamma(b + k))


# The primal and the derivative series are jitted inside the custom_jvp, as JAX's
# (custom_jvp(jit(hyp1f1))): one compiled program per shape and dtype when eager (NOTE: [special
# functions JAX jits]).
_hyp1f1 = custom_jvp(library_jit(_hyp1f1_value))
_hyp1f1_da, _hyp1f1_db = library_jit(_hyp1f1_da), library_jit(_hyp1f1_db)


_hyp1f1.defjvps(
    lambda ta, ans, a, b, x: ta * _hyp1f1_da(a, b, x),
    lambda tb, ans, a, b, x: tb * _hyp1f1_db(a, b, x),
    lambda tx, ans, a, b, x: tx * a / b * _hyp1f1(a + 1.0, b + 1.0, x),
)


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function ``1F1(a; b; x)``.

    >>> round(float(hyp1f1(1.0, 2.0, 1.0)), 12)   # (e - 1) / 1
    1.718281828459
    """
    a, b, x = fnp.broadcast_arrays(*real_inexact("hyp1f1", a, b, x, lists="stack", shapes_as_lax=False))
    return call_custom(_hyp1f1, a, b, x)


# ----------------------------------------------------------------------------------------------
# 2F1


def _hyp2f1_terminal(a, b, c, x):
    """The terminating series when ``a`` (or ``b``) is a non-positive integer."""
    eps = _eps(x) * 50
    ib = fnp.round(b)
    swap = (b < a) & (fnp.abs(b - ib) < eps) & ~((fnp.fmod(c, 1.0) == 0) & (c <= 0) & (c > b))
    a, b = fnp.where(swap, b, a), fnp.where(swap, a, b)
    a = fnp.abs(a)

    def body(s):
        i, serie, term = s
        term = term * -(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x
        return i + 1.0, serie + term, term

    ones = fnp.ones_like(x)
    init = (ones, ones, ones)
    return masked_while(lambda s: s[0] < a + 1, body, init, fnp.full(x.shape, True))[1]


def _hyp2f1_serie(a, b, c, x):
    return _series(
        fnp.zeros_like(x),
        fnp.ones_like(x),
        lambda k: (a + k - 1) * (b + k - 1) / (c + k - 1) / k * x,
        relative=False,
    )


def _hyp2f1_digamma_transform(a, b, c, x):
    """2F1 near ``x = 1`` when ``c - a - b`` is an integer (Abramowitz & Stegun 15.3.10-12)."""
    rtol = _eps(x)
    d = c - a - b
    s = 1 - x
    rd = fnp.round(d)
    e = fnp.where(rd >= 0, d, -d)
    d1 = fnp.where(rd >= 0, d, 0.0)
    d2 = fnp.where(rd >= 0, 0.0, d)
    ard = fnp.where(rd >= 0, rd, -rd)
    ax = fnp.log(s)
    dg = lax.digamma
    y = dg(fnp.ones_like(x)) + dg(1.0 + e) - dg(a + d1) - dg(b + d1) - ax
    y = y / gamma(e + 1.0)
    p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

    def body(st):
        p, q, t, y = st
        r = dg(1.0 + t) + dg(1.0 + t + e) - dg(a + t + d1) - dg(b + t + d1) - ax
        q = p * r
        y = y + q
        p = p * s * (a + t + d1) / (t + 1.0)
        p = p * (b + t + d1) / (t + 1.0 + e)
        return p, q, t + 1.0, y

    ones = fnp.ones_like(x)
    init = (p, y, ones, y)
    _, _, _, y = masked_while(
        lambda st: (st[2] < 250) & (fnp.abs(st[1]) >= rtol * fnp.abs(st[3])),
        body,
        init,
        fnp.full(x.shape, True),
    )

    def sum_body(st):
        i, p, t, y1 = st
        r = 1.0 - e + t
        p = p * s * (a + t + d2) * (b + t + d2) / r
        t = t + 1.0
        p = p / t
        return i + 1.0, p, t, y1 + p

    init = (ones, ones, fnp.zeros_like(x), ones)
    _, _, _, y1 = masked_while(lambda st: st[0] < ard, sum_body, init, fnp.full(x.shape, True))
    gc = gamma(c)
    y1 = y1 * gamma(e) * gc / (gamma(a + d1) * gamma(b + d1))
    y_neg = y * gc / (gamma(a + d2) * gamma(b + d2))
    y_neg = fnp.where(fnp.fmod(ard, 2.0) != 0, -y_neg, y_neg)
    q = s**rd
    total = fnp.where(rd > 0, y_neg * q + y1, y_neg + y1 * q)
    return fnp.where(rd == 0, y * gc / (gamma(a) * gamma(b)), total)


def _hyp2f1_one_minus_x(a, b, c, x):
    """2F1 for ``x`` near 1 and non-integer ``d = c - a - b``: the linear transformation to ``1 - x``
    (Abramowitz & Stegun 15.3.6), whose two series converge fast there (JAX sums the series in
    ``x``, which has not converged after 250 terms close to 1)."""
    d = c - a - b
    y = 1.0 - x
    gc = gamma(c)
    first = gc * gamma(d) / (gamma(c - a) * gamma(c - b)) * _hyp2f1_serie(a, b, 1.0 - d, y)
    second = y**d * gc * gamma(-d) / (gamma(a) * gamma(b)) * _hyp2f1_serie(c - a, c - b, d + 1.0, y)
    return first + second


def _hyp2f1_terminal_or_serie(a, b, c, x):
    eps = _eps(x) * 50
    d = c - a - b
    neg_int_a = (a <= 0) & (fnp.abs(a - fnp.round(a)) < eps)
    neg_int_b = (b <= 0) & (fnp.abs(b - fnp.round(b)) < eps)
    neg_int = neg_int_a | neg_int_b
    near_one = (x > 0.9) & ~neg_int
    integer_d = fnp.abs(d - fnp.round(d)) < eps
    serie = _hyp2f1_serie(a, b, c, fnp.where(near_one, 0.0, x))
    transform = _hyp2f1_digamma_transform(a, b, c, fnp.where(near_one & integer_d, x, 0.95))
    one_minus = _hyp2f1_one_minus_x(a, b, c, fnp.where(near_one & ~integer_d, x, 0.95))
    terminal = _hyp2f1_terminal(a, b, c, x)
    return fnp.where(
        near_one, fnp.where(integer_d, transform, one_minus), fnp.where(neg_int, terminal, serie)
    )


def _hyp2f1_value(a, b, c, x):
    eps = _eps(x) * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    non_int_d = fnp.abs(d - fnp.round(d)) >= eps
    index = fnp.where(
        (x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0,
        fnp.where((c == 0) | ((c < 0) & (fnp.fmod(c, 1.0) == 0)), 1,
        fnp.where((d <= -1) & ~(non_int_d & (s < 0)), 2,
        fnp.where((d <= 0) & (x == 1), 1,
        fnp.where((x < 1) & (b == c), 3,
        fnp.where((x < 1) & (a == c), 4,
        fnp.where(x > 1, 1, fnp.where(x == 1, 5, 6))))))))  # fmt: skip
    return lax.select_n(
        index,
        fnp.ones_like(x),
        fnp.full_like(x, np.inf),
        s**d * _hyp2f1_terminal_or_serie(ca, cb, c, x),
        s ** (-a),
        s ** (-b),
        gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
        _hyp2f1_terminal_or_serie(a, b, c, x),
    )


def _hyp2f1_dparam(a, b, c, x, weight):
    return _series(
        fnp.zeros_like(x), a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x, weight
    )


_hyp2f1 = custom_jvp(library_jit(_hyp2f1_value))  # (as _hyp1f1)


# The derivative series, jitted as JAX's _hyp2f1_{a,b,c}_derivative.
_hyp2f1_da = library_jit(
    lambda a, b, c, x: _hyp2f1_dparam(a, b, c, x, lambda k: lax.digamma(a + k) - lax.digamma(a))
)
_hyp2f1_db = library_jit(
    lambda a, b, c, x: _hyp2f1_dparam(a, b, c, x, lambda k: lax.digamma(b + k) - lax.digamma(b))
)
_hyp2f1_dc = library_jit(
    lambda a, b, c, x: _hyp2f1_dparam(a, b, c, x, lambda k: lax.digamma(c) - lax.digamma(c + k))
)

_hyp2f1.defjvps(
    lambda ta, ans, a, b, c, x: ta * _hyp2f1_da(a, b, c, x),
    lambda tb, ans, a, b, c, x: tb * _hyp2f1_db(a, b, c, x),
    lambda tc, ans, a, b, c, x: tc * _hyp2f1_dc(a, b, c, x),
    lambda tx, ans, a, b, c, x: tx * a * b / c * _hyp2f1(a + 1.0, b + 1.0, c + 1.0, x),
)


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function ``2F1(a, b; c; x)`` for real ``x <= 1``.

    >>> round(float(hyp2f1(1.0, 1.0, 2.0, 0.5)), 12)   # -log(1 - x) / x
    1.38629436112
    """
    a, b, c, x = fnp.broadcast_arrays(*real_inexact("hyp2f1", a, b, c, x, lists="stack"))
    return call_custom(_hyp2f1, a, b, c, x)
