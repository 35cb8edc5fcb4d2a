"""JAX 0.10's explicit sharding (sharding in types, issue 29) on 8 CPU devices, with jax 0.10.2 as
the oracle in the same process: the types (``typeof(x).str_short()``: ``f32[8@x,4@y]``) and the
values of the same programs, eagerly and under ``jit``, the errors where the result's sharding is
ambiguous, ``out_sharding=``, ``reshard``, ``auto_axes``/``explicit_axes`` and the mesh API."""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.primitives._sharding_rules import ShardingTypeError

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding

X = np.arange(32, dtype=np.float32).reshape(8, 4)
W = (np.arange(32, dtype=np.float32).reshape(4, 8) - 10.0) / 7.0


@pytest.fixture(scope="module")
def meshes():
    return fs.make_mesh((2, 4), ("x", "y")), jax.make_mesh((2, 4), ("x", "y"))


def _both(meshes, build, *specs_and_arrays):
    """Run ``build(np_module, put)`` under each library's mesh; ``put(array, spec)`` places."""
    fm, jm = meshes
    with fs.set_mesh(fm):
        ours = build(fnp, lambda a, *s: funcgrad.device_put(a, fs.P(*s)), funcgrad, fs)
    with jax.set_mesh(jm):
        theirs = build(jnp, lambda a, *s: jax.device_put(a, js.PartitionSpec(*s)), jax, js)
    return ours, theirs


def _padded(x):
    spec = tuple(x.sharding.spec)
    return spec + (None,) * (x.ndim - len(spec))


def _type(x, lib):
    t = lib.typeof(x)
    return t.str_short(short_dtypes=True) if lib is jax else t.str_short()


def test_the_mesh_api_follows_jax():
    m = fs.make_mesh((2, 2), ("a", "b"))  # fewer devices than there are: the first four
    assert (
        m.axis_types
        == (fs.AxisType.Explicit,) * 2
        == tuple(fs.AxisType[t.name] for t in jax.make_mesh((2, 2), ("a", "b")).axis_types)
    )
    assert [d.id for d in m.devices.flat] == [0, 1, 2, 3]
    auto = fs.make_mesh((8,), ("x",), (fs.AxisType.Auto,))  # axis_types is the third positional
    assert auto.axis_types == (fs.AxisType.Auto,)
    assert fs.Mesh(np.array(funcgrad.devices()), ("x",)).axis_types == (fs.AxisType.Auto,)  # Mesh's default
    with pytest.raises(ValueError, match="needs 16 devices"):
        fs.make_mesh((16,), ("x",))
    am = m.abstract_mesh
    assert (repr(am), dict(am.shape), am.size) == (
        # as jax prints a concrete mesh's abstract mesh: with its kind of device
        "AbstractMesh('a': 2, 'b': 2, axis_types=(Explicit, Explicit), "
        "device_kind=cpu, num_cores=None, platform=cpu)",
        {"a": 2, "b": 2},
        4,
    )
    assert fs.get_abstract_mesh().empty and fs.get_mesh().empty  # (JAX's empty mesh)
    with fs.set_mesh(m) as got:  # set_mesh is also a context manager, restoring the previous mesh
        assert got is m and fs.get_mesh() is m and fs.get_abstract_mesh() == am
        with fs.use_abstract_mesh(fs.AbstractMesh((4,), ("z",))):  # (of the set mesh's size, as JAX asks)
            assert fs.get_abstract_mesh().axis_names == ("z",)
        with fs.use_mesh(auto):
            assert fs.get_mesh() is auto
    assert fs.get_mesh().empty
    fs.set_mesh(m)  # and a plain call
    try:
        assert fs.get_mesh() is m
    finally:
        fs.set_mesh(None)
    s = fs.make_single_device_sharding(funcgrad.devices()[3])
    assert s.device_set == {funcgrad.devices()[3]}
    p = fs.P("x", None, unreduced={"y"})
    jp = js.PartitionSpec("x", None, unreduced={"y"})
    assert (repr(p), p.unreduced, p.reduced) == (repr(jp), jp.unreduced, jp.reduced)
    assert p != fs.P("x", None) and fs.P("x") == fs.P("x")


# Eagerly every operation compiles on its own, for both libraries: the slow tier.
@pytest.mark.parametrize("jitted", [pytest.param(False, marks=pytest.mark.slow), True])
def test_types_and_values_of_each_rule_match_jax(meshes, jitted):
    def build(np_, put, lib, sh):
        x = put(X, "x", "y")
        w = put(W, "y", None)  # contracted over 'y' on one side only: no ambiguity
        col = put(X[:, :1], "x", None)
        row = put(X[:1, :], None, "y")
        xr = put(X, "x", None)
        wr = put(W, None, None)
        xt = put(X.T.copy(), "y", "x")

        def program(x, w, col, row, xr, wr, xt):
            return {
                "sin": np_.sin(x) * 2 + 1,
                "broadcast": col + row,
                "sum0": x.sum(0),
                "sum1": np_.sum(x, axis=1),
                "max": np_.max(x, axis=0),
                "mean": np_.mean(x, axis=(0, 1)),
                "transpose": x.T,
                "merge": x.reshape(32),
                "split": x.reshape(2, 4, 4),
                "expand": x[None],
                "squeeze": np_.squeeze(x[None], 0),
                "dot_free": np_.dot(xr, wr),
                "dot_one_side": x @ wr,
                "dot_transposed": xt.T @ wr,
                "einsum": np_.einsum("ij,jk->ik", xr, wr),
                "astype": x.astype(np_.int32),
                "where": np_.where(x > 3, x, 0.0),
                "concat": np_.concatenate([xr, xr], axis=1),
            }

        f = lib.jit(program) if jitted else program
        return f(x, w, col, row, xr, wr, xt)

    ours, theirs = _both(meshes, build)
    assert ours.keys() == theirs.keys()
    for k in ours:
        assert _type(ours[k], funcgrad) == _type(theirs[k], jax), k
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-6, err_msg=k)
        assert _padded(ours[k]) == _padded(theirs[k]), k  # the data is laid out as the type says


