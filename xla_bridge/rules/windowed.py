"""Lowering rules of the windowed reductions (primitives/windowed.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and ``xla_bridge.emitter``.

- ``reduce_window_sum/max/min`` and the generic ``reduce_window`` are ``stablehlo.reduce_window``
  with the monoid (or the reducer's jaxpr) as its region, starting from the identity.
- ``select_and_gather_add`` is a variadic ``reduce_window`` over (operand, tangent) pairs whose
  reducer keeps the pair with the selected operand (JAX's lowering on CPU).
- ``select_and_scatter_add`` of a small window is unrolled over the window's offsets into slices,
  selects and pads that XLA fuses (NOTE: [unrolled select and scatter]); a larger one is
  ``stablehlo.select_and_scatter`` on the operand padded with the
  selection's identity (the padding is applied explicitly, as JAX does on CPU), cropped back with a
  negative pad. XLA's select_and_scatter has no window dilation, so a dilated window lowers to a
  variadic ``reduce_window`` finding each window's selected flat index (ties: the smaller index)
  and a scatter-add of the source there (NOTE: [max pooling derivatives]).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import windowed as wd
from funcgrad.xla_bridge.emitter import (
    aval_type,
    i64_array,
    ints,
    lower_closed,
    register,
    slice_attrs,
    tensor_type,
    xla_dtype,
)

# NOTE: [unrolled select and scatter]
# XLA's CPU select_and_scatter is a scalar loop over windows with a scatter inside: 17 ms for the
# 2x2 max-pool derivative of a (128, 14, 14, 16) activation (the DP-SGD CNN), a third of that
# model's batch gradient. A small window (at most _MAX_UNROLLED_WINDOW elements) is unrolled
# instead: one strided slice of the padded operand per window offset, the selection scanned over
# the offsets in window order with XLA's rule (the running choice stays while
# ``select(choice, candidate)`` holds, so ties and NaNs pick what select_and_scatter picks), and
# each offset's share of the source placed back by an interior-padded ``pad``; XLA fuses it all
# into one elementwise loop.
_MAX_UNROLLED_WINDOW = 32


def _padding_attr(padding) -> str:
    rows = ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding)
    return f"dense<[{rows}]> : tensor<{len(padding)}x2xi64>"


def _window_attrs(window_dimensions, window_strides, padding, base_dilation, window_dilation) -> str:
    attrs = [
        f"window_dimensions = {i64_array(window_dimensions)}",
        f"window_strides = {i64_array(window_strides)}",
    ]
    if any(d != 1 for d in base_dilation):
        attrs.append(f"base_dilations = {i64_array(base_dilation)}")
    if any(d != 1 for d in window_dilation):
        attrs.append(f"window_dilations = {i64_array(window_dilation)}")
    if any(p != (0, 0) for p in padding):
        attrs.append(f"padding = {_padding_attr(padding)}")
    return ", ".join(attrs)


def _reduce_window(fb, operands, inits, dtypes, in_shape, out_shape, body, params) -> list[str]:
    """Emit a (variadic) ``stablehlo.reduce_window``; ``body(r, accs, xs) -> results`` fills the
    region with builder ``r``."""
    r = fb.region()
    scalars = [tensor_type((), d) for d in dtypes]
    accs = [r.fresh() for _ in dtypes]
    xs = [r.fresh() for _ in dtypes]
    results = body(r, accs, xs)
    r.raw(f'"stablehlo.return"({", ".join(results)}) : ({", ".join(scalars)}) -> ()')
    block = ", ".join(f"{a}: {t}" for a, t in zip([*accs, *xs], [*scalars, *scalars]))
    in_types = [tensor_type(in_shape, d) for d in dtypes] + scalars
    out_types = [tensor_type(out_shape, d) for d in dtypes]
    head = f'"stablehlo.reduce_window"({", ".join([*operands, *inits])}) ({{\n{fb.indent}  ^bb0({block}):\n'
    outs = "(" + ", ".join(out_types) + ")" if len(out_types) > 1 else out_types[0]
    tail = f"\n{fb.indent}}}) {{{_window_attrs(**params)}}} : ({', '.join(in_types)}) -> {outs}"
    res = fb.emit(head + "\n".join(r.lines) + tail, nres=len(dtypes))
    return res if isinstance(res, list) else [res]


def _monoid(op, identity):
    def rule(ctx, x, **params):
        a, out = ctx.avals_in[0], ctx.avals_out[0]
        dtype = xla_dtype(a.dtype)
        init = ctx.fb.const(identity(dtype), dtype)
        t = tensor_type((), dtype)

        def body(r, accs, xs):
            return [r.emit(f"{op} {accs[0]}, {xs[0]} : {t}")]

        return _reduce_window(ctx.fb, [x], [init], [dtype], a.shape, out.shape, body, params)[0]

    return rule


register(wd.reduce_window_sum_p)(_monoid("stablehlo.add", lambda dtype: 0))
register(wd.reduce_window_max_p)(_monoid("stablehlo.maximum", lambda dtype: wd._identity("ge", dtype)))
register(wd.reduce_window_min_p)(_monoid("stablehlo.minimum", lambda dtype: wd._identity("le", dtype)))


@register(wd.reduce_window_p)
def _reduce_window_generic(ctx, *args, jaxpr, **params):
    n = len(args) // 2
    dtypes = [xla_dtype(a.dtype) for a in ctx.avals_in[:n]]

    def body(r, accs, xs):
        return lower_closed(r, jaxpr, [*accs, *xs])

    shape_in, shape_out = ctx.avals_in[0].shape, ctx.avals_out[0].shape
    return _reduce_window(ctx.fb, args[:n], args[n:], dtypes, shape_in, shape_out, body, params)


def _selecting_body(select, dtype, extra_dtype, tie_on_second=False):
    """Reducer over (operand, extra) pairs keeping the pair whose operand ``select`` picks."""
    direction = "GE" if select == "ge" else "LE"
    sb = tensor_type((), np.bool_)

    def body(r, accs, xs):
        (ax, ae), (bx, be) = accs, xs
        pick = r.compare(direction, ax, bx, dtype, ())
        if tie_on_second:
            # Equal operands: keep the smaller index, so the choice is the first in window order.
            strict = r.compare("GT" if select == "ge" else "LT", ax, bx, dtype, ())
            equal = r.compare("EQ", ax, bx, dtype, ())
            first = r.compare("LT", ae, be, extra_dtype, ())
            tie = r.emit(f"stablehlo.and {equal}, {first} : {sb}")
            pick = r.emit(f"stablehlo.or {strict}, {tie} : {sb}")
        vx = r.emit(f"stablehlo.select {pick}, {ax}, {bx} : {sb}, {tensor_type((), dtype)}")
        ve = r.emit(f"stablehlo.select {pick}, {ae}, {be} : {sb}, {tensor_type((), extra_dtype)}")
        return [vx, ve]

    return body


@register(wd.select_and_gather_add_p)
def _select_and_gather_add(ctx, t, x, *, select, **params):
    fb = ctx.fb
    a, out = ctx.avals_in[1], ctx.avals_out[0]
    dtype = xla_dtype(a.dtype)
    inits = [fb.const(wd._identity(select, dtype), dtype), fb.const(0, dtype)]
    body = _selecting_body(select, dtype, dtype)
    return _reduce_window(fb, [x, t], inits, [dtype, dtype], a.shape, out.shape, body, params)[1]


def _pad(fb, x, fill, shape, dtype, lows, highs):
    out_shape = [n + lo + hi for n, lo, hi in zip(shape, lows, highs)]
    zeros = [0] * len(shape)
    text = (
        f"stablehlo.pad {x}, {fill}, low = {ints(lows)}, high = {ints(highs)}, interior = {ints(zeros)} : "
        f"({tensor_type(shape, dtype)}, {tensor_type((), dtype)}) -> {tensor_type(out_shape, dtype)}"
    )
    return fb.emit(text), out_shape


@register(wd.select_and_scatter_add_p)
def _select_and_scatter_add(
    ctx, s, x, *, select, window_dimensions, window_strides, padding, window_dilation
):
    fb = ctx.fb
    sa, xa = ctx.avals_in
    dtype = xla_dtype(xa.dtype)
    lows, highs = [lo for lo, _ in padding], [hi for _, hi in padding]
    identity = fb.const(wd._identity(select, dtype), dtype)
    xp, padded = _pad(fb, x, identity, xa.shape, dtype, lows, highs)
    zero = fb.const(0, dtype)
    st = tensor_type((), dtype)
    if int(np.prod(window_dimensions, dtype=np.int64)) <= _MAX_UNROLLED_WINDOW:
        scattered = _scatter_by_offsets(
            fb, xp, s, sa, padded, dtype, select, window_dimensions, window_strides, window_dilation
        )
    elif all(d == 1 for d in window_dilation):
        sb = tensor_type((), np.bool_)
        p, q, u, v = fb.fresh(), fb.fresh(), fb.fresh(), fb.fresh()
        r1 = fb.region()
        r1.raw(f'"stablehlo.return"({r1.compare(select.upper(), p, q, dtype, ())}) : ({sb}) -> ()')
        r2 = fb.region()
        r2.raw(f'"stablehlo.return"({r2.emit(f"stablehlo.add {u}, {v} : {st}")}) : ({st}) -> ()')
        pt, srct = tensor_type(padded, dtype), aval_type(sa)
        attrs = f"window_dimensions = {i64_array(window_dimensions)}, "
        attrs += f"window_strides = {i64_array(window_strides)}"
        head = f'"stablehlo.select_and_scatter"({xp}, {s}, {zero}) ({{\n'
        scattered = fb.emit(
            head
            + f"{fb.indent}  ^bb0({p}: {st}, {q}: {st}):\n"
            + "\n".join(r1.lines)
            + f"\n{fb.indent}}}, {{\n{fb.indent}  ^bb0({u}: {st}, {v}: {st}):\n"
            + "\n".join(r2.lines)
            + f"\n{fb.indent}}}) {{{attrs}}} : ({pt}, {srct}, {st}) -> {pt}"
        )
    else:
        scattered = _scatter_by_index(
            fb, xp, s, sa, padded, dtype, select, window_dimensions, window_strides, window_dilation
        )
    out, _ = _pad(fb, scattered, zero, padded, dtype, [-lo for lo in lows], [-hi for hi in highs])
    return out


def _scatter_by_offsets(
    fb, xp, s, sa, padded, dtype, select, window_dimensions, window_strides, window_dilation
):
    """select_and_scatter_add unrolled over the window's offsets (NOTE: [unrolled select and
    scatter]); returns the result in the padded operand's shape."""
    out_shape = tuple(sa.shape)
    t_out, t_pad = tensor_type(out_shape, dtype), tensor_type(padded, dtype)
    i32 = np.dtype(np.int32)
    t_idx, t_pred = tensor_type(out_shape, i32), tensor_type(out_shape, np.bool_)
    zero = fb.const(0, dtype)
    offsets = list(np.ndindex(*window_dimensions))
    starts = [[int(k) * int(d) for k, d in zip(off, window_dilation)] for off in offsets]
    views = []
    for lo in starts:
        limits = [a + (n - 1) * st + 1 for a, n, st in zip(lo, out_shape, window_strides)]
        views.append(
            fb.generic("stablehlo.slice", [xp], [t_pad], [t_out], slice_attrs(lo, limits, window_strides))
        )
    chosen, index = views[0], fb.const(0, i32, out_shape)
    for k, view in enumerate(views[1:], start=1):
        keep = fb.compare(select.upper(), chosen, view, dtype, out_shape)
        chosen = fb.emit(f"stablehlo.select {keep}, {chosen}, {view} : {t_pred}, {t_out}")
        index = fb.emit(
            f"stablehlo.select {keep}, {index}, {fb.const(k, i32, out_shape)} : {t_pred}, {t_idx}"
        )
    zeros = fb.const(0, dtype, out_shape)
    total = None
    for k, lo in enumerate(starts):
        mine = fb.compare("EQ", index, fb.const(k, i32, out_shape), i32, out_shape)
        share = fb.emit(f"stablehlo.select {mine}, {s}, {zeros} : {t_pred}, {t_out}")
        highs = [p - (a + (n - 1) * st + 1) for p, a, n, st in zip(padded, lo, out_shape, window_strides)]
        interior = [st - 1 for st in window_strides]
        placed = fb.emit(
            f"stablehlo.pad {share}, {zero}, low = {ints(lo)}, high = {ints(highs)}, "
            f"interior = {ints(interior)} : ({t_out}, {tensor_type((), dtype)}) -> {t_pad}"
        )
        total = placed if total is None else fb.emit(f"stablehlo.add {total}, {placed} : {t_pad}")
    return total


