"""funcgrad.numpy polynomials (coefficients highest degree first, as NumPy's ``poly*`` functions)
and window functions (``bartlett``, ``blackman``, ``hamming``, ``hanning``, ``kaiser``).

Layer: surface. Imports the primitive catalog and the other funcgrad.numpy modules (``linalg`` for the
eigenvalue-based ``roots`` and ``poly`` of a matrix).

Arithmetic is convolution and slicing with static lengths, so it differentiates, batches and
compiles; ``polydiv`` is long division unrolled over the (static) degree. ``polyfit`` solves the
column-scaled normal equations (NumPy scales the Vandermonde columns the same way before its
least-squares solve).
"""

from __future__ import annotations

import numpy as np

from funcgrad.numpy import _dtypes, linalg, reductions
from funcgrad.numpy._core import (
    asarray,
    concrete_int,
    concrete_or_error,
    promote_args,
    promote_args_inexact,
)
from funcgrad.numpy.creation import arange, eye, full, ones, zeros
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate, reshape
from funcgrad.numpy.misc import vander
from funcgrad.numpy.numeric import convolve
from funcgrad.numpy.rearrangement import roll
from funcgrad.numpy.sorting import argsort
from funcgrad.numpy.transcendental import cos, exp, sqrt
from funcgrad.numpy.ufuncs import abs, where3
from funcgrad.primitives import special as sp

__all__ = [
    "bartlett",
    "blackman",
    "hamming",
    "hanning",
    "kaiser",
    "poly",
    "polyadd",
    "polyder",
    "polydiv",
    "polyfit",
    "polyint",
    "polymul",
    "polysub",
    "roots",
    "trim_zeros",
]


def _coeffs(name, *ps, also=()):
    """The coefficient vectors ``ps`` (one-dimensional) promoted to one inexact dtype, with the
    values ``also`` (polyint's constants) promoted alongside."""
    out = promote_args_inexact(*[asarray(p) for p in ps], *also)
    for p in out[: len(ps)]:
        if p.ndim != 1:
            raise ValueError(f"{name}: polynomial coefficients must be one-dimensional, got shape {p.shape}")
    return out


def _pad_front(p, n):
    return p if p.shape[0] >= n else concatenate([zeros((n - p.shape[0],), p.dtype), p])


def polyadd(a1, a2):
    """The sum of two polynomials.

    As JAX's: the coefficients run along axis 0 (a 2-D operand is a stack of coefficient rows,
    the shorter one added to the trailing rows of the longer, broadcasting), and integers stay
    integers.

    >>> polyadd(np.array([1.0, 2.0]), np.array([3.0, 0.0, 1.0])).tolist()
    [3.0, 1.0, 3.0]
    >>> polyadd(np.array([[2, 3, 1]]), np.array([[5, 7, 3], [8, 2, 6]])).tolist()
    [[5, 7, 3], [10, 5, 7]]
    """
    a1, a2 = promote_args(asarray(a1), asarray(a2))
    if a2.shape[0] > a1.shape[0]:
        a1, a2 = a2, a1
    return a1.at[a1.shape[0] - a2.shape[0] :].add(a2)