def test_ambiguous_shardings_raise_jaxs_errors(meshes):
    fm, _ = meshes
    with fs.set_mesh(fm):
        x = funcgrad.device_put(X, fs.P("x", "y"))
        w = funcgrad.device_put(W, fs.P("y", None))
        with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded and it is ambiguous"):
            fnp.dot(x, w)
        with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded"):
            funcgrad.jit(fnp.matmul)(x, w)
        # The fix JAX asks for: out_sharding=.
        out = fnp.dot(x, w, out_sharding=fs.P("x", None))
        assert _type(out, funcgrad) == "f32[8@x,8]"
        np.testing.assert_allclose(out, X @ W, rtol=1e-5)
        xc = funcgrad.device_put(X, fs.P("x", None))
        with pytest.raises(ShardingTypeError, match="illegally sharded result"):
            fnp.dot(xc, funcgrad.device_put(W, fs.P(None, "x")))
        with pytest.raises(ShardingTypeError, match="incompatible shardings for broadcasting"):
            x + funcgrad.device_put(X, fs.P("y", "x"))
        with pytest.raises(ShardingTypeError, match="This reshape is not supported"):
            funcgrad.jit(lambda a: a.reshape(4, 8))(x)
        # Placement errors name the value, the spec and the fix.
        with pytest.raises(
            ValueError,
            match="is only valid for values of rank at least 3, but was applied to a value of rank 2",
        ):
            funcgrad.device_put(X, fs.P("x", "y", None))
        with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"):
            funcgrad.device_put(X, fs.P("z"))
        other = fs.make_mesh((4, 2), ("a", "b"))
        with pytest.raises(ValueError, match=r"reshard: x \(f32\[8@x,4@y\]\).*across meshes"):
            fs.reshard(x, fs.NamedSharding(other, fs.P("a")))
    with pytest.raises(ValueError, match="needs a mesh"):
        funcgrad.device_put(X, fs.P("x"))


@pytest.mark.slow
def test_out_sharding_reshard_and_the_printed_jaxpr(meshes):
    def build(np_, put, lib, sh):
        x = put(X, "x", "y")
        w = put(W, "y", None)
        P = sh.PartitionSpec
        f = lib.jit(lambda a, b: np_.einsum("ij,jk->ik", a, b, out_sharding=P(None, "x")))
        return {
            "dot": np_.dot(x, w, out_sharding=P("x", "y")),
            "einsum": f(x, w),
            "zeros": np_.zeros((8, 4), dtype=np_.float32, out_sharding=P("y")),
            "ones": np_.ones((8, 4), dtype=np_.float32),
            "reshape": np_.reshape(x, (32,), out_sharding=P("y")),
            "reshard": sh.reshard(x, P(None, "x")),
            "reshard_jit": lib.jit(lambda a: sh.reshard(a * 2, P("y", None)))(x),
        }

    ours, theirs = _both(meshes, build)
    for k in ours:
        assert _type(ours[k], funcgrad) == _type(theirs[k], jax), k
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-5, err_msg=k)
    fm, _ = meshes
    with fs.set_mesh(fm):
        x = funcgrad.device_put(X, fs.P("x", "y"))
        text = str(funcgrad.make_jaxpr(lambda a: fnp.sin(a).sum(0))(x))
        assert "a:f32[8@x,4@y]" in text and "f32[4@y] = reduce_sum" in text
        lowered = funcgrad.jit(lambda a: fnp.sin(a).sum(0)).lower(x).as_text()
        assert "sdy.sharding_constraint" in lowered and '[{"y"}]' in lowered


def test_data_parallel_mlp_gradients_match_jax(meshes):
    rng = np.random.RandomState(0)
    params = [(rng.randn(16, 32).astype(np.float32) * 0.1, np.zeros(32, np.float32)),
              (rng.randn(32, 4).astype(np.float32) * 0.1, np.zeros(4, np.float32))]  # fmt: skip
    batch = rng.randn(64, 16).astype(np.float32)

    def build(np_, put, lib, sh):
        ps = [(put(w), put(b)) for w, b in params]
        xs = put(batch, ("x", "y"))

        def loss(ps, xs):
            h = xs
            for w, b in ps:
                h = np_.tanh(h @ w + b)
            return np_.mean(h**2)

        return lib.jit(lib.value_and_grad(loss))(ps, xs)

    (l1, g1), (l2, g2) = _both(meshes, build)
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    for a, b in zip(funcgrad.tree.leaves(g1), jax.tree.leaves(g2)):
        assert _type(a, funcgrad) == _type(b, jax)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-7)


def test_auto_axes_and_explicit_axes_match_jax(meshes):
    def build(np_, put, lib, sh):
        x = put(X, "x", "y")
        P = sh.PartitionSpec
        # Inside auto_axes, the partitioner shards freely; the result comes back typed P('x').
        y = sh.auto_axes(lambda a: (a * 2).reshape(4, 8), out_sharding=P("x"))(x)
        z = lib.jit(sh.auto_axes(lambda a: np_.sum(a, axis=1), out_sharding=P("y")))(x)
        return y, z

    (y1, z1), (y2, z2) = _both(meshes, build)
    assert (_type(y1, funcgrad), _type(z1, funcgrad)) == (_type(y2, jax), _type(z2, jax))
    np.testing.assert_allclose(y1, y2)
    np.testing.assert_allclose(z1, z2)

    am = fs.make_mesh((2, 4), ("x", "y"), (fs.AxisType.Auto,) * 2)
    with fs.set_mesh(am):
        seen = []

        def inner(a):
            seen.append(funcgrad.typeof(a).str_short())
            return a * 3

        out = fs.explicit_axes(inner, in_sharding=fs.P("x", "y"))(X)
        assert seen == ["f32[8@x,4@y]"]  # explicit inside
        # Auto outside: nothing typed (no constraint, "f32[8,4]"), shown replicated over the mesh
        assert out.aval.sharding.spec == funcgrad.typeof(out).sharding.spec == fs.P(None, None)
        assert out.aval.sharding.mesh == am.abstract_mesh and funcgrad.typeof(out).str_short() == "f32[8,4]"
        np.testing.assert_allclose(out, X * 3)


