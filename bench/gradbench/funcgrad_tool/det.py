"""GradBench eval ``det``: the determinant by expansion by minors, and its gradient (benchmark
code).

The expansion goes along the first remaining row, as the reference does:
``det M = sum_p (-1)^p M[0, p] det(M without row 0 and column p)``. A minor is determined by the
rows below it (always the bottom ones) and its set of columns, so the program computes each
distinct minor once, level by level from the 1x1 minors of the last row up to the whole matrix:
level ``s`` holds the minors of the bottom ``s`` rows for every ``s``-subset of columns, each a
signed sum over its ``s`` children in level ``s-1``, gathered through an index table built once
per size (the primal sums each level by a matrix-vector product with the signs, see below).
That is the same expansion with shared subterms: ``l 2^(l-1)`` multiplications instead
of the recursion's ``~e l!``, so it is NOT the reference's amount of floating-point work (the
README's table says so beside the ratio). The gradient is reverse mode through the levels.
"""

import functools
import itertools

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation, to_float


@functools.cache
def _levels(ell):
    """Per level s = 2..ell: (children, columns, signs) with children[i, p] the index in level
    s-1 of subset i without its p-th column, columns[i, p] that column, signs[p] = (-1)^p."""
    index = {}
    for j in range(ell):
        index[(j,)] = j
    tables = []
    for s in range(2, ell + 1):
        subsets = list(itertools.combinations(range(ell), s))
        children = np.empty((len(subsets), s), np.int32)
        columns = np.empty((len(subsets), s), np.int32)
        for i, sub in enumerate(subsets):
            for p, col in enumerate(sub):
                children[i, p] = index[sub[:p] + sub[p + 1 :]]
                columns[i, p] = col
        index = {sub: i for i, sub in enumerate(subsets)}
        signs = np.where(np.arange(s) % 2 == 0, 1.0, -1.0)
        tables.append((children, columns, signs))
    return tables


def det_by_minors(A, signed_sum_by_dot=False):
    ell = A.shape[0]
    minors = A[ell - 1]  # 1x1 minors of the last row, one per column
    for s, (children, columns, signs) in enumerate(_levels(ell), start=2):
        row = A[ell - s]
        terms = row[columns] * minors[children]
        minors = terms @ signs if signed_sum_by_dot else jnp.sum(signs * terms, axis=1)
    return minors[0]


# The primal takes each level's signed sum as a matrix-vector product: XLA's CPU backend fuses a
# reduction into the gathers that read it, so with ``jnp.sum`` all ten levels became two loops
# that recomputed every minor at each of its uses (ell = 11: 0.60 ms of CPU against 0.022 ms with
# the dot, which XLA does not fuse into its consumers; jax compiles the same). The gradient keeps
# the reduction: its backward pass reads every level's minors, so they are materialised anyway,
# and there the dot was slower at ell <= 8 (0.068 against 0.032 ms at 8; level at 11).
_primal = funcgrad.jit(lambda A: det_by_minors(A, signed_sum_by_dot=True))
_gradient = funcgrad.jit(funcgrad.grad(det_by_minors))


def _pre(input):
    ell = int(input["ell"])
    return (funcgrad.device_put(np.asarray(input["A"], dtype=np.float64).reshape(ell, ell)),)


@evaluation(pre=_pre, post=to_float)
def primal(A):
    return _primal(A)


@evaluation(pre=_pre, post=lambda g: np.asarray(g).reshape(-1).tolist())
def gradient(A):
    return _gradient(A)
