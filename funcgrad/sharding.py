"""``funcgrad.sharding``: JAX's sharding names (``jax.sharding``).

Layer: surface. Re-exports the sharding values of ``funcgrad/_shardings.py`` and ``reshard`` from the
placement functions of ``funcgrad/_placement.py`` (which build on those values), so neither module
has to reach the other lazily.

>>> from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec, reshard
>>> callable(reshard)
True
"""

from __future__ import annotations

from funcgrad._placement import reshard
from funcgrad._shardings import (
    AxisType,
    Mesh,
    NamedSharding,
    P,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    get_mesh,
    make_mesh,
    set_mesh,
    use_mesh,
)

__all__ = [
    "AxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "get_mesh",
    "make_mesh",
    "reshard",
    "set_mesh",
    "use_mesh",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("P", "NamedSharding", "make_mesh", "set_mesh")


def __dir__():  # the public names only
    return list(__all__)
