"""Sharding rules: the output sharding of each primitive on the explicit axes of a mesh.

Layer: primitives (a helper module). Imports only the funcgrad kernel; ``install()`` reads the
catalog's family modules, which the package has imported by then.

JAX 0.10's sharding in types (NOTE: [sharding in types] in kernel/ir.py): when an operand is
sharded over explicit mesh axes, every equation's results are typed with a sharding too, given by
the primitive's ``sharding_rule`` slot. Here a *spec* is normalized: one tuple of mesh axis names
per dimension (``(("x",), ())`` is ``P('x', None)``); a rule gets the operands' and results'
avals (their shardings read duck-typed: ``.spec``, ``.mesh.shape``) and the primitive's params,
and returns one spec per result, or raises ``ShardingTypeError`` where JAX asks for
``out_sharding=`` because the result's sharding would be ambiguous.

One general mechanism, with defaults by kind of primitive instead of a rule per name:

- elementwise (every primitive of the ``elementwise``, ``complex``, ``special`` and ``bitcast``
  families): dimension by dimension the operands' shardings must agree (a dimension of size 1
  left whole does not count), as JAX's ``broadcasting_sharding_rule``;
- reductions (an ``axes`` param): the reduced dimensions leave the spec;
- structure: ``broadcast_in_dim``, ``reshape`` (split or merge of one dimension, unit
  dimensions: its rules are in ``_reshape_sharding``), ``transpose``, ``squeeze``,
  ``concatenate``; ``slice``/``dynamic_slice``/``pad`` keep a dimension's sharding while it
  still splits evenly; ``cumsum``-like scans and ``sort`` need their dimension whole;
- ``dot_general``: batch dimensions, then the free dimensions of each side; sharded contracting
  dimensions on both sides are ambiguous (JAX's error, asking for ``out_sharding=``);
- ``gather``/``scatter``: JAX's rules -- the dimensions indexed into and the indices' query
  dimensions must be whole, batch dimensions must agree; else ambiguous (JAX's error asking for
  ``.at[...].get(out_sharding=)``); ``dynamic_update_slice`` needs its update sharded as its
  operand; ``scan``'s stacked outputs have a whole leading dimension;
- any other primitive (``rev``, control flow, calls, ...): a result its abstract evaluation
  typed (a call's body was traced with types) keeps that type; else a result shaped as its first
  operand keeps that operand's sharding; else it is replicated (the values are right; the
  partitioner gathers).

A result whose spec names a mesh axis twice is JAX's "illegally sharded result" error (its text
as JAX's: the fix is to reshard an operand, or give the result's ``out_sharding=``).
"""

from __future__ import annotations

import contextlib
import contextvars
import math

from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

__all__ = [
    "ShardingTypeError",
    "broadcasting",
    "check_whole",
    "contraction_out",
    "dot_general_rule",
    "install",
    "out_specs",
    "reduction",
    "spec_of",
]


class ShardingTypeError(Exception):
    """An operation whose result sharding is ill-defined on explicit mesh axes (JAX's
    ``ShardingTypeError``): reshard an operand, or give the result's ``out_sharding=``."""


def _entry(p) -> tuple:
    if p is None:
        return ()
    if isinstance(p, tuple):
        return tuple(p)
    if isinstance(p, str):
        return (p,)
    return ()  # PartitionSpec.UNCONSTRAINED


def spec_of(aval: ShapedArray) -> tuple:
    """The normalized spec of ``aval`` (all ``()`` when it has no sharding)."""
    s = aval._sharding
    if s is None:
        return ((),) * aval.ndim
    spec = tuple(_entry(p) for p in s.spec)
    return spec + ((),) * (aval.ndim - len(spec))


def _show(spec) -> str:
    return str(tuple(None if not d else (d[0] if len(d) == 1 else d) for d in spec))


def _mesh_shape(avals) -> dict:
    for a in avals:
        if a._sharding is not None:
            return dict(a._sharding.mesh.shape)
    return {}


# ----------------------------------------------------------------------------------------------
# Rules


