"""The sharding rules of ``reshape`` on explicit mesh axes (JAX 0.10's ``_reshape_sharding_rule``).

Layer: primitives (a helper module beside ``_sharding_rules``, whose spec helpers it reads).
``install()`` gives the structure family's ``reshape_p`` its rule (``_reshape``, total: it types
every reshape a jaxpr holds); ``check_reshape`` is JAX's rule with its refusals, called by the
public ``lax.reshape``/``jnp.reshape`` before binding (NOTE: [reshape's refusals at the API]).

>>> check_reshape(ShapedArray((4, 2), "float32"), (8,)) is None  # (an untyped value: no type)
True
"""

from __future__ import annotations

import math

from funcgrad.primitives._sharding_rules import (
    ShardingTypeError,
    _contraction_out,
    _mesh_shape,
    _overridden,
    spec_of,
)

from funcgrad.kernel.ir import ShapedArray

__all__ = ["check_reshape", "install"]


def _reshape_error(x, new_sizes):
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of funcgrad.numpy.reshape (or reshard the operand first). Got operand "
        f"type: {x.str_short()}, new sizes: {tuple(new_sizes)}"
    )


def _split_on_one_axis(x, op_shape, new_sizes):
    """JAX's ``_split_on_one_axis``: for each dimension of ``op_shape``, its size where
    ``new_sizes`` keeps it, or the list of sizes it is split into; ``None`` where ``new_sizes``
    is not ``op_shape`` with one dimension split (trailing unit dimensions aside). A second split
    dimension is ambiguous (JAX's ``This reshape is not supported``)."""
    if len(new_sizes) <= len(op_shape):
        return None
    num_1s = 0
    while op_shape and new_sizes and op_shape[-1] == 1 and new_sizes[-1] == 1:
        num_1s += 1
        op_shape, new_sizes = op_shape[:-1], new_sizes[:-1]
    i, j, count, out = 0, 0, 0, []
    while j < len(new_sizes):
        if i >= len(op_shape):
            return None
        if op_shape[i] == new_sizes[j]:
            out.append(op_shape[i])
        else:
            count += 1
            if count > 1:
                raise _reshape_error(x, new_sizes)
            temp = [new_sizes[j]]
            next_j, next_i = j + 1, i + 1
            while math.prod(temp) != op_shape[i] or (next_j < len(new_sizes) and new_sizes[next_j] == 1):
                if math.prod(temp) > op_shape[i]:
                    return None
                if (
                    math.prod(temp) == op_shape[i]
                    and next_i < len(op_shape)
                    and next_j < len(new_sizes)
                    and new_sizes[next_j] == op_shape[next_i]
                ):
                    break
                j += 1
                if j >= len(new_sizes):
                    return None
                temp.append(new_sizes[j])
                next_j += 1
            out.append(temp)
        i += 1
        j += 1
    if i != len(op_shape):
        return None
    return out + [1] * num_1s


def _split_partitions(axes, out_sizes, sizes, x, new_sizes) -> list:
    """JAX's ``split_partitions``: the mesh ``axes`` (major first) assigned to the dimensions of
    ``out_sizes``, each axis dividing what is left of its dimension."""
    axes = iter(axes)
    parts = []
    for o in out_sizes:
        taken = []
        while o > 1:
            n = next(axes, None)
            if n is None:
                break
            o, rem = divmod(o, sizes[n])
            if rem:
                raise _reshape_error(x, new_sizes)
            taken.append(n)
        parts.append(tuple(taken))
    if next(axes, None) is not None:
        raise _reshape_error(x, new_sizes)
    return parts


def _take_axes(axes, size, sizes, x, new_sizes):
    """Assign mesh axes (major first) to a dimension of ``size``; each must divide what is left."""
    taken = []
    axes = list(axes)
    while size > 1 and axes:
        n = axes.pop(0)
        size, rem = divmod(size, sizes[n])
        if rem:
            raise _reshape_error(x, new_sizes)
        taken.append(n)
    return tuple(taken), axes


