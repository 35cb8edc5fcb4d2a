"""Collectives over named axes: psum, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute,
axis_index.

Layer: primitives. Imports the funcgrad kernel (``batching`` for the axis environment), numpy and the
sibling families ``elementwise``, ``reductions`` and ``structure``.

A collective computes across the instances of a named axis (NOTE: [named axes] in
funcgrad/kernel/batching.py). It has two meanings, one per way of binding the axis:

- under ``vmap(f, axis_name=n)`` the instances are the lanes of the batch: the trait
  ``collective_batch`` (``_*_axis_rule`` here, NOTE: [primitive traits]) computes the collective with
  ordinary primitives over the batch dimension (psum is a ``reduce_sum`` over it, all_gather moves it, ...);
- under ``shard_map``/``pmap`` the instances are devices: the equation stays in the staged body
  and lowers to a StableHLO collective over the mesh axis (xla_bridge/rules/collectives.py).

Each collective names its axes in the ``axis_name`` parameter (a tuple of names); under a vmap
whose axis is one of several names, the rule handles that axis and binds the collective again
with the remaining names, for the enclosing vmaps (or the mesh) to handle.

# NOTE: [transposes of collectives]
# As in JAX (for vmap and pmap), the transposes treat the instances as a stack of values: psum is
# the all-ones matrix over the instances, so psum's transpose is psum; all_gather and psum_scatter
# transpose into each other; all_to_all into the all_to_all that swaps its split and concat axes;
# ppermute into the inverse permutation. ``grad`` of a function that maps instances to instances
# (``grad(lambda x: vmap(f, axis_name='i')(x).sum())``, ``grad`` of a shard_map) is then the
# gradient of the whole computation. shard_map's own transpose (primitives/sharding.py) accounts
# for values replicated over an axis, which is where JAX's ``pvary`` (psum's transpose inside a
# checked shard_map) would otherwise be needed.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import (
    JET_OF_SELECTION,
    aval_of,
    const_like,
    front_batch,
    no_derivative,
    to_front,
)

from funcgrad.kernel import batching
from funcgrad.kernel.ad import defjvp_zero, deflinear, linear_taylor
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray

__all__ = [
    "groups_param",
    "all_gather",
    "all_gather_invariant_p",
    "all_gather_reduced_p",
    "pcast_p",
    "all_gather_p",
    "all_to_all",
    "all_to_all_p",
    "axis_index",
    "axis_index_p",
    "pmax_p",
    "pmin_p",
    "ppermute",
    "ppermute_p",
    "psum",
    "psum_p",
    "psum_scatter",
    "psum_scatter_p",
]


def _names(axis_name) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _size(axis_name, what, groups=None, even=True) -> int:
    n = batching.axis_size(tuple(axis_name), what)
    if groups is None:
        return n
    # NOTE: [axis_index_groups]: the instances of the axis split into groups of one size; the
    # collective runs within each group (under shard_map and pmap; vmap refuses them, as JAX).
    flat = sorted(i for g in groups for i in g)
    if flat != list(range(n)):
        raise ValueError(
            f"{what}: axis_index_groups {list(map(list, groups))} must cover the indices of the axis "
            f"{axis_name} (size {n}) exactly once"
        )
    if even and len({len(g) for g in groups}) != 1:  # (reductions take groups of several sizes, as JAX's)
        raise ValueError(
            f"{what}: all axis_index_groups must have the same size, got {list(map(list, groups))}"
        )
    return len(groups[0])


def _no_groups_under_vmap(groups, what):
    if groups is not None:
        raise NotImplementedError(
            f"{what}: axis_index_groups is not supported under vmap (as in JAX); use it inside shard_map "
            "or pmap, or split the axis into two named axes and reduce over one of them"
        )


def _unbound_impl(name):
    def impl(*args, axis_name, **params):  # (axis_index_groups, if any, is among params)
        # Reached only when no vmap bound the axis (shard_map and pmap bodies are compiled).
        for n in axis_name:
            batching.axis_size(n, name)
        raise batching.unbound_axis_error(axis_name[0], name)

    return impl


def _rest(axis_name, name) -> tuple:
    return tuple(n for n in axis_name if n != name)


def _single(axis_name, name, what):
    if len(axis_name) != 1:
        raise NotImplementedError(
            f"{what} over several axis names {axis_name} under vmap: apply it to one name at a time "
            "(shard_map and pmap accept several names)"
        )


# ----------------------------------------------------------------------------------------------
# psum / pmax / pmin


def _same_aval(what):
    def abstract_eval(x, *, axis_name, axis_index_groups=None):
        _size(axis_name, what, axis_index_groups, even=False)
        return x

    return abstract_eval


def _reduce_axis_rule(primitive, reduce, unbatched):
    def rule(axis_size, name, vals, dims, *, axis_name, axis_index_groups=None):
        _no_groups_under_vmap(axis_index_groups, primitive.name)
        (x,), (d,) = vals, dims
        y = unbatched(x, axis_size) if d is None else reduce(x, (d,))
        rest = _rest(axis_name, name)
        if rest:
            y = primitive.bind(y, axis_name=rest)
        return y, None

    return rule


def _elementwise_batch(primitive):
    def rule(axis_size, vals, dims, **params):
        return primitive.bind(vals[0], **params), dims[0]

    return rule


def _times(x, n):
    aval = aval_of(x)
    if aval.dtype == np.bool_:
        return x  # any lane true: psum of booleans is their logical or (as XLA's add on i1)
    # (JAX's lax._const(x, n) * x: a weak scalar of the default type stays weak, psum(0.5, name))
    return ew.mul(x, const_like(x, n))


psum_p = Primitive("psum")
psum_p.def_traits(may_produce_nan=True)
psum_p.def_impl(_unbound_impl("psum"))
psum_p.def_abstract_eval(_same_aval("psum"))
deflinear(psum_p, lambda ct, x, **params: [psum_p.bind(ct, **params)])
psum_p.def_batch(_elementwise_batch(psum_p))
psum_p.def_traits(
    collective_batch=_reduce_axis_rule(
        psum_p,
        lambda x, axes: (
            red.reduce_or_p.bind(x, axes=axes) if aval_of(x).dtype == np.bool_ else red.reduce_sum(x, axes)
        ),
        _times,
    )
)


def _undifferentiated(name, reduce):
    """``reduce`` as pmax/pmin's batched form: JAX binds pmax/pmin again there (with positional
    axes), so differentiating a vmapped pmax raises as an unbatched one does; here the reduction is
    a custom_jvp whose rule raises JAX's error (a zero tangent never runs it)."""

    def rule(axis):
        def f(x):
            return reduce(x, (axis,))

        f = custom_jvp(f)

        @f.defjvp
        def _(primals, tangents):
            raise NotImplementedError(f"Differentiation rule for '{name}' not implemented")

        return f

    return lambda x, axes: rule(axes[0])(x)


