"""Serializing an ``Exported`` in JAX's format (``jax/_src/export/serialization.fbs``, a
flatbuffer), so that ``jax.export.deserialize`` reads funcgrad's artifacts and
``funcgrad.export.deserialize`` reads JAX's; and the registry of custom pytree nodes that may
appear in ``in_tree``/``out_tree`` (``register_pytree_node_serialization``,
``register_namedtuple_serialization``).

Layer: surface. Imports numpy, ``flatbuffers`` (the format's reference runtime, pure Python), the
kernel's pytrees and dtypes, and the sibling ``_exported``/``_shape_poly`` modules.

# NOTE: [the serialized Exported]
# The schema's tables are written and read by slot number, the numbers of JAX's schema:
#   Exported: 0 serialization_version, 1 function_name, 2 in_tree, 3 in_avals, 4 out_tree,
#     5 out_avals, 6 nr_devices_short, 7 in_shardings, 8 out_shardings, 9 platforms,
#     10 ordered_effects, 11 unordered_effects, 12 disabled_checks, 13 mlir_module_serialized,
#     14 calling_convention_version, 15 module_kept_var_idx, 16 uses_global_constants, 17 vjp,
#     18 nr_devices, 19 unique_avals, 20 unique_abstract_meshes, 21 unique_named_shardings,
#     22 in_avals_idxs, 23 out_avals_idxs, 24 in_shardings_idxs, 25 out_shardings_idxs
#   PyTreeDef: 0 kind, 1 children, 2 children_names, 3 custom_name, 4 custom_auxdata
#   AbstractValue: 0 kind, 1 shape (strings), 2 dtype, 3 memory_space
#   Effect: 0 type_name;  DisabledSafetyCheck: 0 kind, 1 custom_call_target
#   AbstractMesh: 0 axis_sizes, 1 axis_names, 2 axis_types;  PartitionSpecOneAxis: 0 axes
#   PartitionSpec: 0 partitions, 1 reduced, 2 unreduced
#   NamedSharding: 0 mesh, 1 spec, 2 memory_kind, 3 abstract_mesh_idx
# funcgrad writes what JAX 0.10 writes (the avals both inline and as indices into
# ``unique_avals``; each value's sharding as an index into ``unique_named_shardings``, 0 for
# none; version field 3, the value JAX stores for its older readers) and reads both layouts.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Sequence
from typing import Any

import flatbuffers
import ml_dtypes
import numpy as np
from flatbuffers import number_types as N
from flatbuffers.table import Table

from funcgrad._sharding_types import type_sharding
from funcgrad._shardings import AbstractMesh, AxisType, NamedSharding, PartitionSpec
from funcgrad.export import _exported
from funcgrad.export._exported import DisabledSafetyCheck, Exported
from funcgrad.export._shape_poly import SymbolicScope, symbolic_shape
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.dtypes import float0
from funcgrad.kernel.ir import ShapedArray
from funcgrad.random._keys import PRNGS, KeyArray

__all__ = [
    "deserialize",
    "register_namedtuple_serialization",
    "register_pytree_node_serialization",
    "serialize",
]

_WRITTEN_VERSION = 3

# PyTreeDefKind, AbstractValueKind, DisabledSafetyCheckKind of the schema.
_LEAF, _NONE, _TUPLE, _LIST, _DICT, _CUSTOM = range(6)
_SHAPED_ARRAY = 0
_CHECK_PLATFORM, _CHECK_CUSTOM_CALL, _CHECK_SHAPE_ASSERTIONS = range(3)
_MEMORY_DEVICE = 1

_DTYPES = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
    np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.uint16): 6, np.dtype(np.uint32): 7,
    np.dtype(np.uint64): 8, np.dtype(np.float16): 9, np.dtype(np.float32): 10,
    np.dtype(np.float64): 11, np.dtype(np.complex64): 12, np.dtype(np.complex128): 13,
    np.dtype(ml_dtypes.bfloat16): 14, np.dtype(ml_dtypes.int4): 15, np.dtype(ml_dtypes.uint4): 16,
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): 17, np.dtype(ml_dtypes.float8_e4m3fn): 18,
    np.dtype(ml_dtypes.float8_e4m3fnuz): 19, np.dtype(ml_dtypes.float8_e5m2): 20,
    np.dtype(ml_dtypes.float8_e5m2fnuz): 21, np.dtype(float0): 22,
    np.dtype(ml_dtypes.float8_e4m3): 23, np.dtype(ml_dtypes.float8_e3m4): 24,
    np.dtype(ml_dtypes.float8_e8m0fnu): 25, np.dtype(ml_dtypes.float4_e2m1fn): 26,
}  # fmt: skip
_KINDS = {k: d for d, k in _DTYPES.items()}

# nodetype -> (serialized_name, serialize_auxdata); serialized_name -> (nodetype, deserialize_auxdata)
_serializers: dict[type, tuple[str, Callable]] = {}
_deserializers: dict[str, tuple[type, Callable]] = {}


def register_pytree_node_serialization(
    nodetype: type,
    *,
    serialized_name: str,
    serialize_auxdata: Callable,
    deserialize_auxdata: Callable,
    from_children: Callable | None = None,
) -> type:
    """Register how the pytree nodes of ``nodetype`` (registered with
    ``funcgrad.tree_util.register_pytree_node``) are written in a serialized ``Exported``: under
    ``serialized_name``, their auxiliary data as the bytes ``serialize_auxdata`` makes (read back
    by ``deserialize_auxdata``). ``from_children`` is accepted for JAX's signature (funcgrad
    rebuilds the node from its registration). Returns ``nodetype`` (usable as a decorator).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    >>> _ = register_pytree_node_serialization(Pair, serialized_name="doc.Pair",
    ...         serialize_auxdata=lambda aux: b"", deserialize_auxdata=lambda b: None)
    """
    if nodetype in _serializers:
        raise ValueError(
            f"Duplicate serialization registration for type `{nodetype}`. Previous registration "
            f"was with serialized_name `{_serializers[nodetype][0]}`."
        )
    if serialized_name in _deserializers:
        raise ValueError(
            f"Duplicate serialization registration for serialized_name `{serialized_name}`. "
            f"Previous registration was for type `{_deserializers[serialized_name][0]}`."
        )
    if from_children is None and not _is_registered(nodetype):
        raise ValueError(  # (JAX's words)
            "If `from_children` is not present, you must call first"
            f"`jax.tree_util.register_pytree_node` for `{nodetype}`"
        )
    _serializers[nodetype] = (serialized_name, serialize_auxdata)
    _deserializers[serialized_name] = (nodetype, deserialize_auxdata)
    return nodetype


def _is_registered(nodetype) -> bool:
    """Whether ``nodetype`` is a registered pytree node (a namedtuple is a node without being
    registered, as in JAX's registry)."""
    if _is_namedtuple(nodetype):
        return False
    try:
        tu.PyTreeDef.from_node_data_and_children(tu.registry, (nodetype, None), [])
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def _is_namedtuple(t) -> bool:
    return isinstance(t, type) and issubclass(t, tuple) and isinstance(getattr(t, "_fields", None), tuple)


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Register a ``collections.namedtuple`` class for serialization (its field names are
    written with it, as JAX writes them).

    >>> import collections
    >>> Point = collections.namedtuple("Point", "x y")
    >>> register_namedtuple_serialization(Point, serialized_name="doc.Point") is Point
    True
    """
    if not _is_namedtuple(nodetype):
        raise ValueError(
            "Use `funcgrad.export.register_pytree_node_serialization` for types other than "
            "`collections.namedtuple`."
        )
    return register_pytree_node_serialization(
        nodetype,
        serialized_name=serialized_name,
        serialize_auxdata=lambda aux: json.dumps(nodetype._fields).encode("utf-8"),
        deserialize_auxdata=lambda b: None,
        from_children=lambda aux, children: nodetype(*children),
    )


def _serialize_ordereddict_keys(keys):
    if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
        return json.dumps(list(keys)).encode("utf-8")
    raise NotImplementedError(  # (JAX's words)
        "Serialization of collections.OrderedDict is supported only when the keys are strings. "
        f"Found keys: {keys}."
    )


# (an OrderedDict's auxiliary data is its keys, as in JAX, which registers it the same way)
register_pytree_node_serialization(
    collections.OrderedDict,
    serialized_name="collections.OrderedDict",
    serialize_auxdata=_serialize_ordereddict_keys,
    deserialize_auxdata=lambda b: tuple(json.loads(b.decode("utf-8"))),
)


# (typed PRNG key arrays are pytree nodes over their uint32 data for funcgrad's transformations:
# their implementation's name is the node's data in an artifact; JAX writes key-typed values)
register_pytree_node_serialization(
    KeyArray,
    serialized_name="funcgrad.random.KeyArray",
    serialize_auxdata=lambda impl: impl.name.encode("utf-8"),
    deserialize_auxdata=lambda b: PRNGS[b.decode("utf-8")],
)


# ----------------------------------------------------------------------------------------------
# Writing


def serialize(exp: Exported, vjp_order: int = 0) -> bytearray:
    """``exp`` in JAX's flatbuffer format, with ``vjp_order`` orders of VJP functions."""
    b = flatbuffers.Builder(65536)
    b.Finish(_write_exported(b, exp, vjp_order))
    return b.Output()


def _vector(b, offsets: Sequence[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _write_exported(b, exp: Exported, vjp_order: int) -> int:
    module = exp.mlir_module_serialized  # (a symbolic export's is made now: not_portable is then known)
    if exp._symbolic is not None and exp._symbolic.not_portable is not None:
        raise ValueError(
            f"Cannot serialize {exp.fun_name}: it was exported by funcgrad with symbolic dimensions, "
            "and its lowerings at several sizes do not merge into one module for all sizes "
            f"(NOTE: [one module for all sizes]: {exp._symbolic.not_portable}). Serialize an "
            "export for concrete sizes, or export with jax.export"
        )
    named = [*exp.in_shardings_hlo, *exp.out_shardings_hlo]
    if any(s is not None and not isinstance(s, NamedSharding) for s in named):
        raise ValueError(f"serialize: {exp.fun_name} has shardings that are not NamedShardings")
    # (JAX's unique abstract meshes and named shardings, indexed 1.. by each value, 0 for none)
    mesh_keys, sharding_keys, sharding_list = [], [], []
    for sh in named:
        if sh is None:
            continue
        mk = _mesh_key(sh.mesh)
        if mk not in mesh_keys:
            mesh_keys.append(mk)
        sk = (mk, tuple(sh.spec), sh._memory_kind)
        if sk not in sharding_keys:
            sharding_keys.append(sk)
            sharding_list.append(sh)
    uniques: list = []
    index: dict = {}
    for a in (*exp.in_avals, *exp.out_avals):
        key = _aval_key(a)
        if key not in index:
            index[key] = len(uniques)
            uniques.append(a)
    name = b.CreateString(exp.fun_name)
    in_tree = _write_tree(b, exp.in_tree)
    in_avals = _vector(b, [_write_aval(b, a) for a in exp.in_avals])
    out_tree = _write_tree(b, exp.out_tree)
    out_avals = _vector(b, [_write_aval(b, a) for a in exp.out_avals])
    platforms = _vector(b, [b.CreateString(p) for p in exp.platforms])
    ordered = _vector(b, [_write_effect(b, e) for e in exp.ordered_effects])
    unordered = _vector(b, [_write_effect(b, e) for e in exp.unordered_effects])
    checks = _vector(b, [_write_check(b, c) for c in exp.disabled_safety_checks])
    module = b.CreateByteVector(bytes(module))
    kept = b.CreateNumpyVector(np.array(exp.module_kept_var_idx, dtype=np.uint16))
    vjp = None
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError("serialization of an Exported that does not have vjps of high-enough order")
        vjp = _write_exported(b, exp.vjp(), vjp_order - 1)
    unique_avals = _vector(b, [_write_aval(b, a) for a in uniques])
    meshes = _vector(b, [_write_mesh(b, mk) for mk in mesh_keys])
    shardings = _vector(b, [_write_named(b, sh, mesh_keys.index(_mesh_key(sh.mesh))) for sh in sharding_list])
    in_idx = b.CreateNumpyVector(np.array([index[_aval_key(a)] for a in exp.in_avals], np.uint32))
    out_idx = b.CreateNumpyVector(np.array([index[_aval_key(a)] for a in exp.out_avals], np.uint32))

    def sharding_idx(sh):
        return (
            0
            if sh is None
            else 1 + sharding_keys.index((_mesh_key(sh.mesh), tuple(sh.spec), sh._memory_kind))
        )

    in_sh = b.CreateNumpyVector(np.array([sharding_idx(x) for x in exp.in_shardings_hlo], np.uint32))
    out_sh = b.CreateNumpyVector(np.array([sharding_idx(x) for x in exp.out_shardings_hlo], np.uint32))

    b.StartObject(26)
    b.PrependUint16Slot(0, _WRITTEN_VERSION, 0)
    b.PrependUOffsetTRelativeSlot(1, name, 0)
    b.PrependUOffsetTRelativeSlot(2, in_tree, 0)
    b.PrependUOffsetTRelativeSlot(3, in_avals, 0)
    b.PrependUOffsetTRelativeSlot(4, out_tree, 0)
    b.PrependUOffsetTRelativeSlot(5, out_avals, 0)
    b.PrependUOffsetTRelativeSlot(9, platforms, 0)
    b.PrependUOffsetTRelativeSlot(10, ordered, 0)
    b.PrependUOffsetTRelativeSlot(11, unordered, 0)
    b.PrependUOffsetTRelativeSlot(12, checks, 0)
    b.PrependUOffsetTRelativeSlot(13, module, 0)
    b.PrependUint16Slot(14, exp.calling_convention_version, 0)
    b.PrependUOffsetTRelativeSlot(15, kept, 0)
    b.PrependBoolSlot(16, bool(exp.uses_global_constants), False)
    if vjp is not None:
        b.PrependUOffsetTRelativeSlot(17, vjp, 0)
    b.PrependUint32Slot(18, exp.nr_devices, 0)
    b.PrependUOffsetTRelativeSlot(19, unique_avals, 0)
    b.PrependUOffsetTRelativeSlot(20, meshes, 0)
    b.PrependUOffsetTRelativeSlot(21, shardings, 0)
    b.PrependUOffsetTRelativeSlot(22, in_idx, 0)
    b.PrependUOffsetTRelativeSlot(23, out_idx, 0)
    b.PrependUOffsetTRelativeSlot(24, in_sh, 0)
    b.PrependUOffsetTRelativeSlot(25, out_sh, 0)
    return b.EndObject()


_AXIS_TYPES = {"Auto": 1, "Explicit": 2, "Manual": 3}  # (JAX's AxisType codes)


def _mesh_key(mesh) -> tuple:
    types = tuple(getattr(t, "name", str(t)) for t in mesh.axis_types)
    return (tuple(int(n) for n in mesh.axis_sizes), tuple(mesh.axis_names), types)


def _strings(b, items) -> int:
    return _vector(b, [b.CreateString(str(x)) for x in items])


def _write_mesh(b, key) -> int:
    sizes, names, types = key
    b.StartVector(4, len(sizes), 4)
    for n in reversed(sizes):
        b.PrependUint32(n)
    sizes_off = b.EndVector()
    names_off = _strings(b, names)
    b.StartVector(1, len(types), 1)
    for t in reversed(types):
        b.PrependByte(_AXIS_TYPES.get(t, 1))
    types_off = b.EndVector()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, sizes_off, 0)
    b.PrependUOffsetTRelativeSlot(1, names_off, 0)
    b.PrependUOffsetTRelativeSlot(2, types_off, 0)
    return b.EndObject()


def _write_spec(b, spec) -> int:
    parts = []
    for p in spec:
        axes = () if p is None else (p,) if isinstance(p, str) else tuple(p)
        off = _strings(b, axes)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, off, 0)
        parts.append(b.EndObject())
    parts_off = _vector(b, parts)
    reduced = _strings(b, sorted(spec._reduced))
    unreduced = _strings(b, sorted(spec._unreduced))
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, parts_off, 0)
    b.PrependUOffsetTRelativeSlot(1, reduced, 0)
    b.PrependUOffsetTRelativeSlot(2, unreduced, 0)
    return b.EndObject()


