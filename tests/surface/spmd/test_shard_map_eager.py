"""JAX 0.10's shard_map surface on 8 devices, against jax as the oracle: keyword defaults
(mesh from use_mesh/set_mesh, in_specs inferred or None for static arguments), an un-jitted call
running per device (``print`` shows each device's block in jax's words), partially manual meshes,
nested shard_maps, and errors that name the argument, the spec and the fix."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import lax
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
JMESH = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
JP = jax.sharding.PartitionSpec
X = np.arange(16.0).reshape(8, 2)


def both(body_fg, body_jax, in_specs, out_specs, *args, jit=False, **kw):
    """The same shard_map in funcgrad and in jax, on ``args``."""
    f = funcgrad.shard_map(body_fg, mesh=MESH, in_specs=in_specs, out_specs=out_specs, **kw)
    jspec = lambda s: JP(*s) if isinstance(s, P) else s  # noqa: E731
    jin = jax.tree_util.tree_map(jspec, in_specs, is_leaf=lambda s: isinstance(s, P))
    jout = jax.tree_util.tree_map(jspec, out_specs, is_leaf=lambda s: isinstance(s, P))
    g = jax.shard_map(body_jax, mesh=JMESH, in_specs=jin, out_specs=jout, **kw)
    if jit:
        f, g = funcgrad.jit(f), jax.jit(g)
    return f(*args), g(*args)


def test_eager_print_shows_each_devices_block(capsys):
    def body(lib):
        def f(a, b):
            print(a)
            return lib.lax.psum(a + b, "y")

        return f

    got, want = both(body(funcgrad), body(jax), (P("x", "y"), P()), P("x"), X[:4], 1.0)
    printed = capsys.readouterr().out
    np.testing.assert_allclose(got, want)
    fg_part, jax_part = printed[: len(printed) // 2], printed[len(printed) // 2 :]
    assert fg_part == jax_part
    assert fg_part.startswith("On cpu:0 at mesh coordinates (x, y,) = (0, 0):\n[[0.]]\n")


@pytest.mark.parametrize("jit", [False, True])
def test_collectives_eager_and_jitted_equal_jax(jit):
    perm = [(i, (i + 1) % 4) for i in range(4)]
    cases = [
        (lambda L: lambda a: L.lax.all_gather(a, "x", tiled=True), P("x"), P("x")),
        (lambda L: lambda a: L.lax.ppermute(a, "x", perm), P("x"), P("x")),
        (lambda L: lambda a: a + L.lax.axis_index("x"), P("x"), P("x")),
        (lambda L: lambda a: L.lax.psum_scatter(a, "x", tiled=True), P(), P("x")),
        (lambda L: lambda a: L.lax.pmax(a, ("x", "y")), P("x", "y"), P()),
        (lambda L: lambda a: L.lax.pmean(a.sum(0, keepdims=True), "x"), P("x"), P()),
    ]
    for make, i, o in cases:
        got, want = both(make(funcgrad), make(jax), i, o, X, jit=jit)
        np.testing.assert_allclose(got, want)


def test_python_control_flow_on_an_invariant_value_runs_eagerly():
    def body(L):
        return lambda a: a * 2 if L.lax.psum(1, "x") == 4 else a

    got, want = both(body(funcgrad), body(jax), P("x"), P("x"), X)
    np.testing.assert_allclose(got, want)
    with pytest.raises(funcgrad.errors.ConcretizationTypeError, match="same on every device"):
        funcgrad.shard_map(lambda a: a if a.sum() > 0 else -a, mesh=MESH, in_specs=P("x"), out_specs=P("x"))(
            X
        )


@pytest.mark.slow  # (each primitive of the eager body compiles: ~6 s on a loaded machine)
def test_gradients_inside_an_eager_body_are_jaxs():
    def body(L):
        def g(w, a):
            return L.grad(lambda w: L.lax.pmean(L.numpy.sum(a * w), ("x", "y")))(w)

        return g

    w = np.ones((2, 1))
    for jit in (False, True):
        got, want = both(body(funcgrad), body(jax), (P(), P("x", "y")), P(), w, X, jit=jit)
        np.testing.assert_allclose(got, want)


def test_static_arguments_defaults_and_decorator():
    got, want = both(lambda a, k: a * k, lambda a, k: a * k, (P("x"), None), P("x"), X, 3)
    np.testing.assert_allclose(got, want)
    assert funcgrad.shard_map(lambda a: a, mesh=MESH, in_specs=None, out_specs=P())(3.0) == 3.0
    assert funcgrad.shard_map(lambda a: None, mesh=MESH, in_specs=P("x"), out_specs=None)(X) is None

    with funcgrad.sharding.use_mesh(MESH):

        @functools.partial(funcgrad.shard_map, in_specs=P("x"), out_specs=P())
        def total(a):
            return lax.psum(a.sum(), "x")

        assert float(total(X)) == X.sum()
    with pytest.raises(TypeError, match="in_specs"):  # Auto axes: in_specs cannot be inferred (as jax)
        funcgrad.shard_map(lambda a: a, mesh=MESH, out_specs=P())(X)


def test_partially_manual_and_nested():
    def partial_body(L):
        return lambda a: L.lax.psum(a, "x")

    for jit in (False, True):
        got, want = both(partial_body(funcgrad), partial_body(jax), P("x"), P(), X, axis_names={"x"}, jit=jit)
        np.testing.assert_allclose(got, want)

    def outer(a):
        inner = funcgrad.shard_map(
            lambda b: lax.psum(b, "y"), in_specs=P(None, "y"), out_specs=P(), axis_names={"y"}, mesh=MESH
        )
        return inner(a) * 2

    nest = funcgrad.shard_map(outer, mesh=MESH, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
    want = X.sum(1, keepdims=True) * 2
    np.testing.assert_allclose(funcgrad.jit(nest)(X), want)
    np.testing.assert_allclose(nest(X), want)
    text = funcgrad.jit(nest).lower(X).as_text()
    assert text.count("sdy.manual_computation") == 2 and 'manual_axes={"y"}' in text


def test_errors_name_the_argument_the_spec_and_the_fix():
    sm = functools.partial(funcgrad.shard_map, mesh=MESH)
    with pytest.raises(ValueError, match=r"in_specs\[0\].*P\('z',\).*axis 'z'.*its axes: \('x', 'y'\)"):
        sm(lambda a: a, in_specs=P("z"), out_specs=P("z"))(X)
    with pytest.raises(ValueError, match=r"in_specs\[0\].*3 entries.*rank 2"):
        sm(lambda a: a, in_specs=P("x", "y", None), out_specs=P("x"))(X)
    with pytest.raises(ValueError, match=r"out_specs P\(\).*mesh axes \['x'\].*check_vma=False"):
        sm(lambda a: a, in_specs=P("x"), out_specs=P())(X)
    with pytest.raises(ValueError, match=r"in_specs must be a PartitionSpec or a pytree prefix"):
        sm(lambda a, b: a, in_specs=(P("x"),), out_specs=P())(X, X)
    with pytest.raises(ValueError, match=r"manual over \{'x'\} only"):
        sm(lambda a: a, in_specs=P("y"), out_specs=P("y"), axis_names={"x"})(X)
    with pytest.raises(ValueError, match=r"subset of the mesh's axes"):
        sm(lambda a: a, in_specs=P("x"), out_specs=P("x"), axis_names={"q"})(X)
    with pytest.raises(ValueError, match=r"not divisible by 4"):
        sm(lambda a: a, in_specs=P("x"), out_specs=P("x"))(np.ones(6))
    with pytest.raises(ValueError, match="no mesh"):
        funcgrad.shard_map(lambda a: a, in_specs=P("x"), out_specs=P("x"))(X)


def test_eager_result_sharding_and_values_stay_on_devices():
    out = funcgrad.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"))(X)
    assert out.sharding == NamedSharding(MESH, P("x", "y"))
    np.testing.assert_allclose(out, X * 2)
