"""op_db entries: the spectral family (primitives/spectral.py) -- eigh, svd, eig, schur,
hessenberg, tridiagonal.

Eigenvectors and singular vectors are defined up to sign, so the ops compared here fix each
vector's sign by its largest-magnitude entry (a locally constant choice: finite differences see a
smooth function); the references apply the same rule to NumPy's/SciPy's results. Spectra are
well separated (gaps >= 0.7) so that finite differences resolve the vector derivatives.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import spectral as sp

import funcgrad.numpy as fnp
from op_db._base import OpInfo, Sample
from op_db.linalg import matrix_shapes, normal, square_shapes


def _orthogonal(rng, n, batch):
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return q


def _spectrum(rng, batch, n, lo=-1.0):
    """Distinct values ``lo + 0.7 i + noise`` in random order along the last axis."""
    base = lo + 0.7 * np.arange(n) + rng.uniform(0, 0.2, (*batch, n))
    return np.take_along_axis(base, np.argsort(rng.random((*batch, n)), -1), -1)


def symmetric(rng, shape, dtype):
    *batch, n, _ = shape
    q = _orthogonal(rng, n, batch)
    w = _spectrum(rng, batch, n)
    return np.asarray(np.einsum("...ij,...j,...kj->...ik", q, w, q), dtype)


def with_singular_values(rng, shape, dtype):
    *batch, m, n = shape
    k = min(m, n)
    u, v = _orthogonal(rng, m, batch)[..., :k], _orthogonal(rng, n, batch)[..., :k]
    s = np.abs(_spectrum(rng, batch, k, lo=1.0))
    return np.asarray(np.einsum("...ij,...j,...kj->...ik", u, s, v), dtype)


def diagonalizable(rng, shape, dtype):
    *batch, n, _ = shape
    s = np.eye(n) + 0.3 * rng.standard_normal((*batch, n, n))
    d = _spectrum(rng, batch, n)
    return np.asarray(np.einsum("...ij,...j,...jk->...ik", s, d, np.linalg.inv(s)), dtype)


# ----------------------------------------------------------------------------------------------
# Sign conventions


def _signs_np(v):
    """The sign of each column's largest-magnitude entry."""
    if v.size == 0:
        return np.ones(v.shape[:-2] + v.shape[-1:], v.dtype)
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    return np.sign(np.take_along_axis(v, idx, -2))[..., 0, :]


def _signs(v):
    if v.size == 0:
        return fnp.ones(v.shape[:-2] + v.shape[-1:], v.dtype)
    idx = fnp.argmax(fnp.abs(v), axis=-2)[..., None, :]
    return fnp.sign(fnp.take_along_axis(v, idx, -2))[..., 0, :]


def _eigh_op(a, **params):
    v, w = sp.eigh(a, **params)
    return w, v * _signs(v)[..., None, :]


def _eigh_ref(a, *, lower, sort_eigenvalues, subset_by_index):
    a = np.asarray(a, np.float64)
    n = a.shape[-1]
    if a.size == 0:
        lo, hi = subset_by_index or (0, n)
        return np.zeros((*a.shape[:-2], hi - lo)), np.zeros((*a.shape[:-1], hi - lo))
    w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., lo:hi]
    return w, v * _signs_np(v)[..., None, :]


