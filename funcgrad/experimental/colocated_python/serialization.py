"""``jax.experimental.colocated_python.serialization``'s role in funcgrad: none to play. JAX
serialises a colocated function (and its arguments' shardings) to send it to the host that owns
the devices; funcgrad's colocated hosts are this process, so nothing is serialised. The module
exists because libraries import it with the package (orbax's colocated transport); its names are
the device facts such code reads.

Layer: surface. Imports funcgrad.extend.backend and the bridge's ``DeviceList`` (jaxlib's type).
"""

from __future__ import annotations

from funcgrad.extend import backend as xb  # noqa: F401 - read as an attribute, as JAX's module has it
from funcgrad.xla_bridge.sharded import DeviceList

__all__ = ["DeviceList"]
