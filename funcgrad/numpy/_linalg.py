"""Linear-algebra compositions shared by ``funcgrad.numpy.linalg``, ``funcgrad.scipy.linalg`` and
``funcgrad.lax.linalg``: operand checks and promotion, LU and Cholesky solves, ``solve``, the
determinant and its logarithm, all built on the LAPACK primitives of ``primitives.linalg``.

Layer: surface. Imports the kernel, the primitive catalog (``linalg``, ``_matrix``) and the
modules of ``funcgrad.numpy``.

# NOTE: [solve's derivative]
# ``solve(a, b)`` is one LU factorisation and two triangular solves, wrapped as JAX wraps it in a
# ``custom_linear_solve`` (operator ``x -> a @ x``, solver: the LU solves of ``stop_gradient(a)``):
# its derivative is the linear equation's, ``dx = solve(a, db - da @ x)`` with the *same* LU
# factors, and its transpose solves with ``a^T`` from those factors, so ``grad`` costs one more
# pair of triangular solves -- O(n^2) per right-hand side -- instead of differentiating ``getrf``
# (O(n^3)). Evaluated eagerly on concrete values it is just the factorisation and the solves.
# ``det``/``slogdet`` likewise state ``d log|det a| = tr(a^-1 da)``; ``det``'s rule uses the
# cofactor formulation so that singular matrices (rank n - 1) still get the exact, finite
# derivative (the adjugate), as JAX does.
"""

from __future__ import annotations

import functools

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.numpy import reductions
from funcgrad.numpy._core import asarray, aval, broadcast_shapes, broadcast_to, call_custom, promote_args
from funcgrad.numpy.manipulation import concatenate, expand_dims, reshape
from funcgrad.numpy.sorting import argsort, cumprod
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import gather as gather_ops
from funcgrad.primitives import linalg as la
from funcgrad.primitives import structure as st
from funcgrad.primitives.implicit import custom_linear_solve_p

T, H, matmul, tril, triu, diagonal = mx.T, mx.H, mx.matmul, mx.tril, mx.triu, mx.diagonal


class UnsupportedDtypeError(TypeError, NotImplementedError):
    """A dtype LAPACK has no routine for: a TypeError (funcgrad's kind for a wrong dtype) and the
    NotImplementedError JAX raises for it ("Unsupported dtype float16"), so either is caught."""


def inexact(x, name: str, arg: str = "a", *, half: bool = False):
    """``x`` as an Array of a LAPACK dtype: integers and booleans become float64 (the default
    float, as JAX's ``promote_dtypes_inexact``); other dtypes are refused with the fix (16-bit
    floats pass with ``half``: a closed form computes in them)."""
    x = asarray(x)
    dtype = x.dtype
    if dtype.kind in "biu":
        return ew.convert_element_type(x, _dt.inexact_of(dtype))
    if dtype not in mx.LAPACK_DTYPES and not (half and dtype in _dt.HALF_FLOATS):
        raise UnsupportedDtypeError(
            f"{name}: {arg} has dtype {dtype.name}, which LAPACK does not support (Unsupported dtype "
            f"{dtype.name}); use float32, float64, complex64 or complex128 (e.g. {arg}.astype('float32'))"
        )
    return x


def inexact_pair(a, b, name: str, *, half: bool = False):
    """Promote ``a`` and ``b`` to one LAPACK dtype (a 16-bit float promotes first, as in JAX: float16
    with float32 is solved in float32); with ``half`` two 16-bit floats stay 16-bit (a solver that
    takes them: ``triangular_solve``)."""
    a, b = promote_args(inexact(a, name, "a", half=True), inexact(b, name, "b", half=True))
    return inexact(a, name, "a", half=half), inexact(b, name, "b", half=half)


def matrices(x, name: str, arg: str = "a", *, square: bool = False, half: bool = False):
    """``x`` promoted (``inexact``) and checked to be a (batch of) matrices."""
    x = inexact(x, name, arg, half=half)
    if x.ndim < 2:
        raise ValueError(f"{name}: {arg} must be at least two-dimensional (..., M, N), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"{name}: {arg} must be square in its last two dimensions (..., N, N), got shape {x.shape}"
        )
    return x


def symmetrize(x):
    """``(x + x^H) / 2``."""
    return ew.mul(ew.add(x, H(x)), 0.5)


