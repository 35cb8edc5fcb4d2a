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

import zlib
from typing import Any

import numpy as np

from funcgrad import _devices, _placement, api, jitting
from funcgrad import _shardings as shardings
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array

__all__ = [
    "assert_equal",
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "host_local_array_to_global_array",
    "process_allgather",
    "sync_global_devices",
]


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
    out = []
    for x, spec in zip(leaves, specs):
        if isinstance(x, Array) and not x.is_fully_addressable:
            out.append(x)
            continue
        sharding = shardings.NamedSharding(global_mesh, spec)
        out.append(_placement.make_array_from_process_local_data(sharding, np.asarray(x)))
    return tu.tree_unflatten(treedef, out)


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
    local_mesh = global_mesh.local_mesh
    out = []
    for x, spec in zip(leaves, specs):
        if not isinstance(x, Array):
            raise TypeError(
                f"global_array_to_host_local_array expects funcgrad Arrays, got {type(x).__name__}"
            )
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
        out.append(api.device_put(local, shardings.NamedSharding(local_mesh, spec)))
    return tu.tree_unflatten(treedef, out)