def _scatter_by_index(
    fb, xp, s, sa, padded, dtype, select, window_dimensions, window_strides, window_dilation
):
    """select_and_scatter_add with window dilation: the selected flat index of each window by a
    variadic reduce_window, then a scatter-add of the source at those indices."""
    i64 = np.dtype(np.int64)
    size = int(np.prod(padded, dtype=np.int64))
    flat_t = tensor_type((size,), i64)
    iota = fb.emit(f"stablehlo.iota dim = 0 : {flat_t}")
    iota = fb.emit(f"stablehlo.reshape {iota} : ({flat_t}) -> {tensor_type(padded, i64)}")
    ones = (1,) * len(padded)
    params = dict(
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=((0, 0),) * len(padded),
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    inits = [fb.const(wd._identity(select, dtype), dtype), fb.const(size, i64)]
    body = _selecting_body(select, dtype, i64, tie_on_second=True)
    _, idx = _reduce_window(fb, [xp, iota], inits, [dtype, i64], padded, sa.shape, body, params)
    m = int(np.prod(sa.shape, dtype=np.int64))
    idx = fb.emit(f"stablehlo.reshape {idx} : ({tensor_type(sa.shape, i64)}) -> {tensor_type((m, 1), i64)}")
    upd = fb.emit(f"stablehlo.reshape {s} : ({aval_type(sa)}) -> {tensor_type((m,), dtype)}")
    zeros = fb.emit(
        f"stablehlo.broadcast_in_dim {fb.const(0, dtype)}, dims = [] : ({tensor_type((), dtype)}) -> "
        f"{tensor_type((size,), dtype)}"
    )
    st = tensor_type((), dtype)
    u, v = fb.fresh(), fb.fresh()
    r = fb.region()
    r.raw(f'"stablehlo.return"({r.emit(f"stablehlo.add {u}, {v} : {st}")}) : ({st}) -> ()')
    dn = (
        "#stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], "
        "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>"
    )
    ft = tensor_type((size,), dtype)
    out = fb.emit(
        f'"stablehlo.scatter"({zeros}, {idx}, {upd}) ({{\n{fb.indent}  ^bb0({u}: {st}, {v}: {st}):\n'
        + "\n".join(r.lines)
        + f"\n{fb.indent}}}) {{scatter_dimension_numbers = {dn}, indices_are_sorted = false, "
        f"unique_indices = false}} : ({ft}, {tensor_type((m, 1), i64)}, {tensor_type((m,), dtype)}) -> {ft}"
    )
    return fb.emit(f"stablehlo.reshape {out} : ({ft}) -> {tensor_type(padded, dtype)}")
