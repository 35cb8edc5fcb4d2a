"""``jax.experimental.pjit.pjit`` inside ``with mesh:`` places as JAX's (its resource environment's
mesh is the call's concrete mesh: pjit_test's test_trivial_computation_with_replicated_literal,
test_pjit_uncommitted_array_reshard, test_pjit_sin_nested, test_array_device_assignment_mismatch_
with_mesh): uncommitted arguments and constants go on the mesh's devices, results are replicated
over it, a committed argument on other devices is refused. funcgrad ran such calls on one device."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")


def _pjit(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(f"{lib.__name__}.experimental.pjit").pjit


def _auto(lib, shape):
    return lib.make_mesh(shape, ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_pjit_places_on_the_mesh_in_scope(lib):
    pjit, sh, jnp = _pjit(lib), lib.sharding, lib.numpy
    small, mesh = _auto(lib, (2, 1)), _auto(lib, (4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (jax: `with mesh:` is deprecated)
        with small:
            out = pjit(lambda: 1)()
            assert out.sharding == sh.NamedSharding(small, sh.PartitionSpec()) and int(out) == 1
        with mesh:
            arr = jnp.array([[1, 2, 3]])
            out = pjit(lambda x: x)(arr)
            assert len(out.addressable_shards) == 8
            np.testing.assert_array_equal(np.asarray(out), [[1, 2, 3]])
            out = pjit(jnp.sin)(jnp.arange(8.0))
            assert len(out.devices()) == 8
            np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(8.0)), rtol=1e-6)

            @pjit
            def f(x):
                return pjit(lambda y: y * 2)(x)

            out = f(jnp.arange(8))
            assert out.sharding == sh.NamedSharding(mesh, sh.PartitionSpec())
            np.testing.assert_array_equal(np.asarray(out), np.arange(8) * 2)
        other = lib.device_put(
            np.ones((8, 2)), sh.NamedSharding(_auto(lib, (2, 2)), sh.PartitionSpec("x", "y"))
        )
        with mesh:
            with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
                pjit(lambda x: x)(other)
    # outside every mesh, jit's placement
    assert pjit(lambda x: x + 1)(np.ones(3)).sharding == sh.SingleDeviceSharding(lib.devices()[0])


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_placement_and_shardings_together_are_refused(lib):
    dev = lib.devices()[0]
    s = lib.sharding.SingleDeviceSharding(dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (jax: backend/device are deprecated)
        with pytest.raises(ValueError, match="can't specify both a device and a backend for jit"):
            lib.jit(lambda x: x, device=dev, backend="cpu")
        with pytest.raises(ValueError, match="then in_shardings should not be specified"):
            lib.jit(lambda x: x, in_shardings=s, backend="cpu")
        with pytest.raises(ValueError, match="then out_shardings should not be specified"):
            lib.jit(lambda x: x, out_shardings=s, device=dev)
        with _auto(lib, (1, 1)):
            with pytest.raises(ValueError, match="Mesh context manager should not be used with jit"):
                _pjit(lib)(lambda x: x, device=dev)(np.arange(8))
