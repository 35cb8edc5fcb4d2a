"""Pseudo-random numbers with explicit keys: ``funcgrad.random`` (JAX's ``jax.random`` API).

Layer: surface. Imports the kernel, the primitive catalog and funcgrad.numpy.

Keys are ``uint32[2]`` arrays (``PRNGKey(0)``; ``key`` is an alias). Every function is a pure
function of its key, built from threefry2x32 written with ``add``/``xor``/shift primitives, so it
runs eagerly with NumPy, compiles under ``jit`` and batches under ``vmap``. The bit streams follow
JAX's threefry implementation with ``jax_threefry_partitionable`` (JAX's default) and 64-bit types
enabled, so ``funcgrad.random.normal(PRNGKey(0), (3,))`` equals JAX's value with
``jax_enable_x64`` (a test checks this against JAX).

# NOTE: [random keys are data]
# A key is an ordinary uint32 array: split it, never reuse it. Splitting and drawing are
# deterministic functions of the key, so they can be differentiated around (they have zero
# gradients), staged, and vmapped over a batch of keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy  # noqa: F401 - installs Array operators and methods (NOTE: [array methods])
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from primitives import complex as cx
from primitives import elementwise as ew
from primitives import structure as st
from primitives.bitcast import bitcast_convert_type
from primitives.reductions import argmax_p

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: _U64}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _u32(value) -> np.ndarray:
    return np.asarray(value, _U32)


def _aval(x):
    return core.get_aval(x)


# ----------------------------------------------------------------------------------------------
# threefry2x32


def _rotate_left(x, r: int):
    return ew.or_p.bind(ew.shift_left_p.bind(x, _u32(r)), ew.shift_right_logical_p.bind(x, _u32(32 - r)))


def _threefry2x32(k0, k1, x0, x1):
    """The threefry2x32 block cipher (20 rounds) on uint32 arrays ``x0, x1`` with key ``(k0, k1)``."""
    k2 = ew.xor_p.bind(ew.xor_p.bind(k0, k1), _u32(0x1BD11BDA))
    ks = (k0, k1, k2)
    x0 = ew.add_p.bind(x0, k0)
    x1 = ew.add_p.bind(x1, k1)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = ew.add_p.bind(x0, x1)
            x1 = ew.xor_p.bind(_rotate_left(x1, r), x0)
        x0 = ew.add_p.bind(x0, ks[(i + 1) % 3])
        x1 = ew.add_p.bind(ew.add_p.bind(x1, ks[(i + 2) % 3]), _u32(i + 1))
    return x0, x1


def _key_halves(key):
    key = _as_key(key)
    if _aval(key).shape != (2,):
        raise TypeError(
            f"funcgrad.random expected a single key of shape (2,) and dtype uint32, got "
            f"{_aval(key).str_short()}. Split batches of keys with vmap, e.g. "
            "vmap(lambda k: random.normal(k, shape))(keys)."
        )
    k0 = st.reshape(st.slice_(key, (0,), (1,)), ())
    k1 = st.reshape(st.slice_(key, (1,), (2,)), ())
    return k0, k1


def _as_key(key):
    if isinstance(key, core.Tracer | Array):
        if _aval(key).dtype != _U32:
            raise TypeError(f"a PRNG key must have dtype uint32, got {_aval(key).dtype.name}")
        return key
    arr = np.asarray(key)
    if arr.dtype != _U32:
        raise TypeError(
            f"a PRNG key must be a uint32 array made by funcgrad.random.PRNGKey, got {arr.dtype.name}"
        )
    return arr


def _iota_2x32(shape: tuple[int, ...]):
    """The row-major flat index of every element of ``shape``, as (high, low) uint32 words."""
    if not shape:
        return _u32(0), _u32(0)
    size = math.prod(shape)
    if size >= 2**32:
        counts = np.arange(size, dtype=_U64).reshape(shape)
        return Array._from_owned((counts >> 32).astype(_U32)), Array._from_owned(counts.astype(_U32))
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    lo = None
    for d, s in enumerate(strides):
        term = ew.mul_p.bind(st.broadcasted_iota(_U32, shape, d), _u32(s))
        lo = term if lo is None else ew.add_p.bind(lo, term)
    zeros = st.broadcast_in_dim(_u32(0), shape, ())
    return zeros, lo


def _random_bits(key, bit_width: int, shape: tuple[int, ...]):
    k0, k1 = _key_halves(key)
    hi, lo = _iota_2x32(shape)
    if hi.shape == ():
        hi, lo = st.broadcast_in_dim(hi, shape, ()), st.broadcast_in_dim(lo, shape, ())
    b0, b1 = _threefry2x32(k0, k1, hi, lo)
    if bit_width == 64:
        b0 = ew.convert_element_type(b0, _U64)
        b1 = ew.convert_element_type(b1, _U64)
        return ew.or_p.bind(ew.shift_left_p.bind(b0, np.asarray(32, _U64)), b1)
    bits = ew.xor_p.bind(b0, b1)
    return bits if bit_width == 32 else ew.convert_element_type(bits, _UINT[bit_width])


def _shape(shape) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


# ----------------------------------------------------------------------------------------------
# Keys


def PRNGKey(seed) -> Array:
    """A key from an integer seed: ``uint32[2]`` holding the seed's high and low 32-bit words.

    >>> PRNGKey(42).tolist()
    [0, 42]
    """
    if isinstance(seed, core.Tracer):
        s = ew.convert_element_type(seed, np.int64)
        lo = ew.convert_element_type(s, _U32)
        hi = ew.convert_element_type(ew.shift_right_logical_p.bind(s, np.asarray(32, np.int64)), _U32)
        return st.concatenate([st.reshape(hi, (1,)), st.reshape(lo, (1,))], 0)
    seed = int(np.asarray(seed))
    if not -(2**63) <= seed < 2**64:
        raise OverflowError(f"PRNGKey seed {seed} does not fit in 64 bits")
    seed &= 2**64 - 1
    return Array._from_owned(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=_U32))


key = PRNGKey


def key_data(keys):
    """The raw ``uint32`` data of ``keys`` (keys already are raw data here)."""
    return keys


def split(key, num: int | Sequence[int] = 2):
    """``num`` new independent keys from ``key`` (shape ``(num, 2)``).

    >>> split(PRNGKey(0)).shape
    (2, 2)
    """
    shape = _shape(num)
    k0, k1 = _key_halves(key)
    hi, lo = _iota_2x32(shape)
    b0, b1 = _threefry2x32(k0, k1, hi, lo)
    nd = len(shape)
    return st.concatenate([st.expand_dims(b0, (nd,)), st.expand_dims(b1, (nd,))], nd)


def fold_in(key, data):
    """A new key derived from ``key`` and the integer ``data`` (e.g. a step counter).

    >>> fold_in(PRNGKey(0), 1).shape
    (2,)
    """
    k0, k1 = _key_halves(key)
    if isinstance(data, core.Tracer | Array):
        d = ew.convert_element_type(data, _U32)
    else:
        d = _u32(int(data) & 0xFFFFFFFF)
    b0, b1 = _threefry2x32(k0, k1, _u32(0), d)
    return st.concatenate([st.reshape(b0, (1,)), st.reshape(b1, (1,))], 0)


def bits(key, shape=(), dtype=np.uint32):
    """Uniform random bits of an unsigned integer ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind != "u":
        raise TypeError(f"random.bits needs an unsigned dtype, got {dtype.name}")
    return _random_bits(key, dtype.itemsize * 8, _shape(shape))


