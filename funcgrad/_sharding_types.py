"""Sharding in types (NOTE: [sharding in types] in kernel/ir.py): the shardings that abstract
values hold on the explicit axes of a mesh, and the two hooks the kernel asks for them.

Layer: surface. Imports the kernel (``core``, registration, the cache registry), the primitive
catalog's sharding rules (``primitives/_sharding_rules.py``) and ``funcgrad._shardings`` (the
mesh and sharding values). Importing it registers ``_apply_sharding`` (a staged equation's result
types, by its primitive's sharding rule) and ``_buffer_sharding`` (a device buffer's type) with
the kernel; ``funcgrad.jitting`` and ``funcgrad._placement`` import it.

>>> from funcgrad.sharding import AbstractMesh, AxisType
>>> type_sharding(AbstractMesh((2,), ("x",), AxisType.Explicit), (("x",), ())).spec
P('x', None)
"""

from __future__ import annotations

import contextlib
import inspect
import threading

from funcgrad import kernel
from funcgrad._shardings import (
    AbstractMesh,
    Mesh,
    NamedSharding,
    PartitionSpec,
    concrete_mesh,
    from_bridge,
    get_abstract_mesh,
    get_mesh,
)
from funcgrad.kernel import core
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.source_info import source_info_config
from funcgrad.primitives import _sharding_rules as sr
from funcgrad.primitives import _unreduced_rules as ur
from funcgrad.xla_bridge import spmd

__all__ = [
    "check_carry_types",
    "manual_aval_hooks",
    "renamed_out_shardings",
    "scan_step_avals",
    "type_sharding",
    "untyped_over_args",
    "with_default_sharding",
]


# (abstract mesh, entries, unreduced, reduced) -> the interned NamedSharding of avals
_typed: dict = register_cache("sharding.type_shardings", {})  # NOTE: [caches have an owner]


def _entry(dim: tuple):
    return None if not dim else (dim[0] if len(dim) == 1 else tuple(dim))


def set_remove_size_one_axes(on: bool) -> None:
    """``jax_remove_size_one_mesh_axis_from_type``: whether explicit mesh axes of size 1 are left
    out of types (JAX's flag; the values' layouts are the same either way). The bridge keeps the
    state: a jitted result is then given its type's sharding where XLA's layout is the same."""
    spmd.remove_size_one_axes[0] = bool(on)


def drop_size_one_axes(names, am) -> tuple:
    """``names`` without the axes of size 1 of ``am`` under
    ``jax_remove_size_one_mesh_axis_from_type`` (JAX's ``remove_size_one_mesh_axis``: they are in
    no type, nor in a shard_map body's varying axes); else ``names``."""
    if not spmd.remove_size_one_axes[0] or am is None or am.empty:
        return tuple(names)
    sizes = dict(zip(am.axis_names, am.axis_sizes))
    return tuple(n for n in names if sizes.get(n) != 1)


def typed_axes(am: AbstractMesh) -> tuple:
    """The mesh axes a type may name: the explicit ones (those of size 1 left out under
    ``jax_remove_size_one_mesh_axis_from_type``)."""
    explicit = am.explicit_axes
    if spmd.remove_size_one_axes[0] and explicit:
        sizes = dict(zip(am.axis_names, am.axis_sizes))
        explicit = tuple(n for n in explicit if sizes.get(n) != 1)
    return explicit


def type_sharding(am: AbstractMesh, spec, unreduced=frozenset(), reduced=frozenset()) -> NamedSharding | None:
    """The sharding an aval holds for ``spec`` (one tuple of axis names per dimension) over
    ``am``: its explicit axes only, one entry per dimension; ``None`` when ``am`` has no explicit
    axis (the Auto mode's types are unchanged). Interned, so equal types are usually one object."""
    if not am.explicit_axes:
        return None
    explicit = typed_axes(am)
    entries = tuple(_entry(tuple(n for n in dim if n in explicit)) for dim in spec)
    unreduced = frozenset(unreduced) & frozenset(explicit)
    reduced = frozenset(reduced) & frozenset(explicit)
    key = (am, entries, unreduced, reduced)
    s = _typed.get(key)
    if s is None:
        if len(_typed) > 4096:
            _typed.clear()
        s = _typed[key] = NamedSharding(am, PartitionSpec(*entries, unreduced=unreduced, reduced=reduced))
    return s


