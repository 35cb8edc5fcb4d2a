"""Per-device programs: ``shard_map`` (``pmap``, built on it, is ``funcgrad._pmap``).

Layer: surface. Imports the kernel (tracing, pytrees, the axis environment), the primitive
catalog (``primitives.sharding``: the shard_map primitive), ``funcgrad._shardings`` and, a floor
below, ``funcgrad._shard_map_specs`` (the mesh, manual axes and specs resolved and checked),
``funcgrad._shard_map_body`` (the bodies being traced and their staged values' types),
``funcgrad._shard_map_eager`` (the eager route) and ``funcgrad._vma`` (the ``check_vma`` pass
and the transpose of a vjp inside a body).

``shard_map(f, mesh=, in_specs=, out_specs=)`` runs ``f`` on every device of the mesh, on that
device's block of each argument (split as its ``PartitionSpec`` says); inside, the mesh axes are
named axes, so ``lax.psum(x, "x")`` and the other collectives communicate between devices. The
outputs are assembled from the devices' blocks as ``out_specs`` says (an axis an out spec leaves
out must hold the same value on all its devices). It is one primitive (primitives/sharding.py),
so it composes with ``jit``, ``grad`` (the gradient of the global function, NOTE: [shard_map
transpose]) and ``vmap``; called eagerly it compiles and runs like a jitted function.

``check_vma=True`` (JAX's default) verifies that claim statically, as JAX does: a dataflow pass
over the body tracks along which mesh axes each value may differ between devices (inputs along
the axes their spec names, ``axis_index`` along its axes, reductions -- psum, pmax, pmin,
all_gather -- make a value equal along theirs) and refuses an output whose spec leaves out an axis
along which it may differ. The same pass gives gradients taken *inside* the body JAX's meaning
(NOTE: [gradients inside shard_map] in funcgrad/_vma.py); with ``check_vma=False`` they are
pmap's.

``pmap(f, axis_name=)`` (``funcgrad/_pmap.py``) is ``jit`` of a ``shard_map`` over a
one-dimensional mesh of the local devices, as in JAX 0.10; a body being traced is marked
(``_shard_map_body._inside_body``), so a pmap inside one is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from funcgrad import _shard_map_eager as _eager
from funcgrad import _sharding_types
from funcgrad._api_util import flatten_outputs
from funcgrad._shard_map_body import (  # (_bodies re-exported: funcgrad._pmap)
    _UR,
    _bodies,
    _inside_body,
    _manual_ur,
)
from funcgrad._shard_map_specs import (  # (_SpecsAfterTrace re-exported: funcgrad._pmap)
    Infer,
    _check_duplicates,
    _check_spec_ur,
    _check_typed_match,
    _check_unreduced,
    _concrete_of,
    _jax_rank_error,
    _normalize,
    _paths,
    _resolve_mesh,
    _specs_of_args,
    _SpecsAfterTrace,
    _unreduced_out_specs,
    out_specs_of,
)
from funcgrad._sharding_types import type_sharding
from funcgrad._shardings import (
    AxisType,
    Mesh,
    PartitionSpec,
    get_abstract_mesh,
)
from funcgrad._vma import (
    _eager_logical_transpose,
    _logical_transpose,
    _varying,
    check_control_flow_vma,
    check_matching_vma,
    check_out_vma,
    eqn_varying,
    vma_adjustment,
)
from funcgrad.kernel import ad, batching, core, ir
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.held_state import is_state
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from funcgrad.lax import parallel as _lax_parallel  # noqa: F401 - registers hooks.vary_like (full_like's pvary)
from funcgrad.numpy._core import asarray
from funcgrad.primitives import _sharding_rules as sr
from funcgrad.primitives import sharding as shp
from funcgrad.ref import new_ref

__all__ = ["shard_map", "smap", "vma_adjustment"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("shard_map", "smap")


def shard_map(
    f: Callable | None = None,
    /,
    *,
    out_specs=None,
    in_specs=Infer,
    mesh: Mesh | None = None,
    axis_names=frozenset(),
    check_vma: bool = True,
    check_rep: bool | None = None,
    _smap: bool = False,
):
    """Map ``f`` over the devices of ``mesh`` (default: the mesh set with ``set_mesh``/``use_mesh``):
    each device runs ``f`` on its blocks of the arguments (``in_specs``: a PartitionSpec per
    argument, or a pytree prefix; a ``None`` leaf passes that argument through unmapped, as a
    static Python value; left out, the specs are the arguments' own shardings, which needs
    ``Explicit`` mesh axes) and returns its blocks of the outputs (``out_specs``). Collectives over
    the manual mesh axes (``axis_names``: default all) communicate between devices; the other
    axes stay automatic. Called outside ``jit``, ``f`` runs eagerly per device, as JAX's does:
    a ``print`` inside shows each device's block.

    >>> import funcgrad, numpy as np
    >>> from funcgrad import lax
    >>> from funcgrad.sharding import AxisType, P, make_mesh
    >>> mesh = make_mesh((1,), ("x",), (AxisType.Auto,))
    >>> f = shard_map(lambda a: lax.psum(a.sum(), "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
    >>> float(funcgrad.jit(f)(np.arange(4.0)))
    6.0
    """
    if f is None:
        return functools.partial(
            shard_map,
            mesh=mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            check_vma=check_vma,
            axis_names=axis_names,
            check_rep=check_rep,
            _smap=_smap,
        )
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {type(f).__name__}")
    check = check_vma if check_rep is None else check_rep
    name = getattr(f, "__name__", type(f).__name__)
    where = f"shard_map({name})"
    if in_specs is None:
        in_specs_ = None  # every argument static (JAX: a None leaf is not mapped)
    else:
        in_specs_ = in_specs

    @functools.wraps(f)
    def mapped(*args):
        flat, in_tree = tu.tree_flatten(args)
        # Refs as arguments (JAX's): the body gets a Ref of its block of each, whose final value is
        # an extra output with the same spec, written back to the argument after the call
        refs = {i: x for i, x in enumerate(flat) if is_state(x)}
        if refs:
            flat = [x[...] if i in refs else x for i, x in enumerate(flat)]
            args = tu.tree_unflatten(in_tree, flat)
        if mesh is not None and type(out_specs) is not _SpecsAfterTrace and not _eager.in_own_program():
            # (JAX's _shmap_checks: a mesh= other than the one in scope -- in a body, the mesh
            # with its manual axes of type Manual -- is refused; pmap's own mesh is not checked)
            context = get_abstract_mesh()
            if not context.empty and mesh.abstract_mesh != context:
                raise ValueError(
                    f"The context mesh {context} should match the mesh passed to shard_map {mesh}"
                )
        m, manual = _resolve_mesh(_concrete_of(mesh, flat), axis_names, where)
        if in_specs_ is not None and in_specs_ is not Infer:
            _check_unreduced("in", m, manual, in_specs_)
        _check_unreduced("out", m, manual, out_specs)
        if in_specs_ is None:
            leaf_specs = [None] * len(flat)
        else:
            leaf_specs = _specs_of_args(in_specs_, args, m, manual, where, _smap)
        paths = _paths(args, "in_specs")
        dyn_pos = [i for i, s in enumerate(leaf_specs) if s is not None]
        dyn = [asarray(flat[i]) for i in dyn_pos]
        norm_in = []
        blocks = []
        # (under vmap(spmd_axis_name=names) the batch rule splits the mapped dimension over
        # names: the body traced here is one example's, whose gradients share nothing over them)
        spmd = frozenset(sr._spmd_axes.get()) & frozenset(manual)
        for i, x in zip(dyn_pos, dyn):
            aval = core.get_aval(x)
            s = leaf_specs[i]
            spec = _normalize(
                s,
                aval.ndim,
                m,
                manual,
                f"{where}: in_specs{paths[i]} (for argument{paths[i]})",
                functools.partial(_jax_rank_error, name, "in", paths[i], "the passed args", aval),
                duplicates=False,
                jax_key="in_specs" + ("" if isinstance(in_specs_, PartitionSpec) else paths[i]),
            )
            _check_typed_match(x, spec, m, manual, paths[i], s)
            _check_spec_ur(s, aval)
            norm_in.append(spec)
            block = shp.block_aval(aval, m, spec, f"{where}: argument{paths[i]} ({aval.str_short()}, {s!r})")
            _check_duplicates(s, spec, m)
            block = _typed_block(block, aval, manual)
            if check:
                # (NOTE: [varying axes in staged types]: the axes its spec splits it over, and
                # those an enclosing body's value varies along)
                outer = frozenset(aval.mat.varying) & _bodies.manual
                seed = (
                    frozenset(_sharding_types.drop_size_one_axes((n for dim in spec for n in dim), m)) | outer
                )
                # (and, in a fully manual body, the axes its type is unreduced/reduced over: JAX's
                # _shard_shaped_array)
                full = frozenset(manual) == frozenset(m.axis_names)
                ur_in = {
                    k: frozenset(getattr(s, k) or ()) & frozenset(manual) if full else frozenset()
                    for k in _UR
                }
                if (seed or any(ur_in.values())) and type(block) is core.ShapedArray:
                    block = block.with_manual_axis_type(ir.ManualAxisType(varying=seed, **ur_in))
            blocks.append(block)

        local_refs = []

        def rebuild(dyn_leaves):
            full = list(flat)
            for i, v in zip(dyn_pos, dyn_leaves):
                full[i] = v
            if refs:
                local_refs[:] = [new_ref(full[i]) for i in refs]
                for i, r in zip(refs, local_refs):
                    full[i] = r
            return tu.tree_unflatten(in_tree, full)

        if refs and _eager.runs_eagerly():
            raise NotImplementedError(
                f"{where}: a Ref argument of a shard_map called outside jit; call it under jax.jit"
            )
        if _eager.runs_eagerly():
            return _run_eagerly(f, rebuild, dyn, norm_in, out_specs, m, manual, check, where)
        box = []
        seeds = [frozenset(n for dim in s for n in dim) for s in norm_in]
        logical = tuple(n for n in manual if n not in spmd)

        def body(*leaves):
            # NOTE: [gradients inside shard_map]: a vjp inside reads the body staged so far;
            # unchecked (check_vma=False), it has pmap's meaning, also inside a checked body.
            trace = core.current_trace()
            convention = functools.partial(_logical_transpose, trace, seeds, m, logical) if check else None
            with (
                ad.transpose_convention(convention),
                _inside_body((trace, seeds, m, manual) if check else None, manual, m),
            ):
                out = f(*rebuild(leaves))
            out_leaves, out_tree = flatten_outputs(out, where)
            box.append(out_tree)
            return [*out_leaves, *(r[...] for r in local_refs)]

        with batching.extend_axis_env(shp.mesh_frames(m, manual)):
            closed = trace_to_jaxpr(body, blocks, description=where)
        for c in closed.consts:
            _eager.refuse_explicit_const(c, m, manual)
        closed, hoisted = close_over_tracers(closed)
        out_tree = box[0]
        n_out = len(closed.out_avals) - len(refs)
        shaped = tu.tree_unflatten(out_tree, list(closed.out_avals)[:n_out])
        norm_out, out_leaf_specs = out_specs_of(out_specs, shaped, m, manual, where)
        norm_out = _unreduced_out_specs(norm_out, out_leaf_specs, manual, check, where)
        if refs:  # (the Refs' final blocks, laid out as they came in)
            ref_specs = [norm_in[dyn_pos.index(i)] for i in refs]
            norm_out, out_leaf_specs = (
                (*norm_out, *ref_specs),
                (*out_leaf_specs, *(leaf_specs[i] for i in refs)),
            )
        hoisted_specs = tuple(((),) * core.get_aval(h).ndim for h in hoisted)
        if check:
            _check_replication(
                closed, m, manual, (*hoisted_specs, *norm_in), norm_out, out_leaf_specs, where, shaped
            )
        outs = shp.shard_map_p.bind(
            *hoisted,
            *dyn,
            jaxpr=closed,
            mesh=m,
            in_specs=(*hoisted_specs, *norm_in),
            out_specs=norm_out,
            manual_axes=manual,
        )
        for r, v in zip(refs.values(), outs[n_out:]):
            r[...] = v
        return tu.tree_unflatten(out_tree, outs[:n_out])

    return mapped


def _typed_block(block, aval, manual):
    """A body's block of ``aval`` keeps the type's sharding on the explicit axes the shard_map
    leaves automatic (``axis_names=``: a partially manual body sees ``f32[4,4@y]``, as JAX's)."""
    s = aval._sharding
    if s is None or type(block) is not core.ShapedArray:
        return block
    spec = tuple(tuple(n for n in d if n not in manual) for d in sr.spec_of(aval))
    if not any(spec):
        return block
    # (over the mesh with the manual axes of type Manual, as JAX's: ``typeof(x).sharding.mesh``)
    am = s.mesh.update_axis_types({n: AxisType.Manual for n in manual if n in s.mesh.axis_names})
    return core.ShapedArray(block.shape, block.dtype, block.weak_type, type_sharding(am, spec))


def _checked_eqn_varying(p, params, vin, n_out):
    """``eqn_varying`` of an eager checked body, which also refuses a cond or loop whose results
    or carries vary along different manual axes, as JAX's types do (its values' axes are exact
    there; a staged body's are not: ``pcast`` is not staged)."""
    check_control_flow_vma(p, params, vin)
    check_matching_vma(p, vin)
    return eqn_varying(p, params, vin, n_out)


def _run_eagerly(f, rebuild, dyn, norm_in, out_specs, mesh, manual, check, where):
    """NOTE: [eager shard_map] (funcgrad/_shard_map_eager.py)."""
    varying = _checked_eqn_varying if check else eqn_varying
    with core.new_trace(_eager.ShardMapTrace, mesh, manual, check, shard_map, varying) as trace:
        trace.ur_rule = _manual_ur if check else None
        ins = trace.enter(dyn, norm_in)
        convention = functools.partial(_eager_logical_transpose, trace) if check else None
        frames = batching.extend_axis_env(shp.mesh_frames(mesh, manual))
        # (what a checked body stages -- a jit, cond or scan inside -- is typed as a staged body's:
        # NOTE: [varying axes in staged types])
        frame = (None, None, mesh, manual) if check else None
        body = _inside_body(frame, manual=manual, mesh=mesh, eager_check=check)
        with frames, ad.transpose_convention(convention), body:
            out = f(*rebuild(ins))
        out_leaves, out_tree = flatten_outputs(out, where)
        pairs = [trace.stacked(o) for o in out_leaves]
    avals = [core.get_aval(s) for s, _ in pairs]
    shaped = tu.tree_unflatten(out_tree, [a.update(shape=a.shape[1:]) for a in avals])
    norm_out, out_leaf_specs = out_specs_of(out_specs, shaped, mesh, manual, where)
    if check:
        # JAX's eager shard_map checks each output on its own, as it moves it into place (a
        # shard_map of its helper _rem_singleton with the output's spec), so its refusal names
        # that function, the first bad output only and no path; staged, the user's function.
        for (_, v), spec, given in zip(pairs, norm_out, out_leaf_specs):
            check_out_vma([v], [spec], [given], "shard_map(_rem_singleton)", [""], mesh, manual)
    return tu.tree_unflatten(
        out_tree,
        [trace.leave(s, spec, given) for (s, _), spec, given in zip(pairs, norm_out, out_leaf_specs)],
    )


def smap(f: Callable | None = None, /, *, in_axes=Infer, out_axes, axis_name):
    """JAX's single-axis ``shard_map``: manual over the one mesh axis ``axis_name`` of the mesh in
    scope (the others stay automatic), mapping positional axis ``in_axes`` of the arguments (an
    int for all, ``None``: not mapped, or a tuple per argument; left out: inferred from the
    arguments' shardings on an Explicit axis) and placing the mapped axis at ``out_axes``.

    >>> import funcgrad, numpy as np
    >>> from funcgrad import lax
    >>> from funcgrad.sharding import AxisType, make_mesh, use_mesh
    >>> with use_mesh(make_mesh((1,), ("i",), (AxisType.Auto,))):
    ...     f = smap(lambda a: lax.psum(a, "i"), in_axes=0, out_axes=0, axis_name="i")
    ...     funcgrad.jit(f)(np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    if f is None:
        return functools.partial(smap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, list | tuple):
        raise TypeError(f"smap: axis_name should be one name (a str or another hashable), got {axis_name!r}")

    def check(tree, what, allow_infer):
        for leaf in tu.tree_leaves(tree):
            if not isinstance(leaf, int) or isinstance(leaf, bool):
                raise TypeError(
                    f"smap: {what} must be an int, None{', Infer' if allow_infer else ''} or a (nested) "
                    f"container of them, got {tree!r}"
                )

    def spec(axis):
        return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)

    if in_axes is not Infer:
        check(in_axes, "in_axes", True)
    check(out_axes, "out_axes", False)
    in_specs = in_axes if in_axes is Infer else tu.tree_map(spec, in_axes, is_leaf=lambda x: x is None)
    out_specs = tu.tree_map(spec, out_axes, is_leaf=lambda x: x is None)
    return shard_map(f, in_specs=in_specs, out_specs=out_specs, axis_names={axis_name}, _smap=True)


# ----------------------------------------------------------------------------------------------
# check_vma: along which mesh axes may each value differ between devices? (funcgrad/_vma.py)


def _check_replication(closed, mesh, manual, in_specs, out_specs, out_leaf_specs, where, shaped):
    drop = _sharding_types.drop_size_one_axes  # (jax_remove_size_one_mesh_axis_from_type)
    ins = [frozenset(drop((n for dim in s for n in dim), mesh)) for s in in_specs]
    outs = _varying(closed.jaxpr, ins)
    for i, (vary, spec, aval) in enumerate(zip(outs, out_specs, closed.jaxpr.out_avals)):
        unreduced = shp.spec_unreduced(spec)
        reduced = getattr(spec, "reduced", frozenset())
        have_u, have_r = aval.mat.unreduced, aval.mat.reduced
        for kind, want, have in (("unreduced", unreduced, have_u), ("reduced", reduced, have_r)):
            # (JAX's _unshard_shaped_array; a reduced value a spec leaves so is taken as cast to
            # varying, as pcast(to='varying') would type it: pcast is not staged here)
            if have - want if kind == "unreduced" else want and want != have:
                raise ValueError(
                    f"out_specs passed to shard_map should be equal to the {kind} present on the out_aval. "
                    f"Got out_specs={out_leaf_specs[i]} and out_aval={shaped_leaf(shaped, i)}"
                    f"{{{kind[0].upper()}:{','.join(sorted(map(str, have)))}}}"
                )
        unreduced = unreduced - have_u
        if unreduced:
            # JAX's implicit vary_unreduced_cast (its abstract eval's ValueErrors, in its words):
            # a value varying along the axes becomes their partial sums
            axes = tuple(n for n in mesh.axis_names if n in unreduced)
            if not vary:
                raise ValueError(
                    f"vary_unreduced_cast only accepts inputs that are varying. Got {shaped_leaf(shaped, i)}"
                )
            if not frozenset(vary) & unreduced:
                raise ValueError(
                    "vary_unreduced_cast is a Varying->Unreduced collective. This means that the axis names "
                    "mentioned in `axes` passed to `vary_unreduced_cast` must be present in "
                    f"`jax.typeof(x).mat.varying`. Got axes={axes} and jax.typeof(x).mat.varying={set(vary)}"
                )
        outs[i] = frozenset(vary) - unreduced - have_u - reduced
    check_out_vma(outs, out_specs, out_leaf_specs, where, _paths(shaped, ""), mesh, manual)


def shaped_leaf(shaped, i) -> str:
    return tu.tree_leaves(shaped)[i].str_short(short_dtypes=True)
