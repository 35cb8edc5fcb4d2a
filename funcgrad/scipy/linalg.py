"""``funcgrad.scipy.linalg``: ``jax.scipy.linalg``'s 40 functions -- SciPy's signatures on the
LAPACK primitives, differentiable, batched over leading axes, compiled by ``jit``.

Layer: surface. Imports ``funcgrad.numpy`` (and its ``_linalg`` solves), ``funcgrad.lax`` (control
flow, ``custom_linear_solve``, ``lax.linalg``), ``funcgrad.api`` (``vmap``/``jvp`` for the 2-D
algorithms), the primitive catalog and numpy. The structured-matrix constructors live in
``_special_matrices``.

SciPy's performance and safety options (``overwrite_a``, ``overwrite_b``, ``check_finite``,
``lwork``, ``turbo``, ``debug``) are accepted and have no effect, as in JAX: arrays are immutable
(nothing is ever overwritten) and non-finite inputs give NaN results instead of an exception. A
failed factorisation gives NaN (NOTE: [factorisation failures]).

``expm`` is scaling and squaring with Padé approximants (Higham 2005, as SciPy and JAX); its
derivative and ``expm_frechet`` come from differentiating that algorithm. ``sqrtm``, ``funm``,
``rsf2csf`` and ``solve_sylvester`` work in complex arithmetic (Schur forms), as JAX's do.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import _linalg as _la
from funcgrad.numpy._core import check_arraylike
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import linalg as la
from funcgrad.primitives import spectral as sp
from funcgrad.scipy._matrix_functions import expm, expm_frechet, funm, polar, rsf2csf, solve_sylvester, sqrtm
from funcgrad.scipy._special_matrices import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "circulant",
    "companion",
    "convolution_matrix",
    "det",
    "dft",
    "eigh",
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "fiedler",
    "fiedler_companion",
    "funm",
    "hadamard",
    "hankel",
    "helmert",
    "hessenberg",
    "hilbert",
    "inv",
    "invhilbert",
    "invpascal",
    "leslie",
    "lu",
    "lu_factor",
    "lu_solve",
    "pascal",
    "polar",
    "qr",
    "qr_multiply",
    "rsf2csf",
    "schur",
    "solve",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "svd",
    "toeplitz",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# ----------------------------------------------------------------------------------------------
# Cholesky, LU, QR, SVD, eigenproblems


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a Hermitian positive-definite ``a``: upper ``U`` (``a = U^H U``) or,
    with ``lower``, lower ``L`` (``a = L L^H``); only that triangle of ``a`` is read.

    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 1.0], [0.0, 2.0]]
    """
    a = _la.matrices(a, "cholesky", square=True)
    factor = la.cholesky(a if lower else mx.H(a))
    return factor if lower else mx.H(factor)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``: ``c`` is ``cholesky(a, lower)``.

    >>> c, low = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> low
    False
    """
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` given ``cho_factor(a)``; ``b`` is a vector (n,) or matrices (..., n, k).

    >>> c = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> cho_solve(c, np.array([6.0, 7.0])).tolist()
    [1.0, 1.0]
    """
    c, lower = c_and_lower
    c, b = _la.inexact_pair(c, b, "cho_solve")
    x, vector = _as_matrix_rhs(c, b, "cho_solve")
    c, x = _la.batch_broadcast((c, 2), (x, 2))
    x = _la.cho_solve(c, x, lower=lower)
    return x[..., 0] if vector else x


def _as_matrix_rhs(a, b, name):
    n = a.shape[-1]
    if b.ndim == 1 or (b.ndim >= 2 and a.ndim == b.ndim + 1 and b.shape[-1] == n and b.shape[-2] != n):
        if b.shape[-1] != n:
            raise ValueError(f"{name}: b of shape {b.shape} does not match a of shape {a.shape}")
        return fnp.expand_dims(b, -1), True
    if b.shape[-2] != n:
        raise ValueError(f"{name}: b of shape {b.shape} does not match a of shape {a.shape}")
    return b, False


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: LU factors of ``a`` packed in one matrix and LAPACK's 0-based row
    interchanges, for ``lu_solve``.

    >>> lu_, piv = lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist()
    [1, 1]
    """
    a = _la.matrices(a, "lu_factor")
    lu_, piv, _ = la.lu(a)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from
    ``lu_factor(a)``.

    >>> f = lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> np.round(np.asarray(lu_solve(f, np.array([5.0, 11.0]))), 12).tolist()
    [1.0, 2.0]
    """
    lu_, piv = lu_and_piv
    lu_, b = _la.inexact_pair(lu_, b, "lu_solve")
    perm = la.pivots_to_permutation(fnp.asarray(piv).astype(np.int32), lu_.shape[-2])
    x, vector = _as_matrix_rhs(lu_, b, "lu_solve")
    lu_, x = _la.batch_broadcast((lu_, 2), (x, 2))
    perm = fnp.broadcast_to(perm, (*lu_.shape[:-2], perm.shape[-1]))
    x = _la.lu_solve(lu_, perm, x, trans)
    return x[..., 0] if vector else x


