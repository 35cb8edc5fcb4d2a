"""NumPy compatibility of funcgrad.numpy's floating-point bits and integer number theory
(``numpy/floatbits.py``: nextafter, spacing, frexp, ldexp, modf, gcd, lcm, the bitwise functions,
packbits, i0, unwrap): values and dtypes against NumPy, bit-exact edge values, and derivatives."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_harness import (
    I32,
    I64,
    U8,
    arr,
    one,
    shapes,
)
from _numpy_harness import numpy_case as R

import funcgrad
import funcgrad.numpy as fnp

NONEMPTY = shapes(min_dims=1, min_side=1)
TWO = shapes(2)


def _two(lo=-3.0, hi=3.0):
    return lambda rng, dt, shp: ([arr(rng, shp[0], dt, lo, hi), arr(rng, shp[1], dt, lo, hi)], {})


def _ints(lo, hi):
    return lambda rng, dt, shp: ([arr(rng, shp[0], dt, lo, hi), arr(rng, shp[1], dt, lo, hi)], {})


def _frexp_make(rng, dt, shp):
    x = arr(rng, shp[0], dt, -1e3, 1e3)
    if x.size:
        x.ravel()[0] = 0.0
    return [x], {}


def _ldexp_make(rng, dt, shp):
    return [arr(rng, shp[0], dt), rng.integers(-20, 20, size=shp[1]).astype(np.int32)], {}


def _bits_make(rng, dt, shp):
    return [rng.integers(0, 256, size=(3, 10)).astype(np.uint8)], {"axis": int(rng.integers(-1, 2)) or None}


def _unwrap_make(rng, dt, shp):
    return [np.cumsum(arr(rng, shp[0], dt, -3.0, 3.0), axis=-1) if shp[0] else arr(rng, shp[0], dt)], {}


FLOATBITS = [
    R("nextafter", _two(), shapes=TWO, grad=False),
    R("spacing", one(-1e3, 1e3), grad=False),
    R("frexp", _frexp_make, grad=False),
    R("ldexp", _ldexp_make, shapes=TWO, grad_argnums=(0,)),
    R("modf", one(-5, 5)),
    R("gcd", _ints(-30, 30), shapes=TWO, dtypes=(I32, I64), grad=False),
    R("lcm", _ints(-30, 30), shapes=TWO, dtypes=(I32, I64), grad=False),
    R("bitwise_count", one(-1000, 1000), dtypes=(I32, U8), grad=False),
    R("bitwise_invert", one(-1000, 1000), dtypes=(I32, U8), grad=False),
    R("bitwise_left_shift", _ints(0, 7), shapes=TWO, dtypes=(I32,), grad=False),
    R("bitwise_right_shift", _ints(0, 7), shapes=TWO, dtypes=(I32,), grad=False),
    R("packbits", _bits_make, dtypes=(U8,), grad=False),
    R("unpackbits", _bits_make, dtypes=(U8,), grad=False),
    R("i0", one(-4, 4), rtol=1e-6),
    R("unwrap", _unwrap_make, shapes=NONEMPTY),
]

# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = FLOATBITS
CASE_EXAMPLES = {"values": 20}


# ----------------------------------------------------------------------------------------------
# edge values and derivatives


@np.errstate(over="ignore")
def test_floatbits_edges_are_bit_exact():
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -5e-324, 1.0, np.finfo(np.float64).max])
    for dt in (np.float32, np.float64):
        x = specials.astype(dt)
        for fn in ("spacing", "modf", "frexp"):
            got, want = getattr(fnp, fn)(x), getattr(np, fn)(x)
            if fn == "spacing":  # at -0.0 jax steps towards -inf (copysign), NumPy towards +inf
                want = np.where((x == 0) & np.signbit(x), -want, want)
            for g, w in zip(
                got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]
            ):
                np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"{fn} {dt}")
        y = np.array([1.0, -np.inf, np.nan, 0.0, np.inf, 2.0, 0.0, 1.0, 0.0], dt)
        np.testing.assert_array_equal(np.asarray(fnp.nextafter(x, y)), np.nextafter(x, y))
        e = np.array([3, -1100, 5, 1, 2000, 0, 1074, -1, -1], np.int32)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.asarray(fnp.ldexp(x, e)), np.ldexp(x, e))


def test_gcd_lcm_edges_and_unpackbits_count():
    a = np.array([0, 0, -12, 7, 2**30], np.int64)
    b = np.array([0, 5, 18, -21, 3 * 2**10], np.int64)
    np.testing.assert_array_equal(np.asarray(fnp.gcd(a, b)), np.gcd(a, b))
    np.testing.assert_array_equal(np.asarray(fnp.lcm(a, b)), np.lcm(a, b))
    bits = np.array([[5, 255], [0, 128]], np.uint8)
    for count in (None, 3, 12, -2):
        for order in ("big", "little"):
            np.testing.assert_array_equal(
                np.asarray(fnp.unpackbits(bits, axis=1, count=count, bitorder=order)),
                np.unpackbits(bits, axis=1, count=count, bitorder=order),
            )
    mask = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(
        np.asarray(fnp.packbits(mask, axis=1, bitorder="little")), np.packbits(mask, 1, "little")
    )


def test_i0_gradient_is_i1():
    from scipy.special import i1

    x = np.array([-2.5, -0.1, 0.0, 0.7, 3.0])
    np.testing.assert_allclose(
        np.asarray(funcgrad.vmap(funcgrad.grad(fnp.i0))(x)), i1(x), rtol=1e-12, atol=1e-15
    )


def test_i0_derivatives_at_zero_with_abs_prime_one():
    # i0 = exp(|x|) i0e(x): with JAX's abs'(0) = 1 the product rule gave i0'(0) = 1; i0' = i1 and
    # i0'' = (i0 + i2) / 2 hold at every x, 0 included. (Found by HIPS autograd's suite.)
    import scipy.special as sps

    x = np.array([-1.5, -1e-3, 0.0, 1e-3, 2.0])
    g = funcgrad.vmap(funcgrad.grad(fnp.i0))(x)
    np.testing.assert_allclose(g, sps.i1(x), rtol=1e-12, atol=1e-15)
    gg = funcgrad.vmap(funcgrad.grad(funcgrad.grad(fnp.i0)))(x)
    np.testing.assert_allclose(gg, (sps.i0(x) + sps.iv(2, x)) / 2, rtol=1e-12)


def test_spacing_and_lcm_as_jax():
    # JAX's lax_numpy_operators_test through funcgrad.as_jax: spacing of float16 steps up for
    # negative values (NumPy's), subnormals whose step flushes to 0 get the smallest subnormal;
    # lcm takes |x1| * (|x2| // gcd) in that order, so an overflow wraps as NumPy's and JAX's
    import pytest

    jax = pytest.importorskip("jax")
    import ml_dtypes

    for dt in (np.float16, np.float32, ml_dtypes.bfloat16, np.float64):
        info = ml_dtypes.finfo(dt)
        x = np.array(
            [0.0, -0.0, 1.0, -1.0, -1e-3, np.inf, info.smallest_subnormal, -info.smallest_subnormal], dt
        )
        got, want = fnp.spacing(x), jax.numpy.spacing(x)
        if dt is not np.float64:  # (jax runs in 32-bit mode here)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
        ref = np.spacing(x.astype(got.dtype)).astype(np.float32)
        if dt in (np.float32, np.float64):  # (NumPy's float16 steps up everywhere; ml_dtypes' as jax)
            ref = np.where(np.signbit(x) & (x == 0), -ref, ref)
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(ref, np.float32))
    rng = np.random.RandomState(1)
    a, b = rng.randint(-128, 127, 64).astype(np.int8), rng.randint(-128, 127, 64).astype(np.int8)
    np.testing.assert_array_equal(np.asarray(fnp.lcm(a, b)), np.asarray(jax.numpy.lcm(a, b)))
    np.testing.assert_array_equal(np.asarray(fnp.lcm(a, b)), np.lcm(a, b))


def test_unwrap_of_integers_bools_and_empty_axes_as_jax():
    # Fuzzer finds: integer phases wrap in their own type (uint8 [3, 200, 1] with period 4 is
    # [3, 4, 5] in jax; funcgrad's float zero made the correction float and saturated it); bools
    # with an integer period are integers; an empty axis gives the promoted phases as they are
    # (weak for bools and ints, as jax's promote_dtypes).
    jax = pytest.importorskip("jax")
    cases = [
        (np.array([3, 200, 1], np.uint8), {"period": 4}),
        (np.array([3, -100, 100, 7], np.int8), {"period": 4, "discont": 1}),
        (np.array([True, False, True]), {"period": 4}),
        (np.zeros((0, 1, 0), bool), {}),
        (np.zeros((2, 0), np.int32), {"axis": 1}),
        (np.zeros((0,), bool), {"period": 4}),
    ]
    for x, kw in cases:
        with jax.enable_x64(True):  # (funcgrad's mode here)
            want = jax.numpy.unwrap(x, **kw)
        got = fnp.unwrap(x, **kw)
        assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape), (x, kw)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_ldexp_passes_zeros_and_infinities_through_as_jax_and_reaches_every_exponent():
    # Fuzzer find (linearize o linearize of ldexp(x, 2) at 0): jax's formula returns zeros and
    # infinities as they are, so its derivative there is 1, not 2**x2. Values stay NumPy's exact
    # ldexp, also where a power of two of the step is subnormal or two steps stopped short of
    # overflow (float16 ldexp(1.5, -15) was 0, ldexp(3e-5, 127) 32192).
    jax = pytest.importorskip("jax")
    for dt in (np.float16, np.float32):
        for x in (0.0, -0.0, np.inf, 1.5):
            xs, t = np.array(x, dt), np.array(0.75, dt)
            got = funcgrad.jvp(lambda v: fnp.ldexp(v, 2), (xs,), (t,))
            want = jax.jvp(lambda v: jax.numpy.ldexp(v, 2), (xs,), (t,))
            np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
            np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    for x, e, dt in (
        (1.5, -15, np.float16),
        (3e-5, 127, np.float16),
        (6e4, -140, np.float32),
        (0.7, 200, np.float64),
    ):
        np.testing.assert_array_equal(np.asarray(fnp.ldexp(np.array(x, dt), e)), np.ldexp(np.array(x, dt), e))


def test_ldexp_takes_a_boolean_exponent_and_refuses_inexact_ones_as_jax():
    # (the fuzzer's random programs) JAX's ldexp converts a boolean exponent and raises ValueError
    # for an inexact exponent or a complex x1; funcgrad raised TypeError for all three
    jnp = pytest.importorskip("jax.numpy")
    x, e = np.array([1.5, 2.0], np.float32), np.array([True, False])
    got, want = fnp.ldexp(x, e), jnp.ldexp(x, e)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for a, b in ((x, np.float32(1.0)), (np.complex64(1), 2)):
        with pytest.raises(ValueError, match="ldexp not supported for input types"):
            jnp.ldexp(a, b)
        with pytest.raises(ValueError, match="ldexp not supported for input types"):
            fnp.ldexp(a, b)
