"""``funcgrad.experimental``: ``ode`` (``odeint``), ``jet`` (Taylor mode) and ``io_callback``, as
``jax.experimental``.

Layer: surface. Imports its submodules and funcgrad._callbacks.
"""

from funcgrad._callbacks import io_callback
from funcgrad.experimental import jet, ode

__all__ = ["io_callback", "jet", "ode"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
