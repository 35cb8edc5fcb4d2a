"""The route of a jitted call over several devices: plan, lower and compile an SPMD program (a
``programs.Compiled`` that ``execute.run`` runs, as every compiled program).

Layer: xla_bridge. May import the funcgrad kernel (``ir``, ``array``, ``core``), the primitive
catalog (``primitives.sharding``: the meshes a jaxpr holds) and the siblings ``programs``,
``lowering``, ``meshes``, ``reshard``, ``spmd_route``, ``transfers``, ``sharded`` and
``spmd_executables`` (never ``dispatch``, which imports it on first use: it loads jaxlib). Never
the surface: shardings arrive as ``sharded.MeshSharding`` objects (the surface's
``NamedSharding._bridge``), meshes as opaque values read through ``mesh._flat``, ``mesh.devices``
and ``mesh.axis_names``.

# NOTE: [SPMD call route]
# ``dispatch`` hands a call here when its program must run on several devices: the jitted
# function has in/out shardings, an argument is a sharded Array, or the jaxpr holds a shard_map or
# a sharding constraint (``spmd_route.needs_spmd``). ``plan`` picks the devices -- those of the explicit
# shardings, else of the sharded arguments, else of the meshes inside, else of the mesh
# ``set_mesh`` set (NOTE: [placement in context]) -- and each argument's
# sharding: the one requested, else the argument's own (a sharded Array on those devices), else
# a whole copy on every device (as JAX treats uncommitted values). ``compiled`` lowers the jaxpr
# with Shardy annotations (``sdy.sharding`` on @main's parameters and requested results) and
# compiles it once per (jaxpr, shardings); the partitioner inserts the communication.
# ``execute.run`` moves each argument to its sharding (``to_sharded_buffer``: on the devices when
# it is laid out otherwise there, NOTE: [device-to-device resharding]; through the host from other
# devices) before the executable's own checks (xla_bridge/spmd_executables.py: XLA would crash on
# a buffer on the wrong device).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives.callbacks import debug_callback_p, ordered_callback_in
from funcgrad.primitives.sharding import meshes_in, shard_map_p
from funcgrad.xla_bridge import reshard, sharded, spmd_executables
from funcgrad.xla_bridge.executables import option_overrides
from funcgrad.xla_bridge.lowering import Placed, lower_jaxpr, xla_dtype
from funcgrad.xla_bridge.meshes import SpmdLowering
from funcgrad.xla_bridge.programs import ArgumentMismatch, Compiled, cached
from funcgrad.xla_bridge.spmd_route import context_mesh
from funcgrad.xla_bridge.transfers import deleted_buffer_error

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel.array import Array
from funcgrad.kernel.ir import Var, backward_dependencies

__all__ = ["compiled", "plan", "prepare", "shard_arg", "to_sharded_buffer"]


def _sharded_arg(x) -> bool:
    return type(x) is Array and x._buffer is not None and sharded.is_sharded(x._buffer)


def plan(closed, args, in_shardings=None, out_shardings=None):
    """``(devices, mesh, in_shardings)`` of a call: the program's devices (in partition order),
    the mesh its unannotated values are replicated over, and one ``MeshSharding`` per input."""
    n_in = len(closed.in_avals)
    in_shardings = list(in_shardings) if in_shardings is not None else [None] * n_in
    out_shardings = list(out_shardings) if out_shardings is not None else []
    candidates = [s for s in (*in_shardings, *out_shardings) if s is not None]
    candidates += [x._buffer._sharding for x in args if _sharded_arg(x)]
    mesh = None
    devices = None
    for s in candidates:
        if s._fg_mesh is not None and mesh is None:
            mesh = s._fg_mesh
        if devices is None:
            devices = s._fg_devs
    inner = meshes_in(closed)
    if mesh is None and inner:
        mesh = inner[0]
    if devices is None and mesh is None:
        mesh = context_mesh()  # uncommitted values under set_mesh (NOTE: [placement in context])
    if devices is None:
        devices = mesh._flat
    devset = set(devices)
    for s in candidates:
        # One device order too: the program's parameters and results are numbered in it, and a
        # buffer laid out over the same devices in another order is refused by XLA (JAX's check
        # compares the device assignments in order as well).
        if tuple(s._fg_devs) != tuple(devices):
            ids = lambda ds: [d.id for d in ds]  # noqa: E731
            platform = devices[0].platform.upper()
            raise ValueError(
                "Received incompatible devices for jitted computation. Got shardings with device ids "
                f"{ids(devices)} on platform {platform} and with device ids {ids(s._fg_devs)} on platform "
                f"{platform}: one program runs on one list of devices, in one order; device_put the values "
                "onto one mesh's devices first"
            )
    for s, x in zip(in_shardings, args):
        # A committed value laid out otherwise than the jit's in_shardings say: JAX's error (it
        # moves uncommitted values only).
        if s is not None and _sharded_arg(x):
            have = x._buffer._sharding
            if have is not s and not (have._fg_devs == s._fg_devs and sharded.same_layout(have, s, x.ndim)):
                raise ValueError(
                    "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
                    f"sharding: {s}, arg sharding: {have} for arg shape: {x.shape} (device_put the "
                    "argument with the jit's sharding first, or give None for it)"
                )
    for m in inner:
        if set(m._flat) != devset:
            raise ValueError(
                "a shard_map or sharding constraint over the devices "
                f"{sorted(d.id for d in m._flat)} is called "
                f"with values on the devices {sorted(d.id for d in devices)}"
            )
    resolved = []
    fed = _shard_map_operands(closed) if inner else {}
    for i, (s, x) in enumerate(zip(in_shardings, args)):
        if s is None:
            if _sharded_arg(x) and x._buffer._sharding._fg_devs == tuple(devices):
                s = x._buffer._sharding
            elif i in fed and set(fed[i][0]._flat) == devset:
                s = sharded.named_sharding(*fed[i])  # put as the shard_map splits it
            else:
                s = sharded.replicated(devices, mesh)
        resolved.append(s)
    return tuple(devices), mesh, resolved


def _shard_map_operands(closed) -> dict:
    """``{input index: (mesh, spec)}`` for the inputs a top-level shard_map takes as they are."""
    position = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    fed: dict = {}
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive is shard_map_p:
            for a, spec in zip(eqn.invars, eqn.params["in_specs"]):
                i = position.get(a) if type(a) is Var else None
                if i is not None and i not in fed:
                    fed[i] = (eqn.params["mesh"], spec)
    return fed


def _spec_of(s, mesh, ndim):
    """``(mesh, spec)`` or the HloSharding text of a sharding, for the module text."""
    if s._fg_hlo.is_replicated() and mesh is not None:
        return (mesh, ((),) * ndim)
    if mesh is None and len(s._fg_devs) == 1:
        return None  # (a program on one device without a mesh: nothing to annotate)
    spec = sharded.spec_of(s, ndim)
    if spec is not None:
        return (s._fg_mesh, spec)
    # (NOTE: [Shardy reads sdy shardings only]: HLO text only where no mesh can say it)
    return sharded.tile_spec(s, ndim) or str(s._fg_hlo)


def _in_memory(spec, s):
    """``spec`` in the memory kind of the sharding ``s`` when that is not the devices' own (the
    module text then differs per kind, so programs of other kinds are not shared)."""
    kind = getattr(s, "_fg_kind", None)
    return spec if kind is None else Placed(spec, kind)


# (config jax_remove_size_one_mesh_axis_from_type, set by funcgrad._sharding_types: types leave
# explicit axes of size 1 out, and a jitted result laid out as its type is given the type's spec)
remove_size_one_axes = [False]


def _typed_spec(aval, mesh, mixed: bool = False):
    """``(mesh, spec)`` of a result typed with a sharding on explicit mesh axes (NOTE: [sharding
    in types]), or None: the partitioner chooses. On a mesh with Auto axes too, only with
    ``mixed`` (the type's explicit axes alone, for a layout XLA reports without them)."""
    s = aval._sharding
    if s is None or mesh is None or tuple(mesh.axis_names) != s.mesh.axis_names:
        return None
    if not mixed and any(t.name != "Explicit" for t in mesh.axis_types):
        return None  # auto axes may still split it: left to the partitioner
    spec = [() if p is None else (p if isinstance(p, tuple) else (p,)) for p in s.spec]
    return (mesh, tuple(spec) + ((),) * (aval.ndim - len(spec)))


def _unreduced_axes(aval) -> frozenset:
    s = aval._sharding
    return frozenset((getattr(s.spec, "unreduced", None) if s is not None else None) or ())


def _ur_typed(aval, mesh) -> bool:
    """Whether ``aval`` is typed unreduced or reduced over axes of ``mesh``."""
    s = aval._sharding
    spec = getattr(s, "spec", None)
    return bool(
        spec is not None
        and (getattr(spec, "unreduced", None) or getattr(spec, "reduced", None))
        and tuple(mesh.axis_names) == tuple(s.mesh.axis_names)
    )


def _unreduced_spec(spec, aval, s=None):
    """``(mesh, spec)`` with the axes ``aval``'s type, or the sharding ``s`` asked for it, is
    unreduced over, when it is: the devices' blocks of such a parameter or result are partial
    sums (NOTE: [unreduced values]; a result asked unreduced is XLA's replicated-to-unreduced
    cast of its value)."""
    unreduced = _unreduced_axes(aval) | sharded.asked_unreduced(s)
    if not unreduced or not isinstance(spec, tuple):
        return spec
    return (*spec, unreduced)


def compiled(
    closed, name, donated, devices, mesh, in_shardings, out_shardings=None, names=None, compiler_options=None
) -> Compiled:
    """The program of ``closed`` for ``devices`` with these shardings: the SPMD builder of
    ``programs.cached`` (NOTE: [one compiled program]). ``names``: ``(arg_names, result_names)``
    for the module's text (``lower_jaxpr``'s), or None. ``compiler_options``: XLA's options by
    name (``Lowered.compile``'s, as on one device), part of the key."""
    out_shardings = tuple(out_shardings) if out_shardings is not None else (None,) * len(closed.out_avals)
    donated_t = tuple(donated) if donated is not None and any(donated) else None
    options = option_overrides(compiler_options)
    key = (id(closed), tuple(devices), tuple(map(id, in_shardings)), tuple(map(id, out_shardings)), donated_t)
    if options:
        key = (*key, options)
    return cached(
        key,
        closed,
        lambda: _build(closed, name, donated_t, devices, mesh, in_shardings, out_shardings, names, options),
        in_shardings,
    )


def _read_inputs(jaxpr) -> tuple[bool, ...]:
    """Which of ``jaxpr``'s inputs its live equations or results read (JAX's jit drops the others
    from its program after dead-code elimination: keep_unused=False), for the choice of the
    argument whose sharding results take."""
    needed = backward_dependencies(jaxpr.eqns, jaxpr.outvars, effects=True, refused=False)[0]
    return tuple(v in needed for v in jaxpr.invars)


def _build(
    closed, name, donated_t, devices, mesh, in_shardings, out_shardings, names=None, options=()
) -> Compiled:
    if len(devices) > 1 and ordered_callback_in(closed, (debug_callback_p,)):
        # (JAX's refusal: an ordered debug print has no one order over several devices; an
        # ordered io_callback runs on one device, as JAX's shardable ordered effects)
        raise ValueError(
            "The following ordered effects are not supported for more than 1 device: [OrderedDebug]"
        )
    spmd = SpmdLowering([d.id for d in devices], mesh)
    arg_specs = [
        _in_memory(_unreduced_spec(_spec_of(s, mesh, a.ndim), a), s)
        for s, a in zip(in_shardings, closed.in_avals)
    ]
    out_specs = [
        _in_memory(_unreduced_spec(_typed_spec(a, mesh) if s is None else _spec_of(s, mesh, a.ndim), a, s), s)
        for s, a in zip(out_shardings, closed.out_avals)
    ]
    platform = sharded.runtime.normalize_platform(devices[0].platform)
    arg_names, result_names = names if names is not None else (None, None)
    lowered = lower_jaxpr(
        closed, name, donated_t, spmd, arg_specs, out_specs, platform,
        arg_names=arg_names, result_names=result_names,
    )  # fmt: skip
    n_const = len(lowered.const_args)
    const_sharding = sharded.replicated(devices, mesh)
    params = [const_sharding] * n_const + list(in_shardings)
    exe = spmd_executables.compile_spmd(
        lowered.text,
        lowered.in_avals,
        lowered.out_avals,
        devices,
        params,
        mesh,
        lowered.donate_argnums,
        lowered.host_callbacks,
        read=(False,) * n_const + _read_inputs(closed.jaxpr),  # (constants are no arguments)
        compiler_options=options,
    )
    # Requested output shardings keep their identity (the surface's NamedSharding objects).
    for j, s in enumerate(out_shardings):
        a = closed.out_avals[j]
        if s is not None and (
            _unreduced_axes(a)
            or sharded.asked_unreduced(s)
            or sharded.same_layout(s, exe.out_shardings[j], a.ndim)
        ):
            exe.replace_out_sharding(j, s)  # (an unreduced result is laid out as its type, unsummed)
        elif s is None and mesh is not None and _ur_typed(a, mesh):
            # (a result typed unreduced or reduced carries that sharding: the type's, over the
            # program's mesh; NOTE: [unreduced values])
            exe.replace_out_sharding(j, type(a._sharding)(mesh, a._sharding.spec)._bridge(a.ndim))
    # On one device XLA reports every result replicated, and on several it drops the mesh axes of
    # size 1; a result typed over explicit mesh axes keeps its type's layout there, as JAX's
    # (NOTE: [sharding in types]: P('x', None, None) on a (1, 2) mesh, also where the mesh's other
    # axes are Auto: the layout is then compared with the explicit axes' alone).
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape)) if mesh is not None else {}
    for j, s in enumerate(out_shardings):
        typed = _typed_spec(closed.out_avals[j], mesh, mixed=True) if s is None else None
        if typed is None or not (any(typed[1]) or remove_size_one_axes[0]):
            continue
        if (
            len(devices) == 1
            or remove_size_one_axes[0]
            or any(sizes.get(n) == 1 for d in typed[1] for n in d)
        ):
            named = sharded.named_sharding(mesh, typed[1])
            if len(devices) == 1 or sharded.same_layout(
                named, exe.out_shardings[j], closed.out_avals[j].ndim
            ):
                exe.replace_out_sharding(j, named)
    if mesh is not None:
        _over_typed_meshes(closed.out_avals, out_shardings, mesh, exe)
    consts = [sharded.put(np.asarray(c, xla_dtype(c.dtype)), const_sharding) for c in lowered.const_args]
    return Compiled(closed, exe, consts, lowered.text, lowered.donate_argnums, in_shardings=in_shardings)


