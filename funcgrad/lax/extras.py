"""More of ``jax.lax``: bit counting (``population_count``, ``clz``), ``mulhi``, ``reciprocal``,
``reduce_xor``, ``scatter_sub``, ``approx_max_k``/``approx_min_k``, ``stack``/``unstack``, ``tile``,
``index_take``, ``broadcast_like``, ``ragged_dot``/``ragged_dot_general`` (grouped matrix products),
``platform_dependent``, ``composite``.

Layer: surface. Imports ``funcgrad.numpy``, the other ``funcgrad.lax`` modules and
``xla_bridge.backends`` (XLA's approximate top-k output size); everything here
is a composition of existing operations (no new primitives), so it differentiates, batches and
compiles like them.

``approx_max_k``/``approx_min_k`` return the exact top ``k`` (what XLA's CPU backend computes for
them too); ``recall_target`` and ``reduction_input_size_override`` only tune the approximation on
TPUs, and size XLA's partial result that ``aggregate_to_topk=False`` returns (sorted on a CPU).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import _control_flow, _devices
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad._utilities import typeof
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.errors import UnexpectedTracerError
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.lax import ops, slicing
from funcgrad.lax import shapes as _shapes
from funcgrad.numpy._core import convert
from funcgrad.primitives import control_flow as cf
from funcgrad.primitives import stacking as sk
from funcgrad.primitives.call import composite_p
from funcgrad.xla_bridge.backends import approx_top_k_output_size

__all__ = [
    "DotDimensionNumbers",
    "RaggedDotDimensionNumbers",
    "approx_max_k",
    "approx_min_k",
    "broadcast_like",
    "clz",
    "composite",
    "index_take",
    "mulhi",
    "platform_dependent",
    "population_count",
    "ragged_dot",
    "ragged_dot_general",
    "reciprocal",
    "reduce_xor",
    "scatter_sub",
    "stack",
    "tile",
    "unstack",
]

# The type of ``dot_general``'s ``dimension_numbers``: ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """The dimension numbers of a ragged contraction (``jax.lax.RaggedDotDimensionNumbers``): a
    ``dot_general``'s ``((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``, the lhs
    dimensions that are ragged (split into groups) and the rhs dimensions that index the groups.

    >>> RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0]).dot_dimension_numbers
    (((1,), (1,)), ((), ()))
    """

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: tuple[int, ...]
    rhs_group_dimensions: tuple[int, ...]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dn = tuple(tuple(tuple(int(d) for d in dims) for dims in pair) for pair in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


# The dimension numbers of ``ragged_dot``: lhs (m, k), rhs (g, k, n), m ragged, rhs dim 0 the groups.
_BASIC_RAGGED_DNUMS = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def _integer(name: str, x):
    x = fnp.asarray(x)
    if _dt.kind(x.dtype) not in "iu":
        raise TypeError(  # (JAX's words)
            f"{name} does not accept dtype {np.dtype(x.dtype).name}. Accepted dtypes are subtypes of integer."
        )
    return x


def _as_unsigned(x):
    """The bit pattern of an integer array as the unsigned type of its width."""
    u = _dt.int_of_width(_dt.bit_width(x.dtype), signed=False)
    return x if x.dtype == u else ops.bitcast_convert_type(x, u)


def population_count(x):
    """The number of 1 bits of each element's bit pattern, in its dtype.

    >>> population_count(np.array([0, 1, -1, 7], np.int8)).tolist()
    [0, 1, 8, 3]
    """
    x = _integer("population_count", x)
    # NumPy's bitwise_count counts |x|: on the unsigned bit pattern it is the population count.
    return _weak_as(fnp.bitwise_count(_as_unsigned(x)).astype(x.dtype), x)


def clz(x):
    """The number of leading zero bits of each element's bit pattern, in its dtype.

    >>> clz(np.array([0, 1, -1, 256], np.int32)).tolist()
    [32, 31, 0, 23]
    """
    x = _integer("clz", x)
    v = _as_unsigned(x)
    nbits = _dt.bit_width(v.dtype)
    shift = 1
    while shift < nbits:  # every bit below the highest set one becomes 1
        v = v | (v >> np.asarray(shift, v.dtype))
        shift *= 2
    return _weak_as((np.asarray(nbits, v.dtype) - fnp.bitwise_count(v).astype(v.dtype)).astype(x.dtype), x)


def _weak_as(out, x):
    # (a unary primitive in JAX: a Python int operand gives a weak result)
    return convert(out, out.dtype, weak_type=True) if getattr(x, "weak_type", False) else out


def mulhi(x, y, /):
    """The high half of the double-width product of two integers of the same dtype.

    >>> mulhi(np.array([-7, 2**30], np.int32), np.array([100000, 8], np.int32)).tolist()
    [-1, 2]
    """
    x, y = _integer("mulhi", x), _integer("mulhi", y)
    if x.dtype != y.dtype:
        raise TypeError(f"mulhi: operands must have the same dtype, got {x.dtype} and {y.dtype}")
    nbits = x.dtype.itemsize * 8
    if nbits < 32 or (nbits == 32 and _dt.x64_enabled):
        wide = np.dtype(f"{'u' if x.dtype.kind == 'u' else ''}int{2 * nbits}")
        prod = x.astype(wide) * y.astype(wide)
        return (prod >> np.asarray(nbits, wide)).astype(x.dtype)
    # The widest width of the mode (64 bits; 32 in 32-bit mode, where no 64-bit type exists): the
    # unsigned high word from half-width halves, then the sign corrections.
    u = np.dtype(f"uint{nbits}")
    half = nbits // 2
    a, b = _as_unsigned(x), _as_unsigned(y)
    lo_mask, sh = np.asarray(2**half - 1, u), np.asarray(half, u)
    a_lo, a_hi, b_lo, b_hi = a & lo_mask, a >> sh, b & lo_mask, b >> sh
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> sh) + (lh & lo_mask) + (hl & lo_mask)
    hi = hh + (lh >> sh) + (hl >> sh) + (mid >> sh)
    if x.dtype.kind == "u":
        return hi
    zero = np.asarray(0, u)
    hi = hi - fnp.where(x < 0, b, zero) - fnp.where(y < 0, a, zero)
    return ops.bitcast_convert_type(hi, x.dtype)


def reciprocal(x):
    """``1 / x`` elementwise (``integer_pow(x, -1)``).

    >>> reciprocal(np.array([2.0, 4.0])).tolist()
    [0.5, 0.25]
    """
    return ops.integer_pow(fnp.asarray(x), -1)


def reduce_xor(operand, axes: Sequence[int]):
    """Bitwise (for booleans: logical) exclusive or over ``axes``, by pairwise halving.

    >>> reduce_xor(np.array([[1, 2], [3, 4]]), (0,)).tolist()
    [2, 6]
    """
    x = fnp.asarray(operand)
    if x.dtype.kind not in "biu":
        raise TypeError(f"reduce_xor: the operand must be an integer or bool array, got {x.dtype}")
    for axis in sorted({a % x.ndim for a in axes}, reverse=True):
        while x.shape[axis] > 1:
            n = x.shape[axis]
            if n % 2:
                pad = [(0, 0)] * x.ndim
                pad[axis] = (0, 1)
                x = fnp.pad(x, pad)
                n += 1
            first = slicing.slice_in_dim(x, 0, n // 2, 1, axis)
            second = slicing.slice_in_dim(x, n // 2, n, 1, axis)
            x = fnp.bitwise_xor(first, second)
        x = (
            fnp.squeeze(x, axis)
            if x.shape[axis] == 1
            else fnp.zeros(x.shape[:axis] + x.shape[axis + 1 :], x.dtype)
        )
    return x


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):  # fmt: skip
    """``scatter_add`` of the negated updates: ``operand[indices] -= updates``.

    >>> from funcgrad.lax import ScatterDimensionNumbers
    >>> dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                              scatter_dims_to_operand_dims=(0,))
    >>> scatter_sub(np.zeros(3), np.array([[0], [2], [0]]), np.ones(3), dn).tolist()
    [-2.0, 0.0, -1.0]
    """
    return slicing.scatter_add(
        operand,
        scatter_indices,
        ops.neg(fnp.asarray(updates)),
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )


def _top_k_along(operand, k: int, dim: int, largest: bool, aggregate_to_topk: bool, name: str,
                 recall_target: float = 0.95, override: int = -1):  # fmt: skip
    x = fnp.asarray(operand)
    if not fnp.issubdtype(x.dtype, fnp.floating):  # (bfloat16 included: its NumPy kind is 'V')
        raise ValueError(f"operand must be a floating type ({name} of {x.dtype})")
    dim = dim % x.ndim
    if not aggregate_to_topk and any(getattr(v, "traced", False) for v in (k, x.shape[dim])):
        # (a symbolic export's traced sizes: XLA's window count has no symbolic form; JAX's words)
        raise NotImplementedError(
            "approx_top_k with aggregate_to_topk=False not yet implemented when either the `k` "
            f"({getattr(k, 'expr', k)}) or the  reduction dimension size "
            f"({getattr(x.shape[dim], 'expr', x.shape[dim])}) are symbolic"
        )
    if not aggregate_to_topk:  # (XLA's partial result: its size of windows, sorted on a CPU as JAX's)
        k = approx_top_k_output_size(x.shape[dim], x.ndim, int(k), float(recall_target), int(override))
    moved = fnp.moveaxis(x, dim, -1)
    values, idx = slicing.top_k(moved if largest else ops.neg(moved), int(k))
    if not largest:
        values = ops.neg(values)
    return [fnp.moveaxis(values, -1, dim), fnp.moveaxis(idx, -1, dim)]


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):  # fmt: skip
    """The ``k`` largest values along ``reduction_dimension`` and their indices (exact).

    >>> [v.tolist() for v in approx_max_k(np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]]), 2)]
    [[[5.0, 3.0], [6.0, 4.0]], [[1, 2], [2, 0]]]
    """
    return _top_k_along(
        operand, k, reduction_dimension, True, aggregate_to_topk, "approx_max_k", recall_target,
        reduction_input_size_override,
    )  # fmt: skip


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):  # fmt: skip
    """The ``k`` smallest values along ``reduction_dimension`` and their indices (exact).

    >>> [v.tolist() for v in approx_min_k(np.array([1.0, 5.0, 3.0]), 2)]
    [[1.0, 3.0], [0, 2]]
    """
    return _top_k_along(
        operand, k, reduction_dimension, False, aggregate_to_topk, "approx_min_k", recall_target,
        reduction_input_size_override,
    )  # fmt: skip


def stack(operands: Sequence, axis: int = 0):
    """The operands (of one shape) stacked along a new ``axis``.

    >>> stack([np.ones(2), np.zeros(2)], axis=1).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """
    return sk.stack([fnp.asarray(x) for x in operands], axis)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple.

    >>> [u.tolist() for u in unstack(np.array([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    return sk.unstack(fnp.asarray(x), axis)


def tile(operand, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along each axis (``len(reps) == operand.ndim``).

    >>> tile(np.arange(3), (2,)).tolist()
    [0, 1, 2, 0, 1, 2]
    """
    x = fnp.asarray(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != x.ndim:
        raise ValueError(f"tile: reps {reps} must have one entry per dimension of the operand {x.shape}")
    return fnp.tile(x, reps)


def index_take(src, idxs, axes: Sequence[int]):
    """``src`` at the index arrays ``idxs[j]`` along ``axes[j]`` (taken modulo each size): shape
    ``(N, *remaining dimensions)``.

    >>> index_take(np.arange(24).reshape(2, 3, 4), (np.array([0, 1, -1]), np.array([1, 2, 5])), (0, 2)).shape
    (3, 3)
    """
    src = fnp.asarray(src)
    axes = tuple(a % src.ndim for a in axes)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes")
    moved = fnp.moveaxis(src, axes, tuple(range(len(axes))))
    index = tuple(fnp.remainder(fnp.asarray(i), src.shape[a]) for i, a in zip(idxs, axes))
    return moved[index]


def broadcast_like(arr, like_arr):
    """``arr`` broadcast to the shape and sharding of ``like_arr`` (JAX's ``broadcast_to`` with
    ``like_arr``'s type): on an explicit mesh the result is typed as ``like_arr``, and an ``arr``
    sharded over axes ``like_arr`` does not have on its dimension is JAX's ``ValueError``.

    >>> broadcast_like(np.ones(3), np.zeros((2, 3))).shape
    (2, 3)
    """
    like = typeof(like_arr)
    x = fnp.asarray(arr)
    have = typeof(x)
    s = like.sharding
    if s is None or s.mesh.empty:
        return fnp.broadcast_to(x, like.shape)
    if have.shape == like.shape and have.sharding == s:
        return x
    lead = len(like.shape) - x.ndim
    tail = tuple(s.spec)[lead:] if lead >= 0 else ()
    tail += (None,) * (x.ndim - len(tail))
    fits = all(a in (None, b) for a, b in zip(tuple(have.sharding.spec), tail))
    if lead < 0 or not fits or any(a not in (1, b) for a, b in zip(x.shape, like.shape[lead:])):
        want = like.update(dtype=have.dtype, weak_type=False)
        raise ValueError(f"Incompatible types for broadcasting: input type={have} and requested type={want}")
    return _shapes.broadcast_in_dim(x, like.shape, tuple(range(lead, len(like.shape))), out_sharding=s)


@takes_out_sharding
def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None):
    """Grouped matrix products (``lax.ragged_dot``, the mixture-of-experts layer): ``lhs`` is
    ``(m, k)`` with its rows in ``g`` consecutive groups of ``group_sizes`` rows, ``rhs`` is
    ``(g, k, n)``, and row ``i`` of the ``(m, n)`` result is ``lhs[i] @ rhs[j]`` for the group ``j``
    that holds it; rows past ``sum(group_sizes)`` are zero. ``ragged_dot_general`` with the
    dimension numbers ``((([1], [1]), ([], [])), [0], [0])``, as in JAX.

    >>> lhs = np.arange(6.0).reshape(3, 2)
    >>> rhs = np.stack([np.eye(2), 2 * np.eye(2)])
    >>> ragged_dot(lhs, rhs, np.array([1, 2])).tolist()
    [[0.0, 1.0], [4.0, 6.0], [8.0, 10.0]]
    """
    return ragged_dot_general(
        lhs, rhs, group_sizes, _BASIC_RAGGED_DNUMS, precision, preferred_element_type, group_offset
    )


