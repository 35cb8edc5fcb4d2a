"""Where an ``Array`` lives: its ``sharding``, ``devices()``, ``device``, ``addressable_shards``;
putting values on devices as a sharding says (``device_put``), building sharded arrays from
per-device pieces (``make_array_from_callback``, ``make_array_from_single_device_arrays``,
``make_array_from_process_local_data``), and ``with_sharding_constraint`` (``jax.lax``'s name,
re-exported by ``funcgrad.lax``).

Layer: surface. Imports the kernel (``Array``, registration, tree_util, core), the primitive
catalog (``primitives.sharding``'s constraint), ``xla_bridge`` (``sharded`` and ``runtime``) and
``funcgrad._shardings``; never ``funcgrad.numpy`` or ``funcgrad.lax`` (``funcgrad.numpy`` imports
this module for the Array API's ``device``/``to_device``).

An Array holds a host value, a one-device buffer, or a sharded buffer (one jaxlib array over
several devices, ``xla_bridge.sharded``). Its placement properties are installed on ``Array``
(and, raising a clear error, on tracers) through ``kernel.register`` when this module is imported
(``funcgrad.api`` imports it). A host value is on the default device, as an uncommitted JAX
array is. Reading a sharded Array on the host (``np.asarray``, printing, an eager operation)
assembles every shard; eager operations compute on the host and return host Arrays (jitted
functions keep values sharded on the devices).

>>> import funcgrad, numpy as np
>>> x = funcgrad.device_put(np.arange(4.0), funcgrad.devices()[0])
>>> x.devices() == {funcgrad.devices()[0]}, x.sharding.is_fully_replicated
(True, True)
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

import funcgrad.xla_bridge.dispatch  # noqa: F401 - registers Array's device read-back (NOTE: [dispatch registration])
from funcgrad import (
    _sharding_types,  # noqa: F401 - registers the types of sharded values with the kernel
    kernel,
    xla_bridge,
)
from funcgrad import _sharding_unreduced as _unreduced
from funcgrad._shardings import (
    AxisType,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
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
from funcgrad.kernel.partial_eval import StagingTracer
from funcgrad.primitives import _sharding_rules
from funcgrad.primitives import sharding as shp

__all__ = [
    "Shard",
    "reshard",
    "recast",
    "takes_out_sharding",
    "visualize_array_sharding",
    "with_sharding_constraint",
    "device_put_sharded",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = (
    "Shard",
    "copy_to_host_async",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "make_array_from_process_local_data",
    "reshard",
)


def _sharded_buffer(x: Array):
    b = x._buffer
    if b is not None and not hasattr(b._sharding, "_fg_device"):
        return b
    return None


def _device_of(x: Array):
    b = x._buffer
    if b is not None:
        return b._sharding._fg_device
    return xla_bridge.default_device()


def _array_only(what):
    def check(x):
        if not isinstance(x, Array):
            raise core.ConcretizationTypeError(
                f"{what} of a traced value: inside a transformation the compiler decides placement; use "
                "funcgrad.lax.with_sharding_constraint to ask for a layout"
            )

    return check


def _no_attribute(x, name: str):
    """JAX's answer to ``.sharding``/``.device`` of a traced value: an ``AttributeError`` (so that
    ``hasattr``/``getattr(x, name, None)`` work, as libraries rely on), pointing at ``typeof``."""
    if not isinstance(x, Array):
        shown = str(core.get_aval(x)).lstrip("~")
        raise AttributeError(
            f"The '{name}' attribute is not available on traced array with shape {shown}. To query "
            "sharding information on tracers, use `funcgrad.typeof(x)`."
        )


def _sharding(x) -> Sharding:
    _no_attribute(x, "sharding")
    b = _sharded_buffer(x)
    if b is not None:
        return from_bridge(b._sharding, x.ndim)
    return SingleDeviceSharding(_device_of(x))


def _devices(x) -> set:
    _array_only(".devices()")(x)
    b = _sharded_buffer(x)
    if b is not None:
        return set(b._sharding._fg_devs)
    return {_device_of(x)}


def _device(x):
    _no_attribute(x, "device")
    b = _sharded_buffer(x)
    if b is not None:
        return _sharding(x)  # as in JAX: an array on several devices answers with its sharding
    return _device_of(x)


class Shard:
    """One device's piece of an Array: ``device``, ``index`` (slices into the whole array),
    ``replica_id`` (0 for the first copy of a replicated piece) and ``data`` (an Array on that
    device)."""

    __slots__ = ("device", "index", "replica_id", "_data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self._data = data

    @property
    def data(self) -> Array:
        d = self._data
        if callable(d):
            d = self._data = d()
        return d

    def __repr__(self):
        r = self.replica_id
        # (the data as str, as JAX's Shard prints it: data=[0])
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={r}, data={self.data})"


def _replica_ids(indices) -> list[int]:
    seen: dict = {}
    out = []
    for ix in indices:
        key = tuple((s.start, s.stop) for s in ix)
        out.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return out


def _addressable_shards(x) -> list[Shard]:
    _array_only(".addressable_shards")(x)
    sh = xla_bridge.sharded
    b = _sharded_buffer(x)
    if b is None:
        full = tuple(slice(None) for _ in x.shape)
        return [Shard(_device_of(x), full, 0, x)]
    s = b._sharding
    ids = dict(zip(s._fg_devs, _replica_ids(sh.indices(s, tuple(x.shape)))))
    out = []
    for device, index, arr in sh.shards(b):

        def data(arr=arr, device=device):
            block = np.array(sh.block_numpy(arr))
            return Array._from_buffer(
                xla_bridge.device_put(block, device, weak_type=x.weak_type), x.weak_type
            )

        out.append(Shard(device, index, ids[device], data))
    return out


def _is_fully_replicated(x) -> bool:
    return _sharding(x).is_fully_replicated


def _is_fully_addressable(x) -> bool:
    return _sharding(x).is_fully_addressable


def _committed(x) -> bool:
    _array_only(".committed")(x)
    return x._buffer is not None


def _addressable_data(x, index: int) -> Array:
    _array_only(".addressable_data()")(x)
    return _addressable_shards(x)[index].data


def _copy_to_host_async(x) -> None:
    """Start reading ``x`` back (funcgrad reads synchronously when the host needs the value)."""
    _array_only(".copy_to_host_async()")(x)


def copy_to_host_async(x):
    """Start reading every Array leaf of the pytree ``x`` back to the host (funcgrad reads
    synchronously when a value is needed, so this only checks the leaves); returns ``x``.

    >>> import funcgrad.numpy as fnp
    >>> copy_to_host_async({"a": fnp.ones(2)})["a"].shape
    (2,)
    """
    for leaf in tu.tree_leaves(x):
        if isinstance(leaf, Array):
            _copy_to_host_async(leaf)
    return x


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


# ----------------------------------------------------------------------------------------------
# The buffer itself: deleting it, its size and address (NOTE: [deleting an Array])

# NOTE: [deleting an Array]
# ``x.delete()`` frees ``x``'s memory now: the device buffer is deleted (``ArrayImpl.delete``) and
# the host copy dropped. A host-backed Array has no buffer, so one is made and deleted at once:
# every later use then meets a deleted buffer and raises the error the donation path raises
# (``runtime.deleted_buffer_error``, a RuntimeError), through the same checks (reading the value,
# an eager operation, passing it to a jitted call). ``shape`` and ``dtype`` stay readable, as in
# JAX. A host-backed Array asked for its buffer (``unsafe_buffer_pointer``,
# ``on_device_size_in_bytes``) gets the device copy a jitted call would make and keep (NOTE:
# [argument buffers]), so the pointer stays valid while the Array lives.


def _check_alive(x, what: str) -> None:
    if _is_deleted(x):
        raise xla_bridge.runtime.deleted_buffer_error(x._buffer, f"{what}: ")


def _own_buffer(x, what: str):
    """``x``'s device buffer; for a host-backed Array, one made from its value and kept."""
    _check_alive(x, what)
    b = x._buffer
    if b is None or b.is_deleted():
        b = x._buffer = xla_bridge.device_put(x._value, _device_of(x), weak_type=x.weak_type)
    return b


