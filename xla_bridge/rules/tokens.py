"""Lowering rules of the token family (primitives/tokens.py): ``create_token`` becomes
``stablehlo.create_token``, ``after_all`` ``stablehlo.after_all`` (NOTE: [tokens] in
funcgrad/kernel/ir.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.tokens import after_all_p, create_token_p
from funcgrad.xla_bridge.emitter import create_token, register


@register(create_token_p)
def _create_token(ctx):
    return create_token(ctx.fb)


@register(after_all_p)
def _after_all(ctx, *tokens):
    # (of no tokens too: XLA's AfterAll of nothing is a fresh token, as JAX lowers it)
    return ctx.fb.emit(f"stablehlo.after_all {', '.join(tokens)} : !stablehlo.token")
