"""Lowering rules of the gather family (primitives/gather.py): ``gather`` and ``scatter-add``, and
the scatter lowering the other scatters share (rules/scatter.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``.

Out-of-bounds behaviour follows NOTE: [gather and scatter modes] (primitives/gather.py): XLA's
native gather clamps window starts (CLIP and PROMISE_IN_BOUNDS lower as is), FILL_OR_DROP gathers
replace the windows of out-of-bounds indices by ``fill_value`` with a select on an in-bounds mask;
XLA's native scatter drops out-of-bounds windows (FILL_OR_DROP and PROMISE_IN_BOUNDS), and CLIP
scatters clamp the indices first.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.gather import (
    GatherScatterMode,
    _window_sizes,
    default_fill_value,
    gather_p,
    scatter_add_p,
)
from funcgrad.xla_bridge.emitter import (
    aval_type,
    i64_array,
    ints,
    register,
    slice_attrs,
    tensor_type,
    xla_dtype,
)
from funcgrad.xla_bridge.rules._complex_order import complex_pick

from funcgrad.kernel.ir import ShapedArray


def _gather_attr(dn, index_vector_dim, slice_sizes, sorted_):
    parts = [
        f"offset_dims = {ints(dn.offset_dims)}",
        f"collapsed_slice_dims = {ints(dn.collapsed_slice_dims)}",
    ]
    if dn.operand_batching_dims:
        parts.append(f"operand_batching_dims = {ints(dn.operand_batching_dims)}")
        parts.append(f"start_indices_batching_dims = {ints(dn.start_indices_batching_dims)}")
    parts.append(f"start_index_map = {ints(dn.start_index_map)}")
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


@register(gather_p)
def _gather(ctx, x, idx, *, dimension_numbers, slice_sizes, mode, fill_value, indices_are_sorted=False, **_):
    fb = ctx.fb
    xa, ia = ctx.avals_in
    out = ctx.avals_out[0]
    dn = dimension_numbers
    if 0 in out.shape:
        # (JAX lowers an empty result as a constant: no indices allow slice sizes past the operand's
        # dimensions, which XLA's gather would refuse)
        return fb.const(np.zeros((), xla_dtype(out.dtype)), out.dtype, out.shape)
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


def scatter_rule(op):
    """The lowering of a scatter combining old and new values with ``op`` (``None``: replace);
    shared with rules/scatter.py (the scatter dimension numbers are declared in
    primitives/gather.py, as ``scatter_add``)."""

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
            f"update_window_dims = {ints(dn.update_window_dims)}",
            f"inserted_window_dims = {ints(dn.inserted_window_dims)}",
        ]
        if dn.operand_batching_dims:
            parts.append(f"input_batching_dims = {ints(dn.operand_batching_dims)}")
            parts.append(f"scatter_indices_batching_dims = {ints(dn.scatter_indices_batching_dims)}")
        parts.append(f"scatter_dims_to_operand_dims = {ints(dn.scatter_dims_to_operand_dims)}")
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
        if dt.kind == "c" and combine in ("stablehlo.maximum", "stablehlo.minimum"):
            # Lexicographic order of complex values (NumPy's and JAX's), from the real comparisons.
            direction = "GT" if combine == "stablehlo.maximum" else "LT"
            res = complex_pick(r, direction, a, b, ShapedArray((), dt))
        else:
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


register(scatter_add_p)(scatter_rule("stablehlo.add"))
