"""``funcgrad.experimental``: ``checkify`` (runtime checks), ``sparse`` (BCOO and friends), ``ode``
(``odeint``), ``jet`` (Taylor mode), ``mesh_utils``, ``multihost_utils``, ``compilation_cache`` and
``io_callback``, as ``jax.experimental``.

Layer: surface. Imports its submodules and funcgrad._callbacks.
"""

from funcgrad._callbacks import io_callback
from funcgrad.experimental import checkify, compilation_cache, jet, mesh_utils, multihost_utils, ode, sparse

__all__ = [
    "checkify",
    "compilation_cache",
    "io_callback",
    "jet",
    "mesh_utils",
    "multihost_utils",
    "ode",
    "sparse",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
