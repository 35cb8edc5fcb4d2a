"""Lowering rules of the rng family (primitives/rng.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and ``xla_bridge.emitter``.

``rng_bit_generator`` is ``stablehlo.rng_bit_generator`` on a ``uint64[2]`` state: a ``uint32[4]``
key is reshaped to ``2x2`` and bitcast to it (and the new state back), as JAX lowers it, so the
bits are JAX's for the same key. ``rng_uniform`` is ``stablehlo.rng`` with the UNIFORM
distribution.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import rng
from funcgrad.xla_bridge.emitter import aval_type, register, tensor_type

_U32, _U64 = np.dtype("uint32"), np.dtype("uint64")
_NAMES = {0: "DEFAULT", 1: "THREE_FRY", 2: "PHILOX"}


@register(rng.rng_bit_generator_p)
def _rng_bit_generator(ctx, key, *, shape, dtype, algorithm):
    fb = ctx.fb
    key_aval, bits_aval = ctx.avals_out
    state = key
    if key_aval.dtype == _U32:
        pairs = fb.emit(f"stablehlo.reshape {key} : ({aval_type(key_aval)}) -> {tensor_type((2, 2), _U32)}")
        state = fb.emit(
            f"stablehlo.bitcast_convert {pairs} : ({tensor_type((2, 2), _U32)}) -> {tensor_type((2,), _U64)}"
        )
    st = tensor_type((2,), _U64)
    new, bits = fb.emit(
        f"stablehlo.rng_bit_generator {state}, algorithm = {_NAMES[int(algorithm)]} : ({st}) -> "
        f"({st}, {aval_type(bits_aval)})",
        nres=2,
    )
    if key_aval.dtype == _U32:
        pairs = fb.emit(f"stablehlo.bitcast_convert {new} : ({st}) -> {tensor_type((2, 2), _U32)}")
        new = fb.emit(f"stablehlo.reshape {pairs} : ({tensor_type((2, 2), _U32)}) -> {aval_type(key_aval)}")
    return [new, bits]


@register(rng.rng_uniform_p)
def _rng_uniform(ctx, a, b, *, shape):
    fb = ctx.fb
    out = ctx.avals_out[0]
    dims = fb.const(np.asarray(shape, np.int64), np.int64, (len(shape),))
    scalar = tensor_type((), out.dtype)
    return fb.emit(
        f"stablehlo.rng {a}, {b}, {dims}, distribution = UNIFORM : ({scalar}, {scalar}, "
        f"{tensor_type((len(shape),), np.int64)}) -> {aval_type(out)}"
    )