pmax_p = Primitive("pmax")
pmax_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
pmax_p.def_impl(_unbound_impl("pmax"))
pmax_p.def_abstract_eval(_same_aval("pmax"))
no_derivative(pmax_p)  # (JAX defines none, under vmap too: _undifferentiated)
pmax_p.def_batch(_elementwise_batch(pmax_p))
pmax_p.def_traits(
    collective_batch=_reduce_axis_rule(pmax_p, _undifferentiated("pmax", red.reduce_max), lambda x, n: x)
)

pmin_p = Primitive("pmin")
pmin_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
pmin_p.def_impl(_unbound_impl("pmin"))
pmin_p.def_abstract_eval(_same_aval("pmin"))
no_derivative(pmin_p)
pmin_p.def_batch(_elementwise_batch(pmin_p))
pmin_p.def_traits(
    collective_batch=_reduce_axis_rule(pmin_p, _undifferentiated("pmin", red.reduce_min), lambda x, n: x)
)


def groups_param(axis_index_groups) -> dict:
    """The ``axis_index_groups`` parameter of a collective's equation: absent when ``None`` (so
    jaxprs without groups read as before), else a tuple of tuples of ints."""
    if axis_index_groups is None:
        return {}
    return {"axis_index_groups": tuple(tuple(int(i) for i in g) for g in axis_index_groups)}


