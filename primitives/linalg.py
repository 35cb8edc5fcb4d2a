"""Dense linear algebra on LAPACK: Cholesky, LU, QR, Householder products and triangular solves
(the eigen- and singular-value problems are in ``primitives/spectral.py``, tridiagonal solves in
``primitives/tridiagonal.py``, re-exported here with ``jax.lax.linalg``'s other names).

Layer: primitives. Imports the funcgrad kernel, numpy, sibling families and (deferred, for import
time) SciPy's LAPACK wrappers.

Each primitive is the kernel LAPACK provides, with the rules of ``jax.lax.linalg``: the eager impl
calls LAPACK through NumPy/SciPy (batched over the leading axes; ``qr`` runs its lowering compiled
instead, NOTE: [eager LAPACK as compiled] in ``primitives/_matrix.py``), the lowering
(``xla_bridge/rules/linalg.py``) calls the same LAPACK routine through jaxlib's typed-FFI custom
calls, and the derivative rules are the standard matrix-calculus ones, composed of primitives
(triangular solves, products, masks). Operands follow NOTE: [linalg operand contract].

# NOTE: [factorisation failures]
# As in JAX, a factorisation that fails (Cholesky of a matrix that is not positive definite, an
# eigen- or singular-value iteration that does not converge, a singular tridiagonal system)
# returns NaN in every output of that batch element instead of raising: under ``jit`` there is
# nothing to raise from, and eager mode returns what compiled code returns. A singular matrix is
# not a failure of LU (``getrf`` completes; solves with it give inf/NaN, as LAPACK's do).

# NOTE: [one triangle read]
# ``cholesky`` reads only the lower triangle of its operand (``eigh`` the ``lower`` triangle, as
# LAPACK's potrf/syevd do): the matrix it factorises is ``tril(a) + tril(a, -1)^H``. Derivative
# rules differentiate exactly that function, so the primitive passes finite-difference checks
# with unsymmetric perturbations; the surface symmetrises ``(a + a^H) / 2`` first, as JAX does.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import (
    JET_OF_MATRIX_RULE,
    aval_of,
    full_series,
    move_to_front,
    no_derivative,
    series_add,
    series_total,
    size_extremum,
    split_series,
    to_front,
)
from funcgrad.primitives.control_flow import while_p
from funcgrad.primitives.tridiagonal import tridiagonal_solve, tridiagonal_solve_p

from funcgrad.kernel import batching
from funcgrad.kernel.ad import Zero, defjvp, instantiate, is_undefined_primal
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

__all__ = [
    "cholesky",
    "cholesky_p",
    "geqrf",
    "geqrf_p",
    "householder_product",
    "householder_product_p",
    "lu",
    "lu_p",
    "pivots_to_permutation",
    "qr",
    "qr_p",
    "triangular_solve",
    "triangular_solve_p",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
]


def sym_from_triangle(x, lower: bool):
    """``tril(x) + tril(x, -1)^H`` (or the upper version): the matrix a one-triangle routine
    factorises (NOTE: [one triangle read])."""
    if lower:
        return ew.add(mx.tril(x), mx.H(mx.tril(x, -1)))
    return ew.add(mx.triu(x), mx.H(mx.triu(x, 1)))


# ----------------------------------------------------------------------------------------------
# cholesky(a) -> L, lower triangular with a = L L^H


def _cholesky_abstract_eval(a):
    mx.check_dtype("cholesky", a)
    mx.check_matrix("cholesky", "a", a, square=True)
    return ShapedArray(a.shape, a.dtype)


def _cholesky_impl(a):
    a = np.asarray(a)
    if a.size == 0:
        return np.zeros_like(a)
    if a.ndim == 2 and a.dtype.char in "fdFD":
        # One matrix: SciPy's potrf on a row-major ``a`` read as ``a.T`` (NOTE: [row-major BLAS
        # operands]): the upper factor U of a.T, U^H U = conj(A), is L.T -- half of
        # np.linalg.cholesky's time at n=500, which copies in and out and factors unblocked.
        u, info = mx.lapack("potrf", a)(a.T, lower=0)
        return u.T if info == 0 else np.full_like(a, np.nan)  # NOTE: [factorisation failures]
    try:
        return np.linalg.cholesky(a)  # potrf on the lower triangle, batched
    except np.linalg.LinAlgError:
        out = np.empty_like(a)
        for idx in np.ndindex(*a.shape[:-2]):
            try:
                out[idx] = np.linalg.cholesky(a[idx])
            except np.linalg.LinAlgError:
                out[idx] = np.nan  # NOTE: [factorisation failures]
        return out


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    half = ew.select(mx.eye_mask(shape), mx.full(shape, 0.5, dtype), mx.full(shape, 1, dtype))
    return ew.mul(mx.tril(x), half)


def _cholesky_jvp(primals, tangents):
    # Murray (2016), arXiv:1602.07527: dL = L phi(L^-1 dA L^-H), with the whole tangent dA as JAX's
    # rule takes it (not its lower triangle reflected: the callers that symmetrise the operand,
    # jnp.linalg.cholesky and lax.linalg.cholesky's default, symmetrise the tangent too; scipy's
    # cholesky and symmetrize_input=False get JAX's gradients, which are not symmetric).
    (a,), (da,) = primals, tangents
    L = mx.tril(cholesky_p.bind(a))  # (JAX's _tril)
    if type(da) is Zero:
        return L, Zero.from_primal_value(L)
    tmp = triangular_solve(L, da, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    return L, mx.matmul(L, _phi(inner), highest=True)


cholesky_p = mx.lapack_primitive("cholesky", _cholesky_impl, _cholesky_abstract_eval)
cholesky_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
cholesky_p.def_jvp(_cholesky_jvp)


def cholesky(a):
    """The lower Cholesky factor of the (lower triangle of the) matrices ``a``; NaN where ``a`` is
    not positive definite (NOTE: [factorisation failures]).

    >>> cholesky(np.array([[4.0, 0.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    # (JAX's lax.linalg.cholesky: the factor's lower triangle selected, so the tangent's upper
    # triangle is 0 even where the rule's product is NaN -- a factor of an operand with infinities)
    return mx.tril(cholesky_p.bind(a))


# ----------------------------------------------------------------------------------------------
# triangular_solve(a, b): op(a) x = b (left_side) or x op(a) = b


# JAX solves float16/bfloat16 systems with XLA's own triangular_solve op (LAPACK has no such trsm):
# so does funcgrad, eagerly too (``_ts_impl``), for JAX's numbers, rounded as XLA rounds them.
_XLA_ONLY_DTYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _ts_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    mx.check_dtype("triangular_solve", a, b, also=_XLA_ONLY_DTYPES)
    mx.check_matrix("triangular_solve", "a", a, square=True)
    mx.check_matrix("triangular_solve", "b", b)
    mx.check_batch("triangular_solve", a=(a, 2), b=(b, 2))
    n = a.shape[-1]
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != n:
        side = "rows" if left_side else "columns"
        raise ValueError(
            f"triangular_solve: b must have {n} {side} to match a {a.str_short()} "
            f"(left_side={left_side}), got b {b.str_short()}"
        )
    return ShapedArray(b.shape, b.dtype)


def _ts_params(left_side, lower, transpose_a, conjugate_a, unit_diagonal) -> dict:
    """triangular_solve_p's parameters by name, for a rule that binds it again."""
    return dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )


def _ts_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    if b.size == 0:
        return np.zeros_like(b)
    if b.dtype in _XLA_ONLY_DTYPES and hooks.eager_compiled is not None:
        params = _ts_params(left_side, lower, transpose_a, conjugate_a, unit_diagonal)
        return hooks.eager_compiled(triangular_solve_p, (a, b), params)._numpy()
    if conjugate_a and not np.iscomplexobj(a):
        # Conjugating a real matrix is the identity: no copy (np.conj makes one), and a
        # transposition stays a BLAS flag on the row-major operand (NOTE: [row-major BLAS operands]).
        conjugate_a = False
    if conjugate_a and not transpose_a:
        a, conjugate_a = np.conj(a), False
    trsm = mx.blas("trsm", a, b)
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    if a.ndim == 2:
        return _trsm_2d(trsm, a, b, left_side, lower, trans, unit_diagonal)
    kw = dict(side=0 if left_side else 1, lower=int(lower), trans_a=trans, diag=int(unit_diagonal))
    (out,) = mx.per_matrix(lambda x, y: (trsm(1.0, x, y, **kw),), [a, b], (2, 2), [(b.shape[-2:], b.dtype)])
    return out


def _trsm_2d(trsm, a, b, left_side, lower, trans, unit_diagonal):
    """One BLAS ``trsm`` on the operands' own memory layout (NOTE: [row-major BLAS operands])."""
    if trans != 2 and a.flags.c_contiguous and not a.flags.f_contiguous:
        # a = (a.T).T with a.T column-major: the other triangle of a.T, the other transposition.
        a, lower, trans = a.T, not lower, 1 - trans
    if trans != 2 and b.flags.c_contiguous and not b.flags.f_contiguous:
        # op(a) x = b  <=>  x.T op(a).T = b.T: b.T and the answer's transpose are column-major.
        out = trsm(
            1.0, a, b.T, side=int(left_side), lower=int(lower), trans_a=1 - trans, diag=int(unit_diagonal)
        )
        return out.T
    if left_side and b.shape[1] == 1:
        trsv = mx.blas("trsv", a, b)
        x = trsv(a, b[:, 0], lower=int(lower), trans=trans, diag=int(unit_diagonal))
        return x[:, None]
    return trsm(
        1.0, a, b, side=0 if left_side else 1, lower=int(lower), trans_a=trans, diag=int(unit_diagonal)
    )


# NOTE: [row-major BLAS operands]
# SciPy's BLAS wrappers take column-major (Fortran) arrays and copy anything else, element by
# element, before the call and the answer is column-major; NumPy's arrays are row-major. A
# row-major matrix is the column-major storage of its transpose, so a triangular solve reads a
# row-major ``a`` as ``a.T`` (the other triangle, the other transposition) and solves the
# transposed system ``x.T op(a).T = b.T`` for a row-major ``b``, whose answer comes back row-major
# through ``.T``: no copy on either side (500x500 with a 500-column right-hand side: 20 ms with
# the copies, 12 ms without, one OpenBLAS thread). A one-column right-hand side goes to ``trsv``
# (a quarter of ``trsm``'s time at n=500). A conjugated transposition without a transposed copy
# has no BLAS flag, so ``trans == 2`` keeps the copying call.


def _ts_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    m, n = aval_of(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = mx.tril(g_a, -k) if lower else mx.triu(g_a, k)
    g_a = ew.neg(g_a)
    g_a = mx.T(g_a) if transpose_a else g_a
    g_a = mx.conj(g_a) if conjugate_a else g_a
    params = _ts_params(left_side, lower, transpose_a, conjugate_a, unit_diagonal)

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, **params)

    # A triangular solve costs about a product: order the two operations the cheaper way.
    dot = functools.partial(mx.matmul, highest=True)  # (JAX's rule's precision)
    if left_side:
        return a_inverse(dot(g_a, ans)) if m > n else dot(a_inverse(g_a), ans)
    return a_inverse(dot(ans, g_a)) if m < n else dot(ans, a_inverse(g_a))


def _ts_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if is_undefined_primal(a):
        raise ValueError("triangular_solve is not linear in its matrix a")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    ct_b = triangular_solve_p.bind(
        a,
        instantiate(ct),
        left_side=left_side,
        lower=lower,
        transpose_a=not transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    return [None, ct_b]


def _ts_batch(axis_size, vals, dims, **params):
    (a, b), (da, db) = vals, dims
    if da is None:
        # Fold the batch into b's free axis: one solve with a wider right-hand side.
        nd = aval_of(b).ndim
        if params["left_side"]:
            b = st.moveaxis(b, db, nd - 1)
            shape = aval_of(b).shape
            flat = st.reshape(b, (*shape[:-2], shape[-2] * shape[-1]))
            out = triangular_solve_p.bind(a, flat, **params)
            return st.reshape(out, shape), nd - 1
        b = st.moveaxis(b, db, nd - 2)
        shape = aval_of(b).shape
        flat = st.reshape(b, (*shape[:-3], shape[-3] * shape[-2], shape[-1]))
        out = triangular_solve_p.bind(a, flat, **params)
        return st.reshape(out, shape), nd - 2
    a, b = move_to_front(a, da), to_front(b, db, axis_size)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p = mx.lapack_primitive("triangular_solve", _ts_impl, _ts_abstract_eval)
defjvp(
    triangular_solve_p,
    _ts_jvp_a,
    lambda g_b, ans, a, b, **params: triangular_solve_p.bind(a, g_b, **params),
    uses_answer=True,
)
triangular_solve_p.def_transpose(_ts_transpose)
triangular_solve_p.def_batch(_ts_batch)


def _triangular_solve_taylor(primals, series, **params):
    """``op(A) X = B``: ``X_k = op(A_0)^-1 (B_k - sum_(j=1..k) op(A_j) X_(k-j))`` (``X op(A) = B``
    on the right side), with ``A_j`` read as the solve reads ``A`` (its triangle; no diagonal when
    ``unit_diagonal``). One solve per term, where the rule from the JVP rule solves ``2^K`` times."""
    (a0, b0), (sa, sb) = primals, series
    a, b = full_series(a0, sa), full_series(b0, sb)
    off = 1 if params["unit_diagonal"] else 0

    def op(m):
        m = mx.tril(m, -off) if params["lower"] else mx.triu(m, off)
        m = mx.T(m) if params["transpose_a"] else m
        return mx.conj(m) if params["conjugate_a"] else m

    ops = [None, *(None if t is None else op(t) for t in a[1:])]
    x = [triangular_solve_p.bind(a0, b0, **params)]
    for k in range(1, len(a)):
        products = [
            mx.matmul(ops[j], x[k - j]) if params["left_side"] else mx.matmul(x[k - j], ops[j])
            for j in range(1, k + 1)
            if ops[j] is not None and x[k - j] is not None
        ]
        total = series_total(products)
        rhs = series_add(b[k], None if total is None else ew.mul(total, -1))
        x.append(None if rhs is None else triangular_solve_p.bind(a0, rhs, **params))
    return split_series(x)


triangular_solve_p.def_taylor(_triangular_solve_taylor)


def triangular_solve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    """Solve ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for triangular ``a``, where ``op``
    transposes and/or conjugates as asked (``jax.lax.linalg.triangular_solve``).

    >>> triangular_solve(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[2.0], [3.0]]),
    ...                  left_side=True, lower=True).tolist()
    [[1.0], [2.0]]
    """
    return triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )


# ----------------------------------------------------------------------------------------------
# lu(a) -> (lu, pivots, permutation) with a[permutation] = L U


def pivots_to_permutation(pivots, permutation_size: int):
    """The permutation ``(..., m)`` that LAPACK's row interchanges ``pivots`` (``(..., k)``,
    0-based: row ``i`` was swapped with row ``pivots[i]``, in order) apply to ``range(m)``: a
    ``while`` loop of primitives with O(1) work per swap (two dynamic slices and two dynamic
    updates, as JAX's), mapped over leading batch axes.

    >>> pivots_to_permutation(np.array([2, 2, 2], np.int32), 3).tolist()
    [2, 0, 1]
    """
    aval = aval_of(pivots)
    batch, k, m = aval.shape[:-1], aval.shape[-1], int(permutation_size)
    if m < k:
        raise ValueError(  # (JAX's words)
            f"Output permutation size {m} has to exceed the trailing dimension of the pivots. Got "
            f"pivots size {k}"
        )
    if k == 0 or m == 0 or batch:
        perm0 = st.broadcasted_iota(np.int32, (*batch, m), len(batch))
        if k == 0 or m == 0 or 0 in batch:
            return perm0
        size = int(np.prod(batch))
        flat = st.reshape(ew.convert_element_type(pivots, np.int32), (size, k))
        (out,) = batching.vmap_flat(lambda p: [pivots_to_permutation(p, m)], size, [0], [0], [flat])
        return st.reshape(out, (*batch, m))
    i_aval = ShapedArray((), np.dtype(np.int32))

    def body(piv, i, perm):
        j = ix.dynamic_index_in_dim(piv, i, keepdims=False)
        p_i = ix.dynamic_index_in_dim(perm, i)
        p_j = ix.dynamic_index_in_dim(perm, j)
        perm = ix.dynamic_update_slice(perm, p_j, [i])
        return [ew.add(i, np.int32(1)), ix.dynamic_update_slice(perm, p_i, [j])]

    perm_aval = ShapedArray((m,), np.dtype(np.int32))
    body_jaxpr = trace_to_jaxpr(body, [ShapedArray((k,), np.dtype(np.int32)), i_aval, perm_aval])
    cond_jaxpr = trace_to_jaxpr(lambda i, perm: [ew.lt_p.bind(i, np.int32(k))], [i_aval, perm_aval])
    _, perm = while_p.bind(
        ew.convert_element_type(pivots, np.int32), np.int32(0), st.broadcasted_iota(np.int32, (m,), 0),
        cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=0, body_nconsts=1,
    )  # fmt: skip
    return perm


def _pivots_to_permutation_numpy(pivots, m):
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), (*pivots.shape[:-1], m)).copy()
    for idx in np.ndindex(*pivots.shape[:-1]):
        p = perm[idx]
        for i, j in enumerate(pivots[idx]):
            p[i], p[j] = p[j], p[i]
    return perm


def _lu_abstract_eval(a):
    mx.check_dtype("lu", a)
    mx.check_matrix("lu", "a", a)
    *batch, m, n = a.shape
    i32 = np.dtype(np.int32)
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray((*batch, size_extremum(m, n, "min")), i32),
        ShapedArray((*batch, m), i32),
    ]


