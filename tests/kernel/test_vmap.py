"""Kernel: vmap against Python loops, nested vmap, per-sample gradients, and the composition
matrix of grad/jvp/vjp/vmap to depth 3."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _checks import assert_close, typecheck
from hypothesis import given
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import tree_util as tu


def loop_vmap(f, in_axes, args):
    """The reference: call ``f`` on each slice and stack."""
    sizes = {np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None}
    (n,) = sizes
    outs = []
    for i in range(n):
        sliced = [a if ax is None else np.take(np.asarray(a), i, axis=ax) for a, ax in zip(args, in_axes)]
        outs.append(tu.tree_map(np.asarray, f(*sliced)))
    return tu.tree_map(lambda *xs: np.stack(xs), *outs)


FUNS = {
    "elementwise": (lambda x, y: fnp.sin(x) * y + 1.0, [(3,), (3,)]),
    "matvec": (lambda a, x: a @ x, [(2, 3), (3,)]),
    "matmul": (lambda a, b: fnp.tanh(a @ b), [(2, 3), (3, 4)]),
    "reduce": (lambda x, y: (x * y).sum(axis=0) + x.max(axis=1).sum(), [(3, 2), (3, 2)]),
    "transpose": (lambda x, y: fnp.transpose(x) * y.sum(), [(2, 3), (4,)]),
    "broadcast": (lambda x, y: fnp.expand_dims(x, 0) + fnp.reshape(y, (2, 1)), [(3,), (2,)]),
}


@pytest.mark.parametrize("name", sorted(FUNS))
def test_vmap_matches_loop_for_every_in_axes(name, rng):
    f, shapes = FUNS[name]
    base = [rng.standard_normal(s) for s in shapes]
    for axes in itertools.product(*[[None, 0, -1] for _ in shapes]):
        if all(a is None for a in axes):
            continue
        args = [
            b if a is None else np.stack([b * (k + 1) for k in range(4)], axis=a) for b, a in zip(base, axes)
        ]
        expected = loop_vmap(f, [None if a is None else a % np.ndim(x) for a, x in zip(axes, args)], args)
        got = funcgrad.vmap(f, in_axes=axes)(*args)
        assert_close(got, expected, rtol=1e-12, atol=1e-12, err_msg=f"in_axes={axes}")


def test_out_axes_and_nested_vmap(rng):
    x = rng.standard_normal((4, 5, 3))
    f = lambda v: fnp.sin(v) * v.sum()
    got = funcgrad.vmap(funcgrad.vmap(f))(x)
    expected = np.stack([np.stack([np.sin(v) * v.sum() for v in row]) for row in x])
    assert_close(got, expected)
    got_t = funcgrad.vmap(f, out_axes=1)(x[0])
    assert_close(got_t, np.stack([np.sin(v) * v.sum() for v in x[0]], axis=1))
    inner_axis1 = funcgrad.vmap(funcgrad.vmap(f, in_axes=1), in_axes=0)(x)
    assert_close(
        inner_axis1,
        np.stack([np.stack([np.sin(x[i, :, j]) * x[i, :, j].sum() for j in range(3)]) for i in range(4)]),
    )


def test_vmap_pytrees_and_none_axes(rng):
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((5, 3))
    f = lambda p, x: fnp.tanh(x @ p["w"] + p["b"])
    got = funcgrad.vmap(f, in_axes=(None, 0))(params, xs)
    assert_close(got, np.tanh(xs @ params["w"] + params["b"]))
    got2 = funcgrad.vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    assert_close(got2, got)
    f2 = lambda x: {"a": x, "b": (x * 2, 3.0 * fnp.ones(()))}
    out = funcgrad.vmap(f2)(xs)
    assert out["a"].shape == (5, 3) and out["b"][0].shape == (5, 3) and out["b"][1].shape == (5,)
    out = funcgrad.vmap(f2, out_axes={"a": 0, "b": (1, None)})(xs)
    assert out["b"][0].shape == (3, 5) and out["b"][1].shape == ()
    assert_close(out["b"][0], 2 * xs.T)


def test_axis_size_with_no_mapped_inputs():
    out = funcgrad.vmap(lambda x: x * 2.0, in_axes=None, axis_size=3)(fnp.ones(2))
    assert out.shape == (3, 2)


def test_unmapped_leaves_reach_the_function_as_given():
    # blackjax's resampling: vmap(jit(f, static_argnums=2), in_axes=[0, None, None])(keys, w, 100);
    # the unmapped 100 stays a hashable Python int (JAX passes unmapped leaves as given).
    jax = pytest.importorskip("jax")
    seen = []

    def f(x, w, n):
        seen.append(type(n))
        return x * w.sum() + n

    xs, w = np.arange(3.0), np.ones(4)
    got = funcgrad.vmap(funcgrad.jit(f, static_argnums=(2,)), in_axes=[0, None, None])(xs, w, 100)
    want = jax.vmap(jax.jit(f, static_argnums=(2,)), in_axes=[0, None, None])(xs, w, 100)
    assert_close(got, want)
    assert seen == [int, int]  # (one trace each)
    got = funcgrad.vmap(lambda x, s: x * s, in_axes=(0, None))(np.arange(3, dtype=np.float32), 2.5)
    assert got.dtype == np.float32  # the unmapped Python float stays weak


def loss_single(params, x, y):
    pred = fnp.tanh(x @ params["w"]) @ params["v"]
    return ((pred - y) ** 2).sum()


def test_per_sample_gradients_match_loop(rng):
    params = {"w": rng.standard_normal((4, 6)), "v": rng.standard_normal((6, 2))}
    xs, ys = rng.standard_normal((7, 4)), rng.standard_normal((7, 2))
    got = funcgrad.vmap(funcgrad.grad(loss_single), in_axes=(None, 0, 0))(params, xs, ys)
    for i in range(7):
        gi = funcgrad.grad(loss_single)(params, xs[i], ys[i])
        assert_close(tu.tree_map(lambda g, i=i: g[i], got), gi, rtol=1e-10, atol=1e-12)
    mean_grad = funcgrad.grad(
        lambda p: fnp.mean(funcgrad.vmap(loss_single, in_axes=(None, 0, 0))(p, xs, ys))
    )(params)
    assert_close(tu.tree_map(lambda g: g.mean(axis=0), got), mean_grad, rtol=1e-10, atol=1e-12)


# The composition matrix: each transformation composed with each other to depth 3 agrees with the
# unnested computation of the same mathematical object.


def _apply(kind, f):
    """Transform a scalar->scalar function (applied elementwise to a vector) so the result is a
    function of the same type."""
    if kind == "grad":
        return lambda x: funcgrad.grad(lambda s: f(s))(x)
    if kind == "jvp":
        return lambda x: funcgrad.jvp(f, (x,), (fnp.ones_like(x) if hasattr(x, "shape") else 1.0,))[1]
    if kind == "vjp":
        return lambda x: funcgrad.vjp(f, x)[1](fnp.ones_like(f(x)))[0]
    if kind == "vmap":
        return lambda x: funcgrad.vmap(f)(fnp.reshape(x, (1,)))[0]
    raise ValueError(kind)


def _reference(kinds, x0):
    """Derivative order = number of differentiating transformations; f = sin*exp has a closed
    form for every order: d^n [e^x sin x] = 2^(n/2) e^x sin(x + n pi/4)."""
    n = sum(k != "vmap" for k in kinds)
    return 2 ** (n / 2) * np.exp(x0) * np.sin(x0 + n * np.pi / 4)


@pytest.mark.parametrize("kinds", list(itertools.product(["grad", "jvp", "vjp", "vmap"], repeat=3)))
def test_composition_matrix_depth_3(kinds):
    f = lambda x: fnp.sin(x) * fnp.exp(x)
    g = f
    for k in kinds:
        g = _apply(k, g)
    x0 = 0.3
    np.testing.assert_allclose(float(g(fnp.asarray(x0))), _reference(kinds, x0), rtol=1e-10)


@given(st.integers(1, 4), st.integers(1, 4))
def test_vmap_of_jacobian_shapes(n, b):
    rng = np.random.default_rng(n + 7 * b)
    a = rng.standard_normal((n, n))
    xs = rng.standard_normal((b, n))
    f = lambda x: fnp.tanh(a @ x)
    jac = funcgrad.vmap(funcgrad.jacfwd(f))(xs)
    jac_r = funcgrad.vmap(funcgrad.jacrev(f))(xs)
    assert jac.shape == (b, n, n)
    assert_close(jac, jac_r, rtol=1e-10, atol=1e-12)
    for i in range(b):
        expected = (1 - np.tanh(a @ xs[i]) ** 2)[:, None] * a
        assert_close(jac[i], expected, rtol=1e-10, atol=1e-12)


def test_vmap_jaxpr_typechecks(rng):
    typecheck(funcgrad.make_jaxpr(funcgrad.vmap(lambda x: fnp.sin(x).sum()))(rng.standard_normal((3, 2))))
    typecheck(
        funcgrad.make_jaxpr(funcgrad.vmap(funcgrad.grad(loss_single), in_axes=(None, 0, 0)))(
            {"w": np.ones((4, 6)), "v": np.ones((6, 2))}, np.ones((3, 4)), np.ones((3, 2))
        )
    )


def test_tracers_are_weakly_referable_as_jax():
    # TensorFlow Probability's bijector cache (distrax's transformed distributions) keys on tracers
    import weakref

    seen = []

    def f(x):
        seen.append(weakref.ref(x)() is x)
        return x * 2.0

    funcgrad.jit(f)(1.0)
    funcgrad.grad(f)(1.0)
    funcgrad.vmap(f)(fnp.ones(2))
    assert seen == [True, True, True]


def test_vmap_output_errors_say_jax_words():
    # JAX's batching_test testNegativeAxes and testNonJaxTypedOutput
    with pytest.raises(ValueError, match="axis -4 is out of bounds for array of dimension 2"):
        funcgrad.vmap(lambda x: x, out_axes=-4)(np.ones((2, 3)))
    with pytest.raises(TypeError, match="Output from batched function 'hello' .* is not a valid JAX type"):
        funcgrad.vmap(lambda x: "hello")(np.ones(3))


@pytest.mark.parametrize(
    "in_axes, shapes",
    [((1, None), ((3, 4, 5), (5, 6))), ((None, 1), ((4, 5), (5, 3, 6))), ((2, 0), ((4, 5, 3), (3, 5, 6)))],
)
def test_vmap_of_dot_leaves_the_mapped_dimension_in_place_as_jax(in_axes, shapes):
    """vmap of a matrix product binds one dot_general with the mapped dimension where it is (a
    batch dimension when both operands are mapped, a free one otherwise): JAX's jaxpr, no
    transpose of an operand, and the result's mapped axis where JAX's is."""
    jax = pytest.importorskip("jax")
    args = [np.arange(np.prod(s), dtype=np.float32).reshape(s) / 10 for s in shapes]
    f = lambda a, b: a @ b  # noqa: E731
    ours = funcgrad.make_jaxpr(funcgrad.vmap(f, in_axes=in_axes))(*args)
    assert str(ours) == str(jax.make_jaxpr(jax.vmap(f, in_axes=in_axes))(*args))
    want = np.asarray(jax.vmap(f, in_axes=in_axes)(*args))
    for g in (funcgrad.vmap(f, in_axes=in_axes), funcgrad.jit(funcgrad.vmap(f, in_axes=in_axes))):
        assert_close(np.asarray(g(*args)), want, rtol=1e-6)
