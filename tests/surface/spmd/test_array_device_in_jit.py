"""``jnp.array``/``jnp.asarray(x, device=sharding)`` of a traced value inside ``jit``, against jax
0.10.2 (pjit_test's test_jnp_array_inside_jit_sharding): the value is laid out as the sharding says
(JAX's conversion to a sharding), where funcgrad refused ("a traced value has no placement")."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")

INP = np.arange(16).reshape(8, 2)


def _sharding(lib):
    sh = lib.sharding
    mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2)
    return sh.NamedSharding(mesh, sh.PartitionSpec("x", "y"))


@pytest.mark.parametrize("lib,np_", [(funcgrad, fnp), (jax, jax.numpy)], ids=["funcgrad", "jax"])
@pytest.mark.parametrize("how", ["array", "asarray", "grad"])
def test_array_device_sharding_of_a_traced_value(lib, np_, how):
    s = _sharding(lib)
    if how == "array":
        f = lambda x: np_.array(x, dtype=np.float32, device=s)  # noqa: E731
    elif how == "asarray":
        f = lambda x: np_.asarray(x * 2, device=s)  # noqa: E731
    else:
        f = lambda x: lib.grad(lambda y: (np_.asarray(y, device=s) ** 2).sum())(x * 1.0)  # noqa: E731
    out = lib.jit(f)(INP)
    assert out.sharding == s
    want = {"array": INP, "asarray": INP * 2, "grad": 2.0 * INP}[how]
    np.testing.assert_allclose(np.asarray(out), want)
    assert out.dtype == (np.float32 if how == "array" else np_.asarray(want).dtype)
    # the shards hold the blocks the sharding says
    for shard in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), want[shard.index])
