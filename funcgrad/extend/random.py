"""``funcgrad.extend.random``: PRNG implementations for library authors (``jax.extend.random``).

Layer: surface. Re-exports funcgrad/random/_impls.py (threefry, rbg, unsafe_rbg) and defines
``define_prng_impl``; the keys of every implementation work with ``funcgrad.random``'s functions
(NOTE: [PRNG implementations]).

>>> import funcgrad.random as random
>>> k = random.key(0, impl=rbg_prng_impl)
>>> random.key_impl(k), random.uniform(k, (3,)).shape
('rbg', (3,))
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad.random._impls import (
    random_seed,
    rbg_prng_impl,
    seed_with_impl,
    threefry_2x32,
    threefry_prng_impl,
    unsafe_rbg_prng_impl,
)
from funcgrad.random._keys import PRNGImpl, PRNGSpec
from funcgrad.random._threefry_p import threefry2x32_p

__all__ = [
    "define_prng_impl",
    "random_seed",
    "rbg_prng_impl",
    "seed_with_impl",
    "threefry2x32_p",
    "threefry_2x32",
    "threefry_prng_impl",
    "unsafe_rbg_prng_impl",
]


def define_prng_impl(
    *,
    key_shape: tuple[int, ...],
    seed: Callable,
    split: Callable,
    random_bits: Callable,
    fold_in: Callable,
    name: str = "<unnamed>",
    tag: str = "?",
) -> PRNGSpec:
    """A new PRNG implementation from its four functions on raw ``uint32[*key_shape]`` key data:
    ``seed(int[]) -> K``, ``split(K, shape) -> K[*shape]``, ``fold_in(K, uint32[]) -> K`` and
    ``random_bits(K, bit_width, shape) -> uint<bit_width>[*shape]``. Pass the result as
    ``impl=`` to ``funcgrad.random.key`` or ``wrap_key_data``; every sampler then draws through it.

    >>> import numpy as np, funcgrad.numpy as fnp, funcgrad.random as random
    >>> counter = define_prng_impl(
    ...     key_shape=(1,),
    ...     seed=lambda s: fnp.reshape(fnp.asarray(s, np.uint32), (1,)),
    ...     split=lambda k, shape: fnp.reshape(
    ...         k + 1 + fnp.arange(np.prod(shape), dtype=np.uint32), (*shape, 1)),
    ...     fold_in=lambda k, d: k + d,
    ...     random_bits=lambda k, w, shape: fnp.broadcast_to(k[0], shape).astype(f"uint{w}"),
    ...     name="counter", tag="ctr")
    >>> k = random.key(5, impl=counter)
    >>> random.bits(k, (2,)).tolist(), random.key_data(random.split(k, 2)).tolist()
    ([5, 5], [[6], [7]])
    """
    return PRNGSpec(PRNGImpl(tuple(key_shape), seed, split, random_bits, fold_in, name=name, tag=tag))


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
