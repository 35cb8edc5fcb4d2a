"""Lowering rules of structured control flow (primitives/control_flow.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.

- ``cond`` -> ``stablehlo.case`` on an ``i32`` index (a boolean index is converted, any index is
  clamped to the branch range as the eager impl does); branch regions read the operands from the
  enclosing function (implicit capture, as JAX lowers it).
- ``while`` -> ``stablehlo.while`` whose loop-carried values are all operands (cond consts, body
  consts, carry), so the regions only read their block arguments.
- ``scan``: in ``rules/scan.py`` (a ``stablehlo.while`` too, built with ``_while_op``).

Regions are emitted with ``FunctionBuilder.region()`` (shared SSA names, own constants) in MLIR's
generic form, like the variadic reduce of ``rules/reductions.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from funcgrad.primitives.control_flow import cond_p, while_p
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
