"""Contractions of funcgrad.numpy: dot, matmul (both lower to dot_general).

Layer: surface. Imports funcgrad.numpy._core and the primitive catalog.
"""

from __future__ import annotations

from funcgrad.numpy._core import asarray, aval, broadcast_to, broadcast_shapes, promote_dtypes
from primitives import dot as dt
from primitives import structure as st


def matmul(a, b, /):
    """Matrix product with NumPy's broadcasting of leading (batch) dimensions.

    >>> matmul(asarray([[1.0, 2.0]]), asarray([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    a, b = promote_dtypes(asarray(a), asarray(b))
    na, nb = aval(a).ndim, aval(b).ndim
    if na == 0 or nb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (scalars are not allowed; use *)")
    if na == 1 and nb == 1:
        return dt.dot_general(a, b, (((0,), (0,)), ((), ())))
    if nb == 1:
        return dt.dot_general(a, b, (((na - 1,), (0,)), ((), ())))
    if na == 1:
        # (k,) @ (..., k, n) -> (..., n)
        out = dt.dot_general(a, b, (((0,), (nb - 2,)), ((), ())))
        return out
    if aval(a).shape[-1] != aval(b).shape[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {aval(b).shape[-2]} "
            f"is different from {aval(a).shape[-1]}); shapes {aval(a).shape} and {aval(b).shape}"
        )
    batch = broadcast_shapes(aval(a).shape[:-2], aval(b).shape[:-2])
    if not batch:
        return dt.dot_general(a, b, (((1,), (0,)), ((), ())))
    if nb == 2:
        # Contract the last axis of a with the matrix b: no broadcasting of b needed.
        return dt.dot_general(a, b, (((na - 1,), (0,)), ((), ())))
    a = broadcast_to(a, (*batch, *aval(a).shape[-2:]))
    b = broadcast_to(b, (*batch, *aval(b).shape[-2:]))
    nbat = len(batch)
    return dt.dot_general(a, b, (((nbat + 1,), (nbat,)), (tuple(range(nbat)), tuple(range(nbat)))))


def dot(a, b, /):
    """NumPy's ``dot``: matmul for 1-D/2-D, multiplication for scalars, and a sum over the last
    axis of ``a`` and second-to-last of ``b`` otherwise."""
    a, b = promote_dtypes(asarray(a), asarray(b))
    na, nb = aval(a).ndim, aval(b).ndim
    if na == 0 or nb == 0:
        from funcgrad.numpy.ufuncs import multiply  # noqa: PLC0415

        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b)
    return dt.dot_general(a, b, (((na - 1,), (nb - 2,)), ((), ())))


_ = st