def _write_named(b, sh, mesh_idx: int) -> int:
    mesh_off = _write_mesh(b, _mesh_key(sh.mesh))
    spec_off = _write_spec(b, sh.spec)
    kind = b.CreateString(sh._memory_kind) if sh._memory_kind is not None else None
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, mesh_off, 0)
    b.PrependUOffsetTRelativeSlot(1, spec_off, 0)
    if kind is not None:
        b.PrependUOffsetTRelativeSlot(2, kind, 0)
    b.PrependUint32Slot(3, mesh_idx, 0)
    return b.EndObject()


def _read_mesh(v) -> AbstractMesh:
    codes = {c: n for n, c in _AXIS_TYPES.items()}
    types = tuple(AxisType[codes.get(int(t), "Auto")] for t in v.numbers(2, N.Uint8Flags))
    return AbstractMesh(
        tuple(int(n) for n in v.numbers(0, N.Uint32Flags)), tuple(v.strings(1)), axis_types=types
    )


def _read_named(v, meshes) -> NamedSharding:
    mesh = meshes[v.scalar(3, N.Uint32Flags)] if meshes else _read_mesh(v.table(0))
    sv = v.table(1)
    parts = []
    for t in sv.tables(0):
        axes = tuple(t.strings(0))
        parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    spec = PartitionSpec(*parts, reduced=frozenset(sv.strings(1)), unreduced=frozenset(sv.strings(2)))
    return NamedSharding(mesh, spec, memory_kind=v.string(2))