def _delete(x) -> None:
    """Free ``x``'s memory now (its device buffer and host copy); using it afterwards raises a
    RuntimeError. Deleting twice is allowed (``jax.Array.delete``).

    >>> import funcgrad.numpy as fnp
    >>> x = fnp.arange(3.0)
    >>> x.delete()
    >>> x.is_deleted(), x.shape
    (True, (3,))
    >>> x + 1
    Traceback (most recent call last):
    ...
    funcgrad.xla_bridge.backends.XlaBridgeError: Array has been deleted with shape=float64[3]. ...
    """
    _array_only(".delete()")(x)
    if _is_deleted(x):
        return
    b = x._buffer
    if b is None or b.is_deleted():
        b = x._buffer = xla_bridge.device_put(x._value, _device_of(x), weak_type=x.weak_type)
    x._value = None
    b.delete()


def _is_deleted(x) -> bool:
    """Whether ``x`` was deleted (``x.delete()``) or its buffer donated to a jitted call
    (``donate_argnums``), as in JAX (NOTE: [donated arrays] in xla_bridge/execute.py).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> x = funcgrad.jit(lambda v: v + 1)(fnp.ones(2))
    >>> _ = funcgrad.jit(lambda v: v * 2, donate_argnums=0)(x)
    >>> x.is_deleted()
    True
    """
    _array_only(".is_deleted()")(x)
    return x._value is None and x._buffer.is_deleted()


