"""Arrays over several devices: jaxlib shardings, sharded puts and reads (the programs that run
over them: ``spmd_executables``).

Layer: xla_bridge (runtime half). May import: stdlib, numpy, jaxlib and its siblings ``runtime``,
``dtypes`` and ``dlpack``. Never jax, nothing else of funcgrad: the surface
hands its ``Mesh`` objects in and reads them back as opaque values (``MeshSharding._fg_mesh``),
using only ``mesh._flat`` (the devices in mesh order), ``mesh.devices.shape`` and
``mesh.axis_names``.

A sharded value is one jaxlib ``ArrayImpl`` whose sharding is a ``MeshSharding`` (jaxlib's
``GSPMDSharding``: the device list and XLA's ``HloSharding``, plus the Python attributes jaxlib
reads). Decisions, from shared/notes/jaxlib-spmd-facts.md:

- Shardings are built as ``OpSharding`` protos over positions in the sharding's own device list
  (a mesh's devices in row-major order), so one code path serves every mesh and device order.
- Reading back assembles **every** addressable shard (``ArrayImpl._arrays``); jaxlib's one-shard
  helpers silently return shard 0. ``_arrays`` builds its per-shard arrays through a lazy
  ``import jax``: NOTE: [no jax import] keeps that import from happening.
- An SPMD executable (``spmd_executables``) checks each argument's sharding before running: XLA
  segfaults on a buffer on the wrong device instead of raising.

# NOTE: [no jax import]
# A few jaxlib C++ entry points import jax lazily (``ArrayImpl._arrays`` for the aval class of its
# per-shard arrays, ``unsafe_buffer_pointer``, ``_single_device_array_to_np_array_did_copy``) and
# fall back to jaxlib's own classes when that import fails; each entry point tries once per
# process and keeps the answer. Where jax is installed but not imported, that one try would
# import all of jax (seconds, and jax's own process-wide settings) into a funcgrad program.
# ``_no_jax()`` makes the try fail fast: for the duration of the call only, a finder at the front
# of ``sys.meta_path`` refuses ``jax``/``jax.*`` in the calling thread (other threads import as
# usual), and it is removed when the last such call returns. Nothing is installed at import
# (importing funcgrad changes no process-wide state; tests/integration/test_import_side_effects.py),
# and where jax is already imported (a test using it as an oracle) nothing is blocked.
"""

from __future__ import annotations

import importlib.abc
import itertools
import math
import sys
import threading

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from . import runtime
from .dlpack import dlpack_to_numpy
from .dtypes import aval

__all__ = [
    "Device",
    "DeviceList",
    "MeshSharding",
    "asked_unreduced",
    "block_numpy",
    "buffer_pointer",
    "indices",
    "is_sharded",
    "named_sharding",
    "process_index",
    "put",
    "put_blocks",
    "read",
    "replicated",
    "same_layout",
    "shard_shape",
    "shards",
    "single_device_sharding",
    "spec_of",
    "tile_counts",
]

Device = xc.Device
DeviceList = xc.DeviceList  # jaxlib's ordered device set (libraries name it in annotations)
_COPY = _jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
_REPLICATED = xc.OpSharding.Type.REPLICATED


# ----------------------------------------------------------------------------------------------
# NOTE: [no jax import]


class _NoJax(importlib.abc.MetaPathFinder):
    """Refuses ``jax``/``jax.*`` in the thread that entered ``_no_jax`` (while it is installed)."""

    def __init__(self):
        self.state = threading.local()

    def find_spec(self, name, path=None, target=None):
        if getattr(self.state, "on", False) and (name == "jax" or name.startswith("jax.")):
            raise ModuleNotFoundError(f"funcgrad keeps jaxlib from importing {name}")
        return None


_guard = _NoJax()
_guard_lock = threading.Lock()
_guard_users = 0  # threads inside ``_no_jax`` now: the finder is in sys.meta_path while > 0


