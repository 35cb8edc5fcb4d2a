"""Singular values by one-sided (Hestenes) Jacobi rotations, composed of elementwise primitives.

Layer: surface. Imports ``funcgrad.numpy._core``, ``transcendental`` and the primitive catalog;
used by ``funcgrad.numpy.linalg`` (``svdvals`` and the matrix norms ``ord=2, -2, 'nuc'``).

# NOTE: [Jacobi singular values]
# The catalog has no decomposition primitive, so singular values are computed from primitives: the
# columns of the (tall) matrix are rotated pairwise until orthogonal, and the singular values are
# then their norms. Each rotation is a handful of elementwise operations on whole columns (batched
# over leading axes), so the computation is differentiable, batchable and compilable like any
# composition; a fixed number of sweeps (enough for full precision: Jacobi converges quadratically)
# keeps the program static. The cost is O(sweeps * n^2) rotations of length-m columns, meant for
# the small matrices norms are usually taken of. Derivatives through the converged iteration are
# those of the singular values where they are distinct.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.numpy._core import aval, constant, select
from funcgrad.numpy.transcendental import hypot, safe_sqrt
from primitives import elementwise as ew
from primitives import reductions as red
from primitives import sorting as srt
from primitives import structure as st


def _dot_last(a, b):
    return red.reduce_sum(ew.mul_p.bind(a, b), (aval(a).ndim - 1,))


def _sweeps(n: int, dtype) -> int:
    # Quadratic convergence: a few sweeps beyond log2(n) reach full precision.
    base = 10 if np.dtype(dtype).itemsize >= 8 else 7
    return base + int(np.ceil(np.log2(max(n, 2))))


def singular_values(x):
    """Singular values of the last two axes of the floating ``x``, in descending order.

    >>> np.round(np.asarray(singular_values(np.array([[3.0, 0.0], [0.0, -4.0]]))), 12).tolist()
    [4.0, 3.0]
    """
    shape = aval(x).shape
    m, n = shape[-2:]
    if m < n:
        perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
        x = st.transpose(x, perm)
        m, n = n, m
    dtype = aval(x).dtype
    batch = shape[:-2]
    if n == 0:
        return constant(0, dtype, (*batch, 0))
    last = len(batch) + 1
    cols = [st.index_in_dim(x, j, last, keepdims=False) for j in range(n)]
    eps = constant(np.finfo(dtype).eps, dtype)
    zero, one, two = constant(0, dtype), constant(1, dtype), constant(2, dtype)
    for _ in range(_sweeps(n, dtype)):
        for i in range(n - 1):
            for j in range(i + 1, n):
                cols[i], cols[j] = _rotate(cols[i], cols[j], eps, zero, one, two)
        if _converged(cols, np.finfo(dtype).eps):
            break
    norms = [safe_sqrt(_dot_last(c, c)) for c in cols]
    sv = (
        st.concatenate([st.reshape(v, (*batch, 1)) for v in norms], len(batch))
        if n > 1
        else st.reshape(norms[0], (*batch, 1))
    )
    return st.rev(srt.sort(sv, len(batch)), (len(batch),))


def _converged(cols, eps) -> bool:
    """Eager evaluation only: stop sweeping once the (concrete) columns are orthogonal."""
    values = [core.concrete_value(c) for c in cols]
    if any(v is None for v in values):
        return False  # traced: the fixed number of sweeps keeps the program static
    mat = np.stack(values, axis=-1)
    gram = np.einsum("...mi,...mj->...ij", mat, mat)
    diag = np.sqrt(np.abs(np.einsum("...ii->...i", gram)))
    scale = diag[..., :, None] * diag[..., None, :]
    off = np.abs(gram - np.einsum("...ij,ij->...ij", gram, np.eye(gram.shape[-1])))
    return bool(np.all(off <= eps * scale))


def _rotate(a, b, eps, zero, one, two):
    """Rotate columns ``a`` and ``b`` so they become orthogonal (one Jacobi rotation)."""
    alpha, beta, gamma = _dot_last(a, a), _dot_last(b, b), _dot_last(a, b)
    # Already orthogonal to working precision: no rotation (and no division by gamma ~ 0).
    small = ew.le_p.bind(ew.abs_p.bind(gamma), ew.mul_p.bind(eps, safe_sqrt(ew.mul_p.bind(alpha, beta))))
    safe_gamma = select(small, one, gamma)
    zeta = ew.div_p.bind(ew.sub_p.bind(beta, alpha), ew.mul_p.bind(two, safe_gamma))
    sign = select(ew.ge_p.bind(zeta, zero), one, ew.neg_p.bind(one))
    # t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), with hypot so large zeta cannot overflow.
    t = ew.div_p.bind(sign, ew.add_p.bind(ew.abs_p.bind(zeta), hypot(one, zeta)))
    t = select(small, zero, t)
    c = ew.rsqrt_p.bind(ew.add_p.bind(one, ew.square_p.bind(t)))
    s = ew.mul_p.bind(c, t)
    shape = aval(a).shape
    c_b, s_b = (
        st.broadcast_in_dim(c, shape, tuple(range(len(shape) - 1))),
        st.broadcast_in_dim(s, shape, tuple(range(len(shape) - 1))),
    )
    new_a = ew.sub_p.bind(ew.mul_p.bind(c_b, a), ew.mul_p.bind(s_b, b))
    new_b = ew.add_p.bind(ew.mul_p.bind(s_b, a), ew.mul_p.bind(c_b, b))
    return new_a, new_b