def test_auto_mode_is_unchanged():
    m = fs.make_mesh((8,), ("x",), (fs.AxisType.Auto,))
    x = funcgrad.device_put(X, fs.NamedSharding(m, fs.P("x")))
    assert funcgrad.typeof(x).str_short() == "f32[8,4]"
    jm = jax.make_mesh((8,), ("x",), (js.AxisType.Auto,))
    jx = jax.device_put(X, js.NamedSharding(jm, js.PartitionSpec("x")))
    # as jax shows it: replicated over the Auto mesh, by typeof and by the aval
    for t, jt in ((funcgrad.typeof(x), jax.typeof(jx)), (x.aval, jx.aval)):
        assert (tuple(t.sharding.spec), repr(t.sharding.mesh)) == (
            tuple(jt.sharding.spec),
            repr(jt.sharding.mesh),
        )
    assert [a.name for a in jt.sharding.mesh.axis_types] == ["Auto"]
    # zeros_like/ones_like/full_like of an array over several devices are laid out as it is (JAX's
    # full_like), in Auto mode too (optax's optimizer states of sharded parameters)
    for ours, theirs in (
        (fnp.zeros_like(x), jnp.zeros_like(jx)),
        (fnp.full_like(x, 2.0), jnp.full_like(jx, 2.0)),
    ):
        assert tuple(ours.sharding.spec) == tuple(theirs.sharding.spec) == ("x",)
    # reshard and out_sharding= set a type: on Auto axes they are JAX's ValueError
    with fs.set_mesh(m), pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
        fs.reshard(X, fs.P("x"))
    with jax.set_mesh(jm), pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
        js.reshard(X, js.PartitionSpec("x"))
    with fs.set_mesh(m), pytest.raises(ValueError, match="passed to zeros cannot contain axis names"):
        fnp.zeros(8, out_sharding=fs.P("x"))
    f = funcgrad.jit(lambda a: fnp.sin(a) @ fnp.ones((4, 2), np.float32))
    assert "sdy.sharding_constraint" not in f.lower(x).as_text()
    np.testing.assert_allclose(f(x), np.sin(X) @ np.ones((4, 2)), rtol=1e-5)


@pytest.mark.slow
def test_random_samplers_take_out_sharding(meshes):
    def build(np_, put, lib, sh):
        P = sh.PartitionSpec
        k = lib.random.key(0) if lib is jax else lib.random.PRNGKey(0)
        return {
            "normal": lib.random.normal(k, (8, 4), dtype=np_.float32, out_sharding=P("x", "y")),
            "uniform": lib.jit(
                lambda k: lib.random.uniform(k, (8, 4), np_.float32, out_sharding=P(None, "y"))
            )(k),
            # (eager vmap binds the batched constraint on concrete values: they are placed)
            "vmap_normal": lib.vmap(
                lambda k: lib.random.normal(k, (8, 4), np_.float32, out_sharding=P(None, "y"))
            )(lib.random.split(k, 2)),
        }

    ours, theirs = _both(meshes, build)
    for k in ours:
        assert _type(ours[k], funcgrad) == _type(theirs[k], jax), k
        assert _padded(ours[k]) == _padded(theirs[k]), k
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-6, err_msg=k)


_MORE = {
    "slice_even": lambda n, x: x[2:6],
    "slice_uneven": lambda n, x: x[:, 1:3],
    "index": lambda n, x: x[0],
    "cumsum_sharded_axis": lambda n, x: n.cumsum(x, axis=0),
    "sort_sharded_axis": lambda n, x: n.sort(x, axis=1),
    "pad_sharded_dim": lambda n, x: n.pad(x, ((0, 0), (1, 1))),
    "pad_whole_dim": lambda n, x: n.pad(x, ((0, 0), (0, 0))) * 1,
    "outer_reuses_an_axis": lambda n, x: x[:, :, None] * x[:, None, :],
    "flip": lambda n, x: n.flip(x, 0),
    "stack": lambda n, x: n.stack([x, x]),
    "var": lambda n, x: n.var(x, axis=0),
    "clip": lambda n, x: n.clip(x, 1, 5),
    "swapaxes": lambda n, x: n.swapaxes(x, 0, 1),
    "argmax": lambda n, x: n.argmax(x, axis=0),
    "scatter": lambda n, x: x.at[0, 0].set(1.0),
}


@pytest.mark.parametrize("case", sorted(_MORE))
def test_more_rules_agree_with_jax_or_both_raise(meshes, case):
    def build(np_, put, lib, sh):
        x = put(X, "x", "y")
        try:
            out = lib.jit(lambda a: _MORE[case](np_, a))(x)
        except Exception as e:  # noqa: BLE001 - which error is compared below
            return type(e).__name__
        return _type(out, lib).split("[")[1], np.asarray(out)

    ours, theirs = _both(meshes, build)
    if isinstance(theirs, str):
        assert ours == theirs == "ShardingTypeError"
    else:
        assert ours[0] == theirs[0]  # the shape and sharding (jax's argmax is int32 without x64)
        np.testing.assert_allclose(ours[1], theirs[1])


@pytest.mark.parametrize("how", ["device_put", "reshard", "device_put_named"])
def test_an_explicit_sharding_that_does_not_divide_raises_jaxs_value_error(meshes, how):
    # (JAX retypes the value first: core._check_divisibility's ValueError, not the IndivisibleError
    # of jit(in_shardings=); found by the sharded-program fuzzer, ops_shard)
    def build(np_, put, lib, sh):
        mesh = sh.get_abstract_mesh()
        try:
            if how == "device_put":
                put(np.ones((4, 6), np.float32), None, ("x", "y"))
            elif how == "reshard":
                sh.reshard(np_.ones((6, 4), np.float32), sh.PartitionSpec("y"))
            else:
                concrete = lib.make_mesh((2, 4), ("x", "y"))
                lib.device_put(np.ones(6, np.float32), sh.NamedSharding(concrete, sh.PartitionSpec("y")))
        except Exception as e:  # noqa: BLE001 - which error is compared below
            return type(e).__name__, str(e)
        return mesh

    ours, theirs = _both(meshes, build)
    assert ours == theirs and theirs[0] == "ValueError"


def test_set_mesh_under_any_transformation_is_refused_as_jax():
    # (JAX's core.trace_state_clean(): under grad, vmap, jvp, linearize as under jit; funcgrad
    # refused only under staging. The sharded-program fuzzer, seed 16004: set_mesh in linearize)
    def refused(lib, np_):
        m = lib.make_mesh((1,), ("x",))

        def body(v):
            with lib.set_mesh(m):
                return v * 2

        out = []
        for t in (
            lambda: lib.grad(body)(1.0),
            lambda: lib.vmap(body)(np_.ones(2)),
            lambda: lib.linearize(body, 1.0),
        ):
            with pytest.raises(ValueError) as info:
                t()
            out.append(str(info.value))
        return out, float(body(1.0))

    assert refused(funcgrad, fnp) == refused(jax, jnp)


