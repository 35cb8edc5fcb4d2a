"""Shardings as values, with JAX's names: ``Mesh``, ``make_mesh``, ``PartitionSpec`` (``P``),
``NamedSharding``, ``SingleDeviceSharding``, ``Sharding``, ``AxisType``.

Layer: surface. Imports numpy and ``xla_bridge`` (``xla_bridge.sharded``, on first use, turns a
sharding into jaxlib's sharding object: the devices and XLA's ``HloSharding``).

A ``Mesh`` names the axes of an n-d array of devices; a ``PartitionSpec`` says, per array
dimension, which mesh axes split it (``None``: not split; a tuple: split over several axes,
major to minor); a ``NamedSharding(mesh, spec)`` is the two together. Mesh axes a spec leaves
out replicate the array over them. XLA's SPMD partitioner (Shardy) does the rest: a jitted
function of sharded arrays is compiled once for all devices and the partitioner inserts the
communication (``funcgrad.jit(in_shardings=, out_shardings=)``, ``device_put(x, sharding)``).

Mesh axes are ``Explicit`` (``make_mesh``'s default, as JAX's), ``Auto`` (``Mesh``'s default) or
``Manual``. On explicit axes an array's sharding is part of its type (``typeof(x).sharding``, a
``NamedSharding`` over the mesh's ``AbstractMesh``; ``funcgrad/_sharding_types.py`` makes those
types, NOTE: [sharding in types] in kernel/ir.py). ``memory_kind`` is always
the device's default memory.

>>> import funcgrad, numpy as np
>>> mesh = make_mesh((1,), ("x",))
>>> s = NamedSharding(mesh, P("x"))
>>> s
NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)
>>> s.shard_shape((4, 2))
(4, 2)
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
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import register_cache


def _sh():
    """``xla_bridge.sharded``, loaded on first use (``import funcgrad`` does not load jaxlib)."""
    return xla_bridge.sharded


__all__ = [
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "get_abstract_mesh",
    "get_mesh",
    "make_mesh",
    "make_single_device_sharding",
    "set_mesh",
    "use_abstract_mesh",
    "use_mesh",
]


class AxisType(enum.Enum):
    """How a mesh axis is partitioned. funcgrad partitions every axis automatically (``Auto``);
    ``Explicit`` is accepted for JAX compatibility and behaves as ``Auto``; ``Manual`` axes are
    those a ``shard_map`` body sees."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


# ----------------------------------------------------------------------------------------------
# PartitionSpec


class _Unconstrained:
    def __repr__(self):
        return "UNCONSTRAINED"