# ----------------------------------------------------------------------------------------------
# Distributions


def _float_dtype(dtype):
    dtype = _dt.default_float if dtype is None else np.dtype(dtype)
    if not _dt.is_float(dtype):
        raise TypeError(f"expected a floating dtype, got {dtype.name}")
    return dtype


def _scalar(value, dtype):
    if isinstance(value, core.Tracer | Array):
        return ew.convert_element_type(value, dtype)
    return np.asarray(value, dtype)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``.

    >>> x = uniform(PRNGKey(0), (1000,))
    >>> bool((x >= 0).all() and (x < 1).all())
    True
    """
    dtype = _float_dtype(dtype)
    shape = _shape(shape)
    finfo = np.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = _UINT[nbits]
    raw = _random_bits(key, nbits, shape)
    one_bits = np.asarray(np.array(1.0, dtype).view(uint))
    float_bits = ew.or_p.bind(ew.shift_right_logical_p.bind(raw, np.asarray(nbits - nmant, uint)), one_bits)
    floats = ew.sub_p.bind(bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
    lo, hi = _scalar(minval, dtype), _scalar(maxval, dtype)
    scaled = ew.add(ew.mul(floats, ew.sub(hi, lo)), lo)
    return ew.max_p.bind(_broadcast(lo, shape), _broadcast(scaled, shape))


def _broadcast(x, shape):
    return x if _aval(x).shape == shape else st.broadcast_in_dim(x, shape, ())


def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse-CDF of a uniform, as JAX does). A complex ``dtype`` gives
    the standard complex normal ``(re + 1j im) / sqrt(2)`` from the two keys of ``split(key)``
    (``E|z|^2 = 1``), as ``jax.random.normal`` computes it.

    >>> normal(PRNGKey(0), (2, 3)).shape
    (2, 3)
    >>> normal(PRNGKey(0), (2,), np.complex64).dtype
    dtype('complex64')
    """
    if dtype is not None and np.dtype(dtype).kind == "c":
        dtype = np.dtype(dtype)
        key_re, key_im = split(key)
        part = _dt.real_dtype(dtype)
        re, im = normal(key_re, shape, part), normal(key_im, shape, part)
        z = cx.complex_p.bind(re, im)
        return ew.div(z, np.asarray(np.sqrt(2.0), dtype))
    dtype = _float_dtype(dtype)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return ew.mul(ew.erf_inv_p.bind(u), np.asarray(np.sqrt(2.0), dtype))


