"""Gaussian elimination with partial pivoting, composed of primitives: the engine of ``linalg.det``,
``slogdet``, ``solve`` and ``inv``.

Layer: surface. Imports ``funcgrad.numpy._core`` and the primitive catalog.

# NOTE: [LU by composition]
# The catalog has no factorization primitive; elimination is unrolled over the (static) matrix
# size, each step a few whole-matrix elementwise operations and reductions (batched over leading
# axes). The pivot row is chosen by an argmax (no derivative, as a permutation has none) and
# swapped in with selects, so derivatives are those of the elimination formulas: exact, piecewise.
# A zero pivot column (a singular matrix) eliminates nothing, so ``det`` is exactly 0 there. Work
# is O(n^3) per matrix in n steps, fine for the small and medium matrices it is meant for.
"""

from __future__ import annotations

import numpy as np

from funcgrad.numpy._core import aval, constant, select
from primitives import elementwise as ew
from primitives import reductions as red
from primitives import structure as st


def _col(a, k):
    """Column ``k`` of the matrices ``a`` (..., n, m) as (..., n)."""
    return st.index_in_dim(a, k, aval(a).ndim - 1, keepdims=False)


def _row(a, k):
    """Row ``k`` of the matrices ``a`` (..., n, m) as (..., m)."""
    return st.index_in_dim(a, k, aval(a).ndim - 2, keepdims=False)


def _as_column(v, shape):
    """(..., n) -> broadcast over the last axis of ``shape`` (..., n, m)."""
    return st.broadcast_in_dim(v, shape, tuple(range(len(shape) - 1)))


def _as_row(v, shape):
    """(..., m) -> broadcast over the second-to-last axis of ``shape`` (..., n, m)."""
    nd = len(shape)
    return st.broadcast_in_dim(v, shape, (*range(nd - 2), nd - 1))


def eliminate(a, n: int):
    """Row-reduce the augmented matrices ``a`` (..., n, n + k) to upper-triangular form in their
    first ``n`` columns. Returns the reduced matrices and the sign of the row permutation."""
    shape = aval(a).shape
    dtype = aval(a).dtype
    nd = len(shape)
    batch = shape[:-2]
    rows = st.broadcasted_iota(np.int32, shape, nd - 2)
    row_ids = st.broadcasted_iota(np.int32, (*batch, n), len(batch))
    zero, one = constant(0, dtype), constant(1, dtype)
    sign = constant(1, dtype, batch)
    for k in range(n):
        col = _col(a, k)
        below = ew.ge_p.bind(row_ids, constant(k, np.int32))
        magnitude = ew.abs_p.bind(col)  # real, for complex matrices too
        candidates = select(below, magnitude, constant(-1, aval(magnitude).dtype))
        p = red.argmax(candidates, len(batch), np.int32)
        is_p = ew.eq_p.bind(row_ids, st.broadcast_in_dim(p, (*batch, n), tuple(range(len(batch)))))
        row_p = red.reduce_sum(select(_as_column(is_p, shape), a, zero), (nd - 2,))
        row_k = _row(a, k)
        is_row_k = ew.eq_p.bind(rows, constant(k, np.int32))
        is_row_p = _as_column(is_p, shape)
        a = select(is_row_k, _as_row(row_p, shape), select(is_row_p, _as_row(row_k, shape), a))
        swapped = ew.ne_p.bind(p, constant(k, np.int32))
        sign = select(swapped, ew.neg_p.bind(sign), sign)
        pivot = st.index_in_dim(_col(a, k), k, len(batch), keepdims=False)
        safe_pivot = select(ew.eq_p.bind(pivot, zero), one, pivot)
        factors = ew.div_p.bind(
            _col(a, k), st.broadcast_in_dim(safe_pivot, (*batch, n), tuple(range(len(batch))))
        )
        factors = select(
            ew.gt_p.bind(row_ids, constant(k, np.int32)), factors, constant(0, dtype, (*batch, n))
        )
        update = ew.mul_p.bind(_as_column(factors, shape), _as_row(_row(a, k), shape))
        a = ew.sub_p.bind(a, update)
    return a, sign


def diagonal_of(u, n: int):
    """The diagonal (..., n) of the first ``n`` columns of ``u`` (..., n, m)."""
    nd = aval(u).ndim
    parts = [st.index_in_dim(_col(u, k), k, nd - 2, keepdims=True) for k in range(n)]
    return st.concatenate(parts, nd - 2) if n > 1 else parts[0]


def back_substitute(u, n: int):
    """Solve the upper-triangular systems ``u[..., :n, :n] x = u[..., :n, n:]``; x is (..., n, k)."""
    shape = aval(u).shape
    nd = len(shape)
    batch = shape[:-2]
    k = shape[-1] - n
    rhs_rows = [st.slice_in_dim(_row(u, i), n, n + k, 1, nd - 2) for i in range(n)]
    xs = [None] * n
    for i in reversed(range(n)):
        acc = rhs_rows[i]
        row = _row(u, i)
        for j in range(i + 1, n):
            coef = st.index_in_dim(row, j, nd - 2, keepdims=False)
            acc = ew.sub_p.bind(
                acc, ew.mul_p.bind(st.broadcast_in_dim(coef, (*batch, k), tuple(range(len(batch)))), xs[j])
            )
        diag = st.index_in_dim(row, i, nd - 2, keepdims=False)
        xs[i] = ew.div_p.bind(acc, st.broadcast_in_dim(diag, (*batch, k), tuple(range(len(batch)))))
    stacked = [st.reshape(x, (*batch, 1, k)) for x in xs]
    return st.concatenate(stacked, nd - 2) if n > 1 else stacked[0]
