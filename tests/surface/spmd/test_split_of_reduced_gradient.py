"""The gradient of a reduced weight read through ``jnp.split`` (one ``split`` equation, JAX 0.10's
``split_p``), against jax 0.10.2 in the same process: the transpose concatenates the pieces'
cotangents, an unused piece's symbolic zero typed as a cotangent (unreduced where the weight is
reduced) like the used ones -- funcgrad raised 'lhs and rhs to `concatenate` must be unreduced
along the same mesh axes' (pjit_test's ``test_split_reduced_concat_unreduced``)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding


def _run(lib, np_, sh, mesh):
    P = sh.PartitionSpec
    with sh.set_mesh(mesh):
        x = lib.device_put(np.arange(8.0).reshape(2, 4), P("x"))
        w = lib.device_put(np.arange(64.0).reshape(4, 16), P(reduced={"x"}))

        @lib.jit
        def fn(x, w):
            w1, _ = np_.split(w, 2, axis=-1)
            return (x @ w1).sum()

        dx, dw = lib.jit(lib.grad(fn, argnums=(0, 1)))(x, w)
        whole = np.asarray(sh.reshard(dw, P()))
        return dw.sharding.spec.unreduced, np.asarray(dx), whole


def test_gradient_through_split_of_a_reduced_weight_as_jax():
    ours = _run(funcgrad, fnp, fs, fs.make_mesh((2,), ("x",)))
    theirs = _run(jax, jnp, js, jax.make_mesh((2,), ("x",), axis_types=(js.AxisType.Explicit,)))
    assert set(ours[0]) == set(theirs[0]) == {"x"}
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])
    assert np.count_nonzero(ours[2][:, 8:]) == 0  # the unused piece's gradient: zeros
