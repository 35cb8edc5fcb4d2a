"""``funcgrad.lax`` special functions: the incomplete gamma and beta functions, the Hurwitz zeta
function and the scaled Bessel functions ``i0e``/``i1e``, with ``jax.lax``'s names and derivatives.

Layer: surface. Imports the kernel (``custom_jvp``), the primitive catalog (``primitives.special``),
``funcgrad.numpy`` and the other ``funcgrad.lax`` modules.

``zeta``, ``bessel_i0e`` and ``bessel_i1e`` are primitives (XLA has kernels for them). The
incomplete gamma and beta functions have no XLA kernel: as in JAX (which ports them from XLA's
``math.cc``), they are loops of elementwise operations -- the series and the continued fraction of
the incomplete gamma function, the Lentz-Thompson-Barnett continued fraction of the incomplete
beta function -- each a ``while_loop`` over all elements that stops when every element has
converged, so they run eagerly, batch under ``vmap`` and compile under ``jit`` as they are.

Derivatives are JAX's: ``igamma``/``igammac`` in both arguments (``d/da`` is ``igamma_grad_a``, the
series/continued fraction differentiated alongside), ``betainc`` in ``x`` only (JAX refuses ``a`` and
``b``), ``zeta`` in ``q`` only, ``random_gamma_grad`` (the derivative of a Gamma(a) sample with
respect to ``a`` at fixed CDF, used by ``random.gamma``'s reparameterised gradient) has none.
"""

from __future__ import annotations

import enum

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._control_flow import while_loop
from funcgrad.custom_derivatives import refuse_jvp
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.custom_derivatives import SymbolicZero, custom_jvp
from funcgrad.lax.ops import _bind, _operands, digamma, lgamma
from funcgrad.numpy._core import call_custom
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import special as sp

__all__ = [
    "bessel_i0e",
    "bessel_i1e",
    "betainc",
    "igamma",
    "igamma_grad_a",
    "igammac",
    "random_gamma_grad",
    "zeta",
]


def zeta(x, q):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x`` (``lax.zeta``); not differentiable, as JAX's
    (``scipy.special.zeta`` is).

    >>> import numpy as np
    >>> round(float(zeta(np.array(2.0), np.array(1.0))), 12)  # pi ** 2 / 6
    1.644934066848
    """
    return _bind(sp.zeta_p, "zeta", *_float_operands("zeta", x, q))


def bessel_i0e(x):
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0.

    >>> import numpy as np
    >>> round(float(bessel_i0e(np.array(1.0))), 12)
    0.465759607594
    """
    return _bind(sp.bessel_i0e_p, "bessel_i0e", *_float_operands("bessel_i0e", x))