def test_the_tutorials_mixture_of_modes_matches_jax():
    """JAX's explicit-sharding tutorial, "Using a mixture of sharding modes": auto over one axis,
    explicit over the other, inside a jitted function."""

    def run(lib, sh, np_):
        seen = []
        mesh = lib.make_mesh((2, 4), ("X", "Y"), axis_types=(sh.AxisType.Explicit,) * 2)

        def g(y):
            am = sh.get_abstract_mesh()
            seen.append((_type(y, lib), tuple(t.name for t in am.axis_types)))
            return y * 2

        g = sh.auto_axes(g, axes="X")

        @lib.jit
        def f(arr1):
            x = np_.sin(arr1)
            z = g(x, out_sharding=sh.PartitionSpec("X", "Y"))
            seen.append(_type(z, lib))
            return z + 1

        with sh.set_mesh(mesh):
            some_x = sh.reshard(np.arange(16.0, dtype=np.float32).reshape(4, 4), sh.PartitionSpec("X", "Y"))
            out = f(some_x)
            seen.append(_type(out, lib))
            with pytest.raises(Exception, match="incompatible shardings|illegally sharded"):
                sh.reshard(np.ones((4, 4), np.float32), sh.PartitionSpec("X", None)) + sh.reshard(
                    np.ones((4, 4), np.float32), sh.PartitionSpec(None, "X")
                )
        return seen, np.asarray(out)

    ours, theirs = run(funcgrad, fs, fnp), run(jax, js, jnp)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    with pytest.raises(TypeError, match="Missing required keyword argument: 'out_sharding'"):
        with fs.set_mesh(fs.make_mesh((8,), ("x",))):
            fs.auto_axes(lambda a: a)(np.ones(8))


def test_types_key_the_jit_cache_and_shape_dtype_structs_carry_them(meshes):
    fm, jm = meshes
    with fs.set_mesh(fm):
        f = funcgrad.jit(lambda a: fnp.sin(a) * 2)
        a = funcgrad.device_put(X, fs.P("x", "y"))
        b = funcgrad.device_put(X, fs.P("y", "x"))
        assert (_type(f(a), funcgrad), _type(f(b), funcgrad)) == ("f32[8@x,4@y]", "f32[8@y,4@x]")
        s = funcgrad.ShapeDtypeStruct((8, 4), np.float32, sharding=fs.NamedSharding(fm, fs.P("x")))
        ours = str(funcgrad.make_jaxpr(lambda v: v * 2)(s))
        shaped = funcgrad.eval_shape(lambda: fs.reshard(fnp.ones((8, 4), np.float32), fs.P("x", "y")))
    with jax.set_mesh(jm):
        s = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=js.NamedSharding(jm, js.PartitionSpec("x")))
        theirs = str(jax.make_jaxpr(lambda v: v * 2)(s))
        jshaped = jax.eval_shape(lambda: js.reshard(jnp.ones((8, 4), np.float32), js.PartitionSpec("x", "y")))
    assert ours == theirs
    assert repr(shaped) == repr(jshaped)  # eval_shape's structs carry the type's sharding, as JAX's


def test_concrete_shardings_may_mention_auto_axes_as_in_the_tutorial():
    """JAX's tutorial, "Concrete array shardings can mention Auto mesh axis": eagerly inside
    auto_axes a value keeps its layout (``x.sharding``) while its type is replicated."""

    def run(lib, sh, np_):
        seen = []

        def compare(x):
            seen.append((tuple(x.sharding.spec), tuple(lib.typeof(x).sharding.spec)))

        with sh.set_mesh(lib.make_mesh((2, 4), ("X", "Y"))):
            my_array = np_.sin(sh.reshard(np.arange(8.0, dtype=np.float32), sh.PartitionSpec("X")))
            compare(my_array)

            @sh.auto_axes
            def check_in_auto_context(x):
                compare(x)
                y = x * 2
                seen.append(tuple(lib.typeof(y).sharding.spec))
                return y

            out = check_in_auto_context(my_array, out_sharding=sh.PartitionSpec("X"))
            seen.append(_type(out, lib))
        return seen, np.asarray(out)

    ours, theirs = run(funcgrad, fs, fnp), run(jax, js, jnp)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_control_flow_gradients_and_checkpoint_on_sharded_values_match_jax(meshes):
    def build(np_, put, lib, sh):
        x = put(X, "x", None)
        lax = lib.lax

        def program(a):
            return {
                "fori": lax.fori_loop(0, 3, lambda i, c: c * 2 + a, np_.zeros_like(a)),
                "cond": lax.cond(True, lambda b: b * 2, lambda b: b + 1, a),
                "scan": lax.scan(lambda c, _: (c + a, None), a, None, length=3)[0],
                "grad": lib.grad(lambda b: np_.sum(np_.sin(b) ** 2))(a),
                # (a differentiated checkpoint over several devices: it failed to compile before)
                "remat": lib.grad(lambda b: np_.sum(lib.checkpoint(lambda c: np_.sin(c) * c)(b)))(a),
            }

        return lib.jit(program)(x)

    ours, theirs = _both(meshes, build)
    for k in ours:
        assert _type(ours[k], funcgrad) == _type(theirs[k], jax), k
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-5, err_msg=k)


# funcgrad's own hot paths call these, so they do not take out_sharding (README: differences).
_WITHOUT_OUT_SHARDING = {"array", "asarray", "broadcast_to", "rng_bit_generator"}


def test_out_sharding_is_taken_wherever_jax_takes_it():
    import inspect  # noqa: PLC0415 - only this test reads signatures

    missing = []
    for ours, theirs in ((fnp, jnp), (funcgrad.random, jax.random), (funcgrad.lax, jax.lax)):
        for name in dir(theirs):
            try:
                takes = "out_sharding" in inspect.signature(getattr(theirs, name)).parameters
            except (TypeError, ValueError):
                continue
            if not takes or name in _WITHOUT_OUT_SHARDING:
                continue
            f = getattr(ours, name, None)
            if f is None or "out_sharding" not in inspect.signature(f).parameters:
                missing.append(f"{theirs.__name__}.{name}")
    assert not missing


