"""Lowering rules of structured control flow (primitives/control_flow.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.

- ``cond`` -> ``stablehlo.case`` on an ``i32`` index (a boolean index is converted, any index is
  clamped to the branch range as the eager impl does); branch regions read the operands from the
  enclosing function (implicit capture, as JAX lowers it).
- ``while`` -> ``stablehlo.while`` whose loop-carried values are all operands (cond consts, body
  consts, carry), so the regions only read their block arguments.
- ``scan`` -> ``stablehlo.while`` carrying ``(i, consts, carry, xs, ys buffers)``: step ``k``
  reads ``xs[idx]`` with ``dynamic_slice`` and writes ``ys[idx]`` with ``dynamic_update_slice``
  (``idx = k``, or ``length - 1 - k`` when ``reverse``). ``unroll=u`` emits ``u`` steps per loop
  iteration; the ``length % u`` remaining steps are emitted after the loop.

Regions are emitted with ``FunctionBuilder.region()`` (shared SSA names, own constants) in MLIR's
generic form, like the variadic reduce of ``rules/reductions.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from funcgrad.primitives.control_flow import cond_p, scan_p, while_p
from funcgrad.xla_bridge.emitter import aval_type, lower_closed, register, tensor_type

_I64 = tensor_type((), np.int64)
_I32 = tensor_type((), np.int32)
_PRED = tensor_type((), np.bool_)


def _return(r, outs: Sequence[str], types: Sequence[str]) -> None:
    r.raw(f'"stablehlo.return"({", ".join(outs)}) : ({", ".join(types)}) -> ()')


def _results(types: Sequence[str]) -> str:
    return types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"


def _region(fb, r, block_args: Sequence[tuple[str, str]] = ()) -> str:
    label = ""
    if block_args:
        label = f"{fb.indent}  ^bb0({', '.join(f'{n}: {t}' for n, t in block_args)}):\n"
    return label + "\n".join(r.lines)


# ----------------------------------------------------------------------------------------------
# cond


@register(cond_p)
def _cond(ctx, index, *ops, branches):
    fb = ctx.fb
    idx = fb.convert(index, ctx.avals_in[0], np.int32)
    lo, hi = fb.const(0, np.int32), fb.const(len(branches) - 1, np.int32)
    idx = fb.emit(f"stablehlo.clamp {lo}, {idx}, {hi} : ({_I32}, {_I32}, {_I32}) -> {_I32}")
    out_types = [aval_type(a) for a in ctx.avals_out]
    regions = []
    for b in branches:
        r = fb.region()
        _return(r, lower_closed(r, b, ops), out_types)
        regions.append(_region(fb, r))
    sep = f"\n{fb.indent}}}, {{\n"
    results = ", ".join(out_types)
    text = f'"stablehlo.case"({idx}) ({{\n{sep.join(regions)}\n{fb.indent}}}) : ({_I32}) -> ({results})'
    return fb.emit_results(text, len(out_types))


# ----------------------------------------------------------------------------------------------
# while


def _while_op(fb, inits: Sequence[str], types: Sequence[str], emit_cond, emit_body) -> list[str]:
    """``stablehlo.while`` over ``inits``; ``emit_cond(r, args) -> pred`` and
    ``emit_body(r, args) -> new args`` fill the regions."""
    rc = fb.region()
    cargs = [rc.fresh() for _ in inits]
    pred = emit_cond(rc, cargs)
    _return(rc, [pred], [_PRED])
    rb = fb.region()
    bargs = [rb.fresh() for _ in inits]
    _return(rb, emit_body(rb, bargs), types)
    text = (
        f'"stablehlo.while"({", ".join(inits)}) ({{\n{_region(fb, rc, list(zip(cargs, types)))}\n'
        f"{fb.indent}}}, {{\n{_region(fb, rb, list(zip(bargs, types)))}\n"
        f"{fb.indent}}}) : ({', '.join(types)}) -> {_results(types)}"
    )
    return fb.emit_results(text, len(inits))


@register(while_p)
def _while(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    types = [aval_type(a) for a in ctx.avals_in]

    def emit_cond(r, a):
        return lower_closed(r, cond_jaxpr, [*a[:nc], *a[nc + nb :]])[0]

    def emit_body(r, a):
        return [*a[: nc + nb], *lower_closed(r, body_jaxpr, a[nc:])]

    return _while_op(ctx.fb, args, types, emit_cond, emit_body)[nc + nb :]


# ----------------------------------------------------------------------------------------------
# scan


def _scan_step(r, k: str, state, *, jaxpr, nc, ncar, length, reverse, x_avals, y_avals):
    """One scan step at position ``k`` (an i64 SSA value): returns the new (carry, ys)."""
    consts, carry, xs, ys = state
    idx = k
    if reverse:
        last = r.const(length - 1, np.int64)
        idx = r.emit(f"stablehlo.subtract {last}, {k} : {_I64}")
    zero = r.const(0, np.int64)
    slices = []
    for x, a in zip(xs, x_avals):
        starts = ", ".join([idx] + [zero] * (a.ndim - 1))
        one = tensor_type((1, *a.shape[1:]), a.dtype)
        s = r.emit(
            f"stablehlo.dynamic_slice {x}, {starts}, sizes = [{', '.join(['1', *map(str, a.shape[1:])])}] : "
            f"({aval_type(a)}, {', '.join([_I64] * a.ndim)}) -> {one}"
        )
        slices.append(r.emit(f"stablehlo.reshape {s} : ({one}) -> {tensor_type(a.shape[1:], a.dtype)}"))
    outs = lower_closed(r, jaxpr, [*consts, *carry, *slices])
    new_ys = []
    for y, buf, a in zip(outs[ncar:], ys, y_avals):
        one = tensor_type((1, *a.shape[1:]), a.dtype)
        y1 = r.emit(f"stablehlo.reshape {y} : ({tensor_type(a.shape[1:], a.dtype)}) -> {one}")
        starts = ", ".join([idx] + [zero] * (a.ndim - 1))
        new_ys.append(
            r.emit(
                f"stablehlo.dynamic_update_slice {buf}, {y1}, {starts} : "
                f"({aval_type(a)}, {one}, {', '.join([_I64] * a.ndim)}) -> {aval_type(a)}"
            )
        )
    return outs[:ncar], new_ys


@register(scan_p)
def _scan(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    fb = ctx.fb
    nc, ncar = num_consts, num_carry
    consts, init, xs = list(args[:nc]), list(args[nc : nc + ncar]), list(args[nc + ncar :])
    x_avals = ctx.avals_in[nc + ncar :]
    y_avals = ctx.avals_out[ncar:]
    ys = [fb.const(0, a.dtype, a.shape) for a in y_avals]
    step = dict(
        jaxpr=jaxpr, nc=nc, ncar=ncar, length=length, reverse=reverse, x_avals=x_avals, y_avals=y_avals
    )
    u = max(1, min(int(unroll), length)) if length else 1
    n_iter, rest = divmod(length, u)
    carry = init
    if n_iter:
        types = [_I64, *(aval_type(a) for a in ctx.avals_in), *(aval_type(a) for a in y_avals)]
        n_state = 1 + nc + ncar + len(xs)

        def emit_cond(r, a):
            bound = r.const(n_iter, np.int64)
            return r.compare("LT", a[0], bound, np.int64, ())

        def emit_body(r, a):
            i, cs, car, xv, yv = (
                a[0],
                a[1 : 1 + nc],
                a[1 + nc : 1 + nc + ncar],
                a[1 + nc + ncar : n_state],
                a[n_state:],
            )
            for j in range(u):
                k = i
                if u > 1:
                    k = r.emit(f"stablehlo.multiply {i}, {r.const(u, np.int64)} : {_I64}")
                    if j:
                        k = r.emit(f"stablehlo.add {k}, {r.const(j, np.int64)} : {_I64}")
                car, yv = _scan_step(r, k, (cs, car, xv, yv), **step)
            i1 = r.emit(f"stablehlo.add {i}, {r.const(1, np.int64)} : {_I64}")
            return [i1, *cs, *car, *xv, *yv]

        outs = _while_op(fb, [fb.const(0, np.int64), *consts, *init, *xs, *ys], types, emit_cond, emit_body)
        carry, ys = outs[1 + nc : 1 + nc + ncar], outs[n_state:]
    for j in range(rest):
        carry, ys = _scan_step(fb, fb.const(n_iter * u + j, np.int64), (consts, carry, xs, ys), **step)
    return [*carry, *ys]