def batch_broadcast(*arrays_and_ranks):
    """Broadcast the leading (batch) dimensions of ``(array, core_rank)`` pairs together."""
    batch = broadcast_shapes(*[x.shape[: x.ndim - r] for x, r in arrays_and_ranks])
    return [broadcast_to(x, (*batch, *x.shape[x.ndim - r :])) for x, r in arrays_and_ranks]


# ----------------------------------------------------------------------------------------------
# Solves with factors


def permute_rows(b, perm):
    """``b[..., perm, :]`` for batched permutations ``perm`` (..., n): one gather whose batch
    axes pair ``b``'s with ``perm``'s."""
    if b.size == 0:
        return b
    nb = b.ndim - 2
    dnums = gather_ops.GatherDimensionNumbers(
        offset_dims=(nb + 1,),
        collapsed_slice_dims=(nb,),
        start_index_map=(nb,),
        operand_batching_dims=tuple(range(nb)),
        start_indices_batching_dims=tuple(range(nb)),
    )
    slice_sizes = (*([1] * nb), 1, b.shape[-1])
    return gather_ops.gather(b, expand_dims(perm, -1), dnums, slice_sizes, unique_indices=True)


def lu_solve(lu_, perm, b, trans: int = 0):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from ``lu(a)``'s
    factors; ``b`` is (..., n, k) with the factors' batch shape."""
    if trans == 0:
        x = permute_rows(b, perm)
        x = la.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return la.triangular_solve(lu_, x, left_side=True, lower=False)
    if trans not in (1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans}")
    conj = trans == 2
    x = la.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = la.triangular_solve(
        lu_, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj
    )
    return permute_rows(x, argsort(perm, axis=-1))