def _lu_impl(a):
    a = np.asarray(a)
    *batch, m, n = a.shape
    k = min(m, n)
    if a.size == 0:
        pivots = np.broadcast_to(np.arange(k, dtype=np.int32), (*batch, k)).copy()
        return [np.zeros_like(a), pivots, _pivots_to_permutation_numpy(pivots, m)]
    getrf, laswp = mx.lapack("getrf", a), mx.lapack("laswp", np.zeros(1))
    rows = np.arange(m, dtype=np.float64)[:, None]

    def one(x):
        lu_, piv, _ = getrf(x)  # info > 0 (an exactly zero pivot) is not a failure
        # The interchanges applied to 0..m-1 (LAPACK's laswp): the permutation, in C.
        return lu_, piv[:k], laswp(rows, piv[:k])[:, 0]

    return mx.per_matrix(one, [a], (2,), [((m, n), a.dtype), ((k,), np.int32), ((m,), np.int32)])


def _pad_to(x, rows: int, cols: int):
    shape = aval_of(x).shape
    config = [(0, 0, 0)] * (len(shape) - 2) + [(0, rows - shape[-2], 0), (0, cols - shape[-1], 0)]
    return st.pad(x, np.zeros((), aval_of(x).dtype), config)


def _lu_factors(lu_, m: int, n: int):
    """Square ``L`` (m, m; unit lower) and ``U`` (n, n; identity below the k x k block)."""
    k = min(m, n)
    nd = aval_of(lu_).ndim
    batch = aval_of(lu_).shape[:-2]
    dtype = aval_of(lu_).dtype
    l = mx.tril(st.slice_in_dim(lu_, 0, k, 1, nd - 1), -1)
    l = ew.add(_pad_to(l, m, m), mx.eye(m, dtype, batch))
    u = _pad_to(mx.triu(st.slice_in_dim(lu_, 0, k, 1, nd - 2)), n, n)
    if n > k:  # the identity in the bottom-right (n - k) x (n - k) block
        config = [(0, 0, 0)] * len(batch) + [(k, 0, 0), (k, 0, 0)]
        u = ew.add(u, st.pad(mx.eye(n - k, dtype, batch), np.zeros((), dtype), config))
    return l, u


