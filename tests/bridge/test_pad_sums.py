"""The cotangent of an array read in pieces lowers as one concatenation (NOTE: [sums of zero pads]
in xla_bridge/rules/_pad_sums.py): the values are jax's, and the lowered program has no sum of
padded pieces where the pieces are disjoint along one dimension."""

from __future__ import annotations

import numpy as np
import pytest
from funcgrad.xla_bridge.rules import _pad_sums

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _pieces(np_):
    """Functions reading their argument in pieces, written once for both libraries."""

    def qkv(x):  # attention's q, k, v = qkv[0], qkv[1], qkv[2]: pieces touching, in reverse order
        q, k, v = x[0], x[1], x[2]
        return np_.sum(np_.tanh(q * k) * v)

    def gaps(x):  # rows 0 and 2 of 5: zeros between and after the pieces
        return np_.sum(np_.sin(x[0]) * np_.cos(x[2]))

    def overlap(x):  # x[0:2] and x[1:3] overlap: a true sum
        return np_.sum(x[0:2] * x[1:3] ** 2)

    def two_axes(x):  # a piece along each of two dimensions: a true sum
        return np_.sum(np_.exp(x[0, :]) * x[:, 1])

    def split(x):  # jnp.split along the last dimension, three pieces
        a, b, c = np_.split(x, 3, axis=-1)
        return np_.sum(a * b - c**2)

    return {"qkv": qkv, "gaps": gaps, "overlap": overlap, "two_axes": two_axes, "split": split}


SHAPES = {"qkv": (3, 4, 5), "gaps": (5, 3), "overlap": (3, 4), "two_axes": (4, 4), "split": (2, 6)}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_gradients_of_pieces_as_jax(name, rng):
    x = rng.standard_normal(SHAPES[name]).astype(np.float32)
    x.flat[1] = np.nan if name == "gaps" else x.flat[1]  # a NaN in a piece stays where it is
    f, g = _pieces(fnp)[name], _pieces(jnp)[name]
    want = np.asarray(jax.jit(jax.grad(g))(x))
    got = np.asarray(funcgrad.jit(funcgrad.grad(f))(x))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # Per-example gradients (the pieces' dimension moved by vmap).
    xs = np.stack([x, 2 * x])
    want = np.asarray(jax.jit(jax.vmap(jax.grad(g)))(xs))
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(funcgrad.vmap(funcgrad.grad(f)))(xs)), want, rtol=1e-6, atol=1e-6
    )


def test_disjoint_pieces_lower_to_one_concatenate(rng):
    x = np.zeros((3, 4, 5), np.float32)
    f = _pieces(fnp)["qkv"]
    text = funcgrad.jit(funcgrad.grad(f)).lower(x).as_text()
    (out,) = [ln for ln in text.splitlines() if "return" in ln]
    result = out.split()[1]
    (line,) = [ln for ln in text.splitlines() if ln.strip().startswith(f"{result} = ")]
    assert "stablehlo.concatenate" in line and line.count("tensor<1x4x5xf32>") == 3, line
    # The overlapping pieces keep their sum of pads.
    text = funcgrad.jit(funcgrad.grad(_pieces(fnp)["overlap"])).lower(np.zeros((3, 4), np.float32)).as_text()
    assert "stablehlo.concatenate" not in text and "stablehlo.add" in text


def test_a_long_sum_of_pieces_stops_merging(rng):
    # A loop unrolled over 40 rows: merging stops at _MAX_PIECES pieces (each addition emits the
    # concatenation of all pieces so far: quadratic text for a long loop), the values stay jax's.
    x = rng.standard_normal((40, 3)).astype(np.float32)

    def f(np_, x):
        return sum(np_.sum(x[i] * i) for i in range(x.shape[0]))

    lowered = funcgrad.jit(funcgrad.grad(lambda x: f(fnp, x))).lower(x)
    widest = max(ln.count("tensor<1x3xf32>") for ln in lowered.as_text().splitlines() if "concatenate" in ln)
    assert widest == _pad_sums._MAX_PIECES
    want = jax.jit(jax.grad(lambda x: f(jnp, x)))(x)
    np.testing.assert_allclose(np.asarray(lowered.compile()(x)), np.asarray(want), rtol=1e-6, atol=1e-5)
