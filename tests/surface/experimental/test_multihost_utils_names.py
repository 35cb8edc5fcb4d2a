"""The rest of jax.experimental.multihost_utils' names in funcgrad: the per-array impls, abstract
evals and batcher of host-local <-> global arrays, live_devices, reached_preemption_sync_point,
ProcessFailureError and the re-exported helpers, in one process against jax's."""

from __future__ import annotations

import types

import numpy as np
import pytest

import funcgrad
from funcgrad.experimental import multihost_utils as mu
from funcgrad.sharding import PartitionSpec, make_mesh

jmu = pytest.importorskip("jax.experimental.multihost_utils")


def test_per_array_impls_round_trip():
    mesh = make_mesh((1,), ("x",))
    x = np.arange(8.0).reshape(4, 2)
    g = mu.host_local_array_to_global_array_impl(x, global_mesh=mesh, pspec=mu.P("x"))
    assert g.sharding.spec == mu.P("x")
    back = mu.global_array_to_host_local_array_impl(g, global_mesh=mesh, pspec=mu.P("x"))
    np.testing.assert_array_equal(back, x)
    with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs"):
        mu.host_local_array_to_global_array_impl(x, global_mesh=mesh, pspec=None)


def test_abstract_evals_as_jax_in_one_process():
    import jax

    jmesh = jax.make_mesh((1,), ("x",))
    mesh = make_mesh((1,), ("x",))
    x = np.ones((4, 3), np.float32)
    for ours, theirs in (
        (mu.ltg_abstract_eval, jmu.ltg_abstract_eval),
        (mu.gtl_abstract_eval, jmu.gtl_abstract_eval),
    ):
        a = ours(x, global_mesh=mesh, pspec=mu.P("x"))
        b = theirs(jax.core.ShapedArray(x.shape, x.dtype), global_mesh=jmesh, pspec=jmu.P("x"))
        assert (a.shape, a.dtype) == (b.shape, b.dtype)


def test_abstract_evals_scale_by_processes():
    # a global mesh of 4 devices along "x", 2 of them on this process: x-sharded dims double/halve
    stub = types.SimpleNamespace(
        shape={"x": 4, "y": 1}, local_mesh=types.SimpleNamespace(shape={"x": 2, "y": 1})
    )
    x = np.ones((6, 5))
    assert mu.ltg_abstract_eval(x, global_mesh=stub, pspec=mu.P("x", "y")).shape == (12, 5)
    assert mu.gtl_abstract_eval(x, global_mesh=stub, pspec=mu.P(("x", "y"))).shape == (3, 5)
    assert mu.ltg_abstract_eval(x, global_mesh=stub, pspec=mu.P(None, None)).shape == (6, 5)
    with pytest.raises(ValueError, match="does not split over 2 processes"):
        mu.gtl_abstract_eval(np.ones(5), global_mesh=stub, pspec=mu.P("x"))


def test_ltg_batcher_inserts_the_batch_axis():
    mesh = make_mesh((1,), ("x",))
    y, d = mu.ltg_batcher(
        False, types.SimpleNamespace(spmd_name=None), [np.ones((3, 4))], [1], mesh, mu.P("x")
    )
    assert d == 1 and y.shape == (3, 4) and y.sharding.spec == mu.P("x", None)


def test_process_level_names_as_jax():
    assert mu.reached_preemption_sync_point(3) is jmu.reached_preemption_sync_point(3) is False
    with pytest.raises(RuntimeError, match="not initialized"):
        with mu.live_devices(funcgrad.devices()):
            pass
    with pytest.raises(RuntimeError, match="not initialized"):
        with jmu.live_devices(jmu.jax.devices()):
            pass
    err = mu.ProcessFailureError({"d"})
    assert err.failed_devices == {"d"} and str(err) == str(jmu.ProcessFailureError({"d"}))
    assert mu.P is PartitionSpec
    leaves, tree = mu.tree_flatten({"a": 1, "b": (2, 3)})
    assert leaves == [1, 2, 3] and mu.tree_unflatten(tree, [4, 5, 6]) == {"a": 4, "b": (5, 6)}
    assert mu.safe_zip([1, 2], [3, 4]) == list(jmu.safe_zip([1, 2], [3, 4]))
    with pytest.raises(ValueError):
        mu.safe_zip([1], [1, 2])
    with pytest.raises(ValueError):
        jmu.safe_zip([1], [1, 2])


def test_device_kind_handler_dict_is_consulted():
    from funcgrad.experimental import mesh_utils

    kind = funcgrad.devices()[0].device_kind
    calls = []

    def reversed_layout(shape, devices, *, contiguous_submeshes):
        calls.append((tuple(shape), contiguous_submeshes))
        return np.array(devices[::-1], dtype=object).reshape(shape)

    mesh_utils.device_kind_handler_dict[kind] = reversed_layout
    try:
        mesh = mesh_utils.create_device_mesh((1,), contiguous_submeshes=True)
        assert calls == [((1,), True)] and mesh[0] == funcgrad.devices()[0]
        mesh_utils.device_kind_handler_dict[kind] = lambda *a, **k: None  # None: the default layout
        assert mesh_utils.create_device_mesh((1,)).shape == (1,)
    finally:
        del mesh_utils.device_kind_handler_dict[kind]
    from jax.experimental import mesh_utils as jmesh_utils

    assert isinstance(jmesh_utils.device_kind_handler_dict, dict)
