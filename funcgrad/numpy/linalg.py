"""``funcgrad.numpy.linalg``: ``jax.numpy.linalg``'s 31 functions on LAPACK primitives.

Layer: surface. Imports the kernel, the primitive catalog (``linalg``, ``spectral``, ``_matrix``,
``elementwise``) and the modules of ``funcgrad.numpy`` (``_linalg`` holds the shared solves and
determinants).

Every decomposition is one primitive (``primitives/linalg.py``, ``primitives/spectral.py``):
LAPACK through NumPy/SciPy eagerly, jaxlib's LAPACK custom calls under ``jit``, derivative rules
of matrix calculus (NOTE: [solve's derivative], NOTE: [spectral derivatives]). Semantics are
NumPy 2's and the Array API's, with JAX's conventions: integer inputs compute in float64, batch
dimensions broadcast, a failed factorisation gives NaN rather than an exception (NOTE:
[factorisation failures]), ``eigh``/``cholesky`` symmetrise their input first
(``symmetrize_input=True``).

Norms are differentiable everywhere with finite derivatives: at the zero vector the 2-norm's
derivative is taken as 0 (a subgradient) instead of ``0 / 0``, by the double-where of NOTE: [no NaN
gradients]. Matrix norms that need singular values (``ord=2``, ``-2``, ``'nuc'``) use ``svd``.
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy import _arraylike, _dtypes, complexes, reductions, transcendental, ufuncs
from funcgrad.numpy import _linalg as _la
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_args,
    constant,
    normalize_axes,
    normalize_axis,
    select,
)
from funcgrad.numpy._linalg_products import (
    cross,
    diagonal,
    matmul,
    multi_dot,
    outer,
    tensordot,
    trace,
    vecdot,
)
from funcgrad.numpy.lookup import take_along_axis
from funcgrad.numpy.manipulation import expand_dims, matrix_transpose, moveaxis, reshape, squeeze
from funcgrad.numpy.sorting import argsort
from funcgrad.numpy.transcendental import safe_sqrt
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import linalg as la
from funcgrad.primitives import spectral as sp

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class EigResult(NamedTuple):
    """``eig``'s result: eigenvalues and right eigenvectors (complex)."""

    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    """``eigh``'s result: ascending eigenvalues and orthonormal eigenvectors (columns)."""

    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    """``qr``'s result: ``Q`` with orthonormal columns and upper-triangular ``R``."""

    Q: Any
    R: Any


