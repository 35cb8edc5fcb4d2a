"""Sharded arrays and sharded jit on 8 devices: device_put, reading back every shard, the Array
placement properties, jit(in_shardings=, out_shardings=), with_sharding_constraint, a data-parallel
MLP step equal to the one-device step, a model-parallel matmul on a 2x4 mesh, and the errors."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from funcgrad.xla_bridge.programs import Compiled
from jaxlib import xla_client

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax, xla_bridge
from funcgrad.sharding import AxisType, Mesh, NamedSharding, P, SingleDeviceSharding, make_mesh

MESH = make_mesh((8,), ("x",), (AxisType.Auto,))  # the Auto mode: XLA decides
MESH2 = make_mesh((2, 4), ("a", "b"), (AxisType.Auto,) * 2)
MESH_XY = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)


def test_devices():
    assert funcgrad.device_count() == 8 == funcgrad.local_device_count() == len(funcgrad.devices())
    assert funcgrad.process_index() == 0 and funcgrad.process_count() == 1
    assert MESH.shape == {"x": 8} and MESH2.shape == {"a": 2, "b": 4} and MESH2.size == 8
    assert MESH2.device_ids.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize(
    "spec",
    [P("a", "b"), P("b", None), P(None, "a"), P(("a", "b")), P(("b", "a"), None), P(), P(None, ("b", "a"))],
)
def test_device_put_reads_back_every_shard(spec):
    x = np.arange(64.0).reshape(8, 8)
    s = NamedSharding(MESH2, spec)
    y = funcgrad.device_put(x, s)
    assert y.sharding == s and y.shape == (8, 8) and y.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(y), x)
    assert y.devices() == set(funcgrad.devices())
    shards = y.addressable_shards
    assert len(shards) == 8
    assert {sh.device for sh in shards} == set(funcgrad.devices())
    for sh in shards:
        np.testing.assert_array_equal(np.asarray(sh.data), x[sh.index])
        assert sh.data.devices() == {sh.device}
    assert s.devices_indices_map((8, 8)) == {sh.device: sh.index for sh in shards}
    replicas = len(shards) // len({tuple((i.start, i.stop) for i in sh.index) for sh in shards})
    assert sorted(sh.replica_id for sh in shards) == sorted(list(range(replicas)) * (8 // replicas))
    assert y.is_fully_replicated == (spec == P()) and y.is_fully_addressable
    np.testing.assert_array_equal(y.addressable_data(3), x[shards[3].index])
    if spec == P("a", "b"):  # JAX's keywords; with x64 off a NumPy value takes the 32-bit dtype
        moved = funcgrad.device_put(y, NamedSharding(MESH2, P("b", None)), donate=True, may_alias=False)
        np.testing.assert_array_equal(np.asarray(moved), x)
        previous = funcgrad.config.jax_enable_x64
        funcgrad.config.update("jax_enable_x64", False)
        try:
            assert funcgrad.device_put(np.arange(64).reshape(8, 8), s).dtype == np.int32
        finally:
            funcgrad.config.update("jax_enable_x64", previous)


def test_shard_shapes_and_indices_like_jax():
    s = NamedSharding(MESH2, P("a", "b"))
    assert s.shard_shape((4, 8)) == (2, 2)
    assert s.devices_indices_map((4, 8))[funcgrad.devices()[1]] == (slice(0, 2), slice(2, 4))
    row = NamedSharding(MESH, P("x"))
    assert row.devices_indices_map((8, 2))[funcgrad.devices()[1]] == (slice(1, 2), slice(None))
    assert NamedSharding(MESH, P("x")) == NamedSharding(MESH, P("x", None))
    assert hash(NamedSharding(MESH, P("x"))) == hash(NamedSharding(MESH, P("x", None)))


def test_single_device_arrays(capsys):
    d = funcgrad.devices()[3]
    y = funcgrad.device_put(np.ones(3), d)
    assert y.devices() == {d} and y.device == d and y.sharding == SingleDeviceSharding(d)
    z = funcgrad.device_put(np.ones(3), SingleDeviceSharding(funcgrad.devices()[5]))
    assert z.device == funcgrad.devices()[5]
    h = fnp.ones(3)
    assert h.device == funcgrad.devices()[0] and not h.committed
    # One device's jaxlib sharding names its devices as a mesh's does (devices_indices_map failed).
    assert y.sharding.devices_indices_map((3,)) == {d: (slice(None),)}
    assert y.sharding.addressable_devices_indices_map((3,)) == {d: (slice(None),)}
    assert funcgrad.debug.visualize_array_sharding(y) is None  # printed once (as jax)
    assert "CPU 3" in capsys.readouterr().out


def test_sharded_jit_keeps_values_on_devices_and_the_partitioner_picks_output_shardings():
    x = funcgrad.device_put(np.arange(32.0).reshape(8, 4), NamedSharding(MESH, P("x")))
    f = funcgrad.jit(lambda a: fnp.sin(a) * 2)
    y = f(x)
    assert y.sharding == NamedSharding(MESH, P("x"))
    np.testing.assert_allclose(y, np.sin(np.arange(32.0).reshape(8, 4)) * 2)
    z = funcgrad.jit(lambda a: a.sum(0))(x)
    assert z.sharding.is_fully_replicated and np.allclose(z, np.arange(32.0).reshape(8, 4).sum(0))
    y2 = f(y)  # an output feeds the next call directly
    assert y2.sharding == y.sharding


def test_in_and_out_shardings():
    s_row, s_col = NamedSharding(MESH2, P("a", "b")), NamedSharding(MESH2, P(None, "a"))
    f = funcgrad.jit(lambda a, b: (a * b, a - b), in_shardings=(s_row, None), out_shardings=(s_col, s_row))
    a, b = np.arange(64.0).reshape(8, 8), np.ones((8, 8))
    p, m = f(a, b)
    assert p.sharding == s_col and m.sharding == s_row
    np.testing.assert_allclose(p, a * b)
    np.testing.assert_allclose(m, a - b)
    # a Python scalar is broadcast; a committed argument laid out otherwise is JAX's error
    q, _ = f(a, 2.0)
    np.testing.assert_allclose(q, 2 * a)
    with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding"):
        f(funcgrad.device_put(a, NamedSharding(MESH2, P("b"))), 2.0)
    with MESH2:  # a bare PartitionSpec inside `with mesh:`
        g = funcgrad.jit(lambda a: a + 1, out_shardings=P("b"))
        assert g(a).sharding == NamedSharding(MESH2, P("b"))


def test_transformations_of_a_jit_with_shardings():
    s = NamedSharding(MESH, P("x"))
    f = funcgrad.jit(lambda a: fnp.sin(a) * 2, in_shardings=s, out_shardings=s)
    x = np.arange(16.0)
    np.testing.assert_allclose(funcgrad.grad(lambda a: fnp.sum(f(a)))(x), 2 * np.cos(x))
    np.testing.assert_allclose(funcgrad.jvp(f, (x,), (np.ones(16),))[1], 2 * np.cos(x))
    np.testing.assert_allclose(funcgrad.vmap(f)(np.ones((3, 16))), np.full((3, 16), 2 * np.sin(1.0)))
    assert "NamedSharding" in str(funcgrad.make_jaxpr(f)(x))


def test_derivatives_of_a_jit_with_shardings_are_laid_out_as_jax():
    # JAX's pjit rules: a tangent is laid out as its primal, a cotangent as its output, a gradient
    # as its input's in_sharding, a batched value with an unsharded batch dimension (funcgrad's
    # derived calls dropped the shardings: gradients came back on one device; the sharded-program
    # fuzzer, ops_shard, seeds 16001/16003)
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    a, b = np.arange(32.0).reshape(8, 4) / 10, np.arange(8.0) / 5

    def run(lib, np_, mesh, ns):
        f = lib.jit(
            lambda u, v: np_.sin(u) * v.sum(),
            in_shardings=(ns(mesh, "x", None), ns(mesh)),
            out_shardings=ns(mesh, None, "y"),
        )
        outs = {
            "grad": lib.grad(lambda u, v: f(u, v).sum(), argnums=(0, 1))(a, b),
            "jvp": lib.jvp(f, (a, b), (np.ones_like(a), np.ones_like(b))),
            "jit_grad": lib.jit(lib.grad(lambda u: f(u, b).sum()))(a),
            "vmap": lib.vmap(f, in_axes=(1, None), out_axes=1)(np.stack([a, a], 1), b),
        }
        return {
            k: [(tuple(v.sharding.spec), np.asarray(v)) for v in lib.tree_util.tree_leaves(o)]
            for k, o in outs.items()
        }

    ours = run(funcgrad, fnp, MESH_XY, lambda m, *s: NamedSharding(m, P(*s)))
    jm = jax.make_mesh((4, 2), ("x", "y"), (jax.sharding.AxisType.Auto,) * 2)
    theirs = run(jax, jax.numpy, jm, lambda m, *s: jax.sharding.NamedSharding(m, jax.P(*s)))
    for k in theirs:
        assert [spec for spec, _ in ours[k]] == [spec for spec, _ in theirs[k]], k
        for (_, u), (_, t) in zip(ours[k], theirs[k]):
            np.testing.assert_allclose(u, t, rtol=1e-5, err_msg=k)  # (jax: float32)


def test_with_sharding_constraint():
    s = NamedSharding(MESH, P(None, "x"))
    f = funcgrad.jit(lambda a: lax.with_sharding_constraint(a @ a.T, s) + 1)
    a = np.arange(32.0).reshape(8, 4)
    out = f(a)
    assert out.sharding == s and np.allclose(out, a @ a.T + 1)
    assert "sdy.sharding_constraint" in f.lower(a).as_text()
    assert lax.with_sharding_constraint(fnp.ones((2, 8)), s).sharding == s  # eagerly: a put
    g = funcgrad.grad(lambda a: fnp.sum(f(a)))(a)
    np.testing.assert_allclose(g, 2 * np.ones((8, 8)) @ a)


def _mlp(rng, sizes):
    return [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def _loss(params, x, y):
    for w, b in params[:-1]:
        x = fnp.tanh(x @ w + b)
    w, b = params[-1]
    return fnp.mean((x @ w + b - y) ** 2)


@funcgrad.jit
def _step(params, x, y):
    loss, g = funcgrad.value_and_grad(_loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)], loss


def test_data_parallel_mlp_step_equals_the_one_device_step(rng):
    params = _mlp(rng, [16, 32, 32, 4])
    x, y = rng.standard_normal((1024, 16)), rng.standard_normal((1024, 4))
    one, loss1 = _step(params, x, y)
    data, rep = NamedSharding(MESH, P("x")), NamedSharding(MESH, P())
    ps = funcgrad.device_put(params, rep)
    xs, ys = funcgrad.device_put((x, y), data)
    assert xs.addressable_shards[0].data.shape == (128, 16)
    eight, loss8 = _step(ps, xs, ys)
    np.testing.assert_allclose(loss8, loss1, rtol=1e-12)
    for p, q in zip(funcgrad.tree_util.tree_leaves(eight), funcgrad.tree_util.tree_leaves(one)):
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)
        assert p.sharding.is_fully_replicated
    for _ in range(3):  # steps chain on the devices
        eight, loss8 = _step(eight, xs, ys)
        one, loss1 = _step(one, x, y)
    np.testing.assert_allclose(loss8, loss1, rtol=1e-10)


def test_model_parallel_matmul_on_a_2x4_mesh(rng):
    a, b = rng.standard_normal((8, 16)), rng.standard_normal((16, 12))
    a_s = funcgrad.device_put(a, NamedSharding(MESH2, P("a", "b")))
    b_s = funcgrad.device_put(b, NamedSharding(MESH2, P("b", None)))
    out_s = NamedSharding(MESH2, P("a", None))
    c = funcgrad.jit(lambda p, q: p @ q, out_shardings=out_s)(a_s, b_s)
    assert c.sharding == out_s
    np.testing.assert_allclose(c, a @ b)
    # and by hand with shard_map: local matmuls, then a psum over the contracted axis
    mm = funcgrad.shard_map(
        lambda p, q: lax.psum(p @ q, "b"),
        mesh=MESH2,
        in_specs=(P("a", "b"), P("b", None)),
        out_specs=P("a", None),
    )
    np.testing.assert_allclose(mm(a, b), a @ b)
    ga = funcgrad.grad(lambda p: fnp.sum(mm(p, b) ** 2))(a)
    np.testing.assert_allclose(ga, 2 * (a @ b) @ b.T)


def test_make_array_from_callback_and_single_device_arrays():
    s = NamedSharding(MESH2, P("b", "a"))
    x = np.arange(32.0).reshape(8, 4)
    y = funcgrad.make_array_from_callback(x.shape, s, lambda idx: x[idx])
    assert y.sharding == s and np.array_equal(np.asarray(y), x)
    pieces = [funcgrad.device_put(x[idx], d) for d, idx in s.addressable_devices_indices_map(x.shape).items()]
    z = funcgrad.make_array_from_single_device_arrays(x.shape, s, pieces)
    assert np.array_equal(np.asarray(z), x)
    w = funcgrad.make_array_from_process_local_data(NamedSharding(MESH, P("x")), x)
    assert np.array_equal(np.asarray(w), x)


def test_make_array_from_callback_in_32_bit_mode_as_jax():
    # an int64 NumPy piece is int32 in 32-bit mode (the sharded 64-bit blocks failed in PJRT)
    x = np.arange(32).reshape(8, 4)
    with funcgrad.enable_x64(False):
        for spec in (P("b", "a"), P(None, "a"), P()):
            y = funcgrad.make_array_from_callback(x.shape, NamedSharding(MESH2, spec), lambda idx: x[idx])
            assert y.dtype == np.int32 and np.array_equal(np.asarray(y), x)
            assert all(sh.data.dtype == np.int32 for sh in y.addressable_shards)
    # a callback returning views, the same rows again for each replica (jaxlib's transfer failed)
    g = np.arange(32, dtype=np.uint32).reshape(8, 4)
    for spec in (P("a", None), P(None, "b"), P("b", None)):
        y = funcgrad.make_array_from_callback(g.shape, NamedSharding(MESH2, spec), lambda idx: g[idx])
        assert y.dtype == np.uint32 and np.array_equal(np.asarray(y), g)
    s = NamedSharding(MESH, P("x"))
    with pytest.raises(ValueError, match=r"Expected shard shape \(1, 4\) doesn't match the single device"):
        funcgrad.make_array_from_callback(x.shape, s, lambda idx: np.arange(5))
    with pytest.raises(
        funcgrad.errors.UnexpectedTracerError, match="cannot be called within a traced context"
    ):
        funcgrad.jit(lambda a: funcgrad.make_array_from_callback(a.shape, s, lambda i: a[i]))(x)


def test_make_array_from_process_local_data_takes_pytrees_devices_and_specs():
    data = {"a": np.arange(10).reshape(2, 5), "b": np.ones(3)}
    out = funcgrad.make_array_from_process_local_data(funcgrad.devices()[0], data, {"a": (2, 5), "b": None})
    assert out["a"].devices() == {funcgrad.devices()[0]} and np.array_equal(np.asarray(out["a"]), data["a"])
    with pytest.raises(ValueError, match="global_shape should be None or equal to local_data.shape"):
        funcgrad.make_array_from_process_local_data(funcgrad.devices()[0], data, {"a": (2, 8), "b": None})
    x = np.ones((16, 4))
    with funcgrad.sharding.set_mesh(MESH):
        y = funcgrad.make_array_from_process_local_data(P("x"), x)
    assert y.sharding == NamedSharding(MESH, P("x")) and np.array_equal(np.asarray(y), x)


def test_make_array_from_single_device_arrays_checks_as_jax():
    s = NamedSharding(MESH, P("x"))
    with pytest.raises(ValueError, match="no addressable shards, `dtype` must be provided"):
        funcgrad.make_array_from_single_device_arrays((8, 2), s, [])
    one = funcgrad.device_put(np.ones(3), funcgrad.devices()[0])
    with pytest.raises(ValueError, match="it must match the dtype of the addressable shards"):
        funcgrad.make_array_from_single_device_arrays((3,), one.sharding, [one], dtype=np.int32)
    assert funcgrad.make_array_from_single_device_arrays(
        (3,), one.sharding, (one,), dtype=one.dtype
    ).shape == (3,)
    with pytest.raises(TypeError, match="`arrays` argument must be a list or tuple"):
        funcgrad.make_array_from_single_device_arrays((3,), one.sharding, one)
    sharded = funcgrad.device_put(np.ones(8), s)
    with pytest.raises(ValueError, match="must have one shard each. An argument array had 8 shard"):
        funcgrad.make_array_from_single_device_arrays((8,), s, [sharded])


def test_lax_full_and_full_like_place_their_results_as_jax():
    s = NamedSharding(MESH, P("x"))
    assert lax.full((8,), 1.0, sharding=s).sharding == s
    # (a spec longer than the rank whose extra entries are None, as JAX's eager full takes it)
    longer = lax.full((8,), 1.0, sharding=NamedSharding(MESH, P("x", None)))
    assert longer.sharding == s and longer.addressable_shards[3].data.shape == (1,)
    assert lax.full_like(lax.iota("float32", 8), 1, sharding=s).sharding == s
    # (inside jit JAX ignores a sharding over devices: "ignored in jitted mode", a traced fill)
    out = funcgrad.jit(lambda a: lax.full((8,), a, sharding=s))(2.0)
    assert out.sharding == SingleDeviceSharding(funcgrad.devices()[0]) and not out.committed
    d1 = funcgrad.devices()[1]
    x = funcgrad.device_put(fnp.ones((4, 4)), d1)
    assert lax.full_like(x, 1).sharding == x.sharding  # x's (committed) device
    assert lax.full_like(x, 1.0, shape=()).sharding == SingleDeviceSharding(d1)
    y = fnp.arange(10, device=d1)
    assert lax.full_like(y, 1, shape=(5,)).sharding == y.sharding


def test_jit_on_a_device_moves_arguments_committed_elsewhere():
    # (JAX: jit(device=) behaves as if each argument were first put on that device)
    d = funcgrad.devices()
    x = fnp.array([1, 2, 3])
    f = funcgrad.jit(lambda a, b: a + b, device=d[4])
    out = f(funcgrad.device_put(x, d[2]), funcgrad.device_put(x, d[3]))
    assert out.devices() == {d[4]} and out.committed and out.tolist() == [2, 4, 6]
    with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
        funcgrad.jit(lambda a, b: a + b)(funcgrad.device_put(x, d[2]), funcgrad.device_put(x, d[3]))


def test_errors_are_clear():
    with pytest.raises(ValueError, match="partitioned 8 times, but the dimension size is 6"):
        funcgrad.device_put(np.ones((6, 2)), NamedSharding(MESH, P("x")))
    with pytest.raises(ValueError, match=r"Resource axis: y of P\('y',\) is not found in mesh"):
        NamedSharding(MESH, P("y"))
    with pytest.raises(Exception, match="has duplicate entries for `a`"):
        NamedSharding(MESH2, P("a", "a"))
    with pytest.raises(ValueError, match="should evenly divide the shape"):
        funcgrad.jit(lambda a: a, in_shardings=NamedSharding(MESH, P("x")))(np.ones(3))
    with pytest.raises(ValueError, match="needs 16 devices"):
        make_mesh((16,), ("x",))
    small = Mesh(np.array(funcgrad.devices()[:4]), ("x",))
    a = funcgrad.device_put(np.ones(8), NamedSharding(MESH, P("x")))
    b = funcgrad.device_put(np.ones(8), NamedSharding(small, P("x")))
    # (JAX's words: committed arguments over different devices, NOTE: [committed arrays])
    with pytest.raises(
        ValueError, match=r"incompatible devices .* argument p of \S*<lambda> with shape float64\[8@x\]"
    ):
        funcgrad.jit(lambda p, q: p + q)(a, b)
    other_client = xla_client.make_cpu_client(num_devices=8)
    with pytest.raises(ValueError, match="is not one of funcgrad's devices"):
        Mesh(np.array(other_client.local_devices()), ("x",))
    with pytest.raises(ValueError, match="is not one of funcgrad's devices"):
        SingleDeviceSharding(other_client.local_devices()[0])


def test_a_mesh_of_stand_in_devices_is_kept_as_jax_keeps_it():
    # orbax's sharding tests build meshes of mock.create_autospec(jax.Device) objects and read
    # shard shapes and specs off them (jax's Mesh keeps any such object); a real device of
    # another client is still refused (above)
    from unittest import mock

    import jax

    def stand_ins(device_class, n):
        out = [mock.create_autospec(device_class, instance=True, spec_set=True) for _ in range(n)]
        for i, d in enumerate(out):
            d.id, d.platform, d.device_kind = i, "cpu", "cpu"
        return out

    def read(sharding_lib, device_class):
        mesh = sharding_lib.Mesh(np.array(stand_ins(device_class, 6)).reshape(2, 3), ("a", "b"))
        s = sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec("a", "b"))
        return s.shard_shape((10, 9)), s.spec == sharding_lib.PartitionSpec("a", "b"), mesh.devices.shape

    assert (
        read(funcgrad.sharding, funcgrad.Device) == read(jax.sharding, jax.Device) == ((5, 3), True, (2, 3))
    )


def test_the_runtime_refuses_arguments_on_other_devices_instead_of_crashing():
    # XLA segfaults on a buffer placed on the wrong devices: the executable checks first.
    x = funcgrad.device_put(np.ones((8, 2)), NamedSharding(MESH, P("x")))
    c = funcgrad.jit(lambda a: a * 2).lower(x).compile()._compiled
    assert isinstance(c, Compiled) and len(c.in_shardings) == 1 and len(c.devices) == 8
    reversed_mesh = Mesh(np.array(funcgrad.devices()[::-1]), ("x",))
    wrong = funcgrad.device_put(np.ones((8, 2)), NamedSharding(reversed_mesh, P("x")))
    with pytest.raises(ValueError, match="in that order"):
        c.executable.call([wrong._buffer])
    other = funcgrad.device_put(np.ones((8, 2)), NamedSharding(MESH, P()))
    with pytest.raises(ValueError, match="laid out as"):
        c.executable.call([other._buffer])
    assert xla_bridge.sharded.is_sharded(x._buffer)


def test_eager_operations_and_printing_read_every_shard():
    x = funcgrad.device_put(np.arange(16.0), NamedSharding(MESH, P("x")))
    assert float(fnp.sum(x)) == 120.0
    assert "15." in repr(x)
    assert np.asarray(x + 1)[-1] == 16.0


def test_computation_follows_data_eagerly():
    # JAX's "distributed arrays" tutorial: an eager op on sharded arrays runs where they live
    s = NamedSharding(MESH2, P("a", "b"))
    x = np.arange(64.0).reshape(8, 8)
    y = funcgrad.device_put(x, s)
    z = fnp.sin(y)
    assert z.sharding == s
    np.testing.assert_allclose(z, np.sin(x))
    w = funcgrad.device_put(np.ones((8, 4)), NamedSharding(MESH2, P("b", None)))
    np.testing.assert_allclose(y @ w, x @ np.ones((8, 4)))
    assert (y @ w).sharding.num_devices == 8
    np.testing.assert_allclose(y.T, x.T)
    np.testing.assert_allclose(y[2], x[2])
    assert float(y.sum()) == x.sum()
    # the tutorial's eager parameter update keeps the parameters sharded
    p = funcgrad.device_put(np.ones((8, 2)), NamedSharding(MESH, P()))
    g = funcgrad.jit(lambda p: 2 * p)(p)
    new = p - 0.1 * g
    assert new.sharding.is_fully_replicated and new.sharding.num_devices == 8
    np.testing.assert_allclose(new, 0.8 * np.ones((8, 2)))


def test_visualize_array_sharding(capsys):
    y = funcgrad.device_put(np.ones((8, 8)), NamedSharding(MESH2, P("a", "b")))
    assert funcgrad.debug.visualize_array_sharding(y) is None  # it prints (jax's table), once
    text = capsys.readouterr().out
    assert text.count("CPU") == 8 and "CPU 5" in text
    funcgrad.debug.visualize_array_sharding(funcgrad.device_put(np.ones(8), NamedSharding(MESH2, P("b"))))
    rows = capsys.readouterr().out
    assert "CPU 0,4" in rows and rows.count("CPU") == 4


_NO_JAX = """
import sys
import numpy as np
import funcgrad, funcgrad.numpy as fnp
from funcgrad.sharding import AxisType, P, make_mesh, set_mesh
with set_mesh(make_mesh((2, 4), ("a", "b"), (AxisType.Auto,) * 2)):
    x = funcgrad.device_put(np.arange(32.0).reshape(8, 4), P("a", "b"))
    y = funcgrad.jit(lambda v: fnp.sin(v) @ v.T, out_shardings=P("a"))(x) + 1
    assert np.asarray(y).shape == (8, 8) and len(y.addressable_shards) == 8
