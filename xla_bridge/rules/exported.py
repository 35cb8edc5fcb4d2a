"""Lowering rule of the exported-call family (primitives/exported.py): the callee's functions,
prepared by ``xla_bridge.portable.embeddable`` (NOTE: [embedding an exported module]), are
appended to the caller's module once, and the equation becomes a ``func.call`` of its ``@main``
(with the platform index first when the module was exported for several platforms).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``; the
prepared text comes in the equation's parameter, so nothing here touches jaxlib.
"""

from __future__ import annotations

from funcgrad.primitives.exported import call_exported_p
from funcgrad.xla_bridge.emitter import LoweringError, aval_type, register


@register(call_exported_p)
def _call_exported(ctx, *args, callee):
    em = callee.embedded
    mb = ctx.fb.module
    if em.main not in mb._symbols:
        mb._symbols.update(em.symbols)
        for lines in em.functions:
            mb.functions.append(["  " + line for line in lines])
    operands = [args[i] for i in callee.kept]
    in_types = [aval_type(ctx.avals_in[i]) for i in callee.kept]
    if callee.platform_index is not None:
        idx_type = em.in_types[0]
        operands.insert(0, ctx.fb.emit(f"stablehlo.constant dense<{callee.platform_index}> : {idx_type}"))
        in_types.insert(0, idx_type)
    if in_types != list(em.in_types):
        raise LoweringError(
            f"exported {callee.name}: the call's types ({', '.join(in_types)}) differ from the "
            f"prepared module's ({', '.join(em.in_types)}) (internal error)"
        )
    out_types = [aval_type(a) for a in ctx.avals_out]
    rhs = f"func.call @{em.main}({', '.join(operands)}) : ({', '.join(in_types)}) -> ({', '.join(out_types)})"
    return ctx.fb.emit_results(rhs, len(out_types))
