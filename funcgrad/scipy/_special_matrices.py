"""The structured matrices of ``funcgrad.scipy.linalg`` (``scipy.linalg``'s constructors, as
``jax.scipy.linalg`` has them): Toeplitz, Hankel, circulant, companion, Leslie, Fiedler, Hilbert,
Pascal, Helmert, Hadamard, DFT and convolution matrices, and ``block_diag``.

Layer: surface. Imports ``funcgrad.numpy`` and numpy.

Matrices built from array arguments are gathers of those arguments (differentiable, batched over
leading axes where SciPy/JAX batch them); matrices defined by a size alone are exact constants
computed with Python integers (``invhilbert``, ``pascal``, ``invpascal``), so they do not lose
digits to floating-point binomials.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.numpy._core import check_arraylike

__all__ = [
    "block_diag",
    "circulant",
    "companion",
    "convolution_matrix",
    "dft",
    "fiedler",
    "fiedler_companion",
    "hadamard",
    "hankel",
    "helmert",
    "hilbert",
    "invhilbert",
    "invpascal",
    "leslie",
    "pascal",
    "toeplitz",
]


def _vector(x):
    x = fnp.asarray(x)
    if x.ndim == 0:
        x = fnp.reshape(x, (1,))
    return x


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (default: ``conj(c)``);
    ``r[0]`` is ignored. Leading axes of ``c`` and ``r`` are batch axes.

    >>> toeplitz(np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0])).tolist()
    [[1.0, 4.0], [2.0, 1.0], [3.0, 2.0]]
    """
    check_arraylike("toeplitz", c, *(() if r is None else (r,)))
    c = _vector(c)
    if r is None:
        r = fnp.conj(c) if c.dtype.kind == "c" else c
    c, r = _batch_align(c, _vector(r))
    m, n = c.shape[-1], r.shape[-1]
    dtype = fnp.result_type(c, r)
    if m == 0 or n == 0:
        return fnp.zeros((*c.shape[:-1], m, n), dtype)
    elems = fnp.concatenate([fnp.flip(c, -1), r[..., 1:]], axis=-1).astype(dtype)
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return elems[..., idx]