def polysub(a1, a2):
    """The difference of two polynomials.

    >>> polysub(np.array([1.0, 2.0]), np.array([3.0, 0.0, 1.0])).tolist()
    [-3.0, 1.0, 1.0]
    """
    a1, a2 = promote_args(asarray(a1), asarray(a2))
    return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (their convolution).

    >>> polymul(np.array([1.0, 1.0]), np.array([1.0, -1.0])).tolist()
    [1.0, 0.0, -1.0]
    """
    a1, a2 = _coeffs("polymul", a1, a2)
    # JAX's: trimmed only where one has two coefficients or more (so a traced pair of constants
    # multiplies under jit), an all-zero polynomial trimmed to nothing, and an empty one replaced by
    # a constant 0 (no derivative), the product then as long as the other
    if trim_leading_zeros and (a1.shape[0] > 1 or a2.shape[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if a1.shape[0] == 0:
        a1 = zeros((1,), a2.dtype)
    if a2.shape[0] == 0:
        a2 = zeros((1,), a1.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """The quotient and remainder of ``u / v`` (long division). As in JAX the remainder keeps
    ``u``'s length (its leading entries are 0) unless ``trim_leading_zeros=True`` (NumPy's
    result; needs a concrete input).

    >>> [x.tolist() for x in polydiv(np.array([1.0, 0.0, -1.0]), np.array([1.0, 1.0]))]
    [[1.0, -1.0], [0.0, 0.0, 0.0]]
    """
    u, v = _coeffs("polydiv", u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / getitem(v, 0)
    q = zeros((max(m - n + 1, 1),), u.dtype)
    r = u
    for k in range(0, m - n + 1):
        d = scale * getitem(r, k)
        q = q.at[k].set(d)
        r = r.at[k : k + n + 1].add(-d * v)  # (JAX's: r[k] keeps its rounding residue)
    if trim_leading_zeros:  # JAX's: below sqrt(eps) counts as zero; all of them: empty
        value = np.abs(concrete_or_error(r, "trim_leading_zeros=True (the result's length)"))
        small = value < np.sqrt(_dtypes.finfo(r.dtype).eps)
        r = getitem(r, slice(0, 0) if small.all() else slice(int(np.argmin(small)), None))
    return q, r


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial.

    >>> polyder(np.array([1.0, 2.0, 3.0])).tolist()
    [2.0, 2.0]
    """
    (p,) = _coeffs("polyder", p)
    m = concrete_int(m, "polyder: m")
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative must be non-negative, got {m}")
    n = p.shape[0]
    if m >= n:
        return zeros((0,), p.dtype)
    # Coefficient k (power n-1-k) is multiplied by (n-1-k)(n-2-k)...(n-m-k).
    powers = np.arange(n - 1, -1, -1)[: n - m]
    factor = np.ones(n - m)
    for j in range(m):
        factor = factor * (powers - j)
    return getitem(p, slice(0, n - m)) * factor.astype(p.dtype)


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k`` (one per
    integration, or a scalar used for all; zeros by default).

    >>> polyint(np.array([3.0, 2.0, 1.0])).tolist()
    [1.0, 1.0, 1.0, 0.0]
    """
    # (p promoted with k -- the Python int 0 by default -- as JAX's promote_dtypes_inexact(p, k):
    # boolean coefficients give the default float, a float64 k a float64 result)
    p, k = _coeffs("polyint", p, also=(0 if k is None else k,))
    m = concrete_int(m, "polyint: m")
    if m < 0:
        raise ValueError(f"polyint: the order of integration must be non-negative, got {m}")
    if k.ndim == 0:
        k = full((m,), k, p.dtype)
    if k.shape != (m,):
        raise ValueError(f"polyint: k must be a scalar or have {m} entries, got shape {k.shape}")
    for j in range(m):
        n = p.shape[0]
        p = concatenate([p / np.arange(n, 0, -1).astype(p.dtype), reshape(getitem(k, j), (1,))])
    return p


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (or, for a square matrix,
    its characteristic polynomial).

    >>> poly(np.array([1.0, 2.0])).tolist()
    [1.0, -3.0, 2.0]
    """
    a = asarray(seq_of_zeros)
    if a.ndim == 0:  # (a scalar root, as JAX's and NumPy's atleast_1d)
        a = reshape(a, (1,))
    if a.ndim == 2 and a.shape[0] == a.shape[1] and a.shape[0] > 0:
        a = linalg.eigvals(a)
    elif a.ndim != 1:
        raise ValueError(f"poly: input must be 1-D or a non-empty square 2-D array, got shape {a.shape}")
    (a,) = promote_args_inexact(a)
    out = ones((1,), a.dtype)
    for i in range(a.shape[0]):
        out = convolve(out, concatenate([ones((1,), a.dtype), reshape(-getitem(a, i), (1,))]), mode="full")
    return out


