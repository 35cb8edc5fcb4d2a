"""Meshes, with JAX's names: ``Mesh`` (named axes over an n-d array of devices), ``AbstractMesh``
(its axis names, sizes and types without devices: what a type holds), ``AxisType``,
``make_mesh``, and the mesh in scope (``set_mesh``, ``use_mesh``, ``use_abstract_mesh``,
``get_mesh``, ``get_abstract_mesh``, ``concrete_mesh``, ``context_mesh``).

Layer: surface, under ``funcgrad._shardings`` (which re-exports these names). Imports numpy, the
kernel's cache registry and hooks, ``xla_bridge`` (devices, and ``xla_bridge.sharded`` on first
use) and ``funcgrad._user_contexts`` (the user context of ``set_mesh``).
"""

from __future__ import annotations

import collections
import enum
import math
import threading
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from funcgrad import xla_bridge
from funcgrad._user_contexts import make_user_context
from funcgrad.kernel import batching
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ManualAxisType  # noqa: F401 - re-exported (funcgrad._shardings)


def _sh():
    """``xla_bridge.sharded``, loaded on first use (``import funcgrad`` does not load jaxlib)."""
    return xla_bridge.sharded


class AxisType(enum.Enum):
    """How a mesh axis is partitioned. funcgrad partitions every axis automatically (``Auto``);
    ``Explicit`` is accepted for JAX compatibility and behaves as ``Auto``; ``Manual`` axes are
    those a ``shard_map`` body sees."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _check_device(d, where):
    """``d`` must be one of funcgrad's devices (not, say, a device of another jaxlib client)."""
    if not isinstance(d, _sh().Device):
        if hasattr(d, "id") and hasattr(d, "platform"):
            # A duck-typed stand-in (an object with a device's ``id`` and ``platform``, as JAX's
            # debugging tests draw meshes of): JAX's Mesh keeps it, and computing on it fails later.
            return
        raise TypeError(f"{where}: devices must be elements of funcgrad.devices(), got {d!r}")
    if not issubclass(type(d), _sh().Device):
        # A stand-in that says it is a Device (``mock.create_autospec(jax.Device)``, as orbax's
        # sharding tests build meshes): JAX's Mesh keeps it, and computing on it fails later.
        return
    try:
        xla_bridge.runtime._backend_of(d)
    except (ValueError, xla_bridge.XlaBridgeError) as e:
        raise ValueError(
            f"{where}: {d!r} is not one of funcgrad's devices ({e}); build meshes and shardings from "
            "funcgrad.devices()"
        ) from None


class _MeshContext(threading.local):
    def __init__(self):
        self.stack: list[Mesh] = []
        self.abstract: list[AbstractMesh] = []
        # the concrete meshes of the shard_map bodies being traced (funcgrad._shard_map_body),
        # innermost last: a bare PartitionSpec inside one is over its mesh, as JAX's
        self.bodies: list = []


_context = _MeshContext()

# NOTE: [placement in context]
# JAX's ``set_mesh(mesh)`` (its ``device_context``) does more than name the mesh of bare
# PartitionSpecs: a computation whose arguments are all uncommitted (an eager operation, a jitted
# call, a random draw, ``grad``/``vmap`` of them) runs on the mesh's devices, and its results are
# replicated over the mesh and committed (``NamedSharding(mesh, P())``; ``P(None, ...)``, the
# type's spec, on Explicit axes); a committed argument on other devices meets "Received
# incompatible devices ... and jit's context mesh". ``with mesh:``/``use_mesh``,
# ``use_abstract_mesh`` and ``device_put(x)`` place nothing (as JAX's). The mesh set is a user
# context of ``jit`` (``_device_context()``, a ``funcgrad._user_contexts`` UserConfig): part of the trace
# cache key, as JAX's ``device_context`` is, and while it is set calls take the staged route (the
# native dispatcher's key knows nothing of it). The lower layers read it through
# ``hooks.context_mesh`` (None while no thread has a mesh set, so eager operations pay one
# attribute read), one question asked by every route: an eager primitive takes
# ``hooks.eager_on_devices`` (``kernel.core.EvalTrace``; ``kernel.numpy_plan``'s cached programs
# run equation by equation), which compiles it alone (``xla_bridge.spmd_route``); every compiled
# call asks ``spmd_route.needs_spmd``, which says yes, and ``xla_bridge.spmd.plan`` runs it on the
# mesh's devices when no sharding and no sharded argument names others; ``xla_bridge.committed``
# checks committed arguments against the mesh. Tests: tests/surface/spmd/test_set_mesh_placement.py.

