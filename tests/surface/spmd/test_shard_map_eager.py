"""JAX 0.10's shard_map surface on 8 devices, against jax 0.10.2 (run in a subprocess,
``_jax_oracle``): keyword defaults (mesh from use_mesh/set_mesh, in_specs inferred or None for
static arguments), an un-jitted call running per device (``print`` shows each device's block in
jax's words), partially manual meshes, nested shard_maps, and errors that name the argument, the
spec and the fix."""

from __future__ import annotations

import contextlib
import functools
import io

import numpy as np
import pytest
from _jax_oracle import run_jax
from _shard_map_programs import COLLECTIVES, control, gradient, partial_manual, printing

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
X = np.arange(16.0).reshape(8, 2)

ORACLE = """
import contextlib, io, json, numpy as np, jax
from jax.sharding import PartitionSpec as P, AxisType
L = jax
X = np.arange(16.0).reshape(8, 2)
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
from _shard_map_programs import COLLECTIVES, control, gradient, partial_manual, printing
sm = lambda f, i, o, **kw: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)
out = {}
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    r = sm(printing(L), (P("x", "y"), P()), P("x"))(X[:4], 1.0)
out["print"] = [buf.getvalue(), np.asarray(r).tolist()]
for jit in (False, True):
    vals = []
    for make, i, o in COLLECTIVES:
        f = sm(make(L), P(*i), P(*o))
        vals.append(np.asarray((jax.jit(f) if jit else f)(X)).tolist())
    out[f"collectives{jit}"] = vals
out["control"] = np.asarray(sm(control(L), P("x"), P("x"))(X)).tolist()
out["grad"] = np.asarray(sm(gradient(L), (P(), P("x", "y")), P())(np.ones((2, 1)), X)).tolist()
out["static"] = np.asarray(sm(lambda a, k: a * k, (P("x"), None), P("x"))(X, 3)).tolist()
out["partial"] = np.asarray(sm(partial_manual(L), P("x"), P(), axis_names={"x"})(X)).tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_out():
    return run_jax(ORACLE)


def sm(f, in_specs, out_specs, **kw):
    return funcgrad.shard_map(f, mesh=MESH, in_specs=in_specs, out_specs=out_specs, **kw)


def test_eager_print_shows_each_devices_block(jax_out):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        got = sm(printing(funcgrad), (P("x", "y"), P()), P("x"))(X[:4], 1.0)
    want_text, want = jax_out["print"]
    np.testing.assert_allclose(got, want)
    assert buf.getvalue() == want_text
    assert want_text.startswith("On cpu:0 at mesh coordinates (x, y,) = (0, 0):\n[[0.]]\n")


@pytest.mark.parametrize("jit", [False, True])
def test_collectives_eager_and_jitted_equal_jax(jax_out, jit):
    for (make, i, o), want in zip(COLLECTIVES, jax_out[f"collectives{jit}"]):
        f = sm(make(funcgrad), P(*i), P(*o))
        np.testing.assert_allclose((funcgrad.jit(f) if jit else f)(X), want)


def test_python_control_flow_on_an_invariant_value_runs_eagerly(jax_out):
    np.testing.assert_allclose(sm(control(funcgrad), P("x"), P("x"))(X), jax_out["control"])
    with pytest.raises(funcgrad.errors.ConcretizationTypeError, match="same on every device"):
        sm(lambda a: a if a.sum() > 0 else -a, P("x"), P("x"))(X)


@pytest.mark.slow  # (each primitive of the eager body compiles: ~6 s on a loaded machine)
def test_gradients_inside_an_eager_body_are_jaxs(jax_out):
    f = sm(gradient(funcgrad), (P(), P("x", "y")), P())
    for g in (f, funcgrad.jit(f)):
        np.testing.assert_allclose(g(np.ones((2, 1)), X), jax_out["grad"])


def test_static_arguments_defaults_and_decorator(jax_out):
    np.testing.assert_allclose(sm(lambda a, k: a * k, (P("x"), None), P("x"))(X, 3), jax_out["static"])
    assert sm(lambda a: a, None, P())(3.0) == 3.0
    assert sm(lambda a: None, P("x"), None)(X) is None

    with funcgrad.sharding.use_mesh(MESH):

        @functools.partial(funcgrad.shard_map, in_specs=P("x"), out_specs=P())
        def total(a):
            return lax.psum(a.sum(), "x")

        assert float(total(X)) == X.sum()
    with pytest.raises(TypeError, match="in_specs"):  # Auto axes: in_specs cannot be inferred (as jax)
        funcgrad.shard_map(lambda a: a, mesh=MESH, out_specs=P())(X)


def test_partially_manual_and_nested(jax_out):
    f = sm(partial_manual(funcgrad), P("x"), P(), axis_names={"x"})
    for g in (f, funcgrad.jit(f)):
        np.testing.assert_allclose(g(X), jax_out["partial"])

    def outer(a, mesh=None):
        inner = funcgrad.shard_map(
            lambda b: lax.psum(b, "y"), in_specs=P(None, "y"), out_specs=P(), axis_names={"y"}, mesh=mesh
        )
        return inner(a) * 2

    # left out, the nested one's mesh is the body's, as jax 0.10.2's (eager and jit)
    nest = sm(outer, P("x"), P("x"), axis_names={"x"})
    want = X.sum(1, keepdims=True) * 2
    np.testing.assert_allclose(funcgrad.jit(nest)(X), want)
    np.testing.assert_allclose(nest(X), want)
    text = funcgrad.jit(nest).lower(X).as_text()
    assert text.count("sdy.manual_computation") == 2 and 'manual_axes={"y"}' in text
    # mesh= there is not the mesh in scope, whose 'x' is Manual: jax 0.10.2's ValueError
    nest_mesh = sm(lambda a: outer(a, MESH), P("x"), P("x"), axis_names={"x"})
    for g in (nest_mesh, funcgrad.jit(nest_mesh)):
        with pytest.raises(ValueError, match=r"The context mesh .*Manual, Auto.* should match the mesh"):
            g(X)


def test_errors_name_the_argument_the_spec_and_the_fix():
    with pytest.raises(ValueError, match=r"in_specs\[0\].*P\('z',\).*axis 'z'.*its axes: \('x', 'y'\)"):
        sm(lambda a: a, P("z"), P("z"))(X)
    with pytest.raises(ValueError, match=r"in_specs\[0\].*3 entries.*rank 2"):
        sm(lambda a: a, P("x", "y", None), P("x"))(X)
    with pytest.raises(
        ValueError,
        match=r"(?s)out_specs is P\(\) .*varying across mesh axes \{\} and not \{x\}.*check_vma=False",
    ):
        sm(lambda a: a, P("x"), P())(X)
    with pytest.raises(ValueError, match=r"in_specs must be a PartitionSpec or a pytree prefix"):
        sm(lambda a, b: a, (P("x"),), P())(X, X)
    with pytest.raises(ValueError, match=r"manual over \{'x'\} only"):
        sm(lambda a: a, P("y"), P("y"), axis_names={"x"})(X)
    with pytest.raises(ValueError, match=r"subset of the mesh's axes"):
        sm(lambda a: a, P("x"), P("x"), axis_names={"q"})(X)
    with pytest.raises(ValueError, match=r"not divisible by 4"):
        sm(lambda a: a, P("x"), P("x"))(np.ones(6))
    with pytest.raises(ValueError, match="no mesh"):
        funcgrad.shard_map(lambda a: a, in_specs=P("x"), out_specs=P("x"))(X)


def test_eager_result_sharding_and_values_stay_on_devices():
    out = sm(lambda a: a * 2, P("x", "y"), P("x", "y"))(X)
    assert out.sharding == NamedSharding(MESH, P("x", "y"))
    np.testing.assert_allclose(out, X * 2)


def test_in_specs_inferred_on_explicit_axes_and_results_typed():
    # JAX 0.10's default: make_mesh's axes are Explicit, in_specs may be left out (the arguments'
    # shardings), and a jitted shard_map's results are typed as out_specs says.
    mesh = make_mesh((2, 4), ("X", "Y"))
    with funcgrad.sharding.use_mesh(mesh):
        a = funcgrad.device_put(np.arange(8 * 16.0).reshape(8, 16), P("X", "Y"))
        total = funcgrad.shard_map(lambda y: lax.psum(y.sum(keepdims=True), ("X", "Y")), out_specs=P())
        np.testing.assert_allclose(total(a), [[np.arange(8 * 16.0).sum()]])
        np.testing.assert_allclose(funcgrad.jit(total)(a), [[np.arange(8 * 16.0).sum()]])

        def double(x):
            out = funcgrad.shard_map(lambda y: y * 2, out_specs=P("X", "Y"))(x)
            assert funcgrad.typeof(out).sharding.spec == P("X", "Y")
            return out

        out = funcgrad.jit(double)(a)
        np.testing.assert_allclose(out, np.arange(8 * 16.0).reshape(8, 16) * 2)
        assert out.sharding == NamedSharding(mesh, P("X", "Y"))


def test_debug_print_in_a_shard_map_body_prints_per_device(capfd):
    # The SPMD program hands XLA the module's host callbacks (it crashed without them).
    def body(a):
        funcgrad.debug.print("block sum {}", a.sum())
        return a

    f = sm(body, P("x"), P("x"))
    for g in (funcgrad.jit(f), f):
        np.testing.assert_allclose(g(X), X)
        funcgrad.effects_barrier()
        lines = sorted(capfd.readouterr().out.splitlines())
        want = sorted({f"block sum {X[2 * i : 2 * i + 2].sum()}" for i in range(4)})
        assert sorted(set(lines)) == want and len(lines) == 8  # each of the 8 devices prints its block's sum


def test_smap_maps_one_mesh_axis():
    # jax.smap: shard_map manual over one axis of the mesh in scope, axes given as in vmap
    with funcgrad.sharding.use_mesh(MESH):
        f = funcgrad.smap(lambda a: lax.psum(a, "x"), in_axes=0, out_axes=None, axis_name="x")
        want = X.reshape(4, 2, 2).sum(0)
        np.testing.assert_allclose(funcgrad.jit(f)(X), want)
        np.testing.assert_allclose(f(X), want)
        g = funcgrad.smap(lambda a, b: a * b, in_axes=(1, None), out_axes=1, axis_name="y")
        np.testing.assert_allclose(funcgrad.jit(g)(X, 2.0), X * 2)
    with pytest.raises(TypeError, match="one name"):
        funcgrad.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=("x", "y"))


@pytest.mark.parametrize("jit", [False, True])
def test_values_carry_their_manual_axis_type(capsys, jit):
    # JAX's shard_map tutorial: typeof(y).manual_axis_type.varying, printed as {V:...}, eagerly
    # and in a body staged under jit
    def body(a):
        print(funcgrad.typeof(a))
        assert funcgrad.typeof(a).sharding.spec == P(None, None)  # (jax: replicated, not None)
        y = lax.psum(a, "y")
        assert funcgrad.typeof(y).manual_axis_type.varying == {"x"}
        print(funcgrad.typeof(y))
        return y

    f = sm(body, P("x", "y"), P("x"))
    (funcgrad.jit(f) if jit else f)(X)
    assert capsys.readouterr().out == "float64[2,1]{V:(x,y)}\nfloat64[2,1]{V:x}\n"


def test_a_partially_manual_body_keeps_the_explicit_axes_it_leaves_automatic(capsys):
    # jax 0.10.2: the body sees f64[4,4@y]{V:x}; the result keeps its split over y (P('x', 'y'))
    mesh = make_mesh((2, 4), ("x", "y"))
    with funcgrad.sharding.use_mesh(mesh):
        x = funcgrad.device_put(np.arange(32.0).reshape(8, 4), P("x", "y"))

        def body(b):
            print(funcgrad.typeof(b))
            return b * 2 + lax.psum(b, "x")

        f = funcgrad.shard_map(body, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
        out = funcgrad.jit(f)(x)
        # in such a body: axis_index (XLA refuses partition_id there: a nested manual body), a
        # scan (its carries constrained over y), an all_gather keeping y (jax: f64[8,4@y])
        index = funcgrad.shard_map(
            lambda b: b * lax.axis_index("x"), in_specs=P("x"), out_specs=P("x"), axis_names={"x"}
        )
        scanned = funcgrad.shard_map(
            lambda b: lax.scan(lambda c, r: (c + r, c * r), fnp.zeros_like(b[0]), b)[1],
            in_specs=P("x"),
            out_specs=P("x"),
            axis_names={"x"},
        )
        gathered = funcgrad.shard_map(
            lambda b: lax.all_gather(b, "x", tiled=True),
            in_specs=P("x"),
            out_specs=P(),
            axis_names={"x"},
            check_vma=False,
        )
        got = [funcgrad.jit(g)(x) for g in (index, scanned, gathered)]
    assert capsys.readouterr().out == "float64[4,4@y]{V:x}\n"
    assert out.sharding.spec == P("x", "y")
    xs = np.arange(32.0).reshape(8, 4)
    np.testing.assert_allclose(out, xs * 2 + np.tile(xs[:4] + xs[4:], (2, 1)))
    np.testing.assert_allclose(got[0], xs * np.repeat([0, 1], 4)[:, None])
    blocks = [xs[:4], xs[4:]]
    want = [np.stack([b[:i].sum(0) * b[i] for i in range(4)]) for b in blocks]
    np.testing.assert_allclose(got[1], np.concatenate(want))
    np.testing.assert_allclose(got[2], xs)
    assert str(funcgrad.typeof(got[2])) == "float64[8,4@y]"


def test_an_argument_typed_over_the_mesh_must_match_its_in_specs():
    # JAX 0.10 (Explicit axes, fully manual): shard_map does not reshard an argument silently
    mesh = make_mesh((2, 4), ("X", "Y"))
    with funcgrad.sharding.use_mesh(mesh):
        a = funcgrad.device_put(np.arange(8 * 16.0).reshape(8, 16), P("X", "Y"))
        w = funcgrad.device_put(np.ones(16), P("Y"))
        f = funcgrad.shard_map(lambda y: y, in_specs=P("Y", "X"), out_specs=P("Y", "X"))
        for g in (f, funcgrad.jit(f)):
            with pytest.raises(
                ValueError, match=r"in_specs passed to shard_map: P\('Y', 'X'\) does not match"
            ):
                g(a)
        # a value typed over the mesh's Explicit axes, closed over by a body, is JAX's refusal
        # (eagerly and under jit; jax 0.10.2 raises the same); as an argument it is taken
        h = funcgrad.shard_map(lambda y: y * w.sum(), in_specs=P("X", "Y"), out_specs=P("X", "Y"))
        for g in (h, funcgrad.jit(h)):
            with pytest.raises(
                NotImplementedError, match="^Closing over inputs to shard_map where the input"
            ):
                g(a)
        h = funcgrad.shard_map(
            lambda y, v: y * lax.psum(v.sum(), "Y"), in_specs=(P("X", "Y"), P("Y")), out_specs=P("X", "Y")
        )
        np.testing.assert_allclose(h(a, w), np.arange(8 * 16.0).reshape(8, 16) * 16)
        # a value made inside an eager body is no closed-over value (JAX's context mesh there is
        # the body's, its axes Manual): used as it is
        h = funcgrad.shard_map(lambda y: y * fnp.ones(4).sum(), in_specs=P("X", "Y"), out_specs=P("X", "Y"))
        with funcgrad.sharding.set_mesh(mesh):  # (which places values made outside bodies)
            np.testing.assert_allclose(h(a), np.arange(8 * 16.0).reshape(8, 16) * 4)
        # jax 0.10.2: an eager call's result reports out_specs as written, a jitted one its type's
        total = funcgrad.shard_map(lambda y: lax.psum(y, ("X", "Y")), in_specs=P("X", "Y"), out_specs=P())
        assert total(a).sharding.spec == P() and funcgrad.jit(total)(a).sharding.spec == P(None, None)


def test_pcast_and_pvary_mark_an_eager_value_varying(capsys):
    def body(a):
        y = lax.pcast(a, "x", to="varying")
        z = lax.pvary(a, ("x", "y"))
        print(funcgrad.typeof(a), funcgrad.typeof(y), funcgrad.typeof(z))
        return y

    out = sm(body, P(), P("x"))(np.ones(2))
    assert capsys.readouterr().out == "float64[2] float64[2]{V:x} float64[2]{V:(x,y)}\n"
    np.testing.assert_allclose(out, np.ones(8))


def test_a_value_whose_copies_differ_reads_its_first_copy_as_jax():
    # With check_vma=False, out_specs P('y', None) leaves out 'x', along which the body's value
    # varies: the result's copies over 'x' differ, and JAX reads the first (replica 0, the x = 0
    # devices), on the host as in a jitted reduction. funcgrad's host read let the last copy win:
    # np.asarray(y) summed to 0.642 where jnp.sum(y) and jax gave 0.195.
    mesh = make_mesh((2, 4), ("x", "y"), (AxisType.Auto,) * 2)
    body = funcgrad.shard_map(
        lambda a: fnp.sinh(fnp.deg2rad(a)),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P("y", None),
        check_vma=False,
    )
    a = np.arange(16.0).reshape(8, 2) / 10
    want = np.tile(np.sinh(np.deg2rad(a[:4])), (4, 1))  # (the x = 0 block, once per 'y' device)
    for y in (body(a), funcgrad.jit(body)(a)):
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-15)
        np.testing.assert_allclose(float(fnp.sum(y)), want.sum(), rtol=1e-14)