def _is_ready(x) -> bool:
    """Whether ``x``'s value has been computed (a jitted call may still be running; a host-backed
    Array is always ready).

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(2).is_ready()
    True
    """
    _array_only(".is_ready()")(x)
    _check_alive(x, ".is_ready()")
    return x._buffer is None or x._buffer.is_ready()


def _platform(x) -> str:
    """The platform of the devices holding ``x`` ("cpu", "cuda", ...).

    >>> import funcgrad.numpy as fnp
    >>> import funcgrad
    >>> fnp.ones(2).platform() == funcgrad.devices()[0].platform
    True
    """
    _array_only(".platform()")(x)
    b = x._buffer
    if b is not None:
        return b.platform()
    return _device_of(x).platform


def _on_device_size_in_bytes(x) -> int:
    """The bytes ``x`` takes on its devices, over all of them (a replicated Array counts once
    per device), as ``jax.Array.on_device_size_in_bytes``.

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(4, dtype="float32").on_device_size_in_bytes()
    16
    """
    _array_only(".on_device_size_in_bytes()")(x)
    return _own_buffer(x, ".on_device_size_in_bytes()").on_device_size_in_bytes()


def _unsafe_buffer_pointer(x) -> int:
    """The address of ``x``'s device memory (one device only). Valid while ``x`` is alive and not
    deleted; writing through it breaks the immutability that funcgrad relies on.

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(2).unsafe_buffer_pointer() > 0
    True
    """
    _array_only(".unsafe_buffer_pointer()")(x)
    if _sharded_buffer(x) is not None:
        raise ValueError(
            "unsafe_buffer_pointer() is supported only for arrays on one device; this one is "
            f"sharded over {len(_devices(x))} devices (use x.addressable_shards[i].data)"
        )
    return xla_bridge.sharded.buffer_pointer(_own_buffer(x, ".unsafe_buffer_pointer()"))


def _traceback(x):
    """Where ``x``'s device buffer was made (jaxlib's ``Traceback``), or None for a host-backed
    Array.

    >>> import funcgrad.numpy as fnp
    >>> print(fnp.ones(2).traceback)
    None
    """
    _array_only(".traceback")(x)
    b = x._buffer
    return None if b is None else b.traceback


