"""Lowering rules of the rematerialisation family (primitives/remat.py).

``checkpoint`` as written by the user is inlined: its partial evaluation already decided what is
recomputed, in the jaxpr the transformations produced. A *differentiated* ``checkpoint`` (the
backward program of a checkpoint: recomputation, then the transposed tangent work) is lowered
inside a conditional XLA cannot resolve at compile time (NOTE: [remat on XLA]).
(``name``, ``checkpoint_name``, is the naming family's: rules/naming.py.)

Layer: xla_bridge (compiler half). Imports the primitive catalog, ``xla_bridge.emitter`` and the
placement family's rules (``rules/placement.py``: the barrier a differentiated checkpoint reads its
inputs through).

# NOTE: [remat on XLA]
# Recomputing in the backward pass saves memory only if XLA recomputes: if it notices that the
# recomputation repeats forward-pass equations on the same inputs, common-subexpression
# elimination merges them, and the merged values then live from the forward pass to the backward
# pass -- more memory than no checkpoint at all (measured with an 8-layer tanh MLP: 2.25 MiB of
# XLA temp with checkpoint vs 0.5 MiB without; batch 4096, width 512: 128 MiB vs 72 MiB; jax
# 0.10 lowers the same way and gets the same numbers). ``stablehlo.optimization_barrier`` does not
# prevent it on XLA:CPU, which removes barriers before its simplification passes. So a
# differentiated checkpoint runs in the true branch of a ``stablehlo.if`` whose predicate is
# ``partition_id < 2**32 - 1`` -- always true, but not a constant XLA can fold -- as JAX lowered
# remat before optimization barriers existed (on ``rng_uniform(0, 1) < 2``, which costs a ThreeFry
# expansion per checkpoint at compile time). The false branch returns zeros; since the true branch does
# real work, XLA's conditional simplifier keeps the conditional (it only turns conditionals with
# cheap branches into selects). Values inside the branch are distinct from the forward pass's, so
# nothing is merged, and the branch's temporaries are live only while it runs.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.remat import checkpoint_p
from funcgrad.xla_bridge.emitter import aval_type, lower_closed, register, tensor_type
from funcgrad.xla_bridge.rules.placement import barrier

_U32 = tensor_type((), np.uint32)
_PRED = tensor_type((), np.bool_)


@register(checkpoint_p)
def _checkpoint(ctx, *args, jaxpr, policy, differentiated):
    if not differentiated or not ctx.avals_out or ctx.fb.module.spmd is not None:
        # (A program for several devices cannot read partition_id outside a manual computation:
        # XLA's SPMD partitioner refuses it, so there the body is inlined as it is.)
        if differentiated:
            args = barrier(ctx.fb, args, ctx.avals_in)  # NOTE: [remat barrier]
        return lower_closed(ctx.fb, jaxpr, args)
    fb = ctx.fb
    out_types = [aval_type(a) for a in ctx.avals_out]
    pid = fb.emit(f"stablehlo.partition_id : {_U32}")
    pred = fb.compare("LT", pid, fb.const(np.iinfo(np.uint32).max, np.uint32), np.uint32, ())
    taken = fb.region()
    # The body reads its inputs (the cotangents among them) through one barrier: NOTE: [remat barrier]
    _return(taken, lower_closed(taken, jaxpr, barrier(taken, args, ctx.avals_in)), out_types)
    never = fb.region()
    zeros = [never.broadcast(never.const(0, a.dtype), a.update(shape=()), a.shape) for a in ctx.avals_out]
    _return(never, zeros, out_types)
    text = (
        f'"stablehlo.if"({pred}) ({{\n'
        + "\n".join(taken.lines)
        + f"\n{fb.indent}}}, {{\n"
        + "\n".join(never.lines)
        + f"\n{fb.indent}}}) : ({_PRED}) -> ({', '.join(out_types)})"
    )
    return fb.emit_results(text, len(out_types))


def _return(r, outs, types) -> None:
    r.raw(f'"stablehlo.return"({", ".join(outs)}) : ({", ".join(types)}) -> ()')