class PartitionSpec(tuple):
    """Per array dimension, the mesh axes that split it: a name, a tuple of names (split over
    several axes, major first) or ``None`` (not split). Missing trailing entries are ``None``.

    >>> P("x", None), P(("x", "y")), P()
    (P('x', None), P(('x', 'y'),), P())
    """

    UNCONSTRAINED = _Unconstrained()

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        norm = []
        for p in partitions:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple) and len(p) == 0:
                p = None
            norm.append(p)
        self = super().__new__(cls, norm)
        self._unreduced = _axis_set(unreduced, "unreduced")
        self._reduced = _axis_set(reduced, "reduced")
        both = self._unreduced & self._reduced
        if both:
            raise ValueError(f"PartitionSpec: the mesh axes {sorted(both)} are both unreduced and reduced")
        used = set(self._names())
        clash = (self._unreduced | self._reduced) & used
        if clash:
            raise ValueError(
                f"PartitionSpec: the mesh axes {sorted(clash)} both shard a dimension and are "
                "unreduced/reduced; an axis has one role"
            )
        return self

    # Axes over which the value is a partial sum still to be added (``unreduced``) or a copy
    # that is already complete (``reduced``): JAX 0.10's spec fields, kept in the spec and its type.
    unreduced = property(lambda self: self._unreduced)
    reduced = property(lambda self: self._reduced)

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return (
                tuple.__eq__(self, other)
                and self._unreduced == other._unreduced
                and self._reduced == other._reduced
            )
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((tuple(self), self._unreduced, self._reduced))

    def __repr__(self):
        inner = ", ".join(map(repr, self))
        for name, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if axes:
                inner += (", " if inner else "") + f"{name}={{{', '.join(map(repr, sorted(axes)))}}}"
        if len(self) == 1 and not (self._unreduced or self._reduced):
            inner += ","
        return f"P({inner})"

    __str__ = __repr__

    def __reduce__(self):
        return (_make_spec, (tuple(self), self._unreduced, self._reduced))

    def _normalized(self, ndim: int, where: str = "PartitionSpec") -> tuple:
        """One tuple of axis names per dimension of a rank-``ndim`` array."""
        if len(self) > ndim:
            raise ValueError(
                f"{where}: {self!r} has {len(self)} entries but the array has rank {ndim}; give at most "
                "one entry per dimension"
            )
        out = []
        for p in (*self, *([None] * (ndim - len(self)))):
            if p is None or p is PartitionSpec.UNCONSTRAINED:
                out.append(())
            elif isinstance(p, tuple):
                out.append(tuple(p))
            else:
                out.append((p,))
        return tuple(out)

    def _names(self) -> list:
        names = []
        for p in self:
            if p is None or p is PartitionSpec.UNCONSTRAINED:
                continue
            names.extend(p if isinstance(p, tuple) else (p,))
        return names


P = PartitionSpec


def _axis_set(axes, what) -> frozenset:
    if isinstance(axes, str):
        axes = (axes,)
    try:
        out = frozenset(axes)
    except TypeError:
        raise TypeError(f"PartitionSpec: {what}= must be a set of mesh axis names, got {axes!r}") from None
    if not all(isinstance(a, str) for a in out):
        raise TypeError(f"PartitionSpec: {what}= must be a set of mesh axis names, got {axes!r}")
    return out


def _make_spec(parts, unreduced, reduced):
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


# ----------------------------------------------------------------------------------------------
# Mesh


def _check_device(d, where):
    """``d`` must be one of funcgrad's devices (not, say, a device of another jaxlib client)."""
    if not isinstance(d, _sh().Device):
        raise TypeError(f"{where}: devices must be elements of funcgrad.devices(), got {d!r}")
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


_context = _MeshContext()


def _types_of(axis_types, n: int, default, where: str) -> tuple:
    if axis_types is None:
        return (default,) * n
    if isinstance(axis_types, AxisType):
        return (axis_types,) * n
    axis_types = tuple(axis_types)
    if len(axis_types) != n or not all(isinstance(t, AxisType) for t in axis_types):
        raise ValueError(f"{where}: axis_types must be one AxisType per axis ({n}), got {axis_types}")
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

    >>> am = AbstractMesh((2, 4), ("x", "y"), axis_types=AxisType.Explicit)
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
        self.axis_types = _types_of(axis_types, len(axis_names), AxisType.Auto, "AbstractMesh")
        self.abstract_device = abstract_device
        self._key = (axis_sizes, axis_names, self.axis_types)
        self._hash = hash(self._key)
        self.explicit_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Explicit)
        self.auto_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Auto)
        self.manual_axes = tuple(n for n, t in zip(axis_names, self.axis_types) if t is AxisType.Manual)

    shape = property(lambda self: collections.OrderedDict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes))
    empty = property(lambda self: not self.axis_names)
    abstract_mesh = property(lambda self: self)

    def update_axis_types(self, types: dict) -> AbstractMesh:
        """The same mesh with some axes' types changed (``{name: AxisType}``)."""
        new = tuple(types.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, new, abstract_device=self.abstract_device)

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
        _context.abstract.append(self)
        return self

    def __exit__(self, *exc):
        _context.abstract.pop()


_EMPTY = AbstractMesh((), ())