kernel.register(
    array_methods={
        "to_device": _to_device,
        "devices": _devices,
        "addressable_data": _addressable_data,
        "copy_to_host_async": _copy_to_host_async,
        "delete": _delete,
        "is_deleted": _is_deleted,
        "is_ready": _is_ready,
        "platform": _platform,
        "on_device_size_in_bytes": _on_device_size_in_bytes,
        "unsafe_buffer_pointer": _unsafe_buffer_pointer,
    },
    array_properties={
        "sharding": _sharding,
        "device": _device,
        "addressable_shards": _addressable_shards,
        "global_shards": _addressable_shards,
        "is_fully_replicated": _is_fully_replicated,
        "is_fully_addressable": _is_fully_addressable,
        "committed": _committed,
        "traceback": _traceback,
    },
)


# ----------------------------------------------------------------------------------------------
# Putting values on devices


# NOTE: [unreduced values] (funcgrad/_sharding_unreduced.py): an eager contraction left unreduced
# is built on shard_map; funcgrad.sharding registers it here.
unreduced_ops: dict = {}


def _put_leaf(v, s: Sharding, path: str):
    from_array = isinstance(v, Array)
    weak = v.weak_type if from_array else type(v) in (bool, int, float, complex)
    if isinstance(v, core.Tracer):
        if isinstance(s, NamedSharding):
            return _constrain(v, s, strict=False)  # (device_put moves data, as reshard does)
        return v
    if from_array and _unreduced.unreduced_of(v):  # its value: the sums of its groups
        v = Array._from_owned(_unreduced.reduced_value(v), weak)
    if isinstance(s, NamedSharding) and s.spec.unreduced:
        try:
            s.shard_shape(v.shape)
        except ValueError as e:
            raise ValueError(f"device_put: x{path}: {e}") from None
        held = _unreduced.held_blocks(v) if from_array else None
        value = v._numpy() if from_array else canonical_value(np.asarray(v))
        return Array._from_buffer(_unreduced.put_unreduced(np.asarray(value), s, held), weak)
    if from_array and isinstance(s, NamedSharding) and _sharded_buffer(v) is not None:
        # Already on devices: moved there by a compiled program when the devices are the same
        # (NOTE: [device-to-device resharding] in xla_bridge/reshard.py), not through the host.
        try:
            s.shard_shape(v.shape)
        except ValueError as e:
            raise ValueError(f"device_put: x{path}: {e}") from None
        moved = xla_bridge.reshard.reshard(_sharded_buffer(v), s._bridge(v.ndim))
        if moved is not None:
            return v if moved is _sharded_buffer(v) else Array._from_buffer(moved, weak)
    # (a NumPy value takes the mode's dtype, as it enters: int32 for int64 with x64 off)
    value = v._numpy() if from_array else canonical_value(np.asarray(v))
    if isinstance(s, SingleDeviceSharding):
        return Array._from_buffer(xla_bridge.device_put(value, s._device, weak_type=weak), weak)
    try:
        s.shard_shape(value.shape)
    except ValueError as e:
        raise ValueError(f"device_put: x{path}: {e}") from None
    bridge = s._bridge(value.ndim)
    if from_array:
        b = _sharded_buffer(v)
        if b is not None and b._sharding is bridge:
            return v
    return Array._from_buffer(xla_bridge.sharded.put(value, bridge, weak_type=weak), weak)


def device_put_sharded(x, shardings):
    """``device_put(x, sharding)``: every leaf of ``x`` laid out as its sharding (``shardings``: one
    sharding, or a pytree prefix of ``x``)."""
    leaves, tree = tu.tree_flatten(x)
    specs = sharding_leaves(shardings, x, "device_put")
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(x)]
    out = []
    for v, s, path in zip(leaves, specs, paths):
        if s is None:
            out.append(v if isinstance(v, Array) else Array(canonical_value(np.asarray(v))))
        else:
            out.append(_put_leaf(v, s, path))
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
            s = targets[k] = s.with_spec(PartitionSpec(*tuple(s.spec)[:ndim]))
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
        if s is not None:
            spec = s.spec._normalized(ndim, where)
        else:
            have = _type_sharding(v)
            if have is None and isinstance(v, Array) and _sharded_buffer(v) is not None:
                have = _sharding(v)
            spec = have.spec._normalized(ndim, where) if isinstance(have, NamedSharding) else ((),) * ndim
        out.append(shp.sharding_constraint_p.bind(v, mesh=mesh, spec=spec))
    return tu.tree_unflatten(treedef, out)


