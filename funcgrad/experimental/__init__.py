"""``funcgrad.experimental``: ``checkify`` (runtime checks), ``sparse`` (BCOO and friends), ``ode``
(``odeint``), ``jet`` (Taylor mode), ``mesh_utils``, ``multihost_utils``, ``compilation_cache`` and
``io_callback``, ``colocated_python``, ``hijax`` (and its ``cur_qdd``), as ``jax.experimental``.

Layer: surface. Imports its submodules and funcgrad._callbacks.
"""

import types

from funcgrad._callbacks import io_callback
from funcgrad.experimental import (  # noqa: F401 - the namespace (__all__ below)
    checkify,
    colocated_python,
    compilation_cache,
    hijax,
    jet,
    mesh_utils,
    multihost_utils,
    ode,
    sparse,
)
from funcgrad.experimental.hijax import cur_qdd

# The namespace is io_callback, cur_qdd and the submodules imported above, found here rather than
# listed a second time.
__all__ = sorted(
    n
    for n, m in globals().items()
    if m is io_callback
    or m is cur_qdd
    or (not n.startswith("_") and isinstance(m, types.ModuleType) and m.__name__ == f"{__name__}.{n}")
)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
