"""Spectral analysis of ``funcgrad.scipy.signal``: ``stft``, ``istft``, ``csd``, ``welch`` and
``detrend``, with ``jax.scipy.signal``'s signatures and SciPy's values.

Layer: surface. Imports ``funcgrad.numpy`` (and its ``fft``) and ``funcgrad.numpy._core``;
SciPy's ``get_window`` builds the (constant) window, as JAX does.

Every function is a composition of ``funcgrad.numpy`` operations, so all are differentiable,
batch under ``vmap`` and compile under ``jit``. Segment lengths, overlaps, FFT sizes and
breakpoints are static (Python ints). The segments of a signal are one gather
(``x[..., starts[:, None] + arange(nperseg)]``) and ``istft``'s overlap-add is one scatter-add
of the inverse FFTs into the output, divided by the summed squared window (a constant).
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import asarray, check_arraylike, normalize_axis, promote_args_inexact
from funcgrad.scipy._arraylike import refuse_as_attribute
from funcgrad.scipy._promotion import internal_promotion

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _get_window(window, nperseg: int, dtype) -> np.ndarray:
    # import-time cost: scipy.signal is heavy and only these functions need a named window
    from scipy.signal import get_window

    return np.asarray(get_window(window, nperseg), dtype)


def _static_int(value, what: str, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a static Python int, got {value!r}") from None


def _triage(name, window, nperseg, length, dtype):
    """SciPy's ``_triage_segments``: the window array and the segment length."""
    if isinstance(window, (str, tuple)):
        nperseg = 256 if nperseg is None else nperseg
        if nperseg > length:
            warnings.warn(
                f"{name}: nperseg = {nperseg} is greater than input length = {length}, using nperseg = "
                f"{length}",
                stacklevel=4,
            )
            nperseg = length
        return _get_window(window, nperseg, dtype), nperseg
    win = np.asarray(window)
    if win.ndim != 1:
        raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
    if length < win.shape[0]:
        raise ValueError(f"{name}: window (length {win.shape[0]}) is longer than the input signal ({length})")
    if nperseg is not None and nperseg != win.shape[0]:
        raise ValueError(
            f"{name}: nperseg ({nperseg}) is different from the length of the window ({win.shape[0]})"
        )
    # (in the data's precision, as JAX's jnp.asarray(window, dtype): a float64 window of float32
    # data is rounded to float32)
    return win.astype(dtype if win.dtype.kind != "c" else np.result_type(win, dtype)), win.shape[0]


def _odd_ext(x, n):
    if n > x.shape[-1] - 1:
        raise ValueError(
            f"boundary='odd': the extension length {n} must not exceed the signal length minus one "
            f"({x.shape[-1] - 1})"
        )
    left = 2 * x[..., :1] - fnp.flip(x[..., 1 : n + 1], -1)
    right = 2 * x[..., -1:] - fnp.flip(x[..., -(n + 1) : -1], -1)
    return fnp.concatenate([left, x, right], -1)


def _extend(x, n, boundary):
    if n < 1:
        return x
    width = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    if boundary == "even":
        return fnp.pad(x, width, mode="reflect")
    if boundary == "odd":
        return _odd_ext(x, n)
    if boundary == "constant":
        return fnp.pad(x, width, mode="edge")
    return fnp.pad(x, width)  # "zeros"


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _segments(x, nperseg, noverlap):
    """``x[..., n]`` as ``(..., nseg, nperseg)`` overlapping segments (one gather)."""
    step = nperseg - noverlap
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    return x[..., starts[:, None] + np.arange(nperseg)]


def _windowed_fft(x, win, detrend_func, nperseg, noverlap, nfft, sides):
    segments = detrend_func(_segments(x, nperseg, noverlap)) * win
    if sides == "twosided":
        return fnp.fft.fft(segments, n=nfft)
    return fnp.fft.rfft(fnp.real(segments), n=nfft)