def _aval_key(a):
    return (tuple(str(d) for d in a.shape), np.dtype(a.dtype))


def _write_aval(b, a) -> int:
    dtype = np.dtype(a.dtype)
    if dtype not in _DTYPES:
        raise ValueError(f"serialize: the dtype {dtype} has no code in the serialization format")
    dims = [b.CreateString(str(d)) for d in a.shape]
    shape = _vector(b, dims)
    b.StartObject(4)
    b.PrependInt8Slot(0, _SHAPED_ARRAY, 0)
    b.PrependUOffsetTRelativeSlot(1, shape, 0)
    b.PrependInt8Slot(2, _DTYPES[dtype], 0)
    b.PrependInt8Slot(3, _MEMORY_DEVICE, 0)
    return b.EndObject()


def _write_effect(b, effect) -> int:
    name = b.CreateString(str(effect))
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    return b.EndObject()


def _write_check(b, check: DisabledSafetyCheck) -> int:
    target = check.is_custom_call()
    if target is not None:
        kind, off = _CHECK_CUSTOM_CALL, b.CreateString(target)
    elif check == DisabledSafetyCheck.platform():
        kind, off = _CHECK_PLATFORM, None
    elif check == DisabledSafetyCheck.shape_assertions():
        kind, off = _CHECK_SHAPE_ASSERTIONS, None
    else:
        raise ValueError(f"serialize: unknown DisabledSafetyCheck {check}")
    b.StartObject(2)
    b.PrependInt8Slot(0, kind, 0)
    if off is not None:
        b.PrependUOffsetTRelativeSlot(1, off, 0)
    return b.EndObject()


