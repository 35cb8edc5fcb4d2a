"""funcgrad.scipy.special.wofz and sph_harm_y against SciPy (values), jax.scipy.special (the oracle,
values and derivatives) and closed forms: dtypes, holomorphic derivatives, finite differences in
float64, jit against eager, vmap against a loop, broadcasting and errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import funcgrad
from funcgrad.scipy import special as fs
from funcgrad.testing import check_grads

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
import jax.scipy.special as js  # noqa: E402

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(0)
Z = RNG.normal(size=3000) * np.exp(RNG.uniform(-3, 3, 3000)) + 1j * RNG.normal(size=3000) * np.exp(
    RNG.uniform(-3, 2, 3000)
)
Z = Z[np.isfinite(sp.wofz(Z))]


def test_wofz_matches_scipy_and_jax():
    ours = np.asarray(fs.wofz(Z))
    assert ours.dtype == np.complex128
    np.testing.assert_allclose(ours, sp.wofz(Z), rtol=5e-13)
    np.testing.assert_allclose(ours, js.wofz(Z), rtol=1e-14)
    z32 = Z.astype(np.complex64)
    ours32 = fs.wofz(z32)
    assert ours32.dtype == np.complex64
    theirs32 = np.asarray(js.wofz(z32))  # overflows (nan) where jax's float32 does too
    np.testing.assert_array_equal(np.isfinite(ours32), np.isfinite(theirs32))
    finite = np.isfinite(theirs32)
    np.testing.assert_allclose(np.asarray(ours32)[finite], sp.wofz(Z)[finite], rtol=2e-5, atol=1e-6)
    assert fs.wofz(np.float32(1.0)).dtype == np.complex64


def test_wofz_closed_forms():
    # w(0) = 1; on the imaginary axis w(iy) = erfcx(y); on the real axis Im w(x) = 2 dawsn(x) / sqrt(pi).
    assert complex(fs.wofz(0.0)) == pytest.approx(1.0, abs=1e-13)  # Weideman's 32 terms: 3e-14
    y = np.linspace(0.0, 8.0, 17)
    # (Weideman's approximation is accurate to ~5e-14 in absolute terms)
    np.testing.assert_allclose(fs.wofz(1j * y).real, sp.erfcx(y), atol=1e-13)
    x = np.linspace(-6, 6, 25)
    np.testing.assert_allclose(fs.wofz(x).imag, 2 * sp.dawsn(x) / np.sqrt(np.pi), atol=1e-13)
    np.testing.assert_allclose(fs.wofz(x).real, np.exp(-(x**2)), atol=1e-13)


def test_wofz_derivatives():
    z = np.array([0.3 + 0.7j, -1.2 + 0.2j, 2.0 - 0.5j, -0.4 - 1.1j])
    jax_grad = jax.jit(jax.grad(js.wofz, holomorphic=True))  # (one program, not one per operation)
    for zk in z:
        ours = funcgrad.grad(fs.wofz, holomorphic=True)(zk)
        assert complex(ours) == pytest.approx(complex(jax_grad(zk)), rel=1e-12)
        assert complex(ours) == pytest.approx(complex(-2 * zk * sp.wofz(zk) + 2j / np.sqrt(np.pi)), rel=1e-12)
    check_grads(fs.wofz, (z,), order=2)
    check_grads(lambda x: fs.wofz(x).imag, (np.array([0.3, -1.5, 4.0]),), order=2)


def test_wofz_jit_and_vmap():
    z = Z[:50].reshape(5, 10)
    np.testing.assert_allclose(funcgrad.jit(fs.wofz)(z), fs.wofz(z), rtol=1e-14)
    np.testing.assert_allclose(funcgrad.vmap(fs.wofz)(z), np.stack([fs.wofz(r) for r in z]), rtol=1e-15)


N = np.array([0, 1, 1, 1, 2, 2, 2, 3, 5, 5, 7, 4, 10, 12])
M = np.array([0, 0, 1, -1, -2, 1, 2, -3, 4, -5, 6, 5, -7, 12])


def test_sph_harm_y_matches_scipy_and_jax():
    # theta beyond [0, pi] too: Y is even in theta in SciPy and JAX (odd orders flipped sign at
    # negative angles; JAX's lax_scipy_test uses theta in [-2, 1])
    theta = RNG.uniform(-2 * np.pi, 2 * np.pi, N.shape)
    phi = RNG.uniform(0, 2 * np.pi, N.shape)
    ours = fs.sph_harm_y(N, M, theta, phi)
    assert ours.dtype == np.complex128
    np.testing.assert_allclose(ours, sp.sph_harm_y(N, M, theta, phi), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours, js.sph_harm_y(N, M, theta, phi), rtol=1e-12, atol=1e-14)
    # Broadcasting (as SciPy), the poles, |m| > n, float32.
    n, m = np.arange(6)[:, None, None], np.arange(-6, 7)[None, :, None]
    t = np.array([0.0, 0.4, np.pi / 2, 2.9, np.pi])[None, None, :]
    np.testing.assert_allclose(
        fs.sph_harm_y(n, m, t, 0.8), sp.sph_harm_y(n, m, t, 0.8), rtol=1e-12, atol=1e-14
    )
    out32 = fs.sph_harm_y(N, M, theta.astype(np.float32), phi.astype(np.float32))
    assert out32.dtype == np.complex64
    np.testing.assert_allclose(out32, sp.sph_harm_y(N, M, theta, phi), rtol=1e-4, atol=1e-5)


def test_sph_harm_y_closed_forms_and_orthonormality():
    t, p = 0.9, 0.3
    assert complex(fs.sph_harm_y(0, 0, t, p)) == pytest.approx(0.5 / np.sqrt(np.pi))
    assert complex(fs.sph_harm_y(1, 0, t, p)) == pytest.approx(np.sqrt(3 / (4 * np.pi)) * np.cos(t))
    expected = -np.sqrt(3 / (8 * np.pi)) * np.sin(t) * np.exp(1j * p)
    assert complex(fs.sph_harm_y(1, 1, t, p)) == pytest.approx(expected)
    # Gauss-Legendre in cos(theta) x uniform in phi: <Y_a, Y_b> = delta_ab.
    x, w = np.polynomial.legendre.leggauss(16)
    phis = np.linspace(0, 2 * np.pi, 32, endpoint=False)
    thetas = np.arccos(x)[:, None]
    pairs = [(2, 1), (3, -2), (4, 0), (4, 1)]
    ys = [np.asarray(fs.sph_harm_y(n, m, thetas, phis[None, :])) for n, m in pairs]
    gram = np.array([[np.sum(w[:, None] * a * np.conj(b)) * 2 * np.pi / 32 for b in ys] for a in ys])
    np.testing.assert_allclose(gram, np.eye(len(pairs)), atol=1e-12)


def test_sph_harm_y_derivatives_jit_vmap():
    theta = RNG.uniform(0.2, 2.9, N.shape)
    phi = RNG.uniform(0, 2 * np.pi, N.shape)
    check_grads(lambda t, p: fs.sph_harm_y(N, M, t, p), (theta, phi), order=2)
    ours = funcgrad.grad(lambda t: fs.sph_harm_y(N, M, t, phi).real.sum())(theta)
    theirs = jax.jit(jax.grad(lambda t: js.sph_harm_y(N, M, t, phi).real.sum()))(theta)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    # At the poles the gradient stays finite (no 0/0 in the recurrence's unused branches).
    g = funcgrad.grad(lambda t: fs.sph_harm_y(N, M, t, phi).real.sum())(np.zeros(N.shape))
    assert np.all(np.isfinite(g))
    f = lambda n, m, t: fs.sph_harm_y(n, m, t, 0.4, n_max=12)  # noqa: E731
    np.testing.assert_allclose(funcgrad.jit(f)(N, M, theta), f(N, M, theta), rtol=1e-12, atol=1e-14)
    batched = funcgrad.vmap(f, in_axes=(0, 0, None))(np.stack([N, N]), np.stack([M, -M]), theta)
    np.testing.assert_allclose(batched, np.stack([f(N, M, theta), f(N, -M, theta)]), rtol=1e-12, atol=1e-14)


def test_sph_harm_y_errors():
    with pytest.raises(NotImplementedError, match="diff_n=1"):
        fs.sph_harm_y(1, 0, 0.3, 0.1, diff_n=1)
    with pytest.raises(TypeError, match="integers"):
        fs.sph_harm_y(1.0, 0, 0.3, 0.1)
    with pytest.raises(ValueError, match="n_max=2 is smaller than the largest degree 3"):
        fs.sph_harm_y(np.array([1, 3]), 0, 0.3, 0.1, n_max=2)
    with pytest.raises(TypeError, match="pass n_max"):
        funcgrad.jit(lambda n: fs.sph_harm_y(n, 0, 0.3, 0.1))(np.array(2))