_device_config = None  # the UserConfig holding the mesh set (made at the first set_mesh)
_placing_lock = threading.Lock()
_placing = 0  # how many threads have a mesh set (hooks.context_mesh is None at 0)


def _device_context():
    """The user context (``funcgrad._user_contexts``) that holds the mesh ``set_mesh`` set in each
    thread, made at the first ``set_mesh`` (until then jit's cache key holds no entry for it)."""
    global _device_config
    if _device_config is None:
        _device_config = make_user_context(None)
    return _device_config


_scope_config = None  # the UserConfig holding the meshes in scope (made at the first mesh scope)


def _scope_changed() -> None:
    """Key jit's traces on the meshes in scope in this thread, the innermost ``with mesh:`` (or set)
    mesh and ``use_abstract_mesh``'s, as JAX's trace context holds them: a bare PartitionSpec
    traced under one mesh is not reused under another (a ``with_sharding_constraint(x, P('x'))``
    traced under a mesh of devices 0-1 ran there under a mesh of devices 2-3)."""
    global _scope_config
    stack, abstract = _context.stack, _context.abstract
    value = (stack[-1] if stack else None, abstract[-1] if abstract else None)
    if _scope_config is None:
        if value == (None, None):
            return
        _scope_config = make_user_context((None, None))
    _scope_config._swap_local(value)


def _context_mesh():
    """The mesh ``set_mesh`` set in this thread (``hooks.context_mesh`` while any thread has one),
    laid out as the abstract mesh in scope (``use_abstract_mesh`` of other axis names or types
    over as many devices), as JAX places results over the mesh their type shows."""
    mesh = _device_config.value
    if mesh is None or not _context.abstract:
        return mesh
    am = _context.abstract[-1]
    if am.empty or am.manual_axes or am.size != mesh.size or am == mesh.abstract_mesh:
        return mesh
    return concrete_mesh(am)


def _swap_device(mesh):
    """Make ``mesh`` (a Mesh, None, or a value ``_swap_device`` returned) the mesh set in this
    thread; returns the previous one (NOTE: [placement in context])."""
    global _placing
    config = _device_context()
    had = config.value is not None
    previous = config._swap_local(mesh)
    has = config.value is not None
    if had != has:
        with _placing_lock:
            _placing += 1 if has else -1
            hooks.context_mesh = _context_mesh if _placing > 0 else None
    return previous


def context_mesh() -> Mesh | None:
    """The mesh ``set_mesh`` set in this thread, which places computations on uncommitted values
    (NOTE: [placement in context]); ``with mesh:`` blocks do not count.

    >>> m = make_mesh((1,), ("x",))
    >>> with m:
    ...     context_mesh() is None
    True
    >>> with set_mesh(m):
    ...     context_mesh() is m
    True
    """
    return None if _device_config is None else _device_config.value


def _types_of(axis_types, axis_names: tuple, default, where: str) -> tuple:
    """One AxisType per axis name, checked in JAX's words (a single AxisType is one axis's)."""
    if axis_types is None:
        return (default,) * len(axis_names)
    if isinstance(axis_types, list):
        axis_types = tuple(axis_types)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(t, AxisType) for t in axis_types):
        raise TypeError(
            f"axis_types passed to {where} must be of type `jax.sharding.AxisType`. Got "
            f"{axis_types} of type {tuple(type(t) for t in axis_types)}"
        )
    if len(axis_types) != len(axis_names):
        raise ValueError(
            "Number of axis names should match the number of axis_types. Got "
            f"axis_names={axis_names} and axis_types={axis_types}"
        )
    return axis_types


def _mesh_repr(kind, names, sizes, types) -> str:
    if not names:
        return f"{kind}((), axis_types=())"
    axes = ", ".join(f"{n!r}: {s}" for n, s in zip(names, sizes))
    shown = ", ".join(map(repr, types)) + ("," if len(types) == 1 else "")
    return f"{kind}({axes}, axis_types=({shown}))"


