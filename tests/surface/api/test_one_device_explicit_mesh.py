"""Sharding in types on a one-device mesh with Explicit axes (NOTE: [sharding in types]): results of
eager operations and jitted calls keep the type their inputs' sharding gives them, as in JAX (flax's
image segmentation example prints ``jax.typeof`` of a model's output under ``set_mesh`` of
``make_mesh((jax.device_count(),), ("fsdp",))``); checked against jax 0.10.2."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def _types(lib, jnp):
    mesh = lib.make_mesh((1,), ("fsdp",), axis_types=(lib.sharding.AxisType.Explicit,))
    with lib.set_mesh(mesh):
        x = jnp.ones((4, 3), dtype=np.float32, out_sharding=lib.P("fsdp"))
        results = [x, x + 1, jnp.sin(x), lib.jit(jnp.sin)(x), x @ jnp.ones((3, 2), np.float32), x.sum(axis=1)]
        return [str(lib.typeof(r)) for r in results]


def test_results_on_a_one_device_explicit_mesh_keep_their_sharding_type():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    ours = _types(funcgrad, fnp)
    assert ours == _types(jax, jnp)
    assert ours[1] == "float32[4@fsdp,3]"


def _reshard_model(lib, jnp):
    mesh = lib.make_mesh((1,), ("x",), axis_types=(lib.sharding.AxisType.Explicit,))
    with lib.set_mesh(mesh):
        model = {"w": jnp.ones((2, 3), np.float32), "b": jnp.arange(3.0, dtype=np.float32)}
        # One spec for the whole model, longer than the bias's rank (flax's optimisation cookbook).
        out = lib.sharding.reshard(model, lib.P(None, None))
        return {k: (str(lib.typeof(v)), np.asarray(v).tolist()) for k, v in out.items()}


def test_reshard_takes_a_spec_naming_more_unsharded_dimensions_than_a_leaf_has():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    assert _reshard_model(funcgrad, fnp) == _reshard_model(jax, jnp)


def _shown(lib, jnp, capsys):
    class Box:  # a pytree standing for the array it holds, with its shape and sharding (flax's Param)
        def __init__(self, x):
            self.x = x

        shape = property(lambda self: self.x.shape)
        sharding = property(lambda self: self.x.sharding)

    lib.tree_util.register_pytree_node(Box, lambda b: ((b.x,), None), lambda _, xs: Box(*xs))
    lib.debug.visualize_array_sharding(Box(jnp.ones((4, 4))))
    return capsys.readouterr().out


def test_visualize_array_sharding_of_a_stand_in_for_an_array(capsys):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    assert _shown(funcgrad, fnp, capsys) == _shown(jax, jnp, capsys)


def test_mesh_and_partition_spec_refusals_in_jaxs_words():
    # (JAX's array_test: test_mesh_axis_types_mismatch, test_nested_tuple_pspec_error,
    # test_pspec_subclass_error, test_mesh_with_axis_name_none)

    from funcgrad.sharding import AbstractMesh, AxisType, Mesh, P, make_mesh

    with pytest.raises(ValueError, match="Number of axis names should match the number of axis_types"):
        make_mesh((1, 1), ("data", "model"), axis_types=AxisType.Explicit)
    with pytest.raises(ValueError, match="Number of axis names should match the number of axis_types"):
        AbstractMesh((2, 1), ("x", "y"), axis_types=AxisType.Auto)
    with pytest.raises(TypeError, match="axis_types.*must be of type"):
        AbstractMesh((2,), ("x",), axis_types=("explicit",))
    with pytest.raises(ValueError, match="A tuple inside PartitionSpec cannot contain a nested tuple"):
        P("x", "y", ("z", ("a",)))
    with pytest.raises(TypeError, match="Subclassing `jax.P` is prohibited"):
        type("MyP", (P,), {})
    with pytest.raises(ValueError, match="Mesh axis names cannot be None"):
        Mesh(funcgrad.devices(), (None,))
    assert AbstractMesh((2,), "x", axis_types=AxisType.Auto).axis_types == (AxisType.Auto,)


def test_abstract_mesh_shardings_and_the_empty_mesh_as_jax():
    # (JAX's array_test test_memory_kind_with_abstract_mesh, test_abstract_mesh_is_equivalent_to,
    # test_empty_mesh_creation)
    from funcgrad.sharding import AbstractMesh, Mesh, NamedSharding, P

    am = AbstractMesh((2,), ("x",))
    assert NamedSharding(am, P()).memory_kind is None
    assert NamedSharding(am, P(), memory_kind="pinned_host").memory_kind == "pinned_host"
    # (a new spec keeps the kind given, as JAX's update: it was lost over an abstract mesh)
    assert NamedSharding(am, P(), memory_kind="device").update(spec=P("x")).memory_kind == "device"
    with pytest.raises(ValueError, match="Got invalid memory kind"):
        NamedSharding(am, P(), memory_kind="weird_device")
    assert NamedSharding(am, P("x")).is_equivalent_to(NamedSharding(am, P("x", None)), 2)
    assert not NamedSharding(am, P("x")).is_equivalent_to(NamedSharding(am, P()), 2)
    empty = Mesh(np.empty((), dtype=object), ())
    assert empty.empty and empty.size == 0 and empty.abstract_mesh.empty and empty.abstract_mesh.size == 0


def test_partition_spec_concatenation_and_unreduced_checks_as_jax():
    # (JAX's array_test test_pspec_unreduced, test_named_sharding_unreduced_error)
    from funcgrad.sharding import P

    assert P("x", unreduced={"z"}) + P("a", unreduced={"b"}) == P("x", "a", unreduced={"z", "b"})
    assert type(P("x") + (None,)) is P and (None,) + P("x") == P(None, "x")
    with pytest.raises(TypeError, match="unreduced in `__add__` of PartitionSpec"):
        P("x", unreduced={"z"}) + (None,) * 2
    with pytest.raises(TypeError, match="unreduced in `__radd__` of PartitionSpec"):
        (None,) * 2 + P("x", unreduced={"y"})
    with pytest.raises(ValueError, match="partitions cannot overlap with unreduced"):
        P("x", "y", unreduced={"x"})
    with pytest.raises(ValueError, match="unreduced cannot contain None"):
        P("x", unreduced={"y", None})


def test_unreduced_axes_must_be_explicit_axes_of_the_mesh_as_jax():
    # (JAX's array_test test_named_sharding_unreduced_error)
    from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

    mesh = make_mesh((1, 1, 1), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3)
    with pytest.raises(ValueError, match="Unreduced axes.*not found in mesh"):
        NamedSharding(mesh, P("x", unreduced={"a"}))
    with pytest.raises(ValueError, match="Unreduced axes can only refer to mesh axes.*Explicit"):
        NamedSharding(mesh, P("x", unreduced={"y", "z"}))
