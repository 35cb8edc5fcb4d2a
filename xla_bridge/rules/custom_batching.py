"""Lowering rule of ``custom_vmap_call`` (primitives/custom_batching.py): the call is inlined.

A staged program is past every ``vmap`` that could use the rule (the rule has already produced
the batched equations), so only the body is lowered.

Layer: xla_bridge (compiler half). Imports the catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.custom_batching import custom_vmap_call_p
from funcgrad.xla_bridge.emitter import lower_closed, register


@register(custom_vmap_call_p)
def _custom_vmap_call(ctx, *args, call, **_):
    return lower_closed(ctx.fb, call, args)
