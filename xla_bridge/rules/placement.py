"""Lowering rules of the placement family (primitives/placement.py).

``optimization_barrier`` becomes ``stablehlo.optimization_barrier`` (``barrier``, also the one a
differentiated checkpoint reads its inputs through: NOTE: [remat barrier]); ``device_put`` between
memory spaces is the identity: on the CPU the host memory is the device's (JAX's lowering emits
nothing there either; NOTE: [offloaded residuals]).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.placement import dce_sink_p, device_put_p, optimization_barrier_p
from funcgrad.xla_bridge.emitter import aval_type, register


@register(optimization_barrier_p)
def _optimization_barrier(ctx, *args):
    return barrier(ctx.fb, args, ctx.avals_in)


def barrier(fb, args, avals) -> list:
    """``args`` (of ``avals``) through one ``stablehlo.optimization_barrier`` in the function
    being built by ``fb``."""
    if not args:
        return []
    types = ", ".join(aval_type(a) for a in avals)
    return fb.emit_results(f"stablehlo.optimization_barrier {', '.join(args)} : {types}", len(args))


@register(dce_sink_p)
def _dce_sink(ctx, x, *, prevent_mlir_dce):
    # (as JAX's lowering: nothing, or its side-effecting FFI call, which jaxlib's CPU client handles)
    if prevent_mlir_dce:
        rhs = (
            f'stablehlo.custom_call @dce_sink({x}) {{backend_config = "", has_side_effect = true, '
            f"mhlo.backend_config = {{}}}} : ({aval_type(ctx.avals_in[0])}) -> ()"
        )
        ctx.fb.emit_results(rhs, 0)
    return []


@register(device_put_p)
def _device_put(ctx, *xs, devices, srcs, copy_semantics):
    return list(xs)  # (one RAM on the CPU: NOTE: [offloaded residuals])