def _write_tree(b, treedef) -> int:
    node = treedef.node_data()
    children = treedef.children()
    kids = _vector(b, [_write_tree(b, c) for c in children]) if children else None
    names = custom_name = aux = None
    if node is None:
        kind = _LEAF
    elif node[0] is type(None):
        kind = _NONE
    elif node[0] is tuple:
        kind = _TUPLE
    elif node[0] is list:
        kind = _LIST
    elif node[0] is dict:
        kind = _DICT
        for k in node[1]:
            if not isinstance(k, str):
                raise TypeError(
                    f"Serialization is supported only for dictionaries with string keys. Found key "
                    f"{k!r} of type {type(k)}."
                )
        names = _vector(b, [b.CreateString(k) for k in node[1]])
    elif node[0] in _serializers:
        kind = _CUSTOM
        sname, ser = _serializers[node[0]]
        data = ser(node[1])
        if not isinstance(data, bytes | bytearray):
            raise ValueError(
                f"The custom serialization function for `{node[0]}` must return a `bytes` object. "
                f"It returned a {type(data)}."
            )
        custom_name = b.CreateString(sname)
        aux = b.CreateByteVector(bytes(data))
    else:
        raise ValueError(
            f"Cannot serialize PyTreeDef containing an unregistered type `{node[0]}`. Use "
            "`funcgrad.export.register_pytree_node_serialization` or "
            "`funcgrad.export.register_namedtuple_serialization`."
        )
    b.StartObject(5)
    b.PrependInt8Slot(0, kind, 0)
    if kids is not None:
        b.PrependUOffsetTRelativeSlot(1, kids, 0)
    if names is not None:
        b.PrependUOffsetTRelativeSlot(2, names, 0)
    if custom_name is not None:
        b.PrependUOffsetTRelativeSlot(3, custom_name, 0)
    if aux is not None:
        b.PrependUOffsetTRelativeSlot(4, aux, 0)
    return b.EndObject()


