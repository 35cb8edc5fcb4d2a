"""``funcgrad.lax.reduce``: XLA's Reduce with any reducer, with ``jax.lax.reduce``'s signature.

Layer: surface. Imports the kernel (core, tree_util, partial_eval), the primitive catalog,
``funcgrad.numpy._core`` (conversion helpers) and the ``lax`` ops (to recognise a monoid).

As in JAX, ``reduce(x, init, op, dims)`` with one operand, ``op`` one of ``lax.add``, ``mul``,
``max``, ``min``, ``bitwise_and``, ``bitwise_or``, ``bitwise_xor`` and a concrete ``init`` equal to
its identity for the operand's dtype runs the dedicated reduction (``reduce_sum``, ...), with that
primitive's derivatives. Any other computation (or init value, or several operands) is traced to a
scalar jaxpr and binds the generic ``reduce`` primitive (NOTE: [generic reduce]): eager NumPy
evaluation, batching, ``jit`` (``stablehlo.reduce`` with the jaxpr as its region), and forward and
reverse derivatives through JAX's pairwise-tree JVP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.lax import extras as lax_extras
from funcgrad.lax import ops as lax_ops
from funcgrad.lax.windowed import trace_reducer
from funcgrad.numpy._core import asarray
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red

__all__ = ["reduce"]


def _identity(op, dtype):
    """The identity of the monoid ``op`` for ``dtype`` (None when ``op`` is not one)."""
    dtype = np.dtype(dtype)
    intlike = dtype.kind in "biu"
    if op is lax_ops.add:
        return 0
    if op is lax_ops.mul:
        return 1
    if op is lax_ops.max:
        return red._max_identity(dtype)
    if op is lax_ops.min:
        return red._min_identity(dtype)
    if op is lax_ops.bitwise_and and intlike:
        return np.array(-1).astype(dtype)
    if op in (lax_ops.bitwise_or, lax_ops.bitwise_xor) and intlike:
        return np.zeros((), dtype)
    return None


def _is_monoid(op, init, x) -> bool:
    """Whether ``op`` with the concrete ``init`` is a monoid ``_monoid`` reduces ``x`` by."""
    if isinstance(init, core.Tracer):
        return False
    value = np.asarray(init)
    if value.shape != () or value.dtype == object:
        return False
    identity = _identity(op, x.dtype)
    return identity is not None and bool(np.equal(value, identity))


def _monoid(op, init, x, dims):
    """The dedicated reduction of ``x`` when ``op`` with the concrete ``init`` is a monoid, else None."""
    if not _is_monoid(op, init, x):
        return None
    if op is lax_ops.add:
        return lax_ops.reduce_sum(x, dims)
    if op is lax_ops.mul:
        return lax_ops.reduce_prod(x, dims)
    if op is lax_ops.max:
        return lax_ops.reduce_max(x, dims)
    if op is lax_ops.min:
        return lax_ops.reduce_min(x, dims)
    if op is lax_ops.bitwise_xor:
        return lax_extras.reduce_xor(x, dims)
    if x.dtype == np.bool_:  # reduce_and / reduce_or are the logical ones, for booleans
        return (lax_ops.reduce_and if op is lax_ops.bitwise_and else lax_ops.reduce_or)(x, dims)
    return None


@takes_out_sharding
def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """Reduce ``operands`` over ``dimensions`` with ``computation``, starting from
    ``init_values`` (XLA's Reduce; ``jax.lax.reduce``).

    ``operands`` and ``init_values`` are matching pytrees (scalars for the inits); several
    operands are reduced together (``computation((acc...), (x...))`` returns the new
    accumulators, a variadic reduction such as an argmax). ``init_values`` with ``computation``
    should be a monoid (an identity and an associative operation): the order of combination is
    unspecified, as in XLA.

    >>> import numpy as np
    >>> from funcgrad import lax
    >>> x = np.arange(1.0, 7.0).reshape(2, 3)
    >>> lax.reduce(x, 0.0, lax.add, (1,)).tolist()
    [6.0, 15.0]
    >>> lax.reduce(x, 0.0, lambda a, b: a + b + a * b, (1,)).tolist()
    [23.0, 209.0]
    >>> v, i = lax.reduce((x, np.array([[0, 1, 2], [0, 1, 2]])), (-np.inf, 0),
    ...                   lambda a, b: lax.cond(a[0] >= b[0], lambda: a, lambda: b), (1,))
    >>> i.tolist()
    [2, 2]
    """
    flat_ops, tree = tu.tree_flatten(operands)
    flat_inits, init_tree = tu.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} vs. {init_tree}")
    if not flat_ops:
        raise ValueError("lax.reduce: needs at least one operand")
    flat_ops = [asarray(o) for o in flat_ops]
    ndim = flat_ops[0].ndim
    for o in flat_ops[1:]:
        if o.shape != flat_ops[0].shape:
            raise TypeError(
                "lax.reduce: operands must have one shape, got " + ", ".join(str(x.shape) for x in flat_ops)
            )
    if len(set(dimensions)) != len(tuple(dimensions)):  # (JAX's words)
        raise ValueError(f"duplicate value in 'axes' of reduction: {tuple(dimensions)}")
    dims = []
    for d in dimensions:
        d = int(d)
        if d >= ndim and not (len(flat_ops) == 1 and _is_monoid(computation, flat_inits[0], flat_ops[0])):
            # (JAX's type: its generic reduction's shape rule deletes the dimensions NumPy's way;
            # a monoid's reduce_sum/max/... refuses them with a ValueError, as below)
            raise IndexError(f"index {d} is out of bounds for axis 0 with size {ndim}")
        if d >= ndim:  # (JAX's words)
            x = flat_ops[0]
            raise ValueError(
                f"reduction axes {tuple(dimensions)} contains out-of-bounds indices for "
                f"{np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}]."
            )
        if not 0 <= d < ndim or d in dims:
            raise ValueError(
                f"lax.reduce: dimensions {tuple(dimensions)} must be distinct axes in [0, {ndim}) of the "
                f"operands (shape {flat_ops[0].shape})"
            )
        dims.append(d)
    dims = tuple(sorted(dims))
    if len(flat_ops) == 1:
        out = _monoid(computation, flat_inits[0], flat_ops[0], dims)
        if out is not None:
            return tu.tree_unflatten(tree, _weak_as_jax([out], flat_ops, flat_inits))
    shapes = [np.shape(i) for i in flat_inits]
    if any(shapes):  # (JAX's type and words)
        raise ValueError(f"reduce found non-scalar initial value: {shapes}")
    inits = []
    for o, i in zip(flat_ops, flat_inits):
        weak = type(i) in (bool, int, float, complex)
        i = asarray(i)
        if i.ndim != 0:
            raise TypeError(f"lax.reduce: init values must be scalars, got one of shape {i.shape}")
        if i.dtype != o.dtype:
            if not weak:
                raise TypeError(
                    f"lax.reduce: init value dtype {i.dtype} does not match its operand's dtype {o.dtype}; "
                    "cast it (e.g. np.asarray(init, x.dtype))"
                )
            i = lax_ops.convert_element_type(i, o.dtype)
        inits.append(i)
    jaxpr = trace_reducer(
        "lax.reduce", computation, tree, [o.dtype for o in flat_ops], "operands", require_scalars=True
    )
    outs = red.reduce_p.bind(*flat_ops, *inits, jaxpr=jaxpr, dimensions=dims)
    return tu.tree_unflatten(tree, _weak_as_jax(outs, flat_ops, flat_inits))


def _weak_as_jax(outs, ops, inits):
    """JAX's weak-type rule of ``lax.reduce``: a result is weak when its operand and its init value
    both are (a Python scalar init is), whichever reduction computed it."""
    fixed = []
    for out, o, i in zip(outs, ops, inits):
        weak = o.weak_type and (type(i) in (bool, int, float, complex) or asarray(i).weak_type)
        fixed.append(
            out if out.weak_type == weak else ew.convert_element_type(out, out.dtype, weak_type=weak)
        )
    return fixed
