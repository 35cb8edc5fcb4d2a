"""The colocated Python API (``colocated_cpu_devices``, ``colocated_python``,
``colocated_python_class``); see the package's docstring for what colocation means here.

Layer: surface. Imports funcgrad (devices, ``Mesh``), and this package's ``func`` and ``obj``.
"""

from __future__ import annotations

import functools

import numpy as np

import funcgrad
from funcgrad._shardings import Mesh
from funcgrad.experimental.colocated_python.func import ColocatedCallable
from funcgrad.experimental.colocated_python.obj import wrap_class
from funcgrad.kernel.caches import register_cache

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]


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


def colocated_python(fun):
    """A callable that runs ``fun`` on the CPU devices colocated with its array arguments
    (``.specialize(in_specs=, out_specs_fn=, out_specs=, devices=)`` fixes what JAX lets one fix).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = colocated_python(lambda x: x + 1).specialize(devices=funcgrad.devices()[:1])
    >>> f(funcgrad.device_put(fnp.zeros(2), funcgrad.devices()[0]))
    Array([1., 1.], dtype=float64)
    """
    return ColocatedCallable(fun)


def colocated_python_class(cls):
    """A wrapper class whose instances make one ``cls`` object, on first use, on the colocated
    host, and run its methods there (each method a colocated callable).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @colocated_python_class
    ... class Acc:
    ...     def __init__(self):
    ...         self.total = 0.0
    ...     def add(self, x):
    ...         self.total += float(x.sum())
    ...         return x * 0 + self.total
    >>> acc = Acc()
    >>> x = funcgrad.device_put(fnp.ones(2), funcgrad.devices()[0])
    >>> _ = acc.add(x); acc.add(x)
    Array([4., 4.], dtype=float64)
    """
    return wrap_class(cls)