def bessel_i1e(x):
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1.

    >>> import numpy as np
    >>> round(float(bessel_i1e(np.array(1.0))), 12)
    0.20791041535
    """
    return _bind(sp.bessel_i1e_p, "bessel_i1e", *_float_operands("bessel_i1e", x))


def _float_operands(name, *args):
    """lax's operand rules (one dtype, no promotion, size-1 dimensions broadcast as jax 0.10's
    n-ary operations), a floating dtype, one broadcast shape."""
    args = _operands(name, *args, ones=True)
    dtype = fnp.result_type(args[0])
    if not fnp.issubdtype(dtype, fnp.floating):
        raise TypeError(f"lax.{name} requires floating-point arguments, got {dtype.name}")
    return fnp.broadcast_arrays(*args) if len(args) > 1 else args


def _weak_as_operands(out, operands):
    """``out`` weak where every operand is, as the result of a JAX n-ary operation (these functions'
    loops and conversions made a strong value of weak operands)."""
    if all(core.get_aval(v).weak_type for v in operands) and not core.get_aval(out).weak_type:
        return ew.convert_element_type(out, core.get_aval(out).dtype, weak_type=True)
    return out


# ----------------------------------------------------------------------------------------------
# The incomplete gamma function (ported from JAX, itself from XLA's math.cc)


class _Mode(enum.Enum):
    VALUE = 1
    DERIVATIVE = 2
    SAMPLE_DERIVATIVE = 3


def _eps(x):
    return float(np.finfo(fnp.result_type(x)).eps)


def _igamma_series(ax, x, a, enabled, mode):
    eps = _eps(x)

    def body(vals):
        enabled, r, c, ans, x, dc_da, dans_da = vals
        r = r + 1.0
        dc_da = dc_da * (x / r) - (c * x) / (r * r)
        dans_da = dans_da + dc_da
        c = c * (x / r)
        ans = ans + c
        if mode == _Mode.VALUE:
            going = enabled & (c / ans > eps)
        else:
            going = enabled & (fnp.abs(dc_da / dans_da) > eps)
        new = (r, c, ans, x, dc_da, dans_da)
        return (going, *(fnp.where(enabled, n, o) for n, o in zip(new, vals[1:])))

    one, zero = fnp.ones_like(a), fnp.zeros_like(a)
    vals = while_loop(lambda v: fnp.any(v[0]), body, (enabled, a, one, one, x, zero, zero))
    ans, dans_da = vals[3], vals[6]
    if mode == _Mode.VALUE:
        return ans * ax / a
    dlogax_da = fnp.log(x) - digamma(a + 1.0)
    if mode == _Mode.DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _igammac_continued_fraction(ax, x, a, enabled, mode):
    eps = _eps(x)

    def body(vals):
        (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da,
         dans_da) = vals  # fmt: skip
        c = c + 1.0
        y = y + 1.0
        z = z + 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        r = pk / qk
        t = fnp.where(nonzero, fnp.abs((ans - r) / r), 1.0)
        ans = fnp.where(nonzero, r, ans)
        dpk_da = dpkm1_da * z - pkm1 - dpkm2_da * yc + pkm2 * c
        dqk_da = dqkm1_da * z - qkm1 - dqkm2_da * yc + qkm2 * c
        dans_da_new = fnp.where(nonzero, (dpk_da - ans * dqk_da) / qk, dans_da)
        grad_change = fnp.where(nonzero, fnp.abs(dans_da_new - dans_da), 1.0)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = fnp.abs(pk) > 1.0 / eps
        pkm2, pkm1, qkm2, qkm1, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = (
            fnp.where(rescale, v * eps, v)
            for v in (pkm2, pkm1, qkm2, qkm1, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da)
        )
        going = enabled & ((t > eps) if mode == _Mode.VALUE else (grad_change > eps))
        new = (ans, t, y, z)
        rest = (pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da_new)
        return (
            going,
            *(fnp.where(enabled, n, o) for n, o in zip(new, vals[1:5])),
            c,
            *(fnp.where(enabled, n, o) for n, o in zip(rest, vals[6:])),
        )

    y = 1.0 - a
    z = x + y + 1.0
    c = fnp.zeros((), fnp.result_type(x))  # one iteration count for all elements
    pkm2, qkm2 = fnp.ones_like(x), x
    pkm1 = x + 1.0
    qkm1 = z * x
    ans = pkm1 / qkm1
    zero = fnp.zeros_like(x)
    dqkm1_da = -x
    dans_da = (zero - ans * dqkm1_da) / qkm1
    init = (
        enabled,
        ans,
        fnp.ones_like(x),
        y,
        z,
        c,
        pkm1,
        qkm1,
        pkm2,
        qkm2,
        zero,
        zero,
        zero,
        dqkm1_da,
        dans_da,
    )
    vals = while_loop(lambda v: (v[5] < 2000.0) & fnp.any(v[0]), body, init)
    ans = vals[1]
    if mode == _Mode.VALUE:
        return ans * ax
    dans_da = vals[14]
    dlogax_da = fnp.log(x) - digamma(a)
    if mode == _Mode.DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da)
    return -(dans_da + ans * dlogax_da) * x


def _log_ax(a, x):
    """``exp(a log x - x - lgamma(a))`` and whether it underflows."""
    ax = a * fnp.log(x) - x - lgamma(a)
    underflow = ax < -float(np.log(np.finfo(fnp.result_type(a)).max))
    return fnp.exp(ax), underflow


def _with_work_dtype(impl, a, x):
    """Run ``impl`` in float32 for half-precision inputs (as JAX does: the loops need float32)."""
    dtype = fnp.result_type(a)
    if dtype in (np.float32, np.float64):
        return impl(a, x)
    return impl(a.astype(np.float32), x.astype(np.float32)).astype(dtype)


def _igamma_value(a, x):
    is_nan = fnp.isnan(a) | fnp.isnan(x)
    x_inf = x == np.inf
    x_zero = x == 0
    domain_error = (x < 0) | (a < 0) | ((a == 0) & x_zero) | is_nan
    use_igammac = (x >= 1) & (x > a)
    ax, underflow = _log_ax(a, x)
    enabled = ~(x_zero | domain_error | underflow | x_inf)
    out = fnp.where(
        use_igammac,
        1.0 - _igammac_continued_fraction(ax, x, a, enabled & use_igammac, _Mode.VALUE),
        _igamma_series(ax, x, a, enabled & ~use_igammac, _Mode.VALUE),
    )
    out = fnp.where(x_zero, 0.0, out)
    out = fnp.where(x_inf, 1.0, out)
    return fnp.where(domain_error, np.nan, out)


def _igammac_value(a, x):
    is_nan = fnp.isnan(a) | fnp.isnan(x)
    a_zero, x_zero = a == 0, x == 0
    x_inf = x == np.inf
    domain_error = (x < 0) | (a < 0) | (a_zero & x_zero) | is_nan
    use_igamma = (x < 1) | (x < a)
    ax, underflow = _log_ax(a, x)
    enabled = ~(domain_error | underflow | x_inf | a_zero)
    series = _igamma_series(ax, x, a, enabled & use_igamma, _Mode.VALUE)
    fraction = _igammac_continued_fraction(ax, x, a, enabled & ~use_igamma, _Mode.VALUE)
    out = fnp.where(use_igamma, 1.0 - series, fraction)
    out = fnp.where(x_inf | a_zero, 0.0, out)
    return fnp.where(domain_error, np.nan, out)


def _igamma_derivative(mode):
    def impl(a, x):
        is_nan = fnp.isnan(a) | fnp.isnan(x)
        x_zero = x == 0
        domain_error = (x < 0) | (a <= 0)
        use_igammac = (x > 1) & (x > a)
        ax, underflow = _log_ax(a, x)
        enabled = ~(x_zero | domain_error | underflow | is_nan)
        out = fnp.where(
            use_igammac,
            -_igammac_continued_fraction(ax, x, a, enabled & use_igammac, mode),
            _igamma_series(ax, x, a, enabled & ~use_igammac, mode),
        )
        out = fnp.where(x_zero, 0.0, out)
        return fnp.where(domain_error | is_nan, np.nan, out)

    return impl


def _igamma_dx(a, x):
    return fnp.exp(-x + (a - 1.0) * fnp.log(x) - lgamma(a))


@custom_jvp
def _igamma(a, x):
    return _with_work_dtype(_igamma_value, a, x)


def _incomplete_gamma_jvp(fun, sign):
    """The JVP of ``fun`` (igamma, or igammac with ``sign`` -1), skipping a zero tangent's term as
    JAX's rule of the primitive does: ``a``'s term (``igamma_grad_a``, a while loop with no
    derivative of its own) is not computed for a constant ``a``, so grad(jvp(igamma(0.5, x))) is
    defined, as in JAX (it raised ReverseModeWhileLoopError)."""

    def jvp(primals, tangents):
        (a, x), (ta, tx) = primals, tangents
        out = fun(a, x)
        terms = []
        if type(ta) is not SymbolicZero:
            terms.append(ta * igamma_grad_a(a, x))
        if type(tx) is not SymbolicZero:
            terms.append(tx * _igamma_dx(a, x))
        if not terms:
            return out, SymbolicZero.from_primal_value(out)
        total = terms[0] if len(terms) == 1 else terms[0] + terms[1]
        return out, total if sign > 0 else -total

    return jvp


_igamma.defjvp(_incomplete_gamma_jvp(_igamma, 1), symbolic_zeros=True)


@custom_jvp
def _igammac(a, x):
    return _with_work_dtype(_igammac_value, a, x)


_igammac.defjvp(_incomplete_gamma_jvp(_igammac, -1), symbolic_zeros=True)


def igamma(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)`` (``lax.igamma``, SciPy's
    ``gammainc``); differentiable in ``a`` and ``x``.

    >>> import numpy as np
    >>> round(float(igamma(np.array(1.0), np.array(2.0))), 12)  # 1 - exp(-2)
    0.864664716763
    """
    operands = _float_operands("igamma", a, x)
    return _weak_as_operands(call_custom(_igamma, *operands), operands)