class AbstractDevice(NamedTuple):
    """The kind of device an abstract mesh stands for (JAX's ``jax.sharding.AbstractDevice``).

    >>> d = AbstractDevice("cpu", None, "cpu")
    >>> d
    AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)
    >>> AbstractMesh((2,), ("x",), abstract_device=d)
    AbstractMesh('x': 2, axis_types=(Auto,), device_kind=cpu, num_cores=None, platform=cpu)
    """

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self) -> str:
        fields = f"device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform}"
        return f"AbstractDevice({fields})"

    @staticmethod
    def of(device) -> AbstractDevice:
        return AbstractDevice(
            getattr(device, "device_kind", None),
            getattr(device, "num_cores", None),
            getattr(device, "platform", None),
        )


class AbstractMesh:
    """A mesh's axis names, sizes and types without its devices: what an array's type holds
    (``typeof(x).sharding.mesh``) and what tracing needs (``get_abstract_mesh()``).

    >>> am = AbstractMesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    >>> am
    AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))
    >>> dict(am.shape), am.size, am.explicit_axes
    ({'x': 2, 'y': 4}, 8, ('x', 'y'))
    """

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        axis_sizes = tuple(int(n) for n in axis_sizes)
        if len(axis_sizes) != len(axis_names):
            raise ValueError(
                f"AbstractMesh: {len(axis_sizes)} axis sizes {axis_sizes} but names {axis_names}"
            )
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"AbstractMesh: axis names must be unique, got {axis_names}")
        self.axis_sizes = axis_sizes
        self.axis_names = axis_names
        self.axis_types = _types_of(axis_types, axis_names, AxisType.Auto, "AbstractMesh")
        self.abstract_device = abstract_device
        self._key = (axis_sizes, axis_names, self.axis_types)
        self._hash = hash(self._key)
        self.explicit_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Explicit)
        self.auto_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Auto)
        self.manual_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Manual)

    shape = property(lambda self: collections.OrderedDict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes) if self.axis_sizes else 0)  # (JAX: 0 when empty)
    empty = property(lambda self: not self.axis_names)
    abstract_mesh = property(lambda self: self)

    def update_axis_types(self, types: dict) -> AbstractMesh:
        """The same mesh with some axes' types changed (``{name: AxisType}``)."""
        new = tuple(types.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, new, abstract_device=self.abstract_device)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs) -> AbstractMesh:
        """This mesh with the given fields replaced (JAX's ``AbstractMesh.update``).

        >>> dict(AbstractMesh((2, 2), ("x", "y")).update(axis_sizes=(4, 1), axis_names=("a", "b")).shape)
        {'a': 4, 'b': 1}
        """
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(
            self.axis_sizes if axis_sizes is None else axis_sizes,
            self.axis_names if axis_names is None else axis_names,
            self.axis_types if axis_types is None else axis_types,
            **kwargs,
        )

    def __eq__(self, other):
        return self is other or (isinstance(other, AbstractMesh) and self._key == other._key)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        text = _mesh_repr("AbstractMesh", self.axis_names, self.axis_sizes, self.axis_types)
        device = self.abstract_device
        if device is None:  # (a mesh made by hand, as JAX prints one)
            return text
        # The abstract mesh of a concrete mesh names its kind of device, as JAX's does.
        kind = f"device_kind={device.device_kind}, num_cores={device.num_cores}, platform={device.platform}"
        return f"{text[:-1]}, {kind})"

    # As JAX's: an abstract mesh has no devices; these say so (a ValueError, not AttributeError).
    devices = property(lambda self: _no_devices("devices"))
    device_ids = property(lambda self: _no_devices("device_ids"))
    is_multi_process = property(lambda self: _no_devices("is_multi_process"))
    local_devices = property(lambda self: _no_devices("local_devices"))
    local_mesh = property(lambda self: _no_devices("local_mesh"))

    @property
    def are_all_axes_explicit(self) -> bool:
        return bool(self.axis_names) and len(self.explicit_axes) == len(self.axis_names)

    @property
    def are_all_axes_auto(self) -> bool:
        return bool(self.axis_names) and len(self.auto_axes) == len(self.axis_names)

    @property
    def are_all_axes_manual(self) -> bool:
        return bool(self.axis_names) and len(self.manual_axes) == len(self.axis_names)

    def __enter__(self):
        prev = get_abstract_mesh()
        if not prev.empty and not self.empty and prev.size != self.size:  # (JAX's check and words)
            raise ValueError(
                f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: {self} with "
                f"size={self.size} and prev mesh: {prev} with size={prev.size}"
            )
        _context.abstract.append(self)
        _scope_changed()
        return self

    def __exit__(self, *exc):
        _context.abstract.pop()
        _scope_changed()


