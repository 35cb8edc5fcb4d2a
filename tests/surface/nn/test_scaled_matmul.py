"""jax.nn's block-scaled products (funcgrad/nn/_scaled.py) against closed forms: JAX runs them on
cuDNN only (its CPU raises NotImplementedError), so the oracle here is the mathematics its
docstrings state."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import nn


def test_scaled_matmul_is_the_einsum_of_block_scaled_operands():
    a = fnp.array([1, 2, 3]).reshape((1, 1, 3))
    b = fnp.array([4, 5, 6]).reshape((1, 1, 3))
    s = fnp.array([0.5]).reshape((1, 1, 1))
    assert nn.scaled_matmul(a, b, s, s).tolist() == [[[8.0]]]  # (its docstring's example)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 4, 8))
    xs, ys = rng.uniform(1, 2, (2, 3, 2)), rng.uniform(1, 2, (2, 4, 2))  # (blocks of 4)
    want = np.einsum("bmk,bnk->bmn", x * np.repeat(xs, 4, -1), y * np.repeat(ys, 4, -1))
    got = funcgrad.jit(nn.scaled_matmul)(x, y, xs, ys)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    with pytest.raises(ValueError, match="matching batch"):
        nn.scaled_matmul(x, y[:1], xs, ys)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_quantizes_per_block(mode):
    cfg = [nn.get_scaled_dot_general_config(mode)] * 3
    dn = (((2,), (2,)), ((0,), (0,)))
    x = np.ones((1, 2, 32), np.float32)
    ones = np.asarray(nn.scaled_dot_general(x, x, dn, configs=cfg))
    # MXFP8 holds ones exactly (a power-of-two scale); NVFP4's scale 1/6 is 0.171875 in e4m3 and
    # 1/0.171875 rounds to 6 in e2m1, so each one is 1.03125
    np.testing.assert_array_equal(ones, np.full((1, 2, 2), 32.0 if mode == "mxfp8" else 32 * 1.03125**2))
    rng = np.random.default_rng(1)
    lhs, rhs = rng.normal(size=(2, 4, 64)).astype(np.float32), rng.normal(size=(2, 3, 64)).astype(np.float32)
    exact = np.einsum("bmk,bnk->bmn", lhs, rhs)
    got = np.asarray(nn.scaled_dot_general(lhs, rhs, dn, configs=cfg))
    tol = 0.1 if mode == "mxfp8" else 0.5  # (3 and 1 mantissa bits: errors of a few percent per term)
    assert got.shape == exact.shape and np.abs(got - exact).max() < tol * np.abs(exact).max()
    # without configs it is lax.dot_general
    np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(lhs, rhs, dn)), exact, rtol=1e-5, atol=1e-5)
