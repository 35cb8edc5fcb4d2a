"""Shardings as values, with JAX's names: ``Mesh``, ``make_mesh``, ``PartitionSpec`` (``P``),
``NamedSharding``, ``SingleDeviceSharding``, ``Sharding``, ``AxisType``.

Layer: surface. Imports ``_meshes`` and ``_partition_spec`` (the floor below, whose names it
re-exports: this module is the one place the sharding values are imported from), the kernel's
pytrees and ``xla_bridge`` (``xla_bridge.sharded``, on first use, turns a sharding into jaxlib's
sharding object: the devices and XLA's ``HloSharding``). This module holds the ``Sharding``
classes and how a user's shardings become them (``sharding_leaves``, ``resolve``,
``from_bridge``).

A ``Mesh`` names the axes of an n-d array of devices; a ``PartitionSpec`` says, per array
dimension, which mesh axes split it (``None``: not split; a tuple: split over several axes,
major to minor); a ``NamedSharding(mesh, spec)`` is the two together. Mesh axes a spec leaves
out replicate the array over them. XLA's SPMD partitioner (Shardy) does the rest: a jitted
function of sharded arrays is compiled once for all devices and the partitioner inserts the
communication (``funcgrad.jit(in_shardings=, out_shardings=)``, ``device_put(x, sharding)``).

Mesh axes are ``Explicit`` (``make_mesh``'s default, as JAX's), ``Auto`` (``Mesh``'s default) or
``Manual``. On explicit axes an array's sharding is part of its type (``typeof(x).sharding``, a
``NamedSharding`` over the mesh's ``AbstractMesh``; ``funcgrad/_sharding_types.py`` makes those
types, NOTE: [sharding in types] in kernel/ir.py). ``memory_kind`` says which of the devices'
memories holds the array (``"device"``, their own; on CPU also ``"pinned_host"`` and
``"unpinned_host"``, as jaxlib's client lists them): ``device_put`` places there, and eager
operations keep it (NOTE: [committed arrays] in xla_bridge/committed.py).

>>> import funcgrad, numpy as np
>>> mesh = make_mesh((1,), ("x",))
>>> s = NamedSharding(mesh, P("x"))
>>> s
NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)
>>> s.shard_shape((4, 2))
(4, 2)
"""

from __future__ import annotations

import itertools
import math

from funcgrad import xla_bridge
from funcgrad._meshes import (
    AbstractDevice,  # noqa: F401 - re-exported (funcgrad.sharding)
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    _check_device,
    _sh,
    concrete_mesh,
    get_abstract_mesh,
    get_mesh,
    make_mesh,
    set_mesh,
    use_abstract_mesh,
    use_mesh,
)
from funcgrad._partition_spec import P, PartitionSpec
from funcgrad.kernel import tree_util as tu

# The meshes and PartitionSpec are defined a floor below (funcgrad/_meshes.py,
# funcgrad/_partition_spec.py) and re-exported here with the shardings, JAX's one namespace.
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


