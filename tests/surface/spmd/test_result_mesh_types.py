"""A jitted result is laid out over the mesh its type shows, as JAX's (pjit_test's
test_inputs_different_context): with arguments over the same devices as an Auto and an Explicit
mesh, the program runs over the first one's mesh, and funcgrad gave every result that mesh's axis
types, so an Explicit-typed argument came back Auto and untyped (``typeof`` int32[8,2] where jax
has int32[8@x,2])."""

from __future__ import annotations

import numpy as np

import funcgrad
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh


def test_result_keeps_its_types_mesh():
    explicit = make_mesh((2,), ("x",), axis_types=(AxisType.Explicit,))
    auto = make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
    x = funcgrad.device_put(np.arange(16).reshape(8, 2), NamedSharding(explicit, P("x")))
    y = funcgrad.device_put(np.ones(8, np.float32), NamedSharding(auto, P("x")))
    oy, ox = funcgrad.jit(lambda b, a: (b + 1, a * 2))(y, x)
    assert ox.sharding == NamedSharding(explicit, P("x", None))
    assert funcgrad.typeof(ox).sharding.spec == P("x", None)
    assert oy.sharding == NamedSharding(auto, P("x"))
    np.testing.assert_array_equal(np.asarray(ox), np.arange(16).reshape(8, 2) * 2)
    np.testing.assert_array_equal(np.asarray(oy), np.full(8, 2.0))


def test_explicit_axes_result_is_over_the_callers_mesh():
    # (pjit_test's test_explicit_axes_late_bind, test_full_visible_outside_jit: the eager result
    # was over the switched, Explicit mesh)
    auto = make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
    with funcgrad.sharding.set_mesh(auto):
        out = funcgrad.sharding.explicit_axes(lambda a: a * 2)(np.arange(8), in_sharding=P("x"))
    assert out.sharding == NamedSharding(auto, P("x"))
    assert out.sharding.mesh.axis_types == (AxisType.Auto,)
    np.testing.assert_array_equal(np.asarray(out), np.arange(8) * 2)


def test_zeros_like_of_a_struct_over_an_abstract_explicit_mesh_is_typed():
    # (pjit_test's test_sds_closed_over_to_zeros_like_propagates_sharding_jit: under
    # use_abstract_mesh alone the result was untyped, float32[32] where jax has float32[32@x])
    am = make_mesh((2,), ("x",), axis_types=(AxisType.Explicit,)).abstract_mesh
    with funcgrad.sharding.use_abstract_mesh(am):
        val = funcgrad.ShapeDtypeStruct((32,), np.float32, sharding=NamedSharding(am, P("x")))
        out = funcgrad.jit(lambda: funcgrad.numpy.zeros_like(val)).trace().out_info
    assert out.sharding == NamedSharding(am, P("x"))
