"""funcgrad.scipy: SciPy's API for differentiable programs, like ``jax.scipy``: ``special``
(special functions), ``stats`` (distributions as modules), ``linalg`` (on LAPACK), ``fft`` (the
cosine transforms), ``signal`` (convolutions), ``optimize`` (``minimize`` with BFGS), ``integrate``
(``trapezoid``), ``ndimage`` (``map_coordinates``), ``sparse.linalg`` (the Krylov solvers ``cg``,
``gmres``, ``bicgstab``), ``interpolate`` (``RegularGridInterpolator``), ``cluster.vq`` and
``spatial.transform`` (``Rotation``, ``Slerp``).

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax, funcgrad.api and funcgrad.random.
"""

import types

from funcgrad.scipy import (  # noqa: F401 - the namespace (__all__ below)
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

# The namespace is the subpackages imported above, found here rather than listed a second time.
__all__ = sorted(
    n
    for n, m in globals().items()
    if not n.startswith("_") and isinstance(m, types.ModuleType) and m.__name__ == f"{__name__}.{n}"
)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
