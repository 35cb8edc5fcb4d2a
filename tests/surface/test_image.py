"""funcgrad.image (resize, scale_and_translate, ResizeMethod) against jax.image (the oracle) and
closed forms: every method, up- and downsampling, antialiasing on and off, float64 and float32,
derivatives against finite differences in float64 (with respect to the image, the scale and the
translation), jit against eager, vmap against a loop, and errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import image
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 7, 9, 3))
METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
SHAPES = [(2, 13, 5, 3), (2, 3, 20, 3), (2, 7, 9, 3), (4, 7, 4, 2), (2, 1, 1, 3)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_matches_jax(method, antialias):
    x32 = X.astype(np.float32)
    # jax's side of every shape and both dtypes is one compiled program (one XLA compile, not one per call).
    theirs = jax.jit(
        lambda x, x32: [
            jax.image.resize(v, shape, method, antialias=antialias) for shape in SHAPES for v in (x, x32)
        ]
    )(X, x32)
    for i, shape in enumerate(SHAPES):
        ours, want = image.resize(X, shape, method, antialias=antialias), theirs[2 * i]
        assert ours.shape == want.shape and ours.dtype == want.dtype
        np.testing.assert_allclose(ours, want, rtol=1e-12, atol=1e-12)
        ours, want = image.resize(x32, shape, method, antialias=antialias), theirs[2 * i + 1]
        assert ours.dtype == want.dtype == np.float32
        np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


def test_names_and_enum_match_jax():
    assert [m.name for m in image.ResizeMethod] == [m.name for m in jax.image.ResizeMethod]
    assert [m.value for m in image.ResizeMethod] == [m.value for m in jax.image.ResizeMethod]
    aliases = ["nearest", "linear", "bilinear", "trilinear", "triangle", "lanczos3", "lanczos5", "cubic",
               "bicubic", "tricubic", "cubic-pytorch", "bicubic-pytorch", "area"]  # fmt: skip
    for name in aliases:
        assert image.ResizeMethod.from_string(name).name == jax.image.ResizeMethod.from_string(name).name
    x = RNG.normal(size=(5, 6))
    np.testing.assert_array_equal(
        image.resize(x, (3, 8), image.ResizeMethod.CUBIC), image.resize(x, (3, 8), "bicubic")
    )


def test_closed_forms():
    # Identity warp: every interpolating kernel returns the image.
    for method in METHODS:
        np.testing.assert_allclose(image.resize(X, X.shape, method), X, atol=1e-15)
    # Linear upsampling of a ramp is the ramp at the half-pixel centres (clamped at the edges).
    ramp = np.arange(4.0)
    expected = np.clip((np.arange(8) + 0.5) / 2 - 0.5, 0, 3)
    np.testing.assert_allclose(image.resize(ramp, (8,), "linear"), expected, atol=1e-15)
    # Area downsampling by 2 averages pairs; nearest keeps integer dtypes.
    np.testing.assert_allclose(image.resize(np.arange(8.0), (4,), "area"), [0.5, 2.5, 4.5, 6.5])
    ints = np.arange(12).reshape(3, 4)
    out = image.resize(ints, (6, 2), "nearest")
    assert out.dtype == ints.dtype
    np.testing.assert_array_equal(out, jax.image.resize(ints, (6, 2), "nearest"))
    assert image.resize(ints, (6, 2), "linear").dtype == np.float64


@pytest.mark.parametrize("method", ["linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"])
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_matches_jax(method, antialias):
    cases = [
        ((2, 11, 6, 3), (1, 2), np.array([1.7, 0.6]), np.array([-0.3, 1.2])),
        ((2, 11, 6, 3), (1, 2), np.array([0.4, 2.5]), np.array([2.0, -3.0])),
        ((2, 11, 6, 3), (1, 2), np.array([1.0, 1.0]), np.array([0.5, 0.0])),
        ((2, 7, 12, 3), (-2,), np.array([1.3]), np.array([0.25])),  # negative spatial dims
    ]
    # jax's side of every case is one compiled program, scales and translations as its arguments.
    theirs = jax.jit(
        lambda x, st: [
            jax.image.scale_and_translate(x, shape, dims, s, t, method, antialias=antialias)
            for (shape, dims, _, _), (s, t) in zip(cases, st)
        ]
    )(X, [(s, t) for _, _, s, t in cases])
    for (shape, dims, s, t), want in zip(cases, theirs):
        ours = image.scale_and_translate(X, shape, dims, s, t, method, antialias=antialias)
        np.testing.assert_allclose(ours, want, rtol=1e-12, atol=1e-12)


def test_derivatives_match_finite_differences_and_jax():
    x = RNG.normal(size=(5, 6))
    for method in ["linear", "lanczos3", "cubic", "area"]:
        check_grads(lambda x, method=method: image.resize(x, (8, 3), method), (x,), order=2)
    # With respect to scale and translation (away from the kernels' kinks).
    f = lambda s, t: image.scale_and_translate(x, (7, 4), (0, 1), s, t, "cubic")  # noqa: E731
    s, t = np.array([1.37, 0.71]), np.array([0.23, -0.41])
    check_grads(f, (s, t), order=1)
    g = lambda s, t: jax.image.scale_and_translate(x, (7, 4), (0, 1), s, t, "cubic")  # noqa: E731
    ct = RNG.normal(size=(7, 4))
    ours = funcgrad.vjp(f, s, t)[1](ct)
    theirs = jax.jit(lambda s, t, ct: jax.vjp(g, s, t)[1](ct))(s, t, ct)  # (one program, not one per op)
    for o, th in zip(ours, theirs):
        np.testing.assert_allclose(o, th, rtol=1e-10, atol=1e-12)


def test_jit_matches_eager_and_vmap_matches_loop():
    for method in ["nearest", "linear", "lanczos5", "cubic-pytorch"]:
        f = lambda x, method=method: image.resize(x, (5, 12, 3), method)  # noqa: E731
        np.testing.assert_allclose(funcgrad.jit(f)(X[0]), f(X[0]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(funcgrad.vmap(f)(X), np.stack([f(xi) for xi in X]), rtol=1e-12, atol=1e-12)
    h = lambda t: image.scale_and_translate(X[0], (7, 9, 3), (0, 1), np.array([1.2, 0.9]), t, "linear")  # noqa: E731
    ts = RNG.normal(size=(4, 2))
    np.testing.assert_allclose(funcgrad.vmap(h)(ts), np.stack([h(t) for t in ts]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(funcgrad.jit(h)(ts[0]), h(ts[0]), rtol=1e-12, atol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(X, X.shape, "bogus")
    with pytest.raises(ValueError, match="number of dimensions"):
        image.resize(X, (3, 4), "linear")
    with pytest.raises(ValueError, match="nearest neighbor"):
        image.scale_and_translate(X, X.shape, (1,), np.ones(1), np.zeros(1), "nearest")
    with pytest.raises(ValueError, match="one entry per spatial dimension"):
        image.scale_and_translate(X, X.shape, (1, 2), np.ones(1), np.zeros(2), "linear")
    with pytest.raises(ValueError, match="empty dimension"):
        image.resize(np.zeros((0, 3)), (2, 3), "linear")
    with pytest.raises(ValueError, match="non-negative"):
        image.resize(X, (2, -1, 9, 3), "linear")
    with pytest.raises(TypeError, match="integer type"):  # a fractional size (JAX's TypeError)
        image.resize(X, (2.5, 4, 9, 3), "linear")
