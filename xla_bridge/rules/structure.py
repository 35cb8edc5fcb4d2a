"""Lowering rules of the shape family (primitives/structure.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.lowering``.
"""

from __future__ import annotations

from primitives import structure as st
from xla_bridge.lowering import aval_type, register


@register(st.broadcast_in_dim_p)
def _broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions):
    return ctx.fb.broadcast(x, ctx.avals_in[0], shape, broadcast_dimensions)


def _reshape_like(ctx, x, **_):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    if tuple(a.shape) == tuple(out.shape):
        return x
    return ctx.fb.emit(f"stablehlo.reshape {x} : ({aval_type(a)}) -> {aval_type(out)}")


register(st.reshape_p)(_reshape_like)
register(st.squeeze_p)(_reshape_like)


@register(st.transpose_p)
def _transpose(ctx, x, *, permutation):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    dims = ", ".join(str(int(p)) for p in permutation)
    return ctx.fb.emit(f"stablehlo.transpose {x}, dims = [{dims}] : ({aval_type(a)}) -> {aval_type(out)}")
