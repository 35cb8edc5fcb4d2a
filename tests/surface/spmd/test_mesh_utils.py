"""funcgrad.experimental.mesh_utils on 8 CPU devices: the layouts jax's mesh_utils gives CPU devices
(in order), the hybrid mesh's blocks, and a sharded computation on a mesh it made equal to the
one-device result."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import mesh_utils
from funcgrad.sharding import Mesh, NamedSharding, P


def _ids(mesh):
    return np.vectorize(lambda d: d.id, otypes=[int])(mesh)


@pytest.mark.parametrize("shape", [(8,), (2, 4), (4, 2), (2, 2, 2), (1, 8)])
def test_create_device_mesh_lays_devices_out_in_order(shape):
    # On CPUs jax's create_device_mesh reshapes the devices in the order given (no topology);
    # jax itself stays out of this process (tests/surface/spmd/test_sharded_arrays.py::test_no_jax_import).
    ours = mesh_utils.create_device_mesh(shape)
    assert ours.shape == shape and ours.dtype == object
    np.testing.assert_array_equal(_ids(ours), np.arange(8).reshape(shape))
    reversed_devices = funcgrad.devices()[::-1]
    np.testing.assert_array_equal(
        _ids(mesh_utils.create_device_mesh(shape, reversed_devices)), np.arange(8)[::-1].reshape(shape)
    )


def test_hybrid_mesh_one_process_granule():
    mesh = mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1), process_is_granule=True)
    np.testing.assert_array_equal(_ids(mesh), np.arange(8).reshape(2, 4))
    with pytest.raises(ValueError, match="process_is_granule=True"):
        mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1))  # CPU devices have no slice index
    with pytest.raises(ValueError, match="granules"):
        mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True)


def test_hybrid_mesh_blocks_follow_the_outer_shape():
    class Fake:  # devices of two "slices", to check the block layout without two processes
        def __init__(self, i):
            self.id, self.slice_index, self.platform = i, i // 4, "cpu"

    devs = [Fake(i) for i in range(8)]
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 2), devs)
    assert mesh.shape == (2, 4)
    np.testing.assert_array_equal(_ids(mesh), [[0, 1, 4, 5], [2, 3, 6, 7]])
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), devs)
    np.testing.assert_array_equal(_ids(mesh), [[0, 1], [2, 3], [4, 5], [6, 7]])


def test_errors_and_a_computation_on_the_mesh():
    with pytest.raises(ValueError, match="cannot fill a mesh"):
        mesh_utils.create_device_mesh((3, 3))
    with pytest.raises(ValueError, match="sequence of ints"):
        mesh_utils.create_device_mesh(("a", 2))
    mesh = Mesh(mesh_utils.create_device_mesh((2, 4)), ("a", "b"))
    x = np.arange(32.0).reshape(8, 4)
    xs = funcgrad.device_put(x, NamedSharding(mesh, P("a", "b")))
    out = funcgrad.jit(lambda v: fnp.sin(v) @ v.T)(xs)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) @ x.T, rtol=1e-12)
