"""op_db entries: the linear-algebra families (primitives/linalg.py, tridiagonal.py) -- cholesky,
triangular_solve, lu, qr, householder_product, tridiagonal_solve.

Inputs are well conditioned (positive definite with a margin, triangular with diagonals away from
zero, pivots well separated) so that finite differences resolve the derivatives in float64;
references are independent NumPy/SciPy computations (dense solves, explicit reflector products,
scipy's factorisations with a Python loop for the permutation).
"""

from __future__ import annotations

import itertools

import numpy as np
from funcgrad.primitives import linalg as la
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from op_db._base import OpInfo, Sample


def _batch():
    return hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)


def square_shapes(min_side=0, max_side=4):
    return st.builds(lambda b, n: (*b, n, n), _batch(), st.integers(min_side, max_side))


def matrix_shapes(min_side=0, max_side=4):
    return st.builds(
        lambda b, m, n: (*b, m, n), _batch(), st.integers(min_side, max_side), st.integers(min_side, max_side)
    )


def normal(rng, shape, dtype):
    return np.asarray(rng.standard_normal(shape), dtype)


def spd(rng, shape, dtype):
    """Symmetric positive definite with eigenvalues >= n (well conditioned)."""
    x = rng.standard_normal(shape)
    n = shape[-1]
    return np.asarray(x @ np.swapaxes(x, -1, -2) / max(n, 1) + np.eye(n) * (n + 1), dtype)


def triangular(rng, shape, dtype, lower=True):
    """Triangular with diagonal entries of magnitude in [1, 2] (random signs), noise elsewhere."""
    n = shape[-1]
    x = rng.uniform(-0.5, 0.5, shape)
    d = rng.uniform(1.0, 2.0, shape[:-1]) * rng.choice([-1.0, 1.0], shape[:-1])
    x = x + np.einsum("...i,ij->...ij", d, np.eye(n))
    return np.asarray(np.tril(x) if lower else np.triu(x), dtype)


def _upcast(x):
    return np.asarray(x, np.complex128 if np.asarray(x).dtype.kind == "c" else np.float64)


# ----------------------------------------------------------------------------------------------
# References


def _cholesky_of_hermitian_part(a):
    # JAX's rule takes the whole tangent while the factorisation reads one triangle, so finite
    # differences of the bare primitive disagree with it (jax's too); on the Hermitian part, which
    # jnp.linalg.cholesky factorises, they agree (the samples are Hermitian: the same values)
    return la.cholesky((a + np.swapaxes(a, -1, -2).conj()) * 0.5)


def _cholesky_ref(a):
    a = _upcast(a)
    full = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2).conj()
    return np.linalg.cholesky(full) if a.size else np.zeros_like(a)


def _op_a(a, lower, transpose_a, conjugate_a, unit_diagonal):
    a = _upcast(a)
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        a = a - a * np.eye(n) + np.eye(n)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    return a.conj() if conjugate_a else a


