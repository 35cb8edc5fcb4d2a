"""``funcgrad.lax.linalg``: ``jax.lax.linalg`` -- the linear-algebra primitives with JAX's names,
signatures and output orders.

Layer: surface. Imports the kernel, the primitive catalog (``linalg``, ``spectral``, ``indexing``,
``_matrix``), ``funcgrad.numpy`` and ``funcgrad._control_flow``.

As in ``jax.lax``, nothing is promoted or broadcast: operands must already be float32, float64,
complex64 or complex128 with equal batch dimensions (the primitives' checks name the operand and
the fix). ``cholesky`` and ``eigh`` symmetrise their input unless ``symmetrize_input=False``; every
factorisation gives NaN where it fails (NOTE: [factorisation failures]).

>>> import numpy as np
>>> from funcgrad.lax import linalg
>>> linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
[[2.0, 0.0], [1.0, 2.0]]
"""

from __future__ import annotations

import enum

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._control_flow import while_loop
from funcgrad.numpy import _linalg as _la
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import linalg as la
from funcgrad.primitives import spectral as sp

__all__ = [
    "EigImplementation",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_update",
    "eig",
    "eigh",
    "hessenberg",
    "householder_product",
    "lu",
    "lu_pivots_to_permutation",
    "ormqr",
    "qdwh",
    "qr",
    "schur",
    "svd",
    "symmetric_product",
    "triangular_solve",
    "tridiagonal",
    "tridiagonal_solve",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class SvdAlgorithm(enum.Enum):
    """SVD algorithms (CPU: ``DEFAULT``/``DIVIDE_AND_CONQUER`` -> gesdd, ``QR`` -> gesvd)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


class EigImplementation(enum.Enum):
    """Eigendecomposition backends (CPU: ``LAPACK``)."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Hermitian eigendecomposition algorithms (CPU: ``QR``, LAPACK's syevd)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


def _cpu_only(name: str, value, allowed) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{name}: {value!r} is not available on CPU; use one of {allowed} or None")


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor ``L`` (``x = L L^H``); NaN where ``x`` is not positive definite.

    >>> cholesky(np.array([[9.0]])).tolist()
    [[3.0]]
    """
    if symmetrize_input:
        x = _la.symmetrize(x)
    return la.cholesky(x)


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``R^T R + w w^T`` from the upper factor ``R`` of ``R^T R``, by
    ``n`` Givens rotations (O(n^2)).

    >>> r = cholesky_update(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 0.0]))
    >>> np.round(np.asarray(r), 12).tolist()
    [[1.414213562373, 0.0], [0.0, 1.0]]
    """
    r, z = fnp.asarray(r_matrix), fnp.asarray(w_vector)
    if r.ndim != 2 or r.shape[0] != r.shape[1] or z.shape != r.shape[:1]:
        raise ValueError(
            "cholesky_update: r_matrix must be square (n, n) and w_vector of shape (n,), "
            f"got {r.shape} and {z.shape}"
        )
    for k in range(r.shape[0]):
        x, y = r[k, k], z[k]
        scale = fnp.maximum(fnp.abs(x), fnp.abs(y))
        zero = y == 0
        safe = fnp.where(zero, 1.0, scale)
        xs, ys = x / safe, y / safe
        inv = 1.0 / fnp.sqrt(xs * xs + ys * ys)
        c, s = fnp.where(zero, 1.0, xs * inv), fnp.where(zero, 0.0, -ys * inv)
        row = c * r[k, :] - s * z
        z = c * z + s * r[k, :]
        r = r.at[k, :].set(row)
    return r


def eig(
    x,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation=None,
    use_magma=None,
):
    """Eigendecomposition of general square matrices: ``[w, vl, vr]`` (vectors as asked),
    complex. Eigenvector derivatives need ``enable_eigvec_derivs=True`` (distinct eigenvalues).

    >>> w, vl, vr = eig(np.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> w.tolist()
    [(1+0j), (2+0j)]
    """
    _cpu_only("eig implementation", implementation, (EigImplementation.LAPACK,))
    if use_magma:
        raise ValueError("eig: use_magma is a GPU option; on CPU eig uses LAPACK")
    return list(
        sp.eig(
            x,
            compute_left_eigenvectors=compute_left_eigenvectors,
            compute_right_eigenvectors=compute_right_eigenvectors,
            enable_eigvec_derivs=enable_eigvec_derivs,
        )
    )


def eigh(
    x,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index=None,
    implementation=None,
):
    """Eigenvectors and ascending eigenvalues ``(v, w)`` of Hermitian matrices (``lower`` picks
    the triangle read when ``symmetrize_input=False``); ``subset_by_index=(lo, hi)`` keeps
    eigenpairs ``lo`` to ``hi - 1``.

    >>> v, w = eigh(np.array([[2.0, 0.0], [0.0, 1.0]]))
    >>> w.tolist()
    [1.0, 2.0]
    """
    _cpu_only("eigh implementation", implementation, (EighImplementation.QR,))
    if symmetrize_input:
        x = _la.symmetrize(x)
    v, w = sp.eigh(x, lower=lower, sort_eigenvalues=sort_eigenvalues, subset_by_index=subset_by_index)
    return v, w


def hessenberg(a):
    """Upper Hessenberg reduction ``(a', taus)`` (LAPACK gehrd's packed form).

    >>> h, taus = hessenberg(np.eye(2))
    >>> taus.shape
    (1,)
    """
    h, taus = sp.hessenberg(a)
    return [h, taus]  # (a list, as JAX's bind of the multiple-result primitive gives)


def householder_product(a, taus):
    """The first ``n`` columns of the product of the Householder reflectors in ``a`` and ``taus``.

    >>> (np.asarray(householder_product(np.zeros((2, 2)), np.zeros(1))) + 0.0).tolist()  # LAPACK gives -0.0
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return la.householder_product(a, taus)


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``.

    >>> lu_, pivots, perm = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> pivots.tolist(), perm.tolist()
    ([1, 1], [1, 0])
    """
    lu_, pivots, perm = la.lu(x)
    return [lu_, pivots, perm]  # (a list, as JAX's bind of the multiple-result primitive gives)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation ``(..., permutation_size)`` made by LU's row interchanges ``pivots``.

    >>> lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 3).tolist()
    [2, 0, 1]
    """
    pivots = fnp.asarray(pivots)
    if pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation: pivots must be int32, got {pivots.dtype}")
    return la.pivots_to_permutation(pivots, int(permutation_size))


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``left``) or ``c @ Q`` with ``Q`` the product of the Householder reflectors in
    ``a``/``taus`` (``Q^H`` when ``transpose``), as LAPACK's ormqr/unmqr.

    >>> np.asarray(ormqr(np.zeros((2, 1)), np.array([2.0]), np.eye(2))).tolist()
    [[-1.0, 0.0], [0.0, 1.0]]
    """
    a, taus, c = fnp.asarray(a), fnp.asarray(taus), fnp.asarray(c)
    m = a.shape[-2]
    if (c.shape[-2] if left else c.shape[-1]) != m:
        side = "rows" if left else "columns"
        raise ValueError(f"ormqr: c must have {m} {side} to match a {a.shape}, got c {c.shape}")
    square = (
        a[..., :, :m] if a.shape[-1] >= m else fnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, m - a.shape[-1])])
    )
    q = la.householder_product(square, taus)
    if transpose:
        q = mx.H(q)
    return fnp.matmul(q, c) if left else fnp.matmul(c, q)


