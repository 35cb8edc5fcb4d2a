"""funcgrad.experimental.ode.odeint against SciPy's solve_ivp and JAX's odeint: values, the adjoint
gradients (against finite differences and JAX), pytree states, closures, jit and vmap; and
funcgrad.closure_convert."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.custom_derivatives import closure_convert
from funcgrad.experimental.ode import odeint
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow


def pend(y, t, b, c):
    theta, omega = y[0], y[1]
    return fnp.stack([omega, -b * omega - c * fnp.sin(theta)])


T = np.linspace(0.0, 3.0, 7)
Y0 = np.array([np.pi - 0.1, 0.0])


def test_values_against_solve_ivp():
    ys = odeint(pend, Y0, T, 0.25, 5.0)
    ref = si.solve_ivp(
        lambda t, y: np.asarray(pend(y, t, 0.25, 5.0)), (0, 3), Y0, t_eval=T, rtol=1e-11, atol=1e-11
    )
    np.testing.assert_allclose(np.asarray(ys), ref.y.T, rtol=1e-6, atol=1e-7)
    assert ys.shape == (7, 2)


def test_gradients_against_finite_differences_and_jax():
    def loss(y0, t, b, c):
        return fnp.sum(odeint(pend, y0, t, b, c) ** 2)

    args = (Y0, T, np.float64(0.25), np.float64(5.0))
    check_grads(loss, args, order=1, modes=("rev",), rtol=1e-4, atol=1e-5, eps=1e-4)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental.ode import odeint as jodeint

    def jpend(y, t, b, c):
        return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])

    jg = jax.grad(lambda *a: jnp.sum(jodeint(jpend, *a) ** 2), argnums=(0, 1, 2, 3))(*args)
    g = funcgrad.grad(loss, argnums=(0, 1, 2, 3))(*args)
    for ours, theirs in zip(g, jg):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=1e-8)


def test_pytree_state_closures_and_vmap():
    k = 0.7

    def f(state, t):
        return {"x": -k * state["x"], "v": [state["v"][0] * 0.5]}

    out = odeint(f, {"x": np.ones(2), "v": [np.float64(2.0)]}, np.array([0.0, 1.0]))
    np.testing.assert_allclose(np.asarray(out["x"][1]), np.exp(-k) * np.ones(2), rtol=1e-7)
    np.testing.assert_allclose(float(out["v"][0][1]), 2 * np.exp(0.5), rtol=1e-7)

    # A closed-over value is differentiable (closure_convert hoists it).
    def final(k):
        return odeint(lambda y, t: -k * y, 1.0, np.array([0.0, 2.0]))[1]

    assert float(funcgrad.grad(final)(0.5)) == pytest.approx(-2 * np.exp(-1.0), rel=1e-6)
    ks = np.array([0.1, 0.5, 1.0])
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(final)(ks)), np.exp(-2 * ks), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(final)(0.5)), np.exp(-1.0), rtol=1e-7)


def test_options_and_errors():
    ys = odeint(lambda y, t: -y, 1.0, np.array([0.0, 10.0]), mxstep=3)
    assert float(ys[1]) > np.exp(-10.0) * 2  # stopped early after 3 steps
    ys = odeint(lambda y, t: -y, 1.0, np.array([0.0, 1.0]), rtol=1e-3, atol=1e-3, hmax=0.01)
    assert float(ys[1]) == pytest.approx(np.exp(-1), rel=1e-4)
    with pytest.raises(TypeError, match="t must be"):
        odeint(lambda y, t: -y, 1.0, np.array([0, 1]))
    with pytest.raises(TypeError, match="args"):
        odeint(lambda y, t, s: -y, 1.0, np.array([0.0, 1.0]), "slow")


def test_closure_convert_hoists_differentiable_closures():
    def outer(a, n):
        f = lambda x: a * x + n  # noqa: E731 - a is float (hoisted when traced), n an int
        conv, consts = closure_convert(f, 1.0)
        return conv(3.0, *consts), consts

    value, consts = outer(2.0, 1)
    assert float(value) == 7.0 and consts == []
    g = funcgrad.grad(lambda a: outer(a, 1)[0])(2.0)
    assert float(g) == 3.0
    conv, _ = closure_convert(lambda x, y: x * y, 1.0, 2.0)
    with pytest.raises(TypeError, match="structure"):
        conv((1.0, 2.0))


def test_complex_state_gradients_against_closed_form():
    # A complex state with real times (JAX's test_complex_odeint): the times' cotangents are
    # real (the adjoint's time carry was complex, and the scan refused it). y' = alpha y e^-t
    # has y(t) = y0 exp(alpha (e^-t0 - e^-t)); its gradients by autodiff are the reference.
    def loss(y0, ts, alpha):
        return fnp.sum(odeint(lambda y, t, a: a * y * fnp.exp(-t).astype(y.dtype), y0, ts, alpha).real)

    def exact(y0, ts, alpha):
        return fnp.sum((y0 * fnp.exp(alpha * (fnp.exp(-ts[0]) - fnp.exp(-ts)))).real)

    args = (1 + 2j, fnp.linspace(0.0, 1.0, 4), 3 + 4j)
    got = funcgrad.grad(loss, argnums=(0, 1, 2))(*args)
    want = funcgrad.grad(exact, argnums=(0, 1, 2))(*args)
    assert got[1].dtype == np.float64
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_eager_dynamics_over_new_arrays_reuse_the_compiled_integrator():
    # NOTE: [one compiled integrator per problem]: eagerly the captured arrays are arguments of
    # the integrator, so a lambda made at every call over new values compiles nothing new (under
    # a transformation only traced ones are hoisted, closure_convert's rule: the tests above).
    from funcgrad.xla_bridge import executables

    def solve(w):
        return odeint(lambda y, t: -w * y, np.ones(3), fnp.array([0.0, 0.5]))

    solve(np.array([1.0, 2.0, 3.0]))
    misses = executables._mem_stats["misses"]
    w = np.array([0.5, 1.5, 2.5])
    ys = solve(w)
    assert executables._mem_stats["misses"] == misses
    np.testing.assert_allclose(np.asarray(ys[1]), np.exp(-0.5 * w), rtol=1e-6)