def _gather_scan_and_constraint_cases(np_, put, lib, sh):
    """Each case's type, or the name of the error it raises: JAX 0.10's gather/scatter rules,
    scan over typed operands and with_sharding_constraint as an assertion on explicit axes."""
    P = sh.PartitionSpec
    x, x2 = put(X, "x", "y"), put(X, None, "y")
    idx = np.array([0, 3, 5, 1])
    lax = lib.lax

    def step(c, row):
        return c + row, c * row

    cases = {
        "gather_whole_dim": lambda: x2[idx],
        "gather_sharded_dim": lambda: x[idx],
        "gather_out_sharding": lambda: x.at[idx].get(out_sharding=P(None, "y")),
        "take_along_axis": lambda: np_.take_along_axis(x2, np.zeros((8, 4), np.int32), axis=0),
        "scatter_sharded": lambda: x.at[idx].add(1.0),
        "scatter_out_sharding": lambda: x.at[idx].add(1.0, out_sharding=P("x", "y")),
        "scan_sharded_leading_dim": lambda: lax.scan(step, np_.zeros(4), x)[1],
        "scan_carry_changes_type": lambda: lax.scan(step, np_.zeros(4, np_.float32), x2)[0],
        "scan_ys": lambda: lax.scan(step, put(np.zeros(4, np.float32), "y"), x2)[1],
        "scan_carry": lambda: lax.scan(step, put(np.zeros(4, np.float32), "y"), x2)[0],
        "scan_jit": lambda: lib.jit(lambda c, xs: lax.scan(step, c, xs)[1])(
            put(np.zeros(4, np.float32), "y"), x2
        ),
        "zeros_like": lambda: np_.zeros_like(x),
        "constraint_matches": lambda: lax.with_sharding_constraint(x, P("x", "y")),
        "constraint_differs": lambda: lax.with_sharding_constraint(x, P("y", "x")),
        "constraint_differs_jit": lambda: lib.jit(lambda a: lax.with_sharding_constraint(a, P(None, "y")))(x),
        "device_put_jit": lambda: lib.jit(lambda a: lib.device_put(a * 2, P("y", None)))(x),
        "conv": lambda: lax.conv_general_dilated(
            put(np.ones((2, 4, 4), np.float32), "x", None, None),
            np.ones((3, 4, 8), np.float32),
            (1,),
            "SAME",
            dimension_numbers=("NWC", "WIO", "NWC"),
        ),
        "conv_sharded_kernel": lambda: lax.conv_general_dilated(
            put(np.ones((2, 4, 4), np.float32), "x", None, None),
            put(np.ones((3, 4, 8), np.float32), None, None, "y"),
            (1,),
            "SAME",
            dimension_numbers=("NWC", "WIO", "NWC"),
        ),
    }
    out = {}
    for name, case in cases.items():
        try:
            r = case()
        except Exception as e:  # noqa: BLE001 - which error is compared
            out[name] = type(e).__name__
        else:
            out[name] = (_type(r, lib), np.asarray(r).tolist())
    return out


def test_gather_scan_and_constraints_follow_jaxs_rules(meshes):
    ours, theirs = _both(meshes, _gather_scan_and_constraint_cases)
    assert ours == theirs
    assert (
        theirs["gather_sharded_dim"] == "ShardingTypeError"
        and theirs["scan_sharded_leading_dim"] == "ValueError"
    )
    assert theirs["constraint_differs"] == "AssertionError"


def test_tracers_vmap_spmd_axis_name_and_abstract_meshes_follow_jax(meshes):
    def build(np_, put, lib, sh):
        P = sh.PartitionSpec
        x, xr = put(X, "x", "y"), put(X)
        inner = []

        def f(a):
            inner.append((_type(a, lib), hasattr(a, "sharding")))
            return a * 2

        out = {
            "spmd_sharded": _type(lib.vmap(f, spmd_axis_name="x")(x), lib),
            "spmd_replicated": _type(lib.jit(lib.vmap(f, spmd_axis_name="x"))(xr), lib),
            "spmd_tuple": _type(lib.vmap(f, spmd_axis_name=("x", "y"))(put(X, ("x", "y"))), lib),
        }
        try:
            lib.vmap(f, spmd_axis_name="y")(x)
        except ValueError as e:
            out["spmd_mismatch"] = str(e)

        @lib.jit
        def renamed(a):
            am = sh.AbstractMesh((8,), ("A",), (sh.AxisType.Explicit,))
            with sh.use_abstract_mesh(am):
                return sh.reshard(a, P("A", None)) * 2

        z = renamed(x)
        out["renamed"] = (_type(z, lib), np.asarray(z).tolist(), z.sharding.mesh.axis_names)
        try:
            out["abstract_devices"] = sh.get_abstract_mesh().devices
        except ValueError as e:
            out["abstract_devices"] = str(e).split(":")[0]
        auto = lib.make_mesh((2, 4), ("x", "y"), (sh.AxisType.Auto,) * 2)
        with sh.set_mesh(auto):
            g = lib.jit(lib.vmap(lambda a: lib.lax.with_sharding_constraint(a, P("y")), spmd_axis_name="x"))
            out["spmd_auto"] = tuple(g(put(X)).sharding.spec)
        return out, inner

    ours, theirs = _both(meshes, build)
    assert ours == theirs
    with fs.set_mesh(meshes[0]):
        with pytest.raises(AttributeError, match="'sharding' attribute is not available on traced array"):
            funcgrad.jit(lambda a: a.sharding)(funcgrad.device_put(X, fs.P("x")))


def test_shard_map_in_specs_must_match_an_unsharded_arguments_type():
    """JAX's shard_map tutorial: on a fully manual Explicit mesh, an argument's type (replicated
    for an unsharded array) must be split as in_specs says."""
    with fs.set_mesh(fs.make_mesh((2,), ("i",))):
        f = funcgrad.shard_map(lambda a: a * 2, in_specs=fs.P("i"), out_specs=fs.P("i"))
        with pytest.raises(ValueError, match=r"P\('i',\) does not match the specs of the input: P\(None,\)"):
            f(np.arange(6.0))
        np.testing.assert_allclose(f(funcgrad.device_put(np.arange(6.0), fs.P("i"))), np.arange(6.0) * 2)
        # (JAX's words end both messages: its shard_map guide prints them)
        with pytest.raises(ValueError, match=r"you can use `jax.reshard` on the arguments and then pass"):
            f(np.arange(6.0))
        g = funcgrad.shard_map(lambda a: a * 2, in_specs=fs.P("i"), out_specs=fs.P())
        with pytest.raises(
            ValueError, match=r"If so, consider disabling the check by passing the check_vma=False"
        ):
            g(funcgrad.device_put(np.arange(6.0), fs.P("i")))