def _over_typed_meshes(out_avals, out_shardings, mesh, exe) -> None:
    """A result is laid out over the mesh its type shows, as JAX's: where that is the program's
    mesh with other axis types (an argument made under another ``set_mesh``, a result of a
    ``use_abstract_mesh`` block inside the function), the result's sharding is over the program's
    devices with the type's axis types (JAX's ``out.sharding.mesh.axis_types``). A result typed
    with no sharding (funcgrad leaves Auto axes out of types) is over the mesh ``set_mesh`` set,
    where that is the program's with other types (``explicit_axes`` under an Auto mesh)."""
    shape = tuple(mesh.devices.shape)
    scope = context_mesh()
    for j, (s, a) in enumerate(zip(out_shardings, out_avals)):
        if s is not None or not hasattr(a, "_sharding"):
            continue
        t = scope if a._sharding is None else a._sharding.mesh
        if (
            t is None
            or tuple(t.axis_types) == tuple(mesh.axis_types)
            or tuple(t.axis_names) != tuple(mesh.axis_names)
            or tuple(t.axis_sizes) != shape
        ):
            continue
        have = exe.out_shardings[j]
        spec = sharded.spec_of(have, a.ndim)
        if spec is not None:
            kind = getattr(have, "_fg_kind", None)
            typed = mesh.update(axis_types=tuple(t.axis_types))
            exe.replace_out_sharding(j, sharded.named_sharding(typed, spec, memory_kind=kind))


