"""funcgrad.scipy.fft: discrete cosine transforms (``dct``, ``idct``, ``dctn``, ``idctn``), as
compositions of ``funcgrad.numpy.fft`` (differentiable, batchable, compilable).

Layer: surface. Imports funcgrad.numpy (and its ``_core`` axis helper).

Types 2 and 3 (SciPy's default and its inverse) with ``norm`` ``"backward"`` (the default),
``"ortho"`` or ``"forward"``. A DCT-II of length N is one complex FFT of the even-odd interleaved
input (Makhoul's algorithm, as ``jax.scipy.fft`` computes it): ``2 Re(W(k) FFT(v)(k))`` with
``W(k) = exp(-i pi k / 2N)``; the DCT-III is its transpose, computed the same way backwards. The
N-D transforms are 1-D transforms axis by axis (the DCT is separable). Complex input transforms
its real and imaginary parts.

>>> (dct(np.array([1.0, 2.0, 3.0])).round(12) + 0.0).tolist()  # + 0.0 folds round-off's -0.0
[12.0, -3.464101615138, 0.0]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy._core import check_arraylike, normalize_axis
from funcgrad.scipy._promotion import internal_promotion

__all__ = ["dct", "dctn", "idct", "idctn"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _check(name: str, type: int, norm) -> None:
    if type not in (2, 3):
        raise ValueError(
            f"funcgrad.scipy.fft.{name}: DCT types 2 and 3 are supported (SciPy's default and its "
            f"inverse), got type={type!r}"
        )
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(
            f"funcgrad.scipy.fft.{name}: invalid norm {norm!r}; use 'backward' (the default), 'ortho' "
            "or 'forward'"
        )


def _real_input(x):
    x = fnp.asarray(x)
    if not fnp.issubdtype(x.dtype, fnp.inexact):
        x = x.astype(_dt.inexact_of(x.dtype))  # (JAX's table under its rules: bool -> float32)
    return x


def _resize(x, n, axis: int):
    """``x`` cropped or zero-padded to ``n`` along ``axis`` (SciPy's ``n``)."""
    if n is None:
        return x
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    have = x.shape[axis]
    if have >= n:
        return fnp.take(x, np.arange(n), axis=axis)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - have)
    return fnp.pad(x, widths)


