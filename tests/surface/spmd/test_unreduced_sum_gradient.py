"""The gradient of ``reduce_sum(out_sharding=P(unreduced=...))`` of a split operand, against jax
0.10.2 in the same process: its transpose broadcasts the (reduced) cotangent back typed as the
operand, as JAX's ``broadcast_in_dim(out_sharding=operand's sharding)`` (funcgrad refused it:
'Inputs cannot be sharded/varying on the same axes that another input is reduced on')."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding

A = np.arange(16, dtype=np.float32).reshape(4, 4) / 10


def _run(lib, np_, sh, mesh):
    P = sh.PartitionSpec
    with sh.set_mesh(mesh):
        a = lib.device_put(A, P("x", None))

        def f(a):
            s = lib.lax.reduce_sum(np_.sin(a), (0,), out_sharding=P(unreduced={"x"}))
            return np_.sum(sh.reshard(s, P()) ** 2)

        outs = []
        for g in (lib.grad(f), lib.jit(lib.grad(f)), lib.jit(lib.grad(lib.checkpoint(f)))):
            d = g(a)
            outs.append((tuple(d.sharding.spec), str(lib.typeof(d)), np.asarray(d)))
        return outs


def test_gradient_of_an_unreduced_sum_is_split_as_its_operand():
    ours = _run(funcgrad, fnp, fs, fs.make_mesh((2,), ("x",)))
    theirs = _run(jax, jnp, js, jax.make_mesh((2,), ("x",), axis_types=(js.AxisType.Explicit,)))
    for o, t in zip(ours, theirs, strict=True):
        assert o[:2] == t[:2] == (("x", None), "float32[4@x,4]")
        np.testing.assert_allclose(o[2], t[2], rtol=1e-6)
    np.testing.assert_allclose(ours[0][2], 2 * np.sin(A).sum(0) * np.cos(A), rtol=1e-5)
