"""JAX's checks of types and meshes, against jax 0.10.2: a type's sharding over explicit mesh axes
must divide its dimensions (pjit_test's test_divisbility_aval_error: ``ShapedArray((5, 2), int32,
sharding=P('x'))`` over an Explicit axis of 2 devices is JAX's ValueError; Auto axes type nothing,
so they are not checked), and make_mesh's sizes must be ints (test_make_mesh_non_int_error)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_an_uneven_explicit_type_is_refused(lib):
    sh = lib.sharding
    am = sh.AbstractMesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
    P = sh.PartitionSpec
    want = r"array axis 0 is partitioned 2 times, but does not evenly divide the dimension size 5"
    with pytest.raises(ValueError, match=want):
        lib.core.ShapedArray((5, 2), np.int32, sharding=sh.NamedSharding(am, P("x")))
    ok = lib.core.ShapedArray((4, 2), np.int32, sharding=sh.NamedSharding(am, P("x")))
    assert ok.sharding.spec == P("x", None)
    auto = sh.AbstractMesh((2,), ("x",), axis_types=(sh.AxisType.Auto,))
    lib.core.ShapedArray((5, 2), np.int32, sharding=sh.NamedSharding(auto, P("x")))  # (no error)


@pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])
def test_make_mesh_of_sizes_that_are_not_ints(lib):
    # (pjit_test's test_make_mesh_non_int_error)
    with pytest.raises(ValueError, match="`axis_shapes` passed to `make_mesh` should be a sequence of ints"):
        lib.make_mesh(((4,), 4), ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)
    mesh = lib.make_mesh((1, np.int32(1), np.int64(1)), ("x", "y", "z"))
    assert tuple(mesh.axis_sizes) == (1, 1, 1)
