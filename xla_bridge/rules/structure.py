"""Lowering rules of the structure family (primitives/structure.py): broadcast_in_dim, reshape,
squeeze, transpose, iota, concatenate, pad, rev and slice.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives import structure as st
from funcgrad.xla_bridge.emitter import (
    aval_type,
    i64_array,
    register,
    slice_attrs,
    tensor_type,
    widen_sub_byte,
)
from funcgrad.xla_bridge.rules import _folded_transposes as folded_transposes
from funcgrad.xla_bridge.rules import _pad_sums as pad_sums


@register(st.broadcast_in_dim_p)
def _broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions):
    return ctx.fb.broadcast(x, ctx.avals_in[0], shape, broadcast_dimensions)


def _reshape_like(ctx, x, **_):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    if tuple(a.shape) == tuple(out.shape):
        return x
    y = ctx.fb.emit(f"stablehlo.reshape {x} : ({aval_type(a)}) -> {aval_type(out)}")
    folded_transposes.record_reshape(ctx, y, x)  # NOTE: [transposes folded into batched dots]
    return y


register(st.reshape_p)(_reshape_like)
register(st.squeeze_p)(_reshape_like)


@register(st.transpose_p)
def _transpose(ctx, x, *, permutation):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    dims = ", ".join(str(int(p)) for p in permutation)
    y = ctx.fb.emit(f"stablehlo.transpose {x}, dims = [{dims}] : ({aval_type(a)}) -> {aval_type(out)}")
    folded_transposes.record_transpose(ctx, y, x, permutation)  # NOTE: [transposes folded into batched dots]
    return y


@register(st.iota_p)
def _iota(ctx, *, dtype, shape, dimension):
    return ctx.fb.emit(f"stablehlo.iota dim = {int(dimension)} : {tensor_type(shape, dtype)}")


@register(st.concatenate_p)
@widen_sub_byte  # XLA's CPU backend aborts the process on a concatenation of 2-bit integers
def _concatenate(ctx, *xs, dimension):
    avals = ctx.avals_in
    # Operands with no elements contribute none: left out. XLA's CPU compiler aborts the process
    # ('SmallVector unable to grow') on a concatenation of a size-0 piece in a conditional's branch
    # whose result is sliced to nothing later (np.roll of a 1-element array in a cond under jacfwd;
    # the lax-parameter fuzzer's seed 18014).
    kept = [(x, a) for x, a in zip(xs, avals) if a.shape[dimension] != 0] or [(xs[0], avals[0])]
    if len(kept) == 1 and kept[0][1].shape == ctx.avals_out[0].shape:
        return kept[0][0]
    return ctx.fb.generic(
        "stablehlo.concatenate",
        [x for x, _ in kept],
        [aval_type(a) for _, a in kept],
        [aval_type(ctx.avals_out[0])],
        f"dimension = {int(dimension)} : i64",
    )


@register(st.pad_p)
def _pad(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    attrs = (
        f"edge_padding_high = {i64_array(hi)}, edge_padding_low = {i64_array(lo)}, "
        f"interior_padding = {i64_array(interior)}"
    )
    types = [aval_type(a) for a in ctx.avals_in]
    y = ctx.fb.generic("stablehlo.pad", [x, padding_value], types, [aval_type(ctx.avals_out[0])], attrs)
    pad_sums.record_pad(ctx, y, x, padding_value, padding_config)  # NOTE: [sums of zero pads]
    return y


@register(st.rev_p)
def _rev(ctx, x, *, dimensions):
    if not dimensions:
        return x
    t = aval_type(ctx.avals_in[0])
    return ctx.fb.generic("stablehlo.reverse", [x], [t], [t], f"dimensions = {i64_array(dimensions)}")


@register(st.slice_p)
def _slice(ctx, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    attrs = slice_attrs(start_indices, limit_indices, strides)
    return ctx.fb.generic(
        "stablehlo.slice", [x], [aval_type(ctx.avals_in[0])], [aval_type(ctx.avals_out[0])], attrs
    )
