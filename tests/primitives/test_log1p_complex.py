"""Eager log1p of complex values is accurate near 0, as XLA's (and jax's): NumPy's complex log1p
is log(1 + z), which lost the digits of a small z (JAX's lax_test testLog1pNearOne: 1.0014e-05 for
1e-05 in complex64, 1 ULP expected)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (as funcgrad's default mode: the oracle modules' rule)

Z = [1e-5, 1e-5 + 1e-5j, -1e-7j, -0.3 + 0.2j, 0.4 - 0.3j, 2 + 3j, -2 + 0.5j, 1e30 + 1e30j, -1 + 0j]


@pytest.mark.parametrize("dtype, rtol", [(np.complex64, 3e-7), (np.complex128, 1e-15)])
def test_complex_log1p_as_jax(dtype, rtol):
    z = np.array(Z, dtype)
    got, want = np.asarray(funcgrad.lax.log1p(z)), np.asarray(jax.lax.log1p(z))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol)
    real = np.dtype(dtype).type(0).real.dtype.type
    np.testing.assert_array_almost_equal_nulp(got[0], np.log1p(real(1e-5)).astype(dtype), 1)
