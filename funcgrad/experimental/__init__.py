"""``funcgrad.experimental``: ``ode`` (``odeint``), as ``jax.experimental``.

Layer: surface. Imports its submodules.
"""

from funcgrad.experimental import ode

__all__ = ["ode"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
