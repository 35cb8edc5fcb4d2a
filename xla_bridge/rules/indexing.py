"""Lowering rules of the indexing family: the structural ops of primitives/structure.py (iota,
concatenate, pad, rev, slice), bitcast_convert_type, dynamic_slice, dynamic_update_slice, gather
and the scatters (primitives/indexing.py, gather.py, scatter.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.lowering``.

Out-of-bounds behaviour follows NOTE: [gather and scatter modes] (primitives/gather.py): XLA's
native gather clamps window starts (CLIP and PROMISE_IN_BOUNDS lower as is), FILL_OR_DROP gathers
replace the windows of out-of-bounds indices by ``fill_value`` with a select on an in-bounds mask;
XLA's native scatter drops out-of-bounds windows (FILL_OR_DROP and PROMISE_IN_BOUNDS), and CLIP
scatters clamp the indices first. ``dynamic_slice``/``dynamic_update_slice`` clamp natively, like
their impls.
"""

from __future__ import annotations

import numpy as np

from primitives import bitcast, gather, indexing, scatter, structure
from primitives.gather import GatherScatterMode, _window_sizes, default_fill_value
from xla_bridge.lowering import aval_type, i64_array, register, slice_attrs, tensor_type, xla_dtype


def _ints(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


@register(structure.iota_p)
def _iota(ctx, *, dtype, shape, dimension):
    return ctx.fb.emit(f"stablehlo.iota dim = {int(dimension)} : {tensor_type(shape, dtype)}")


@register(structure.concatenate_p)
def _concatenate(ctx, *xs, dimension):
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic(
        "stablehlo.concatenate",
        xs,
        types,
        [aval_type(ctx.avals_out[0])],
        f"dimension = {int(dimension)} : i64",
    )


@register(structure.pad_p)
def _pad(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    attrs = (
        f"edge_padding_high = {i64_array(hi)}, edge_padding_low = {i64_array(lo)}, "
        f"interior_padding = {i64_array(interior)}"
    )
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic("stablehlo.pad", [x, padding_value], types, [aval_type(ctx.avals_out[0])], attrs)


@register(structure.rev_p)
def _rev(ctx, x, *, dimensions):
    if not dimensions:
        return x
    t = aval_type(ctx.avals_in[0])
    return ctx.fb.generic("stablehlo.reverse", [x], [t], [t], f"dimensions = {i64_array(dimensions)}")


@register(structure.slice_p)
def _slice(ctx, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    attrs = slice_attrs(start_indices, limit_indices, strides)
    return ctx.fb.generic(
        "stablehlo.slice", [x], [aval_type(ctx.avals_in[0])], [aval_type(ctx.avals_out[0])], attrs
    )


@register(bitcast.bitcast_convert_type_p)
def _bitcast_convert_type(ctx, x, *, new_dtype):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    if xla_dtype(a.dtype) == xla_dtype(out.dtype) and a.shape == out.shape:
        return x
    return ctx.fb.emit(f"stablehlo.bitcast_convert {x} : ({aval_type(a)}) -> {aval_type(out)}")


@register(indexing.dynamic_slice_p)
def _dynamic_slice(ctx, x, *starts, slice_sizes):
    if not starts:
        return x
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic(
        "stablehlo.dynamic_slice",
        [x, *starts],
        types,
        [aval_type(ctx.avals_out[0])],
        f"slice_sizes = {i64_array(slice_sizes)}",
    )


@register(indexing.dynamic_update_slice_p)
def _dynamic_update_slice(ctx, x, update, *starts):
    if not starts:
        return update
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic(
        "stablehlo.dynamic_update_slice", [x, update, *starts], types, [aval_type(ctx.avals_out[0])]
    )


# ----------------------------------------------------------------------------------------------
# gather


def _gather_attr(dn, index_vector_dim, slice_sizes, sorted_):
    parts = [
        f"offset_dims = {_ints(dn.offset_dims)}",
        f"collapsed_slice_dims = {_ints(dn.collapsed_slice_dims)}",
    ]
    if dn.operand_batching_dims:
        parts.append(f"operand_batching_dims = {_ints(dn.operand_batching_dims)}")
        parts.append(f"start_indices_batching_dims = {_ints(dn.start_indices_batching_dims)}")
    parts.append(f"start_index_map = {_ints(dn.start_index_map)}")
    parts.append(f"index_vector_dim = {int(index_vector_dim)}")
    return (
        f"dimension_numbers = #stablehlo.gather<{', '.join(parts)}>, "
        f"indices_are_sorted = {'true' if sorted_ else 'false'}, slice_sizes = {i64_array(slice_sizes)}"
    )


def _in_bounds(fb, idx, idx_aval, index_map, operand_shape, sizes):
    """Boolean mask (indices' batch shape) of windows fully inside the operand."""
    idt = xla_dtype(idx_aval.dtype)
    batch = tuple(idx_aval.shape[:-1])
    mask = None
    for k, d in enumerate(index_map):
        comp = fb.generic(
            "stablehlo.slice",
            [idx],
            [aval_type(idx_aval)],
            [tensor_type((*batch, 1), idt)],
            slice_attrs((*[0] * len(batch), k), (*batch, k + 1), [1] * (len(batch) + 1)),
        )
        comp = fb.emit(
            f"stablehlo.reshape {comp} : ({tensor_type((*batch, 1), idt)}) -> {tensor_type(batch, idt)}"
        )
        upper = fb.const(operand_shape[d] - sizes[d], idt, batch)
        ok = fb.compare("LE", comp, upper, idt, batch)
        if idt.kind == "i":
            ok2 = fb.compare("GE", comp, fb.const(0, idt, batch), idt, batch)
            ok = fb.binary("stablehlo.and", ok, ok2, _BoolAval(batch))
        mask = ok if mask is None else fb.binary("stablehlo.and", mask, ok, _BoolAval(batch))
    if mask is None:
        mask = fb.const(True, np.bool_, batch)
    return mask


class _BoolAval:
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.dtype = np.dtype(np.bool_)


def _clamp_indices(fb, idx, idx_aval, index_map, operand_shape, sizes):
    """Indices with each component clamped to [0, dim - window size] (CLIP mode)."""
    idt = xla_dtype(idx_aval.dtype)
    shape = tuple(idx_aval.shape)
    lo = fb.const(0, idt, shape)
    his = np.array([operand_shape[d] - sizes[d] for d in index_map], dtype=idt)
    hi = fb.const(np.broadcast_to(his, shape), idt, shape)
    t = aval_type(idx_aval)
    return fb.emit(f"stablehlo.clamp {lo}, {idx}, {hi} : ({t}, {t}, {t}) -> {t}")


@register(gather.gather_p)
def _gather(ctx, x, idx, *, dimension_numbers, slice_sizes, mode, fill_value, indices_are_sorted=False, **_):
    fb = ctx.fb
    xa, ia = ctx.avals_in
    out = ctx.avals_out[0]
    dn = dimension_numbers
    attrs = _gather_attr(dn, ia.ndim - 1, slice_sizes, indices_are_sorted)
    y = fb.generic("stablehlo.gather", [x, idx], [aval_type(xa), aval_type(ia)], [aval_type(out)], attrs)
    if mode is GatherScatterMode.FILL_OR_DROP:
        mask = _in_bounds(fb, idx, ia, dn.start_index_map, xa.shape, slice_sizes)
        batch_dims = [d for d in range(out.ndim) if d not in dn.offset_dims]
        mask = fb.broadcast(mask, _BoolAval(ia.shape[:-1]), out.shape, batch_dims)
        fill = default_fill_value(xa.dtype) if fill_value is None else fill_value
        filler = fb.const(np.asarray(fill).astype(xla_dtype(out.dtype)), out.dtype, out.shape)
        y = fb.select(mask, y, filler, out.shape, out)
    return y


# ----------------------------------------------------------------------------------------------
# scatters

_COMBINE = {
    gather.scatter_add_p: "stablehlo.add",
    scatter.scatter_p: None,
    scatter.scatter_mul_p: "stablehlo.multiply",
    scatter.scatter_min_p: "stablehlo.minimum",
    scatter.scatter_max_p: "stablehlo.maximum",
}


def _scatter_rule(op):
    def rule(
        ctx, x, idx, upd, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False, **_
    ):
        fb = ctx.fb
        xa, ia, ua = ctx.avals_in
        dn = dimension_numbers
        if mode is GatherScatterMode.CLIP:
            sizes = _window_sizes(xa.ndim, ua.shape, dn)
            idx = _clamp_indices(fb, idx, ia, dn.scatter_dims_to_operand_dims, xa.shape, sizes)
        parts = [
            f"update_window_dims = {_ints(dn.update_window_dims)}",
            f"inserted_window_dims = {_ints(dn.inserted_window_dims)}",
        ]
        if dn.operand_batching_dims:
            parts.append(f"input_batching_dims = {_ints(dn.operand_batching_dims)}")
            parts.append(f"scatter_indices_batching_dims = {_ints(dn.scatter_indices_batching_dims)}")
        parts.append(f"scatter_dims_to_operand_dims = {_ints(dn.scatter_dims_to_operand_dims)}")
        parts.append(f"index_vector_dim = {ia.ndim - 1}")
        dt = xla_dtype(xa.dtype)
        st = tensor_type((), dt)
        r = fb.region()
        a, b = r.fresh(), r.fresh()
        combine = op
        if op == "stablehlo.add" and dt == np.bool_:
            combine = "stablehlo.or"
        elif op == "stablehlo.multiply" and dt == np.bool_:
            combine = "stablehlo.and"
        res = b if combine is None else r.emit(f"{combine} {a}, {b} : {st}")
        r.raw(f'"stablehlo.return"({res}) : ({st}) -> ()')
        body = "\n".join(r.lines)
        attrs = (
            f"indices_are_sorted = {'true' if indices_are_sorted else 'false'}, "
            f"scatter_dimension_numbers = #stablehlo.scatter<{', '.join(parts)}>, "
            f"unique_indices = {'true' if unique_indices else 'false'}"
        )
        ta, ti, tu = aval_type(xa), aval_type(ia), aval_type(ua)
        return fb.emit(
            f'"stablehlo.scatter"({x}, {idx}, {upd}) ({{\n{fb.indent}  ^bb0({a}: {st}, {b}: {st}):\n{body}\n'
            f"{fb.indent}}}) {{{attrs}}} : ({ta}, {ti}, {tu}) -> {ta}"
        )

    return rule


for _p, _op in _COMBINE.items():
    register(_p)(_scatter_rule(_op))
