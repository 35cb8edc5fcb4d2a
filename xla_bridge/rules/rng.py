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


@register(rng.iota_2x32_shape_p)
def _iota_2x32_shape(ctx, *, shape):
    # (a uint64 iota per axis times its stride, summed; the high and low words, as JAX lowers it)
    fb = ctx.fb
    t64, t32 = tensor_type(shape, _U64), tensor_type(shape, _U32)

    def splat(value):
        c = fb.const(value, _U64)
        return fb.emit(f"stablehlo.broadcast_in_dim {c}, dims = [] : ({tensor_type((), _U64)}) -> {t64}")

    total = splat(0) if not shape else None  # (a 0-d shape: the one element's index is 0)
    for d in range(len(shape)):
        term = fb.emit(f"stablehlo.iota dim = {d} : {t64}")
        stride = int(np.prod(shape[d + 1 :], dtype=np.uint64))
        if stride != 1:
            term = fb.emit(f"stablehlo.multiply {term}, {splat(stride)} : {t64}")
        total = term if total is None else fb.emit(f"stablehlo.add {total}, {term} : {t64}")
    hi = fb.emit(f"stablehlo.shift_right_logical {total}, {splat(32)} : {t64}")
    return [
        fb.emit(f"stablehlo.convert {hi} : ({t64}) -> {t32}"),
        fb.emit(f"stablehlo.convert {total} : ({t64}) -> {t32}"),
    ]