def _eigh_sampler(lower, subset):
    def sampler(shape, dtype, rng):
        n = shape[-1]
        params = dict(lower=lower, sort_eigenvalues=True, subset_by_index=(n // 2, n) if subset else None)
        return Sample((symmetric(rng, shape, dtype),), params)

    return sampler


def _svd_op(a, **params):
    outs = sp.svd(a, **params)
    if not params["compute_uv"]:
        return outs
    s, u, vt = outs
    k = min(u.shape[-1], vt.shape[-2])
    signs = _signs(u[..., :k])
    u = fnp.concatenate([u[..., :k] * signs[..., None, :], u[..., k:]], -1)
    vt = fnp.concatenate([vt[..., :k, :] * signs[..., :, None], vt[..., k:, :]], -2)
    return s, u, vt


def _svd_ref(a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    a = np.asarray(a, np.float64)
    *batch, m, n = a.shape
    if a.size == 0:
        return [
            np.asarray(o, np.float64)
            for o in sp.svd_p.impl(
                a,
                full_matrices=full_matrices,
                compute_uv=compute_uv,
                subset_by_index=subset_by_index,
                algorithm=algorithm,
            )
        ]
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False)]
    u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        s, u, vt = s[..., lo:hi], u[..., lo:hi], vt[..., lo:hi, :]
    k = min(u.shape[-1], vt.shape[-2])
    signs = _signs_np(u[..., :k])
    u[..., :k] *= signs[..., None, :]
    vt[..., :k, :] *= signs[..., :, None]
    return s, u, vt


def _svd_sampler(full_matrices=False, compute_uv=True, subset=False, algorithm=None):
    def sampler(shape, dtype, rng):
        k = min(shape[-2:])
        params = dict(
            full_matrices=full_matrices,
            compute_uv=compute_uv,
            subset_by_index=(0, (k + 1) // 2) if subset else None,
            algorithm=algorithm,
        )
        return Sample((with_singular_values(rng, shape, dtype),), params)

    return sampler


def _eigvals_ref(a, **params):
    # A general matrix's eigenvalues come in LAPACK's order, which can differ between precisions:
    # both sides are sorted (the entry's op sorts too).
    a = np.asarray(a, np.float64)
    return np.sort_complex(np.linalg.eigvals(a)) if a.size else np.zeros(a.shape[:-1], np.complex128)


def _eig_ref(a, **params):
    import scipy.linalg

    a = np.asarray(a)  # in its own precision: LAPACK's vector phases depend on rounding
    n = a.shape[-1]
    cdt = np.complex64 if a.dtype == np.float32 else np.complex128
    w = np.zeros(a.shape[:-1], cdt)
    vl, vr = np.zeros(a.shape, cdt), np.zeros(a.shape, cdt)
    for idx in np.ndindex(*a.shape[:-2]):
        if n:
            w[idx], vl[idx], vr[idx] = scipy.linalg.eig(a[idx], left=True, right=True)
    return w, vl, vr


def _eig_ref_right(a, **params):
    w, _, vr = _eig_ref(a)
    return w, vr


def _schur_ref(a, *, compute_schur_vectors):
    import scipy.linalg

    a = np.asarray(a)  # in its own precision: a 2x2 block's standard form depends on rounding
    t, z = np.zeros_like(a), np.zeros_like(a)
    for idx in np.ndindex(*a.shape[:-2]):
        if a.shape[-1]:
            t[idx], z[idx] = scipy.linalg.schur(a[idx])
    return (t, z) if compute_schur_vectors else (t,)


def _hessenberg_ref(a):
    import scipy.linalg.lapack

    a = np.asarray(a)
    n = a.shape[-1]
    h, taus = np.zeros_like(a), np.zeros((*a.shape[:-2], max(n - 1, 0)), a.dtype)
    gehrd = scipy.linalg.lapack.get_lapack_funcs("gehrd", (a,))
    for idx in np.ndindex(*a.shape[:-2]):
        if n:
            h[idx], tau, _ = gehrd(a[idx])
            taus[idx] = tau[: n - 1]
    return h, taus


def _tridiagonal_ref(a, *, lower):
    import scipy.linalg.lapack

    a = np.asarray(a)
    n = a.shape[-1]
    outs = [
        np.zeros_like(a),
        np.zeros(a.shape[:-1], a.dtype),
        np.zeros((*a.shape[:-2], n - 1), a.dtype),
        np.zeros((*a.shape[:-2], n - 1), a.dtype),
    ]
    sytrd = scipy.linalg.lapack.get_lapack_funcs("sytrd", (a,))
    for idx in np.ndindex(*a.shape[:-2]):
        for o, r in zip(outs, sytrd(a[idx], lower=int(lower))[:4]):
            o[idx] = r
    return outs


def _one(gen, **params):
    return lambda shape, dtype, rng: Sample((gen(rng, shape, dtype),), dict(params))


_SQUARE = ((3, 3), (2, 2, 2))
_THIN = ((4, 3), (2, 2, 3))

# fmt: off
OPS = [
    OpInfo("eigh_lower", sp.eigh_p, _eigh_op, _eigh_ref, _eigh_sampler(True, False), square_shapes(),
           sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10),
    OpInfo("eigh_upper", sp.eigh_p, _eigh_op, _eigh_ref, _eigh_sampler(False, False), square_shapes(),
           sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10),
    OpInfo("eigh_subset", sp.eigh_p, _eigh_op, _eigh_ref, _eigh_sampler(True, True), square_shapes(),
           sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10),
    OpInfo("svd", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(), matrix_shapes(), sample_shapes=_THIN,
           rtol=1e-9, atol=1e-10),
    OpInfo("svd_wide_qr", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(algorithm="qr"), matrix_shapes(),
           sample_shapes=((3, 4), (2, 3, 2)), rtol=1e-9, atol=1e-10),
    OpInfo("svd_values", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(compute_uv=False), matrix_shapes(),
           sample_shapes=_THIN, rtol=1e-9, atol=1e-10),
    OpInfo("svd_subset", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(subset=True), matrix_shapes(),
           sample_shapes=_THIN, rtol=1e-9, atol=1e-10),
    OpInfo("svd_full_square", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(full_matrices=True), square_shapes(),
           sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10),
    OpInfo("svd_full", sp.svd_p, _svd_op, _svd_ref, _svd_sampler(full_matrices=True), matrix_shapes(),
           sample_shapes=_THIN, rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),  # (JAX's, in its words)
    OpInfo("eigvals", sp.eig_p, lambda a, **p: fnp.sort_complex(sp.eig(a, **p)[0]), _eigvals_ref,
           _one(diagonalizable, compute_left_eigenvectors=False, compute_right_eigenvectors=False,
                enable_eigvec_derivs=False),
           # (first order only: the second differentiates the eigenvectors, JAX's NotImplementedError)
           square_shapes(), sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10, order=1),
    OpInfo("eig_vector_derivatives", sp.eig_p, sp.eig, _eig_ref_right,
           _one(diagonalizable, compute_left_eigenvectors=False, compute_right_eigenvectors=True,
                enable_eigvec_derivs=True),
           square_shapes(), sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10),
    OpInfo("eig", sp.eig_p, sp.eig, _eig_ref,
           _one(diagonalizable, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                enable_eigvec_derivs=False),
           square_shapes(), sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),  # (JAX's, in its words)
    OpInfo("schur", sp.schur_p, sp.schur, _schur_ref, _one(normal, compute_schur_vectors=True),
           square_shapes(), sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),  # (JAX's, in its words)
    OpInfo("hessenberg", sp.hessenberg_p, sp.hessenberg, _hessenberg_ref, _one(normal), square_shapes(),
           sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),
    OpInfo("tridiagonal", sp.tridiagonal_p, sp.tridiagonal, _tridiagonal_ref, _one(symmetric, lower=True),
           square_shapes(min_side=1), sample_shapes=_SQUARE, rtol=1e-9, atol=1e-10, differentiable=False,
           derivative_error=NotImplementedError),
]
# fmt: on