def roots(p, *, strip_zeros: bool = True):
    """The roots of a polynomial: the eigenvalues of its companion matrix (complex). With
    ``strip_zeros`` leading zero coefficients are removed first (a concrete ``p``; JAX's rule:
    trailing ones give zero roots in the eigenvalues' order, where NumPy puts them last);
    with ``strip_zeros=False`` (jit-compatible, JAX's rule) the roots a leading zero removes are
    NaN, at the end.

    The eigenvalues are ``funcgrad.numpy.linalg.eigvals`` (LAPACK's ``geev``).

    >>> sorted(np.round(np.real(np.asarray(roots(np.array([1.0, -3.0, 2.0])))), 6).tolist())
    [1.0, 2.0]
    >>> roots(np.array([0.0, 1.0, 2.0]), strip_zeros=False).tolist()
    [(-2+0j), (nan+nanj)]
    """
    (p,) = _coeffs("roots", p)
    if not strip_zeros:
        return _roots_keep_zeros(p)
    value = concrete_or_error(p, "roots with strip_zeros=True (pass strip_zeros=False under jit)")
    nz = np.flatnonzero(value)
    if nz.size == 0:
        return zeros((0,), np.result_type(p.dtype, np.complex64))
    # (leading zeros only, as JAX's: trailing ones stay in the companion matrix, whose zero roots
    # come in LAPACK's order; NumPy strips them and puts the zeros last)
    return _companion_roots(getitem(p, slice(int(nz[0]), None)))


def _companion_roots(p):
    """The eigenvalues of ``p``'s companion matrix (``p[0]`` nonzero)."""
    n = p.shape[0] - 1
    if n < 1:  # no roots; still complex, as eigvals' are (JAX's dtype for a constant polynomial)
        return zeros((0,), np.result_type(p.dtype, np.complex64))
    companion = eye(n, k=-1, dtype=p.dtype)
    companion = companion.at[0, :].set(-getitem(p, slice(1, None)) / getitem(p, 0))
    return linalg.eigvals(companion)


