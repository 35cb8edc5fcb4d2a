"""Eigen- and singular-value problems on LAPACK: ``eigh``, ``svd``, ``eig``, ``schur`` and the
reductions ``hessenberg`` and ``tridiagonal`` (the factorisations and solves are in
``primitives/linalg.py``).

Layer: primitives. Imports the funcgrad kernel, numpy, sibling families and (deferred, for import
time) SciPy.

Rules follow ``jax.lax.linalg``: eager impls call LAPACK through NumPy/SciPy (batched over leading
axes; ``eigh`` and ``svd`` run their lowering compiled instead, NOTE: [eager LAPACK as compiled]
in ``primitives/_matrix.py``), lowerings (``xla_bridge/rules/spectral.py``) call the same LAPACK
routines through jaxlib, failures give NaN (NOTE: [factorisation failures] in ``primitives/linalg.py``).

# NOTE: [spectral derivatives]
# ``eigh`` and ``svd`` differentiate with the classic non-degenerate perturbation formulas, built
# exactly as JAX builds them: ``F_ij = 1 / (w_j - w_i)`` off the diagonal (``1 / (s_j^2 - s_i^2)``
# for svd) with the diagonal held out by adding the identity before the reciprocal, so repeated
# eigenvalues give inf/NaN eigenvector tangents (an eigenvector of a repeated eigenvalue is not a
# function of the matrix) while eigenvalue and singular-value tangents stay exact. ``eig``
# differentiates its eigenvalues always and its eigenvectors only with
# ``enable_eigvec_derivs=True`` (under LAPACK's normalisation, as JAX). ``schur``, ``hessenberg``
# and ``tridiagonal`` have no derivative in JAX either: their outputs are not smooth functions of
# the input in general (orderings, reflector signs), so asking for one raises a clear error.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import JET_OF_MATRIX_RULE, aval_of, no_derivative, size_extremum
from funcgrad.primitives.linalg import solve_square, sym_from_triangle

from funcgrad.kernel.ad import Zero
from funcgrad.kernel.ir import ShapedArray

__all__ = [
    "eig",
    "eig_p",
    "eigh",
    "eigh_p",
    "hessenberg",
    "hessenberg_p",
    "schur",
    "schur_p",
    "svd",
    "svd_p",
    "tridiagonal",
    "tridiagonal_p",
]


def _scipy_linalg():
    import scipy.linalg  # noqa: PLC0415 - deferred for import time (~0.3 s), not for a cycle

    return scipy.linalg


def _reciprocal_gaps(w, squares: bool = False):
    """``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it (NOTE: [spectral derivatives]);
    with ``squares``, ``1 / (w_j^2 - w_i^2)``. Rounded as JAX's rules: ``(I + w_j) - w_i`` (eigh's,
    eig's; at |w| ~ 1e300 the identity is absorbed and jax's F is inf), ``(w_j + w_i)(w_j - w_i) + I``
    (svd's)."""
    shape = aval_of(w).shape
    full = (*shape, shape[-1])
    nb = len(shape) - 1
    wj = st.broadcast_in_dim(w, full, (*range(nb), nb + 1))
    wi = st.broadcast_in_dim(w, full, tuple(range(nb + 1)))
    dtype = aval_of(w).dtype
    eye = ew.select(mx.eye_mask(full), mx.full(full, 1, dtype), mx.full(full, 0, dtype))
    if squares:
        gaps = ew.add(ew.mul(ew.add(wj, wi), ew.sub(wj, wi)), eye)
    else:
        gaps = ew.sub(ew.add(eye, wj), wi)
    return ew.sub(ew.div(mx.full(full, 1, dtype), gaps), eye)


# ----------------------------------------------------------------------------------------------
# eigh(a) -> (v, w): a v = v diag(w), w ascending


def _eigh_abstract_eval(a, *, lower, sort_eigenvalues, subset_by_index):
    mx.check_dtype("eigh", a)
    mx.check_matrix("eigh", "a", a, square=True)
    n = a.shape[-1]
    lo, hi = _subset(subset_by_index, n, "eigh")
    return [
        ShapedArray((*a.shape[:-1], hi - lo), a.dtype),
        ShapedArray((*a.shape[:-2], hi - lo), mx.real_dtype(a.dtype)),
    ]


def _subset(subset_by_index, n, name):
    if subset_by_index is None:
        return 0, n
    lo, hi = subset_by_index
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{name}: subset_by_index={subset_by_index} is not a range within [0, {n}]")
    return lo, hi


def _eigh_impl(a, *, lower, sort_eigenvalues, subset_by_index):
    a = np.asarray(a)
    n = a.shape[-1]
    lo, hi = _subset(subset_by_index, n, "eigh")
    rdt = mx.real_dtype(a.dtype)
    if a.size == 0:
        return [np.zeros((*a.shape[:-1], hi - lo), a.dtype), np.zeros((*a.shape[:-2], hi - lo), rdt)]
    uplo = "L" if lower else "U"
    try:
        w, v = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        w = np.empty(a.shape[:-1], rdt)
        v = np.empty_like(a)
        for idx in np.ndindex(*a.shape[:-2]):
            try:
                w[idx], v[idx] = np.linalg.eigh(a[idx], UPLO=uplo)
            except np.linalg.LinAlgError:
                w[idx], v[idx] = np.nan, np.nan  # NOTE: [factorisation failures]
    return [v[..., lo:hi], w[..., lo:hi]]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
    (a,), (da,) = primals, tangents
    params = dict(lower=lower, sort_eigenvalues=sort_eigenvalues)
    outs = eigh_p.bind(a, subset_by_index=subset_by_index, **params)
    if type(da) is Zero:
        return outs, [Zero.from_primal_value(o) for o in outs]
    n = aval_of(a).shape[-1]
    lo, hi = _subset(subset_by_index, n, "eigh")
    v, w = outs if (lo, hi) == (0, n) else eigh_p.bind(a, subset_by_index=None, **params)
    dtype = aval_of(a).dtype
    da = sym_from_triangle(da, lower)
    da_v = mx.matmul(da, v, highest=True)  # (the products at HIGHEST, as JAX's rule)
    vdag_da_v = mx.matmul(mx.H(v), da_v, highest=True)
    dv = mx.matmul(v, ew.mul(ew.convert_element_type(_reciprocal_gaps(w), dtype), vdag_da_v), highest=True)
    # dw_i = (V^H dA V)_ii = sum_k conj(V_ki) (dA V)_ki: one product on dw's linear path, not two,
    # so an eigenvalue-only gradient transposes to (V diag(ct)) V^H, one matmul (dv's products
    # are dead code then), rather than a second full product with a dense diagonal.
    dw = mx.real(red.reduce_sum(ew.mul(mx.conj(v), da_v), (aval_of(v).ndim - 2,)))
    if (lo, hi) != (0, n):
        nd = aval_of(a).ndim
        dv, dw = st.slice_in_dim(dv, lo, hi, 1, nd - 1), st.slice_in_dim(dw, lo, hi, 1, nd - 2)
    return outs, [dv, dw]


eigh_p = mx.lapack_primitive("eigh", _eigh_impl, _eigh_abstract_eval, multiple_results=True, compiled=True)
eigh_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
eigh_p.def_jvp(_eigh_jvp)


def eigh(a, *, lower: bool = True, sort_eigenvalues: bool = True, subset_by_index=None):
    """Eigenvectors and eigenvalues ``(v, w)`` of the Hermitian matrices given by one triangle of
    ``a`` (NOTE: [one triangle read]); ``w`` ascending, ``a v = v diag(w)``.

    >>> v, w = eigh(np.array([[2.0, 0.0], [0.0, 1.0]]))
    >>> w.tolist(), np.abs(np.asarray(v)).tolist()
    ([1.0, 2.0], [[0.0, 1.0], [1.0, 0.0]])
    """
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    return eigh_p.bind(a, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues), subset_by_index=subset)


