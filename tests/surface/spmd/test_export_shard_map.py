"""``export`` of a jitted ``shard_map`` program, against jax 0.10.2 in the same process (JAX's
export docs and export_test's shard_map cases): the module is lowered over the shard_map's mesh
(``sdy.manual_computation`` over ``@mesh``, as JAX writes it; funcgrad refused: "shard_map: the
program must be lowered for its mesh's devices"), it serializes, deserializes and runs on any
devices of the mesh's shape, with its VJP; jax runs funcgrad's artifact and funcgrad jax's."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")

A = np.arange(16, dtype=np.float32).reshape(4, 4)


def _program(lib, np_, shardings=True):
    sh = lib.sharding
    mesh = sh.Mesh(np.array(lib.devices()[:2]), axis_names=("x",))
    s = sh.NamedSharding(mesh, sh.PartitionSpec("x", None))
    P = sh.PartitionSpec

    def body(b):
        n = lib.lax.axis_size("x")
        moved = lib.lax.ppermute(b, "x", perm=[(j, (j + 1) % n) for j in range(n)])
        return np_.sin(moved) * lib.lax.psum(b, "x")

    sm = lib.shard_map(body, mesh=mesh, in_specs=(P("x", None),), out_specs=P("x", None))
    f = lib.jit(sm, in_shardings=s, out_shardings=s) if shardings else lib.jit(sm)
    return f, mesh, s


def _expected():
    # device 0 holds rows 0-1, device 1 rows 2-3: each gets the other's block, times their sum
    return np.sin(np.concatenate([A[2:], A[:2]])) * np.tile(A[:2] + A[2:], (2, 1))


def _on(lib, devices):
    sh = lib.sharding
    mesh = sh.Mesh(np.array([lib.devices()[i] for i in devices]), axis_names=("x",))
    return lib.device_put(A, sh.NamedSharding(mesh, sh.PartitionSpec("x", None)))


def test_export_call_serialize_and_run_on_other_devices():
    f, mesh, s = _program(funcgrad, fnp)
    exp = funcgrad.export.export(f)(A)
    assert exp.nr_devices == 2
    text = exp.mlir_module()
    assert "sdy.manual_computation" in text and 'sdy.mesh @mesh = <["x"=2]>' in text
    want = np.asarray(f(A))
    np.testing.assert_allclose(want, _expected(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(exp.call(_on(funcgrad, [0, 1]))), want, rtol=1e-6)
    back = funcgrad.export.deserialize(exp.serialize())
    for devices in ([0, 1], [2, 3]):
        out = back.call(_on(funcgrad, devices))
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
        assert sorted(d.id for d in out.devices()) == devices
        assert out.sharding.spec == funcgrad.sharding.PartitionSpec("x", None)
    with pytest.raises(ValueError, match="was exported for 2 devices"):
        back.call(A)


def test_artifacts_cross_between_funcgrad_and_jax():
    f, _, _ = _program(funcgrad, fnp)
    blob = funcgrad.export.export(f)(A).serialize()
    jf, _, _ = _program(jax, jax.numpy)
    jblob = jax.export.export(jf)(A).serialize()
    want = np.asarray(jf(A))
    # jax runs funcgrad's artifact, funcgrad runs jax's
    out = jax.export.deserialize(bytearray(blob)).call(_on(jax, [2, 3]))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    out = funcgrad.export.deserialize(jblob).call(_on(funcgrad, [2, 3]))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    # and inside jit (the module embedded in the caller's program)
    out = funcgrad.jit(funcgrad.export.deserialize(jblob).call)(_on(funcgrad, [0, 1]))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_the_exported_vjp():
    f, _, _ = _program(funcgrad, fnp)
    jf, _, _ = _program(jax, jax.numpy)
    x = _on(funcgrad, [0, 1])
    want = np.asarray(jax.grad(lambda x: jf(x).sum())(_on(jax, [0, 1])))
    np.testing.assert_allclose(np.asarray(funcgrad.grad(lambda x: f(x).sum())(x)), want, rtol=1e-5)
    blob = funcgrad.export.export(f)(A).serialize(vjp_order=1)
    back = funcgrad.export.deserialize(blob)
    np.testing.assert_allclose(np.asarray(funcgrad.grad(lambda x: back.call(x).sum())(x)), want, rtol=1e-5)
    jback = jax.export.deserialize(bytearray(blob))
    got = jax.grad(lambda x: jback.call(x).sum())(_on(jax, [0, 1]))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_a_shard_map_without_jit_shardings_exports_for_its_mesh():
    f, _, _ = _program(funcgrad, fnp, shardings=False)
    jf, _, _ = _program(jax, jax.numpy, shardings=False)
    exp, jexp = funcgrad.export.export(f)(A), jax.export.export(jf)(A)
    assert exp.nr_devices == jexp.nr_devices == 2
    out = funcgrad.export.deserialize(exp.serialize()).call(_on(funcgrad, [0, 1]))
    np.testing.assert_allclose(np.asarray(out), np.asarray(jf(A)), rtol=1e-6)