def test_unreduced_values_are_placed_reduced_and_contracted_as_jaxs():
    """P(..., unreduced=): the value is the sum of the devices' blocks (JAX's parallel-programming
    tutorial): placing it, the blocks, its type, reshard to reduce (eagerly and under jit), a
    contraction left unreduced by out_sharding=, and the errors where funcgrad does not compute."""

    def run(lib, sh, np_):
        P = sh.PartitionSpec
        with sh.set_mesh(lib.make_mesh((4, 2), ("X", "Y"))):
            x = lib.device_put(X, P("X", "Y"))
            y = lib.device_put(x, P("X", None, unreduced={"Y"}))
            y2 = lib.device_put(X, P("X", None, unreduced={"Y"}))
            w = lib.device_put(W, P("Y", None))
            c = np_.dot(x, w, out_sharding=P("X", None, unreduced={"Y"}))
            out = {
                "type": str(lib.typeof(y)),
                "blocks": [np.asarray(s.data).tolist() for s in y.addressable_shards],
                "blocks_host": [np.asarray(s.data).tolist() for s in y2.addressable_shards[:2]],
                "reduced": np.asarray(sh.reshard(y, P("X", None))).tolist(),
                "reduced_jit": np.asarray(lib.jit(lambda a: sh.reshard(a, P("X", "Y")))(y2)).tolist(),
                "dot": (str(lib.typeof(c)), np.asarray(sh.reshard(c, P("X", None))).tolist()),
                "repr": repr(y).split("sharding=")[0],
            }
            try:
                y * 2
            except Exception as e:  # noqa: BLE001 - which error is compared
                out["mul"] = type(e).__name__

            # Under jit: the linear operations JAX allows keep the type unreduced, reshard
            # reduces (one all-reduce), a result may stay unreduced, grad goes through.
            def g(a, w_):
                z = np_.dot(a, w_, out_sharding=P("X", None, unreduced={"Y"}))
                z2 = z + z
                s = z2.sum(axis=1) + z2[:, 0]
                return z2, sh.reshard(s, P("X")), sh.reshard(z2.T.astype(np_.float32), P(None, "X"))

            outs = lib.jit(g)(x, w)
            out["jit_types"] = [str(lib.typeof(o)) for o in outs]
            out["jit"] = [np.asarray(sh.reshard(outs[0], P("X", None))).tolist()] + [
                np.asarray(o).tolist() for o in outs[1:]
            ]
            out["jit_all_reduces"] = lib.jit(g).lower(x, w).compile().as_text().count("all-reduce(")
            sq = lambda a, w_: np_.sum(  # noqa: E731
                sh.reshard(np_.dot(a, w_, out_sharding=P("X", None, unreduced={"Y"})), P("X", None)) ** 2
            )
            out["jit_grad"] = [np.asarray(v).tolist() for v in lib.jit(lib.grad(sq, argnums=(0, 1)))(x, w)]
            # P(..., reduced=): typed {R:Y}, kept by elementwise operations; an unreduced product
            # times a value reduced along the same axes stays unreduced (JAX's mul rule)
            r = lib.device_put(W[0], P(None, reduced={"Y"}))
            seen = []

            def scaled(a, w_, r_):
                m = np_.dot(a, w_, out_sharding=P("X", None, unreduced={"Y"})) * np_.sin(r_ + 1.0)
                seen.append(str(lib.typeof(m)))
                return sh.reshard(m, P("X", None))

            out["reduced_type"] = str(lib.typeof(r))
            out["jit"].append(np.asarray(lib.jit(scaled)(x, w, r)).tolist())
            out["scaled_type"] = seen
            for name, fn in [("neg", lambda z: -z), ("add_plain", lambda z: z + 1.0)]:
                try:
                    lib.jit(fn)(c)
                except Exception as e:  # noqa: BLE001 - which error is compared
                    out["jit_" + name] = type(e).__name__
        return out

    ours, theirs = run(funcgrad, fs, fnp), run(jax, js, jnp)
    for k in theirs:
        if k in ("jit", "jit_grad"):
            for a, b in zip(ours[k], theirs[k]):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, err_msg=k)
        elif k in ("reduced", "reduced_jit", "dot"):
            np.testing.assert_allclose(
                np.asarray(ours[k][-1]), np.asarray(theirs[k][-1]), rtol=1e-5, err_msg=k
            )
        else:
            assert ours[k] == theirs[k], k
    assert ours["dot"][0] == theirs["dot"][0] == "float32[8@X,8]{U:Y}"
    with fs.set_mesh(fs.make_mesh((4, 2), ("X", "Y"))):
        y = funcgrad.device_put(X, fs.P("X", None, unreduced={"Y"}))
        with pytest.raises(NotImplementedError, match="unreduced over mesh axes"):
            np.asarray(y)


def test_lax_reduction_left_unreduced_as_jax():
    # (JAX's array_test test_unreduced_printing: lax.reduce_sum's axes are not an array to split
    # over the mesh; the result prints its unreduced sharding and reads as the sum)
    def run(lib, sh, np_):
        with sh.set_mesh(lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))):
            x = lib.device_put(np_.arange(8.0, dtype="float32"), sh.PartitionSpec("x"))
            y = lib.lax.reduce_sum(x, [0], out_sharding=sh.PartitionSpec(unreduced={"x"}))
            return str(y.sharding.spec), str(y).split("sharding=")[0], str(lib.typeof(y))

    assert run(funcgrad, fs, fnp) == run(jax, jax.sharding, jax.numpy)