def psum(x, axis_name, axis_index_groups=None):
    """Sum ``x`` over the instances of the named axis (or axes) ``axis_name``."""
    return psum_p.bind(x, axis_name=_names(axis_name), **groups_param(axis_index_groups))


# ----------------------------------------------------------------------------------------------
# all_gather / psum_scatter


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, axis_index_groups=None):
    n = _size(axis_name, "all_gather", axis_index_groups)
    if tiled:
        if not 0 <= axis < x.ndim:
            raise ValueError(f"all_gather: axis={axis} out of range for {x.str_short()} (tiled=True)")
        shape = list(x.shape)
        shape[axis] *= n
    else:
        if not 0 <= axis <= x.ndim:
            raise ValueError(f"all_gather: axis={axis} out of range for {x.str_short()}")
        shape = [*x.shape[:axis], n, *x.shape[axis:]]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _merge(x, axis):
    """Merge dimensions ``axis`` and ``axis + 1`` of ``x`` (row-major)."""
    shape = aval_of(x).shape
    return st.reshape(x, (*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2 :]))


def _all_gather_axis_rule(axis_size, name, vals, dims, *, axis_name, axis, tiled, axis_index_groups=None):
    _no_groups_under_vmap(axis_index_groups, "all_gather")
    (x,), (d,) = vals, dims
    y = hooks.broadcast_batch(x, axis_size, axis) if d is None else st.moveaxis(x, d, axis)
    rest = _rest(axis_name, name)
    if rest:
        # Gather the other names (one axis, row-major over them) in front of this one, then put
        # this axis at its place among the names: the result is row-major over ``axis_name``.
        y = all_gather_p.bind(y, axis_name=rest, axis=axis, tiled=False)
        sizes = [batching.axis_size(n, "all_gather") for n in rest]
        shape = aval_of(y).shape
        y = st.reshape(y, (*shape[:axis], *sizes, *shape[axis + 1 :]))
        p = axis_name.index(name)
        y = st.moveaxis(y, axis + len(rest), axis + p)
        shape = aval_of(y).shape
        total = int(np.prod(shape[axis : axis + len(axis_name)]))
        y = st.reshape(y, (*shape[:axis], total, *shape[axis + len(axis_name) :]))
    return (_merge(y, axis) if tiled else y), None


def _gather_primitive(name: str) -> Primitive:
    """all_gather's rules under ``name`` (all_gather and all_gather_invariant share them)."""
    p = Primitive(name)
    p.def_impl(_unbound_impl(name))
    p.def_abstract_eval(_all_gather_abstract_eval)
    deflinear(p, lambda ct, x, *, axis, **params: [psum_scatter_p.bind(ct, scatter_dimension=axis, **params)])
    p.def_batch(front_batch(p, "axis"))
    p.def_traits(collective_batch=_all_gather_axis_rule)
    p.def_taylor(linear_taylor(p))  # (linear in its inexact operands)
    return p


