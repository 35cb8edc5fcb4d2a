"""``funcgrad.lax`` access to XLA's random number generators: ``rng_bit_generator``,
``rng_uniform`` and ``RandomAlgorithm``, with ``jax.lax``'s signatures (``primitives/rng.py``).

Layer: surface. Imports the primitive catalog and ``funcgrad.numpy._core`` (conversions).

Like JAX, these are low-level: ``funcgrad.random`` (JAX's threefry, bit-identical with
``jax.random``) is the generator programs should use. ``rng_bit_generator`` gives the same bits as
``jax.lax.rng_bit_generator`` for the same key, shape, dtype and algorithm (both are XLA's
RngBitGenerator); eager calls compile the one operation.
"""

from __future__ import annotations

import numpy as np

from funcgrad._placement import reshard
from funcgrad.numpy._core import asarray
from funcgrad.primitives import rng
from funcgrad.primitives.rng import RandomAlgorithm

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_uniform"]


def _shape(shape, name):
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"lax.{name}: shape must be a tuple of ints, got {shape!r}") from None


def rng_bit_generator(
    key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *, out_sharding=None
):
    """Uniformly distributed random bits of ``shape`` and unsigned ``dtype`` from ``key`` (XLA's
    stateless RngBitGenerator); returns ``(new_key, bits)``. ``out_sharding`` lays out the bits
    (JAX's: the new key stays replicated).

    ``key`` is a ``uint32[4]`` (or ``uint64[2]``) state; ``algorithm`` a ``RandomAlgorithm``.

    >>> import numpy as np
    >>> from funcgrad import lax
    >>> key = np.array([0, 0, 0, 42], np.uint32)
    >>> new_key, bits = lax.rng_bit_generator(key, (2, 3), np.uint8, lax.RandomAlgorithm.RNG_THREE_FRY)
    >>> bits.shape, str(bits.dtype), new_key.shape
    ((2, 3), 'uint8', (4,))
    """
    shape = _shape(shape, "rng_bit_generator")
    dtype = np.dtype(dtype)
    if dtype not in rng._BITS:
        raise TypeError(
            f"lax.rng_bit_generator: unsupported dtype {dtype}: use uint8, uint16, uint32 or uint64"
        )
    try:
        algorithm = RandomAlgorithm(algorithm)
    except ValueError:
        raise ValueError(
            f"lax.rng_bit_generator: algorithm must be a lax.RandomAlgorithm, got {algorithm!r}"
        ) from None
    out = rng.rng_bit_generator_p.bind(asarray(key), shape=shape, dtype=dtype, algorithm=int(algorithm))
    if out_sharding is not None:
        return out[0], reshard(out[1], out_sharding)
    return tuple(out)


def rng_uniform(a, b, shape):
    """Values uniformly distributed in ``[a, b)`` of ``shape`` (XLA's stateful Rng: each call
    draws afresh, so it is not reproducible; use ``funcgrad.random`` for that).

    >>> import numpy as np
    >>> from funcgrad import lax
    >>> x = lax.rng_uniform(np.float32(2.0), np.float32(3.0), (4,))
    >>> bool(((x >= 2.0) & (x < 3.0)).all()), str(x.dtype)
    (True, 'float32')
    """
    a, b = asarray(a), asarray(b)
    return rng.rng_uniform_p.bind(a, b, shape=_shape(shape, "rng_uniform"))
