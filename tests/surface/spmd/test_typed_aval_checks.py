"""JAX's checks of meshes, against jax 0.10.2: make_mesh's sizes must be ints (pjit_test's
test_make_mesh_non_int_error)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_make_mesh_of_sizes_that_are_not_ints(lib):
    # (pjit_test's test_make_mesh_non_int_error)
    with pytest.raises(ValueError, match="`axis_shapes` passed to `make_mesh` should be a sequence of ints"):
        lib.make_mesh(((4,), 4), ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)
    mesh = lib.make_mesh((1, np.int32(1), np.int64(1)), ("x", "y", "z"))
    assert tuple(mesh.axis_sizes) == (1, 1, 1)
