"""The PRNG implementations JAX ships -- ``threefry2x32`` (the default), ``rbg`` and
``unsafe_rbg`` -- as ``PRNGImpl`` records, registered by name (NOTE: [PRNG implementations]).

Layer: surface. Imports funcgrad.random._core (threefry), funcgrad.lax.rng (XLA's
RngBitGenerator) and funcgrad.numpy.

``rbg`` keys are ``uint32[4]``: two threefry half-keys that split and fold in as threefry does,
with bits drawn by XLA's ``RngBitGenerator`` from the whole key (faster on accelerators, the same
bits as JAX's for the same key on a given backend). ``unsafe_rbg`` also splits and folds in with
``RngBitGenerator`` (cheaper, no independence guarantee: JAX's documentation says the same).
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import core
from funcgrad.lax.rng import rng_bit_generator
from funcgrad.random import _core
from funcgrad.random._keys import KeyArray, PRNGImpl, register_prng, resolve_impl

__all__ = [
    "random_seed",
    "rbg_prng_impl",
    "seed_with_impl",
    "threefry_2x32",
    "threefry_prng_impl",
    "unsafe_rbg_prng_impl",
]

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


threefry_prng_impl = _core.threefry_prng_impl  # defined beside the threefry functions


def _rbg_seed(seed):
    half = _core._threefry_seed(seed)
    return fnp.concatenate([half, half])


def _rbg_split(key, shape):
    halves = fnp.reshape(key, (2, 2))
    parts = [_core._threefry_split(halves[i], shape) for i in range(2)]  # each (*shape, 2)
    return fnp.reshape(fnp.stack(parts, axis=len(shape)), (*shape, 4))


def _rbg_fold_in(key, data):
    halves = fnp.reshape(key, (2, 2))
    return fnp.reshape(fnp.stack([_core._threefry_fold_in(halves[i], data) for i in range(2)]), (4,))


def _rbg_random_bits(key, bit_width, shape):
    if bit_width not in _UINT:
        raise TypeError(f"random bits need an 8-, 16-, 32- or 64-bit width, got {bit_width}")
    _, bits = rng_bit_generator(key, tuple(shape), dtype=_UINT[bit_width])
    return bits


rbg_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(4,),
        seed=_rbg_seed,
        split=_rbg_split,
        random_bits=_rbg_random_bits,
        fold_in=_rbg_fold_in,
        name="rbg",
        tag="rbg",
    )
)


def _unsafe_rbg_split(key, shape):
    # Ten rounds of the generator's output serve as a hash of the key (JAX's recipe).
    n = math.prod(shape)
    _, keys = rng_bit_generator(key, (10 * n, 4), dtype=np.uint32)
    return fnp.reshape(keys[::10], (*shape, 4))


def _unsafe_rbg_fold_in(key, data):
    _, bits = rng_bit_generator(_rbg_seed(data), (10, 4), dtype=np.uint32)
    return fnp.bitwise_xor(key, bits[-1])


unsafe_rbg_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(4,),
        seed=_rbg_seed,
        split=_unsafe_rbg_split,
        random_bits=_rbg_random_bits,
        fold_in=_unsafe_rbg_fold_in,
        name="unsafe_rbg",
        tag="urbg",
    )
)


def threefry_2x32(keypair, count):
    """The threefry2x32 hash of the ``uint32`` array ``count`` under the key ``(k0, k1)``
    (two ``uint32`` scalars), as JAX's: the flattened counts (padded to even length) are hashed
    in two halves; the result has ``count``'s shape.

    >>> import numpy as np
    >>> threefry_2x32((np.uint32(0), np.uint32(42)), np.arange(3, dtype=np.uint32)).tolist()
    [2465931498, 430176367, 255383827]
    """
    k0, k1 = keypair
    arrays = [fnp.asarray(k0), fnp.asarray(k1), fnp.asarray(count)]
    if any(core.get_aval(a).dtype != np.uint32 for a in arrays):
        raise TypeError(
            "threefry_2x32 requires uint32 key words and counts, got "
            + ", ".join(core.get_aval(a).dtype.name for a in arrays)
        )
    k0, k1, count = arrays
    flat = fnp.ravel(count)
    odd = flat.shape[0] % 2
    if odd:
        flat = fnp.concatenate([flat, fnp.zeros((1,), np.uint32)])
    half = flat.shape[0] // 2
    x0, x1 = _core._threefry2x32(k0, k1, flat[:half], flat[half:])
    out = fnp.concatenate([x0, x1])
    return fnp.reshape(out[:-1] if odd else out, count.shape)


def random_seed(seeds, impl):
    """Typed keys of ``impl`` from an integer seed or an array of seeds (one key each, JAX's
    ``jax.extend.random.random_seed``; NOTE: [PRNG implementations]).

    >>> random_seed(7, rbg_prng_impl).shape
    ()
    >>> random_seed(np.arange(3), threefry_prng_impl).shape
    (3,)
    """
    spec = resolve_impl(impl, "random_seed") or _core.default_prng_impl()
    seeds_arr = _core._offset(fnp.asarray(np.int64(seeds) if isinstance(seeds, int) else seeds))
    flat = fnp.ravel(seeds_arr)
    shape = tuple(seeds_arr.shape)
    if shape:
        data = fnp.stack([spec.seed(flat[i]) for i in range(flat.shape[0])]) if flat.shape[0] else None
        if data is None:
            data = fnp.zeros((0, *spec.key_shape), np.uint32)
        data = fnp.reshape(data, (*shape, *spec.key_shape))
    else:
        data = spec.seed(seeds_arr)
    return KeyArray(spec, data)


def seed_with_impl(impl, seed):
    """``random_seed(seed, impl)`` (JAX's argument order).

    >>> seed_with_impl(threefry_prng_impl, 5)
    Array((), dtype=key<fry>) overlaying:
    [0 5]
    """
    return random_seed(seed, impl)
