"""Resampling an image by separable kernels: ``resize``, ``scale_and_translate``,
``ResizeMethod`` (``jax.image``'s semantics and numbers).

Layer: surface. Imports ``funcgrad.numpy`` and ``funcgrad.numpy._core``.

Each spatial dimension ``d`` of size ``m`` resampled to ``n`` gets an ``(m, n)`` weight matrix:
output pixel ``j``'s centre maps back to the input coordinate
``s_j = (j + 0.5 - translation) / scale - 0.5`` and input pixel ``i`` weighs
``kernel(|s_j - i| / kernel_scale)``, where ``kernel_scale = max(1 / scale, 1)`` with
``antialias`` (the kernel widens when downsampling, a low-pass filter) and 1 without. Each column
is normalised to sum to one (pixels near the border have fewer neighbours), and output pixels whose
centre falls outside the input get zero weight. The image is contracted with every matrix in one
``einsum``, so values, derivatives (with respect to the image and to ``scale``/``translation``),
``vmap`` and ``jit`` all come from ``funcgrad.numpy``.

Kernels: triangle (``LINEAR``), Keys cubic with ``a = -0.5`` (``CUBIC``), Lanczos with radius 3
and 5, the OpenCV/PyTorch cubic with ``a = -0.75`` (``CUBIC_PYTORCH``, without antialiasing:
weights outside the image move onto the edge pixels, as PyTorch pads by replication), and
``AREA`` (each weight is the overlap of the output pixel's footprint with the input pixel).
``NEAREST`` picks ``floor((j + 0.5) * m / n)``, computed in float32 as JAX does.
"""

from __future__ import annotations

import enum
import operator

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import asarray, normalize_axis, promote_args_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The interpolation kernels of ``resize`` and ``scale_and_translate`` (``jax.image.ResizeMethod``).

    ``from_string`` accepts the names: ``"nearest"``; ``"linear"``, ``"bilinear"``,
    ``"trilinear"``, ``"triangle"``; ``"lanczos3"``; ``"lanczos5"``; ``"cubic"``, ``"bicubic"``,
    ``"tricubic"``; ``"cubic-pytorch"``, ``"bicubic-pytorch"``; ``"area"``.

    >>> ResizeMethod.from_string("bilinear")
    <ResizeMethod.LINEAR: 1>
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        try:
            return _NAMES[s]
        except (KeyError, TypeError):
            raise ValueError(
                f'Unknown resize method "{s}": use one of {sorted(_NAMES)} or a ResizeMethod'
            ) from None


