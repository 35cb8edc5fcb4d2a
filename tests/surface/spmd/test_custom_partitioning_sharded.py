"""``custom_partitioning`` over 8 devices: JAX's docstring example (``my_fft`` through ``pjit`` on a
mesh, its rules given as a string and as an ``SdyShardingRule``) gives the one-device values with
the requested output sharding, and jit with ``out_shardings`` over a batch-sharded input (ffi.md's
``rms_norm`` pattern, static eps) equals the one-device result. funcgrad computes the function
whole and XLA partitions it: the user's callbacks are never called (asserted)."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental.custom_partitioning import BATCHING, SdyShardingRule, custom_partitioning
from funcgrad.sharding import Mesh, NamedSharding, P

with warnings.catch_warnings():  # pjit is deprecated (as in JAX); the docstring example uses it
    warnings.simplefilter("ignore", DeprecationWarning)
    from funcgrad.experimental.pjit import pjit

calls = []


def _supported(sharding, shape):  # the docstring's: shard the batch dimensions, replicate the last
    rank = len(shape.shape)
    n = min(len(sharding.spec), rank - 1)
    return NamedSharding(sharding.mesh, P(*sharding.spec[:n], *(None,) * (rank - n)))


def _partition(mesh, arg_shapes, result_shape):
    calls.append("partition")
    s = _supported(arg_shapes[0].sharding, arg_shapes[0])
    return mesh, fnp.fft.fft, s, (s,)


def _infer(mesh, arg_shapes, result_shape):
    calls.append("infer")
    return _supported(arg_shapes[0].sharding, arg_shapes[0])


@pytest.mark.parametrize(
    "rule",
    [
        "...i -> ...i",
        SdyShardingRule(operand_mappings=((BATCHING, "i"),), result_mappings=((BATCHING, "i"),)),
    ],
)
def test_docstring_fft_example(rule):
    my_fft = custom_partitioning(lambda x: fnp.fft.fft(x))
    my_fft.def_partition(infer_sharding_from_operands=_infer, partition=_partition, sharding_rule=rule)
    x = np.asarray(np.random.default_rng(0).normal(size=(16, 8)), dtype=np.complex64)
    with Mesh(np.array(funcgrad.devices()), ("x",)):
        y = pjit(lambda x: x, in_shardings=None, out_shardings=P("x"))(x)
        out = pjit(my_fft, in_shardings=P("x"), out_shardings=P("x"))(y)
    assert out.sharding.spec == P("x") and len(out.addressable_shards) == 8
    np.testing.assert_allclose(np.asarray(out), np.fft.fft(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(funcgrad.jit(fnp.fft.fft)(x)))
    assert calls == []


def test_rms_norm_batch_sharded_matches_one_device():
    def rms_norm(x, eps=1e-5):
        return x / fnp.sqrt(fnp.mean(x**2, axis=-1, keepdims=True) + eps)

    f = partial(custom_partitioning, static_argnums=(1,))(rms_norm)
    f.def_partition(partition=_partition, infer_sharding_from_operands=_infer, sharding_rule="... i -> ... j")
    mesh = funcgrad.make_mesh((4,), ("x",))
    shd = NamedSharding(mesh, P("x", None))
    x = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    out = funcgrad.jit(f, out_shardings=shd)(funcgrad.device_put(x, shd))
    assert out.sharding == shd
    np.testing.assert_allclose(np.asarray(out), np.asarray(rms_norm(x)), rtol=1e-6)
    assert calls == []
