"""``funcgrad.experimental.shard_alike`` (JAX's ``jax.experimental.shard_alike``) on 8 devices:
an unsharded value (a constant, a product) laid out as the sharded one it is paired with, under
jit, grad and vmap; values and shardings against jax's."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental.shard_alike import shard_alike
from funcgrad.sharding import NamedSharding, P, make_mesh

jax = pytest.importorskip("jax")


def _program(lib, np_mod, alike):
    def f(x):
        y = np_mod.arange(16.0).reshape(8, 2)
        _, y = alike(x, y)  # (a constant: laid out as x only through the group)
        return y * 2

    return lib.jit(f)


def test_shard_alike_as_jax():
    from jax.experimental.shard_alike import shard_alike as jshard_alike

    x = np.arange(16.0).reshape(8, 2)
    mesh = make_mesh((2, 2), ("x", "y"))
    xs = funcgrad.device_put(x, NamedSharding(mesh, P("x", "y")))
    jmesh = jax.make_mesh((2, 2), ("x", "y"))
    jspec = jax.sharding.PartitionSpec("x", "y")
    jxs = jax.device_put(x, jax.NamedSharding(jmesh, jspec))
    got = _program(funcgrad, fnp, shard_alike)(xs)
    want = _program(jax, jax.numpy, jshard_alike)(jxs)
    np.testing.assert_array_equal(got, want)
    assert got.sharding.spec == P("x", "y") and want.sharding.spec == jspec
    grad = funcgrad.grad(lambda v: fnp.sum(shard_alike(v, v * 3)[1]))(xs)
    np.testing.assert_array_equal(grad, np.full((8, 2), 3.0))
    vx, vy = funcgrad.vmap(shard_alike, in_axes=(0, None))(x, np.ones(2))
    np.testing.assert_array_equal(vy, np.ones((8, 2)))
    with pytest.raises(ValueError, match="The leaves shapes of `x` and `y` should match"):
        shard_alike(x, x.T)
    with pytest.raises(ValueError, match="Trees should be equal"):
        shard_alike([x], (x,))
