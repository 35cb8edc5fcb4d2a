"""Complex (complex64/complex128) linear algebra: the LAPACK primitives against NumPy/SciPy, jit
against eager, and derivatives of the public functions against finite differences, forward and
reverse, to second order (JAX's conventions for complex cotangents, as funcgrad.testing checks
them). The complex-number primitives (conj/real/imag) are composed where the catalog lacks them
(NOTE: [complex conjugation in linalg rules])."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from funcgrad.primitives import linalg as pla
from funcgrad.primitives import spectral as psp

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

RNG = np.random.default_rng(11)


def crand(shape, dtype=np.complex128):
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)


def hermitian_pd(n, batch=(), dtype=np.complex128):
    a = crand((*batch, n, n))
    return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


def close(a, b, dtype):
    tol = 1e-10 if np.dtype(dtype) == np.complex128 else 2e-4
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_primitives_match_numpy_and_jit(dtype):
    a, h = crand((2, 4, 4), dtype), hermitian_pd(4, (2,), dtype)
    close(pla.cholesky(h), np.linalg.cholesky(h), dtype)
    w, _ = np.linalg.eigh(h)
    close(psp.eigh(h)[1], w, dtype)
    close(psp.svd(a, compute_uv=False)[0], np.linalg.svd(a, compute_uv=False), dtype)
    q, r = pla.qr(a, full_matrices=False)
    close(np.asarray(q) @ np.asarray(r), a, dtype)
    close(fnp.linalg.det(a), np.linalg.det(a), dtype)
    close(fnp.linalg.solve(a, a), np.linalg.solve(a, a), dtype)
    close(fnp.linalg.eigvals(a), np.linalg.eigvals(a), dtype)
    close(pla.triangular_solve(np.tril(h), a, left_side=True, lower=True, transpose_a=True, conjugate_a=True),
          np.linalg.solve(np.swapaxes(np.tril(h), -1, -2).conj(), a), dtype)  # fmt: skip
    t, z = psp.schur(a[0])
    close(np.asarray(z) @ np.asarray(t) @ np.asarray(z).conj().T, a[0], dtype)
    for f in (
        pla.cholesky,
        lambda x: psp.eigh(x)[1],
        fnp.linalg.det,
        lambda x: fnp.linalg.slogdet(x)[1],
        fnp.linalg.inv,
    ):
        close(funcgrad.jit(f)(h), f(h), dtype)


@pytest.mark.parametrize(
    "name",
    ["cholesky", "inv", "solve", "det", "slogdet", "qr_r", "eigvals", "eigvalsh", "svdvals", "nuc", "fro"],
)
def test_complex_derivatives(name):
    square = crand((3, 3)) + 3 * np.eye(3)
    fns = {
        "cholesky": (fnp.linalg.cholesky, hermitian_pd(3)),
        "inv": (fnp.linalg.inv, square),
        "solve": (lambda m: fnp.linalg.solve(m, np.ones(3, complex)), square),
        "det": (fnp.linalg.det, crand((4, 4))),
        "slogdet": (lambda m: fnp.linalg.slogdet(m)[1], crand((4, 4))),
        "qr_r": (lambda m: fnp.linalg.qr(m)[1], crand((4, 3))),
        "eigvals": (fnp.linalg.eigvals, crand((3, 3))),
        "eigvalsh": (fnp.linalg.eigvalsh, hermitian_pd(3)),
        "svdvals": (fnp.linalg.svdvals, crand((3, 3))),
        "nuc": (lambda m: fnp.linalg.norm(m, "nuc"), crand((3, 3))),
        "fro": (fnp.linalg.norm, crand((3, 3))),
    }
    f, x = fns[name]
    if name == "eigvals":
        # first order only, as JAX: the second differentiates the eigenvectors its rule uses, which
        # JAX refuses (NotImplementedError) unless lax.linalg.eig(enable_eigvec_derivs=True)
        check_grads(f, (x,), order=1)
        with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
            funcgrad.hessian(lambda m: fnp.linalg.eigvals(m).real.sum(), holomorphic=False)(x.real)
        return
    check_grads(f, (x,), order=2)


def test_complex_scipy_functions():
    a = crand((3, 3)) * 0.5
    np.testing.assert_allclose(np.asarray(funcgrad.scipy.linalg.expm(a)), sl.expm(a), rtol=1e-10, atol=1e-12)
    h = hermitian_pd(3)
    np.testing.assert_allclose(np.asarray(funcgrad.scipy.linalg.sqrtm(h)), sl.sqrtm(h), rtol=1e-9, atol=1e-10)
