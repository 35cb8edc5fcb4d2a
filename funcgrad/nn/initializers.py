"""funcgrad.nn.initializers: ``jax.nn.initializers``'s twenty names, signatures and distributions.

Layer: surface. Imports ``funcgrad.numpy``, ``funcgrad.random``, ``funcgrad.api`` (``device_put``)
and the kernel's dtypes.

Every initializer is a function ``init(key, shape, dtype=None, out_sharding=None) -> Array``
(``Initializer``) built by a factory (``normal(stddev)``, ``glorot_uniform()``, ...) except
``zeros`` and ``ones``, which are initializers themselves -- as in JAX. Keys are
``funcgrad.random`` keys, whose bits match JAX's, so ``normal(0.01)(PRNGKey(0), (3, 4),
np.float32)`` equals JAX's array with the same key (up to the last float bit). ``dtype=None``
means the default float (float64, as JAX with x64 enabled). ``out_sharding`` places the result
with ``funcgrad.device_put`` when given.

``orthogonal`` is the Q of LAPACK's QR (``funcgrad.numpy.linalg.qr``) with R's diagonal made
positive, as JAX's ``q * sign(diag(r))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.api import device_put
from funcgrad.kernel import dtypes as _dt

__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


@runtime_checkable
class Initializer(Protocol):
    """What the factories return: ``init(key, shape, dtype=None, out_sharding=None) -> Array``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None) -> Any: ...


def _dtype(dtype):
    dtype = _dt.default_float if dtype is None else np.dtype(dtype)
    if not _dt.is_inexact(dtype):
        raise TypeError(f"initializers produce floating-point weights; got dtype {dtype.name}")
    return dtype


def _any_dtype(dtype):
    # (zeros, ones and constant take any dtype, as JAX's: jnp.zeros(shape, dtype); int zeros are
    # common for masks and counters in flax/equinox state)
    return _dt.default_float if dtype is None else dtype


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    try:
        return tuple(int(operator_index) for operator_index in shape)
    except TypeError:
        raise TypeError(f"initializers take a shape (a tuple of ints), got {shape!r}") from None


# funcgrad.random draws every float dtype as JAX does (bfloat16 and float16 too), so the
# initializers' weights are JAX's for the same key.
_uniform, _normal = random.uniform, random.normal


def _truncated(key, shape, dtype, lo, hi):
    return random.truncated_normal(key, lo, hi, shape, dtype)


def _placed(x, out_sharding):
    return x if out_sharding is None else device_put(x, out_sharding)


def zeros(key, shape, dtype=None, out_sharding=None):
    """Zeros of ``shape`` (the key is ignored).

    >>> zeros(None, (2, 3), np.float32).tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    return _placed(fnp.zeros(_shape(shape), _any_dtype(dtype)), out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
    """Ones of ``shape`` (the key is ignored).

    >>> ones(None, (3, 2), np.float32).tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    return _placed(fnp.ones(_shape(shape), _any_dtype(dtype)), out_sharding)


def constant(value, dtype=None) -> Initializer:
    """An initializer filling arrays with ``value``.

    >>> constant(-7)(None, (2, 3), np.float32).tolist()
    [[-7.0, -7.0, -7.0], [-7.0, -7.0, -7.0]]
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        return _placed(fnp.full(_shape(shape), value, _any_dtype(dtype)), out_sharding)

    return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """An initializer of uniform samples in ``[0, scale)``.

    >>> w = uniform(10.0)(random.PRNGKey(42), (2, 3), np.float32)
    >>> w.shape, bool(((w >= 0) & (w < 10)).all())
    ((2, 3), True)
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        x = _uniform(key, _shape(shape), dtype) * fnp.asarray(scale, dtype)
        return _placed(x, out_sharding)

    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """An initializer of normal samples with mean 0 and standard deviation ``stddev``.

    >>> normal(5.0)(random.PRNGKey(42), (2, 3), np.float32).shape
    (2, 3)
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _placed(_normal(key, _shape(shape), dtype) * fnp.asarray(stddev, dtype), out_sharding)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """An initializer of normal samples truncated to ``[lower, upper]`` before scaling by ``stddev``
    (no variance correction, as in JAX).

    >>> w = truncated_normal(5.0)(random.PRNGKey(42), (2, 3), np.float32)
    >>> bool((abs(w) <= 10.0).all())
    True
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        x = _truncated(key, _shape(shape), dtype, lower, upper) * fnp.asarray(stddev, dtype)
        return _placed(x, out_sharding)

    return init


def _axes_size(shape, axes) -> int:
    if isinstance(axes, int | np.integer):
        return shape[axes]
    return math.prod(shape[a] for a in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """Fan-in and fan-out of a dense or convolution kernel: axes other than in/out/batch are the
    receptive field (kernel spatial axes), which multiplies both."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
            "default in_axis. Must be at least 2D or specify in_axis explicitly."  # (JAX's words)
        )
    in_size, out_size = _axes_size(shape, in_axis), _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


def variance_scaling(
    scale,
    mode,
    distribution,
    in_axis: int | Sequence[int] = -2,
    out_axis: int | Sequence[int] = -1,
    batch_axis: int | Sequence[int] = (),
    dtype=None,
) -> Initializer:
    """An initializer with variance ``scale / n``: ``n`` is the fan-in, fan-out, their mean
    (``fan_avg``) or geometric mean (``fan_geo_avg``); ``distribution`` is ``truncated_normal``
    (truncated at 2 standard deviations, rescaled to keep the variance), ``normal`` or
    ``uniform``. ``in_axis``/``out_axis``/``batch_axis`` say which kernel axes are inputs,
    outputs and ignored; the others are the receptive field.

    >>> w = variance_scaling(2.0, "fan_in", "normal")(random.PRNGKey(0), (3, 3, 16, 32), np.float32)
    >>> w.shape, w.dtype
    ((3, 3, 16, 32), dtype('float32'))
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution!r}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {
            "fan_in": fan_in,
            "fan_out": fan_out,
            "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5,
        }[mode]
        variance = fnp.asarray(scale / denominator, dtype)
        if dtype.kind == "c":
            return _placed(_complex_scaled(key, shape, dtype, distribution, variance), out_sharding)
        if distribution == "truncated_normal":
            stddev = fnp.sqrt(variance) / fnp.asarray(0.87962566103423978, dtype)
            x = _truncated(key, shape, dtype, -2, 2) * stddev
        elif distribution == "normal":
            x = _normal(key, shape, dtype) * fnp.sqrt(variance)
        else:
            x = _uniform(key, shape, dtype, -1) * fnp.sqrt(3 * variance)
        return _placed(x, out_sharding)

    return init


