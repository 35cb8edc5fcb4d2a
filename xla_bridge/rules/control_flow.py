"""Lowering rules of structured control flow (primitives/control_flow.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.

- ``cond`` -> ``stablehlo.case`` on an ``i32`` index (a boolean index is converted, any index is
  clamped to the branch range as the eager impl does); branch regions read the operands from the
  enclosing function (implicit capture, as JAX lowers it).
- ``while`` -> ``stablehlo.while`` whose loop-carried values are all operands (cond consts, body
  consts, carry), so the regions only read their block arguments.
- ``scan``: in ``rules/scan.py`` (a ``stablehlo.while`` too, built with ``_while_op``).

# NOTE: [ordered effects in control flow]
# Ordered callbacks (``debug.print(..., ordered=True)``, ordered ``io_callback``) run in program
# order because each takes and returns its body's token (``FunctionBuilder.effect_token``,
# rules/callbacks.py). A region is a body of its own, so a cond branch or a loop body holding one
# takes the enclosing body's token and gives back its last one, as JAX threads its ordered
# effects' tokens through ``cond``/``while``: the case returns it as one more result, the while
# carries it (one more loop-carried value). Without it each region started its own chain and XLA
# ran the branches' prints in any order (optax's verbose zoom linesearch printed its messages out
# of order).

Regions are emitted with ``FunctionBuilder.region()`` (shared SSA names, own constants) in MLIR's
generic form, like the variadic reduce of ``rules/reductions.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from funcgrad.primitives.callbacks import ordered_callback_in
from funcgrad.primitives.control_flow import any_lane, cond_p, platform_index_p, while_p
from funcgrad.xla_bridge.emitter import aval_type, lower_closed, register, tensor_type

_I64 = tensor_type((), np.int64)
_I32 = tensor_type((), np.int32)
_PRED = tensor_type((), np.bool_)
_TOKEN = "!stablehlo.token"


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


def _platform_branch(branches_platforms, platform: str):
    """The branch of a platform-dependent cond the platform compiles (NOTE: [platform-dependent
    conds] in primitives/control_flow.py): the first naming it, else the default (``None``)."""
    for i, names in enumerate(branches_platforms):
        if names is None or platform in names:
            return i
    raise NotImplementedError(  # (JAX's words: its platform_index lowering fails first)
        f"MLIR translation rule for primitive 'platform_index(platforms={branches_platforms})' not "
        f"found for platform {platform}"
    )


@register(platform_index_p)
def _platform_index(ctx, *, platforms):
    return ctx.fb.const(_platform_branch(platforms, ctx.fb.module.platform), np.int32)


@register(cond_p)
def _cond(ctx, index, *ops, branches, branches_platforms=None):
    fb = ctx.fb
    # (no clamp, as JAX's lowering: switch clamps its index in the jaxpr, cond's comes from a
    # bool, and XLA's case runs the last branch for an index out of range, as JAX's cond does)
    idx = fb.convert(index, ctx.avals_in[0], np.int32)
    if branches_platforms is not None:
        # As JAX's: only the compiled platform's branch is lowered (another's may call kernels this
        # platform lacks), behind a case mapping the index to it
        kept = _platform_branch(branches_platforms, fb.module.platform)
        regions = []
        for _ in branches:
            r = fb.region()
            _return(r, [r.const(0, np.int32)], [_I32])
            regions.append(_region(fb, r))
        sep = f"\n{fb.indent}}}, {{\n"
        idx = fb.emit(
            f'"stablehlo.case"({idx}) ({{\n{sep.join(regions)}\n{fb.indent}}}) : ({_I32}) -> {_I32}'
        )
        branches = (branches[kept],)
    out_types = [aval_type(a) for a in ctx.avals_out]
    ordered = any(ordered_callback_in(b) for b in branches)  # NOTE: [ordered effects in control flow]
    token = _body_token(fb) if ordered else None
    regions = []
    for b in branches:
        r = fb.region()
        r.effect_token = token  # (implicit capture, as the operands)
        outs = lower_closed(r, b, ops)
        if ordered:
            outs, types = [*outs, r.effect_token], [*out_types, _TOKEN]
        else:
            types = out_types
        _return(r, outs, types)
        regions.append(_region(fb, r))
    sep = f"\n{fb.indent}}}, {{\n"
    types = [*out_types, _TOKEN] if ordered else out_types
    text = (
        f'"stablehlo.case"({idx}) ({{\n{sep.join(regions)}\n{fb.indent}}}) : ({_I32}) -> ({", ".join(types)})'
    )
    outs = fb.emit_results(text, len(types))
    if ordered:
        fb.effect_token = outs.pop()
    return outs


def _body_token(fb) -> str:
    """The body's current effect token (a fresh one when nothing ordered ran before)."""
    if fb.effect_token is None:
        fb.effect_token = fb.emit("stablehlo.after_all : !stablehlo.token")
    return fb.effect_token


# ----------------------------------------------------------------------------------------------
# while


def _while_op(
    fb, inits: Sequence[str], types: Sequence[str], emit_cond, emit_body, ordered=False
) -> list[str]:
    """``stablehlo.while`` over ``inits``; ``emit_cond(r, args) -> pred`` and
    ``emit_body(r, args) -> new args`` fill the regions. ``ordered``: the loop holds ordered
    callbacks, and carries the body's token (NOTE: [ordered effects in control flow])."""
    inits, types = list(inits), list(types)
    if ordered:
        inits, types = [*inits, _body_token(fb)], [*types, _TOKEN]
    n = len(inits) - ordered
    rc = fb.region()
    cargs = [rc.fresh() for _ in inits]
    rc.effect_token = cargs[-1] if ordered else None
    pred = emit_cond(rc, cargs[:n])
    _return(rc, [pred], [_PRED])
    rb = fb.region()
    bargs = [rb.fresh() for _ in inits]
    rb.effect_token = bargs[-1] if ordered else None
    new = emit_body(rb, bargs[:n])
    _return(rb, [*new, rb.effect_token] if ordered else new, types)
    text = (
        f'"stablehlo.while"({", ".join(inits)}) ({{\n{_region(fb, rc, list(zip(cargs, types)))}\n'
        f"{fb.indent}}}, {{\n{_region(fb, rb, list(zip(bargs, types)))}\n"
        f"{fb.indent}}}) : ({', '.join(types)}) -> {_results(types)}"
    )
    outs = fb.emit_results(text, len(inits))
    if ordered:
        fb.effect_token = outs.pop()
    return outs


@register(while_p)
def _while(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    types = [aval_type(a) for a in ctx.avals_in]

    cond = any_lane(cond_jaxpr)  # (a batched predicate: while any lane, NOTE: [batched while predicates])

    def emit_cond(r, a):
        return lower_closed(r, cond, [*a[:nc], *a[nc + nb :]])[0]

    def emit_body(r, a):
        return [*a[: nc + nb], *lower_closed(r, body_jaxpr, a[nc:])]

    ordered = ordered_callback_in(body_jaxpr) or ordered_callback_in(cond_jaxpr)
    return _while_op(ctx.fb, args, types, emit_cond, emit_body, ordered)[nc + nb :]


# ----------------------------------------------------------------------------------------------
# scan