@takes_out_sharding
def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None):  # fmt: skip
    """Ragged contraction (``lax.ragged_dot_general``): a ``dot_general`` whose one lhs *ragged*
    dimension is split into ``g`` consecutive groups of ``group_sizes`` (shape ``[g]``, or
    ``[b..., x..., g]`` with the batch dims and the lhs dims of the ragged dim's kind before it).
    Three modes, by the kind of the ragged dimension:

    1. non-contracting (``m``): ``rhs`` has one group dimension of size ``g``; the rows of group
       ``j`` are contracted with ``rhs``'s slice ``j``; rows past the groups are zero.
    2. contracting (``k``): one product per group over its slice of ``k``; the result has a
       leading dimension ``g``.
    3. batch: a plain ``dot_general`` (``group_sizes`` do not change the result).

    As JAX's reference lowering: the ragged operand(s) are spread into a leading group axis
    (zeros outside each group) and contracted by one ``dot_general``, so it differentiates,
    batches and compiles as ``dot_general`` does.

    >>> dn = RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
    >>> ragged_dot_general(np.ones((2, 3)), np.ones((3, 4)), np.array([1, 2]), dn).shape
    (2, 2, 4)
    """
    if group_offset is not None:  # (JAX's type and words: no backend but TPU implements it)
        raise NotImplementedError("Unimplemented group_offset support.")
    dn = ragged_dot_dimension_numbers
    lhs, rhs, gs = fnp.asarray(lhs), fnp.asarray(rhs), fnp.asarray(group_sizes)
    mode, ragged, (lc, rc), (lb, rb) = _ragged_check(lhs.shape, rhs.shape, gs.shape, dn)
    if mode in ("contracting", "noncontracting") and getattr(gs.shape[-1], "traced", False):
        raise TypeError(  # (a symbolic export's group count; JAX's words)
            "ragged_dot_general requires the group count (last dimension of group_sizes) to be static "
            "in Mode 1 (non-contracting) and Mode 2 (contracting)."
        )
    if not fnp.issubdtype(gs.dtype, fnp.integer):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of np.integer.")
    l_prefix = _ragged_prefix(mode, lhs.ndim, ragged, lb, lc)
    if gs.ndim == 1:
        gs = fnp.broadcast_to(gs, tuple(lhs.shape[i] for i in l_prefix) + gs.shape)

    def incr(dims):
        return [d + 1 for d in dims]

    def dot(a, b, dims):
        return ops.dot_general(a, b, dims, precision, preferred_element_type)

    if mode == "noncontracting":
        return dot(
            _ragged_to_dense(lhs, ragged, gs, l_prefix), rhs,
            ((incr(lc) + [0], rc + [dn.rhs_group_dimensions[0]]), (incr(lb), rb)),
        )  # fmt: skip
    if mode == "contracting":
        r_ragged = rc[lc.index(ragged)]
        r_prefix = _ragged_prefix(mode, rhs.ndim, r_ragged, rb, rc)
        return dot(
            _ragged_to_dense(lhs, ragged, gs, l_prefix),
            _ragged_to_dense(rhs, r_ragged, gs, r_prefix),
            ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb))),
        )
    return dot(lhs, rhs, dn.dot_dimension_numbers)


