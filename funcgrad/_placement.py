"""Where an ``Array`` lives: its ``sharding``, ``devices()``, ``device``, ``addressable_shards``;
putting values on devices as a sharding says (``device_put``), building sharded arrays from
per-device pieces (``make_array_from_callback``, ``make_array_from_single_device_arrays``,
``make_array_from_process_local_data``), and ``with_sharding_constraint`` (``jax.lax``'s name,
re-exported by ``funcgrad.lax``).

Layer: surface. Imports the kernel (``Array``, registration, tree_util, core), the primitive
catalog (``primitives.sharding``'s constraint), ``xla_bridge`` (``sharded`` and ``runtime``),
``funcgrad._shardings`` and the two modules a floor below that it re-exports:
``funcgrad._array_placement`` (an Array's placement properties and its buffer's life) and
``funcgrad._array_assembly`` (``make_array_from_*``); never ``funcgrad.numpy`` or ``funcgrad.lax``
(``funcgrad.numpy`` imports this module for the Array API's ``device``/``to_device``).

An Array holds a host value, a one-device buffer, or a sharded buffer (one jaxlib array over
several devices, ``xla_bridge.sharded``). Its placement properties are installed on ``Array``
(and, raising a clear error, on tracers) through ``kernel.register`` when this module is imported
(``funcgrad.api`` imports it; ``to_device`` here, the rest by ``funcgrad._array_placement``). A
host value is on the default device, as an uncommitted JAX array is. Reading a sharded Array on
the host (``np.asarray``, printing, an eager operation) assembles every shard; eager operations
compute on the host and return host Arrays (jitted functions keep values sharded on the
devices).

>>> import funcgrad, numpy as np
>>> x = funcgrad.device_put(np.arange(4.0), funcgrad.devices()[0])
>>> x.devices() == {funcgrad.devices()[0]}, x.sharding.is_fully_replicated
(True, True)
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

import funcgrad.xla_bridge.dispatch  # noqa: F401 - registers Array's device read-back (NOTE: [dispatch registration])
from funcgrad import (
    _array_assembly,
    _sharding_types,  # (and registers the types of sharded values with the kernel)
    _transfer_guard,
    kernel,
    xla_bridge,
)
from funcgrad import _sharding_unreduced as _unreduced
from funcgrad._array_assembly import (
    make_array_from_callback,
    make_array_from_single_device_arrays,
)
from funcgrad._array_placement import (
    Shard,
    _array_only,
    _sharded_buffer,
    _sharding,
    copy_to_host_async,  # noqa: F401 - re-exported (NOTE: [derived namespaces])
)
from funcgrad._devices import process_count
from funcgrad._memory import KINDS, Space
from funcgrad._shardings import (
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    check_aval_sharding,
    check_type_divisibility,
    concrete_mesh,
    from_bridge,
    get_abstract_mesh,
    resolve,
    sharding_leaves,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import canonical_value, python_scalar_types
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import memory_space_of_kind
from funcgrad.kernel.partial_eval import StagingTracer, under_staging
from funcgrad.kernel.recording import EffectsInRecording, RecordingTrace
from funcgrad.primitives import _sharding_rules, _unreduced_rules
from funcgrad.primitives import sharding as shp
from funcgrad.primitives.placement import ArrayCopySemantics, device_put_p, device_put_to

__all__ = [
    "Shard",
    "reshard",
    "recast",
    "takes_out_sharding",
    "with_sharding_constraint",
    "device_put_sharded",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = (
    "memory",
    "Shard",
    "copy_to_host_async",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "make_array_from_process_local_data",
    "reshard",
)


# JAX's ``jax.memory``: a namespace holding ``Space`` (funcgrad/_memory.py).
memory = types.SimpleNamespace(Space=Space)


def _to_device(x, device, /, *, stream=None):
    """The Array API's ``x.to_device(device)``: a copy of ``x`` on ``device`` (a device or a sharding)."""
    _array_only(".to_device()")(x)
    if stream is not None:
        raise ValueError(
            "to_device: stream= is not supported (funcgrad copies synchronously); pass stream=None"
        )
    if isinstance(device, Sharding):
        return device_put_sharded(x, device)
    try:
        xla_bridge.resolve_device(device=device)
    except (TypeError, ValueError) as e:
        raise ValueError(f"to_device: device must be one of funcgrad.devices() or a Sharding ({e})") from None
    return Array._from_buffer(
        xla_bridge.device_put(np.asarray(x), device, weak_type=x.weak_type), x.weak_type
    )


# (the Array's other placement methods and properties are registered by funcgrad._array_placement)
kernel.register(array_methods={"to_device": _to_device})


# ----------------------------------------------------------------------------------------------
# Putting values on devices


# NOTE: [unreduced values] (funcgrad/_sharding_unreduced.py): an eager contraction left unreduced
# is built on shard_map; funcgrad.sharding registers it here.
unreduced_ops: dict = {}
# ``auto_axes`` (funcgrad.sharding registers it): ``takes_out_sharding(in_auto_axes=True)``.
switched_ops: dict = {}


