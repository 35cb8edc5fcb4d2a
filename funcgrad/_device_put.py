"""Putting values where a sharding says: ``device_put``'s placement of each leaf (on one device,
over a mesh, in a memory space; an eager derivative's ``device_put`` equation whose transpose sends
the cotangent back), ``x.to_device``, ``make_array_from_process_local_data``, and the sharding
constraint (``with_sharding_constraint``, and the eager step of ``sharding_constraint``), which
places a traced value as ``device_put`` places a concrete one -- the two call each other, so they
are one module.

Layer: surface, a floor below ``funcgrad._placement`` (which re-exports its public names). Imports
the kernel (``Array``, registration, tree_util, core, staging and recording traces), the primitive
catalog (``primitives.placement``'s ``device_put``, ``primitives.sharding``'s constraint, the
sharding rules), ``xla_bridge`` (``sharded``, ``reshard``, devices), ``funcgrad._shardings``,
``funcgrad._array_placement``, ``funcgrad._array_assembly``, ``funcgrad._sharding_unreduced``,
``funcgrad._sharding_types``, ``funcgrad._transfer_guard``, ``funcgrad._memory`` and
``funcgrad._devices``. Installs ``x.to_device`` on ``Array`` and the eager steps of
``device_put`` and ``sharding_constraint`` when imported.
"""

from __future__ import annotations

import numpy as np

from funcgrad import (
    _array_assembly,
    _sharding_types,  # (and registers the types of sharded values with the kernel)
    _transfer_guard,
    kernel,
    xla_bridge,
)
from funcgrad import _sharding_unreduced as _unreduced
from funcgrad._array_placement import (
    _array_only,
    _sharded_buffer,
    _sharding,
)
from funcgrad._devices import incompatible_devices, process_count
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
    get_abstract_mesh,
    sharding_leaves,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import canonical_value, python_scalar_types
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import memory_space_of_kind
from funcgrad.kernel.partial_eval import under_staging
from funcgrad.kernel.recording import EffectsInRecording, RecordingTrace
from funcgrad.primitives import _sharding_rules
from funcgrad.primitives import sharding as shp
from funcgrad.primitives.placement import ArrayCopySemantics, device_put_p, device_put_to


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


def _put_leaf(v, s: Sharding):
    check_type_divisibility(s, np.shape(v))  # (explicit axes retype the value first, as JAX's)
    check_aval_sharding(s, np.shape(v), "device_put args")
    from_array = isinstance(v, Array)
    weak = v.weak_type if from_array else type(v) in (bool, int, float, complex)
    in_program = _placement_in_program(s)
    if isinstance(v, core.Tracer) or in_program:
        moved = _put_differentiated(v, s) if isinstance(v, core.Tracer) else None
        if moved is not None:
            return moved
        if in_program:
            if not isinstance(v, Array | core.Tracer):
                v = Array._from_owned(canonical_value(np.asarray(v)), weak)
            # NOTE: [device_put in jit]: only where the program runs (a constraint that lowers to
            # nothing: its mesh is the program's devices), XLA lays the value out
            spec = ((),) * v.ndim
            return shp.sharding_constraint_p.bind(v, mesh=s.mesh, spec=spec, retype=True)
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