class SVDResult(NamedTuple):
    """``svd``'s result: ``a = U @ diag(S) @ Vh``."""

    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the sign of the determinant and the log of its absolute value."""

    sign: Any
    logabsdet: Any


# ----------------------------------------------------------------------------------------------
# Factorisations


# NOTE: [eager factorisations as one program]
# JAX's ``jnp.linalg`` factorisations and norms (``eigh``, ``svd``, ``qr``, ``cholesky``, ``inv``,
# ``solve``, ``det``, ``slogdet``, ``eigvals``, ``eigvalsh``, ``norm``, ``cond``, ``matrix_power``)
# are jitted functions: an eager call is one call of a cached compiled program. Run op by op, each
# primitive of theirs runs on its own (compiled, NOTE: [eager LAPACK as compiled], or through
# SciPy's LAPACK) and the glue around it (symmetrisation, pivots, the diagonal's product, the
# transposes) too: ~40-170 us for a 4x4 matrix against jax's ~5-12, and the glue rounds
# differently from XLA's fused program (a det in the last place). Each is ``jitted_eagerly`` with
# JAX's static arguments (NOTE: [eager library functions as one program] in
# kernel/library_programs.py): ~12-25 us, with jax's bits (tests/surface/numpy/test_linalg.py
# compares them).


@jitted_eagerly(static_argnames=("upper", "symmetrize_input"))
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of Hermitian positive-definite matrices: lower ``L`` with
    ``a = L @ L^H`` (``upper=True``: ``U = L^H``); NaN where ``a`` is not positive definite.

    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    a = _la.matrices(a, "cholesky", square=True)
    if symmetrize_input:
        a = _la.symmetrize(a)
    factor = la.cholesky(a)
    return _la.H(factor) if upper else factor


@jitted_eagerly(static_argnames=("mode",))
def qr(a, mode: str = "reduced"):
    """QR decomposition ``a = Q @ R``: ``mode='reduced'`` (``Q``: m x k), ``'complete'``
    (``Q``: m x m), ``'r'`` (``R`` only) or ``'raw'`` (LAPACK's packed ``(h, tau)``).

    >>> q, r = qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> np.round(np.asarray(q @ r), 12).tolist()
    [[3.0, 1.0], [4.0, 2.0]]
    """
    a = _la.matrices(a, "qr")
    if mode == "raw":
        packed, taus = la.geqrf(a)
        return QRResult(matrix_transpose(packed), taus)
    if mode not in ("reduced", "complete", "r", "full"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete', 'r' or 'raw', got {mode!r}")
    q, r = la.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


@jitted_eagerly(static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def svd(
    a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index=None
):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (``S`` descending), as
    ``SVDResult(U, S, Vh)``, or ``S`` alone without ``compute_uv``.

    >>> u, s, vh = svd(np.array([[0.0, 2.0], [1.0, 0.0]]))
    >>> s.tolist()
    [2.0, 1.0]
    """
    a = _la.matrices(a, "svd")
    if hermitian:
        v, w = sp.eigh(_la.symmetrize(a), subset_by_index=subset_by_index)
        s = ew.abs_p.bind(w)
        order = _descending_order(s)
        s = _take_last(s, order)
        if not compute_uv:
            return s
        u = _take_last(v, order, matrix=True)
        signs = ew.convert_element_type(ew.sign(_take_last(w, order)), a.dtype)
        return SVDResult(u, s, _la.H(mx.columns_scaled(u, signs)))
    if not compute_uv:  # (full_matrices is checked against subset_by_index: JAX's ValueError)
        return sp.svd(a, full_matrices=full_matrices, compute_uv=False, subset_by_index=subset_by_index)[0]
    s, u, vh = sp.svd(a, full_matrices=full_matrices, compute_uv=True, subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)


def _descending_order(s):
    return argsort(s, axis=-1, descending=True)


def _take_last(x, order, matrix=False):
    if matrix:
        return take_along_axis(x, expand_dims(order, -2), axis=-1)
    return take_along_axis(x, order, axis=-1)


def svdvals(x, /):
    """Singular values of the matrices in the last two axes, in descending order.

    >>> svdvals(np.array([[3.0, 0.0], [0.0, -4.0]])).tolist()
    [4.0, 3.0]
    """
    return svd(x, compute_uv=False)


@jitted_eagerly(static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and orthonormal eigenvectors of Hermitian matrices, as
    ``EighResult(eigenvalues, eigenvectors)``; ``UPLO`` picks the triangle read when
    ``symmetrize_input=False``.

    >>> w, v = eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> np.round(np.asarray(w), 12).tolist()
    [1.0, 3.0]
    """
    a = _la.matrices(a, "eigh", square=True)
    lower = _uplo(UPLO, "eigh")
    if symmetrize_input:
        a = _la.symmetrize(a)
    v, w = sp.eigh(a, lower=lower)
    return EighResult(w, v)


def _uplo(UPLO, name) -> bool:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO != "U"


@jitted_eagerly(static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of Hermitian matrices.

    >>> np.round(np.asarray(eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))), 12).tolist()
    [1.0, 3.0]
    """
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices (complex), as
    ``EigResult(eigenvalues, eigenvectors)`` with ``a @ v[:, i] = w[i] * v[:, i]``.

    >>> w, v = eig(np.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> w.tolist()
    [(2+0j), (3+0j)]
    """
    a = _la.matrices(a, "eig", square=True)
    w, v = sp.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    return EigResult(w, v)


@jitted_eagerly
def eigvals(a):
    """Eigenvalues of general square matrices (complex).

    >>> eigvals(np.array([[0.0, 1.0], [-1.0, 0.0]])).tolist()
    [1j, -1j]
    """
    a = _la.matrices(a, "eigvals", square=True)
    return sp.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


# ----------------------------------------------------------------------------------------------
# Solves, inverses, determinants


@jitted_eagerly
def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` (LU with partial pivoting); ``b`` is a vector when 1-D,
    else a stack of matrices; batch axes broadcast. NaN/inf for singular ``a``.

    >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0])).tolist()
    [1.0, 0.5]
    """
    return _la.solve(a, b)


@jitted_eagerly
def inv(a):
    """Inverse of the square matrices in the last two axes.

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return _la.inv(a)


@jitted_eagerly
def det(a):
    """Determinant of the square matrices in the last two axes (LU; exact derivative even at
    singular matrices, NOTE: [solve's derivative]).

    >>> float(det(np.array([[1.0, 2.0], [3.0, 4.0]])))
    -2.0
    """
    return _la.det(a)


@jitted_eagerly(static_argnames=("method",))
def slogdet(a, *, method: str | None = None):
    """Sign and log-absolute-value of the determinant, ``SlogdetResult(sign, logabsdet)``;
    ``(0, -inf)`` for singular matrices. ``method``: ``'lu'`` (default) or ``'qr'``.

    >>> s, l = slogdet(np.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> float(s), round(float(l), 12) == round(float(np.log(6.0)), 12)
    (-1.0, True)
    """
    if method not in (None, "lu", "qr"):
        raise ValueError(f"slogdet: method must be 'lu' or 'qr', got {method!r}")
    if method == "qr" and np.iscomplexobj(a):  # (JAX's type and words)
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    return SlogdetResult(*_la.slogdet(a, method=method or "lu"))


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse by SVD; singular values below ``rtol * max(s)`` (default
    ``10 * max(m, n) * eps``) count as zero. Differentiable (a stated JVP, as JAX).

    >>> pinv(np.array([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")  # (JAX's words)
        rtol = rcond
    a = _la.matrices(a, "pinv")
    if rtol is not None and not isinstance(rtol, int | float):
        rtol = asarray(rtol, mx.real_dtype(a.dtype))
        return _pinv_impl(a, rtol, hermitian)
    return _pinv_custom(a, rtol, hermitian)


def _pinv_impl(a, rtol, hermitian):
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return asarray(np.zeros((*a.shape[:-2], n, m), a.dtype))
    rdt = mx.real_dtype(a.dtype)
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(np.finfo(rdt).eps)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = asarray(rtol, rdt)
    rtol = expand_dims(rtol, -1) if rtol.ndim else rtol  # one tolerance per matrix of the batch
    cutoff = ew.mul(*broadcast_args(rtol, s[..., 0:1]))
    s_b, cutoff = broadcast_args(s, cutoff)
    keep = ew.gt_p.bind(s_b, cutoff)
    inv_s = select(keep, ew.div(constant(1, rdt), select(keep, s, constant(1, rdt))), constant(0, rdt))
    return matmul(_la.H(vh), mx.rows_scaled(_la.H(u), ew.convert_element_type(inv_s, a.dtype)))


_pinv_custom = custom_jvp(_pinv_impl, nondiff_argnums=(1, 2))


@_pinv_custom.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    (a,), (da,) = primals, tangents
    # The pseudo-inverse with this same rule (not the SVD composition): higher derivatives then come
    # from this formula too, as in jax, instead of the SVD's, which are NaN where singular values
    # repeat (the Hessian of pinv at 2 * I was NaN).
    p = _pinv_custom(a, rtol, hermitian)
    if hermitian:
        a, da = _la.symmetrize(a), _la.symmetrize(da)
    h = _la.H
    m, n = a.shape[-2:]
    if m >= n:
        s = matmul(matmul(p, h(p)), h(da))
        t = matmul(matmul(h(da), h(p)), p)
        dp = -matmul(matmul(p, da), p) + s - matmul(matmul(s, a), p) + t - matmul(matmul(p, a), t)
    else:
        s = matmul(p, matmul(h(p), h(da)))
        t = matmul(h(da), matmul(h(p), p))
        dp = -matmul(p, matmul(da, p)) + s - matmul(s, matmul(a, p)) + t - matmul(p, matmul(a, t))
    return p, dp


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of ``a @ x = b`` (2-D ``a``, 1-D or 2-D ``b``) by SVD: ``(x,
    residuals, rank, s)``; singular values below ``rcond * max(s)`` (default ``eps * max(m, n)``)
    are dropped. Residuals are always returned unless ``numpy_resid`` asks for NumPy's rule.

    >>> x, res, rank, s = lstsq(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([1.0, 2.0, 3.0]))
    >>> x.tolist(), res.tolist(), int(rank)
    ([1.0, 2.0], [9.0], 2)
    """
    a, b = _la.inexact_pair(a, b, "lstsq")
    if a.ndim != 2:
        raise TypeError(f"lstsq: a must be two-dimensional, got shape {a.shape}")
    if b.ndim not in (1, 2):
        raise TypeError(f"lstsq: b must be one- or two-dimensional, got shape {b.shape}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"lstsq: a {a.shape} and b {b.shape} must have the same number of rows")
    vector = b.ndim == 1
    if vector:
        b = reshape(b, (b.shape[0], 1))
    m, n = a.shape
    rdt = mx.real_dtype(a.dtype)
    if a.size == 0:
        s = asarray(np.zeros(0, rdt))
        rank = asarray(np.int64(0))
        x = asarray(np.zeros((n, b.shape[1]), a.dtype))
    else:
        eps = float(np.finfo(rdt).eps)
        rcond = eps * max(m, n) if rcond is None else (eps if rcond < 0 else rcond)
        u, s, vt = svd(a, full_matrices=False)
        keep = ew.and_p.bind(
            ew.gt_p.bind(s, constant(0, rdt)), ew.ge_p.bind(s, ew.mul(s[0], constant(rcond, rdt)))
        )
        rank = reductions.sum(keep)  # the default integer, as NumPy
        inv_s = select(keep, ew.div(constant(1, rdt), select(keep, s, constant(1, rdt))), constant(0, rdt))
        utb = matmul(_la.H(u), b)
        x = matmul(_la.H(vt), mx.rows_scaled(utb, ew.convert_element_type(inv_s, a.dtype)))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = asarray(np.zeros(0, rdt))
    else:
        r = ew.sub(b, matmul(a, x))
        resid = reductions.sum(_abs2(r), 0)
    if vector:
        x = reshape(x, (n,))
    return x, resid, rank, s


@jitted_eagerly(static_argnames=("n",))
def matrix_power(a, n: int):
    """``a`` multiplied by itself ``n`` times (repeated squaring; ``n < 0`` inverts first,
    ``n == 0`` gives the identity).

    >>> matrix_power(np.array([[1.0, 1.0], [0.0, 1.0]]), 3).tolist()
    [[1.0, 3.0], [0.0, 1.0]]
    """
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: a must be square in its last two dimensions, got shape {a.shape}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    if n == 0:
        return asarray(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    if n == 3:  # (JAX's order of the products: (a @ a) @ a, not a @ (a @ a))
        return matmul(matmul(a, a), a)
    result, z = None, None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """The number of singular values above the threshold, as JAX's: ``rtol`` (or ``tol``) is the
    threshold itself, absolute (NumPy's and the Array API's ``rtol`` is relative to the largest
    singular value: ``matrix_rank(diag(10, 1), rtol=0.5)`` is 2 here and in jax, 1 in NumPy); by
    default ``max(s) * max(m, n) * eps``, whose maximum refuses an empty matrix, as JAX's.

    >>> int(matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")  # (JAX's words)
        rtol = tol
    M = _la.inexact(M, "matrix_rank", "M")
    if M.ndim < 2:  # (JAX's int32 in either mode)
        return ew.convert_element_type(reductions.any(ew.ne_p.bind(M, constant(0, M.dtype))), np.int32)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    rdt = s.dtype
    if rtol is None:
        top = reductions.max(s, -1)  # (an empty matrix: max's error, JAX's)
        rtol = ew.mul(ew.mul(top, constant(max(M.shape[-2:]), rdt)), constant(float(np.finfo(rdt).eps), rdt))
    threshold = expand_dims(asarray(rtol, rdt), -1)
    above = ew.gt_p.bind(*broadcast_args(s, threshold))
    return reductions.sum(above, -1)  # the default integer, as NumPy and the Array API


@jitted_eagerly(static_argnames=("p",))
def cond(x, p=None):
    """The condition number ``norm(x, p) * norm(inv(x), p)``; for ``p`` None/2/-2 the ratio of
    extreme singular values. ``inf`` for singular matrices.

    >>> float(cond(np.diag(np.array([1.0, 4.0]))))
    4.0
    """
    x = _la.matrices(x, "cond", "x")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"cond: x must not be empty, got shape {x.shape}")
    if p in (None, 2, -2):
        s = svdvals(x)
        r = ew.div(s[..., 0], s[..., -1]) if p != -2 else ew.div(s[..., -1], s[..., 0])
    else:
        if x.shape[-1] != x.shape[-2]:
            raise ValueError(f"cond: for p={p!r} x must be square, got shape {x.shape}")
        r = ew.mul(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))
    nan_r = ew.ne_p.bind(r, r)
    nan_x = reductions.any(ew.ne_p.bind(x, x), (-2, -1))
    fix = ew.and_p.bind(*broadcast_args(nan_r, ew.not_p.bind(nan_x)))
    return select(fix, constant(np.inf, r.dtype), r)


# ----------------------------------------------------------------------------------------------
# Norms


def _abs2(x):
    """``|x|^2`` (real)."""
    if aval(x).dtype.kind == "c":
        return mx.real(ew.mul(x, mx.conj(x)))
    return ew.square_p.bind(x)


def _safe_root(s, p: float):
    """``s ** (1 / p)`` with a zero derivative at ``s == 0`` (double where)."""
    dtype = aval(s).dtype
    zero = constant(0, dtype)
    is_zero = ew.eq_p.bind(s, zero)
    safe = select(is_zero, constant(1, dtype), s)
    return select(is_zero, zero, ew.pow_p.bind(safe, constant(1.0 / p, dtype)))


def _as_inexact(x):
    x = asarray(x)
    return x if _dt.is_inexact(x.dtype) else ew.convert_element_type(x, _dt.inexact_of(x.dtype))


def _vector_norm(x, axes, ord, keepdims):
    absx = mx.abs_value(x)
    if ord is None or ord == 2:
        return safe_sqrt(reductions.sum(_abs2(x), axes, keepdims=keepdims))
    if ord == np.inf:
        # initial=0 as jax.numpy: an empty vector has norm 0, and at the zero vector the initial value
        # ties with every entry and takes its share of the derivative (jax's value there; issue 33).
        return reductions.max(absx, axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(absx, axes, keepdims=keepdims)
    if ord == 0:
        nonzero = ew.convert_element_type(ew.ne_p.bind(absx, constant(0, absx.dtype)), absx.dtype)
        return reductions.sum(nonzero, axes, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(absx, axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise _invalid_vector_order(ord)
    p = float(ord)
    powered = ew.pow_p.bind(absx, constant(p, absx.dtype))
    total = reductions.sum(powered, axes, keepdims=keepdims)
    if p < 0:
        return ew.pow_p.bind(total, constant(1.0 / p, absx.dtype))
    return _safe_root(total, p)


def _max_from_zero(sums, axis):
    # As jax.numpy's matrix 1- and inf-norms: amax(..., initial=0) (see _vector_norm).
    return reductions.max(sums, axis, keepdims=True, initial=0)


def _matrix_norm(x, row_axis, col_axis, ord, keepdims):
    axes = (row_axis, col_axis)
    if ord is None or ord == "fro" or ord == "f":
        return safe_sqrt(reductions.sum(_abs2(x), axes, keepdims=keepdims))
    if ord in (2, -2, "nuc"):
        sv = svdvals(moveaxis(x, (row_axis, col_axis), (-2, -1)))
        # (JAX's reductions: amax from 0, so an empty matrix has norm 0 and tied singular values
        # share the derivative; amin refuses an empty matrix in JAX's words)
        if ord == "nuc":
            out = reductions.sum(sv, -1)
        elif ord == 2:
            out = reductions.max(sv, -1, initial=0)
        else:
            out = reductions.min(sv, -1)
        return expand_dims(out, tuple(sorted(axes))) if keepdims else out
    absx = mx.abs_value(x)
    if ord in (1, -1):
        sums = reductions.sum(absx, row_axis, keepdims=True)
        out = _max_from_zero(sums, col_axis) if ord == 1 else reductions.min(sums, col_axis, keepdims=True)
    elif ord in (np.inf, -np.inf):
        sums = reductions.sum(absx, col_axis, keepdims=True)
        out = (
            _max_from_zero(sums, row_axis) if ord == np.inf else reductions.min(sums, row_axis, keepdims=True)
        )
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")  # (JAX's words)
    return out if keepdims else squeeze(out, axes)


def _invalid_vector_order(ord) -> ValueError:
    msg = f"Invalid order '{ord}' for vector norm."  # (JAX's words, its missing space included)
    if ord in ("inf", "-inf"):
        msg += f"Use '{ord[:-3]}jax.numpy.inf' instead."
    return ValueError(msg)


@jitted_eagerly(static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector or matrix norm (NumPy's ``linalg.norm``), with a zero derivative at the zero vector.

    >>> float(norm(np.array([3.0, 4.0])))
    5.0
    >>> norm(np.array([[1.0, -2.0], [3.0, 4.0]]), ord=1).item()
    6.0
    >>> norm(np.ones((2, 3)), axis=1).tolist() == [float(np.sqrt(3))] * 2
    True
    """
    x = _as_inexact(x)
    if axis is None:
        if ord is None:
            return safe_sqrt(reductions.sum(_abs2(x), tuple(range(x.ndim)), keepdims=keepdims))
        if x.ndim == 1:
            return _vector_norm(x, (0,), ord, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, 0, 1, ord, keepdims)
        raise ValueError(_improper_axes(tuple(range(x.ndim))))
    if isinstance(axis, int | np.integer):
        return _vector_norm(x, (normalize_axis(axis, x.ndim),), ord, keepdims)
    axes = tuple(axis)
    if len(axes) == 1:
        return _vector_norm(x, (normalize_axis(axes[0], x.ndim),), ord, keepdims)
    if len(axes) == 2:
        row, col = normalize_axis(axes[0], x.ndim), normalize_axis(axes[1], x.ndim)
        if row == col:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, row, col, ord, keepdims)
    raise ValueError(_improper_axes(tuple(normalize_axis(a, x.ndim) for a in axes)))


def _improper_axes(axis) -> str:
    return (  # (JAX's words)
        f"Improper number of axes for norm: {axis=}. Pass one axis to compute a vector-norm, or two "
        "axes to compute a matrix-norm."
    )


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The Array API's vector norm (over all elements when ``axis`` is None).

    >>> float(vector_norm(np.array([[3.0], [4.0]])))
    5.0
    """
    x = asarray(x)
    axes = normalize_axes(axis, x.ndim)
    if _dt.jax_rules and not _dt.is_inexact(x.dtype):
        return _integer_vector_norm(x, axes, ord, keepdims)
    return _vector_norm(_as_inexact(x), axes, ord, keepdims)


def _integer_vector_norm(x, axes, ord, keepdims):
    """jax.numpy's ``vector_norm`` of integers and booleans (JAX's dtype rules: 32-bit mode and the
    alias): its formulas in the input's dtype, so ``x * x`` and ``abs`` wrap around, ``ord=1`` and
    ``inf`` keep an integer dtype, ``ord=0`` refuses (``finfo`` of an integer), and a general
    ``ord`` is a power by constants of ``x``'s dtype (``1 / ord`` truncated) -- jax's values and
    dtypes. (``norm`` converts to floating point first, in both libraries.)"""
    if ord is None or ord == 2:
        squares = complexes.real(x * complexes.conj(x))
        return transcendental.sqrt(reductions.sum(squares, axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return reductions.max(ufuncs.abs(x), axis=axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(ufuncs.abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(x != 0, dtype=_dtypes.finfo(x.dtype).dtype, axis=axes, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(ufuncs.abs(x), axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise _invalid_vector_order(ord)
    abs_x = ufuncs.abs(x)
    with np.errstate(all="ignore"):  # (JAX's lax._const: NumPy's casts of ord and 1 / ord)
        ord_np = np.array(ord, x.dtype)
        ord_inv = np.array(1.0 / ord_np, x.dtype)
    out = reductions.sum(abs_x ** constant(ord_np, x.dtype), axis=axes, keepdims=keepdims)
    return ufuncs.power(out, constant(ord_inv, x.dtype))


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The Array API's matrix norm over the last two axes.

    >>> round(float(matrix_norm(np.eye(2)) ** 2), 12)
    2.0
    """
    x = _as_inexact(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: x must be at least two-dimensional, got shape {x.shape}")
    return _matrix_norm(x, x.ndim - 2, x.ndim - 1, ord, keepdims)


# ----------------------------------------------------------------------------------------------
# Tensors (the products are funcgrad/numpy/_linalg_products.py's)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` seen as a linear map from its last ``ndim - ind`` axes to its first
    ``ind`` (so that ``tensordot(tensorinv(a, ind), a, ind)`` is the identity).

    >>> tensorinv(np.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    a = asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    out_shape, in_shape = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise ValueError(
            f"tensorinv: the product of the first {ind} dimensions ({rows}) must equal that of the "
            f"others ({cols}); got shape {a.shape}"
        )
    return reshape(inv(reshape(a, (rows, cols))), (*in_shape, *out_shape))


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (``axes`` of ``a`` moved last first).

    >>> tensorsolve(np.eye(4).reshape(2, 2, 4), np.ones((2, 2))).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    a, b = asarray(a), asarray(b)
    if axes is not None:
        axes = tuple(axes)
        a = moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    if a.shape[: b.ndim] != b.shape:
        raise ValueError(f"tensorsolve: the leading dimensions of a {a.shape} must be b's shape {b.shape}")
    out_shape = a.shape[b.ndim :]
    if b.size != math.prod(out_shape):
        raise ValueError(
            "tensorsolve: prod(a.shape[:b.ndim]) must equal prod(a.shape[b.ndim:]); "
            f"got a {a.shape}, b {b.shape}"
        )
    x = solve(reshape(a, (b.size, b.size)), reshape(b, (b.size,)))
    return reshape(x, out_shape)


# (last: the public functions refuse lists where JAX's do, NOTE: [array-like arguments])
_arraylike.install(globals(), "linalg.")