def _spectral_helper(
    name, x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided, scaling, axis, mode,
    boundary=None, padded=False,
):  # fmt: skip
    """SciPy's ``_spectral_helper`` (``y`` None: the auto-spectrum of ``x``); returns
    ``(freqs, times, result)`` with the frequencies at ``axis`` and the segments last."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"{name}: unknown mode {mode!r}, must be 'psd' or 'stft'")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"{name}: unknown boundary option {boundary!r}, must be one of {list(_BOUNDARIES)}")
    x = asarray(x)
    axis = normalize_axis(_static_int(axis, "axis", name), x.ndim)
    if y is None:
        (x,) = promote_args_inexact(x)
        outer = tuple(np.delete(x.shape, axis))
    else:
        x, y = promote_args_inexact(x, asarray(y))
        if x.ndim != y.ndim:
            raise ValueError(f"{name}: x and y must have the same rank, got shapes {x.shape} and {y.shape}")
        try:
            outer = np.broadcast_shapes(tuple(np.delete(x.shape, axis)), tuple(np.delete(y.shape, axis)))
        except ValueError:
            raise ValueError(f"{name}: x and y cannot be broadcast together ({x.shape}, {y.shape})") from None
    result_dtype = np.result_type(x.dtype, np.complex64)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg", name)
        if nperseg < 1:
            raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _triage(name, window, nperseg, x.shape[axis], freq_dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap", name)
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft", name)
    if x.size == 0 or (y is not None and y.size == 0):
        n = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = (*outer[:axis], n, *outer[axis:])
        return fnp.zeros(shape, freq_dtype), fnp.zeros(shape, freq_dtype), fnp.zeros(shape, result_dtype)
    if nfft < nperseg:
        raise ValueError(f"{name}: nfft ({nfft}) must be greater than or equal to nperseg ({nperseg})")
    if noverlap >= nperseg:
        raise ValueError(f"{name}: noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    x = fnp.moveaxis(x, axis, -1)
    if y is not None:
        y = fnp.moveaxis(y, axis, -1)
        n = max(x.shape[-1], y.shape[-1])
        x = fnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
        y = fnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, n - y.shape[-1])])
    nstep = nperseg - noverlap
    signals = [x] if y is None else [x, y]
    if boundary is not None:
        signals = [_extend(s, nperseg // 2, boundary) for s in signals]
    if padded:
        nadd = (-(signals[0].shape[-1] - nperseg) % nstep) % nperseg
        signals = [fnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, nadd)]) for s in signals]
    if isinstance(detrend_type, str):

        def detrend_func(d):
            return detrend(d, axis=-1, type=detrend_type)
    elif callable(detrend_type):  # as SciPy's welch/csd: it gets (..., segment, sample) arrays
        detrend_func = detrend_type
    elif not detrend_type:

        def detrend_func(d):
            return d
    else:
        raise ValueError(
            f"{name}: unsupported detrend {detrend_type!r}: use False, 'constant', 'linear' or a function"
        )
    fs = asarray(fs)
    if scaling == "density":
        scale = 1.0 / (fs * float((win * win).sum()))
    elif scaling == "spectrum":
        scale = fnp.asarray(1.0 / float(win.sum()) ** 2)
    else:
        raise ValueError(f"{name}: unknown scaling {scaling!r}, must be 'density' or 'spectrum'")
    if mode == "stft":
        scale = fnp.sqrt(scale)
    sides = "twosided"
    if return_onesided:
        if any(s.dtype.kind == "c" for s in signals):
            warnings.warn(f"{name}: input data is complex, switching to return_onesided=False", stacklevel=3)
        else:
            sides = "onesided"
    d = 1 / fs
    freqs = (fnp.fft.fftfreq if sides == "twosided" else fnp.fft.rfftfreq)(nfft, d).astype(freq_dtype)
    results = [_windowed_fft(s, win, detrend_func, nperseg, noverlap, nfft, sides) for s in signals]
    if y is not None:
        result = fnp.conj(results[0]) * results[1]
    elif mode == "psd":
        result = fnp.conj(results[0]) * results[0]
    else:
        result = results[0]
    result = result * scale.astype(result_dtype)
    if sides == "onesided" and mode == "psd":
        doubled = np.ones(result.shape[-1])
        doubled[1 : None if nfft % 2 else -1] = 2
        result = result * doubled.astype(freq_dtype)
    length = signals[0].shape[-1]
    time = fnp.asarray(np.arange(nperseg / 2, length - nperseg / 2 + 1, nstep), freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = fnp.real(result)
    return freqs, time.astype(freq_dtype), fnp.moveaxis(result, -1, axis)


@internal_promotion(cast=("window",))  # (the window is cast to the data's dtype, as JAX's)
def stft(
    x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None, nfft: int | None = None,
    detrend: bool | str | Callable = False, return_onesided: bool = True, boundary: str | None = "zeros",
    padded: bool = True, axis: int = -1,
):  # fmt: skip
    """The short-time Fourier transform (``scipy.signal.stft``): returns ``(f, t, Zxx)``, the
    frequencies, the segment times and the STFT, frequencies at ``axis`` and segments last.

    ``window`` is a SciPy window name (or tuple) or an array of length ``nperseg``;
    ``noverlap`` defaults to ``nperseg // 2``; ``boundary`` (``'zeros'``, ``'even'``, ``'odd'``,
    ``'constant'`` or None) extends the signal by ``nperseg // 2`` at both ends and ``padded``
    zero-pads it to whole segments.

    >>> import numpy as np
    >>> from funcgrad.scipy.signal import stft
    >>> f, t, Z = stft(np.sin(np.arange(64.0)), nperseg=16)
    >>> f.shape, t.shape, Z.shape, str(Z.dtype)
    ((9,), (9,), (9, 9), 'complex128')
    """
    refuse_as_attribute("ndim", x)
    return _spectral_helper(
        "stft", x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, "spectrum", axis,
        "stft", boundary, padded,
    )  # fmt: skip


@internal_promotion(cast=("window",))  # (the window is cast to the data's dtype, as JAX's)
def csd(
    x, y, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, detrend: bool | str | Callable = "constant", return_onesided: bool = True,
    scaling: str = "density", axis: int = -1, average: str = "mean",
):  # fmt: skip
    """The cross power spectral density of ``x`` and ``y`` by Welch's method
    (``scipy.signal.csd``): returns ``(f, Pxy)``, segments averaged by ``average``
    (``'mean'`` or ``'median'``). ``y=None`` gives ``x``'s own (real) spectral density.

    >>> import numpy as np
    >>> from funcgrad.scipy.signal import csd
    >>> f, P = csd(np.sin(np.arange(64.0)), np.cos(np.arange(64.0)), nperseg=16)
    >>> f.shape, P.shape, str(P.dtype)
    ((9,), (9,), 'complex128')
    """
    refuse_as_attribute("ndim", x, y)
    if average not in ("mean", "median"):
        raise ValueError(f"csd: average must be 'mean' or 'median', got {average!r}")
    freqs, _, pxy = _spectral_helper(
        "csd", x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, "psd"
    )
    if y is not None:
        pxy = pxy.astype(np.result_type(pxy.dtype, np.complex64))
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                nseg = pxy.shape[-1]
                bias = 1 + np.sum(
                    1.0 / (2 * np.arange(1, (nseg - 1) // 2 + 1) + 1)
                    - 1.0 / (2 * np.arange(1, (nseg - 1) // 2 + 1))
                )
                if pxy.dtype.kind == "c":
                    pxy = fnp.median(fnp.real(pxy), axis=-1) + 1j * fnp.median(fnp.imag(pxy), axis=-1)
                else:
                    pxy = fnp.median(pxy, axis=-1)
                pxy = pxy / np.asarray(bias, pxy.real.dtype)
            else:
                pxy = pxy.mean(axis=-1)
        else:
            pxy = fnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


@internal_promotion(cast=("window",))  # (the window is cast to the data's dtype, as JAX's)
def welch(
    x, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, detrend: bool | str | Callable = "constant", return_onesided: bool = True,
    scaling: str = "density", axis: int = -1, average: str = "mean",
):  # fmt: skip
    """The power spectral density of ``x`` by Welch's method (``scipy.signal.welch``): returns
    ``(f, Pxx)``.

    >>> import numpy as np
    >>> from funcgrad.scipy.signal import welch
    >>> f, P = welch(np.sin(2 * np.pi * 0.25 * np.arange(256.0)), nperseg=32)
    >>> float(f[int(np.argmax(P))])
    0.25
    """
    refuse_as_attribute("ndim", x)
    freqs, pxx = csd(
        x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average
    )
    return freqs, fnp.real(pxx)


@internal_promotion
def istft(
    Zxx, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
    freq_axis: int = -2,
):  # fmt: skip
    """The inverse short-time Fourier transform (``scipy.signal.istft``): returns ``(t, x)``,
    the overlap-added inverse FFTs of the segments divided by the summed squared window.

    >>> import numpy as np
    >>> from funcgrad.scipy.signal import istft, stft
    >>> x = np.sin(np.arange(64.0))
    >>> t, y = istft(stft(x, nperseg=16)[2], nperseg=16)
    >>> bool(np.allclose(y[:64], x))
    True
    """
    check_arraylike("istft", Zxx)
    name = "istft"
    Z = asarray(Zxx)
    Z = Z.astype(np.result_type(Z.dtype, np.complex64)) if Z.dtype.kind != "c" else Z
    if Z.ndim < 2:
        raise ValueError(f"{name}: the STFT must be at least 2-D, got shape {Z.shape}")
    freq_axis = normalize_axis(_static_int(freq_axis, "freq_axis", name), Z.ndim)
    time_axis = normalize_axis(_static_int(time_axis, "time_axis", name), Z.ndim)
    if freq_axis == time_axis:
        raise ValueError(f"{name}: time_axis and freq_axis must differ, both are {time_axis}")
    nseg = Z.shape[time_axis]
    n_default = 2 * (Z.shape[freq_axis] - 1) if input_onesided else Z.shape[freq_axis]
    if nperseg is None:
        nperseg = n_default
    else:
        nperseg = _static_int(nperseg, "nperseg", name)
        if nperseg < 1:
            raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = _static_int(nfft, "nfft", name)
        if nfft < nperseg:
            raise ValueError(f"{name}: nfft ({nfft}) must be greater than or equal to nperseg ({nperseg})")
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap", name)
    if noverlap >= nperseg:
        raise ValueError(f"{name}: noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    nstep = nperseg - noverlap
    outer = [a for a in range(Z.ndim) if a not in (freq_axis, time_axis)]
    Z = fnp.transpose(Z, (*outer, freq_axis, time_axis))
    real_dtype = np.finfo(Z.dtype).dtype
    if isinstance(window, (str, tuple)):
        win = _get_window(window, nperseg, real_dtype)
    else:
        win = np.asarray(window)
        if win.ndim != 1:
            raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
        if win.shape[0] != nperseg:
            raise ValueError(f"{name}: window must have length {nperseg}, got {win.shape[0]}")
    inverse = fnp.fft.irfft if input_onesided else fnp.fft.ifft
    # (..., nperseg, nseg), undoing stft's 1 / sum(window) scaling
    frames = inverse(Z, n=nfft, axis=-2)[..., :nperseg, :] * win.sum().astype(real_dtype)
    frames = fnp.swapaxes(frames, -1, -2) * win.astype(np.result_type(win, frames.dtype))
    length = nperseg + (nseg - 1) * nstep
    index = (np.arange(nseg)[:, None] * nstep + np.arange(nperseg)).ravel()
    x = fnp.zeros((*Z.shape[:-2], length), frames.dtype)
    x = x.at[..., index].add(fnp.reshape(frames, (*frames.shape[:-2], nseg * nperseg)))
    norm = np.zeros(length)
    np.add.at(norm, index, np.tile(np.abs(win) ** 2 if win.dtype.kind == "c" else win**2, nseg))
    if boundary:
        x = x[..., nperseg // 2 : -(nperseg // 2)]
        norm = norm[nperseg // 2 : -(nperseg // 2)]
    if not (norm > 1e-10).all():
        warnings.warn(
            f"{name}: NOLA condition failed, STFT may not be invertible"
            + ("" if boundary else " (possibly due to the missing boundary)"),
            stacklevel=2,
        )
    x = x / np.where(norm > 1e-10, norm, 1.0).astype(real_dtype)
    if input_onesided:
        x = fnp.real(x)
    if x.ndim > 1 and time_axis != Z.ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = fnp.moveaxis(x, -1, time_axis)
    time = fnp.arange(x.shape[0], dtype=real_dtype) / asarray(fs)
    return time, x


@internal_promotion
def detrend(data, axis: int = -1, type: str = "linear", bp: int | Sequence[int] = 0, overwrite_data=None):
    """Remove a linear (or piecewise linear, between breakpoints ``bp``) or constant trend along
    ``axis`` (``scipy.signal.detrend``).

    >>> import numpy as np
    >>> from funcgrad.scipy.signal import detrend
    >>> (np.round(detrend(np.array([1.0, 4.0, 8.0, 8.0, 9.0])), 12) + 0.0).tolist()  # + 0.0: no -0.0
    [-1.0, 0.0, 2.0, 0.0, -1.0]
    """
    if overwrite_data is not None:
        raise NotImplementedError(
            "detrend: overwrite_data is not supported (arrays are immutable); leave it None"
        )
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    (x,) = promote_args_inexact(asarray(data))
    axis = normalize_axis(_static_int(axis, "axis", "detrend"), x.ndim)
    if type in ("constant", "c"):
        return x - x.mean(axis, keepdims=True)
    n = x.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError(
            f"detrend: breakpoints must lie in [0, {n}] (the length along axis {axis}), got {bp}"
        )
    x = fnp.moveaxis(x, axis, -1)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        piece = x[..., lo:hi]
        t = np.arange(hi - lo, dtype=np.float64)
        t = t - t.mean()
        denom = float((t * t).sum())
        centered = piece - piece.mean(-1, keepdims=True)
        if denom > 0:
            slope = (centered * t.astype(np.finfo(x.dtype).dtype)).sum(-1, keepdims=True) / denom
            centered = centered - slope * t.astype(np.finfo(x.dtype).dtype)
        pieces.append(centered)
    return fnp.moveaxis(fnp.concatenate(pieces, -1), -1, axis)