@pytest.mark.parametrize(
    "shape, spec, new",
    [
        ((8, 8), ("x", "y"), (64,)),
        ((8, 8), ("y", "x"), (64,)),
        ((8, 8), (None, "y"), (64,)),
        ((2, 4, 8), (None, "y", "x"), (2, 32)),
        ((4, 2, 8), ("y", None, "x"), (8, 8)),
        ((2, 8), ("x", "y"), (16,)),
    ],
)
def test_merging_reshapes_type_their_result_as_jax(meshes, shape, spec, new):
    # JAX's merge rule: the merged dimension takes the group's axes in order, each dividing what is
    # left; a later dimension need not be wholly split by its axes ((8, 8) over P('x', 'y')
    # flattens to P(('x', 'y')): funcgrad raised ShardingTypeError, the first thing a user who
    # ravels an explicitly sharded array meets); an unsharded dimension before a sharded one is
    # JAX's ShardingTypeError
    a = np.arange(float(np.prod(shape))).reshape(shape)

    def build(np_, put, lib, sh):
        out = []
        for f in (lambda x: x.reshape(new), lib.jit(lambda x: x.reshape(new))):
            try:
                y = f(put(a, *spec))
                out.append((str(lib.typeof(y).sharding.spec), np.asarray(y).tolist()))
            except Exception as e:
                out.append(type(e).__name__)
        return out

    ours, theirs = _both(meshes, build)
    assert ours == theirs


def test_mesh_update_as_jax():
    # (JAX's AbstractMesh.update/Mesh.update: pjit_test's test_abstract_mesh_changing_names_sizes)
    def run(lib, sh):
        am = sh.AbstractMesh((2, 2), ("x", "y"), (sh.AxisType.Explicit,) * 2)
        m = lib.make_mesh((2, 2), ("x", "y"))
        return (
            dict(am.update(axis_sizes=(4, 1), axis_names=("a", "b")).shape),
            am.update(axis_types=(sh.AxisType.Auto,) * 2).axis_types,
            m.update(axis_names=("p", "q")).axis_names,
            [d.id for d in m.update(axis_types=(sh.AxisType.Auto,) * 2).devices.flat],
        )

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[0] == theirs[0] and ours[2:] == theirs[2:]
    assert [t.name for t in ours[1]] == [t.name for t in theirs[1]]


def test_concatenate_needs_equal_shardings_as_jax():
    # (pjit_test's test_concatenate: P('x', 'y') with P('x', None) on a (2, 1) mesh is JAX's error)
    def run(lib, sh):
        P = sh.PartitionSpec
        with sh.set_mesh(lib.make_mesh((2, 1), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)):
            a = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), P("x", "y"))
            b = lib.device_put(np.arange(4.0, dtype=np.float32).reshape(4, 1), P("x", "y"))
            c = lib.device_put(np.arange(4.0, dtype=np.float32).reshape(4, 1), P("x"))
            f = lib.jit(lambda u, v: lib.numpy.concatenate([u, v], axis=1))
            out = f(a, b)
            try:
                f(a, c)
            except Exception as e:  # noqa: BLE001 - which error is compared
                return (
                    str(out.sharding.spec),
                    np.asarray(out).tolist(),
                    type(e).__name__,
                    str(e).split(".")[0],
                )

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[:3] == theirs[:3] and ours[3].startswith("All operands should have the same sharding")


def test_jit_result_keeps_a_size_one_axis_of_its_type_as_jax():
    # (XLA drops mesh axes of size 1 from the layouts it reports: pjit_test's
    # test_jnp_matmul_out_sharding_3d, a (1, 2) mesh)
    def run(lib, sh):
        P = sh.PartitionSpec
        with sh.set_mesh(lib.make_mesh((1, 2), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)):
            x = sh.reshard(lib.numpy.ones((1, 1, 4)), P("x", None, "y"))
            y = sh.reshard(lib.numpy.ones((1, 4, 2)), P("x", "y", None))
            z = lib.jit(lambda a, b: lib.numpy.matmul(a, b, out_sharding=P("x")))(x, y)
            t = lib.jit(lambda a: a.T)(x)
            return str(z.sharding.spec), str(t.sharding.spec), np.asarray(z).tolist()

    assert run(funcgrad, fs) == run(jax, js)


def test_a_python_bool_update_of_an_int_array_is_an_int_as_jax(meshes):
    # (JAX's pjit_test test_scatter_bool_index: a Python bool is a Python int to the update, so
    # strict promotion has no bool with int32 to refuse)
    def build(np_, put, lib, sh):
        x = put(np.arange(32, dtype=np.int32).reshape(8, 4), "x", "y")
        with lib.numpy_dtype_promotion("strict"):
            out = lib.jit(lambda a: a.at[:, -1].set(False, out_sharding=lib.typeof(a).sharding))(x)
        return _type(out, lib), np.asarray(out)

    ours, theirs = _both(meshes, build)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_convolution_cotangents_take_their_primals_types_as_jax(meshes):
    # (JAX's pjit_test test_grad_conv_general_dilated: the kernel's cotangent contracts the batch
    # split over x, no ambiguity since JAX's transposes pass out_sharding= the primal's type)
    kernel = (np.arange(12, dtype=np.float32).reshape(3, 1, 4) - 5.0) / 4.0
    inputs = np.sin(np.arange(48, dtype=np.float32)).reshape(8, 6, 1)

    def build(np_, put, lib, sh):
        dn = lib.lax.ConvDimensionNumbers((0, 2, 1), (2, 1, 0), (0, 2, 1))

        def loss(k, x):
            x = np_.pad(x, ((0, 0), (2, 0), (0, 0)))
            return (lib.lax.conv_general_dilated(x, k, (1,), "VALID", dimension_numbers=dn) ** 2).sum()

        grads = lib.jit(lib.grad(loss, argnums=(0, 1)))(put(kernel), put(inputs, "x"))
        return [(_type(g, lib), np.asarray(g)) for g in grads]

    ours, theirs = _both(meshes, build)
    for (ot, ov), (tt, tv) in zip(ours, theirs):
        assert ot == tt
        np.testing.assert_allclose(ov, tv, rtol=1e-5, atol=1e-5)


def test_the_cotangent_of_a_weight_made_off_the_mesh_is_replicated_as_jax(meshes):
    # (JAX's pjit_test test_dot_lhs_rhs_mesh_empty: the weight's type has no mesh, so its
    # cotangent, contracting the batch split over x, is typed replicated on the mesh in scope)
    weights = {funcgrad: fnp.asarray(W), jax: jnp.asarray(W)}  # (made before any mesh is set)

    def build(np_, put, lib, sh):
        loss = lambda w, x: lib.lax.dot(x, w).sum()  # noqa: E731
        dw = lib.jit(lib.grad(loss))(weights[lib], put(X, "x"))
        return _type(dw, lib), np.asarray(dw)

    ours, theirs = _both(meshes, build)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


