"""Device topologies for ahead-of-time compilation (``jax.experimental.topologies``):
``get_attached_topology()`` describes the devices of this process, ``make_mesh(topology, shape,
names)`` lays a ``Mesh`` over a topology's devices, and ``get_topology_desc(name, platform)``
names a topology without its devices (PJRT's compile-only topologies).

Layer: surface. Imports funcgrad's device list, ``Mesh`` and ``mesh_utils.create_device_mesh``.

Compile-only topologies come from a platform's PJRT plugin: as in JAX, the CPU has none
(``NotImplementedError``, JAX's words) and TPU topologies need the TPU runtime (``RuntimeError``);
funcgrad does not build GPU compile-only topologies either (``NotImplementedError``).
"""

from __future__ import annotations

from collections.abc import Sequence

from funcgrad._devices import devices as _devices
from funcgrad.experimental import mesh_utils
from funcgrad.sharding import Mesh

__all__ = ["TopologyDescription", "get_attached_topology", "get_topology_desc", "make_mesh"]


class TopologyDescription:
    """The devices of a topology.

    >>> len(get_attached_topology().devices) >= 1
    True
    """

    def __init__(self, devices: list):
        self.devices: list = devices

    def __repr__(self) -> str:
        return f"TopologyDescription(devices={self.devices})"


def get_attached_topology(platform: str | None = None) -> TopologyDescription:
    """The topology of this process's devices of ``platform`` (the default backend's if None).

    >>> get_attached_topology("cpu").devices[0].platform
    'cpu'
    """
    return TopologyDescription(_devices(platform))


def get_topology_desc(topology_name: str = "", platform: str | None = None, **kwargs) -> TopologyDescription:
    """A compile-only topology named ``topology_name`` on ``platform`` (``"tpu"`` when None), as a
    platform's PJRT plugin describes it; the CPU has none (JAX's ``NotImplementedError``).

    >>> try:
    ...     get_topology_desc(platform="cpu")
    ... except NotImplementedError as e:
    ...     print(e)
    topology not implemented for cpu
    """
    if platform == "tpu" or platform is None:
        raise RuntimeError(
            "JAX TPU support not installed; cannot generate TPU topology. See "
            "https://github.com/jax-ml/jax#installation"
        )
    raise NotImplementedError(f"topology not implemented for {platform}")


def make_mesh(
    topo: TopologyDescription,
    mesh_shape: Sequence[int],
    axis_names: tuple[str, ...],
    *,
    contiguous_submeshes: bool = False,
) -> Mesh:
    """A ``Mesh`` of shape ``mesh_shape`` over ``topo``'s devices (``mesh_utils.create_device_mesh``'s
    order).

    >>> dict(make_mesh(get_attached_topology(), (1,), ("x",)).shape)
    {'x': 1}
    """
    devices = mesh_utils.create_device_mesh(
        mesh_shape, list(topo.devices), contiguous_submeshes=contiguous_submeshes
    )
    return Mesh(devices, axis_names)
