"""funcgrad.numpy.fft: NumPy's discrete Fourier transforms (the 18 names of ``jax.numpy.fft``),
differentiable, batchable and compilable.

Layer: surface. Imports ``funcgrad.numpy._core``, ``complexes``, ``manipulation`` and
``rearrangement``, and the primitive catalog (fft, structure, elementwise families).

Every transform is the catalog's one ``fft`` primitive (``stablehlo.fft``, eagerly too, as JAX's)
with the bookkeeping around it done here, as ``jax.numpy.fft`` does it: the transformed axes are
moved last (XLA transforms trailing axes), ``n``/``s`` crop or zero-pad the input, and ``norm``
(``"backward"``, the default; ``"ortho"``; ``"forward"``) scales the result. At most 3 axes are
transformed by one primitive; more are done in groups. Real inputs of the complex transforms are
converted (float32 -> complex64, integers -> complex128), and ``rfft`` refuses complex input, as
``jax.numpy.fft`` does (NumPy would drop the imaginary part).

>>> import funcgrad.numpy as fnp
>>> fnp.fft.fft(np.array([1.0, 0.0, 0.0, 0.0])).tolist()
[(1+0j), (1+0j), (1+0j), (1+0j)]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.numpy import _arraylike
from funcgrad.numpy._core import asarray, aval, constant, normalize_axis, place_on, promote_args_inexact
from funcgrad.numpy.complexes import conjugate
from funcgrad.numpy.manipulation import moveaxis
from funcgrad.numpy.rearrangement import roll
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives.fft import FftType
from funcgrad.primitives.fft import fft as _fft_primitive

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


_NORMS = (None, "backward", "ortho", "forward")


def _prepare(name: str, fft_type: FftType, a):
    """``a`` as an Array of the transform's input dtype (complex for FFT/IFFT/IRFFT, real for RFFT)."""
    (x,) = promote_args_inexact(asarray(a))
    dtype = aval(x).dtype
    if fft_type == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError(  # (JAX's words and type, then funcgrad's)
                f"only real valued inputs supported for rfft (funcgrad.numpy.fft.{name} takes real "
                f"input, got {dtype.name}; use fft for complex input, or take the real part first)"
            )
        if dtype not in (_dt.float32, _dt.float64):
            x = ew.convert_element_type(x, _dt.float32 if dtype.itemsize < 4 else _dt.float64)
        return x
    if dtype.kind != "c":
        x = ew.convert_element_type(x, _dt.complex_dtype(dtype))
    return x


def _norm_factor(name: str, norm, lengths) -> float | None:
    if norm not in _NORMS:
        raise ValueError(
            f"funcgrad.numpy.fft.{name}: invalid norm {norm!r}; use 'backward' (the default), 'ortho' "
            "or 'forward'"
        )
    if norm in (None, "backward"):
        return None
    n = math.prod(lengths)
    inverse = name.startswith("i")  # the inverse transforms already include 1/n
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    return float(n) if inverse else 1 / n


def _crop_or_pad(x, axis: int, size: int):
    """``x`` cut to ``size`` or zero-padded to it along ``axis``."""
    shape = aval(x).shape
    have = shape[axis]
    if have > size:
        limits = list(shape)
        limits[axis] = size
        return st.slice_(x, (0,) * len(shape), tuple(limits))
    if have < size:
        config = [(0, 0, 0)] * len(shape)
        config[axis] = (0, size - have, 0)
        return st.pad(x, np.zeros((), aval(x).dtype), tuple(config))
    return x