def cho_solve(c, b, lower: bool = True):
    """Solve ``a x = b`` from the Cholesky factor ``c`` of ``a`` (lower: ``a = c c^H``)."""
    if lower:
        x = la.triangular_solve(c, b, left_side=True, lower=True)
        return la.triangular_solve(c, x, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    x = la.triangular_solve(c, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    return la.triangular_solve(c, x, left_side=True, lower=False)


@register_cache("numpy.linalg_solve_jaxprs")
@functools.lru_cache(maxsize=256)
def _solve_jaxprs(a_aval, b_aval, lu_aval, perm_aval):
    """The operator, its transpose and the two LU solves of ``solve`` as jaxprs (NOTE: [solve's
    derivative]); they depend only on the avals, so they are traced once per signature."""
    factors = [lu_aval, perm_aval, b_aval]
    return (
        trace_to_jaxpr(lambda a, x: [matmul(a, x)], [a_aval, b_aval]),
        trace_to_jaxpr(lambda a, x: [matmul(T(a), x)], [a_aval, b_aval]),
        trace_to_jaxpr(lambda lu_, perm, x: [lu_solve(lu_, perm, x, 0)], factors),
        trace_to_jaxpr(lambda lu_, perm, x: [lu_solve(lu_, perm, x, 1)], factors),
    )


def _solve(a, b):
    """``a^-1 b`` for equal batch shapes (NOTE: [solve's derivative])."""
    eager = type(core.current_trace()) is core.EvalTrace
    if eager and not isinstance(a, core.Tracer) and not isinstance(b, core.Tracer):
        lu_, _, perm = la.lu(a)  # eager evaluation: nothing to differentiate, no jaxprs to trace
        return lu_solve(lu_, perm, b)
    lu_, _, perm = la.lu(ew.stop_gradient_p.bind(a))
    avals = [aval(x).strip_weak_type() for x in (a, b, lu_, perm)]
    jaxprs = _solve_jaxprs(*avals)
    operands = (a, a, lu_, perm, lu_, perm, b)  # matvec's, vecmat's, solve's, transpose_solve's, b
    (x,) = custom_linear_solve_p.bind(*operands, const_lengths=(1, 1, 2, 2), jaxprs=jaxprs)
    return x


@register_cache("numpy.linalg_cho_jaxprs")
@functools.lru_cache(maxsize=256)
def _cho_jaxprs(a_aval, b_aval, c_aval):
    """``solve(assume_a='pos')``'s operator -- the whole ``a`` at ``Precision.HIGHEST``, as JAX's
    ``scipy.linalg.solve`` (so its derivative in ``a`` reaches every entry, not only the
    factorised triangle) -- and its Cholesky solve; both declared symmetric (each its
    own transpose), as JAX's ``custom_linear_solve(symmetric=True)``."""
    matvec = trace_to_jaxpr(lambda a, x: [matmul(a, x, highest=True)], [a_aval, b_aval])
    chol = trace_to_jaxpr(lambda c, x: [cho_solve(c, x, True)], [c_aval, b_aval])
    return matvec, matvec, chol, chol


def cho_solve_implicit(a, b, lower: bool = True):
    """``a^-1 b`` for Hermitian positive-definite ``a`` (its ``lower`` or upper triangle
    factorised), differentiated implicitly like ``solve`` (NOTE: [solve's derivative])."""
    eager = type(core.current_trace()) is core.EvalTrace
    if eager and not isinstance(a, core.Tracer) and not isinstance(b, core.Tracer):
        return cho_solve(la.cholesky(a if lower else H(a)), b, lower=True)
    frozen = ew.stop_gradient_p.bind(a)
    c = la.cholesky(frozen if lower else H(frozen))
    jaxprs = _cho_jaxprs(*(aval(x).strip_weak_type() for x in (a, b, c)))
    (x,) = custom_linear_solve_p.bind(a, a, c, c, b, const_lengths=(1, 1, 1, 1), jaxprs=jaxprs)
    return x


def solve(a, b, name: str = "solve"):
    """``a^-1 b`` for square ``a`` (..., n, n); ``b`` is a vector (n,) when 1-D, else matrices
    (..., n, k); batch dimensions broadcast (NumPy 2 / Array API semantics). A ``b`` of shape
    (..., n) with one dimension fewer than ``a`` that cannot be read as matrices (NumPy 1's stack
    of vectors) is refused in JAX's words, as jax.numpy.linalg.solve and jax.scipy.linalg.solve
    do since JAX 0.5."""
    a, b = inexact_pair(a, b, name)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name}: a must be square in its last two dimensions (..., N, N), got shape {a.shape}"
        )
    n = a.shape[-1]
    vector = b.ndim == 1
    if b.ndim >= 2 and a.ndim == b.ndim + 1 and b.shape[-1] == n and b.shape[-2] != n:
        raise ValueError(
            f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, this would have been "
            "treated as a batched 1-dimensional solve. To recover this behavior, use "
            "solve(a, b[..., None]).squeeze(-1)."
        )
    if vector:
        b = reshape(b, (n, 1)) if b.shape[0] == n else b
    if b.ndim < 2 or b.shape[-2] != n:
        hint = " (a 1-D b must have a's size; for a stack of vectors use b[..., None])" if vector else ""
        raise ValueError(f"{name}: b of shape {b.shape} does not match a of shape {a.shape}{hint}")
    a, b = batch_broadcast((a, 2), (b, 2))
    x = _solve(a, b)
    return x[..., 0] if vector else x


def inv(a, name: str = "inv"):
    a = matrices(a, name, square=True)
    eye = broadcast_to(mx.eye(a.shape[-1], a.dtype), a.shape)
    return _solve(a, eye)


# ----------------------------------------------------------------------------------------------
# Determinants (NOTE: [solve's derivative])


def _lu_parts(a):
    """LU factors, permutation, ``U``'s diagonal and the number of row interchanges."""
    lu_, pivots, perm = la.lu(a)
    iota = st.broadcasted_iota(np.int32, pivots.shape, pivots.ndim - 1)
    swaps = reductions.sum(ew.convert_element_type(ew.ne_p.bind(pivots, iota), np.int32), -1)
    return lu_, perm, diagonal(lu_), swaps


def _parity_sign(swaps, dtype):
    """``(-1) ** swaps`` in ``dtype``."""
    odd = ew.convert_element_type(ew.rem_p.bind(swaps, np.asarray(2, swaps.dtype)), dtype)
    return ew.sub(np.ones((), dtype), ew.mul(odd, np.asarray(2, dtype)))


