"""Lowering rules of the complex family (primitives/complex.py): real, imag, conj, complex.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
StableHLO has ``real``, ``imag`` and ``complex``; ``conj`` is ``complex(real(x), -imag(x))``, as
JAX lowers it.
"""

from __future__ import annotations

from funcgrad.primitives import complex as cx
from funcgrad.xla_bridge.emitter import aval_type, register

from funcgrad.kernel import dtypes as _dt


def _part(op: str):
    def rule(ctx, x):
        return ctx.fb.emit(f"{op} {x} : ({aval_type(ctx.avals_in[0])}) -> {aval_type(ctx.avals_out[0])}")

    rule.__name__ = f"_{op.split('.')[-1]}"
    return rule


register(cx.real_p)(_part("stablehlo.real"))
register(cx.imag_p)(_part("stablehlo.imag"))


def complex_of(fb, re: str, im: str, out_aval) -> str:
    """``re + i im`` (operands of ``out_aval``'s shape and real dtype)."""
    return fb.emit(f"stablehlo.complex {re}, {im} : {aval_type(out_aval)}")


@register(cx.complex_p)
def _complex(ctx, x, y):
    re, im = ctx.operands([x, y])
    return complex_of(ctx.fb, re, im, ctx.avals_out[0])


@register(cx.conj_p)
def _conj(ctx, x):
    fb, aval = ctx.fb, ctx.avals_in[0]
    part = aval.update(dtype=_dt.real_dtype(aval.dtype))
    t_in, t_part = aval_type(aval), aval_type(part)
    re = fb.emit(f"stablehlo.real {x} : ({t_in}) -> {t_part}")
    im = fb.emit(f"stablehlo.imag {x} : ({t_in}) -> {t_part}")
    return complex_of(fb, re, fb.unary("stablehlo.negate", im, part), aval)
