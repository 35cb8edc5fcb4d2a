"""Names of JAX's API added with the external suites (issue 15): each against JAX (the oracle),
NumPy or a closed form."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import dtypes, nn

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)


def test_log1mexp_matches_jax_and_is_accurate_at_both_ends():
    x = np.array([1e-300, 1e-20, 1e-5, 0.3, np.log(2.0) - 1e-12, np.log(2.0), 0.7, 5.0, 50.0, 700.0])
    np.testing.assert_allclose(nn.log1mexp(x), jax.nn.log1mexp(x), rtol=1e-14)
    np.testing.assert_allclose(nn.log1mexp(50.0), -np.exp(-50.0), rtol=1e-14)  # log(1 - e) ~ -e
    assert np.isnan(nn.log1mexp(-1.0)) and nn.log1mexp(0.0) == -np.inf
    g = funcgrad.vmap(funcgrad.grad(nn.log1mexp))(x[1:])
    np.testing.assert_allclose(g, 1.0 / np.expm1(x[1:]), rtol=1e-12)  # d/dx log(1 - e^-x)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), ((0, 1), True), (-1, True)])
def test_logmeanexp_matches_jax(axis, keepdims):
    a = np.random.default_rng(0).normal(size=(3, 4)) * 300
    np.testing.assert_allclose(
        nn.logmeanexp(a, axis=axis, keepdims=keepdims),
        jax.nn.logmeanexp(a, axis=axis, keepdims=keepdims),
        rtol=1e-13,
    )
    w = a > 0
    np.testing.assert_allclose(
        nn.logmeanexp(a, axis=axis, where=w, keepdims=keepdims),
        jax.nn.logmeanexp(a, axis=axis, where=w, keepdims=keepdims),
        rtol=1e-13,
    )
    g = funcgrad.grad(lambda a: fnp.sum(nn.logmeanexp(a, axis=1)))(a / 300)
    np.testing.assert_allclose(g, jax.grad(lambda a: jax.numpy.sum(jax.nn.logmeanexp(a, axis=1)))(a / 300))


def test_nn_tanh_is_numpy_tanh():
    np.testing.assert_allclose(nn.tanh(np.array([-1.0, 0.5])), np.tanh([-1.0, 0.5]))


@pytest.mark.parametrize(
    "dtype",
    ["bool", "int4", "uint4", "int8", "float8_e4m3fn", "bfloat16", "float4_e2m1fn", "float32", "complex128"],
)
def test_itemsize_bits(dtype):
    assert dtypes.itemsize_bits(dtype) == jax.dtypes.itemsize_bits(dtype)


@pytest.mark.parametrize("x", [True, 1, 1.0, 1j, np.uint8(3), np.ones(2, np.float32), np.ones(2, "bfloat16")])
def test_scalar_type_of(x):
    assert dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)


def test_process_and_host_names():
    assert funcgrad.process_indices() == funcgrad.host_ids() == list(range(funcgrad.process_count()))
    assert (
        funcgrad.host_count() == funcgrad.process_count() and funcgrad.host_id() == funcgrad.process_index()
    )
    assert all(isinstance(d, funcgrad.Device) for d in funcgrad.devices())


def test_shard_and_copy_to_host_async():
    x = fnp.arange(6.0).reshape(2, 3)
    (shard,) = x.addressable_shards
    assert isinstance(shard, funcgrad.Shard) and shard.data.shape == (2, 3)
    tree = {"x": x, "n": 3}
    assert funcgrad.copy_to_host_async(tree) is tree