def _complex_scaled(key, shape, dtype, distribution, variance):
    """Complex weights of ``variance``, drawn as JAX draws them: a normal of that variance, or a
    modulus and a uniform phase -- the modulus of a unit normal truncated at 2 (rescaled to keep
    the variance) or uniform over the disk."""
    if distribution == "normal":
        return _normal(key, shape, dtype) * fnp.sqrt(variance)
    real = _dt.real_dtype(dtype)
    key_r, key_theta = random.split(key)
    if distribution == "truncated_normal":
        upper = 2.0
        t = (1 - fnp.exp(fnp.asarray(-(upper**2), dtype))) * _uniform(key_r, shape, real).astype(dtype)
        r = fnp.sqrt(-fnp.log(1 - t))
        scale = fnp.sqrt(variance) / fnp.asarray(0.95311164380491208, dtype)
    else:
        r = fnp.sqrt(2 * _uniform(key_r, shape, real)).astype(dtype)
        scale = fnp.sqrt(variance)
    theta = 2 * np.pi * _uniform(key_theta, shape, real).astype(dtype)
    return r * fnp.exp(1j * theta) * scale


def _specialised(scale, mode, distribution, name, doc):
    def factory(
        in_axis: int | Sequence[int] = -2,
        out_axis: int | Sequence[int] = -1,
        batch_axis: int | Sequence[int] = (),
        dtype=None,
    ) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (
        f"{doc}: ``variance_scaling({scale}, {mode!r}, {distribution!r})``.\n\n"
        f">>> {name}()(random.PRNGKey(0), (4, 5), np.float32).shape\n(4, 5)\n"
    )
    return factory


glorot_uniform = _specialised(
    1.0, "fan_avg", "uniform", "glorot_uniform", "Glorot (Xavier) uniform initializer"
)
glorot_normal = _specialised(
    1.0, "fan_avg", "truncated_normal", "glorot_normal", "Glorot (Xavier) normal initializer"
)
lecun_uniform = _specialised(1.0, "fan_in", "uniform", "lecun_uniform", "LeCun uniform initializer")
lecun_normal = _specialised(1.0, "fan_in", "truncated_normal", "lecun_normal", "LeCun normal initializer")
he_uniform = _specialised(2.0, "fan_in", "uniform", "he_uniform", "He (Kaiming) uniform initializer")
he_normal = _specialised(2.0, "fan_in", "truncated_normal", "he_normal", "He (Kaiming) normal initializer")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def _random_orthogonal(key, n, m, dtype):
    """An ``n x m`` matrix with orthonormal columns (``n >= m``) or rows, Haar distributed: the Q
    factor of a Gaussian matrix (JAX's ``random.orthogonal``, drawn and factored in ``dtype``: a
    float16/bfloat16 one is LAPACK's refusal, as JAX's NotImplementedError)."""
    z = _normal(key, (max(n, m), min(n, m)), dtype)
    q, r = fnp.linalg.qr(z)
    q = fnp.asarray(q * fnp.sign(fnp.diagonal(r))[None, :], dtype)
    return q if n >= m else fnp.swapaxes(q, -1, -2)


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """An initializer of (scaled) orthogonal matrices: the columns (axis ``column_axis``) are
    orthonormal when there are fewer of them than rows, otherwise the rows; other axes are
    flattened into the rows.

    >>> w = orthogonal()(random.PRNGKey(0), (4, 3))
    >>> bool(np.allclose(np.asarray(w).T @ np.asarray(w), np.eye(3)))
    True
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2-D shape, got {shape}")
        if any(d == 0 for d in shape):
            return _placed(fnp.zeros(shape, dtype), out_sharding)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = _random_orthogonal(key, n_rows, n_cols, dtype)
        q = fnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        q = fnp.moveaxis(q, -1, column_axis)
        return _placed(fnp.asarray(scale, dtype) * q, out_sharding)

    return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """An initializer of delta-orthogonal convolution kernels (3-D, 4-D or 5-D, HWIO-like): zero
    except an orthogonal ``in x out`` matrix at the kernel's centre (Xiao et al. 2018).

    >>> w = delta_orthogonal()(random.PRNGKey(0), (3, 3, 2, 2))
    >>> float(abs(np.asarray(w)).sum(axis=(2, 3))[1, 1] > 0), float(abs(np.asarray(w))[0, 0].sum())
    (1.0, 0.0)
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta_orthogonal initializer requires a 3-D, 4-D or 5-D shape, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(
                f"delta_orthogonal: fan_in ({shape[-2]}) must be less than or equal to fan_out ({shape[-1]})"
            )
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        w = fnp.zeros(shape, dtype).at[centre].set(matrix)
        return _placed(w, out_sharding)

    return init
