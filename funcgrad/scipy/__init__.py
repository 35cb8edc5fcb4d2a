"""funcgrad.scipy: the parts of SciPy's API that differentiable programs use most
(``special``, ``stats.norm``, ``linalg``, ``signal``'s convolutions and the cosine transforms of
``fft``), like ``jax.scipy``.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax and funcgrad.api.
"""

from funcgrad.scipy import fft, linalg, signal, special, stats

__all__ = ["fft", "linalg", "signal", "special", "stats"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
