"""``funcgrad.scipy.sparse.linalg``: the Krylov solvers ``cg``, ``gmres`` and ``bicgstab`` with
``jax.scipy.sparse.linalg``'s signatures and semantics.

Layer: surface. Imports funcgrad.numpy, funcgrad.lax, funcgrad.tree_util and funcgrad.scipy.linalg.

The operator ``A`` (and the preconditioner ``M``) is a square matrix, an object with ``@``, or a
function computing ``A x``; ``b`` and ``x0`` are any pytree of arrays (the "vector" is all of its
leaves together). Every solver is a ``lax.while_loop`` wrapped in ``lax.custom_linear_solve``, so
(as in JAX) derivatives never go through the iterations: ``grad`` with respect to ``b`` or to the
values the operator closes over comes from the linear equation at the solution, computed by a
second solve with the transposed operator (the same solver, or the same operator for ``cg``, whose
operator is Hermitian). The solvers run eagerly, under ``jit`` and under ``vmap``.

Tolerances are SciPy's "non-legacy" ones: stop once ``norm(b - A x) <= max(tol * norm(b), atol)``.
``info`` is ``None`` for ``cg`` and ``bicgstab`` (JAX reports no convergence information), and for
``gmres`` JAX's ``0``, or ``-1`` where the solution came out NaN.

>>> import funcgrad.numpy as fnp
>>> a = fnp.array([[3.0, 1.0], [1.0, 2.0]])
>>> x, info = cg(lambda v: a @ v, fnp.array([1.0, 1.0]))
>>> [round(v, 6) for v in x.tolist()], info
([0.2, 0.4], None)
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad import tree_util as tu
from funcgrad.primitives import elementwise as ew
from funcgrad.scipy import linalg as sla

__all__ = ["bicgstab", "cg", "gmres"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# ----------------------------------------------------------------------------------------------
# Vector-space operations on pytrees


def _vdot_real_part(x, y):
    # Every use is z^H M z with M Hermitian positive definite, which is real: the real part is
    # computed without the imaginary cross terms.
    result = fnp.vdot(x.real, y.real)
    if fnp.iscomplexobj(x) or fnp.iscomplexobj(y):
        result = result + fnp.vdot(x.imag, y.imag)
    return result


def _vdot_real_tree(x, y):
    return sum(tu.tree_leaves(tu.tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
    return sum(tu.tree_leaves(tu.tree_map(fnp.vdot, x, y)))


def _norm(x):
    leaves = tu.tree_leaves(x)
    return fnp.sqrt(sum(_vdot_real_part(v, v) for v in leaves))


def _mul(scalar, tree):
    return tu.tree_map(lambda v: scalar * v, tree)


def _add(x, y):
    return tu.tree_map(operator.add, x, y)


def _sub(x, y):
    return tu.tree_map(operator.sub, x, y)


def _dtype(tree):
    return fnp.result_type(*tu.tree_leaves(tree))


def _cast_like(x, tree):
    """``x`` in the leaves' result dtype, weak when they all are (JAX's ``lattice_result_type``):
    the solvers keep a Python-scalar ``b`` weakly typed where JAX's do (bicgstab, gmres)."""
    dtype, weak = fnp.result_type(*tu.tree_leaves(tree), return_weak_type_flag=True)
    return ew.convert_element_type(fnp.asarray(x), dtype, weak_type=weak)


def _identity(x):
    return x


def _normalize_matvec(f, what: str) -> Callable:
    """``f`` as a function computing the matrix-vector product."""
    if callable(f):
        return f
    if isinstance(f, np.ndarray | fnp.ndarray) or hasattr(f, "__matmul__"):
        shape = getattr(f, "shape", None)
        if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"{what}: the linear operator must be a square matrix, but has shape {shape}")
        if isinstance(f, np.ndarray | fnp.ndarray):
            return functools.partial(fnp.dot, f)
        return functools.partial(operator.matmul, f)
    raise TypeError(
        f"{what}: the linear operator must be either a function or ndarray (a square matrix), got "
        f"{type(f).__name__}"
    )


def _shapes(tree):
    return [np.shape(v) for v in tu.tree_leaves(tree)]


