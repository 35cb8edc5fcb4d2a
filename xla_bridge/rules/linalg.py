"""Lowering rules of the linear-algebra family (primitives/linalg.py): LAPACK custom calls.

Layer: xla_bridge (compiler half). Imports numpy, the primitive catalog and the helpers of
``xla_bridge/rules/_lapack.py`` (NOTE: [LAPACK custom calls]).

- ``cholesky`` -> potrf (lower), the upper triangle zeroed; NaN where info != 0.
- ``triangular_solve`` -> trsm (``conjugate_a`` without transpose conjugates ``a`` first).
- ``lu`` -> getrf; pivots made 0-based; the permutation is ``pivots_to_permutation``'s while loop
  lowered inline; NaN where info < 0 (a singular matrix is not a failure).
- ``qr`` -> geqrf (geqp3 with pivoting) then orgqr/ungqr through ``householder_product``'s rule,
  with JAX's padding for complete factors of tall matrices.
- ``householder_product`` -> orgqr/ungqr.

(``tridiagonal_solve``'s rule is ``xla_bridge/rules/tridiagonal.py``'s.) On the GPU: potrf,
getrf, geqrf and orgqr are cuSOLVER's, a triangular solve is XLA's ``triangular_solve`` op;
pivoted QR is CPU-only (NOTE: [LAPACK custom calls]).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import linalg as la
from funcgrad.primitives import structure as st
from funcgrad.xla_bridge.emitter import aval_type, register
from funcgrad.xla_bridge.rules._lapack import (
    I32,
    char,
    cpu_only,
    empty_operands_as_constants,
    ffi_call,
    flag,
    gpu_target,
    info_aval,
    lower_fun,
    nan_unless,
    negate_imag,
    ok_flags,
    on_gpu,
    target,
)

from funcgrad.kernel.ir import ShapedArray


@register(la.cholesky_p)
@empty_operands_as_constants
def _cholesky(ctx, a):
    fb, (aval,) = ctx.fb, ctx.avals_in
    batch = aval.shape[:-2]
    if on_gpu(ctx):
        name, attrs = gpu_target("potrf"), {"lower": flag(True)}
    else:
        name, attrs = target("potrf", aval.dtype), {"uplo": char("L")}
    factor, info = ffi_call(fb, name, [a], [aval], [aval, info_aval(batch)], attrs, {0: 0})
    (lower,) = lower_fun(fb, lambda x: [mx.tril(x)], [aval], [factor])
    return nan_unless(fb, ok_flags(fb, info, batch), batch, lower, aval)


@register(la.triangular_solve_p)
@empty_operands_as_constants
def _triangular_solve(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    fb, (a_aval, b_aval) = ctx.fb, ctx.avals_in
    if conjugate_a and not transpose_a:
        a, conjugate_a = negate_imag(fb, a, a_aval), False
    if on_gpu(ctx) or a_aval.dtype not in mx.LAPACK_DTYPES:  # (float16/bfloat16: XLA's op, as JAX's)
        transpose = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
        attrs = (
            f"left_side = {flag(left_side)}, lower = {flag(lower)}, unit_diagonal = {flag(unit_diagonal)}, "
            f"transpose_a = #stablehlo<transpose {transpose}>"
        )
        types = [aval_type(a_aval), aval_type(b_aval)]
        return fb.generic("stablehlo.triangular_solve", [a, b], types, types[1:], attrs)
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    attrs = {
        "side": char("L" if left_side else "R"),
        "uplo": char("L" if lower else "U"),
        "trans_x": char(trans),
        "diag": char("U" if unit_diagonal else "N"),
    }
    (x,) = ffi_call(fb, target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval], [b_aval], attrs, {0: 1})
    return x


def _permutation_from(fb, pivots: str, pivots_aval, m: int) -> str:
    (perm,) = lower_fun(fb, lambda p: [la.pivots_to_permutation(p, m)], [pivots_aval], [pivots])
    return perm


@register(la.lu_p)
@empty_operands_as_constants
def _lu(ctx, a):
    fb, (aval,) = ctx.fb, ctx.avals_in
    lu_aval, piv_aval, _ = ctx.avals_out
    batch, m = aval.shape[:-2], aval.shape[-2]
    name = gpu_target("getrf") if on_gpu(ctx) else target("getrf", aval.dtype)
    lu_, piv, info = ffi_call(fb, name, [a], [aval], [lu_aval, piv_aval, info_aval(batch)], {}, {0: 0})
    one = fb.broadcast(fb.const(1, I32), ShapedArray((), I32), piv_aval.shape)
    piv = fb.binary("stablehlo.subtract", piv, one, piv_aval)  # LAPACK's pivots are 1-based
    lu_ = nan_unless(fb, ok_flags(fb, info, batch, "GE"), batch, lu_, lu_aval)
    return [lu_, piv, _permutation_from(fb, piv, piv_aval, m)]


def _householder(ctx, a: str, taus: str, a_aval, taus_aval) -> str:
    if on_gpu(ctx):
        name = gpu_target("orgqr")
    else:
        name = target("ungqr" if a_aval.dtype.kind == "c" else "orgqr", a_aval.dtype)
    (q,) = ffi_call(ctx.fb, name, [a, taus], [a_aval, taus_aval], [a_aval], {}, {0: 0})
    return q


@register(la.qr_p)
@empty_operands_as_constants
def _qr(ctx, a, *, pivoting, full_matrices):
    fb, (aval,) = ctx.fb, ctx.avals_in
    *batch, m, n = aval.shape
    k = min(m, n)
    taus_aval = ShapedArray((*batch, k), aval.dtype)
    if pivoting:
        cpu_only(ctx, "QR with column pivoting (geqp3)")
        jpvt_aval = ShapedArray((*batch, n), I32)
        jpvt0 = fb.const(0, I32, jpvt_aval.shape)
        r, jpvt, taus = ffi_call(
            fb,
            target("geqp3", aval.dtype),
            [a, jpvt0],
            [aval, jpvt_aval],
            [aval, jpvt_aval, taus_aval],
            {},
            {0: 0, 1: 1},
        )
        one = fb.broadcast(fb.const(1, I32), ShapedArray((), I32), jpvt_aval.shape)
        perm = fb.binary("stablehlo.subtract", jpvt, one, jpvt_aval)
    else:
        name = gpu_target("geqrf") if on_gpu(ctx) else target("geqrf", aval.dtype)
        r, taus = ffi_call(fb, name, [a], [aval], [aval, taus_aval], {}, {0: 0})
    nd = len(aval.shape)
    if m < n:
        q_in_aval = ShapedArray((*batch, m, m), aval.dtype)
        (q_in,) = lower_fun(fb, lambda x: [st.slice_in_dim(x, 0, m, 1, nd - 1)], [aval], [r])
    elif full_matrices and m > n:
        q_in_aval = ShapedArray((*batch, m, m), aval.dtype)
        pad = [(0, 0, 0)] * (nd - 1) + [(0, m - n, 0)]
        (q_in,) = lower_fun(fb, lambda x: [st.pad(x, np.zeros((), aval.dtype), pad)], [aval], [r])
    else:
        q_in_aval, q_in = aval, r
    q = _householder(ctx, q_in, taus, q_in_aval, taus_aval)
    rows = n if (not full_matrices and m > n) else m
    (r,) = lower_fun(fb, lambda x: [mx.triu(st.slice_in_dim(x, 0, rows, 1, nd - 2))], [aval], [r])
    return [q, r, perm] if pivoting else [q, r]


@register(la.householder_product_p)
@empty_operands_as_constants
def _householder_product(ctx, a, taus):
    fb = ctx.fb
    a_aval, taus_aval = ctx.avals_in
    if taus_aval.shape[-1] == 0:
        (eye,) = lower_fun(
            fb,
            lambda x: [
                st.slice_in_dim(
                    mx.eye(a_aval.shape[-2], a_aval.dtype, a_aval.shape[:-2]),
                    0,
                    a_aval.shape[-1],
                    1,
                    a_aval.ndim - 1,
                )
            ],
            [a_aval],
            [a],
        )
        return eye
    return _householder(ctx, a, taus, a_aval, taus_aval)


@register(la.geqrf_p)
@empty_operands_as_constants
def _geqrf(ctx, a):
    fb, (aval,) = ctx.fb, ctx.avals_in
    name = gpu_target("geqrf") if on_gpu(ctx) else target("geqrf", aval.dtype)
    return ffi_call(fb, name, [a], [aval], ctx.avals_out, {}, {0: 0})