all_gather_p = _gather_primitive("all_gather")


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Gather ``x`` from every instance of ``axis_name``: stacked along a new ``axis`` (or
    concatenated along ``axis`` with ``tiled=True``)."""
    return all_gather_p.bind(x, axis_name=_names(axis_name), axis=axis, tiled=tiled)


# JAX's all_gather_invariant (``all_gather(..., to='invarying')``): the same gathered values, but
# the result is invariant along the gathered axes in a checked shard_map body (its varying axes
# lose them: funcgrad/_vma.py), so ``out_specs=P()`` takes it without a psum. Its transpose in
# funcgrad's convention is all_gather's (NOTE: [transposes of collectives]): the body's invariant
# output's cotangent is shared among its copies, and the psum_scatter of the shares is JAX's
# slice of the cotangent at the device's index.
all_gather_invariant_p = _gather_primitive("all_gather_invariant")
# JAX's all_gather_reduced (``all_gather(..., to='reduced')``): the same gathered values, typed
# reduced along the gathered axes in a fully manual checked body (funcgrad.parallel's typing): a
# complete copy whose cotangent is a partial sum there, so its transpose's psum_scatter sums the
# devices' partial cotangents (the body's reduced output is not rescaled: NOTE: [transposes of
# collectives]).
all_gather_reduced_p = _gather_primitive("all_gather_reduced")

# JAX's pcast to "reduced" (preduced), to "unreduced" (vary_unreduced_cast) and to "varying"
# (pvary, reduced_vary_cast) in a checked shard_map body being staged: the identity on each
# device's block, a change of its type
# (funcgrad.parallel types the result reduced/unreduced along ``axis_name``). Its transpose is
# the identity in funcgrad's convention (NOTE: [transposes of collectives]): a reduced value's
# per-device cotangents are the shares the input's summed over, and an unreduced output's
# cotangent is the same on each device, as a varying value's is its own.
pcast_p = Primitive("pcast")
pcast_p.def_impl(lambda x, **params: x)
pcast_p.def_abstract_eval(lambda x, **params: x)
deflinear(pcast_p, lambda ct, x, **params: [ct])
pcast_p.def_batch(_elementwise_batch(pcast_p))


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled, axis_index_groups=None):
    n = _size(axis_name, "psum_scatter", axis_index_groups)
    s = scatter_dimension
    if not 0 <= s < x.ndim:
        raise ValueError(f"psum_scatter: scatter_dimension={s} out of range for {x.str_short()}")
    shape = list(x.shape)
    if tiled:
        if shape[s] % n:
            raise ValueError(
                f"psum_scatter: dimension {s} of {x.str_short()} must be divisible by the axis size "
                f"{n} (tiled=True)"
            )
        shape[s] //= n
    else:
        if shape[s] != n:
            raise ValueError(
                f"psum_scatter: dimension {s} of {x.str_short()} must equal the axis size {n} "
                "(tiled=False; pass tiled=True to scatter blocks)"
            )
        del shape[s]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _psum_scatter_axis_rule(
    axis_size, name, vals, dims, *, axis_name, scatter_dimension, tiled, axis_index_groups=None
):
    _no_groups_under_vmap(axis_index_groups, "psum_scatter")
    _single(axis_name, name, "psum_scatter")
    (x,), (d,) = vals, dims
    total = _times(x, axis_size) if d is None else red.reduce_sum(x, (d,))
    s = scatter_dimension
    if tiled:
        shape = aval_of(total).shape
        total = st.reshape(total, (*shape[:s], axis_size, shape[s] // axis_size, *shape[s + 1 :]))
    return total, s


psum_scatter_p = Primitive("psum_scatter")
psum_scatter_p.def_impl(_unbound_impl("psum_scatter"))
psum_scatter_p.def_abstract_eval(_psum_scatter_abstract_eval)
deflinear(
    psum_scatter_p,
    lambda ct, x, *, scatter_dimension, **params: [all_gather_p.bind(ct, axis=scatter_dimension, **params)],
)
psum_scatter_p.def_batch(front_batch(psum_scatter_p, "scatter_dimension"))
psum_scatter_p.def_traits(collective_batch=_psum_scatter_axis_rule)
psum_scatter_p.def_taylor(linear_taylor(psum_scatter_p))  # (linear in its inexact operands)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, tiled: bool = False):
    """Sum ``x`` over ``axis_name`` and give instance ``i`` the ``i``-th slice (block with
    ``tiled=True``) of the sum along ``scatter_dimension``."""
    return psum_scatter_p.bind(
        x, axis_name=_names(axis_name), scatter_dimension=scatter_dimension, tiled=tiled
    )


# ----------------------------------------------------------------------------------------------
# all_to_all


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, tiled, axis_index_groups=None):
    n = _size(axis_name, "all_to_all", axis_index_groups)
    nd = x.ndim
    if not 0 <= split_axis < nd:
        raise ValueError(f"all_to_all: split_axis={split_axis} out of range for {x.str_short()}")
    shape = list(x.shape)
    if tiled:
        if not 0 <= concat_axis < nd:
            raise ValueError(f"all_to_all: concat_axis={concat_axis} out of range for {x.str_short()}")
        if shape[split_axis] % n:
            raise ValueError(
                f"all_to_all: dimension {split_axis} of {x.str_short()} must be divisible by the axis "
                f"size {n} (tiled=True)"
            )
        shape[split_axis] //= n
        shape[concat_axis] *= n
    else:
        if not 0 <= concat_axis < nd:
            raise ValueError(f"all_to_all: concat_axis={concat_axis} out of range for {x.str_short()}")
        if shape[split_axis] != n:
            raise ValueError(
                f"all_to_all: dimension {split_axis} of {x.str_short()} must equal the axis size {n} "
                "(tiled=False)"
            )
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _all_to_all_axis_rule(
    axis_size, name, vals, dims, *, axis_name, split_axis, concat_axis, tiled, axis_index_groups=None
):
    _no_groups_under_vmap(axis_index_groups, "all_to_all")
    (x,), (d,) = vals, dims
    if len(axis_name) > 1:  # one all_to_all per name, each handled by its own vmap (this one's too)
        run = lambda v: [_all_to_all_names(v, axis_name, split_axis, concat_axis, tiled)]  # noqa: E731
        return batching.vmap_flat(run, axis_size, [d], [0], [x], name)[0], 0
    a = to_front(x, d, axis_size)  # a[j, ...]: the value of instance j
    n = axis_size
    if tiled:
        shape = aval_of(a).shape
        s = 1 + split_axis
        a = st.reshape(a, (*shape[:s], n, shape[s] // n, *shape[s + 1 :]))
        b = st.moveaxis(a, s, 0)  # b[i, j, ...]: chunk i of instance j
        c = st.moveaxis(b, 1, 1 + concat_axis)
        return _merge(c, 1 + concat_axis), 0
    b = st.moveaxis(a, 1 + split_axis, 0)
    return st.moveaxis(b, 1, 1 + concat_axis), 0


def _all_to_all_names(x, names, split_axis, concat_axis, tiled):
    """``all_to_all`` over several axis names (the group is their product, row-major) as one per
    name: the split axis is reshaped into one sub-axis per name (and the block, when ``tiled``),
    each exchanged in place over its name; the sub-axes then hold the source instance's index."""
    shape = aval_of(x).shape
    sizes = [batching.axis_size(n, "all_to_all") for n in names]
    n, k, s = int(np.prod(sizes)), len(names), split_axis
    block = (shape[s] // n,) if tiled else ()
    y = st.reshape(x, (*shape[:s], *sizes, *block, *shape[s + 1 :]))
    for i, name in enumerate(names):
        y = all_to_all_p.bind(y, axis_name=(name,), split_axis=s + i, concat_axis=s + i, tiled=False)
    ys = aval_of(y).shape
    y = st.reshape(y, (*ys[:s], n, *ys[s + k :]))  # y[..., source, (block,) ...]
    if not tiled:
        return st.moveaxis(y, s, concat_axis)
    return _merge(st.moveaxis(y, s, concat_axis), concat_axis)  # sources' blocks along concat_axis


all_to_all_p = Primitive("all_to_all")
all_to_all_p.def_impl(_unbound_impl("all_to_all"))
all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)
deflinear(
    all_to_all_p,
    lambda ct, x, *, split_axis, concat_axis, **params: [
        all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)
    ],
)
all_to_all_p.def_batch(front_batch(all_to_all_p, "split_axis", "concat_axis"))
all_to_all_p.def_traits(collective_batch=_all_to_all_axis_rule)
all_to_all_p.def_taylor(linear_taylor(all_to_all_p))  # (linear in its inexact operands)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, tiled: bool = False):
    """Instance ``i`` receives chunk ``i`` (along ``split_axis``) of every instance, stacked (or
    concatenated with ``tiled=True``) along ``concat_axis`` in instance order."""
    return all_to_all_p.bind(
        x, axis_name=_names(axis_name), split_axis=split_axis, concat_axis=concat_axis, tiled=tiled
    )


