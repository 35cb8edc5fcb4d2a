"""A cotangent sum whose last term is a broadcast lowers with a full-size last addition (NOTE: [a
broadcast last in a cotangent sum] in xla_bridge/rules/_cotangent_sums.py): the values are jax's
(to rounding: the sum's order differs), and XLA no longer recomputes a residual stream's
cotangent chain in every consumer."""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # the oracle in funcgrad's default mode (float64 inputs stay)
jnp = jax.numpy


def _residual_norms(np_, depth):
    """A residual stream through ``depth`` layer norms, each followed by a dense layer: the
    stream's cotangent is a chain of sums ending in each norm's mean-term broadcast."""

    def norm(h):
        mu = np_.mean(h, axis=-1, keepdims=True)
        var = np_.mean((h - mu) ** 2, axis=-1, keepdims=True)
        return (h - mu) / np_.sqrt(var + 1e-5)

    def f(ws, x):
        h = x
        for w in ws:
            h = h + np_.tanh(norm(h) @ w)
        return np_.sum(norm(h) ** 3)

    return f


def _args(rng, depth, dtype):
    ws = [(rng.standard_normal((16, 16)) * 0.3).astype(dtype) for _ in range(depth)]
    return ws, rng.standard_normal((4, 8, 16)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_as_jax(dtype, rng):
    ws, x = _args(rng, 2, dtype)
    f, g = _residual_norms(fnp, 2), _residual_norms(jnp, 2)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    want = jax.jit(jax.grad(g, argnums=(0, 1)))(ws, x)
    got = funcgrad.jit(funcgrad.grad(f, argnums=(0, 1)))(ws, x)
    eager = funcgrad.grad(f, argnums=(0, 1))(ws, x)  # the jaxpr's own order
    leaves = jax.tree_util.tree_leaves
    for a, b, c in zip(leaves(want), leaves(got), leaves(eager)):
        assert np.asarray(b).dtype == np.asarray(a).dtype
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(b), np.asarray(c), rtol=tol, atol=tol)
    # Per-example gradients (the vmapped program's sums carry a batch dimension).
    want = jax.jit(jax.vmap(jax.grad(lambda ws, xi: g(ws, xi[None])), in_axes=(None, 0)))(ws, x)
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda ws, xi: f(ws, xi[None])), in_axes=(None, 0)))(ws, x)
    for a, b in zip(leaves(want), leaves(got)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=tol, atol=tol)


def test_special_values_as_jax():
    # An inf in the stream: the reordered sum gives the same NaN/inf pattern as jax's.
    x = np.ones((2, 3, 4), np.float32)
    x[0, 1, 2] = np.inf
    ws = [np.eye(4, dtype=np.float32)]
    want = np.asarray(jax.jit(jax.grad(_residual_norms(jnp, 1), argnums=1))(ws, x))
    got = np.asarray(funcgrad.jit(funcgrad.grad(_residual_norms(fnp, 1), argnums=1))(ws, x))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=2e-5, atol=2e-5)


def test_per_example_cotangents_are_materialised_once(rng):
    # The stream's cotangent is materialised once: XLA keeps no loop fusion that re-adds the
    # whole chain (in JAX's order this 3-layer per-example program had loop fusions of 16 and 23
    # operands, each layer's consumers re-adding every layer above). Values: test_gradients_as_jax.
    ws, x = _args(rng, 3, np.float32)
    f = _residual_norms(fnp, 3)
    pe = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda ws, xi: f(ws, xi[None])), in_axes=(None, 0)))
    hlo = pe.lower(ws, x).compile().as_text()  # (the tests' cheap compiles fuse alike)
    entry = hlo[hlo.index("ENTRY") :]
    widths = [ln.count("%") - 1 for ln in entry.splitlines() if re.search(r"\bfusion\(.*kind=kLoop", ln)]
    assert widths and max(widths) <= 12, sorted(widths)[-5:]
