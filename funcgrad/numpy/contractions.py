"""Contractions of funcgrad.numpy: matmul, dot, vdot, inner, outer, tensordot, einsum, trace, kron,
cross, vecdot, matvec, vecmat.

Layer: surface. Imports ``funcgrad.numpy._core``, ``shape`` and the primitive catalog (dot_general,
structure, reductions); ``opt_einsum`` plans einsum contractions.

Every contraction lowers to ``dot_general`` (plus transpose/reshape/reduce_sum), whose transpose
rule makes it differentiable. ``einsum`` asks opt_einsum for a pairwise contraction order
(``contract_path``) and lowers each step itself: labels repeated within one operand become a
diagonal (a mask and a sum), labels needed by no later step are summed out early, and each pair
becomes one ``dot_general`` with shared labels as batch or contracting dimensions.
"""

from __future__ import annotations

import contextlib

import numpy as np
import opt_einsum

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel.library_programs import jitted_eagerly
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy import reductions
from funcgrad.numpy._core import (
    as_sequence,
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    constant,
    normalize_axis,
    promote_args,
    select,
    shape_of,
)
from funcgrad.numpy._dtypes import check_user_dtype, result_type
from funcgrad.numpy.complexes import conjugate
from funcgrad.numpy.manipulation import expand_dims, moveaxis, ravel, reshape
from funcgrad.numpy.ufuncs import multiply, subtract
from funcgrad.primitives import dot as dt
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._sharding_rules import _overridden, contraction_out, spec_of

__all__ = [
    "cross",
    "dot",
    "einsum",
    "einsum_path",
    "inner",
    "kron",
    "matmul",
    "matvec",
    "outer",
    "tensordot",
    "trace",
    "vdot",
    "vecdot",
    "vecmat",
]


def _dot_general(a, b, contract, batch=((), ()), preferred_element_type=None, precision=None):
    # As jax.numpy's contractions, the product's type is stated: the operands' (promoted) dtype
    # unless the caller asks for another (jaxprs then read as JAX's).
    return dt.dot_general(a, b, (contract, batch), preferred_element_type or a.dtype, precision)