def _apply_sharding(primitive, avals_in, out, params):
    """The kernel's ``apply_sharding`` hook: ``out`` typed by ``primitive``'s sharding rule."""
    outs = list(out) if primitive.multiple_results else [out]
    if primitive.sharding_from_params:
        am = params["mesh"].abstract_mesh
    else:
        am = None
        scope = get_abstract_mesh()
        for a in avals_in:
            s = a._sharding
            if s is not None:
                if (
                    not scope.empty
                    and s.mesh != scope
                    and not (scope.manual_axes or s.mesh.manual_axes)
                    and source_info_config.override is None
                    and not source_info_config.backward_depth
                ):
                    # JAX's check_avals_context_mesh (an operand typed over another mesh than the
                    # one in scope: use_abstract_mesh/auto_axes around values typed outside). Not
                    # while a jaxpr is re-interpreted or transposed: JAX does that in the mesh each
                    # equation was staged in, funcgrad in the caller's.
                    raise ValueError(
                        f"For primitive {primitive.name}, context mesh {scope} should match the aval "
                        f"mesh {s.mesh} for shape {a.str_short()}. Reshard the operand onto the mesh "
                        "in scope first (funcgrad.sharding.reshard)."
                    )
                if am is None:
                    am = s.mesh
                elif s.mesh != am:
                    raise sr.ShardingTypeError(
                        f"{primitive.name}: Mesh for all inputs should be equal. Got one mesh: {am} and "
                        "another "
                        f"mesh: {s.mesh}. Reshard the operands onto one mesh (funcgrad.sharding.reshard)."
                    )
    specs = sr.out_specs(primitive, avals_in, outs, params)
    unreduced = ur.out_unreduced(primitive, avals_in, outs, params)  # NOTE: [unreduced values]
    reduced = ur.out_reduced(primitive, avals_in, outs, unreduced, params)
    new = []
    for o, spec, u, r in zip(outs, specs, unreduced, reduced):
        if type(o) is not core.ShapedArray:
            new.append(o)
            continue
        if len(spec) != o.ndim:
            spec = ((),) * o.ndim
        typed = type_sharding(am, spec, u, r)
        if typed is None and o._sharding is not None:
            # Onto a mesh with no explicit axis (``reshard`` into ``auto_axes`` over all of them):
            # untyped, as JAX's modify_spec_for_auto_manual leaves it (``update`` keeps a type).
            o = core.ShapedArray(o.shape, o.dtype, o.weak_type, None, o.memory_space)
        new.append(o.update(sharding=typed))  # (its memory space kept)
    return new if primitive.multiple_results else new[0]


_NO_MESH = AbstractMesh((), ())


def _replicated(am: AbstractMesh, ndim: int) -> NamedSharding:
    key = (am, ndim)
    s = _typed.get(key)
    if s is None:
        s = _typed[key] = NamedSharding(am, PartitionSpec(*([None] * ndim)))
    return s


def _buffer_sharding(buffer, ndim: int):
    """The kernel's ``aval_sharding`` hook: the type of a device buffer's sharding over a mesh
    with explicit axes; else the sharding its type shows, replicated over its mesh (untyped: the
    ShapedArray keeps it only to show it); ``None`` for an uncommitted value on one device."""
    b = buffer._sharding
    mesh = getattr(b, "_fg_mesh", None)
    if mesh is None or not isinstance(mesh, Mesh):
        # (as typeof: one committed to a device shows no mesh, an uncommitted one the mesh in scope)
        return _replicated(_NO_MESH, ndim) if getattr(buffer, "_committed", False) else None
    am = mesh.abstract_mesh
    scope = get_mesh()
    if (
        scope is not None
        and scope is not mesh
        and scope._flat == mesh._flat
        and scope.axis_names == mesh.axis_names
    ):
        # The same devices and axes in scope with other types (inside auto_axes/explicit_axes):
        # the value is typed as that mesh's axes are.
        am = scope.abstract_mesh
    if not am.explicit_axes:
        # Untyped; its type shows it replicated over its mesh (the aval keeps it only to show it).
        return _replicated(am, ndim)
    s = from_bridge(b, ndim)
    if not isinstance(s, NamedSharding):
        return type_sharding(am, ((),) * ndim)
    return type_sharding(am, s.spec._normalized(ndim), s.spec.unreduced, s.spec.reduced)


