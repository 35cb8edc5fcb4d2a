"""Lowering rule of conv_general_dilated (primitives/conv.py) to ``stablehlo.convolution``.

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy, ``xla_bridge.emitter`` and
the sibling rule module ``dot`` (the ``precision_config`` spelling).

Every parameter maps one to one onto the op's attributes (explicit padding, both dilations, both
group counts, ``precision_config``; ``preferred_element_type`` is the result type). Complex
convolutions are three real ones (Gauss's product, as JAX lowers them on CPU, where XLA's complex
convolution is a slow loop): ``k1 = (a+b) * c``, ``k2 = a * (d-c)``, ``k3 = b * (c+d)`` for
``(a+ib) * (c+id)``; real part ``k1 - k3``, imaginary ``k1 + k2``.
"""

from __future__ import annotations

import numpy as np

from primitives.conv import WINDOW_PARAMS, conv_general_dilated_p
from xla_bridge.emitter import ints, register, tensor_type, xla_dtype
from xla_bridge.rules.dot import precision_names


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


@register(conv_general_dilated_p)
def _conv_general_dilated(ctx, lhs, rhs, *, preferred_element_type=None, **params):
    fb = ctx.fb
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    in_dtype, out_dtype = xla_dtype(la.dtype), xla_dtype(out.dtype)
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