def broadcasting(name: str):
    """Elementwise operands of equal rank (rank-0 ones do not count): per dimension, the
    sharding they agree on; a whole dimension of size 1 defers to the others."""

    def rule(avals_in, avals_out, **params):
        ranked = [a for a in avals_in if a.ndim]
        if not ranked:
            return [((),) * a.ndim for a in avals_out]
        specs = [spec_of(a) for a in ranked]
        out = []
        for d in range(ranked[0].ndim):
            chosen = ()
            for s in specs:
                if d >= len(s) or not s[d]:
                    continue
                if chosen and s[d] != chosen:
                    shown = ", ".join(_show(s) for s in specs)
                    raise ShardingTypeError(
                        f"{name} got incompatible shardings for broadcasting: {shown}. Reshard one "
                        "operand to the other's sharding first (funcgrad.sharding.reshard)."
                    )
                chosen = s[d]
            out.append(chosen)
        return [tuple(out)[: a.ndim] if a.ndim == len(out) else ((),) * a.ndim for a in avals_out]

    return rule


def _select_n(avals_in, avals_out, **params):
    """As an elementwise operation's, with JAX's words where two cases are sharded differently
    along a dimension (JAX requires the cases' shardings to be equal; a case replicated where
    another is split is typed as the split one here)."""
    try:
        return _select_broadcasting(avals_in, avals_out, **params)
    except ShardingTypeError:
        cases = ", ".join(str(a._sharding) for a in avals_in[1:] if a._sharding is not None)
        raise ShardingTypeError(f"select cases must have the same shardings, got [{cases}].") from None


_select_broadcasting = broadcasting("select_n")


def reduction(avals_in, avals_out, *, axes=(), **params):
    """The reduced dimensions leave the operand's spec."""
    spec = spec_of(avals_in[0])
    kept = tuple(p for d, p in enumerate(spec) if d not in set(axes))
    return [kept if len(kept) == a.ndim else ((),) * a.ndim for a in avals_out]


def _same_as_operand(avals_in, avals_out, **params):
    """A result shaped as the first operand keeps its sharding; others are replicated."""
    first = avals_in[0] if avals_in else None
    out = []
    for a in avals_out:
        if first is not None and a.shape == first.shape:
            out.append(spec_of(first))
        else:
            out.append(((),) * a.ndim)
    return out


def _broadcast_in_dim(avals_in, avals_out, *, shape, broadcast_dimensions, **params):
    x = avals_in[0]
    spec = spec_of(x)
    out = [()] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] == shape[d]:
            out[d] = spec[i]
    return [tuple(out)]


def _transpose(avals_in, avals_out, *, permutation, **params):
    spec = spec_of(avals_in[0])
    return [tuple(spec[p] for p in permutation)]


def _squeeze(avals_in, avals_out, *, dimensions, **params):
    spec = spec_of(avals_in[0])
    drop = {d % len(spec) for d in dimensions}
    return [tuple(p for d, p in enumerate(spec) if d not in drop)]


def _concatenate(avals_in, avals_out, *, dimension, **params):
    # As JAX's rule: the operands' shardings are equal, and the result has theirs, along the
    # concatenated dimension too (the partitioner moves the blocks). An operand unsharded
    # everywhere defers to the others (vmap broadcasts an unbatched operand without its batch
    # dimension's axis where JAX's concatenate batch rule gives it one; jnp.stack is its own
    # primitive, primitives/stacking.py, whose rule is JAX's strict one).
    specs = [spec_of(a) for a in avals_in if a._sharding is not None]
    specs = [s for s in specs if any(s)] or specs
    if any(s != specs[0] for s in specs[1:]):
        shown = ", ".join(_show(s) for s in specs)
        raise ShardingTypeError(
            f"All operands should have the same sharding. Got shardings {shown}. Reshard them to one "
            "sharding first (funcgrad.sharding.reshard)."
        )
    return [specs[0] if specs else ((),) * avals_out[0].ndim]


_contraction_out: contextvars.ContextVar = contextvars.ContextVar("contraction_out", default=None)


@contextlib.contextmanager
def contraction_out(spec):
    """Within the block, a ``dot_general`` or ``reshape`` result is typed ``spec`` (one entry per
    dimension: a name, a tuple of names, ``None`` or ``()``) instead of by its rule:
    ``out_sharding=`` of ``dot``/``einsum``/``matmul``/``reshape``, and the transpose of a product,
    whose cotangent has its primal operand's type (as in JAX).

    >>> with contraction_out((("x",), ())):
    ...     _overridden(2)
    (('x',), ())
    """
    token = _contraction_out.set(None if spec is None else tuple(_entry(d) for d in spec))
    try:
        yield
    finally:
        _contraction_out.reset(token)


def _overridden(ndim: int):
    wanted = _contraction_out.get()
    if wanted is None or len(wanted) > ndim:
        return None
    return wanted + ((),) * (ndim - len(wanted))


