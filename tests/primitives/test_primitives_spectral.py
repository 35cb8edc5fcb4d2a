"""eigh's eigenvalue-only gradients: the closed form ``V_S V_S^H`` (S the selected eigenvalues)
for real and complex Hermitian matrices, through one matrix product."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def _smallest3(a):
    return fnp.sum(fnp.linalg.eigh(a)[0][:3])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigenvalue_gradient_is_v_vh(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 12))
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal((12, 12))
    a = (a + a.conj().T) / 2
    _, v = np.linalg.eigh(a)
    want = v[:, :3] @ v[:, :3].conj().T
    got = np.asarray(funcgrad.grad(lambda x: fnp.real(_smallest3(x)))(a))
    # funcgrad (like jax) returns the conjugate cotangent for complex inputs.
    np.testing.assert_allclose(got, want.conj() if dtype == np.complex128 else want, atol=1e-10)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(funcgrad.grad(_smallest3))(a.real)),
        np.linalg.eigh(a.real)[1][:, :3] @ np.linalg.eigh(a.real)[1][:, :3].T,
        atol=1e-10,
    )


def test_eigenvalue_gradient_takes_one_matrix_product():
    # V diag(ct) V^H as (V * ct) @ V^H: the eigenvector derivative's products are dead code, and
    # no product with a dense diagonal matrix remains (it cost a second n^3 product per gradient).
    jaxpr = funcgrad.make_jaxpr(funcgrad.grad(_smallest3))(np.eye(6))
    prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert prims.count("dot_general") == 1, prims