# ----------------------------------------------------------------------------------------------
# svd(a) -> (s,) or (s, u, vt): a = u diag(s) vt, s descending

SVD_ALGORITHMS = (None, "default", "qr", "divide_and_conquer")


def _svd_shapes(a, full_matrices, compute_uv, subset_by_index):
    *batch, m, n = a.shape
    k = size_extremum(m, n, "min")
    lo, hi = _subset(subset_by_index, k, "svd")
    if subset_by_index is not None and full_matrices and (lo, hi) != (0, k):
        raise ValueError("full_matrices and subset_by_index cannot both be set")  # (JAX's words)
    r = hi - lo
    shapes = [((*batch, r), mx.real_dtype(a.dtype))]
    if compute_uv:
        shapes.append(((*batch, m, m if full_matrices else r), a.dtype))
        shapes.append(((*batch, n if full_matrices else r, n), a.dtype))
    return shapes, (lo, hi)


def _svd_abstract_eval(a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    mx.check_dtype("svd", a)
    mx.check_matrix("svd", "a", a)
    if algorithm not in SVD_ALGORITHMS:
        raise ValueError(f"svd: algorithm must be one of {SVD_ALGORITHMS[1:]} on CPU, got {algorithm!r}")
    shapes, _ = _svd_shapes(a, full_matrices, compute_uv, subset_by_index)
    return [ShapedArray(s, d) for s, d in shapes]


def _svd_impl(a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    a = np.asarray(a)
    shapes, (lo, hi) = _svd_shapes(a, full_matrices, compute_uv, subset_by_index)
    *batch, m, n = a.shape
    if a.size == 0:
        outs = [np.zeros(s, d) for s, d in shapes]
        if compute_uv and full_matrices:
            outs[1] = np.broadcast_to(np.eye(m, dtype=a.dtype), shapes[1][0]).copy()
            outs[2] = np.broadcast_to(np.eye(n, dtype=a.dtype), shapes[2][0]).copy()
        return outs
    if algorithm == "qr":
        sl = _scipy_linalg()

        def one(x):
            try:
                res = sl.svd(x, full_matrices=full_matrices, compute_uv=compute_uv, lapack_driver="gesvd")
            except np.linalg.LinAlgError:
                return [
                    np.full(s[len(batch) :], np.nan, d)
                    for s, d in _svd_shapes(x, full_matrices, compute_uv, None)[0]
                ]
            return [res[1], res[0], res[2]] if compute_uv else [res]

        full_shapes, _ = _svd_shapes(a, full_matrices, compute_uv, None)
        outs = mx.per_matrix(one, [a], (2,), [(s[len(batch) :], d) for s, d in full_shapes])
    else:
        try:
            res = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
            outs = [res.S, res.U, res.Vh] if compute_uv else [res]
        except np.linalg.LinAlgError:
            full_shapes, _ = _svd_shapes(a, full_matrices, compute_uv, None)
            outs = [np.empty(s, d) for s, d in full_shapes]
            for idx in np.ndindex(*batch):
                try:
                    res = np.linalg.svd(a[idx], full_matrices=full_matrices, compute_uv=compute_uv)
                    parts = [res.S, res.U, res.Vh] if compute_uv else [res]
                except np.linalg.LinAlgError:
                    parts = [np.nan] * len(outs)  # NOTE: [factorisation failures]
                for o, p in zip(outs, parts):
                    o[idx] = p
    if (lo, hi) != (0, min(m, n)):
        outs[0] = outs[0][..., lo:hi]
        if compute_uv:
            outs[1], outs[2] = outs[1][..., lo:hi], outs[2][..., lo:hi, :]
    return outs


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    (a,), (da,) = primals, tangents
    outs = svd_p.bind(
        a,
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if type(da) is Zero:
        return outs, [Zero.from_primal_value(o) for o in outs]
    *batch, m, n = aval_of(a).shape
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(  # (JAX's type and words)
            "Singular value decomposition JVP not implemented for full matrices (svd: the completion of "
            "u or vt is not unique); use full_matrices=False"
        )
    # The whole thin decomposition: a subset's vectors couple to all the others.
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, subset_by_index=None, algorithm=algorithm)
    dtype = aval_of(a).dtype
    cast = lambda x: ew.convert_element_type(x, dtype)  # noqa: E731
    ut, v = mx.H(u), mx.H(vt)
    ds_mat = mx.matmul(mx.matmul(ut, da), v)
    ds = mx.real(mx.diagonal(ds_mat))
    k = aval_of(s).shape[-1]
    if not compute_uv:
        lo, hi = _subset(subset_by_index, k, "svd")
        return outs, [ds if (lo, hi) == (0, k) else st.slice_in_dim(ds, lo, hi, 1, len(batch))]
    # F_ij = 1 / (s_j^2 - s_i^2) off the diagonal (NOTE: [spectral derivatives]).
    f = _reciprocal_gaps(s, squares=True)
    dss = mx.columns_scaled(ds_mat, cast(s))  # dS diag(s)
    sds = mx.rows_scaled(ds_mat, cast(s))  # diag(s) dS
    s_zero = ew.convert_element_type(ew.eq_p.bind(s, np.zeros((), aval_of(s).dtype)), aval_of(s).dtype)
    s_inv = ew.sub(ew.div(mx.full(aval_of(s).shape, 1, aval_of(s).dtype), ew.add(s, s_zero)), s_zero)
    du_dv_diag = ew.mul(ew.mul(ew.sub(ds_mat, mx.H(ds_mat)), 0.5), cast(mx.diag_embed(s_inv)))
    du = mx.matmul(u, ew.add(ew.mul(cast(f), ew.add(dss, mx.H(dss))), du_dv_diag))
    dv = mx.matmul(v, ew.mul(cast(f), ew.add(sds, mx.H(sds))))
    s_row = cast(s)
    if m > k:
        dav = mx.matmul(da, v)
        du = ew.add(du, mx.columns_scaled(ew.sub(dav, mx.matmul(u, mx.matmul(ut, dav))), _inv(s_row)))
    if n > k:
        dahu = mx.matmul(mx.H(da), u)
        dv = ew.add(dv, mx.columns_scaled(ew.sub(dahu, mx.matmul(v, mx.matmul(vt, dahu))), _inv(s_row)))
    tangents = [ds, du, mx.H(dv)]
    lo, hi = _subset(subset_by_index, k, "svd")
    if (lo, hi) != (0, k):
        nd = len(batch) + 2
        ds = st.slice_in_dim(ds, lo, hi, 1, nd - 2)
        tangents = [ds, st.slice_in_dim(du, lo, hi, 1, nd - 1), st.slice_in_dim(mx.H(dv), lo, hi, 1, nd - 2)]
    return outs, tangents


def _inv(x):
    return ew.div(mx.full(aval_of(x).shape, 1, aval_of(x).dtype), x)


svd_p = mx.lapack_primitive("svd", _svd_impl, _svd_abstract_eval, multiple_results=True, compiled=True)
svd_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
svd_p.def_jvp(_svd_jvp)


def svd(a, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: ``(s, u, vt)`` (``[s]`` without ``compute_uv``) with
    ``a = u @ diag(s) @ vt`` and ``s`` descending (``jax.lax.linalg.svd``'s primitive order).

    >>> s, u, vt = svd(np.array([[0.0, 2.0], [1.0, 0.0]]))
    >>> s.tolist()
    [2.0, 1.0]
    """
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    algorithm = None if algorithm is None else str(getattr(algorithm, "value", algorithm)).lower()
    return svd_p.bind(
        a,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        subset_by_index=subset,
        algorithm=algorithm,
    )


# ----------------------------------------------------------------------------------------------
# eig(a) -> (w, [vl], [vr]) complex


def _eig_abstract_eval(a, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    mx.check_dtype("eig", a)
    mx.check_matrix("eig", "a", a, square=True)
    cdt = mx.complex_dtype(a.dtype)
    outs = [ShapedArray(a.shape[:-1], cdt)]
    outs += [ShapedArray(a.shape, cdt)] * (int(compute_left_eigenvectors) + int(compute_right_eigenvectors))
    return outs


def _eig_impl(a, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    a = np.asarray(a)
    n = a.shape[-1]
    cdt = mx.complex_dtype(a.dtype)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    likes = [((n,), cdt)] + [((n, n), cdt)] * (int(left) + int(right))
    if a.size == 0:
        return [np.zeros((*a.shape[:-2], *s), d) for s, d in likes]
    sl = _scipy_linalg()

    def one(x):
        try:
            res = sl.eig(x, left=left, right=right, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return [np.full(s, np.nan, d) for s, d in likes]  # NOTE: [factorisation failures]
        return list(res) if isinstance(res, tuple) else [res]

    return mx.per_matrix(one, [a], (2,), likes)


def _eig_vec_jvp(w, v, da):
    """Right-eigenvector tangents under LAPACK's normalisation (unit 2-norm, largest component
    real), as JAX: non-degenerate perturbation theory plus the normalisation's correction."""
    p = mx.matmul(solve_square(v, da), v, highest=True)  # (the products at HIGHEST, as JAX's rule)
    dw = mx.diagonal(p)
    u = mx.matmul(v, ew.mul(_reciprocal_gaps(w), p), highest=True)
    shape = aval_of(v).shape
    nd = len(shape)
    k = red.argmax(ew.abs_p.bind(v), nd - 2, np.int32)
    rows = st.broadcasted_iota(np.int32, shape, nd - 2)
    sel = ew.convert_element_type(
        ew.eq_p.bind(rows, st.broadcast_in_dim(k, shape, (*range(nd - 2), nd - 1))), aval_of(v).dtype
    )
    re = ew.neg(mx.real(red.reduce_sum(ew.mul(mx.conj(v), u), (nd - 2,))))
    im = ew.div(
        ew.neg(mx.imag(red.reduce_sum(ew.mul(sel, u), (nd - 2,)))),
        mx.real(red.reduce_sum(ew.mul(sel, v), (nd - 2,))),
    )
    c = mx.make_complex(re, im)
    return dw, ew.add(u, mx.columns_scaled(v, c))


def _eig_jvp(
    primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs
):
    (a,), (da,) = primals, tangents
    params = dict(
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=compute_right_eigenvectors,
        enable_eigvec_derivs=enable_eigvec_derivs,
    )
    outs = eig_p.bind(a, **params)
    if type(da) is Zero:
        return outs, [Zero.from_primal_value(o) for o in outs]
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        # (JAX's NotImplementedError, in its words: jvp/grad of numpy.linalg.eig, of its eigenvalues
        # too, and of lax.linalg.eig with eigenvectors; eigvals computes)
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input "
            "that JAX cannot check (see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass "
            "enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. See "
            "https://github.com/jax-ml/jax/issues/2748 for discussion."
        )
    # The vectors feed the tangent formula with the caller's enable_eigvec_derivs, as JAX's rule: a
    # second derivative of eigvals differentiates them, JAX's NotImplementedError unless opted in.
    full = eig_p.bind(
        a,
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=enable_eigvec_derivs,
    )
    w, vr = full[0], full[-1]
    dtype = aval_of(vr).dtype
    dac = ew.convert_element_type(da, dtype)
    if not vectors:
        nd = aval_of(vr).ndim
        return outs, [red.reduce_sum(ew.mul(solve_square(vr, dac), mx.T(vr)), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, dac)
    tangents_out = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(mx.conj(w), full[1], mx.H(dac))
        tangents_out.append(dvl)
    if compute_right_eigenvectors:
        tangents_out.append(dvr)
    return outs, tangents_out


eig_p = mx.lapack_primitive("eig", _eig_impl, _eig_abstract_eval, multiple_results=True)
eig_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
eig_p.def_jvp(_eig_jvp)


def eig(
    a,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
):
    """Eigenvalues and left/right eigenvectors of general square matrices, complex:
    ``[w, vl, vr]`` (vectors as asked) with ``a @ vr = vr * w`` and ``vl^H a = w * vl^H``.

    >>> w, vr = eig(np.array([[2.0, 0.0], [0.0, 3.0]]), compute_left_eigenvectors=False)
    >>> w.tolist()
    [(2+0j), (3+0j)]
    """
    return eig_p.bind(
        a,
        compute_left_eigenvectors=bool(compute_left_eigenvectors),
        compute_right_eigenvectors=bool(compute_right_eigenvectors),
        enable_eigvec_derivs=bool(enable_eigvec_derivs),
    )


# ----------------------------------------------------------------------------------------------
# schur(a) -> (t, [z]) with a = z t z^H


def _schur_abstract_eval(a, *, compute_schur_vectors):
    mx.check_dtype("schur", a)
    mx.check_matrix("schur", "a", a, square=True)
    return [ShapedArray(a.shape, a.dtype)] * (1 + int(compute_schur_vectors))


def _schur_impl(a, *, compute_schur_vectors):
    a = np.asarray(a)
    n = a.shape[-1]
    likes = [((n, n), a.dtype)] * (1 + int(compute_schur_vectors))
    if a.size == 0:
        return [np.zeros(a.shape, a.dtype) for _ in likes]
    sl = _scipy_linalg()
    output = "complex" if a.dtype.kind == "c" else "real"

    def one(x):
        try:
            t, z = sl.schur(x, output=output, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            t = z = np.full((n, n), np.nan, a.dtype)  # NOTE: [factorisation failures]
        return [t, z][: len(likes)]

    return mx.per_matrix(one, [a], (2,), likes)


schur_p = mx.lapack_primitive("schur", _schur_impl, _schur_abstract_eval, multiple_results=True)
schur_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
no_derivative(schur_p, "the Schur form's ordering and block structure change discontinuously (as in JAX)")


def schur(a, *, compute_schur_vectors: bool = True):
    """Schur decomposition ``a = z t z^H``: ``[t, z]`` (``[t]`` without vectors); ``t`` is
    quasi-upper-triangular for real ``a`` (2x2 blocks for complex pairs), upper for complex.

    >>> t, z = schur(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> np.diag(np.asarray(t)).tolist()
    [1.0, 3.0]
    """
    return schur_p.bind(a, compute_schur_vectors=bool(compute_schur_vectors))


# ----------------------------------------------------------------------------------------------
# hessenberg(a) -> (a', taus); tridiagonal(a) -> (a', d, e, taus)


def _hessenberg_abstract_eval(a):
    mx.check_dtype("hessenberg", a)
    mx.check_matrix("hessenberg", "a", a, square=True)
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*a.shape[:-2], max(n - 1, 0)), a.dtype)]


def _hessenberg_impl(a):
    a = np.asarray(a)
    n = a.shape[-1]
    likes = [((n, n), a.dtype), ((max(n - 1, 0),), a.dtype)]
    if a.size == 0:
        return [np.zeros((*a.shape[:-2], *s), d) for s, d in likes]
    gehrd = _scipy_linalg().lapack.get_lapack_funcs("gehrd", (a,))

    def one(x):
        h, tau, info = gehrd(x, lo=0, hi=n - 1)
        return [h, tau[: n - 1]] if info == 0 else [np.full_like(h, np.nan), np.full(n - 1, np.nan, a.dtype)]

    return mx.per_matrix(one, [a], (2,), likes)


hessenberg_p = mx.lapack_primitive(
    "hessenberg", _hessenberg_impl, _hessenberg_abstract_eval, multiple_results=True
)
hessenberg_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
no_derivative(hessenberg_p, "its packed reflectors are not a smooth function of the input (as in JAX)")


def hessenberg(a):
    """Reduce square matrices to upper Hessenberg form: ``(a', taus)``, the Hessenberg matrix in
    the upper triangle and first subdiagonal of ``a'``, Householder reflectors below (LAPACK gehrd).

    >>> h, taus = hessenberg(np.eye(3))
    >>> np.asarray(h).tolist() == np.eye(3).tolist(), taus.shape
    (True, (2,))
    """
    return hessenberg_p.bind(a)


def _tridiagonal_abstract_eval(a, *, lower):
    mx.check_dtype("tridiagonal", a)
    mx.check_matrix("tridiagonal", "a", a, square=True)
    *batch, n, _ = a.shape
    if n == 0:
        raise ValueError("tridiagonal: the matrices must not be empty")
    rdt = mx.real_dtype(a.dtype)
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray((*batch, n), rdt),
        ShapedArray((*batch, n - 1), rdt),
        ShapedArray((*batch, n - 1), a.dtype),
    ]


