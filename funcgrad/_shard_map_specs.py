"""``shard_map``'s arguments resolved and checked: the mesh (``mesh=``, the mesh in scope, an
abstract mesh made concrete from the arguments) and its manual axes (``axis_names=``), the in and
out specs (pytree prefixes broadcast, normalised per value, inferred from the arguments' shardings
under ``in_specs=Infer``) and JAX's refusals of them, in its words.

Layer: surface, a floor below ``funcgrad.parallel``. Imports the kernel (tracing, pytrees), the
primitive catalog (``primitives.sharding``; ``primitives._sharding_rules``: the vmapped explicit
axes), ``funcgrad._shardings``, ``funcgrad._sharding_types``, ``funcgrad._shard_map_eager`` and
``funcgrad._shard_map_body`` (the axes the enclosing bodies bind), ``xla_bridge`` (devices) and
``funcgrad.tree_util`` (JAX's prefix errors). Never ``funcgrad.parallel``.
"""

from __future__ import annotations

import functools

import numpy as np

from funcgrad import _shard_map_eager as _eager
from funcgrad import _sharding_types, xla_bridge
from funcgrad._shard_map_body import _bodies
from funcgrad._shardings import (
    AbstractMesh,
    DuplicateSpecError,
    Mesh,
    NamedSharding,
    PartitionSpec,
    get_mesh,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.primitives import _sharding_rules as sr
from funcgrad.primitives import sharding as shp
from funcgrad.tree_util import _prefix_errors


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
    have = getattr(getattr(aval, "_sharding", None), "spec", None)
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
        return getattr(x.aval, "_sharding", None)
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
