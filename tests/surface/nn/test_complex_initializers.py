"""variance_scaling of complex weights (flax's complex Dense layers): JAX's draws -- a complex
normal, or a modulus (truncated normal / uniform over the disk) and a uniform phase -- for the same
key, and the variance asked for."""

import numpy as np
import pytest

import funcgrad


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_complex_variance_scaling_is_jaxs(distribution):
    import jax

    init = funcgrad.nn.initializers.variance_scaling(2.0, "fan_in", distribution)
    got = init(funcgrad.random.key(0), (64, 32), np.complex64)
    want = jax.nn.initializers.variance_scaling(2.0, "fan_in", distribution)(
        jax.random.key(0), (64, 32), np.complex64
    )
    assert got.dtype == want.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    assert abs(np.var(np.asarray(got)) - 2.0 / 64) < 0.2 * 2.0 / 64
