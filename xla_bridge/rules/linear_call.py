"""Lowering rule of ``linear_call`` (primitives/linear_call.py): the callee, inlined on its operands
(the transpose only defines derivatives, taken before lowering).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.linear_call import linear_call_p
from funcgrad.xla_bridge.emitter import lower_closed, register


@register(linear_call_p)
def _linear_call(ctx, *args, callee, transpose, num_res):
    del transpose, num_res
    return lower_closed(ctx.fb, callee, list(args))
