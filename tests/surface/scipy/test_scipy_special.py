"""funcgrad.scipy.special and the lax special functions against SciPy: values (float64 and float32),
derivatives against finite differences (float64), vmap against a loop, jit against eager.

One table row per function: the arguments are drawn inside the domain where the function is smooth,
``diff`` names the arguments to differentiate (JAX's: ``betainc`` in ``x`` only, ``expn`` in ``x``,
...), ``order`` is 1 where the derivative rule runs a ``while_loop`` (reverse mode cannot
differentiate a loop twice, as in JAX).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.special as ss

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy import special as fs
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)


def U(lo, hi, n=6):
    return np.random.default_rng(abs(hash((lo, hi, n))) % 2**32).uniform(lo, hi, n)


# name, ours, reference, args, diff argnums, order, rtol (float64)
EXPI_X = np.array([-30.0, -3.0, -0.1, 0.3, 1.5, 3.0, 9.0, 20.0, 50.0, 90.0])

CASES = [
    ("gammaln", fs.gammaln, ss.gammaln, (U(0.2, 6),), (0,), 2, 1e-12),
    ("gamma", fs.gamma, ss.gamma, (U(-3.9, 5),), (0,), 2, 1e-11),
    ("gammasgn", fs.gammasgn, ss.gammasgn, (U(-3.9, 5),), (), 1, 0),
    ("loggamma", fs.loggamma, ss.loggamma, (U(0.2, 6),), (0,), 2, 1e-12),
    ("betaln", fs.betaln, ss.betaln, (U(0.2, 6), U(0.5, 20)), (0, 1), 2, 1e-12),
    ("betaln_large", fs.betaln, ss.betaln, (U(1, 6), U(1e3, 1e6)), (), 1, 1e-10),
    ("beta", fs.beta, ss.beta, (U(0.2, 3), U(0.5, 4)), (0, 1), 2, 1e-12),
    ("betainc", fs.betainc, ss.betainc, (U(0.2, 6), U(0.3, 8), U(0.01, 0.99)), (2,), 1, 1e-12),
    ("gammainc", fs.gammainc, ss.gammainc, (U(0.2, 8), U(0.05, 12)), (0, 1), 1, 1e-12),
    ("gammaincc", fs.gammaincc, ss.gammaincc, (U(0.2, 8), U(0.05, 12)), (0, 1), 1, 1e-12),
    ("digamma", fs.digamma, ss.digamma, (U(0.2, 6),), (0,), 2, 1e-12),
    ("factorial", fs.factorial, ss.factorial, (np.array([0.5, 1.0, 4.0, 7.5, 10.0]),), (0,), 2, 1e-12),
    ("comb", fs.comb, ss.comb, (np.array([5.0, 10.0, 7.5]), np.array([2.0, 3.0, 1.5])), (0, 1), 2, 1e-12),
    ("poch", fs.poch, ss.poch, (U(0.5, 4), U(0.2, 3)), (0, 1), 2, 1e-11),
    ("zeta", fs.zeta, ss.zeta, (U(1.5, 6), U(0.5, 4)), (0, 1), 1, 1e-12),
    ("erf", fs.erf, ss.erf, (U(-2, 2),), (0,), 2, 1e-12),
    ("erfc", fs.erfc, ss.erfc, (U(-2, 4),), (0,), 2, 1e-12),
    ("erfinv", fs.erfinv, ss.erfinv, (U(-0.9, 0.9),), (0,), 2, 1e-12),
    ("erfcx", fs.erfcx, ss.erfcx, (U(-2, 40),), (0,), 2, 1e-12),
    ("dawsn", fs.dawsn, ss.dawsn, (U(-9, 9, 12),), (0,), 2, 1e-13),
    ("ndtr", fs.ndtr, ss.ndtr, (U(-6, 6),), (0,), 2, 1e-12),
    ("ndtri", fs.ndtri, ss.ndtri, (np.array([1e-30, 1e-5, 0.1, 0.5, 0.9, 0.99999]),), (), 2, 1e-12),
    ("ndtri_inner", fs.ndtri, ss.ndtri, (U(0.02, 0.98),), (0,), 2, 1e-12),
    ("log_ndtr", fs.log_ndtr, ss.log_ndtr, (np.array([-40.0, -25.0, -3.0, 0.0, 4.0, 10.0]),), (0,), 2, 1e-11),
    ("fresnel", fs.fresnel, ss.fresnel, (U(-9, 9, 10),), (0,), 2, 1e-12),
    ("owens_t", fs.owens_t, ss.owens_t, (U(-3, 3), U(-3, 3)), (0, 1), 2, 1e-12),
    ("expit", fs.expit, ss.expit, (U(-5, 5),), (0,), 2, 1e-12),
    ("logit", fs.logit, ss.logit, (U(0.05, 0.95),), (0,), 2, 1e-12),
    ("xlogy", fs.xlogy, ss.xlogy, (U(-1, 2), U(0.1, 3)), (0, 1), 2, 1e-12),
    ("xlog1py", fs.xlog1py, ss.xlog1py, (U(-1, 2), U(-0.5, 3)), (0, 1), 2, 1e-12),
    ("entr", fs.entr, ss.entr, (U(0.05, 3),), (0,), 2, 1e-12),
    ("rel_entr", fs.rel_entr, ss.rel_entr, (U(0.3, 3), U(0.4, 3)), (0, 1), 2, 1e-12),
    ("kl_div", fs.kl_div, ss.kl_div, (U(0.3, 3), U(0.4, 3)), (0, 1), 2, 1e-12),
    ("boxcox", fs.boxcox, ss.boxcox, (U(0.2, 3), U(-1, 2)), (0, 1), 2, 1e-12),
    ("boxcox1p", fs.boxcox1p, ss.boxcox1p, (U(-0.5, 3), U(-1, 2)), (0, 1), 2, 1e-12),
    ("i0", fs.i0, ss.i0, (U(-10, 10),), (0,), 2, 1e-13),
    ("i0e", fs.i0e, ss.i0e, (U(-10, 10),), (0,), 2, 1e-13),
    ("i1", fs.i1, ss.i1, (U(-10, 10),), (0,), 2, 1e-13),
    ("i1e", fs.i1e, ss.i1e, (U(-10, 10),), (0,), 2, 1e-13),
    ("expi", fs.expi, ss.expi, (EXPI_X,), (0,), 1, 1e-13),
    ("exp1", fs.exp1, ss.exp1, (np.array([0.01, 0.5, 1.0, 1.5, 4.0, 30.0]),), (0,), 1, 1e-13),
    ("sici", fs.sici, ss.sici, (np.array([-20.0, -3.0, 0.5, 3.9, 4.1, 7.0, 9.0, 100.0]),), (0,), 2, 1e-13),
    ("spence", fs.spence, ss.spence, (np.array([0.1, 0.4, 0.7, 1.3, 1.7, 2.5, 10.0]),), (0,), 2, 1e-13),
    ("hyp1f1", fs.hyp1f1, ss.hyp1f1, (U(0.2, 3), U(0.5, 4), U(-3, 5)), (0, 1, 2), 1, 1e-11),
    ("hyp1f1_large", fs.hyp1f1, ss.hyp1f1, (U(0.2, 3), U(0.5, 4), U(110, 150)), (), 1, 1e-10),
    ("hyp2f1", fs.hyp2f1, ss.hyp2f1, (U(0.2, 3), U(0.2, 3), U(0.5, 4), U(-0.9, 0.8)), (0, 1, 2, 3), 1, 1e-11),
    ("lax.igamma_grad_a", lax.igamma_grad_a, None, (U(0.2, 8), U(0.05, 12)), (), 1, 0),
    ("lax.zeta", lax.zeta, ss.zeta, (U(1.5, 6), U(0.5, 4)), (), 2, 1e-12),  # (no derivative, as JAX's)
    ("lax.bessel_i0e", lax.bessel_i0e, ss.i0e, (U(-10, 10),), (0,), 2, 1e-13),
]  # fmt: skip


def _call(f, *args):
    out = f(*args)
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


_WITH_SCIPY = [c for c in CASES if c[2] is not None]  # the others are checked by their derivative below


@pytest.mark.parametrize(
    "name, ours, ref, args, diff, order, rtol", _WITH_SCIPY, ids=[c[0] for c in _WITH_SCIPY]
)
def test_values_against_scipy(name, ours, ref, args, diff, order, rtol):
    got = _call(ours, *args)
    want = ref(*args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300 if rtol == 0 else 1e-14)
    got32 = _call(ours, *[a.astype(np.float32) for a in args])
    # (owens_t as jax's: its quadrature's float64 NumPy weights promote float32 to float64 here)
    want32 = np.float64 if name == "owens_t" else np.float32
    for g in got32 if isinstance(got32, tuple) else (got32,):
        assert g.dtype == want32, f"{name}: float32 inputs gave {g.dtype}"
    # float32 results: compared where the reference is representable in float32.
    for g, w in zip(*(x if isinstance(got32, tuple) else (x,) for x in (got32, want))):
        ok = np.abs(w) < 1e30
        np.testing.assert_allclose(g[ok], np.asarray(w)[ok], rtol=max(rtol, 2e-5) * 10, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name, ours, ref, args, diff, order, rtol", CASES, ids=[c[0] for c in CASES])
def test_jit_and_vmap(name, ours, ref, args, diff, order, rtol):
    eager = _call(ours, *args)
    np.testing.assert_allclose(_call(funcgrad.jit(ours), *args), eager, rtol=1e-12, atol=1e-14)
    lanes = [_call(ours, *[a[i] for a in args]) for i in range(len(args[0]))]
    batched = _call(funcgrad.vmap(ours), *args)
    np.testing.assert_allclose(batched, np.stack(lanes, -1) if isinstance(eager, tuple) else np.stack(lanes))


@pytest.mark.parametrize(
    "name, ours, ref, args, diff, order, rtol", [c for c in CASES if c[4]], ids=[c[0] for c in CASES if c[4]]
)
def test_derivatives(name, ours, ref, args, diff, order, rtol):
    def f(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        return ours(*full)

    check_grads(f, tuple(args[i] for i in diff), order=order, rtol=1e-5, atol=1e-6)


def test_igamma_grad_a_against_finite_differences_of_scipy():
    a, x = U(0.2, 8), U(0.05, 12)
    h = 1e-6
    fd = (ss.gammainc(a + h, x) - ss.gammainc(a - h, x)) / (2 * h)
    np.testing.assert_allclose(np.asarray(lax.igamma_grad_a(a, x)), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    "call",
    [
        lambda T, sp: T.grad(T.grad(sp.gammaincc))(1.5, 0.5),
        lambda T, sp: T.jacfwd(T.grad(sp.gammainc))(1.5, 0.5),
        lambda T, sp: T.jvp(lambda a: T.vjp(lambda a: sp.gammaincc(a, 0.5), a)[1](1.0)[0], (1.5,), (1.0,)),
        lambda T, sp: T.grad(lambda a: T.lax.igamma_grad_a(a, 2.0))(1.5),
    ],
)
def test_igamma_grad_a_has_no_derivative_as_in_jax(call):
    # (the fuzzer) JAX's igamma_grad_a is a primitive without a JVP rule; funcgrad's while loop
    # computed a second derivative in a where jax raises. In x alone both compute (below).
    jax = pytest.importorskip("jax")
    import jax.scipy.special as js

    for T, sp in ((jax, js), (funcgrad, fs)):
        with pytest.raises(
            NotImplementedError, match="Differentiation rule for 'igamma_grad_a' not implemented"
        ):
            call(T, sp)
    second_in_x = funcgrad.grad(funcgrad.grad(fs.gammainc, 1), 1)(1.5, 0.5)
    np.testing.assert_allclose(
        float(second_in_x), float(jax.grad(jax.grad(js.gammainc, 1), 1)(1.5, 0.5)), rtol=1e-6
    )


_Z = np.array([0.5 + 0.25j, -3j, 2.0 + 0j], np.complex64)  # (complex64: the same dtype in either jax mode)


@pytest.mark.parametrize(
    "name, args",
    [("xlogy", (_Z, _Z[::-1])), ("xlog1py", (_Z, _Z[::-1])), ("expit", (_Z,)), ("logit", (_Z,)),
     ("boxcox", (_Z, 0.5)), ("boxcox1p", (_Z, 0.0))],
)  # fmt: skip
def test_complex_values_computed_as_jax(name, args):
    # (the fuzzer's random programs) JAX's formulas of these take complex values; funcgrad refused them
    jax = pytest.importorskip("jax")
    import jax.scipy.special as js

    got, want = getattr(fs, name)(*args), jax.jit(getattr(js, name))(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize(
    "name, n",
    [("entr", 1), ("beta", 2), ("exp1", 1), ("kl_div", 2), ("rel_entr", 2), ("poch", 2), ("sici", 1),
     ("fresnel", 1), ("gammasgn", 1), ("erf", 1), ("gammaln", 1), ("i0e", 1)],
)  # fmt: skip
def test_complex_refusals_raise_jax_exception_types(name, n):
    # JAX's own ValueError for most, NotImplementedError for fresnel, lax's TypeError for the
    # functions that reach a primitive (funcgrad raised TypeError for all)
    pytest.importorskip("jax")
    import jax.scipy.special as js

    args = (np.complex64(0.5 + 0.25j),) * n
    with pytest.raises(Exception) as theirs:
        getattr(js, name)(*args)
    with pytest.raises(type(theirs.value)):
        getattr(fs, name)(*args)


def test_random_gamma_grad_is_the_implicit_derivative():
    # d sample / d alpha at fixed CDF: -(dP/da) / (dP/dx).
    a, x = U(0.5, 8), U(0.1, 10)
    dp_dx = np.exp(-x + (a - 1) * np.log(x) - ss.gammaln(a))
    expected = -np.asarray(lax.igamma_grad_a(a, x)) / dp_dx
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), expected, rtol=1e-10)


def test_jax_conventions_for_undefined_derivatives():
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b not supported"):
        funcgrad.grad(fs.betainc)(2.0, 3.0, 0.4)
    # (lax.zeta has no differentiation rule in JAX, in either argument: JAX's NotImplementedError)
    for argnums in (0, 1):
        with pytest.raises(NotImplementedError, match="Differentiation rule for 'zeta' not implemented"):
            funcgrad.grad(lax.zeta, argnums=argnums)(2.0, 1.0)
    assert float(funcgrad.grad(lambda q: fs.zeta(3.0, q))(1.5)) == pytest.approx(-3 * ss.zeta(4.0, 1.5))


def test_edge_values_follow_scipy():
    np.testing.assert_array_equal(np.asarray(fs.expn(np.array([2, 3, 1]), 0.0)), ss.expn([2, 3, 1], 0.0))
    assert float(fs.expi(0.0)) == -np.inf
    assert np.isnan(float(fs.gammainc(-1.0, 1.0))) and float(fs.gammainc(1.0, np.inf)) == 1.0
    assert float(fs.betainc(2.0, 3.0, 0.0)) == 0.0 and float(fs.betainc(2.0, 3.0, 1.0)) == 1.0
    assert float(fs.xlogy(0.0, 0.0)) == 0.0 and float(fs.entr(0.0)) == 0.0
    np.testing.assert_array_equal(np.asarray(fs.ndtri(np.array([0.0, 1.0]))), [-np.inf, np.inf])


def test_expn_against_scipy():
    n = np.array([0, 1, 2, 3, 5, 10, 1, 2, 7, 6000])
    x = np.array([0.5, 0.2, 0.7, 1.0, 2.5, 4.0, 30.0, 0.01, 0.9, 3.0])
    np.testing.assert_allclose(np.asarray(fs.expn(n, x)), ss.expn(n, x), rtol=1e-12)
    check_grads(lambda x: fs.expn(n[:9], x), (x[:9],), order=1, rtol=1e-4)


def test_multigammaln_bernoulli_bessel_jn_polygamma():
    a = U(3, 8)
    np.testing.assert_allclose(
        np.asarray(fs.multigammaln(a, 3)), ss.multigammaln(a[:, None], 3)[:, 0], rtol=1e-12
    )
    check_grads(lambda a: fs.multigammaln(a, 3), (a,), order=2)
    np.testing.assert_allclose(np.asarray(fs.bernoulli(12)), ss.bernoulli(12), rtol=1e-11, atol=1e-15)
    z = U(0.1, 8)
    want = np.stack([ss.jv(v, z) for v in range(4)])
    np.testing.assert_allclose(np.asarray(fs.bessel_jn(z, v=3)), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(functools.partial(fs.bessel_jn, v=3))(z)), want, rtol=1e-9, atol=1e-12
    )
    check_grads(lambda z: fs.bessel_jn(z, v=2), (z,), order=1, rtol=1e-4)
    x = U(0.5, 3)
    np.testing.assert_allclose(np.asarray(fs.polygamma(2, x)), ss.polygamma(2, x), rtol=1e-12)
    with pytest.raises(ValueError, match="integer"):
        fs.polygamma(2.0, x)


def test_softmax_family_uses_scipy_axis_default():
    x = U(-2, 2).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(fs.softmax(x)), np.exp(x) / np.exp(x).sum(), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(fs.log_softmax(x, axis=1)), x - ss.logsumexp(x, axis=1, keepdims=True)
    )
    np.testing.assert_allclose(np.asarray(fs.logsumexp(x, axis=0, b=2.0)), ss.logsumexp(x, axis=0, b=2.0))


def test_logsumexp_of_complex_terms_matches_scipy():
    # The principal branch of the sum's log (it was off by 2 pi i), and with return_sign a real
    # log-modulus and a complex phase (was complex and another phase). JAX's lax_scipy_test.
    rng = np.random.default_rng(3)
    z = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))) * 2
    b = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    for kw in (dict(axis=0), dict(axis=None, b=b), dict(axis=1, keepdims=True)):
        np.testing.assert_allclose(np.asarray(fs.logsumexp(z, **kw)), ss.logsumexp(z, **kw), rtol=1e-12)
        out, sign = fs.logsumexp(z, return_sign=True, **kw)
        want_out, want_sign = ss.logsumexp(z, return_sign=True, **kw)
        assert out.dtype == np.float64 and sign.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(out), want_out, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(sign), want_sign, rtol=1e-12)


def test_refusals_name_the_function():
    with pytest.raises(ValueError, match="factorial.*exact"):
        fs.factorial(3, exact=True)
    with pytest.raises(NotImplementedError, match="Riemann zeta function not implemented; pass q"):
        fs.zeta(2.0)  # (JAX's type and words)
    with pytest.raises(TypeError, match="ndtri"):
        fs.ndtri(fnp.array([1, 2]))
    with pytest.raises(TypeError, match="lax.igamma"):
        lax.igamma(np.float32(1.0), np.float64(2.0))


# ----------------------------------------------------------------------------------------------
# Found by the external suites


def test_special_functions_broadcast_their_arguments():
    # scipy.special's functions are ufuncs; poisson.cdf with k (4, 3) and mu (4, 1) failed in lax.igammac
    import scipy.special as sps
    import scipy.stats as sst

    import funcgrad.scipy.special as fsp
    import funcgrad.scipy.stats as fst

    rng = np.random.default_rng(0)
    a, x = rng.uniform(0.5, 3, (4, 3)), rng.uniform(0.5, 3, (4, 1))
    for name in ("gammainc", "gammaincc", "xlogy", "betaln", "poch"):
        np.testing.assert_allclose(getattr(fsp, name)(a, x), getattr(sps, name)(a, x), rtol=1e-10)
    np.testing.assert_allclose(fsp.betainc(a, x, 0.3), sps.betainc(a, x, 0.3), rtol=1e-10)
    k = np.floor(a * 2)
    np.testing.assert_allclose(fst.poisson.cdf(k, x), sst.poisson.cdf(k, x), rtol=1e-10)
    g = funcgrad.grad(lambda mu: fnp.sum(fst.poisson.cdf(k, mu)))(x)
    assert g.shape == (4, 1) and np.all(np.isfinite(g))


def test_multigammaln_keeps_a_narrow_float_dtype_as_jax():
    # Found by the fuzzer (64-bit long run): an np.float64 constant made float32 results float64.
    jax = pytest.importorskip("jax")
    import ml_dtypes

    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
        x = np.array([2.5, 3.0], dtype)
        got, want = fs.multigammaln(x, 3), jax.scipy.special.multigammaln(x, 3)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=1e-2)


def test_bfloat16_arguments_of_series_functions_as_jax():
    # The fuzzer (x32 long run): expn(1, bfloat16) raised "data type bfloat16 not inexact" (np.finfo).
    jax = pytest.importorskip("jax")
    import ml_dtypes

    x = np.array([0.5, 2.0], ml_dtypes.bfloat16)
    for name, f in [("expn", lambda m, x: m.expn(3, x)), ("erfcx", None)]:
        f = f or (lambda m, x, name=name: getattr(m, name)(x))
        got, want = f(fs, x), f(jax.scipy.special, x)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=1e-2, err_msg=name)


@pytest.mark.parametrize("name", ["i1e", "i1", "logit", "erfcx", "dawsn", "exp1", "xlog1py"])
def test_bfloat16_derivatives_as_jax(name):
    # The fuzzer (bfloat16 differentiated): i1e's rule took np.finfo of bfloat16 (ValueError), and
    # the custom rules (logit, erfcx, ...) computed 1.0 - x in NumPy, whose bfloat16 minus a Python
    # float is float32 (the rule's tangent failed the type check)
    jax = pytest.importorskip("jax")
    import ml_dtypes

    x = np.array([0.75, 0.25], ml_dtypes.bfloat16)
    args = (lambda a: (a, a)) if name == "xlog1py" else (lambda a: (a,))
    got = funcgrad.grad(lambda a: getattr(fs, name)(*args(a)).sum())(x)
    want = jax.grad(lambda a: getattr(jax.scipy.special, name)(*args(a)).sum())(x)
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=1e-2)


def test_i1e_derivative_takes_one_half_where_jax_does():
    # JAX's rule picks its formula where |x| > eps, so |x| = eps and NaN take the limit 1/2 (the
    # progz fuzzer's probe: funcgrad gave NaN at NaN)
    jax = pytest.importorskip("jax")

    eps = np.finfo(np.float32).eps
    x = np.array([np.nan, eps, -eps, 0.0, 0.5, np.inf], np.float32)
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(fs.i1e)))(x)
    want = jax.jit(jax.vmap(jax.grad(jax.scipy.special.i1e)))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ----------------------------------------------------------------------------------------------
# The functions JAX jits (NOTE: [special functions JAX jits])


@pytest.mark.parametrize(
    "name, call",
    [
        ("hyp1f1", lambda m, v: m.hyp1f1(v, v + 1.0, v - 1.0)),
        ("expn", lambda m, v: m.expn(2, v)),
        ("exp1", lambda m, v: m.exp1(v)),
        ("expi", lambda m, v: m.expi(v - 1.0)),
        ("gammasgn", lambda m, v: m.gammasgn(v - 2.0)),
        ("bessel_jn", lambda m, v: m.bessel_jn(v, v=2, n_iter=20)),
    ],
)
def test_functions_jax_jits_compile_once_eagerly(monkeypatch, name, call):
    # As JAX's: one compiled program per shape and dtype, so new values compile nothing again (each
    # of hyp2f1's loops compiled again per call), with jax's values, dtypes and weak types.
    import jax.scipy.special as js
    from funcgrad.xla_bridge import runtime as rt

    calls = []
    real = rt.compile
    monkeypatch.setattr(rt, "compile", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    rng = np.random.default_rng(0)
    call(fs, rng.uniform(0.2, 2.0, 3).astype(np.float32))
    n = len(calls)
    v = rng.uniform(0.2, 2.0, 3).astype(np.float32)
    ours = call(fs, v)
    assert len(calls) == n, f"eager {name} with new values compiled again"
    ref = call(js, v)
    assert (ours.dtype, ours.weak_type) == (ref.dtype, ref.weak_type)
    np.testing.assert_allclose(ours, ref, rtol=2e-6)


def test_functions_jax_jits_take_lists_as_jax():
    # Under jit a list argument is a list of tracers: expi, sici and gammasgn refuse it in JAX's
    # words (promote_args_inexact); the vectorized hyp1f1/hyp2f1/expn make it an array.
    for name in ("expi", "sici", "gammasgn"):
        with pytest.raises(TypeError, match=f"{name} requires ndarray or scalar arguments"):
            getattr(fs, name)([1.0])
    np.testing.assert_allclose(fs.hyp1f1([1.0], 2.0, 1.0), [np.e - 1.0], rtol=1e-6)
    np.testing.assert_allclose(fs.expn([1], [1.0]), ss.expn(1, [1.0]), rtol=1e-6)
    assert fs.expn(2, 1.0).weak_type is False  # (as JAX's: its series' constants are typed)


def test_expn_and_exp1_differentiate_through_an_enclosing_jit_as_jax():
    # Fuzzer find (seed 13007 x32: linearize o jit of exp1): expn's order, traced under the jit,
    # was a nondiff argument the staged rule closed over, so differentiating the jit's program
    # later read a dead tracer (grad(jit(expn)) raised UnexpectedTracerError).
    jax = pytest.importorskip("jax")
    x = np.array([0.5, 1.0, 2.5], np.float32)
    for n in (1, 2, 3.5):
        got = funcgrad.grad(funcgrad.jit(lambda x, n=n: funcgrad.scipy.special.expn(n, x).sum()))(x)
        want = jax.grad(jax.jit(lambda x, n=n: jax.scipy.special.expn(n, x).sum()))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    lin = funcgrad.linearize(funcgrad.jit(funcgrad.scipy.special.exp1), x)[1]
    want = jax.linearize(jax.jit(jax.scipy.special.exp1), x)[1]
    np.testing.assert_allclose(np.asarray(lin(x)), np.asarray(want(x)), rtol=1e-5)


def test_spence_derivative_is_zero_where_jax_takes_a_constant_branch():
    # Fuzzer find (seed 13017: jacrev of norm.ppf(spence(x)) at x < 0 was NaN, jax 0): JAX's
    # piecewise spence is NaN below 0 and pi**2/6 at 0, constants whose derivative is 0.
    jax = pytest.importorskip("jax")
    for x in (-2.5, -1.0, 0.0, 0.5, 1.0, 2.5):  # (1.0: JAX's constant 0 there, in every mode)
        got = funcgrad.grad(funcgrad.scipy.special.spence)(x)
        with jax.enable_x64(True):  # (funcgrad's mode here)
            want = jax.grad(jax.scipy.special.spence)(x)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-12)


def test_expn_of_order_zero_and_exp1_derivative_at_the_edges_as_jax():
    # E_0 = exp(-x)/x wins over the zero clauses in JAX's piecewise (-inf at -0.0) and is NaN at inf;
    # exp1' = -E_0 (the progz probe: funcgrad's exp1' was -inf at -0.0, -0 at inf)
    jax = pytest.importorskip("jax")

    x = np.array([-0.0, 0.0, 0.5, 2.0, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(np.asarray(fs.expn(0, x)), np.asarray(jax.scipy.special.expn(0, x)))
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(fs.exp1)))(x)
    want = jax.jit(jax.vmap(jax.grad(jax.scipy.special.exp1)))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("name", ["gamma", "loggamma", "erfcx"])
def test_complex_arguments_as_jax(name):
    # JAX's gamma and loggamma take complex arguments (Lanczos with reflection; loggamma's branch cut
    # SciPy's, the negative real axis; nan+nanj at poles) and erfcx is the Faddeeva function at i z
    # (funcgrad refused them: lax_scipy_special_functions_test)
    z = np.array([0.5 + 0.3j, -2.5 + 0.1j, 3.2 - 1.5j, -3 + 0j, 0j, -0.7 - 2j, 10 + 5j, -2.5 - 0j])
    ours = np.asarray(getattr(fs, name)(z))
    assert ours.dtype == np.complex128
    np.testing.assert_allclose(ours, getattr(ss, name)(z), rtol=1e-10, equal_nan=True)
    assert getattr(fs, name)(z.astype(np.complex64)).dtype == np.complex64
    # holomorphic: the derivative along the real axis is f'(z)
    f = lambda x: getattr(fs, name)(x + 0.5j)  # noqa: E731
    h = 1e-6
    _, t = funcgrad.jvp(f, (1.5,), (1.0,))
    np.testing.assert_allclose(complex(t), complex(f(1.5 + h) - f(1.5 - h)) / (2 * h), rtol=1e-6)


def test_zeta_at_its_poles_is_jaxs_eagerly_as_under_jit():
    # (the fuzzer's 64-bit run, seed 16006: zeta(x, 0) of an integer x) XLA's chlo.zeta answers
    # where q is a non-positive integer -- inf for x = 1 or an even integer, NaN elsewhere -- and
    # NaN for q = inf or x = inf with q <= 1; eagerly funcgrad gave SciPy's answers there
    jax = pytest.importorskip("jax")
    xs = np.array([-4, -3, -2.5, 0, 0.5, 1, 1.5, 2, 3, 4, -1e10, np.inf, np.nan])
    qs = np.array([-3, -2.5, -1, 0, -0.0, 0.5, 1, 2, np.inf, -np.inf])
    x, q = (a.ravel() for a in np.meshgrid(xs, qs))
    with jax.enable_x64(True):
        want = np.asarray(jax.scipy.special.zeta(x, q))
    for got in (fs.zeta(x, q), funcgrad.jit(fs.zeta)(x, q)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9)


def test_eager_float32_zeta_is_xla_s():
    # (session 18's fuzzing: eager float32 zeta(1e10, 1) was SciPy's 1.0 rounded, jax's and jit's
    # NaN) an eager float32 zeta runs XLA's chlo.zeta, whose float32 series overflows there
    jax = pytest.importorskip("jax")
    x = np.float32([1e10, 2.0, 3.5, 1.0, 50.0, 1e4, 1.5])
    q = np.float32([1.0, 1.0, 0.5, 2.0, -1.5, 3.0, 1e-3])
    want = np.asarray(jax.scipy.special.zeta(x, q))
    assert np.isnan(want[0])
    for got in (fs.zeta(x, q), lax.zeta(x, q), fs.zeta(np.float32(1e10), np.float32(1.0))):
        got = np.asarray(got)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want[: got.size].reshape(got.shape))


@pytest.mark.parametrize("name", ["ndtri", "log_ndtr", "ndtr"])
def test_normal_functions_gradient_weak_types_as_jax(name):
    # (the fuzzer's progz, eager, 32-bit, seed 21007: the gradient at a weakly typed float32 input
    # came back strong for ndtri -- JAX promotes the weak input inside its where, and that
    # conversion's transpose makes it weak -- and weak for log_ndtr -- JAX's rule multiplies the
    # tangent with lax.mul, nothing to transpose back to weak)
    jax = pytest.importorskip("jax")
    outs = {}
    with jax.enable_x64(False), funcgrad.enable_x64(False):
        for lib in (funcgrad, jax):
            f = getattr(lib.scipy.special, name)
            g = lib.grad(lambda a, f=f: f(a))
            # (a Python float argument: a weakly typed float32)
            run = lambda f=f, g=g, lib=lib: [f(0.3), g(0.3), lib.jit(g)(0.3)]  # noqa: E731
            # (jax's side in one jitted program: its eager dtypes, weak types and bits, checked;
            # eager ndtri's gradient dispatched 2 s CPU of primitives)
            outs[lib] = run() if lib is funcgrad else jax.jit(run)()
    for ours, ref in zip(outs[funcgrad], outs[jax]):
        assert (ours.dtype, ours.weak_type) == (ref.dtype, ref.weak_type)
        np.testing.assert_allclose(ours, ref, rtol=1e-5)