# ----------------------------------------------------------------------------------------------
# ppermute


def _ppermute_abstract_eval(x, *, axis_name, perm):
    n = _size(axis_name, "ppermute")
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    bad = [p for p in perm if not (0 <= p[0] < n and 0 <= p[1] < n)]
    if bad:
        raise ValueError(f"ppermute: perm pairs {bad} are out of range for an axis of size {n}")
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute: perm {list(perm)} repeats a source or a destination")
    return x


def _ppermute_axis_rule(axis_size, name, vals, dims, *, axis_name, perm):
    _single(axis_name, name, "ppermute")
    (x,), (d,) = vals, dims
    a = to_front(x, d, axis_size)
    src_of = dict((dst, src) for src, dst in perm)
    lane_shape = aval_of(a).shape[1:]
    zero = None
    pieces = []
    for i in range(axis_size):
        if i in src_of:
            pieces.append(st.slice_in_dim(a, src_of[i], src_of[i] + 1, axis=0))
        else:
            if zero is None:
                zero = hooks.zeros(ShapedArray((1, *lane_shape), aval_of(a).dtype))
            pieces.append(zero)
    if not pieces:  # an axis of size 0: nothing to permute
        return a, 0
    return st.concatenate(pieces, 0), 0


ppermute_p = Primitive("ppermute")
ppermute_p.def_impl(_unbound_impl("ppermute"))
ppermute_p.def_abstract_eval(_ppermute_abstract_eval)
deflinear(
    ppermute_p,
    lambda ct, x, *, axis_name, perm: [
        ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))
    ],
)
ppermute_p.def_batch(_elementwise_batch(ppermute_p))
ppermute_p.def_traits(collective_batch=_ppermute_axis_rule)
ppermute_p.def_taylor(linear_taylor(ppermute_p))  # (linear in its inexact operands)


