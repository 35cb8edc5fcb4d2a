"""``effects_barrier`` (waits for dispatched programs with host callbacks, by their runtime tokens) and
``ShapeDtypeStruct.like``, against jax."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import ShapeDtypeStruct
from funcgrad.experimental import layout


def test_effects_barrier_after_a_callback():
    seen = []
    y = funcgrad.jit(lambda x: funcgrad.debug.callback(seen.append, x) or x * 2.0)(fnp.ones(3))
    assert funcgrad.effects_barrier() is None
    assert len(seen) == 1 and float(y[0]) == 2.0


@pytest.mark.slow
def test_effects_barrier_with_asynchronous_dispatch():
    # Several CPU devices: funcgrad dispatches asynchronously (NOTE: [synchronous CPU dispatch]).
    code = textwrap.dedent(
        """
        import time
        import funcgrad, funcgrad.numpy as fnp
        seen = []
        def slow(x):
            time.sleep(0.2)
            seen.append(float(x[0, 0]))
        f = funcgrad.jit(lambda x: funcgrad.debug.callback(slow, x) or (x @ x.T).sum())
        ys = [f(fnp.full((200, 200), float(i))) for i in range(3)]
        funcgrad.effects_barrier()
        assert seen == [0.0, 1.0, 2.0], seen
        # Programs without results (nothing to wait on but their runtime tokens, as in JAX): a
        # jitted print-only function, and an eager callback under set_mesh (over both devices).
        g = funcgrad.jit(lambda x: funcgrad.debug.callback(slow, x))
        g(fnp.full((2, 2), 3.0))
        with funcgrad.sharding.set_mesh(funcgrad.sharding.make_mesh((2,), ("x",))):
            funcgrad.debug.callback(slow, fnp.full((2, 2), 4.0))
        funcgrad.effects_barrier()
        assert seen == [0.0, 1.0, 2.0, 3.0, 4.0], seen
        print("ok")
        """
    )
    # (device settings that earlier tests recorded in this process's environment must not reach it)
    inherited = {
        k: v for k, v in os.environ.items() if k not in ("FUNCGRAD_NUM_CPU_DEVICES", "JAX_NUM_CPU_DEVICES")
    }
    env = {**inherited, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


@pytest.mark.parametrize(
    "value, want",
    [
        (np.ones((2, 3), np.float32), ShapeDtypeStruct((2, 3), np.float32)),
        (1.0, ShapeDtypeStruct((), np.float64, weak_type=True)),
        (3, ShapeDtypeStruct((), np.int64, weak_type=True)),
        (np.int8(3), ShapeDtypeStruct((), np.int8)),
        (ShapeDtypeStruct((4,), np.int32), ShapeDtypeStruct((4,), np.int32)),
    ],
)
def test_shape_dtype_struct_like(value, want):
    assert ShapeDtypeStruct.like(value) == want
    # (a ShapeDtypeStruct of shape () has no len(), as JAX's: compare its fields, not its truth)
    of_array = ShapeDtypeStruct.like(
        funcgrad.numpy.asarray(value) if not isinstance(value, ShapeDtypeStruct) else value
    )
    assert (of_array.shape, of_array.dtype) == (want.shape, want.dtype)


def test_shape_dtype_struct_like_of_a_traced_value_and_of_an_array():
    got = []
    funcgrad.jit(lambda x: got.append(ShapeDtypeStruct.like(x)) or x)(fnp.ones(2))
    assert got == [ShapeDtypeStruct((2,), np.float64)]
    assert ShapeDtypeStruct.like(fnp.arange(3)) == ShapeDtypeStruct((3,), np.int64)


@pytest.mark.slow
def test_shape_dtype_struct_like_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    for value in [np.ones((2, 3), np.float32), 1.0, 3, np.int8(3), True, 1j, np.zeros((0, 2))]:
        ours, theirs = ShapeDtypeStruct.like(value), jax.ShapeDtypeStruct.like(value)
        assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype, theirs.weak_type)


def test_effects_barrier_passes_over_donated_arrays():
    # A donated (deleted) buffer has nothing left to wait for; waiting on it raises in jaxlib.
    x = funcgrad.jit(lambda v: v + 1.0)(np.ones(3))
    y = funcgrad.jit(lambda v: v * 2.0, donate_argnums=0)(x)
    assert x.is_deleted()
    funcgrad.effects_barrier()
    np.testing.assert_array_equal(np.asarray(y), [4.0, 4.0, 4.0])


def test_shape_dtype_struct_update_matches_jax():
    jax = pytest.importorskip("jax")
    for kwargs in [{"shape": (6,)}, {"dtype": np.int8}, {"weak_type": True}, {}]:
        ours = ShapeDtypeStruct((2, 3), np.float32).update(**kwargs)
        theirs = jax.ShapeDtypeStruct((2, 3), np.float32).update(**kwargs)
        assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype, theirs.weak_type)
    base = ShapeDtypeStruct((2,), np.float32, sharding=funcgrad.sharding.PartitionSpec())
    # (a bare PartitionSpec is read over the mesh in scope, as JAX's: a TypeError without one)
    with pytest.raises(TypeError, match="context mesh cannot be empty"):
        _ = base.sharding
    mesh = funcgrad.sharding.make_mesh((1,), ("x",))
    with funcgrad.sharding.set_mesh(mesh):
        assert (
            base.update(shape=(4,)).sharding
            == base.sharding
            == funcgrad.sharding.NamedSharding(mesh, funcgrad.sharding.PartitionSpec())
        )
    # (pjit_test's test_sds_update: a struct with a concrete layout refuses a bare sharding)
    s = funcgrad.sharding.NamedSharding(mesh, funcgrad.sharding.PartitionSpec())
    laid = ShapeDtypeStruct((2, 2), np.int32, sharding=layout.Format(layout.Layout((0, 1)), s))
    with pytest.raises(ValueError, match="You are updating ShapeDtypeStruct with a"):
        laid.update(sharding=s)
    assert laid.update(shape=(2, 2)).format == laid.format