# The mesh that a jit traced outside any mesh takes from its arguments (JAX's avals carry theirs).
_args_mesh = threading.local()


def _default_sharding(aval):
    """The kernel's ``default_sharding`` hook: what ``aval.sharding`` reads where the type holds
    none (the Auto mode, no mesh): JAX's answer, replicated (``P(None, ...)``) over the abstract
    mesh in scope, else over the mesh of the arguments of the jit being traced (the empty mesh
    outside both)."""
    am = get_abstract_mesh()
    if am.empty:
        am = getattr(_args_mesh, "mesh", None) or am
    return _replicated(am, len(aval.shape))


@contextlib.contextmanager
def untyped_over_args(flat, shardings=None):
    """While a jit traces ``flat`` outside any mesh: untyped values read their sharding over the
    one mesh the arguments (or ``shardings``, its in_shardings) are placed over, as JAX's
    (``x.aval.sharding.mesh`` is the arguments' abstract mesh). Nothing else changes."""
    meshes = set()
    if get_abstract_mesh().empty:
        for x in flat:
            b = getattr(x, "_buffer", None)
            m = getattr(getattr(b, "_sharding", None), "_fg_mesh", None)
            if isinstance(m, Mesh):
                meshes.add(m.abstract_mesh)
        for s in shardings or ():
            if isinstance(s, NamedSharding):
                meshes.add(s.mesh if isinstance(s.mesh, AbstractMesh) else s.mesh.abstract_mesh)
    if len(meshes) != 1:
        yield
        return
    prev = getattr(_args_mesh, "mesh", None)
    _args_mesh.mesh = meshes.pop()
    try:
        yield
    finally:
        _args_mesh.mesh = prev


kernel.register(sharding_types=(_apply_sharding, _buffer_sharding, _default_sharding))


# ``typeof`` of a value of a shard_map body being staged: funcgrad.parallel's (its varying axes).
manual_aval_hooks: list = []


def with_default_sharding(x, aval):
    """``aval`` as ``typeof`` shows it: where its type holds no sharding (the Auto mode, one
    device), JAX's answer -- replicated (``P(None, ...)``) over the abstract mesh of the array's
    mesh, else of the mesh in scope (empty outside one). A value of a checked shard_map body
    being staged shows the manual axes it varies along (``{V:i}``, as JAX's)."""
    for hook in manual_aval_hooks:
        manual = hook(x, aval)
        if manual is not None:
            aval = manual
            break
    if aval._sharding is None and hasattr(aval, "with_sharding"):  # a shard_map body's block
        return aval.with_sharding(NamedSharding(get_abstract_mesh(), PartitionSpec(*[None] * aval.ndim)))
    if aval._sharding is not None or type(aval) is not core.ShapedArray:
        return aval
    am = None
    b = getattr(x, "_buffer", None)
    if b is not None:
        # As JAX's: an array placed by a NamedSharding is typed over its mesh's abstract mesh, one
        # committed to one device (device_put to a device or a SingleDeviceSharding) over no mesh.
        mesh = getattr(b._sharding, "_fg_mesh", None)
        if isinstance(mesh, Mesh):
            am = mesh.abstract_mesh
        elif getattr(b, "_committed", False):
            am = _NO_MESH
    elif not isinstance(x, core.Tracer) and not hasattr(x, "_buffer"):
        am = _NO_MESH  # a NumPy array or a Python scalar has no sharding (JAX's empty mesh)
    if am is None:
        am = get_abstract_mesh()
    spec = PartitionSpec(*([None] * aval.ndim))
    return aval.update(sharding=NamedSharding(am, spec))  # (its memory space kept)