def _put_leaf(v, s: Sharding):
    check_type_divisibility(s, np.shape(v))  # (explicit axes retype the value first, as JAX's)
    check_aval_sharding(s, np.shape(v), "device_put args")
    from_array = isinstance(v, Array)
    weak = v.weak_type if from_array else type(v) in (bool, int, float, complex)
    if isinstance(v, core.Tracer):
        moved = _put_differentiated(v, s)
        if moved is not None:
            return moved
        if isinstance(s, NamedSharding):
            v = _constrain(v, s, strict=False)  # (device_put moves data, as reshard does)
        space = memory_space_of_kind(s.memory_kind)
        if s.memory_kind is not None and space is not getattr(v.aval, "memory_space", space):
            v = device_put_to(v, space)  # its memory, in its type (NOTE: [memory space in types])
        return v
    if from_array and v.committed and v.sharding == s:
        return v  # (JAX's: an Array already placed as asked is itself; device_put(may_alias=False) copies)
    if from_array and _unreduced.unreduced_of(v):  # its value: the sums of its groups
        v = Array._from_owned(_unreduced.reduced_value(v), weak)
    if isinstance(s, NamedSharding) and s.spec.unreduced:
        held = _unreduced.held_blocks(v) if from_array else None
        value = v._numpy() if from_array else canonical_value(np.asarray(v))
        return Array._from_buffer(_unreduced.put_unreduced(np.asarray(value), s, held), weak)
    if from_array and isinstance(s, NamedSharding) and _sharded_buffer(v) is not None:
        # Already on devices: moved there by a compiled program when the devices are the same
        # (NOTE: [device-to-device resharding] in xla_bridge/reshard.py), not through the host.
        moved = xla_bridge.reshard.reshard(_sharded_buffer(v), s._bridge(v.ndim))
        if moved is not None:
            return v if moved is _sharded_buffer(v) else Array._from_buffer(moved, weak)
    # (a NumPy value takes the mode's dtype, as it enters: int32 for int64 with x64 off)
    value = v._numpy() if from_array else canonical_value(np.asarray(v))
    if isinstance(s, SingleDeviceSharding):
        buf = xla_bridge.device_put(value, s._device, weak_type=weak, memory_kind=s._memory_kind)
        return Array._from_buffer(buf, weak)
    bridge = s._bridge(value.ndim)
    if from_array:
        b = _sharded_buffer(v)
        if b is not None and b._sharding is bridge:
            return v
    return Array._from_buffer(xla_bridge.sharded.put(value, bridge, weak_type=weak), weak)


def placed_in_context(x):
    """``x``, a concrete value just made on the host without a primitive (a creation function's,
    ``jnp.ones``, ``jnp.asarray`` of NumPy data), placed as a computation's result is under
    ``set_mesh``: replicated over the mesh and committed (NOTE: [placement in context] in
    funcgrad/_meshes.py; the spec ``P(None, ...)`` of the result's type on Explicit axes, as
    JAX's). Anything else (a traced value, a committed or sharded Array) is returned as it is.

    >>> import numpy as np
    >>> placed_in_context(Array._from_owned(np.ones(2), False)).committed  # no mesh set
    False
    """
    if hooks.context_mesh is None or type(x) is not Array:
        return x
    mesh = hooks.context_mesh()
    if (
        mesh is None
        or (x._buffer is not None and x._buffer._committed)
        or under_staging(core.current_trace())
        or get_abstract_mesh().manual_axes
    ):
        # (under jit a made value is a constant of the program, which runs on the mesh; inside a
        # shard_map body, whose mesh in scope has Manual axes as JAX's, it is one block for every
        # device, typed without the mesh: a value the body closes over is another matter, JAX's
        # refusal in _shard_map_eager.refuse_explicit_const)
        return x
    spec = PartitionSpec(*([None] * x.ndim)) if mesh.abstract_mesh.explicit_axes else PartitionSpec()
    return _put_leaf(x, NamedSharding(mesh, spec))


def device_put_space(x, space: Space):
    """``device_put(x, space)`` (a ``funcgrad.memory.Space``): every leaf of ``x`` in that memory
    of its own device (``Space.Any``: where it is); a traced leaf as it is."""
    kind = KINDS.get(space)

    def put(v):
        if isinstance(v, core.Tracer):
            # a device_put equation: the result is typed in that memory (NOTE: [memory space in types])
            return device_put_to(v, space)
        if kind is None:
            return v if isinstance(v, Array) else Array(canonical_value(np.asarray(v)))
        s = _sharding(v) if isinstance(v, Array) else SingleDeviceSharding(xla_bridge.default_device())
        return _put_leaf(v, s.with_memory_kind(kind))

    return tu.tree_map(put, x)


def _concrete_primal(v):
    """The value under ``v``'s chain of forward-mode primals (an Array keeps its placement, which
    JAX's ``to_concrete_value`` reads for ``device_put``'s source), or None where a tracer has none
    (``vmap``'s, a staging trace's)."""
    while isinstance(v, core.Tracer):
        v = getattr(v, "primal", None)
    return v


