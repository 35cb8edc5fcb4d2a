"""Exporting a function with shardings (JAX's device-polymorphic export): ``export(jit(f,
in_shardings=...))`` or arguments whose ``ShapeDtypeStruct`` has a ``NamedSharding``.

Layer: surface. Imports numpy, funcgrad's kernel pytrees, ``jit``, ``device_put``, ``devices``,
the shardings of ``funcgrad._shardings`` and ``xla_bridge.portable`` (the module's Shardy
annotations, ``with_shardings``); ``_exported`` imports it (never the reverse: an ``Exported`` is
handled as a value).

# NOTE: [exporting with shardings]
# An ``Exported`` with shardings knows its device count (``nr_devices``, the mesh's size) and
# its inputs' and outputs' ``PartitionSpec``s over an abstract mesh (the mesh's axis names and
# sizes, no devices), as JAX's: ``in_shardings_jax(mesh)`` puts them on any mesh of that shape.
# A call runs on the devices of its arguments (the first argument sharded over several devices
# gives them, in its sharding's device order; a call on one device is refused when the export
# was for several, with JAX's ValueError): the arguments are placed with the exported input
# shardings over a mesh of those devices shaped as the exported one, and the function runs as a
# jit with those in/out shardings (one per device set). So a call matches JAX's values and its
# result's placement. The artifact itself (``mlir_module()``) is the one-device lowering
# annotated as JAX's partitioned modules (a Shardy mesh, ``sdy.sharding`` on ``@main``'s
# parameters and results; its VJP's likewise); it serializes with its shardings as JAX's
# NamedShardings (``_serialization``), and a deserialized
# multi-device export (funcgrad's or JAX's) runs as the same kind of jit over its arguments'
# devices whose body calls the module, its own sharding annotations dropped
# (``portable.embeddable(strip_shardings=True)``): the partitioner applies the exported in/out
# shardings, so values and placement are JAX's. A program holding a ``shard_map`` is lowered over
# the shard_map's mesh (``shard_map_lowering``: its ``sdy.manual_computation`` over ``@mesh``, as
# JAX's module; a per-device body has no one-device semantics), and such a module, deserialized,
# is embedded with its annotations kept (its mesh renamed beside the caller's, of the same shape).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from funcgrad._devices import devices as _devices
from funcgrad._shardings import AbstractMesh, Mesh, NamedSharding, PartitionSpec, Sharding, sharding_leaves
from funcgrad.api import device_put
from funcgrad.jitting import jit
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.recording import RecordingTracer
from funcgrad.primitives.sharding import shard_map_p
from funcgrad.xla_bridge import portable
from funcgrad.xla_bridge.meshes import SpmdLowering

__all__ = ["ShardedExport", "constraint_mesh", "find_mesh", "shard_map_lowering", "with_shardings"]


def _named(s) -> NamedSharding | None:
    return s if isinstance(s, NamedSharding) and s.mesh.size > 1 else None


def find_mesh(fun_jit, leaves):
    """The mesh of the first ``NamedSharding`` (over several devices) among the argument
    specifications' ``sharding`` and the jit's in/out shardings, or None (a one-device export).

    >>> import funcgrad
    >>> find_mesh(funcgrad.jit(lambda x: x), [np.ones(2)]) is None
    True
    """
    cands = [getattr(x, "sharding", None) for x in leaves]
    for tree in (fun_jit._in_shardings, fun_jit._out_shardings):
        if tree is not None:
            cands += tu.tree_leaves(tree, is_leaf=lambda s: isinstance(s, Sharding))
    for s in cands:
        if _named(s) is not None:
            return s.mesh
    return None


def _abstract(mesh) -> AbstractMesh:
    return AbstractMesh(tuple(mesh.axis_sizes), tuple(mesh.axis_names), axis_types=tuple(mesh.axis_types))


def _placed(x):
    """The concrete value under a tracer of eager differentiation (a forward-mode primal, a
    recorded input), whose devices place the call as the value's own would; else ``x``."""
    for _ in range(16):
        if isinstance(x, core.PrimalTracer):
            x = x.primal
        elif isinstance(x, RecordingTracer) and x._var in x._trace.sources:
            x = x._trace.sources[x._var]
        else:
            break
    return x