_exported._serializer[:] = [serialize]  # Exported.serialize writes with it


# ----------------------------------------------------------------------------------------------
# Reading


class _View:
    """Read access to one table of the buffer by slot number (NOTE: [the serialized Exported])."""

    __slots__ = ("t",)

    def __init__(self, buf, pos):
        self.t = Table(buf, pos)

    def _at(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, flags, default=0):
        o = self._at(slot)
        return self.t.Get(flags, o + self.t.Pos) if o else default

    def string(self, slot: int) -> str | None:
        o = self._at(slot)
        return self.t.String(o + self.t.Pos).decode("utf-8") if o else None

    def table(self, slot: int) -> _View | None:
        o = self._at(slot)
        return _View(self.t.Bytes, self.t.Indirect(o + self.t.Pos)) if o else None

    def tables(self, slot: int) -> list[_View]:
        o = self._at(slot)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [_View(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def strings(self, slot: int) -> list[str]:
        o = self._at(slot)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [self.t.String(start + 4 * i).decode("utf-8") for i in range(n)]

    def numbers(self, slot: int, flags) -> np.ndarray:
        o = self._at(slot)
        return self.t.GetVectorAsNumpy(flags, o) if o else np.zeros(0, flags.python_type)


def deserialize(blob: bytes | bytearray) -> Exported:
    """The ``Exported`` that ``serialize`` (or ``jax.export``'s ``Exported.serialize``) wrote.

    The artifact must be trusted: running it executes the custom calls it names.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> from funcgrad.export import export
    >>> exp = deserialize(export(funcgrad.jit(fnp.cos))(np.zeros(2)).serialize())
    >>> exp.call(np.zeros(2))
    Array([1., 1.], dtype=float64)
    """
    buf = bytearray(blob) if not isinstance(blob, bytearray) else blob
    if len(buf) < 8:
        raise ValueError("deserialize: the data is too short to be a serialized Exported")
    root = flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0)
    return _read_exported(_View(buf, root))


def _read_exported(v: _View) -> Exported:
    scope = SymbolicScope()
    uniques = [_read_aval(a, scope) for a in v.tables(19)]
    in_idx, out_idx = v.numbers(22, N.Uint32Flags), v.numbers(23, N.Uint32Flags)
    in_avals = (
        tuple(uniques[i] for i in in_idx) if len(in_idx) else tuple(_read_aval(a, scope) for a in v.tables(3))
    )
    out_avals = (
        tuple(uniques[i] for i in out_idx)
        if len(out_idx)
        else tuple(_read_aval(a, scope) for a in v.tables(5))
    )
    meshes = [_read_mesh(m) for m in v.tables(20)]
    named = [_read_named(t, meshes) for t in v.tables(21)]
    in_sh = v.numbers(24, N.Uint32Flags)
    out_sh = v.numbers(25, N.Uint32Flags)
    in_shardings = tuple(None if int(i) == 0 else named[int(i) - 1] for i in in_sh) or (None,) * len(in_avals)
    out_shardings = tuple(None if int(i) == 0 else named[int(i) - 1] for i in out_sh) or (None,) * len(
        out_avals
    )
    # (each value's type carries its sharding's Explicit axes, as JAX's update_aval_with_sharding)
    in_avals = tuple(_typed(a, sh) for a, sh in zip(in_avals, in_shardings))
    out_avals = tuple(_typed(a, sh) for a, sh in zip(out_avals, out_shardings))
    nr_devices = v.scalar(18, N.Uint32Flags) or v.scalar(6, N.Int16Flags)
    vjp_view = v.table(17)
    get_vjp = (lambda _: _read_exported(vjp_view)) if vjp_view is not None else None
    return Exported(
        fun_name=v.string(1) or "",
        in_tree=_read_tree(v.table(2)),
        in_avals=in_avals,
        out_tree=_read_tree(v.table(4)),
        out_avals=out_avals,
        in_shardings_hlo=in_shardings,
        out_shardings_hlo=out_shardings,
        nr_devices=int(nr_devices) or 1,
        platforms=tuple(v.strings(9)),
        ordered_effects=tuple(e.string(0) for e in v.tables(10)),
        unordered_effects=tuple(e.string(0) for e in v.tables(11)),
        disabled_safety_checks=tuple(_read_check(c) for c in v.tables(12)),
        mlir_module_serialized=v.numbers(13, N.Uint8Flags).tobytes(),
        calling_convention_version=int(v.scalar(14, N.Uint16Flags)),
        module_kept_var_idx=tuple(int(i) for i in v.numbers(15, N.Uint16Flags)),
        uses_global_constants=bool(v.scalar(16, N.BoolFlags, False)),
        _get_vjp=get_vjp,
    )


def _typed(aval: ShapedArray, sharding: NamedSharding | None) -> ShapedArray:
    """``aval`` typed with ``sharding``'s Explicit axes (unchanged without one, or over Auto axes)."""
    if sharding is None:
        return aval
    typed = type_sharding(sharding.mesh, sharding.spec._normalized(len(aval.shape)))
    return aval if typed is None else aval.update(sharding=typed)


def _read_aval(v: _View, scope: SymbolicScope) -> ShapedArray:
    if v.scalar(0, N.Int8Flags) != _SHAPED_ARRAY:
        raise ValueError("deserialize: the artifact has an abstract token value; funcgrad reads arrays only")
    code = v.scalar(2, N.Int8Flags)
    if code not in _KINDS:
        raise ValueError(f"deserialize: dtype code {code} (a PRNG key type) is not supported by funcgrad")
    dims = v.strings(1)
    shape = symbolic_shape(",".join(dims), scope=scope) if dims else ()
    return ShapedArray(shape, _KINDS[code])


def _read_check(v: _View) -> DisabledSafetyCheck:
    kind = v.scalar(0, N.Int8Flags)
    if kind == _CHECK_CUSTOM_CALL:
        return DisabledSafetyCheck.custom_call(v.string(1))
    if kind == _CHECK_PLATFORM:
        return DisabledSafetyCheck.platform()
    return DisabledSafetyCheck.shape_assertions()


def _read_tree(v: _View | None) -> Any:
    if v is None:
        raise ValueError("deserialize: the artifact has no pytree definition")
    kind = v.scalar(0, N.Int8Flags)
    children = [_read_tree(c) for c in v.tables(1)]
    if kind == _LEAF:
        return tu.tree_structure(0)
    if kind == _NONE:
        return tu.tree_structure(None)
    if kind == _TUPLE:
        node = (tuple, None)
    elif kind == _LIST:
        node = (list, None)
    elif kind == _DICT:
        node = (dict, v.strings(2))
    elif kind == _CUSTOM:
        sname = v.string(3)
        if sname not in _deserializers:
            raise ValueError(
                f"Cannot deserialize a PyTreeDef containing an unregistered type `{sname}`. Use "
                "`funcgrad.export.register_pytree_node_serialization` or "
                "`funcgrad.export.register_namedtuple_serialization`."
            )
        nodetype, deser = _deserializers[sname]
        node = (nodetype, deser(v.numbers(4, N.Uint8Flags).tobytes()))
    else:
        raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")
    return tu.PyTreeDef.from_node_data_and_children(tu.registry, node, children)
