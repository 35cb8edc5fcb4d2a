"""``shard_map(mesh=mesh.abstract_mesh)`` and every abstract value's ``mat`` (JAX's
``manual_axis_type``) on 8 CPU devices, with jax 0.10.2 as the oracle in the same process."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
js = jax.sharding


def _run(lib, sh, shard_map):
    mesh = sh.Mesh(np.array(lib.devices()[:4]).reshape(2, 2), ("x", "y"))
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    arr = lib.device_put(x, sh.NamedSharding(mesh, sh.PartitionSpec("x", "y")))
    f = lambda v: shard_map(
        lambda b: b * 2,
        mesh=mesh.abstract_mesh,
        in_specs=sh.PartitionSpec("x"),  # noqa: E731
        out_specs=sh.PartitionSpec("x"),
    )(v)
    outs = [f(arr), lib.jit(f)(arr)]
    errors = []
    for bad in (
        x,
        lib.device_put(
            x, sh.NamedSharding(sh.Mesh(np.array(lib.devices()[:2]), ("z",)), sh.PartitionSpec("z"))
        ),
    ):
        with pytest.raises(ValueError) as e:
            f(bad)
        errors.append(str(e.value))
    mat = lib.typeof(arr).mat
    return outs, errors, (mat.varying, mat.unreduced, mat.reduced)


def test_shard_map_over_an_abstract_mesh_as_jax():
    ours = _run(funcgrad, fs, funcgrad.shard_map)
    theirs = _run(jax, js, jax.shard_map)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert tuple(a.sharding.spec) == tuple(b.sharding.spec)
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2] == (frozenset(),) * 3


def test_pcast_refuses_a_set_of_names_as_jax():
    words = []
    for lib, sh, shard_map in ((funcgrad, fs, funcgrad.shard_map), (jax, js, jax.shard_map)):
        mesh = sh.Mesh(np.array(lib.devices()[:2]), ("x",))

        def f(x, lib=lib):
            with pytest.raises(TypeError) as e:
                lib.lax.pcast(x, {"x"}, to="varying")
            words.append(str(e.value))
            return x

        shard_map(f, mesh=mesh, in_specs=sh.PartitionSpec(), out_specs=sh.PartitionSpec())(np.arange(8.0))
    assert words[0] == words[-1]


def test_a_spec_longer_than_a_scalar_is_refused_in_jax_words():
    words = []
    for lib, sh, shard_map in ((funcgrad, fs, funcgrad.shard_map), (jax, js, jax.shard_map)):
        mesh = sh.Mesh(np.array(lib.devices()[:2]), ("x",))
        with pytest.raises(ValueError) as e:
            shard_map(lambda v: v, mesh=mesh, in_specs=sh.PartitionSpec(None), out_specs=sh.PartitionSpec())(
                3.0
            )
        words.append(str(e.value).split("has shape")[-1].replace("float64", "float32"))
    assert words[0].startswith(words[1])  # (JAX's words, then funcgrad's hint)


def test_smap_without_in_axes_over_an_auto_axis_is_refused_in_jax_words():
    for lib, sh in ((funcgrad, fs), (jax, js)):
        mesh = sh.Mesh(np.array(lib.devices()[:2]), ("x",), axis_types=(sh.AxisType.Auto,))
        with sh.set_mesh(mesh) if lib is funcgrad else jax.set_mesh(mesh):
            with pytest.raises(TypeError, match="in_axes was not specified when axis_name=frozenset"):
                lib.smap(lambda v: v * 2, out_axes=0, axis_name="x")(np.arange(4.0))


def test_specs_that_are_no_prefix_of_the_arguments_are_refused_in_jax_words():
    words = []
    for lib, sh in ((funcgrad, fs), (jax, js)):
        mesh = sh.Mesh(np.array(lib.devices()[:4]).reshape(2, 2), ("x", "y"))
        f = lib.shard_map(
            lambda v: v,
            mesh=mesh,
            in_specs=([sh.PartitionSpec("x", "y")],),
            out_specs=sh.PartitionSpec("x", "y"),
        )
        x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
        with pytest.raises(ValueError) as e:
            f([x, x])
        words.append(str(e.value))
    assert words[0].startswith(words[1])  # (JAX's words, then funcgrad's)


def test_out_sharding_as_a_bare_spec_without_a_mesh_is_refused_in_jax_words():
    for lib, sh in ((funcgrad, fs), (jax, js)):
        x = np.ones((8, 2), np.float32)
        with pytest.raises(ValueError, match="Using PartitionSpec when you are not under a mesh context"):
            lib.numpy.einsum("xy,yz->xz", x, x.T, out_sharding=sh.PartitionSpec("x", None))


def _vma_record(lib, P):
    # (what JAX's shard_map tests read inside bodies: the abstract mesh's manual/auto axes and
    # types, and the manual axes each staged value varies along, also inside a jit in the body)
    mesh = lib.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(lib.sharding.AxisType.Explicit,) * 3)
    arr = lib.device_put(
        np.arange(32.0, dtype=np.float32).reshape(4, 8), lib.sharding.NamedSharding(mesh, P("x"))
    )
    seen = []

    def note(tag, *values):
        am = lib.sharding.get_abstract_mesh()
        vma = [sorted(lib.typeof(v).mat.varying) for v in values] + [
            sorted(v.aval.mat.varying) for v in values
        ]
        seen.append(
            (tag, am.manual_axes, am.auto_axes, am.explicit_axes, tuple(map(str, am.axis_types)), vma)
        )

    def g(x):
        out = lib.jit(lambda v: v * 2)(x)
        note("inner", x, out, lib.lax.axis_index("y") + 0 * x[0, 0], lib.lax.psum(x, "y"))
        return out

    def h(x):
        note("outer", x, x * x, lib.lax.pmax(x, "x"))
        return lib.shard_map(g, in_specs=P(None, "y"), out_specs=P(None, "y"), axis_names={"y"})(x)

    f = lib.shard_map(h, in_specs=P("x", None), out_specs=P("x", None), axis_names={"x"})
    with lib.set_mesh(mesh):
        out = lib.jit(f)(arr)
    return seen, np.asarray(out)


def test_manual_axes_and_varying_axes_in_staged_bodies_as_jax():
    # (get_abstract_mesh() inside a body showed the manual axes as Explicit, and a staged
    # value's .vma / .aval.mat.varying were empty under jit: NOTE: [varying axes in staged types])
    ours, theirs = _vma_record(funcgrad, fs.P), _vma_record(jax, js.PartitionSpec)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("out_spec, axis_names", [(("x", None), {"x"}), ((None, "y"), {"y"})])
def test_partially_manual_eager_body_keeps_the_automatic_axes_as_jax(out_spec, axis_names):
    # (an eager body's blocks showed no '@y' and its results lost it: f32[8@x,2] where the
    # jitted shard_map and jax give f32[8@x,2@y])
    def run(lib, P):
        mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(lib.sharding.AxisType.Explicit,) * 2)
        seen = []
        f = lib.shard_map(
            lambda x: seen.append(str(lib.typeof(x))) or x * 2, out_specs=P(*out_spec), axis_names=axis_names
        )
        with lib.set_mesh(mesh):
            arr = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), P("x", "y"))
            outs = [f(arr), lib.jit(f)(arr)]
        return seen, [(str(lib.typeof(o)), tuple(o.sharding.spec)) for o in outs], np.asarray(outs[0])

    ours, theirs = run(funcgrad, fs.P), run(jax, js.PartitionSpec)
    assert ours[:2] == theirs[:2]
    np.testing.assert_array_equal(ours[2], theirs[2])


def test_eager_cond_and_scan_refuse_results_varying_differently_as_jax():
    # (JAX's 'pvary' TypeErrors of an eager checked body, with the pcast that fixes each; the
    # fixed programs compute. funcgrad computed both.)
    def run(lib, P):
        mesh = lib.make_mesh((1, 1), ("i", "j"), axis_types=(lib.sharding.AxisType.Auto,) * 2)
        x = np.arange(3.0, dtype=np.float32)

        def branches(x, y):
            return lib.lax.cond(True, lambda x, y: x, lambda x, y: y, x, y)

        def swapped(x, y, fix):
            y = lib.lax.pcast(y, "i", to="varying") if fix else y
            return lib.lax.scan(lambda c, _: ((c[1], c[0]), ()), (x, y), (), length=2)[0]

        with pytest.raises(
            TypeError, match=r"applying `jax.lax.pcast\(..., \('j',\).*to the output of true_fun"
        ):
            lib.shard_map(branches, mesh=mesh, in_specs=(P("i"), P("j")), out_specs=P(("i", "j")))(x, x)
        with pytest.raises(TypeError, match=r"pcast\(..., \('i',\).*to the initial carry"):
            lib.shard_map(
                lambda x, y: swapped(x, y, False), mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i")
            )(x, x)
        # (a pcast inside a branch is not in the branch's staged types: not refused)
        cast = lib.shard_map(
            lambda x, y: lib.lax.cond(
                True,
                lambda x, y: lib.lax.pcast(x, "j", to="varying"),
                lambda x, y: lib.lax.pcast(y, "i", to="varying"),
                x,
                y,
            ),
            mesh=mesh,
            in_specs=(P("i"), P("j")),
            out_specs=P(("i", "j")),
        )(x, x + 2)
        fixed = lib.shard_map(
            lambda x, y: swapped(x, y, True), mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i")
        )
        return [*fixed(x, x + 1), cast]

    for a, b in zip(run(funcgrad, fs.P), run(jax, js.PartitionSpec)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_pcast_to_varying_outside_shard_map_is_refused_as_jax():
    # (JAX's pvary primitive has no eager impl: eagerly outside every transformation its
    # ValueError, funcgrad's was a NameError; traced with no name bound, the NameError)
    def refusals(lib):
        x = np.arange(4.0, dtype=np.float32)
        with pytest.raises(ValueError, match="pvary should be called under jax.shard_map"):
            lib.lax.pcast(x, "x", to="varying")
        with pytest.raises(NameError, match="Found an unbound axis name: x"):
            lib.jit(lambda v: lib.lax.pcast(v, "x", to="varying"))(x)

    refusals(funcgrad)
    refusals(jax)


def test_an_empty_mesh_is_refused_in_jax_words():
    # (shard_map_test's test_shmap_empty_mesh_error: JAX's empty_concrete_mesh)
    for lib, sh in ((funcgrad, fs), (jax, js)):
        mesh = sh.Mesh(np.empty((), dtype=object), ())
        f = lib.shard_map(
            lambda v: v, mesh=mesh, in_specs=sh.PartitionSpec("x"), out_specs=sh.PartitionSpec("x")
        )
        with pytest.raises(ValueError, match=r"^shard_map requires a non-empty mesh\. Got "):
            f(np.arange(8.0))


def test_all_gather_to_invarying_is_invariant_and_differentiates_as_jax():
    # (JAX's all_gather_invariant: shard_map_test's test_all_gather_invariant_basic)
    def run(lib, sh):
        P = sh.PartitionSpec
        mesh = sh.Mesh(np.array(lib.devices()[:4]), ("x",), axis_types=(sh.AxisType.Auto,))
        seen = []

        def body(a):
            out = lib.lax.all_gather(a, "x", tiled=True, to="invarying")
            seen.append(out.aval.mat.varying)
            return out

        f = lib.jit(lib.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P()))
        x = np.arange(8.0, dtype=np.float32)
        g = lib.jit(lib.grad(lambda v: (f(v) ** 2).sum()))(x)
        with pytest.raises(ValueError, match="Got unexpected `to` value for `jax.lax.all_gather`"):
            lib.lax.all_gather(x, "x", to="bad")
        return np.asarray(f(x)).tolist(), np.asarray(g).tolist(), str(g.sharding.spec), seen[0]

    ours, theirs = run(funcgrad, fs), run(jax, js)
    assert ours == theirs and ours[3] == frozenset()


def test_unreduced_specs_outside_a_fully_manual_explicit_shard_map_are_refused_in_jax_words():
    # (shard_map_test's test_shmap_auto_unreduced_error)
    words = []
    for lib, sh in ((funcgrad, fs), (jax, js)):
        P = sh.PartitionSpec
        mesh = sh.Mesh(
            np.array(lib.devices()[:2]).reshape(2, 1), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2
        )
        for kw in (
            dict(in_specs=P(unreduced={"x"}), out_specs=P()),
            dict(in_specs=P(unreduced={"x"}), out_specs=P(), axis_names={"x"}),
            dict(in_specs=P(), out_specs=P(reduced={"x"})),
        ):
            with pytest.raises((ValueError, NotImplementedError)) as e:
                lib.shard_map(lambda v: v, mesh=mesh, **kw)(np.arange(8.0))
            words.append((type(e.value).__name__, str(e.value).split(". Got mesh")[0]))
    assert words[:3] == words[3:]


def test_device_put_to_a_device_in_an_eager_body_is_refused_as_jax():
    # (shard_map_test's test_device_put: under jit the placement is ignored)
    for lib, sh in ((funcgrad, fs), (jax, js)):
        P = sh.PartitionSpec
        mesh = sh.Mesh(np.array(lib.devices()[:4]), ("i",), axis_types=(sh.AxisType.Auto,))
        x = np.arange(32.0, dtype=np.float32)
        g = lib.shard_map(
            lambda v, lib=lib: v + lib.device_put(1, lib.devices()[0]),
            mesh=mesh,
            in_specs=P("i"),
            out_specs=P("i"),
        )
        with pytest.raises(ValueError, match="^device_put with explicit device not allowed within shard_map"):
            g(x)
        np.testing.assert_array_equal(lib.jit(g)(x), x + 1)


def test_a_ref_made_in_an_eager_body_is_refused_as_jax():
    # (shard_map_test's test_eager_shmap_new_ref: a jitted body may make one)
    for lib, sh in ((funcgrad, fs), (jax, js)):
        P = sh.PartitionSpec
        mesh = sh.Mesh(np.array(lib.devices()[:2]), ("x",))
        x = np.arange(8)

        def f(v, lib=lib):
            return lib.freeze(lib.new_ref(v))

        with pytest.raises(ValueError, match=r"^Eager shard_map cannot return a `jax.Ref`"):
            lib.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)
        out = lib.shard_map(lib.jit(f), mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)
        np.testing.assert_array_equal(out, x)


def test_custom_partitioning_in_a_fully_manual_body_calls_the_function_as_jax():
    # (shard_map_test's test_custom_partitioning: its rule 'i -> i' for a matrix is never read
    # there, as nothing partitions the call)
    def run(lib, sh, cp):
        P = sh.PartitionSpec
        mesh = sh.Mesh(
            np.array(lib.devices()[:4]).reshape(2, 2), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2
        )
        f = cp.custom_partitioning(lambda x: x * 2)
        f.def_partition(
            infer_sharding_from_operands=lambda m, a, r: a[0].sharding,
            partition=lambda m, a, r: (m, lambda x: x, a[0].sharding, (a[0].sharding,)),
            propagate_user_sharding=lambda m, u: u.sharding,
            sharding_rule="i -> i",
        )
        body = lib.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"), check_vma=False)
        return np.asarray(lib.jit(body)(np.arange(16.0, dtype=np.float32).reshape(4, 4))).tolist()

    import jax.experimental.custom_partitioning as jcp

    import funcgrad.experimental.custom_partitioning as fcp

    assert run(funcgrad, fs, fcp) == run(jax, js, jcp)
