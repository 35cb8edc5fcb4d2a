"""Lowering rule of the call family (primitives/call.py): a nested ``jit`` becomes a ``func.call``
of a private function, lowered once per distinct inner jaxpr (see the ``xla_bridge.lowering``
docstring); XLA inlines it when it compiles the module.

A nested call's ``device`` parameter does not matter here: the enclosing program runs where it
was placed, and the inner call is part of it.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.call import jit_p
from funcgrad.xla_bridge.emitter import aval_type, register


@register(jit_p)
def _jit(ctx, *args, jaxpr, name, donated_invars, device=None):
    sym = ctx.fb.module.private_function(jaxpr, str(name))
    out_types = [aval_type(a) for a in ctx.avals_out]
    in_types = [aval_type(a) for a in ctx.avals_in]
    rhs = f"func.call @{sym}({', '.join(args)}) : ({', '.join(in_types)}) -> ({', '.join(out_types)})"
    return ctx.fb.emit_results(rhs, len(out_types))
