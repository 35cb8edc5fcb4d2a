"""funcgrad.scipy.signal: N-dimensional convolution and correlation (``scipy.signal``'s names and
modes), each one ``conv_general_dilated`` (``funcgrad.lax.conv_general_dilated``).

Layer: surface. Imports ``funcgrad.numpy`` (and its ``fft``) and ``funcgrad.lax``.

- ``convolve``/``correlate`` (any rank) and ``convolve2d``/``correlate2d`` compute the direct
  convolution: the flipped (convolve) or conjugated (correlate) kernel slides over the larger
  operand; ``'full'``, ``'same'`` (centred, the size of ``in1``) and ``'valid'`` modes as SciPy
  defines them. Results are inexact (integers promote to the default float), as in JAX.
- ``convolve2d``/``correlate2d`` also take SciPy's ``boundary`` (``'fill'`` with any
  ``fillvalue``, ``'wrap'``, ``'symm'``): ``in1`` is extended by ``funcgrad.numpy.pad`` before a
  ``'valid'`` convolution (JAX supports only ``'fill'`` with 0).
- ``fftconvolve`` (and ``method='fft'`` of ``convolve``/``correlate``) multiplies FFTs
  (``funcgrad.numpy.fft``: real FFTs for real inputs), as SciPy and JAX do: O(n log n) for long
  kernels, FFT-rounded values.
- ``stft``, ``istft``, ``csd``, ``welch`` and ``detrend`` (spectral analysis) live in
  ``funcgrad/scipy/_spectral.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.numpy._core import asarray, check_arraylike, normalize_axis, promote_args_inexact
from funcgrad.scipy import _spectral
from funcgrad.scipy._arraylike import refuse_as_attribute
from funcgrad.scipy._spectral import *  # noqa: F403 - stft, istft, csd, welch, detrend

__all__ = sorted(["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", *_spectral.__all__])


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


_MODES = ("full", "same", "valid")


def _check_mode(name, mode):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of 'full', 'same' or 'valid', got {mode!r}")


def _convolve_nd(name, in1, in2, mode, precision):
    """SciPy's convolution of two arrays of one rank, as one ``conv_general_dilated`` (JAX's
    ``_convolve_nd``: the smaller operand is the kernel, flipped)."""
    _check_mode(name, mode)
    in1, in2 = promote_args_inexact(asarray(in1), asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError(
            f"{name}: in1 and in2 must have the same number of dimensions, got shapes {in1.shape} and "
            f"{in2.shape}"
        )
    if in1.size == 0 or in2.size == 0:
        raise ValueError(
            f"{name}: zero-size arrays are not supported, got shapes {in1.shape} and {in2.shape}"
        )
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError(
            f"{name}: one input must be at least as large as the other in every dimension, got shapes "
            f"{in1.shape} and {in2.shape}"
        )
    original = in2.shape
    if swap:
        in1, in2 = in2, in1
    kernel = in2.shape
    if mode == "valid":
        padding = [(0, 0)] * in1.ndim
    elif mode == "same":
        padding = [(k - 1 - (o - 1) // 2, k - o + (o - 1) // 2) for k, o in zip(kernel, original)]
    else:
        padding = [(k - 1, k - 1) for k in kernel]
    flipped = fnp.flip(in2)
    out = lax.conv_general_dilated(
        in1[None, None], flipped[None, None], (1,) * in1.ndim, padding, precision=precision
    )
    return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """Convolution of two N-dimensional arrays (``scipy.signal.convolve``).

    >>> convolve(np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1])).tolist()
    [1.0, 3.0, 6.0, 7.0, 6.0, 3.0, 1.0]
    >>> convolve(np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1]), mode="same").tolist()
    [3.0, 6.0, 7.0, 6.0, 3.0]
    """
    refuse_as_attribute("ndim", in1, in2)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}")
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    return _convolve_nd("convolve", in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """Cross-correlation of two N-dimensional arrays (``scipy.signal.correlate``):
    ``z[k] = sum_l in1[l] * conj(in2[l - k])`` with SciPy's output offsets.

    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])).tolist()
    [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    refuse_as_attribute("conj", in2)
    refuse_as_attribute("ndim", in1)
    in2 = asarray(in2)
    kernel = fnp.flip(fnp.conj(in2))
    return convolve(in1, kernel, mode, method, precision)


def _extend(name, in1, kernel_shape, boundary, fillvalue):
    """``in1`` extended by ``k - 1`` on both sides of each axis with SciPy's boundary rule."""
    widths = [(k - 1, k - 1) for k in kernel_shape]
    if boundary == "fill":
        return fnp.pad(in1, widths, mode="constant", constant_values=fillvalue)
    if boundary in ("wrap", "circular"):
        return fnp.pad(in1, widths, mode="wrap")
    if boundary in ("symm", "symmetric"):
        return fnp.pad(in1, widths, mode="symmetric")
    raise ValueError(f"{name}: boundary must be 'fill', 'wrap' or 'symm', got {boundary!r}")


def _convolve2d(name, in1, in2, mode, boundary, fillvalue, precision):
    _check_mode(name, mode)
    in1, in2 = promote_args_inexact(asarray(in1), asarray(in2))
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(
            f"{name}() only supports 2-dimensional inputs, got shapes {in1.shape} and {in2.shape}"
        )
    plain = boundary == "fill" and np.all(np.asarray(fillvalue) == 0)
    if mode == "valid" or plain:
        if boundary not in ("fill", "wrap", "circular", "symm", "symmetric"):
            raise ValueError(f"{name}: boundary must be 'fill', 'wrap' or 'symm', got {boundary!r}")
        return _convolve_nd(name, in1, in2, mode, precision)
    fill = asarray(fillvalue)
    if fill.size != 1:
        raise ValueError(f"{name}: fillvalue must be a scalar, got shape {fill.shape}")
    extended = _extend(name, in1, in2.shape, boundary, fnp.reshape(fill, ()).astype(in1.dtype))
    full = _convolve_nd(name, extended, in2, "valid", precision)
    if mode == "full":
        return full
    starts = [(k - 1) // 2 for k in in2.shape]
    return full[starts[0] : starts[0] + in1.shape[0], starts[1] : starts[1] + in1.shape[1]]


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """Convolution of two 2-D arrays with SciPy's boundary rules (``scipy.signal.convolve2d``).

    >>> convolve2d(np.eye(3), np.ones((2, 2)), mode="valid").tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    >>> convolve2d(np.eye(2), np.ones((2, 2)), mode="same", boundary="wrap").tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    refuse_as_attribute("ndim", in1, in2)
    return _convolve2d("convolve2d", in1, in2, mode, boundary, fillvalue, precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """Cross-correlation of two 2-D arrays (``scipy.signal.correlate2d``).

    >>> correlate2d(np.arange(9.0).reshape(3, 3), np.array([[1.0, 0.0], [0.0, -1.0]]), mode="valid").tolist()
    [[-4.0, -4.0], [-4.0, -4.0]]
    """
    refuse_as_attribute("shape", in1, in2)
    in1, in2 = promote_args_inexact(asarray(in1), asarray(in2))
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(
            f"correlate2d() only supports 2-dimensional inputs, got shapes {in1.shape} and {in2.shape}"
        )
    if mode == "same":
        # Centred like SciPy: the flipped input convolved with the conjugate kernel, flipped back.
        out = _convolve2d("correlate2d", fnp.flip(in1), fnp.conj(in2), mode, boundary, fillvalue, precision)
        return fnp.flip(out)
    if mode == "valid" and all(a <= b for a, b in zip(in1.shape, in2.shape)) and in1.shape != in2.shape:
        # SciPy swaps the operands for 'valid' when in1 is the smaller one: the result is in2
        # correlated with in1 (in1 conjugated), reversed -- not conjugated after (it was: complex
        # inputs gave the conjugate of SciPy's and JAX's result).
        out = _convolve2d("correlate2d", in2, fnp.flip(fnp.conj(in1)), mode, boundary, fillvalue, precision)
        return fnp.flip(out)
    return _convolve2d("correlate2d", in1, fnp.flip(fnp.conj(in2)), mode, boundary, fillvalue, precision)


def fftconvolve(in1, in2, mode: str = "full", axes: int | Sequence[int] | None = None):
    """Convolution of two N-dimensional arrays by FFT, with ``scipy.signal.fftconvolve``'s
    semantics: the product of the (real, when both inputs are real) FFTs over ``axes`` (all axes by
    default), zero-padded to the full output length, transformed back and cut to ``mode``. The
    other axes pair elements of ``in1`` and ``in2`` of equal size, or broadcast a size-1 one.

    >>> out = fftconvolve(np.array([1.0, 2.0, 3.0, 2.0, 1.0]), np.array([1.0, 1.0, 1.0]), mode="valid")
    >>> np.round(np.asarray(out), 12).tolist()
    [6.0, 7.0, 6.0]
    """
    check_arraylike("fftconvolve", in1, in2)
    _check_mode("fftconvolve", mode)
    in1, in2 = promote_args_inexact(asarray(in1), asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError(
            "fftconvolve: in1 and in2 should have the same dimensionality, got shapes "
            f"{in1.shape} and {in2.shape}"
        )
    if in1.size == 0 or in2.size == 0:
        return fnp.zeros((0,) * in1.ndim, in1.dtype)
    if axes is None:
        axes = tuple(range(in1.ndim))
    else:
        axes = (axes,) if isinstance(axes, int | np.integer) else tuple(axes)
        axes = tuple(sorted({normalize_axis(a, in1.ndim) for a in axes}))
    for i in range(in1.ndim):
        a, b = in1.shape[i], in2.shape[i]
        if i not in axes and a != b and 1 not in (a, b):
            raise ValueError(
                f"fftconvolve: axis {i} is not convolved, so in1 and in2 must have equal sizes (or 1) there; "
                f"got shapes {in1.shape} and {in2.shape} with axes={axes}"
            )
    if mode == "valid":
        # SciPy: the larger operand (in every convolved axis) comes first.
        if all(in2.shape[i] >= in1.shape[i] for i in axes) and any(in2.shape[i] > in1.shape[i] for i in axes):
            in1, in2 = in2, in1
        elif not all(in1.shape[i] >= in2.shape[i] for i in axes):
            raise ValueError(
                "fftconvolve: for 'valid' mode, one input must be at least as large as the other in "
                f"every convolved axis, got shapes {in1.shape} and {in2.shape} with axes={axes}"
            )
    lengths = [in1.shape[i] + in2.shape[i] - 1 for i in axes]
    if all(1 in (in1.shape[i], in2.shape[i]) for i in axes):
        # No convolved axis longer than 1 on both sides (0-d operands too): the product itself, as
        # jax (no transform, so a real result stays real and exact)
        full = in1 * in2
    elif fnp.iscomplexobj(in1) or fnp.iscomplexobj(in2):
        full = fnp.fft.ifftn(
            fnp.fft.fftn(in1, lengths, axes) * fnp.fft.fftn(in2, lengths, axes), lengths, axes
        )
    else:
        product = fnp.fft.rfftn(in1, lengths, axes) * fnp.fft.rfftn(in2, lengths, axes)
        full = fnp.fft.irfftn(product, lengths, axes)
    if mode == "full":
        return full
    keep = {"same": in1.shape, "valid": [in1.shape[i] - in2.shape[i] + 1 for i in range(in1.ndim)]}[mode]
    index = [slice(None)] * in1.ndim
    for i, n in zip(axes, lengths):
        start = (n - keep[i]) // 2  # SciPy's _centered
        index[i] = slice(start, start + keep[i])
    return full[tuple(index)]
