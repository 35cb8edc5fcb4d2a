"""threefry2x32's original (non-partitionable) bit streams: what ``jax_threefry_partitionable=False``
draws, as JAX's ``_threefry_random_bits_original`` and ``_threefry_split_original``.

Layer: surface. Imports funcgrad.lax, the primitive catalog (elementwise) and the threefry2x32
cipher (funcgrad/random/_cipher.py).

# NOTE: [threefry bit streams]
# JAX has two ways to turn one key into many words. The partitionable one (its default, and
# funcgrad's) hashes each element's row-major index as a (high, low) counter pair, so any shard of
# the result can be computed alone. The original one hashes the counters ``0 .. n-1`` as ONE flat
# array: the array (padded to an even length) is cut in two halves that are the cipher's two input
# words, and the two output words are laid end to end. The words of element ``i`` then depend on
# ``n``, which is why it does not partition. Libraries whose tests pin values drawn in that mode
# (mctx) set ``jax_threefry_partitionable=False``; the flag is part of jit's cache key (a user
# context, funcgrad/_config.py), so a function traced in one mode is traced again in the other.
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad import lax
from funcgrad.primitives import elementwise as ew
from funcgrad.random._cipher import _key_halves, _threefry2x32

_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


def hash_flat(data, counts):
    """JAX's ``threefry_2x32(key, counts)`` on a 1-D uint32 ``counts``: the halves of ``counts``
    (zero-padded to an even length) are the two words hashed; the result has ``counts``' length.

    >>> import funcgrad.random as fr
    >>> hash_flat(fr.PRNGKey(0), lax.iota(np.uint32, 4)).tolist()  # jax: the same words
    [4146024105, 967050713, 2718843009, 1272950319]
    """
    k0, k1 = _key_halves(data)
    n = counts.shape[0]
    if n % 2:
        counts = lax.concatenate([counts, np.zeros((1,), _U32)], 0)
    half = counts.shape[0] // 2
    b0, b1 = _threefry2x32(k0, k1, lax.slice(counts, (0,), (half,)), lax.slice(counts, (half,), (2 * half,)))
    out = lax.concatenate([b0, b1], 0)
    return lax.slice(out, (0,), (n,)) if n % 2 else out


def random_bits(data, bit_width: int, shape: tuple[int, ...]):
    """``bit_width``-bit words of ``shape`` from one raw key, the original stream."""
    if bit_width not in _UINT:
        raise TypeError(f"random bits need an 8-, 16-, 32- or 64-bit width, got {bit_width}")
    size = math.prod(shape)
    max_count = -(-bit_width * size // 32)
    if max_count >= 2**32 - 1:
        raise NotImplementedError(
            "jax_threefry_partitionable=False: funcgrad draws at most 2**32 - 2 words per key in the "
            "original stream; set jax_threefry_partitionable=True (the default) for larger draws"
        )
    bits = hash_flat(data, lax.iota(_U32, max_count))
    dtype = _UINT[bit_width]
    if bit_width == 64:
        hi = ew.convert_element_type(lax.slice(bits, (0,), (size,)), dtype)
        lo = ew.convert_element_type(lax.slice(bits, (size,), (2 * size,)), dtype)
        bits = ew.or_p.bind(ew.shift_left_p.bind(hi, np.asarray(32, dtype)), lo)
    elif bit_width in (8, 16):
        # Each 32-bit word gives 32 // bit_width words, its low bits first (a little-endian view).
        per = 32 // bit_width
        shifts = lax.broadcasted_iota(_U32, (max_count, per), 1) * np.uint32(bit_width)
        words = lax.broadcast_in_dim(bits, (max_count, per), (0,))
        parts = ew.and_p.bind(
            ew.shift_right_logical_p.bind(words, shifts), np.asarray(np.iinfo(dtype).max, _U32)
        )
        bits = lax.slice(
            lax.reshape(ew.convert_element_type(parts, dtype), (max_count * per,)), (0,), (size,)
        )
    return lax.reshape(bits, shape)


def split(data, shape: tuple[int, ...]):
    """Keys of ``shape`` (``uint32[*shape, 2]``) from one raw key, the original split."""
    num = math.prod(shape)
    return lax.reshape(hash_flat(data, lax.iota(_U32, 2 * num)), (*shape, 2))