def _no_devices(name: str):
    raise ValueError(
        f"AbstractMesh does not implement {name}: it holds no devices. Use the concrete mesh "
        "(funcgrad.sharding.get_mesh(), or an array's .sharding.mesh) instead."
    )


class ManualAxisType:
    """How a value varies over the manual axes of a ``shard_map`` body (JAX's record):
    ``varying``, ``unreduced`` and ``reduced`` sets of axis names.

    >>> ManualAxisType(varying={"x"}).varying
    frozenset({'x'})
    """

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        self.varying, self.unreduced, self.reduced = (
            frozenset(varying),
            frozenset(unreduced),
            frozenset(reduced),
        )
        for a, b, an, bn in (
            (self.varying, self.unreduced, "varying", "unreduced"),
            (self.varying, self.reduced, "varying", "reduced"),
        ):
            if a & b:
                raise ValueError(f"{an} and {bn} cannot have common mesh axes. Got {an}={a} and {bn}={b}")

    def __eq__(self, other):
        return isinstance(other, ManualAxisType) and (self.varying, self.unreduced, self.reduced) == (
            other.varying,
            other.unreduced,
            other.reduced,
        )

    def __hash__(self):
        return hash((self.varying, self.unreduced, self.reduced))

    def __repr__(self):
        sets = (set(self.varying), set(self.unreduced), set(self.reduced))
        return "ManualAxisType(varying={}, unreduced={}, reduced={})".format(*sets)


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
        devs = np.asarray(devices, dtype=object)
        if devs.ndim != len(axis_names):
            raise ValueError(
                f"Mesh: devices has {devs.ndim} dimensions (shape {devs.shape}) but {len(axis_names)} axis "
                f"names {axis_names} were given; give one name per dimension"
            )
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be unique, got {axis_names}")
        flat = list(devs.flat)
        if not flat:
            raise ValueError("Mesh: devices is empty")
        for d in flat:
            _check_device(d, "Mesh")
        if len({id(d) for d in flat}) != len(flat):
            raise ValueError(f"Mesh: a device appears twice in {devs.tolist()}")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = _types_of(axis_types, len(axis_names), AxisType.Auto, "Mesh")
        self._flat = tuple(flat)
        self._key = (tuple(d.id for d in flat), devs.shape, axis_names, self.axis_types)
        first = devs.flat[0] if devs.size else None
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
        return int(self.devices.size)

    empty = property(lambda self: False)
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
        return self

    def __exit__(self, *exc):
        _context.stack.pop()


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
    if am is None:
        am = _context.abstract[-1] if _context.abstract else None
    if mesh is None or am is None or am.empty or mesh.abstract_mesh == am:
        return mesh
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
        self.mesh = mesh
        self._previous = list(_context.stack)
        _context.stack[:] = [] if mesh is None else [mesh]

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _context.stack[:] = self._previous

    def __repr__(self):
        return f"set_mesh({self.mesh})"


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (default: the first ``prod(axis_shapes)`` of
    ``funcgrad.devices()``), its axes ``Explicit`` unless ``axis_types`` says otherwise (JAX's
    default).

    >>> m = make_mesh((1,), ("data",))
    >>> dict(m.shape), m.axis_types
    ({'data': 1}, (Explicit,))
    """
    axis_shapes = tuple(int(s) for s in axis_shapes)
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis sizes {axis_shapes} but names {axis_names}")
    axis_types = _types_of(axis_types, len(axis_names), AxisType.Explicit, "make_mesh")
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


# ----------------------------------------------------------------------------------------------
# Shardings


class Sharding:
    """How an array's elements are laid out over devices (the base class)."""

    _device_assignment: tuple

    @property
    def device_set(self) -> set:
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def addressable_devices(self) -> set:
        me = _sh().process_index()
        return {d for d in self._device_assignment if d.process_index == me}

    @property
    def _addressable_device_assignment(self) -> list:
        """The addressable devices in device-assignment order: JAX's private name, which orbax
        reads to pick the shards this process restores."""
        me = _sh().process_index()
        return [d for d in self._device_assignment if d.process_index == me]

    @property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == self.num_devices

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    def devices_indices_map(self, global_shape) -> dict:
        """Each device's index (a tuple of slices) into an array of ``global_shape``."""
        bridge = self._bridge(len(global_shape))
        idx = _sh().indices(bridge, tuple(global_shape))
        return dict(zip(bridge._fg_devs, idx))

    def addressable_devices_indices_map(self, global_shape) -> dict:
        me = _sh().process_index()
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if d.process_index == me}

    def shard_shape(self, global_shape) -> tuple:
        """The shape of each shard of an array of ``global_shape``."""
        raise NotImplementedError

    def _bridge(self, ndim: int):
        """jaxlib's sharding object for a rank-``ndim`` array (``xla_bridge.sharded``)."""
        raise NotImplementedError

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both lay out a rank-``ndim`` array identically."""
        return _sh().same_layout(self._bridge(ndim), other._bridge(ndim), ndim)

    def with_memory_kind(self, kind: str) -> Sharding:
        """This sharding in the memory ``kind`` (JAX's; only the device's memory here).

        >>> import funcgrad
        >>> SingleDeviceSharding(funcgrad.devices()[0]).with_memory_kind("device").memory_kind
        'device'
        """
        _check_memory_kind(kind, f"{type(self).__name__}.with_memory_kind")
        return self


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    >>> import funcgrad
    >>> SingleDeviceSharding(funcgrad.devices()[0])
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """

    def __init__(self, device, *, memory_kind=None):
        _check_device(device, "SingleDeviceSharding")
        _check_memory_kind(memory_kind, "SingleDeviceSharding")
        self._device = device
        self._device_assignment = (device,)

    is_fully_replicated = property(lambda self: True)

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)

    def _bridge(self, ndim):
        return _sh().single_device_sharding(self._device)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(("single", self._device.id))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