# The mesh axes ``vmap(..., spmd_axis_name=)`` names (set by the sharding family's
# ``spmd_axis_name``); () when none.
_spmd_axes: contextvars.ContextVar = contextvars.ContextVar("spmd_axes", default=())
# The explicit mesh axes the mapped dimension of the vmap being traced is split over (JAX's
# ``AxisData.explicit_mesh_axis``: its inputs' mapped dimensions' sharding); () when none.
_explicit_axes: contextvars.ContextVar = contextvars.ContextVar("explicit_axes", default=())


def vmapped_axes() -> tuple:
    """The mesh axes the mapped dimension of the ``vmap`` being traced is split over
    (``spmd_axis_name``, else its inputs' explicit axes; JAX's ``get_sharding_for_vmap``)."""
    return tuple(_spmd_axes.get()) or tuple(_explicit_axes.get())


def dot_general_rule(avals_in, avals_out, *, dimension_numbers, out_sharding=None, **params):
    """Batch dimensions (which must agree), then the free dimensions of the lhs and of the rhs;
    contracting dimensions sharded on both sides are ambiguous (JAX's error). A result given
    its sharding (``out_sharding=``, a param of the equation) is typed so."""
    if out_sharding is not None and len(out_sharding) == avals_out[0].ndim:
        return [tuple(out_sharding)]
    wanted = _overridden(avals_out[0].ndim)
    if wanted is not None:
        return [wanted]
    lhs, rhs = avals_in[:2]
    ls, rs = spec_of(lhs), spec_of(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
    lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
    for a, b in zip(lbs, rbs):
        if a and b and a != b:
            raise ShardingTypeError(
                "dot_general requires lhs batch dimensions and rhs batch dimensions to have the consistent "
                f"sharding, got {_show(lbs)} and {_show(rbs)}."
            )
    for a, b in zip(lcs, rcs):
        if a and b and a != b:
            raise ShardingTypeError(
                "dot_general requires contracting dimensions to have consistent sharding, got "
                f"{_show(lcs)} and {_show(rcs)}."
            )
        if a and b:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should be sharded. "
                "Please specify the output sharding via the `out_sharding` parameter. Got "
                f"lhs_contracting_spec={_show(lcs)} and rhs_contracting_spec={_show(rcs)}"
            )
    batch = tuple(a or b for a, b in zip(lbs, rbs))
    lfree = tuple(p for d, p in enumerate(ls) if d not in set(lc) | set(lb))
    rfree = tuple(p for d, p in enumerate(rs) if d not in set(rc) | set(rb))
    out = batch + lfree + rfree
    used = [n for p in out for n in p]
    if len(used) != len(set(used)):
        shown = ", ".join(a.str_short() for a in (lhs, rhs))
        o = avals_out[0]
        bad = ",".join(
            f"{n}@{p[0]}" if len(p) == 1 else (f"{n}@({','.join(p)})" if p else str(n))
            for n, p in zip(o.shape, out)
        )
        raise ShardingTypeError(
            f"dot_general operation with inputs: {shown} produces an illegally sharded result: "
            f"{o.str_short().split('[')[0]}[{bad}]"
        )
    return [out]


def check_whole(aval, dims, message: str) -> None:
    """JAX's checks of operations that need some dimensions whole on explicit mesh axes (a
    ``tile`` that repeats them, ``unstack``'s axis, a flattening ``cumsum``): ``message`` (JAX's
    words, formatted with ``dim`` and ``type``) as a ShardingTypeError where one is split.

    >>> check_whole(ShapedArray((2,), "float32"), (0,), "dim {dim}")
    """
    spec = spec_of(aval)
    for d in dims:
        if spec[d]:
            raise ShardingTypeError(message.format(dim=d, type=aval.str_short()))


def _k(sizes, names) -> int:
    return math.prod(sizes[n] for n in names)