def _slogdet_value(a):
    """JAX's ``_slogdet_lu``: a zero on ``U``'s diagonal gives sign 0 and log|det| -inf whatever
    else the diagonal holds; a real sign is the parity of the interchanges and negative pivots."""
    lu_, _, d, swaps = _lu_parts(a)
    dtype = a.dtype
    absd = mx.abs_value(d)
    is_zero = reductions.any(ew.eq_p.bind(d, mx.zeros_like(d)), -1)
    if dtype.kind == "c":
        sign = reductions.prod(ew.div(d, ew.convert_element_type(absd, dtype)), -1)
        sign = ew.mul(sign, _parity_sign(swaps, dtype))
    else:
        negative = ew.convert_element_type(ew.lt_p.bind(d, mx.zeros_like(d)), np.int32)
        sign = _parity_sign(ew.add(swaps, reductions.sum(negative, -1)), dtype)
    sign = ew.select(is_zero, mx.zeros_like(sign), sign)
    logdet = reductions.sum(ew.log_p.bind(absd), -1)
    logdet = ew.select(is_zero, mx.full(logdet.shape, -np.inf, logdet.dtype), logdet)
    return sign, logdet


def _det_small(a):
    """The determinant of 1x1 and 2x2 matrices in closed form (JAX's ``_slogdet_small``'s)."""
    if a.shape[-1] == 1:
        return a[..., 0, 0]
    return ew.sub(ew.mul(a[..., 0, 0], a[..., 1, 1]), ew.mul(a[..., 0, 1], a[..., 1, 0]))


def _slogdet_small_value(a):
    """JAX 0.10's ``slogdet`` of 1x1 and 2x2 matrices (every dtype): no factorisation."""
    d = _det_small(a)
    return ew.sign(d), mx.real(ew.log_p.bind(mx.abs_value(d)))


_slogdet_small = custom_jvp(_slogdet_small_value)


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
    """JAX's ``_slogdet_small_jvp``: ``tr(adj(a) da) / det(a)`` written out (inf, not NaN, at a
    singular matrix with a nonzero numerator)."""
    (a,), (g,) = primals, tangents
    sign, logdet = _slogdet_small_value(a)
    if a.shape[-1] == 1:
        dlog = ew.div(g[..., 0, 0], a[..., 0, 0])
    else:
        x00, x01, x10, x11 = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
        num = ew.sub(ew.mul(g[..., 0, 0], x11), ew.mul(g[..., 0, 1], x10))
        num = ew.add(ew.sub(num, ew.mul(g[..., 1, 0], x01)), ew.mul(g[..., 1, 1], x00))
        dlog = ew.div(num, _det_small(a))
    if a.dtype.kind == "c":
        dsign = ew.mul(ew.sub(dlog, ew.convert_element_type(mx.real(dlog), a.dtype)), sign)
        return (sign, logdet), (dsign, mx.real(dlog))
    return (sign, logdet), (mx.zeros_like(sign), dlog)


_slogdet = custom_jvp(_slogdet_value)


def _slogdet_qr_value(a):
    """Sign and log|det| from a QR factorisation: ``det(a) = det(q) prod(diag(r))`` with ``q`` a
    product of Householder reflectors ``I - tau v v^H``, each of determinant ``-tau / conj(tau)``
    (``-1`` when real) unless ``tau`` is 0 (complex: the last one too, which makes ``r``'s last
    diagonal entry real)."""
    packed, taus = la.geqrf(a)
    d = diagonal(packed)
    n = a.shape[-1]
    absd = mx.abs_value(d)
    if a.dtype.kind != "c":
        taus = taus[..., : n - 1]  # the real algorithm's last reflector is the identity
    nonzero = ew.ne_p.bind(taus, mx.zeros_like(taus))
    if a.dtype.kind == "c":
        safe = ew.select(nonzero, taus, mx.full(taus.shape, 1, a.dtype))
        dets = ew.select(nonzero, ew.neg(ew.div(safe, mx.conj(safe))), mx.full(taus.shape, 1, a.dtype))
        sign = ew.mul(
            reductions.prod(ew.div(d, ew.convert_element_type(absd, a.dtype)), -1), reductions.prod(dets, -1)
        )
    else:
        reflections = reductions.sum(ew.convert_element_type(nonzero, np.int32), -1)
        sign = ew.mul(reductions.prod(ew.sign(d), -1), _parity_sign(reflections, a.dtype))
    return sign, reductions.sum(ew.log_p.bind(absd), -1)


_slogdet_qr = custom_jvp(_slogdet_qr_value)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    sign, logdet = _slogdet_value(a)
    lu_, _, perm = la.lu(a)
    dlog = reductions.sum(diagonal(lu_solve(lu_, perm, da)), -1)
    if a.dtype.kind == "c":
        dsign = ew.mul(ew.sub(dlog, ew.convert_element_type(mx.real(dlog), a.dtype)), sign)
        return (sign, logdet), (dsign, mx.real(dlog))
    return (sign, logdet), (ew.mul(sign, 0), dlog)


