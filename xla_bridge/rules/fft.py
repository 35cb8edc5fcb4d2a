"""Lowering rule of the fft family (primitives/fft.py): ``stablehlo.fft``.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
The op takes XLA's conventions as they are (``length`` lists the transformed trailing sizes, the
output's for IRFFT; the inverses include 1/n), so the rule is one line of text; no custom call
or registration is needed (shared/notes/jaxlib-linalg-fft-facts.md, section B).
"""

from __future__ import annotations

from funcgrad.primitives import fft as fft_family
from funcgrad.xla_bridge.emitter import aval_type, ints, register


@register(fft_family.fft_p)
def _fft(ctx, x, *, fft_type, fft_lengths):
    kind = fft_family.FftType(fft_type).name
    return ctx.fb.emit(
        f"stablehlo.fft {x}, type = {kind}, length = {ints(fft_lengths)} : "
        f"({aval_type(ctx.avals_in[0])}) -> {aval_type(ctx.avals_out[0])}"
    )
