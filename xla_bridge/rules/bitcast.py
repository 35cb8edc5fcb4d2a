"""Lowering rules of the bitcast family (primitives/bitcast.py): ``bitcast_convert_type`` becomes
``stablehlo.bitcast_convert``, ``reduce_precision`` ``stablehlo.reduce_precision``.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.bitcast import bitcast_convert_type_p, reduce_precision_p
from funcgrad.xla_bridge.emitter import aval_type, register, xla_dtype


@register(bitcast_convert_type_p)
def _bitcast_convert_type(ctx, x, *, new_dtype):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    if xla_dtype(a.dtype) == xla_dtype(out.dtype) and a.shape == out.shape:
        return x
    return ctx.fb.emit(f"stablehlo.bitcast_convert {x} : ({aval_type(a)}) -> {aval_type(out)}")


@register(reduce_precision_p)
def _reduce_precision(ctx, x, *, exponent_bits, mantissa_bits):
    t = aval_type(ctx.avals_in[0])
    return ctx.fb.emit(f"stablehlo.reduce_precision {x}, format = e{exponent_bits}m{mantissa_bits} : {t}")
