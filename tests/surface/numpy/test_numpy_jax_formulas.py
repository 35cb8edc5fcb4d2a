"""jax.numpy functions whose numbers follow JAX's formula where NumPy's differs (found by session 21's
signature-driven fuzzer, tests/integration/_fuzz/ops_sig.py): values, NaN positions and dtypes against
jax 0.10.2, eagerly and under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax.config.update("jax_enable_x64", True)


def _same(fn, *args, **kw):
    want = fn(jnp, *args, **kw)
    for got in (fn(fnp, *args, **kw), funcgrad.jit(lambda *a: fn(fnp, *a, **kw))(*args)):
        np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(np.asarray(want)))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=0)
        assert got.dtype == want.dtype


@pytest.mark.parametrize(
    "start, stop, kw",
    [
        # endpoints of opposite signs, a zero start: NaN throughout in JAX (the endpoints too: NumPy
        # and funcgrad before put start and stop back exactly)
        (1.0, np.array([-3.0, 2.0, -2.0, 1.0, 0.0]), {"num": 4, "endpoint": False}),
        (np.array([-3.0, 2.0, 0.0, 1.0]), 2.0, {"num": 3, "axis": -1}),
        (np.array([-3.0, -2.0]), np.array([-1.0, 4.0]), {"num": 5}),
        (1.0, 3.0, {"num": 4, "dtype": np.int32}),  # (computed in float, then cast)
        (1 + 1j, 8j, {"num": 3}),
        (2.0, 3.0, {"num": 0, "axis": 0}),
    ],
)
def test_geomspace_as_jax(start, stop, kw):
    _same(lambda m, a, b: m.geomspace(a, b, **kw), start, stop)


@pytest.mark.parametrize(
    "conds",
    [
        [np.array([1.5, 0.0, np.nan]), np.array([True, False, False])],  # (a float condition: NaN is true)
        [np.array([0, 2, 0], np.int32), np.array([True, True, False])],
        [float("nan"), np.array([True, False, True])],
    ],
)
def test_select_takes_conditions_of_any_dtype_as_jax(conds):
    choices = [np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])]
    _same(lambda m, *c: m.select(list(c), choices, -1.0), *conds)


@pytest.mark.parametrize("conds, choices", [([], []), ([np.array([True])], [])])
def test_select_errors_as_jax(conds, choices):
    with pytest.raises(ValueError) as want:
        jnp.select(conds, choices)
    with pytest.raises(ValueError) as got:
        fnp.select(conds, choices)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("args", [(2.0,), (np.ones((2, 2)), np.ones(3)), (np.ones(2), np.float32(1))])
def test_meshgrid_refuses_what_is_not_1d_as_jax(args):
    with pytest.raises(ValueError) as want:
        jnp.meshgrid(*args)
    with pytest.raises(ValueError) as got:
        fnp.meshgrid(*args)
    assert str(got.value) == str(want.value)
    ok = [np.arange(2.0), np.arange(3)]
    for a, b in zip(fnp.meshgrid(*ok, indexing="ij"), jnp.meshgrid(*ok, indexing="ij")):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "args, error",
    [((np.array([True, False]),), NotImplementedError), ((np.ones((2, 2), int),), ValueError)],
)
def test_ix_refuses_masks_and_matrices_as_jax(args, error):
    with pytest.raises(error) as want:
        jnp.ix_(*args)
    with pytest.raises(error) as got:
        fnp.ix_(*args)
    assert str(got.value) == str(want.value)
    rows, cols = np.array([0, 1]), np.array([2, 0, 1])
    for a, b in zip(fnp.ix_(rows, cols), jnp.ix_(rows, cols)):
        np.testing.assert_array_equal(a, b)
