"""funcgrad.scipy: the parts of SciPy's API that differentiable programs use most
(``special``, ``stats.norm`` and ``linalg``), like ``jax.scipy``.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn and funcgrad.lax.
"""

from funcgrad.scipy import linalg, special, stats

__all__ = ["linalg", "special", "stats"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