def _prepare(what, A, b, x0, M):
    """The common argument handling: arrays for ``b``/``x0``, functions for ``A``/``M``."""
    b = tu.tree_map(fnp.asarray, b)
    x0 = tu.tree_map(fnp.zeros_like, b) if x0 is None else tu.tree_map(fnp.asarray, x0)
    if tu.tree_structure(x0) != tu.tree_structure(b):
        raise ValueError(
            f"{what}: x0 and b must have matching tree structure: "
            f"{tu.tree_structure(x0)} vs {tu.tree_structure(b)}"
        )
    if _shapes(x0) != _shapes(b):
        raise ValueError(
            f"{what}: arrays in x0 and b must have matching shapes: {_shapes(x0)} vs {_shapes(b)}"
        )
    A = _normalize_matvec(A, what)
    M = _identity if M is None else _normalize_matvec(M, what + " preconditioner M")
    size = sum(v.size for v in tu.tree_leaves(b))
    return A, b, x0, M, size


# ----------------------------------------------------------------------------------------------
# Conjugate gradients and BiCGSTAB


def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):
    # Preconditioned CG (Saad, Iterative Methods for Sparse Linear Systems, Algorithm 9.1).
    atol2 = fnp.maximum(tol**2 * _vdot_real_tree(b, b), atol**2)
    r0 = _sub(b, A(x0))
    p0 = z0 = M(r0)
    dtype = _dtype(p0)
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

    def cond(state):
        _, r, gamma, _, k = state
        # Without a preconditioner gamma is already the squared residual norm.
        rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body(state):
        x, r, gamma, p, k = state
        Ap = A(p)
        alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
        x = _add(x, _mul(alpha, p))
        r = _sub(r, _mul(alpha, Ap))
        z = M(r)
        gamma_next = _vdot_real_tree(r, z).astype(dtype)
        p = _add(z, _mul(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    x, *_ = lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))
    return x


