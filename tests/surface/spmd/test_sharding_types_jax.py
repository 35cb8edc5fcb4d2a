"""Sharding in types on 8 CPU devices against jax 0.10.2 in the same process: the result and
cotangent shardings of programs from JAX's pjit_test (ShardingInTypesTest) that funcgrad typed
otherwise, each run on both libraries."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding


def _spec(x):
    spec = tuple(x.sharding.spec)
    return spec + (None,) * (x.ndim - len(spec))


def test_eager_grad_program_cache_keys_on_the_inputs_shardings():
    # An eager grad's program is cached by its structure: inputs typed with other shardings make
    # another derivative program (the cotangents are typed as the primals: pjit_test's
    # test_dot_general cases one after another).
    cases = [(("x", None), (None, "y")), (("x", None), (None, None)), ((None, "y"), (None, "y"))]
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, np_, sh, mesh):
        out = []
        with lib.set_mesh(mesh):
            for s1, s2 in cases:
                a = lib.device_put(x, sh.NamedSharding(mesh, sh.PartitionSpec(*s1)))
                b = lib.device_put(x.T, sh.NamedSharding(mesh, sh.PartitionSpec(*s2)))
                ga, gb = lib.grad(lambda u, v: np_.sum(u @ v), argnums=(0, 1))(a, b)
                out.append((_spec(ga), _spec(gb), np.asarray(ga), np.asarray(gb)))
        return out

    ours = run(funcgrad, fnp, fs, fs.make_mesh((2, 2), ("x", "y")))
    theirs = run(jax, jnp, js, jax.make_mesh((2, 2), ("x", "y"), axis_types=(js.AxisType.Explicit,) * 2))
    for o, t in zip(ours, theirs, strict=True):
        assert o[:2] == t[:2] == (o[0], o[1])
        np.testing.assert_allclose(o[2], t[2])
        np.testing.assert_allclose(o[3], t[3])


@pytest.mark.parametrize("unreduced", [False, True])
def test_einsum_out_sharding_types_the_product_in_its_own_order(unreduced):
    # "heb,eba->hea" contracts to (e, h, a) then transposes: out_sharding= names (h, e, a), so the
    # product is typed with it permuted (pjit_test test_einsum_unreduced_with_transpose), and no
    # constraint is staged after the transpose.
    a = np.arange(192, dtype=np.float32).reshape(6, 4, 8)
    b = np.arange(320, dtype=np.float32).reshape(4, 8, 10)
    kw = {"unreduced": {"y"}} if unreduced else {}

    def run(lib, np_, sh, mesh):
        with lib.set_mesh(mesh):
            x = lib.device_put(a, sh.PartitionSpec(None, "x", "y"))
            y = lib.device_put(b, sh.PartitionSpec("x", "y", None))
            osh = sh.PartitionSpec(None, "x", None, **kw)

            def f(u, v):
                return np_.einsum("heb,eba->hea", u, v, out_sharding=osh)

            names = [e.primitive.name for e in lib.make_jaxpr(f)(x, y).jaxpr.eqns]
            out = lib.jit(f)(x, y)
            whole = lib.sharding.reshard(out, sh.PartitionSpec(None, "x", None))
            return names, repr(out.sharding.spec), np.asarray(whole)

    ours = run(funcgrad, fnp, fs, fs.make_mesh((2, 2), ("x", "y")))
    theirs = run(jax, jnp, js, jax.make_mesh((2, 2), ("x", "y"), axis_types=(js.AxisType.Explicit,) * 2))
    assert ours[0] == theirs[0] == ["dot_general", "transpose"]
    assert ours[1] == theirs[1]
    np.testing.assert_array_equal(ours[2], theirs[2])


def _mixed(lib, sh, shape):
    types = (sh.AxisType.Explicit, sh.AxisType.Auto)
    return lib.make_mesh(shape, ("x", "y"), axis_types=types)


def test_mixed_mesh_results_keep_their_explicit_axes():
    # A (1, 2) mesh, x Explicit (size 1), y Auto: a jitted result typed P('x', None) keeps it
    # (XLA reports layouts without size-1 axes; pjit_test test_singleton_explicit_axis_multi_auto_axes);
    # with_sharding_constraint naming an Auto axis of a value typed over an Explicit one lays it out
    # over both, its type unchanged (test_wsc_mix_axis_types).
    def run(lib, np_, sh):
        with lib.set_mesh(_mixed(lib, sh, (1, 2))):
            ones = lib.jit(lambda: np_.ones((2, 2), np_.int32, out_sharding=sh.PartitionSpec("x", None)))()
        with lib.set_mesh(_mixed(lib, sh, (4, 2))):
            x = lib.device_put(np.arange(16, dtype=np.int32).reshape(8, 2), sh.PartitionSpec("x"))
            out = lib.jit(lambda v: lib.lax.with_sharding_constraint(v, sh.PartitionSpec("y")))(x)
        return repr(lib.typeof(ones).sharding.spec), _spec(ones), _spec(out), lib.typeof(out).str_short()

    ours = run(funcgrad, fnp, fs)
    theirs = run(jax, jnp, js)
    assert ours[:3] == theirs[:3]
    assert ours[3] == theirs[3].replace("int32", "i32") == "i32[8@x,2]"


def test_auto_axes_without_a_mesh_in_scope():
    # JAX's _get_new_mesh: the mesh of out_sharding= when none is in scope (pjit_test
    # test_auto_axes_computation_follows_data), and no mesh at all calls f as it is
    # (test_no_op_auto_axes_no_mesh); from Manual axes (a shard_map body) JAX's NotImplementedError.
    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        s = sh.NamedSharding(mesh, sh.PartitionSpec("x"))
        x = lib.device_put(np.arange(8.0, dtype=np.float32), s)
        out = sh.auto_axes(lib.jit(lambda v: v * 2), out_sharding=s)(x)
        plain = lib.jit(sh.auto_axes(lambda v: v + 1, out_sharding=sh.PartitionSpec()))(np.arange(4))
        return repr(out.sharding.spec), np.asarray(out), np.asarray(plain)

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])

    mesh = fs.make_mesh((2,), ("x",), axis_types=(fs.AxisType.Auto,))

    def body(v):
        return fs.auto_axes(lambda a: a * 2, axes="x", out_sharding=fs.P("x"))(v)

    with fs.set_mesh(mesh), pytest.raises(NotImplementedError, match="Going from `Manual`"):
        mapped = funcgrad.shard_map(body, mesh=mesh, in_specs=fs.P("x"), out_specs=fs.P("x"))
        funcgrad.jit(mapped)(np.arange(8))


@pytest.mark.parametrize("unreduced", [False, True])
def test_einsum_of_three_operands_with_out_sharding(unreduced):
    # JAX computes an einsum of several contractions with out_sharding= in auto_axes, then
    # reshards (to unreduced too): pjit_test test_three_operand_einsum_unreduced.
    n1, n2, n3 = np.arange(2.0), np.arange(8.0).reshape(2, 4), np.arange(2.0)
    kw = {"unreduced": {"x"}} if unreduced else {}

    def run(lib, np_, sh, mesh):
        with lib.set_mesh(mesh):
            P = sh.PartitionSpec
            a, b, c = lib.device_put(n1, P("x")), lib.device_put(n2, P("x", "y")), lib.device_put(n3, P("x"))
            f = lib.jit(lambda u, v, w: np_.einsum("d,dh,d->h", u, v, w, out_sharding=P("y", **kw)))
            out = f(a, b, c)
            return repr(out.sharding.spec), np.asarray(lib.sharding.reshard(out, P("y")))

    ours = run(funcgrad, fnp, fs, fs.make_mesh((2, 2), ("x", "y")))
    theirs = run(jax, jnp, js, jax.make_mesh((2, 2), ("x", "y"), axis_types=(js.AxisType.Explicit,) * 2))
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1])
    np.testing.assert_allclose(ours[1], np.einsum("d,dh,d->h", n1, n2, n3))


def test_compiled_input_shardings_of_an_unread_argument_are_none():
    # JAX's jit drops an argument the program never reads (keep_unused=False): the compiled
    # program has no sharding nor layout for it.
    x = np.arange(8.0, dtype=np.float32)
    n = np.arange(3.0, dtype=np.float32)

    def run(lib, sh):
        mesh = lib.make_mesh((8,), ("x",), axis_types=(sh.AxisType.Explicit,))
        a = lib.device_put(x, sh.NamedSharding(mesh, sh.PartitionSpec("x")))
        (unread_n, read_a), _ = lib.jit(lambda u, v: v + 1).lower(n, a).compile().input_shardings
        (read_n, unread_a), _ = lib.jit(lambda u, v: u + 1).lower(n, a).compile().input_formats
        kept = lib.jit(lambda u, v: u + 1, keep_unused=True).lower(n, a).compile().input_shardings
        return (
            unread_n,
            repr(read_a.spec),
            type(read_n.sharding).__name__,
            (unread_a.layout, unread_a.sharding),
            [s is None for s in kept[0]],
        )

    expected = (None, "P('x',)", "SingleDeviceSharding", (None, None), [False, False])
    assert run(funcgrad, fs) == run(jax, js) == expected


def test_full_like_of_a_shape_dtype_struct():
    # JAX's lax.full_like takes a duck-typed array: a ShapeDtypeStruct over an abstract mesh gives
    # a value on the default device, over a concrete one its sharding (pjit_test
    # test_full_like_eager_non_concrete_sharding).
    def run(lib, sh):
        abstract = sh.NamedSharding(sh.AbstractMesh((2,), ("x",)), sh.PartitionSpec("x"))
        a = lib.lax.full_like(lib.ShapeDtypeStruct((8, 2), np.float32, sharding=abstract), 0)
        concrete = sh.NamedSharding(lib.make_mesh((2,), ("x",)), sh.PartitionSpec("x"))
        b = lib.lax.full_like(lib.ShapeDtypeStruct((8, 2), np.float32, sharding=concrete), 1)
        return type(a.sharding).__name__, a.dtype, _spec(b), np.asarray(b).sum()

    assert run(funcgrad, fs) == run(jax, js) == ("SingleDeviceSharding", np.float32, ("x", None), 16.0)


def test_compiled_out_info_holds_the_result_shardings():
    # JAX's Compiled.out_info: ShapeDtypeStructs with the compiled program's result shardings
    # (Lowered.out_info has none where the type holds none): pjit_test test_compiled_out_info.
    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",))
        x = lib.device_put(np.arange(8, dtype=np.int32), sh.NamedSharding(mesh, sh.PartitionSpec("x")))
        info = lib.jit(lambda v: (v * 2, v.sum())).lower(x).compile().out_info
        return [(i.shape, repr(i.sharding.spec)) for i in info]

    assert run(funcgrad, fs) == run(jax, js)


def test_empty_mesh_shardings_are_refused_not_aborted():
    # A NamedSharding over JAX's empty concrete mesh (no devices): jit's in/out_shardings raise
    # JAX's ValueError (pjit_test test_empty_mesh_to_out_sharding), and placing a value raises
    # where XLA aborted the process.
    from jax._src import mesh as jax_mesh

    def run(lib, sh, empty):
        s = sh.NamedSharding(empty, sh.PartitionSpec())
        words = []
        for kw in ("in_shardings", "out_shardings"):
            with pytest.raises(ValueError, match="got an empty NamedSharding") as e:
                lib.jit(lambda x: x, **{kw: s})(np.ones(4, np.float32))
            words.append(str(e.value).split(":")[0])
        return words

    ours = run(funcgrad, fs, fs.Mesh(np.empty((), dtype=object), ()))
    assert ours == run(jax, js, jax_mesh.empty_concrete_mesh)
    with pytest.raises(ValueError, match="empty mesh"):
        funcgrad.device_put(np.ones(3), fs.NamedSharding(fs.Mesh(np.empty((), dtype=object), ()), fs.P()))


@pytest.mark.parametrize(
    "spec, typed", [(("x", "y"), ("x", None)), ((("x", "y"),), ("x", None)), (("y",), (None, None))]
)
def test_remove_size_one_mesh_axis_from_type(spec, typed):
    # JAX's flag jax_remove_size_one_mesh_axis_from_type: explicit axes of size 1 leave types, a
    # constraint naming them still asserts, and the result has the type's sharding
    # (pjit_test test_remove_size_one_mesh_axis, test_spmd_axis_name_explicit_mode_assert_remove_one_size).
    x = np.arange(16, dtype=np.int32).reshape(8, 2)

    def run(lib, sh, flag):
        mesh = lib.make_mesh((2, 1), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)
        P = sh.PartitionSpec
        with flag(True), lib.set_mesh(mesh):
            a = lib.device_put(x, P(*spec))
            inner = []

            @lib.jit
            def f(v):
                inner.append(tuple(lib.typeof(v).sharding.spec))
                return lib.lax.with_sharding_constraint(v * 2, P(*spec))

            out = f(a)
            g = lib.jit(lib.vmap(lambda r: r * 2, spmd_axis_name=("x", "y")))
            vm = g(lib.device_put(x, P(("x", "y"))))
            return inner, tuple(out.sharding.spec), np.asarray(out), tuple(vm.sharding.spec)

    from jax._src import config as jax_config

    from funcgrad import _config

    ours = run(funcgrad, fs, lambda on: _config._scoped("jax_remove_size_one_mesh_axis_from_type", on))
    theirs = run(jax, js, jax_config.remove_size_one_mesh_axis_from_type)
    assert ours[0] == [typed] and theirs[0] == [typed]
    assert ours[1] == theirs[1] == typed
    np.testing.assert_array_equal(ours[2], theirs[2])
    assert ours[3] == theirs[3]


def test_out_sharding_over_an_abstract_mesh_with_a_memory_kind_is_refused():
    # A type holds no memory kind: JAX's ValueError (pjit_test test_to_pinned_host_error).
    def run(lib, np_, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        s = sh.NamedSharding(mesh.abstract_mesh, sh.PartitionSpec("x"), memory_kind="pinned_host")
        with lib.set_mesh(mesh), pytest.raises(ValueError, match="sharding with memory_kind is not allowed"):
            np_.full((2,), fill_value=0, out_sharding=s)

    run(funcgrad, fnp, fs)
    run(jax, jnp, js)


def test_lowered_in_avals_are_typed_by_in_shardings():
    # JAX's Lowered/Compiled.in_avals: an argument given in_shardings over explicit axes is typed
    # by it (pjit_test test_in_aval_matches_in_sharding); the body's own trace is not.
    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        with lib.set_mesh(mesh):
            f = lib.jit(
                lambda v: v * 2, in_shardings=sh.PartitionSpec("x"), out_shardings=sh.PartitionSpec("x")
            )
            lowered = f.lower(np.arange(8, dtype=np.int32))
            return [repr(a[0][0].sharding.spec) for a in (lowered.in_avals, lowered.compile().in_avals)]

    assert run(funcgrad, fs) == run(jax, js) == ["P('x',)", "P('x',)"]


def test_repeat_inside_a_partially_manual_shard_map():
    # jnp.repeat computes in auto_axes over the axes not Manual in the body (pjit_test
    # test_manual_mode_mix_repeat_no_out_sharding); naming a Manual one is JAX's refusal.
    x = np.arange(16.0, dtype=np.float32).reshape(8, 1, 2)

    def run(lib, np_, sh):
        mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)
        with lib.set_mesh(mesh):
            a = lib.device_put(x, sh.PartitionSpec("x", None, "y"))
            body = lib.shard_map(
                lambda v: np_.repeat(v, 2, axis=1), out_specs=sh.PartitionSpec("x"), axis_names={"x"}
            )
            out = lib.jit(lambda v: body(v * 2))(a)
            return _spec(out), np.asarray(out)

    ours, theirs = run(funcgrad, fnp, fs), run(jax, jnp, js)
    assert ours[0] == theirs[0] == ("x", None, "y")
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_unconstrained_dimension_needs_an_auto_axis():
    # P.UNCONSTRAINED leaves a dimension to the partitioner: only Auto axes may take it (JAX's
    # ValueError from NamedSharding, pjit_test test_wsc_error); a mesh with one Auto axis accepts it.
    def run(lib, sh):
        explicit = lib.make_mesh((2, 1), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)
        with pytest.raises(ValueError, match="cannot contain `P.UNCONSTRAINED` when no mesh axis_types"):
            sh.NamedSharding(explicit, sh.PartitionSpec(sh.PartitionSpec.UNCONSTRAINED))
        mixed = lib.make_mesh((2, 1), ("x", "y"), axis_types=(sh.AxisType.Explicit, sh.AxisType.Auto))
        return sh.NamedSharding(mixed, sh.PartitionSpec(sh.PartitionSpec.UNCONSTRAINED)).spec[0]

    assert run(funcgrad, fs) is fs.PartitionSpec.UNCONSTRAINED
    assert run(jax, js) is js.PartitionSpec.UNCONSTRAINED


def test_an_operation_on_replicated_values_after_reduced_ones_is_replicated():
    # A reduced and a replicated operand lower to one program text; the compiled program was
    # shared, results typed by the first call's argument: `r == r` of replicated `r` came back
    # reduced after `a == a` of a reduced `a` (pjit_test test_select_reduced's second half).
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        with lib.set_mesh(mesh):
            a = lib.device_put(x, sh.PartitionSpec(reduced={"x"}))
            r = lib.device_put(x, sh.PartitionSpec())
            first = [lib.typeof(a == a).sharding.spec.reduced, lib.typeof(a * 2).sharding.spec.reduced]
            f = lib.jit(lambda p, u, v: lib.lax.select(p, u, v))
            g = lib.jit(lib.grad(lambda p, u, v: f(p, u, v).sum(), argnums=(1, 2)))
            gr = g(a == a, a, a)
            ge = g(r == r, r, r)
            return (
                first,
                [lib.typeof(r == r).sharding.spec.reduced, lib.typeof(r * 2).sharding.spec.reduced],
                [t.sharding.spec.unreduced for t in gr],
                [t.sharding.spec.unreduced for t in ge],
                [np.asarray(lib.sharding.reshard(t, sh.PartitionSpec())) for t in gr],
                [np.asarray(t) for t in ge],
            )

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[:4] == theirs[:4]
    assert ours[1] == [frozenset(), frozenset()] and ours[3] == [frozenset(), frozenset()]
    for a, b in zip(ours[4] + ours[5], theirs[4] + theirs[5], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_scalar_times_an_unreduced_cotangent_as_jax():
    # JAX reshards a scalar operand of a binary operation to reduced (insert_reduced_reshard):
    # the cotangent of `x * 2` for a reduced `x` is `ct * 2` with `ct` unreduced (funcgrad's mul
    # rule raised 'RHS should be reduced'; pjit_test test_reshard_on_scalar_reduced)
    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        with lib.set_mesh(mesh):
            arr = lib.device_put(np.arange(4.0, dtype=np.float32), sh.PartitionSpec(reduced={"x"}))
            f = lib.jit(lambda v: v * 2)
            out = lib.jit(lib.grad(lambda v: f(v).sum()))(arr)
            return (
                lib.typeof(f(arr)).sharding.spec.reduced,
                out.sharding.spec.unreduced,
                np.asarray(lib.sharding.reshard(out, sh.PartitionSpec())),
            )

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[:2] == theirs[:2] == (frozenset({"x"}), frozenset({"x"}))
    np.testing.assert_array_equal(ours[2], theirs[2])


def test_a_result_reduced_from_an_unreduced_argument_is_not_unreduced():
    # A jitted result laid out as its unreduced argument was given the argument's unreduced
    # sharding (XLA's layout does not say partial sums): unreadable, where jax's is the sum
    # (pjit_test test_unreduced_input_to_jit).
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, sh):
        P = sh.PartitionSpec
        mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Explicit,) * 2)
        with lib.set_mesh(mesh):
            a, b = lib.device_put(x, P("x", "y")), lib.device_put(x.T, P("y", None))
            out = lib.jit(
                lambda u, v: lib.numpy.einsum("xy,yz->xz", u, v, out_sharding=P("x", None, unreduced={"y"}))
            )(a, b)
            out2 = lib.jit(lambda u: lib.sharding.reshard(u + u, P("x", None)))(out)
            return out.sharding.spec, out2.sharding.spec, np.asarray(out2)

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours[0].unreduced == theirs[0].unreduced == frozenset({"y"})
    assert ours[1].unreduced == theirs[1].unreduced == frozenset()
    np.testing.assert_array_equal(ours[2], theirs[2])


def test_scan_over_reduced_xs_keeps_them_reduced():
    # A step of stacked reduced values is reduced, and so are the stacked outputs the body
    # returns reduced (funcgrad dropped both: a scan over reduced stacked weights gave a plain
    # cotangent where JAX's is unreduced, pjit_test test_scan_over_layers_minibatch_unreduced)
    def run(lib, sh):
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        seen = []
        with lib.set_mesh(mesh):
            rs = lib.device_put(
                np.arange(12.0, dtype=np.float32).reshape(3, 4), sh.PartitionSpec(reduced={"x"})
            )

            def f(rs):
                def body(c, r):
                    seen.append(lib.typeof(r).sharding.spec.reduced)
                    return c + r.sum(), r * 3

                c, ys = lib.lax.scan(body, 0.0, rs)
                seen.extend([lib.typeof(ys).sharding.spec.reduced, lib.typeof(c).sharding.spec.reduced])
                return ys, c

            ys, c = lib.jit(f)(rs)
            return seen, ys.sharding.spec.reduced, np.asarray(ys), np.asarray(c)

    ours, theirs = run(funcgrad, fs), run(jax, js)
    # (every step's type and the results', however often each library traces the body)
    assert set(ours[0]) == set(theirs[0]) == {frozenset({"x"})}
    assert ours[1] == theirs[1] == frozenset({"x"})
    np.testing.assert_array_equal(ours[2], theirs[2])
    np.testing.assert_array_equal(ours[3], theirs[3])


def test_out_sharding_over_another_mesh_than_the_one_in_scope_is_refused():
    # JAX's canonicalize_sharding: an out_sharding whose mesh is not the abstract mesh in scope
    # (here its axis types differ) raises, where funcgrad computed (pjit_test
    # test_output_different_context_error); two all-Auto meshes are let through.
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, sh):
        P, NS = sh.PartitionSpec, sh.NamedSharding
        mesh = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Explicit,))
        auto = lib.make_mesh((2,), ("x",), axis_types=(sh.AxisType.Auto,)).abstract_mesh
        with lib.set_mesh(mesh):
            a, b = lib.device_put(x, P("x", None)), lib.device_put(x.T, P(None, "x"))
            f = lib.jit(
                lambda u, v: lib.numpy.einsum("xy,yz->xz", u, v, out_sharding=NS(auto, P(None, None)))
            )
            with pytest.raises(ValueError, match="Context mesh .* should match the mesh of sharding"):
                f(a, b)
            ok = lib.jit(
                lambda u, v: lib.numpy.einsum("xy,yz->xz", u, v, out_sharding=NS(mesh, P("x", None)))
            )
            return np.asarray(ok(a, b))

    np.testing.assert_array_equal(run(funcgrad, fs), run(jax, js))
