"""funcgrad.scipy.signal and funcgrad.numpy.convolve/correlate against SciPy/NumPy: values over
ranks, shape orders and modes (and convolve2d/correlate2d boundaries), derivatives against finite
differences, vmap against a loop, jit against eager; each is one convolution primitive."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss
from funcgrad.primitives.conv import conv_general_dilated_p

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.scipy import signal as fs
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)
SHAPES = [
    ((7,), (3,)),
    ((3,), (7,)),
    ((5, 6), (2, 3)),
    ((2, 3), (5, 6)),
    ((4, 5, 3), (2, 2, 3)),
    ((4, 4), (4, 4)),
]
MODES = ["full", "same", "valid"]


@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
def test_nd_matches_scipy(shapes, mode, name):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    want = getattr(ss, name)(a, b, mode)
    got = getattr(fs, name)(a, b, mode)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shapes", [((5, 6), (2, 3)), ((2, 3), (5, 6)), ((4, 4), (3, 2))])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("boundary, fillvalue", [("fill", 0), ("fill", 1.5), ("wrap", 0), ("symm", 0)])
@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
def test_2d_matches_scipy(shapes, mode, boundary, fillvalue, name):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    want = getattr(ss, name)(a, b, mode, boundary, fillvalue)
    got = getattr(fs, name)(a, b, mode, boundary, fillvalue)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d", "convolve", "correlate"])
def test_complex_inputs_match_scipy(name):
    # correlate2d(mode='valid') with the smaller input first gave the conjugate of SciPy's (JAX's
    # scipy_signal_test --x64, complex128)
    c = lambda shape: RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)  # noqa: E731
    for shapes in [((5, 6), (2, 3)), ((2, 3), (4, 4)), ((3, 3), (3, 3))]:
        a, b = c(shapes[0]), c(shapes[1])
        for mode in MODES:
            want = getattr(ss, name)(a, b, mode)
            np.testing.assert_allclose(
                np.asarray(getattr(fs, name)(a, b, mode)), want, rtol=1e-10, atol=1e-10
            )


def test_integer_inputs_promote_like_jax_and_methods():
    a, b = np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1])
    out = fs.convolve(a, b)
    assert out.dtype == np.float64
    assert out.tolist() == [1.0, 3.0, 6.0, 7.0, 6.0, 3.0, 1.0]
    for method in ("auto", "direct", "fft"):
        np.testing.assert_allclose(np.asarray(fs.convolve(a, b, "same", method)), ss.convolve(a, b, "same"))
    with pytest.raises(ValueError, match="method"):
        fs.convolve(a, b, method="winograd")
    with pytest.raises(ValueError, match="mode"):
        fs.convolve(a, b, mode="middle")
    with pytest.raises(ValueError, match="at least as large"):
        fs.convolve(np.ones((3, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="2-dimensional"):
        fs.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="boundary"):
        fs.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="reflect")


def test_fftconvolve_axes():
    a, b = RNG.standard_normal((3, 8)), RNG.standard_normal((3, 4))
    for mode in MODES:
        np.testing.assert_allclose(
            np.asarray(fs.fftconvolve(a, b, mode, axes=1)), ss.fftconvolve(a, b, mode, axes=1)
        )
        np.testing.assert_allclose(
            np.asarray(fs.fftconvolve(a, b[:1], mode, axes=-1)), ss.fftconvolve(a, b[:1], mode, axes=-1)
        )
    with pytest.raises(ValueError, match="not convolved"):
        fs.fftconvolve(a, RNG.standard_normal((2, 4)), axes=1)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_transformations(name, mode):
    a, b = RNG.standard_normal((6, 5)), RNG.standard_normal((3, 2))
    f = getattr(fs, name)
    check_grads(lambda a, b: f(a, b, mode), (a, b), order=2)
    closed = funcgrad.make_jaxpr(lambda a, b: f(a, b, mode))(a, b)
    assert sum(e.primitive is conv_general_dilated_p for e in closed.jaxpr.eqns) == 1
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda a, b: f(a, b, mode))(a, b)), np.asarray(f(a, b, mode)), rtol=1e-12
    )
    batch_a = RNG.standard_normal((3, 6, 5))
    got = funcgrad.vmap(lambda a: f(a, b, mode))(batch_a)
    loop = np.stack([np.asarray(f(x, b, mode)) for x in batch_a])
    np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# funcgrad.numpy.convolve / correlate (the value/dtype tables are in
# tests/surface/numpy/test_numpy_functions.py)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_numpy_convolve_is_one_convolution(name, mode):
    a, v = RNG.standard_normal(7), RNG.standard_normal(3)
    f = getattr(fnp, name)
    closed = funcgrad.make_jaxpr(lambda a, v: f(a, v, mode))(a, v)
    assert sum(e.primitive is conv_general_dilated_p for e in closed.jaxpr.eqns) == 1
    np.testing.assert_allclose(np.asarray(f(a, v, mode)), getattr(np, name)(a, v, mode), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(f(v, a, mode)), getattr(np, name)(v, a, mode), rtol=1e-12)
    x8 = np.array([100, 100, 100], np.int8)
    wide = f(x8, x8, mode, preferred_element_type=np.int32)
    assert wide.dtype == np.int32
    np.testing.assert_array_equal(
        np.asarray(wide), getattr(np, name)(x8.astype(np.int32), x8.astype(np.int32), mode)
    )
    np.testing.assert_allclose(np.asarray(f(a, v, mode, precision="highest")), getattr(np, name)(a, v, mode))


@pytest.mark.parametrize("mode", MODES)
def test_fftconvolve_complex_long_kernels_and_transformations(mode):
    a = RNG.standard_normal((40, 3)) + 1j * RNG.standard_normal((40, 3))
    b = RNG.standard_normal((33, 3))
    np.testing.assert_allclose(
        np.asarray(fs.fftconvolve(a, b, mode, axes=0)), ss.fftconvolve(a, b, mode, axes=0), atol=1e-10
    )
    x, k = RNG.standard_normal(17), RNG.standard_normal(9)
    check_grads(lambda x, k: fs.fftconvolve(x, k, mode), (x, k), order=2)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda x, k: fs.fftconvolve(x, k, mode))(x, k)),
        ss.fftconvolve(x, k, mode),
        atol=1e-10,
    )
    batched = funcgrad.vmap(lambda x: fs.fftconvolve(x, k, mode))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(np.asarray(batched[1]), ss.fftconvolve(2 * x, k, mode), atol=1e-10)


@pytest.mark.parametrize("shapes", [((), ()), ((1,), (2,)), ((1, 3), (1, 1))])
def test_fftconvolve_of_length_one_axes_is_the_product_as_jax(shapes):
    # No convolved axis longer than 1 on both sides (0-d operands too): jax multiplies, so the
    # result is real and exact (a transform made 0-d operands complex; the differential fuzzer)
    import jax.scipy.signal as js

    a, b = (np.asarray(RNG.standard_normal(s), np.float32) for s in shapes)
    for mode in ("full", "same"):
        got, want = fs.fftconvolve(a, b, mode), js.fftconvolve(a, b, mode)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
