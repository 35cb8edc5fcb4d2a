"""``lax.cumlogsumexp``'s derivative is JAX's: the JVP of an associative scan of ``logaddexp`` with
its custom JVP (``t1 exp(x1 - out) + t2 exp(x2 - out)``). funcgrad's scan combined a plain formula
whose derivative (through ``max``/``abs``/``log1p``) rounded float32 gradients differently in 352 of
512 entries (relative 4e-4). The forward values still differ from JAX's in the last places (JAX's
primal is XLA's reduce-window rewrite; see the session-21 report)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_float32_cumlogsumexp_gradient_bit_for_bit_as_jax(reverse, axis):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 40)) * 3).astype(np.float32)
    w = rng.standard_normal((6, 40)).astype(np.float32)

    def run(T, np_):
        loss = lambda x, w: np_.sum(T.lax.cumlogsumexp(x, axis=axis, reverse=reverse) * w)  # noqa: E731
        return np.asarray(T.jit(T.grad(loss))(x, w))

    np.testing.assert_array_equal(run(funcgrad, fnp), run(jax, jnp))
