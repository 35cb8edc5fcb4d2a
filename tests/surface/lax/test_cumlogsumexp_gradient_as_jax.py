"""``lax.cumlogsumexp``'s derivative is JAX's: the JVP of an associative scan of ``logaddexp`` with
its custom JVP (``t1 exp(x1 - out) + t2 exp(x2 - out)``). funcgrad's scan combined a plain formula
whose derivative (through ``max``/``abs``/``log1p``) rounded float32 gradients differently in 352 of
512 entries (relative 4e-4). The forward values are JAX's too: XLA's window reduction of
``logaddexp`` from -inf, as JAX lowers its primitive (the scan's differed from jit's in 138 of 512
float32 entries, and gave -0 where JAX's is +0)."""

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


def test_float32_cumlogsumexp_forward_bit_for_bit_as_jax():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    x[0, :5] = [np.inf, -np.inf, np.nan, -0.0, np.inf]
    x[1, :4] = [-np.inf, -np.inf, -0.0, -np.inf]
    want = np.asarray(jax.jit(lambda x: jax.lax.cumlogsumexp(x, axis=1))(x))
    got_jit = np.asarray(funcgrad.jit(lambda x: funcgrad.lax.cumlogsumexp(x, axis=1))(x))
    got_eager = np.asarray(funcgrad.lax.cumlogsumexp(x, axis=1))
    for got in (got_jit, got_eager):
        assert got.tobytes() == want.tobytes()  # (NaN and signed zeros included)