def scan_step_avals(avals, where: str = "scan") -> list:
    """The type of one step of each scanned array: its leading dimension dropped, the sharding
    of the others kept. That leading dimension must be whole (JAX's rule: each step would
    otherwise live on some devices only).

    >>> import numpy as np
    >>> scan_step_avals([core.ShapedArray((3, 2), np.dtype("float32"))])
    [ShapedArray(float32[2])]
    """
    out = []
    for a in avals:
        s = a._sharding
        if s is None:
            # (a step of a checked shard_map body's value varies as it does: its manual axis type)
            step = core.ShapedArray(a.shape[1:], a.dtype, a.weak_type)
            out.append(step if a.mat.empty else step.with_manual_axis_type(a.mat))
            continue
        spec = sr.spec_of(a)
        if spec[0]:
            shown = ", ".join(str(b._sharding.spec) if b._sharding is not None else "P()" for b in avals)
            if where == "scan":
                raise ValueError(f"0th dimension of all xs should be replicated. Got {shown}")
            raise ValueError(f"0th dimension of leaf passed to `{where}` should be replicated. Got {a}")
        # (its unreduced and reduced axes too: a step of reduced stacked weights is reduced)
        typed = type_sharding(s.mesh, spec[1:], s.spec.unreduced, s.spec.reduced)
        step = core.ShapedArray(a.shape[1:], a.dtype, a.weak_type, typed)
        out.append(step if a.mat.empty else step.with_manual_axis_type(a.mat))
    return out


def check_carry_types(what: str, fun, paths, carry_in, carry_out) -> None:
    """JAX's check that a loop body returns its carry sharded as it took it (on explicit mesh
    axes a carry's sharding is part of its type): a ``TypeError`` naming each mismatch."""

    def plain(a):
        return str(a).lstrip("~")

    diffs = []
    for path, a, o in zip(paths, carry_in, carry_out):
        if type(a) is core.ShapedArray and type(o) is core.ShapedArray and sr.spec_of(a) != sr.spec_of(o):
            diffs.append((path, a, o))
    if not diffs:
        return
    try:
        name = next(iter(inspect.signature(fun).parameters))
    except (StopIteration, TypeError, ValueError):
        name = None
    lines = []
    for path, a, o in diffs:
        path = "" if path in ("", "()", "(the value)") else path
        who = (
            (f"the input carry component {name}{path}" if path else f"the input carry {name}")
            if name
            else (f"the input carry at path {path}" if path else "the input carry")
        )
        lines.append(
            f"{who} has type {plain(a)} but the corresponding output carry component has type {plain(o)}"
        )
    if len(lines) == 1:
        differences = lines[0][0].upper() + lines[0][1:] + ".\n"
    else:
        differences = "\n".join(f"  * {d};\n" for d in lines[:-1]) + f"  * {lines[-1]}.\n"
    raise TypeError(
        f"{what} function carry input and carry output must have equal types, but they differ:\n\n"
        f"{differences}\nRevise the function so that all output types match the corresponding input types. "
        "(On explicit mesh axes a sharding is part of the type: reshard the initial carry or the body's "
        "result so they agree.)"
    )


def renamed_out_shardings(out_avals):
    """The output shardings of a jitted function whose results are typed over an abstract mesh
    other than the mesh in scope's (traced under ``use_abstract_mesh``, as in JAX's parallel
    programming tutorial): each over the mesh in scope laid out as its type's mesh, so the
    results carry that mesh; ``None`` when there is none (the common case, left to XLA). A result
    typed unreduced or reduced gets that sharding too, which its Array carries (NOTE: [unreduced
    values])."""
    mesh = get_mesh()
    if mesh is None:
        return None
    mine = mesh.abstract_mesh
    outs = [None] * len(out_avals)
    for i, a in enumerate(out_avals):
        s = getattr(a, "_sharding", None)
        if (
            s is not None
            and (s.mesh != mine or s.spec.unreduced or s.spec.reduced)
            and s.mesh.size == mesh.size
        ):
            outs[i] = NamedSharding(concrete_mesh(s.mesh), s.spec)._bridge(a.ndim)
    return tuple(outs) if any(o is not None for o in outs) else None