class _no_jax:
    """NOTE: [no jax import]: inside the block, this thread's ``import jax`` fails at once."""

    def __enter__(self):
        global _guard_users
        self.prev = getattr(_guard.state, "on", False)
        self.installed = "jax" not in sys.modules
        if self.installed:
            with _guard_lock:
                if _guard_users == 0:
                    sys.meta_path.insert(0, _guard)
                _guard_users += 1
            _guard.state.on = True

    def __exit__(self, *exc):
        global _guard_users
        if self.installed:
            _guard.state.on = self.prev
            with _guard_lock:
                _guard_users -= 1
                if _guard_users == 0 and _guard in sys.meta_path:
                    sys.meta_path.remove(_guard)


# ----------------------------------------------------------------------------------------------
# Shardings


def process_index() -> int:
    """This process's index (0 without ``funcgrad.distributed``)."""
    return runtime.get_backend().client.process_index()


def _typed_axes(mesh):
    """What of ``mesh`` types the values laid out over it: its axis names and types when some axis
    is Explicit (read duck-typed), else ``None``."""
    types = getattr(mesh, "axis_types", None)
    if not types or not any(getattr(t, "name", None) == "Explicit" for t in types):
        return None
    return (tuple(mesh.axis_names), tuple(t.name for t in types))


def asked_unreduced(s) -> frozenset:
    """The mesh axes the surface sharding that a bridge sharding ``s`` was made from (its
    ``_fg_user``) is unreduced over: its blocks are partial sums (NOTE: [unreduced values])."""
    user = getattr(getattr(s, "_fg_user", None), "spec", None)
    return frozenset(getattr(user, "unreduced", None) or ())


class MeshSharding(_jax.GSPMDSharding):
    """jaxlib's sharding of a value on several devices, with what our runtime reads.

    ``_fg_mesh``: the surface mesh this layout is over (opaque here; ``None`` if unknown);
    ``_fg_user``: the surface sharding it was made from (or found to equal), if any.
    """

    def __init__(self, devices, hlo, mesh=None, user=None, spec=None, memory_kind=None):
        super().__init__(xc.DeviceList(tuple(devices)), hlo, memory_kind=memory_kind)
        self._fg_kind = memory_kind  # None: the devices' own memory (as backends._Sharding)
        self._fg_devs = tuple(devices)
        self._fg_hlo = hlo
        self._fg_typed = _typed_axes(mesh)
        # jaxlib's C++ dispatcher hashes each argument's sharding on every call: hashed once here.
        self._fg_hash = hash((self._fg_devs, hlo, self._fg_typed, memory_kind))
        self._fg_mesh = mesh
        self._fg_user = user
        self._fg_spec = spec  # one tuple of mesh axis names per dimension, when known
        self._fg_cpu = False  # runtime.to_numpy: not one host-readable buffer
        me = devices[0].client.process_index()
        self._fg_local = tuple(d for d in devices if d.process_index == me)

    def _to_xla_hlo_sharding(self, ndim):
        return self._fg_hlo

    memory_kind = property(lambda self: self._fg_kind)
    device_set = property(lambda self: set(self._fg_devs))
    _device_assignment = property(lambda self: self._fg_devs)

    def _fg_read(self, buf):
        return read(buf)

    # jaxlib's GSPMDSharding compares by identity (jax adds equality in Python); the C++
    # dispatcher compares an argument's sharding with the program's through these, so the
    # output of one program can be the input of the next without a cache miss. On a mesh with
    # Explicit axes the sharding is part of the value's type (NOTE: [sharding in types]): a
    # layout over such a mesh never equals the same layout untyped, so a program traced for
    # untyped arguments is not reused for typed ones (or the reverse).
    def __eq__(self, other):
        return self is other or (
            type(other) is MeshSharding
            and self._fg_devs == other._fg_devs
            and self._fg_hlo == other._fg_hlo
            and self._fg_typed == other._fg_typed
            and self._fg_kind == other._fg_kind
        )

    def __hash__(self):
        return self._fg_hash

    def __repr__(self):
        if self._fg_user is not None:
            return repr(self._fg_user)
        return f"MeshSharding({self._fg_hlo}, devices={[d.id for d in self._fg_devs]})"