def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):
    # Preconditioned BiCGSTAB (van der Vorst 1992). k < 0 marks a breakdown (rho, alpha or omega
    # became zero), which stops the loop as SciPy does.
    atol2 = fnp.maximum(tol**2 * _vdot_real_tree(b, b), atol**2)
    r0 = _sub(b, A(x0))
    one = _cast_like(1, b)

    def cond(state):
        r, k = state[1], state[-1]
        return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(state):
        x, r, rhat, alpha, omega, rho, p, q, k = state
        rho_next = _vdot_tree(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _vdot_tree(rhat, q)
        s = _sub(r, _mul(alpha, q))
        # Converged half-way: the second half-step (and its division by t.t) is skipped.
        early = _vdot_real_tree(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega = _vdot_tree(t, s) / _vdot_tree(t, t)
        x_half = _add(x, _mul(alpha, phat))
        x = tu.tree_map(functools.partial(fnp.where, early), x_half, _add(x_half, _mul(omega, shat)))
        r = tu.tree_map(functools.partial(fnp.where, early), s, _sub(s, _mul(omega, t)))
        k = fnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = fnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    state = (x0, r0, r0, one, one, one, r0, r0, 0)
    x, *_ = lax.while_loop(cond, body, state)
    return x


def _isolve(what, solver, A, b, x0, *, tol, atol, maxiter, M, check_symmetric):
    A, b, x0, M, size = _prepare(what, A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # A real Hermitian positive-definite operator is symmetric: its transpose solve is the solve.
    real = all(not fnp.iscomplexobj(v) for v in tu.tree_leaves(b))
    symmetric = check_symmetric and real
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` by (preconditioned) conjugate gradients; ``A`` must be Hermitian positive
    definite. ``A`` and ``M`` (a preconditioner approximating ``A``'s inverse) are square matrices
    or functions ``v -> A v``; ``b``/``x0`` are pytrees of arrays. Stops once
    ``norm(b - A x) <= max(tol * norm(b), atol)`` or after ``maxiter`` steps (``10 * b.size`` by
    default). Returns ``(x, None)``. Derivatives come from a second ``cg`` solve (implicit
    differentiation), accurate when both solves converge.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> a = fnp.array([[4.0, 1.0], [1.0, 3.0]])
    >>> x, _ = cg(a, fnp.array([1.0, 2.0]), tol=1e-10)
    >>> [round(v, 6) for v in x.tolist()]
    [0.090909, 0.636364]
    >>> g = funcgrad.grad(lambda b: cg(a, b, tol=1e-10)[0].sum())(fnp.array([1.0, 2.0]))
    >>> [round(v, 6) for v in g.tolist()]  # A^-T @ ones
    [0.181818, 0.272727]
    """
    return _isolve("cg", _cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, check_symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` by the biconjugate gradient stabilised method, for a general (not
    necessarily symmetric) ``A``. Arguments and stopping rule as in ``cg``; returns ``(x, None)``.
    Derivatives come from a ``bicgstab`` solve with the transposed operator.

    >>> import funcgrad.numpy as fnp
    >>> a = fnp.array([[3.0, 2.0], [-1.0, 2.0]])
    >>> x, _ = bicgstab(lambda v: a @ v, fnp.array([5.0, 1.0]), tol=1e-10)
    >>> [round(v, 6) for v in x.tolist()]
    [1.0, 1.0]
    """
    return _isolve(
        "bicgstab", _bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, check_symmetric=False
    )


# ----------------------------------------------------------------------------------------------
# GMRES


def _safe_normalize(x, thresh=None):
    """``(x / norm(x), norm(x))``, or zeros and 0 where the norm is at most ``thresh`` (machine
    epsilon by default): a Krylov vector that small means an invariant subspace was found."""
    norm = _norm(x)
    dtype = _dtype(x)
    if thresh is None:
        thresh = fnp.finfo(norm.dtype).eps
    thresh = fnp.asarray(thresh).astype(dtype).real
    use = norm > thresh
    scale = _cast_like(norm, x)
    normalized = tu.tree_map(lambda v: fnp.where(use, v / scale, fnp.zeros_like(v)), x)
    return normalized, fnp.where(use, norm, 0.0)


def _project_on_columns(Q, v):
    """``Q^H v`` for the Krylov basis ``Q`` (its last axis indexes the basis vectors)."""
    parts = tu.tree_map(lambda X, y: fnp.einsum("...n,...->n", X.conj(), y), Q, v)
    return functools.reduce(operator.add, tu.tree_leaves(parts))


def _orthogonalize(Q, x):
    """``x`` made orthogonal to the columns of ``Q`` by classical Gram-Schmidt applied twice
    ("twice is enough", Giraud et al. 2005), and the overlaps removed."""
    q, r = x, 0.0
    for _ in range(2):
        h = _project_on_columns(Q, q)
        q = _sub(q, tu.tree_map(lambda X, h=h: fnp.dot(X, h), Q))
        r = r + h
    return q, r


def _arnoldi_step(k, A, M, V, H):
    """The k-th Arnoldi step: ``M(A(V[..., k]))`` orthonormalised against the basis becomes
    ``V[..., k + 1]`` and its overlaps row ``k`` of ``H``; a vector that vanishes (relative to
    its norm before orthogonalisation) is a breakdown: an invariant subspace was found."""
    dtype = _dtype(V)
    v = M(A(tu.tree_map(lambda X: X[..., k], V)))
    _, v_norm0 = _safe_normalize(v)
    v, h = _orthogonalize(V, v)
    unit_v, v_norm1 = _safe_normalize(v, thresh=fnp.finfo(dtype).eps * v_norm0)
    V = tu.tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm1.astype(dtype))
    return V, H.at[k, :].set(h), v_norm1 == 0.0


def _rotate(H, i, cs, sn):
    x, y = H[i], H[i + 1]
    return H.at[i].set(cs.conj() * x - sn.conj() * y).at[i + 1].set(sn * x + cs * y)


def _givens(a, b):
    """The rotation ``(cs, sn)`` that zeroes ``b`` against ``a``."""
    b_zero = abs(b) == 0
    a_lt_b = abs(a) < abs(b)
    t = -fnp.where(a_lt_b, a, b) / fnp.where(a_lt_b, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = fnp.where(b_zero, 1, fnp.where(a_lt_b, r * t, r))
    sn = fnp.where(b_zero, 0, fnp.where(a_lt_b, r, r * t))
    return cs.astype(t.dtype), sn.astype(t.dtype)


def _basis(unit_residual, restart):
    # The Krylov basis: the residual direction followed by ``restart`` columns to fill.
    return tu.tree_map(lambda v: fnp.pad(v[..., None], ((0, 0),) * v.ndim + ((0, restart),)), unit_residual)


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle that keeps H's QR factorisation up to date with Givens rotations, which
    gives the residual norm at every step and so stops early once it is below ``ptol``."""
    dtype = _dtype(b)
    V = _basis(unit_residual, restart)
    R = fnp.eye(restart, restart + 1, dtype=dtype)  # not singular if the cycle stops early
    givens = fnp.zeros((restart, 2), dtype=dtype)
    beta = fnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def cond(state):
        k, err = state[0], state[1]
        return (k < restart) & (err > ptol)

    def body(state):
        k, _, V, R, beta, givens = state
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, givens[i, 0], givens[i, 1]), H[k, :])
        cs, sn = _givens(row[k], row[k + 1])
        givens = givens.at[k, 0].set(cs).at[k, 1].set(sn)
        R = R.at[k, :].set(_rotate(row, k, cs, sn))
        beta = _rotate(beta, k, cs, sn)
        return k + 1, abs(beta[k + 1]), V, R, beta, givens

    _, _, V, R, beta, _ = lax.while_loop(cond, body, (0, residual_norm, V, R, beta, givens))
    y = sla.solve_triangular(R[:, :-1].T, beta[:-1])
    return _gmres_update(A, M, b, x0, V, y)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle that builds the whole Arnoldi basis, then solves the small
    least-squares problem by its normal equations (no early stop inside the cycle)."""
    del ptol
    dtype = _dtype(b)
    V = _basis(unit_residual, restart)
    H = _cast_like(fnp.eye(restart, restart + 1, dtype=dtype), b)

    def cond(state):
        _, _, breakdown, k = state
        return (k < restart) & ~breakdown

    def body(state):
        V, H, _, k = state
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(cond, body, (V, H, fnp.asarray(False), 0))
    beta = fnp.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
    a = H.T
    y = sla.solve(a.T.conj() @ a, a.T.conj() @ beta, assume_a="pos")
    return _gmres_update(A, M, b, x0, V, y)


def _gmres_update(A, M, b, x0, V, y):
    x = _add(x0, tu.tree_map(lambda X: fnp.dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None, solve_method="batched"):
    """Solve ``A x = b`` by restarted GMRES, for a general ``A``. Each cycle builds a Krylov space
    of dimension ``restart`` and projects the solution on it; at most ``maxiter`` cycles
    (``10 * b.size`` by default), stopping once ``norm(b - A x) <= max(tol * norm(b), atol)``.
    ``solve_method="incremental"`` updates a QR factorisation with Givens rotations and can stop
    inside a cycle; ``"batched"`` solves each cycle's least-squares problem at its end. Other
    arguments as in ``cg``. Returns ``(x, info)``: ``info`` is 0, or -1 where ``x`` is NaN.

    >>> import funcgrad.numpy as fnp
    >>> a = fnp.array([[3.0, 2.0, 0.0], [-1.0, 2.0, 1.0], [0.0, 1.0, 4.0]])
    >>> x, info = gmres(a, fnp.array([1.0, 2.0, 3.0]), tol=1e-10, solve_method="incremental")
    >>> [round(v, 6) for v in x.tolist()], int(info)
    ([-0.103448, 0.655172, 0.586207], 0)
    """
    if solve_method == "incremental":
        cycle = _gmres_incremental
    elif solve_method == "batched":
        cycle = _gmres_batched
    else:
        raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got {solve_method!r}")
    A, b, x0, M, size = _prepare("gmres", A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    restart = min(restart, size)
    b_norm = _norm(b)
    atol = fnp.maximum(tol * b_norm, atol)
    # Inside a cycle the preconditioned residual is what is measured: scale the tolerance to it.
    ptol = _norm(M(b)) * fnp.minimum(1.0, atol / b_norm)

    def solve(A, b):
        unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

        def cond(state):
            _, k, _, residual_norm = state
            return (k < maxiter) & (residual_norm > atol)

        def body(state):
            x, k, unit_residual, residual_norm = state
            x, unit_residual, residual_norm = cycle(A, b, x, unit_residual, residual_norm, ptol, restart, M)
            return x, k + 1, unit_residual, residual_norm

        x, *_ = lax.while_loop(cond, body, (x0, 0, unit_residual, residual_norm))
        return x

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = fnp.where(fnp.isnan(_norm(x)), -1, 0)
    return x, info
