"""The derivatives of ``erf``/``erfc``/``erf_inv`` multiply in JAX's order, ``c (t e)`` (``t (e c)``
rounded float32 gradients of erf/erfc/erfinv, and of ``ndtr`` built on them, differently from
jax's in about a third of the entries; the session-21 composition fuzzing's elementwise probe)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

_FUNCTIONS = ["erf", "erfc", "erfinv", "ndtr"]


@pytest.mark.parametrize("name", _FUNCTIONS)
@pytest.mark.parametrize("order", [1, 2])
def test_float32_derivatives_bit_for_bit_as_jax(name, order):
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.95, 0.95, 512).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)

    def run(T, np_):
        f = getattr(T.scipy.special, name)
        first = T.grad(lambda x, w: np_.sum(f(x) * w))
        second = T.grad(lambda x, w: np_.sum(first(x, w) * w))
        return np.asarray(T.jit(first if order == 1 else second)(x, w))

    got, want = run(funcgrad, fnp), run(jax, jnp)
    np.testing.assert_array_equal(got, want)
