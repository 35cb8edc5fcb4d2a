"""``jax._src.api`` under the alias: JAX's tutorial on defining primitives imports its
transformations from here (``api.jit``, ``api.grad``, ...); they are funcgrad's top-level ones.
"""

import funcgrad as _funcgrad


def __getattr__(name):
    return getattr(_funcgrad, name)
