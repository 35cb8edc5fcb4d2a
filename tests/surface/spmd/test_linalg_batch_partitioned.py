"""LAPACK calls over a batch of matrices sharded on its batch axis are partitioned as JAX's: each
device factorises its own matrices (no all-gather in the compiled program), with jax's values
(JAX's linalg_sharding_test: the calls carry ``num_batch_dims`` and a Shardy rule sharing the
batch dimensions, NOTE: [LAPACK custom calls])."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad.sharding import Mesh, NamedSharding, P

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("name", ["lu", "qr", "eigh", "hessenberg"])
def test_batched_lapack_stays_sharded_as_jax(name):
    r = np.random.RandomState(0)
    x = r.randn(8, 6, 6).astype(np.float32)
    x = x @ np.swapaxes(x, -1, -2)
    f = funcgrad.jit(getattr(funcgrad.lax.linalg, name))
    mesh = Mesh(np.array(funcgrad.devices()[:2]), ("i",))
    xs = funcgrad.device_put(x, NamedSharding(mesh, P("i")))
    assert "all-" not in f.lower(xs).compile().as_text()
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("i",))
    want = jax.jit(getattr(jax.lax.linalg, name))(
        jax.device_put(x, jax.NamedSharding(jmesh, jax.sharding.PartitionSpec("i")))
    )
    for got, w in zip(f(xs), want):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(w))
