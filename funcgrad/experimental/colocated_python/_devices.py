"""Colocated CPU devices (``colocated_cpu_devices``): which CPU device runs a colocated
function for a given device; used by the API and by a colocated callable's call.

Layer: surface. Imports funcgrad (devices, ``Mesh``) and the kernel's cache registry.
"""

from __future__ import annotations

import functools

import numpy as np

import funcgrad
from funcgrad._shardings import Mesh
from funcgrad.kernel.caches import register_cache

__all__ = ["colocated_cpu_devices"]


def colocated_cpu_devices(devices_or_mesh):
    """The CPU devices colocated with ``devices_or_mesh`` (a sequence of devices: a tuple in the
    same order, as a list; a ``Mesh``: a mesh of the same shape, axis names and axis types over them).

    >>> import funcgrad
    >>> colocated_cpu_devices(funcgrad.devices()[:1]) == list(funcgrad.devices()[:1])
    True
    """
    if isinstance(devices_or_mesh, Mesh):
        mesh = devices_or_mesh
        flat = colocated_cpu_devices(tuple(mesh.devices.flat))
        grid = np.empty(len(flat), dtype=object)
        grid[:] = flat
        return Mesh(grid.reshape(mesh.devices.shape), mesh.axis_names, axis_types=mesh.axis_types)
    return list(_colocated(tuple(devices_or_mesh)))  # a list, as JAX's


@register_cache("colocated_python.devices")
@functools.lru_cache(maxsize=1024)
def _colocated(devices: tuple) -> tuple:
    if all(d.platform == "cpu" for d in devices):
        return devices  # a CPU device is its own colocated CPU device
    # An accelerator's colocated CPU device is one of its process's CPU devices, paired in order
    # (JAX's fallback for backends that define no CPU devices of their own).
    spare: dict[int, list] = {}
    for d in funcgrad.devices("cpu"):
        spare.setdefault(d.process_index, []).append(d)
    for pool in spare.values():
        pool.reverse()
    out = []
    for d in devices:
        if d.platform == "cpu":
            out.append(d)
            continue
        pool = spare.get(d.process_index)
        if not pool:
            raise ValueError(f"Process {d.process_index} does not have enough local CPU devices")
        out.append(pool.pop())
    return tuple(out)
