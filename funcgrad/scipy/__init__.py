"""funcgrad.scipy: SciPy's API for differentiable programs, like ``jax.scipy``: ``special``
(special functions), ``stats`` (distributions as modules), ``linalg`` (on LAPACK), ``fft`` (the
cosine transforms), ``signal`` (convolutions), ``optimize`` (``minimize`` with BFGS), ``integrate``
(``trapezoid``) and ``ndimage`` (``map_coordinates``).

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax, funcgrad.api and funcgrad.random.
"""

from funcgrad.scipy import fft, integrate, linalg, ndimage, optimize, signal, special, stats

__all__ = ["fft", "integrate", "linalg", "ndimage", "optimize", "signal", "special", "stats"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
