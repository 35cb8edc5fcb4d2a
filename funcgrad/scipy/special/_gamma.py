"""``funcgrad.scipy.special``: the gamma and beta families, the zeta function and Bernoulli numbers.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.api (``jvp``) and the kernel's
``custom_jvp``.

The algorithms are JAX's (``jax/_src/scipy/special.py``, Apache-2.0): ``betaln`` is SciPy's
cdflib algorithm (``algdiv`` for large ``b``), ``zeta`` is XLA's Hurwitz zeta with its derivative
taken from the Euler-Maclaurin expansion (so both arguments are differentiable), ``poch`` and
``gamma`` follow from ``lgamma`` and the sign of the gamma function.
"""

from __future__ import annotations

import numpy as np
import scipy.special

import funcgrad.numpy as fnp
from funcgrad import api, lax
from funcgrad.jitting import library_jit
from funcgrad.numpy._core import call_custom, concrete_int
from funcgrad.scipy._promotion import internal_promotion
from funcgrad.scipy.special._elementary import custom_jvp, real_inexact

__all__ = [
    "bernoulli",
    "beta",
    "betainc",
    "betaln",
    "comb",
    "digamma",
    "factorial",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "loggamma",
    "multigammaln",
    "poch",
    "polygamma",
    "zeta",
]


def gammaln(x):
    """``log |Gamma(x)|``.

    >>> round(float(gammaln(5.0)), 12)   # log 4!
    3.178053830348
    """
    (x,) = real_inexact("gammaln", x)
    return lax.lgamma(x)


@library_jit  # (NOTE: [special functions JAX jits])
def gammasgn(x):
    """The sign of the gamma function: ``-1`` or ``+1`` (NaN at the poles, ``-1`` at ``-0.0``).

    >>> gammasgn(fnp.array([0.5, -0.5, -1.5])).tolist()
    [1.0, -1.0, 1.0]
    """
    (x,) = real_inexact("gammasgn", x)
    floor_x = fnp.floor(x)
    negative = x < 0
    pole = (negative & (x == floor_x)) | fnp.isnan(x)
    minus = (negative & (fnp.fmod(floor_x, 2.0) != 0)) | ((x == 0) & fnp.signbit(x))
    return fnp.where(pole, np.nan, fnp.where(minus, -1.0, 1.0)).astype(x.dtype)


# Complex arguments, as JAX's: the Lanczos approximation (g = 7, N = 9; GSL's coefficients) with the
# reflection formula for Re(z) < 0.5; loggamma shifts z into the right half-plane first, so its
# branch cut is SciPy's (the negative real axis); poles and NaN give nan+nanj.
_LANCZOS_G = 7.0
_LANCZOS_COEFFS = np.array([
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
])  # fmt: skip


def _complex_loggamma(z):
    needs_reflection = fnp.real(z) < 0.5
    zz = fnp.where(needs_reflection, 1.0 - z, z) - 1.0
    coeffs = fnp.asarray(_LANCZOS_COEFFS, dtype=z.dtype)
    # (the terms on a new last axis, each operand given z's rank: no implicit rank promotion, which
    # a user's jax_numpy_rank_promotion='raise' would refuse)
    lead = (1,) * zz.ndim
    ks = fnp.arange(1, 9, dtype=z.dtype).reshape(lead + (8,))
    ag = coeffs[0] + fnp.sum(coeffs[1:].reshape(lead + (8,)) / (zz[..., None] + ks), axis=-1)
    t = zz + _LANCZOS_G + 0.5
    half_log2pi = fnp.asarray(0.5 * np.log(2.0 * np.pi), dtype=z.dtype)
    log_gamma_lanczos = half_log2pi + (zz + 0.5) * fnp.log(t) - t + fnp.log(ag)
    # (the reflection's z kept safe where unselected: no NaN derivative through the where)
    z_safe = fnp.where(needs_reflection, z, fnp.full_like(z, 0.5))
    reflected = (
        fnp.log(fnp.asarray(np.pi, dtype=z.dtype)) - fnp.log(fnp.sin(np.pi * z_safe)) - log_gamma_lanczos
    )
    return fnp.where(needs_reflection, reflected, log_gamma_lanczos)