@takes_out_sharding(typed_result=True)
def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading axes broadcast.
    ``precision`` is ``jax.lax``'s (``None``, a ``lax.Precision``, ``'highest'``, ... or a pair).

    >>> matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])).tolist()
    [[11.0]]
    >>> matmul(np.ones((5, 2, 3)), np.ones(3)).shape
    (5, 2)
    """
    precision = dt.canonicalize_precision(precision, "matmul")
    types = (aval(asarray(a)), aval(asarray(b)))  # (the operands' own types, for JAX's error words)
    a, b = promote_args(asarray(a), asarray(b))
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:
        # Matrix times matrix, the common case, without the general path's reshapes and broadcasts.
        return _dot_general(a, b, ((1,), (0,)), ((), ()), preferred_element_type, precision)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            "matmul: Input operand does not have enough dimensions (scalars are not allowed; use * instead)"
        )
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if (a_vec or b_vec) and sa[-1 if not a_vec else 0] == sb[0 if b_vec else -2]:
        # A vector operand has no batch axes to broadcast: one dot_general contracts it, as JAX's
        # jaxpr does (the general path would reshape it to a matrix and back).
        ca = 0 if a_vec else a.ndim - 1
        cb = 0 if b_vec else b.ndim - 2
        return _dot_general(a, b, ((ca,), (cb,)), ((), ()), preferred_element_type, precision)
    return _batched_matmul(a, b, preferred_element_type, precision, types)


def _batched_matmul(a, b, preferred_element_type, precision, types):
    """JAX's ``jnp.matmul`` past the plain cases, equation for equation: no operand is broadcast;
    a batch axis of size 1 in both operands is squeezed from both (and put back in the result), one
    of size 1 in one operand only is squeezed from it (the other's axis becomes a free dimension of
    the product), equal ones are the ``dot_general``'s batch dimensions, and a ``transpose`` puts
    the product's axes in NumPy's order. Besides JAX's jaxprs, it keeps unit batch axes (``vmap``
    of ``x[None] @ ...``, per-example gradients) out of the product: XLA's CPU compiler lays a
    product over one out with that axis moved and copies it back to row-major, which also keeps
    the product out of its consumers' fusion (attention's softmax gradient)."""
    a_mat, b_mat = a.ndim > 1, b.ndim > 1
    a_lead = tuple(a.shape[:-2]) if a_mat else ()
    b_lead = tuple(b.shape[:-2]) if b_mat else ()
    nb = max(len(a_lead), len(b_lead))
    a_dims = (None,) * (nb - len(a_lead)) + a_lead  # (None: no such axis, NumPy's broadcasting)
    b_dims = (None,) * (nb - len(b_lead)) + b_lead
    a_specs = ((),) * (nb - len(a_lead)) + (spec_of(aval(a))[:-2] if a_mat else ())
    b_specs = ((),) * (nb - len(b_lead)) + (spec_of(aval(b))[:-2] if b_mat else ())
    a_squeeze, b_squeeze, both_squeeze, a_batch, b_batch = [], [], [], [], []
    idx_batch, idx_a, idx_b = [], [], []  # result positions of dot_general's batch/lhs/rhs axes
    for i, (da, db, sa, sb) in enumerate(zip(a_dims, b_dims, a_specs, b_specs)):
        if da is None:
            idx_b.append(i)
        elif db is None:
            idx_a.append(i)
        elif da == 1 and db == 1 and not sa and not sb:
            a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
            b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
            both_squeeze.append(i)
        elif da == 1 and not sa:
            idx_b.append(i)
            a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
        elif db == 1 and not sb:
            idx_a.append(i)
            b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
        elif da == db and sa == sb:
            a_batch.append(len(idx_batch) + len(idx_a))
            b_batch.append(len(idx_batch) + len(idx_b))
            idx_batch.append(i)
        else:  # (JAX's type and words)
            raise ValueError(f"Incompatible types for matmul arguments: {types[0]} and {types[1]}")
    if a_mat:
        idx_a.append(nb)
    if b_mat:
        idx_b.append(nb + a_mat)
    perm = tuple(int(i) for i in np.argsort(np.asarray(idx_batch + idx_a + idx_b, dtype=np.int64)))
    a, b = st.squeeze(a, a_squeeze), st.squeeze(b, b_squeeze)
    if a.shape[-1] != b.shape[b.ndim - 1 - b_mat]:
        raise _contraction_mismatch("matmul", (a.shape[-1],), (b.shape[b.ndim - 1 - b_mat],))
    contract = ((a.ndim - 1,), (b.ndim - 1 - b_mat,))
    out = _dot_general(a, b, contract, (tuple(a_batch), tuple(b_batch)), preferred_element_type, precision)
    out = st.transpose(out, perm)
    return st.expand_dims(out, tuple(both_squeeze)) if both_squeeze else out


def _contraction_mismatch(name, lhs, rhs) -> TypeError:
    # JAX's exception and words (its ``dot_general`` shape check): code written for JAX catches
    # TypeError here, as JAX's MNIST tutorial does around a batch of the wrong shape.
    return TypeError(
        f"dot_general requires contracting dimensions to have the same shape, got {lhs} and {rhs}. "
        f"(in {name})"
    )


@takes_out_sharding(typed_result=True)
def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's ``dot``: products of scalars, inner product of vectors, matrix products, and for N-D
    arrays a sum over the last axis of ``a`` and the second-to-last of ``b``.

    >>> dot(np.array([1, 2]), np.array([3, 4])).item()
    11
    >>> dot(np.ones((2, 3)), np.ones((4, 3, 5))).shape
    (2, 4, 5)
    """
    precision = dt.canonicalize_precision(precision, "dot")
    a, b = promote_args(asarray(a), asarray(b))
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    contract_b = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[contract_b]:
        raise _contraction_mismatch("dot", (a.shape[-1],), (b.shape[contract_b],))
    return _dot_general(a, b, ((a.ndim - 1,), (contract_b,)), ((), ()), preferred_element_type, precision)


