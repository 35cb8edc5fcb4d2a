"""Sums of zero-padded pieces lowered as one concatenation (NOTE: [sums of zero pads]).

Layer: xla_bridge (compiler half). Imports numpy and ``xla_bridge.emitter``; used by the
lowering rules of ``pad`` (xla_bridge/rules/structure.py) and ``add``/``add_any``
(xla_bridge/rules/elementwise.py).
"""

from __future__ import annotations

import numpy as np
from funcgrad.xla_bridge.emitter import i64_array, tensor_type, xla_dtype

# NOTE: [sums of zero pads]
# The cotangent of an array read in pieces -- ``q, k, v = qkv[0], qkv[1], qkv[2]``, ``jnp.split``
# of a projection, the halves of a gated unit -- is the sum of each piece's cotangent padded with
# zeros to the whole (the transpose of ``slice`` is ``pad``, the accumulation ``add_any``), as
# JAX's rules make it. XLA's CPU compiler keeps that form: each padded piece is materialised at the
# whole's size, and every consumer of the sum gets its own loop fusion re-adding the pads (in the
# GPT-style step of bench/bench_transformer.py, the attention's [8, 128, 768] qkv cotangent was
# written three times per layer from three [3, 8, 4, 128, 64] pads, for the input-gradient GEMM,
# the weight gradient and the bias gradient: about 1.7 ms a layer). Where both operands of an
# addition are zero pads of pieces along one and the same dimension, disjoint there and unpadded
# elsewhere, their sum is the concatenation of the pieces (zeros between them) padded to the whole:
# the lowering emits that, and remembers the result as a zero pad of all its pieces, so a chain of
# additions ends as one ``concatenate`` of every piece. Exact but for the sign of a zero: a piece's
# -0.0 stays -0.0 where ``-0.0 + 0.0`` gives +0.0 (XLA's own simplifier folds ``x + 0`` alike).
# One device only (an SPMD program's values pass through sharding constraints). Each addition
# emits the concatenation of all the pieces so far (the earlier ones become dead code for XLA), so
# a sum stops merging at ``_MAX_PIECES`` pieces and goes on as plain additions: the cotangent of a
# loop unrolled over a thousand rows ``x[i]`` would otherwise emit a quadratic amount of text.
_MAX_PIECES = 32


def _table(fb) -> dict:
    """This body's zero pads: SSA name -> (dimension, ((start, piece, piece shape), ...), dtype)."""
    return fb.__dict__.setdefault("_zero_pads", {})


def _is_zero(fb, name: str, dtype) -> bool:
    dtype = xla_dtype(dtype)
    return fb._consts.get((dtype, (), np.zeros((), dtype).tobytes())) == name


def record_pad(ctx, out: str, x: str, padding_value: str, padding_config) -> None:
    """Remember ``out = pad(x, padding_value, padding_config)`` if it pads ``x`` with zeros along
    one dimension only (no interior padding, no cropping)."""
    fb = ctx.fb
    if fb.module.spmd is not None:
        return
    x_aval = ctx.avals_in[0]
    padded = [d for d, (lo, hi, interior) in enumerate(padding_config) if lo or hi or interior]
    if len(padded) != 1:
        return
    (d,) = padded
    lo, hi, interior = padding_config[d]
    if interior or lo < 0 or hi < 0 or not _is_zero(fb, padding_value, x_aval.dtype):
        return
    _table(fb)[out] = (d, ((int(lo), x, tuple(x_aval.shape)),), x_aval.dtype)


def sum_of_pads(ctx, a: str, b: str) -> str | None:
    """``a + b`` as one zero-padded concatenation when both are such pads along the same
    dimension with disjoint pieces; None otherwise (the caller emits the addition)."""
    fb = ctx.fb
    table = fb.__dict__.get("_zero_pads")
    if not table or a not in table or b not in table:
        return None
    (da, pa, ta), (db, pb, tb) = table[a], table[b]
    out = ctx.avals_out[0]
    if da != db or ta != tb or xla_dtype(ta) != xla_dtype(out.dtype):
        return None
    d = da
    if len(pa) + len(pb) > _MAX_PIECES:
        return None
    pieces = sorted(pa + pb, key=lambda p: p[0])
    for (s0, _, sh0), (s1, _, _) in zip(pieces, pieces[1:]):
        if s0 + sh0[d] > s1:
            return None  # overlapping pieces: a real sum
    dtype = xla_dtype(out.dtype)
    zero = fb.const(0, dtype)
    parts, shapes, at = [], [], pieces[0][0]
    for start, name, shape in pieces:
        if start > at:  # zeros between two pieces
            gap = (*shape[:d], start - at, *shape[d + 1 :])
            scalar = tensor_type((), dtype)
            parts.append(
                fb.emit(
                    f"stablehlo.broadcast_in_dim {zero}, dims = [] : ({scalar}) -> {tensor_type(gap, dtype)}"
                )
            )
            shapes.append(gap)
        parts.append(name)
        shapes.append(shape)
        at = start + shape[d]
    if len(parts) == 1:
        y, y_shape = parts[0], shapes[0]
    else:
        y_shape = (*shapes[0][:d], sum(s[d] for s in shapes), *shapes[0][d + 1 :])
        types = ", ".join(tensor_type(s, dtype) for s in shapes)
        y = fb.emit(
            f'"stablehlo.concatenate"({", ".join(parts)}) {{dimension = {d} : i64}} : ({types}) -> '
            f"{tensor_type(y_shape, dtype)}"
        )
    lo, hi = pieces[0][0], out.shape[d] - at
    if lo or hi:
        low = [0] * out.ndim
        high = [0] * out.ndim
        low[d], high[d] = lo, hi
        y = fb.emit(
            f'"stablehlo.pad"({y}, {zero}) {{edge_padding_high = {i64_array(high)}, edge_padding_low = '
            f"{i64_array(low)}, interior_padding = {i64_array([0] * out.ndim)}}} : "
            f"({tensor_type(y_shape, dtype)}, {tensor_type((), dtype)}) -> {tensor_type(out.shape, dtype)}"
        )
    table[y] = (d, tuple(pieces), ta)
    return y
