"""``funcgrad.scipy.special``: exponential integrals (``expi``, ``exp1``, ``expn``), the sine and
cosine integrals ``sici`` and Spence's function (the dilogarithm).

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and the kernel's ``custom_jvp``.

The approximations are Cephes' (through JAX's ``jax/_src/scipy/special.py``, Apache-2.0): rational
functions on intervals of doubling length for ``Ei``, the power series, continued fraction and
asymptotic expansion of ``E_n``, Cephes' ``sici`` and ``spence``. The series and continued fraction
of ``E_n`` are masked loops (``masked_while``): one ``while_loop`` over all elements that stops when
every element has converged. At ``x == 0`` the values are SciPy's (``expn(n, 0) = 1 / (n - 1)``,
``expi(0) = -inf``), where JAX's differ.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.jitting import library_jit
from funcgrad.numpy._core import call_custom
from funcgrad.scipy.special._elementary import custom_jvp, real_inexact

__all__ = ["exp1", "expi", "expn", "sici", "spence"]


def masked_while(going, body, state, enabled):
    """Iterate ``state = body(state)`` elementwise while ``going(state)`` holds, freezing each
    element (``where``) once it stops or where ``enabled`` is False; one loop for all elements.
    ``state`` is a tuple of arrays of one shape; returns the final state."""

    def cond(carry):
        return fnp.any(carry[0])

    def step(carry):
        active, *vals = carry
        new = body(tuple(vals))
        vals = tuple(fnp.where(active, n, o) for n, o in zip(new, vals))
        return (active & going(vals), *vals)

    out = lax.while_loop(cond, step, (enabled & going(state), *state))
    return out[1:]


_E1_A = [
    -5.350447357812543,
    218.50491688166133,
    -4176.572384826693,
    55411.76756393557,
    -331338.13311781443,
    1592627.1633849454,
]
_E1_B = [
    1.0,
    -52.505479591128626,
    1259.6161867867906,
    -17565.495819735348,
    149306.2117002726,
    -729494.9239640528,
    1592627.1633849454,
]
_E2_A = [
    0.019818085032596897,
    -1.2716456259849176,
    -2.0881603356812284,
    2.7555445091879367,
    -0.44095070487016,
    0.046656238059358916,
    -0.0015450426796734852,
    7.059980605299618e-05,
]
_E2_B = [
    1.0,
    1.4764986709149215,
    0.5629177174822436,
    0.16990178978793072,
    0.02291647179034212,
    0.0044501504397287525,
    0.00017274396122065214,
    3.953167195549672e-05,
]
_E3_A = [
    -1.3732153758712087,
    -0.7084559133740839,
    1.580806855547941,
    -0.2601500427425623,
    0.029946746941137137,
    -0.001038086040188744,
    4.371064420753005e-05,
    2.141783679522603e-06,
]
_E3_B = [
    1.0,
    0.8585231423622028,
    0.4483285822873995,
    0.07687932158124476,
    0.024498682410218877,
    0.0008832165941927797,
    0.00045909522995113536,
    -4.729848351866523e-06,
    2.66519553739071e-06,
]
_E4_A = [
    -2.1069346016919166,
    1.7327338696646881,
    -0.2423619178935842,
    0.02322724180937566,
    0.00023728804404931798,
    -8.343219561192553e-05,
    1.3634087956052505e-05,
    -3.655412321999254e-07,
    1.4649417339759612e-08,
    6.17640786371036e-10,
]
_E4_B = [
    1.0,
    -0.2298062239901678,
    0.11050770414740378,
    -0.015665429666307924,
    0.002761106850817353,
    -0.00020891480122840484,
    1.7085289388076754e-05,
    -4.4593117963566865e-07,
    1.3946349303538475e-08,
    6.150865933977338e-10,
]
_E5_A = [
    -0.24581193676740204,
    -0.14833822533220778,
    0.07248291795735552,
    -0.013483156873809405,
    0.001342775069788637,
    -7.942465637159712e-05,
    2.644179518984236e-06,
    -4.239473659313765e-08,
]
_E5_B = [
    1.0,
    -0.10442259084438711,
    -0.26764531281014026,
    0.09695000254621984,
    -0.01601745692712991,
    0.001496414899205908,
    -8.462452563778485e-05,
    2.7289384034767266e-06,
    -4.239462431819542e-08,
]
_E6_A = [
    0.12125611181054567,
    -0.5823133179043894,
    0.2348887314557017,
    -0.030400343181132484,
    0.0015100821468651906,
    -2.5231370954995714e-05,
]
_E6_B = [
    1.0,
    -1.002252150365854,
    0.2928709694872224,
    -0.03337004338674008,
    0.0015605448811273888,
    -2.5231370936032347e-05,
]
_E7_A = [
    -0.7657847078286127,
    0.6886192415566705,
    -0.2132598113545206,
    0.033461075523841935,
    -0.003076541477344756,
    0.00017471193164549074,
    -6.1037116822741705e-06,
    1.218032765428652e-07,
    -1.0860761027932903e-09,
]
_E7_B = [
    1.0,
    -1.8888028686623086,
    1.066691687211409,
    -0.27519159823063805,
    0.039308526882338234,
    -0.003414684558602365,
    0.00018668443707035555,
    -6.345146083130515e-06,
    1.239754287483207e-07,
    -1.0860761027931265e-09,
]
_SI_N = [
    -8.391678279103039e-11,
    4.625917144270128e-08,
    -9.757593038436328e-06,
    0.0009769454381704354,
    -0.04134703162294066,
    1.0,
]
_SI_D = [
    2.0326926619595193e-12,
    1.279978911799433e-09,
    4.418278428012189e-07,
    9.964121220438756e-05,
    0.01420852393261499,
    1.0,
]
_CI_N = [
    2.0252400238910228e-11,
    -1.3524950491579076e-08,
    3.593250514199931e-06,
    -0.0004740072068734079,
    0.028915965260755523,
    -1.0,
]
_CI_D = [
    4.077460400618806e-12,
    3.067809975818878e-09,
    1.2321035568588342e-06,
    0.00031744202477503275,
    0.051002805623644606,
    4.0,
]
_FN4 = [
    4.236128628922166,
    5.4593771716181285,
    1.6208328770153833,
    0.16700661183132304,
    0.006810201324725182,
    0.00010893658065032867,
    5.489002234213736e-07,
]
_FD4 = [
    1.0,
    8.16496634205391,
    7.308288225055645,
    1.867922579501842,
    0.1787920529631499,
    0.007017106683227897,
    0.00011003435715391573,
    5.489002527562557e-07,
]
_GN4 = [
    0.08710016989731142,
    0.6113791099522193,
    0.3971802963923375,
    0.07485277376284691,
    0.005388686814621773,
    0.00016199979459893403,
    1.9796387414096365e-06,
    7.825790407440903e-09,
]
_GD4 = [
    1.0,
    1.6440220241335535,
    0.666296701268988,
    0.09887717612776888,
    0.006223963454417684,
    0.0001732210814741771,
    2.0265918208634397e-06,
    7.825792189335346e-09,
]
_FN8 = [
    0.4558808734704653,
    0.7137152741001467,
    0.16030015822231947,
    0.01160642294081244,
    0.00034955644244785906,
    4.8621543082645475e-06,
    3.200927900910049e-08,
    9.41779576128513e-11,
    9.70507110881952e-14,
]
_FD8 = [
    1.0,
    0.9174636118736841,
    0.17868554533207454,
    0.012225359477197129,
    0.00035869648188185157,
    4.924350643178815e-06,
    3.21956939101046e-08,
    9.437205903502767e-11,
    9.70507110881952e-14,
]
_GN8 = [
    0.6973599534432762,
    0.33041097930563207,
    0.03848787676499743,
    0.001717182390523479,
    3.4894116550227946e-05,
    3.471311670841167e-07,
    1.7040445278204452e-09,
    3.859459254302766e-12,
    3.1404009894636335e-15,
]
_GD8 = [
    1.0,
    1.6854889881101165,
    0.48785225869530496,
    0.04679131942596258,
    0.0019028442667439953,
    3.684755044425611e-05,
    3.5704322344374083e-07,
    1.7269374896631615e-09,
    3.878301660239547e-12,
    3.1404009894636335e-15,
]
_SPENCE_A = [
    4.6512858607399003e-05,
    0.007315890452380947,
    0.13384763957830903,
    0.8796913117545303,
    2.7114985119655346,
    4.256971560081218,
    3.297713409852251,
    1.0,
]
_SPENCE_B = [
    0.0006909904889125533,
    0.02540437639325444,
    0.2829748606025681,
    1.4117259775183106,
    3.6380053334513707,
    5.03278880143317,
    3.547713409852251,
    1.0,
]


_E_AB = [
    (_E1_A, _E1_B),
    (_E2_A, _E2_B),
    (_E3_A, _E3_B),
    (_E4_A, _E4_B),
    (_E5_A, _E5_B),
    (_E6_A, _E6_B),
    (_E7_A, _E7_B),
]


def _poly(c, x):
    return fnp.polyval(np.array(c, x.dtype), x)


def _expi_pos(x):
    """Ei(x) for x > 0: rational approximations on (0, 2], (2, 4], ..., (32, 64], then the
    asymptotic form beyond (Cephes ``expi``)."""
    pieces = []
    a, b = _E_AB[0]
    pieces.append(x * _poly(a, x) / _poly(b, x) + np.euler_gamma + fnp.log(x))
    for a, b in _E_AB[1:]:
        w = 1.0 / x
        f = w * (_poly(a, w) / _poly(b, w)) + 1.0
        pieces.append(fnp.exp(x) * w * f)
    conds = [(x > 0) & (x <= 2)] + [(x > 2.0**i) & (x <= 2.0 ** (i + 1)) for i in range(1, 6)]
    out = pieces[-1]
    for cond, piece in zip(reversed(conds), reversed(pieces[:-1])):
        out = fnp.where(cond, piece, out)
    return out


# Jitted inside the custom_jvp, as JAX's custom_jvp(jit(expi)) (NOTE: [special functions JAX jits]).
@custom_jvp
@library_jit
def _expi(x):
    safe_pos = fnp.where(x > 0, x, 1.0)
    safe_neg = fnp.where(x < 0, -x, 1.0)
    pos = _expi_pos(safe_pos)
    neg = -_expn_impl(fnp.ones_like(x), safe_neg)
    out = fnp.where(x > 0, pos, neg)
    return fnp.where(x == 0, -np.inf, fnp.where(fnp.isnan(x), np.nan, out))


_expi.defjvps(lambda t, ans, x: t * fnp.exp(x) / x)


def expi(x):
    """The exponential integral ``Ei(x) = -PV integral_{-x}^inf exp(-t)/t dt``.

    >>> round(float(expi(1.0)), 12)
    1.895117816356
    """
    (x,) = real_inexact("expi", x)
    return call_custom(_expi, x)


# ----------------------------------------------------------------------------------------------
# E_n


def _expn_series(x, n, enabled):
    """``E_n(x)`` for ``x <= 1``: the power series (Cephes ``expn``, n >= 1)."""
    eps = float(fnp.finfo(x.dtype).eps)
    # psi(n) = -gamma + sum_{i<n} 1/i, accumulated elementwise up to each n.
    psi0 = -np.euler_gamma - fnp.log(x)

    def psi_body(state):
        i, psi = state
        return i + 1.0, psi + 1.0 / i

    _, psi = masked_while(lambda s: s[0] < n, psi_body, (fnp.ones_like(x), psi0), enabled)
    n1 = fnp.where(n == 1, 2.0, n)
    z = -x
    init = (
        fnp.zeros_like(x),
        fnp.ones_like(x),
        1.0 - n,
        fnp.where(n == 1, 0.0, 1.0 / (1.0 - n1)),
        fnp.full_like(x, np.inf),
    )

    def body(state):
        xk, yk, pk, ans, _ = state
        xk = xk + 1.0
        yk = yk * z / xk
        pk = pk + 1.0
        ans = ans + fnp.where(pk != 0, yk / pk, 0.0)
        t = fnp.where(ans != 0, fnp.abs(yk / ans), 1.0)
        return xk, yk, pk, ans, t

    _, _, _, ans, _ = masked_while(lambda s: s[4] > eps, body, init, enabled & (x > 0))
    return z ** (n - 1.0) * psi / fnp.exp(lax.lgamma(n)) - ans


def _expn_fraction(x, n, enabled):
    """``E_n(x)`` for ``x > 1``: the continued fraction (Cephes ``expn``)."""
    big = 1.44115188075855872e17
    eps = float(fnp.finfo(x.dtype).eps)
    one = fnp.ones_like(x)
    init = (one, one, x, one, x + n, 1.0 / (x + n), fnp.full_like(x, np.inf), fnp.zeros_like(x))

    def body(state):
        k, pkm2, qkm2, pkm1, qkm1, ans, _, r = state
        k = k + 1.0
        odd = fnp.fmod(k, 2.0) == 1.0
        yk = fnp.where(odd, 1.0, x)
        xk = fnp.where(odd, n + (k - 1.0) / 2.0, k / 2.0)
        pk = pkm1 * yk + pkm2 * xk
        qk = qkm1 * yk + qkm2 * xk
        nz = qk != 0
        r = fnp.where(nz, pk / qk, r)
        t = fnp.where(nz, fnp.abs((ans - r) / r), 1.0)
        ans = fnp.where(nz, r, ans)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        rescale = fnp.abs(pk) > big
        pkm2, pkm1, qkm2, qkm1 = (fnp.where(rescale, v / big, v) for v in (pkm2, pkm1, qkm2, qkm1))
        return k, pkm2, qkm2, pkm1, qkm1, ans, t, r

    out = masked_while(lambda s: s[6] > eps, body, init, enabled)
    return out[5] * fnp.exp(-x)


def _expn_asymptotic(x, n):
    """``E_n(x)`` for large ``n`` (Cephes ``expn``)."""
    xk = x + n
    yk = 1.0 / (xk * xk)
    ans = yk * n * (6.0 * x * x - 8.0 * n * x + n * n)
    ans = yk * (ans + n * (n - 2.0 * x))
    ans = yk * (ans + n)
    return (ans + 1.0) * fnp.exp(-x) / xk


def _expn_impl(n, x):
    nan = (n < 0) | (x < 0) | fnp.isnan(x) | fnp.isnan(n)
    large_n = n >= 5000
    fraction = (x > 1) & ~large_n & ~nan
    series = (x <= 1) & (x > 0) & (n >= 1) & ~large_n & ~nan
    safe_x = fnp.where(series | fraction, x, 1.0)
    safe_n = fnp.where(series | fraction, n, 1.0)
    out = fnp.where(fraction, _expn_fraction(safe_x, safe_n, fraction), _expn_series(safe_x, safe_n, series))
    out = fnp.where(large_n, _expn_asymptotic(x, n), out)
    out = fnp.where((x == 0) & (n >= 2), 1.0 / fnp.maximum(n - 1.0, 1.0), out)
    out = fnp.where((x == 0) & (n < 2), np.inf, out)
    # E_0 = exp(-x)/x after the zeros, as JAX's piecewise (its later condition wins): -inf at -0.0,
    # and NaN at inf (JAX's continued fraction there); exp1's derivative is -E_0
    e0 = fnp.where(x == np.inf, np.nan, fnp.exp(-x) / x)
    out = fnp.where((n == 0) & (x >= 0), e0, out)
    # 0 < n < 1 with 0 < x <= 1 has no branch above (the series needs n >= 1): NaN there, as jax,
    # not the disabled series' leftover value (issue 33).
    uncovered = ~(fraction | series | large_n | (n == 0) | (x == 0))
    return fnp.where(nan | uncovered, np.nan, out)


# The primal is jitted inside the custom_jvp, as JAX's (custom_jvp(vectorize(jit(expn)))): n, a
# nondiff argument, stays a concrete value there when the call is eager (NOTE: [special functions
# JAX jits]).
# n is an ordinary argument whose tangent is ignored (JAX's nondiff_argnums=(0,) behaves so for a
# traced n): a nondiff n, an array traced under an enclosing jit, was closed over by the staged
# rule, which then read a dead tracer when the jit's program was differentiated later
# (grad(jit(expn)) raised UnexpectedTracerError; fuzzer find).
_expn = custom_jvp(library_jit(_expn_impl))


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, t) = primals, tangents
    # d/dx E_n = -E_{n-1}; for n = 0 (E_0 = exp(-x)/x) it is -exp(-x)(1 + x)/x**2 (JAX gives NaN).
    e0_dx = -fnp.exp(-x) * (1.0 + x) / (x * x)
    return _expn(n, x), t * fnp.where(n == 0, e0_dx, -_expn(fnp.maximum(n - 1.0, 0.0), x))


def expn(n, x):
    """The generalized exponential integral ``E_n(x) = integral_1^inf exp(-x t) / t**n dt``
    (differentiable in ``x``: ``-E_{n-1}(x)``).

    >>> round(float(expn(2, 1.0)), 12)
    0.148495506776
    """
    n_arr, x = real_inexact("expn", n, x, lists="stack", shapes_as_lax=False)
    n_arr, x = fnp.broadcast_arrays(n_arr, x)
    # Never weakly typed, as JAX's (its series' constants are typed), whatever n and x are.
    return call_custom(_expn, n_arr, x).astype(x.dtype)


def exp1(x):
    """The exponential integral ``E_1(x) = integral_x^inf exp(-t)/t dt``.

    >>> round(float(exp1(1.0)), 12)
    0.219383934396
    """
    (x,) = real_inexact("exp1", x)
    return expn(1, x)  # (JAX's: the jitted expn, one compiled program eagerly)


# ----------------------------------------------------------------------------------------------
# Sine and cosine integrals (Cephes sici)


def _sici_series(x):
    t = x * x
    si = x * _poly(_SI_N, t) / _poly(_SI_D, t)
    ci = np.euler_gamma + fnp.log(x) + t * _poly(_CI_N, t) / _poly(_CI_D, t)
    return fnp.where(x == 0, 0.0, si), fnp.where(x == 0, -np.inf, ci)


def _sici_asymptotic(x):
    s, c = fnp.sin(x), fnp.cos(x)
    z = 1.0 / (x * x)
    f4 = _poly(_FN4, z) / (x * _poly(_FD4, z))
    g4 = z * _poly(_GN4, z) / _poly(_GD4, z)
    f8 = _poly(_FN8, z) / (x * _poly(_FD8, z))
    g8 = z * _poly(_GN8, z) / _poly(_GD8, z)
    f, g = fnp.where(x < 8.0, f4, f8), fnp.where(x < 8.0, g4, g8)
    return np.pi / 2 - f * c - g * s, f * s - g * c


@custom_jvp
@library_jit  # (as _expi)
def _sici(x):
    ax = fnp.abs(x)
    small = ax <= 4
    mid = (ax > 4) & (ax <= 1e9)
    si_s, ci_s = _sici_series(fnp.where(small, ax, 1.0))
    si_a, ci_a = _sici_asymptotic(fnp.where(mid, ax, 5.0))
    safe_big = fnp.where(small | mid, 1e10, ax)
    si_b = fnp.where(fnp.isposinf(ax), np.pi / 2, np.pi / 2 - fnp.cos(safe_big) / safe_big)
    ci_b = fnp.where(fnp.isposinf(ax), 0.0, fnp.sin(safe_big) / safe_big)
    si = fnp.where(small, si_s, fnp.where(mid, si_a, si_b))
    ci = fnp.where(small, ci_s, fnp.where(mid, ci_a, ci_b))
    return fnp.sign(x) * si, fnp.where(fnp.isneginf(x), np.nan, ci)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _sici(x), (fnp.sinc(x / np.pi) * t, fnp.cos(x) / x * t)


def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))``.

    >>> si, ci = sici(1.0)
    >>> round(float(si), 12), round(float(ci), 12)
    (0.946083070367, 0.337403922901)
    """
    (x,) = real_inexact("sici", x)
    return call_custom(_sici, x)