def _ragged_to_dense(x, dim, gs, prefix):
    """``x`` with a leading group axis: slice ``j`` keeps the entries of ``x`` whose index along
    ``dim`` lies in group ``j`` (zeros elsewhere). ``gs`` is ``[x.shape[p] for p in prefix] + [g]``:
    the group sizes for each index of ``x``'s ``prefix`` dimensions."""
    ends = fnp.cumsum(gs, axis=-1)
    starts = ends - gs
    # (g, prefix...) in x's axis order, with size-1 axes for x's other dimensions
    order = sorted(range(len(prefix)), key=lambda i: prefix[i])
    perm = [gs.ndim - 1] + order
    shape = (gs.shape[-1],) + tuple(x.shape[a] if a in prefix else 1 for a in range(x.ndim))
    starts, ends = (fnp.reshape(fnp.transpose(v, perm), shape) for v in (starts, ends))
    iota = fnp.reshape(
        fnp.arange(x.shape[dim], dtype=gs.dtype), (1,) + tuple(-1 if a == dim else 1 for a in range(x.ndim))
    )
    mask = (starts <= iota) & (iota < ends)
    return fnp.where(mask, x[None], fnp.zeros((), x.dtype))


def _ragged_prefix(mode, rank, ragged, batch, contract):
    """The dimensions ``group_sizes``' leading axes index: the batch dims, then (modes 1 and 2) the
    dims of the ragged dim's kind before it (JAX's ``_ragged_dot_prefix_dims``)."""
    noncontract = [d for d in range(rank) if d not in batch and d not in contract]
    if mode == "noncontracting":
        return batch + noncontract[: noncontract.index(ragged)]
    if mode == "contracting":
        return batch + contract[: contract.index(ragged)]
    return batch[: batch.index(ragged)]