def igammac(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)`` (``lax.igammac``).

    >>> import numpy as np
    >>> round(float(igammac(np.array(1.0), np.array(2.0))), 12)  # exp(-2)
    0.135335283237
    """
    operands = _float_operands("igammac", a, x)
    return _weak_as_operands(call_custom(_igammac, *operands), operands)


def igamma_grad_a(a, x):
    """``d igamma(a, x) / da`` (``lax.igamma_grad_a``).

    >>> import numpy as np
    >>> round(float(igamma_grad_a(np.array(1.0), np.array(2.0))), 6)
    -0.220825
    """
    a, x = _float_operands("igamma_grad_a", a, x)
    return _weak_as_operands(call_custom(_igamma_grad_a, a, x), (a, x))


@custom_jvp
def _igamma_grad_a(a, x):
    return _with_work_dtype(_igamma_derivative(_Mode.DERIVATIVE), a, x)


# JAX's igamma_grad_a is a primitive without a JVP rule: differentiating it (igamma's second
# derivative in a, forward or reverse) raises; funcgrad's while loop would have computed one
refuse_jvp(_igamma_grad_a, "Differentiation rule for 'igamma_grad_a' not implemented")


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample ``x`` with respect to ``a`` at fixed CDF value,
    ``-(d igamma(a, x)/da) / (d igamma(a, x)/dx)`` (``lax.random_gamma_grad``; the reparameterised
    gradient of ``random.gamma``).

    >>> import numpy as np
    >>> round(float(random_gamma_grad(np.array(1.0), np.array(2.0))), 6)
    1.631691
    """
    a, x = _float_operands("random_gamma_grad", a, x)
    return _weak_as_operands(_with_work_dtype(_igamma_derivative(_Mode.SAMPLE_DERIVATIVE), a, x), (a, x))