class ShardedExport:
    """What an export with shardings keeps to be called (NOTE: [exporting with shardings])."""

    def __init__(self, fun_jit, args, kwargs, mesh, in_tree, out_tree, n_out):
        self.fun_jit = fun_jit
        static_key, static_kw, dyn_args, dyn_kwargs = fun_jit._split(args, kwargs)
        self._statics, self._static_kw = dict(static_key), dict(static_kw)
        self._n_total = len(dyn_args) + len(self._statics)
        self.in_tree, self.out_tree = in_tree, out_tree
        leaves = tu.tree_leaves((dyn_args, dyn_kwargs))
        self.mesh = AbstractMesh(
            tuple(mesh.axis_sizes), tuple(mesh.axis_names), axis_types=tuple(mesh.axis_types)
        )
        self.nr_devices = int(np.prod(mesh.axis_sizes))
        name = f"export({fun_jit._name})"
        specs = [getattr(x, "sharding", None) for x in leaves]
        if fun_jit._in_shardings is not None:
            jit_ins = sharding_leaves(fun_jit._in_shardings, dyn_args, name, "in_shardings")
            specs = [j if j is not None else s for j, s in zip(jit_ins, specs)] + specs[len(jit_ins) :]
        self.in_specs = [self._spec(s) for s in specs]
        if fun_jit._out_shardings is not None:
            shaped = tu.tree_unflatten(out_tree, list(range(n_out)))
            self.out_specs = [
                self._spec(s) for s in sharding_leaves(fun_jit._out_shardings, shaped, name, "out_shardings")
            ]
        else:
            self.out_specs = [None] * n_out
        self._calls: dict = {}
        self.body = None

    @classmethod
    def from_exported(cls, exp, body):
        """The runner of a deserialized multi-device export: its shardings' mesh and specs, the
        program ``body`` (flat arrays -> flat results) in place of the jitted function's."""
        self = cls.__new__(cls)
        shardings = [s for s in (*exp.in_shardings_hlo, *exp.out_shardings_hlo) if s is not None]
        if shardings:
            m = shardings[0].mesh
            self.mesh = AbstractMesh(tuple(m.axis_sizes), tuple(m.axis_names), axis_types=tuple(m.axis_types))
        else:  # (no value sharded, e.g. only a sharding constraint inside: replicated on the devices)
            self.mesh = AbstractMesh((exp.nr_devices,), ("_devices",))
        self.nr_devices = exp.nr_devices

        def spec(s):  # (a value over another mesh than the first keeps its abstract mesh)
            if s is None:
                return None
            same = tuple(s.mesh.axis_names) == tuple(self.mesh.axis_names)
            return s.spec if same else NamedSharding(_abstract(s.mesh), s.spec)

        self.in_specs = [spec(s) for s in exp.in_shardings_hlo]
        self.out_specs = [spec(s) for s in exp.out_shardings_hlo]
        self.in_tree, self.out_tree = exp.in_tree, exp.out_tree
        self._calls = {}
        self.body = body
        return self

    def take_types(self, in_avals, out_avals) -> None:
        """A value with no sharding given whose type is sharded over Explicit axes of the export's
        mesh exports with its type's spec, as JAX's (a jit over an Explicit mesh lays its results
        out as their types say: ``x @ y`` of P('x', None) and P(None, 'y') is P('x', 'y'))."""
        for specs, avals in ((self.in_specs, in_avals), (self.out_specs, out_avals)):
            for i, a in enumerate(avals):
                typed = getattr(a, "_sharding", None)
                if specs[i] is None and typed is not None and typed.mesh == self.mesh and any(typed.spec):
                    specs[i] = typed.spec

    def _spec(self, s):
        s = _named(s)
        if s is None:
            return None
        if tuple(s.mesh.axis_names) != tuple(self.mesh.axis_names) or tuple(s.mesh.axis_sizes) != tuple(
            self.mesh.axis_sizes
        ):
            if s.mesh.size != self.mesh.size:
                raise ValueError(
                    f"export({self.fun_jit._name}): the shardings use meshes of different sizes "
                    f"({s.mesh} and {self.mesh}); export with meshes over the same devices"
                )
            # (another mesh over the same devices, as JAX's exports allow: kept with its spec)
            return NamedSharding(_abstract(s.mesh), s.spec)
        return s.spec

    def shardings(self, specs, mesh) -> tuple:
        """The specs as ``NamedSharding``s over ``mesh`` (of the exported mesh's shape); a value
        exported over another mesh of the same devices (a ``NamedSharding`` over its abstract
        mesh among ``specs``) is laid out over ``mesh``'s devices shaped as that mesh."""
        if tuple(mesh.axis_sizes) != tuple(self.mesh.axis_sizes):
            raise ValueError(
                f"in_shardings_jax: the mesh {mesh} does not have the exported mesh's shape {self.mesh}"
            )
        out = []
        for p in specs:
            if isinstance(p, NamedSharding):
                other = p.mesh
                if isinstance(mesh, Mesh):
                    other = Mesh(
                        np.array(list(mesh.devices.flat), dtype=object).reshape(p.mesh.axis_sizes),
                        tuple(p.mesh.axis_names),
                        axis_types=tuple(p.mesh.axis_types),
                    )
                out.append(NamedSharding(other, p.spec))
            else:
                out.append(None if p is None else NamedSharding(mesh, p))
        return tuple(out)

    def call(self, exp_name, flat):
        devices = None
        for x in flat:
            x = _placed(x)
            s = None if isinstance(x, core.Tracer) else getattr(x, "sharding", None)
            if s is not None and len(getattr(s, "_device_assignment", ())) > 1:
                devices = tuple(s._device_assignment)
                break
        if devices is None:
            if any(isinstance(x, core.Tracer) for x in flat):
                devices = tuple(_devices()[: self.nr_devices])
            else:
                devices = ()
        if len(devices) != self.nr_devices:
            raise ValueError(  # (JAX's words)
                f"Function {exp_name} was exported for {self.nr_devices} devices and is called in a "
                f"context with {max(len(devices), 1)} devices, which is not allowed. Place the "
                "arguments with exp.in_shardings_jax(mesh) on a mesh of as many devices"
            )
        fn = self._calls.get(devices)
        if fn is None:
            mesh = Mesh(
                np.array(devices, dtype=object).reshape(self.mesh.axis_sizes),
                self.mesh.axis_names,
                axis_types=tuple(self.mesh.axis_types),  # (Explicit axes type the results, as JAX's)
            )
            ins, outs = self.shardings(self.in_specs, mesh), self.shardings(self.out_specs, mesh)
            replicated = NamedSharding(mesh, PartitionSpec())
            ins = tuple(s if s is not None else replicated for s in ins)

            def flat_fun(*xs):
                if self.body is not None:
                    return tuple(self.body(*xs))
                d_args, d_kwargs = tu.tree_unflatten(self.in_tree, list(xs))
                it = iter(d_args)
                full = [self._statics[i] if i in self._statics else next(it) for i in range(self._n_total)]
                return tuple(tu.tree_leaves(self.fun_jit._fun(*full, **d_kwargs, **self._static_kw)))

            flat_fun.__name__ = exp_name
            jitted = jit(flat_fun, in_shardings=ins, out_shardings=outs if any(outs) else None)
            fn = self._calls[devices] = (jitted, ins)
        jitted, ins = fn
        placed = [x if isinstance(x, core.Tracer) else device_put(x, s) for x, s in zip(flat, ins)]
        return jitted(*placed)