def _check_memory_kind(memory_kind, where):
    if memory_kind not in (None, "device"):
        raise ValueError(f"{where}: memory_kind={memory_kind!r} is not supported (only the device's memory)")


class NamedSharding(Sharding):
    """An array split over the axes of ``mesh`` as ``spec`` says (mesh axes the spec leaves out
    replicate it). A spec naming an axis the mesh lacks, or an axis twice, is a ValueError; so is
    a shape whose dimensions do not divide by the axes that split them.

    >>> import funcgrad
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P(None, "x"))
    >>> s.spec, s.is_fully_replicated, s.num_devices
    (P(None, 'x'), True, 1)
    """

    def __init__(self, mesh: Mesh | AbstractMesh, spec=None, *, memory_kind=None):
        if not isinstance(mesh, Mesh | AbstractMesh):
            raise TypeError(
                "NamedSharding: mesh must be a funcgrad.sharding.Mesh (or AbstractMesh), got "
                f"{type(mesh).__name__}"
            )
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            if isinstance(spec, tuple | list):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec (P(...)), got {spec!r}")
        _check_memory_kind(memory_kind, "NamedSharding")
        names = spec._names()
        missing = [n for n in (*names, *sorted(spec.unreduced | spec.reduced)) if n not in mesh.axis_names]
        if missing:
            raise ValueError(
                f"NamedSharding: {spec!r} names the axis {missing[0]!r}, which the mesh lacks (its axes are "
                f"{mesh.axis_names})"
            )
        twice = sorted({n for n in names if names.count(n) > 1}, key=str)
        if twice:
            raise ValueError(f"NamedSharding: {spec!r} uses the mesh axis {twice[0]!r} more than once")
        self.mesh = mesh
        self.spec = spec
        # An abstract mesh has no devices: such a sharding is a type (``typeof(x).sharding``).
        self._device_assignment = getattr(mesh, "_flat", ())
        self._bridges: dict = {}

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[n] == 1 for n in self.spec._names())

    def _factors(self, ndim) -> list:
        sizes = self.mesh.shape
        return [math.prod(sizes[n] for n in names) for names in self.spec._normalized(ndim, "NamedSharding")]

    def shard_shape(self, global_shape) -> tuple:
        global_shape = tuple(global_shape)
        out = []
        for d, (size, k) in enumerate(zip(global_shape, self._factors(len(global_shape)))):
            if size % k:
                raise ValueError(
                    f"{self!r} splits dimension {d} of an array of shape {global_shape} into {k} parts, but "
                    f"{size} is not divisible by {k}. Pad the array, or shard that dimension over fewer "
                    "devices."
                )
            out.append(size // k)
        return tuple(out)

    def _bridge(self, ndim):
        b = self._bridges.get(ndim)
        if b is None:
            if not isinstance(self.mesh, Mesh):
                raise ValueError(
                    f"{self!r} is over an abstract mesh (a type, without devices): build it over a concrete "
                    "Mesh (funcgrad.sharding.make_mesh) to place values"
                )
            spec = self.spec._normalized(ndim, f"NamedSharding(spec={self.spec!r})")
            b = self._bridges[ndim] = _sh().named_sharding(self.mesh, spec, user=self)
        return b

    def with_spec(self, spec) -> NamedSharding:
        return NamedSharding(self.mesh, spec)

    def update(self, *, mesh=None, spec=None) -> NamedSharding:
        return NamedSharding(self.mesh if mesh is None else mesh, self.spec if spec is None else spec)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, NamedSharding):
            return False
        if self.mesh != other.mesh:
            return False
        if (self.spec.unreduced, self.spec.reduced) != (other.spec.unreduced, other.spec.reduced):
            return False
        n = max(len(self.spec), len(other.spec))
        return self.spec._normalized(n) == other.spec._normalized(n)

    def __hash__(self):
        spec = list(self.spec._normalized(len(self.spec)))
        while spec and not spec[-1]:
            spec.pop()
        return hash((self.mesh, tuple(spec), self.spec.unreduced))

    def __repr__(self):
        if isinstance(self.mesh, AbstractMesh):  # a type's sharding has no memory (as JAX prints it)
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