_slogdet_qr.defjvp(_slogdet_jvp)


def slogdet(a, name: str = "slogdet", method: str = "lu"):
    a = matrices(a, name, square=True, half=True)
    if a.shape[-1] == 0:
        rdt = mx.real_dtype(a.dtype)
        return asarray(np.ones(a.shape[:-2], a.dtype)), asarray(np.zeros(a.shape[:-2], rdt))
    if method != "qr" and a.shape[-1] <= 2:  # JAX 0.10's closed forms, every dtype
        return call_custom(_slogdet_small, a)
    if a.dtype in _dt.HALF_FLOATS:  # 16-bit floats, which LAPACK lacks
        inexact(a, name)  # (the error naming the dtype and the fix)
    return call_custom(_slogdet_qr if method == "qr" else _slogdet, a)


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)``, exact for singular ``a`` of rank n - 1 and 0 below (JAX's
    ``_cofactor_solve``): the LU's last pivot is replaced so the solve never divides by zero."""
    n = a.shape[-1]
    if n == 1:
        return a[..., 0, 0], b
    lu_, perm, d, swaps = _lu_parts(a)
    sign = _parity_sign(swaps, a.dtype)
    partial_det = cumprod(d, axis=-1) * expand_dims(sign, -1)
    lu_ = lu_.at[..., -1, -1].set(ew.div(1, partial_det[..., -2]))
    # Matrices of rank < n - 1 have a zero adjugate: filter them (their solve is inf/nan).
    ones = mx.full((*a.shape[:-2], n, 1), 1, a.dtype)
    probe = la.triangular_solve(lu_, ones, left_side=True, lower=False)
    bad = reductions.any(ew.not_p.bind(ew.is_finite_p.bind(mx.real(probe))), (-2, -1))
    bad = broadcast_to(expand_dims(bad, (-2, -1)), b.shape)
    zeros = mx.zeros_like(b)
    x = ew.select(bad, zeros, b)
    x = la.triangular_solve(lu_, permute_rows(x, perm), left_side=True, lower=True, unit_diagonal=True)
    head = x[..., :-1, :] * expand_dims(partial_det[..., -1], (-2, -1))
    x = concatenate([head, x[..., -1:, :]], axis=-2)
    x = la.triangular_solve(lu_, x, left_side=True, lower=False)
    return partial_det[..., -1], ew.select(bad, zeros, x)


@custom_jvp
def _det(a):
    sign, logdet = _slogdet_value(a)  # _det states its own derivative
    return ew.mul(sign, ew.convert_element_type(ew.exp_p.bind(logdet), a.dtype))


@_det.defjvp
def _det_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y, z = _cofactor_solve(a, da)
    return y, reductions.sum(diagonal(z), -1)


def det(a, name: str = "det"):
    # (16-bit floats, which LAPACK lacks, take closed forms up to 3x3: JAX's at 2x2 and 3x3; at 1x1
    # the entry itself, where JAX's exp(log|a|) route rounds; other dtypes take JAX's route there)
    a = matrices(a, name, square=True, half=True)
    n = a.shape[-1]
    if n == 0:
        return asarray(np.ones(a.shape[:-2], a.dtype))
    if n == 1 and np.dtype(a.dtype).itemsize == 2:
        return a[..., 0, 0]
    if n == 2:  # closed forms: exact, and smooth everywhere
        return ew.sub(ew.mul(a[..., 0, 0], a[..., 1, 1]), ew.mul(a[..., 0, 1], a[..., 1, 0]))
    if n == 3:

        def term(i, j, k):
            return ew.mul(ew.mul(a[..., 0, i], a[..., 1, j]), a[..., 2, k])

        # JAX's order of the six terms (each subtracted in turn), so the rounding is JAX's
        plus = ew.add(ew.add(term(0, 1, 2), term(1, 2, 0)), term(2, 0, 1))
        return ew.sub(ew.sub(ew.sub(plus, term(2, 1, 0)), term(0, 2, 1)), term(1, 0, 2))
    inexact(a, name)  # (16-bit floats beyond 3x3: the error naming the dtype and the fix)
    return call_custom(_det, a)