@jitted_eagerly(static_argnames=("precision", "preferred_element_type"))
def vdot(a, b, /, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a`` if it is complex (``sum(conj(a) * b)``).

    >>> vdot(np.array([[1, 2], [3, 4]]), np.array([[1, 1], [1, 1]])).item()
    10
    """
    a, b = conjugate(ravel(a)), ravel(b)  # (lengths that differ: dot's TypeError, as JAX's)
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


def inner(a, b, /, *, precision=None, preferred_element_type=None):
    """Inner product over the last axes of ``a`` and ``b``.

    >>> inner(np.ones((2, 3)), np.ones((4, 3))).shape
    (2, 4)
    """
    precision = dt.canonicalize_precision(precision, "inner")
    a, b = promote_args(asarray(a), asarray(b))
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise _contraction_mismatch("inner", (a.shape[-1],), (b.shape[-1],))
    return _dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)), ((), ()), preferred_element_type, precision)


@jitted_eagerly
def outer(a, b, out=None):
    """Outer product of the flattened vectors.

    >>> outer(np.array([1, 2]), np.array([3, 4, 5])).tolist()
    [[3, 4, 5], [6, 8, 10]]
    """
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (a.shape[0], 1)), reshape(b, (1, b.shape[0])))


@takes_out_sharding(typed_result=True)
def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over the given axes (an int ``n``: the last ``n`` of ``a``, first ``n`` of ``b``).

    >>> tensordot(np.ones((2, 3, 4)), np.ones((3, 4, 5))).shape
    (2, 5)
    >>> tensordot(np.ones((2, 3)), np.ones((3, 2)), axes=([0, 1], [1, 0])).item()
    6.0
    """
    precision = dt.canonicalize_precision(precision, "tensordot")
    a, b = promote_args(asarray(a), asarray(b))
    if isinstance(axes, int | np.integer):
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):  # (JAX's type and words)
            raise TypeError(
                f"Number of tensordot axes (axes {n}) exceeds input ranks ({a.ndim} and {b.ndim})"
            )
        ca, cb = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    else:
        if not isinstance(axes, tuple | list):  # (JAX's words)
            raise TypeError(
                f"tensordot axes argument must be an int, a pair of ints, or a pair of lists, got {axes}"
            )
        if len(axes) != 2 or not all(isinstance(x, int | np.integer | tuple | list) for x in axes):
            raise TypeError(
                f"tensordot requires both axes lists to be either ints, tuples or lists, got {axes}"
            )  # (JAX's words)
        if len(as_sequence(axes[0])) != len(as_sequence(axes[1])):  # (before the axes' ranges, as JAX)
            raise TypeError(
                f"tensordot requires axes lists to have equal length, got {axes[0]} and {axes[1]}."
            )
        ca = tuple(normalize_axis(x, a.ndim) for x in as_sequence(axes[0]))
        cb = tuple(normalize_axis(x, b.ndim) for x in as_sequence(axes[1]))
    if any(a.shape[i] != b.shape[j] for i, j in zip(ca, cb)):
        raise _contraction_mismatch("tensordot", tuple(a.shape[i] for i in ca), tuple(b.shape[j] for j in cb))
    return _dot_general(a, b, (ca, cb), ((), ()), preferred_element_type, precision)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Vector dot product along ``axis``, broadcasting the other axes (Array API ``vecdot``): the
    sum of ``conj(x1) * x2``, conjugating complex ``x1``; ``precision`` and
    ``preferred_element_type`` as ``matmul``'s (JAX's keywords).

    >>> vecdot(np.ones((2, 3)), np.arange(3.0)).tolist()
    [3.0, 3.0]
    """
    precision = dt.canonicalize_precision(precision, "vecdot")
    pet = None if preferred_element_type is None else check_user_dtype(preferred_element_type, "vecdot")
    x1, x2 = promote_args(asarray(x1), asarray(x2))
    x1 = conjugate(x1)
    ax1, ax2 = normalize_axis(axis, x1.ndim), normalize_axis(axis, x2.ndim)
    if x1.shape[ax1] != x2.shape[ax2]:
        raise ValueError(f"vecdot: axis {axis} has sizes {x1.shape[ax1]} and {x2.shape[ax2]}")
    x1, x2 = moveaxis(x1, ax1, -1), moveaxis(x2, ax2, -1)
    batch = broadcast_shapes(x1.shape[:-1], x2.shape[:-1])
    x1 = broadcast_to(x1, (*batch, x1.shape[-1]))
    x2 = broadcast_to(x2, (*batch, x2.shape[-1]))
    dims = tuple(range(len(batch)))
    return _dot_general(x1, x2, ((len(batch),), (len(batch),)), (dims, dims), pet, precision)


def matvec(x1, x2, /):
    """Matrix-vector products ``x1 @ x2`` over broadcast stacks (NumPy 2.2's ``matvec``).

    >>> matvec(np.ones((4, 2, 3)), np.ones(3)).shape
    (4, 2)
    """
    x1, x2 = asarray(x1), asarray(x2)
    out = matmul(x1, expand_dims(x2, -1))
    return reshape(out, out.shape[:-1])


def vecmat(x1, x2, /):
    """Vector-matrix products ``conj(x1) @ x2`` over broadcast stacks (NumPy 2.2's ``vecmat``,
    which conjugates a complex vector).

    >>> vecmat(np.ones(2), np.ones((4, 2, 3))).shape
    (4, 3)
    """
    x1, x2 = conjugate(asarray(x1)), asarray(x2)
    out = matmul(expand_dims(x1, -2), x2)
    return reshape(out, (*out.shape[:-2], out.shape[-1]))


def diagonal_mask(n: int, m: int, offset: int):
    """A boolean ``(n, m)`` constant, true on the ``offset``-th diagonal."""
    return constant(np.eye(n, m, offset, dtype=bool), np.bool_)


@jitted_eagerly(static_argnames=("offset", "axis1", "axis2", "dtype"))
def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """Sum along a diagonal of the ``(axis1, axis2)`` planes.

    >>> trace(np.arange(9).reshape(3, 3)).item()
    12
    >>> trace(np.ones((2, 3, 3)), axis1=1, axis2=2).tolist()
    [3.0, 3.0]
    """
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1, ax2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    if ax1 == ax2:  # (JAX's words)
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    if ax1 < ax2:
        mask = st.broadcast_in_dim(
            diagonal_mask(a.shape[ax1], a.shape[ax2], int(offset)), a.shape, (ax1, ax2)
        )
    else:  # (broadcast_in_dim's dimensions increase: the transposed mask, its offset negated)
        mask = st.broadcast_in_dim(
            diagonal_mask(a.shape[ax2], a.shape[ax1], -int(offset)), a.shape, (ax2, ax1)
        )
    masked = select(mask, a, constant(0, a.dtype))
    return reductions.sum(masked, axis=(ax1, ax2), dtype=dtype)


@jitted_eagerly
def kron(a, b):
    """Kronecker product (blocks of ``a[i] * b``).

    >>> kron(np.array([1, 10]), np.array([1, 2])).tolist()
    [1, 2, 10, 20]
    """
    a, b = promote_args(asarray(a), asarray(b))
    nd = max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    a_exp = reshape(a, tuple(v for s in a.shape for v in (s, 1)))
    b_exp = reshape(b, tuple(v for s in b.shape for v in (1, s)))
    return reshape(multiply(a_exp, b_exp), tuple(x * y for x, y in zip(a.shape, b.shape)))


@jitted_eagerly(static_argnames=("axisa", "axisb", "axisc", "axis"))
def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """Cross product of 3-vectors (or 2-vectors) along the given axes.

    >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_args(asarray(a), asarray(b))
    a = moveaxis(a, normalize_axis(axisa, a.ndim), -1)
    b = moveaxis(b, normalize_axis(axisb, b.ndim), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")

    def comp(x, i):
        if i >= x.shape[-1]:
            return constant(0, x.dtype)
        return st.index_in_dim(x, i, x.ndim - 1, keepdims=False)

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return subtract(multiply(a0, b1), multiply(a1, b0))
    c0 = subtract(multiply(a1, b2), multiply(a2, b1))
    c1 = subtract(multiply(a2, b0), multiply(a0, b2))
    c2 = subtract(multiply(a0, b1), multiply(a1, b0))
    shape = broadcast_shapes(c0.shape, c1.shape, c2.shape)
    parts = [reshape(broadcast_to(c, shape), (*shape, 1)) for c in (c0, c1, c2)]
    out = st.concatenate(parts, len(shape))
    return moveaxis(out, -1, normalize_axis(axisc, out.ndim))


# ----------------------------------------------------------------------------------------------
# einsum


def _check_symbolic_contraction(inputs, in_labels, out_labels) -> None:
    """JAX's assertion for a label contracted between two operands whose sizes are different
    symbolic expressions (``b0`` against ``b1``, a symbolic export's traced sizes), in its words."""
    shapes = [tuple(getattr(d, "expr", d) for d in x.shape) for x in inputs]
    for name in set(in_labels[0]) & set(in_labels[1]) - set(out_labels):
        i, j = in_labels[0].index(name), in_labels[1].index(name)
        if shapes[0][i] != shapes[1][j]:
            raise AssertionError(
                f"Incompatible reduction dimensions: lhs.shape={shapes[0]} lhs_names={in_labels[0]} "
                f"rhs.shape={shapes[1]} rhs_names={in_labels[1]}"
            )


def einsum_path(subscripts, /, *operands, optimize="greedy"):
    """The contraction order opt_einsum plans for ``einsum`` (its ``(path, PathInfo)``).

    >>> path, info = einsum_path("ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    >>> path
    [(1, 2), (0, 1)]
    """
    shapes = [np.shape(x) if not hasattr(x, "shape") else tuple(x.shape) for x in operands]
    return opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=optimize)


def _interleaved_subscripts(first, rest) -> tuple[str, tuple]:
    """NumPy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` as a subscripts string
    and the operands, as JAX's (opt_einsum's conversion): a sublist holds ``...`` and any hashable,
    comparable labels (integers, or names: penzai's ``'tq'``), lettered in their sorted order."""
    return opt_einsum.parser.convert_interleaved_input((first, *rest))


def _several_contractions(args) -> bool:
    """Whether an ``einsum`` call contracts more than once (three operands or more: JAX computes
    those with ``out_sharding=`` in ``auto_axes``); the interleaved form counts its arrays."""
    if isinstance(args[0], str):
        return len(args) - 1 > 2
    return sum(not isinstance(a, list | tuple) for a in args[0::2]) > 2


@takes_out_sharding(typed_result=True, auto_when=_several_contractions)
def einsum(
    subscripts,
    /,
    *operands,
    out=None,
    optimize="auto",
    precision=None,
    preferred_element_type=None,
    _dot_general=None,
):
    """Einstein summation, planned by opt_einsum and lowered to pairwise ``dot_general``.

    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    >>> einsum("ii->", np.eye(3)).item()
    3.0
    >>> einsum("...i,i", np.ones((2, 3)), np.arange(3.0)).tolist()
    [3.0, 3.0]
    >>> einsum(np.ones((2, 3)), [0, 1], np.arange(3.0), [1], [0]).tolist()  # NumPy's interleaved form
    [3.0, 3.0]

    ``_dot_general`` (JAX's keyword; flax's layers pass one) replaces ``lax.dot_general`` in each
    pairwise contraction: it is called as ``f(a, b, dimension_numbers, precision,
    preferred_element_type=...)``.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_subscripts(subscripts, operands)
    if out is not None:
        raise NotImplementedError("einsum: the out argument is not supported (Arrays are immutable)")
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the subscripts-string form is supported, e.g. einsum('ij,jk', a, b)")
    precision = dt.canonicalize_precision(precision, "einsum")
    arrays = [asarray(x) for x in operands]
    convert_to = None
    if preferred_element_type is None:
        arrays = promote_args(*arrays)
        if arrays:
            # JAX contracts at the operands' result type, named to every dot_general (a custom
            # _dot_general, flax's fp8 one, reads it to pick its accumulation type).
            preferred_element_type = arrays[0].dtype
    else:
        # JAX's: each operand keeps its dtype into dot_general (which converts it), a summed
        # operand is widened first where the type asks for it, and the result is converted once.
        preferred_element_type = convert_to = check_user_dtype(preferred_element_type, "einsum")
    optimize = (
        "greedy"
        if optimize is True or optimize == "auto"
        else ("optimal" if optimize == "optimal" else optimize)
    )
    if optimize is False:
        optimize = "greedy"
    shapes = [tuple(x.shape) for x in arrays]
    symbolic = any(getattr(d, "traced", False) for shape in shapes for d in shape)
    if symbolic:
        # (a symbolic export's sizes, as JAX's default poly handler: each traced size is 8 for
        # opt_einsum's path; contracted sizes must be the same expression, checked per step)
        shapes = [tuple(8 if getattr(d, "traced", False) else d for d in shape) for shape in shapes]
    _, contractions = opt_einsum.contract_path(
        subscripts, *shapes, einsum_call=True, shapes=True, optimize=optimize
    )
    ops = list(arrays)
    for contract_inds, _removed, einsum_str, _remaining, _blas in contractions:
        if len(contract_inds) > 2:  # (a path given as optimize=[(0, 1, 2)])
            raise NotImplementedError(
                "jax.numpy.einsum does not support simultaneous contraction of 3 or more operands. "
                "Typically this means you've passed an unsupported path to the einsum optimize parameter."
            )
        inputs = [ops.pop(i) for i in contract_inds]
        lhs, out_labels = einsum_str.split("->")
        in_labels = lhs.split(",")
        if symbolic and len(inputs) == 2:
            _check_symbolic_contraction(inputs, in_labels, out_labels)
        if len(inputs) == 1:
            result = _einsum_single(inputs[0], in_labels[0], out_labels, convert_to)
        else:
            result = _einsum_pair(
                inputs[0],
                in_labels[0],
                inputs[1],
                in_labels[1],
                out_labels,
                preferred_element_type,
                precision,
                _dot_general,
            )
        ops.append(result)
    (result,) = ops
    if convert_to is not None and result.dtype != convert_to:
        result = result.astype(convert_to)
    return result


def _take_diagonals(x, labels: str):
    """Collapse labels repeated within one operand to their diagonal (``'ii' -> 'i'``)."""
    while True:
        seen = {}
        pair = None
        for pos, label in enumerate(labels):
            if label in seen:
                pair = (seen[label], pos)
                break
            seen[label] = pos
        if pair is None:
            return x, labels
        # (as jax's: the mask is (n_i, n_j) and the first axis is summed, so a repeated label of a
        # size-1 and a size-n axis, which broadcasting lets through, gives n entries, not an error)
        i, j = pair
        mask = st.broadcast_in_dim(diagonal_mask(x.shape[i], x.shape[j], 0), x.shape, (i, j))
        x = red.reduce_sum(select(mask, x, constant(0, x.dtype)), (i,))
        labels = labels[:i] + labels[i + 1 :]


def _sum_labels(x, labels: str, keep: str, widen_to=None):
    axes = tuple(i for i, label in enumerate(labels) if label not in keep)
    if not axes:
        return x, labels
    if widen_to is not None and result_type(x.dtype, widen_to) != x.dtype:
        x = x.astype(widen_to)  # (JAX's einsum sums bools as the preferred integers, not as or)
    return red.reduce_sum(x, axes), "".join(label for label in labels if label in keep)


def _to_order(x, labels: str, out_labels: str):
    perm = tuple(labels.index(label) for label in out_labels)
    return st.transpose(x, perm)


def _einsum_single(x, labels: str, out_labels: str, widen_to=None):
    x, labels = _take_diagonals(x, labels)
    x, labels = _sum_labels(x, labels, out_labels, widen_to)
    return _to_order(x, labels, out_labels)


def _drop_unit(x, labels: str, label: str):
    pos = labels.index(label)
    return reshape(x, x.shape[:pos] + x.shape[pos + 1 :]), labels[:pos] + labels[pos + 1 :]


def _einsum_pair(
    a, la: str, b, lb: str, out_labels: str, preferred_element_type=None, precision=None, dot_general=None
):
    a, la = _take_diagonals(a, la)
    b, lb = _take_diagonals(b, lb)
    # Ellipsis dims broadcast: a size-1 dim meeting a larger one is dropped from its operand.
    for label in [x for x in la if x in lb]:
        na, nb = a.shape[la.index(label)], b.shape[lb.index(label)]
        if na != nb:
            if na == 1:
                a, la = _drop_unit(a, la, label)
            elif nb == 1:
                b, lb = _drop_unit(b, lb, label)
            else:
                raise ValueError(
                    f"einsum: operands could not be broadcast: label {label!r} has sizes {na} and {nb}"
                )
    a, la = _sum_labels(a, la, lb + out_labels)
    b, lb = _sum_labels(b, lb, la + out_labels)
    shared = [x for x in la if x in lb]
    # JAX's orders (jnp.einsum): the contracted labels sorted (XLA sums a product of several
    # contracted dimensions in the order the dimension numbers give them: "bskh,khd->bsd" in
    # (k, h) order differed from JAX's (h, k) in 245 of 1,048,576 bfloat16 results)
    batch = [x for x in shared if x in out_labels]
    contract = sorted(x for x in shared if x not in out_labels)

    def result_labels(first, second):
        return (
            "".join(batch)
            + "".join(x for x in first if x not in shared)
            + "".join(x for x in second if x not in shared)
        )

    if result_labels(lb, la) == out_labels:
        # dot_general puts lhs's free dims first: the operands swapped when that needs no
        # transpose, tried first, as JAX's einsum (opt_einsum contracts from right to left)
        a, la, b, lb = b, lb, a, la
    dn = (
        (tuple(la.index(x) for x in contract), tuple(lb.index(x) for x in contract)),
        (tuple(la.index(x) for x in batch), tuple(lb.index(x) for x in batch)),
    )
    y_labels = result_labels(la, lb)
    # An out_sharding= names the einsum's result dimensions (out_labels); the product's are in
    # y_labels' order, so it is typed with that spec permuted, and the transpose after it gives
    # the einsum's (JAX's _get_inverse_sharding).
    wanted = _overridden(len(out_labels))
    typed = (
        contextlib.nullcontext()
        if wanted is None or y_labels == out_labels
        else contraction_out(tuple(wanted[out_labels.index(x)] for x in y_labels))
    )
    with typed:
        if dot_general is None:
            if a.dtype != b.dtype:  # (only with a preferred type: JAX's CPU lowering converts both)
                a, b = a.astype(preferred_element_type), b.astype(preferred_element_type)
            y = dt.dot_general(a, b, dn, preferred_element_type or a.dtype, precision)
        else:
            y = dot_general(a, b, dn, precision, preferred_element_type=preferred_element_type)
    return _to_order(y, y_labels, out_labels)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
