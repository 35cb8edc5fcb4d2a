"""custom_derivatives.linear_call against jax's: values, its transpose rule (and the transpose of
the transpose), grad/vjp/jvp through it, jit, and its errors."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.custom_derivatives import linear_call

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jlinear_call = jax.custom_derivatives.linear_call


def _div_add(lc, x, denom):
    return x + lc(lambda r, x: x / r, lambda r, t: t / r, denom, x)


def _transpose(api, f, example):
    def transposed(y):
        (x,) = api.linear_transpose(f, example)(y)
        return x

    return transposed


def test_values_and_transposes_as_jax():
    assert float(_div_add(linear_call, 9.0, 3.0)) == float(_div_add(jlinear_call, 9.0, 3.0)) == 12.0
    ours = _transpose(funcgrad, partial(_div_add, linear_call, denom=3.0), 1.0)(18.0)
    theirs = _transpose(jax, partial(_div_add, jlinear_call, denom=3.0), 1.0)(18.0)
    assert float(ours) == float(theirs) == 24.0


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_transposing_swaps_fun_and_its_transpose(depth):
    def custom_id(lc, x):  # the transpose is deliberately not the true transpose
        return lc(lambda _, x: x, lambda _, t: 7.0 * t, (), x)

    results = []
    for api, lc in ((funcgrad, linear_call), (jax, jlinear_call)):
        f = partial(custom_id, lc)
        for _ in range(depth):
            f = _transpose(api, f, 1.0)
        results.append(float(f(2.0)))
    assert results[0] == results[1] == (2.0 if depth % 2 == 0 else 14.0)


@pytest.mark.parametrize("depth, x", [(0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0), (0, 2)])
def test_forwarded_python_scalars_come_back_typed_as_jax(depth, x):
    # (JAX's docstring: custom_id(1.) is TypedFloat(1.0, dtype=...), its transposes too; its bind
    # types Python scalar operands, and the transpose's literal 7. is one)
    def custom_id(lc, x):
        return lc(lambda _, x: x, lambda _, t: 7.0, (), x)

    results = []
    for api, lc in ((funcgrad, linear_call), (jax, jlinear_call)):
        f = partial(custom_id, lc)
        for _ in range(depth):
            f = _transpose(api, f, x)
        results.append(f(x))
    assert repr(results[0]) == repr(results[1])
    # A typed scalar is a weak Python scalar to what computes with it.
    r = results[0]
    for fn in (lambda v: fnp.float32(3) * v, fnp.sin, funcgrad.jit(lambda v: v * 2), lambda v: v + 1):
        assert repr(fn(r)) == repr(fn(results[1]) if fn is not fnp.sin else jax.numpy.sin(results[1]))


def test_grad_jvp_and_jit_use_the_custom_transpose():
    def f(lc, x, w):
        # linear in x; the "transpose" scales by 3 instead of w.T
        return lc(lambda w, x: w @ x, lambda w, ct: 3.0 * (w.T @ ct), w, x).sum()

    w = np.arange(6.0).reshape(2, 3)
    x = np.array([1.0, -2.0, 0.5])
    for g in (funcgrad.grad(partial(f, linear_call)), funcgrad.jit(funcgrad.grad(partial(f, linear_call)))):
        np.testing.assert_allclose(g(x, w), jax.grad(partial(f, jlinear_call))(x, w))
    np.testing.assert_allclose(g(x, w), 3.0 * w.T @ np.ones(2))
    # forward mode differentiates fun itself (linear: the tangent is the same call)
    t = np.array([0.1, 0.2, 0.3])
    _, ours = funcgrad.jvp(lambda x: partial(f, linear_call)(x, w), (x,), (t,))
    _, theirs = jax.jvp(lambda x: partial(f, jlinear_call)(x, w), (x,), (t,))
    np.testing.assert_allclose(ours, theirs)
    np.testing.assert_allclose(funcgrad.jit(partial(f, linear_call))(x, w), (w @ x).sum())


def test_pytree_arguments():
    def fun(r, lin):
        a, b = lin
        return {"s": a * r["k"] + b}

    def fun_t(r, ct):
        return (ct["s"] * r["k"], ct["s"])

    def g(lc, a, b):
        return lc(fun, fun_t, {"k": 2.0}, (a, b))["s"].sum()

    ours = funcgrad.grad(partial(g, linear_call), argnums=(0, 1))(np.ones(3), np.ones(3))
    theirs = jax.grad(partial(g, jlinear_call), argnums=(0, 1))(np.ones(3), np.ones(3))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t)


def test_errors():
    bad_tree = partial(linear_call, lambda r, x: x * r, lambda r, t: (t, t), 2.0)
    with pytest.raises(TypeError, match="transpose output pytree structure"):
        funcgrad.grad(lambda x: bad_tree(x).sum())(np.ones(2))
    bad_shape = partial(linear_call, lambda r, x: x * r, lambda r, t: t.sum(), 2.0)
    with pytest.raises(TypeError, match="fun_transpose's output 0"):
        funcgrad.grad(lambda x: bad_shape(x).sum())(np.ones(2))
    with pytest.raises(TypeError, match="residual arguments are not differentiated"):
        funcgrad.grad(lambda r: linear_call(lambda r, x: x * r, lambda r, t: t * r, r, fnp.ones(2)).sum())(
            2.0
        )


def test_vmap_is_the_loop():
    # jax has no batching rule for linear_call; funcgrad batches fun and fun_transpose.
    def f(x, r):
        return linear_call(lambda r, x: x * r, lambda r, t: 5.0 * t * r, r, x)

    xs, rs = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(funcgrad.vmap(f)(xs, rs), xs * rs[:, None])
    g = funcgrad.vmap(funcgrad.grad(lambda x, r: f(x, r).sum()))(xs, rs)
    np.testing.assert_allclose(g, 5.0 * np.ones_like(xs) * rs[:, None])
    # grad of a vmapped call transposes the batched transpose; an unbatched residual stays unbatched
    g2 = funcgrad.grad(lambda xs: funcgrad.vmap(lambda x: f(x, 2.0))(xs).sum())(xs)
    np.testing.assert_allclose(g2, 10.0 * np.ones_like(xs))


def test_linear_transpose_at_a_python_float_is_weak_as_jax():
    # custom_derivatives.linear_call's docstring: transpose(lambda x: x + x / 3., 1.)(18.) is a weak 24
    t = funcgrad.linear_transpose(lambda x: x + x / 3.0, 1.0)
    (out,) = t(18.0)
    assert out.weak_type and float(out) == 24.0
    (strong,) = funcgrad.linear_transpose(lambda x: x + x / 3.0, np.float32(1.0))(18.0)
    assert not strong.weak_type
