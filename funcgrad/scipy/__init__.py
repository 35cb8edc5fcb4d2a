"""funcgrad.scipy: the parts of SciPy's API that differentiable programs use most
(``special`` and ``stats.norm``), like ``jax.scipy``.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn and funcgrad.lax.
"""

from funcgrad.scipy import special, stats  # noqa: F401