def _nan_at_poles(fun, z):
    """``fun(z)`` where ``z`` is neither a pole (0, -1, -2, ...) nor NaN, and nan+nanj there; ``fun``
    sees 1 in their place (no NaN in its derivative through the where)."""
    bad = (fnp.imag(z) == 0) & (fnp.real(z) == fnp.floor(fnp.real(z))) & (fnp.real(z) <= 0)
    bad = bad | fnp.isnan(z)
    nan_val = fnp.array(complex(np.nan, np.nan), dtype=z.dtype)
    return fnp.where(bad, nan_val, fun(fnp.where(bad, fnp.ones_like(z), z)))


def _complex_gamma(z):
    return _nan_at_poles(lambda z_safe: fnp.exp(_complex_loggamma(z_safe)), z)


@library_jit  # (jitted as JAX's; NOTE: [special functions JAX jits])
def _complex_loggamma_scipy(z):
    return _nan_at_poles(_shifted_loggamma, z)


def _shifted_loggamma(z):
    # loggamma(z) = loggamma(z + n) - sum_{k<n} log(z + k), z + n in the right half-plane
    # (n in the real dtype of z, not an integer: z + n keeps complex64 under NumPy's rules too)
    n = fnp.maximum(0, fnp.ceil(0.5 - fnp.real(z)))

    def cond_fun(state):
        k, _ = state
        return fnp.any(k < n)

    def body_fun(state):
        k, sum_log = state
        mask = k < n
        zk = fnp.where(mask, z + k, fnp.ones_like(z))
        return k + 1, sum_log + fnp.where(mask, fnp.log(zk), fnp.zeros_like(sum_log))

    _, sum_log = lax.while_loop(cond_fun, body_fun, (0, fnp.zeros_like(z)))
    return _complex_loggamma(z + n) - sum_log


def gamma(x):
    """The gamma function ``Gamma(x)``, ``(x - 1)!`` at positive integers.

    >>> round(float(gamma(5.0)), 9)
    24.0
    """
    (x,) = real_inexact("gamma", x)
    if fnp.iscomplexobj(x):
        return _complex_gamma(x)
    return gammasgn(x) * fnp.exp(lax.lgamma(x))


def loggamma(x):
    """The principal branch of ``log Gamma(x)``: ``gammaln(x)`` for ``x > 0``, NaN elsewhere (real
    inputs).

    >>> round(float(loggamma(5.0)), 12)
    3.178053830348
    """
    (x,) = real_inexact("loggamma", x)
    if fnp.iscomplexobj(x):
        return _complex_loggamma_scipy(x)
    return fnp.where(x > 0, lax.lgamma(x), np.nan)


def _algdiv(a, b):
    """``log(Gamma(b) / Gamma(a + b))`` for ``b >= 8`` (SciPy's cdflib ``algdiv``; ``a <= b``)."""
    c0, c1, c2 = 0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03
    c3, c4, c5 = -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02
    h = a / b
    c = h / (1 + h)
    x = 1 / (1 + h)  # cdflib; JAX's port uses h / (1 + h) here (a 5e-7 relative error)
    d = b + (a - 0.5)
    x2 = x * x
    s3 = 1.0 + (x + x2)
    s5 = 1.0 + (x + x2 * s3)
    s7 = 1.0 + (x + x2 * s5)
    s9 = 1.0 + (x + x2 * s7)
    s11 = 1.0 + (x + x2 * s9)
    t = (1.0 / b) ** 2
    w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
    w = w * (c / b)
    u = d * fnp.log1p(a / b)
    v = a * (fnp.log(b) - 1.0)
    return fnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """``log |B(a, b)|``, accurate for large arguments too (SciPy's algorithm).

    >>> round(float(betaln(2.0, 3.0)), 12)   # log(1/12)
    -2.484906649788
    """
    a, b = real_inexact("betaln", a, b)
    a, b = fnp.minimum(a, b), fnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _algdiv(a, b)
    return fnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``.

    >>> round(float(beta(2.0, 3.0)), 12)
    0.083333333333
    """
    a, b = real_inexact("beta", a, b)
    return gammasgn(a) * gammasgn(b) * gammasgn(a + b) * fnp.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``; differentiable in ``x`` (as JAX's).

    >>> round(float(betainc(2.0, 3.0, 0.4)), 12)
    0.5248
    """
    return lax.betainc(*real_inexact("betainc", a, b, x))


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``; differentiable in both.

    >>> round(float(gammainc(1.0, 2.0)), 12)   # 1 - exp(-2)
    0.864664716763
    """
    return lax.igamma(*real_inexact("gammainc", a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.

    >>> round(float(gammaincc(1.0, 2.0)), 12)   # exp(-2)
    0.135335283237
    """
    return lax.igammac(*real_inexact("gammaincc", a, x))


