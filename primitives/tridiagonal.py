"""Tridiagonal linear systems: ``tridiagonal_solve`` (LAPACK's gtsv; with ``perturb_singular``,
jaxlib's perturbed solver, which inverse iteration uses) with its JVP and transpose.

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families (``_matrix``'s
helpers, ``structure``, ``elementwise``). Its lowering is ``xla_bridge/rules/tridiagonal.py``.
Operands follow NOTE: [linalg operand contract]; a singular system gives NaN in that batch
element (NOTE: [factorisation failures] in primitives/linalg.py).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import _matrix as mx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import JET_OF_MATRIX_RULE, aval_of

from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray

__all__ = ["tridiagonal_solve", "tridiagonal_solve_p"]


def _td_abstract_eval(dl, d, du, b, *, perturb_singular=False):
    mx.check_dtype("tridiagonal_solve", dl, d, du, b)
    if not (dl.shape == d.shape == du.shape) or d.ndim < 1 or b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
        raise ValueError(
            "tridiagonal_solve: dl, d and du must have one shape (..., m) and b the shape (..., m, k), "
            f"got dl {dl.str_short()}, d {d.str_short()}, du {du.str_short()}, b {b.str_short()}"
        )
    return ShapedArray(b.shape, b.dtype)


def _td_impl(dl, d, du, b, *, perturb_singular=False):
    dl, d, du, b = (np.asarray(x) for x in (dl, d, du, b))
    if b.size == 0:
        return np.zeros_like(b)
    if perturb_singular:
        # jaxlib's perturbed solver itself, compiled alone: its pivoting and perturbation (xLAGTF
        # scaling, a floor of the safe minimum when every pivot is 0) are its own, and a NumPy
        # rewrite of it gave NaN for a zero matrix where jax and jit give large finite values.
        params = {"perturb_singular": True}
        return hooks.eager_compiled(tridiagonal_solve_p, (dl, d, du, b), params)._numpy()
    gtsv = mx.lapack("gtsv", d, b)

    def one(l, c, u, y):
        if c.shape[0] == 1:  # SciPy's wrapper refuses empty off-diagonals
            return (y / c[0] if c[0] != 0 else np.full_like(y, np.nan),)
        *_, x, info = gtsv(l[1:], c, u[:-1], y)
        return (x if info == 0 else np.full_like(y, np.nan),)  # NOTE: [factorisation failures]

    (out,) = mx.per_matrix(one, [dl, d, du, b], (1, 1, 1, 2), [(b.shape[-2:], b.dtype)])
    return out


def _tridiagonal_product(dl, d, du, b):
    """The tridiagonal matrix (dl, d, du) times b."""
    nd = aval_of(b).ndim
    m = aval_of(b).shape[-2]
    y = mx.rows_scaled(b, d)
    if m < 2:
        return y
    zero = np.zeros((), aval_of(b).dtype)
    pad = lambda x, lo, hi: st.pad(x, zero, [(0, 0, 0)] * (nd - 2) + [(lo, hi, 0), (0, 0, 0)])  # noqa: E731
    below = mx.rows_scaled(st.slice_in_dim(b, 0, m - 1, 1, nd - 2), st.slice_in_dim(dl, 1, m, 1, nd - 2))
    above = mx.rows_scaled(st.slice_in_dim(b, 1, m, 1, nd - 2), st.slice_in_dim(du, 0, m - 1, 1, nd - 2))
    return ew.add(y, ew.add(pad(below, 1, 0), pad(above, 0, 1)))


def _td_jvp(primals, tangents, *, perturb_singular=False):
    *diags, b = primals
    *ddiags, db = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = db
    if not all(type(t) is Zero for t in ddiags):
        ddiags = [instantiate(t) for t in ddiags]
        prod = ew.neg(_tridiagonal_product(*ddiags, ans))
        rhs = prod if type(db) is Zero else ew.add(db, prod)
    if type(rhs) is Zero:
        return ans, Zero.from_primal_value(ans)
    return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


def _td_transpose(ct, dl, d, du, b, *, perturb_singular=False):
    if any(is_undefined_primal(x) for x in (dl, d, du)):
        raise ValueError("tridiagonal_solve is not linear in its diagonals")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    nd = aval_of(d).ndim
    zero = mx.zeros_like(st.slice_in_dim(d, 0, 1, 1, nd - 1))
    m = aval_of(d).shape[-1]
    dl_t = st.concatenate([zero, st.slice_in_dim(du, 0, m - 1, 1, nd - 1)], nd - 1)
    du_t = st.concatenate([st.slice_in_dim(dl, 1, m, 1, nd - 1), zero], nd - 1)
    out = tridiagonal_solve_p.bind(dl_t, d, du_t, instantiate(ct), perturb_singular=perturb_singular)
    return [None, None, None, out]


tridiagonal_solve_p = mx.lapack_primitive("tridiagonal_solve", _td_impl, _td_abstract_eval)
tridiagonal_solve_p.def_traits(taylor_from_jvp=JET_OF_MATRIX_RULE)
tridiagonal_solve_p.def_jvp(_td_jvp)
tridiagonal_solve_p.def_transpose(_td_transpose)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve the tridiagonal systems ``A x = b`` with ``A[i, i-1] = dl[i]``, ``A[i, i] = d[i]``,
    ``A[i, i+1] = du[i]`` (``dl[0]`` and ``du[-1]`` are ignored); NaN where ``A`` is singular.

    >>> tridiagonal_solve(np.array([0.0, 1.0]), np.array([2.0, 2.0]), np.array([1.0, 0.0]),
    ...                   np.array([[3.0], [3.0]])).tolist()
    [[1.0], [1.0]]
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
