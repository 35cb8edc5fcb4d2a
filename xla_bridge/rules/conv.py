"""Lowering rule of conv_general_dilated (primitives/conv.py) to ``stablehlo.convolution``.

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy, ``xla_bridge.emitter`` and
the sibling rule module ``dot`` (the ``precision_config`` spelling).

Every parameter maps one to one onto the op's attributes (explicit padding, both dilations, both
group counts, ``precision_config``; ``preferred_element_type`` is the result type). Complex
convolutions are three real ones (Gauss's product, as JAX lowers them on CPU, where XLA's complex
convolution is a slow loop): ``k1 = (a+b) * c``, ``k2 = a * (d-c)``, ``k3 = b * (c+d)`` for
``(a+ib) * (c+id)``; real part ``k1 - k3``, imaginary ``k1 + k2``.

# NOTE: [convolution as patches]
# XLA's CPU convolution is slow when each group has very few input features: the first layer of
# an image model (one channel: the DP-SGD CNN's 8x8 stride-2 conv at batch 128 took 6-18 ms, as
# patches 1.7-5.6 ms) and the per-example kernel gradients of ``vmap(grad)``, where the examples
# become 128 feature groups of one feature each (8-13 ms for that CNN's first kernel, 3-4 ms as
# patches; all measured side by side in fresh processes on the loaded 2-core machine). Such a
# convolution (real floats, at most _PATCH_MAX_FEATURES input features per group, no batch groups,
# default precision and result type, a bounded patch array) is lowered as im2col instead. The
# padded (and lhs-dilated) input is cut into strided slices, one spatial dimension at a time --
# along each, one slice per kernel offset, or per output position when there are fewer of those
# -- stacked into an (N, C, positions, window) patch array, and contracted with the kernel per
# group by one batched
# ``dot_general``, which XLA runs as a matrix product.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.conv import WINDOW_PARAMS, conv_general_dilated_p
from funcgrad.xla_bridge.emitter import ints, register, slice_attrs, tensor_type, xla_dtype
from funcgrad.xla_bridge.rules.dot import precision_names


def _layout(spec, first: str, second: str) -> str:
    labels = [""] * len(spec)
    labels[spec[0]], labels[spec[1]] = first, second
    for i, d in enumerate(spec[2:]):
        labels[d] = str(i)
    return "[" + ", ".join(labels) + "]"


def _convolution(fb, lhs, rhs, lt, rt, ot, **p):
    window_strides, padding, lhs_dilation, rhs_dilation = (p[k] for k in WINDOW_PARAMS)
    dimension_numbers, precision = p["dimension_numbers"], p.get("precision")
    feature_group_count, batch_group_count = p["feature_group_count"], p["batch_group_count"]
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dims = f"{_layout(lhs_spec, 'b', 'f')}x{_layout(rhs_spec, 'o', 'i')}->{_layout(out_spec, 'b', 'f')}"
    pads = "[" + ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding) + "]"
    window = (
        f", window = {{stride = {ints(window_strides)}, pad = {pads}, lhs_dilate = {ints(lhs_dilation)}, "
        f"rhs_dilate = {ints(rhs_dilation)}}}"
    )
    attrs = (
        f"batch_group_count = {int(batch_group_count)} : i64, "
        f"feature_group_count = {int(feature_group_count)} : i64"
    )
    if precision is not None:
        names = ", ".join(f"#stablehlo<precision {n}>" for n in precision_names(precision))
        attrs += f", precision_config = [{names}]"
    return fb.emit(
        f"stablehlo.convolution({lhs}, {rhs}) dim_numbers = {dims}{window} {{{attrs}}} : ({lt}, {rt}) -> {ot}"
    )


_PATCH_MAX_FEATURES = 4
_PATCH_MAX_SLICES = 256
_PATCH_MAX_ELEMENTS = 1 << 24


def _patch_plan(la, ra, out, p):
    """The sizes of the im2col lowering, or None when the native convolution is the better choice
    (NOTE: [convolution as patches])."""
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    if p["batch_group_count"] != 1 or xla_dtype(la.dtype).kind != "f" or out.dtype != la.dtype:
        return None
    if p.get("precision") is not None:  # kept on the convolution, where XLA reads it
        return None
    if p["feature_group_count"] > 1 and ra.shape[rhs_spec[1]] == 1 and la.dtype.itemsize > 4:
        # NOTE: [depthwise float64 convolutions]: XLA's CPU compiler makes a depthwise one dense
        # (NaN in every group's output where any group's window holds an inf or NaN, as jax
        # computes conv_general_dilated_patches of an inf); kept native so that it does.
        return None
    n, c = la.shape[lhs_spec[0]], la.shape[lhs_spec[1]]
    o, cg = ra.shape[rhs_spec[0]], ra.shape[rhs_spec[1]]
    window = [ra.shape[d] for d in rhs_spec[2:]]
    spatial = [out.shape[d] for d in out_spec[2:]]
    k, pos = int(np.prod(window, dtype=np.int64)), int(np.prod(spatial, dtype=np.int64))
    if cg > _PATCH_MAX_FEATURES or min(k, pos) > _PATCH_MAX_SLICES or n * c * k * pos > _PATCH_MAX_ELEMENTS:
        return None
    if min(n, c, o, k, pos) == 0:
        return None
    return n, c, o, cg, window, spatial


def _patches_convolution(fb, lhs, rhs, la, ra, out, out_dtype, plan, **p):
    n, c, o, cg, window, spatial = plan
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    strides, padding, lhs_dil, rhs_dil = (p[k] for k in WINDOW_PARAMS)
    dtype = xla_dtype(la.dtype)
    groups = p["feature_group_count"]
    og = o // groups
    k, pos = int(np.prod(window, dtype=np.int64)), int(np.prod(spatial, dtype=np.int64))
    t = lambda shape, dt=dtype: tensor_type(shape, dt)  # noqa: E731
    # The input as (N, C, spatial...), padded and dilated once.
    in_sp = [la.shape[d] for d in lhs_spec[2:]]
    x = fb.emit(
        f"stablehlo.transpose {lhs}, dims = {ints(lhs_spec)} : ({t(la.shape)}) -> {t((n, c, *in_sp))}"
    )
    lows, highs = [lo for lo, _ in padding], [hi for _, hi in padding]
    interior = [d - 1 for d in lhs_dil]
    padded = [(s - 1) * d + 1 + lo + hi for s, d, lo, hi in zip(in_sp, lhs_dil, lows, highs)]
    zero = fb.const(0, dtype)
    x = fb.emit(
        f"stablehlo.pad {x}, {zero}, low = {ints([0, 0, *lows])}, high = {ints([0, 0, *highs])}, "
        f"interior = {ints([0, 0, *interior])} : ({t((n, c, *in_sp))}, {t(())}) -> {t((n, c, *padded))}"
    )
    # Along each dimension, slice once per kernel offset or once per output position, the fewer.
    by_offset = [w_ <= s_ for w_, s_ in zip(window, spatial)]
    outer = [w_ if b else s_ for w_, s_, b in zip(window, spatial, by_offset)]
    inner = [s_ if b else w_ for w_, s_, b in zip(window, spatial, by_offset)]
    outer_step = [r if b else st for r, st, b in zip(rhs_dil, strides, by_offset)]
    inner_step = [st if b else r for r, st, b in zip(rhs_dil, strides, by_offset)]
    # One spatial dimension at a time (sum, not product, of the slice counts): slicing dimension d
    # ``outer[d]`` times and stacking the slices turns it into an (outer, inner) pair; then the
    # pairs are ordered so that the patch array is (N, C, positions, window), window innermost.
    shape = [n, c, *padded]
    for d in range(len(window)):
        ax = 2 + 2 * d
        one = [*shape[:ax], 1, inner[d], *shape[ax + 1 :]]
        pieces = []
        for i in range(outer[d]):
            lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
            lo[ax] = i * int(outer_step[d])
            hi[ax], st[ax] = lo[ax] + (inner[d] - 1) * int(inner_step[d]) + 1, int(inner_step[d])
            cut = [*shape[:ax], inner[d], *shape[ax + 1 :]]
            piece = fb.generic("stablehlo.slice", [x], [t(shape)], [t(cut)], slice_attrs(lo, hi, st))
            pieces.append(fb.emit(f"stablehlo.reshape {piece} : ({t(cut)}) -> {t(one)}"))
        stacked = [*shape[:ax], outer[d], inner[d], *shape[ax + 1 :]]
        x = pieces[0]
        if len(pieces) > 1:
            x = fb.emit(
                f"stablehlo.concatenate {', '.join(pieces)}, dim = {ax} : "
                f"({', '.join([t(one)] * len(pieces))}) -> {t(stacked)}"
            )
        else:
            x = fb.emit(f"stablehlo.reshape {x} : ({t(one)}) -> {t(stacked)}")
        shape = stacked
    nd = len(window)
    positions = [3 + 2 * d if by_offset[d] else 2 + 2 * d for d in range(nd)]
    offsets = [2 + 2 * d if by_offset[d] else 3 + 2 * d for d in range(nd)]
    order = [0, 1, *positions, *offsets]
    moved = [shape[a] for a in order]
    x = fb.emit(f"stablehlo.transpose {x}, dims = {ints(order)} : ({t(shape)}) -> {t(moved)}")
    patches_t = t((n, c, pos, k))
    patches = fb.emit(f"stablehlo.reshape {x} : ({t(moved)}) -> {patches_t}")
    patches_shape = (n, groups, cg, pos, k)
    patches = fb.emit(f"stablehlo.reshape {patches} : ({patches_t}) -> {t(patches_shape)}")
    # The kernel as (G, O/G, C/G, window).
    w = fb.emit(
        f"stablehlo.transpose {rhs}, dims = {ints(rhs_spec)} : ({t(ra.shape)}) -> {t((o, cg, *window))}"
    )
    w = fb.emit(f"stablehlo.reshape {w} : ({t((o, cg, *window))}) -> {t((groups, og, cg, k))}")
    # Contract (C/G, window) per group: the result is (G, N, positions, O/G).
    res_shape = (groups, n, pos, og)
    clauses = "batching_dims = [1] x [0], contracting_dims = [2, 4] x [2, 3]"
    w_t = t((groups, og, cg, k))
    y = fb.emit(
        f"stablehlo.dot_general {patches}, {w}, {clauses} : ({t(patches_shape)}, {w_t}) -> "
        f"{t(res_shape, out_dtype)}"
    )
    perm = [1, 0, 3, 2]  # -> (N, G, O/G, positions)
    y = fb.emit(
        f"stablehlo.transpose {y}, dims = {ints(perm)} : ({t(res_shape, out_dtype)}) -> "
        f"{t((n, groups, og, pos), out_dtype)}"
    )
    canon = (n, o, *spatial)
    y = fb.emit(f"stablehlo.reshape {y} : ({t((n, groups, og, pos), out_dtype)}) -> {t(canon, out_dtype)}")
    back = [0] * len(out_spec)
    for i, d in enumerate(out_spec):
        back[d] = i
    return fb.emit(
        f"stablehlo.transpose {y}, dims = {ints(back)} : ({t(canon, out_dtype)}) -> {t(out.shape, out_dtype)}"
    )


@register(conv_general_dilated_p)
def _conv_general_dilated(ctx, lhs, rhs, *, preferred_element_type=None, **params):
    fb = ctx.fb
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    in_dtype, out_dtype = xla_dtype(la.dtype), xla_dtype(out.dtype)
    plan = _patch_plan(la, ra, out, params)
    if plan is not None:
        return _patches_convolution(fb, lhs, rhs, la, ra, out, out_dtype, plan, **params)
    if in_dtype.kind != "c":
        lt, rt = tensor_type(la.shape, in_dtype), tensor_type(ra.shape, in_dtype)
        return _convolution(fb, lhs, rhs, lt, rt, tensor_type(out.shape, out_dtype), **params)
    part = np.dtype(np.float32 if in_dtype == np.complex64 else np.float64)
    out_part = np.dtype(np.float32 if out_dtype == np.complex64 else np.float64)
    lt, rt = tensor_type(la.shape, part), tensor_type(ra.shape, part)
    ot = tensor_type(out.shape, out_part)

    def split(x, aval):
        t_in, t_out = tensor_type(aval.shape, in_dtype), tensor_type(aval.shape, part)
        return (
            fb.emit(f"stablehlo.real {x} : ({t_in}) -> {t_out}"),
            fb.emit(f"stablehlo.imag {x} : ({t_in}) -> {t_out}"),
        )

    a, b = split(lhs, la)
    c, d = split(rhs, ra)
    k1 = _convolution(fb, fb.emit(f"stablehlo.add {a}, {b} : {lt}"), c, lt, rt, ot, **params)
    k2 = _convolution(fb, a, fb.emit(f"stablehlo.subtract {d}, {c} : {rt}"), lt, rt, ot, **params)
    k3 = _convolution(fb, b, fb.emit(f"stablehlo.add {c}, {d} : {rt}"), lt, rt, ot, **params)
    re = fb.emit(f"stablehlo.subtract {k1}, {k3} : {ot}")
    im = fb.emit(f"stablehlo.add {k1}, {k2} : {ot}")
    return fb.emit(f"stablehlo.complex {re}, {im} : {tensor_type(out.shape, out_dtype)}")