def _batch_align(c, r):
    """Give ``c`` and ``r`` the same batch shape (their last axes may differ in length)."""
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    return fnp.broadcast_to(c, (*batch, c.shape[-1])), fnp.broadcast_to(r, (*batch, r.shape[-1]))


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (default zeros; ``r[0]`` is
    ignored).

    >>> hankel(np.array([1.0, 2.0, 3.0])).tolist()
    [[1.0, 2.0, 3.0], [2.0, 3.0, 0.0], [3.0, 0.0, 0.0]]
    """
    c = fnp.asarray(c)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar")
    r = fnp.zeros_like(c) if r is None else fnp.asarray(r)
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar")
    c, r = _batch_align(c, r)
    m, n = c.shape[-1], r.shape[-1]
    dtype = fnp.result_type(c, r)
    if m == 0 or n == 0:
        return fnp.zeros((*c.shape[:-1], m, n), dtype)
    elems = fnp.concatenate([c, r[..., 1:]], axis=-1).astype(dtype)
    return elems[..., np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c):
    """The circulant matrix whose first column is ``c`` (batched over leading axes).

    >>> circulant(np.array([1, 2, 3])).tolist()
    [[1, 3, 2], [2, 1, 3], [3, 2, 1]]
    """
    check_arraylike("circulant", c)
    c = _vector(c)
    n = c.shape[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1)]


def leslie(f, s):
    """The Leslie matrix: fecundities ``f`` (length n) in the first row, survival rates ``s``
    (length n - 1) on the subdiagonal.

    >>> leslie(np.array([0.1, 2.0, 1.0]), np.array([0.5, 0.8])).tolist()
    [[0.1, 2.0, 1.0], [0.5, 0.0, 0.0], [0.0, 0.8, 0.0]]
    """
    check_arraylike("leslie", f, s)
    f, s = fnp.atleast_1d(fnp.asarray(f)), fnp.atleast_1d(fnp.asarray(s))
    if f.shape[-1] < 2:
        raise ValueError(
            f"leslie: the length of f along the last axis must be at least 2, got shape {f.shape}"
        )
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(
            f"leslie: Incorrect lengths for f and s (s must have one entry fewer than f), got f {f.shape} "
            f"and s {s.shape}"
        )
    n = f.shape[-1]
    dtype = fnp.result_type(f, s)
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    f = fnp.broadcast_to(f.astype(dtype), (*batch, n))
    s = fnp.broadcast_to(s.astype(dtype), (*batch, n - 1))
    sub = fnp.zeros((*batch, n - 1, n), dtype).at[..., np.arange(n - 1), np.arange(n - 1)].set(s)
    return fnp.concatenate([f[..., None, :], sub], axis=-2)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest degree first):
    ``-a[1:] / a[0]`` in the first row, ones on the subdiagonal.

    >>> companion(np.array([1.0, -10.0, 31.0, -30.0])).tolist()
    [[10.0, -31.0, 30.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    check_arraylike("companion", a)
    a = fnp.atleast_1d(fnp.asarray(a))
    if a.dtype.kind in "biu":
        a = a.astype(_dt.inexact_of(a.dtype))  # (JAX's table under its rules: bool -> float32)
    if a.shape[-1] < 2:
        raise ValueError(
            f"companion: the length of `a` along the last axis must be at least 2, got shape {a.shape}"
        )
    first = -a[..., 1:] / a[..., :1]
    m = a.shape[-1] - 1
    sub = fnp.broadcast_to(fnp.eye(m - 1, m, dtype=first.dtype), (*a.shape[:-1], m - 1, m))
    return fnp.concatenate([first[..., None, :], sub], axis=-2)


def fiedler(a):
    """The Fiedler matrix ``|a_i - a_j|``.

    >>> fiedler(np.array([1.0, 4.0, 2.0])).tolist()
    [[0.0, 3.0, 1.0], [3.0, 0.0, 2.0], [1.0, 2.0, 0.0]]
    """
    check_arraylike("fiedler", a)
    a = fnp.atleast_1d(fnp.asarray(a))
    return fnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial ``a`` (a pentadiagonal matrix with the same
    characteristic polynomial as ``companion(a)``).

    >>> fiedler_companion(np.array([1.0, -6.0, 11.0, -6.0])).tolist()
    [[6.0, -11.0, 1.0], [1.0, 0.0, 0.0], [0.0, 6.0, 0.0]]
    """
    a = fnp.atleast_1d(fnp.asarray(a))
    if a.dtype.kind in "biu":
        a = a.astype(float)
    if a.shape[-1] == 0:
        raise ValueError(
            f"fiedler_companion: a must have a nonzero length along its last axis, got shape {a.shape}"
        )
    n = a.shape[-1] - 1
    if n == 0:
        return fnp.zeros((*a.shape[:-1], 0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    coef = lambda k: -a[..., np.minimum(k, n)]  # noqa: E731
    zero = fnp.zeros((*a.shape[:-1], n, n), a.dtype)
    one = fnp.ones_like(zero)
    out = zero
    for cond, value in (
        ((i == 0) & (j == 0), fnp.broadcast_to(-a[..., 1, None, None], zero.shape)),
        ((i == 1) & (j == 0), one),
        ((j == i + 1) & even, coef(np.broadcast_to(i + 2, (n, n)))),
        ((j == i + 2) & even, one),
        ((j == i - 1) & even & (i >= 2), coef(np.broadcast_to(i + 1, (n, n)))),
        ((j == i - 2) & odd & (i >= 3), one),
    ):
        out = fnp.where(cond, value, out)
    return out


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix ``A`` with ``A @ v == numpy.convolve(a, v, mode)`` for ``len(v) == n``.

    >>> convolution_matrix(np.array([1.0, 2.0]), 2).tolist()
    [[1.0, 0.0], [2.0, 1.0], [0.0, 2.0]]
    """
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer, got {n}")
    a = fnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"convolution_matrix: len(a) must be at least 1, got shape {a.shape}")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolution_matrix: mode must be one of 'full', 'valid' or 'same', got {mode!r}")
    pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = fnp.pad(a, pad), fnp.pad(fnp.flip(a, -1), pad)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb : length - te], raz[..., length - n - tb : length - tb])


def hilbert(n: int):
    """The Hilbert matrix ``1 / (i + j + 1)``.

    >>> hilbert(2).tolist()
    [[1.0, 0.5], [0.5, 0.3333333333333333]]
    """
    a = np.arange(operator.index(n), dtype=float)
    return fnp.asarray(1.0 / (a[:, None] + a[None, :] + 1))


def invhilbert(n: int):
    """The inverse of the Hilbert matrix, exact (integers, computed with Python integers).

    >>> invhilbert(2).tolist()
    [[4.0, -6.0], [-6.0, 12.0]]
    """
    n = operator.index(n)
    out = np.empty((n, n), float)
    for i in range(n):
        for j in range(n):
            s = i + j
            binomials = math.comb(n + i, n - j - 1) * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2
            out[i, j] = (-1) ** s * (s + 1) * binomials
    return fnp.asarray(out)


def _pascal_lower(n):
    return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], float).reshape(n, n)


def _kind(kind, name):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"{name}: Expected kind to be one of 'symmetric', 'lower' or 'upper', got {kind!r}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The Pascal matrix of binomial coefficients: ``'symmetric'`` (default), ``'lower'`` or
    ``'upper'``.

    >>> pascal(3).tolist()
    [[1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [1.0, 3.0, 6.0]]
    """
    kind = _kind(kind, "pascal")
    low = _pascal_lower(operator.index(n))
    return fnp.asarray(low if kind == "lower" else low.T if kind == "upper" else low @ low.T)


def invpascal(n: int, kind: str | None = None):
    """The inverse of ``pascal(n, kind)``, exact.

    >>> invpascal(3).tolist()
    [[3.0, -3.0, 1.0], [-3.0, 5.0, -2.0], [1.0, -2.0, 1.0]]
    """
    kind = _kind(kind, "invpascal")
    n = operator.index(n)
    signs = (-1.0) ** (np.arange(n)[:, None] - np.arange(n)[None, :])
    inv_low = signs * _pascal_lower(n)
    return fnp.asarray(inv_low if kind == "lower" else inv_low.T if kind == "upper" else inv_low.T @ inv_low)


def helmert(n: int, full: bool = False):
    """The Helmert matrix (orthonormal contrasts; the first row ``1/sqrt(n)`` when ``full``).

    >>> np.round(np.asarray(helmert(2)), 6).tolist()
    [[0.707107, -0.707107]]
    """
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"helmert: n must be a positive integer, got {n}")
    i = np.arange(n - 1)[:, None]
    j = np.arange(n)[None, :]
    k = (i + 1).astype(float)
    denom = np.sqrt(k * (k + 1))
    h = np.where(j <= i, 1.0 / denom, np.where(j == i + 1, -k / denom, 0.0))
    if full:
        h = np.concatenate([np.full((1, n), 1.0 / np.sqrt(n)), h], axis=0)
    return fnp.asarray(h)


def hadamard(n: int, dtype=int):
    """The Sylvester-construction Hadamard matrix of order ``n`` (a power of 2).

    >>> hadamard(2).tolist()
    [[1, 1], [1, -1]]
    """
    n = operator.index(n)
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        h = np.block([[h, h], [h, -h]])
    return fnp.asarray(h)


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The discrete Fourier transform matrix ``exp(-2 pi i jk / n)`` (``scale``: None, ``'sqrtn'``
    or ``'n'``), complex.

    >>> np.round(np.asarray(dft(2)), 12).tolist()
    [[(1+0j), (1+0j)], [(1+0j), (-1-0j)]]
    """
    n = operator.index(n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    dtype = _dt.default_complex if dtype is None else _dt.canonicalize(dtype)
    if dtype.kind != "c":
        raise ValueError(f"dft: dtype must be a complex type, got {dtype}")
    a = np.arange(n)
    m = np.exp(-2j * np.pi * np.outer(a, a) / max(n, 1))
    if scale == "sqrtn":
        m = m / np.sqrt(n)
    elif scale == "n":
        m = m / n
    return fnp.asarray(m.astype(dtype))


@jitted_eagerly
def block_diag(*arrs):
    """The block-diagonal matrix of the given (at most 2-D) arrays.

    >>> block_diag(np.array([[1]]), np.array([[2, 3]])).tolist()
    [[1, 0, 0], [0, 2, 3]]
    """
    for a in arrs:  # (JAX's asarray of each)
        if isinstance(a, list | tuple):
            raise TypeError(f"asarray: expected ArrayLike, got {a} of type {type(a)}.")
    if not arrs:
        arrs = (np.zeros((1, 0)),)
    arrs = [fnp.asarray(a) for a in arrs]
    for i, a in enumerate(arrs):
        if a.ndim > 2:
            raise ValueError(
                f"block_diag: the arguments must have at most 2 dimensions, argument {i} has shape {a.shape}"
            )
    dtype = fnp.result_type(*arrs)
    blocks = [fnp.atleast_2d(a).astype(dtype) for a in arrs]
    total = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        rows.append(fnp.pad(b, [(0, 0), (col, total - col - b.shape[1])]))
        col += b.shape[1]
    return fnp.concatenate(rows, axis=0)
