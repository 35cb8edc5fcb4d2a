"""Lowering rules of the special-function family (primitives/special.py).

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and ``xla_bridge.emitter``.

``zeta`` and ``bessel_i1e`` are CHLO ops (XLA expands them). ``bessel_i0e`` has no CHLO op: it is
Cephes' Chebyshev expansion (the coefficients JAX uses), evaluated with Clenshaw's recurrence on
``|x| / 2 - 2`` for ``|x| <= 8`` and on ``32 / |x| - 2`` (divided by ``sqrt|x|``) beyond; float16 and
bfloat16 compute in float32 (the coefficients need its precision).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import special as sp
from funcgrad.xla_bridge.emitter import aval_type, register


@register(sp.zeta_p)
def _zeta(ctx, x, q):
    x, q = ctx.operands([x, q])
    t = aval_type(ctx.avals_out[0])
    return ctx.fb.generic("chlo.zeta", [x, q], [t, t], [t])


@register(sp.bessel_i1e_p)
def _bessel_i1e(ctx, x):
    t = aval_type(ctx.avals_in[0])
    return ctx.fb.generic("chlo.bessel_i1e", [x], [t], [t])


# Cephes i0e: Chebyshev coefficients on [0, 8] (A) and (8, inf) (B), float64 and float32 sets.
_I0E_A64 = [
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
]  # fmt: skip
_I0E_B64 = [
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
]  # fmt: skip
_I0E_A32, _I0E_B32 = _I0E_A64[12:], _I0E_B64[18:]


def _chebyshev(fb, x, aval, coefficients):
    """Clenshaw's recurrence ``0.5 * (b0 - b2)`` over ``coefficients`` at ``x``."""
    dtype, shape = aval.dtype, aval.shape
    zero = fb.const(0, dtype, shape)
    b0 = b1 = b2 = zero
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = fb.binary("stablehlo.add", fb.binary("stablehlo.subtract", fb.binary(
            "stablehlo.multiply", x, b1, aval), b2, aval), fb.const(c, dtype, shape), aval)  # fmt: skip
    return fb.binary(
        "stablehlo.multiply", fb.binary("stablehlo.subtract", b0, b2, aval), fb.const(0.5, dtype, shape), aval
    )


@register(sp.bessel_i0e_p)
def _bessel_i0e(ctx, x):
    fb, aval = ctx.fb, ctx.avals_in[0]
    work = aval if aval.dtype in (np.float32, np.float64) else aval.update(dtype=np.dtype(np.float32))
    x = fb.convert(x, aval, work.dtype)
    a, b = (_I0E_A64, _I0E_B64) if work.dtype == np.float64 else (_I0E_A32, _I0E_B32)
    dtype, shape = work.dtype, work.shape
    ax = fb.unary("stablehlo.abs", x, work)
    two = fb.const(2.0, dtype, shape)
    small = fb.binary(
        "stablehlo.subtract",
        fb.binary("stablehlo.multiply", ax, fb.const(0.5, dtype, shape), work),
        two,
        work,
    )
    large = fb.binary(
        "stablehlo.subtract", fb.binary("stablehlo.divide", fb.const(32.0, dtype, shape), ax, work), two, work
    )
    le8 = _chebyshev(fb, small, work, a)
    gt8 = fb.binary(
        "stablehlo.divide", _chebyshev(fb, large, work, b), fb.unary("stablehlo.sqrt", ax, work), work
    )
    pred = fb.compare("LE", ax, fb.const(8.0, dtype, shape), dtype, shape)
    out = fb.select(pred, le8, gt8, shape, work)
    return fb.convert(out, work, aval.dtype)