class Sharding:
    """How an array's elements are laid out over devices (the base class)."""

    _device_assignment: tuple
    _memory_kind = None  # None: the devices' own memory ("device"); else the kind's name

    @property
    def device_set(self) -> set:
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def memory_kind(self) -> str:
        return self._memory_kind or "device"

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

    def check_compatible_aval(self, aval_shape) -> None:
        """A ValueError in JAX's words if this sharding cannot lay out a value of ``aval_shape``
        (for a NamedSharding: a spec longer than the value's rank); nothing otherwise."""

    def _bridge(self, ndim: int):
        """jaxlib's sharding object for a rank-``ndim`` array (``xla_bridge.sharded``)."""
        raise NotImplementedError

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both lay out a rank-``ndim`` array identically."""
        return _sh().same_layout(self._bridge(ndim), other._bridge(ndim), ndim)

    def with_memory_kind(self, kind: str) -> Sharding:
        """This sharding in the devices' memory ``kind`` (one of ``device.addressable_memories()``'
        kinds: ``"device"``, and on CPU ``"pinned_host"``/``"unpinned_host"``).

        >>> import funcgrad
        >>> SingleDeviceSharding(funcgrad.devices()[0]).with_memory_kind("pinned_host").memory_kind
        'pinned_host'
        """
        if _check_memory_kind(kind, self._device_assignment) is None:
            return self
        raise ValueError(
            f"{type(self).__name__}.with_memory_kind: only the device's memory for this sharding"
        )


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    >>> import funcgrad
    >>> SingleDeviceSharding(funcgrad.devices()[0])
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """

    def __init__(self, device, *, memory_kind=None):
        _check_device(device, "SingleDeviceSharding")
        self._memory_kind = _check_memory_kind(memory_kind, (device,))
        self._device = device
        self._device_assignment = (device,)

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)

    is_fully_replicated = property(lambda self: True)

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)

    def _bridge(self, ndim):
        return _sh().single_device_sharding(self._device, self._memory_kind)

    def _program_bridge(self):
        """This sharding as a program's parameter or result takes it (``jit(in_shardings=,
        out_shardings=)``): the whole value on the one device, a layout of the SPMD route whose
        results read back as this sharding."""
        b = self.__dict__.get("_program")
        if b is None:
            sh = _sh()
            hlo = sh.xc.HloSharding.replicate()
            b = self._program = sh.MeshSharding((self._device,), hlo, None, self, None, self._memory_kind)
        return b

    def __eq__(self, other):
        return (
            isinstance(other, SingleDeviceSharding)
            and other._device is self._device
            and other._memory_kind == self._memory_kind
        )

    def __hash__(self):
        return hash(("single", self._device.id, self._memory_kind))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class DuplicateSpecError(Exception):
    """A spec naming a mesh axis in two places (JAX's ``jax._src.named_sharding.DuplicateSpecError``:
    an Exception, not a ValueError, with the mesh and spec as attributes).

    >>> str(DuplicateSpecError("twice", None, None))
    'twice'
    """

    def __init__(self, message, mesh, pspec):
        super().__init__(message)
        self.message, self.mesh, self.pspec = message, mesh, pspec

    def __str__(self):
        return self.message


class IndivisibleError(ValueError):
    """A shape whose dimensions the axes splitting them do not divide (JAX's
    ``jax._src.sharding.IndivisibleError``, a ValueError)."""


_DEFAULT_KINDS = ("device", "pinned_host", "unpinned_host")


