"""Transposed operands of batched dots read in place (NOTE: [transposes folded into batched dots]).

Layer: xla_bridge (compiler half). Imports numpy and ``xla_bridge.emitter``; used by the lowering
rules of ``transpose``/``reshape``/``squeeze`` (xla_bridge/rules/structure.py), which record what
they emit, and of ``dot_general`` (xla_bridge/rules/dot.py), which reads an operand's source.
"""

from __future__ import annotations

import numpy as np
from funcgrad.xla_bridge.emitter import tensor_type, xla_dtype

# NOTE: [transposes folded into batched dots]
# ``q @ jnp.swapaxes(k, -1, -2)`` (attention's scores), ``x @ w.mT`` of stacked matrices and the
# input cotangent JAX's transpose rule makes of such a product are a ``transpose`` feeding a
# batched ``dot_general``. XLA's CPU compiler folds a transpose into a dot's dimension numbers only
# for dots without batch dimensions; a batched dot gets the transposed operand as a copy, its
# producer fused into a transposing loop (in bench/bench_transformer.py's per-example program each
# layer's k^T, [8, 4, 64, 128] out of the qkv projection: 0.25 ms against 0.05 for the plain slice
# that q and v take). The lowering records each transpose it emits (and unit-dimension reshapes
# of one, which vmap's ``xi[None]`` adds), and the dot rule reads such an operand's source in
# place, the transpose folded into its dimension numbers, when the dot then has the form XLA's
# YNNPACK dot takes without a copy: batch dimensions leading and in order, one free and one
# contracting dimension, the left operand's contraction last ([B, M, K]) and the right operand's
# either way ([B, K, N] or [B, N, K]). The product is the same sum in the same order; only the
# copy goes (the transpose itself stays in the text for any other user, else dead code for
# XLA). One device only (an SPMD program's values pass through sharding constraints); batched
# dots only (XLA folds the others itself); floating point only (where it was measured). Measured
# in that per-example program (each operation's fastest of 20 calls, load 15-18): its copies
# 2.1-1.9 -> 1.2 ms a call, the input gradients dS @ k, now read as [B, K, N], 0.38-0.40 -> 0.33
# ms a layer; CPU time per call 133.9 -> 132.6 ms (medians of six interleaved fresh-process
# pairs, lower in four, load 18-20). Operands given as parameters ([B, M, K] x [B, N, K]):
# level (32x128x64x128, 8x1024x256x256, 4x512x512x512), 1.25 -> 0.95 ms for 8x64x64x2048.


def _table(fb) -> dict:
    """This body's recorded transposes: SSA name -> (source SSA name, source shape, m), where the
    value's dimension i is the source's dimension m[i] and the source's dimensions missing from m
    have size 1."""
    return fb.__dict__.setdefault("_transposes", {})


def record_transpose(ctx, out: str, x: str, permutation) -> None:
    """Remember ``out = transpose(x, permutation)`` (composed with x's own entry, if any)."""
    fb = ctx.fb
    if fb.module.spmd is not None:
        return
    table = _table(fb)
    src, shape, m = table.get(x, (x, tuple(ctx.avals_in[0].shape), tuple(range(ctx.avals_in[0].ndim))))
    table[out] = (src, shape, tuple(m[int(p)] for p in permutation))


def record_reshape(ctx, out: str, x: str) -> None:
    """Remember ``out = reshape(x)`` when x is a recorded transpose and the reshape only drops
    dimensions of size 1."""
    table = _table(ctx.fb) if ctx.fb.module.spmd is None else {}
    if x not in table:
        return
    src, shape, m = table[x]
    a, o = tuple(ctx.avals_in[0].shape), tuple(ctx.avals_out[0].shape)
    kept, j = [], 0
    for i, d in enumerate(a):  # greedy: a dimension of size 1 that o does not take next is dropped
        if j < len(o) and o[j] == d:
            kept.append(i)
            j += 1
        elif d != 1:
            return
    if j == len(o):
        table[out] = (src, shape, tuple(m[i] for i in kept))


def fold(ctx, x: str, aval, batch, contracting, lhs: bool):
    """``(source as an operand, its shape, batch dims, contracting dims)`` for a dot operand ``x``
    that is a recorded transpose whose source the dot can read as described in the NOTE above;
    None otherwise."""
    fb = ctx.fb
    table = fb.__dict__.get("_transposes")
    if not table or x not in table or len(batch) + 2 != aval.ndim or len(contracting) != 1:
        return None
    dtype = xla_dtype(aval.dtype)
    if not np.issubdtype(dtype, np.floating):
        return None
    src, shape, m = table[x]
    order = sorted(m)  # the source's dimensions kept, in its order
    rank = {d: r for r, d in enumerate(order)}
    p = [rank[d] for d in m]  # x's dimension i is the folded operand's dimension p[i]
    nb = len(batch)
    (c,) = contracting
    if [p[b] for b in batch] != list(range(nb)):
        return None
    if p[c] != nb + 1 and (lhs or p[c] != nb):
        return None
    z_shape = tuple(shape[d] for d in order)
    z = src
    if z_shape != shape:
        z = fb.emit(
            f"stablehlo.reshape {src} : ({tensor_type(shape, dtype)}) -> {tensor_type(z_shape, dtype)}"
        )
    return z, z_shape, tuple(range(nb)), (p[c],)