# ----------------------------------------------------------------------------------------------
# Spence's function (Cephes spence)


def _spence_calc(x):
    x2 = x > 2.0
    x = fnp.where(x2, 1.0 / x, x)
    x15 = x > 1.5
    x05 = x < 0.5
    x2 = x2 | x15
    w = fnp.where(x15, 1.0 / x - 1.0, fnp.where(x05, -x, x - 1.0))
    y = -w * _poly(_SPENCE_A, w) / _poly(_SPENCE_B, w)
    y = fnp.where(x05, np.pi**2 / 6.0 - fnp.log(x) * fnp.log(1.0 - x) - y, y)
    return fnp.where(x2, -0.5 * fnp.log(x) ** 2 - y, y)


@custom_jvp
def _spence(x):
    safe = fnp.where((x <= 0) | (x == 1.0), 0.5, x)
    out = _spence_calc(safe)
    out = fnp.where(x == 0.0, np.pi**2 / 6, fnp.where(x == 1.0, 0.0, out))
    return fnp.where(x < 0.0, np.nan, out)


# d/dx spence = log(x) / (1 - x); 0 at x = 1 and for x <= 0, where JAX's piecewise takes a constant
# branch (0 at 1, NaN below 0, pi**2/6 at 0: fuzzer, seed 13017, gave NaN and -inf; the limit -1 at
# 1 was jax's 0 in every mode: the progz probe). JAX differentiates the branches: its forward mode
# gives log(x) / (1 - x) for 1 < x <= 2, its reverse mode NaN there (the unselected log(1 - x)
# branch poisons the where's transpose): funcgrad gives the forward mode's value in both (the
# divergence table's jax-spence-reverse-derivative).
_spence.defjvps(
    lambda t, ans, x: (
        t
        * fnp.where(
            x <= 0.0,
            0.0,
            fnp.where(
                x == 1.0, 0.0, fnp.log(fnp.where(x <= 0.0, 1.0, x)) / (1.0 - fnp.where(x == 1.0, 0.0, x))
            ),
        )
    )
)


def spence(x):
    """Spence's function ``integral_1^x log(t) / (1 - t) dt`` (SciPy's convention; NaN for x < 0).

    >>> round(float(spence(0.5)), 12)   # pi**2/12 - log(2)**2/2
    0.582240526465
    """
    x = fnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"scipy.special.spence: x.dtype={x.dtype} is not supported (float32 or float64 only)")
    return call_custom(_spence, x)