def _ts_ref(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    op = _op_a(a, lower, transpose_a, conjugate_a, unit_diagonal)
    b = _upcast(b)
    if b.size == 0:
        return b
    if left_side:
        return np.linalg.solve(op, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _ts_sampler(left_side, lower, transpose_a, unit_diagonal):
    def sampler(shape, dtype, rng):
        *batch, m, n = shape
        k = m if left_side else n
        a = triangular(rng, (*batch, k, k), dtype, lower)
        params = dict(
            left_side=left_side,
            lower=lower,
            transpose_a=transpose_a,
            conjugate_a=False,
            unit_diagonal=unit_diagonal,
        )
        return Sample((a, normal(rng, shape, dtype)), params)

    return sampler


def _permutation(pivots, m):
    perm = list(range(m))
    for i, j in enumerate(pivots):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _lu_ref(a):
    import scipy.linalg

    a = _upcast(a)
    *batch, m, n = a.shape
    k = min(m, n)
    lu_ = np.zeros_like(a)
    pivots = np.zeros((*batch, k), np.int32)
    perm = np.zeros((*batch, m), np.int32)
    for idx in np.ndindex(*batch):
        if a.size:
            lu_[idx], piv = scipy.linalg.lu_factor(a[idx], check_finite=False)
            pivots[idx] = piv[:k]
        else:
            pivots[idx] = np.arange(k)
        perm[idx] = _permutation(pivots[idx], m)
    return [lu_, pivots, perm]


def _lu_sampler(shape, dtype, rng):
    # Entries of distinct magnitudes: the pivot choices are stable under small perturbations.
    return Sample((normal(rng, shape, dtype),), {})


def _qr_ref(a, *, pivoting, full_matrices):
    import scipy.linalg

    a = _upcast(a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    q = np.zeros((*batch, m, k), a.dtype)
    r = np.zeros((*batch, k, n), a.dtype)
    p = np.zeros((*batch, n), np.int32)
    for idx in np.ndindex(*batch):
        if a.size == 0:
            q[idx] = np.eye(m, k)
            continue
        mode = "full" if full_matrices else "economic"
        out = scipy.linalg.qr(a[idx], mode=mode, pivoting=pivoting)
        q[idx], r[idx] = out[0], out[1]
        if pivoting:
            p[idx] = out[2]
    return [q, r, p] if pivoting else [q, r]


def _geqrf_ref(a):
    import scipy.linalg

    a = np.asarray(a)
    *batch, m, n = a.shape
    packed, taus = np.zeros_like(a), np.zeros((*batch, min(m, n)), a.dtype)
    for idx in np.ndindex(*batch):
        if a.size:
            (packed[idx], taus[idx]), _ = scipy.linalg.qr(a[idx], mode="raw")
    return packed, taus


def _householder_ref(a, taus):
    a, taus = _upcast(a), _upcast(taus)
    *batch, m, n = a.shape
    k = taus.shape[-1]
    out = np.zeros_like(a)
    for idx in np.ndindex(*batch):
        q = np.eye(m, dtype=a.dtype)
        for i in range(k):
            v = np.zeros(m, a.dtype)
            v[i] = 1.0
            v[i + 1 :] = a[idx][i + 1 :, i]
            q = q @ (np.eye(m) - taus[idx][i] * np.outer(v, v.conj()))
        out[idx] = q[:, :n]
    return out


def _householder_sampler(shape, dtype, rng):
    *batch, m, n = shape
    m = max(m, n)
    k = max(n - 1, 0)
    a = normal(rng, (*batch, m, n), dtype) * 0.5
    taus = np.asarray(rng.uniform(0.5, 1.5, (*batch, k)), dtype)
    return Sample((a, taus), {})


def _tridiagonal_ref(dl, d, du, b, perturb_singular=False):
    dl, d, du, b = (_upcast(x) for x in (dl, d, du, b))
    m = d.shape[-1]
    a = np.zeros((*d.shape, m), d.dtype)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return np.linalg.solve(a, b) if b.size else b


def _tridiagonal_sampler(shape, dtype, rng, perturb_singular=False):
    *batch, m, k = shape
    d = rng.uniform(3.0, 4.0, (*batch, m)) * rng.choice([-1.0, 1.0], (*batch, m))
    dl, du = rng.uniform(-1, 1, (*batch, m)), rng.uniform(-1, 1, (*batch, m))
    arrays = (np.asarray(x, dtype) for x in (dl, d, du, rng.standard_normal(shape)))
    return Sample(tuple(arrays), dict(perturb_singular=perturb_singular))


_SQUARE_SAMPLES = ((3, 3), (2, 2, 2))
_TALL_SAMPLES = ((4, 3), (2, 3, 2))
_WIDE_SAMPLES = ((3, 4), (2, 2, 3))
TS_VARIANTS = [
    (True, True, False, False),
    (True, False, True, False),
    (False, True, True, True),
    (False, False, False, False),
]

# fmt: off
OPS = [
    OpInfo("cholesky", la.cholesky_p, _cholesky_of_hermitian_part, _cholesky_ref,
           lambda shape, dtype, rng: Sample((spd(rng, shape, dtype),), {}), square_shapes(),
           sample_shapes=_SQUARE_SAMPLES, rtol=1e-10, atol=1e-10),
    *(OpInfo(f"triangular_solve_{'left' if left else 'right'}_{'lower' if lower else 'upper'}"
             f"{'_T' if trans else ''}{'_unit' if unit else ''}", la.triangular_solve_p,
             la.triangular_solve, _ts_ref, _ts_sampler(left, lower, trans, unit), matrix_shapes(),
             sample_shapes=((3, 2), (2, 3, 3)), linear_argnums=((1,),), rtol=1e-9, atol=1e-10)
      for left, lower, trans, unit in TS_VARIANTS),
    *(OpInfo(f"lu_{kind}", la.lu_p, la.lu, _lu_ref, _lu_sampler, matrix_shapes(), sample_shapes=samples,
             rtol=1e-10, atol=1e-10)
      for kind, samples in (("square", _SQUARE_SAMPLES), ("tall", _TALL_SAMPLES), ("wide", _WIDE_SAMPLES))),
    *(OpInfo(f"qr_{kind}{'_full' if full else ''}{'_pivoting' if piv else ''}", la.qr_p,
             lambda a, *, pivoting, full_matrices: la.qr(a, pivoting=pivoting, full_matrices=full_matrices),
             _qr_ref,
             lambda shape, dtype, rng, piv=piv, full=full: Sample(
                 (normal(rng, shape, dtype),), dict(pivoting=piv, full_matrices=full)),
             matrix_shapes(), sample_shapes=samples, rtol=1e-9, atol=1e-10)
      for (kind, samples), full, piv in itertools.product(
          (("tall", _TALL_SAMPLES), ("wide", _WIDE_SAMPLES), ("square", _SQUARE_SAMPLES)), (False, True),
          (False, True))),
    OpInfo("geqrf", la.geqrf_p, la.geqrf, _geqrf_ref, _lu_sampler, matrix_shapes(),
           sample_shapes=_TALL_SAMPLES,
           rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),  # (JAX's, in its words)
    OpInfo("householder_product", la.householder_product_p, la.householder_product, _householder_ref,
           _householder_sampler, matrix_shapes(), sample_shapes=((4, 3), (2, 3, 2)), rtol=1e-10, atol=1e-10,
           differentiable=False, derivative_error=NotImplementedError),  # (JAX defines none)
    *(OpInfo("tridiagonal_solve" + ("_perturbed" if perturb else ""), la.tridiagonal_solve_p,
             la.tridiagonal_solve, _tridiagonal_ref,
             lambda shape, dtype, rng, p=perturb: _tridiagonal_sampler(shape, dtype, rng, p),
             matrix_shapes(min_side=1), sample_shapes=((4, 2), (2, 3, 1)), linear_argnums=((3,),), rtol=1e-10,
             atol=1e-10)
      for perturb in (False, True)),
]
# fmt: on

__all__ = ["OPS", "matrix_shapes", "normal", "spd", "square_shapes"]