# ----------------------------------------------------------------------------------------------
# The regularized incomplete beta function (ported from JAX / XLA's math.cc)


def _lentz(num_iterations, small, threshold, numerator, denominator, inputs):
    """The Lentz-Thompson-Barnett evaluation of a continued fraction."""

    def body(vals):
        it, _, c, d, h = vals
        a_n, b_n = numerator(it, *inputs), denominator(it, *inputs)
        c = b_n + a_n / c
        c = fnp.where(fnp.abs(c) < small, small, c)
        d = b_n + a_n * d
        d = fnp.where(fnp.abs(d) < small, small, d)
        d = 1.0 / d
        delta = c * d
        return it + 1, fnp.any(fnp.abs(delta - 1.0) >= threshold), c, d, h * delta

    b0 = denominator(0, *inputs)
    h = fnp.where(fnp.abs(b0) < small, small, b0)
    init = (fnp.asarray(1, _dt.default_int), fnp.asarray(True), h, fnp.zeros_like(h), h)
    return while_loop(lambda v: (v[0] < num_iterations) & v[1], body, init)[4]


def _betainc_value(a, b, x):
    dtype = fnp.result_type(a)
    shape = a.shape

    def numerator(it, a, b, x):
        it = fnp.broadcast_to(fnp.asarray(it, _dt.default_int), shape)
        m = (it - 1) // 2
        m_zero = m == 0
        m = m.astype(dtype)
        zero_num = -(a + b) * x / (a + 1.0)
        even = fnp.where(m_zero, zero_num, -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)))
        odd = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        return fnp.where(it == 1, 1.0, fnp.where(it % 2 == 0, even, odd))

    def denominator(it, a, b, x):
        it = fnp.broadcast_to(fnp.asarray(it, _dt.default_int), shape)
        return fnp.where(it == 0, fnp.zeros_like(x), fnp.ones_like(x))

    a_zero = (a == 0) | (b == np.inf)
    b_zero = (b == 0) | (a == np.inf)
    x_zero, x_one = x == 0, x == 1
    is_nan = fnp.isnan(a) | fnp.isnan(b) | fnp.isnan(x)
    result_zero = (b_zero & ~x_one) | (a_zero & x_zero)
    result_one = (a_zero & ~x_zero) | (b_zero & x_one)
    result_nan = (a < 0) | (b < 0) | (x < 0) | (x > 1) | (a_zero & b_zero) | is_nan
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); else use the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a) (DLMF 8.17.4, 8.17.23).
    fast = x < (a + 1.0) / (a + b + 2.0)
    a, b, x = fnp.where(fast, a, b), fnp.where(fast, b, a), fnp.where(fast, x, 1.0 - x)
    finfo = np.finfo(dtype)
    fraction = _lentz(200 if dtype == np.float32 else 600, float(finfo.eps / 2), float(finfo.eps / 2),
                      numerator, denominator, (a, b, x))  # fmt: skip
    lbeta_small_a = lgamma(b) - lgamma(a + b)
    lbeta = lgamma(a) + lbeta_small_a
    # a * Gamma(a) = Gamma(a + 1) -> 1 as a -> 0+: avoids dividing by a tiny a.
    factor = fnp.where(
        a < float(finfo.tiny * 2),
        fnp.exp(fnp.log1p(-x) * b - lbeta_small_a),
        fnp.exp(fnp.log(x) * a + fnp.log1p(-x) * b - lbeta) / a,
    )
    out = fraction * factor
    out = fnp.where(fast, out, 1.0 - out)
    out = fnp.where(result_zero, 0.0, out)
    out = fnp.where(result_one, 1.0, out)
    return fnp.where(result_nan, np.nan, out)


