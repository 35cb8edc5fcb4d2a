"""Errors JAX raises on shardings given to ``jit``, ``NamedSharding`` and
``with_sharding_constraint``, against jax 0.10.2 in the same process (pjit_test's
test_mixed_inputs, test_in_out_shardings_unconstrained_error, test_jit_out_shardings_unconstrained,
test_wsc_error_on_none, test_named_sharding_of_none): funcgrad resharded a committed argument laid
out otherwise than ``in_shardings``, took ``P.UNCONSTRAINED`` in a jit's shardings, a ``None``
constraint and a ``None`` spec."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")

LIBS = pytest.mark.parametrize("lib", [funcgrad, jax], ids=["funcgrad", "jax"])


def _mesh(lib):
    return lib.make_mesh((4, 2), ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)


@LIBS
def test_a_committed_argument_laid_out_otherwise_than_in_shardings(lib):
    sh = lib.sharding
    mesh = _mesh(lib)
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    a = lib.device_put(x, sh.NamedSharding(mesh, sh.PartitionSpec("x", "y")))
    f = lib.jit(lambda v: v * 2, in_shardings=sh.NamedSharding(mesh, sh.PartitionSpec(None)))
    with pytest.raises(
        ValueError, match="Sharding passed to jit does not match the sharding on the respective arg"
    ):
        f(a)
    # an uncommitted value is moved, and one laid out as asked is taken
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2)
    same = lib.device_put(x, sh.NamedSharding(mesh, sh.PartitionSpec(None)))
    np.testing.assert_array_equal(np.asarray(f(same)), x * 2)


@LIBS
@pytest.mark.parametrize("which", ["in_shardings", "out_shardings"])
def test_unconstrained_dims_in_a_jits_shardings(lib, which):
    sh = lib.sharding
    s = sh.NamedSharding(_mesh(lib), sh.PartitionSpec(sh.PartitionSpec.UNCONSTRAINED, "x"))
    with pytest.raises(ValueError, match=f"Unconstrained dims are not allowed when passed to {which}"):
        lib.jit(lambda v: v, **{which: s})(np.ones((8, 8), np.float32))


@LIBS
def test_a_none_constraint_and_a_none_spec(lib):
    with pytest.raises(ValueError, match="got sharding None which is not allowed"):
        lib.lax.with_sharding_constraint(lib.numpy.arange(8), None)
    with pytest.raises(TypeError, match="Unexpected None|incompatible function arguments"):
        lib.sharding.NamedSharding(_mesh(lib), None)


@LIBS
def test_a_shape_dtype_struct_returned_by_jit(lib):
    # (pjit_test's test_shape_dtype_struct_as_const_error)
    const = lib.ShapeDtypeStruct((8,), np.int32)
    with pytest.raises(TypeError, match="A ShapeDtypeStruct does not have a value"):
        lib.jit(lambda x: (x, const))(lib.numpy.arange(8))


@LIBS
def test_a_bare_partition_spec_without_a_mesh(lib):
    # (pjit_test's test_pspec_to_wsc_without_mesh: JAX's RuntimeError for jit and constraints)
    P = lib.sharding.PartitionSpec
    x = lib.numpy.arange(4)
    with pytest.raises(RuntimeError, match="with_sharding_constraint requires a non-empty mesh in context"):
        lib.jit(lambda v: lib.lax.with_sharding_constraint(v, P("x")))(x)
    with pytest.raises(RuntimeError, match="jit requires a non-empty mesh in context .* to in_shardings"):
        lib.jit(lambda v: v, in_shardings=P("x"))(x)


@LIBS
def test_committed_data_is_not_moved_onto_other_devices(lib):
    # (pjit_test's test_jit_with_sharding_constraint_committed_inp_error,
    # test_jit_device_with_sharding_constraint_error, test_jnp_array_reshard_error: funcgrad moved
    # the committed value, or ignored jit(device=), and computed)
    sh = lib.sharding
    mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2)
    s = sh.NamedSharding(mesh, sh.PartitionSpec("x", "y"))
    d = lib.devices()
    on_0 = lib.device_put(np.zeros((8, 2), np.float32), d[0])
    constrained = lib.jit(lambda v: lib.lax.with_sharding_constraint(v, s))
    words = "Received incompatible devices for jitted computation. Got argument"
    with pytest.raises(ValueError, match=words + r" v of .* ids \[0\] .*sharding_constraint inside jit"):
        constrained(on_0)
    np.testing.assert_array_equal(np.asarray(constrained(np.ones((8, 2)))), np.ones((8, 2)))
    on_device = lib.jit(lambda v: lib.lax.with_sharding_constraint(v * 2, s), device=d[0])
    with pytest.raises(ValueError, match=r"Got ARG_SHARDING with device ids \[0\] .*sharding_constraint"):
        on_device(np.ones((8, 2), np.float32))
    with pytest.raises(ValueError, match=words + r" args\[0\] of convert_element_type"):
        lib.numpy.array(on_0, device=d[1])
    assert lib.numpy.asarray(on_0, device=d[0]).devices() == {d[0]}


@LIBS
def test_keyword_arguments_with_in_shardings(lib):
    # (pjit_test's test_pjit_kwargs_axis_resources_error: funcgrad took them)
    f = lib.jit(lambda x: x, in_shardings=lib.sharding.SingleDeviceSharding(lib.devices()[0]))
    with pytest.raises(ValueError, match="pjit does not support kwargs when in_shardings is specified"):
        f(x=np.arange(8.0))
    np.testing.assert_array_equal(np.asarray(f(np.arange(8.0))), np.arange(8.0))


@LIBS
def test_an_eager_constraint_does_not_move_committed_data(lib):
    # (pjit_test's test_wsc_eager_different_order_devices: funcgrad moved it, through the host)
    sh = lib.sharding
    d = lib.devices()
    mesh = sh.Mesh(np.array(d[:2]), ("x",), axis_types=(sh.AxisType.Auto,))
    swapped = sh.Mesh(np.array([d[1], d[0]]), ("x",), axis_types=(sh.AxisType.Auto,))
    x = lib.device_put(np.arange(8), sh.NamedSharding(mesh, sh.PartitionSpec()))
    for v, s in ((x, swapped), (lib.device_put(np.arange(8), d[3]), mesh)):
        with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
            lib.lax.with_sharding_constraint(v, sh.NamedSharding(s, sh.PartitionSpec("x")))
    out = lib.lax.with_sharding_constraint(np.arange(8), sh.NamedSharding(swapped, sh.PartitionSpec("x")))
    np.testing.assert_array_equal(np.asarray(out), np.arange(8))


@LIBS
def test_constraints_under_vmap_with_spmd_axis_name(lib):
    # (pjit_test's test_with_sharding_constraint_vmap_spmd_axis_name_error,
    # test_vmap_spmd_axis_name_error: funcgrad skipped the axis, and the one-device constraint)
    sh = lib.sharding
    mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2)
    xs = np.arange(64.0, dtype=np.float32).reshape(4, 16)
    f = lambda x: lib.lax.with_sharding_constraint(x, sh.NamedSharding(mesh, sh.PartitionSpec("x")))  # noqa: E731
    with pytest.raises(ValueError, match=r"vmap spmd_axis_name \('x',\) cannot appear in"):
        lib.vmap(f, spmd_axis_name="x")(xs)
    one = sh.SingleDeviceSharding(lib.devices()[0])
    g = lib.vmap(lambda x: lib.lax.with_sharding_constraint(x, one), spmd_axis_name="x")
    with pytest.raises(ValueError, match="If you are using spmd_axis_name parameter of jax.vmap"):
        lib.jit(g)(lib.device_put(np.arange(8), one))
