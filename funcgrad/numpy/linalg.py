"""``funcgrad.numpy.linalg``: vector and matrix norms (and the contractions NumPy re-exports here).

Layer: surface. Imports ``funcgrad.numpy._core``, ``reductions``, ``contractions``, ``manipulation``
and the primitive catalog (elementwise family).

``det``, ``slogdet``, ``solve`` and ``inv`` use Gaussian elimination with partial pivoting made of
primitives (NOTE: [LU by composition]).

Norms are differentiable everywhere with finite derivatives: at the zero vector the 2-norm's
derivative is taken as 0 (a subgradient) instead of ``0 / 0``, by the double-where of NOTE: [no NaN
gradients]. Matrix norms that need singular values (``ord=2``, ``-2``, ``'nuc'``) and ``svdvals``/``cond``/
``matrix_rank`` use one-sided Jacobi rotations made of primitives (NOTE: [Jacobi singular values]).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_args,
    broadcast_to,
    constant,
    convert,
    normalize_axes,
    normalize_axis,
    promote_args,
    select,
)
from funcgrad.numpy._jacobi import singular_values
from funcgrad.numpy._lu import back_substitute, diagonal_of, eliminate
from funcgrad.numpy.complexes import abs_squared, imag, real
from funcgrad.numpy.contractions import matmul, tensordot, vecdot
from funcgrad.numpy.contractions import outer as _outer
from funcgrad.numpy.contractions import trace as _trace
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate, expand_dims, matrix_transpose, moveaxis, reshape, squeeze
from funcgrad.numpy.transcendental import safe_sqrt
from primitives import elementwise as ew

__all__ = [
    "SlogdetResult",
    "cond",
    "det",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_rank",
    "matrix_transpose",
    "norm",
    "outer",
    "slogdet",
    "solve",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _safe_root(s, p: float):
    """``s ** (1 / p)`` with a zero derivative at ``s == 0`` (double where)."""
    dtype = aval(s).dtype
    zero = constant(0, dtype)
    is_zero = ew.eq_p.bind(s, zero)
    safe = select(is_zero, constant(1, dtype), s)
    return select(is_zero, zero, ew.pow_p.bind(safe, constant(1.0 / p, dtype)))


def _as_inexact(x):
    x = asarray(x)
    return x if _dt.is_inexact(x.dtype) else convert(x, _dt.default_float)


def _vector_norm(x, axes, ord, keepdims):
    # Norms are real, complex input included (|x| is real; the 2-norm sums re^2 + im^2).
    absx = ew.abs_p.bind(x)
    if ord is None or ord == 2:
        return safe_sqrt(reductions.sum(abs_squared(x), axes, keepdims=keepdims))
    if ord == np.inf:
        return reductions.max(absx, axes, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(absx, axes, keepdims=keepdims)
    if ord == 0:
        nonzero = ew.convert_element_type(ew.ne_p.bind(x, constant(0, x.dtype)), absx.dtype)
        return reductions.sum(nonzero, axes, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(absx, axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    p = float(ord)
    powered = ew.pow_p.bind(absx, constant(p, absx.dtype))
    total = reductions.sum(powered, axes, keepdims=keepdims)
    if p < 0:
        return ew.pow_p.bind(total, constant(1.0 / p, absx.dtype))
    return _safe_root(total, p)


def _matrix_norm(x, row_axis, col_axis, ord, keepdims):
    axes = (row_axis, col_axis)
    if ord is None or ord == "fro" or ord == "f":
        return safe_sqrt(reductions.sum(abs_squared(x), axes, keepdims=keepdims))
    absx = ew.abs_p.bind(x)
    if ord in (1, -1):
        col_sums = reductions.sum(absx, row_axis, keepdims=True)
        fn = reductions.max if ord == 1 else reductions.min
        out = fn(col_sums, col_axis, keepdims=True)
    elif ord in (np.inf, -np.inf):
        row_sums = reductions.sum(absx, col_axis, keepdims=True)
        fn = reductions.max if ord == np.inf else reductions.min
        out = fn(row_sums, row_axis, keepdims=True)
    elif ord in (2, -2, "nuc"):
        # Singular values of the (row, col) planes, moved last (NOTE: [Jacobi singular values]).
        planes = moveaxis(x, (row_axis, col_axis), (-2, -1))
        sv = svdvals(planes)
        if ord == "nuc":
            out = reductions.sum(sv, -1)
        else:
            out = getitem(sv, (Ellipsis, 0 if ord == 2 else -1))
        if keepdims:
            out = expand_dims(out, tuple(sorted(axes)))
        return out
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices")
    return out if keepdims else squeeze(out, axes)


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
            all_axes = tuple(range(x.ndim))
            return safe_sqrt(reductions.sum(abs_squared(x), all_axes, keepdims=keepdims))
        if x.ndim == 1:
            return _vector_norm(x, (0,), ord, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, 0, 1, ord, keepdims)
        raise ValueError(
            "Improper number of dimensions to norm: give axis for arrays of more than 2 dimensions"
        )
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
    raise ValueError("Improper number of dimensions to norm.")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The Array API's vector norm (over all elements when ``axis`` is None).

    >>> float(vector_norm(np.array([[3.0], [4.0]])))
    5.0
    """
    x = _as_inexact(x)
    axes = normalize_axes(axis, x.ndim)
    return _vector_norm(x, axes, ord, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The Array API's matrix norm over the last two axes.

    >>> float(matrix_norm(np.eye(2)) ** 2)
    2.0
    """
    x = _as_inexact(x)
    return _matrix_norm(x, x.ndim - 2, x.ndim - 1, ord, keepdims)


def svdvals(x, /):
    """Singular values of the matrices in the last two axes, in descending order.

    >>> svdvals(np.array([[3.0, 0.0], [0.0, -4.0]])).round(12).tolist()
    [4.0, 3.0]
    """
    x = _as_inexact(x)
    if x.ndim < 2:
        raise ValueError(f"svdvals needs at least 2 dimensions, got shape {x.shape}")
    if x.dtype.kind == "c":
        # X + iY has the singular values of the real [[X, -Y], [Y, X]], each there twice.
        re, im = real(x), imag(x)
        top = concatenate([re, ew.neg_p.bind(im)], -1)
        bottom = concatenate([im, re], -1)
        doubled = singular_values(concatenate([top, bottom], -2))
        return getitem(doubled, (Ellipsis, slice(None, None, 2)))
    return singular_values(x)


def cond(x, p=None):
    """The condition number of ``x`` (``p=None``: the 2-norm ratio of extreme singular values; other
    ``p``: ``norm(x, p) * norm(inv(x), p)`` is not available).

    >>> float(cond(np.diag(np.array([1.0, 4.0]))))
    4.0
    """
    if p not in (None, 2, -2):
        raise NotImplementedError("cond: only p=None, 2 and -2 (singular-value ratios) are supported")
    sv = svdvals(x)
    ratio = ew.div_p.bind(getitem(sv, (Ellipsis, 0)), getitem(sv, (Ellipsis, -1)))
    return ratio if p != -2 else ew.div_p.bind(constant(1, ratio.dtype), ratio)


def matrix_rank(M, rtol=None, *, tol=None):
    """The number of singular values above ``tol`` (default ``max(M.shape[-2:]) * eps * sigma_max``).

    >>> int(matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    M = _as_inexact(M)
    if M.ndim < 2:
        return reductions.any(ew.ne_p.bind(M, constant(0, M.dtype))).astype(np.int64)
    sv = svdvals(M)
    if tol is None:
        factor = max(M.shape[-2:]) * np.finfo(M.dtype).eps if rtol is None else rtol
        tol = ew.mul_p.bind(getitem(sv, (Ellipsis, slice(0, 1))), constant(factor, sv.dtype))
    above = ew.gt_p.bind(*broadcast_args(sv, asarray(tol, sv.dtype)))
    return reductions.sum(above, -1)


def _square_matrices(a, name):
    a = _as_inexact(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: Last 2 dimensions of the array must be square, got shape {a.shape}")
    return a


def det(a):
    """Determinant of the square matrices in the last two axes (LU with partial pivoting made of
    primitives, NOTE: [LU by composition]; exactly 0 for singular matrices).

    >>> float(det(np.array([[1.0, 2.0], [3.0, 4.0]])))
    -2.0
    """
    a = _square_matrices(a, "det")
    n = a.shape[-1]
    if n == 0:
        return constant(1, a.dtype, a.shape[:-2])
    u, sign = eliminate(a, n)
    return ew.mul_p.bind(sign, reductions.prod(diagonal_of(u, n), -1))


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the sign of the determinant and the log of its absolute value."""

    sign: Any
    logabsdet: Any


def slogdet(a):
    """Sign and log-absolute-value of the determinant (``(0, -inf)`` for singular matrices).

    >>> s, l = slogdet(np.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> float(s), round(float(l), 12) == round(float(np.log(6.0)), 12)
    (-1.0, True)
    """
    a = _square_matrices(a, "slogdet")
    n = a.shape[-1]
    real = _dt.real_dtype(a.dtype)  # the log of |det| is real; the sign of a complex det is complex
    if n == 0:
        return SlogdetResult(constant(1, a.dtype, a.shape[:-2]), constant(0, real, a.shape[:-2]))
    u, sign = eliminate(a, n)
    d = diagonal_of(u, n)
    zero = constant(0, a.dtype)
    is_zero = ew.eq_p.bind(d, zero)
    logs = select(
        is_zero,
        constant(-np.inf, real),
        ew.log_p.bind(select(is_zero, constant(1, real), ew.abs_p.bind(d))),
    )
    sign = ew.mul_p.bind(sign, reductions.prod(ew.sign_p.bind(d), -1))
    return SlogdetResult(sign, reductions.sum(logs, -1))


def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` (``b`` a vector if 1-D, else matrices; batch axes
    broadcast), by elimination with partial pivoting (NOTE: [LU by composition]).

    >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0])).tolist()
    [1.0, 0.5]
    """
    a = _square_matrices(a, "solve")
    b = asarray(b)
    a, b = promote_args(a, b)
    n = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        b = reshape(b, (n, 1))
    if b.ndim < 2 or b.shape[-2] != n:
        raise ValueError(f"solve: b of shape {b.shape} does not match a of shape {a.shape}")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = broadcast_to(a, (*batch, n, n))
    b = broadcast_to(b, (*batch, n, b.shape[-1]))
    if n == 0:
        x = b
    else:
        u, _ = eliminate(concatenate([a, b], -1), n)
        x = back_substitute(u, n)
    return reshape(x, (*batch, n)) if vector else x


def inv(a):
    """Inverse of the square matrices in the last two axes (``solve(a, identity)``).

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    a = _square_matrices(a, "inv")
    n = a.shape[-1]
    eye = constant(np.eye(n), a.dtype)
    return solve(a, broadcast_to(eye, a.shape))


def outer(x1, x2, /):
    """Outer product of two vectors (Array API ``linalg.outer``).

    >>> outer(np.array([1, 2]), np.array([3, 4])).tolist()
    [[3, 4], [6, 8]]
    """
    return _outer(x1, x2)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Trace of the last two axes (Array API ``linalg.trace``).

    >>> trace(np.eye(3)).item()
    3.0
    """
    return _trace(x, offset, -2, -1, dtype)
