"""XLA's own random number generators: ``rng_bit_generator`` (stateless, keyed) and
``rng_uniform`` (stateful).

Layer: primitives. Imports the funcgrad kernel, numpy and the sibling family ``structure``.

These are XLA operations with no NumPy counterpart producing the same bits, so their eager impl
stages a one-equation program and runs it through the compiler the bridge registers with the
kernel (``hooks.jit_impl``, as the ``jit`` primitive does, NOTE: [kernel registration]): eager and
compiled results are the same bits, and the same bits as ``jax.lax.rng_bit_generator`` for the
same key, algorithm, shape and dtype (both lower to ``stablehlo.rng_bit_generator``; the key is
``uint32[4]``, bitcast to the ``uint64[2]`` state XLA takes, or ``uint64[2]`` itself). Without the
bridge they raise an error that says so. ``funcgrad.random`` is JAX's threefry in primitives,
bit-identical with ``jax.random``; these are a different stream.

Neither is differentiable (integer bits; ``rng_uniform`` is a fresh draw). Under ``vmap`` a batch
of keys draws the whole batch from its first key, which alone is advanced (JAX's rule and bits),
and ``rng_uniform`` draws the whole batch at once (batched bounds scale one draw in ``[0, 1)``
per lane).
"""

from __future__ import annotations

import enum

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import aval_of, move_to_front, to_front
from funcgrad.primitives.structure import (
    broadcast_in_dim,
    concatenate,
    expand_dims,
    index_in_dim,
    slice_in_dim,
)

from funcgrad.kernel.ad import defjvp_zero
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray

__all__ = ["RandomAlgorithm", "iota_2x32_shape_p", "rng_bit_generator_p", "rng_uniform_p"]


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of ``rng_bit_generator`` (``jax.lax.RandomAlgorithm``)."""

    RNG_DEFAULT = 0  # the platform's default (Philox on the CPU)
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_BITS = tuple(np.dtype(d) for d in ("uint8", "uint16", "uint32", "uint64"))


def _compiled(primitive, args, params):
    """Evaluate ``primitive`` on concrete ``args`` by compiling it (see the module docstring)."""
    if hooks.eager_compiled is None:
        raise RuntimeError(
            f"{primitive.name} is XLA's generator and runs only through the compiler: import "
            "xla_bridge (`import funcgrad` does) before calling it"
        )
    return hooks.eager_compiled(primitive, args, params)


# ----------------------------------------------------------------------------------------------
# rng_bit_generator(key) -> (new_key, bits)


def _bits_abstract_eval(key, *, shape, dtype, algorithm):
    if (key.shape, key.dtype) not in (((4,), np.dtype("uint32")), ((2,), np.dtype("uint64"))):
        raise TypeError(
            f"rng_bit_generator: the key must be uint32[4] (or uint64[2]), got {key.str_short()}; make one "
            "with e.g. np.array([0, 0, 0, 42], np.uint32)"
        )
    if np.dtype(dtype) not in _BITS:
        raise TypeError(
            f"rng_bit_generator: unsupported dtype {np.dtype(dtype)}: use uint8, uint16, uint32 or uint64"
        )
    RandomAlgorithm(algorithm)
    return [ShapedArray(key.shape, key.dtype), ShapedArray(tuple(shape), np.dtype(dtype))]


def _bits_batch(axis_size, vals, dims, *, shape, dtype, algorithm):
    # JAX's rule, for JAX's bits: the first key draws the whole batch (shape (axis_size, *shape))
    # and is the only key advanced. (The keys' other lanes are not used: rbg keys under vmap are
    # JAX's "unsafe" semantics, which its random_lax_test checks bit for bit.)
    (key,), (d,) = vals, dims
    key = move_to_front(key, d)
    new_key, bits = rng_bit_generator_p.bind(
        index_in_dim(key, 0, 0, False), shape=(axis_size, *shape), dtype=dtype, algorithm=algorithm
    )
    rest = slice_in_dim(key, 1, axis_size, 1, 0)
    return [concatenate([expand_dims(new_key, (0,)), rest], 0), bits], [0, 0]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
rng_bit_generator_p.def_impl(lambda key, **params: _compiled(rng_bit_generator_p, [key], params))
rng_bit_generator_p.def_abstract_eval(_bits_abstract_eval)
defjvp_zero(rng_bit_generator_p)
rng_bit_generator_p.def_batch(_bits_batch)


# ----------------------------------------------------------------------------------------------
# rng_uniform(a, b) -> values in [a, b)


def _uniform_abstract_eval(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(f"rng_uniform: the bounds must have one dtype, got {a.dtype} and {b.dtype}")
    if a.shape != () or b.shape != ():
        raise ValueError(f"rng_uniform: the bounds must be scalars, got shapes {a.shape} and {b.shape}")
    if a.dtype.kind not in "fiu" or a.dtype == np.bool_:
        raise TypeError(f"rng_uniform: the bounds must be real numbers, got {a.dtype}")
    return ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)


def _uniform_batch(axis_size, vals, dims, *, shape):
    if all(d is None for d in dims):
        return rng_uniform_p.bind(*vals, shape=(axis_size, *shape)), 0
    # Batched bounds: one draw in [0, 1) for the whole batch, scaled per lane (floor for integers).
    out_shape = (axis_size, *shape)
    a, b = (broadcast_in_dim(to_front(v, d, axis_size), out_shape, (0,)) for v, d in zip(vals, dims))
    dtype = aval_of(a).dtype
    real = dtype if dtype.kind == "f" else np.dtype(np.float64)
    u = rng_uniform_p.bind(np.zeros((), real), np.ones((), real), shape=out_shape)
    span = ew.mul(ew.convert_element_type(ew.sub(b, a), real), u)
    if dtype.kind != "f":
        span = ew.convert_element_type(ew.floor(span), dtype)
    return ew.add(a, span), 0


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_traits(may_produce_nan=True)
rng_uniform_p.def_impl(lambda a, b, **params: _compiled(rng_uniform_p, [a, b], params))
rng_uniform_p.def_abstract_eval(_uniform_abstract_eval)
defjvp_zero(rng_uniform_p)
rng_uniform_p.def_batch(_uniform_batch)


# ----------------------------------------------------------------------------------------------
# iota_2x32_shape() -> (hi, lo): the flat row-major index of every element of ``shape`` as two
# uint32 words, for threefry counters of 2**32 elements or more (JAX's ``iota_2x32_shape``). A
# primitive so that a staged draw of that size is computed by XLA in 64 bits (a ``uint64`` iota
# per axis, times its stride, summed, then split) without NumPy materialising the index: an
# ``eval_shape``/``lower`` of a 1e12-element draw allocates nothing, as in JAX. Eagerly NumPy
# computes it. No operands: no derivative, no batch rule needed.


def _iota_2x32_abstract_eval(*, shape):
    return [ShapedArray(tuple(shape), _BITS[2])] * 2


def _iota_2x32_impl(*, shape):
    counts = np.arange(int(np.prod(shape, dtype=np.uint64)), dtype=np.uint64).reshape(shape)
    return [(counts >> np.uint64(32)).astype(np.uint32), counts.astype(np.uint32)]


iota_2x32_shape_p = Primitive("iota_2x32_shape", multiple_results=True)
iota_2x32_shape_p.def_impl(_iota_2x32_impl)
iota_2x32_shape_p.def_abstract_eval(_iota_2x32_abstract_eval)
defjvp_zero(iota_2x32_shape_p)
iota_2x32_shape_p.def_batch(
    lambda axis_size, vals, dims, **params: (iota_2x32_shape_p.bind(**params), [None, None])
)
