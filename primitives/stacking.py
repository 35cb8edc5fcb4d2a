"""``stack``, ``unstack`` and ``split``: JAX 0.10's ``stack_p``/``unstack_p``/``split_p``
(``lax.stack``, ``lax.unstack``, ``jnp.stack`` of a sequence, ``jnp.unstack``; ``lax.split``,
``jnp.split``/``array_split``, the unravelling of ``jacfwd``/``jacrev``/``ravel_pytree``), staged
as one equation each, as JAX's jaxprs show them (``stack[axis=1] a b``,
``b:f32[2] c:f32[2] = unstack[axis=0] a``, ``b:f32[1] c:f32[2] = split[axis=0 sizes=(1, 2)] a``).

``split``'s transpose is JAX's: the cotangents concatenated, a symbolic zero one instantiated as
zeros of its piece's type, so the operand's weak type survives (a Python scalar's gradient through
``jnp.split`` or a ``jacfwd`` block is weak in JAX; slice's transpose pads with a strong zero).

Layer: primitives. Imports the funcgrad kernel, ``primitives._rules`` and
``primitives._sharding_rules`` (JAX's sharding rules of the two, in its words).

Both are linear, each the other's transpose. Their batch rules are JAX's: operands batched alike
stack along the shifted axis; otherwise every operand goes to the front, an unbatched one
broadcast without the batch dimension's mesh axis, so on an explicitly sharded batch dimension
``vmap(lambda v: jnp.stack([v, w]))`` with an unmapped ``w`` is JAX's ShardingTypeError ('All
operands should have the same sharding'). The lowerings are JAX's: a broadcast of each operand
and one concatenation; slices and reshapes.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import aval_of, checked_impl, move_to_front, to_front
from funcgrad.primitives._sharding_rules import ShardingTypeError, _show, cut_spec, spec_of
from funcgrad.primitives.structure import concatenate_p

from funcgrad.kernel.ad import Zero, ct_aval, deflinear, instantiate, is_undefined_primal
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# stack


def _stack_abstract_eval(*xs, axis):
    if not xs:
        raise ValueError("stack expects at least one operand, got 0.")
    if len({x.ndim for x in xs}) != 1:
        shapes = ", ".join(str(x.shape) for x in xs)
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got {shapes}.")
    if len({tuple(x.shape) for x in xs}) != 1:
        shapes = ", ".join(str(x.shape) for x in xs)
        raise ValueError(f"All input arrays must have the same shape. Got {shapes}.")
    if len({x.dtype for x in xs}) != 1:  # (JAX's check_same_dtypes)
        dtypes = ", ".join(str(x.dtype) for x in xs)
        raise TypeError(f"lax.stack requires arguments to have the same dtypes, got {dtypes}.")
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


def _stack_transpose(ct, *xs, axis):
    if not any(is_undefined_primal(x) for x in xs):
        return [None] * len(xs)
    pieces = unstack_p.bind(ct, axis=axis)
    return [p if is_undefined_primal(x) else None for p, x in zip(pieces, xs)]


def _stack_batch(axis_size, vals, dims, *, axis):
    d = dims[0]
    if d is not None and all(b == d for b in dims):
        return stack_p.bind(*vals, axis=axis if axis <= d else axis + 1), d + (axis <= d)
    # (as JAX's: an unbatched operand is broadcast without the batch dimension's sharding)
    xs = [to_front(x, b, axis_size) for x, b in zip(vals, dims)]
    return stack_p.bind(*xs, axis=axis + 1), 0


def _stack_sharding(avals_in, avals_out, *, axis, **params):
    # (JAX's: the operands typed with a sharding have equal ones; the new dimension unsharded)
    specs = [spec_of(a) for a in avals_in if a._sharding is not None]
    if any(s != specs[0] for s in specs[1:]):
        shown = ", ".join(_show(s) for s in specs)
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings {shown}")
    spec = list(specs[0]) if specs else [()] * (avals_out[0].ndim - 1)
    spec.insert(axis, ())
    return [tuple(spec)]


stack_p = Primitive("stack")
stack_p.def_impl(checked_impl(_stack_abstract_eval, lambda *xs, axis: np.stack(xs, axis=axis)))
stack_p.def_abstract_eval(_stack_abstract_eval)
deflinear(stack_p, _stack_transpose)
stack_p.def_batch(_stack_batch)
stack_p.def_sharding_rule(_stack_sharding)
stack_p.def_traits(sparse="stack")


def stack(operands, axis: int = 0):
    """The operands (one shape and dtype) stacked along a new ``axis`` (``lax.stack``).

    >>> stack([np.ones(2), np.zeros(2)], axis=1).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """
    operands = list(operands)
    if not operands:
        raise ValueError("stack expects at least one operand, got 0.")
    ndim = aval_of(operands[0]).ndim + 1
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return stack_p.bind(*operands, axis=axis % ndim)


# ----------------------------------------------------------------------------------------------
# unstack


def _unstack_abstract_eval(x, *, axis):
    if x.ndim == 0:
        raise ValueError(
            "unstack requires arrays with rank > 0, however a scalar array of shape "
            f"{tuple(x.shape)} was passed."
        )
    shape = [s for d, s in enumerate(x.shape) if d != axis]
    return [ShapedArray(shape, x.dtype, x.weak_type)] * x.shape[axis]


def _unstack_impl(x, *, axis):
    x = np.asarray(x)
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unstack_transpose(cts, x, *, axis):
    aval = x.aval
    piece = ShapedArray([s for d, s in enumerate(aval.shape) if d != axis], aval.dtype, aval.weak_type)
    cts = [instantiate(Zero(piece)) if type(c) is Zero else c for c in cts]
    return [stack_p.bind(*cts, axis=axis)]


def _unstack_batch(axis_size, vals, dims, *, axis):
    (x,), (d,) = vals, dims
    x = move_to_front(x, d)
    return unstack_p.bind(x, axis=axis + 1), [0] * int(np.shape(x)[axis + 1])


def _unstack_sharding(avals_in, avals_out, *, axis, **params):
    x = avals_in[0]
    spec = list(spec_of(x))
    if spec[axis]:
        raise ShardingTypeError(
            f"unstack operand cannot be sharded on the unstacking axis {axis}. Got operand "
            f"type={x.str_short()}"
        )
    del spec[axis]
    return [tuple(spec)] * len(avals_out)


unstack_p = Primitive("unstack", multiple_results=True)
unstack_p.def_impl(checked_impl(_unstack_abstract_eval, _unstack_impl))
unstack_p.def_abstract_eval(_unstack_abstract_eval)
deflinear(unstack_p, _unstack_transpose)
unstack_p.def_batch(_unstack_batch)
unstack_p.def_sharding_rule(_unstack_sharding)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (``lax.unstack``).

    >>> [u.tolist() for u in unstack(np.array([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    ndim = aval_of(x).ndim
    axis = int(axis)
    if ndim and not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return tuple(unstack_p.bind(x, axis=axis % ndim if ndim else 0))


# ----------------------------------------------------------------------------------------------
# split


def _split_abstract_eval(x, *, sizes, axis):
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    if sum(sizes) != x.shape[axis]:
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
            f"{list(x.shape)}"
        )
    return [ShapedArray(_piece_shape(x.shape, axis, n), x.dtype, x.weak_type) for n in sizes]


def _piece_shape(shape, axis, n):
    return tuple(n if d == axis else s for d, s in enumerate(shape))


def _split_impl(x, *, sizes, axis):
    x = np.asarray(x)
    return np.split(x, np.cumsum(sizes)[:-1].astype(int), axis=axis)


def _split_transpose(cts, x, *, sizes, axis):
    # (JAX's: the pieces concatenated, a symbolic zero one as zeros of its piece's cotangent type --
    # a reduced operand's pieces' cotangents unreduced, as the others'; the operand's weak type
    # kept, where slice's transpose pads with a strong zero)
    aval = x.aval
    cts = [
        instantiate(Zero(ct_aval(c.aval).update(weak_type=aval.weak_type))) if type(c) is Zero else c
        for c in cts
    ]
    return [concatenate_p.bind(*cts, dimension=axis) if len(cts) > 1 else cts[0]]


def _split_batch(axis_size, vals, dims, *, sizes, axis):
    (x,), (d,) = vals, dims
    return split_p.bind(x, sizes=sizes, axis=axis + 1 if axis >= d else axis), [d] * len(sizes)


def _split_sharding(avals_in, avals_out, *, sizes, axis, **params):
    return [cut_spec(avals_in[0], o.shape, "split") for o in avals_out]


split_p = Primitive("split", multiple_results=True)
split_p.def_impl(checked_impl(_split_abstract_eval, _split_impl))
split_p.def_abstract_eval(_split_abstract_eval)
deflinear(split_p, _split_transpose)
split_p.def_batch(_split_batch)
split_p.def_sharding_rule(_split_sharding)


def split(operand, sizes, axis: int = 0) -> list:
    """``operand`` split along ``axis`` into pieces of the given ``sizes`` (summing to the axis size;
    ``lax.split``, JAX's ``split_p``: one equation, its transpose a concatenation).

    >>> [x.tolist() for x in split(np.arange(5), (2, 3))]
    [[0, 1], [2, 3, 4]]
    """
    ndim = aval_of(operand).ndim
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return list(split_p.bind(operand, sizes=tuple(int(s) for s in sizes), axis=axis % ndim))


__all__ = ["split", "split_p", "stack", "stack_p", "unstack", "unstack_p"]