def device_put_traced(v, device):
    """``device_put(v, device)`` of a traced ``v`` (a ``Device``): under a staging trace (``jit``)
    ``v`` as it is (the staged program places its values); under eager transformations
    (``grad``, ``vmap``) a ``device_put`` equation to ``device`` whose source is ``v``'s concrete
    value's device, as JAX's ``src`` inference: the transpose sends the cotangent back there."""
    trace = core.current_trace()
    if under_staging(trace):
        return v
    if isinstance(trace, RecordingTrace):  # (a recorded program runs on one device)
        raise EffectsInRecording("device_put")
    src = _concrete_primal(v)
    src = next(iter(src.devices())) if isinstance(src, Array) and len(src.devices()) == 1 else None
    return device_put_p.bind(
        v, devices=(device,), srcs=(src,), copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)
    )[0]


def _put_differentiated(v, s: Sharding):
    """``device_put(v, s)`` of a value ``v`` traced by an eager derivative (``grad``, ``jvp``,
    ``vjp``), whose primal is concrete: a ``device_put`` equation to ``s`` whose source is the
    primal's sharding where it is an Array, as JAX's ``_infer_src_sharding``
    (``x.to_concrete_value()``), so the transpose sends the cotangent back there (``grad`` of
    ``f(device_put(a, NamedSharding(mesh, P())))`` is on ``a``'s device, as JAX's); of a NumPy
    primal, no source (the cotangent stays as put). None where the value has no concrete primal
    (under ``jit``, ``vmap``) or the sharding retypes it (explicit axes, unreduced, another
    memory): the caller's constraint then places it."""
    trace = core.current_trace()
    if under_staging(trace) or s.memory_kind not in (None, "device"):
        return None
    if isinstance(s, NamedSharding) and (s.spec.unreduced or s.mesh.abstract_mesh.explicit_axes):
        return None
    if isinstance(trace, RecordingTrace):  # (a recorded program runs on one device)
        raise EffectsInRecording("device_put")
    src = _concrete_primal(v)
    if src is None:
        return None
    src = src.sharding if isinstance(src, Array) else None
    return device_put_p.bind(v, devices=(s,), srcs=(src,), copy_semantics=(ArrayCopySemantics.REUSE_INPUT,))[
        0
    ]


def _put_one(x, d):
    if d is None:  # (a cotangent whose source was unknown: where it is)
        return x
    if isinstance(d, Sharding):  # (a value placed by a sharding, or its cotangent sent back)
        return _put_leaf(x, d)
    if isinstance(d, xla_bridge.sharded.Device):
        return _put_leaf(x, SingleDeviceSharding(d))
    return device_put_space(x, d)


# The eager step of a ``device_put`` equation (a jaxpr evaluated eagerly, a checkpoint's offloaded
# residual: NOTE: [offloaded residuals]): each value placed in its memory space, or on its device.
device_put_p.def_impl(
    lambda *xs, devices, srcs, copy_semantics: [_put_one(x, d) for x, d in zip(xs, devices)]
)