def cut_spec(x: ShapedArray, out_shape, what: str) -> tuple:
    """The spec of ``x`` cut to ``out_shape`` (``slice``, ``dynamic_slice``, ``pad``, a window's
    result, a piece of ``lax.split``): a dimension keeps its axes when its new size still splits
    evenly over them; otherwise JAX has no answer and says so, in its words (JAX's one helper for
    all of them, ``_get_sharding_for_varying_out_shape``), with the way out after them.

    >>> cut_spec(ShapedArray((4, 2), "float32"), (3, 2), "slicing")
    ((), ())
    """
    spec, sizes = spec_of(x), _mesh_shape([x])
    new = []
    for d, (n_in, n_out, names) in enumerate(zip(x.shape, out_shape, spec)):
        if n_in == n_out or not names:
            new.append(names if n_in == n_out else ())
        elif n_out % _k(sizes, names) == 0:
            new.append(names)
        else:
            raise ShardingTypeError(
                f"{what} on sharded dims where out dim ({n_out}) is not divisible by mesh axes "
                f"({_k(sizes, names)}) with spec ({names[0] if len(names) == 1 else names}) is not "
                f"implemented. Got input type={x.str_short()} and output shape={tuple(out_shape)}. "
                f"Reshard the operand so that dimension {d} is whole first (funcgrad.sharding.reshard)."
            )
    return tuple(new)


def _cut(what: str):
    """The sharding rule of a primitive whose result is its operand cut (``cut_spec``)."""
    return lambda avals_in, avals_out, **params: [cut_spec(avals_in[0], avals_out[0].shape, what)]


_ALONG = {
    "sort": "Arguments to sort must be unsharded over the sorting dimension.",
    None: "Input should be unsharded over the axis being reduced.",
}


def _gather(avals_in, avals_out, *, dimension_numbers, slice_sizes, **params):
    """JAX's gather rule: the operand's dimensions that are indexed into must be whole (or taken
    whole by the slice), the indices' dimensions other than batch ones must be whole, and paired
    batch dimensions must agree; then each window dimension of the result keeps its operand
    dimension's sharding and each other dimension its indices dimension's. Else ambiguous."""
    operand, indices = avals_in[:2]
    out = avals_out[0]
    ospec, ispec = spec_of(operand), list(spec_of(indices))
    if not any(ospec) and not any(ispec):
        return [((),) * out.ndim]
    dn = dimension_numbers
    obatch, ibatch = tuple(dn.operand_batching_dims), tuple(dn.start_indices_batching_dims)
    resolvable = (
        all(slice_sizes[d] == operand.shape[d] or not ospec[d] for d in dn.start_index_map)
        and all(not ispec[i] or not ospec[o] or ispec[i] == ospec[o] for o, i in zip(obatch, ibatch))
        and all(not p for i, p in enumerate(ispec) if i not in ibatch)
    )
    if not resolvable:
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather indexing as "
            "out sharding could not be resolved unambiguously (or would require collectives on inputs). "
            f"Got operand=ShapedArray({operand}), indices=ShapedArray({indices})"
        )
    for o, i in zip(obatch, ibatch):
        ispec[i] = ispec[i] or ospec[o]
    window = iter(d for d in range(operand.ndim) if d not in set(dn.collapsed_slice_dims) | set(obatch))
    batch = iter(ispec)
    offset = set(dn.offset_dims)
    return [tuple(ospec[next(window)] if k in offset else next(batch) for k in range(out.ndim))]


def _scatter(avals_in, avals_out, *, dimension_numbers, **params):
    """JAX's scatter rule (the gather rule read backwards): batch dimensions of the operand,
    indices and updates must agree; window dimensions of the updates must match the operand's
    (or both be whole); the dimensions the updates are inserted along, the query dimensions of the
    indices and updates, and the index vector must be whole. The result keeps the operand's
    sharding, completed by the indices' and updates'. Else ambiguous."""
    operand, indices, updates = avals_in[:3]
    ospec, ispec, uspec = spec_of(operand), spec_of(indices), spec_of(updates)
    rest = [((),) * a.ndim for a in avals_out[1:]]
    if not any(ospec) and not any(ispec) and not any(uspec):
        return [ospec] + rest
    dn = dimension_numbers
    obatch, ibatch = tuple(dn.operand_batching_dims), tuple(dn.scatter_indices_batching_dims)
    uwin, inserted = tuple(dn.update_window_dims), set(dn.inserted_window_dims)
    ivd = indices.ndim - 1
    query = list(range(ivd))  # the updates' dimensions: the indices' query dimensions + windows
    for w in uwin:
        query.insert(w, None)
    ubatch = tuple(query.index(i) for i in ibatch)
    owin = [d for d in range(operand.ndim) if d not in inserted and d not in obatch]

    def agree(*ps):
        return len({p for p in ps if p}) <= 1

    resolvable = (
        all(agree(ospec[o], ispec[i], uspec[u]) for o, i, u in zip(obatch, ibatch, ubatch))
        and all(
            (updates.shape[u] == operand.shape[o] and uspec[u] == ospec[o]) or (not uspec[u] and not ospec[o])
            for u, o in zip(uwin, owin)
        )
        and all(not ospec[d] for d in inserted)
        and all(not p for u, p in enumerate(uspec) if u not in ubatch and u not in uwin)
        and all(not p for i, p in enumerate(ispec[:ivd]) if i not in ibatch)
        and not ispec[ivd]
    )
    if not resolvable:
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for the scatter "
            "update as out sharding could not be resolved unambiguously (or would require collectives on "
            f"inputs). Got operand=ShapedArray({operand}), indices=ShapedArray({indices}), "
            f"updates=ShapedArray({updates})"
        )
    out = list(ospec)
    for o, i, u in zip(obatch, ibatch, ubatch):
        out[o] = out[o] or ispec[i] or uspec[u]
    for u, o in zip(uwin, owin):
        out[o] = out[o] or uspec[u]
    return [tuple(out)] + rest


