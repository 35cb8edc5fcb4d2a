"""funcgrad.nn's block-scaled matrix products: ``scaled_matmul``, ``scaled_dot_general`` and
``get_scaled_dot_general_config`` (jax.nn's names and semantics; JAX calls cuDNN on Blackwell GPUs,
funcgrad computes the same mathematics with XLA's float32 dot on any device).

Layer: surface. Imports ``funcgrad.numpy`` and ``funcgrad.lax``.

Block scaling (the microscaling formats MXFP8 and NVFP4): the contracting dimension ``K`` is cut
into blocks; each block of a quantized operand carries one scale, so ``scaled_matmul`` is
``einsum('BMK,BNK->BMN', a * repeat(a_scales), b * repeat(b_scales))``. ``scaled_dot_general``
quantizes its high-precision operands first, as JAX's ``quantize``: per block, the scale is the
block's largest magnitude over the data type's maximum (MXFP8: rounded up to a power of two, stored
as ``float8_e8m0fnu``; NVFP4: divided by a global scale, stored as ``float8_e4m3fn``), and the data
are the values over their scale, clipped to the type's range and cast to it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel import dtypes as _dt


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """One operand's quantization (``jax.nn.get_scaled_dot_general_config`` makes them)."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: str, global_scale=None) -> BlockScaleConfig:
    """The quantization config of ``mode`` ('mxfp8' or 'nvfp4') for ``scaled_dot_general``.

    >>> get_scaled_dot_general_config("mxfp8").block_size
    32
    """
    if mode == "nvfp4":
        one = fnp.ones((1,), np.float32)
        return BlockScaleConfig(
            "nvfp4",
            16,
            fnp.float4_e2m1fn,
            fnp.float8_e4m3fn,
            one if global_scale is None else global_scale,
            False,
        )
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, fnp.float8_e4m3fn, fnp.float8_e8m0fnu, None, False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled ``(B, M, K) x (B, N, K) -> (B, M, N)``: each operand times its scales repeated
    over their blocks of ``K`` (``K // scales.shape[-1]`` elements each), contracted in float32.

    >>> a = fnp.array([1, 2, 3]).reshape((1, 1, 3))
    >>> b = fnp.array([4, 5, 6]).reshape((1, 1, 3))
    >>> s = fnp.array([0.5]).reshape((1, 1, 1))
    >>> scaled_matmul(a, b, s, s).tolist()
    [[[8.0]]]
    """
    a, b, a_s, b_s = (fnp.asarray(x) for x in (lhs, rhs, lhs_scales, rhs_scales))
    for name, x in (("lhs", a), ("rhs", b), ("lhs_scales", a_s), ("rhs_scales", b_s)):
        if x.ndim != 3:
            raise ValueError(f"scaled_matmul requires 3-D operands (B, M, K); {name} has shape {x.shape}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise ValueError(
            "scaled_matmul requires inputs a and b to have matching batch (B) and contract (K) "
            f"dimensions, but got shapes {a.shape} and {b.shape}"
        )
    if a_s.shape[0] != b_s.shape[0] or a_s.shape[2] != b_s.shape[2]:
        raise ValueError(
            "scaled_matmul requires scales to have matching batch (B) and contract (K) dimensions, "
            f"but got shapes {a_s.shape} and {b_s.shape}"
        )
    if a_s.shape[1] != a.shape[1] or b_s.shape[1] != b.shape[1]:
        raise ValueError(
            "scaled_matmul requires scales to match non-contract dimensions of inputs, but got shapes "
            f"a: {a.shape}, b: {b.shape}, a_scales: {a_s.shape}, b_scales: {b_s.shape}"
        )
    k = a.shape[2]
    if k % a_s.shape[2]:
        raise ValueError(f"scaled_matmul: K={k} is not a multiple of the scales' {a_s.shape[2]} blocks")
    f32 = np.float32
    a = a.astype(f32) * fnp.repeat(a_s.astype(f32), k // a_s.shape[2], axis=-1)
    b = b.astype(f32) * fnp.repeat(b_s.astype(f32), k // b_s.shape[2], axis=-1)
    out = lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=f32)
    return out.astype(_dt.canonicalize(preferred_element_type))


def _to_3d(x, contracting, batch):
    """``x`` as ``(batch, rows, contracting)`` (JAX's ``shape_normalization``)."""
    order = range(x.ndim)
    b = [d for d in order if d in batch]
    c = [d for d in order if d in contracting]
    m = [d for d in order if d not in batch and d not in contracting]
    size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))  # noqa: E731
    return fnp.transpose(x, b + m + c).reshape((size(b), size(m), size(c)))