def to_sharded_buffer(x, s, aval, name: str = "argument"):
    """A buffer of argument ``x`` laid out as ``s`` (a sharded ArrayImpl)."""
    if type(x) is Array:
        b = x._buffer
        if x._value is None and b.is_deleted():  # donated or deleted (NOTE: [donated arrays])
            raise deleted_buffer_error(b, f"jit call: {name}: ")
        if b is not None and sharded.is_sharded(b):
            have = b._sharding
            if have is s or (have._fg_devs == s._fg_devs and sharded.same_layout(have, s, aval.ndim)):
                _check_aval(b.aval, aval, name)
                return b
            _check_aval(b.aval, aval, name)
            moved = reshard.reshard(b, s)  # NOTE: [device-to-device resharding]
            if moved is not None:
                return moved
        elif b is not None and not b.is_deleted():
            _check_aval(b.aval, aval, name)
            moved = reshard.onto_its_device(b, s)  # (a layout over its one device: not via the host)
            if moved is not None:
                return moved
        value = x._numpy()
        weak = x.weak_type
    elif isinstance(x, core.Tracer):
        raise core.UnexpectedTracerError(core._leak_message(x))
    elif type(x) is core.Token and aval is core.abstract_token:
        # A token travels as a bool[0] buffer on every device (NOTE: [tokens] in kernel/ir.py).
        x.block_until_ready()
        value, weak = np.zeros(0, np.bool_), False
    else:
        weak = type(x) in _fdt.python_scalar_types or type(x) in _fdt.typed_scalar_types
        value = np.asarray(x, dtype=aval.dtype if weak else None)
        if not _fdt.x64_enabled:  # NOTE: [x64 mode]: a 64-bit NumPy argument enters as 32 bits
            value = _fdt.canonical_value(value)
    if tuple(value.shape) != tuple(aval.shape) or np.dtype(value.dtype) != np.dtype(aval.dtype):
        raise ArgumentMismatch(name, value.shape, value.dtype, aval)
    return sharded.put(np.asarray(value, xla_dtype(value.dtype)), s, weak_type=weak)


