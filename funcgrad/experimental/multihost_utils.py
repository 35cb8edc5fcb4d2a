"""``funcgrad.experimental.multihost_utils``: moving values between the processes of a
multi-process program (``funcgrad.distributed.initialize``), as ``jax.experimental.multihost_utils``.

Layer: surface. Imports funcgrad's device, placement and sharding modules, jit, device_put and the
tree utilities.

Every function here is a collective: all processes must call it, in the same order, with values
of the same shapes. Each is one small jitted program over all devices: a process's value enters
as its rows of a global array and the result comes back replicated (``P()``), so XLA's
collectives (Gloo between CPU processes) do the exchange. On one process they are plain NumPy
conversions.
"""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

import numpy as np

from funcgrad import _devices, _placement, api, jitting
from funcgrad import _shardings as shardings
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.tree_util import tree_flatten, tree_unflatten
from funcgrad.xla_bridge import distributed as _distributed

# JAX's module exposes these helpers under the same names (``multihost_utils.P`` etc.).
P = shardings.P

__all__ = [
    "P",
    "ProcessFailureError",
    "assert_equal",
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "global_array_to_host_local_array_impl",
    "gtl_abstract_eval",
    "host_local_array_to_global_array",
    "host_local_array_to_global_array_impl",
    "live_devices",
    "ltg_abstract_eval",
    "ltg_batcher",
    "process_allgather",
    "reached_preemption_sync_point",
    "safe_zip",
    "sync_global_devices",
    "tree_flatten",
    "tree_unflatten",
]


def safe_zip(*args):
    """``zip`` that refuses sequences of different lengths (JAX's ``util.safe_zip``).

    >>> safe_zip([1, 2], "ab")
    [(1, 'a'), (2, 'b')]
    >>> safe_zip([1], [1, 2])
    Traceback (most recent call last):
    ValueError: safe_zip: length mismatch: [1, 2]
    """
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_zip: length mismatch: {[len(a) for a in args]}")
    return list(zip(*args))


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _device_mesh() -> shardings.Mesh:
    """All devices in one axis, process by process."""
    devices = np.empty(_devices.device_count(), dtype=object)
    devices[:] = sorted(_devices.devices(), key=lambda d: (d.process_index, d.id))
    return shardings.Mesh(devices, ("devices",))


def _exchange(fun, tree):
    """``fun`` of every process's leaves stacked on a new leading axis (process order), as one
    jitted program whose outputs are replicated on every device; they read back as NumPy arrays.

    Each process enters its leaf once per local device, as its rows of a global array sharded
    over all devices: a full sharding, which every multi-process transfer handles."""
    mesh = _device_mesh()
    n_proc, n_local = _devices.process_count(), _devices.local_device_count()
    rows = shardings.NamedSharding(mesh, shardings.P("devices"))

    def enter(x):
        x = np.asarray(x)
        return _placement.make_array_from_process_local_data(rows, np.broadcast_to(x, (n_local, *x.shape)))

    def per_process(t):
        return fun(tu.tree_map(lambda v: v.reshape(n_proc, n_local, *v.shape[1:])[:, 0], t))

    return _replicated(per_process, tu.tree_map(enter, tree), mesh)


