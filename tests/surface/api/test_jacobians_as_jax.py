"""Jacobians and Hessians where derivatives are NaN or inf, as jax 0.10.2 computes them: eagerly a
product with the basis' zeros is NaN (0 * NaN), under ``jit`` XLA turns the product with the traced
identity (``iota == iota``, JAX's ``jnp.eye``) into a select, so entries off the diagonal are 0
(found by the transformation-composition fuzzer, session 19: funcgrad's jitted basis was a
constant, and its Hessians NaN off the diagonal). Eagerly, ``jacrev(jacrev(f))`` of a scalar ``f``
sums its one-row basis away: a sum over axes of size 1 keeps -0.0, as XLA's (it was +0.0)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default mode)

_FUNCTIONS = {"sin": "np_.sin", "exp": "np_.exp", "cos": "np_.cos", "cube": "lambda v: v * v * v"}


def _program(T, np_, name, how, jit):
    fn = eval(_FUNCTIONS[name], {"np_": np_})
    f = lambda y: np_.sum(T.vmap(fn)(y))  # noqa: E731
    outer, inner = ("jacfwd", "jacrev") if how == "hessian" else how.split("_")
    g = getattr(T, outer)(getattr(T, inner)(f))
    return T.jit(g) if jit else g


def _same(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got) & ~np.isnan(got), np.signbit(want) & ~np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
@pytest.mark.parametrize("how", ["hessian", "jacfwd_jacfwd", "jacrev_jacrev", "jacrev_jacfwd"])
@pytest.mark.parametrize("jit", [True, False])
def test_second_derivatives_at_nan_and_inf_as_jax(name, how, jit):
    x = np.array([0.0, 1.0, np.nan, np.inf, -np.inf, -0.0])
    want = np.asarray(_program(jax, jax.numpy, name, how, jit)(x))
    _same(np.asarray(_program(funcgrad, fnp, name, how, jit)(x)), want)


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("jit", [True, False])
def test_jacobian_of_an_elementwise_map_at_nan_as_jax(kind, jit):
    x = np.array([0.0, np.nan, 2.0, np.inf])
    got, want = (
        np.asarray((T.jit(getattr(T, kind)(np_.sin)) if jit else getattr(T, kind)(np_.sin))(x))
        for T, np_ in ((funcgrad, fnp), (jax, jax.numpy))
    )
    _same(got, want)


def test_sum_over_axes_of_size_one_keeps_minus_zero_as_jax():
    for x, axes in (
        (np.full((2, 1, 2), -0.0), (1,)),
        (np.full((1, 1, 3), -0.0), (0, 1)),
        (np.full((2, 3), -0.0), (0,)),
    ):
        got = np.asarray(funcgrad.lax.reduce_sum(x, axes))
        want = np.asarray(jax.lax.reduce_sum(x, axes))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