class _CompiledSharding(Sharding):
    """A layout XLA chose that no PartitionSpec of the program's mesh describes."""

    def __init__(self, bridge, ndim: int):
        self._b = bridge
        self._ndim = ndim
        self._device_assignment = bridge._fg_devs

    is_fully_replicated = property(lambda self: self._b._fg_hlo.is_replicated())

    def _bridge(self, ndim):
        return self._b

    def shard_shape(self, global_shape) -> tuple:
        return _sh().shard_shape(self._b, tuple(global_shape))

    def __eq__(self, other):
        return isinstance(other, _CompiledSharding) and _sh().same_layout(self._b, other._b, self._ndim)

    def __hash__(self):
        return hash(self._b._fg_devs)

    def __repr__(self):
        return f"GSPMDSharding({self._b._fg_hlo}, devices={list(self._b._fg_devs)})"


def sharding_leaves(shardings, tree, where: str, what: str = "shardings") -> list:
    """One ``Sharding`` or ``None`` per leaf of ``tree``, from ``shardings`` (one sharding, or a
    pytree prefix of ``tree``); a bare ``PartitionSpec`` is a ``NamedSharding`` over the mesh in
    scope (``with mesh:``). Errors name ``where`` and ``what``."""
    is_leaf = lambda s: s is None or isinstance(s, Sharding | PartitionSpec)  # noqa: E731
    try:
        leaves = tu.broadcast_prefix(shardings, tree, is_leaf=is_leaf)
    except ValueError:
        raise ValueError(
            f"{where}: {what} must be one sharding or a pytree prefix of {tu.tree_structure(tree)}, got "
            f"{shardings!r}"
        ) from None
    out = []
    for s in leaves:
        if not isinstance(s, Sharding | PartitionSpec) and hasattr(s, "layout") and hasattr(s, "sharding"):
            s = s.sharding  # a Format (layout + sharding): funcgrad lays arrays out in XLA's default
        if isinstance(s, PartitionSpec):
            mesh = concrete_mesh(where=where)
            if mesh is None:
                raise ValueError(
                    f"{where}: {what} has the bare {s!r}, which needs a mesh: use NamedSharding(mesh, {s!r}) "
                    "or call inside `with mesh:`"
                )
            s = NamedSharding(mesh, s)
        elif isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh):
            s = _on_devices(s, where)
        elif s is not None and not isinstance(s, Sharding):
            raise TypeError(
                f"{where}: {what} leaves must be Shardings (NamedSharding(mesh, P(...))), PartitionSpecs or "
                f"None, got {s!r}"
            )
        out.append(s)
    return out