def _along(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A constant vector laid along ``axis`` of an ``ndim``-D array (for broadcasting)."""
    shape = [1] * ndim
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def _ortho_scale(n: int) -> np.ndarray:
    # The DCT-II's orthonormal scale per frequency: 1/sqrt(4N) at k = 0, 1/sqrt(2N) elsewhere.
    scale = np.full((n,), 1 / math.sqrt(2 * n))
    scale[0] = 1 / math.sqrt(4 * n)
    return scale


def _dct2(x, axis: int):
    """The unnormalised DCT-II along ``axis`` of a real array."""
    n = x.shape[axis]
    interleave = np.concatenate([np.arange(0, n, 2), np.arange(n - 1 - (n % 2 == 1), 0, -2)])
    v = fnp.take(x, interleave, axis=axis)
    spectrum = fnp.fft.fft(v, axis=axis)
    twiddle = np.exp(-0.5j * np.pi * np.arange(n) / n).astype(spectrum.dtype)
    return 2 * fnp.real(spectrum * _along(twiddle, axis, x.ndim))


def _dct3(x, axis: int):
    """The unnormalised DCT-III along ``axis`` of a real array: ``x0 + 2 sum_n x_n cos(...)``
    (SciPy's ``dct(type=3)``; ``2N`` times the inverse of ``_dct2``)."""
    n = x.shape[axis]
    complex_dtype = np.result_type(x.dtype, np.complex64)
    # Undo the twiddle, then an inverse FFT gives the interleaved sequence back.
    weights = np.exp(0.5j * np.pi * np.arange(n) / n)
    weights[0] *= 0.5
    v = fnp.fft.ifft(x.astype(complex_dtype) * _along(weights.astype(complex_dtype), axis, x.ndim), axis=axis)
    v = fnp.real(v) * (2 * n)
    deinterleave = np.empty(n, dtype=np.int64)
    half = (n + 1) // 2
    deinterleave[0::2] = np.arange(half)
    deinterleave[1::2] = np.arange(n - 1, half - 1, -1)
    return fnp.take(v, deinterleave, axis=axis)


def _dct_axis(x, type: int, inverse: bool, axis: int, norm):
    """One axis of ``dct`` (``inverse=False``) or ``idct``: the inverse of a type-2 transform is a
    DCT-III and the other way round, with the scale that makes it an inverse."""
    n = x.shape[axis]
    kind = 5 - type if inverse else type
    if norm == "ortho":
        # The orthonormal DCT-II scales frequency k by f_k; the orthonormal DCT-III, its transpose,
        # scales its input by f_k, doubled at k = 0 (where DCT-III does not double the term).
        f = _ortho_scale(n)
        if kind == 2:
            return _dct2(x, axis) * _along(f.astype(x.dtype), axis, x.ndim)
        f[0] *= 2
        return _dct3(x * _along(f.astype(x.dtype), axis, x.ndim), axis)
    out = _dct2(x, axis) if kind == 2 else _dct3(x, axis)
    # "backward" puts the 1/(2N) on the inverse, "forward" on the forward transform.
    divided = (norm == "forward") != inverse
    return out / (2 * n) if divided else out


def _transform(name, x, type, axes_and_sizes, norm, inverse):
    _check(name, type, norm)
    x = fnp.asarray(x)
    if fnp.iscomplexobj(x):
        re = _transform(name, fnp.real(x), type, axes_and_sizes, norm, inverse)
        im = _transform(name, fnp.imag(x), type, axes_and_sizes, norm, inverse)
        return re + 1j * im
    x = _real_input(x)
    for axis, n in axes_and_sizes(x):
        x = _dct_axis(_resize(x, n, axis), type, inverse, axis, norm)
    return x


def _one(x, n, axis):
    def axes_and_sizes(x):
        return [(normalize_axis(axis, x.ndim), n)]

    return axes_and_sizes


@internal_promotion
def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The discrete cosine transform along ``axis`` (SciPy's ``dct``, types 2 and 3).

    >>> (dct(np.array([1.0, 2.0, 3.0]), norm="ortho").round(6) + 0.0).tolist()  # + 0.0 folds -0.0
    [3.464102, -1.4142139999999999, 0.0]
    """
    check_arraylike("dct", x)
    return _transform("dct", x, type, _one(x, n, axis), norm, inverse=False)


@internal_promotion
def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of ``dct`` of the same ``type`` and ``norm``.

    >>> idct(dct(np.array([1.0, 2.0, 3.0]))).round(12).tolist()
    [1.0, 2.0, 3.0]
    """
    check_arraylike("idct", x)
    return _transform("idct", x, type, _one(x, n, axis), norm, inverse=True)


def _many(s, axes):
    def axes_and_sizes(x):
        sizes = None if s is None else [operator.index(v) for v in (s if isinstance(s, Sequence) else [s])]
        if axes is None:
            if sizes is not None and len(sizes) > x.ndim:  # (JAX's words; the range would repeat)
                raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(sizes)}")
            chosen = range(x.ndim) if sizes is None else range(x.ndim - len(sizes), x.ndim)
        else:
            chosen = [axes] if isinstance(axes, int) else axes
        chosen = [normalize_axis(a, x.ndim) for a in chosen]
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"repeated axes {tuple(chosen)}")
        if sizes is not None and len(sizes) != len(chosen):
            raise ValueError(f"s {tuple(sizes)} and axes {tuple(chosen)} have different lengths")
        return list(zip(chosen, sizes or [None] * len(chosen)))

    return axes_and_sizes


@internal_promotion
def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm=None):
    """The N-D discrete cosine transform over ``axes`` (default: all, or the last ``len(s)``).

    >>> dctn(np.ones((2, 2))).tolist()
    [[16.0, 0.0], [0.0, 0.0]]
    """
    check_arraylike("dctn", x)
    return _transform("dctn", x, type, _many(s, axes), norm, inverse=False)


@internal_promotion
def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm=None):
    """The inverse of ``dctn``.

    >>> (idctn(dctn(np.arange(4.0).reshape(2, 2))).round(12) + 0.0).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    check_arraylike("idctn", x)
    return _transform("idctn", x, type, _many(s, axes), norm, inverse=True)