def _reshape(avals_in, avals_out, *, new_sizes, **params):
    """JAX's rules: unit dimensions come and go; one dimension split into several puts its axes on
    the leading pieces; several merged into one concatenate their axes (only the first may be
    partial); anything else is ambiguous."""
    wanted = _overridden(len(new_sizes))
    if wanted is not None:
        return [wanted]
    x = avals_in[0]
    spec = spec_of(x)
    new_sizes = tuple(new_sizes)
    if not any(spec):
        return [((),) * len(new_sizes)]
    sizes = _mesh_shape(avals_in)
    # Group the dimensions of equal products: each group is one dim -> many, or many -> one.
    out: list = []
    i = j = 0
    shape = x.shape
    while i < len(shape) or j < len(new_sizes):
        if i < len(shape) and shape[i] == 1 and (j >= len(new_sizes) or new_sizes[j] != 1 or not spec[i]):
            if j < len(new_sizes) and new_sizes[j] == 1:
                out.append(())
                j += 1
            i += 1
            continue
        if j < len(new_sizes) and new_sizes[j] == 1:
            out.append(())
            j += 1
            continue
        gi, gj = [i], [j]
        a, b = shape[i], new_sizes[j]
        i += 1
        j += 1
        while a != b:
            if a < b:
                a *= shape[i]
                gi.append(i)
                i += 1
            else:
                b *= new_sizes[j]
                gj.append(j)
                j += 1
        axes = [p for d in gi for p in spec[d]]
        if len(gi) > 1 and len(gj) > 1:
            if axes:
                raise _reshape_error(x, new_sizes)
            out.extend([()] * len(gj))
            continue
        if len(gi) > 1:
            # A merge (JAX's _merge_an_axis_sharding_rule): the merged dimension takes the group's
            # axes in order, major first, each dividing what is left; an unsharded dimension before
            # a sharded one is ambiguous. (A later dimension need not be wholly split by its axes:
            # (8, 8) over P('x', 'y') flattens to P(('x', 'y')), the type JAX gives.)
            for k, d in enumerate(gi):
                if not spec[d] and any(spec[e] for e in gi[k + 1 :]):
                    raise _reshape_error(x, new_sizes)
        pieces = []
        left = axes
        for d in gj:
            taken, left = _take_axes(left, new_sizes[d], sizes, x, new_sizes)
            pieces.append(taken)
        if left:
            raise _reshape_error(x, new_sizes)
        out.extend(pieces)
    return [tuple(out)]


# NOTE: [reshape's refusals at the API]
# JAX's reshape rule refuses an ambiguous reshape of a sharded operand (two splits, two merges, a
# regrouping) unless out_sharding types it. Here out_sharding types the staged reshape through the
# contraction_out override, not a parameter of the primitive, so a re-interpreted jaxpr re-binds it
# without one: the primitive's rule (_reshape) stays total, and the public lax.reshape and
# jnp.reshape call check_reshape, JAX's rule with its refusals, before binding.
def check_reshape(x: ShapedArray, new_sizes) -> tuple | None:
    """The result spec of JAX's reshape rule (``_reshape_sharding_rule``) for a reshape of ``x``
    to ``new_sizes`` with no ``out_sharding``, raising JAX's ``ShardingTypeError`` where that rule
    does: unit dimensions come and go; otherwise exactly one dimension is split into several (its
    axes go to the leading pieces) or several are merged into one (their axes concatenate; an
    unsharded dimension before a sharded one is ambiguous); anything else on a sharded operand --
    two splits, two merges, a regrouping -- is ambiguous. ``None`` under an ``out_sharding``.

    ``lax.reshape`` and ``jnp.reshape`` call it (NOTE: [reshape's refusals at the API]): the
    primitive's own rule (``_reshape``) stays total, because a staged reshape typed by
    ``out_sharding`` (the override, not a parameter of the primitive as in JAX) is re-bound when a
    jaxpr is re-interpreted, and internal reshapes (transposes, batching) type their results as
    JAX's pass ``out_sharding`` there.
    """
    if _contraction_out.get() is not None or x._sharding is None:
        return None
    spec = spec_of(x)
    new_sizes = tuple(new_sizes)
    if not any(spec):
        return ((),) * len(new_sizes)
    shape = tuple(x.shape)
    if [d for d in shape if d != 1] == [d for d in new_sizes if d != 1]:
        kept = iter(p for d, p in zip(shape, spec) if d != 1)
        return tuple(() if d == 1 else next(kept) for d in new_sizes)
    sizes = _mesh_shape([x])
    split = _split_on_one_axis(x, shape, new_sizes)
    if split is not None:
        out: list = []
        for o, p in zip(split, spec):
            if isinstance(o, list):
                out.extend(_split_partitions(p, o, sizes, x, new_sizes) if p else [()] * len(o))
            else:
                out.append(p)
        return tuple(out)
    merge = _split_on_one_axis(x, new_sizes, shape) if len(new_sizes) < len(shape) else None
    if merge is None:
        raise _reshape_error(x, new_sizes)
    out = []
    parts = iter(spec)
    for n, m in zip(new_sizes, merge):
        if not isinstance(m, list):
            out.append(next(parts))
            continue
        group = [next(parts) for _ in m]
        if not any(group):
            out.append(())
            continue
        flat = [a for p in group for a in (p or (None,))]
        while flat[-1] is None:
            flat.pop()
        if None in flat:
            raise _reshape_error(x, new_sizes)
        out.extend(_split_partitions(flat, [n], sizes, x, new_sizes))
    return tuple(out)


def install(families) -> None:
    """Give the structure family's ``reshape_p`` its sharding rule (keyed by the primitive)."""
    families["structure"].reshape_p.def_sharding_rule(_reshape)
