"""Kernel: custom_jvp and custom_vjp with vmap, jit, higher-order differentiation and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _checks import assert_close, typecheck

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import custom_jvp, custom_vjp


@custom_jvp
def log1pexp(x):
    return fnp.log(1.0 + fnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t / (1.0 + fnp.exp(-x))


def test_custom_jvp_is_used_and_stable():
    # The naive derivative exp(x)/(1+exp(x)) is nan at x=1000; the rule gives 1.
    assert float(funcgrad.grad(log1pexp)(1000.0)) == 1.0
    assert math.isclose(float(funcgrad.grad(log1pexp)(0.3)), 1 / (1 + math.exp(-0.3)), rel_tol=1e-12)


def test_custom_jvp_higher_order_vmap_and_jaxpr():
    xs = fnp.array([-1.0, 0.0, 2.0])
    g = funcgrad.vmap(funcgrad.grad(log1pexp))(xs)
    assert_close(g, 1 / (1 + np.exp(-np.asarray(xs))))
    gg = funcgrad.grad(funcgrad.grad(log1pexp))(0.5)
    s = 1 / (1 + math.exp(-0.5))
    assert math.isclose(float(gg), s * (1 - s), rel_tol=1e-9)
    g_outer = funcgrad.grad(lambda x: funcgrad.vmap(log1pexp)(x).sum())(xs)
    assert_close(g_outer, g)
    jaxpr = funcgrad.make_jaxpr(log1pexp)(1.0)
    assert "custom_jvp_call" in str(jaxpr)
    typecheck(jaxpr)
    typecheck(funcgrad.make_jaxpr(funcgrad.grad(log1pexp))(1.0))


def test_custom_jvp_nondiff_argnums_and_defjvps():
    @custom_jvp
    def f(x, y):
        return fnp.sin(x) * y

    f.defjvps(lambda t, ans, x, y: fnp.cos(x) * y * t, lambda t, ans, x, y: fnp.sin(x) * t)
    assert math.isclose(float(funcgrad.grad(f)(0.2, 3.0)), math.cos(0.2) * 3, rel_tol=1e-12)
    assert math.isclose(float(funcgrad.grad(f, 1)(0.2, 3.0)), math.sin(0.2), rel_tol=1e-12)

    def g_impl(n, x):
        return x**n

    g = custom_jvp(g_impl, nondiff_argnums=(0,))

    @g.defjvp
    def g_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return g(n, x), n * x ** (n - 1) * t

    assert float(funcgrad.grad(lambda x: g(3, x))(2.0)) == 12.0


@custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (fnp.maximum(fnp.minimum(g, 1.0), -1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_is_used():
    f = lambda x: 10.0 * clip_gradient(x)
    assert float(funcgrad.grad(f)(2.0)) == 1.0  # ct 10 clipped to 1
    g = lambda x: clip_gradient(10.0 * x)
    assert float(funcgrad.grad(g)(2.0)) == 10.0  # ct 1 passes unclipped, times 10
    h = lambda x: clip_gradient(x) * 5.0
    assert float(funcgrad.grad(h)(2.0)) == 1.0  # ct 5 clipped to 1


@custom_vjp
def my_square(x):
    return x * x


def _sq_fwd(x):
    return x * x, x  # saved for backward


def _sq_bwd(x, g):
    return (2.0 * x * g,)


my_square.defvjp(_sq_fwd, _sq_bwd)


def test_custom_vjp_higher_order_and_vmap():
    assert float(funcgrad.grad(my_square)(3.0)) == 6.0
    assert float(funcgrad.grad(funcgrad.grad(my_square))(3.0)) == 2.0
    xs = fnp.array([1.0, 2.0, 3.0])
    assert_close(funcgrad.vmap(funcgrad.grad(my_square))(xs), 2 * np.asarray(xs))
    assert_close(funcgrad.grad(lambda x: funcgrad.vmap(my_square)(x).sum())(xs), 2 * np.asarray(xs))
    # Unbatched input inside vmap: the cotangent is summed over the batch.
    w = 2.0
    got = funcgrad.grad(lambda w: funcgrad.vmap(lambda x: my_square(w) * x)(xs).sum())(w)
    assert math.isclose(float(got), 2 * w * float(np.sum(xs)), rel_tol=1e-12)


def test_custom_vjp_pytree_residuals_and_outputs():
    @custom_vjp
    def f(params, x):
        return {"y": params["a"] * x, "z": params["b"] + x}

    def fwd(params, x):
        return f(params, x), (params, x)

    def bwd(res, ct):
        params, x = res
        return ({"a": ct["y"] * x, "b": ct["z"]}, ct["y"] * params["a"] + ct["z"])

    f.defvjp(fwd, bwd)
    loss = lambda p, x: (f(p, x)["y"] * 2.0 + f(p, x)["z"]).sum()
    p = {"a": fnp.array([1.0, 2.0]), "b": fnp.array([3.0, 4.0])}
    x = fnp.array([5.0, 6.0])
    gp, gx = funcgrad.grad(loss, argnums=(0, 1))(p, x)
    assert_close(gp["a"], 2 * np.asarray(x))
    assert_close(gp["b"], np.ones(2))
    assert_close(gx, 2 * np.asarray(p["a"]) + 1)


def test_custom_vjp_forward_mode_errors_clearly():
    with pytest.raises(TypeError, match="forward-mode"):
        funcgrad.jvp(my_square, (1.0,), (1.0,))


def test_custom_vjp_bwd_wrong_structure_errors():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))
    with pytest.raises(TypeError, match=r"must produce a tuple of length equal.*\(\*,\)\) for primal input"):
        funcgrad.grad(f)(1.0, 2.0)

    @custom_vjp
    def h(x):
        return x.sum()

    h.defvjp(lambda x: (x.sum(), x), lambda x, g: (fnp.ones(3),))
    message = r"at output\[0\] the bwd rule produced an output of type float64\[3\]"
    with pytest.raises(ValueError, match=message):
        funcgrad.grad(h)(fnp.ones(2))


def test_custom_jvp_without_rule_errors():
    f = custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="No JVP defined"):
        f(1.0)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_eager_call_runs_on_the_arrays_as_given_as_jax(kind):
    # JAX runs the function itself eagerly: an output that is an input is the same object
    # (optimistix's inexact_asarray under vmap), and weak types stay as the function makes them.
    jax = pytest.importorskip("jax")

    def make(m):
        f = getattr(m, kind)(lambda x, s: (x, x * s))
        if kind == "custom_jvp":
            f.defjvp(lambda p, t: (f(*p), (t[0], t[0] * p[1])))
        else:
            f.defvjp(lambda x, s: (f(x, s), s), lambda s, ct: (ct[0] + ct[1] * s, None))
        return f

    for m in (funcgrad, jax):
        y = m.numpy.asarray([1.0, 2.0])
        same, scaled = m.vmap(make(m), in_axes=(0, None))(y, 2.0)
        assert same is y
        np.testing.assert_allclose(scaled, [2.0, 4.0])
    got = make(funcgrad)(fnp.asarray(2.0), 3.0)[1]  # (a weak Array times a Python float)
    want = make(jax)(jax.numpy.asarray(2.0), 3.0)[1]
    assert got.weak_type == want.weak_type and float(got) == float(want)


def test_custom_jvp_collective_of_unbatched_values_stays_unbatched_as_jax():
    # JAX's custom_api_test test_initial_style_vmap_with_collective: psum over the named axis of
    # an unbatched value is unbatched (out_axes=None works), staged or not; jax gives 8, 8, (8, 1).
    @custom_jvp
    def f(x):
        return funcgrad.lax.psum(x, "foo")

    @f.defjvp
    def _(xs, ts):
        return funcgrad.lax.psum(xs[0], "foo"), ts[0]

    def g(x):
        cj = funcgrad.make_jaxpr(f)(x)
        return funcgrad.core.eval_jaxpr(cj.jaxpr, [], x)[0]

    run = lambda h, x: funcgrad.vmap(lambda _, v: h(v), axis_name="foo", in_axes=(0, None), out_axes=None)(  # noqa: E731
        fnp.arange(4.0), x
    )
    assert float(run(g, 2.0)) == 8.0 and float(run(f, 2.0)) == 8.0
    y, t = funcgrad.jvp(lambda x: run(f, x), (2.0,), (1.0,))
    assert (float(y), float(t)) == (8.0, 1.0)


def test_custom_vjp_under_vmap_unbatched_outputs_and_cotangents_as_jax():
    # JAX's custom_api_test test_initial_style_vmap_with_collective (custom_vjp): psum over the
    # named axis of an unbatched value stays unbatched; a bwd cotangent left unbatched for an
    # unbatched input is not summed over the batch (JAX's matchaxis). jax 0.10.2: 8, 1, 3, 6.
    @custom_vjp
    def f(x):
        return funcgrad.lax.psum(x, "foo")

    f.defvjp(lambda x: (funcgrad.lax.psum(x, "foo"), None), lambda _, g: (g,))
    run = lambda x: funcgrad.vmap(lambda _, v: f(v), axis_name="foo", in_axes=(0, None), out_axes=None)(  # noqa: E731
        fnp.arange(4.0), x
    )
    assert float(run(2.0)) == 8.0 and float(funcgrad.grad(run)(2.0)) == 1.0

    @custom_vjp
    def h(x, y):
        return x * y

    h.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (fnp.ones_like(r[0]) * 3.0, g * r[0]))
    ys = fnp.arange(4.0)
    assert float(funcgrad.grad(lambda x: funcgrad.vmap(lambda y: h(x, y))(ys).sum())(2.0)) == 3.0
    h.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))
    assert float(funcgrad.grad(lambda x: funcgrad.vmap(lambda y: h(x, y))(ys).sum())(2.0)) == 6.0


def test_custom_jvp_of_a_constant_function_under_vmap_and_grad_as_jax():
    # JAX's custom_api_test test_hard_stuff2 / test_sinc_constant_function_batching: the rule's
    # tangent is batched where the function's value is not (jax: no error; grads of zeros are 1)
    @custom_jvp
    def f(x):
        return np.zeros(x.shape, x.dtype)

    @f.defjvp
    def _(primals, tangents):
        return f(primals[0]), tangents[0]

    x = fnp.arange(3.0)
    np.testing.assert_array_equal(funcgrad.jit(funcgrad.vmap(funcgrad.grad(f)))(x), np.ones(3))
    np.testing.assert_array_equal(funcgrad.grad(lambda v: funcgrad.vmap(f)(v).sum())(x), np.ones(3))
    y, t = funcgrad.jvp(funcgrad.vmap(f), (x,), (fnp.ones(3),))
    np.testing.assert_array_equal(y, np.zeros(3))
    np.testing.assert_array_equal(t, np.ones(3))


def test_python_number_residuals_reach_bwd_as_given_under_vmap_as_jax():
    # JAX's vmap hands a value of no trace through as it is: a Python bool residual reaches bwd as
    # a bool under grad(vmap(f)), jitted or not (equinox's filter_custom_vjp keeps its `perturbed`
    # flags among the residuals and branches on them; diffrax's checkpointed adjoint under vmap)
    import jax

    def program(api):
        seen = []

        @api.custom_vjp
        def f(x):
            return x * 2.0

        def fwd(x):
            return x * 2.0, (True, 3, x)

        def bwd(res, g):
            flag, n, x = res
            seen.append((type(flag) is bool, isinstance(n, int)))  # (JAX's int: a TypedInt, an int)
            return (g * x * n if flag else g,)

        f.defvjp(fwd, bwd)
        xs = np.array([1.0, 2.0, 3.0], np.float32)
        loss = lambda xs: api.vmap(f)(xs).sum()  # noqa: E731
        outs = [api.grad(loss)(xs), api.jit(api.grad(loss))(xs), api.vmap(api.grad(f))(xs)]
        return [np.asarray(o) for o in outs], seen

    ours, theirs = program(funcgrad), program(jax)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b)
    assert ours[1] == theirs[1] == [(True, True)] * 3
