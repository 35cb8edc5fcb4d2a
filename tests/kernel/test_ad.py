"""Kernel: jvp, linearize, vjp, grad and higher-order derivatives against analytic derivatives and
central finite differences (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _checks import assert_close, typecheck
from hypothesis import given
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import core
from funcgrad.testing import check_grads

# A few functions with known derivatives: (f, df, domain)
SCALAR_FUNS = [
    (fnp.sin, np.cos, (-3, 3)),
    (fnp.cos, lambda x: -np.sin(x), (-3, 3)),
    (fnp.exp, np.exp, (-2, 2)),
    (fnp.log, lambda x: 1 / x, (0.1, 3)),
    (fnp.tanh, lambda x: 1 - np.tanh(x) ** 2, (-3, 3)),
    (lambda x: x**3, lambda x: 3 * x**2, (-2, 2)),
    (lambda x: fnp.sqrt(x), lambda x: 0.5 / np.sqrt(x), (0.1, 4)),
    (lambda x: 1.0 / (1.0 + x * x), lambda x: -2 * x / (1 + x * x) ** 2, (-3, 3)),
    (lambda x: fnp.sin(x) * fnp.exp(x), lambda x: np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x), (-2, 2)),
]


@pytest.mark.parametrize("f, df, domain", SCALAR_FUNS)
@given(u=st.floats(0, 1))
def test_grad_matches_analytic(f, df, domain, u):
    x = domain[0] + u * (domain[1] - domain[0])
    assert math.isclose(float(funcgrad.grad(f)(x)), float(df(x)), rel_tol=1e-9, abs_tol=1e-12)
    y, t = funcgrad.jvp(f, (x,), (1.0,))
    assert math.isclose(float(t), float(df(x)), rel_tol=1e-9, abs_tol=1e-12)


def mlp_loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - fnp.log(fnp.sum(fnp.exp(logits - m), axis=-1, keepdims=True))
    return -fnp.mean(fnp.sum(logp * y, axis=-1))


def _mlp_params(rng, d_in=4, d_h=5, d_out=3):
    return {
        "w1": rng.standard_normal((d_in, d_h)) * 0.5,
        "b1": rng.standard_normal(d_h) * 0.1,
        "w2": rng.standard_normal((d_h, d_out)) * 0.5,
        "b2": rng.standard_normal(d_out) * 0.1,
    }


def test_mlp_grad_against_finite_differences(rng):
    params = _mlp_params(rng)
    x = rng.standard_normal((6, 4))
    y = np.eye(3)[rng.integers(0, 3, 6)]
    g = funcgrad.grad(mlp_loss)(params, x, y)
    assert set(g) == set(params)
    for k in params:
        direction = rng.standard_normal(params[k].shape)
        eps = 1e-6
        p_plus = dict(params, **{k: params[k] + eps * direction})
        p_minus = dict(params, **{k: params[k] - eps * direction})
        fd = (float(mlp_loss(p_plus, x, y)) - float(mlp_loss(p_minus, x, y))) / (2 * eps)
        assert math.isclose(float(np.vdot(np.asarray(g[k]), direction)), fd, rel_tol=1e-6, abs_tol=1e-9)


@pytest.mark.parametrize(
    "f, shapes",
    [
        (lambda x, y: fnp.sin(x) * y + fnp.exp(y), [(3,), (3,)]),
        (lambda a, b: fnp.tanh(a @ b).sum(axis=0), [(2, 3), (3, 4)]),
        (lambda x: fnp.maximum(x, 0.3) * fnp.sqrt(x * x + 1.0), [(2, 3)]),
        (lambda x: (x / (1.0 + x * x)).mean(axis=1), [(3, 4)]),
        (lambda x: fnp.transpose(x) @ x, [(3, 2)]),
    ],
)
def test_first_and_second_order_against_finite_differences(f, shapes, rng):
    args = [rng.standard_normal(s) for s in shapes]
    check_grads(f, args, order=2)


def test_fourth_derivative_of_tanh():
    g = fnp.tanh
    for _ in range(4):
        g = funcgrad.grad(g)
    x = 0.5
    t = np.tanh(x)
    # With t = tanh(x): d1 = 1 - t^2, d2 = -2t + 2t^3, d3 = -2 + 8t^2 - 6t^4,
    # d4 = (16t - 24t^3)(1 - t^2) = 16t - 40t^3 + 24t^5.
    d4 = 16 * t - 40 * t**3 + 24 * t**5
    # Cross-check the closed form with a fifth-order-accurate finite difference of the 3rd derivative.
    g3 = funcgrad.grad(funcgrad.grad(funcgrad.grad(fnp.tanh)))
    h = 1e-3
    fd = (-float(g3(x + 2 * h)) + 8 * float(g3(x + h)) - 8 * float(g3(x - h)) + float(g3(x - 2 * h))) / (
        12 * h
    )
    assert math.isclose(float(g(x)), fd, rel_tol=1e-7)
    assert math.isclose(float(g(x)), d4, rel_tol=1e-9)


def test_fourth_derivative_of_polynomial():
    f = lambda x: 3 * x**5 - 2 * x**4 + x**2 - 7.0
    g = f
    for _ in range(4):
        g = funcgrad.grad(g)
    for x in (-1.5, 0.0, 2.0):
        assert math.isclose(float(g(x)), 360 * x - 48, rel_tol=1e-12, abs_tol=1e-9)
    assert float(funcgrad.grad(g)(1.0)) == 360.0
    assert float(funcgrad.grad(funcgrad.grad(g))(1.0)) == 0.0


def test_vjp_function_can_be_called_many_times(rng):
    x = rng.standard_normal(4)
    y, f_vjp = funcgrad.vjp(lambda x: fnp.sin(x) * x, x)
    ct1, ct2 = rng.standard_normal(4), rng.standard_normal(4)
    (g1,) = f_vjp(ct1)
    (g2,) = f_vjp(ct2)
    d = np.cos(x) * x + np.sin(x)
    assert_close(g1, ct1 * d)
    assert_close(g2, ct2 * d)
    (g1_again,) = f_vjp(ct1)
    assert_close(g1_again, g1, rtol=0, atol=0)


def test_linearize_matches_jvp(rng):
    f = lambda x: fnp.exp(fnp.sin(x)).sum()
    x = rng.standard_normal(5)
    y, f_jvp = funcgrad.linearize(f, x)
    for _ in range(3):
        t = rng.standard_normal(5)
        assert_close(f_jvp(t), funcgrad.jvp(f, (x,), (t,))[1], rtol=1e-12, atol=1e-12)
    assert_close(y, f(x))


def test_linear_transpose(rng):
    a = rng.standard_normal((3, 4))
    f = lambda x: a @ x
    t = funcgrad.linear_transpose(f, np.zeros(4))
    ct = rng.standard_normal(3)
    assert_close(t(ct)[0], a.T @ ct)


def test_value_and_grad_and_has_aux():
    def f(x):
        return (x**2).sum(), {"norm": fnp.sqrt((x**2).sum())}

    x = fnp.array([3.0, 4.0])
    (v, aux), g = funcgrad.value_and_grad(f, has_aux=True)(x)
    assert float(v) == 25.0
    assert float(aux["norm"]) == 5.0
    assert_close(g, np.array([6.0, 8.0]))
    g2, aux2 = funcgrad.grad(f, has_aux=True)(x)
    assert_close(g2, np.array([6.0, 8.0]))
    assert float(aux2["norm"]) == 5.0


def test_grad_argnums_and_pytrees():
    f = lambda a, b, c: (a * b["x"] + c[0] * c[1]).sum()
    a, b, c = 2.0, {"x": fnp.array([1.0, 2.0])}, (3.0, fnp.array([5.0, 6.0]))
    ga, gc = funcgrad.grad(f, argnums=(0, 2))(a, b, c)
    assert float(ga) == 3.0
    assert float(gc[0]) == 11.0
    assert_close(gc[1], np.array([3.0, 3.0]))
    gb = funcgrad.grad(f, argnums=1)(a, b, c)
    assert_close(gb["x"], np.array([2.0, 2.0]))


def test_perturbation_confusion_is_impossible():
    # d/dx [x * d/dy (x + y)] = 1 at any x (Siskind & Pearlmutter).
    f = lambda x: x * funcgrad.grad(lambda y: x + y)(1.0)
    for x in (0.0, 1.0, 3.5):
        assert float(funcgrad.grad(f)(x)) == 1.0
    # And under vmap.
    xs = fnp.array([0.0, 1.0, 2.0])
    assert_close(funcgrad.vmap(funcgrad.grad(f))(xs), np.array([1.0, 1.0, 1.0]))
    # Forward over forward.
    g = lambda x: funcgrad.jvp(lambda y: x * y, (2.0,), (1.0,))[1]
    assert float(funcgrad.jvp(g, (3.0,), (1.0,))[1]) == 1.0


def test_stop_gradient():
    f = lambda x: x * funcgrad.stop_gradient(x)
    assert float(funcgrad.grad(f)(3.0)) == 3.0
    assert float(funcgrad.grad(funcgrad.grad(f))(3.0)) == 0.0


def test_symbolic_zeros_do_not_materialize():
    # The output does not depend on y: its cotangent is a float zero, and the backward program
    # contains no work for it.
    f = lambda x, y: fnp.sin(x)
    gx, gy = funcgrad.grad(f, argnums=(0, 1))(1.0, 2.0)
    assert float(gy) == 0.0
    jaxpr = funcgrad.make_jaxpr(funcgrad.grad(f, argnums=1))(1.0, 2.0)
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin"] or len(jaxpr.eqns) <= 1
    _, f_vjp = funcgrad.vjp(lambda x, y: (fnp.sin(x), y * 2.0), 1.0, 2.0)
    lin = f_vjp.jaxpr
    assert all(e.primitive.name != "broadcast_in_dim" for e in lin.eqns)


def test_backward_program_is_a_typed_jaxpr(rng):
    x = rng.standard_normal(3)
    for f in (
        lambda x: fnp.sin(x).sum(),
        lambda x: (fnp.tanh(x) * x).mean(),
        lambda x: fnp.exp(x).max(),
    ):
        typecheck(funcgrad.make_jaxpr(funcgrad.grad(f))(x))
        typecheck(funcgrad.make_jaxpr(funcgrad.grad(funcgrad.grad(lambda y, f=f: f(y * x))))(0.5))
        _, f_vjp = funcgrad.vjp(f, x)
        typecheck(f_vjp.jaxpr)


def test_grad_of_grad_jaxpr_is_differentiable_again():
    f = lambda x: fnp.sin(x) * x
    g2 = funcgrad.grad(funcgrad.grad(f))
    jaxpr = funcgrad.make_jaxpr(g2)(1.0)
    typecheck(jaxpr)
    x = 0.7
    expected = -np.sin(x) * x + 2 * np.cos(x)
    assert math.isclose(float(g2(x)), expected, rel_tol=1e-12)
    assert math.isclose(float(core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, x)[0]), expected, rel_tol=1e-12)


@given(st.integers(1, 4), st.integers(1, 3))
def test_jvp_vjp_dot_product_random_shapes(n, m):
    rng = np.random.default_rng(n * 10 + m)
    f = lambda a, b: fnp.tanh(a @ b) * 2.0 + fnp.exp(-a.sum())
    args = [rng.standard_normal((m, n)), rng.standard_normal((n, m))]
    check_grads(f, args, order=1)


def test_zero_is_a_pytree_node_without_children_as_jax():
    # As JAX's ad_util.Zero: vmap passes a Zero argument and a Zero result through (equinox's
    # batched primitive JVP rules vmap over Zero tangents: lineax's test_vmap_jvp raised
    # "Zero(float0[]) is not a valid funcgrad array type").
    import jax
    from jax.interpreters import ad as jax_ad

    from funcgrad.interpreters import ad as fg_ad
    from funcgrad.kernel.ir import ShapedArray

    for api, zero in (
        (funcgrad, fg_ad.Zero(ShapedArray((), np.float32))),
        (jax, jax_ad.Zero(jax.core.ShapedArray((), np.float32))),
    ):
        assert api.tree_util.tree_leaves([zero]) == []
        x, z = api.vmap(lambda x, z: (2 * x, z), in_axes=(0, None))(np.ones(3, np.float32), zero)
        assert type(z) is type(zero) and z.aval.shape == () and np.asarray(x).tolist() == [2.0] * 3


def test_linear_transpose_of_integers_and_its_checks_as_jax():
    # JAX's api_test test_linear_transpose_integer (funcgrad gave 0: integer cotangents were
    # dropped as float0 zeros), test_linear_transpose_error, and its docstring's float32 example.
    import jax

    for api in (funcgrad, jax):
        assert int(api.linear_transpose(lambda x: 2 * x, 1)(3)[0]) == 6
        with pytest.raises(TypeError, match="linear_transpose only supports"):
            api.linear_transpose(lambda x: 2.0 * x, 1)
        with pytest.raises(TypeError, match="cotangent tree does not match"):
            api.linear_transpose(lambda x: [x, x], 1.0)(1.0)
        with pytest.raises(TypeError, match="cotangent type does not match"):
            api.linear_transpose(lambda x: x, 1.0)(1j)
        s = api.ShapeDtypeStruct((), np.float32)
        outs = api.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, s, s)(np.float32(1.0))
        assert [(float(o), o.dtype) for o in outs] == [(0.5, np.float32), (-0.5, np.float32)]


def test_integer_tangents_never_enter_arithmetic_as_jax():
    # The fuzzer: a float0 tangent (a custom_jvp rule's, or a loop's materialised integer carry) was
    # multiplied ("mul requires operands of one dtype, got float0[2,2], i32[]"), and an integer
    # dot_general's tangent (preferred_element_type=int32) did not match the float0 a loop, scan, jit
    # or checkpoint traced for it. As JAX's maybe_jvp_tracer, a float0 tangent carries no tracer.
    import jax

    x = np.array([1.0, 2.0, 3.0], np.float32)  # (whole numbers: an integer dot is exact)
    b = np.ones((3, 2), bool)

    def programs(T, N, L):
        @T.custom_jvp
        def g(a):
            return (a * 3).astype(N.int32)

        @g.defjvp
        def g_jvp(p, t):
            return g(p[0]), np.zeros(p[0].shape, T.dtypes.float0)

        def dot(a):  # an integer dot of floats
            return N.einsum("i,ij->j", a.astype(N.bfloat16), b, preferred_element_type=N.int32)

        def loop(c):
            return (c[0] + 1, c[1] * 2 + c[0])

        outs = [
            lambda a: (g(a) * 2 + 1).astype(N.float32) + a,
            lambda a: L.while_loop(lambda c: c[0] < 3, loop, (0, g(a)))[1].astype(N.float32) + a,
            lambda a: L.while_loop(lambda c: c[0] < 3, loop, (0, dot(a)))[1].astype(N.float32) + a[:2],
            lambda a: L.scan(lambda c, _: (c * 2 + 1, c), dot(a), None, length=2)[0].astype(N.float32),
            lambda a: T.jit(lambda v: v * 2 + 1)(dot(a)).astype(N.float32) + a[1:],
            lambda a: T.checkpoint(lambda v: v * 2 + 1)(dot(a)).astype(N.float32) * a[1:],
        ]
        return outs

    for fg, jx in zip(programs(funcgrad, fnp, funcgrad.lax), programs(jax, jax.numpy, jax.lax)):
        want_out, want_lin = jax.linearize(jx, x)
        got_out, got_lin = funcgrad.linearize(fg, x)
        assert_close(got_out, want_out, rtol=0, atol=0)
        assert_close(got_lin(x), want_lin(x), rtol=0, atol=0)
        assert_close(funcgrad.jvp(fg, (x,), (x,))[1], want_lin(x), rtol=0, atol=0)
        assert_close(
            funcgrad.grad(lambda a, f=fg: f(a).sum())(x),
            jax.grad(lambda a, f=jx: f(a).sum())(x),
            rtol=0,
            atol=0,
        )


@pytest.mark.parametrize("n", [np.int8(3), np.array([3, 4], np.int32)])
def test_vjp_and_linearize_with_integer_inputs_in_arithmetic_as_jax(n):
    # The program fuzzer (seed 17015): linearize (so vjp and every reverse-mode path) gave an
    # integer input a JVP tracer of float0 tangent, which the integer arithmetic's rule multiplied
    # ("mul requires operands of one dtype, got float0[], i8[]"); jax computes (maybe_jvp_tracer)
    import jax

    x = np.array([0.5, 1.5], np.float32)

    def f(N):
        return lambda a, k: N.sum(a * (k**2 + k * k).astype(a.dtype))

    got = funcgrad.vjp(f(fnp), x, n)[1](np.float32(1.0))
    want = jax.vjp(f(jax.numpy), x, n)[1](np.float32(1.0))
    assert_close(got[0], want[0], rtol=0, atol=0)
    assert got[1].dtype == want[1].dtype == jax.dtypes.float0
    inner = funcgrad.jacfwd(lambda a: funcgrad.vjp(f(fnp), a, n)[1](np.float32(1.0))[0])(x)
    assert_close(inner, jax.jacfwd(lambda a: jax.vjp(f(jax.numpy), a, n)[1](np.float32(1.0))[0])(x))
