"""``lax.Tolerance``/``AccuracyMode`` (the ``accuracy=`` of JAX's unary functions) and
``lax.shape_as_value`` against jax: the same values with and without an accuracy request (XLA's CPU
backend has one implementation), JAX's errors for a bad ``Tolerance``, and the dims' dtype."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import lax

jax = pytest.importorskip("jax")

NAMES = [
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "tanh",
    "logistic",
    "sin",
    "cos",
    "tan",
    "sqrt",
    "rsqrt",
    "cbrt",
]


def _all(lib, accuracy, x):
    return [getattr(lib, name)(x, accuracy=accuracy) for name in NAMES]


def test_accuracy_requests_give_jaxs_values():
    x = np.linspace(0.1, 1.3, 5, dtype=np.float32)
    # one program of all thirteen functions: with a request it is the program without one
    # (XLA's CPU backend has one implementation of each), and jax's values within an ulp (jax's
    # oracle compiles cheaply here, conftest's NOTE: [oracle compile options])
    tol, jtol = lax.Tolerance(atol=1e-5), jax.lax.Tolerance(atol=1e-5)
    want = jax.jit(lambda v: _all(jax.lax, jtol, v))(x)
    jitted = funcgrad.jit(lambda v: _all(lax, tol, v))(x)
    plain = funcgrad.jit(lambda v: [getattr(lax, name)(v) for name in NAMES])(x)
    for name, w, j, p in zip(NAMES, want, jitted, plain):
        np.testing.assert_array_equal(np.asarray(j), np.asarray(p), err_msg=name)
        np.testing.assert_allclose(np.asarray(j), np.asarray(w), rtol=3e-7, err_msg=name)
    # eagerly (NumPy's float32 functions, within an ulp of XLA's), each kind of request
    for ours in (tol, lax.Tolerance(rtol=1e-2, ulps=2), lax.AccuracyMode.HIGHEST):
        for name, w, got in zip(NAMES, want, _all(lax, ours, x)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=3e-7, err_msg=name)
    with pytest.raises(TypeError, match="accuracy must be"):
        lax.exp(x, accuracy=1e-3)


def test_expm1_derivative_under_highest_accuracy_is_exp_as_jax():
    # (JAX's lax_test testExpm1Grad) under AccuracyMode.HIGHEST expm1's derivative is exp(x), which
    # stays positive where expm1(x) + 1 rounds to 0 (below about -17 in float32)
    x = np.arange(-80.0, 80.0, 8.0, dtype=np.float32)
    highest = lax.AccuracyMode.HIGHEST
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda v: lax.expm1(v, accuracy=highest))))(x)
    want = jax.jit(jax.vmap(jax.grad(lambda v: jax.lax.expm1(v, accuracy=jax.lax.AccuracyMode.HIGHEST))))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=3e-7)
    assert float(funcgrad.grad(lambda v: lax.expm1(v, accuracy=highest))(np.float32(-40.0))) > 0
    assert float(funcgrad.grad(lax.expm1)(np.float32(-40.0))) == 0.0  # (JAX's default rule too)


@pytest.mark.parametrize("kwargs", [{}, {"atol": -1.0}, {"ulps": -1}])
def test_bad_tolerances_raise_as_jax(kwargs):
    with pytest.raises(ValueError) as theirs:
        jax.lax.Tolerance(**kwargs)
    with pytest.raises(ValueError, match=str(theirs.value)):
        lax.Tolerance(**kwargs)


def test_shape_as_value_as_jax():
    for shape in [(2, 3), (7,), (2**40, 1), ()]:
        want, got = jax.lax.shape_as_value(shape), lax.shape_as_value(shape)
        assert got.dtype == want.dtype and got.shape == want.shape, shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # inside jit: the traced argument's (concrete) shape
    out = funcgrad.jit(lambda x: lax.shape_as_value(x.shape) * 2)(np.ones((4, 5)))
    assert out.tolist() == [8, 10]
