"""NumPy compatibility of funcgrad.numpy's polynomials and windows (``numpy/polynomial.py``):
values and dtypes against NumPy, derivatives against finite differences, vmap against a loop, jit
against eager (the table), and polyfit's and trim_zeros's options."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_harness import (
    F64,
    arr,
)
from _numpy_harness import numpy_case as R

import funcgrad
import funcgrad.numpy as fnp


def _poly(n1, n2):
    return lambda rng, dt, shp: ([arr(rng, (n1,), dt), arr(rng, (n2,), dt)], {})


def _polydiv_make(rng, dt, shp):
    v = arr(rng, (3,), dt)
    v[0] = 1.5 + rng.random()  # a leading coefficient away from zero
    return [arr(rng, (5,), dt), v], {}


POLYNOMIAL = [
    R("polyadd", _poly(3, 5)),
    R("polysub", _poly(4, 2)),
    R("polymul", _poly(3, 4)),
    R(
        "polydiv",
        _polydiv_make,
        rtol=1e-4,
        fn=lambda u, v: fnp.polydiv(u, v, trim_leading_zeros=True),
        dtypes=(F64,),  # NumPy's float32 remainder keeps round-off where funcgrad eliminates exactly
        grad=False,
        vmap=False,
        jit=False,
    ),
    R(
        "polydiv",
        _polydiv_make,
        rtol=1e-4,
        ref=lambda u, v: np.polydiv(u, v)[0],
        fn=lambda u, v: fnp.polydiv(u, v)[0],
        id="polydiv-quotient",
    ),
    # NumPy's polyder/polyint make float32 float64 (an int64 arange factor); funcgrad keeps it, as JAX
    R(
        "polyder",
        lambda rng, dt, shp: ([arr(rng, (5,), dt)], {"m": int(rng.integers(0, 4))}),
        expected_dtype=lambda dt: dt,
    ),
    R(
        "polyint",
        lambda rng, dt, shp: ([arr(rng, (4,), dt)], {"m": int(rng.integers(0, 3))}),
        expected_dtype=lambda dt: dt,
    ),
    R("poly", lambda rng, dt, shp: ([arr(rng, (4,), dt)], {}), rtol=1e-4),
    R("polyval", _poly(4, 3)),
    R("polyfit", lambda rng, dt, shp: ([arr(rng, (8,), dt), arr(rng, (8,), dt)], {"deg": 2}), dtypes=(F64,)),
    R(
        "trim_zeros",
        lambda rng, dt, shp: ([np.array([0, 0, 1.5, 0, 2, 0], dt)], {"trim": "fb"}),
        vmap=False,
        jit=False,
        grad=False,
    ),
]


def _window(name):
    return R(
        name,
        lambda rng, dt, shp: ([], {"M": int(rng.integers(0, 9))}),
        dtypes=(F64,),
        grad=False,
        vmap=False,  # nothing to batch: the window's length is static
        ref=lambda M, name=name: getattr(np, name)(M),
        fn=lambda M, name=name: getattr(fnp, name)(M),
    )


WINDOWS = [_window(n) for n in ("bartlett", "blackman", "hamming", "hanning")] + [
    R(
        "kaiser",
        lambda rng, dt, shp: ([], {"M": int(rng.integers(0, 9)), "beta": float(rng.uniform(0, 10))}),
        dtypes=(F64,),
        grad=False,
        vmap=False,
        rtol=1e-6,
    )
]

# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = POLYNOMIAL + WINDOWS
CASE_EXAMPLES = {"values": 20}


def test_polyfit_full_weights_and_cov():
    rng = np.random.default_rng(1)
    x, y, w = rng.uniform(-1, 1, 12), rng.normal(size=12), rng.uniform(0.5, 2, 12)
    for kwargs in ({"full": True}, {"w": w}, {"cov": True}, {"cov": "unscaled", "w": w}):
        got, want = fnp.polyfit(x, y, 3, **kwargs), np.polyfit(x, y, 3, **kwargs)
        for g, e in zip(
            got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]
        ):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-8, atol=1e-10)
    y2 = np.stack([y, 2 * y + 1], axis=1)
    np.testing.assert_allclose(np.asarray(fnp.polyfit(x, y2, 2)), np.polyfit(x, y2, 2), rtol=1e-10)


def test_trim_zeros_modes():
    f = np.array([0, 0, 3, 0, 4, 0, 0])
    for trim in ("f", "b", "fb", "bf"):
        np.testing.assert_array_equal(np.asarray(fnp.trim_zeros(f, trim)), np.trim_zeros(f, trim))
    np.testing.assert_array_equal(np.asarray(fnp.trim_zeros(np.zeros(3))), np.trim_zeros(np.zeros(3)))


def test_polyadd_polysub_run_along_axis_0_keep_integers_and_poly_of_a_scalar():
    # jnp.polyadd's/polysub's/poly's docstrings: 2-D stacks of coefficient rows, int32 stays int32
    x3, x4 = np.array([[2, 3, 1]], np.int32), np.array([[5, 7, 3], [8, 2, 6]], np.int32)
    added = fnp.polyadd(x3, x4)
    assert added.dtype == np.int32 and added.tolist() == [[5, 7, 3], [10, 5, 7]]
    assert fnp.polysub(x3, x4).tolist() == [[-5, -7, -3], [-6, 1, -5]]
    assert fnp.polysub(np.array([[5, 7, 9], [8, 6, 4]]), np.array([2])).tolist() == [[5, 7, 9], [6, 4, 2]]
    assert fnp.polyadd(np.array([2, 3]), np.array([5, 4, 1])).tolist() == [5, 6, 4]
    assert fnp.poly(1).tolist() == [1.0, -1.0]
    assert [x.tolist() for x in fnp.vsplit(np.array([1, 2, 3, 4, 5, 6]), 2)] == [[1, 2, 3], [4, 5, 6]]


def test_roots_of_a_constant_polynomial_are_complex_as_jax():
    # JAX's own polynomial_test (testRoots): a degree-0 polynomial, after stripping zeros or not,
    # has no roots, in the complex dtype eigvals gives (was the real input dtype).
    jax = __import__("pytest").importorskip("jax")
    for p in ([3.0], [0.0, 3.0], [3.0, 0.0, 0.0], [0.0, 0.0]):
        for dt in (np.float32, np.float64):
            got = fnp.roots(np.array(p, dt))
            want = jax.numpy.roots(np.array(p, dt))
            assert got.dtype == np.result_type(dt, np.complex64), (p, dt, got.dtype)
            assert want.dtype.kind == "c" and got.shape == want.shape
            np.testing.assert_allclose(np.sort_complex(np.asarray(got)), np.sort_complex(np.asarray(want)))


def test_roots_keep_zeros_as_jax():
    # strip_zeros=False (JAX's jit-compatible rule, its docstring's example): the roots a leading
    # zero removes are NaN, last; zero roots before them; eagerly and under jit (was NaN from a
    # division by the zero leading coefficient).
    import funcgrad

    jax = __import__("pytest").importorskip("jax")
    for p in ([0, 1, 2], [0, 0, 1, -3, 2]):
        a = np.array(p, np.float32)
        want = np.asarray(jax.numpy.roots(a, strip_zeros=False))
        got = fnp.roots(a, strip_zeros=False)
        assert got.dtype == want.dtype, (p, got.dtype)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6, equal_nan=True)
    # all zeros: every root NaN; trailing zeros: zero roots (JAX's values, without its compiles)
    nan = complex(np.nan, np.nan)
    np.testing.assert_array_equal(
        np.asarray(fnp.roots(np.zeros(3, np.float32), strip_zeros=False)), [nan, nan]
    )
    got = np.asarray(fnp.roots(np.array([1, 2, 0, 0], np.float32), strip_zeros=False))
    np.testing.assert_allclose(got, [-2, 0, 0], atol=1e-6)
    # under jit (the count of leading zeros is traced): the same roots
    a = np.array([0, 0, 1, -3, 2], np.float32)
    jitted = funcgrad.jit(lambda p: fnp.roots(p, strip_zeros=False))(a)
    np.testing.assert_allclose(
        np.asarray(jitted), np.asarray(fnp.roots(a, strip_zeros=False)), equal_nan=True
    )


def test_roots_of_trailing_zeros_in_jax_s_order():
    # JAX strips only leading zeros: trailing ones stay in the companion matrix, whose zero roots
    # come in LAPACK's order (NumPy strips them and appends the zeros: funcgrad's order was
    # NumPy's; session 18's fuzzing)
    jax = __import__("pytest").importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    for p in ([0.8, 0.3, 0.0], [-0.2, -0.5, 0.6, 0.0], [0.0, 1.0, -2.0, 0.0, 0.0], [1.0, 0.0, 0.0]):
        for dt in (np.float32, np.float64):
            a = np.array(p, dt)
            got, want = np.asarray(fnp.roots(a)), np.asarray(jax.numpy.roots(a))
            assert got.dtype == want.dtype and got.shape == want.shape, (p, got, want)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(p))


def test_polymul_and_polydiv_trim_as_jax():
    # The four-way fuzzer (ops_quad): polymul(trim_leading_zeros=True) of an all-zero polynomial
    # kept its last coefficient (a -0.0 with a tangent: jvp 3.18 where jax's is 0, jax trims it to
    # nothing and multiplies a constant 0) and refused length-1 operands under jit (jax trims only
    # where one has two coefficients or more); polydiv's remainder is JAX's (no exact elimination,
    # trimmed below sqrt(eps), empty when all of it is)
    import pytest

    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    for a, b in [
        ([0.0, 0.0], [5.0, 5.0]),
        ([-0.0], [2.0]),
        ([0.0, 1.0], [0.0]),
        ([], [1.0, 2.0]),
        ([1.0], [2.0]),
    ]:
        a, b = np.array(a), np.array(b)
        for trim in (False, True):
            got, want = fnp.polymul(a, b, trim_leading_zeros=trim), jnp.polymul(a, b, trim_leading_zeros=trim)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            if a.size:
                t = (np.ones_like(a),)
                got = funcgrad.jvp(lambda x, b=b, k=trim: fnp.polymul(x, b, trim_leading_zeros=k), (a,), t)[1]
                want = jax.jvp(lambda x, b=b, k=trim: jnp.polymul(x, b, trim_leading_zeros=k), (a,), t)[1]
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    got = funcgrad.jit(lambda x, y: fnp.polymul(x, y, trim_leading_zeros=True))(np.ones(1), np.ones(1) * 2)
    np.testing.assert_array_equal(np.asarray(got), [2.0])
    for u, v in [([1.0, 0.0, -1.0], [1.0, 1.0]), ([0.1, 0.7, 0.3], [0.3, 0.7]), ([3.0, 1e-9, 2.0], [3.0])]:
        u, v = np.array(u), np.array(v)
        for trim in (False, True):
            got, want = fnp.polydiv(u, v, trim_leading_zeros=trim), jnp.polydiv(u, v, trim_leading_zeros=trim)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_windows_truncate_a_float_length_and_refuse_a_negative_one():
    # (session 22's fuzzer) as JAX's concrete_or_error(int, M) and its full((M,), ...): jnp.blackman(2.5)
    # is blackman(2), jnp.blackman(-1) a TypeError (funcgrad returned an empty window)
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        assert getattr(fnp, name)(3.7).tolist() == getattr(fnp, name)(3).tolist()
        with pytest.raises(TypeError, match="nonnegative"):
            getattr(fnp, name)(-1)
    with pytest.raises(TypeError, match="nonnegative"):
        fnp.kaiser(-2, 1.0)
