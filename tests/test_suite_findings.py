"""Bugs that the external suites (HIPS autograd's tests through suites/autograd_shim, the Array API
conformance suite, JAX's and autograd's example programs) found in funcgrad, each checked against a
closed form or NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


@pytest.mark.parametrize("x, y", [(2.0, 2.0), (-3.0, 3.0), (0.5, -0.5), (3.0, 4.0), (1e-200, 1e-200)])
def test_hypot_second_derivatives_at_equal_magnitudes(x, y):
    # d2r/dx2 = y^2/r^3, d2r/dxdy = -xy/r^3: JAX's max/min formula splits the tie |x| == |y| and gets 0.
    r = np.hypot(x, y)
    h = funcgrad.hessian(fnp.hypot, argnums=(0, 1))(x, y)
    u, v = x / r, y / r  # (scaled: r**3 underflows for tiny sides)
    expected = [[v * v / r, -u * v / r], [-u * v / r, u * u / r]]
    np.testing.assert_allclose(np.array([[float(v) for v in row] for row in h]), expected, rtol=1e-12)