@custom_jvp
def _betainc(a, b, x):
    dtype = fnp.result_type(a)
    if dtype in (np.float32, np.float64):
        return _betainc_value(a, b, x)
    return _betainc_value(*(v.astype(np.float32) for v in (a, b, x))).astype(dtype)


def _betainc_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    if type(ta) is not SymbolicZero or type(tb) is not SymbolicZero:
        raise ValueError(  # (JAX's words first)
            "Betainc gradient with respect to a and b not supported. Only x is differentiable; wrap "
            "a and b in stop_gradient if they do not depend on the inputs."
        )
    out = _betainc(a, b, x)
    if type(tx) is SymbolicZero:
        return out, SymbolicZero.from_primal_value(out)
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    return out, tx * fnp.exp((b - 1.0) * fnp.log1p(-x) + (a - 1.0) * fnp.log(x) - lbeta)


_betainc.defjvp(_betainc_jvp, symbolic_zeros=True)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (``lax.betainc``); differentiable in
    ``x`` (JAX defines no derivative in ``a`` or ``b``).

    >>> import numpy as np
    >>> round(float(betainc(np.array(2.0), np.array(3.0), np.array(0.4))), 12)
    0.5248
    """
    operands = _float_operands("betainc", a, b, x)
    return _weak_as_operands(call_custom(_betainc, *operands), operands)
