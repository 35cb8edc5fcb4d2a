"""Conventions of the elementwise primitives that finite differences cannot pin down: derivatives
at kinks and boundaries (clamp, max/min ties, abs, pow at 0), integer division and remainder as XLA
computes them, rounding, scalar operands (NOTE: [elementwise operand contract]) and batching with
scalar predicates."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import assert_close
from funcgrad.primitives import elementwise as ew

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads


def grad(f, *args, argnums=0):
    return funcgrad.grad(f, argnums=argnums)(*args)


def test_clamp_gradient_passes_strictly_inside_as_in_jax():
    lo, hi = np.float64(0.0), np.float64(1.0)
    assert [float(grad(lambda x: ew.clamp(lo, x, hi), np.float64(v))) for v in (0.0, 0.5, 1.0, 2.0)] == [
        0,
        1,
        0,
        0,
    ]
    assert [float(grad(lambda a: ew.clamp(a, np.float64(0.5), hi), np.float64(v))) for v in (0.5, 0.7)] == [
        0,
        1,
    ]
    assert [float(grad(lambda b: ew.clamp(lo, np.float64(0.5), b), np.float64(v))) for v in (0.5, 0.3)] == [
        0,
        1,
    ]
    with pytest.raises(TypeError, match="clamp"):
        funcgrad.make_jaxpr(lambda x: ew.clamp_p.bind(np.zeros(2), x, np.float64(1)))(np.zeros(3))


def test_clamp_batches_scalar_bounds_and_scalar_operands():
    los = np.array([-1.0, 0.0, 0.5])
    got = funcgrad.vmap(lambda lo: ew.clamp(lo, np.float64(0.25), np.float64(1.0)))(los)
    assert np.asarray(got).tolist() == [0.25, 0.25, 0.5]
    got = funcgrad.vmap(lambda lo: ew.clamp(lo, np.array([0.0, 2.0]), np.float64(1.0)))(los)
    assert np.asarray(got).tolist() == [[0.0, 1.0], [0.0, 1.0], [0.5, 1.0]]


def test_pow_derivatives_at_zero_are_finite():
    assert float(grad(lambda x: ew.pow_(x, np.float64(0.0)), np.float64(0.0))) == 0.0
    assert float(grad(lambda y: ew.pow_(np.float64(0.0), y), np.float64(2.0))) == 0.0
    assert float(grad(lambda x: ew.pow_(x, np.float64(2.0)), np.float64(0.0))) == 0.0
    assert float(grad(lambda x: ew.pow_(x, np.float64(1.0)), np.float64(0.0))) == 1.0


def test_max_min_ties_split_and_abs_at_zero():
    gx, gy = funcgrad.grad(lambda x, y: ew.max_p.bind(x, y), argnums=(0, 1))(np.float64(2.0), np.float64(2.0))
    assert (float(gx), float(gy)) == (0.5, 0.5)
    assert float(grad(lambda x: ew.abs_p.bind(x), np.float64(0.0))) == 1.0  # as JAX: abs'(0) = 1


def test_rem_gradient_and_scalar_operand_broadcasting():
    gx, gy = funcgrad.grad(lambda x, y: ew.rem_p.bind(x, y), argnums=(0, 1))(np.float64(5.5), np.float64(2.0))
    assert (float(gx), float(gy)) == (1.0, -2.0)
    # x a scalar operand, y an array: x's tangent takes the result's shape.
    _, t = funcgrad.jvp(
        lambda x: ew.rem_p.bind(x, np.array([2.0, 3.0])), (np.float64(5.5),), (np.float64(1.0),)
    )
    assert np.asarray(t).tolist() == [1.0, 1.0]


def test_integer_division_and_remainder_follow_xla():
    x = np.array([7, -7, 7, -(2**31)], np.int32)
    y = np.array([2, 2, 0, -1], np.int32)
    assert np.asarray(ew.div(x, y)).tolist() == [3, -3, -1, -(2**31)]
    assert np.asarray(ew.rem_p.bind(x, y)).tolist() == [1, -1, 7, 0]


def test_round_methods():
    x = np.array([0.5, 1.5, -0.5, 2.5, 0.49999999999999994])
    assert np.asarray(ew.round_p.bind(x, rounding_method=0)).tolist() == [1.0, 2.0, -1.0, 3.0, 0.0]
    assert np.asarray(ew.round_p.bind(x[:4], rounding_method=1)).tolist() == [0.0, 2.0, -0.0, 2.0]


def test_integer_pow_checks_and_derivatives():
    assert float(ew.integer_pow(np.float64(2.0), -2)) == 0.25
    with pytest.raises(TypeError, match="negative powers"):
        funcgrad.make_jaxpr(lambda x: ew.integer_pow(x, -1))(np.int32(2))
    check_grads(lambda x: ew.integer_pow(x, 3), [np.array([0.0, -1.5, 2.0])], order=3)


def test_integer_pow_eager_values_by_repeated_squaring():
    # The eager impl multiplies (as XLA does) instead of calling libm's pow, whose negative-base
    # path is ~70x slower: check it against float64 powers, with negative bases, exponents 0 and
    # 1, odd, even and negative exponents, integer wraparound and complex bases.
    x = np.array([-1.7, -0.3, 0.0, 0.9, 2.5], np.float32)
    for y in [*range(-3, 12), 31]:
        want = np.power(x.astype(np.float64), y) if y >= 0 else np.power(x[x != 0].astype(np.float64), y)
        got = np.asarray(ew.integer_pow(x if y >= 0 else x[x != 0], y))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5 * max(abs(y), 1), atol=0)
    ints = np.array([-3, 2, 7], np.int8)
    assert np.asarray(ew.integer_pow(ints, 5)).tolist() == np.power(ints, 5).tolist()  # wraps
    z = np.complex64(1 + 2j)
    np.testing.assert_allclose(complex(ew.integer_pow(z, 3)), (1 + 2j) ** 3, rtol=1e-6)


def test_polygamma_and_digamma_are_differentiable_to_any_order():
    x = np.array([0.7, 1.5, 3.0])
    check_grads(lambda v: ew.digamma_p.bind(v), [x], order=3)
    check_grads(lambda v: ew.polygamma_p.bind(np.full(3, 2.0), v), [x], order=2)


def test_select_n_batching_with_scalar_predicates():
    cases = (np.zeros(3), np.ones(3))
    preds = np.array([True, False])
    got = funcgrad.vmap(lambda p: ew.select_n_p.bind(p, *cases))(preds)
    assert np.asarray(got).tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    xs = np.arange(6.0).reshape(2, 3)
    got = funcgrad.vmap(lambda x: ew.select_n_p.bind(np.True_, x, -x))(xs)
    assert_close(got, -xs)
    got = funcgrad.vmap(lambda p, x: ew.select_n_p.bind(p, x, np.float64(7.0) * np.ones(())))(
        preds, np.arange(2.0)
    )
    assert np.asarray(got).tolist() == [7.0, 1.0]


def test_grad_abs_at_zero_is_one_as_in_jax():
    assert float(funcgrad.grad(fnp.abs)(0.0)) == 1.0
    assert float(funcgrad.grad(funcgrad.lax.abs)(0.0)) == 1.0
    assert float(funcgrad.jit(funcgrad.grad(fnp.abs))(0.0)) == 1.0
    x = np.array([-2.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(funcgrad.vmap(funcgrad.grad(fnp.abs))(x), [-1.0, 1.0, 1.0, 1.0])
    assert float(funcgrad.grad(lambda x: fnp.abs(x) ** 2)(-1.5)) == -3.0
    # complex: d|z| = Re(conj(z) dz) / |z|, 0 at 0, as in JAX
    g = funcgrad.grad(fnp.abs)(3.0 + 4.0j)
    np.testing.assert_allclose(complex(g), (3.0 - 4.0j) / 5.0)
    assert complex(funcgrad.grad(fnp.abs)(0j)) == 0


def test_cbrt_acosh_atanh_derivatives_at_domain_edges_are_jaxs():
    # The differential fuzzer: cbrt's second derivative at 0 is -inf (+inf at -0.0) as JAX's
    # ans**-2 / 3 rule gives (t / (3 ans**2) gave 0 * inf / 0 = NaN); acosh's tangent at -1 is +inf
    # from x**2 - 1, as JAX's (rsqrt((x - 1)(x + 1)) gave rsqrt(-0.0) = -inf).
    import jax
    import jax.numpy as jnp

    for x in (0.0, -0.0, 1.5):
        want = jax.grad(jax.grad(jnp.cbrt))(x)
        for fn in (
            funcgrad.grad(funcgrad.grad(fnp.cbrt)),
            funcgrad.jit(funcgrad.grad(funcgrad.grad(fnp.cbrt))),
        ):
            np.testing.assert_allclose(float(fn(x)), float(want), rtol=1e-6)
    x = np.array([-1.0, 1.0, 2.0, np.inf])
    want = jax.jvp(jnp.arccosh, (x,), (np.ones(4),))[1]
    got = funcgrad.jvp(fnp.arccosh, (x,), (np.ones(4),))[1]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # atanh's rule is 1 / (1 + x) / (1 - x), as JAX's: its second derivative at +-1 is NaN there
    # (-inf + inf), where 1 / (1 - x^2) gave +-inf (the fuzzer, grad of grad in both modes)
    for x in (1.0, -1.0, 0.3, -0.7):
        want = jax.grad(jax.grad(jnp.arctanh))(x)
        for fn in (
            funcgrad.grad(funcgrad.grad(fnp.arctanh)),
            funcgrad.jit(funcgrad.grad(funcgrad.grad(fnp.arctanh))),
        ):
            np.testing.assert_allclose(float(fn(x)), float(want), rtol=1e-6)


def test_jvp_constants_of_a_bfloat16_scalar():
    # (the differential fuzzer) the rules' constants (_const) of a 0-d bfloat16 primal looked up a
    # default type for NumPy's kind 'V' (ml_dtypes' bfloat16) and raised KeyError; values as jax's
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    x = np.array(0.75, ml_dtypes.bfloat16)
    for ours, theirs in ((fnp.square, jnp.square), (lambda a: a**3, lambda a: a**3), (fnp.sqrt, jnp.sqrt)):
        got, want = funcgrad.grad(ours)(x), jax.grad(theirs)(x)
        assert got.dtype == want.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(np.float32(got), np.float32(want))


def test_sqrt_jvp_is_jaxs_product_form_in_float16():
    # (the differential fuzzer, 32-bit seed 17) sqrt's rule is JAX's t * (0.5 / ans), not
    # t / (2 ans): its float16 roundings and the graph of its higher derivatives are jax's, so
    # the third derivative of a float16 norm overflows to -inf where jax's does (funcgrad gave -1)
    import jax
    import jax.numpy as jnp

    x = np.float16(2.52)
    sides = []
    for api, m in ((funcgrad, fnp), (jax, jnp)):
        f = lambda a, m=m: m.linalg.vector_norm(a - np.float16(2.545), axis=None)  # noqa: E731
        d1 = api.grad(f)
        third = api.grad(lambda a, d1=d1, api=api: api.grad(d1)(a) + d1(a))(x)
        s = np.array([0.3, 1.7, 5e-3, 600.0], np.float16)
        sides.append((third, api.jvp(m.sqrt, (s,), (np.ones(4, np.float16),))[1]))
    for got, want in zip(*sides, strict=True):
        assert got.dtype == want.dtype == np.float16
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tanh_atanh_exp2_derivatives_are_jaxs_bits_in_half_precision(dtype):
    # (the regression hunt) exp2's rule is JAX's log(2) (t y), whose rounding it shares (t (y log 2)
    # differed in a third of the elements); in float16/bfloat16 tanh's and atanh's are JAX's forms
    # (t + t y)(1 - y) and (1 / (1 + x)) (t / (1 - x)) (one residual in wider floats: bfloat16
    # grad(tanh) differed in 94 of 301 values, its third derivative in 196); the third derivative
    # too, eager and jitted
    jax = pytest.importorskip("jax")
    x = np.linspace(0.05, 0.95, 91).astype(dtype)
    sides = []
    for api, m in ((funcgrad, fnp), (jax, jax.numpy)):
        for name in ("exp2", "tanh", "arctanh"):
            g = api.grad(lambda a, m=m, f=getattr(m, name): m.sum(f(a) ** 2))
            sides.append([np.asarray(g(x)).astype(np.float32), np.asarray(api.jit(g)(x)).astype(np.float32)])
        d3 = api.vmap(api.grad(api.grad(api.grad(m.tanh))))
        sides.append([np.asarray(d3(x)).astype(np.float32), np.asarray(api.jit(d3)(x)).astype(np.float32)])
    np.testing.assert_array_equal(np.array(sides[:4]), np.array(sides[4:]))


def test_shift_right_arithmetic_of_unsigned_integers_as_jax():
    # Fuzzer find (seed 13012): XLA shifts an unsigned value's bits as a signed value's (the top
    # bit fills in), so uint32 0xFFFFFFFF >> 40 is 0xFFFFFFFF in jax; the eager impl shifted
    # logically (NumPy's unsigned shift) and gave 1.
    jax = pytest.importorskip("jax")
    from funcgrad import lax as flax

    for dt in (np.uint8, np.uint16, np.uint32):
        info = np.iinfo(dt)
        a = np.array([info.max, 0, info.max // 2 + 1, 5], dt)
        s = np.array([info.max, 0, 3, 33], dt)
        want = np.asarray(jax.lax.shift_right_arithmetic(a, s))
        np.testing.assert_array_equal(np.asarray(flax.shift_right_arithmetic(a, s)), want)
        np.testing.assert_array_equal(np.asarray(funcgrad.jit(flax.shift_right_arithmetic)(a, s)), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_results_are_jaxs_bits_eagerly_and_under_jit(dtype):
    # XLA expands these into rounded steps of the half type (JAX lowers logistic as 1 / (1 +
    # exp(-x)), and cumsum/cumprod as a reduce_window): eagerly funcgrad's NumPy step gave a
    # float16/bfloat16 ulp (or several, for cumulative sums) apart, and bfloat16 logistic under jit
    # too (XLA's logistic op). The narrow-dtype angle of the session's fuzzing.
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.99, 0.99, 200).astype(jax.numpy.dtype(dtype))
    y = rng.uniform(0.1, 3, 200).astype(x.dtype)
    cases = [(n, x) for n in ("asin", "exp2", "logistic", "cumsum")] + [("rsqrt", y)]
    for name, v in cases:
        want = np.asarray(getattr(jax.lax, name)(v))
        for how, f in (
            ("eager", getattr(funcgrad.lax, name)),
            ("jit", funcgrad.jit(getattr(funcgrad.lax, name))),
        ):
            got = np.asarray(f(fnp.asarray(v)))
            assert got.dtype == want.dtype, (name, how)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {how}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_nextafter_at_signed_zeros_and_specials_as_jax(dtype):
    # (the lax-parameter fuzzer's nextafter probe) where x == y the result is y, so +0 toward -0
    # is -0: NumPy's float16 loop returned x there, eagerly
    jax = pytest.importorskip("jax")
    x = np.array([0.0, -0.0, 0.0, np.inf, np.nan, 1.0, -1.0, 65504.0], dtype)
    y = np.array([-0.0, 0.0, 0.0, np.inf, 1.0, np.inf, -np.inf, np.nan], dtype)
    want = np.asarray(jax.lax.nextafter(x, y))
    for got in (funcgrad.lax.nextafter(x, y), funcgrad.jit(funcgrad.lax.nextafter)(x, y)):
        got = np.asarray(got)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", ["sign", "erf_inv", "bessel_i1e"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_odd_functions_keep_minus_zero_as_jax(name, dtype):
    # (the lax-parameter fuzzer's eager pass) XLA's sign/erf_inv/bessel_i1e of -0 are -0; NumPy's
    # sign and SciPy's erfinv/i1e gave +0 eagerly
    jax = pytest.importorskip("jax")
    x = np.array([-0.0, 0.0, 0.5, -0.5], dtype)
    want = np.asarray(getattr(jax.lax, name)(x))
    got = np.asarray(getattr(funcgrad.lax, name)(x))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)


def test_gamma_family_eagerly_at_poles_and_infinities_as_jax():
    # (the lax-parameter fuzzer, seed 20998: jvp of digamma at 0) SciPy's answers at the poles and
    # infinities are not XLA's: digamma(+-0) -inf/+inf (jax: NaN), lgamma(-inf) -inf (inf),
    # polygamma(1, inf) 0 (NaN), polygamma(2, 0) -inf (NaN); eagerly these take the compiled step
    jax = pytest.importorskip("jax")
    x = np.array([0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan, 2.5, -0.5], np.float32)
    for name, args in (("digamma", (x,)), ("lgamma", (x,)), ("polygamma", (np.full_like(x, 1), x)),
                       ("polygamma", (np.full_like(x, 2), x))):  # fmt: skip
        ours = np.asarray(getattr(funcgrad.lax, name)(*args))
        np.testing.assert_allclose(ours, np.asarray(getattr(jax.lax, name)(*args)), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pow_of_one_exponent_eagerly_is_xlas(dtype):
    # (the transformation-composition fuzzer, session 19) NumPy's power takes sqrt for an exponent
    # of 0.5 given once (a scalar or broadcast): pow(-inf, 0.5) was nan and pow(-0.0, 0.5) -0.0
    # eagerly (jax, as C's pow: inf and +0.0), so grad(x ** 1.5) at -inf was nan (jax: inf)
    jax = pytest.importorskip("jax")
    x = np.array([-np.inf, -0.0, 0.0, 4.0, np.inf, -2.0, np.nan], dtype)
    for y in (dtype(0.5), np.array([0.5], dtype), np.full(x.shape, 0.5, dtype), dtype(-1.0)):
        want = np.asarray(jax.lax.pow(x, y))
        got = np.asarray(funcgrad.lax.pow(x, y))
        np.testing.assert_array_equal(np.signbit(got) & ~np.isnan(got), np.signbit(want) & ~np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for v in (x[0], x[1]):  # 0-d operands
        want = np.asarray(jax.lax.pow(v, dtype(0.5)))
        np.testing.assert_array_equal(np.asarray(funcgrad.lax.pow(v, dtype(0.5))), want)
    g = funcgrad.grad(lambda v: fnp.power(v, 1.5))(x[0])
    assert float(g) == float(jax.grad(lambda v: jax.numpy.power(v, 1.5))(x[0])) == np.inf
