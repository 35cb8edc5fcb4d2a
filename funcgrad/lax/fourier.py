"""``funcgrad.lax.fft`` and ``FftType``: the Fourier-transform primitive with ``jax.lax``'s names.

Layer: surface. Imports the kernel's dtypes, ``funcgrad.numpy._core`` (conversion helpers) and the
primitive catalog (fft, elementwise families).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy._core import asarray, aval
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import fft as fft_family
from funcgrad.primitives.fft import FftType

__all__ = ["FftType", "fft"]


def fft(x, fft_type, fft_lengths: Sequence[int]):
    """The ``fft_type`` transform (``FftType.FFT``, ``IFFT``, ``RFFT``, ``IRFFT`` or its name) of
    the trailing ``len(fft_lengths)`` axes of ``x`` (``lax.fft``): for ``IRFFT`` the lengths are
    the output's; the inverses include ``1/n``. As in JAX, a real operand of ``FFT``/``IFFT``/
    ``IRFFT`` is converted to complex, a complex one of ``RFFT`` is refused, and empty
    ``fft_lengths`` return ``x``.

    >>> import numpy as np
    >>> fft(np.array([1.0, 2.0, 3.0, 4.0]), FftType.RFFT, (4,)).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    kind = fft_family.fft_type_of(fft_type)
    x = asarray(x)
    dtype = aval(x).dtype
    if kind == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError(
                f"only real valued inputs supported for rfft (lax.fft: got {aval(x).str_short()})"
            )
        if not _dt.is_inexact(dtype):
            x = ew.convert_element_type(x, _dt.default_float)
    elif dtype.kind != "c":
        x = ew.convert_element_type(
            x, _dt.complex_dtype(dtype if _dt.is_inexact(dtype) else _dt.default_float)
        )
    fft_lengths = tuple(int(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    _check_shapes(kind, aval(x), fft_lengths)
    try:
        fft_family.fft_p.abstract_eval(aval(x), fft_type=kind, fft_lengths=fft_lengths)
    except TypeError as e:
        raise TypeError(f"lax.{e}") from None
    return fft_family.fft_p.bind(x, fft_type=kind, fft_lengths=fft_lengths)


def _check_shapes(kind, x, lengths: tuple[int, ...]) -> None:
    """JAX's checks of ``lax.fft``'s operand against ``fft_lengths``, in its words (ValueError)."""
    shape = tuple(x.shape)
    if len(lengths) > len(shape):
        raise ValueError(
            f"FFT input shape {shape} must have at least as many input dimensions as fft_lengths {lengths}."
        )
    minor = shape[len(shape) - len(lengths) :]
    if kind == FftType.RFFT:
        if x.dtype not in (np.float32, np.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if minor != lengths:
            raise ValueError(
                f"RFFT input shape {shape} minor dimensions must be equal to fft_lengths {lengths}"
            )
    elif kind == FftType.IRFFT:
        if minor[:-1] != lengths[:-1]:
            raise ValueError(
                f"IRFFT input shape {shape} minor dimensions must be equal to all except the last "
                f"fft_length, got fft_lengths={lengths}"
            )
    elif minor != lengths:
        raise ValueError(f"FFT input shape {shape} minor dimensions must be equal to fft_lengths {lengths}")