def _op_sharding(tile_dims, positions, rep) -> xc.HloSharding:
    if all(t == 1 for t in tile_dims):
        return xc.HloSharding.replicate()
    o = xc.OpSharding()
    o.type = xc.OpSharding.Type.OTHER
    dims = list(tile_dims)
    if rep > 1:
        dims.append(rep)
        o.last_tile_dims = [_REPLICATED]
    o.tile_assignment_dimensions = dims
    o.tile_assignment_devices = [int(p) for p in positions]
    return xc.HloSharding.from_proto(o)


def named_sharding(mesh, spec, user=None, memory_kind=None) -> MeshSharding:
    """The sharding of ``spec`` (one tuple of mesh axis names per array dimension) over ``mesh``,
    in the devices' memory ``memory_kind`` (``None``: their own).

    Array dimension ``d`` is split into ``prod(sizes of spec[d])`` tiles, its axes major first;
    the mesh axes the spec leaves out replicate each tile.
    """
    names = list(mesh.axis_names)
    sizes = dict(zip(names, mesh.devices.shape))
    used = [n for dim in spec for n in dim]
    order = [names.index(n) for n in used] + [i for i, n in enumerate(names) if n not in used]
    tiles = [math.prod(sizes[n] for n in dim) for dim in spec]
    rep = math.prod(sizes[n] for n in names if n not in used)
    if all(t == 1 for t in tiles):
        hlo = xc.HloSharding.replicate()
    else:
        # The tile of device (i_1, ..., i_k) of the mesh is its position after moving the used axes
        # first: XLA's "iota" form, the one compiled programs report (so shardings compare equal).
        hlo = xc.HloSharding.iota_tile(
            [*tiles, rep] if rep > 1 else tiles,
            list(mesh.devices.shape),
            order,
            [_REPLICATED] if rep > 1 else [],
        )
    return MeshSharding(mesh._flat, hlo, mesh, user, tuple(tuple(d) for d in spec), memory_kind)


_replicated: dict = {}


def replicated(devices, mesh=None) -> MeshSharding:
    """The sharding of a value copied whole onto each of ``devices`` (one object per devices and
    mesh, so programs and their arguments can compare shardings by identity)."""
    key = (tuple(devices), mesh)
    s = _replicated.get(key)
    if s is None:
        s = _replicated[key] = MeshSharding(tuple(devices), xc.HloSharding.replicate(), mesh)
    return s


def spec_of(s: MeshSharding, ndim: int):
    """The spec (one tuple of axis names per dimension) over ``s._fg_mesh`` that lays a rank-``ndim``
    array out as ``s`` does, or ``None`` if none does (or the mesh is unknown)."""
    if s._fg_spec is not None and len(s._fg_spec) == ndim:
        return s._fg_spec
    mesh = s._fg_mesh
    if mesh is None:
        return None
    if s._fg_hlo.is_replicated():
        return ((),) * ndim
    for spec in _candidate_specs(mesh, tile_counts(s, ndim)):
        if same_layout(named_sharding(mesh, spec), s, ndim):
            s._fg_spec = spec
            return spec
    return None


class TileMesh:
    """A mesh read off a tiled ``HloSharding`` (``tile_spec``): one axis per split dimension, and
    one for the copies of ``last_tile_dim_replicate``, over the sharding's devices in its tile
    order. Modules declare it as any mesh (``sdy.mesh ... device_ids=[...]``)."""

    __slots__ = ("axis_names", "devices")

    def __init__(self, axis_names, devices):
        self.axis_names, self.devices = tuple(axis_names), devices


# NOTE: [Shardy reads sdy shardings only]
# jaxlib 0.10.2's Shardy partitioner ignores an ``mhlo.sharding`` text on ``@main``'s parameters: it
# compiles them replicated, and an argument passed sharded then fails in XLA's runtime, which
# crashes the process. So a sharding known only as HLO text (no mesh names it: a layout XLA chose,
# a mesh-less MeshSharding) is written into modules as an sdy sharding over the mesh ``tile_spec``
# reads off it (xla_bridge/spmd.py's ``_spec_of``); HLO text is left only where no mesh says it.


