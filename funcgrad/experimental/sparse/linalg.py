"""``funcgrad.experimental.sparse.linalg``: ``lobpcg_standard``, the top-k eigenpairs of a Hermitian
operator by LOBPCG, as ``jax.experimental.sparse.linalg``'s.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax and funcgrad.jitting.

The algorithm is JAX's (jax/experimental/sparse/linalg.py, Apache-2.0), step for step, so that its
iterates, iteration counts and debug diagnostics are JAX's: the current eigenvectors X, search
directions P and residuals R are kept orthonormal (zero columns allowed) as one (n, 3k) basis;
each step solves the Rayleigh-Ritz problem in that basis (``eigh`` of its (3k, 3k) projection),
takes the top k Ritz vectors as the new X, the rest of the Ritz block orthogonalised as P, and
stops when every residual norm is below ``tol * 10 * n * (theta + |A x|)`` (or after ``m``
steps). Orthonormalisation is SVQB twice (an ``eigh`` of the (k, k) Gram matrix; degenerate
directions are zeroed, not re-drawn); the first P extends X's basis with block Householder
reflectors (deterministic, no random draws). Every product is at HIGHEST precision. (Example:
``lobpcg_standard``'s docstring.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.jitting import jit
from funcgrad.kernel.array import Array

__all__ = ["lobpcg_standard"]

_HIGHEST = lax.Precision.HIGHEST


def lobpcg_standard(A, X, m: int = 100, tol=None):
    """The top ``k`` eigenvalues and eigenvectors of the Hermitian ``A`` (an ``(n, n)`` array or a
    function computing ``A @ x`` for an ``(n, j)`` block), from the ``(n, k)`` start ``X``
    (``0 < 5 k < n``), by at most ``m`` LOBPCG steps. An eigenpair has converged when its residual
    norm is below ``tol * 10 * n * (lambda + |A v|)`` (``tol`` None: the dtype's epsilon); all
    ``k`` converged ends the iteration early.

    Returns ``(theta, U, i)``: the ``(k,)`` eigenvalues in descending order, the ``(n, k)``
    eigenvectors and the number of steps taken. Raises ``ValueError`` for ``k == 0``,
    ``5 k >= n``, or an ``A`` of another dtype or shape than ``X``'s.

    >>> import funcgrad.numpy as fnp
    >>> theta, _, _ = lobpcg_standard(lambda x: 2.0 * x, fnp.eye(12, 2), 10)
    >>> theta.tolist()
    [2.0, 2.0]
    """
    if isinstance(A, Array | np.ndarray):  # (compiled once per matrix shape)
        return _lobpcg_standard_matrix(A, X, m, tol, debug=False)
    return _lobpcg_standard_callable(A, X, m, tol, debug=False)


@functools.partial(jit, static_argnames=["m", "debug"])
def _lobpcg_standard_matrix(A, X, m: int, tol, debug: bool = False):
    """``lobpcg_standard`` of a matrix; with ``debug`` also the per-step diagnostics (JAX's)."""
    return _lobpcg_standard_callable(functools.partial(_mm, A), X, m, tol, debug)


@functools.partial(jit, static_argnames=["A", "m", "debug"])
def _lobpcg_standard_callable(A: Callable, X, m: int, tol, debug: bool = False):
    """``lobpcg_standard`` of a function; with ``debug`` also the per-step diagnostics: ``m``
    steps whatever the convergence, as a ``scan`` whose outputs are the diagnostics."""
    n, k = X.shape
    _check_inputs(A, X)
    if tol is None:
        tol = float(fnp.finfo(X.dtype).eps)
    X = _orthonormalize(X)
    P = _extend_basis(X, k)
    AX = A(X)
    theta = fnp.sum(X * AX, axis=0, keepdims=True)
    R = AX - theta * X

    def step(state):
        i, X, P, R, _, theta = state
        R = _project_out(fnp.concatenate((X, P), axis=1), R)
        XPR = fnp.concatenate((X, P, R), axis=1)
        theta, Q = _rayleigh_ritz_orth(A, XPR)
        B = Q[:, :k]
        B = B / fnp.linalg.norm(B, ord=2, axis=0, keepdims=True)
        X = _mm(XPR, B)
        X = X / fnp.linalg.norm(X, ord=2, axis=0, keepdims=True)
        # The new directions: the rest of the Ritz block, orthogonalised against the top k in the
        # Ritz basis (orthonormal, as XPR is), then mapped by XPR.
        q, _ = fnp.linalg.qr(Q[:k, k:].T)
        P = _mm(XPR, _mm(Q[:, k:], q))
        normP = fnp.linalg.norm(P, ord=2, axis=0, keepdims=True)
        P = P / fnp.where(normP == 0, 1.0, normP)
        AX = A(X)
        R = AX - theta[None, :k] * X
        resid_norms = fnp.linalg.norm(R, ord=2, axis=0)
        # Converged: the residual is within the rounding error of computing it (JAX's criterion).
        reltol = (fnp.linalg.norm(AX, ord=2, axis=0) + theta[:k]) * n * 10
        converged = fnp.sum(resid_norms < tol * reltol)
        new_state = i + 1, X, P, R, converged, theta[None, :k]
        if debug:
            return new_state, _diagnostics(XPR, X, P, R, theta, converged, resid_norms / reltol)
        return new_state

    state = (0, X, P, R, 0, theta)
    if debug:
        state, diagnostics = lax.scan(lambda s, _: step(s), state, xs=None, length=m)
        i, X, _, _, _, theta = state
        return theta[0, :], X, i, diagnostics
    state = lax.while_loop(lambda s: fnp.logical_and(s[0] < m, s[4] < k), step, state)
    i, X, _, _, _, theta = state
    return theta[0, :], X, i


def _check_inputs(A, X) -> None:
    n, k = X.shape
    if k == 0:
        raise ValueError(f"must have search dim > 0, got {k}")
    if k * 5 >= n:
        raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
    out = A(fnp.zeros((n, 1), dtype=X.dtype))
    if out.dtype != X.dtype:
        raise ValueError(f"A, X must have same dtypes (were {out.dtype}, {X.dtype})")
    if out.shape != (n, 1):
        raise ValueError(f"A must be ({n}, {n}) matrix A, got output {out.shape}")


def _mm(a, b):
    return lax.dot(a, b, precision=(_HIGHEST, _HIGHEST))


def _diagnostics(prev_XPR, X, P, R, theta, converged, adj_resid) -> dict:
    """One step's diagnostics (JAX's keys): the basis rank, zero columns, orthogonality errors,
    the eigenvalue and residual histories and the adjusted residuals' spread."""
    k = X.shape[1]

    def off_diagonal_error(g):
        return fnp.abs(g - fnp.diag(fnp.diag(g))).sum() / (k**2)

    return {
        "basis rank": prev_XPR.shape[1] - fnp.sum(fnp.all(prev_XPR == 0.0, axis=0)),
        "X zeros": fnp.sum(fnp.all(X == 0.0, axis=0)),
        "P zeros": fnp.sum(fnp.all(P == 0.0, axis=0)),
        "lambda history": theta[:k],
        "residual history": fnp.linalg.norm(R, axis=0, ord=2),
        "converged": converged,
        "adjusted residual max": fnp.max(adj_resid),
        "adjusted residual p50": fnp.median(adj_resid),
        "adjusted residual min": fnp.min(adj_resid),
        "X orth": off_diagonal_error(_mm(X.T, X)),
        "P orth": off_diagonal_error(_mm(P.T, P)),
        "P.X": fnp.abs(X.T @ P).sum() / (k**2),
    }


def _eigh_descending(A):
    w, V = fnp.linalg.eigh(A)
    return w[::-1], V[:, ::-1]


def _svqb(X):
    """An orthonormal basis of ``X``'s columns (SVQB: an ``eigh`` of the Gram matrix); directions
    below ``eps`` times the largest eigenvalue are zeroed (a rank-deficient ``X`` keeps fewer)."""
    norms = fnp.linalg.norm(X, ord=2, axis=0, keepdims=True)
    X = X / fnp.where(norms == 0, 1.0, norms)
    inner = _mm(X.T, X)
    w, V = _eigh_descending(inner)
    tau = fnp.finfo(X.dtype).eps * w[0]
    scale = fnp.where(tau > 0, fnp.maximum(w, tau), 1.0) ** (-0.5)  # (tau == 0: X was all zeros)
    ortho = _mm(X, V * scale[None, :])
    keep = ((w > tau) * (fnp.diag(inner) > 0.0))[None, :]
    ortho = ortho * keep.astype(ortho.dtype)
    norms = fnp.linalg.norm(ortho, ord=2, axis=0, keepdims=True)
    keep = keep * (norms > 0.0)
    return ortho / fnp.where(keep, norms, 1.0)


def _orthonormalize(basis):
    for _ in range(2):  # (twice is enough)
        basis = _svqb(basis)
    return basis


def _project_out(basis, U):
    """``U``'s component orthogonal to the orthonormal ``basis`` (zero columns allowed), its
    nonzero columns orthonormal: subtract and orthonormalise twice (Kahan's "twice is enough"),
    subtract twice more, and zero any column whose norm the last subtractions shrank (orthogonality
    to ``basis`` wins over rank)."""
    for _ in range(2):
        U = U - _mm(basis, _mm(basis.T, U))
        U = _orthonormalize(U)
    for _ in range(2):
        U = U - _mm(basis, _mm(basis.T, U))
    normU = fnp.linalg.norm(U, ord=2, axis=0, keepdims=True)
    return U * (normU >= 0.99).astype(U.dtype)


def _rayleigh_ritz_orth(A, S):
    """The eigenpairs (descending) of ``A`` projected on the orthonormal ``S``: ``S^T A S``."""
    return _eigh_descending(_mm(S.T, A(S)))


def _extend_basis(X, m: int):
    """``m`` orthonormal columns orthogonal to the orthonormal ``(n, k)`` ``X``: block Householder
    reflectors built from the SVD of X's top ``k`` rows, applied to ``[0; I_m; 0]``."""
    n, k = X.shape
    upper, lower = X[:k], X[k:]
    u, s, vt = fnp.linalg.svd(upper)
    y = fnp.concatenate([upper + _mm(u, vt), lower], axis=0)
    other = fnp.concatenate([fnp.eye(m, dtype=X.dtype), fnp.zeros((n - k - m, m), dtype=X.dtype)], axis=0)
    w = _mm(y, vt.T * ((2 * (1 + s)) ** (-1 / 2))[None, :])
    h = -2 * fnp.linalg.multi_dot([w, w[k:, :].T, other], precision=_HIGHEST)
    return h.at[k:].add(other)