def _on_devices(s: NamedSharding, where: str) -> NamedSharding:
    """A sharding over an abstract mesh (``typeof(x).sharding``) used to place values: over the
    mesh in scope laid out as that abstract mesh (JAX's rule). The type sharding of an unsharded
    value (an empty abstract mesh, ``typeof(x).sharding`` outside any mesh) places on the default
    device, as JAX's does (flax's Dropout passes it to ``random.bernoulli``)."""
    mesh = concrete_mesh(s.mesh, where)
    if mesh is None and not s.mesh.axis_names and all(p is None for p in s.spec):
        return SingleDeviceSharding(xla_bridge.backends.default_device())
    if mesh is None:
        raise ValueError(
            f"{where}: {s!r} is over an abstract mesh, which holds no devices: call "
            "funcgrad.sharding.set_mesh(mesh) first, or give a NamedSharding over a concrete Mesh"
        )
    return NamedSharding(mesh, s.spec)


def from_bridge(bridge, ndim: int) -> Sharding:
    """The public sharding of a jaxlib sharding object made by ``xla_bridge.sharded``: the
    ``NamedSharding`` it was made from, or one over the same mesh that lays the array out the
    same way, else a description of XLA's layout."""
    user = bridge._fg_user
    if isinstance(user, Sharding):
        return user
    mesh = bridge._fg_mesh
    if isinstance(mesh, Mesh):
        spec = _sh().spec_of(bridge, ndim)
        if spec is not None:
            entries = [None if not dim else (dim[0] if len(dim) == 1 else dim) for dim in spec]
            # On explicit axes the spec is the type's, one entry per dimension (as JAX's);
            # otherwise trailing whole dimensions are left out.
            while entries and entries[-1] is None and not mesh.abstract_mesh.explicit_axes:
                entries.pop()
            s = NamedSharding(mesh, PartitionSpec(*entries))
            bridge._fg_user = s
            return s
    return _CompiledSharding(bridge, ndim)


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """The whole array on ``device`` (JAX's ``jax.sharding.make_single_device_sharding``).

    >>> import funcgrad
    >>> make_single_device_sharding(funcgrad.devices()[0]).device_set == {funcgrad.devices()[0]}
    True
    """
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def resolve(s, where: str, name: str = "the value"):
    """``s`` as a ``Sharding``: a bare ``PartitionSpec`` is a ``NamedSharding`` over the mesh in
    scope (``set_mesh``/``use_mesh``); errors name ``where``, ``name`` and the fix."""
    if isinstance(s, PartitionSpec):
        mesh = concrete_mesh(where=where)
        if mesh is None:
            raise ValueError(
                f"{where}: {name} has the bare {s!r}, which needs a mesh: call "
                "funcgrad.sharding.set_mesh(mesh) "
                f"(or use `with funcgrad.sharding.use_mesh(mesh):`), or pass NamedSharding(mesh, {s!r})"
            )
        return NamedSharding(mesh, s)
    if isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh):
        return _on_devices(s, where)
    if isinstance(s, Sharding):
        return s
    raise TypeError(f"{where}: {name} must be a Sharding or a PartitionSpec, got {s!r}")
