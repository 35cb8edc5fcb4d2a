"""The generic reduce_window (a user's reducer) leaves padding and base-dilation holes out of each
window, as XLA's ReduceWindow and jax do, eagerly as under jit: with a non-identity init_value the
eager result combined the padded elements as init values (JAX's lax_test testReduceWindowGeneralJVP:
1 + 1 + 1 = 3 where jax gives 1)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (as funcgrad's default mode: the oracle modules' rule)

X = np.arange(1.0, 7.0).reshape(2, 3) / 10


@pytest.mark.parametrize("padding", ["VALID", ((1, 1), (0, 0)), ((0, 3), (1, 2))])
@pytest.mark.parametrize("base_dilation", [(1, 1), (2, 1)])
def test_generic_reduce_window_skips_padding_as_jax(padding, base_dilation):
    def f(lib, x):
        return lib.lax.reduce_window(x, 1.0, lambda a, b: a * 2.0 + b, (2, 1), (1, 1), padding, base_dilation)

    want = np.asarray(f(jax, X))
    np.testing.assert_allclose(np.asarray(f(funcgrad, X)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(lambda x: f(funcgrad, x))(X)), want, rtol=1e-12)