def _qdwh_coefficients(eps: float, max_iterations: int):
    """The dynamically weighted Halley parameters ``(a, b, c)`` of each step, from the lower
    bound ``l = eps`` of the smallest scaled singular value (precomputed, as JAX does)."""
    coefs, lower, tol_l = [], eps, 10.0 * eps / 2.0
    while lower + tol_l < 1 and len(coefs) < max_iterations:
        l2 = lower * lower
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lower = lower * (a + b * l2) / (1 + c * l2)
        coefs.append((a, b, c))
    return coefs


def _masked(x, rows, cols, other=0.0):
    """``x`` outside its leading ``rows x cols`` block replaced by ``other`` (qdwh's
    ``dynamic_shape``: a matrix padded to its static shape; a ``where``, so NaN padding goes too).
    ``rows``/``cols`` may be traced; ``None`` keeps that whole dimension."""
    if rows is None and cols is None:
        return x
    r, c = x.shape
    keep = fnp.ones((r, c), bool)
    if rows is not None:
        keep = keep & (fnp.arange(r)[:, None] < rows)
    if cols is not None:
        keep = keep & (fnp.arange(c)[None, :] < cols)
    return fnp.where(keep, x, other)


def _halley_step(u, a, b, c, rows=None, cols=None):
    """One QDWH step: QR-based when ``c`` is large (stable), Cholesky-based otherwise (cheaper).
    ``rows``/``cols``: the true shape of a padded ``u`` (``dynamic_shape``), as JAX's."""
    # Python floats: weak scalars against u, so a complex64 u stays complex64 (NumPy float64
    # coefficients were strong: refused under strict promotion, float64 in 64-bit mode)
    a, b, c = float(a), float(b), float(c)
    m, n = u.shape
    eye = fnp.eye(n, dtype=u.dtype)
    e = b / c
    if c > 100:
        if rows is None:
            y = fnp.concatenate([c**0.5 * u, eye], axis=0)
        else:  # the identity right below the true rows
            y = fnp.concatenate([c**0.5 * u, fnp.zeros_like(eye)], axis=0)
            y = ix.dynamic_update_slice_in_dim(y, eye, rows, 0)
        q, _ = la.qr(y, full_matrices=False)
        q1 = _masked(q[:m], rows, cols)
        q2 = q[m:] if rows is None else _masked(ix.dynamic_slice_in_dim(q, rows, n, 0), cols, cols)
        return e * u + (a - e) / c**0.5 * fnp.matmul(q1, mx.H(q2))
    # (the padded corner of the Gram matrix is the identity: Cholesky of a PSD matrix)
    y = la.cholesky(_masked(c * fnp.matmul(mx.H(u), u) + eye, cols, cols, eye))
    z = la.triangular_solve(y, mx.T(u), left_side=True, lower=True, conjugate_a=True)
    z = mx.H(
        la.triangular_solve(y, mx.conj(z), left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    )
    return e * u + (a - e) * z


def qdwh(x, *, is_hermitian: bool = False, max_iterations=None, eps=None, dynamic_shape=None):
    """Polar decomposition ``x = u @ h`` of a tall or square matrix by the QR-based dynamically
    weighted Halley iteration (Nakatsukasa, Bai and Gygi), as ``jax.lax.linalg.qdwh``:
    ``(u, h, num_iters, is_converged)`` with ``u`` orthonormal and ``h`` Hermitian positive
    semi-definite. ``is_hermitian`` is accepted for JAX compatibility (the iteration is the same).
    ``dynamic_shape=(m, n)``: ``x`` is its leading ``m x n`` block padded to its shape (the padding
    is ignored, even NaN; ``m``/``n`` may be traced); ``u`` and ``h`` are that block's, padded.

    >>> u, h, k, ok = qdwh(np.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> np.round(np.asarray(u), 8).tolist(), np.round(np.asarray(h), 8).tolist(), bool(ok)
    ([[1.0, 0.0], [0.0, -1.0]], [[2.0, 0.0], [0.0, 3.0]], True)
    """
    x = _la.matrices(x, "qdwh", "x")
    if x.ndim != 2 or x.shape[0] < x.shape[1]:
        raise ValueError(
            f"qdwh: x must be a matrix with at least as many rows as columns, got shape {x.shape}"
        )
    rows = cols = None
    if dynamic_shape is not None:  # x is its leading (rows, cols) block, padded (JAX's masks)
        rows, cols = dynamic_shape
        x = _masked(x, rows, cols)
    rdt = mx.real_dtype(x.dtype)
    eps = float(np.finfo(rdt).eps) if eps is None else float(eps)
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    one_norm, inf_norm = fnp.linalg.norm(x, ord=1), fnp.linalg.norm(x, ord=np.inf)
    # 1/sqrt(one) * 1/sqrt(inf), JAX's: the product of the norms underflows to 0 for a tiny x
    # (1/sqrt(0) made u infinite and the result NaN)
    safe_one, safe_inf = (fnp.where(one_norm == 0, 1.0, v) for v in (one_norm, inf_norm))
    scale = fnp.where(one_norm == 0, 1.0, 1.0 / fnp.sqrt(safe_one) / fnp.sqrt(safe_inf))
    u = x * scale.astype(x.dtype)
    tol_norm = (10.0 * eps / 2.0) ** (1.0 / 3.0)
    coefs = _qdwh_coefficients(eps, max_iterations)
    converged = fnp.asarray(False)
    for i, (a, b, c) in enumerate(coefs):
        new = _halley_step(u, a, b, c, rows, cols)
        if i == len(coefs) - 1:
            converged = fnp.linalg.norm(new - u) <= tol_norm
        u = new

    def keep_going(state):
        k, _, done = state
        return fnp.logical_not(done) & (k < max_iterations)

    def halley(state):
        k, v, _ = state
        new = _halley_step(v, 3.0, 1.0, 3.0, rows, cols)
        return k + 1, new, fnp.linalg.norm(new - v) <= tol_norm

    iters, u, converged = while_loop(keep_going, halley, (np.int32(len(coefs)), u, converged))
    u = 1.5 * u - 0.5 * fnp.matmul(u, fnp.matmul(mx.H(u), u))
    h = _la.symmetrize(fnp.matmul(mx.H(u), x))
    return u, h, iters, converged


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: ``(q, r)``, or ``(q, r, p)`` with ``x[..., :, p] = q @ r`` when
    ``pivoting``.

    >>> q, r = qr(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> np.abs(np.asarray(r)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if use_magma:
        raise ValueError("qr: use_magma is a GPU option; on CPU qr uses LAPACK")
    return tuple(la.qr(x, pivoting=pivoting, full_matrices=full_matrices))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None):
    """Schur decomposition: ``(t, z)`` with ``x = z t z^H`` (``(t,)`` without vectors).

    >>> t, z = schur(np.array([[2.0, 1.0], [0.0, 3.0]]))
    >>> np.diag(np.asarray(t)).tolist()
    [2.0, 3.0]
    """
    if sort_eig_vals or select_callable is not None:
        raise ValueError(
            "schur: sorting the eigenvalues (sort_eig_vals, select_callable) is not supported on CPU"
        )
    return list(sp.schur(x, compute_schur_vectors=compute_schur_vectors))  # (a list, as JAX's bind)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: ``(u, s, vh)``, or ``s`` without ``compute_uv``.

    >>> svd(np.array([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False).tolist()
    [4.0, 3.0]
    """
    if isinstance(algorithm, SvdAlgorithm):
        algorithm = algorithm.value
    outs = sp.svd(
        x,
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def symmetric_product(
    a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0, symmetrize_output: bool = False
):
    """``alpha * a @ a^T + beta * c`` (with ``symmetrize_output``: the lower triangle mirrored).

    >>> symmetric_product(np.array([[1.0], [2.0]]), np.eye(2), beta=1.0).tolist()
    [[2.0, 2.0], [2.0, 5.0]]
    """
    a, c = fnp.asarray(a_matrix), fnp.asarray(c_matrix)
    out = alpha * fnp.matmul(a, mx.T(a)) + beta * c
    if symmetrize_output:
        out = mx.tril(out) + mx.T(mx.tril(out, -1))
    return out


def triangular_solve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    """Solve ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for triangular ``a``; a ``b`` with
    one dimension fewer than ``a`` is a (batch of) vector(s).

    >>> triangular_solve(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]),
    ...                  left_side=True, lower=True).tolist()
    [1.0, 2.0]
    """
    a, b = fnp.asarray(a), fnp.asarray(b)
    conjugate_a = conjugate_a and a.dtype.kind == "c"
    vector = b.ndim == a.ndim - 1
    if vector:
        b = fnp.expand_dims(b, -1 if left_side else -2)
    out = la.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )  # fmt: skip
    if vector:
        out = out[..., 0] if left_side else out[..., 0, :]
    return out


def tridiagonal(a, *, lower: bool = True):
    """Reduction of Hermitian matrices to real tridiagonal form: ``(a', d, e, taus)``.

    >>> _, d, e, _ = tridiagonal(np.array([[2.0, 1.0], [1.0, 3.0]]))
    >>> d.tolist(), e.tolist()
    ([2.0, 3.0], [1.0])
    """
    return list(sp.tridiagonal(a, lower=lower))  # (a list, as JAX's bind)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve tridiagonal systems (``dl[0]`` and ``du[-1]`` ignored); NaN where singular.

    >>> tridiagonal_solve(np.array([0.0, 1.0]), np.array([2.0, 2.0]), np.array([1.0, 0.0]),
    ...                   np.array([[3.0], [3.0]])).tolist()
    [[1.0], [1.0]]
    """
    return la.tridiagonal_solve(dl, d, du, b, perturb_singular=perturb_singular)
