"""Lowering rules of ``stack``, ``unstack`` and ``split`` (primitives/stacking.py), as JAX's: each
operand given the new unit dimension and one concatenation; a unit slice and a reshape per result;
a slice per piece.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives import stacking as sk
from funcgrad.xla_bridge.emitter import aval_type, register, slice_attrs, typed_constraint, widen_sub_byte


def _typed(ctx, x, aval):
    # The unit pieces typed as the results are (JAX's lower_with_sharding_in_types): without a
    # constraint XLA's partitioner could lay an unreduced piece out replicated (a partial sum
    # summed twice).
    spmd = ctx.fb.module.spmd
    if aval._sharding is None or spmd is None or spmd.manual:
        return x
    return typed_constraint(ctx.fb, x, aval)


@register(sk.stack_p)
@widen_sub_byte  # (as concatenate's: XLA's CPU backend aborts on a concatenation of 2-bit integers)
def _stack(ctx, *xs, axis):
    out = ctx.avals_out[0]
    unit = out.update(
        shape=tuple(1 if d == axis else s for d, s in enumerate(out.shape)), sharding=out._sharding
    )
    pieces = [
        _typed(ctx, ctx.fb.emit(f"stablehlo.reshape {x} : ({aval_type(a)}) -> {aval_type(unit)}"), unit)
        for x, a in zip(xs, ctx.avals_in)
    ]
    if len(pieces) == 1:
        return pieces[0]
    return ctx.fb.generic(
        "stablehlo.concatenate",
        pieces,
        [aval_type(unit)] * len(pieces),
        [aval_type(out)],
        f"dimension = {int(axis)} : i64",
    )


@register(sk.unstack_p)
def _unstack(ctx, x, *, axis):
    a = ctx.avals_in[0]
    unit = a.update(shape=tuple(1 if d == axis else s for d, s in enumerate(a.shape)), sharding=a._sharding)
    outs = []
    for i, out in enumerate(ctx.avals_out):
        starts = tuple(i if d == axis else 0 for d in range(a.ndim))
        limits = tuple(i + 1 if d == axis else s for d, s in enumerate(a.shape))
        attrs = slice_attrs(starts, limits, (1,) * a.ndim)
        piece = _typed(
            ctx, ctx.fb.generic("stablehlo.slice", [x], [aval_type(a)], [aval_type(unit)], attrs), unit
        )
        outs.append(ctx.fb.emit(f"stablehlo.reshape {piece} : ({aval_type(unit)}) -> {aval_type(out)}"))
    return outs


@register(sk.split_p)
def _split(ctx, x, *, sizes, axis):
    a = ctx.avals_in[0]
    outs, start = [], 0
    for n, out in zip(sizes, ctx.avals_out):
        starts = tuple(start if d == axis else 0 for d in range(a.ndim))
        limits = tuple(start + n if d == axis else s for d, s in enumerate(a.shape))
        attrs = slice_attrs(starts, limits, (1,) * a.ndim)
        outs.append(
            _typed(ctx, ctx.fb.generic("stablehlo.slice", [x], [aval_type(a)], [aval_type(out)], attrs), out)
        )
        start += n
    return outs