def _check_aval(got, want, name):
    if tuple(got.shape) != tuple(want.shape) or got.dtype != xla_dtype(want.dtype):
        raise ArgumentMismatch(name, got.shape, got.dtype, want)


def prepare(
    closed, args, name, donated=None, in_shardings=None, out_shardings=None, names=None, compiler_options=None
) -> Compiled:
    """The compiled program (cached) of a call of ``closed`` on ``args`` over several devices;
    ``execute.run`` runs it (NOTE: [one compiled program]). ``names``, ``compiler_options``:
    ``compiled``'s."""
    devices, mesh, resolved = plan(closed, args, in_shardings, out_shardings)
    return compiled(closed, name, donated, devices, mesh, resolved, out_shardings, names, compiler_options)


def shard_arg(x, s):
    """A buffer of ``x`` (a NumPy array or a scalar) laid out as ``s``: the C++ dispatcher's
    transfer of arguments it cannot move itself (values for several devices)."""
    if type(s) is not sharded.MeshSharding:
        return None
    weak = type(x) in (bool, int, float, complex)
    # NOTE: [x64 mode]: the dispatcher keyed the call on the 32-bit signature, and the program
    # takes 32-bit parameters: a 64-bit buffer crashed XLA (a NumPy float64 argument under a mesh).
    value = _fdt.canonical_value(np.asarray(x))
    return sharded.put(np.asarray(value, xla_dtype(value.dtype)), s, weak_type=weak)
