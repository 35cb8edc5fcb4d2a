"""Lowering rules of the rematerialisation family (primitives/remat.py): ``checkpoint`` is
inlined (its partial evaluation already decided what is recomputed, in the jaxpr the
transformations produced); ``optimization_barrier`` becomes ``stablehlo.optimization_barrier``,
which keeps XLA from merging a checkpoint's recomputation with the forward pass (NOTE: [remat
barrier]).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from primitives.remat import checkpoint_p, optimization_barrier_p
from xla_bridge.emitter import aval_type, lower_closed, register


@register(checkpoint_p)
def _checkpoint(ctx, *args, jaxpr, policy):
    return lower_closed(ctx.fb, jaxpr, args)


@register(optimization_barrier_p)
def _optimization_barrier(ctx, *args):
    if not args:
        return []
    types = ", ".join(aval_type(a) for a in ctx.avals_in)
    return ctx.fb.emit_results(f"stablehlo.optimization_barrier {', '.join(args)} : {types}", len(args))