def _transform_trailing(x, fft_type: FftType, lengths: tuple[int, ...]):
    """The primitive over the ``len(lengths)`` trailing axes, in groups of at most 3 (XLA's limit)."""
    k = len(lengths)
    if k <= 3:
        return _fft_primitive(x, fft_type, lengths)
    # Real-input transforms run on the last 3 axes first (then complex ones on the rest); inverse
    # real-output transforms end with them, as jax.numpy.fft does.
    ndim = aval(x).ndim
    rest = tuple(range(ndim - k, ndim - 3))
    moved = tuple(range(ndim - len(rest), ndim))
    if fft_type in (FftType.FFT, FftType.RFFT):
        x = _fft_primitive(x, fft_type, lengths[-3:])
        x = moveaxis(x, rest, moved)
        x = _transform_trailing(x, FftType.FFT, lengths[:-3])
        return moveaxis(x, moved, rest)
    x = moveaxis(x, rest, moved)
    x = _transform_trailing(x, FftType.IFFT, lengths[:-3])
    x = moveaxis(x, moved, rest)
    return _fft_primitive(x, fft_type, lengths[-3:])


def _fft_core(name: str, fft_type: FftType, a, s, axes, norm):
    x = _prepare(name, fft_type, a)
    ndim = aval(x).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):  # (JAX's words first)
            raise ValueError(f"Shape should be positive. (jax.numpy.fft.{name}: s={s})")
        if axes is not None and len(s) != len(axes):
            raise ValueError(
                f"Shape and axes have different lengths. (jax.numpy.fft.{name}: s={s}, axes={axes})"
            )
    given = axes
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
        if s is not None and len(s) > ndim:  # (JAX's lax.fft words, of the input cropped/padded to s)
            in_s = list(aval(x).shape)
            for ax, n in zip(axes, s):
                in_s[ax] = n
            if fft_type == FftType.IRFFT and in_s:
                in_s[-1] = in_s[-1] // 2 + 1
            raise ValueError(
                f"FFT input shape {tuple(in_s)} must have at least as many input dimensions as "
                f"fft_lengths {s}."
            )
    else:
        if len(set(axes)) != len(axes):  # (JAX's words, the axes as given)
            raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes {given}.")
        axes = tuple(normalize_axis(ax, ndim, "axis") for ax in axes)  # (JAX's words: moveaxis's)
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes {list(axes)}.")
    if not axes:
        # (no transform: JAX returns its input promoted to an inexact dtype, a 16-bit real one kept)
        y = promote_args_inexact(asarray(a))[0] if fft_type == FftType.RFFT else x
        return ew.convert_element_type(y, aval(y).dtype, weak_type=False)  # (strong, as JAX's)
    trailing = tuple(range(ndim - len(axes), ndim))
    x = moveaxis(x, axes, trailing)
    shape = aval(x).shape
    if s is None:
        lengths = [shape[ax] for ax in trailing]
        if fft_type == FftType.IRFFT:
            lengths[-1] = max(0, 2 * (lengths[-1] - 1))
        if 0 in lengths and fft_type != FftType.RFFT:
            # An empty transform is an empty result, as JAX's (XLA's zero-length fft); RFFT's
            # n // 2 + 1 bins of n = 0 points are refused below, as JAX cannot lower them either.
            dtype = _dt.real_dtype(aval(x).dtype) if fft_type == FftType.IRFFT else aval(x).dtype
            out = constant(0, dtype, (*shape[: ndim - len(axes)], *lengths))
            return moveaxis(out, trailing, axes)
    else:
        lengths = list(s)
        for ax, n in zip(trailing, s):
            x = _crop_or_pad(x, ax, n // 2 + 1 if (fft_type == FftType.IRFFT and ax == ndim - 1) else n)
    if any(n <= 0 for n in lengths):
        raise ValueError(f"funcgrad.numpy.fft.{name}: invalid number of data points {tuple(lengths)}")
    out = _transform_trailing(x, fft_type, tuple(lengths))
    factor = _norm_factor(name, norm, lengths)
    if factor is not None:
        out = ew.mul_p.bind(out, constant(factor, aval(out).dtype))
    return moveaxis(out, trailing, axes)


def _one_axis(name, axis):
    if isinstance(axis, list | tuple):  # (JAX's words and type)
        raise ValueError(
            f"jax.numpy.fft.{name} does not support multiple axes. Please use jax.numpy.fft.{name}n. "
            f"Got axis = {axis!r}."
        )
    return (axis,)


def _two_axes(name, axes):
    if len(axes) != 2:  # (JAX's words, the axes as given)
        raise ValueError(f"jax.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}.")
    return tuple(axes)


# ----------------------------------------------------------------------------------------------
# One axis


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D discrete Fourier transform along ``axis`` (``n`` crops or zero-pads the input).

    >>> fft(np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
    """
    return _fft_core("fft", FftType.FFT, a, None if n is None else (n,), _one_axis("fft", axis), norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of ``fft`` (with the ``1/n`` factor by default).

    >>> ifft(np.array([10, -2 + 2j, -2, -2 - 2j])).real.tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _fft_core("ifft", FftType.IFFT, a, None if n is None else (n,), _one_axis("ifft", axis), norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D transform of real input: the ``n // 2 + 1`` non-negative frequencies.

    >>> rfft(np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    return _fft_core("rfft", FftType.RFFT, a, None if n is None else (n,), _one_axis("rfft", axis), norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of ``rfft``: ``n`` real outputs (default ``2 * (m - 1)`` for ``m`` inputs).

    >>> irfft(np.array([10, -2 + 2j, -2])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _fft_core("irfft", FftType.IRFFT, a, None if n is None else (n,), _one_axis("irfft", axis), norm)


def _swap_norm(name, norm):
    if norm not in _NORMS:
        raise ValueError(
            f"funcgrad.numpy.fft.{name}: invalid norm {norm!r}; use 'backward', 'ortho' or 'forward'"
        )
    return {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The transform of a signal with Hermitian symmetry, given by its non-negative half: real
    output of length ``n`` (``irfft(conj(a), n) * n``, NumPy's definition).

    >>> hfft(np.array([1.0, 2.0, 3.0])).tolist()
    [8.0, -2.0, 0.0, -2.0]
    """
    _one_axis("hfft", axis)  # (its own name in the error)
    a = conjugate(_prepare("hfft", FftType.IRFFT, a))
    return irfft(a, n, axis, norm=_swap_norm("hfft", norm))


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of ``hfft``: ``conj(rfft(a, n)) * (1 / n)`` for real ``a``.

    >>> ihfft(np.array([8.0, -2.0, 0.0, -2.0])).tolist()
    [(1+0j), (2+0j), (3+0j)]
    """
    axes = _one_axis("ihfft", axis)  # (its own name in the error)
    # JAX's form: conj of the transform (its norm read as an inverse's), then times 1/n as a
    # complex product, which turns a -0 imaginary part of conj into +0 beside a positive real part
    # (jnp.fft.ihfft's docstring prints 4.+0.j where conj(rfft(a) / n) gives 4.-0.j)
    out = _fft_core("ihfft", FftType.RFFT, a, None if n is None else (n,), axes, norm)
    nn = aval(asarray(a)).shape[axis] if n is None else n
    return ew.mul_p.bind(conjugate(out), constant(1 / nn, aval(out).dtype))


# ----------------------------------------------------------------------------------------------
# Two and N axes


def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The 2-D transform over ``axes`` (``s`` crops or zero-pads them).

    >>> fft2(np.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _fft_core("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The inverse of ``fft2``.

    >>> ifft2(np.array([[4.0, 0.0], [0.0, 0.0]])).real.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _fft_core("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The 2-D transform of real input (the last of ``axes`` keeps its non-negative frequencies).

    >>> rfft2(np.ones((2, 4))).shape
    (2, 3)
    """
    return _fft_core("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """The inverse of ``rfft2``.

    >>> irfft2(rfft2(np.arange(8.0).reshape(2, 4))).round(12).tolist()
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    """
    return _fft_core("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """The N-D transform over ``axes`` (default: all, or the last ``len(s)``).

    >>> fftn(np.ones((2, 2, 2)))[0, 0, 0].item()
    (8+0j)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """The inverse of ``fftn``.

    >>> ifftn(fftn(np.arange(8.0).reshape(2, 2, 2))).real.round(12).ravel().tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    """
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """The N-D transform of real input (the last axis keeps its non-negative frequencies).

    >>> rfftn(np.ones((2, 3, 4))).shape
    (2, 3, 3)
    """
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """The inverse of ``rfftn`` (``s`` gives the output's sizes; default ``2 * (m - 1)`` last).

    >>> irfftn(rfftn(np.arange(8.0).reshape(2, 4))).round(12).tolist()
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    """
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# ----------------------------------------------------------------------------------------------
# Frequencies and shifts


def _check_n(name, n, d) -> int:
    if isinstance(n, list | tuple):  # (JAX's words and type)
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. Got n = {list(n)}.")
    if isinstance(d, list | tuple):
        raise ValueError(
            f"The d argument of jax.numpy.fft.{name} only takes a single value. Got d = {list(d)}."
        )
    if not isinstance(n, int | np.integer):
        raise TypeError(f"funcgrad.numpy.fft.{name}: n must be an int (the window length), got {n!r}")
    if n <= 0:
        raise ValueError(f"funcgrad.numpy.fft.{name}: n must be positive, got {n}")
    return int(n)


def _frequencies(name, k: np.ndarray, n: int, d, dtype):
    dtype = _dt.default_float if dtype is None else np.dtype(dtype)
    if not _dt.is_inexact(dtype):
        raise TypeError(f"funcgrad.numpy.fft.{name}: dtype must be floating, got {dtype.name}")
    # d may be traced (a sample spacing computed from data): the division is a primitive.
    (d,) = promote_args_inexact(d)
    d = ew.convert_element_type(d, dtype)
    return ew.div_p.bind(constant(k, dtype), ew.mul_p.bind(d, constant(n, dtype)))


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d``:
    ``[0, 1, ..., n//2 - 1, -(n//2), ..., -1] / (d n)`` (for even ``n``).

    >>> fftfreq(4, 0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    n = _check_n("fftfreq", n, d)
    k = (np.arange(n) + n // 2) % n - n // 2
    out = _frequencies("fftfreq", k, n, d, dtype)
    return out if device is None else place_on(out, device, "fft.fftfreq")


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d n)``.

    >>> rfftfreq(4, 0.5).tolist()
    [0.0, 0.5, 1.0]
    """
    n = _check_n("rfftfreq", n, d)
    out = _frequencies("rfftfreq", np.arange(n // 2 + 1), n, d, dtype)
    return out if device is None else place_on(out, device, "fft.rfftfreq")


def _shift_axes(x, axes):
    ndim = aval(x).ndim
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int | np.integer):
        return (normalize_axis(axes, ndim, "axes"),)
    return tuple(normalize_axis(ax, ndim, "axes") for ax in axes)


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (roll each of ``axes``, default all, by ``n // 2``).

    >>> fftshift(np.array([0.0, 1.0, 2.0, -2.0, -1.0])).tolist()
    [-2.0, -1.0, 0.0, 1.0, 2.0]
    """
    x = asarray(x)
    axes = _shift_axes(x, axes)
    if not axes:
        return x
    return roll(x, tuple(aval(x).shape[ax] // 2 for ax in axes), axes)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift`` (roll by ``-(n // 2)``).

    >>> ifftshift(np.array([-2.0, -1.0, 0.0, 1.0, 2.0])).tolist()
    [0.0, 1.0, 2.0, -2.0, -1.0]
    """
    x = asarray(x)
    axes = _shift_axes(x, axes)
    if not axes:
        return x
    return roll(x, tuple(-(aval(x).shape[ax] // 2) for ax in axes), axes)


# (last: the public functions refuse lists where JAX's do, NOTE: [array-like arguments])
_arraylike.install(globals(), "fft.")