def digamma(x):
    """The logarithmic derivative of the gamma function.

    >>> round(float(digamma(1.0)), 12)   # -Euler's constant
    -0.577215664902
    """
    (x,) = real_inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The ``n``-th derivative of the digamma function (``n`` an integer array or int).

    >>> round(float(polygamma(1, 1.0)), 12)   # pi ** 2 / 6
    1.644934066848
    """
    if isinstance(n, list | tuple):  # (JAX's: it reads n's dtype first, and a list has none)
        raise TypeError(f"Cannot determine dtype of {n}")
    n_dtype = fnp.result_type(n)
    if not fnp.issubdtype(n_dtype, fnp.integer):
        raise ValueError(f"scipy.special.polygamma: n must be of integer type, got dtype {n_dtype}")
    n, x = real_inexact("polygamma", n, x)
    return lax.polygamma(n, x)


def factorial(n, exact: bool = False):
    """``n!`` as a float (``Gamma(n + 1)``; 0 for negative ``n``).

    ``exact=True`` (arbitrary-precision integers) is refused, as in JAX: use ``math.factorial``.

    >>> round(float(factorial(5)), 9)
    120.0
    """
    if exact:
        raise ValueError(
            "scipy.special.factorial: exact=True is not supported (no arbitrary-precision integers; "
            "above 20! the result does not fit in 64 bits). Use math.factorial for exact values."
        )
    (n,) = real_inexact("factorial", n)
    return fnp.where(n < 0, 0.0, fnp.exp(lax.lgamma(n + 1.0)))


def comb(N, k, *, exact: bool = False, repetition: bool = False):
    """The number of combinations of ``N`` things taken ``k`` at a time, as a float (0 off the
    domain); ``repetition=True`` counts combinations with repetition.

    >>> round(float(comb(5, 2)), 9), round(float(comb(5, 2, repetition=True)), 9)
    (10.0, 15.0)
    """
    if exact:
        raise ValueError("scipy.special.comb: exact=True is not supported; use math.comb for exact values")
    N, k = real_inexact("comb", N, k)
    if repetition:
        return fnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    n, k = fnp.where(ok, N, 0.0), fnp.where(ok, k, 0.0)
    return fnp.where(ok, fnp.exp(lax.lgamma(n + 1) - lax.lgamma(k + 1) - lax.lgamma(n + 1 - k)), 0.0)


@internal_promotion
def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a static int).

    >>> round(float(multigammaln(2.0, 1)), 12)   # gammaln(2)
    0.0
    """
    d = concrete_int(d, "scipy.special.multigammaln: d")
    (a,) = real_inexact("multigammaln", a)
    # (in a's dtype, as JAX's: an np.float64 constant made float32 arguments float64)
    constant = np.asarray(0.25 * d * (d - 1) * np.log(np.pi), a.dtype)
    b = fnp.arange(d, dtype=a.dtype) / 2.0
    return fnp.sum(lax.lgamma(fnp.expand_dims(a, -1) - b), axis=-1) + constant


@custom_jvp
def _poch(z, m):
    return fnp.where(m == 0.0, 1.0, gamma(z + m) / gamma(z))


_poch.defjvps(
    lambda tz, ans, z, m: tz * (lax.digamma(z + m) - lax.digamma(z)) * ans,
    lambda tm, ans, z, m: tm * lax.digamma(z + m) * ans,
)


