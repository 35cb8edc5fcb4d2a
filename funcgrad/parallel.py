"""Per-device programs: ``shard_map`` (``pmap``, built on it, is ``funcgrad._pmap``).

Layer: surface. Imports the kernel (tracing, pytrees, the axis environment), the primitive
catalog (``primitives.sharding``: the shard_map primitive; ``primitives.collectives``),
``funcgrad._shardings``, ``xla_bridge`` (devices) and, a floor below,
``funcgrad._vma`` (the ``check_vma`` pass and the transpose of a vjp inside a body).

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
one-dimensional mesh of the local devices, as in JAX 0.10; a body being traced is marked here
(``_inside_body``), so a pmap inside one is refused.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np

from funcgrad import _shard_map_eager as _eager
from funcgrad import _sharding_types, xla_bridge
from funcgrad._api_util import flatten_outputs
from funcgrad._sharding_types import type_sharding
from funcgrad._shardings import (
    AbstractMesh,
    AxisType,
    DuplicateSpecError,
    Mesh,
    NamedSharding,
    PartitionSpec,
    get_abstract_mesh,
    get_mesh,
)
from funcgrad._vma import (
    _eager_logical_transpose,
    _logical_transpose,
    _unwrap,
    _varying,
    _varying_env,
    check_control_flow_vma,
    check_matching_vma,
    check_out_vma,
    eqn_varying,
    vma_adjustment,
)
from funcgrad.kernel import ad, batching, core, ir
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import StagingTracer, close_over_tracers, trace_to_jaxpr
from funcgrad.numpy._core import asarray
from funcgrad.primitives import _sharding_rules as sr
from funcgrad.primitives import _unreduced_rules as ur
from funcgrad.primitives import collectives as co
from funcgrad.primitives import sharding as shp
from funcgrad.tree_util import _prefix_errors

__all__ = ["shard_map", "smap", "vma_adjustment"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("shard_map", "smap")


class _InferType:
    """``in_specs``' default (JAX's ``Infer``): the specs come from the arguments' shardings, which
    needs every manual mesh axis to be ``Explicit``."""

    def __repr__(self):
        return "Infer"


Infer = _InferType()


def _is_spec_leaf(x) -> bool:
    return x is None or isinstance(x, PartitionSpec) or x is Infer


def _flat_specs(specs, tree_values, what, where, allow_none) -> list:
    try:
        leaves = tu.broadcast_prefix(specs, tree_values, is_leaf=_is_spec_leaf)
    except ValueError:
        # (JAX's words first: the key path of the first mismatch, ``shard_map in_specs[0]``)
        maker = next(_prefix_errors(specs, tree_values, (), _is_spec_leaf), None)
        jax_words = "" if maker is None else maker(f"shard_map {what}").args[0] + "\n\n"
        raise ValueError(
            f"{jax_words}{where}: {what} must be a PartitionSpec or a pytree prefix of the "
            f"{'arguments' if what == 'in_specs' else 'outputs'} ({tu.tree_structure(tree_values)}) made of "
            f"PartitionSpecs, got {specs!r}"
        ) from None
    for path, s in zip(_paths(tree_values, what), leaves):
        if s is None and not allow_none:
            raise TypeError(
                f"{where}: {what}{path} is None: give a PartitionSpec (P() for a replicated value)"
            )
        if s is not None and not isinstance(s, PartitionSpec):
            raise TypeError(
                f"{where}: {what}{path} is {s!r} of type {type(s).__name__}; the leaves of {what} must be "
                "PartitionSpecs (P(...))"
            )
    return leaves


def _paths(tree_values, what) -> list[str]:
    """``[i]...`` key paths of the leaves of the arguments (or outputs), for error messages."""
    return [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree_values)]


def _normalize(
    spec: PartitionSpec, ndim, mesh, manual, where, rank_error=None, duplicates=True, jax_key=None
) -> tuple:
    if len(spec) > ndim:
        # (JAX's words first when the caller gives them: ``rank_error(spec)``)
        head = f"{rank_error(spec)}\n\n" if rank_error is not None else ""
        raise ValueError(
            f"{head}{where} is {spec!r}, which has {len(spec)} entries, but the value has rank {ndim}: a "
            f"spec names at most one entry per dimension (drop entries, or reshape the value to rank "
            f"{len(spec)})"
        )
    norm = spec._normalized(ndim, where)
    names = [n for dim in norm for n in dim]
    for n in names:
        if n not in mesh.axis_names:
            raise ValueError(
                f"{where} is {spec!r}, which names the axis {n!r}, which the mesh lacks (its axes: "
                f"{mesh.axis_names}); use one of them"
            )
        if n not in manual:
            # (JAX's words first: its _check_specs, with the entry's path in the specs tree)
            kind = (jax_key or "").split("[")[0]
            head = (
                f"shard_map {kind} argument must refer to an axis marked as manual "
                f"({frozenset(manual)}), but:\n\n  {jax_key} refers to {n!r}\n\nCheck the {kind} "
                "values passed to shard_map.\n\n"
                if jax_key
                else ""
            )
            raise ValueError(
                f"{head}{where} is {spec!r}, which names the axis {n!r}, but the shard_map is manual over "
                f"{set(manual)} only (axis_names=): name only manual axes in the specs, or add {n!r} to "
                "axis_names"
            )
    if duplicates:
        _check_duplicates(spec, norm, mesh)
    return norm


def _check_duplicates(spec, norm, mesh) -> None:
    """JAX's DuplicateSpecError for a spec naming a mesh axis twice (in its words); for an
    argument JAX checks it after the shape (a spec that does not divide raises its ValueError)."""
    names = [n for dim in norm for n in dim]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1}, key=str)
        raise DuplicateSpecError(
            "A single NamedSharding spec specification can map every mesh axis to at most one "
            f"positional dimension, but {spec!r} has duplicate entries for "
            + ", ".join(f"`{n}`" for n in twice),
            mesh,
            spec,
        )


def _concrete_of(mesh, flat):
    """``mesh=`` as an ``AbstractMesh``: the mesh of the arguments' shardings, as JAX's
    ``get_mesh_from_args`` (JAX's ValueErrors for an argument over a mesh of another shape and
    for arguments without shardings). A traced argument's type names only the abstract mesh:
    the mesh in scope (``set_mesh``) where it is that mesh, else the mesh of the first devices
    (``make_mesh``'s), as JAX lowers over the program's own devices."""
    if not isinstance(mesh, AbstractMesh):
        return mesh
    found = None
    traced = False
    for a in flat:
        if isinstance(a, core.Tracer):
            traced = True
            continue
        s = getattr(a, "sharding", None) if isinstance(a, core.Array) else None
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and s.mesh.size > 1:
            if s.mesh.shape_tuple != mesh.shape_tuple:
                shape = core.get_aval(a).str_short(short_dtypes=False)
                raise ValueError(
                    f"Mesh shape of the input {s.mesh.shape_tuple} does not match the mesh shape passed to "
                    f"shard_map  {mesh.shape_tuple} for shape {shape}"
                )
            found = s.mesh
    if found is not None:
        return found
    if not traced:
        raise ValueError(
            "Please pass `jax.Array`s with a `NamedSharding` as input to `shard_map` when passing "
            "`AbstractMesh` to the mesh argument."
        )
    context = get_mesh()
    if context is not None and context.abstract_mesh == mesh:
        return context
    n = mesh.size
    devices = np.array(xla_bridge.devices()[:n], dtype=object).reshape(mesh.axis_sizes)
    return Mesh(devices, mesh.axis_names, axis_types=mesh.axis_types)


def _check_unreduced(prefix, mesh, manual, specs) -> None:
    """JAX's refusals of unreduced/reduced specs: only in a fully manual shard_map, and only over
    the mesh's Explicit axes (its _check_unreduced, in its words)."""
    full = frozenset(mesh.axis_names) == frozenset(manual)
    types = dict(zip(mesh.axis_names, getattr(mesh, "axis_types", None) or ()))
    for s in tu.tree_leaves(specs, is_leaf=lambda s: isinstance(s, PartitionSpec)):
        if not isinstance(s, PartitionSpec) or not (s.unreduced or s.reduced):
            continue
        if not full:
            raise NotImplementedError(
                f"unreduced/reduced can only be passed to {prefix}_specs when shard_map is in full manual "
                f"mode. Got mesh axis names {tuple(mesh.axis_names)}, manual_axes: {frozenset(manual)}, "
                f"specs: {s}. Please file a bug at https://github.com/jax-ml/jax/issues."
            )
        for kind, names in (("unreduced", s.unreduced), ("reduced", s.reduced)):
            if not all(getattr(types.get(n), "name", None) == "Explicit" for n in names):
                raise ValueError(
                    f"{kind} in {prefix}_specs {s} can only be used when the mesh passed to shard_map "
                    f"contains axis names all of type `Explicit`. Got mesh {mesh}"
                )


def _check_spec_ur(spec, aval) -> None:
    """JAX's _shard_shaped_array: an argument's unreduced and reduced axes (its type's) are those
    its in_specs entry names (JAX's ValueErrors, in its words)."""
    have = getattr(getattr(aval, "sharding", None), "spec", None)
    for kind in ("unreduced", "reduced"):
        if frozenset(getattr(spec, kind) or ()) != frozenset(getattr(have, kind, None) or ()):
            raise ValueError(
                f"in_specs containing {kind} {spec} passed to shard_map should be equal to the {kind} "
                f"present on the in_aval {aval.str_short(short_dtypes=True)}"
            )


def _resolve_mesh(mesh, axis_names, where):
    # (left out: the mesh in scope -- in a body, the enclosing shard_map's, as JAX's context mesh)
    m = mesh if mesh is not None else _bodies.mesh if _bodies.mesh is not None else get_mesh()
    if m is None:
        raise ValueError(  # (JAX's words first)
            "The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a mesh context: "
            f"{where} has no mesh= and none is set (funcgrad.sharding.set_mesh(mesh), or "
            "`with funcgrad.sharding.use_mesh(mesh):`)"
        )
    if not isinstance(m, Mesh):
        raise TypeError(f"{where}: mesh must be a funcgrad.sharding.Mesh, got {type(m).__name__}")
    if m.empty:  # (JAX's words: a mesh of no devices, as its empty_concrete_mesh)
        raise ValueError(f"shard_map requires a non-empty mesh. Got {m}")
    if axis_names is None:
        axis_names = frozenset()
    if isinstance(axis_names, str) or not isinstance(axis_names, set | frozenset | tuple | list):
        raise TypeError(f"{where}: axis_names must be a set of mesh axis names, got {axis_names!r}")
    # As JAX's: left out, axis_names are the mesh's axes that no enclosing shard_map binds
    bound = frozenset() if _eager.in_own_program() else _bodies.manual  # (an eager body's programs)
    # (and without the explicit mesh axes an enclosing vmap maps over: JAX's
    # mesh_axis_names_wo_vmap; its batch rule leaves the mapped dimension to them)
    vmapped = frozenset() if sr._spmd_axes.get() else frozenset(sr._explicit_axes.get())
    if vmapped and not frozenset(axis_names) <= frozenset(m.axis_names) - vmapped:
        raise ValueError(
            f"jax.shard_map requires axis_names={frozenset(axis_names)} to be a subset of "
            f"mesh.axis_names={frozenset(m.axis_names) - vmapped}"
        )
    names = frozenset(axis_names) or (frozenset(m.axis_names) - bound - vmapped) or frozenset(m.axis_names)
    unknown = sorted(str(n) for n in names if n not in m.axis_names)
    if unknown:
        raise ValueError(
            f"{where}: axis_names={set(axis_names)} must be a subset of the mesh's axes {m.axis_names} "
            f"(unknown: {unknown})"
        )
    # (an axis of an enclosing vmap of the same name is shadowed, as JAX's vmap of pmap)
    outer = bound & names
    if outer:
        raise ValueError(
            f"{where}: the mesh axes {sorted(map(str, outer))} are already manual here (an enclosing "
            "shard_map/pmap binds them): a nested shard_map is manual over other axes (axis_names=)"
        )
    return m, shp.manual_of(m, names)


def _axis_types(mesh, manual) -> list:
    types = dict(zip(mesh.axis_names, getattr(mesh, "axis_types", ()) or ()))
    return [types.get(n) for n in manual]


def _inferred_spec(x, mesh, manual, where, path):
    """The spec of an argument under ``in_specs=Infer``: its sharding's spec over ``mesh``, kept
    to the manual axes (an unsharded value is ``P()``)."""
    s = _sharding_of(x)
    if s is None or getattr(s, "mesh", None) is None:
        return PartitionSpec()
    if tuple(getattr(s.mesh, "axis_names", ())) != tuple(mesh.axis_names) or dict(s.mesh.shape) != dict(
        mesh.shape
    ):
        raise ValueError(
            f"{where}: argument{path} is sharded over another mesh ({s.mesh}) than the shard_map's ({mesh}); "
            "reshard it onto this mesh first (funcgrad.sharding.reshard / device_put)"
        )
    out = []
    for p in s.spec:
        names = () if p is None else (p if isinstance(p, tuple) else (p,))
        kept = tuple(n for n in names if n in manual)
        out.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return PartitionSpec(*out, unreduced=s.spec.unreduced, reduced=s.spec.reduced)  # (JAX's _manual_spec)


def _sharding_of(x):
    if isinstance(x, core.Tracer):
        return getattr(x.aval, "sharding", None)
    s = getattr(x, "sharding", None) if isinstance(x, core.Array) else None
    return s


def _specs_of_args(specs, args, mesh, manual, where, smap=False) -> list:
    """One spec per argument leaf: a PartitionSpec, or ``None`` for a static (unmapped) leaf."""
    leaves = tu.tree_leaves(args)
    if specs is Infer:
        types = _axis_types(mesh, manual)
        explicit = [t for t in types if t is not None and getattr(t, "name", "") == "Explicit"]
        if len(explicit) != len(manual):
            kinds = ", ".join(str(getattr(t, "name", t)) for t in types)
            if smap:  # (JAX's words for smap)
                raise TypeError(
                    f"in_axes was not specified when axis_name={frozenset(manual)} was of type {kinds}"
                )
            raise TypeError(
                f"{where}: shard_map in_specs argument must be a pytree of `PartitionSpec` instances, but it "
                f"was not given while axis_names={set(manual)} are of type {kinds}: pass in_specs= (one "
                "PartitionSpec per argument, P() for a replicated one); in_specs can be left out only "
                "when every manual mesh axis is AxisType.Explicit"
            )
        return [_inferred_spec(x, mesh, manual, where, p) for x, p in zip(leaves, _paths(args, ""))]
    return _flat_specs(specs, args, "in_specs", where, allow_none=True)


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

        def rebuild(dyn_leaves):
            full = list(flat)
            for i, v in zip(dyn_pos, dyn_leaves):
                full[i] = v
            return tu.tree_unflatten(in_tree, full)

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
            return out_leaves

        with batching.extend_axis_env(shp.mesh_frames(m, manual)):
            closed = trace_to_jaxpr(body, blocks, description=where)
        for c in closed.consts:
            _eager.refuse_explicit_const(c, m, manual)
        closed, hoisted = close_over_tracers(closed)
        out_tree = box[0]
        shaped = tu.tree_unflatten(out_tree, list(closed.out_avals))
        norm_out, out_leaf_specs = out_specs_of(out_specs, shaped, m, manual, where)
        norm_out = _unreduced_out_specs(norm_out, out_leaf_specs, manual, check, where)
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
        return tu.tree_unflatten(out_tree, outs)

    return mapped


def _typed_block(block, aval, manual):
    """A body's block of ``aval`` keeps the type's sharding on the explicit axes the shard_map
    leaves automatic (``axis_names=``: a partially manual body sees ``f32[4,4@y]``, as JAX's)."""
    s = aval.sharding
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
        ins = trace.enter(dyn, norm_in)
        convention = functools.partial(_eager_logical_transpose, trace) if check else None
        frames = batching.extend_axis_env(shp.mesh_frames(mesh, manual))
        with frames, ad.transpose_convention(convention), _inside_body(manual=manual, mesh=mesh):
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


def _check_typed_match(x, norm, mesh, manual, path, given=None):
    """JAX 0.10: over a fully manual mesh of Explicit axes, an argument whose sharding (its type)
    is over that mesh must be split as its in_specs says -- shard_map does not reshard it
    silently; an argument without such a sharding is replicated (its type), as in JAX."""
    if set(manual) != set(mesh.axis_names) or _eager.in_own_program():
        return  # (an eager shard_map's own programs move blocks on purpose)
    if not all(getattr(t, "name", "") == "Explicit" for t in _axis_types(mesh, manual)):
        return
    s = _sharding_of(x)
    if s is None or getattr(s, "mesh", None) is None or getattr(s, "spec", None) is None:
        # Unsharded (a NumPy value, an array on one device): its type is replicated (JAX's rule).
        have, have_ur = ((),) * len(norm), {}
    elif tuple(getattr(s.mesh, "axis_names", ())) != tuple(mesh.axis_names):
        return
    else:
        have = s.spec._normalized(len(norm))
        have_ur = {"unreduced": frozenset(s.spec.unreduced or ()), "reduced": frozenset(s.spec.reduced or ())}
    # (and the unreduced and reduced axes, as JAX compares whole specs)
    want_ur = {"unreduced": frozenset(getattr(given, "unreduced", None) or ()),
               "reduced": frozenset(getattr(given, "reduced", None) or ())}  # fmt: skip
    have_ur = {k: have_ur.get(k, frozenset()) for k in want_ur}
    # (JAX's: the spec's axes of size 1 are left out, as the type leaves them out, under
    # jax_remove_size_one_mesh_axis_from_type)
    norm = tuple(_sharding_types.drop_size_one_axes(d, mesh) for d in norm)
    have = tuple(_sharding_types.drop_size_one_axes(d, mesh) for d in have)
    if tuple(have) != tuple(norm) or have_ur != want_ur:
        shown = str(core.get_aval(x)).lstrip("~")
        raise ValueError(
            f"in_specs passed to shard_map: {_eager.spec_of_norm(norm).update(**want_ur)} does not match "
            f"the specs of the input: {_eager.spec_of_norm(have).update(**have_ur)} for arg: {shown}. "
            "`in_specs` is an optional argument so you can omit specifying it and shard_map will infer "
            "the in_specs from the arguments. If you want to reshard your inputs, you can use "
            "`jax.reshard` on the arguments and then pass those args to shard_map."  # (JAX's words)
        )


class _SpecsAfterTrace:
    """Out specs known only once the body has run (pmap's: one per output, from ``out_axes``
    broadcast over the output tree), as JAX's internal ``out_specs_thunk``; never a user's."""

    __slots__ = ("thunk",)

    def __init__(self, thunk):
        self.thunk = thunk


def out_specs_of(out_specs, shaped, mesh, manual, where):
    """The normalized out specs of outputs ``shaped`` (a pytree of avals), and the user's leaves."""
    if type(out_specs) is _SpecsAfterTrace:
        out_specs = out_specs.thunk()
    leaves = _flat_specs(out_specs, shaped, "out_specs", where, allow_none=False)
    paths = _paths(shaped, "out_specs")
    name = where[len("shard_map(") : -1] if where.startswith("shard_map(") else where
    norm = tuple(
        _normalize(
            s,
            a.ndim,
            mesh,
            manual,
            f"{where}: out_specs{p} (for output{p}, {a.str_short()})",
            functools.partial(_jax_rank_error, name, "out", p, f"{name}(*args)", a),
            jax_key="out_specs" + ("" if isinstance(out_specs, PartitionSpec) else p),
        )
        for s, a, p in zip(leaves, tu.tree_leaves(shaped), paths)
    )
    return norm, leaves


def _jax_rank_error(fun_name, prefix, path, base, aval, spec) -> str:
    """JAX's words for a spec longer than its value's rank (its ``_spec_rank_error``, one entry)."""
    rank, n = aval.ndim, len(spec)
    msg = (
        f"shard_map applied to the function '{fun_name}' was given an {prefix}_specs entry which is too long "
        f"to be compatible with the corresponding {prefix}put value from the function:\n\n"
        f"{prefix}_specs{path} is {spec} which has length {n}, but {base}{path} has shape "
        f"{aval.str_short(short_dtypes=False)}, "
        f"which has rank {rank} (and {rank} < {n})\n\n"
        f"Entries in {prefix}_specs must be of length no greater than the number of axes in the "
        f"corresponding {prefix}put value.\n\nEither revise the spec to be shorter, or modify '{fun_name}' "
        f"so that its {prefix}puts have sufficient rank."
    )
    if not rank:
        msg += (
            f"\n\nFor scalar values (rank 0), consider using an {prefix}_specs entry of `P()`, where "
            "`P = jax.sharding.PartitionSpec`."
        )
    return msg


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


def _unreduced_out_specs(norm_out, leaves, manual, check, where) -> tuple:
    """Staged out specs naming unreduced axes (JAX 0.10, in a checked body: the value, varying
    along them, is cast to their partial sums) or reduced ones (the value's type says so) as
    ``URSpec``s the shard_map primitive's rules read (NOTE: [unreduced values]); unchecked, each
    device's block is taken as it is."""
    out = []
    for norm, spec in zip(norm_out, leaves):
        unreduced = frozenset(spec.unreduced or ()) & frozenset(manual)
        reduced = frozenset(spec.reduced or ()) & frozenset(manual)
        # (check_vma=False: each device's block is taken as it is, JAX's bitcast)
        out.append(shp.URSpec(norm, unreduced, reduced) if unreduced or reduced else norm)
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# Tracing a body (a shard_map's, or a pmap's: funcgrad/_pmap.py)


class _BodyDepth(threading.local):
    depth = 0
    manual: frozenset = frozenset()  # the mesh axes the enclosing shard_map bodies are manual over
    mesh = None  # the innermost enclosing body's mesh (the default of a nested shard_map's mesh=)


_bodies = _BodyDepth()


class _inside_body:
    """Marks the tracing of a shard_map (or pmap) body: a pmap there is refused, as in JAX. A
    checked staged body also gives its ``(trace, seeds, mesh, manual)``, so ``typeof`` of its
    values shows the manual axes they vary along (``staged_manual_aval``)."""

    def __init__(self, frame=None, manual=(), mesh=None):
        self.frame = frame
        self.manual = frozenset(manual)
        self.mesh = mesh

    def __enter__(self):
        _bodies.depth += 1
        self.outer, _bodies.manual = _bodies.manual, _bodies.manual | self.manual
        self.outer_mesh = _bodies.mesh
        if self.mesh is not None:
            _bodies.mesh = self.mesh
        if self.frame is not None:
            _staged_frames.stack = (*getattr(_staged_frames, "stack", ()), self.frame)
            _vma_typing.count += 1
            hooks.apply_vma = _apply_vma
        # As JAX's: inside the body the abstract mesh in scope is the shard_map's, its manual axes
        # (these and the enclosing bodies') of type Manual (get_abstract_mesh().manual_axes)
        self.scope = None
        if self.mesh is not None:
            am = self.mesh.abstract_mesh
            manual = {n: AxisType.Manual for n in am.axis_names if n in _bodies.manual}
            self.scope = am.update_axis_types(manual)
            self.scope.__enter__()

    def __exit__(self, *exc):
        if self.scope is not None:
            self.scope.__exit__(*exc)
        _bodies.depth -= 1
        _bodies.manual = self.outer
        _bodies.mesh = self.outer_mesh
        if self.frame is not None:
            _staged_frames.stack = _staged_frames.stack[:-1]
            _vma_typing.count -= 1
            if not _vma_typing.count:
                hooks.apply_vma = None


# NOTE: [varying axes in staged types]
# As JAX's types, a value of a checked shard_map body being staged carries the manual axes it
# varies along in its ShapedArray (``typeof(x).vma``, ``x.aval.mat.varying``): the body's inputs
# vary along the axes their in_specs name (and those the arguments of a nested shard_map vary
# along), and while such a body is staged every staged equation's results are typed by
# ``eqn_varying`` (the rule of ``check_vma``'s dataflow pass, funcgrad/_vma.py) through
# ``hooks.apply_vma`` -- in the jaxprs a ``jit``, ``cond`` or ``scan`` inside traces too, whose
# inputs are typed as their arguments. The axes are not part of type equality (a carry's type
# check, caches): JAX's "pvary" refusals are not made from them.
_UR = ("unreduced", "reduced")


class _VmaTyping:
    count = 0  # checked bodies being staged, in all threads (the hook is set while any is)


_vma_typing = _VmaTyping()


def _apply_vma(primitive, avals, out, params):
    manual = _bodies.manual
    if not manual or not getattr(_staged_frames, "stack", ()):
        return out
    vin = [getattr(a, "manual_axis_type", ir.ManualAxisType()).varying for a in avals]
    check_matching_vma(primitive, vin)
    many = primitive.multiple_results
    outs = list(out) if many else [out]
    varying = eqn_varying(primitive, params, vin, len(outs))
    urs = _manual_ur(primitive, avals, outs, params)
    typed = []
    for a, v, (u, r) in zip(outs, varying, urs):
        v = frozenset(v) & manual
        if type(a) is core.ShapedArray and (v or u or r or not a.mat.empty):
            mat = ir.ManualAxisType(varying=v - u - r, unreduced=u, reduced=r)
            if a.mat != mat:
                a = a.with_manual_axis_type(mat)
        typed.append(a)
    return typed if many else typed[0]


def _manual_ur(primitive, avals, outs, params) -> list:
    """The unreduced and reduced manual axes of an equation's results in a fully manual checked
    body (JAX's manual_rule: its ur rules read the values' manual axis types, NOTE: [unreduced
    values]); none in a partially manual one (as JAX's)."""
    none = [(frozenset(), frozenset())] * len(outs)
    stack = getattr(_staged_frames, "stack", ())
    mesh = stack[-1][2] if stack else None
    if mesh is None or frozenset(_bodies.manual) != frozenset(mesh.axis_names):
        return none
    if not any(not a.mat.empty for a in avals) and primitive not in (co.all_gather_reduced_p, co.pcast_p):
        return none
    if primitive is co.pcast_p:
        a, axes = avals[0], frozenset(params["axis_name"])
        kind = params["to"]
        if kind == "varying":  # (JAX's pvary, or reduced_vary_cast of a reduced value)
            return [(a.mat.unreduced, a.mat.reduced - axes)]
        return [
            (a.mat.unreduced | axes, a.mat.reduced)
            if kind == "unreduced"
            else (a.mat.unreduced, a.mat.reduced | axes)
        ]
    if primitive.traits.jaxpr_params:  # (a call or control flow: its body typed its results)
        return [(o.mat.unreduced, o.mat.reduced) for o in outs]
    if primitive in _COLLECTIVE_UR:
        return [_COLLECTIVE_UR[primitive](avals[0], frozenset(params["axis_name"]))] * len(outs)
    u = ur.out_unreduced(primitive, avals, outs, params)
    # (JAX's auto_insert_reshard: an operand reduced along axes another varies along is cast to
    # varying first, so the result is not reduced there)
    varying = frozenset().union(*(a.mat.varying for a in avals))
    return [(uo, ro - varying) for uo, ro in zip(u, ur.out_reduced(primitive, avals, outs, u, params))]


# (JAX's collectives' ur rules, on one operand: a sum over unreduced axes reduces them; an
# all_gather(to='reduced') makes a complete copy, reduced along its axes)
_COLLECTIVE_UR = {
    co.psum_p: lambda a, axes: (a.mat.unreduced - axes, a.mat.reduced),
    co.psum_scatter_p: lambda a, axes: (a.mat.unreduced - axes, a.mat.reduced),
    co.all_gather_reduced_p: lambda a, axes: (a.mat.unreduced, a.mat.reduced | axes),
}


_staged_frames = threading.local()  # .stack: the checked shard_map bodies being staged, innermost last


def staged_manual_aval(x, aval):
    """``typeof`` of a value of a checked shard_map body being staged (under ``jit``): its block's
    type with JAX's ``manual_axis_type`` (the manual axes it varies along, from the equations
    staged so far: the rule of ``check_vma``), printed ``{V:i}``; ``None`` for any other value."""
    stack = getattr(_staged_frames, "stack", ())
    if not stack or not isinstance(x, core.Tracer):
        return None
    x = _unwrap(x)
    typed = x.aval.mat.varying if isinstance(x, StagingTracer) else frozenset()
    mat = x.aval.mat if isinstance(x, StagingTracer) else None
    if typed or (mat is not None and (mat.unreduced or mat.reduced)):
        # (NOTE: [varying axes in staged types]: also a value of a jit inside the body; the
        # unreduced/reduced axes of a fully manual body's value with them)
        names = [str(n) for n in stack[-1][2].axis_names]
        vma = {str(n) for n in typed}
        out = _eager.ManualAval(aval.shape, aval.dtype, aval.weak_type, vma, names, aval.sharding)
        out.manual_axis_type = ir.ManualAxisType(varying=vma, unreduced=mat.unreduced, reduced=mat.reduced)
        return out
    for trace, seeds, mesh, _manual in reversed(stack):
        if isinstance(x, StagingTracer) and x._trace is trace:
            builder = trace.builder
            env = dict(zip(builder.invars, seeds))
            ins = [env.get(v, frozenset()) for v in builder.invars]
            known = _varying_env(ir.Jaxpr(builder.const_list, builder.invars, builder.eqns, []), ins)
            vma = {str(n) for n in known.get(x._var, frozenset())}
            names = [str(n) for n in mesh.axis_names]
            return _eager.ManualAval(aval.shape, aval.dtype, aval.weak_type, vma, names, aval.sharding)
    return None


_sharding_types.manual_aval_hooks.append(staged_manual_aval)
