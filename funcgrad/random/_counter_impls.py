"""The counter-based PRNG implementations JAX 0.10 ships beside threefry2x32: ``threefry4x32``
(``key<fry4>``, ``uint32[4]`` keys), ``philox2x32`` (``key<phx2>``, ``uint32[1]``) and
``philox4x32`` (``key<phx4>``, ``uint32[2]``), registered by name (NOTE: [PRNG implementations]).

Layer: surface. Imports funcgrad.random._core (the seed words and the 2x32 counters),
funcgrad.lax and funcgrad.numpy.

Each follows JAX's ``jax._src.random.{threefry4x32,philox2x32,philox4x32}`` word for word -- the
Random123 hashes (threefry4x32 in 20 rounds, philox in 10), the seed hashed through the generator,
``split`` hashing the flat index of each new key, ``fold_in`` the data as the last counter word,
and ``random_bits`` combining the output words as JAX does -- so a key draws JAX's bits:

>>> from funcgrad import random
>>> k = random.key(0, impl="philox4x32")
>>> k.dtype, random.key_data(k).tolist()
(key<phx4>, [1713891541, 3781805453])
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.random import _core
from funcgrad.random._keys import PRNGImpl, register_prng

__all__ = ["philox2x32_prng_impl", "philox4x32_prng_impl", "threefry4x32_prng_impl"]

_U32 = np.uint32
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _u32(x):
    return fnp.asarray(x, _U32)


# ----------------------------------------------------------------------------------------------
# The hashes (JAX's lowerings of threefry4x32_p / philox2x32_p / philox4x32_p)

_ROTATIONS_32X4 = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_SKEIN_KS_PARITY32 = _U32(0x1BD11BDA)


def _rotl(x, d: int):
    return lax.shift_left(x, _U32(d)) | lax.shift_right_logical(x, _U32(32 - d))


def _threefry4x32(k0, k1, k2, k3, x0, x1, x2, x3):
    """Threefry-4x32 with 20 rounds (Random123's), the arguments broadcast together."""
    ks = [k0, k1, k2, k3, k0 ^ k1 ^ k2 ^ k3 ^ _SKEIN_KS_PARITY32]
    x0, x1, x2, x3 = x0 + ks[0], x1 + ks[1], x2 + ks[2], x3 + ks[3]
    for rnd in range(20):
        rot0, rot1 = _ROTATIONS_32X4[rnd % 8]
        if rnd % 2 == 0:
            x0 = x0 + x1
            x1 = x0 ^ _rotl(x1, rot0)
            x2 = x2 + x3
            x3 = x2 ^ _rotl(x3, rot1)
        else:
            x0 = x0 + x3
            x3 = x0 ^ _rotl(x3, rot0)
            x2 = x2 + x1
            x1 = x2 ^ _rotl(x1, rot1)
        if rnd & 3 == 3:
            i = rnd // 4
            x0, x1, x2 = x0 + ks[(1 + i) % 5], x1 + ks[(2 + i) % 5], x2 + ks[(3 + i) % 5]
            x3 = x3 + ks[(4 + i) % 5] + _U32(1 + i)
    return x0, x1, x2, x3


_PHILOX_W32_0, _PHILOX_W32_1 = _U32(0x9E3779B9), _U32(0xBB67AE85)


def _mulhilo(m, x):
    m = fnp.broadcast_to(_u32(m), fnp.shape(x))
    return m * x, lax.mulhi(m, x)


def _philox2x32(k0, x0, x1):
    """Philox-2x32 with 10 rounds."""
    x0, x1 = fnp.broadcast_arrays(_u32(x0), _u32(x1))
    for rnd in range(10):
        if rnd:
            k0 = k0 + _PHILOX_W32_0
        lo, hi = _mulhilo(0xD256D193, x0)
        x0, x1 = hi ^ x1 ^ k0, lo
    return x0, x1


def _philox4x32(k0, k1, x0, x1, x2, x3):
    """Philox-4x32 with 10 rounds."""
    x0, x1, x2, x3 = fnp.broadcast_arrays(*map(_u32, (x0, x1, x2, x3)))
    for rnd in range(10):
        if rnd:
            k0, k1 = k0 + _PHILOX_W32_0, k1 + _PHILOX_W32_1
        lo0, hi0 = _mulhilo(0xD2511F53, x0)
        lo1, hi1 = _mulhilo(0xCD9E8D57, x2)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return x0, x1, x2, x3


# ----------------------------------------------------------------------------------------------
# The implementations


def _seed_words(seed):
    """The seed's high and low 32-bit words, as JAX's seeds take them (threefry2x32's seed)."""
    words = _core._threefry_seed(seed)
    return words[0], words[1]


def _counters(shape):
    hi, lo = _core._iota_2x32(tuple(shape))
    return fnp.broadcast_to(hi, shape), fnp.broadcast_to(lo, shape)


def _combine(words, bit_width: int, wide):
    """JAX's bits from the output words: ``wide`` (high, low) for 64 bits, else all xored."""
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    if bit_width == 64:
        hi, lo = (w.astype(np.uint64) for w in wide)
        return lax.shift_left(hi, np.uint64(32)) | lo
    bits = words[0]
    for w in words[1:]:
        bits = bits ^ w
    return bits if bit_width == 32 else bits.astype(_UINT[bit_width])


def _fry4_seed(seed):
    hi, lo = _seed_words(seed)
    z = _u32(0)
    return fnp.stack(_threefry4x32(hi, lo, z, z, z, z, z, z))


def _fry4_split(key, shape):
    hi, lo = _counters(shape)
    zeros = fnp.zeros(shape, _U32)
    out = _threefry4x32(key[0], key[1], key[2], key[3], zeros, zeros, hi, lo)
    return fnp.stack(out, axis=len(shape))


def _fry4_fold_in(key, data):
    z = _u32(0)
    return fnp.stack(_threefry4x32(key[0], key[1], key[2], key[3], z, z, z, _u32(data)))


def _fry4_bits(key, bit_width, shape):
    hi, lo = _counters(shape)
    zeros = fnp.zeros(shape, _U32)
    o0, o1, o2, o3 = _threefry4x32(key[0], key[1], key[2], key[3], hi, lo, zeros, zeros)
    return _combine((o0, o1, o2, o3), bit_width, (o0 ^ o2, o1 ^ o3) if bit_width == 64 else None)


threefry4x32_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(4,),
        seed=_fry4_seed,
        split=_fry4_split,
        random_bits=_fry4_bits,
        fold_in=_fry4_fold_in,
        name="threefry4x32",
        tag="fry4",
    )
)