def truncated_normal(key, lower, upper, shape=(), dtype=None):
    """Normal samples truncated to ``[lower, upper]``."""
    dtype = _float_dtype(dtype)
    sqrt2 = np.asarray(np.sqrt(2.0), dtype)
    a = ew.erf_p.bind(ew.div(_scalar(lower, dtype), sqrt2))
    b = ew.erf_p.bind(ew.div(_scalar(upper, dtype), sqrt2))
    u = uniform(key, shape, dtype, a, b)
    out = ew.mul(ew.erf_inv_p.bind(u), sqrt2)
    lo = (
        np.nextafter(_scalar(lower, dtype), np.asarray(np.inf, dtype))
        if not isinstance(lower, core.Tracer)
        else lower
    )
    hi = (
        np.nextafter(_scalar(upper, dtype), np.asarray(-np.inf, dtype))
        if not isinstance(upper, core.Tracer)
        else upper
    )
    return ew.clamp_p.bind(
        _broadcast(_scalar(lo, dtype), _shape(shape)), out, _broadcast(_scalar(hi, dtype), _shape(shape))
    )


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p``.

    >>> bernoulli(PRNGKey(0), 0.5, (4,)).dtype
    dtype('bool')
    """
    p_aval = _aval(p) if not isinstance(p, float | int) else None
    shape = _shape(shape) if shape is not None else (p_aval.shape if p_aval is not None else ())
    dtype = p_aval.dtype if p_aval is not None and _dt.is_float(p_aval.dtype) else _dt.default_float
    u = uniform(key, shape, dtype)
    return ew.lt_p.bind(u, _broadcast(_scalar(p, dtype), shape))


def exponential(key, shape=(), dtype=None):
    """Exponential(1) samples: ``-log1p(-u)``."""
    dtype = _float_dtype(dtype)
    u = uniform(key, shape, dtype)
    return ew.neg(ew.log1p_p.bind(ew.neg(u)))


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel samples: ``-log(-log(u))``."""
    dtype = _float_dtype(dtype)
    u = uniform(key, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return ew.neg(ew.log_p.bind(ew.neg(ew.log_p.bind(u))))


def categorical(key, logits, axis: int = -1, shape=None):
    """Samples of category indices with probabilities ``softmax(logits)`` (the Gumbel-max trick)."""
    la = _aval(logits)
    axis = axis % la.ndim
    batch_shape = la.shape[:axis] + la.shape[axis + 1 :]
    if shape is not None and _shape(shape) != batch_shape:
        raise ValueError(f"categorical: shape {shape} must equal the logits' batch shape {batch_shape}")
    g = gumbel(key, la.shape, la.dtype if _dt.is_float(la.dtype) else None)
    return argmax_p.bind(ew.add(g, logits), axes=(axis,), index_dtype=np.dtype(np.int64))


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Uniform integers in ``[minval, maxval)``.

    >>> x = randint(PRNGKey(0), (100,), 0, 10)
    >>> bool((x >= 0).all() and (x < 10).all())
    True
    """
    dtype = np.dtype(dtype)
    shape = _shape(shape)
    nbits = dtype.itemsize * 8
    uint = _UINT[nbits]
    info = np.iinfo(dtype)
    lo = ew.clamp_p.bind(np.asarray(info.min, dtype), _scalar(minval, dtype), np.asarray(info.max, dtype))
    hi = ew.clamp_p.bind(np.asarray(info.min, dtype), _scalar(maxval, dtype), np.asarray(info.max, dtype))
    keys = split(key)
    k1 = st.reshape(st.slice_(keys, (0, 0), (1, 2)), (2,))
    k2 = st.reshape(st.slice_(keys, (1, 0), (2, 2)), (2,))
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    span = ew.convert_element_type(ew.sub(hi, lo), uint)
    span = ew.select(ew.le_p.bind(hi, lo), np.asarray(1, uint), span)
    multiplier = ew.rem_p.bind(np.asarray(2 ** (nbits // 2) % (2**nbits), uint), span)
    multiplier = ew.rem_p.bind(ew.mul(multiplier, multiplier), span)
    offset = ew.add(
        ew.mul(ew.rem_p.bind(higher, _broadcast(span, shape)), multiplier),
        ew.rem_p.bind(lower, _broadcast(span, shape)),
    )
    offset = ew.rem_p.bind(offset, _broadcast(span, shape))
    return ew.add(_broadcast(lo, shape), ew.convert_element_type(offset, dtype))


__all__ = [
    "PRNGKey",
    "key",
    "key_data",
    "split",
    "fold_in",
    "bits",
    "uniform",
    "normal",
    "truncated_normal",
    "bernoulli",
    "exponential",
    "gumbel",
    "categorical",
    "randint",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
