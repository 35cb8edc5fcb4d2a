"""Lowering rules of the reduction family (primitives/reductions.py).

The generic ``reduce`` is a variadic ``stablehlo.reduce`` whose region is the reducer's jaxpr.

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``.

Reductions start from the operation's identity (so reducing an empty axis gives the identity, as
the NumPy impls do: -inf for ``reduce_max`` of floats, the smallest integer for ints). ``argmax``
and ``argmin`` are one variadic reduce over (value, index) pairs whose reducer prefers the better
value, NaN over anything (NumPy returns the first NaN), and on ties the smaller index -- so the
result is NumPy's first occurrence whatever order XLA combines elements in.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import control_flow as cf
from funcgrad.primitives import reductions as red
from funcgrad.primitives.scan import scan_p
from funcgrad.xla_bridge.emitter import (
    i64_array,
    lower_closed,
    register,
    tensor_type,
    widen_sub_byte,
    xla_dtype,
)
from funcgrad.xla_bridge.rules._complex_order import complex_compare, complex_select

from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel.ir import ShapedArray

# NOTE: [reductions without unit dimensions]
# XLA's CPU compiler hands reductions to YNNPACK, which runs one whose operand has a dimension of
# size 1 7-20x slower than the same reduction without it (a sum of x * y over the last axis of
# [8, 1, 128, 256]: 0.54 ms against 0.04 ms for [8, 128, 256]; over axis 2: 0.90 against 0.044 ms;
# one thread). Unit dimensions are what ``vmap`` of a function that adds a batch axis of one makes
# (the per-example gradients of bench/bench_transformer.py: 18 such reductions, 14 ms of a 137 ms
# program), so the rule reduces the operand reshaped without them (a bitcast for XLA) and reshapes
# the result back: the same elements combined by the same reducer. A reduction over unit
# dimensions only keeps its form (x + 0 is not x for -0.0).


def _reduce(ctx, x, op, init_value, axes):
    a, out = ctx.avals_in[0], ctx.avals_out[0]
    fb = ctx.fb
    dtype = xla_dtype(a.dtype)
    init = fb.const(init_value, dtype)
    shape = tuple(a.shape)
    if 1 in shape and any(shape[d] != 1 for d in axes):  # NOTE: [reductions without unit dimensions]
        kept = [d for d in range(len(shape)) if shape[d] != 1]
        squeezed = tuple(shape[d] for d in kept)
        x = fb.emit(
            f"stablehlo.reshape {x} : ({tensor_type(shape, dtype)}) -> {tensor_type(squeezed, dtype)}"
        )
        axes = [kept.index(d) for d in axes if shape[d] != 1]
        reduced = tuple(n for i, n in enumerate(squeezed) if i not in axes)
        r = _reduce_emit(fb, x, op, init, axes, squeezed, reduced, dtype)
        return fb.emit(
            f"stablehlo.reshape {r} : ({tensor_type(reduced, dtype)}) -> {tensor_type(out.shape, dtype)}"
        )
    return _reduce_emit(fb, x, op, init, axes, shape, tuple(out.shape), dtype)


def _reduce_emit(fb, x, op, init, axes, shape, out_shape, dtype):
    dims = ", ".join(str(int(d)) for d in axes)
    return fb.emit(
        f"stablehlo.reduce({x} init: {init}) applies {op} across dimensions = [{dims}] : "
        f"({tensor_type(shape, dtype)}, {tensor_type((), dtype)}) -> {tensor_type(out_shape, dtype)}"
    )


def _max_identity(dtype):
    return _fdt.extremum_identity(dtype, for_max=True)


def _min_identity(dtype):
    return _fdt.extremum_identity(dtype, for_max=False)


@register(red.reduce_sum_p)
def _reduce_sum(ctx, x, *, axes):
    op = "stablehlo.or" if ctx.avals_in[0].dtype == np.bool_ else "stablehlo.add"
    return _reduce(ctx, x, op, 0, axes)


@register(red.reduce_prod_p)
def _reduce_prod(ctx, x, *, axes):
    op = "stablehlo.and" if ctx.avals_in[0].dtype == np.bool_ else "stablehlo.multiply"
    return _reduce(ctx, x, op, 1, axes)


def _reduce_complex(ctx, x, direction, init_value, axes):
    # A reduce whose body picks the lexicographically larger/smaller complex value, as JAX's.
    a, out, fb = ctx.avals_in[0], ctx.avals_out[0], ctx.fb
    dtype = np.dtype(a.dtype)
    init = fb.const(init_value, dtype)
    r = fb.region()
    acc, new = r.fresh(), r.fresh()
    scalar = ShapedArray((), dtype)
    pick = complex_select(r, direction, acc, new, scalar)
    st = tensor_type((), dtype)
    r.raw(f'"stablehlo.return"({pick}) : ({st}) -> ()')
    head = f'"stablehlo.reduce"({x}, {init}) ({{\n{fb.indent}  ^bb0({acc}: {st}, {new}: {st}):\n'
    body = "\n".join(r.lines)
    types = f"({tensor_type(a.shape, dtype)}, {st}) -> {tensor_type(out.shape, dtype)}"
    tail = f"\n{fb.indent}}}) {{dimensions = {i64_array(axes)}}} : {types}"
    return fb.emit(head + body + tail)


@register(red.reduce_max_p)
def _reduce_max(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    if dtype.kind == "c":
        return _reduce_complex(ctx, x, "GT", _max_identity(dtype), axes)
    return _reduce(ctx, x, "stablehlo.maximum", _max_identity(dtype), axes)


@register(red.reduce_min_p)
def _reduce_min(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    if dtype.kind == "c":
        return _reduce_complex(ctx, x, "LT", _min_identity(dtype), axes)
    return _reduce(ctx, x, "stablehlo.minimum", _min_identity(dtype), axes)


@register(red.reduce_and_p)
def _reduce_and(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype  # (integers: bitwise, from every bit set)
    ones = True if dtype == np.bool_ else int(~np.zeros((), dtype))
    return _reduce(ctx, x, "stablehlo.and", ones, axes)


@register(red.reduce_or_p)
def _reduce_or(ctx, x, *, axes):
    return _reduce(ctx, x, "stablehlo.or", False if ctx.avals_in[0].dtype == np.bool_ else 0, axes)


def _arg_rule(direction, identity):
    def rule(ctx, x, *, axes, index_dtype):
        fb = ctx.fb
        a, out = ctx.avals_in[0], ctx.avals_out[0]
        (axis,) = axes
        vdt, idt = xla_dtype(a.dtype), np.dtype(index_dtype)
        vt, it = tensor_type(a.shape, vdt), tensor_type(a.shape, idt)
        sv, si = tensor_type((), vdt), tensor_type((), idt)
        sb = tensor_type((), np.bool_)
        iota = fb.emit(f"stablehlo.iota dim = {int(axis)} : {it}")
        v0 = fb.const(identity(vdt), vdt)
        i0 = fb.const(0, idt)
        # Region: block arguments are (acc value, acc index, new value, new index).
        r = fb.region()
        av, ai, bv, bi = (r.fresh() for _ in range(4))
        if vdt.kind == "c":
            # Lexicographic (XLA has no ordered compare of complex values; it aborts on one).
            better = complex_compare(r, direction, av, bv, ShapedArray((), vdt))
        else:
            better = r.compare(direction, av, bv, vdt, ())
        if _fdt.kind(vdt) in "fc":
            a_nan = r.compare("NE", av, av, vdt, ())
            b_nan = r.compare("NE", bv, bv, vdt, ())
            b_num = r.emit(f"stablehlo.not {b_nan} : {sb}")
            better = r.emit(
                f"stablehlo.or {better}, {r.emit(f'stablehlo.and {a_nan}, {b_num} : {sb}')} : {sb}"
            )
            both_nan = r.emit(f"stablehlo.and {a_nan}, {b_nan} : {sb}")
            equal = r.emit(f"stablehlo.or {r.compare('EQ', av, bv, vdt, ())}, {both_nan} : {sb}")
        else:
            equal = r.compare("EQ", av, bv, vdt, ())
        first = r.compare("LT", ai, bi, idt, ())
        take_a = r.emit(f"stablehlo.or {better}, {r.emit(f'stablehlo.and {equal}, {first} : {sb}')} : {sb}")
        rv = r.emit(f"stablehlo.select {take_a}, {av}, {bv} : {sb}, {sv}")
        ri = r.emit(f"stablehlo.select {take_a}, {ai}, {bi} : {sb}, {si}")
        r.raw(f'"stablehlo.return"({rv}, {ri}) : ({sv}, {si}) -> ()')
        ov, oi = tensor_type(out.shape, vdt), tensor_type(out.shape, idt)
        head = (
            f'"stablehlo.reduce"({x}, {iota}, {v0}, {i0}) ({{\n'
            f"{fb.indent}  ^bb0({av}: {sv}, {ai}: {si}, {bv}: {sv}, {bi}: {si}):\n"
        )
        body = "\n".join(r.lines)
        types = f"({vt}, {it}, {sv}, {si}) -> ({ov}, {oi})"
        tail = f"\n{fb.indent}}}) {{dimensions = array<i64: {int(axis)}>}} : {types}"
        _, idx = fb.emit(head + body + tail, nres=2)
        return idx

    rule.__name__ = f"_arg_{direction.lower()}"
    return rule


# (XLA fails on an arg-reduction of 2-bit integers: widened.)
register(red.argmax_p)(widen_sub_byte(_arg_rule("GT", _max_identity)))
register(red.argmin_p)(widen_sub_byte(_arg_rule("LT", _min_identity)))


# XLA's CPU compiler aborts the process on a reduction whose computation holds a conditional or a
# loop (jax 0.10.2 aborts there too: "ComputeOutputToInputIndexing is not implemented for opcode
# conditional"). Such a reducer is refused here: the eager reduce then takes the pairwise tree in
# NumPy (primitives/reductions.py, which is how it computed before it ran compiled), and a staged one
# gets this error instead of a crash.
_CONTROL_FLOW = frozenset({cf.cond_p, cf.while_p, scan_p})


def _refuse_control_flow(jaxpr) -> None:
    found = sorted({e.primitive.name for e in jaxpr.jaxpr.eqns if e.primitive in _CONTROL_FLOW})
    if found:
        raise NotImplementedError(
            f"lax.reduce: XLA's CPU compiler cannot compile a reduction whose computation contains "
            f"{' or '.join(found)} (it aborts the process); write the computation without control flow, "
            "e.g. choose between the two accumulators with lax.select(pred, a, b) instead of lax.cond"
        )


@register(red.reduce_p)
def _reduce_generic(ctx, *args, jaxpr, dimensions):
    _refuse_control_flow(jaxpr)
    fb = ctx.fb
    n = len(args) // 2
    dtypes = [xla_dtype(a.dtype) for a in ctx.avals_in[:n]]
    scalars = [tensor_type((), d) for d in dtypes]
    r = fb.region()
    accs = [r.fresh() for _ in dtypes]
    xs = [r.fresh() for _ in dtypes]
    results = lower_closed(r, jaxpr, [*accs, *xs])
    r.raw(f'"stablehlo.return"({", ".join(results)}) : ({", ".join(scalars)}) -> ()')
    block = ", ".join(f"{a}: {t}" for a, t in zip([*accs, *xs], [*scalars, *scalars]))
    in_types = [tensor_type(a.shape, d) for a, d in zip(ctx.avals_in[:n], dtypes)] + scalars
    out_types = [tensor_type(a.shape, d) for a, d in zip(ctx.avals_out, dtypes)]
    head = f'"stablehlo.reduce"({", ".join(args)}) ({{\n{fb.indent}  ^bb0({block}):\n'
    outs = "(" + ", ".join(out_types) + ")" if n > 1 else out_types[0]
    tail = f"\n{fb.indent}}}) {{dimensions = {i64_array(dimensions)}}} : ({', '.join(in_types)}) -> {outs}"
    res = fb.emit(head + "\n".join(r.lines) + tail, nres=n)
    return res if isinstance(res, list) else [res]