def _e8m0_rounding_up(x):
    """The biased exponents (uint8) of the powers of two at or above ``x`` (float32)."""
    bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
    exp, mant = bits >> 23, bits & 0x7FFFFF
    up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
    return fnp.where(up, exp + 1, exp).astype(np.uint8)


def _e8m0_value(e, dtype):
    value = lax.bitcast_convert_type(e.astype(np.uint32) << 23, np.float32)
    tiny = 2.0**-15 if np.dtype(dtype) == np.float16 else 2.0**-127
    return fnp.where(value == 0, np.float32(tiny), value).astype(dtype)


def _quantize(x, config: BlockScaleConfig):
    shape, k, block = x.shape, x.shape[-1], config.block_size
    if k < block or k % block:
        raise ValueError(f"scaled_dot_general: the contracting size {k} must be a multiple of {block}")
    x = x.reshape(shape[:-1] + (k // block, block))
    top = np.asarray(_dt.finfo(config.data_type).max).astype(x.dtype)
    if config.mode == "mxfp8":
        exps = _e8m0_rounding_up(fnp.max(fnp.abs(x), axis=-1, keepdims=True) / top)
        scaled = x / _e8m0_value(exps, x.dtype)
        scales = lax.bitcast_convert_type(exps.reshape(exps.shape[:-1]), config.scale_type)
    elif config.mode == "nvfp4":
        x = x / config.global_scale
        scale_top = np.asarray(_dt.finfo(config.scale_type).max).astype(x.dtype)
        scales = fnp.clip(fnp.max(fnp.abs(x), axis=-1, keepdims=True) / top, 0, scale_top).astype(
            config.scale_type
        )
        scaled = x / scales.astype(np.float32)
        scales = scales.reshape(scales.shape[:-1])
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    data = fnp.clip(scaled, -top, top).astype(config.data_type).reshape(shape)
    return data, scales


def scaled_dot_general(
    lhs, rhs, dimension_numbers, preferred_element_type=np.float32, configs=None, implementation=None
):
    """``lax.dot_general`` of block-quantized operands (``configs``: one ``BlockScaleConfig`` per
    operand, from ``get_scaled_dot_general_config``); without ``configs``, ``lax.dot_general``.
    The result has ``dot_general``'s layout: batch, lhs's free, then rhs's free dimensions.

    >>> x = fnp.ones((1, 2, 32))
    >>> cfg = [get_scaled_dot_general_config("mxfp8")] * 3
    >>> scaled_dot_general(x, x, (((2,), (2,)), ((0,), (0,))), configs=cfg).tolist()
    [[[32.0, 32.0], [32.0, 32.0]]]
    """
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    lhs, rhs = fnp.asarray(lhs), fnp.asarray(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_q, lhs_s = _quantize(_to_3d(lhs, lc, lb), configs[0])
    rhs_q, rhs_s = _quantize(_to_3d(rhs, rc, rb), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, np.float32 if nvfp4 else preferred_element_type)
    if nvfp4:
        out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(preferred_element_type)
    free = lambda x, c, b: [x.shape[d] for d in range(x.ndim) if d not in c and d not in b]  # noqa: E731
    return out.reshape(tuple(lhs.shape[d] for d in lb) + tuple(free(lhs, lc, lb)) + tuple(free(rhs, rc, rb)))