def _replicated(fun, tree, mesh):
    """``fun(tree)`` as one jitted program whose outputs are replicated on ``mesh``'s devices,
    read back as NumPy arrays (each process reads its own copy)."""
    out = jitting.jit(fun, out_shardings=shardings.NamedSharding(mesh, shardings.P()))(tree)
    return tu.tree_map(lambda x: np.asarray(x.addressable_data(0)), out)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """``in_tree`` as the source process has it (process 0 unless ``is_source`` says otherwise),
    on every process, as NumPy arrays. Every process passes leaves of the same shapes.

    >>> broadcast_one_to_all({"step": 3})
    {'step': array(3)}
    """
    if _devices.process_count() == 1:
        return tu.tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = _devices.process_index() == 0
    mine = tu.tree_map(lambda x: np.asarray(x) if is_source else np.zeros_like(x), in_tree)
    return _exchange(lambda t: tu.tree_map(lambda x: x.sum(axis=0, dtype=x.dtype), t), mine)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's leaves, gathered on every process as NumPy arrays: stacked on a new
    leading axis (``tiled=False``; scalars always are, when there are several processes) or
    concatenated along axis 0 (``tiled=True``). A global Array sharded over several processes
    (``tiled=True`` only) comes back whole.

    >>> process_allgather(np.arange(3.0)).tolist()
    [[0.0, 1.0, 2.0]]
    """

    leaves, treedef = tu.tree_flatten(in_tree)
    out: list = [None] * len(leaves)
    local = {}  # the host-local leaves, gathered by one program
    for i, x in enumerate(leaves):
        if isinstance(x, Array) and not x.is_fully_addressable:
            if not tiled:
                raise ValueError(
                    "process_allgather: an Array sharded over several processes is gathered whole "
                    "only with tiled=True"
                )
            out[i] = _replicated(lambda v: v, x, x.sharding.mesh)
        else:
            local[i] = np.asarray(x)
    if _devices.process_count() == 1:
        gathered = {i: v if tiled else v[None] for i, v in local.items()}  # as jax: a tiled scalar stays one
    else:
        gathered = _exchange(lambda t: t, local) if local else {}
        for i, v in local.items():
            if tiled and v.ndim:
                gathered[i] = gathered[i].reshape(-1, *v.shape[1:])
    for i, v in gathered.items():
        out[i] = v
    return tu.tree_unflatten(treedef, out)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raise ``AssertionError`` (with ``fail_message``) unless every process passed the same values.

    >>> assert_equal({"lr": 0.1})
    """
    gathered = process_allgather(in_tree, tiled=True)
    n = _devices.process_count()

    def same(x, got):
        if isinstance(x, Array) and not x.is_fully_addressable:
            return True  # one global value: the same everywhere by construction
        mine = np.asarray(x)
        mine = np.expand_dims(mine, 0) if mine.ndim == 0 else mine
        # (one process: ``got`` of a scalar is 0-d, which broadcasts, as in jax)
        return bool(np.all(np.equal(np.concatenate([mine] * n), got)))

    if not all(tu.tree_leaves(tu.tree_map(same, in_tree, gathered))):
        raise AssertionError(
            f"{fail_message}. Expected every process to pass {in_tree}; gathered: {gathered}"
        )


def sync_global_devices(name: str) -> None:
    """A barrier: returns once every process has called it (with the same ``name``; different
    names raise ``AssertionError``).

    >>> sync_global_devices("checkpoint saved")
    """
    assert_equal(np.uint32(zlib.crc32(name.encode())), f"sync_global_devices name mismatch ({name!r})")


def _spec_tree(pspecs, tree):
    specs = tu.tree_flatten(pspecs, is_leaf=lambda s: s is None or isinstance(s, shardings.P))[0]
    specs = [shardings.P() if s is None else s for s in specs]
    leaves, treedef = tu.tree_flatten(tree)
    if len(specs) == 1 and len(leaves) != 1:
        specs = specs * len(leaves)
    if len(specs) != len(leaves):
        raise ValueError(
            f"multihost_utils: {len(specs)} partition specs for {len(leaves)} arrays; pass one "
            "PartitionSpec per array (a pytree like the inputs) or one for all"
        )
    return leaves, specs, treedef