def device_put_sharded(x, shardings):
    """``device_put(x, sharding)``: every leaf of ``x`` laid out as its sharding (``shardings``: one
    sharding, or a pytree prefix of ``x``)."""
    leaves, tree = tu.tree_flatten(x)
    specs = sharding_leaves(shardings, x, "device_put")
    out = []
    for v, s in zip(leaves, specs):
        if (
            _transfer_guard.state.host_to_device
            and not isinstance(v, Array | core.Tracer)
            and type(core.current_trace()) is core.EvalTrace
        ):  # NOTE: [transfer guard]: host data put explicitly (moves between devices are reshards)
            _transfer_guard.host_value(v, is_explicit=True, device=s)
        if s is None:
            out.append(v if isinstance(v, Array) else Array(canonical_value(np.asarray(v))))
        else:
            out.append(_put_leaf(v, s))
    return tu.tree_unflatten(tree, out)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global sharded Array (or a pytree of them) from this process's part of it: each leaf of
    ``local_data`` holds the rows, columns, ... this process's devices hold. ``sharding`` is a
    Sharding, a Device, or a bare PartitionSpec over the mesh in scope, or a pytree prefix of
    ``local_data`` of them; ``global_shape`` (a shape, or a prefix of them) is inferred when None.
    On one process this is ``device_put(local_data, sharding)`` (``global_shape`` must then be None
    or the data's shape), as JAX's.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_process_local_data(s, {"a": np.arange(3.0)})["a"].tolist()
    [0.0, 1.0, 2.0]
    """
    where = "make_array_from_process_local_data"
    is_device = lambda d: isinstance(d, xla_bridge.sharded.Device)  # noqa: E731
    sharding = tu.tree_map(
        lambda d: SingleDeviceSharding(d) if is_device(d) else d, sharding, is_leaf=is_device
    )
    leaves, tree = tu.tree_flatten(local_data)
    shapes = tu.broadcast_prefix(
        global_shape, local_data, is_leaf=lambda g: g is None or isinstance(g, tuple)
    )
    if process_count() == 1:
        for g, d in zip(shapes, leaves):
            if g is not None and tuple(g) != np.shape(d):  # (JAX's words)
                raise ValueError(
                    "When calling `make_array_from_process_local_data` on a single process, "
                    "global_shape should be None or equal to local_data.shape."
                    f"Got global_shape={g} and local_data.shape={np.shape(d)}."
                )
        return device_put_sharded(local_data, sharding)
    shardings = sharding_leaves(sharding, local_data, where)
    out = [
        _array_assembly.make_array_from_process_local_data(s, d, g)
        for s, d, g in zip(shardings, leaves, shapes)
    ]
    return tu.tree_unflatten(tree, out)


def reshard(x, out_shardings):
    """``x`` (a pytree) laid out as ``out_shardings`` (one ``NamedSharding`` or ``PartitionSpec``
    over the mesh in scope, or a pytree prefix of them): a sharded copy outside a
    transformation, a sharding constraint inside ``jit`` that also sets the value's type on
    explicit mesh axes (JAX's ``jax.sharding.reshard``). Resharding onto a mesh of other axes
    than the value's type is an error.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> reshard(np.arange(2.0), s).sharding == s
    True
    """
    leaves, tree = tu.tree_flatten(x)
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(x)]
    targets = list(sharding_leaves(out_shardings, x, "reshard", "out_shardings"))
    for k, (v, s, path) in enumerate(zip(leaves, targets, paths)):
        if not isinstance(s, NamedSharding):
            continue
        ndim = len(np.shape(v))
        if len(s.spec) > ndim and all(p is None for p in tuple(s.spec)[ndim:]):
            # As JAX's reshard: one spec for a whole model may name more (unsharded) dimensions
            # than a leaf has (flax's optimisation cookbook reshards a model to P(None, None)).
            s = targets[k] = s.with_spec(s.spec.update(partitions=tuple(s.spec)[:ndim]))
        elif len(s.spec) < ndim and s.mesh.abstract_mesh.explicit_axes:
            # On explicit axes the result's sharding is its type's, one entry per dimension, as
            # JAX's (reshard(x, P("x")) of a 2-d x is P('x', None); device_put keeps the spec given)
            entries = (*tuple(s.spec), *[None] * (ndim - len(s.spec)))
            s = targets[k] = s.with_spec(s.spec.update(partitions=entries))
        _explicit_names_only(s, "reshard")
        have = _type_sharding(v)
        renamed = (
            get_abstract_mesh() == s.mesh.abstract_mesh and have is not None and have.mesh.size == s.mesh.size
        )
        if (
            have is not None
            and not renamed  # onto the abstract mesh in scope (use_abstract_mesh): the same devices
            and (have.mesh.axis_names, have.mesh.axis_sizes)
            != (s.mesh.axis_names, s.mesh.abstract_mesh.axis_sizes)
        ):
            raise ValueError(
                f"reshard: x{path} ({core.get_aval(v).str_short()}) is typed over the mesh {have.mesh} but "
                f"{s.spec!r} is over {s.mesh.abstract_mesh}: resharding across meshes is not supported; "
                "device_put the value onto the new mesh's devices outside jit (funcgrad.device_put(x, "
                "NamedSharding(new_mesh, spec))), or reshard over the value's own mesh"
            )
    if all(t is not None for t in targets):
        out_shardings = tu.tree_unflatten(tree, targets)
    return _constrain(x, out_shardings, strict=False)


def _type_sharding(v):
    """The sharding in ``v``'s type (NOTE: [sharding in types]), or None."""
    if isinstance(v, Array | core.Tracer):
        return core.get_aval(v).sharding
    return None


def retyped(x):
    """``x`` (an Array) with its type made afresh in the mesh context in scope (the same buffer):
    inside ``auto_axes``/``explicit_axes`` a value is typed as the switched mesh's axes are."""
    if not isinstance(x, Array) or x._buffer is None:
        return x
    return Array._from_buffer(x._buffer, x.weak_type)


def insert_reduced_reshard(x, y):
    """JAX's ``insert_reduced_reshard`` before a binary operation: under a mesh whose axes are all
    explicit, a scalar operand replicated along the axes the other is reduced on is resharded
    reduced there (``x * 2`` of a reduced ``x``: the constant's type ``f32[]{R:x}``, so the
    cotangent ``ct * 2`` of an unreduced ``ct`` is typed). Anything else as it is (cheaply: no
    reduced operand, nothing to do)."""
    rx, ry = _reduced_axes(x), _reduced_axes(y)
    if not (rx or ry):
        return x, y
    scope = get_abstract_mesh()
    if scope.empty or not scope.are_all_axes_explicit:
        return x, y
    out_reduced = rx | ry
    out = []
    for v in (x, y):
        a = core.get_aval(v) if isinstance(v, Array | core.Tracer) else None
        ndim = a.ndim if a is not None else np.ndim(v)
        s = getattr(a, "sharding", None)
        replicated = frozenset(scope.axis_names)
        if s is not None:
            used = {n for d in _sharding_rules.spec_of(a) for n in d}
            replicated = frozenset(s.mesh.axis_names) - used - s.spec.unreduced - s.spec.reduced
        if ndim == 0 and out_reduced <= replicated:
            v = reshard(v, PartitionSpec(reduced=out_reduced))
        out.append(v)
    return tuple(out)


def _reduced_axes(v) -> frozenset:
    if not isinstance(v, Array | core.Tracer):
        return frozenset()
    s = getattr(core.get_aval(v), "sharding", None)
    return frozenset(s.spec.reduced) if s is not None else frozenset()


def recast(tree, mesh, shardings, where: str):
    """Every leaf of ``tree`` (values being traced) typed over ``mesh`` (the same devices with
    other axis types: ``auto_axes``/``explicit_axes``): as ``shardings`` says (a spec or sharding,
    or a pytree prefix of them), else as its type or its layout already is."""
    leaves, treedef = tu.tree_flatten(tree)
    if shardings is None:
        wanted = [None] * len(leaves)
    else:
        with mesh:  # a bare PartitionSpec is over the mesh being switched to
            wanted = sharding_leaves(shardings, tree, where, "the sharding")
    out = []
    for v, s in zip(leaves, wanted):
        if not isinstance(v, Array | core.Tracer):
            v = Array._from_owned(canonical_value(np.asarray(v)), type(v) in python_scalar_types)
        ndim = v.ndim
        ur = {}
        if s is not None:
            entries = tuple(s.spec)
            if len(entries) > ndim and all(e is None for e in entries[ndim:]):
                entries = entries[:ndim]  # (JAX's reshard takes trailing Nones: P(None) of a scalar)
            spec = PartitionSpec(*entries)._normalized(ndim, where)
            ur = shp.ur_params(s.spec.unreduced, s.spec.reduced)  # (auto_axes' out_sharding may name them)
        else:
            have = _type_sharding(v)
            if have is None and isinstance(v, Array) and _sharded_buffer(v) is not None:
                have = _sharding(v)
            spec = have.spec._normalized(ndim, where) if isinstance(have, NamedSharding) else ((),) * ndim
        # (retype: JAX's reshard, whose constraint is its result type's alone; none into Auto axes)
        out.append(shp.sharding_constraint_p.bind(v, mesh=mesh, spec=spec, retype=True, **ur))
    return tu.tree_unflatten(treedef, out)


def with_sharding_constraint(x, shardings):
    """Ask XLA's partitioner to lay out ``x`` (a pytree) as ``shardings`` (one ``NamedSharding``,
    a ``PartitionSpec`` inside ``with mesh:``, or a pytree prefix of ``x`` of them) at this point
    of a jitted function; the values are unchanged. Outside a transformation it is
    ``device_put(x, shardings)``. As in JAX 0.10, it names ``Auto`` mesh axes only; under a mesh
    whose axes are all ``Explicit`` it asserts that ``x`` is typed ``shardings`` already (use
    ``reshard`` to move data).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",), (AxisType.Auto,)), P("x"))
    >>> out = funcgrad.jit(lambda a: with_sharding_constraint(a * 2, s))(np.ones(2))
    >>> out.sharding.is_equivalent_to(s, 1)  # on one device XLA reports P(), as in JAX
    True
    """
    return _constrain(x, shardings, strict=True)


def _constrain(x, shardings, *, strict: bool):
    """``with_sharding_constraint`` (``strict``: JAX 0.10's rules for explicit axes, below) and
    ``reshard`` (not strict: it moves data and sets the type)."""
    leaves, tree = tu.tree_flatten(x)
    out = []
    # JAX 0.10: under a mesh whose axes are all Explicit, the constraint is an assertion on the
    # type; otherwise it may name Auto axes only (NOTE: [sharding in types]).
    scope = get_abstract_mesh()
    asserts = strict and scope.are_all_axes_explicit
    for v, s in zip(leaves, sharding_leaves(shardings, x, "with_sharding_constraint")):
        if s is None:
            out.append(v)
            continue
        if isinstance(s, SingleDeviceSharding):
            out.append(v)
            continue
        if not isinstance(s, NamedSharding):
            raise TypeError(
                f"with_sharding_constraint: expected a NamedSharding or a PartitionSpec, got {s!r}"
            )
        if asserts:
            _assert_sharding(v, s)
            out.append(v)
            continue
        types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
        if strict and any(types.get(n) is not AxisType.Auto for n in s.spec._names()):
            raise ValueError(
                "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto axes "
                f"of the mesh. Got spec={s.spec!r} and mesh={s.mesh.abstract_mesh!r}. You probably meant "
                "to use `reshard` API?"
            )
        if not isinstance(v, Array | core.Tracer):  # a NumPy array or a Python scalar
            v = Array._from_owned(canonical_value(np.asarray(v)), type(v) in python_scalar_types)
        # (JAX's checks: the rank always; the divisibility eagerly only -- under jit XLA takes a
        # dimension that does not divide evenly, padded, and chooses the result's layout: flax's
        # FSDP example constrains a (32, 1) kernel over 4 devices)
        if strict:
            what = "with_sharding_constraint arguments"
            check_aval_sharding(s, v.shape, what, allow_uneven=isinstance(v, core.Tracer))
        else:
            check_type_divisibility(s, v.shape)  # (JAX retypes the value first: its ValueError)
            if not isinstance(v, core.Tracer):
                s.shard_shape(v.shape)  # (reshard: JAX's words of the sharding, without a context)
        # NOTE: [unreduced values]: a traced unreduced value constrained to a sharding without those
        # axes is reduced by XLA (its type says unreduced, the constraint does not: an all-reduce).
        if s.spec.unreduced and not isinstance(v, core.Tracer):
            out.append(_put_leaf(v, s))
            continue
        if isinstance(v, Array) and _unreduced.unreduced_of(v):
            out.append(_put_leaf(v, s))  # reduced: the sums of its groups
            continue
        if not isinstance(v, core.Tracer):
            # NOTE: [device-to-device resharding]: a value already on the devices stays there.
            b = _sharded_buffer(v)
            buf = None if b is None else xla_bridge.reshard.reshard(b, s._bridge(v.ndim))
            if buf is None:
                buf = xla_bridge.sharded.put(np.asarray(v), s._bridge(v.ndim), weak_type=v.weak_type)
            out.append(v if buf is b else Array._from_buffer(buf, v.weak_type))
            continue
        spec = s.spec._normalized(v.ndim, "with_sharding_constraint")
        if strict:
            # On a mesh with Explicit and Auto axes the constraint names Auto ones: each dimension
            # keeps its type's explicit axes, major, then the constraint's (JAX's lowering of
            # sharding_constraint; the type is unchanged).
            have = core.get_aval(v).sharding
            if have is not None and tuple(have.mesh.axis_names) == tuple(s.mesh.axis_names):
                typed = _sharding_rules.spec_of(core.get_aval(v))
                spec = tuple(t + tuple(n for n in u if n not in t) for t, u in zip(typed, spec))
        # (a traced value made unreduced or reduced: its type says so, NOTE: [unreduced values])
        ur = shp.ur_params(s.spec.unreduced, s.spec.reduced)
        out.append(shp.sharding_constraint_p.bind(v, mesh=s.mesh, spec=spec, **ur))
    return tu.tree_unflatten(tree, out)


def _eager_constraint(x, *, mesh, spec, unreduced=frozenset(), reduced=frozenset(), retype=False):
    """``sharding_constraint`` evaluated on a concrete Array (a transformation binding it eagerly:
    ``vmap`` of a ``reshard`` or of a random draw with ``out_sharding=``): ``x`` laid out as the
    constraint says, as ``reshard`` outside a transformation lays it out (JAX's reshard impl is a
    device_put), so the result's type keeps the sharding on explicit axes. Over an abstract mesh
    (no devices to place on) the value is returned as it is."""
    if not isinstance(mesh, Mesh):
        return x
    entries = [None if not p else p[0] if len(p) == 1 else tuple(p) for p in spec]
    s = NamedSharding(mesh, PartitionSpec(*entries, unreduced=unreduced, reduced=reduced))
    return _constrain(x, s, strict=False)


shp.sharding_constraint_p.def_impl(_eager_constraint)
shp.sharding_constraint_p.impl_takes_arrays = True  # (an Array, so its devices and type are kept)


def sharded_like(out, a):
    """``out`` (made by ``zeros_like``/``ones_like``/``full_like`` of ``a``, the same shape)
    laid out as ``a``, as JAX's ``full_like`` keeps its argument's sharding: an array over several
    devices or committed to one (not weakly typed) as it is laid out, in any mode; a traced value
    as its type says on explicit mesh axes (NOTE: [sharding in types]); otherwise ``out`` as it is.

    >>> import numpy as np
    >>> sharded_like(np.zeros(2), np.ones(2)).tolist()
    [0.0, 0.0]
    """
    duck = hasattr(a, "shape") and hasattr(a, "dtype")  # (read first, as JAX's full_like does)
    if not isinstance(a, Array | core.Tracer) and hasattr(a, "__jax_array__") and not duck:
        a = a.__jax_array__()  # (a value that stands for an array: that array)
    if not isinstance(a, Array | core.Tracer) and hasattr(a, "shape") and hasattr(a, "dtype"):
        # A ShapeDtypeStruct with a sharding: the result is laid out so, as JAX's full_like (an
        # abstract mesh's over the mesh in scope)
        given = getattr(a, "sharding", None)
        if isinstance(given, NamedSharding | SingleDeviceSharding) and core.get_aval(out).shape == tuple(
            a.shape
        ):
            try:
                (target,) = sharding_leaves(given, 0, "full_like", "sharding")
            except ValueError:  # (over an abstract mesh and no mesh in scope: left as it is, as JAX's)
                return out
            if not isinstance(target, NamedSharding):
                if not isinstance(out, Array):
                    return out
                buf = xla_bridge.device_put(out._numpy(), target._device, weak_type=out.weak_type)
                return Array._from_buffer(buf, out.weak_type)
            return _constrain(out, target, strict=False)
        return out
    if not isinstance(a, Array | core.Tracer) or core.get_aval(out).shape != core.get_aval(a).shape:
        return out
    b = _sharded_buffer(a) if isinstance(a, Array) else None
    if b is None and type(a) is Array and a._buffer is not None and a._buffer._committed:
        # committed to one device: the result is committed there too (NOTE: [committed arrays]
        # in xla_bridge/committed.py; JAX's full_like keeps a committed, strongly typed x's sharding)
        if a.weak_type or not isinstance(out, Array):
            return out
        device = a._buffer._sharding._fg_device
        return Array._from_buffer(
            xla_bridge.device_put(out._numpy(), device, weak_type=out.weak_type), out.weak_type
        )
    if b is not None:
        if a.weak_type:
            return out
        target = from_bridge(b._sharding, a.ndim)
        if isinstance(target, NamedSharding):
            return _constrain(out, target, strict=False)
        return out
    s = core.get_aval(a).sharding
    mesh = None if s is None else concrete_mesh(s.mesh, "zeros_like")
    if mesh is None:
        return out
    if s.mesh.manual_axes:  # (in a partially manual shard_map body: typed as ``a``, its axes Manual)
        mesh = mesh.update_axis_types({n: AxisType.Manual for n in s.mesh.manual_axes})
    return _constrain(out, NamedSharding(mesh, s.spec), strict=False)


def _typed_as(out, s: NamedSharding) -> bool:
    """Whether the staged ``out`` is typed ``s`` already (spec, unreduced and reduced axes, over
    ``s``'s mesh): a reshard to it would stage a constraint JAX's program does not have."""
    if not isinstance(out, core.Tracer):
        return False
    aval = out.aval
    have = getattr(aval, "sharding", None)
    if have is None or getattr(have.mesh, "abstract_mesh", have.mesh) != s.mesh.abstract_mesh:
        return False
    return (
        _sharding_rules.spec_of(aval) == s.spec._normalized(aval.ndim, "out_sharding")
        and frozenset(have.spec.unreduced or ()) == frozenset(s.spec.unreduced or ())
        and frozenset(have.spec.reduced or ()) == frozenset(s.spec.reduced or ())
    )


def _explicit_names_only(s: NamedSharding, where: str) -> None:
    """JAX 0.10: ``reshard`` and ``out_sharding=`` set a type, so they name Explicit axes only
    (on Auto axes ``with_sharding_constraint`` or ``device_put`` place values)."""
    types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
    for n in s.spec._names():
        t = types.get(n)
        if t is not None and t is not AxisType.Explicit:
            raise ValueError(
                f"PartitionSpec passed to {where} cannot contain axis names that are of type Auto or Manual. "
                f"Got PartitionSpec: {s.spec!r} with axis name: {n} of type: AxisType.{t.name}. Use "
                "with_sharding_constraint or device_put on Auto axes."
            )


def _assert_sharding(v, s: NamedSharding) -> None:
    """``with_sharding_constraint`` on explicit axes: ``v``'s type must already be ``s`` (JAX's
    AssertionError otherwise; ``reshard`` is the operation that moves data)."""
    aval = core.get_aval(v)
    have = _sharding_rules.spec_of(aval)
    given = tuple(s.spec) + (None,) * (aval.ndim - len(s.spec))
    want = s.spec._normalized(aval.ndim, "with_sharding_constraint")
    typed = set(_sharding_types.typed_axes(s.mesh.abstract_mesh))  # (size-1 axes out, by a flag)
    want = tuple(tuple(n for n in w if n in typed) for w in want)
    if any(g is not PartitionSpec.UNCONSTRAINED and h != w for h, w, g in zip(have, want, given)):
        shown = PartitionSpec(*(None if not d else d[0] if len(d) == 1 else d for d in have))
        raise AssertionError(
            "`with_sharding_constraint` acts as an assert when all axes of mesh are of type `Explicit`. The "
            f"array sharding: {shown!r} did not match the sharding provided: {PartitionSpec(*given)!r}. "
            "Please use `funcgrad.sharding.reshard` to shard your input to the sharding you want."
        )


def _same_ur_as_operand(name: str, s: NamedSharding, x) -> None:
    """JAX's ``reshape`` rules: ``out_sharding``'s unreduced and reduced axes are the operand's."""
    aval = core.get_aval(x) if isinstance(x, Array | core.Tracer) else None
    have = getattr(getattr(aval, "sharding", None), "spec", None)
    for kind in ("unreduced", "reduced"):
        want, got = getattr(s.spec, kind), getattr(have, kind, frozenset())
        if got and want != got:
            raise ValueError(
                f"out_sharding passed to {name} must be {kind} over the same mesh axes as operand. Got "
                f"out_sharding: {s.spec!r} and operand type: {aval.str_short()}"
            )
        if want and not got:
            raise ValueError(f"out_sharding passed to `{name}` cannot contain {kind} axes. Got {s!r}")


def _unreduced_traced(f, name: str, s: NamedSharding, args, kwargs):
    """``f(*args, out_sharding=s)`` being traced with ``s`` unreduced: the contraction's result
    typed ``s`` (JAX's rule checks its axes; XLA leaves each device's partial product)."""
    with (
        _sharding_rules.contraction_out(tuple(s.spec)),
        _unreduced_rules.contraction_unreduced(s.spec.unreduced),
    ):
        out = f(*args, **kwargs)
    # (checked on a staged value: another transformation's, vmap's, types only its staged value)
    if isinstance(out, StagingTracer) and _unreduced_rules.unreduced_of(out.aval) != frozenset(
        s.spec.unreduced
    ):
        raise ValueError(
            f"{name}: out_sharding={s.spec!r} is unreduced, which only a contraction (dot, matmul, "
            "einsum) over the unreduced axes can give; reshard the result instead"
        )
    return out


def takes_out_sharding(
    f=None,
    *,
    typed_result: bool = False,
    unreduced: str | None = None,
    in_auto_axes: bool = False,
    auto_when=None,
):
    """Give ``f`` JAX's keyword ``out_sharding=`` (a ``NamedSharding``, or a ``PartitionSpec``
    over the mesh in scope): its result is resharded to it (a sharding constraint under ``jit``,
    on explicit mesh axes also the result's type). With ``typed_result`` (a contraction or
    reshape, whose result type may be ambiguous: NOTE: [sharding in types]), the primitive's
    result is typed ``out_sharding`` directly instead of by its sharding rule. ``unreduced`` says
    how an ``out_sharding`` with unreduced or reduced axes is met (NOTE: [unreduced values]):
    ``"rule"`` (a contraction or ``reduce_sum``, the default with ``typed_result``: the primitive's
    rule leaves the result unreduced over the axes it sums), ``"operand"`` (``reshape``: the axes
    must be the operand's, JAX's errors), else the result is resharded (XLA's replicated-to-
    unreduced cast: ``jnp.array(x, out_sharding=P(unreduced={'x'}))``).
    With ``in_auto_axes`` (JAX's ``jnp.percentile``, ``jnp.repeat``, ``.at[...]`` updates), an
    ``out_sharding`` on explicit mesh axes computes ``f`` in ``auto_axes`` over them: XLA lays out
    what the sharding rules would find ambiguous (a sort along a split axis), typed as asked.
    ``auto_when(args)`` says so for some calls only (JAX's ``einsum`` of more than one
    contraction), unreduced or reduced ``out_sharding`` included (reached by a reshard after).

    >>> import funcgrad.numpy as fnp
    >>> ones3 = takes_out_sharding(lambda n: fnp.ones(n))
    >>> ones3(3, out_sharding=None).tolist()
    [1.0, 1.0, 1.0]
    """
    if f is None:
        return functools.partial(
            takes_out_sharding,
            typed_result=typed_result,
            unreduced=unreduced,
            in_auto_axes=in_auto_axes,
            auto_when=auto_when,
        )
    if unreduced is None and typed_result:
        unreduced = "rule"

    @functools.wraps(f)
    def wrapped(*args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return f(*args, **kwargs)
        name = getattr(f, "__name__", "function")
        given = out_sharding
        if (
            isinstance(given, NamedSharding)
            and given._memory_kind is not None
            and not isinstance(given.mesh, Mesh)
        ):
            # (a type holds no memory kind: JAX's words where it makes the aval)
            raise ValueError(
                "sharding with memory_kind is not allowed. Please use `jax.device_put` to transfer to "
                f"different memory spaces. Got sharding={given!r}"
            )
        if isinstance(given, NamedSharding):
            # (JAX's canonicalize_sharding: a sharding over another mesh than the one in scope,
            # unless both are all Auto; inside auto_axes or a shard_map body the one in scope has
            # its switched or manual axes' types)
            scope = get_abstract_mesh()
            theirs = given.mesh.abstract_mesh
            both_auto = theirs.are_all_axes_auto and scope.are_all_axes_auto
            if not scope.empty and not both_auto and theirs != scope:
                raise ValueError(
                    f"Context mesh {scope} should match the mesh of sharding {theirs} passed to {name}."
                )
        s = resolve(out_sharding, name, "out_sharding")
        if isinstance(s, NamedSharding):
            _explicit_names_only(s, name)
        if not isinstance(s, NamedSharding):
            return device_put_sharded(f(*args, **kwargs), s)
        # (inside a shard_map body the manual axes are no longer the mesh's explicit ones)
        manual = set(get_abstract_mesh().manual_axes)
        explicit = tuple(n for n in s.mesh.abstract_mesh.explicit_axes if n not in manual)
        if auto_when is not None and explicit and auto_when(args):
            # (JAX's einsum of several contractions: computed in auto_axes, then resharded to
            # out_sharding, its unreduced/reduced axes by a reshard after, XLA's cast)
            plain = NamedSharding(s.mesh, PartitionSpec(*s.spec), memory_kind=s.memory_kind)
            arrays = [i for i, a in enumerate(args) if isinstance(a, Array | core.Tracer | np.ndarray)]

            def on_arrays(*a):  # (the other arguments, einsum's subscripts, closed over)
                full = list(args)
                for i, v in zip(arrays, a):
                    full[i] = v
                return f(*full, **kwargs)

            auto = switched_ops["auto_axes"](on_arrays, axes=explicit, out_sharding=plain)
            out = auto(*(args[i] for i in arrays))
            return out if not (s.spec.unreduced or s.spec.reduced) else reshard(out, s)
        if unreduced == "operand":
            _same_ur_as_operand(name, s, args[0])
        elif s.spec.unreduced and unreduced == "rule":
            if not any(isinstance(a, core.Tracer) for a in tu.tree_leaves((args, kwargs))):
                return unreduced_ops["result"](f, name, s, args, kwargs)
            return _unreduced_traced(f, name, s, args, kwargs)
        if in_auto_axes and explicit and not (s.spec.unreduced or s.spec.reduced):
            auto = switched_ops["auto_axes"](lambda *a: f(*a, **kwargs), axes=explicit, out_sharding=s)
            return auto(*args)
        if typed_result:
            with _sharding_rules.contraction_out(tuple(s.spec)):
                out = f(*args, **kwargs)
            if _typed_as(out, s):
                return out  # (its type is the one asked for: no constraint staged, as JAX's)
        else:
            out = f(*args, **kwargs)
        return reshard(out, s)

    try:
        sig = inspect.signature(f)
        params = list(sig.parameters.values())
        if "out_sharding" not in sig.parameters:
            extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
            at = next(
                (i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params)
            )
            params.insert(at, extra)
        wrapped.__signature__ = sig.replace(parameters=params)
    except (TypeError, ValueError):
        pass
    return wrapped