_EMPTY = AbstractMesh((), ())


def _no_devices(name: str):
    raise ValueError(
        f"AbstractMesh does not implement {name}: it holds no devices. Use the concrete mesh "
        "(funcgrad.sharding.get_mesh(), or an array's .sharding.mesh) instead."
    )


class Mesh:
    """Named axes over an n-d array of devices (``devices.shape`` gives each axis's size), each
    ``Auto`` (the default here, as in JAX's ``Mesh``), ``Explicit`` or ``Manual``.

    ``set_mesh(mesh)`` / ``with use_mesh(mesh):`` (or ``with mesh:``) makes it the mesh of
    ``shard_map``, of bare ``PartitionSpec`` shardings and of ``out_sharding=``.

    >>> import funcgrad
    >>> m = Mesh(np.array(funcgrad.devices()[:1]).reshape(1, 1), ("a", "b"))
    >>> dict(m.shape), m.size, m.axis_names
    ({'a': 1, 'b': 1}, 1, ('a', 'b'))
    """

    def __init__(self, devices, axis_names, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if any(n is None for n in axis_names):  # (JAX's words)
            raise ValueError(f"Mesh axis names cannot be None. Got: {axis_names}")
        devs = np.asarray(devices, dtype=object)
        if devs.ndim != len(axis_names):
            raise ValueError(  # (JAX's words)
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
                f"second argument (`axis_names`), but got devices.ndim == {devs.ndim} and "
                f"len(axis_names) == {len(axis_names)}. (Give one name per dimension.)"
            )
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be unique, got {axis_names}")
        # (JAX's empty mesh: no devices, ``Mesh(np.empty((), dtype=object), ())``; ``.empty``)
        flat = [] if devs.size == 0 or (devs.ndim == 0 and devs.item() is None) else list(devs.flat)
        for d in flat:
            _check_device(d, "Mesh")
        if len({id(d) for d in flat}) != len(flat):
            raise ValueError(f"Mesh: a device appears twice in {devs.tolist()}")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = _types_of(axis_types, axis_names, AxisType.Auto, "Mesh")
        self._flat = tuple(flat)
        self._key = (tuple(d.id for d in flat), devs.shape, axis_names, self.axis_types)
        first = flat[0] if flat else None
        self.abstract_mesh = AbstractMesh(
            devs.shape,
            axis_names,
            self.axis_types,
            abstract_device=None if first is None else AbstractDevice.of(first),
        )

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return len(self._flat)

    empty = property(lambda self: not self._flat)
    explicit_axes = property(lambda self: self.abstract_mesh.explicit_axes)
    auto_axes = property(lambda self: self.abstract_mesh.auto_axes)
    manual_axes = property(lambda self: self.abstract_mesh.manual_axes)
    are_all_axes_explicit = property(lambda self: self.abstract_mesh.are_all_axes_explicit)
    are_all_axes_auto = property(lambda self: self.abstract_mesh.are_all_axes_auto)
    are_all_axes_manual = property(lambda self: self.abstract_mesh.are_all_axes_manual)

    def update_axis_types(self, types: dict) -> Mesh:
        """The same devices with some axes' types changed (``{name: AxisType}``)."""
        new = tuple(types.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return Mesh(self.devices, self.axis_names, new)

    def update(self, devices=None, axis_names=None, axis_types=None) -> Mesh:
        """This mesh with the given fields replaced (JAX's ``Mesh.update``)."""
        return Mesh(
            self.devices if devices is None else devices,
            self.axis_names if axis_names is None else axis_names,
            self.axis_types if axis_types is None else axis_types,
        )

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        return [d for d in self._flat if d.process_index == _sh().process_index()]

    @property
    def local_mesh(self) -> Mesh:
        """The part of this mesh on this process's devices: a block of it (one process: itself).

        >>> m = make_mesh((1,), ("x",))
        >>> m.local_mesh == m
        True
        """
        me = _sh().process_index()
        mine = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(self.devices)
        if mine.all():
            return self
        where = np.nonzero(mine)
        if not where[0].size:
            raise ValueError(f"this process ({me}) has no device in the mesh {self!r}")
        block = tuple(slice(int(ix.min()), int(ix.max()) + 1) for ix in where)
        if not mine[block].all():
            raise ValueError(
                f"the devices of process {me} are not one block of the mesh {self!r}, so it has no "
                "local mesh; lay the devices out with mesh_utils.create_hybrid_device_mesh"
            )
        return Mesh(self.devices[block], self.axis_names, self.axis_types)

    @property
    def is_multi_process(self) -> bool:
        return any(d.process_index != _sh().process_index() for d in self._flat)

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        return _mesh_repr("Mesh", self.axis_names, self.devices.shape, self.axis_types)

    def __repr__(self):
        # JAX's two forms: str (in a NamedSharding's repr) names each axis with its size, repr lists them.
        if not self.axis_names:
            return "Mesh(axis_sizes=(), axis_names=())"
        shown = ", ".join(map(repr, self.axis_types)) + ("," if len(self.axis_types) == 1 else "")
        return (
            f"Mesh(axis_sizes={tuple(self.devices.shape)}, axis_names={tuple(self.axis_names)!r}, "
            f"axis_types=({shown}))"
        )

    def __enter__(self):
        _context.stack.append(self)
        _scope_changed()
        return self

    def __exit__(self, *exc):
        _context.stack.pop()
        _scope_changed()


# (concrete mesh, abstract mesh) -> the concrete mesh laid out as the abstract one
_laid_out: dict = register_cache("sharding.laid_out_meshes", {})  # NOTE: [caches have an owner]


def concrete_mesh(am: AbstractMesh | None = None, where: str = "sharding") -> Mesh | None:
    """The mesh that places values: the mesh in scope, laid out as ``am`` (default: the abstract
    mesh in scope, ``use_abstract_mesh``) when that differs -- its devices in order, reshaped to
    ``am``'s axes, as JAX maps an abstract mesh onto the set mesh's devices. ``None`` without a
    mesh in scope.

    >>> with set_mesh(make_mesh((1,), ("x",))):
    ...     with use_abstract_mesh(AbstractMesh((1,), ("a",), AxisType.Explicit)):
    ...         concrete_mesh().axis_names
    ('a',)
    """
    mesh = get_mesh()
    if mesh is None and _context.bodies and isinstance(_context.bodies[-1], Mesh):
        mesh = _context.bodies[-1]  # (a shard_map body's, over a mesh given as mesh=)
    if am is None:
        am = _context.abstract[-1] if _context.abstract else None
    if mesh is None or am is None or am.empty or mesh.abstract_mesh == am:
        return mesh
    if am.manual_axes and (am.axis_names, am.axis_sizes) == (mesh.axis_names, mesh.axis_sizes):
        return mesh  # (a shard_map body's: the same mesh, its manual axes typed Manual)
    if am.size != mesh.size:
        raise ValueError(
            f"{where}: the abstract mesh {am!r} has {am.size} devices but the mesh in scope {mesh!r} has "
            f"{mesh.size}; an abstract mesh may rename and reshape the mesh's axes, not change its size"
        )
    key = (mesh, am)
    out = _laid_out.get(key)
    if out is None:
        devices = np.array(list(mesh.devices.flat), dtype=object).reshape(am.axis_sizes)
        out = _laid_out[key] = Mesh(devices, am.axis_names, am.axis_types)
    return out


def body_meshes() -> list:
    """The stack of the meshes of the shard_map bodies being traced (``concrete_mesh`` reads it)."""
    return _context.bodies


def get_mesh() -> Mesh | None:
    """The mesh set with ``set_mesh`` or the innermost ``use_mesh`` / ``with mesh:`` block
    (``None`` when there is none)."""
    return _context.stack[-1] if _context.stack else None


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in scope: the innermost ``use_abstract_mesh``, else the set mesh's,
    else an empty one (``.empty``).

    >>> get_abstract_mesh().empty
    True
    """
    if _context.abstract:
        return _context.abstract[-1]
    m = get_mesh()
    return _EMPTY if m is None else m.abstract_mesh


def use_abstract_mesh(mesh: AbstractMesh):
    """``with use_abstract_mesh(am):`` -- trace with ``am`` as the abstract mesh in scope.

    >>> with use_abstract_mesh(AbstractMesh((2,), ("x",))):
    ...     get_abstract_mesh().axis_names
    ('x',)
    """
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"use_abstract_mesh expects an AbstractMesh, got {type(mesh).__name__}")
    return mesh


class use_mesh:
    """``with use_mesh(mesh):`` -- ``mesh`` is the mesh in scope inside the block."""

    def __init__(self, mesh: Mesh):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"use_mesh expects a Mesh, got {type(mesh).__name__}")
        self.mesh = mesh

    def __enter__(self):
        return self.mesh.__enter__()

    def __exit__(self, *exc):
        self.mesh.__exit__(*exc)


class set_mesh:
    """Make ``mesh`` the mesh in scope for the rest of the program (``None`` clears it); used as
    ``with set_mesh(mesh):`` it is restored to the previous one at the end of the block.

    >>> m = make_mesh((1,), ("x",))
    >>> with set_mesh(m):
    ...     get_mesh() is m
    True
    >>> get_mesh() is None
    True
    """

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh expects a Mesh (or None), got {type(mesh).__name__}")
        # (JAX's refusals, in its words, under any transformation: grad and vmap too)
        if not batching.trace_state_clean():
            raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
        if mesh is not None and mesh.manual_axes:
            raise ValueError(
                f"mesh {mesh} contains manual axes which is not allowed when using `jax.set_mesh`. "
                "Please use `jax.shard_map` to enter into `Manual` mode instead."
            )
        self.mesh = mesh
        self._previous = list(_context.stack)
        # (an empty mesh, JAX's ``empty_concrete_mesh``, sets no mesh, as ``None``)
        placed = None if mesh is None or mesh.empty else mesh
        _context.stack[:] = [] if placed is None else [placed]
        _scope_changed()
        # (computations on uncommitted values are placed on it: NOTE: [placement in context])
        self._previous_device = _swap_device(placed)

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _context.stack[:] = self._previous
        _scope_changed()
        _swap_device(self._previous_device)

    # (no __repr__ of its own, as JAX's: IPython shows the value of a bare ``set_mesh(mesh)`` line
    # as ``<jax._src.sharding_impls.set_mesh at 0x...>``, the alias giving the class JAX's module)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (default: the first ``prod(axis_shapes)`` of
    ``funcgrad.devices()``), its axes ``Explicit`` unless ``axis_types`` says otherwise (JAX's
    default).

    >>> m = make_mesh((1,), ("data",))
    >>> dict(m.shape), m.axis_types
    ({'data': 1}, (Explicit,))
    """
    try:
        axis_shapes = tuple(int(s) for s in axis_shapes)
    except (TypeError, ValueError):  # (JAX's words)
        raise ValueError(
            f"`axis_shapes` passed to `make_mesh` should be a sequence of ints. Got {axis_shapes}"
        ) from None
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis sizes {axis_shapes} but names {axis_names}")
    axis_types = _types_of(axis_types, axis_names, AxisType.Explicit, "make_mesh")
    n = math.prod(axis_shapes)
    given = devices is not None
    devices = list(xla_bridge.get_backend().global_devices if devices is None else devices)
    if len(devices) < n or (given and len(devices) != n):
        raise ValueError(
            f"make_mesh: the mesh {dict(zip(axis_names, axis_shapes))} needs {n} devices but {len(devices)} "
            f"{'were given' if given else 'are available (funcgrad.devices())'}; on a CPU, start with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} or call "
            f'funcgrad.config.update("jax_num_cpu_devices", {n}) before first use'
        )
    return Mesh(np.array(devices[:n], dtype=object).reshape(axis_shapes), axis_names, axis_types)