def host_local_array_to_global_array(local_inputs: Any, global_mesh: shardings.Mesh, pspecs: Any) -> Any:
    """Global Arrays over ``global_mesh`` from each process's part (its rows, columns, ... of
    the global value as ``pspecs`` lays it out over the mesh). Global Arrays pass through.

    >>> from funcgrad.sharding import P, make_mesh
    >>> host_local_array_to_global_array(np.arange(4.0), make_mesh((1,), ("x",)), P("x")).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    leaves, specs, treedef = _spec_tree(pspecs, local_inputs)
    out = [
        host_local_array_to_global_array_impl(x, global_mesh=global_mesh, pspec=s)
        for x, s in zip(leaves, specs)
    ]
    return tu.tree_unflatten(treedef, out)


def _check_pspec(pspec):
    if pspec is None:
        raise ValueError(
            "`None` is not a valid input to the pspecs argument. Please use "
            "funcgrad.sharding.PartitionSpec() if you wanted to replicate your input."
        )


def host_local_array_to_global_array_impl(arr, *, global_mesh: shardings.Mesh, pspec):
    """One array of ``host_local_array_to_global_array``: this process's part ``arr`` laid out
    by ``pspec`` over ``global_mesh``, as a global Array (a global Array passes through).

    >>> from funcgrad.sharding import make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> host_local_array_to_global_array_impl(np.ones(2), global_mesh=mesh, pspec=P()).shape
    (2,)
    """
    _check_pspec(pspec)
    if isinstance(arr, Array) and not arr.is_fully_addressable:
        return arr
    sharding = shardings.NamedSharding(global_mesh, pspec)
    return _placement.make_array_from_process_local_data(sharding, np.asarray(arr))


def _scale_shape(shape, mesh, pspec, up: bool):
    """``shape`` with each dimension that ``pspec`` shards multiplied (``up``: local to global)
    or divided by how many times the global mesh's axes outnumber the local mesh's."""
    glob, loc = mesh.shape, mesh.local_mesh.shape
    out = list(shape)
    for d, axes in enumerate(tuple(pspec)[: len(shape)]):
        if axes is None:
            continue
        factor = 1
        for a in (axes,) if isinstance(axes, str) else axes:
            factor *= glob[a] // loc[a]
        if up:
            out[d] *= factor
        elif out[d] % factor:
            raise ValueError(f"dimension {d} of size {out[d]} does not split over {factor} processes")
        else:
            out[d] //= factor
    return tuple(out)


def ltg_abstract_eval(arr, *, global_mesh: shardings.Mesh, pspec):
    """The global array's type (``ShapedArray``) of a host-local ``arr`` (JAX's abstract eval of
    host_local_array_to_global_array): each dimension ``pspec`` shards grows by the number of
    processes along those mesh axes.

    >>> from funcgrad.sharding import make_mesh
    >>> ltg_abstract_eval(np.ones((4, 3)), global_mesh=make_mesh((1,), ("x",)), pspec=P("x"))
    ShapedArray(float64[4,3])
    """
    a = core.get_aval(arr)
    return core.ShapedArray(_scale_shape(a.shape, global_mesh, pspec, True), a.dtype)


def gtl_abstract_eval(arr, *, global_mesh: shardings.Mesh, pspec):
    """The host-local part's type of a global ``arr`` (the inverse of ``ltg_abstract_eval``).

    >>> from funcgrad.sharding import make_mesh
    >>> gtl_abstract_eval(np.ones((4, 3)), global_mesh=make_mesh((1,), ("x",)), pspec=P("x"))
    ShapedArray(float64[4,3])
    """
    a = core.get_aval(arr)
    return core.ShapedArray(_scale_shape(a.shape, global_mesh, pspec, False), a.dtype)


def ltg_batcher(insert_axis, axis_data, vals_in, dims_in, global_mesh, pspec):
    """JAX's batching rule of host_local_array_to_global_array: the batch dimension ``d`` of the
    one operand gets its own entry in the partition spec (``axis_data.spmd_name``, None:
    replicated); returns ``(global array, d)``.

    >>> from funcgrad.sharding import make_mesh
    >>> y, d = ltg_batcher(False, None, [np.ones((2, 3))], [0], make_mesh((1,), ("x",)), P("x"))
    >>> y.shape, d
    ((2, 3), 0)
    """
    del insert_axis
    (x,), (d,) = vals_in, dims_in
    spec = list(pspec)
    if d is not None:
        spec.insert(d, getattr(axis_data, "spmd_name", None))
    return host_local_array_to_global_array_impl(x, global_mesh=global_mesh, pspec=P(*spec)), d


def global_array_to_host_local_array(global_inputs: Any, global_mesh: shardings.Mesh, pspecs: Any) -> Any:
    """The inverse of ``host_local_array_to_global_array``: this process's part of each global
    Array, as an Array over the mesh's local devices (``global_mesh.local_mesh``).

    >>> from funcgrad.sharding import P, make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> g = host_local_array_to_global_array(np.arange(4.0), mesh, P("x"))
    >>> global_array_to_host_local_array(g, mesh, P("x")).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    leaves, specs, treedef = _spec_tree(pspecs, global_inputs)
    out = [
        global_array_to_host_local_array_impl(x, global_mesh=global_mesh, pspec=s)
        for x, s in zip(leaves, specs)
    ]
    return tu.tree_unflatten(treedef, out)


