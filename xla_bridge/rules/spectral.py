"""Lowering rules of the spectral family (primitives/spectral.py): LAPACK custom calls.

Layer: xla_bridge (compiler half). Imports numpy, the primitive catalog and the helpers of
``xla_bridge/rules/_lapack.py`` (NOTE: [LAPACK custom calls]).

- ``eigh`` -> syevd/heevd (vectors always computed; ``subset_by_index`` slices the full result).
- ``svd`` -> gesdd (gesvd for ``algorithm="qr"``), mode ``A``/``S``/``N``; JAX's shapes for the
  unused u/vt buffers of mode ``N``.
- ``eig`` -> geev; real matrices give (wr, wi), combined into complex eigenvalues.
- ``schur`` -> gees (no sorting); ``hessenberg`` -> gehrd; ``tridiagonal`` -> sytrd/hetrd.

Every result of a batch element whose ``info`` is nonzero is NaN (NOTE: [factorisation
failures]).

On the GPU, eigh is cuSOLVER's syevd and svd its gesvd (a wide matrix is factorised transposed,
in row-major layouts, as jax does); eig, schur, hessenberg and tridiagonal are CPU-only (NOTE:
[LAPACK custom calls]).
"""

from __future__ import annotations

from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import spectral as sp
from funcgrad.primitives import structure as st
from funcgrad.xla_bridge.emitter import register, tensor_type
from funcgrad.xla_bridge.rules._lapack import (
    char,
    cpu_only,
    empty_operands_as_constants,
    ffi_call,
    flag,
    gpu_target,
    info_aval,
    is_complex,
    lower_fun,
    nan_unless,
    ok_flags,
    on_gpu,
    target,
)

from funcgrad.kernel.ir import ShapedArray


def _nan_all(fb, ctx, info, batch, outs):
    ok = ok_flags(fb, info, batch)
    return [nan_unless(fb, ok, batch, x, a) for x, a in zip(outs, ctx.avals_out)]


def _slice_last(fb, x, aval, lo, hi, axis):
    (y,) = lower_fun(fb, lambda v: [st.slice_in_dim(v, lo, hi, 1, axis)], [aval], [x])
    return y


@register(sp.eigh_p)
@empty_operands_as_constants
def _eigh(ctx, a, *, lower, sort_eigenvalues, subset_by_index):
    fb, (aval,) = ctx.fb, ctx.avals_in
    *batch, n, _ = aval.shape
    w_aval = ShapedArray((*batch, n), mx.real_dtype(aval.dtype))
    if on_gpu(ctx):
        name, attrs = gpu_target("syevd"), {"lower": flag(lower), "algorithm": "0 : ui8"}
    else:
        name = target("heevd" if is_complex(aval.dtype) else "syevd", aval.dtype)
        attrs = {"mode": char("V"), "uplo": char("L" if lower else "U")}
    v, w, info = ffi_call(fb, name, [a], [aval], [aval, w_aval, info_aval(batch)], attrs, {0: 0})
    ok = ok_flags(fb, info, batch)
    v, w = nan_unless(fb, ok, batch, v, aval), nan_unless(fb, ok, batch, w, w_aval)
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        lo, hi = subset_by_index
        v = _slice_last(fb, v, aval, lo, hi, len(batch) + 1)
        w = _slice_last(fb, w, w_aval, lo, hi, len(batch))
    return [v, w]


