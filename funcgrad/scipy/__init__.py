"""funcgrad.scipy: SciPy's API for differentiable programs, like ``jax.scipy``: ``special``
(special functions), ``stats`` (distributions as modules), ``linalg`` (on LAPACK), ``fft`` (the
cosine transforms), ``signal`` (convolutions), ``optimize`` (``minimize`` with BFGS), ``integrate``
(``trapezoid``), ``ndimage`` (``map_coordinates``), ``sparse.linalg`` (the Krylov solvers ``cg``,
``gmres``, ``bicgstab``), ``interpolate`` (``RegularGridInterpolator``), ``cluster.vq`` and
``spatial.transform`` (``Rotation``, ``Slerp``).

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax, funcgrad.api and funcgrad.random.
"""

from funcgrad.scipy import (
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    sparse,
    spatial,
    special,
    stats,
)

__all__ = [
    "cluster",
    "fft",
    "integrate",
    "interpolate",
    "linalg",
    "ndimage",
    "optimize",
    "signal",
    "sparse",
    "spatial",
    "special",
    "stats",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