def _phx2_seed(seed):
    hi, lo = _seed_words(seed)
    out0, _ = _philox2x32(_u32(0), hi, lo)
    return fnp.reshape(out0, (1,))


def _phx2_split(key, shape):
    hi, lo = _counters(shape)
    out0, _ = _philox2x32(key[0], hi, lo)
    return fnp.expand_dims(out0, len(shape))


def _phx2_fold_in(key, data):
    out0, _ = _philox2x32(key[0], _u32(0), _u32(data))
    return fnp.reshape(out0, (1,))


def _phx2_bits(key, bit_width, shape):
    hi, lo = _counters(shape)
    o0, o1 = _philox2x32(key[0], hi, lo)
    return _combine((o0, o1), bit_width, (o0, o1))


philox2x32_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(1,),
        seed=_phx2_seed,
        split=_phx2_split,
        random_bits=_phx2_bits,
        fold_in=_phx2_fold_in,
        name="philox2x32",
        tag="phx2",
    )
)


def _phx4_seed(seed):
    hi, lo = _seed_words(seed)
    z = _u32(0)
    out = _philox4x32(z, z, hi, lo, z, z)
    return fnp.stack(out[:2])


def _phx4_split(key, shape):
    hi, lo = _counters(shape)
    zeros = fnp.zeros(shape, _U32)
    out = _philox4x32(key[0], key[1], zeros, zeros, hi, lo)
    return fnp.stack(out[:2], axis=len(shape))


def _phx4_fold_in(key, data):
    z = _u32(0)
    return fnp.stack(_philox4x32(key[0], key[1], z, z, z, _u32(data))[:2])


def _phx4_bits(key, bit_width, shape):
    hi, lo = _counters(shape)
    zeros = fnp.zeros(shape, _U32)
    o0, o1, o2, o3 = _philox4x32(key[0], key[1], hi, lo, zeros, zeros)
    return _combine((o0, o1, o2, o3), bit_width, (o0, o1))


philox4x32_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(2,),
        seed=_phx4_seed,
        split=_phx4_split,
        random_bits=_phx4_bits,
        fold_in=_phx4_fold_in,
        name="philox4x32",
        tag="phx4",
    )
)