def _ragged_check(lhs_shape, rhs_shape, gs_shape, dn):
    """JAX's shape rule of ``ragged_dot_general`` (its checks, types and words): the mode, the
    lhs ragged dimension and the dot dimension numbers as lists, ``(lc, rc), (lb, rb)``."""
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general expects RaggedDotDimensionNumbers, got {type(dn).__name__}")

    def in_range(d, rank, dim_name, arg_name):
        if d < 0 or d >= rank:
            raise TypeError(
                f"ragged_dot_general requires {dim_name} numbers to be nonnegative and less than the number "
                f"of axes of the {arg_name} value, got {d} for {arg_name} of rank {rank}."
            )

    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    ragged = dn.lhs_ragged_dimensions[0]
    in_range(ragged, len(lhs_shape), "lhs ragged dimension", "lhs")
    (lc, rc), (lb, rb) = (list(map(list, p)) for p in dn.dot_dimension_numbers)
    noncontract = [d for d in range(len(lhs_shape)) if d not in lb and d not in lc]
    if ragged in noncontract:
        mode = "noncontracting"
    elif ragged in lc:
        mode = "contracting"
    else:
        mode = "batch"
    if len(gs_shape) == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if len(gs_shape) != 1:
        expected = tuple(lhs_shape[i] for i in _ragged_prefix(mode, len(lhs_shape), ragged, lb, lc))
        expected += (gs_shape[-1],)
        if tuple(gs_shape) != expected:
            raise TypeError(f"expected group_sizes to have shape {expected}, got {tuple(gs_shape)}.")
    groups = gs_shape[-1]
    group_dims = dn.rhs_group_dimensions
    if mode != "noncontracting":
        if group_dims:
            raise TypeError(
                "ragged_dot_general requires zero group dimensions in the rhs when lhs ragged dimension is "
                "contracting or batch."
            )
    else:
        if len(group_dims) != 1:
            raise TypeError(
                "ragged_dot_general requires exactly one rhs group dimension when lhs ragged dimension is "
                "noncontracting."
            )
        gd = group_dims[0]
        in_range(gd, len(rhs_shape), "rhs group dimension", "rhs")
        if gd in rb or gd in rc:
            raise TypeError(
                "ragged_dot_general requires rhs group dimension numbers to be distinct from contracting and "
                "batch dimensions."
            )
        if rhs_shape[gd] != groups:
            raise TypeError(f"expected rhs group dimension size to be {groups}, got {rhs_shape[gd]}.")
    # dot_general's checks on the operands as given (not on the spread ones the product sees)
    for side, shape, contract, batch in (("lhs", lhs_shape, lc, lb), ("rhs", rhs_shape, rc, rb)):
        if not all(0 <= d < len(shape) for d in contract + batch):
            raise TypeError(
                f"dot_general requires {side} dimension numbers to be nonnegative and less than the number "
                f"of axes of the {side} value, got {side}_batch of {tuple(batch)} and {side}_contracting of "
                f"{tuple(contract)} for {side} of rank {len(shape)}"
            )
    if len(lb) != len(rb):
        raise TypeError(
            f"dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch "
            f"{tuple(lb)} and rhs_batch {tuple(rb)}."
        )
    for what, ld, rd in (
        ("lhs batch dimensions and rhs batch dimensions", lb, rb),
        ("contracting dimensions", lc, rc),
    ):
        lshape, rshape = tuple(lhs_shape[i] for i in ld), tuple(rhs_shape[i] for i in rd)
        if lshape != rshape:
            raise TypeError(f"dot_general requires {what} to have the same shape, got {lshape} and {rshape}.")
    return mode, ragged, (lc, rc), (lb, rb)


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[p](*args)`` for the platform ``p`` the program is compiled for (``"cpu"``,
    ``"cuda"``, ...), else ``default(*args)`` (``lax.platform_dependent``). As JAX's, every branch
    is traced: under ``jit`` (and in ``make_jaxpr``, ``export``) the program holds a
    ``platform_index`` and a ``cond`` over the branches, and the choice is made when it is lowered
    for a platform, so an export for several platforms runs each platform's branch on it (NOTE:
    [platform-dependent conds]); called eagerly, only the running platform's branch runs.

    >>> platform_dependent(3.0, cpu=lambda x: x * 2, default=lambda x: x).item()
    6.0
    >>> import funcgrad
    >>> jaxpr = funcgrad.make_jaxpr(lambda x: platform_dependent(x, cpu=fnp.sin, cuda=fnp.cos))(1.0)
    >>> [e.primitive.name for e in jaxpr.eqns], jaxpr.eqns[1].params["branches_platforms"]
    (['platform_index', 'cond'], (('cpu',), ('cuda',)))
    """
    # Identical branches joined, in JAX's order and words (its argument checks).
    groups: list[tuple[list[str], object]] = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for names, b in groups:
            if b == branch:
                names.append(name)
                break
        else:
            groups.append(([name], branch))
    platforms = tuple(tuple(names) for names, _ in groups)
    branches = [b for _, b in groups]
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
        branches.append(default)
        platforms += (None,)
    if type(core.current_trace()) is not core.EvalTrace:  # (eagerly: the running platform's)
        index = cf.platform_index_p.bind(platforms=platforms)
        if isinstance(index, core.Tracer):
            return _control_flow.platform_switch(index, branches, args, platforms)
    platform = _devices.default_backend()
    names = ("cuda", "rocm", "gpu") if platform == "gpu" else (platform,)
    for i, ps in enumerate(platforms):
        if ps is None or any(n in ps for n in names):
            return tu.tree_map(fnp.asarray, branches[i](*args))  # arrays, as the staged switch gives
    raise NotImplementedError(  # (JAX's type and words: its lowering has no rule for this platform)
        f"MLIR translation rule for primitive 'platform_index(platforms={platforms})' not found for "
        f"platform {'cuda' if platform == 'gpu' else platform}"
    )


def composite(decomposition, name: str, version: int = 0):
    """``decomposition`` as the composite operation ``name`` (``lax.composite``): it computes as
    ``decomposition`` and compiles to a ``stablehlo.composite`` op (a compiler may swap in a kernel
    of its own for ``name``/``version``/attributes; XLA's CPU backend inlines the decomposition).
    Positional arguments are its inputs, keyword arguments its attributes (``None`` ones omitted;
    NumPy arrays, not traced values). As JAX's, a composite has no derivative or batching rule:
    ``grad``/``jvp``/``vmap`` of one raise (``custom_jvp`` gives it a derivative).

    >>> tangent = composite(lambda x: fnp.sin(x) / fnp.cos(x), name="my.tangent")
    >>> round(float(tangent(0.5)), 6)
    0.546302
    >>> import funcgrad
    >>> 'stablehlo.composite "my.tangent"' in funcgrad.jit(tangent).lower(0.5).as_text()
    True
    """
    if not callable(decomposition):
        raise TypeError(f"composite: the decomposition must be callable, got {type(decomposition).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"composite: name must be a non-empty string, got {name!r}")

    @functools.wraps(decomposition)
    def _decorator(*args, **kwargs):
        if any(isinstance(v, core.Tracer) for v in kwargs.values()):
            raise UnexpectedTracerError(  # (JAX's words)
                "Found a JAX Tracer as an attribute in the decomposition for the composite op "
                f"'{name}'. This means that the decomposition function closes over a value that is "
                "involved in a JAX transformation. Any values that aren't explicitly known at compile "
                "time must be explicitly passed as arguments to the composite.\n\nNote: If you are "
                "passing jax arrays as attributes, use numpy arrays instead."
            )
        flat, in_tree = tu.tree_flatten(args)
        out_tree = []

        def flat_fun(*leaves):
            out_leaves, tree = tu.tree_flatten(decomposition(*tu.tree_unflatten(in_tree, leaves), **kwargs))
            out_tree.append(tree)
            return [fnp.asarray(o) for o in out_leaves]

        closed = trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat], description="composite")
        if any(isinstance(c, core.Tracer) for c in closed.consts):
            raise UnexpectedTracerError(  # (JAX's words)
                f"Found a JAX Tracer as a constant in the decomposition for the composite op '{name}'. "
                "This means that the decomposition function closes over a value that is involved in a "
                "JAX transformation. Any values that aren't explicitly known at compile time must be "
                "explicitly passed as arguments to the composite."
            )
        # (as JAX's: the decomposition's array constants become its leading arguments; scalars,
        # literals in JAX's jaxprs, stay inside it)
        hoisted = [np.ndim(c) > 0 for c in closed.consts]
        inner = closed.jaxpr
        kept = [(v, c) for v, c, h in zip(inner.constvars, closed.consts, hoisted) if not h]
        lifted = [(v, c) for v, c, h in zip(inner.constvars, closed.consts, hoisted) if h]
        jaxpr = Jaxpr(
            [v for v, _ in kept], [*(v for v, _ in lifted), *inner.invars], inner.eqns, inner.outvars
        )
        consts = [c for _, c in lifted]
        attributes = []
        for k, v in kwargs.items():
            leaves, treedef = tu.tree_flatten(v)
            attributes.append(
                (k, tuple(_HashableArray(x) if isinstance(x, np.ndarray) else x for x in leaves), treedef)
            )
        outs = composite_p.bind(
            *consts,
            *flat,
            name=name,
            attributes=tuple(attributes),
            version=int(version),
            jaxpr=ClosedJaxpr(jaxpr, [c for _, c in kept]),
        )
        return tu.tree_unflatten(out_tree[0], outs)

    return _decorator


class _HashableArray:
    """A NumPy array as a composite's attribute (a hashable parameter; JAX's HashableArray)."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __repr__(self):
        return f"HashableArray({self.val!r})"

    def __hash__(self):
        return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

    def __eq__(self, other):
        return isinstance(other, _HashableArray) and np.array_equal(self.val, other.val)
