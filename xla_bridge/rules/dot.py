"""Lowering rule of dot_general (primitives/dot.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``.

``preferred_element_type`` becomes the result type of ``stablehlo.dot_general`` (XLA accumulates
in it, e.g. int8 x int8 -> int32). ``precision`` becomes ``precision_config`` (``precision_attrs``,
shared with the convolution rule). Boolean matmul (NumPy: OR of ANDs) has no XLA dot: it is an
int32 dot followed by ``!= 0``.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.dot import algorithm_compute_types, dot_general_p, is_algorithm
from funcgrad.xla_bridge.emitter import ints, register, slice_attrs, tensor_type, widen_sub_byte, xla_dtype
from funcgrad.xla_bridge.rules import _folded_transposes as folded_transposes


def _dims(xs) -> str:
    return "[" + ", ".join(str(int(d)) for d in xs) + "]"


def precision_names(precision) -> list[str] | None:
    """``["HIGHEST", "DEFAULT"]`` for a canonical precision pair; ``None`` for the default."""
    if precision is None:
        return None
    return [p.name for p in precision]


@register(dot_general_p)
@widen_sub_byte  # XLA rejects a sub-byte dot with a wider result type
def _dot_general(
    ctx,
    lhs,
    rhs,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
    out_unreduced=frozenset(),  # (the result's type says: NOTE: [unreduced in the equation])
):
    fb = ctx.fb
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    if is_algorithm(precision):
        return _algorithm_dot(fb, lhs, rhs, la, ra, out, dimension_numbers, precision)
    (lc, rc), (lb, rb) = dimension_numbers
    in_dtype = xla_dtype(la.dtype)
    out_dtype = xla_dtype(out.dtype)
    if in_dtype == np.bool_:
        i32 = np.dtype(np.int32)
        lhs, rhs = fb.convert(lhs, la, i32), fb.convert(rhs, ra, i32)
        la, ra, in_dtype = la.update(dtype=i32), ra.update(dtype=i32), i32
        dot_dtype = i32
    else:
        dot_dtype = out_dtype
    if lb and all(la.shape[d] == 1 for d in lc) and in_dtype.kind != "c":
        # No real contraction in a batched dot (per-example outer products under vmap): XLA's CPU
        # dot handles K=1 poorly, while a broadcast multiply fuses into one loop. Without batch
        # dimensions XLA's algebraic simplifier makes that multiply itself, so the dot stays a
        # dot, and the program's cost analysis counts its flops as JAX's (2 per product: flax's
        # summary tables of a weight cotangent).
        return _outer_product(fb, lhs, rhs, la, ra, dimension_numbers, out, in_dtype, out_dtype)
    if ctx.fb.module.platform == "cpu" and ctx.fb.module.spmd is None and lb:
        # NOTE: [transposes folded into batched dots]
        f = folded_transposes.fold(ctx, lhs, la, lb, lc, lhs=True)
        if f is not None:
            lhs, ls, lb, lc = f
            la = la.update(shape=ls)
        f = folded_transposes.fold(ctx, rhs, ra, rb, rc, lhs=False)
        if f is not None:
            rhs, rs, rb, rc = f
            ra = ra.update(shape=rs)
        dimension_numbers = ((lc, rc), (lb, rb))
    if ctx.fb.module.platform == "cpu" and ctx.fb.module.spmd is None and out.size >= _MERGE_MIN_OUT:
        merged = _merged_contraction(la, ra, dimension_numbers)
        if merged is not None:
            (ls, rs), dimension_numbers = merged
            lhs, rhs = _reshape(fb, lhs, la, ls, in_dtype), _reshape(fb, rhs, ra, rs, in_dtype)
            la, ra = la.update(shape=ls), ra.update(shape=rs)
            (lc, rc), (lb, rb) = dimension_numbers
        if _swap_for_transposed_lhs(la, ra, dimension_numbers, in_dtype, dot_dtype):
            return _swapped(fb, lhs, rhs, la, ra, dimension_numbers, out.shape, in_dtype, precision)
        if _pad_page_rows(la, ra, dimension_numbers, in_dtype, dot_dtype):
            return _padded(fb, lhs, rhs, la, ra, dimension_numbers, out.shape, in_dtype, precision)
        if _copy_short_transposed_lhs(la, ra, dimension_numbers, in_dtype, dot_dtype):
            lhs, la, dimension_numbers = _lhs_copied_transposed(fb, lhs, la, dimension_numbers, in_dtype)
    y = fb.emit(
        _dot_text(lhs, rhs, la.shape, ra.shape, dimension_numbers, out.shape, in_dtype, dot_dtype, precision)
    )
    if dot_dtype != out_dtype:
        y = fb.convert(y, out.update(dtype=dot_dtype), out_dtype)
    return y


def _algorithm_dot(fb, lhs, rhs, la, ra, out, dimension_numbers, algorithm) -> str:
    """A product under a dot algorithm, as JAX's lowering: the operands converted to its types, the
    contraction in its accumulation type, converted to the result's (NOTE: [dot algorithms]; XLA's
    CPU ignores the algorithm attribute, so none is written)."""
    lt, rt, common, acc = algorithm_compute_types(algorithm, la.dtype, ra.dtype, out.dtype)
    lhs = fb.convert(fb.convert(lhs, la, lt), la.update(dtype=lt), common)
    rhs = fb.convert(fb.convert(rhs, ra, rt), ra.update(dtype=rt), common)
    common, acc = xla_dtype(common), xla_dtype(acc)
    y = fb.emit(_dot_text(lhs, rhs, la.shape, ra.shape, dimension_numbers, out.shape, common, acc, None))
    return y if acc == xla_dtype(out.dtype) else fb.convert(y, out.update(dtype=acc), xla_dtype(out.dtype))


def _dot_text(lhs, rhs, lshape, rshape, dimension_numbers, out_shape, in_dtype, out_dtype, precision):
    (lc, rc), (lb, rb) = dimension_numbers
    clauses = []
    if lb:
        clauses.append(f"batching_dims = {_dims(lb)} x {_dims(rb)}")
    clauses.append(f"contracting_dims = {_dims(lc)} x {_dims(rc)}")
    if precision is not None:
        clauses.append("precision = [" + ", ".join(precision_names(precision)) + "]")
    return (
        f"stablehlo.dot_general {lhs}, {rhs}, {', '.join(clauses)} : "
        f"({tensor_type(lshape, in_dtype)}, {tensor_type(rshape, in_dtype)}) -> "
        f"{tensor_type(out_shape, out_dtype)}"
    )


def _swap_for_transposed_lhs(la, ra, dimension_numbers, in_dtype, dot_dtype) -> bool:
    """Whether a 2-D float32 dot reads its left operand transposed ([K, M] x [K, N]) with M well
    above N and a long contraction: then the swapped dot is faster on XLA's CPU (NOTE:
    [transposed left operand on the CPU])."""
    (lc, rc), (lb, _) = dimension_numbers
    if lb or la.ndim != 2 or ra.ndim != 2 or tuple(lc) != (0,) or tuple(rc) != (0,):
        return False
    if in_dtype != np.float32 or dot_dtype != in_dtype:
        return False
    (k, m), n = la.shape, ra.shape[1]
    return k >= _SWAP_MIN_K and m >= 2 * n and m * n <= _SWAP_MAX_OUT


def _swapped(fb, lhs, rhs, la, ra, dimension_numbers, out_shape, dtype, precision) -> str:
    """``dot_general(rhs, lhs)``, its [N, M] result transposed back to [M, N]; the barrier keeps
    XLA's simplifier from folding the transpose into the dot's dimension numbers again."""
    (lc, rc), _ = dimension_numbers
    flipped = tuple(reversed(out_shape))
    swapped_precision = None if precision is None else tuple(reversed(precision))  # per operand
    y = fb.emit(
        _dot_text(
            rhs, lhs, ra.shape, la.shape, ((rc, lc), ((), ())), flipped, dtype, dtype, swapped_precision
        )
    )
    y = fb.emit(f"stablehlo.optimization_barrier {y} : {tensor_type(flipped, dtype)}")
    return fb.emit(
        f"stablehlo.transpose {y}, dims = [1, 0] : "
        f"({tensor_type(flipped, dtype)}) -> {tensor_type(out_shape, dtype)}"
    )


def _copy_short_transposed_lhs(la, ra, dimension_numbers, in_dtype, dot_dtype) -> bool:
    """Whether a 2-D float32 dot reads a wide left operand transposed ([K, M] x [K, N] or [N, K], M at
    least _COPY_MIN_M) over a short contraction (K at most _COPY_MAX_K): then the left operand copied
    as [M, K] and XLA's YNNPACK dot are faster than XLA's own dot (NOTE: [short transposed left
    operands copied on the CPU])."""
    (lc, rc), (lb, _) = dimension_numbers
    if lb or la.ndim != 2 or ra.ndim != 2 or tuple(lc) != (0,):
        return False
    if in_dtype != np.float32 or dot_dtype != in_dtype:
        return False
    k, m = la.shape
    return k <= _COPY_MAX_K and m >= _COPY_MIN_M


def _lhs_copied_transposed(fb, lhs, la, dimension_numbers, dtype):
    """The left operand transposed to [M, K] behind an optimization barrier (else XLA's simplifier
    folds the transpose back into the dot), its aval, and the dimension numbers that read it so."""
    (_, rc), batch = dimension_numbers
    shape = tuple(reversed(la.shape))
    t = fb.emit(
        f"stablehlo.transpose {lhs}, dims = [1, 0] : "
        f"({tensor_type(la.shape, dtype)}) -> {tensor_type(shape, dtype)}"
    )
    t = fb.emit(f"stablehlo.optimization_barrier {t} : {tensor_type(shape, dtype)}")
    return t, la.update(shape=shape), (((1,), rc), batch)


def _pad_page_rows(la, ra, dimension_numbers, in_dtype, dot_dtype) -> bool:
    """Whether a batched float32 dot reads its left operand transposed ([B.., K, M] x [B.., K, N])
    with rows of a multiple of 4 KiB and M well above N: then padding M makes XLA's CPU dot faster
    (NOTE: [rows of 4 KiB read transposed on the CPU])."""
    (lc, rc), (lb, rb) = dimension_numbers
    nb = len(lb)
    if not nb or tuple(lb) != tuple(range(nb)) or tuple(rb) != tuple(range(nb)):
        return False
    if la.ndim != nb + 2 or ra.ndim != nb + 2 or tuple(lc) != (nb,) or tuple(rc) != (nb,):
        return False
    if in_dtype != np.float32 or dot_dtype != in_dtype:
        return False
    m, n = la.shape[-1], ra.shape[-1]
    return m * in_dtype.itemsize % _PAGE == 0 and m >= 2 * n


def _padded(fb, lhs, rhs, la, ra, dimension_numbers, out_shape, dtype, precision) -> str:
    """The dot of the left operand padded with _ROW_PAD zero columns, the extra result rows sliced
    off (the values of the others unchanged)."""
    wide = (*la.shape[:-1], la.shape[-1] + _ROW_PAD)
    wide_out = (*out_shape[:-2], out_shape[-2] + _ROW_PAD, out_shape[-1])
    zero, none = fb.const(0, dtype), [0] * la.ndim
    x = fb.emit(
        f"stablehlo.pad {lhs}, {zero}, low = {ints(none)}, high = {ints([*none[:-1], _ROW_PAD])}, "
        f"interior = {ints(none)} : ({tensor_type(la.shape, dtype)}, {tensor_type((), dtype)}) -> "
        f"{tensor_type(wide, dtype)}"
    )
    y = fb.emit(_dot_text(x, rhs, wide, ra.shape, dimension_numbers, wide_out, dtype, dtype, precision))
    return fb.generic(
        "stablehlo.slice",
        [y],
        [tensor_type(wide_out, dtype)],
        [tensor_type(out_shape, dtype)],
        slice_attrs([0] * len(out_shape), out_shape, [1] * len(out_shape)),
    )


def _reshape(fb, x, aval, shape, dtype) -> str:
    return fb.emit(
        f"stablehlo.reshape {x} : ({tensor_type(aval.shape, dtype)}) -> {tensor_type(shape, dtype)}"
    )


def _merged_contraction(la, ra, dimension_numbers):
    """Each run of contracting dimensions that sit side by side, in the same order, in both
    operands made one dimension (a row-major reshape, free): ``((lhs shape, rhs shape), dimension
    numbers)``, or None when there is no such run (NOTE: [one contracting dimension on the CPU])."""
    (lc, rc), (lb, rb) = dimension_numbers
    runs = [[0]] if lc else []
    for i in range(1, len(lc)):
        if lc[i] == lc[i - 1] + 1 and rc[i] == rc[i - 1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    if len(runs) == len(lc):
        return None

    def collapse(aval, contracting):
        first = {contracting[r[0]]: len(r) for r in runs}  # a run's first dimension -> its length
        shape, where, d = [], {}, 0
        while d < aval.ndim:
            n = first.get(d, 1)
            where[d] = len(shape)
            shape.append(int(np.prod(aval.shape[d : d + n], dtype=np.int64)))
            d += n
        return tuple(shape), where

    ls, lw = collapse(la, lc)
    rs, rw = collapse(ra, rc)
    contracting = (tuple(lw[lc[r[0]]] for r in runs), tuple(rw[rc[r[0]]] for r in runs))
    batch = (tuple(lw[d] for d in lb), tuple(rw[d] for d in rb))
    return (ls, rs), (contracting, batch)


# NOTE: [one contracting dimension on the CPU]
# XLA's CPU compiler canonicalises a dot with several contracting dimensions by transposing the
# left operand to [batch, free, contracting] -- a copy, into which it fuses the operand's producer,
# recomputed in a transposing loop -- and hands the result to its XNNPACK dot. A weight gradient
# of a sequence model, dot_general(h[B, T, F], g[B, T, O]) contracting (B, T), pays that on every
# dense layer: in the GPT-style step of bench/bench_transformer.py the four [8, 128, 1024] GELU
# activations' transposing copies took a fifth of the step. The same contraction over (B, T)
# reshaped to one dimension of B*T (free in row-major layout) stays one dot that reads its left
# operand transposed, without a copy (jit of GELU then that gradient: 24 ms -> 12 ms). The rule
# merges only runs adjacent and in the same order in both operands, the free and batch dimensions
# untouched, so the result's shape is unchanged; one device only (a reshape across a sharded
# dimension would ask the partitioner for a relayout). Small results keep XLA's form: its dot
# reading a transposed operand is slower than a copy and XNNPACK when the result is small against
# the contraction (64x64 from K=4096: 1.28x; 128x128 from K=1024: level; 128x128 from K=4096 and
# up: 0.67-0.85x, operands plain parameters).
_MERGE_MIN_OUT = 1 << 14

# NOTE: [transposed left operand on the CPU]
# A 2-D dot contracting both operands' first dimension, [K, M] x [K, N] -> [M, N] (the weight
# gradient of a dense layer: activations^T @ cotangents), runs as XLA's own CPU dot (Eigen):
# XNNPACK/YNNPACK take only a left operand in [M, K] order. Eigen reads a transposed left operand
# at full speed while M <= N; with M > N it runs up to 2x slower (float32, K=1024: M=1024, N=256
# 5.2 ms against 3.3 ms for M=256, N=1024). The same product computed as [N, M] = dot(rhs, lhs)
# and transposed back is the fast form plus an M x N copy. Measured (one thread, float32):
# K=1024, M/N=4: 0.66-0.72x the time; K=4096: 0.52x; K=2048, M/N=2: 0.86x; K=1024, M/N=2:
# 0.88x for a 1024x512 result but 1.10x for 2048x1024 (the copy of a result larger than the
# core's 2 MB cache); K=512: about even; K=128: 1.6-2x slower (the copy weighs as much as the
# product); float64: 1.05x slower. So the swap is taken for float32 with K >= _SWAP_MIN_K,
# M >= 2N and a result of at most _SWAP_MAX_OUT elements. XLA's algebraic simplifier folds
# transpose(dot) back into the dot's dimension numbers; an optimization barrier between the two
# keeps the order (XLA drops the barrier after its simplification passes). Batched dots (the
# per-example gradients under vmap, K=128 in bench/bench_transformer.py) keep XLA's form:
# transposing either operand or the result measured slower there.
_SWAP_MIN_K = 1024
_SWAP_MAX_OUT = 1 << 19

# NOTE: [rows of 4 KiB read transposed on the CPU]
# A batched dot contracting both operands' first non-batch dimension, [B, K, M] x [B, K, N] ->
# [B, M, N] (per-example weight gradients under vmap: activations^T @ cotangents for each example),
# runs as XLA's own CPU dot (Eigen), which packs the left operand by reading it down its columns,
# one row of M elements apart. When a row is a multiple of 4 KiB (M=1024 float32), every one of
# those reads maps to the same set of the L1 cache, and packing costs as much as the product.
# Padding M with _ROW_PAD zeros (64 bytes) spaces the rows off the page stride; the dot then
# makes _ROW_PAD extra result rows per example, sliced off (a copy of contiguous blocks). Measured
# (one thread, float32, B=8, K=128, operands as parameters): M=1024, N=256 5.4 -> 4.5 ms with the
# pad and slice (3.3 ms for the dot alone); M=2048, N=256 10.6 -> 7.9 ms; M=N=1024 12.9 -> 13.1
# (the right operand's rows are pages too), so M >= 2N as for the 2-D swap above. Inside a program
# the pad usually costs nothing: XLA already writes the operand for the dot (a fusion of its
# producer), now with the wider rows. bench/bench_transformer.py's per-example gradients (the MLP
# projection's four [8, 128, 1024] x [8, 128, 256] weight gradients): 4-5% less CPU time in four
# interleaved fresh-process pairs. float64 (M=512) measured no gain; 2-D dots keep the swap.
_PAGE = 4096
_ROW_PAD = 16

# NOTE: [short transposed left operands copied on the CPU]
# A 2-D float32 dot reading its left operand transposed, [K, M] x [K, N] (or [N, K]) -> [M, N] --
# the weight gradient of a dense layer over a batch of K rows, activations^T @ cotangents -- runs
# as XLA's own dot (Eigen): YNNPACK's dot takes only a left operand in [M, K] order, and XLA's
# simplifier folds an explicit transpose into an unbatched dot's dimension numbers. With a short
# contraction and a wide left operand (K <= _COPY_MAX_K, M >= _COPY_MIN_M) the left operand copied
# to [M, K] (K x M elements, no more than the product reads) behind an optimization barrier, which
# keeps the transpose out of the dot until the simplifier has run, and YNNPACK's plain product are
# faster. Measured (one core, float32, operands as parameters, the fastest of 40 calls, against
# XLA's dot): [K, M, N] = [128, 1024, 256] 0.97 -> 0.63 ms (0.65x), [64 or 256, 1024, 256] 0.65x,
# [128, 512, 256] 0.71x, [32, 512, 64] 0.73x, [16, 1024, 64] 0.76x, [4, 4096, 4096] 0.76x, [128,
# 1024, 512] and [128, 2048, 512] 0.79x, [8, 2048, 2048] 0.83x, [256, 2048, 512] 0.84x, [128,
# 1024, 1024] 0.90x, [128, 4096, 1024] 0.93x, [200, 777, 333] 1.00x; with a GELU producer fused
# into the copy 0.79-0.96x. Outside those bounds it is level or slower: M below 512 0.92-1.05x
# ([128, 256, 1024] 0.92x, [64, 256, 2048] 1.00x, [512, 64, 512] 1.05x, [1000, 100, 200] 1.03x), K
# of 300-900 0.81-1.07x ([300, 600, 100] 0.81x, [512, 2048, 512] 0.85x, [500, 1500, 700]
# 1.01-1.06x, [700, 2000, 300] 1.04-1.07x), and from _SWAP_MIN_K rows up the swap above or XLA's
# dot stays. A jit(value_and_grad) SGD step of a 784-1024-1024-512-10 GELU MLP (its weight
# gradients contract the batch): 3-6% less CPU time at batch 32 and 128 (6.66 and 18.6 against
# 7.05 and 19.1 ms, medians of 60 calls in two fresh-process pairs each; jax 7.29, 19.2), the
# gradients' bits unchanged at both; in general the sums may differ in the last places (YNNPACK's
# blocking: up to 6e-7 of the result's largest entry at K=200, M=777, N=333). Batched dots keep
# XLA's dot: the per-example weight gradients of bench/bench_transformer.py ([8, 128, M] x [8,
# 128, N]) measured no faster on YNNPACK, whose batched dot at K=128 runs at Eigen's speed, and
# the copies cost more (session 19 there).
_COPY_MAX_K = 256
_COPY_MIN_M = 512


def _outer_product(fb, lhs, rhs, la, ra, dimension_numbers, out, in_dtype, out_dtype):
    (lc, rc), (lb, rb) = dimension_numbers
    lf = [d for d in range(la.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    nb, nlf = len(lb), len(lf)
    operands = []
    for x, a, batch, free, dims in (
        (lhs, la, lb, lf, [*range(nb), *range(nb, nb + nlf)]),
        (rhs, ra, rb, rf, [*range(nb), *range(nb + nlf, out.ndim)]),
    ):
        perm = [*batch, *free]
        kept_shape = tuple(a.shape[d] for d in perm)
        if perm != list(range(len(perm))) or len(perm) != a.ndim:
            if sorted(perm) != perm:
                full = [*perm, *(d for d in range(a.ndim) if d not in perm)]
                moved = (*kept_shape, *[1] * (a.ndim - len(perm)))
                x = fb.emit(
                    f"stablehlo.transpose {x}, dims = {_dims(full)} : "
                    f"({tensor_type(a.shape, in_dtype)}) -> {tensor_type(moved, in_dtype)}"
                )
                a = a.update(shape=moved)
            if a.ndim != len(perm):
                t_in, t_out = tensor_type(a.shape, in_dtype), tensor_type(kept_shape, in_dtype)
                x = fb.emit(f"stablehlo.reshape {x} : ({t_in}) -> {t_out}")
                a = a.update(shape=kept_shape)
        x = fb.convert(x, a.update(dtype=in_dtype), out_dtype)
        operands.append(fb.broadcast(x, a.update(dtype=out_dtype), out.shape, dims))
    return fb.binary("stablehlo.multiply", operands[0], operands[1], out.update(dtype=out_dtype))