def _roots_keep_zeros(p):
    """``roots(p, strip_zeros=False)`` as JAX computes it, with a traced count of leading zeros:
    the leading zeros are rotated to the end (each gives a zero root), the zero roots are moved
    last (a stable sort), and as many roots as there were leading zeros become NaN."""
    size = p.shape[0]
    if size < 2:
        return zeros((0,), np.result_type(p.dtype, np.complex64))
    is_zero = p == 0
    n_lead = where3(reductions.all(is_zero), size, reductions.argmin(is_zero))
    # (an all-zero polynomial: ones instead, so the eigensolver sees a finite matrix; all NaN)
    p = where3(n_lead == size, ones((size,), p.dtype), p)
    found = _companion_roots(roll(p, -n_lead))
    found = getitem(found, argsort(found == 0, stable=True))
    nan = np.asarray(complex(np.nan, np.nan), found.dtype)
    return where3(arange(size - 1) < size - 1 - n_lead, found, nan)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov: bool = False):
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (``y`` may have a second
    axis of data sets), weighted by ``w``. ``full=True`` also returns the residual sum of
    squares, the rank, the singular values of the scaled Vandermonde matrix and ``rcond``;
    ``cov=True`` the covariance of the coefficients.

    >>> fit = polyfit(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 3.0, 5.0, 7.0]), 1)
    >>> [round(c, 6) for c in fit.tolist()]
    [2.0, 1.0]
    """
    x, y = promote_args_inexact(asarray(x), asarray(y))
    deg = concrete_int(deg, "polyfit: deg")
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    if x.ndim != 1 or x.shape[0] == 0:
        raise TypeError(f"polyfit: x must be a non-empty 1-D array, got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TypeError(
            f"polyfit: y must be 1-D or 2-D with len(y) == len(x), got shapes {x.shape}, {y.shape}"
        )
    order = deg + 1
    rcond = x.shape[0] * float(np.finfo(x.dtype).eps) if rcond is None else rcond
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = asarray(w, x.dtype)
        if w.shape != x.shape:
            raise TypeError(f"polyfit: w must have the shape of x, got {w.shape}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if y.ndim == 1 else w[:, None])
    # JAX's and NumPy's method: columns scaled to unit norm, then least squares (an SVD: the normal
    # equations would square the Vandermonde matrix's condition number). Broadcasts are explicit,
    # so jax_numpy_rank_promotion='raise' has nothing to refuse.
    scale = sqrt(reductions.sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, sv = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale[None, :]).T if c.ndim > 1 else c / scale
    if full:  # (full wins over cov, as in JAX and NumPy)
        return c, resids, rank, sv, asarray(rcond)
    if cov:
        vbase = linalg.inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
        if cov == "unscaled":
            fac = asarray(1.0)
        else:
            if x.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = resids / (x.shape[0] - order)
        fac = reshape(fac, (-1,))
        if y.ndim == 1:
            return c, vbase * fac[None]
        return c, vbase[:, :, None] * fac[None, None, :]
    return c


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros (a concrete input:
    the result's length depends on the values).

    >>> trim_zeros(np.array([0, 0, 1, 2, 0])).tolist()
    [1, 2]
    """
    filt = asarray(filt)
    value = concrete_or_error(filt, "trim_zeros (the result's length)")
    trim = trim.lower()
    if not set(trim) <= {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must contain only 'f' and 'b', got {trim!r}")
    trimmed = np.trim_zeros(value, trim, axis=axis)
    if value.ndim == 1:
        nz = np.flatnonzero(value)
        if nz.size == 0:
            return getitem(filt, slice(0, 0))
        start = int(nz[0]) if "f" in trim else 0
        stop = int(nz[-1]) + 1 if "b" in trim else value.shape[0]
        return getitem(filt, slice(start, stop))
    return asarray(trimmed)


# ----------------------------------------------------------------------------------------------
# Windows


def _window_length(name, M):
    # (JAX's concrete_or_error(int, M): a float truncates; a negative length is its full()'s refusal)
    M = concrete_int(M, f"{name}: M", convert=int)
    if M < 0:
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got ({M},).")
    return M


def _cosine_window(M, coeffs):
    if M < 1:
        return zeros((0,), float)
    if M == 1:
        return ones((1,), float)
    n = arange(1 - M, M, 2, dtype=float)
    out = zeros((M,), float)
    for j, c in enumerate(coeffs):
        out = out + c * cos(np.pi * j * n / (M - 1))
    return out


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points.

    >>> bartlett(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    M = _window_length("bartlett", M)
    if M < 1:
        return zeros((0,), float)
    if M == 1:
        return ones((1,), float)
    n = arange(1 - M, M, 2, dtype=float)
    return where3(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1))


def blackman(M):
    """The Blackman window of ``M`` points.

    >>> [round(v, 6) for v in blackman(3).tolist()]
    [-0.0, 1.0, -0.0]
    """
    return _cosine_window(_window_length("blackman", M), (0.42, 0.5, 0.08))


def hamming(M):
    """The Hamming window of ``M`` points.

    >>> [round(v, 6) for v in hamming(3).tolist()]
    [0.08, 1.0, 0.08]
    """
    return _cosine_window(_window_length("hamming", M), (0.54, 0.46))


def hanning(M):
    """The Hann window of ``M`` points.

    >>> [round(v, 6) for v in hanning(3).tolist()]
    [0.0, 1.0, 0.0]
    """
    return _cosine_window(_window_length("hanning", M), (0.5, 0.5))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points and shape ``beta`` (differentiable in ``beta``).

    >>> [round(v, 6) for v in kaiser(3, 2.0).tolist()]
    [0.438676, 1.0, 0.438676]
    """
    M = _window_length("kaiser", M)
    (beta,) = promote_args_inexact(asarray(beta))
    if M < 1:
        return zeros((0,), beta.dtype)
    if M == 1:
        return ones((1,), beta.dtype)
    alpha = (M - 1) / 2.0
    n = arange(0, M, dtype=beta.dtype)
    arg = beta * sqrt(1 - ((n - alpha) / alpha) ** 2)
    # I0(arg) / I0(beta) with the exponential scaling of bessel_i0e (no overflow for large beta).
    return (
        sp.bessel_i0e_p.bind(arg)
        / sp.bessel_i0e_p.bind(beta * ones((M,), beta.dtype))
        * exp(abs(arg) - abs(beta))
    )