_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    **dict.fromkeys(("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
    "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5,
    **dict.fromkeys(("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
    **dict.fromkeys(("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
    "area": ResizeMethod.AREA,
}


def _method(method) -> ResizeMethod:
    if isinstance(method, ResizeMethod):
        return method
    return ResizeMethod.from_string(method)


def _triangle(x):
    return fnp.maximum(0, 1 - fnp.abs(x))


def _lanczos(radius):
    def kernel(x):
        y = radius * fnp.sin(np.pi * x) * fnp.sin(np.pi * x / radius)
        # y / (pi x)^2, and its limit 1 near 0 (guarded so the unused branch has no 0/0)
        out = fnp.where(x > 1e-3, y / fnp.where(x != 0, np.pi**2 * x**2, 1), 1)
        return fnp.where(x > radius, 0.0, out)

    return kernel


def _keys_cubic(a):
    def kernel(x):
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return fnp.where(x >= 2.0, 0.0, fnp.where(x >= 1.0, far, near))

    return kernel


_AREA = object()
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _keys_cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}
_TINY = 1000.0 * float(np.finfo(np.float32).eps)  # a column summing to less has no weight


def _weights(m: int, n: int, scale, translation, kernel, antialias: bool, edge_padding: bool, radius: int):
    """The ``(m, n)`` weight matrix resampling one dimension (see the module docstring)."""
    dtype = np.result_type(scale.dtype, translation.dtype)
    inv = 1.0 / scale
    sample = (fnp.arange(n, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
    if kernel is _AREA:
        left = fnp.arange(n, dtype=dtype) * inv - translation * inv
        right = left + inv
        pixels = np.arange(m, dtype=dtype)
        weights = fnp.maximum(
            0.0,
            fnp.minimum(right[None, :], (pixels + 1)[:, None]) - fnp.maximum(left[None, :], pixels[:, None]),
        )
        k = 0
    else:
        kernel_scale = fnp.maximum(inv, 1.0) if antialias else 1.0
        k = radius if edge_padding else 0  # edge padding comes only without antialiasing
        positions = np.arange(-k, m + k, dtype=dtype)
        weights = kernel(fnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        # Weights of the positions outside the image move onto the nearest edge pixel.
        clamped = np.clip(np.arange(-k, m + k), 0, m - 1)
        weights = np.eye(m, dtype=dtype)[:, clamped] @ weights
    total = weights.sum(axis=0, keepdims=True)
    weights = fnp.where(fnp.abs(total) > _TINY, weights / fnp.where(total != 0, total, 1), 0)
    if not edge_padding:
        inside = (sample >= -0.5) & (sample <= m - 0.5)
        weights = fnp.where(inside[None, :], weights, 0)
    return weights


def _scale_and_translate(x, shape, spatial_dims, scale, translation, method, antialias, precision):
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method is ResizeMethod.CUBIC_PYTORCH
    if not spatial_dims:
        return x
    operands = []
    out_indices = list(range(x.ndim))
    for i, d in enumerate(spatial_dims):
        w = _weights(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias, edge_padding, radius)
        operands += [w.astype(x.dtype), [d, x.ndim + i]]
        out_indices[d] = x.ndim + i
    return fnp.einsum(x, list(range(x.ndim)), *operands, out_indices, precision=precision)


def _check_shape(name, image, shape) -> tuple[int, ...]:
    try:
        # (operator.index: a fractional size such as 10.5 is refused, as JAX's canonical shapes do)
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(
            f"image.{name}: Shapes must be 1D sequences of concrete values of integer type, got {shape!r}"
        ) from None
    if len(shape) != image.ndim:
        raise ValueError(
            f"image.{name}: shape must have length equal to the number of dimensions of the image; "
            f"{shape} vs {image.shape}"
        )
    if any(s < 0 for s in shape):
        raise ValueError(f"image.{name}: shape must be non-negative, got {shape}")
    if any(m == 0 and n != 0 for m, n in zip(image.shape, shape)):
        raise ValueError(f"image.{name}: cannot resample an empty dimension of {image.shape} to {shape}")
    return shape


def scale_and_translate(
    image, shape, spatial_dims, scale, translation, method, antialias=True, precision=None
):
    """Resample ``image`` to ``shape``: each of ``spatial_dims`` is scaled by ``scale[i]`` and
    shifted by ``translation[i]`` (output coordinate ``= input * scale + translation``, in pixel
    units with pixel centres at half-integers), interpolated with ``method`` (a ``ResizeMethod``
    or its name, not ``"nearest"``); ``antialias`` widens the kernel when downsampling.
    Differentiable with respect to ``image``, ``scale`` and ``translation``.

    >>> import numpy as np
    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> scale_and_translate(x, (4,), (0,), np.array([1.0]), np.array([1.0]), "linear").tolist()
    [0.0, 0.0, 1.0, 2.0]
    """
    image = asarray(image)
    shape = _check_shape("scale_and_translate", image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError(
            "image.scale_and_translate: nearest neighbor resampling is not supported (as in JAX); use "
            "image.resize(method='nearest') or another method"
        )
    spatial_dims = tuple(normalize_axis(int(d), image.ndim) for d in spatial_dims)
    (image,) = promote_args_inexact(image)
    scale, translation = promote_args_inexact(asarray(scale), asarray(translation))
    if scale.shape != (len(spatial_dims),) or translation.shape != (len(spatial_dims),):
        raise ValueError(
            f"image.scale_and_translate: scale and translation need one entry per spatial dimension "
            f"({len(spatial_dims)}), got shapes {scale.shape} and {translation.shape}"
        )
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias, precision)


def _resize_nearest(x, shape):
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m == n:
            continue
        # float32 offsets, as JAX computes them (its float64 path is wrong on some backends)
        offsets = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n)
        x = fnp.take(x, np.floor(offsets).astype(np.int32), axis=d)
    return x


def resize(image, shape, method, antialias=True, precision=None):
    """Resize ``image`` to ``shape`` with ``method`` (a ``ResizeMethod`` or its name:
    ``"nearest"``, ``"linear"``/``"bilinear"``/``"trilinear"``, ``"lanczos3"``, ``"lanczos5"``,
    ``"cubic"``/``"bicubic"``/``"tricubic"``, ``"cubic-pytorch"``, ``"area"``), resampling every
    dimension whose size changes (so batch and channel dimensions keep their size). With
    ``antialias`` (the default) a downsampling kernel is widened into a low-pass filter.
    Half-pixel centres, as TensorFlow's ``resize(half_pixel_centers=True)`` and PyTorch's
    ``align_corners=False``; inexact results except for ``"nearest"``.

    >>> import numpy as np
    >>> resize(np.array([[1.0, 2.0], [3.0, 4.0]]), (2, 4), "nearest").tolist()
    [[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0]]
    >>> resize(np.array([0.0, 2.0, 4.0, 6.0]), (2,), "linear", antialias=False).tolist()
    [1.0, 5.0]
    >>> [round(v, 4) for v in resize(np.array([0.0, 2.0, 4.0, 6.0]), (2,), "linear").tolist()]  # wider kernel
    [1.4286, 4.5714]
    """
    image = asarray(image)
    shape = _check_shape("resize", image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    (image,) = promote_args_inexact(image)
    spatial_dims = tuple(d for d in range(image.ndim) if image.shape[d] != shape[d])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
    scale, translation = asarray(np.array(scale)), asarray(np.zeros(len(scale)))
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias, precision)