def _check_memory_kind(memory_kind, devices):
    """``memory_kind`` checked against what ``devices`` address (JAX's ValueError otherwise), as
    the bridge names it: ``None`` for the devices' own memory."""
    if memory_kind is None:
        return None
    device = devices[0] if devices else None
    if device is None:  # (an abstract mesh's sharding: JAX's words)
        if memory_kind not in _DEFAULT_KINDS:
            raise ValueError(
                f"Got invalid memory kind: {memory_kind}. Valid memory kinds are: {', '.join(_DEFAULT_KINDS)}"
            )
        return None if memory_kind == "device" else memory_kind
    kinds = [m.kind for m in device.addressable_memories()]
    if memory_kind not in kinds:
        name = device.device_kind
        raise ValueError(
            f"Could not find memory addressable by device {name}. Device {name} can address the following "
            f"memory kinds: {', '.join(kinds)}. Got memory kind: {memory_kind}"
        )
    return None if memory_kind in ("device", device.default_memory().kind) else memory_kind


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
        if spec is None:  # (JAX's: a spec is required; P() replicates)
            raise TypeError(
                "NamedSharding: Unexpected None spec: give a PartitionSpec (P() for a replicated value)"
            )
        if not isinstance(spec, PartitionSpec):
            if isinstance(spec, tuple | list):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec (P(...)), got {spec!r}")
        names = spec._names()
        # (JAX's check_pspec, in its order: an axis used twice, an axis the mesh lacks, unreduced)
        twice = sorted({n for n in names if names.count(n) > 1}, key=str)
        if twice:
            raise DuplicateSpecError(
                "A single NamedSharding spec specification can map every mesh axis to at most one "
                f"positional dimension, but {spec!r} has duplicate entries for "
                + ", ".join(sorted(f"`{n}`" for n in twice)),
                mesh,
                spec,
            )
        missing = [n for n in names if n not in mesh.axis_names]
        if missing:
            raise ValueError(
                f"Resource axis: {missing[0]} of {spec!r} is not found in mesh: {tuple(mesh.axis_names)}."
            )
        if AxisType.Auto not in mesh.axis_types and any(p is PartitionSpec.UNCONSTRAINED for p in spec):
            raise ValueError(  # (JAX's words: only Auto axes may leave a dimension to the partitioner)
                f"{spec!r} cannot contain `P.UNCONSTRAINED` when no mesh axis_types are `Auto`. Got mesh "
                f"axis_types: {mesh.axis_types}"
            )
        types = dict(zip(mesh.axis_names, mesh.axis_types))
        for what, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
            for u in sorted(axes):  # (JAX's words)
                if u not in types:
                    raise ValueError(
                        f"{what} axes {u} is not found in mesh.axis_names={mesh.axis_names}. "
                        f"Got pspec={spec!r}"
                    )
                if types[u] is not AxisType.Explicit:
                    raise ValueError(
                        f"{what} axes can only refer to mesh axes that is of type `Explicit`. Got "
                        f"{what.lower()} axes: {axes} and mesh: {mesh}"
                    )
        self.mesh = mesh
        self.spec = spec
        # An abstract mesh has no devices: such a sharding is a type (``typeof(x).sharding``).
        self._device_assignment = getattr(mesh, "_flat", ())
        self._memory_kind = _check_memory_kind(memory_kind, self._device_assignment)
        # (over an abstract mesh, the memory kind is what was given: None unless one was, as JAX's)
        self._given_kind = memory_kind
        self._bridges: dict = {}

    @property
    def memory_kind(self) -> str | None:
        if not self._device_assignment:
            return self._given_kind
        return self._memory_kind or "device"

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether both lay out a rank-``ndim`` array identically (over abstract meshes: the same
        mesh, and the same axes of more than one device splitting each dimension)."""
        if isinstance(self.mesh, AbstractMesh) and isinstance(getattr(other, "mesh", None), AbstractMesh):
            if self.mesh != other.mesh or self._memory_kind != other._memory_kind:
                return False
            sizes = self.mesh.shape
            split = [
                [
                    tuple(n for n in names if sizes[n] > 1)
                    for names in s.spec._normalized(ndim, "NamedSharding")
                ]
                for s in (self, other)
            ]
            return split[0] == split[1]
        return super().is_equivalent_to(other, ndim)

    @property
    def is_fully_replicated(self) -> bool:
        # (an unreduced value's devices hold different partial sums: not replicated, as JAX's)
        return all(self.mesh.shape[n] == 1 for n in (*self.spec._names(), *self.spec.unreduced))

    def _factors(self, ndim) -> list:
        sizes = self.mesh.shape
        return [math.prod(sizes[n] for n in names) for names in self.spec._normalized(ndim, "NamedSharding")]

    def check_compatible_aval(self, aval_shape) -> None:
        """JAX's ValueError for a spec with more entries than the value has dimensions.

        >>> import funcgrad
        >>> from funcgrad.sharding import Mesh
        >>> s = NamedSharding(Mesh(funcgrad.devices()[:1], ("x",)), P("x"))
        >>> try:
        ...     s.check_compatible_aval(())
        ... except ValueError as e:
        ...     print(str(e)[-81:])
        but was applied to a value of rank 0. For scalars the PartitionSpec should be P()
        """
        if len(aval_shape) < len(self.spec):  # (JAX's words)
            extra = " For scalars the PartitionSpec should be P()" if len(aval_shape) == 0 else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, but was "
                f"applied to a value of rank {len(aval_shape)}.{extra}"
            )

    def shard_shape(self, global_shape) -> tuple:
        global_shape = tuple(global_shape)
        self.check_compatible_aval(global_shape)
        factors = self._factors(len(global_shape))
        for d, (size, k) in enumerate(zip(global_shape, factors)):
            if size % k:  # (JAX's words)
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {d} is partitioned {k} times, but the "
                    f"dimension size is {size} (full shape: {global_shape}, per-dimension tiling factors: "
                    f"{factors} should evenly divide the shape)"
                )
        return tuple(size // k for size, k in zip(global_shape, factors))

    def devices_indices_map(self, global_shape) -> dict:
        self.shard_shape(global_shape)  # (JAX's IndivisibleError for a shape the axes do not divide)
        mesh = self.mesh
        if isinstance(mesh, Mesh) and any(not isinstance(d, _sh().Device) for d in mesh._flat):
            return self._stand_in_indices(tuple(global_shape))
        return super().devices_indices_map(global_shape)

    def _stand_in_indices(self, global_shape) -> dict:
        """Each device's index over a mesh of duck-typed stand-in devices (objects with a device's
        ``id`` and ``platform``, which JAX's Mesh keeps and ``visualize_sharding`` draws): read
        from the mesh and the spec, as no program can place values on them. A dimension over mesh
        axes ``(a, b)`` is cut into blocks numbered ``coord[a] * size[b] + coord[b]``."""
        mesh = self.mesh
        spec = self.spec._normalized(len(global_shape), f"NamedSharding(spec={self.spec!r})")
        sizes, pos = mesh.shape, {n: i for i, n in enumerate(mesh.axis_names)}
        out = {}
        for coords in itertools.product(*map(range, mesh.devices.shape)):
            index = []
            for size, names in zip(global_shape, spec):
                block, count = 0, 1
                for n in names:
                    block, count = block * sizes[n] + coords[pos[n]], count * sizes[n]
                step = size // count  # (a dimension not cut, or over axes of size 1: JAX's slice(None))
                index.append(slice(None) if count == 1 else slice(block * step, (block + 1) * step))
            out[mesh.devices[coords]] = tuple(index)
        return out

    def _bridge(self, ndim):
        b = self._bridges.get(ndim)
        if b is None:
            if not isinstance(self.mesh, Mesh):
                raise ValueError(
                    f"{self!r} is over an abstract mesh (a type, without devices): build it over a concrete "
                    "Mesh (funcgrad.sharding.make_mesh) to place values"
                )
            if self.mesh.empty:  # (JAX's empty_concrete_mesh: XLA would abort on no devices)
                raise ValueError(f"{self!r} is over an empty mesh (no devices): it cannot place values")
            spec = self.spec._normalized(ndim, f"NamedSharding(spec={self.spec!r})")
            b = self._bridges[ndim] = _sh().named_sharding(
                self.mesh, spec, user=self, memory_kind=self._memory_kind
            )
        return b

    def with_spec(self, spec) -> NamedSharding:
        # (the kind as given: over an abstract mesh _memory_kind is None, and JAX keeps the kind)
        return NamedSharding(self.mesh, spec, memory_kind=self._given_kind)

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def update(self, *, mesh=None, spec=None, memory_kind=None) -> NamedSharding:
        return NamedSharding(
            self.mesh if mesh is None else mesh,
            self.spec if spec is None else spec,
            memory_kind=self._given_kind if memory_kind is None else memory_kind,
        )

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, NamedSharding):
            return False
        if self.mesh != other.mesh:
            return False
        if (self.spec.unreduced, self.spec.reduced) != (other.spec.unreduced, other.spec.reduced):
            return False
        if self._memory_kind != other._memory_kind:
            return False
        n = max(len(self.spec), len(other.spec))
        return self.spec._normalized(n) == other.spec._normalized(n)

    def __hash__(self):
        spec = list(self.spec._normalized(len(self.spec)))
        while spec and not spec[-1]:
            spec.pop()
        return hash((self.mesh, tuple(spec), self.spec.unreduced, self._memory_kind))

    def __repr__(self):
        if isinstance(self.mesh, AbstractMesh):  # a type's sharding has no memory (as JAX prints it)
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind={self.memory_kind})"


class _CompiledSharding(Sharding):
    """A layout XLA chose that no PartitionSpec of the program's mesh describes."""

    def __init__(self, bridge, ndim: int):
        self._b = bridge
        self._ndim = ndim
        self._device_assignment = bridge._fg_devs
        self._memory_kind = bridge._fg_kind

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