def ppermute(x, axis_name, perm):
    """Send instance ``src``'s value to instance ``dst`` for each ``(src, dst)`` of ``perm``;
    instances no pair sends to receive zeros."""
    pairs = tuple((int(s), int(d)) for s, d in perm)
    return ppermute_p.bind(x, axis_name=_names(axis_name), perm=pairs)


# ----------------------------------------------------------------------------------------------
# axis_index


def _axis_index_abstract_eval(*, axis_name):
    _size(axis_name, "axis_index")
    return ShapedArray((), np.dtype(np.int32))


def _axis_index_axis_rule(axis_size, name, vals, dims, *, axis_name):
    sizes = [batching.axis_size(n, "axis_index") for n in axis_name]
    total = None
    for k, n in enumerate(axis_name):
        stride = int(np.prod(sizes[k + 1 :], dtype=np.int64))
        idx = st.iota(np.int32, axis_size) if n == name else axis_index_p.bind(axis_name=(n,))
        if stride != 1:
            idx = ew.mul(idx, np.int32(stride))
        total = idx if total is None else ew.add(total, idx)  # a scalar meets the iota
    return total, 0


axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(_unbound_impl("axis_index"))
axis_index_p.def_abstract_eval(_axis_index_abstract_eval)
defjvp_zero(axis_index_p)
axis_index_p.def_batch(lambda axis_size, vals, dims, **params: (axis_index_p.bind(**params), None))
axis_index_p.def_traits(collective_batch=_axis_index_axis_rule)


def axis_index(axis_name):
    """The index (int32) of this instance along ``axis_name`` (row-major over several names)."""
    return axis_index_p.bind(axis_name=_names(axis_name))