@pytest.mark.parametrize(
    "shape, spec, new",
    [
        ((4, 8, 8), ("x", None, None), (4, 2, 4, 4, 2)),  # two dimensions split
        ((4, 6, 8), ("x", None, None), (4, 4, 2, 6)),  # a regrouping
        ((4, 2, 4, 2, 4), ("x", None, None, None, None), (4, 8, 8)),  # two merges
        ((4, 8, 8), ("x", "y", None), (4, 4, 2, 8)),  # one split: typed
    ],
)
def test_an_ambiguous_reshape_of_a_sharded_array_is_refused_as_jax(meshes, shape, spec, new):
    # (pjit_test's test_reshape_split_merge_one_axis: JAX's rule types one split or one merge
    # only; funcgrad typed these P('x', None, ...) where JAX asks for out_sharding)
    a = np.arange(float(np.prod(shape))).reshape(shape)

    def build(np_, put, lib, sh):
        out = []
        for f in (lambda x: lib.lax.reshape(x, new), lib.jit(lambda x: np_.reshape(x, new))):
            try:
                out.append(str(lib.typeof(f(put(a, *spec))).sharding.spec))
            except Exception as e:
                out.append(type(e).__name__)
        given = lib.jit(lambda x: lib.lax.reshape(x, new, out_sharding=sh.PartitionSpec("x")))
        out.append(str(lib.typeof(given(put(a, *spec))).sharding.spec))  # out_sharding types it
        return out

    ours, theirs = _both(meshes, build)
    assert ours == theirs


def test_broadcast_like_takes_the_type_of_its_model_as_jax(meshes):
    # (pjit_test's test_broadcast_like: the result is typed as like_arr, funcgrad's replicated;
    # an operand sharded where like_arr is not is JAX's ValueError)
    def build(np_, put, lib, sh):
        like = put(np.arange(16.0).reshape(8, 2), "x", None)
        out = [str(lib.typeof(lib.lax.broadcast_like(np.arange(2.0), like)).sharding.spec)]
        try:
            lib.lax.broadcast_like(put(np.arange(2.0), "x"), like)
        except ValueError as e:
            out.append(str(e).split(":")[0])
        return out

    ours, theirs = _both(meshes, build)
    assert ours == theirs


def test_types_complete_their_spec_and_a_single_device_array_has_no_mesh_as_jax(meshes):
    # (pjit_test's test_aval_spec_explicit_auto_complete and test_device_put_typeof)
    def build(np_, put, lib, sh):
        am = sh.AbstractMesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        t = lib.core.ShapedArray((8, 2), np.int32, sharding=sh.NamedSharding(am, sh.PartitionSpec("x")))
        one = lib.device_put(np_.zeros(8), sh.SingleDeviceSharding(lib.devices()[0]))
        return (
            str(t.sharding.spec),
            lib.typeof(np_.zeros(8)).sharding.mesh.empty,
            lib.typeof(one).sharding.mesh.empty,
            lib.typeof(np.zeros(3)).sharding.mesh.empty,
            lib.typeof(lib.jit(lambda x: x * 2)(np_.zeros(8))).sharding.mesh.empty,
        )

    ours, theirs = _both(meshes, build)
    assert ours == theirs


def test_repeat_is_computed_in_auto_axes_and_typed_as_jax(meshes):
    # (JAX's pjit_test test_jnp_repeat: counts per element gather along a split axis, with
    # out_sharding=; without it the repeated axis must be whole, else JAX's ValueError)
    def build(np_, put, lib, sh):
        x = put(X, "x", "y")
        counts = np.array([1, 2, 0, 1, 3, 1, 1, 3])
        outs = {
            "counts_out_sharding": np_.repeat(x, counts, axis=0, out_sharding=sh.PartitionSpec("x")),
            "whole_axis_jit": lib.jit(lambda a: np_.repeat(a, np.array([2, 1, 1, 2]), axis=1))(put(X, "x")),
            "flat": np_.repeat(np_.asarray(np.arange(4, dtype=np.float32)), 2),
        }
        try:
            np_.repeat(x, counts, axis=0)
        except ValueError as e:
            outs["refused"] = str(e)
        return {k: v if isinstance(v, str) else (_type(v, lib), np.asarray(v)) for k, v in outs.items()}

    ours, theirs = _both(meshes, build)
    assert ours.keys() == theirs.keys()
    for k in ours:
        if isinstance(ours[k], str):
            assert ours[k] == theirs[k], k
        else:
            assert ours[k][0] == theirs[k][0], k
            np.testing.assert_array_equal(ours[k][1], theirs[k][1], err_msg=k)


def test_percentile_along_a_split_axis_is_computed_in_auto_axes_as_jax(meshes):
    # (JAX's pjit_test test_percentile: out_sharding= computes the sort in auto_axes, where a
    # value split over the axes made Auto is typed whole)
    def build(np_, put, lib, sh):
        seen = []

        def inner(a):
            seen.append(_type(a, lib))
            return a * 2

        x = put(X, "x", "y")
        out = lib.jit(lambda a: np_.percentile(a, 50, axis=0, out_sharding=sh.PartitionSpec()))(x)
        lib.jit(lambda a: sh.auto_axes(inner, out_sharding=sh.PartitionSpec("x"))(a))(x)
        return _type(out, lib), np.asarray(out), seen

    ours, theirs = _both(meshes, build)
    assert ours[0] == theirs[0] and ours[2] == theirs[2]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_bincount_of_split_values_takes_a_replicated_out_sharding_as_jax(meshes):
    # (JAX's pjit_test test_bincount: the counts' scatter is typed out_sharding=, which must be
    # fully replicated (or unreduced); x split over x is no ambiguity then)
    def build(np_, put, lib, sh):
        x = put(np.array([0, 1, 1, 3, 0, 2, 1, 1], dtype=np.int32), "x")
        f = lib.jit(lambda a, s: np_.bincount(a, length=4, out_sharding=s), static_argnums=1)
        out = f(x, sh.PartitionSpec())
        try:
            f(x, sh.PartitionSpec("x"))
        except Exception as e:  # noqa: BLE001 - its type and words are compared
            refused = (type(e).__name__, str(e))
        return _type(out, lib).split("[")[1], np.asarray(out), refused  # (the default int's width apart)

    ours, theirs = _both(meshes, build)
    assert ours[0] == theirs[0] and ours[2] == theirs[2]
    np.testing.assert_array_equal(ours[1], theirs[1])