# NOTE: [device_put in jit]
# JAX 0.10's device_put inside a staged program (jit) to a NamedSharding over Auto axes alone does
# not lay the value out: its lowering is the identity (dispatch._common_device_put_lowering), the
# sharding says only which devices the program runs on, and XLA's propagation lays the result out
# (jit(lambda x: device_put(x * 2, NamedSharding(mesh, P('x', 'y'))))(x) is P() for a replicated
# x). funcgrad stages a retyping constraint with no axes (it lowers to nothing on Auto axes; its
# mesh is among the program's meshes). Explicit axes, unreduced/reduced axes and other memories
# keep the constraint (the value's type changes); jnp.array/asarray/linspace(device=) are JAX's
# conversion to a sharding, a constraint (funcgrad.numpy._core.place_on).
def _placement_in_program(s) -> bool:
    """Whether ``device_put(x, s)`` here only says where the program runs (NOTE: [device_put in
    jit])."""
    return (
        isinstance(s, NamedSharding)
        and isinstance(s.mesh, Mesh)
        and s.mesh.size > 1
        and not s.mesh.abstract_mesh.explicit_axes
        and not s.spec.unreduced
        and not s.spec.reduced
        and s.memory_kind in (None, "device")
        and under_staging(core.current_trace())
        and not get_abstract_mesh().manual_axes
    )


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
    if any(s is None for s in tu.tree_leaves(shardings, is_leaf=lambda s: s is None)):
        raise ValueError(  # (JAX's words: a constraint names a sharding for every value)
            "One of with_sharding_constraint arguments got sharding None which is not allowed. Please "
            "only pass `jax.sharding.Sharding` instances."
        )
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
            if isinstance(v, core.Tracer) and _sharding_rules._spmd_axes.get():
                raise ValueError(  # (JAX's words)
                    "If you are using spmd_axis_name parameter of jax.vmap, please make sure to run your "
                    "jitted function inside the mesh context manager. Only "
                    "`jax.lax.with_sharding_constraint` with `jax.sharding.NamedSharding` as an input can be "
                    "transformed with spmd_axis_name "
                    f"batching rules outside of an explicit mesh context manager scope {s!r}"
                )
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
        # A constant constrained inside a staged program (``jit``) is a staged constraint, as
        # JAX's: the program's result is laid out so (eagerly placed, it would be a constant
        # whose placement a jit's result does not keep).
        staged = isinstance(v, core.Tracer) or under_staging(core.current_trace())
        # (JAX's checks: the rank always; the divisibility eagerly only -- under jit XLA takes a
        # dimension that does not divide evenly, padded, and chooses the result's layout: flax's
        # FSDP example constrains a (32, 1) kernel over 4 devices)
        if strict:
            what = "with_sharding_constraint arguments"
            check_aval_sharding(s, v.shape, what, allow_uneven=staged)
            if not staged and v.committed:
                _committed_on(v, s)
        else:
            check_type_divisibility(s, v.shape)  # (JAX retypes the value first: its ValueError)
            if not staged:
                s.shard_shape(v.shape)  # (reshard: JAX's words of the sharding, without a context)
        # NOTE: [unreduced values]: a traced unreduced value constrained to a sharding without those
        # axes is reduced by XLA (its type says unreduced, the constraint does not: an all-reduce).
        if s.spec.unreduced and not isinstance(v, core.Tracer):
            out.append(_put_leaf(v, s))
            continue
        if isinstance(v, Array) and _unreduced.unreduced_of(v):
            out.append(_put_leaf(v, s))  # reduced: the sums of its groups
            continue
        if not staged:
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
            have = core.get_aval(v)._sharding
            if have is not None and tuple(have.mesh.axis_names) == tuple(s.mesh.axis_names):
                typed = _sharding_rules.spec_of(core.get_aval(v))
                spec = tuple(t + tuple(n for n in u if n not in t) for t, u in zip(typed, spec))
        # (a traced value made unreduced or reduced: its type says so, NOTE: [unreduced values])
        ur = shp.ur_params(s.spec.unreduced, s.spec.reduced)
        out.append(shp.sharding_constraint_p.bind(v, mesh=s.mesh, spec=spec, **ur))
    return tu.tree_unflatten(tree, out)


def _committed_on(v, s) -> None:
    """JAX's error for an eager ``with_sharding_constraint`` of an Array committed to other
    devices, or the same in another order, than ``s``'s (a jitted identity there, which does not
    move committed data)."""
    have, want = list(v.sharding._device_assignment), list(s._device_assignment)
    if have != want:
        raise incompatible_devices(v, have, want, "x of _identity_fn", "explicit output sharding")


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
