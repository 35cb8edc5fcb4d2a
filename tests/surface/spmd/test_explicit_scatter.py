"""``x.at[idx].set/add/...`` of explicitly sharded arrays (JAX 0.10's sharding in types) on 8 CPU
devices, with jax 0.10.2 as the oracle in the same process: the values, the result's sharding
and type, eagerly, under ``jit`` and ``vmap``, and the cotangents' shardings (a cotangent is typed
as its primal, as JAX's transpose rules type it)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.extend
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
pytest.importorskip("jax.extend")
jnp = jax.numpy
js = jax.sharding


@pytest.fixture(scope="module")
def meshes():
    return fs.make_mesh((2, 2), ("x", "y")), jax.make_mesh((2, 2), ("x", "y"))


def _both(meshes, build):
    fm, jm = meshes
    with fs.set_mesh(fm):
        ours = build(fnp, lambda a, *s: funcgrad.device_put(a, fs.P(*s)), funcgrad)
    with jax.set_mesh(jm):
        theirs = build(jnp, lambda a, *s: jax.device_put(a, js.PartitionSpec(*s)), jax)
    return ours, theirs


def _P(lib):
    return fs.P if lib is funcgrad else js.PartitionSpec


def _spec(x):
    spec = tuple(x.sharding.spec)
    return spec + (None,) * (x.ndim - len(spec))


def _same(ours, theirs):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert a.dtype == b.dtype and _spec(a) == _spec(b), (a.sharding, b.sharding)


X = np.arange(4 * 6 * 4, dtype=np.float32).reshape(4, 6, 4)
# (index, update shape, x's spec): ints, traced-free arrays, step-1 slices, negative and
# out-of-bounds indices (dropped), advanced indices apart (their dimension goes first)
CASES = [
    (lambda np_: (slice(None), 2), (4, 4), ("x", None, "y")),
    (lambda np_: (slice(None), np_.array([1, 5, -1])), (4, 3, 4), ("x", None, "y")),
    (lambda np_: (slice(None), slice(1, 4)), (4, 3, 4), ("x", None, "y")),
    (lambda np_: (slice(None), np_.array([0, 9]), slice(None)), (4, 2, 4), ("x", None, None)),
    (lambda np_: (np_.array([0, 2]), slice(None), np_.array([1, 3])), (2, 6), (None, "x", None)),
    (lambda np_: (slice(None), -1, slice(1, 3)), (4, 2), ("x", None, None)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
# (set: the vmapped test below; jax 0.10.2 fails to type its own ids in set's derivative with arrays)
@pytest.mark.parametrize("op", ["max"])
def test_updates_of_sharded_arrays_as_jax(meshes, case, op):
    index, ushape, spec = CASES[case]
    u = np.arange(np.prod(ushape), dtype=np.float32).reshape(ushape) - 7.0

    def build(np_, put, lib):
        x = put(X, *spec)
        f = lambda x, u: getattr(x.at[index(np_)], op)(u)  # noqa: E731
        eager, jitted = f(x, u), lib.jit(f)(x, u)
        return eager, jitted, lib.jit(lib.grad(lambda x, u: f(x, u).sum() * 2.0))(x, u)

    _same(*_both(meshes, build))


@pytest.mark.parametrize("op", ["set", "add"])
def test_vmapped_updates_and_their_cotangents_as_jax(meshes, op):
    # (pjit_test's test_scatter_sharding_rule: operand, indices and updates sharded along the batch)
    def build(np_, put, lib):
        x = put(np.zeros((2, 10, 8), np.float32), "x", None, "y")
        i = put(np.array([2, 3], np.int32), "x")
        u = put(np.arange(16, dtype=np.float32).reshape(2, 8), "x", "y")
        f = lib.jit(lib.vmap(lambda x, i, u: getattr(x.at[i], op)(u)))
        return (f(x, i, u), *lib.grad(lambda *a: f(*a).sum(), argnums=(0, 2))(x, i, u))

    _same(*_both(meshes, build))


def test_cotangents_are_typed_as_their_primals_as_jax(meshes):
    def build(np_, put, lib):
        x, y = put(np.arange(4.0, dtype=np.float32), None), put(np.arange(4.0, dtype=np.float32), "x")
        dx, dy = lib.jit(lib.grad(lambda x, y: (x * y + x).sum(), argnums=(0, 1)))(x, y)
        b = put(np.arange(2.0, dtype=np.float32), "x")
        db = lib.grad(lambda b: np_.broadcast_to(b[:, None], (2, 3)).sum())(b)
        # (a bfloat16 primal's tangent keeps its type too: the kernel's cotangent of an einsum whose
        # contracting dimension is sharded was untyped, JAX's 'ambiguous' ShardingTypeError)
        o = put(np.ones((4, 2, 4), ml_dtypes.bfloat16), "x", None, None)
        k = put(np.ones((4, 6), ml_dtypes.bfloat16), "x", None)
        dk = lib.grad(lambda k: np_.einsum("bsd,dh->bsh", o, k, out_sharding=_P(lib)("x")).sum())(k)
        return dx, dy, db, dk.astype(np.float32)

    _same(*_both(meshes, build))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_gradient_of_an_embedding_lookup_with_out_sharding_as_jax(meshes, dtype):
    # (JAX's training cookbook: tokens split over 'x' index a replicated table with
    # `.at[tokens].get(out_sharding=)`; its gradient, eager and jitted, transposes to a scatter
    # whose update was untyped: JAX's 'ambiguous' ShardingTypeError where jax computes)
    def build(np_, put, lib):
        table = put(np.arange(8 * 3, dtype=np.float32).reshape(8, 3).astype(dtype), None, None)
        tokens = put(np.array([[1, 7, 1], [0, 2, 2], [5, 5, 5], [3, 4, 6]]), "x")

        def loss(t):
            rows = t.at[tokens].get(out_sharding=_P(lib)("x", None, None))
            return (rows.astype(np.float32) ** 2).sum()

        g = lib.grad(loss)
        return g(table).astype(np.float32), lib.jit(g)(table).astype(np.float32)

    _same(*_both(meshes, build))


def test_vmap_over_an_explicitly_sharded_dimension_as_jax(meshes):
    # (the mapped dimension's explicit axis: an unbatched output broadcast along it is split too;
    # mapped inputs split differently along it are JAX's ValueError)
    def build(np_, put, lib):
        x = put(np.arange(8.0, dtype=np.float32).reshape(4, 2), "x", None)
        zeros = lib.vmap(lambda v: np_.zeros((3,), np.float32), out_axes=-1)(x)
        both = lib.jit(lib.vmap(lambda v, w: v * 2 + w, in_axes=(0, None)))(x, np.ones(2, np.float32))
        # (an unmapped Array operand of an elementwise op: its size-1 broadcast dimension unsplit)
        eager = lib.vmap(lambda v, w: v * w, in_axes=(0, None))(x, put(np.ones(2, np.float32), None))
        with pytest.raises(ValueError, match="Mapped away dimension of inputs passed to vmap"):
            lib.vmap(lambda a, b: a + b)(x, put(np.ones((4, 2), np.float32), None, "y"))
        return zeros, both, eager

    _same(*_both(meshes, build))


def test_control_flow_under_vmap_over_an_explicitly_sharded_dimension_as_jax(meshes):
    # (a batched scan/fori/map body is typed with the mapped dimension split as vmap's inputs
    # and the other dimensions as theirs, as JAX's unmapped_aval: the carry lost its sharding, so
    # the results were float32[4,2] where jax's are float32[4@x,2@y]; under eager grad of a vmap
    # the recorded equations were typed without the sharding rules: v[None] lost '@y')
    def build(np_, put, lib):
        x = put(np.arange(8.0, dtype=np.float32).reshape(4, 2), "x", "y")
        w = put(np.ones(2, np.float32), None)
        lax = lib.lax
        step = lambda c, r: (c + r * w, c)  # noqa: E731
        scan = lib.vmap(
            lambda v, w: lax.scan(step, v, np_.ones((3, 2), np.float32) * w)[0], in_axes=(0, None)
        )
        fori = lib.vmap(lambda v: lax.fori_loop(0, 3, lambda i, c: c * 2, v))
        mapped = lib.vmap(lambda v: lax.map(lambda r: r * 2, v[None]))
        scanned = lambda b: lib.vmap(lambda v: lax.scan(step, v, v[None])[0])(b).sum()  # noqa: E731
        tangent = lib.jvp(lib.vmap(lambda v: lax.scan(step, v, v[None])[1]), (x,), (x,))[1]
        return scan(x, w), fori(x), mapped(x), lib.grad(scanned)(x), tangent

    _same(*_both(meshes, build))


def _spmd_vmaps(lib):
    P = _P(lib)
    auto = lib.make_mesh((2, 2), ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    h = lib.shard_map(lambda v: v + 1, mesh=auto, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(ValueError, match="vmap spmd_axis_name cannot appear in shard_map in_specs"):
        lib.vmap(h, spmd_axis_name="x")(x)
    # (gradients: the spmd axis maps the batch, so neither the shard_map's transpose nor a vjp
    # inside its checked body sums cotangents over it; funcgrad mixed the examples. Eagerly: the
    # vmap's batch rule binds each shard_map once, compiled, as under jit)
    k = lib.shard_map(
        lambda x: np_sin_sum(lib, x), mesh=auto, in_specs=P("y"), out_specs=P(), check_vma=False
    )
    inner = lib.shard_map(
        lambda w, x: lib.lax.psum(lib.grad(lambda w: np_sin_sum(lib, w * x))(w), "y"),
        mesh=auto,
        in_specs=(P(), P("y")),
        out_specs=P(),
    )
    w = np.arange(2.0, dtype=np.float32) / 3
    # (JAX's jax_disable_vmap_shmap_error lets a spec naming the spmd axis through)
    g = lib.shard_map(
        lambda a, b: a + lib.lax.all_gather(b, "x", tiled=True),
        mesh=auto,
        in_specs=(P(None), P("x")),
        out_specs=P(None),
        check_vma=False,
    )
    lib.config.update("jax_disable_vmap_shmap_error", True)
    try:
        let_through = lib.vmap(g, in_axes=(0, None), spmd_axis_name="x")(x, np.arange(4.0, dtype=np.float32))
    finally:
        lib.config.update("jax_disable_vmap_shmap_error", False)
    return [
        let_through,
        lib.jit(lib.vmap(h, spmd_axis_name="y"))(x),
        lib.vmap(lib.grad(k), spmd_axis_name="x")(x),
        lib.vmap(inner, in_axes=(None, 0), spmd_axis_name="x")(w, x),
    ]


def np_sin_sum(lib, x):
    return lib.numpy.sin(lib.numpy.sum(x))


def test_vmap_of_shard_map_over_explicit_and_spmd_axes_as_jax(meshes):
    # (JAX's _shard_map_batch: a vmap over an explicit mesh axis leaves that axis out of the
    # shard_map's manual axes and its results keep it on the mapped dimension, eagerly and under
    # jit (funcgrad typed them P(None, None)); vmap(spmd_axis_name=) splits the mapped dimension
    # of the blocks over its axes (funcgrad left it whole); either axis in the specs is JAX's
    # ValueError)
    def build(np_, put, lib):
        P = _P(lib)
        arr = put(np.arange(16.0, dtype=np.float32).reshape(2, 8), "x", "y")
        f = lib.shard_map(lambda v: lib.lax.psum(v, "y"), in_specs=P("y"), out_specs=P(None))
        g = lib.shard_map(lambda v: v * 2, in_specs=P("y"), out_specs=P("y"))
        with pytest.raises(ValueError, match="shard_map requires axis_names"):
            lib.vmap(lib.shard_map(lambda v: v, in_specs=P("x"), out_specs=P("x"), axis_names={"x", "y"}))(
                arr
            )
        with pytest.raises(ValueError, match="in_specs refers to 'x'"):
            lib.jit(lib.vmap(lib.shard_map(lambda v: v, in_specs=P("x"), out_specs=P("x"))))(arr)
        return lib.vmap(f)(arr), lib.jit(lib.vmap(f))(arr), lib.jit(lib.vmap(g))(arr)

    _same(*_both(meshes, build))
    _same(*[_spmd_vmaps(lib) for lib in (funcgrad, jax)])


def test_stack_and_concatenate_of_one_array_as_jax(meshes):
    # (JAX's fast path for one array: a reshape, never its rows sliced out one by one; funcgrad
    # sliced them, so a leading dimension split over 'x' raised 'slicing on sharded dims')
    def build(np_, put, lib):
        a = put(np.arange(24.0, dtype=np.float32).reshape(4, 6), "x")
        b = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
        with pytest.raises(Exception, match="This reshape is not supported"):
            np_.stack(a, axis=1)
        with pytest.raises(TypeError, match="len"):
            np_.stack(np_.asarray(1.0))
        outs = [np_.stack(a), lib.jit(np_.stack)(a), np_.concatenate(a), np_.concatenate(a, axis=None)]
        return outs + [np_.stack(b, axis=-1), np_.concatenate(b, axis=1)]

    _same(*_both(meshes, build))


def test_out_sharding_of_a_contraction_stays_in_its_equation_as_jax(meshes):
    # (jaxpr_as_fun binds the equation again: the result keeps out_sharding= without the call;
    # vmap splits the result's mapped dimension as its inputs' are)
    def build(np_, put, lib):
        x = put(np.arange(16.0, dtype=np.float32).reshape(8, 2), "x", "y")
        P = _P(lib)
        f = lambda v: np_.einsum("xy,yz->xz", v, v.T, out_sharding=P(None, None))  # noqa: E731
        closed = lib.make_jaxpr(f)(x)
        again = lib.extend.core.jaxpr_as_fun(closed)(x)[0]
        a = put(np.arange(16.0, dtype=np.float32).reshape(4, 2, 2), "x", None, "y")
        b = put(np.arange(16.0, dtype=np.float32).reshape(2, 4, 2), None, "x", "y")
        g = lambda u, w: np_.einsum("xy,yz->xz", u, w, out_sharding=P(None, "y"))  # noqa: E731
        return again, lib.vmap(g, in_axes=(0, 1), out_axes=2)(a, b)

    _same(*_both(meshes, build))


def test_constructors_and_reshape_take_out_sharding_as_jax(meshes):
    def build(np_, put, lib):
        P = _P(lib)
        v = np.arange(16, dtype=np.int32).reshape(8, 2)
        x = put(np.arange(8.0, dtype=np.float32).reshape(1, 8), None, "y")
        return (
            np_.array(v, out_sharding=P("x")),
            np_.asarray(v, dtype=np.float32, out_sharding=P(None, "y")),
            lib.jit(lambda x: np_.broadcast_to(x, (4, 8), out_sharding=P("x", "y")))(x),
            lib.jit(lambda x: x.reshape(2, 4, out_sharding=P(None, "y")))(x),
        )

    _same(*_both(meshes, build))


def test_operations_needing_whole_dimensions_refuse_in_jax_words(meshes):
    def build(np_, put, lib):
        x = put(np.ones((4, 8), np.float32), "x", "y")
        calls = [
            lambda: np_.tile(x, (1, 2)),
            lambda: np_.unstack(x, axis=1),
            lambda: lib.lax.split(x, (1, 7), axis=1),
            lambda: lib.lax.split(put(np.ones((4, 8), np.float32), None, ("x", "y")), (2, 6), axis=1),
            lambda: lib.lax.slice(x, (0, 0), (3, 8)),
            lambda: lib.lax.slice(put(np.ones((4, 8), np.float32), None, ("x", "y")), (0, 0), (4, 6)),
            lambda: lib.lax.pad(x, np.float32(0), ((0, 0, 0), (0, 1, 0))),
            lambda: np_.cumsum(x),
            lambda: lib.lax.select(x > 0, x, put(np.ones((4, 8), np.float32), "y", "x")),
        ]
        words = []
        for call in calls:
            with pytest.raises(Exception) as e:
                lib.jit(call)()
            words.append((type(e.value).__name__, str(e.value).split(" Got ")[0].split(", got [")[0]))
        return words

    ours, theirs = _both(meshes, build)
    assert ours == theirs


def test_sorts_and_windows_keep_the_sharding_as_jax(meshes):
    def build(np_, put, lib):
        x = put(np.array([4, 3, 2, 5, 6, 0, 1, 7], np.int32).reshape(4, 2), None, "x")
        y = put(np.arange(128.0, dtype=np.float32).reshape(4, 32), "x", "y")
        pooled = lib.jit(lambda v: lib.lax.reduce_window(v, -np.inf, lib.lax.max, (1, 2), (1, 2), "SAME"))(y)
        return np_.argsort(x, axis=0).astype(np.int32), pooled

    _same(*_both(meshes, build))
    with pytest.raises(ValueError, match="Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed"):
        funcgrad.device_put(np.ones(4), fs.P("x"))


def _blocks(x):
    return [np.asarray(s.data) for s in sorted(x.addressable_shards, key=lambda s: s.device.id)]


@pytest.mark.parametrize("how", ["segment_sum", "bincount", "auto_axes"])
def test_scatter_add_left_unreduced_holds_each_device_s_partial_sums_as_jax(how):
    # (JAX computes `.at[...](out_sharding=)` in auto_axes over the explicit axes, so XLA scatters
    # each device's updates and leaves the sum to a later reshard; funcgrad resharded the
    # operands replicated and held the whole sum on the first device, zeros elsewhere)
    fm, jm = fs.make_mesh((4,), ("x",)), jax.make_mesh((4,), ("x",), axis_types=(js.AxisType.Explicit,))
    data, seg = np.arange(8, dtype=np.int32), np.array([0, 0, 1, 1, 1, 2, 2, 3], np.int32)

    def run(lib, np_, mesh, P):
        with lib.sharding.set_mesh(mesh):
            a, b = lib.device_put(data, P("x")), lib.device_put(seg, P("x"))
            unreduced = P(unreduced={"x"})

            def f(x, y):
                if how == "segment_sum":
                    return lib.ops.segment_sum(x, y, num_segments=4, out_sharding=unreduced)
                if how == "bincount":
                    return np_.bincount(y, length=4, out_sharding=unreduced)
                g = lambda x, y: np_.zeros(4, np.int32).at[y].add(x, mode="drop")  # noqa: E731
                return lib.sharding.auto_axes(g, out_sharding=unreduced)(x, y)

            out = lib.jit(f)(a, b)
            summed = lib.sharding.reshard(out, P())
            return out, summed, lib.typeof(out).sharding.spec

    ours, theirs = run(funcgrad, fnp, fm, fs.P), run(jax, jnp, jm, js.PartitionSpec)
    assert ours[2].unreduced == theirs[2].unreduced == frozenset({"x"})
    for a, b in zip(_blocks(ours[0]), _blocks(theirs[0]), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))


def test_gradient_through_auto_axes_of_a_gather_with_out_sharding_as_jax(meshes):
    # (the transpose of auto_axes' reshards types the cotangent as the primal operand, in Auto
    # axes inside: the scatter the gather transposes to is not ambiguous)
    def build(np_, put, lib):
        table = put(np.arange(8 * 3, dtype=np.float32).reshape(8, 3), "x", None)
        tokens = put(np.array([[1, 7], [0, 2], [5, 5], [3, 4]]), "x")

        def loss(t):
            rows = t.at[tokens].get(out_sharding=_P(lib)("x", None, None))
            return (np_.sin(rows) * rows).sum()

        g = lib.jit(lib.grad(loss))(table)
        v = lib.jit(lib.vmap(lib.grad(loss)))(np_.stack([table, 2 * table]))
        return g, v

    _same(*_both(meshes, build))


def test_gradient_of_a_lookup_in_a_reduced_table_is_unreduced_as_jax():
    # (pjit_test test_reduced_at_get_out_sharding: the lookup's indices are a residual of
    # auto_axes, untyped; the nested jits constrained them replicated, and XLA's partitioner then
    # aborted on a scatter of split updates left unreduced)
    fm, jm = fs.make_mesh((2,), ("x",)), jax.make_mesh((2,), ("x",), axis_types=(js.AxisType.Explicit,))
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    idx = (np.arange(32, dtype=np.int32) * 7 % 16).reshape(4, 8)

    def run(lib, mesh, P):
        with lib.sharding.set_mesh(mesh):
            p = lib.device_put(table, P(None, None, reduced={"x"}))
            i = lib.device_put(idx, P("x", None))
            f = lib.jit(lambda p, i: p.at[i].get(out_sharding=P("x", None, None)))
            g = lib.jit(lambda p, i: (f(p, i) ** 2).sum())
            out = lib.jit(lib.grad(g))(p, i)
            return out, lib.sharding.reshard(out, P())

    ours, theirs = run(funcgrad, fm, fs.P), run(jax, jm, js.PartitionSpec)
    assert ours[0].sharding.spec.unreduced == theirs[0].sharding.spec.unreduced == frozenset({"x"})
    for a, b in zip(_blocks(ours[0]), _blocks(theirs[0]), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))


def test_vmapped_lookup_with_the_rows_out_sharding_as_jax(meshes):
    # (pjit_test test_scatter_gather: under vmap a row's type P(None) is the out_sharding of a
    # scalar element, JAX's reshard takes the trailing None)
    def build(np_, put, lib):
        x = put(np.arange(12.0, dtype=np.float32).reshape(4, 3), "x")
        i, j = put(np.array([0, 2, 1, 1]), "x"), put(np.array([1, 1, 0, 2]), "x")

        @lib.jit
        @lib.vmap
        def f(x, i, j):
            x_j = x.at[j].get(out_sharding=lib.typeof(x).sharding)
            return x.at[i].set(x_j, out_sharding=lib.typeof(x).sharding)

        return (f(x, i, j),)

    _same(*_both(meshes, build))
