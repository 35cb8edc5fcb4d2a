"""``stack``/``unstack`` as JAX 0.10's primitives (primitives/stacking.py) on 8 CPU devices, with
jax 0.10.2 as the oracle in the same process: the jaxprs show one ``stack``/``unstack`` equation,
the types and values on an explicit mesh are jax's, ``vmap`` of ``jnp.stack([v, w])`` with an
unmapped replicated ``w`` over an explicitly sharded dimension is JAX's ShardingTypeError (its
batch rule broadcasts ``w`` without the batch dimension's axis), and unstacking along a sharded
dimension is JAX's refusal."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
js = jax.sharding


def test_jaxprs_show_stack_and_unstack_as_jax():
    def texts(lib):
        np_ = lib.numpy
        a = np.ones(3, np.float32)
        return [
            str(lib.make_jaxpr(lambda a, b: np_.stack([a, b], axis=1))(a, a)),
            str(lib.make_jaxpr(lambda m: np_.unstack(m, axis=1))(np.ones((2, 3), np.float32))),
            str(lib.make_jaxpr(lib.grad(lambda a, b: np_.stack([a, b]).sum()))(a, a)),
        ]

    assert texts(funcgrad) == texts(jax)


def test_types_values_and_refusals_on_an_explicit_mesh_as_jax():
    def run(lib, sh):
        P, np_ = sh.PartitionSpec, lib.numpy
        out = []
        with sh.set_mesh(lib.make_mesh((2, 4), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)):
            v = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), P("x"))
            w = np.ones(2, np.float32)
            cases = [
                lambda: lib.jit(lambda v: np_.stack([v, v], axis=1))(v),
                lambda: lib.jit(lib.vmap(lambda r: np_.stack([r, r])))(v),
                lambda: lib.vmap(lambda r: np_.stack([r, w]))(v),  # jax: ShardingTypeError
                lambda: lib.jit(lambda v: np_.unstack(v, axis=1))(v),
                lambda: lib.jit(lambda v: np_.unstack(v))(v),  # along the split axis: refused
                lambda: lib.jit(lib.grad(lambda v: (np_.stack([v, 2 * v]) ** 2).sum()))(v),
            ]
            for case in cases:
                try:
                    r = case()
                except Exception as e:  # noqa: BLE001 - which error is compared
                    out.append((type(e).__name__, str(e).split(".")[0][:40]))
                    continue
                rs = r if isinstance(r, tuple) else (r,)
                out.append([(str(lib.typeof(o)), np.asarray(o).tolist()) for o in rs])
        return out

    assert run(funcgrad, fs) == run(jax, js)


def test_the_gradient_of_a_stack_of_a_reduced_value_is_its_unreduced_sum():
    # (the cotangent pieces are typed as JAX's lowering types them: without the constraint on
    # each unit piece XLA all-reduced the unreduced seed first, a gradient of 4 where it is 2;
    # jax 0.10.2 itself fails on this program, so the oracle is the concatenation's gradient)
    P = fs.PartitionSpec
    with fs.set_mesh(fs.make_mesh((2,), ("x",))):
        r = funcgrad.device_put(np.arange(4.0, dtype=np.float32), P(None, reduced={"x"}))
        g = funcgrad.jit(funcgrad.grad(lambda r: funcgrad.numpy.stack([r, r]).sum()))(r)
        assert str(funcgrad.typeof(g)) == "float32[4]{U:x}"
        np.testing.assert_array_equal(fs.reshard(g, P()), [2.0, 2.0, 2.0, 2.0])
