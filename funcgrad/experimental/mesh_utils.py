"""``funcgrad.experimental.mesh_utils``: device meshes for ``Mesh``, as
``jax.experimental.mesh_utils``.

Layer: surface. Imports xla_bridge (the devices) and numpy.

A mesh is an array of devices; these functions decide which device sits where. On a CPU or a
GPU there is no physical topology to follow (no TPU torus): ``create_device_mesh`` lays the
devices out in order (GPUs by id, as jax does), and ``create_hybrid_device_mesh`` puts the
devices of each granule -- a process, since CPU and GPU devices have no slice index -- in one
block of the outer (DCN) mesh.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad import xla_bridge

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# Mesh builders by ``device.device_kind`` (JAX's hook): ``create_device_mesh`` calls the handler of
# its last device's kind as ``handler(mesh_shape, devices, contiguous_submeshes=...)`` and uses
# its array unless it returns None. JAX's entries are TPU generations, which read the chips'
# torus coordinates; funcgrad's backends (CPU, CUDA) have no such topology, so it starts empty
# and a program may register its own device kind's layout.
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _axis_sizes(name: str, mesh_shape) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in mesh_shape)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: mesh_shape must be a sequence of ints, got {mesh_shape!r}") from None
    if any(s < 1 for s in sizes):
        raise ValueError(f"{name}: mesh sizes must be positive, got {sizes}")
    return sizes


def create_device_mesh(
    mesh_shape: Sequence[int],
    devices: Sequence[Any] | None = None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """An array of ``devices`` (default: all devices, ``funcgrad.devices()``) of shape
    ``mesh_shape``, for ``funcgrad.sharding.Mesh``. ``contiguous_submeshes`` and
    ``allow_split_physical_axes`` concern TPU tori; CPU and GPU devices have no physical layout,
    so any order is as good and they change nothing. A handler registered in
    ``device_kind_handler_dict`` for the devices' kind is asked first (None: this default).

    >>> import funcgrad
    >>> mesh = create_device_mesh((1,))
    >>> mesh.shape, mesh[0] == funcgrad.devices()[0]
    ((1,), True)
    """
    del allow_split_physical_axes  # no physical topology off TPUs
    sizes = _axis_sizes("create_device_mesh", mesh_shape)
    devices = list(xla_bridge.get_backend().global_devices if devices is None else devices)
    handler = device_kind_handler_dict.get(getattr(devices[-1], "device_kind", None)) if devices else None
    if handler is not None and math.prod(sizes) == len(devices):
        result = handler(sizes, devices, contiguous_submeshes=contiguous_submeshes)
        if result is not None:
            return result
    if math.prod(sizes) != len(devices):
        raise ValueError(
            f"create_device_mesh: {len(devices)} devices cannot fill a mesh of shape {sizes} "
            f'({math.prod(sizes)} devices); on a CPU, funcgrad.config.update("jax_num_cpu_devices", '
            f"{math.prod(sizes)}) before the first computation gives that many"
        )
    if devices and devices[-1].platform in ("gpu", "cuda"):
        devices = sorted(devices, key=lambda d: d.id)
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = devices
    return mesh.reshape(sizes)


def create_hybrid_device_mesh(
    mesh_shape: Sequence[int],
    dcn_mesh_shape: Sequence[int],
    devices: Sequence[Any] | None = None,
    *,
    process_is_granule: bool = False,
    should_sort_granules_by_key: bool = True,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A mesh of shape ``mesh_shape * dcn_mesh_shape`` (elementwise): one ``mesh_shape`` block per
    granule of devices, the blocks laid out as ``dcn_mesh_shape``. A granule is a slice
    (``device.slice_index``), or a process with ``process_is_granule=True`` -- the only choice for
    CPU and GPU devices, which have no slice index.

    >>> import funcgrad
    >>> create_hybrid_device_mesh((1,), (1,), process_is_granule=True).shape
    (1,)
    """
    sizes = _axis_sizes("create_hybrid_device_mesh", mesh_shape)
    dcn = _axis_sizes("create_hybrid_device_mesh", dcn_mesh_shape)
    if len(dcn) != len(sizes):
        raise ValueError(
            f"create_hybrid_device_mesh: mesh_shape {sizes} and dcn_mesh_shape {dcn} must have the "
            "same number of axes"
        )
    devices = list(xla_bridge.get_backend().global_devices if devices is None else devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not devices or not hasattr(devices[0], attr):
        raise ValueError(
            f"create_hybrid_device_mesh: device {devices[0] if devices else None} has no {attr}; "
            "CPU and GPU devices are grouped by process: pass process_is_granule=True"
        )
    groups: dict = collections.defaultdict(list)
    for d in devices:
        groups[getattr(d, attr)].append(d)
    keys = sorted(groups) if should_sort_granules_by_key else list(groups)
    if len(keys) != math.prod(dcn):
        raise ValueError(
            f"create_hybrid_device_mesh: {len(keys)} granules ({attr}) cannot fill the outer mesh "
            f"{dcn} ({math.prod(dcn)} granules)"
        )
    blocks = [
        create_device_mesh(sizes, groups[k], allow_split_physical_axes=allow_split_physical_axes)
        for k in keys
    ]
    # Granule i sits at position unravel(i, dcn) of the outer mesh: block by block, axis by axis.
    out = np.empty(tuple(s * d for s, d in zip(sizes, dcn)), dtype=object)
    for i, block in enumerate(blocks):
        pos = np.unravel_index(i, dcn)
        out[tuple(slice(p * s, (p + 1) * s) for p, s in zip(pos, sizes))] = block
    return out
