"""funcgrad.experimental.array_serialization (JAX's TensorStore checkpointing of Arrays), the
pieces orbax reads beside it (``Format`` placements, any Sharding in make_array_from_*,
``issubclass(Array, Array)``, ``_addressable_device_assignment``), ``experimental.pjit`` and
``extend.ifrt_programs``: values round-trip, and what funcgrad writes is what jax reads."""

import asyncio
import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad.experimental.layout import Format, Layout
from funcgrad.sharding import SingleDeviceSharding

ts_impl = pytest.importorskip("funcgrad.experimental.array_serialization.tensorstore_impl")
from funcgrad.experimental.array_serialization import serialization  # noqa: E402


@pytest.mark.parametrize("ocdbt", [False, True])
def test_round_trip_and_jax_reads_what_funcgrad_wrote(tmp_path, ocdbt):
    import jax
    from jax.experimental.array_serialization import tensorstore_impl as jax_ts

    x = funcgrad.numpy.arange(12, dtype=np.float32).reshape(3, 4)
    spec = ts_impl.get_tensorstore_spec(str(tmp_path / "x"), ocdbt=ocdbt)
    assert spec == jax_ts.get_tensorstore_spec(str(tmp_path / "x"), ocdbt=ocdbt)
    asyncio.run(ts_impl.async_serialize(x, spec))
    back = asyncio.run(ts_impl.async_deserialize(x.sharding, spec))
    assert back.dtype == np.float32 and back.sharding == x.sharding
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    jax_sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    by_jax = asyncio.run(jax_ts.async_deserialize(jax_sharding, spec))
    np.testing.assert_array_equal(np.asarray(by_jax), np.asarray(x))
    # A larger requested shape reads zeros past the stored one; dtype= casts.
    wide = asyncio.run(ts_impl.async_deserialize(x.sharding, spec, global_shape=(4, 5), dtype=np.int32))
    want = np.zeros((4, 5), np.int32)
    want[:3, :4] = np.arange(12).reshape(3, 4)
    assert wide.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(wide), want)


def test_manager_commits_in_background_then_calls_back(tmp_path):
    tree = [funcgrad.numpy.ones(3), np.arange(4, dtype=np.int32)]
    done = []
    manager = serialization.GlobalAsyncCheckpointManager()
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager.serialize_with_paths(tree, paths, on_commit_callback=lambda: done.append(True))
    manager.wait_until_finished()
    assert done == [True]
    shardings = [SingleDeviceSharding(funcgrad.devices()[0])] * 2
    a, b = manager.deserialize_with_paths(shardings, paths)
    np.testing.assert_array_equal(np.asarray(a), np.ones(3))
    assert b.dtype == np.int32 and np.asarray(b).tolist() == [0, 1, 2, 3]
    # An error on the commit thread is raised by wait_until_finished, once.
    manager.serialize_with_paths([tree[0]], [paths[0]], on_commit_callback=lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        manager.wait_until_finished()
    manager.check_for_errors()


def test_bad_specs_and_shardings_are_named(tmp_path):
    with pytest.raises(ValueError, match="absolute"):
        ts_impl.get_tensorstore_spec("relative/x")
    with pytest.raises(TypeError, match="jax.sharding.Sharding"):
        asyncio.run(ts_impl.async_deserialize("cpu", {"driver": "zarr3"}))
    assert serialization.is_remote_storage({"kvstore": {"driver": "gcs", "bucket": "b"}})
    assert not serialization.is_remote_storage(str(tmp_path))


def test_what_orbax_reads_beside_it():
    d = funcgrad.devices()[0]
    s = funcgrad.sharding.make_single_device_sharding(d, memory_kind="device")
    assert s._addressable_device_assignment == [d]
    assert issubclass(funcgrad.Array, funcgrad.Array) and not issubclass(int, funcgrad.Array)
    piece = funcgrad.device_put(np.arange(3.0), Format(None, s))
    assert piece.sharding == s
    a = funcgrad.make_array_from_single_device_arrays((3,), s, [piece])
    np.testing.assert_array_equal(np.asarray(a), np.arange(3.0))
    with pytest.raises(ValueError, match="default layout"):  # (XLA's default: (0, 1))
        funcgrad.device_put(np.ones((2, 3)), Format(Layout((1, 0)), s))
    placed = funcgrad.device_put(np.ones((2, 3)), Format(Layout((0, 1)), s))
    assert placed.format.layout.major_to_minor == (0, 1)
    from jaxlib import _jax

    from funcgrad.experimental import pjit
    from funcgrad.extend import ifrt_programs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert float(pjit.pjit(lambda v: v * 2)(1.0)) == 2.0  # (jit, with pjit's None: test_sharding_as_jax)
    assert caught and caught[0].category is DeprecationWarning
    assert ifrt_programs.ifrt_programs is _jax.ifrt_programs