@jitted_eagerly(static_argnames=("permute_l", "overwrite_a", "check_finite"))
def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """LU decomposition ``a = p @ l @ u``: ``(p, l, u)``, or ``(p @ l, u)`` with ``permute_l``.

    >>> p, l, u = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> p.tolist(), u.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[3.0, 4.0], [0.0, 0.6666666666666667]])
    """
    a = _la.matrices(a, "lu")
    lu_, _, perm = la.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    # rows of p^T pick a's rows in factor order; p is real for complex a too, as JAX's (jnp.real)
    p = mx.T(mx.permutation_matrix(perm, _dt.real_dtype(a.dtype)))
    l = mx.tril(lu_[..., :, :k], -1) + fnp.eye(m, k, dtype=a.dtype)
    u = mx.triu(lu_[..., :k, :])
    if permute_l:
        return fnp.matmul(p, l), u
    return p, l, u


def qr(
    a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False, check_finite=True
):
    """QR decomposition: ``mode='full'`` (``(q, r)``, ``q`` m x m), ``'economic'`` (``q`` m x k),
    ``'r'`` (``(r,)``) or ``'raw'`` (``((h, tau), r)``, LAPACK's packed form); with ``pivoting``
    the column permutation ``p`` (``a[:, p] = q @ r``) is appended.

    >>> q, r = qr(np.array([[3.0], [4.0]]), mode="economic")
    >>> np.round(np.asarray(r), 12).tolist()
    [[-5.0]]
    """
    if mode not in ("full", "economic", "r", "raw"):
        raise ValueError(f"qr: mode must be 'full', 'economic', 'r' or 'raw', got {mode!r}")
    a = _la.matrices(a, "qr")
    if mode == "raw":
        if pivoting:
            raise ValueError("qr: mode='raw' with pivoting=True is not supported; use mode='full'")
        h, tau = la.geqrf(a)
        k = min(a.shape[-2:])
        return (h, tau), mx.triu(h[..., :k, :])
    q, r, *p = la.qr(a, pivoting=pivoting, full_matrices=mode in ("full", "r"))
    if mode == "r":
        return (r, *p)
    return (q, r, *p)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):  # fmt: skip
    """``(c @ q, r)`` (``mode='right'``) or ``(q @ c, r)`` (``'left'``) with ``q, r`` the economic
    QR factors of ``a`` (``conj(q)`` with ``conjugate``; the permutation appended with
    ``pivoting``).

    >>> cq, r = qr_multiply(np.array([[3.0], [4.0]]), np.array([[1.0, 0.0]]))
    >>> np.round(np.asarray(cq), 12).tolist()
    [[-0.6]]
    """
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    a, c = _la.inexact_pair(a, c, "qr_multiply")
    vector = c.ndim == 1
    if vector:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"qr_multiply: q @ c needs c with {k} rows (a is {a.shape}), got c {c.shape}")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"qr_multiply: c @ q needs c with {m} columns (a is {a.shape}), got c {c.shape}")
    q, r, *p = la.qr(a, pivoting=pivoting, full_matrices=False)
    if conjugate:
        q = mx.conj(q)
    out = fnp.matmul(q, c) if mode == "left" else fnp.matmul(c, q)
    if vector:
        out = fnp.ravel(out)
    return (out, r, *p)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):  # fmt: skip
    """Singular value decomposition ``(u, s, vh)`` (``s`` alone without ``compute_uv``);
    ``lapack_driver``: ``'gesdd'`` (divide and conquer) or ``'gesvd'``.

    >>> svd(np.array([[0.0, 2.0], [1.0, 0.0]]), compute_uv=False).tolist()
    [2.0, 1.0]
    """
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    a = _la.matrices(a, "svd")
    algorithm = "qr" if lapack_driver == "gesvd" else None
    outs = sp.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, algorithm=algorithm)
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True, subset_by_index=None):  # fmt: skip
    """Eigenvalues ``w`` (ascending) and eigenvectors ``v`` of Hermitian ``a`` (the ``lower`` or
    upper triangle is read), or of the generalized problem with positive-definite ``b``:
    ``a v = w b v`` (``type=1``), ``a b v = w v`` (2) or ``b a v = w v`` (3), by Cholesky reduction.
    ``subset_by_index=(lo, hi)`` (or SciPy's inclusive ``eigvals=(lo, hi)``) keeps a range.

    >>> w, v = eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> np.round(np.asarray(w), 12).tolist()
    [1.0, 3.0]
    """
    if eigvals is not None:
        if subset_by_index is not None:
            raise ValueError("eigh: give only one of eigvals and subset_by_index")
        subset_by_index = (int(eigvals[0]), int(eigvals[1]) + 1)
    if type not in (1, 2, 3):
        raise ValueError(f"eigh: type must be 1, 2 or 3, got {type}")
    a = _la.matrices(a, "eigh", square=True)
    if b is None:
        v, w = sp.eigh(a, lower=lower, subset_by_index=subset_by_index)
        return w if eigvals_only else (w, v)
    a, bm = _la.inexact_pair(la.sym_from_triangle(a, lower), b, "eigh")
    bm = _la.matrices(bm, "eigh", "b", square=True)
    if bm.shape[-1] != a.shape[-1]:
        raise ValueError(f"eigh: a {a.shape} and b {bm.shape} must have the same size")
    chol = la.cholesky(bm if lower else mx.H(bm))
    if type == 1:  # L^-1 a L^-H
        c = la.triangular_solve(chol, a, left_side=True, lower=True)
        c = la.triangular_solve(chol, c, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    else:  # L^H a L
        c = fnp.matmul(mx.H(chol), fnp.matmul(a, chol))
    v, w = sp.eigh(_la.symmetrize(c), subset_by_index=subset_by_index)
    if type in (1, 2):
        v = la.triangular_solve(chol, v, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    else:
        v = fnp.matmul(chol, v)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a", select_range=None,
                     tol=None, key=None):  # fmt: skip
    """Eigenvalues (and eigenvectors) of the real symmetric (or Hermitian) tridiagonal matrix with
    diagonal ``d`` and off-diagonal ``e``, by LAPACK's dense solver on the tridiagonal matrix
    (exact to machine precision, so any ``tol`` is met; ``key`` -- JAX's seed for its inverse
    iteration -- is not needed). ``select='i'`` keeps eigenvalues ``select_range[0]`` to
    ``select_range[1]`` inclusive.

    >>> w = eigh_tridiagonal(np.array([2.0, 2.0]), np.array([1.0]), eigvals_only=True)
    >>> np.round(np.asarray(w), 12).tolist()
    [1.0, 3.0]
    """
    d, e = fnp.asarray(d), fnp.asarray(e)
    if d.dtype != e.dtype:
        raise TypeError(f"eigh_tridiagonal: d and e must have the same dtype, got {d.dtype} and {e.dtype}")
    if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: d must be (n,) and e (n - 1,), got {d.shape} and {e.shape}")
    if select not in ("a", "i", "v"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")
    if select == "v":
        raise ValueError(
            "eigh_tridiagonal: select='v' (a value range) has a data-dependent size; use select='i'"
        )
    subset = None
    if select == "i":
        if select_range is None or select_range[0] > select_range[1]:
            raise ValueError(
                f"eigh_tridiagonal: select='i' needs select_range=(lo, hi), lo <= hi, got {select_range}"
            )
        subset = (int(select_range[0]), int(select_range[1]) + 1)
    d = _la.inexact(d, "eigh_tridiagonal", "d")
    e = e.astype(d.dtype)
    n = d.shape[0]
    # e above the diagonal and conj(e) below, JAX's Hermitian matrix (the other way round gave the
    # eigenvectors of its conjugate for complex e)
    a = fnp.diag(d) + fnp.diag(e, 1) + fnp.diag(mx.conj(e), -1) if n > 1 else fnp.diag(d)
    v, w = sp.eigh(a, subset_by_index=subset)
    return w if eigvals_only else (w, v)


def _inexact_only(name, a):
    # (JAX's schur and hessenberg bind their primitive on the input as is: a boolean or integer
    # matrix is the primitive's TypeError, in its words, not promoted to float; a 16-bit float,
    # bfloat16 too -- NumPy's kind 'V' -- goes on to the LAPACK dtype check's NotImplementedError)
    dtype = np.dtype(a.dtype) if hasattr(a, "dtype") else np.result_type(a)
    if not _dt.is_inexact(dtype):
        raise TypeError(
            f"{name} does not accept dtype {dtype.name} at position 0. Accepted dtypes at position 0 are "
            "subtypes of floating, complexfloating."
        )


def schur(a, output: str = "real"):
    """Schur decomposition ``a = z t z^H``: ``(t, z)``; ``output='complex'`` gives the complex
    (upper-triangular) form of a real matrix.

    >>> t, z = schur(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> np.diag(np.asarray(t)).tolist()
    [1.0, 3.0]
    """
    if isinstance(a, list | tuple):  # (JAX's: its schur is a jitted function)
        raise TypeError(
            "Error interpreting argument to schur as a JAX value. The problematic value is of type "
            f"{type(a)} and was passed to schur at position 0.\n"
        )
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    _inexact_only("schur", a)
    a = _la.matrices(a, "schur", square=True)
    if output == "complex":
        a = a.astype(mx.complex_dtype(a.dtype))
    t, z = sp.schur(a)
    return t, z


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Upper Hessenberg form ``h = q^H a q`` (``(h, q)`` with ``calc_q``).

    >>> h = hessenberg(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
    >>> bool(abs(float(h[2, 0])) < 1e-12)
    True
    """
    _inexact_only("hessenberg", a)
    a = _la.matrices(a, "hessenberg", square=True)
    n = a.shape[-1]
    if n == 0:
        return (fnp.zeros_like(a), fnp.zeros_like(a)) if calc_q else fnp.zeros_like(a)
    packed, taus = sp.hessenberg(a)
    h = mx.triu(packed, -1)
    if not calc_q:
        return h
    q = la.householder_product(packed[..., 1:, :-1], taus)
    q = fnp.pad(q, [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)])
    return h, q.at[..., 0, 0].set(1)


# ----------------------------------------------------------------------------------------------
# Solves, inverses, determinants


_ASSUME = {
    "gen": "gen",
    "general": "gen",
    "sym": "gen",
    "symmetric": "gen",
    "her": "gen",
    "hermitian": "gen",
    "pos": "pos",
    "positive definite": "pos",
    "lower triangular": "lower",
    "upper triangular": "upper",
    "diagonal": "diagonal",
}


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):  # fmt: skip
    """Solve ``a x = b``. ``assume_a``: ``'gen'``/``'sym'``/``'her'`` (LU), ``'pos'`` (Cholesky of
    the ``lower`` or upper triangle, differentiated implicitly), ``'lower triangular'``,
    ``'upper triangular'`` or ``'diagonal'``.

    >>> solve(np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([6.0, 7.0]), assume_a="pos").tolist()
    [1.0, 1.0]
    """
    check_arraylike("jnp.linalg.solve", a, b)  # (JAX's: its solve is jnp.linalg's)
    kind = _ASSUME.get(assume_a)
    if kind is None:
        raise ValueError(f"solve: assume_a must be one of {sorted(_ASSUME)}, got {assume_a!r}")
    if kind == "gen":
        return _la.solve(a, b)
    a, b = _la.inexact_pair(a, b, "solve")
    a = _la.matrices(a, "solve", square=True)
    x, vector = _as_matrix_rhs(a, b, "solve")
    a, x = _la.batch_broadcast((a, 2), (x, 2))
    if kind == "pos":
        x = _la.cho_solve_implicit(a, x, lower)
    elif kind == "diagonal":
        x = x / fnp.expand_dims(fnp.diagonal(a, axis1=-2, axis2=-1), -1)
    else:
        x = la.triangular_solve(a, x, left_side=True, lower=kind == "lower")
    return x[..., 0] if vector else x


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):  # fmt: skip
    """Solve ``op(a) x = b`` for triangular ``a`` (only its ``lower``/upper triangle is read);
    ``trans``: 0/'N' (``a``), 1/'T' (``a^T``), 2/'C' (``a^H``).

    >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True).tolist()
    [1.0, 2.0]
    """
    modes = {
        0: (False, False),
        "N": (False, False),
        1: (True, False),
        "T": (True, False),
        2: (True, True),
        "C": (True, True),
    }
    if trans not in modes:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    transpose_a, conjugate_a = modes[trans]
    a, b = _la.inexact_pair(a, b, "solve_triangular", half=True)  # (float16 solved as jax's)
    a = _la.matrices(a, "solve_triangular", square=True, half=True)
    x, vector = _as_matrix_rhs(a, b, "solve_triangular")
    a, x = _la.batch_broadcast((a, 2), (x, 2))
    x = la.triangular_solve(
        a, x, left_side=True, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a and a.dtype.kind == "c", unit_diagonal=unit_diagonal,
    )  # fmt: skip
    return x[..., 0] if vector else x


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of square matrices.

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    check_arraylike("jnp.linalg.inv", a)  # (JAX's: its inv is jnp.linalg's)
    return _la.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of square matrices.

    >>> float(det(np.array([[1.0, 2.0], [3.0, 4.0]])))
    -2.0
    """
    check_arraylike("jnp.linalg.det", a)  # (JAX's: its det is jnp.linalg's)
    return _la.det(a)