def global_array_to_host_local_array_impl(arr, *, global_mesh: shardings.Mesh, pspec):
    """One array of ``global_array_to_host_local_array``: this process's part of the global
    Array ``arr``, over the mesh's local devices (a NumPy array is split as ``pspec`` says).

    >>> from funcgrad.sharding import make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> global_array_to_host_local_array_impl(np.arange(2.0), global_mesh=mesh, pspec=P("x"))
    Array([0., 1.], dtype=float64)
    """
    _check_pspec(pspec)
    local_mesh = global_mesh.local_mesh
    x = arr
    if not isinstance(x, Array):  # a NumPy global value (every process holds all of it)
        x = api.device_put(np.asarray(x), shardings.NamedSharding(global_mesh, pspec))
    shards = x.addressable_shards
    origin = [min(s.index[k].start or 0 for s in shards) for k in range(x.ndim)]
    ends = [
        max(s.index[k].stop if s.index[k].stop is not None else x.shape[k] for s in shards)
        for k in range(x.ndim)
    ]
    local = np.empty([e - o for o, e in zip(origin, ends)], dtype=x.dtype)
    for s in shards:
        ix = tuple(
            slice((sl.start or 0) - o, (sl.stop if sl.stop is not None else n) - o)
            for sl, o, n in zip(s.index, origin, x.shape)
        )
        local[ix] = np.asarray(s.data)
    return api.device_put(local, shardings.NamedSharding(local_mesh, pspec))


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which to save a checkpoint after a
    preemption notice (JAX's). Without the distributed runtime (one process) no notice can be
    shared: ``False``, as in JAX. With it, funcgrad starts no preemption sync manager, so this is
    JAX's error for that case (``jax_enable_preemption_service`` off).

    >>> reached_preemption_sync_point(0)
    False
    """
    if _distributed.client() is None:
        return False
    raise RuntimeError(
        "Preemption sync manager has not been initialized: funcgrad.distributed.initialize does not "
        "start JAX's preemption service; save checkpoints on a schedule instead"
    )


class ProcessFailureError(Exception):
    """Raised by ``live_devices`` when processes failed during its block; ``failed_devices`` is
    the set of their devices.

    >>> ProcessFailureError({"d1"}).failed_devices
    {'d1'}
    """

    def __init__(self, failed_devices: set):
        self.failed_devices = failed_devices
        super().__init__(f"Devices failed: {failed_devices}")


def _alive(client, devices) -> dict:
    """The devices whose process is live, each with its process's incarnation."""
    process_ids = {d.process_index for d in devices}
    if _devices.process_index() not in process_ids:
        raise ValueError("Provided devices do not have any local devices.")
    live = client.get_live_nodes(sorted(process_ids))
    return {d: live[d.process_index] for d in devices if d.process_index in live}


class _LiveDevices:
    """``with live_devices(devices) as alive:`` -- JAX's barrier over the processes of
    ``devices`` that yields the live ones (sorted by id), and raises ``ProcessFailureError`` on
    every process if any of them failed during the block (JAX's semantics; needs
    ``funcgrad.distributed.initialize``: ``RuntimeError`` without it, as in JAX).

    >>> import funcgrad
    >>> with live_devices(funcgrad.devices()) as alive:
    ...     pass
    Traceback (most recent call last):
    RuntimeError: Distributed funcgrad not initialized (funcgrad.distributed.initialize).
    """

    def __init__(self):
        self.devices = None

    @contextlib.contextmanager
    def __call__(self, devices):
        client = _distributed.client()
        if client is None:
            raise RuntimeError("Distributed funcgrad not initialized (funcgrad.distributed.initialize).")
        if not devices:
            raise ValueError("No devices provided.")
        if self.devices is None:
            self.devices = _alive(client, devices)
        exception = None
        try:
            yield sorted(self.devices, key=lambda d: d.id)
        except Exception as e:  # noqa: BLE001 - re-raised below, after the barrier
            exception = e
        finally:
            old, new = self.devices, _alive(client, devices)
            self.devices = new
            failed = {d for d in old if d not in new or new[d] != old[d]}
            if failed:
                raise ProcessFailureError(failed) from exception
            if exception is not None:
                raise exception


live_devices = _LiveDevices()
