"""A jitted function's trace and its arguments under the meshes in scope, against jax 0.10.2
(pjit_test's test_with_sharding_constraint_with_two_meshes): a trace made under one ``with mesh:``
is not reused under another (a bare ``PartitionSpec`` resolved to the first mesh's devices), and a
64-bit NumPy argument of a sharded program in 32-bit mode enters as 32 bits on every call (the
second call, through the native dispatcher, crashed XLA with a float64 buffer)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import funcgrad
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")


def _f(lib):
    def f(x):
        y = x * 2
        y = lib.lax.with_sharding_constraint(y, lib.sharding.PartitionSpec("x"))
        return y + 2

    return f


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
@pytest.mark.parametrize("scope", ["with", "set_mesh"])
def test_a_trace_follows_the_mesh_in_scope(lib, scope):
    meshes = [lib.sharding.Mesh(lib.devices()[i : i + 2], ("x",)) for i in (0, 2, 4)]
    f = _f(lib)
    g = lib.jit(f)
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    for mesh, ids in zip(meshes, ([0, 1], [2, 3], [4, 5])):
        with mesh if scope == "with" else lib.sharding.set_mesh(mesh):
            for h in (g, lib.jit(f)):
                out = h(x)
                assert sorted(d.id for d in out.devices()) == ids
                assert out.sharding.spec == lib.sharding.PartitionSpec("x")
                np.testing.assert_array_equal(np.asarray(out), x * 2 + 2)
    # and outside every mesh the trace is the one made outside (no constraint there: one device)
    if lib is funcgrad:
        out = lib.jit(lambda x: x * 2)(x)
        assert len(out.devices()) == 1


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_the_abstract_mesh_in_scope_keys_the_trace(lib):
    am = [lib.sharding.AbstractMesh((n,), ("x",)) for n in (2, 4)]
    seen = []
    f = lib.jit(lambda x: (seen.append(lib.sharding.get_abstract_mesh().shape), x + 1)[1])
    for m in am:
        with lib.sharding.use_abstract_mesh(m):
            f.trace(np.ones(8, np.float32))
    assert seen == [{"x": 2}, {"x": 4}]


_X32_ARG = textwrap.dedent(
    """
    import numpy as np, funcgrad
    from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec as P
    funcgrad.config.update("jax_enable_x64", False)
    mesh = Mesh(funcgrad.devices()[2:4], ("x",))
    f = funcgrad.jit(lambda x: x * 2 + 1, in_shardings=NamedSharding(mesh, P("x")))
    for _ in range(3):
        out = f(np.ones((8, 2)))  # float64
        assert out.dtype == np.float32, out.dtype
        assert sorted(d.id for d in out.devices()) == [2, 3]
        np.testing.assert_array_equal(np.asarray(out), np.full((8, 2), 3, np.float32))
    print("ok")
    """
)


def test_a_64_bit_numpy_argument_of_a_sharded_program_in_32_bit_mode():
    # (in a fresh process: the failure was a segmentation fault)
    r = subprocess.run([sys.executable, "-c", _X32_ARG], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr[-2000:])
    # jax: the same float32 result on the same devices
    mesh = jax.sharding.Mesh(jax.devices()[2:4], ("x",))
    s = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x"))
    f = jax.jit(lambda x: x * 2 + 1, in_shardings=s)
    for _ in range(2):
        out = f(np.ones((8, 2)))
        assert out.dtype == (np.float64 if jax.config.jax_enable_x64 else np.float32)
        assert sorted(d.id for d in out.devices()) == [2, 3]
    assert fs.Mesh is funcgrad.sharding.Mesh


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_get_mesh_outside_every_mesh_and_under_set_mesh_none(lib):
    # (pjit_test's test_set_mesh_none: JAX's get_mesh() is an empty mesh, never None)
    sh = lib.sharding
    assert sh.get_mesh().empty and repr(sh.get_mesh()) == "Mesh(axis_sizes=(), axis_names=())"
    mesh = lib.make_mesh((2,), ("x",))
    with sh.set_mesh(mesh):
        with sh.set_mesh(None):
            assert sh.get_mesh().empty and sh.get_abstract_mesh().empty
            out = lib.jit(lambda x: x * 2)(lib.numpy.arange(8))
            assert out.sharding == sh.SingleDeviceSharding(lib.devices()[0])
        assert sh.get_mesh() == mesh
    assert sh.get_mesh().empty


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_use_abstract_mesh_under_set_mesh(lib):
    # (pjit_test's test_use_abstract_mesh_override)
    sh = lib.sharding
    mesh = lib.make_mesh((2,), ("x",))
    with sh.set_mesh(mesh):
        with pytest.raises(ValueError, match="use_abstract_mesh cannot change the size of the mesh"):
            with sh.use_abstract_mesh(sh.AbstractMesh((4,), ("x",))):
                pass
        assert sh.get_abstract_mesh() == mesh.abstract_mesh  # (left as it was)
        # an eager result is placed over the set mesh's devices laid out as the abstract mesh
        with sh.use_abstract_mesh(sh.AbstractMesh((2,), ("y",))):
            out = lib.numpy.arange(8)
            want = sh.NamedSharding(
                mesh.update(axis_names=("y",), axis_types=(sh.AxisType.Auto,)), sh.PartitionSpec()
            )
            assert out.sharding == want
        with sh.use_abstract_mesh(sh.AbstractMesh((2,), ("x",), (sh.AxisType.Explicit,))):
            out = lib.numpy.arange(8)
            assert out.sharding == sh.NamedSharding(mesh, sh.PartitionSpec(None))
            np.testing.assert_array_equal(np.asarray(out), np.arange(8))


def test_a_jitted_library_function_under_set_mesh_is_one_program():
    # JAX jits isclose/allclose where it defines them, and so runs them under a context mesh too:
    # one compiled program over the sharded operands (NOTE: [eager library functions as one
    # program]). Op by op, each primitive compiled a program of its own per sharding (shard_map.md's
    # allclose of 12 gradient leaves: 71 compiles, 8 s of a 14 s cell).
    compiles = []

    def listen(event, secs, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(secs)

    mesh = funcgrad.make_mesh((4, 2), ("x", "y"))
    x = np.arange(56.0, dtype=np.float32).reshape(8, 7) / 7  # (a shape no other test compiles)
    funcgrad.monitoring.register_event_duration_secs_listener(listen)
    try:
        with fs.set_mesh(mesh):
            a = funcgrad.device_put(x, fs.PartitionSpec("x"))
            b = a + 1e-3
            compiles.clear()
            close = funcgrad.numpy.allclose(a, b, atol=1e-2)
            assert len(compiles) == 1
            far = funcgrad.numpy.isclose(a, a * 2)
    finally:
        funcgrad.monitoring.unregister_event_duration_listener(listen)
    assert bool(close) and far.sharding.spec == fs.PartitionSpec("x")
    np.testing.assert_array_equal(np.asarray(far), np.isclose(x, x * 2))