def _conv(avals_in, avals_out, *, dimension_numbers, **params):
    """JAX's rule: with a replicated kernel and the lhs feature dimension whole, the result is
    sharded as the lhs is, dimension by dimension (its sizes still splitting evenly); else
    ambiguous. (``out_sharding=`` types the result directly.)"""
    wanted = _overridden(avals_out[0].ndim)
    if wanted is not None:
        return [wanted]
    lhs, rhs = avals_in[:2]
    if any(spec_of(rhs)) or spec_of(lhs)[dimension_numbers.lhs_spec[1]]:
        raise ShardingTypeError(
            "Please specify the output sharding via `out_sharding` parameter of `conv_general_dilated` "
            f"(got lhs={lhs.str_short()}, rhs={rhs.str_short()}; or reshard the kernel to P() and the "
            "input's feature dimension whole)"
        )
    return _cut("conv_general_dilated")(avals_in[:1], avals_out)


def _dynamic_update_slice(avals_in, avals_out, **params):
    """The update must be sharded as the operand is (JAX's rule); the result is too."""
    x, u = avals_in[:2]
    if spec_of(x) != spec_of(u) and (any(spec_of(x)) or any(spec_of(u))):
        raise ShardingTypeError(
            "dynamic_update_slice operand sharding must be equal to update sharding, got operand sharding "
            f"{x.str_short()} and update sharding {u.str_short()}. Reshard the update to the operand's "
            "sharding first (funcgrad.sharding.reshard)."
        )
    return [spec_of(x)]


def _scan(avals_in, avals_out, *, jaxpr, num_carry, **params):
    """The body was traced with types: the carries are typed as the body returns them, the
    stacked outputs as the body's per-step outputs with a whole leading (stacking) dimension."""
    outs = jaxpr.out_avals
    return [spec_of(o) for o in outs[:num_carry]] + [((),) + spec_of(o) for o in outs[num_carry:]]


def _along_unsharded(what: str, param: str):
    """``cumsum``-like scans and ``sort``: the dimension they run along must be whole (JAX's
    rule); each result has its operand's type."""

    def rule(avals_in, avals_out, **params):
        axis = params[param]
        for a in avals_in:
            spec = spec_of(a)
            if a.ndim and spec[axis % a.ndim]:
                raise ShardingTypeError(
                    f"{_ALONG.get(what, _ALONG[None])} Got input type={a.str_short()} and axis={axis}. "
                    "Reshard that axis whole first (funcgrad.sharding.reshard)."
                )
        if what != "sort":
            return [spec_of(a) for a in avals_in[: len(avals_out)]]
        # A sort's operands are sorted together: each result is split as the operands are, a
        # dimension taking the first operand's axes that has any (argsort's iota is created
        # replicated here, where JAX creates it with the sorted array's sharding).
        specs = [spec_of(a) for a in avals_in]
        merged = tuple(next((p[d] for p in specs if p[d]), ()) for d in range(avals_in[0].ndim))
        return [merged] * len(avals_out)

    return rule


def _from_params(avals_in, avals_out, *, spec, **params):
    """``reshard``/``sharding_constraint``: the spec its params name (its explicit axes are kept
    by ``out_specs``'s caller)."""
    return [tuple(spec)]


# ----------------------------------------------------------------------------------------------
# The table


