"""``funcgrad.memory`` (JAX's ``jax.memory``, a namespace, not a module, as JAX's):
``memory.Space``, the memories a value can live in.

Layer: surface. Imports only the kernel's ``MemorySpace`` (funcgrad/kernel/ir.py, where an array's
type holds one); ``funcgrad._placement`` places values by a ``Space``
(``device_put(x, memory.Space.Host)``) and exports the ``memory`` namespace.

``Space.Device`` is a device's own memory, ``Space.Host`` the host memory it addresses (the
``"pinned_host"`` memory kind of a sharding), ``Space.Any`` either (a kernel's operand that may be
anywhere). ``device_put(x, Space.Host)`` moves ``x`` into its device's host memory, as
``device_put(x, x.sharding.with_memory_kind("pinned_host"))`` does.

>>> import funcgrad, numpy as np
>>> funcgrad.device_put(np.ones(2), Space.Host).sharding.memory_kind
'pinned_host'
"""

from __future__ import annotations

from funcgrad.kernel.ir import MemorySpace

__all__ = ["KINDS", "Space"]


# The kernel's enum (an array's type holds one: NOTE: [memory space in types]), printed as JAX's
# ``MemorySpace.Host``; ``jax.memory.Space`` is JAX's ``MemorySpace`` too.
Space = MemorySpace

# The memory kind of a sharding for each space (``Any`` keeps a value where it is).
KINDS = {Space.Device: "device", Space.Host: "pinned_host"}
