"""custom_linear_solve and custom_root: values, implicit derivatives (forward and reverse, to
second order, against finite differences), vmap against a loop, jit against eager, and errors.

The solvers used here are deliberately not differentiable through (fixed-step iterations or an
opaque dense solve): the derivatives must come from the equations.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from funcgrad.primitives.implicit import custom_linear_solve_p, custom_root_p

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
B = RNG.normal(size=4)


def _dense_solve(a):
    return lambda matvec, r: fnp.linalg.solve(a, r)


def _transpose_solve(a):
    return lambda vecmat, r: fnp.linalg.solve(a.T, r)


def linear(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, _dense_solve(a), _transpose_solve(a))


def _jacobi(a):
    """Fixed-step Jacobi iterations (a stop_gradient'ed solver: no derivative flows through it)."""

    def solve(matvec, r):
        d = fnp.diagonal(lax.stop_gradient(a))
        x = fnp.zeros_like(r)
        for _ in range(60):
            x = x + (r - lax.stop_gradient(matvec(x))) / d
        return x

    return solve


def test_value_and_binds_one_primitive():
    x = linear(A, B)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, B), rtol=1e-12)
    prims = {e.primitive for e in funcgrad.make_jaxpr(linear)(A, B).jaxpr.eqns}
    assert custom_linear_solve_p in prims


def test_derivatives_in_a_and_b():
    check_grads(linear, (A, B), order=2)


def test_gradient_does_not_differentiate_the_solver():
    def f(a, b):
        return lax.custom_linear_solve(lambda x: a @ x, b, _jacobi(a), _jacobi(a.T)).sum()

    dominant = np.diag([6.0, 7.0, 8.0, 9.0]) + RNG.uniform(-1, 1, (4, 4))
    got = funcgrad.grad(f, argnums=(0, 1))(dominant, B)
    x = np.linalg.solve(dominant, B)
    gb = np.linalg.solve(dominant.T, np.ones(4))
    np.testing.assert_allclose(np.asarray(got[1]), gb, rtol=1e-8)
    np.testing.assert_allclose(np.asarray(got[0]), -np.outer(gb, x), rtol=1e-8)


def test_symmetric_and_has_aux():
    spd = A @ A.T + np.eye(4)

    def f(b):
        def solve(matvec, r):
            return fnp.linalg.solve(spd, r), fnp.sum(r)

        return lax.custom_linear_solve(lambda x: spd @ x, b, solve, symmetric=True, has_aux=True)

    x, aux = f(B)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(spd, B), rtol=1e-12)
    np.testing.assert_allclose(float(aux), B.sum())
    g = funcgrad.grad(lambda b: f(b)[0].sum())(B)
    np.testing.assert_allclose(np.asarray(g), np.linalg.solve(spd, np.ones(4)), rtol=1e-10)


def test_pytree_right_hand_side():
    def f(b1, b2):
        def matvec(x):
            return {"u": 2.0 * x["u"], "v": 3.0 * x["v"]}

        def solve(mv, r):
            return {"u": r["u"] / 2.0, "v": r["v"] / 3.0}

        return lax.custom_linear_solve(matvec, {"u": b1, "v": b2}, solve, symmetric=True)

    out = f(np.ones(2), np.ones(3))
    np.testing.assert_allclose(np.asarray(out["u"]), 0.5)
    check_grads(lambda a, b: f(a, b)["v"], (np.ones(2), np.ones(3)), order=2)


def test_vmap_and_jit():
    bs = RNG.normal(size=(3, 4))
    a_s = A + RNG.normal(size=(3, 4, 4)) * 0.1
    for in_axes in ((None, 0), (0, None), (0, 0)):
        args = (a_s if in_axes[0] == 0 else A, bs if in_axes[1] == 0 else B)
        got = funcgrad.vmap(linear, in_axes=in_axes)(*args)
        want = [linear(a_s[i] if in_axes[0] == 0 else A, bs[i] if in_axes[1] == 0 else B) for i in range(3)]
        np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(w) for w in want]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(linear)(A, B)), np.asarray(linear(A, B)), rtol=1e-12)
    g = funcgrad.jit(funcgrad.grad(lambda a, b: linear(a, b).sum(), argnums=(0, 1)))(A, B)
    g0 = funcgrad.grad(lambda a, b: linear(a, b).sum(), argnums=(0, 1))(A, B)
    for x, y in zip(g, g0):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10)
    gv = funcgrad.vmap(funcgrad.grad(lambda b: linear(A, b).sum()))(bs)
    np.testing.assert_allclose(np.asarray(gv), np.tile(np.linalg.solve(A.T, np.ones(4)), (3, 1)), rtol=1e-10)