def constraint_mesh(jaxpr):
    """The mesh (over several devices) of the first sharding constraint in ``jaxpr`` or the
    jaxprs its equations hold, or None."""
    for eqn in jaxpr.eqns:
        for v in eqn.params.values():
            for x in v if isinstance(v, tuple | list) else (v,):
                mesh = getattr(x, "mesh", None) if isinstance(x, NamedSharding) else x
                if isinstance(mesh, Mesh) and mesh.size > 1:
                    return mesh
                inner = getattr(x, "jaxpr", x)
                if hasattr(inner, "eqns"):
                    found = constraint_mesh(inner)
                    if found is not None:
                        return found
    return None


def shard_map_lowering(jaxpr):
    """An ``SpmdLowering`` over the mesh of the first ``shard_map`` (over several devices) in
    ``jaxpr`` or the jaxprs its equations hold, or None: a program with a per-device body is
    exported lowered over that mesh (its ``sdy.manual_computation`` over ``@mesh``, as JAX's), not
    as a one-device program. The mesh's devices are partitions 0..n-1, so the module names none."""
    mesh = _shard_map_mesh(jaxpr)
    if mesh is None:
        return None
    return SpmdLowering([d.id for d in mesh.devices.flat], mesh)


def _shard_map_mesh(jaxpr):
    for eqn in jaxpr.eqns:
        mesh = eqn.params.get("mesh") if eqn.primitive is shard_map_p else None
        if isinstance(mesh, Mesh) and mesh.size > 1:
            return mesh
        for v in eqn.params.values():
            for x in v if isinstance(v, tuple | list) else (v,):
                inner = getattr(x, "jaxpr", x)
                if hasattr(inner, "eqns"):
                    found = _shard_map_mesh(inner)
                    if found is not None:
                        return found
    return None


def with_shardings(one, nr_devices: int, ins, outs, sharded=None):
    """``one`` (a one-device ``Exported``) for ``nr_devices`` devices with the NamedShardings ``ins``/
    ``outs`` (None: unspecified): its module annotated with them as JAX's partitioned exports
    are (a Shardy mesh and ``sdy.sharding``s; NOTE: [exporting with shardings])."""
    mesh = next((x.mesh for x in (*ins, *outs) if x is not None), None)
    blob = one.mlir_module_serialized
    if mesh is not None:

        def dims(x, aval):
            if x is None or tuple(x.mesh.axis_names) != tuple(mesh.axis_names):
                return None  # (a value over another mesh: not annotated over this one)
            out = [[] if p is None else [p] if isinstance(p, str) else list(p) for p in x.spec]
            return out + [[]] * (len(aval.shape) - len(out))

        kept = [ins[i] for i in one.module_kept_var_idx]
        in_avals = [one.in_avals[i] for i in one.module_kept_var_idx]
        in_dims = [dims(x, a) for x, a in zip(kept, in_avals)]
        if len(one.platforms) > 1:
            in_dims.insert(0, None)  # (the platform index)
        text = portable.annotate_shardings(
            portable.deserialize(blob, debug_info=True),
            list(zip(mesh.axis_names, mesh.axis_sizes)),
            in_dims,
            [dims(x, a) for x, a in zip(outs, one.out_avals)],
        )
        blob = portable.serialize(text, with_sdy=True)
    return dataclasses.replace(
        one,
        nr_devices=nr_devices,
        in_shardings_hlo=tuple(ins),
        out_shardings_hlo=tuple(outs),
        mlir_module_serialized=blob,
        _sharded=sharded,
    )
