"""funcgrad.scipy: the parts of SciPy's API that differentiable programs use most
(``special``, ``stats.norm`` and ``signal``'s convolutions), like ``jax.scipy``.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax and funcgrad.api.
"""

from funcgrad.scipy import signal, special, stats

__all__ = ["signal", "special", "stats"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
