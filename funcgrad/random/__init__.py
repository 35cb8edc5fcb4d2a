"""Pseudo-random numbers with explicit keys: ``funcgrad.random`` (JAX's ``jax.random`` API).

Layer: surface. Imports the kernel, the primitive catalog, funcgrad.numpy, funcgrad.lax and
funcgrad.nn.

Keys are typed key arrays, ``key(0)`` (shape ``()``, dtype ``key<fry>``, as JAX's), or their raw
``uint32[2]`` data, ``PRNGKey(0)``; every function takes either and draws the same numbers from
both (NOTE: [PRNG implementations]). Every function is a pure function of its key, built from
threefry2x32 written with ``add``/``xor``/shift primitives, so it runs eagerly with NumPy, compiles
under ``jit`` and batches under ``vmap``. The bit streams follow JAX's threefry implementation with
``jax_threefry_partitionable`` (JAX's default) and 64-bit types enabled, and every sampler follows
JAX's algorithm, so ``funcgrad.random.gamma(PRNGKey(0), 2.0)`` draws JAX's value with
``jax_enable_x64`` (tests check this against JAX).

Modules: ``_core`` (keys and bits), ``_basic`` (uniform, normal, truncated normal, Bernoulli,
exponential, Gumbel, categorical, randint), ``_continuous`` (gamma family with reparameterised
derivatives, Cauchy, Laplace, logistic, Pareto, log-normal, Maxwell, Weibull, Rayleigh, Wald,
triangular, generalized normal, ball, multivariate normal, orthogonal), ``_discrete`` (permutation,
choice, Poisson, binomial, multinomial, geometric, Rademacher).

# NOTE: [random keys are data]
# A key is a value (a typed key array over uint32 data, or that data): split it, never reuse
# it. Splitting and drawing are deterministic functions of the key, so they can be
# differentiated around (they have zero gradients), staged, and vmapped over a batch of keys.

>>> k1, k2 = split(key(0))
>>> k1.shape, normal(k2, (2,)).shape, normal(PRNGKey(0), (2,)).shape
((), (2,), (2,))
"""

from __future__ import annotations

import functools

from funcgrad import _key_reuse
from funcgrad.random import (
    _basic,
    _continuous,
    _core,
    _counter_impls,  # noqa: F401 - registers "threefry4x32", "philox2x32", "philox4x32"
    _discrete,
    _impls,  # noqa: F401 - registers "threefry2x32", "rbg", "unsafe_rbg"
)
from funcgrad.random._basic import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.random._continuous import *  # noqa: F403
from funcgrad.random._core import *  # noqa: F403
from funcgrad.random._discrete import *  # noqa: F403

__all__ = sorted({*_core.__all__, *_basic.__all__, *_continuous.__all__, *_discrete.__all__})


def _consuming(fn, name: str):
    """``fn(key, ...)`` consuming its key for the key-reuse checker, under JAX's name of what
    consumes it (NOTE: [key reuse] in funcgrad/_key_reuse.py); its internals check nothing more.
    Only this namespace's functions are wrapped: one sampler calling another inside (``beta``
    draws ``gamma``s) consumes nothing twice."""

    @functools.wraps(fn)
    def consuming(*args, **kwargs):
        if not _key_reuse.active():
            return fn(*args, **kwargs)
        _key_reuse.consume(args[0] if args else kwargs.get("key"), name)
        with _key_reuse.suspended():
            return fn(*args, **kwargs)

    return consuming


# JAX's samplers are jitted functions (a reused key is "passed to jit-compiled function"); bits and
# split are its primitives random_bits and random_split.
for _name in (*_basic.__all__, *_continuous.__all__, *_discrete.__all__, "bits", "split"):
    globals()[_name] = _consuming(
        globals()[_name], {"bits": "random_bits", "split": "random_split"}.get(_name, "jit")
    )
del _name


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