class _ReplicatedInScope(Sharding):
    """``pjit``'s ``None`` (``funcgrad.experimental.pjit``): replicated over the mesh in scope
    (``with mesh:``) when there is one, else left open as ``jit``'s ``None`` -- JAX's rule for its
    resource-environment ``pjit``. ``sharding_leaves`` resolves it at trace time."""

    _device_assignment = ()

    def __repr__(self):
        return "None"


REPLICATED_IN_SCOPE = _ReplicatedInScope()


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
        if s is REPLICATED_IN_SCOPE:
            mesh = concrete_mesh(where=where)
            s = None if mesh is None else NamedSharding(mesh, PartitionSpec())
        elif isinstance(s, PartitionSpec):
            mesh = concrete_mesh(where=where)
            if mesh is None:
                hint = (
                    f"{what} has the bare {s!r}, which needs a mesh: use NamedSharding(mesh, {s!r}) or call "
                    "inside `with mesh:`"
                )
                api = "jit" if where.startswith("jit(") else where
                if api in ("jit", "with_sharding_constraint"):  # (JAX's type and words first)
                    name = "shardings" if api == "with_sharding_constraint" else what
                    raise RuntimeError(
                        f"{api} requires a non-empty mesh in context if you are passing `PartitionSpec`s to "
                        f"{name}. You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, "
                        f"provide `Sharding`s to {name} and then the mesh context manager is not required. "
                        f"({where}: {hint})"
                    )
                raise ValueError(  # (JAX's words first)
                    f"Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed to {where}: {hint}"
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


def check_aval_sharding(s, shape, what: str, name: str = "", allow_uneven: bool = False) -> None:
    """A sharding given for a value of ``shape`` checked as JAX's ``pjit_check_aval_sharding``:
    a spec longer than the rank is JAX's ValueError naming ``what`` (``"pjit arguments"``,
    ``"device_put args"``, ...) and the value's key path ``name``; a shape the axes do not divide
    is its IndivisibleError, as is (unless ``allow_uneven``: XLA pads it)."""
    if s is None:
        return
    try:
        s.check_compatible_aval(shape)
    except ValueError as e:  # (JAX's words)
        name_str = f" with pytree key path {name}" if name else ""
        raise ValueError(
            f"One of {what}{name_str} is incompatible with its sharding annotation {s}: {e}"
        ) from None
    if not allow_uneven:
        s.shard_shape(shape)


def check_type_divisibility(s, shape) -> None:
    """JAX's ValueError (``core._check_divisibility``) for a value given a type whose explicit axes
    do not divide its shape: ``device_put`` and ``reshard`` to a sharding over explicit axes retype
    the value first, so they raise this where ``jit(in_shardings=)`` raises IndivisibleError."""
    if not isinstance(s, NamedSharding) or len(s.spec) > len(shape):
        return
    explicit = s.mesh.abstract_mesh.explicit_axes
    if not explicit:
        return
    dims = [tuple(n for n in dim if n in explicit) for dim in s.spec._normalized(len(shape))]
    entries = [None if not d else d[0] if len(d) == 1 else d for d in dims]
    for dim, (names, size_of_dim) in enumerate(zip(dims, shape)):
        size = math.prod(s.mesh.shape[n] for n in names)
        if names and size_of_dim % size:
            typed = NamedSharding(s.mesh.abstract_mesh, PartitionSpec(*entries))
            raise ValueError(
                f"Sharding spec {names} implies that array axis {dim} is partitioned {size} times, but "
                f"does not evenly divide the dimension size {size_of_dim}. Got shape: {tuple(shape)} "
                f"and sharding {typed}"
            )


def _on_devices(s: NamedSharding, where: str) -> NamedSharding:
    """A sharding over an abstract mesh (``typeof(x).sharding``) used to place values: over the
    mesh in scope laid out as that abstract mesh (JAX's rule). The type sharding of an unsharded
    value (an empty abstract mesh, ``typeof(x).sharding`` outside any mesh) places on the default
    device, as JAX's does (flax's Dropout passes it to ``random.bernoulli``)."""
    mesh = concrete_mesh(s.mesh, where)
    # (also a pmap or shard_map body's type over its Manual axes: nothing to lay out there)
    manual_only = all(t is AxisType.Manual for t in s.mesh.axis_types)
    if mesh is None and manual_only and all(p is None for p in s.spec):
        return SingleDeviceSharding(xla_bridge.backends.default_device())
    if mesh is None:
        raise ValueError(
            f"{where}: {s!r} is over an abstract mesh, which holds no devices: call "
            "funcgrad.sharding.set_mesh(mesh) first, or give a NamedSharding over a concrete Mesh"
        )
    return NamedSharding(mesh, s.spec, memory_kind=s._memory_kind)


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
            s = NamedSharding(mesh, PartitionSpec(*entries), memory_kind=bridge._fg_kind)
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
            # (an out_sharding=: JAX's words of canonicalize_sharding first)
            first = (
                "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass a "
                f"NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got {s}. "
                if name == "out_sharding"
                else ""
            )
            raise ValueError(
                f"{first}{where}: {name} has the bare {s!r}, which needs a mesh: call "
                "funcgrad.sharding.set_mesh(mesh) "
                f"(or use `with funcgrad.sharding.use_mesh(mesh):`), or pass NamedSharding(mesh, {s!r})"
            )
        return NamedSharding(mesh, s)
    if isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh):
        return _on_devices(s, where)
    if isinstance(s, Sharding):
        return s
    raise TypeError(f"{where}: {name} must be a Sharding or a PartitionSpec, got {s!r}")
