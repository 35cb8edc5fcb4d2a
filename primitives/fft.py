"""The fast Fourier transform: one primitive, ``fft``, for the four transforms XLA provides
(``FFT``, ``IFFT``, ``RFFT``, ``IRFFT``) over the 1 to 3 trailing axes of its operand.

Layer: primitives. Imports the funcgrad kernel, numpy, scipy.fft (the eager impl without the
bridge, imported on first use) and the sibling families ``complex`` and ``elementwise`` (for the
transpose rules). Eagerly the transform is XLA's compiled alone (``hooks.eager_compiled``), as
JAX's eager ``fft`` and ``jit``: the same rounding.

Conventions are XLA's (and ``jax.lax.fft``'s): ``fft_lengths`` are the sizes of the transformed
trailing axes -- for ``IRFFT`` the sizes of the *output* -- the inverse transforms include the
``1/n`` factor, ``RFFT`` keeps the ``n // 2 + 1`` non-negative frequencies of the last axis, and
``IRFFT`` reads only those (the imaginary parts of the zero and Nyquist bins are ignored). Any other
axis order, padding, cropping or normalisation is the surface's job (``funcgrad.numpy.fft``).

Derivatives: the transform is linear, so its JVP is the transform of the tangent; the transposes
follow NOTE: [complex cotangents] in ``primitives/complex.py`` (JAX's rules): the DFT matrix is
symmetric, so ``FFT`` and ``IFFT`` are their own transposes; ``RFFT``'s transpose is ``N *
IRFFT(conj(ct) / mask)`` and ``IRFFT``'s is ``conj(RFFT(ct) * mask / N)``, where ``mask`` is 1 at
the zero (and, for even lengths, the Nyquist) frequency and 2 elsewhere: the bins RFFT leaves out
are the conjugates of those it keeps.
"""

from __future__ import annotations

import enum
import math

import numpy as np
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import aval_of, front_batch

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import deflinear
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray


class FftType(enum.IntEnum):
    """Which transform ``fft`` performs (the values of ``jax.lax.FftType``)."""

    FFT = 0  # complex -> complex, forward
    IFFT = 1  # complex -> complex, inverse (with 1/n)
    RFFT = 2  # real -> complex, forward: the n // 2 + 1 non-negative frequencies of the last axis
    IRFFT = 3  # complex -> real, inverse of RFFT (with 1/n)

    def __str__(self):  # jaxprs print ``fft_type=RFFT``, not the integer
        return self.name


def fft_type_of(value) -> FftType:
    """An ``FftType`` from itself or its name (``"fft"``, ``"IRFFT"``, ...), as ``jax.lax.fft`` takes.

    >>> fft_type_of("irfft")
    <FftType.IRFFT: 3>
    """
    if isinstance(value, FftType):
        return value
    if isinstance(value, str) and value.upper() in FftType.__members__:
        return FftType[value.upper()]
    raise TypeError(f"fft: unknown FFT type {value!r}; use one of FFT, IFFT, RFFT, IRFFT (or lax.FftType)")