def test_reverse_mode_needs_transpose_solve():
    def f(b):
        return lax.custom_linear_solve(lambda x: A @ x, b, _dense_solve(A)).sum()

    np.testing.assert_allclose(float(f(B)), np.linalg.solve(A, B).sum())
    funcgrad.jvp(f, (B,), (B,))  # forward mode works without it
    with pytest.raises(TypeError, match="transpose_solve required"):  # (JAX's words)
        funcgrad.grad(f)(B)


def test_bad_solver_output_is_reported():
    # JAX's types and words (its custom_linear_solve_test/custom_root_test errors tests)
    with pytest.raises(ValueError, match=re.escape("solve() output shapes must match b")):
        lax.custom_linear_solve(lambda x: x, np.ones(3), lambda mv, r: r[:2])
    with pytest.raises(TypeError, match=re.escape("matvec() output pytree structure must match b")):
        lax.custom_linear_solve(lambda x: [x], 1.0, lambda mv, r: r)
    with pytest.raises(TypeError, match=re.escape("transpose_solve() output pytree")):
        lax.custom_linear_solve(lambda x: x, 1.0, lambda mv, r: r, lambda vm, r: [r])


# ----------------------------------------------------------------------------------------------
# custom_root


def _newton(steps=30):
    def solve(f, x):
        for _ in range(steps):
            x = x - f(x) / funcgrad.grad(lambda y: f(y).sum())(x)
        return x

    return solve


def cube_root(a):
    return lax.custom_root(lambda x: x**3 - a, fnp.ones_like(a), _newton(), lambda g, y: y / g(1.0))


def test_root_value_and_derivatives():
    a = np.array([2.0, 8.0, 27.0])
    np.testing.assert_allclose(np.asarray(cube_root(a)), np.cbrt(a), rtol=1e-12)
    prims = {e.primitive for e in funcgrad.make_jaxpr(cube_root)(a).jaxpr.eqns}
    assert custom_root_p in prims
    check_grads(cube_root, (a,), order=2)


@pytest.mark.slow
def test_root_vector_system_and_transformations():
    m = np.array([[3.0, 1.0], [1.0, 2.0]])

    def root(b):
        def f(x):
            return m @ x + 0.1 * x**3 - b

        def tangent_solve(g, y):
            jac = funcgrad.jacfwd(g)(y)
            return fnp.linalg.solve(jac, y)

        return lax.custom_root(f, fnp.zeros(2), lambda f_, x: _vector_newton(f_, x), tangent_solve)

    b = np.array([1.0, 2.0])
    x = root(b)
    np.testing.assert_allclose(np.asarray(m @ x + 0.1 * x**3), b, atol=1e-10)
    check_grads(root, (b,), order=1)
    bs = np.stack([b, 2 * b, 3 * b])
    np.testing.assert_allclose(
        np.asarray(funcgrad.vmap(root)(bs)), np.stack([np.asarray(root(v)) for v in bs]), rtol=1e-10
    )
    np.testing.assert_allclose(np.asarray(funcgrad.jit(root)(b)), np.asarray(x), rtol=1e-12)
    gj = funcgrad.jit(funcgrad.grad(lambda v: root(v).sum()))(b)
    np.testing.assert_allclose(
        np.asarray(gj), np.asarray(funcgrad.grad(lambda v: root(v).sum())(b)), rtol=1e-10
    )


def _vector_newton(f, x):
    for _ in range(30):
        x = x - fnp.linalg.solve(funcgrad.jacfwd(f)(x), f(x))
    return x


def test_root_has_aux_and_errors():
    def f(a):
        def solve(g, x):
            return _newton()(g, x), fnp.array(30)

        return lax.custom_root(lambda x: x * x - a, 1.0, solve, lambda g, y: y / g(1.0), has_aux=True)

    x, steps = f(4.0)
    assert float(x) == pytest.approx(2.0) and int(steps) == 30
    assert float(funcgrad.grad(lambda a: f(a)[0])(4.0)) == pytest.approx(0.25)
    with pytest.raises(ValueError, match=re.escape("f() output shapes must match initial_guess")):
        lax.custom_root(lambda x: x[:1], np.ones(2), lambda f, x: x, lambda g, y: y)
    with pytest.raises(TypeError, match=re.escape("f() output pytree structure must match initial_guess")):
        lax.custom_root(lambda x: (x, x), 0.0, lambda f, x: x, lambda g, y: y)