def _tridiagonal_impl(a, *, lower):
    a = np.asarray(a)
    n = a.shape[-1]
    rdt = mx.real_dtype(a.dtype)
    likes = [((n, n), a.dtype), ((n,), rdt), ((n - 1,), rdt), ((n - 1,), a.dtype)]
    name = "hetrd" if a.dtype.kind == "c" else "sytrd"
    sytrd = _scipy_linalg().lapack.get_lapack_funcs(name, (a,))

    def one(x):
        c, d, e, tau, info = sytrd(x, lower=int(lower))
        if info != 0:
            return [np.full((n, n), np.nan, a.dtype), *(np.full(s, np.nan, t) for s, t in likes[1:])]
        return [c, d, e, tau]

    return mx.per_matrix(one, [a], (2,), likes)


tridiagonal_p = mx.lapack_primitive(
    "tridiagonal", _tridiagonal_impl, _tridiagonal_abstract_eval, multiple_results=True
)
tridiagonal_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
no_derivative(tridiagonal_p, "its packed reflectors are not a smooth function of the input (as in JAX)")


def tridiagonal(a, *, lower: bool = True):
    """Reduce Hermitian matrices (one triangle read) to real symmetric tridiagonal form
    (LAPACK sytrd/hetrd): ``(a', d, e, taus)`` with diagonal ``d`` and off-diagonal ``e``.

    >>> _, d, e, _ = tridiagonal(np.array([[2.0, 1.0], [1.0, 3.0]]))
    >>> d.tolist(), e.tolist()
    ([2.0, 3.0], [1.0])
    """
    return tridiagonal_p.bind(a, lower=bool(lower))
