"""Lowering rules of the implicit-differentiation primitives (primitives/implicit.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.

Under ``jit`` a ``custom_linear_solve`` or ``custom_root`` is its solver: the ``solve`` jaxpr is
emitted inline on its constants and the right-hand side (or the initial guess). The other jaxprs
only define derivatives, which were taken before lowering.
"""

from __future__ import annotations

from funcgrad.primitives.implicit import custom_linear_solve_p, custom_root_p, split_consts
from funcgrad.xla_bridge.emitter import lower_closed, register


@register(custom_linear_solve_p)
def _custom_linear_solve(ctx, *args, const_lengths, jaxprs):
    consts, b = split_consts(args, const_lengths)
    return lower_closed(ctx.fb, jaxprs[2], [*consts[2], *b])


@register(custom_root_p)
def _custom_root(ctx, *args, const_lengths, jaxprs):
    consts, guess = split_consts(args, const_lengths)
    return lower_closed(ctx.fb, jaxprs[1], [*consts[1], *guess])
