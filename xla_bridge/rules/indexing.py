"""Lowering rules of the indexing family (primitives/indexing.py): ``dynamic_slice`` and
``dynamic_update_slice``, which clamp their start indices natively, like their impls.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from funcgrad.xla_bridge.emitter import aval_type, i64_array, register


@register(dynamic_slice_p)
def _dynamic_slice(ctx, x, *starts, slice_sizes):
    if not starts:
        return x
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic(
        "stablehlo.dynamic_slice",
        [x, *starts],
        types,
        [aval_type(ctx.avals_out[0])],
        f"slice_sizes = {i64_array(slice_sizes)}",
    )


@register(dynamic_update_slice_p)
def _dynamic_update_slice(ctx, x, update, *starts):
    if not starts:
        return update
    types = [aval_type(a) for a in ctx.avals_in]
    return ctx.fb.generic(
        "stablehlo.dynamic_update_slice", [x, update, *starts], types, [aval_type(ctx.avals_out[0])]
    )