@register(sp.svd_p)
@empty_operands_as_constants
def _svd(ctx, a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    fb, (aval,) = ctx.fb, ctx.avals_in
    *batch, m, n = aval.shape
    k = min(m, n)
    mode = "N" if not compute_uv else ("A" if full_matrices else "S")
    s_aval = ShapedArray((*batch, k), mx.real_dtype(aval.dtype))
    u_aval = ShapedArray((*batch, m, m if full_matrices else k), aval.dtype)
    vt_aval = ShapedArray((*batch, n if full_matrices else k, n), aval.dtype)
    if on_gpu(ctx):
        s, u, vt, info = _gesvd_gpu(fb, a, aval, s_aval, u_aval, vt_aval, batch, full_matrices, compute_uv)
    else:
        routine = "gesvd" if algorithm == "qr" else "gesdd"
        _, s, u, vt, info = ffi_call(
            fb,
            target(routine, aval.dtype),
            [a],
            [aval],
            [aval, s_aval, u_aval, vt_aval, info_aval(batch)],
            {"mode": char(mode)},
            {0: 0},
        )
    ok = ok_flags(fb, info, batch)
    outs = [nan_unless(fb, ok, batch, s, s_aval)]
    if compute_uv:
        outs += [nan_unless(fb, ok, batch, u, u_aval), nan_unless(fb, ok, batch, vt, vt_aval)]
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        lo, hi = subset_by_index
        nb = len(batch)
        outs[0] = _slice_last(fb, outs[0], s_aval, lo, hi, nb)
        if compute_uv:
            outs[1] = _slice_last(fb, outs[1], u_aval, lo, hi, nb + 1)
            outs[2] = _slice_last(fb, outs[2], vt_aval, lo, hi, nb)
    return outs


def _gesvd_gpu(fb, a, aval, s_aval, u_aval, vt_aval, batch, full_matrices, compute_uv):
    # cuSOLVER's gesvd needs m >= n: a wide matrix is passed as its row-major self, i.e. the
    # column-major transpose, whose u and vt are this matrix's vt and u (the result slots swap).
    # Without vectors, u and vt are unused scalars.
    m, n = aval.shape[-2:]
    if not compute_uv:
        u_aval = vt_aval = ShapedArray((), aval.dtype)
    transposed = m < n
    slots = [vt_aval, u_aval] if transposed else [u_aval, vt_aval]
    attrs = {
        "full_matrices": flag(full_matrices),
        "compute_uv": flag(compute_uv),
        "transposed": flag(transposed),
    }
    _, s, x, y, info = ffi_call(
        fb,
        gpu_target("gesvd"),
        [a],
        [aval],
        [aval, s_aval, *slots, info_aval(batch)],
        attrs,
        {0: 0},
        column_major=not transposed,
    )
    u, vt = (y, x) if transposed else (x, y)
    return s, u, vt, info


@register(sp.eig_p)
@empty_operands_as_constants
def _eig(ctx, a, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    cpu_only(ctx, "eig (a nonsymmetric eigendecomposition)")
    fb, (aval,) = ctx.fb, ctx.avals_in
    batch = aval.shape[:-2]
    cdt = mx.complex_dtype(aval.dtype)
    w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    vec_aval = ShapedArray(aval.shape, cdt)
    real = not is_complex(aval.dtype)
    outs_avals = [w_aval, w_aval] if real else [w_aval]
    outs_avals += [vec_aval, vec_aval, info_aval(batch)]
    attrs = {
        "compute_left": char("V" if compute_left_eigenvectors else "N"),
        "compute_right": char("V" if compute_right_eigenvectors else "N"),
    }
    res = ffi_call(fb, target("geev", aval.dtype), [a], [aval], outs_avals, attrs)
    info = res[-1]
    if real:
        t = tensor_type(w_aval.shape, cdt)
        w = fb.emit(f"stablehlo.complex {res[0]}, {res[1]} : {t}")
        vl, vr = res[2], res[3]
    else:
        w, vl, vr = res[0], res[1], res[2]
    outs = [w]
    if compute_left_eigenvectors:
        outs.append(vl)
    if compute_right_eigenvectors:
        outs.append(vr)
    return _nan_all(fb, ctx, info, batch, outs)


@register(sp.schur_p)
@empty_operands_as_constants
def _schur(ctx, a, *, compute_schur_vectors):
    cpu_only(ctx, "schur")
    fb, (aval,) = ctx.fb, ctx.avals_in
    batch = aval.shape[:-2]
    w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    eigvals = [w_aval, w_aval] if not is_complex(aval.dtype) else [w_aval]
    outs_avals = [aval, aval, *eigvals, info_aval(batch), info_aval(batch)]
    attrs = {"mode": char("V" if compute_schur_vectors else "N"), "sort": char("N")}
    res = ffi_call(fb, target("gees", aval.dtype), [a], [aval], outs_avals, attrs, {0: 0})
    outs = [res[0], res[1]][: 1 + int(compute_schur_vectors)]
    return _nan_all(fb, ctx, res[-1], batch, outs)


@register(sp.hessenberg_p)
@empty_operands_as_constants
def _hessenberg(ctx, a):
    cpu_only(ctx, "hessenberg")
    fb, (aval,) = ctx.fb, ctx.avals_in
    batch, n = aval.shape[:-2], aval.shape[-1]
    taus_aval = ctx.avals_out[1]
    attrs = {"high": f"{n} : i32", "low": "1 : i32"}
    h, taus, info = ffi_call(
        fb, target("gehrd", aval.dtype), [a], [aval], [aval, taus_aval, info_aval(batch)], attrs, {0: 0}
    )
    return _nan_all(fb, ctx, info, batch, [h, taus])


@register(sp.tridiagonal_p)
@empty_operands_as_constants
def _tridiagonal(ctx, a, *, lower):
    cpu_only(ctx, "tridiagonal")
    fb, (aval,) = ctx.fb, ctx.avals_in
    batch = aval.shape[:-2]
    name = "hetrd" if is_complex(aval.dtype) else "sytrd"
    res = ffi_call(
        fb,
        target(name, aval.dtype),
        [a],
        [aval],
        [*ctx.avals_out, info_aval(batch)],
        {"uplo": char("L" if lower else "U")},
        {0: 0},
    )
    return _nan_all(fb, ctx, res[-1], batch, res[:-1])
