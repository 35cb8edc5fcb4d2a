"""``funcgrad.experimental``: ``checkify`` (runtime checks), ``ode`` (``odeint``) and ``jet``
(Taylor mode), as ``jax.experimental``.

Layer: surface. Imports its submodules.
"""

from funcgrad.experimental import checkify, jet, ode

__all__ = ["checkify", "jet", "ode"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