def tile_spec(s: MeshSharding, ndim: int):
    """``(TileMesh, spec)`` laying a rank-``ndim`` array out as ``s``'s tiled HloSharding does, or
    ``None`` (maximal, manual or other subgroup shardings): NOTE: [Shardy reads sdy shardings only]."""
    h = s._fg_hlo
    if not h.is_tiled() or h.subgroup_types():
        return None
    dims = list(h.tile_assignment_dimensions())
    if len(dims) != ndim + (1 if h.replicate_on_last_tile_dim() else 0):
        return None
    devices = np.array([s._fg_devs[p] for p in h.tile_assignment_devices()], dtype=object)
    names, shape, spec = [], [], []
    for d, count in enumerate(dims[:ndim]):
        if count > 1:
            names.append(f"_fg_dim{d}")
            shape.append(count)
        spec.append((f"_fg_dim{d}",) if count > 1 else ())
    if len(dims) > ndim and dims[-1] > 1:
        names.append("_fg_copies")
        shape.append(dims[-1])
    return TileMesh(names, devices.reshape(shape)), tuple(spec)


def _candidate_specs(mesh, counts):
    """Specs over ``mesh`` splitting each dimension into ``counts[d]`` tiles."""
    names = list(mesh.axis_names)
    sizes = dict(zip(names, mesh.devices.shape))

    def options(k, used):
        if k == 1:
            yield ()
        for n in names:
            if n in used or sizes[n] == 1 or k % sizes[n]:
                continue
            for rest in options(k // sizes[n], used | {n}):
                yield (n, *rest)

    def specs(d, used):
        if d == len(counts):
            yield ()
            return
        for opt in options(counts[d], used):
            for rest in specs(d + 1, used | set(opt)):
                yield (opt, *rest)

    yield from specs(0, frozenset())


def single_device_sharding(device, memory_kind=None):
    return runtime.sharding(device, memory_kind)


def is_sharded(buf) -> bool:
    """Whether ``buf`` (a jaxlib ArrayImpl) is a value over several devices (or one we made as a
    mesh sharding)."""
    return type(buf._sharding) is MeshSharding


def _devs(s) -> tuple:
    return s._fg_devs if type(s) is MeshSharding else (s._fg_device,)


def _hlo(s):
    return s._fg_hlo if type(s) is MeshSharding else xc.HloSharding.replicate()


def tile_counts(s, ndim: int) -> list[int]:
    """How many tiles each of the ``ndim`` dimensions is split into."""
    h = _hlo(s)
    if h.is_replicated():
        return [1] * ndim
    return list(h.tile_assignment_dimensions())[:ndim]


def indices(s, shape) -> list[tuple]:
    """Each device's index (tuple of slices) into an array of ``shape``, in ``s``'s device order."""
    devs = _devs(s)
    full = tuple(slice(None) for _ in shape)
    h = _hlo(s)
    if h.is_replicated():
        return [full] * len(devs)
    dims = list(h.tile_assignment_dimensions())
    positions = list(h.tile_assignment_devices())
    nd = len(shape)
    for d in range(nd):
        if shape[d] % dims[d]:
            raise ValueError(
                f"an array of shape {tuple(shape)} cannot be split into {dims[:nd]} tiles: dimension {d} "
                f"({shape[d]}) is not divisible by {dims[d]}"
            )
    blocks = [shape[d] // dims[d] for d in range(nd)]
    out: list = [None] * len(devs)
    for flat, tile in enumerate(itertools.product(*[range(t) for t in dims])):
        out[positions[flat]] = tuple(
            slice(None) if dims[d] == 1 else slice(tile[d] * blocks[d], (tile[d] + 1) * blocks[d])
            for d in range(nd)
        )
    return out


def shard_shape(s, shape) -> tuple:
    counts = tile_counts(s, len(shape))
    for d, (n, k) in enumerate(zip(shape, counts)):
        if n % k:
            raise ValueError(f"dimension {d} of shape {tuple(shape)} is not divisible by its {k} tiles")
    return tuple(n // k for n, k in zip(shape, counts))


def same_layout(a, b, ndim: int) -> bool:
    """Whether ``a`` and ``b`` put the same elements of a rank-``ndim`` array on the same devices."""
    if a is b:
        return True
    if set(_devs(a)) != set(_devs(b)):
        return False
    ca, cb = tile_counts(a, ndim), tile_counts(b, ndim)
    shape = tuple(math.lcm(x, y) for x, y in zip(ca, cb))
    ia = dict(zip(_devs(a), map(_key, indices(a, shape))))
    ib = dict(zip(_devs(b), map(_key, indices(b, shape))))
    return ia == ib


def _key(index) -> tuple:
    return tuple((s.start, s.stop) for s in index)


# ----------------------------------------------------------------------------------------------
# Host <-> devices


def put(value, s: MeshSharding, *, weak_type: bool = False):
    """A sharded ArrayImpl holding ``value`` (a NumPy array) laid out as ``s``; each process puts
    only its own devices' shards (all of them on one host)."""
    a = np.asarray(value)
    dt = a.dtype
    if dt.byteorder == ">":
        a = a.astype(dt.newbyteorder("="))
    if not a.flags.owndata and a.ndim:
        # A view of another buffer (a device buffer read back zero-copy, say): jaxlib's sharded put
        # fails on blocks viewing such memory ("bad_function_call"), so the blocks come from a copy.
        a = np.array(a)
    me = process_index()
    devs, blocks, seen = [], [], set()
    for d, ix in zip(s._fg_devs, indices(s, a.shape)):
        if d.process_index == me:
            devs.append(d)
            # A repeated (replicated) block is a copy: jaxlib's put fails ("bad_function_call") on
            # several partially-replicated blocks sharing one host buffer.
            key = _key(ix)
            block = np.asarray(a[ix])  # (ascontiguousarray would make a 0-d block 1-d)
            if key in seen or not block.flags.c_contiguous or not block.size:
                # (empty blocks too: views of an empty array share one address, which jaxlib's put
                # fails on the same way; each gets an allocation of its own)
                block = np.array(block, copy=True, order="C")
            blocks.append(block)
            seen.add(key)
    return put_blocks(blocks, devs, a.shape, a.dtype, s, weak_type=weak_type)


def put_blocks(blocks, devices, shape, dtype, s: MeshSharding, *, weak_type: bool = False, distinct=False):
    """A sharded ArrayImpl of global ``shape`` from this process's per-device ``blocks``.
    ``distinct``: replicas of one tile hold different blocks (an unreduced value's partial sums):
    jaxlib's put of a replicated layout copies the first block to every device, so each block is
    put on its own device and the array assembled from them."""
    if distinct:
        order = {d: i for i, d in enumerate(s._fg_devs)}
        pairs = sorted(zip(devices, blocks), key=lambda t: order[t[0]])
        try:
            arrays = [
                _jax.batched_device_put(
                    aval(np.shape(b), np.dtype(dtype), weak_type),
                    single_device_sharding(d),
                    [np.asarray(b)],
                    [d],
                    True,
                    True,
                    _COPY,
                    True,
                )
                for d, b in pairs
            ]
            return _jax.ArrayImpl(aval(tuple(shape), np.dtype(dtype), weak_type), s, arrays, True, True)
        except _jax.JaxRuntimeError as e:
            raise runtime.XlaBridgeError(
                f"putting a sharded {np.dtype(dtype)}{list(shape)} array failed: {e}"
            ) from None
    try:
        return _jax.batched_device_put(
            aval(tuple(shape), np.dtype(dtype), weak_type),
            s,
            list(blocks),
            list(devices),
            True,
            True,
            _COPY,
            True,
        )
    except _jax.JaxRuntimeError as e:
        raise runtime.XlaBridgeError(
            f"putting a sharded {np.dtype(dtype)}{list(shape)} array failed: {e}"
        ) from None


def _one_device(sharding):
    """The device of a shard's sharding: jaxlib's SingleDeviceSharding, or a MeshSharding over one
    device (a pmap output's shards carry those)."""
    device = getattr(sharding, "_device", None)
    return device if device is not None else sharding._fg_devs[0]


def block_numpy(arr) -> np.ndarray:
    """The host value of one single-device shard (from ``shards``)."""
    dt = arr.aval.dtype if arr.aval is not None else None
    device = _one_device(arr._sharding)
    if device.platform == "cpu":
        try:
            out = np.asarray(memoryview(arr))
            if dt is None or out.dtype == dt:
                return out
        except (BufferError, TypeError, _jax.JaxRuntimeError):
            pass
        if arr.is_deleted():
            raise _deleted()
        return dlpack_to_numpy(arr, dt)
    return runtime.to_numpy(runtime.host_copy(arr))


def _deleted(what: str = "") -> runtime.XlaBridgeError:
    return runtime.XlaBridgeError(f"{what}{runtime.DONATED}", phase="transfer")


def buffer_pointer(buf) -> int:
    """The device address of a one-device ArrayImpl's data (``unsafe_buffer_pointer``, which goes
    through ``_arrays``: NOTE: [no jax import]).

    >>> buffer_pointer(runtime.device_put(np.ones(2))) > 0
    True
    """
    with _no_jax():
        return buf.unsafe_buffer_pointer()


def shards(buf) -> list[tuple]:
    """``(device, index, single-device ArrayImpl)`` of each of this process's shards of ``buf``."""
    s = buf._sharding
    if buf.is_deleted():
        raise _deleted()
    with _no_jax():
        arrays = buf._arrays
    idx = dict(zip(s._fg_devs, indices(s, buf.aval.shape)))
    devs = [_one_device(a._sharding) for a in arrays]
    return [(d, idx[d], a) for d, a in zip(devs, arrays)]


def read(buf) -> np.ndarray:
    """The whole value of a sharded ArrayImpl, assembled from every shard."""
    s = buf._sharding
    shape, dtype = tuple(buf.aval.shape), buf.aval.dtype
    unreduced = asked_unreduced(s)
    if unreduced:
        # NOTE: [unreduced values] (funcgrad/_sharding_unreduced.py): the value is a sum of blocks.
        raise NotImplementedError(
            f"this {dtype}{list(shape)} array is unreduced over mesh axes {sorted(unreduced)}: its value is "
            "the sum of its devices' blocks and is not read whole (as in JAX). Reduce it first with "
            "funcgrad.sharding.reshard(x, P(...)) to a sharding without unreduced axes, or read its "
            ".addressable_shards"
        )
    parts = shards(buf)
    replicated_ = s._fg_hlo.is_replicated()
    if len(parts) != len(s._fg_devs) and not replicated_:
        raise runtime.XlaBridgeError(
            f"this {dtype}{list(shape)} array spans devices of other processes: only its local shards can be "
            "read here (use .addressable_shards, or gather it with a jitted function whose out_shardings "
            "replicate it)"
        )
    if replicated_:
        return block_numpy(parts[0][2])
    out = np.empty(shape, dtype)
    # Each piece is read from its first copy (replica 0: the first of its devices in the sharding's
    # order), as JAX's np.asarray reads it: copies may differ (a shard_map whose out_specs leave out
    # an axis its body's value varies along, under check_vma=False), and XLA's programs read that
    # copy too, so the host value and a jitted reduction of it agree.
    position = {d: i for i, d in enumerate(s._fg_devs)}
    written = set()
    for _, index, arr in sorted(parts, key=lambda part: position.get(part[0], len(position))):
        key = _key(index)
        if key not in written:
            written.add(key)
            out[index] = block_numpy(arr)
    out.flags.writeable = False
    return out