def poch(z, m):
    """The Pochhammer symbol (rising factorial) ``Gamma(z + m) / Gamma(z)``.

    >>> round(float(poch(2.0, 3.0)), 9)   # 2 * 3 * 4
    24.0
    """
    return call_custom(_poch, *real_inexact("poch", z, m))


# Bernoulli-number coefficients (2k)! / B_2k of the Euler-Maclaurin expansion of zeta.
_BERNOULLI_COEFS = np.array([
    12, -720, 30240, -1209600, 47900160, -1307674368000 / 691, 74724249600,
    -10670622842880000 / 3617, 5109094217170944000 / 43867, -802857662698291200000 / 174611,
    14101100039391805440000 / 77683, -1693824136731743669452800000 / 236364091,
    186134520519971831808000000 / 657931, -37893265687455865519472640000000 / 3392780147,
    759790291646040068357842010112000000 / 1723168255201,
    -134196726836183700385281186201600000000 / 7709321041217,
])  # fmt: skip


def _zeta_series(s, a):
    """The Euler-Maclaurin expansion of ``zeta(s, a)`` (differentiable in both arguments)."""
    dtype = np.dtype(fnp.result_type(a)).type
    n = m = 8 if fnp.result_type(a) == np.float32 else 16
    s_, a_ = fnp.expand_dims(s, -1), fnp.expand_dims(a, -1)
    k = np.arange(n, dtype=dtype)
    head = fnp.sum((a_ + k) ** (-s_), -1)
    integral = (a + n) ** (1.0 - s) / (s - 1.0)
    t0 = (a + n) ** (-s)
    ms = np.arange(2 * m, dtype=dtype)
    t1 = fnp.cumprod((s_ + ms) / (a_ + n), -1)[..., ::2]
    t1 = fnp.clip(t1, max=float(fnp.finfo(dtype).max))
    t1 = t1 / _BERNOULLI_COEFS[: t1.shape[-1]].astype(dtype)
    return head + integral + t0 * (0.5 + t1.sum(-1))


@custom_jvp
def _zeta(x, q):
    return lax.zeta(x, q)


@_zeta.defjvp
def _zeta_jvp(primals, tangents):
    _, tangent = api.jvp(_zeta_series, primals, tangents)
    return _zeta(*primals), tangent


def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x``; differentiable in both arguments (the
    derivative comes from the Euler-Maclaurin series, as in JAX). ``q`` is required: the Riemann
    zeta function is ``zeta(x, 1.0)``.

    >>> round(float(zeta(2.0, 1.0)), 12)   # pi ** 2 / 6
    1.644934066848
    """
    if q is None:  # (JAX's type and words, then funcgrad's hint)
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to compute the Hurwitz Zeta function. "
            "(scipy.special.zeta(x, 1.0) is the Riemann zeta function.)"
        )
    return call_custom(_zeta, *real_inexact("zeta", x, q))


def bernoulli(n: int):
    """The Bernoulli numbers ``B_0 ... B_n`` (a static ``n``), with ``B_1 = -1/2``.

    >>> [round(v, 12) for v in bernoulli(4).tolist()]
    [1.0, -0.5, 0.166666666667, 0.0, -0.033333333333]
    """
    n = concrete_int(n, "scipy.special.bernoulli: n")
    if n < 0:
        raise ValueError(f"scipy.special.bernoulli: n must be a non-negative integer, got {n}")
    # B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^2k, with zeta(2k) from SciPy (a host constant:
    # n is static); odd B_k vanish beyond B_1. JAX truncates the zeta sum at 49 terms (1e-7 error).
    bn = np.zeros(n + 1)
    bn[: min(n, 2) + 1] = [1.0, -0.5, 1.0 / 6.0][: min(n, 2) + 1]
    if n >= 4:
        m = np.arange(4, n + 1, 2, dtype=np.float64)
        q1 = 1.0 / np.pi**2 * np.cumprod(-(m - 1) * m / 4 / np.pi**2)
        bn[4::2] = q1 * scipy.special.zeta(m)
    return fnp.asarray(bn)