def _named(sharding, where) -> Sharding:
    # Any concrete Sharding (JAX takes them all): each one lays devices out through its bridge.
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{where}: sharding must be a Sharding (e.g. a NamedSharding), got {sharding!r}")
    return sharding


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
    """A sharded Array of ``shape`` whose piece on each of this process's devices is
    ``data_callback(index)`` (``index``: a tuple of slices into the whole array).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_callback((4,), s, lambda idx: np.arange(4.0)[idx]).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    s = _named(sharding, "make_array_from_callback")
    shape = tuple(int(n) for n in shape)
    s.shard_shape(shape)
    bridge = s._bridge(len(shape))
    sh = xla_bridge.sharded
    me = sh.process_index()
    devs, blocks = [], []
    for d, ix in zip(bridge._fg_devs, sh.indices(bridge, shape)):
        if d.process_index != me:
            continue
        block = np.asarray(data_callback(ix), dtype=dtype)
        want = tuple(len(range(*sl.indices(n))) for sl, n in zip(ix, shape))
        if block.shape != want:
            raise ValueError(
                f"make_array_from_callback: the callback gave a {block.shape} piece for index {ix} of an "
                "array of "
                f"shape {shape}; it must be {want}"
            )
        devs.append(d)
        blocks.append(block)
    dt = blocks[0].dtype if blocks else np.dtype(dtype or np.float64)
    return Array._from_buffer(sh.put_blocks(blocks, devs, shape, dt, bridge))


def make_array_from_single_device_arrays(shape, sharding, arrays) -> Array:
    """A sharded Array of ``shape`` from one Array per device of this process (each on its device,
    holding that device's piece).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> pieces = [funcgrad.device_put(np.ones(2), d) for d in s.addressable_devices]
    >>> make_array_from_single_device_arrays((2,), s, pieces).tolist()
    [1.0, 1.0]
    """
    s = _named(sharding, "make_array_from_single_device_arrays")
    shape = tuple(int(n) for n in shape)
    bridge = s._bridge(len(shape))
    sh = xla_bridge.sharded
    by_device = {}
    for a in arrays:
        if not isinstance(a, Array) or a._buffer is None or _sharded_buffer(a) is not None:
            raise TypeError(
                "make_array_from_single_device_arrays: each array must be an Array on one device "
                "(funcgrad.device_put(piece, device))"
            )
        by_device[a._buffer._sharding._fg_device] = a
    idx = dict(zip(bridge._fg_devs, sh.indices(bridge, shape)))
    me = sh.process_index()
    local = [d for d in bridge._fg_devs if d.process_index == me]
    missing = [d for d in local if d not in by_device]
    if missing:
        raise ValueError(f"make_array_from_single_device_arrays: no array on the devices {missing}")
    blocks = []
    for d in local:
        block = by_device[d]._numpy()
        want = tuple(len(range(*sl.indices(n))) for sl, n in zip(idx[d], shape))
        if block.shape != want:
            raise ValueError(
                f"make_array_from_single_device_arrays: the array on {d} has shape {block.shape}, but its "
                "piece "
                f"of a {shape} array is {want}"
            )
        blocks.append(block)
    return Array._from_buffer(sh.put_blocks(blocks, local, shape, blocks[0].dtype, bridge))


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """A global sharded Array from this process's part of it (``local_data``: the rows, columns,
    ... its devices hold). Each dimension's global size is inferred from how many distinct pieces
    along it live on this process, unless ``global_shape`` is given. On one process this is
    ``device_put(local_data, sharding)``.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_process_local_data(s, np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    s = _named(sharding, "make_array_from_process_local_data")
    local = np.asarray(local_data)
    ndim = local.ndim
    bridge = s._bridge(ndim)
    sh = xla_bridge.sharded
    me = sh.process_index()
    counts = sh.tile_counts(bridge, ndim)
    probe = sh.indices(bridge, tuple(counts))  # index of each device's tile, one element per tile
    mine = [ix for d, ix in zip(bridge._fg_devs, probe) if d.process_index == me]
    local_tiles = [len({ix[k].start or 0 for ix in mine}) for k in range(ndim)]
    if global_shape is None:
        global_shape = tuple(n * c // lt for n, c, lt in zip(local.shape, counts, local_tiles))
    global_shape = tuple(int(n) for n in global_shape)
    s.shard_shape(global_shape)
    first = [min(ix[k].start or 0 for ix in mine) for k in range(ndim)]
    blocks, devs = [], []
    for d, ix in zip(bridge._fg_devs, sh.indices(bridge, global_shape)):
        if d.process_index != me:
            continue
        block_len = [global_shape[k] // counts[k] for k in range(ndim)]
        start = [(ix[k].start or 0) - first[k] * block_len[k] for k in range(ndim)]
        local_ix = tuple(slice(a, a + n) for a, n in zip(start, block_len))
        # A fresh array per block: a view (of a broadcast, or one block shared by replicas)
        # makes jaxlib's multi-process transfer fail with "bad_function_call".
        blocks.append(np.array(local[local_ix], order="C", copy=True))
        devs.append(d)
    return Array._from_buffer(sh.put_blocks(blocks, devs, global_shape, local.dtype, bridge))


def visualize_array_sharding(arr, *, min_width: int = 9, max_width: int = 80) -> str:
    """Print (and return) which devices hold which part of a 1-D or 2-D Array: a grid with one
    cell per tile, naming its devices (JAX's ``jax.debug.visualize_array_sharding``, in plain
    text).

    >>> import funcgrad, numpy as np
    >>> _ = visualize_array_sharding(funcgrad.device_put(np.ones(4), funcgrad.devices()[0]))
    +---------+
    |  CPU 0  |
    +---------+
    """
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects an Array, got {type(arr).__name__}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"visualize_array_sharding shows 1-D and 2-D arrays, got shape {arr.shape}")
    shape = arr.shape if arr.ndim == 2 else (1, arr.shape[0])
    index_map = _sharding(arr).devices_indices_map(arr.shape)
    cells: dict = {}
    for device, index in index_map.items():
        index = index if arr.ndim == 2 else (slice(None), *index)
        key = tuple((sl.start or 0, sl.stop if sl.stop is not None else n) for sl, n in zip(index, shape))
        cells.setdefault(key, []).append(device)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})

    def label(devs):
        platform = devs[0].platform.upper()
        return f"{platform} " + ",".join(str(d.id) for d in sorted(devs, key=lambda d: d.id))

    labels = {k: label(v) for k, v in cells.items()}
    width = min(
        max(min_width, *(len(t) + 2 for t in labels.values())), max(min_width, max_width // len(cols))
    )
    line = "+" + "+".join("-" * width for _ in cols) + "+"
    out = [line]
    for r in rows:
        out.append("|" + "|".join(labels.get((r, c), "").center(width)[:width] for c in cols) + "|")
        out.append(line)
    text = "\n".join(out)
    print(text)
    return text


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
        try:
            s.shard_shape(v.shape)
        except ValueError as e:
            raise ValueError(f"with_sharding_constraint: {e}") from None
        # NOTE: [unreduced values]: a traced unreduced value constrained to a sharding without those
        # axes is reduced by XLA (its type says unreduced, the constraint does not: an all-reduce).
        if s.spec.unreduced:
            if isinstance(v, core.Tracer):
                raise NotImplementedError(
                    "reshard/with_sharding_constraint to an unreduced sharding inside a transformation "
                    "(jit, grad, vmap) is not supported by funcgrad; place unreduced values outside it"
                )
            out.append(_put_leaf(v, s, ""))
            continue
        if isinstance(v, Array) and _unreduced.unreduced_of(v):
            out.append(_put_leaf(v, s, ""))  # reduced: the sums of its groups
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
        out.append(shp.sharding_constraint_p.bind(v, mesh=s.mesh, spec=spec))
    return tu.tree_unflatten(tree, out)


def sharded_like(out, a):
    """``out`` (made by ``zeros_like``/``ones_like``/``full_like`` of ``a``, the same shape)
    laid out as ``a``, as JAX's ``full_like`` keeps its argument's sharding: an array over several
    devices (not weakly typed) as it is laid out, in any mode; a traced value as its type says on
    explicit mesh axes (NOTE: [sharding in types]); otherwise ``out`` as it is.

    >>> import numpy as np
    >>> sharded_like(np.zeros(2), np.ones(2)).tolist()
    [0.0, 0.0]
    """
    if not isinstance(a, Array | core.Tracer) and hasattr(a, "__jax_array__"):
        a = a.__jax_array__()  # (a value that stands for an array, as flax's Variables: that array)
    if not isinstance(a, Array | core.Tracer) or core.get_aval(out).shape != core.get_aval(a).shape:
        return out
    b = _sharded_buffer(a) if isinstance(a, Array) else None
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
    return _constrain(out, NamedSharding(mesh, s.spec), strict=False)


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
    if any(g is not PartitionSpec.UNCONSTRAINED and h != w for h, w, g in zip(have, want, given)):
        shown = PartitionSpec(*(None if not d else d[0] if len(d) == 1 else d for d in have))
        raise AssertionError(
            "`with_sharding_constraint` acts as an assert when all axes of mesh are of type `Explicit`. The "
            f"array sharding: {shown!r} did not match the sharding provided: {PartitionSpec(*given)!r}. "
            "Please use `funcgrad.sharding.reshard` to shard your input to the sharding you want."
        )


def _unreduced_traced(f, name: str, s: NamedSharding, args, kwargs):
    """``f(*args, out_sharding=s)`` being traced with ``s`` unreduced: the contraction's result
    typed ``s`` (JAX's rule checks its axes; XLA leaves each device's partial product)."""
    with (
        _sharding_rules.contraction_out(tuple(s.spec)),
        _sharding_rules.contraction_unreduced(s.spec.unreduced),
    ):
        out = f(*args, **kwargs)
    # (checked on a staged value: another transformation's, vmap's, types only its staged value)
    if isinstance(out, StagingTracer) and _sharding_rules.unreduced_of(out.aval) != frozenset(
        s.spec.unreduced
    ):
        raise ValueError(
            f"{name}: out_sharding={s.spec!r} is unreduced, which only a contraction (dot, matmul, "
            "einsum) over the unreduced axes can give; reshard the result instead"
        )
    return out


def takes_out_sharding(f=None, *, typed_result: bool = False):
    """Give ``f`` JAX's keyword ``out_sharding=`` (a ``NamedSharding``, or a ``PartitionSpec``
    over the mesh in scope): its result is resharded to it (a sharding constraint under ``jit``,
    on explicit mesh axes also the result's type). With ``typed_result`` (a contraction or
    reshape, whose result type may be ambiguous: NOTE: [sharding in types]), the primitive's
    result is typed ``out_sharding`` directly instead of by its sharding rule.

    >>> import funcgrad.numpy as fnp
    >>> ones3 = takes_out_sharding(lambda n: fnp.ones(n))
    >>> ones3(3, out_sharding=None).tolist()
    [1.0, 1.0, 1.0]
    """
    if f is None:
        return functools.partial(takes_out_sharding, typed_result=typed_result)

    @functools.wraps(f)
    def wrapped(*args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return f(*args, **kwargs)
        name = getattr(f, "__name__", "function")
        s = resolve(out_sharding, name, "out_sharding")
        if isinstance(s, NamedSharding):
            _explicit_names_only(s, name)
        if not isinstance(s, NamedSharding):
            return device_put_sharded(f(*args, **kwargs), s)
        if s.spec.unreduced:
            if not any(isinstance(a, core.Tracer) for a in tu.tree_leaves((args, kwargs))):
                return unreduced_ops["result"](f, name, s, args, kwargs)
            return _unreduced_traced(f, name, s, args, kwargs)
        if typed_result:
            with _sharding_rules.contraction_out(tuple(s.spec)):
                out = f(*args, **kwargs)
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
