"""Lowering rule of ``scan`` (primitives/scan.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, ``xla_bridge.emitter`` and the
region helpers of ``rules/control_flow.py``.

- ``scan`` -> ``stablehlo.while`` carrying ``(i, consts, carry, xs, ys buffers)``: step ``k``
  reads ``xs[idx]`` with ``dynamic_slice`` and writes ``ys[idx]`` with ``dynamic_update_slice``
  (``idx = k``, or ``length - 1 - k`` when ``reverse``). ``unroll=u`` emits ``u`` steps per loop
  iteration; the ``length % u`` remaining steps are emitted after the loop, and a fully unrolled
  scan (``u = length``) is its steps without a loop.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._unreduced_rules import unreduced_of
from funcgrad.primitives.callbacks import ordered_callback_in
from funcgrad.primitives.scan import scan_p
from funcgrad.xla_bridge.emitter import aval_type, lower_closed, register, tensor_type, typed_constraint
from funcgrad.xla_bridge.rules.control_flow import _I64, _while_op


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
        if unreduced_of(a):
            y1 = typed_constraint(r, y1, a.update(shape=(1, *a.shape[1:]), sharding=a._sharding))
        starts = ", ".join([idx] + [zero] * (a.ndim - 1))
        buf = r.emit(
            f"stablehlo.dynamic_update_slice {buf}, {y1}, {starts} : "
            f"({aval_type(a)}, {one}, {', '.join([_I64] * a.ndim)}) -> {aval_type(a)}"
        )
        new_ys.append(typed_constraint(r, buf, a) if unreduced_of(a) else buf)  # (as _ys_buffer's)
    return outs[:ncar], new_ys


def _ys_buffer(fb, aval) -> str:
    """The zeros a stacked output is written into. An unreduced one (NOTE: [unreduced values])
    is typed so, as JAX's: left untyped, XLA's partitioner takes the zeros as replicated and
    all-reduces each step's partial sums into them, and the result, still typed unreduced, is
    summed again by its next reshard (the gradient of weights reduced over the batch's axis,
    scanned over layers, came out times the axis' size)."""
    buf = fb.const(0, aval.dtype, aval.shape)
    if unreduced_of(aval):
        buf = typed_constraint(fb, buf, aval)
    return buf


@register(scan_p)
def _scan(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    fb = ctx.fb
    nc, ncar = num_consts, num_carry
    consts, init, xs = list(args[:nc]), list(args[nc : nc + ncar]), list(args[nc + ncar :])
    x_avals = ctx.avals_in[nc + ncar :]
    y_avals = ctx.avals_out[ncar:]
    ys = [_ys_buffer(fb, a) for a in y_avals]
    step = dict(
        jaxpr=jaxpr, nc=nc, ncar=ncar, length=length, reverse=reverse, x_avals=x_avals, y_avals=y_avals
    )
    u = max(1, min(int(unroll), length)) if length else 1
    n_iter, rest = divmod(length, u)
    if u != 1 and n_iter == 1 and not rest:
        n_iter, rest = 0, length  # (fully unrolled: the steps in a row and no loop, as JAX's)
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

        inits = [fb.const(0, np.int64), *consts, *init, *xs, *ys]
        # (NOTE: [ordered effects in control flow]: the loop carries the body's token)
        outs = _while_op(fb, inits, types, emit_cond, emit_body, ordered_callback_in(jaxpr))
        carry, ys = outs[1 + nc : 1 + nc + ncar], outs[n_state:]
    for j in range(rest):
        carry, ys = _scan_step(fb, fb.const(n_iter * u + j, np.int64), (consts, carry, xs, ys), **step)
    return [*carry, *ys]
