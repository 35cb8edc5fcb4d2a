"""Meshes in module text: what lowering an SPMD program needs beyond one device.

Layer: xla_bridge (compiler half). Imports stdlib and numpy only (pure text: no jaxlib, no
funcgrad). A mesh is read duck-typed: ``mesh.axis_names``, ``mesh.devices`` (an n-d array of
devices, each with an ``.id``).

``SpmdLowering`` is the state of one module being lowered for ``device_ids`` (the program's
device assignment; partition ``p`` runs on device ``device_ids[p]``). Lowering rules reach it as
``ctx.fb.module.spmd`` (``None`` in a one-device program):

- ``mesh_symbol(mesh)`` declares the mesh once per module (``sdy.mesh @mesh = <["x"=8]>``; a mesh
  whose devices are not the assignment in order gets ``device_ids=[...]``);
- ``sharding(mesh, spec)`` writes a Shardy sharding (``<@mesh, [{"x"}, {}]>``; ``spec`` has one tuple
  of axis names per dimension);
- ``manual``: the meshes (with their manual axes) of the enclosing ``sdy.manual_computation``
  bodies (shard_map, nested ones manual over further axes), whose axes the collectives name:
  ``replica_groups``, ``permute_pairs`` and ``coordinates`` turn axis names into partition ids
  (a group lists the partitions that differ only along the named axes, in row-major order of
  the names: the all-reduce of ``psum(x, 'b')`` on a (2, 4) mesh of
  ("a", "b") runs over ``[[0, 1, 2, 3], [4, 5, 6, 7]]``);
- ``on_device(i, n)``: the sharding of ``n`` values on the program's device ``i`` alone (JAX's
  maximal sharding of a host callback: the first device, or the one its ``sharding`` names);
- ``channel()``: a fresh channel handle (SPMD collectives use ``type = 1``, device to device,
  with ``use_global_device_ids``: jax's form, verified in shared/notes/jaxlib-spmd-facts.md C6).
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["SpmdLowering", "sdy_dims"]


def sdy_dims(spec, open_dims: bool = False) -> str:
    """``[{"x"}, {}]`` for the spec ``(("x",), ())``; with ``open_dims``, ``[{"x", ?}, {?}]`` (the
    partitioner may shard each dimension further along the axes left automatic)."""
    tail = ["?"] if open_dims else []
    return "[" + ", ".join("{" + ", ".join([*(f'"{n}"' for n in dim), *tail]) + "}" for dim in spec) + "]"


class SpmdLowering:
    def __init__(self, device_ids, mesh=None):
        self.device_ids = tuple(int(d) for d in device_ids)
        self.mesh = mesh  # the program's mesh (hoisted constants are replicated over it)
        self._position = {d: i for i, d in enumerate(self.device_ids)}
        self._meshes: dict = {}
        self._lines: list[str] = []
        self.manual: list = []  # (mesh, manual axis names) of the enclosing manual bodies
        self._channels = itertools.count(1)

    @property
    def num_partitions(self) -> int:
        return len(self.device_ids)

    def partitions(self, mesh) -> np.ndarray:
        """The partition id of each device of ``mesh``, shaped like the mesh."""
        try:
            return np.array([self._position[d.id] for d in mesh.devices.flat], np.int64).reshape(
                mesh.devices.shape
            )
        except KeyError as e:
            raise ValueError(
                f"a mesh uses device {e.args[0]}, which is not among the program's devices "
                f"{list(self.device_ids)}: "
                "one program runs on one set of devices (use meshes over the same devices)"
            ) from None

    def mesh_symbol(self, mesh) -> str:
        names = tuple(mesh.axis_names)
        pids = self.partitions(mesh)
        key = (names, pids.shape, pids.tobytes())
        sym = self._meshes.get(key)
        if sym is None:
            sym = "@mesh" if not self._meshes else f"@mesh_{len(self._meshes)}"
            self._meshes[key] = sym
            axes = ", ".join(f'"{n}"={s}' for n, s in zip(names, pids.shape))
            ids = (
                ""
                if np.array_equal(pids.reshape(-1), np.arange(pids.size))
                else f", device_ids=[{', '.join(map(str, pids.reshape(-1)))}]"
            )
            self._lines.append(f"  sdy.mesh {sym} = <[{axes}]{ids}>")
        return sym

    def sharding(self, mesh, spec, ndim=None, unreduced=(), open_dims: bool = False, replicated=()) -> str:
        """``spec``: one tuple of axis names per dimension (``()``: replicated, given ``ndim``);
        ``unreduced``: the axes each device holds a partial sum along (NOTE: [unreduced values]);
        ``open_dims``: each dimension open to further splitting (``sdy_dims``); ``replicated``: axes
        an open dimension may not be split over (JAX's explicit axes a type leaves unused)."""
        if ndim is not None and not spec:
            spec = ((),) * ndim
        extra = ""
        if replicated:
            extra += ", replicated={" + ", ".join(f'"{n}"' for n in mesh.axis_names if n in replicated) + "}"
        if unreduced:
            extra += ", unreduced={" + ", ".join(f'"{n}"' for n in mesh.axis_names if n in unreduced) + "}"
        return f"<{self.mesh_symbol(mesh)}, {sdy_dims(spec, open_dims)}{extra}>"

    def on_device(self, index: int, n_values: int) -> str:
        """The sharding of ``n_values`` values (at least one entry) held by the program's device
        ``index`` (its position in the assignment) alone, on a mesh of that device declared once
        (``@maximal_mesh_<index>``): JAX's maximal sharding, for what runs once (a host callback
        outside a shard_map body)."""
        sym = f"@maximal_mesh_{index}"
        if ("maximal", index) not in self._meshes:
            self._meshes[("maximal", index)] = sym
            self._lines.append(f"  sdy.mesh {sym} = <[], device_ids=[{index}]>")
        return "#sdy.sharding_per_value<[" + ", ".join([f"<{sym}, []>"] * max(1, n_values)) + "]>"

    def declarations(self) -> list[str]:
        return list(self._lines)

    def channel(self) -> int:
        return next(self._channels)

    # -- collectives over the axes of the enclosing manual computation -----------------------

    def manual_axes(self) -> tuple:
        """The mesh axes the enclosing manual bodies (nested shard_maps) are manual over."""
        return tuple(n for _, names in self.manual for n in names)

    def _manual_mesh(self, axis_names, what):
        if not self.manual:
            raise ValueError(
                f"{what} over {axis_names} outside a shard_map/pmap body: nothing binds these axis names here"
            )
        mesh = self.manual[-1][0]
        manual = self.manual_axes()
        missing = [n for n in axis_names if n not in manual]
        if missing:
            raise ValueError(
                f"{what}: the axis {missing[0]!r} is not a manual axis here (the manual axes: {manual}; the "
                f"mesh: {tuple(mesh.axis_names)}); name it in the shard_map's axis_names"
            )
        return mesh

    def groups(self, axis_names, what="a collective") -> np.ndarray:
        """``[n_groups, group_size]`` partition ids: each row differs only along ``axis_names``."""
        mesh = self._manual_mesh(axis_names, what)
        names = list(mesh.axis_names)
        pids = self.partitions(mesh)
        inner = [names.index(n) for n in axis_names]
        outer = [i for i in range(len(names)) if i not in inner]
        size = int(np.prod([pids.shape[i] for i in inner], dtype=np.int64))
        return pids.transpose(outer + inner).reshape(-1, size)

    def replica_groups(self, axis_names, what="a collective") -> str:
        g = self.groups(axis_names, what)
        rows = ", ".join("[" + ", ".join(map(str, r)) + "]" for r in g)
        return f"dense<[{rows}]> : tensor<{g.shape[0]}x{g.shape[1]}xi64>"

    def permute_pairs(self, axis_names, perm) -> str:
        g = self.groups(axis_names, "ppermute")
        pairs = [(int(row[s]), int(row[d])) for row in g for s, d in perm]
        if not pairs:
            return "dense<> : tensor<0x2xi64>"
        body = ", ".join(f"[{s}, {d}]" for s, d in pairs)
        return f"dense<[{body}]> : tensor<{len(pairs)}x2xi64>"

    def coordinates(self, axis_names) -> np.ndarray:
        """For each partition id, its index along ``axis_names`` (row-major over the names)."""
        g = self.groups(axis_names, "axis_index")
        table = np.zeros(self.num_partitions, np.int32)
        for row in g:
            table[row] = np.arange(len(row), dtype=np.int32)
        return table
