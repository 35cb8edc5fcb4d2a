"""Lowering rules of the rematerialisation family (primitives/remat.py): ``checkpoint`` is
inlined (see rules/call.py); ``optimization_barrier`` becomes ``stablehlo.optimization_barrier``,
which keeps XLA from merging a checkpoint's recomputation with the forward pass (NOTE: [remat
barrier]).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.lowering``.
"""

from __future__ import annotations

from primitives.remat import optimization_barrier_p
from xla_bridge.lowering import aval_type, register


@register(optimization_barrier_p)
def _optimization_barrier(ctx, *args):
    if not args:
        return []
    types = ", ".join(aval_type(a) for a in ctx.avals_in)
    outs = ctx.fb.emit(f"stablehlo.optimization_barrier {', '.join(args)} : {types}", nres=len(args))
    return outs if isinstance(outs, list) else [outs]