assert "jax" not in sys.modules, "funcgrad imported jax"
"""


def test_no_jax_import():
    # In a fresh interpreter: the oracle tests of this suite import jax into this one.
    import subprocess  # noqa: PLC0415 - only this test starts a process

    proc = subprocess.run([sys.executable, "-c", _NO_JAX], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_donated_sharded_argument_is_deleted_as_in_jax():
    # jax deletes a donated argument of a sharded call (host-backed or sharded) and refuses any
    # later use with "Array has been deleted"; reusing the consumed buffer must not reach XLA.
    s = NamedSharding(MESH, P("x"))
    f = funcgrad.jit(lambda v: v * 2.0, in_shardings=s, out_shardings=s, donate_argnums=0)
    for x in (fnp.ones(8), funcgrad.device_put(np.ones(8), s)):
        np.testing.assert_array_equal(f(x), 2 * np.ones(8))
        assert x.is_deleted()
        with pytest.raises(RuntimeError, match="Array has been deleted with shape=float"):
            x + 1.0


def test_a_constraint_that_does_not_divide_a_dimension_under_jit_as_jax():
    # (flax's FSDP example constrains a (32, 1) kernel over 4 devices inside nnx.jit: JAX hands
    # it to XLA, which pads and lays the result out replicated; eagerly it is JAX's error)
    mesh = make_mesh((2, 4), ("data", "model"), (AxisType.Auto, AxisType.Auto))
    s = NamedSharding(mesh, P(None, "model"))
    f = funcgrad.jit(lambda a: lax.with_sharding_constraint(a * 2, s))
    y = f(fnp.ones((32, 1)))
    assert np.array_equal(np.asarray(y), np.full((32, 1), 2.0)) and y.sharding.spec == P()
    g = funcgrad.jit(funcgrad.grad(lambda a: lax.with_sharding_constraint(a * 2, s).sum()))(fnp.ones((32, 1)))
    assert np.array_equal(np.asarray(g), np.full((32, 1), 2.0))
    with pytest.raises(ValueError, match="partitioned 4 times, but the dimension size is 1"):
        lax.with_sharding_constraint(fnp.ones((32, 1)), s)


def test_sharded_program_names_its_parameters():
    # The SPMD route writes the argument names too (NOTE: [operation locations]): JAX's
    # op_name="x" on the parameter and jit(f)/sin on the operations.
    import re

    def f(x):
        return fnp.sin(x) * 2

    x = funcgrad.device_put(np.ones((8, 2), np.float32), NamedSharding(MESH, P("x")))
    text = funcgrad.jit(f).lower(x).compile().as_text()
    assert re.search(r'parameter\(0\), sharding=\{[^}]*\}, metadata=\{op_name="x"\}', text)
    assert 'op_name="jit(f)/sin"' in text


def test_a_result_laid_out_as_an_argument_keeps_its_sharding_as_jax():
    # (JAX's pxla: a jit result whose layout is an argument's gets that argument's sharding, so a
    # size-1 mesh axis stays in the spec; read back from XLA's layout it was P(None, 'b'). JAX's
    # mutable_array_test test_sharding_persists.)
    mesh = make_mesh((1, 2), ("a", "b"), (AxisType.Auto,) * 2)
    s = NamedSharding(mesh, P("a", "b"))
    x = funcgrad.device_put(np.arange(4.0).reshape(2, 2), s)
    assert funcgrad.jit(lambda x: x + 1)(x).sharding == s
    assert funcgrad.jit(lambda x: x.T)(x).sharding == NamedSharding(mesh, P("b"))  # (as jax)
    r = funcgrad.new_ref(x)
    assert funcgrad.jit(lambda: r[...] * 2)().sharding == s and r.sharding == s


def test_lowering_for_a_sharded_shape_dtype_struct_compiles_for_its_devices():
    # (JAX's array_test test_shape_dtype_struct_sharding_jit: the program takes its argument laid
    # out as the ShapeDtypeStruct's sharding; funcgrad compiled it for one device, and its result
    # came back gathered on device 0)
    s = NamedSharding(MESH, P("x"))
    c = (
        funcgrad.jit(lambda x: x * 2)
        .lower(funcgrad.ShapeDtypeStruct((16,), np.float32, sharding=s))
        .compile()
    )
    assert c.input_shardings == ((s,), {}) and c.output_shardings == s
    out = c(funcgrad.device_put(np.arange(16.0, dtype=np.float32), s))
    assert out.sharding == s
    np.testing.assert_array_equal(np.asarray(out), np.arange(16.0) * 2)


def test_shape_dtype_struct_like_keeps_a_committed_sharding_as_jax():
    # (JAX's array_test test_sds_like: an uncommitted array has no sharding)
    s = NamedSharding(MESH, P("x"))
    assert funcgrad.ShapeDtypeStruct.like(fnp.arange(8)).sharding is None
    assert funcgrad.ShapeDtypeStruct.like(np.ones(2)).sharding is None
    assert funcgrad.ShapeDtypeStruct.like(funcgrad.device_put(fnp.arange(8), s)).sharding == s


def test_an_indivisible_shape_raises_jaxs_indivisible_error():
    # (JAX's array_test test_uneven_shard_error / test_devices_indices_map_good_error_message:
    # jax._src.sharding.IndivisibleError, a ValueError)
    from funcgrad._shardings import IndivisibleError

    s = NamedSharding(MESH2, P("a", "b"))
    for ask in (lambda: s.shard_shape((8, 3)), lambda: s.devices_indices_map((1, 4))):
        with pytest.raises(IndivisibleError, match="implies that array axis . is partitioned"):
            ask()
    assert issubclass(IndivisibleError, ValueError) and len(s.devices_indices_map((2, 4))) == 8


@pytest.mark.parametrize("spec", [("a", "a"), ("b", ("a", "b")), ("w",), (("a", "w"), "a")])
def test_a_spec_naming_an_axis_twice_or_one_the_mesh_lacks_raises_as_jax(spec):
    # (JAX's check_pspec: DuplicateSpecError, an Exception that is no ValueError, before the
    # ValueError for an axis the mesh lacks; found by the sharded-program fuzzer, ops_shard)
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    theirs_mesh = jax.make_mesh((2, 4), ("a", "b"), (jax.sharding.AxisType.Auto,) * 2)
    raised = []
    for ns, mesh, p in ((NamedSharding, MESH2, P), (jax.sharding.NamedSharding, theirs_mesh, jax.P)):
        with pytest.raises(Exception) as info:
            ns(mesh, p(*spec))
        raised.append((type(info.value).__name__, isinstance(info.value, ValueError), str(info.value)))
    assert raised[0] == raised[1]


def test_shard_map_specs_naming_an_axis_twice_raise_as_jax():
    # (jax's shard_map: DuplicateSpecError for in_specs or out_specs, after an argument's shape: a
    # spec that does not divide it is JAX's ValueError; the sharded-program fuzzer, seeds
    # 16011/16012)
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jm = jax.make_mesh((2, 4), ("a", "b"), (jax.sharding.AxisType.Auto,) * 2)
    cases = ((("a", "a"), (), (8, 8)), ((), (("a", "b"), "a"), (8, 8)), (("a", ("b", "a")), (), (3, 4)))
    for ins, outs, shape in cases:
        raised = []
        for lib, mesh, p in ((funcgrad, MESH2, P), (jax, jm, jax.P)):
            with pytest.raises(Exception) as info:
                lib.shard_map(lambda v: v, mesh=mesh, in_specs=(p(*ins),), out_specs=p(*outs))(np.ones(shape))
            e = info.value
            raised.append((type(e).__name__, str(e) if type(e).__name__ == "DuplicateSpecError" else ""))
        assert raised[0] == raised[1]


def test_results_take_the_first_read_arguments_sharding_as_jax():
    # (JAX's maybe_recover_user_shardings: the first argument the program reads is the model; a
    # result laid out as a later argument is read from XLA's layout, P('X',); an unread first
    # argument is dropped. Each spec below is what jax 0.10.2 prints for the same calls.)
    mesh = make_mesh((4, 2), ("X", "Y"), (AxisType.Auto,) * 2)
    y = funcgrad.device_put(np.ones((8, 2), np.float32), NamedSharding(mesh, P("X", None)))
    x = funcgrad.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("X", "Y")))
    spec = lambda f, *args: funcgrad.jit(f)(*args).sharding.spec  # noqa: E731
    assert spec(lambda a, b: b * a, 2.0, y) == P("X")
    assert spec(lambda a, b: b * a.sum(), np.ones(3, np.float32), y) == P("X")
    assert spec(lambda a, b: b * 2, np.ones(3, np.float32), y) == P("X", None)
    assert spec(lambda a, b: b * 2, x, y) == P("X", None)


def test_dlpack_of_an_array_on_several_devices_is_jaxs_buffer_error():
    # (JAX's words: DLPack describes one buffer, so even a replicated array over several devices
    # refuses; an array on one device of the mesh exports)
    for spec in (P("x"), P()):
        y = funcgrad.device_put(np.arange(8.0), NamedSharding(MESH, spec))
        with pytest.raises(
            BufferError, match="to_dlpack can only pack a dlpack tensor from an array on a singular"
        ):
            np.from_dlpack(y)
        with pytest.raises(BufferError, match="__dlpack__ only supported for unsharded arrays"):
            y.__dlpack_device__()
    z = funcgrad.device_put(np.arange(3.0), funcgrad.devices()[5])
    assert np.from_dlpack(z).tolist() == [0.0, 1.0, 2.0]


def test_a_sharding_known_only_as_hlo_text_is_compiled_as_given():
    # NOTE: [Shardy reads sdy shardings only]: a value laid out by a sharding no mesh names (here
    # XLA's text of a shard_map's P('y', None) over a (2, 4) mesh) entered eager programs as an
    # mhlo.sharding, which Shardy ignores: XLA compiled the parameter replicated, and the sharded
    # argument failed in its runtime and crashed the process (the sharded-program fuzzer, seed 16008)
    sharded = xla_bridge.sharded
    h = xla_client.HloSharding.from_string("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    a = np.arange(32.0).reshape(16, 2)
    x = funcgrad.kernel.array.Array._from_buffer(
        sharded.put(a, sharded.MeshSharding(tuple(funcgrad.devices()[:8]), h, None)), False
    )
    assert {tuple(s.data.shape) for s in x.addressable_shards} == {(4, 2)}
    assert float(fnp.sum(x)) == a.sum() and float(fnp.sum(x * 2)) == 2 * a.sum()
    np.testing.assert_array_equal(np.asarray(fnp.cumsum(x, 0)), np.cumsum(a, 0))


@pytest.mark.parametrize("shape, spec", [((8, 0), P("x")), ((0, 8), P(None, "x")), ((8, 0, 3), P("x"))])
def test_empty_arrays_are_put_sharded_as_jax(shape, spec):
    # jaxlib's sharded put raised 'bad_function_call' on empty blocks viewing one address (the
    # sharded-program fuzzer's seed 16014: vmap of hessian of hessian of a shard_map of an empty
    # input); JAX puts them
    mesh = make_mesh((8,), ("x",), (AxisType.Auto,))
    x = funcgrad.device_put(np.zeros(shape, np.float16), NamedSharding(mesh, spec))
    assert x.shape == shape and np.asarray(x).shape == shape and x.sharding.spec == spec
    assert float(fnp.sum(x)) == 0.0