def _fft_abstract_eval(x: ShapedArray, *, fft_type, fft_lengths) -> ShapedArray:
    fft_lengths = tuple(fft_lengths)
    k = len(fft_lengths)
    name = FftType(fft_type).name
    if not 1 <= k <= 3:
        raise TypeError(f"fft: XLA transforms 1 to 3 trailing axes, got fft_lengths={fft_lengths}")
    if k > x.ndim:
        raise TypeError(f"fft: operand {x.str_short()} has fewer axes than fft_lengths={fft_lengths}")
    minor = x.shape[x.ndim - k :]
    if fft_type == FftType.RFFT:
        if x.dtype not in (_dt.float32, _dt.float64):
            raise TypeError(f"fft: RFFT takes a float32 or float64 operand, got {x.str_short()}")
        if minor != fft_lengths:
            raise TypeError(f"fft: RFFT operand {x.str_short()} must end in fft_lengths={fft_lengths}")
        shape = x.shape[: x.ndim - 1] + (fft_lengths[-1] // 2 + 1,)
        return ShapedArray(shape, _dt.complex_dtype(x.dtype))
    if x.dtype.kind != "c":
        raise TypeError(f"fft: {name} takes a complex64 or complex128 operand, got {x.str_short()}")
    if fft_type == FftType.IRFFT:
        expected = (*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
        if minor != expected:
            raise TypeError(
                f"fft: IRFFT operand {x.str_short()} must end in {expected} "
                f"for fft_lengths={fft_lengths} (the last length is the output's)"
            )
        return ShapedArray(x.shape[: x.ndim - k] + fft_lengths, _dt.real_dtype(x.dtype))
    if minor != fft_lengths:
        raise TypeError(f"fft: {name} operand {x.str_short()} must end in fft_lengths={fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


def _fft_impl(x, *, fft_type, fft_lengths):
    # Eagerly XLA's transform compiled alone (cached per parameters and operand type), as JAX's
    # eager fft and funcgrad's ``jit``: pocketfft's float32 rounding is another order than
    # XLA's (ducc), 2e-6 apart on a (16, 8, 4, 8, 4) fft2, past JAX's eager-vs-jit tolerance.
    if hooks.eager_compiled is not None and np.size(x) > 0:
        return hooks.eager_compiled(
            fft_p, (x,), {"fft_type": fft_type, "fft_lengths": tuple(fft_lengths)}
        )._numpy()
    return _fft_host(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _fft_host(x, *, fft_type, fft_lengths):
    """The transform with SciPy's pocketfft: the kernel without the bridge, and empty operands."""
    # SciPy's pocketfft keeps single precision and is 2-4x faster than NumPy's on float32 and
    # complex64 (measured on 2**16 points); scipy.fft takes ~0.2 s to import, so on first use.
    import scipy.fft  # noqa: PLC0415 - deferred for import time, not for a cycle

    x = np.asarray(x)
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    if fft_type == FftType.FFT:
        out, dtype = scipy.fft.fftn(x, axes=axes), x.dtype
    elif fft_type == FftType.IFFT:
        out, dtype = scipy.fft.ifftn(x, axes=axes), x.dtype
    elif fft_type == FftType.RFFT:
        out, dtype = scipy.fft.rfftn(x, s=fft_lengths, axes=axes), _dt.complex_dtype(x.dtype)
    else:
        out, dtype = scipy.fft.irfftn(x, s=fft_lengths, axes=axes), _dt.real_dtype(x.dtype)
    return np.asarray(out, dtype)


def _hermitian_weights(n: int, fft_lengths) -> np.ndarray:
    """1 at the zero frequency (and the Nyquist one for even lengths), 2 elsewhere: how many bins of
    the full transform each of RFFT's ``n = fft_lengths[-1] // 2 + 1`` bins stands for."""
    mask = np.full((n,), 2.0)
    mask[0] = 1.0
    if fft_lengths[-1] % 2 == 0:
        mask[-1] = 1.0
    return mask


def _scaled_last_axis(x, weights: np.ndarray):
    """``x * weights`` with ``weights`` (a constant) along the last axis."""
    a = aval_of(x)
    w = hooks.broadcast_in_dim(weights.astype(a.dtype), a.shape, (a.ndim - 1,))
    return ew.mul(x, w)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    n_total = math.prod(fft_lengths)
    if fft_type == FftType.RFFT:
        weights = n_total / _hermitian_weights(aval_of(ct).shape[-1], fft_lengths)
        return [fft(_scaled_last_axis(cx.conj(ct), weights), FftType.IRFFT, fft_lengths)]
    if fft_type == FftType.IRFFT:
        y = fft(ct, FftType.RFFT, fft_lengths)
        weights = _hermitian_weights(aval_of(y).shape[-1], fft_lengths) / n_total
        return [cx.conj(_scaled_last_axis(y, weights))]
    return [fft(ct, fft_type, fft_lengths)]


fft_p = Primitive("fft")
fft_p.def_traits(may_produce_nan=True)
fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_abstract_eval)
fft_p.def_batch(front_batch(fft_p))  # (the transform acts on trailing axes)
deflinear(fft_p, _fft_transpose)


def fft(x, fft_type, fft_lengths):
    """``lax.fft``: the ``fft_type`` transform (an ``FftType`` or its name) of the trailing
    ``len(fft_lengths)`` axes of ``x``; ``FFT``/``IFFT``/``IRFFT`` operands must be complex,
    ``RFFT`` operands real (convert first; ``funcgrad.lax.fft`` does).

    >>> np.asarray(fft(np.array([1.0, 0.0, 0.0, 0.0], np.complex128), "FFT", (4,))).real.tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    return fft_p.bind(x, fft_type=fft_type_of(fft_type), fft_lengths=tuple(int(n) for n in fft_lengths))