def out_specs(primitive, avals_in, avals_out, params) -> list:
    """One normalized spec per result of ``primitive``: its rule, or the default (a result whose
    abstract evaluation typed it keeps that type -- call primitives type theirs by tracing their
    body -- else it is typed as its first operand when shaped alike, else replicated)."""
    rule = primitive.sharding_rule
    if rule is not None:
        out = rule(avals_in, avals_out, **params)
    else:
        out = [
            spec_of(a) if a._sharding is not None else same
            for a, same in zip(avals_out, _same_as_operand(avals_in, avals_out))
        ]
    for a, spec in zip(avals_out, out):
        used = [n for d in spec for n in d]
        if len(used) != len(set(used)):
            shown = ", ".join(x.str_short() for x in avals_in)
            bad = ",".join(
                f"{n}@{d[0]}" if len(d) == 1 else (f"{n}@({','.join(d)})" if d else str(n))
                for n, d in zip(a.shape, spec)
            )
            raise ShardingTypeError(
                f"{primitive.name} operation with inputs: {shown} produces an illegally sharded result: "
                f"{a.str_short().split('[')[0]}[{bad}]"
            )
    return out


def _all_gather(avals_in, avals_out, *, axis, tiled, **params):
    """Inside a partially manual body: the gathered dimension is whole (a new one when untiled),
    the others keep their split over the axes left automatic (JAX's ``f32[8,4@y]``)."""
    spec = list(spec_of(avals_in[0]))
    if tiled:
        spec[axis] = ()
    else:
        spec.insert(axis, ())
    return [tuple(spec)]


def _psum_scatter(avals_in, avals_out, *, scatter_dimension, tiled, **params):
    spec = list(spec_of(avals_in[0]))
    if tiled:
        spec[scatter_dimension] = ()
    else:
        del spec[scatter_dimension]
    return [tuple(spec)]


def install(families) -> None:
    """Give the catalog's primitives their sharding rules, by kind: every primitive of the
    elementwise families broadcasts; every reduction drops its reduced axes; the structural,
    contraction and resharding primitives get the rules above. Keyed by the primitive objects."""

    def prims(*names):
        for name in names:
            m = families.get(name)
            if m is not None:
                yield from (p for p in vars(m).values() if isinstance(p, Primitive))

    for p in prims("elementwise", "complex", "special", "bitcast"):
        if p.sharding_rule is None and not p.multiple_results:
            p.def_sharding_rule(broadcasting(p.name))
    for p in prims("reductions"):
        if p.sharding_rule is None and not p.traits.jaxpr_params:
            p.def_sharding_rule(reduction)
    st = families["structure"]
    st.broadcast_in_dim_p.def_sharding_rule(_broadcast_in_dim)
    st.transpose_p.def_sharding_rule(_transpose)
    st.squeeze_p.def_sharding_rule(_squeeze)
    st.concatenate_p.def_sharding_rule(_concatenate)
    st.slice_p.def_sharding_rule(_cut("slicing"))
    st.pad_p.def_sharding_rule(_cut("padding"))
    families["indexing"].dynamic_slice_p.def_sharding_rule(_cut("dynamic_slice"))
    wd = families["windowed"]
    for p in (wd.reduce_window_sum_p, wd.reduce_window_max_p, wd.reduce_window_min_p):
        p.def_sharding_rule(_cut("reduce_window"))  # (JAX's: a window's result as a slice's)
    srt = families["sorting"]
    for p in (srt.cumsum_p, srt.cumprod_p, srt.cummax_p, srt.cummin_p):
        p.def_sharding_rule(_along_unsharded(p.name, "axis"))
    srt.sort_p.def_sharding_rule(_along_unsharded("sort", "dimension"))
    for p in prims("scatter", "indexing", "gather"):
        if p.sharding_rule is None and p.name.startswith("scatter"):
            p.def_sharding_rule(_scatter)
        elif p.sharding_rule is None and p.name == "gather":
            p.def_sharding_rule(_gather)
    families["indexing"].dynamic_update_slice_p.def_sharding_rule(_dynamic_update_slice)
    families["scan"].scan_p.def_sharding_rule(_scan)
    families["conv"].conv_general_dilated_p.def_sharding_rule(_conv)
    families["dot"].dot_general_p.def_sharding_rule(dot_general_rule)
    families["collectives"].all_gather_p.def_sharding_rule(_all_gather)
    families["collectives"].psum_scatter_p.def_sharding_rule(_psum_scatter)
    families["sharding"].sharding_constraint_p.def_sharding_rule(_from_params, from_params=True)
    ar = families["elementwise"]
    ar.select_n_p.def_sharding_rule(_select_n)