def _lu_jvp(primals, tangents):
    # De Hoog, Anderssen and Lukas: with F = L^-1 P dA U^-1, dL = L tril(F, -1), dU = triu(F) U.
    (a,), (da,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    zeros = [Zero.from_primal_value(pivots), Zero.from_primal_value(perm)]
    if type(da) is Zero:
        return [lu_, pivots, perm], [Zero.from_primal_value(lu_), *zeros]
    m, n = aval_of(a).shape[-2:]
    l, u = _lu_factors(lu_, m, n)
    pda = mx.matmul(mx.permutation_matrix(perm, aval_of(a).dtype), da)
    la = triangular_solve(l, pda, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, lower=False)
    dlu = ew.add(mx.matmul(l, mx.tril(lau, -1)), mx.matmul(mx.triu(lau), u))
    return [lu_, pivots, perm], [dlu, *zeros]


lu_p = mx.lapack_primitive("lu", _lu_impl, _lu_abstract_eval, multiple_results=True)
lu_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
lu_p.def_jvp(_lu_jvp)


def lu(a):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``a[..., permutation, :] == L @ U`` (``L`` unit lower, ``U`` upper, packed in ``lu``).

    >>> lu_, pivots, perm = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> perm.tolist(), lu_.tolist()
    ([1, 0], [[3.0, 4.0], [0.3333333333333333, 0.6666666666666667]])
    """
    return lu_p.bind(a)


# ----------------------------------------------------------------------------------------------
# qr(a) -> (q, r) [, p]


def _qr_abstract_eval(a, *, pivoting, full_matrices):
    mx.check_dtype("qr", a)
    mx.check_matrix("qr", "a", a)
    *batch, m, n = a.shape
    k = m if full_matrices else size_extremum(m, n, "min")
    outs = [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)]
    if pivoting:
        outs.append(ShapedArray((*batch, n), np.dtype(np.int32)))
    return outs


def _qr_impl(a, *, pivoting, full_matrices):
    a = np.asarray(a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    if a.size == 0:
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), (*batch, m, k)).copy()
        r = np.zeros((*batch, k, n), a.dtype)
        return [q, r, np.zeros((*batch, n), np.int32)] if pivoting else [q, r]
    if not pivoting:
        q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
        return [q, r]
    import scipy.linalg  # noqa: PLC0415 - deferred for import time, not for a cycle

    mode = "full" if full_matrices else "economic"
    outs = mx.per_matrix(
        lambda x: scipy.linalg.qr(x, mode=mode, pivoting=True, check_finite=False),
        [a],
        (2,),
        [((m, k), a.dtype), ((k, n), a.dtype), ((n,), np.int32)],
    )
    return outs


def _thin_qr_jvp(q, r, dx):
    """JVP of the QR decomposition of (..., m, n) matrices with m >= n (Townsend's note,
    j-towns.github.io/papers/qr-derivative.pdf)."""
    dx_rinv = triangular_solve(r, dx)  # right side: dx r^-1
    qt_dx_rinv = mx.matmul(mx.H(q), dx_rinv)
    lower = mx.tril(qt_dx_rinv, -1)
    do = ew.sub(lower, mx.H(lower))  # skew-Hermitian
    if aval_of(q).dtype.kind == "c":
        # The diagonal's imaginary part: do gets it so that dr's diagonal stays real.
        shape = aval_of(qt_dx_rinv).shape
        imag = ew.sub(qt_dx_rinv, ew.convert_element_type(mx.real(qt_dx_rinv), aval_of(q).dtype))
        do = ew.add(do, ew.select(mx.eye_mask(shape), imag, mx.zeros_like(imag)))
    dq = ew.add(mx.matmul(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = mx.matmul(ew.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
    q, r = outs[:2]
    if type(dx) is Zero:
        return outs, [Zero.from_primal_value(o) for o in outs]
    *_, m, n = aval_of(x).shape
    nd = aval_of(x).ndim
    if pivoting:
        dx = mx.matmul(dx, mx.T(mx.permutation_matrix(outs[2], aval_of(x).dtype)))
        x = mx.matmul(x, mx.T(mx.permutation_matrix(outs[2], aval_of(x).dtype)))
    tail = [Zero.from_primal_value(outs[2])] if pivoting else []
    if m < n:
        # x = [x1 x2] with x1 m x m: dq, dr1 from the square part, dr2 = dq^H x2 + q^H dx2.
        dq, dr1 = _thin_qr_jvp(q, st.slice_in_dim(r, 0, m, 1, nd - 1), st.slice_in_dim(dx, 0, m, 1, nd - 1))
        x2, dx2 = st.slice_in_dim(x, m, n, 1, nd - 1), st.slice_in_dim(dx, m, n, 1, nd - 1)
        dr2 = ew.add(mx.matmul(mx.H(dq), x2), mx.matmul(mx.H(q), dx2))
        return outs, [dq, st.concatenate([dr1, dr2], nd - 1), *tail]
    q_mn = st.slice_in_dim(q, 0, n, 1, nd - 1) if full_matrices else q
    r_nn = st.slice_in_dim(r, 0, n, 1, nd - 2) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return outs, [dq_mn, dr_nn, *tail]
    # Full matrices (Roberts & Roberts, arXiv:2409.13374, eqs. 32-33): the completion's tangent.
    q_nn, q_pn = st.slice_in_dim(q_mn, 0, n, 1, nd - 2), st.slice_in_dim(q_mn, n, m, 1, nd - 2)
    q_mp = st.slice_in_dim(q, n, m, 1, nd - 1)
    dq_nn, dq_pn = st.slice_in_dim(dq_mn, 0, n, 1, nd - 2), st.slice_in_dim(dq_mn, n, m, 1, nd - 2)
    batch = aval_of(q).shape[:-2]
    shifted = ew.sub(q_nn, mx.eye(n, aval_of(q).dtype, batch))
    z_pn_h = solve_square(mx.H(shifted), mx.H(q_pn))
    z_pn = mx.H(z_pn_h)
    corr = ew.sub(dq_pn, mx.matmul(z_pn, dq_nn))
    dq_mp = ew.sub(mx.matmul(dq_mn, z_pn_h), mx.matmul(ew.add(q_mn, mx.matmul(q_mp, z_pn)), mx.H(corr)))
    dr = _pad_to(dr_nn, m, n)
    return outs, [st.concatenate([dq_mn, dq_mp], nd - 1), dr, *tail]


def solve_square(a, b):
    """``a^-1 b`` by LU with partial pivoting (for derivative rules)."""
    lu_, _, perm = lu_p.bind(a)
    x = mx.matmul(mx.permutation_matrix(perm, aval_of(a).dtype), b)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, x, left_side=True, lower=False)


qr_p = mx.lapack_primitive("qr", _qr_impl, _qr_abstract_eval, multiple_results=True, compiled=True)
qr_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
qr_p.def_jvp(_qr_jvp)


def qr(a, *, pivoting: bool = False, full_matrices: bool = True):
    """QR decomposition ``a = q @ r`` (``(q, r)``, or ``(q, r, p)`` with ``a[..., :, p] = q @ r``
    when ``pivoting``); ``q`` is ``m x m`` if ``full_matrices`` else ``m x min(m, n)``.

    >>> q, r = qr(np.array([[3.0], [4.0]]), full_matrices=False)
    >>> np.round(np.asarray(q), 12).tolist(), np.round(np.asarray(r), 12).tolist()
    ([[-0.6], [-0.8]], [[-5.0]])
    """
    return qr_p.bind(a, pivoting=bool(pivoting), full_matrices=bool(full_matrices))


# ----------------------------------------------------------------------------------------------
# geqrf(a) -> (a', taus): QR in LAPACK's packed form


def _geqrf_abstract_eval(a):
    mx.check_dtype("geqrf", a)
    mx.check_matrix("geqrf", "a", a)
    *batch, m, n = a.shape
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, size_extremum(m, n, "min")), a.dtype)]


def _geqrf_impl(a):
    a = np.asarray(a)
    *batch, m, n = a.shape
    k = min(m, n)
    if a.size == 0:
        return [np.zeros_like(a), np.zeros((*batch, k), a.dtype)]
    geqrf = mx.lapack("geqrf", a)
    return mx.per_matrix(lambda x: geqrf(x)[:2], [a], (2,), [((m, n), a.dtype), ((k,), a.dtype)])


geqrf_p = mx.lapack_primitive("geqrf", _geqrf_impl, _geqrf_abstract_eval, multiple_results=True)
geqrf_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
no_derivative(geqrf_p, "its packed reflectors are not a smooth function of the input (as in JAX); use qr")


def geqrf(a):
    """QR decomposition in LAPACK's packed form: ``(a', taus)``, ``r`` in the upper triangle of
    ``a'`` and the Householder reflectors below it (``householder_product`` rebuilds ``q``).

    >>> packed, taus = geqrf(np.array([[3.0], [4.0]]))
    >>> np.round(np.asarray(packed), 12).tolist(), np.round(np.asarray(taus), 12).tolist()
    ([[-5.0], [0.5]], [1.6])
    """
    return geqrf_p.bind(a)


# ----------------------------------------------------------------------------------------------
# householder_product(a, taus) -> the first n columns of H_0 H_1 ... H_{k-1}


def _hp_abstract_eval(a, taus):
    mx.check_dtype("householder_product", a, taus)
    mx.check_matrix("householder_product", "a", a)
    mx.check_batch("householder_product", a=(a, 2), taus=(taus, 1))
    m, n = a.shape[-2:]
    if m < n or taus.shape[-1] > n:
        raise ValueError(
            "householder_product: a must have at least as many rows as columns and taus at most "
            f"as many entries as a has columns, got a {a.str_short()} and taus {taus.str_short()}"
        )
    return ShapedArray(a.shape, a.dtype)


def _hp_impl(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if a.size == 0:
        return np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape).copy()
    name = "ungqr" if a.dtype.kind == "c" else "orgqr"
    orgqr = mx.lapack(name, a)

    def one(x, t):
        if k == 0:
            return (np.eye(m, n, dtype=a.dtype),)
        return (orgqr(x, t)[0],)

    (out,) = mx.per_matrix(one, [a, taus], (2, 1), [((m, n), a.dtype)])
    return out


householder_product_p = mx.lapack_primitive("householder_product", _hp_impl, _hp_abstract_eval)
householder_product_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
no_derivative(householder_product_p, "its reflectors' product is not differentiated (as in JAX); use qr")


def householder_product(a, taus):
    """The first ``n`` columns of the product of the Householder reflectors stored below the
    diagonal of ``a`` (``m x n``, ``m >= n``) with scale factors ``taus`` (LAPACK's orgqr/ungqr).

    >>> householder_product(np.zeros((2, 1)), np.array([2.0])).tolist()  # -tau * 0 is -0.0, as in LAPACK
    [[-1.0], [-0.0]]
    """
    return householder_product_p.bind(a, taus)
