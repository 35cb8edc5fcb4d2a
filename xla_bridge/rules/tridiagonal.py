"""Lowering rule of the tridiagonal family (primitives/tridiagonal.py): ``tridiagonal_solve`` ->
LAPACK's gtsv (NaN where singular), or jaxlib's perturbed tridiagonal solver with
``perturb_singular``; CPU-only (NOTE: [LAPACK custom calls]).

Layer: xla_bridge (compiler half). Imports the primitive catalog and the helpers of
``xla_bridge/rules/_lapack.py``.
"""

from __future__ import annotations

from funcgrad.primitives import tridiagonal as td
from funcgrad.xla_bridge.emitter import register
from funcgrad.xla_bridge.rules._lapack import (
    cpu_only,
    empty_operands_as_constants,
    ffi_call,
    info_aval,
    nan_unless,
    ok_flags,
    target,
)


@register(td.tridiagonal_solve_p)
@empty_operands_as_constants
def _tridiagonal_solve(ctx, dl, d, du, b, *, perturb_singular=False):
    fb, avals = ctx.fb, ctx.avals_in
    b_aval = avals[3]
    batch = b_aval.shape[:-2]
    cpu_only(ctx, "tridiagonal_solve")
    if perturb_singular:
        (x,) = ffi_call(fb, "tridiagonal_solve_perturbed_ffi", [dl, d, du, b], avals, [b_aval])
        return x
    *_, x, info = ffi_call(
        fb,
        target("gtsv", b_aval.dtype),
        [dl, d, du, b],
        avals,
        [*avals, info_aval(batch)],
        {},
        {0: 0, 1: 1, 2: 2, 3: 3},
    )
    return nan_unless(fb, ok_flags(fb, info, batch), batch, x, b_aval)
