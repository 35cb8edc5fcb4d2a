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


def test_special_functions_broadcast_their_arguments():
    # scipy.special's functions are ufuncs; poisson.cdf with k (4, 3) and mu (4, 1) failed in lax.igammac
    import scipy.special as sps
    import scipy.stats as sst

    import funcgrad.scipy.special as fsp
    import funcgrad.scipy.stats as fst

    rng = np.random.default_rng(0)
    a, x = rng.uniform(0.5, 3, (4, 3)), rng.uniform(0.5, 3, (4, 1))
    for name in ("gammainc", "gammaincc", "xlogy", "betaln", "poch"):
        np.testing.assert_allclose(getattr(fsp, name)(a, x), getattr(sps, name)(a, x), rtol=1e-10)
    np.testing.assert_allclose(fsp.betainc(a, x, 0.3), sps.betainc(a, x, 0.3), rtol=1e-10)
    k = np.floor(a * 2)
    np.testing.assert_allclose(fst.poisson.cdf(k, x), sst.poisson.cdf(k, x), rtol=1e-10)
    g = funcgrad.grad(lambda mu: fnp.sum(fst.poisson.cdf(k, mu)))(x)
    assert g.shape == (4, 1) and np.all(np.isfinite(g))


@pytest.mark.parametrize("narrow", ["bfloat16", "float8_e4m3fn", "int4"])
def test_issubdtype_of_a_narrow_type_against_every_abstract_type(narrow):
    # issubdtype(bfloat16, complexfloating) raised "Converting np.complex to a dtype" (found adding
    # dtypes.scalar_type_of)
    jnp = pytest.importorskip("jax.numpy")
    for abstract in (
        np.generic,
        np.number,
        np.inexact,
        np.floating,
        np.complexfloating,
        np.integer,
        np.bool_,
    ):
        assert fnp.issubdtype(narrow, abstract) == jnp.issubdtype(narrow, abstract), abstract


def test_i0_derivatives_at_zero_with_abs_prime_one():
    # i0 = exp(|x|) i0e(x): with JAX's abs'(0) = 1 the product rule gave i0'(0) = 1; i0' = i1 and
    # i0'' = (i0 + i2) / 2 hold at every x, 0 included.
    import scipy.special as sps

    x = np.array([-1.5, -1e-3, 0.0, 1e-3, 2.0])
    g = funcgrad.vmap(funcgrad.grad(fnp.i0))(x)
    np.testing.assert_allclose(g, sps.i1(x), rtol=1e-12, atol=1e-15)
    gg = funcgrad.vmap(funcgrad.grad(funcgrad.grad(fnp.i0)))(x)
    np.testing.assert_allclose(gg, (sps.i0(x) + sps.iv(2, x)) / 2, rtol=1e-12)
